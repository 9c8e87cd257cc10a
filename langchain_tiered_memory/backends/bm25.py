"""BM25 term weights, computed here with Qdrant Edge's own ``Bm25`` tokenizer so that every
backend indexes text identically (the inverse document frequency is applied by Qdrant at
query time).
"""

from __future__ import annotations

import functools
from typing import Any

from ..errors import VectorStoreError

__all__ = ["bm25_document", "bm25_query", "content_words"]


# Cached once loaded (a failed import is not cached: it raises again). Two threads racing
# on the first call may each build one: it is stateless, so either serves.
@functools.cache
def _model() -> Any:
    try:
        from qdrant_edge import Bm25
    except ImportError as exc:  # pragma: no cover - a dependency
        raise VectorStoreError(
            f"qdrant-edge-py is not installed ({exc}): pip install qdrant-edge-py"
        ) from exc
    # Defaults: k=1.2, b=0.75, English stopwords and Snowball stemmer, the same
    # Bm25Config a Qdrant server's "Qdrant/bm25" inference uses.
    return Bm25()


def bm25_document(text: str) -> tuple[list[int], list[float]]:
    """BM25 term weights of an indexed text: ``(indices, values)``.

    Qdrant Edge's ``Bm25`` tokenizer (lower-case, English stopwords, Snowball stemming)
    hashes each term to an index and weights it by saturated term frequency; the IDF factor
    is applied by Qdrant at query time (``Modifier.IDF`` on the sparse vector). Deterministic
    across processes and machines. A text with no terms gives empty lists.
    """
    vec = _model().embed_document(text)
    return list(vec.indices), list(vec.values)


def bm25_query(text: str) -> tuple[list[int], list[float]]:
    """BM25 terms of a query: each distinct term with weight 1."""
    vec = _model().embed_query(text)
    return list(vec.indices), list(vec.values)


def content_words(text: str) -> set[int]:
    """The distinct terms BM25 sees in ``text`` (stopwords left out, stems merged): what
    the text says beyond its function words."""
    return set(_model().embed_query(text).indices)
