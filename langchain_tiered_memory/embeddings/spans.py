"""Vectors of parts of a text as well as of the whole: recall reads a message of several
sentences by its best sentence too (``recall/dialogue.py``).

A model that can (:meth:`MiniLMEmbeddings.embed_with_spans`) pools each part from the run
that embeds the whole, so the parts cost nothing more; any other LangChain ``Embeddings``
embeds the parts as texts of their own, in the same call as the wholes.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.embeddings import Embeddings

__all__ = ["Spans", "embed_with_spans"]

#: Character spans ``(start, end)`` of each text.
Spans = Sequence[Sequence[tuple[int, int]]]


def embed_with_spans(
    embeddings: Embeddings, texts: list[str], spans: Spans
) -> tuple[list[list[float]], list[list[list[float] | None]]]:
    """Each text's vector, and one per span of it (``None`` where the model kept no token
    of the span); the model's own ``embed_with_spans`` when it has one."""
    own = getattr(embeddings, "embed_with_spans", None)
    if callable(own):
        whole, parts = own(texts, spans)
        return list(whole), [list(p) for p in parts]
    pieces = [text[a:b] for text, of in zip(texts, spans) for a, b in of]
    vectors = embeddings.embed_documents(list(texts) + pieces)
    at = len(texts)
    out: list[list[list[float] | None]] = []
    for of in spans:
        out.append(list(vectors[at : at + len(of)]))
        at += len(of)
    return vectors[: len(texts)], out
