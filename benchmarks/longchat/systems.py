"""Baseline retrievers over turns, each per user, each indexing ``"<speaker>: <text>"``.

* ``bm25``: ``rank_bm25.BM25Okapi`` over a lowercase, stopword-free word tokenizer;
* ``dense``: cosine over the turns' embeddings (numpy);
* ``inmemorystore``: LangGraph's ``InMemoryStore`` with an embedding index on ``text``,
  one item per turn, ``store.search(ns, query=..., limit=k)``;
* ``hybrid``: ``bm25`` and ``dense`` fused by reciprocal rank fusion (k = 60).

Every system embeds with the same model. Turn vectors are computed once
(:class:`SharedVectors`) and served to ``dense`` and the store by lookup, with the time it
took reported as every embedding system's indexing cost; query vectors are computed by
each system at search time, so search latency includes the query embedding.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

from .generator import Turn

K_RRF = 60
CANDIDATES = 100

STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    user assistant s t don ll m re ve d""".split()
)
_WORD = re.compile(r"[a-z0-9]+")


def tokenize(text: str) -> list[str]:
    """Lowercase words, stopwords (and the speaker labels) removed."""
    return [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS]


class SharedVectors(Embeddings):
    """The benchmark's embedder: document vectors by lookup once computed, queries live."""

    def __init__(self, inner: Embeddings) -> None:
        self.inner = inner
        self.table: dict[str, list[float]] = {}
        self.embed_s = 0.0
        self.dimension = 384

    def precompute(self, texts: Sequence[str], batch: int = 64) -> None:
        todo = [t for t in dict.fromkeys(texts) if t not in self.table]
        start = time.perf_counter()
        for i in range(0, len(todo), batch):
            chunk = todo[i : i + batch]
            for t, v in zip(chunk, self.inner.embed_documents(chunk)):
                self.table[t] = v
        self.embed_s += time.perf_counter() - start

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        missing = [t for t in texts if t not in self.table]
        if missing:
            self.precompute(missing)
        return [self.table[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text)


class Retriever:
    name = ""
    uses_embeddings = False

    def __init__(self) -> None:
        self.index_s = 0.0

    def index(self, user_id: str, turns: Sequence[Turn]) -> None:
        start = time.perf_counter()
        self._index(user_id, turns)
        self.index_s += time.perf_counter() - start

    def _index(self, user_id: str, turns: Sequence[Turn]) -> None:
        raise NotImplementedError

    def search(self, user_id: str, query: str, k: int = 10) -> list[str]:
        """Turn ids, best first."""
        raise NotImplementedError


class BM25(Retriever):
    name = "bm25"

    def __init__(self) -> None:
        super().__init__()
        self._by_user: dict[str, tuple[Any, list[str]]] = {}

    def _index(self, user_id: str, turns: Sequence[Turn]) -> None:
        from rank_bm25 import BM25Okapi

        corpus = [tokenize(t.indexed_text) or ["_"] for t in turns]
        self._by_user[user_id] = (BM25Okapi(corpus), [t.id for t in turns])

    def scores(self, user_id: str, query: str) -> tuple[np.ndarray, list[str]]:
        bm25, ids = self._by_user[user_id]
        return np.asarray(bm25.get_scores(tokenize(query))), ids

    def search(self, user_id: str, query: str, k: int = 10) -> list[str]:
        """The best ``k`` turns sharing a word with the query (none for no shared word)."""
        return self.ranking(user_id, query)[:k]

    def ranking(self, user_id: str, query: str) -> list[str]:
        scores, ids = self.scores(user_id, query)
        order = np.argsort(-scores, kind="stable")
        return [ids[i] for i in order if scores[i] > 0]


class Dense(Retriever):
    name = "dense"
    uses_embeddings = True

    def __init__(self, embeddings: SharedVectors) -> None:
        super().__init__()
        self.embeddings = embeddings
        self._by_user: dict[str, tuple[np.ndarray, list[str]]] = {}

    def _index(self, user_id: str, turns: Sequence[Turn]) -> None:
        m = np.asarray(self.embeddings.embed_documents([t.indexed_text for t in turns]), dtype=np.float32)
        m /= np.linalg.norm(m, axis=1, keepdims=True) + 1e-12
        self._by_user[user_id] = (m, [t.id for t in turns])

    def scores(self, user_id: str, query: str) -> tuple[np.ndarray, list[str]]:
        m, ids = self._by_user[user_id]
        q = np.asarray(self.embeddings.embed_query(query), dtype=np.float32)
        q /= np.linalg.norm(q) + 1e-12
        return m @ q, ids

    def search(self, user_id: str, query: str, k: int = 10) -> list[str]:
        return self.ranking(user_id, query)[:k]

    def ranking(self, user_id: str, query: str) -> list[str]:
        scores, ids = self.scores(user_id, query)
        return [ids[i] for i in np.argsort(-scores, kind="stable")]


class Hybrid(Retriever):
    """BM25 and dense rankings fused by RRF: ``Σ 1 / (60 + rank)`` over both lists."""

    name = "hybrid"
    uses_embeddings = True

    def __init__(self, bm25: BM25, dense: Dense) -> None:
        super().__init__()
        self.bm25, self.dense = bm25, dense
        self._own = (bm25, dense)

    def _index(self, user_id: str, turns: Sequence[Turn]) -> None:
        # Shares the two indexes; building them is counted once, in their own systems.
        for r in self._own:
            if user_id not in r._by_user:  # type: ignore[attr-defined]
                r.index(user_id, turns)

    def search(self, user_id: str, query: str, k: int = 10) -> list[str]:
        fused: dict[str, float] = {}
        for r in self._own:
            # BM25 ranks only the turns that share a word with the query.
            for rank, tid in enumerate(r.ranking(user_id, query)[:CANDIDATES]):  # type: ignore[attr-defined]
                fused[tid] = fused.get(tid, 0.0) + 1.0 / (K_RRF + rank + 1)
        return [tid for tid, _ in sorted(fused.items(), key=lambda kv: -kv[1])[:k]]


class StoreRetriever(Retriever):
    """LangGraph's ``InMemoryStore`` with an embedding index over ``text``."""

    name = "inmemorystore"
    uses_embeddings = True

    def __init__(self, embeddings: SharedVectors) -> None:
        super().__init__()
        from langgraph.store.memory import InMemoryStore

        self.store = InMemoryStore(index={"embed": embeddings, "dims": 384, "fields": ["text"]})

    def _index(self, user_id: str, turns: Sequence[Turn]) -> None:
        from langgraph.store.base import PutOp

        ns = ("turns", user_id)
        # InMemoryStore.batch embeds each distinct text once but then pairs the vectors with
        # every item, so a batch holding the same text twice raises ValueError (langgraph
        # 1.x): batches of distinct texts, the repeats in later batches.
        batches: list[list[Any]] = []
        for t in turns:
            for batch in batches:
                if t.indexed_text not in batch[0]:
                    break
            else:
                batch = [set(), []]
                batches.append(batch)
            batch[0].add(t.indexed_text)
            batch[1].append(PutOp(ns, t.id, {"text": t.indexed_text}))
        for _, ops in batches:
            self.store.batch(ops)

    def search(self, user_id: str, query: str, k: int = 10) -> list[str]:
        return [item.key for item in self.store.search(("turns", user_id), query=query, limit=k)]


BASELINES = ("bm25", "dense", "inmemorystore", "hybrid")


def build(names: Sequence[str], embeddings: SharedVectors) -> dict[str, Retriever]:
    """The named baselines (``hybrid`` reuses ``bm25`` and ``dense`` indexes when both run)."""
    out: dict[str, Retriever] = {}
    bm25, dense = BM25(), Dense(embeddings)
    for name in names:
        if name == "bm25":
            out[name] = bm25
        elif name == "dense":
            out[name] = dense
        elif name == "inmemorystore":
            out[name] = StoreRetriever(embeddings)
        elif name == "hybrid":
            out[name] = Hybrid(bm25, dense)
    return out
