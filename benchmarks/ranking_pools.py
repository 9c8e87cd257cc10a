"""The pools ``fit_ranking.py`` fits on: each data set fed through the product path, each
query asked through ``recall()``, and the pool the ranking saw recorded with which of its
candidates name an evidence turn.

- LoCoMo (``--locomo``): its questions, asked a day after the conversation's last session;
- LoCoMo-Plus (``--plus``): its cues placed as ``bench_implicit.py`` places them, its
  triggers asked ``time_gap`` after the cue;
- LongChat (``--longchat SEED``): ``longchat``'s user–assistant chats of that seed, its
  questions asked when they say.

Each set's pools are kept in ``work/<set>.pkl`` and its fed memory in ``work/<set>/``, so a
refit reads them again in seconds.
"""

from __future__ import annotations

import argparse
import pickle
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

from langchain_tiered_memory import TieredMemory
from langchain_tiered_memory.recall.features import FEATURES
from locomo import ingest, load, message_id
from plus import load_items, place

__all__ = ["Query", "pools"]


@dataclass
class Query:
    """One asked query and its search's pool."""

    dataset: str
    group: str
    category: str
    evidence: frozenset[str]
    rows: np.ndarray
    labels: np.ndarray
    #: The message ids each candidate names, and a long-term memory's prior (else ``None``).
    names: list[tuple[str, ...]]
    priors: list[float | None]
    kept: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))


def _observe(memory: TieredMemory) -> list[Any]:
    seen: list[Any] = []
    ranker = memory._parts.recall._ranker  # noqa: SLF001 - the fitting script reads the ranking's pool
    ranker.observer = seen.append
    return seen


def _names(memory: TieredMemory, pool: Any) -> tuple[list[tuple[str, ...]], list[float | None]]:
    """The message ids each unit of a pool names, and each memory's prior."""
    from langchain_tiered_memory import scoring

    storage = memory._parts.storage  # noqa: SLF001
    said = [u.row for u in pool.units if u.row is not None]
    spans = storage.units.spans(said)
    facts = storage.memories.get_many([u.id for u in pool.units if u.grain == "fact"])
    names: list[tuple[str, ...]] = []
    priors: list[float | None] = []
    now = memory._parts.now()  # noqa: SLF001
    for u in pool.units:
        if u.grain == "fact":
            row = facts.get(u.id)
            names.append(tuple(row.source_messages) if row else ())
            if row is None:
                priors.append(None)
            else:
                from datetime import datetime

                days = scoring.days_between(now, datetime.fromisoformat(row.last_accessed))
                priors.append(scoring.prior(row.importance, row.boost, days, memory.config.decay))
        else:
            names.append(tuple(r[1] for r in spans.get(u.id, ())))
            priors.append(None)
    return names, priors


def _ask(memory: TieredMemory, seen: list[Any], user: str, text: str, at: Any, evidence: frozenset[str],
         dataset: str, group: str, category: str) -> Query | None:
    seen.clear()
    memory.recall(user, text, k=10, at=at, peek=True)
    if not seen:
        return None
    pool = seen[-1]
    names, priors = _names(memory, pool)
    labels = np.array([bool(set(n) & evidence) for n in names])
    kept = np.array([r >= memory.config.score_threshold for r in pool.relevance])
    return Query(dataset, group, category, evidence, np.asarray(pool.rows), labels, names, priors, kept)


def _cached(work: Path, name: str, read: Any) -> list[Query]:
    """One data set's queries, read by ``read()`` once and kept in ``work/<name>.pkl``."""
    cache = work / f"{name}.pkl"
    if cache.exists():
        data = pickle.loads(cache.read_bytes())
        if data.get("features") == list(FEATURES):
            return [Query(**q) for q in data["queries"]]
    queries: list[Query] = read()
    cache.write_bytes(pickle.dumps({"features": list(FEATURES), "queries": [vars(q) for q in queries]}))
    return queries


def _fed(where: Path, what: str, feed: Any) -> TieredMemory:
    """The memory at ``where``, fed by ``feed(memory)`` unless it was before."""
    fed = (where / "memory.db").exists()
    memory = TieredMemory(where)
    if not fed:
        print(f"feeding {what} to {where} …", flush=True)
        feed(memory)
    return memory


def _locomo_pools(args: argparse.Namespace, work: Path) -> list[Query]:
    conversations = load(args.locomo)
    queries: list[Query] = []
    with _fed(work / "locomo", f"{len(conversations)} LoCoMo conversations",
              lambda m: ingest(m, conversations)) as memory:
        seen = _observe(memory)
        for conv in conversations:
            asked = conv.last_at + timedelta(days=1)
            for q in conv.questions:
                evidence = frozenset(message_id(conv, e) for e in q.evidence)
                found = _ask(memory, seen, conv.id, q.text, asked, evidence, "locomo", conv.id, str(q.category))
                if found is not None:
                    queries.append(found)
    return queries


def _plus_pools(args: argparse.Namespace, work: Path) -> list[Query]:
    conversations = load(args.locomo)
    cues = place(load_items(args.plus), conversations, args.seed)
    queries: list[Query] = []
    with _fed(work / "plus", f"{len(conversations)} conversations with {len(cues)} LoCoMo-Plus cues",
              lambda m: ingest(m, conversations)) as memory:
        seen = _observe(memory)
        for cue in cues:
            evidence = frozenset(f"{cue.conversation}:{i}" for i in cue.ids)
            found = _ask(memory, seen, cue.conversation, cue.trigger, cue.asked, evidence, "plus", cue.conversation,
                         cue.relation)
            if found is not None:
                queries.append(found)
    return queries


def _longchat_pools(args: argparse.Namespace, work: Path) -> list[Query]:
    """A user and an assistant (``benchmarks/longchat``'s generator, another seed than
    ``bench_longchat.py``'s): the way most agents are used, which two people talking do not
    teach (whose line a first-person question wants, long answers that echo the question)."""
    from langchain_core.messages import AIMessage, HumanMessage
    from longchat import generate

    conversations = generate(args.longchat)

    def feed(memory: TieredMemory) -> None:
        for c in conversations:
            for session in c.sessions:
                for i in range(0, len(session.turns) - 1, 2):
                    user, assistant = session.turns[i], session.turns[i + 1]
                    memory.after_turn(c.user_id, session.id, [HumanMessage(user.text, id=user.id),
                                                              AIMessage(assistant.text, id=assistant.id)], at=user.at)
                memory.end_session(c.user_id, session.id)
        memory.flush()

    queries: list[Query] = []
    with _fed(work / f"longchat-{args.longchat}", f"{len(conversations)} user–assistant chats", feed) as memory:
        seen = _observe(memory)
        for c in conversations:
            for q in c.questions:
                found = _ask(memory, seen, c.user_id, q.text, q.asked_at, frozenset(q.evidence_ids), "longchat",
                             c.user_id, q.kind)
                if found is not None:
                    queries.append(found)
    return queries


def pools(args: argparse.Namespace, work: Path) -> list[Query]:
    """Every query's pool, read once per data set and kept in ``work`` (fed memories too)."""
    queries = _cached(work, "locomo", lambda: _locomo_pools(args, work))
    if args.plus is not None:
        queries += _cached(work, "plus", lambda: _plus_pools(args, work))
    if args.longchat is not None:
        queries += _cached(work, f"longchat-{args.longchat}", lambda: _longchat_pools(args, work))
    return queries
