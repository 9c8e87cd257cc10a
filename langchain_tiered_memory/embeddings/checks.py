"""Argument and result checks shared by this package's embedding models.

Every model validates its inputs and outputs the same way, so that a caller gets one
clear :class:`~langchain_tiered_memory.errors.EmbeddingError` whichever model runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import EmbeddingError, TieredMemoryError

if TYPE_CHECKING:
    import numpy as np
    from langchain_core.embeddings import Embeddings

__all__ = [
    "check_positive_int", "check_query", "check_texts", "check_vectors", "embedding_dimension", "unit_vector",
]


def check_texts(texts: object) -> list[str]:
    # A bare str is a Sequence of one-character strs: embedding it would silently
    # return one vector per character.
    if isinstance(texts, (str, bytes)) or not isinstance(texts, Sequence):
        raise EmbeddingError(
            f"embed_documents() takes a list of str, got {type(texts).__name__}; "
            "pass [text] to embed a single text, or use embed_query(text)"
        )
    out = list(texts)
    for i, text in enumerate(out):
        if not isinstance(text, str):
            raise EmbeddingError(
                f"texts[{i}] is {type(text).__name__}, not str; pass the text itself "
                "(for a message, its content as a string)"
            )
        _check_encodable(text, f"texts[{i}]")
    return out


def check_query(text: object) -> str:
    if not isinstance(text, str):
        raise EmbeddingError(
            f"embed_query() takes a str, got {type(text).__name__}; pass the text itself "
            "(for a list of texts, use embed_documents)"
        )
    return _check_encodable(text, "the query")


def _check_encodable(text: str, name: str) -> str:
    # A tokenizer takes UTF-8: a lone surrogate made it raise a bare TypeError
    # ("TextEncodeInput must be Union[...]") that said nothing of the cause.
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise EmbeddingError(
                f"{name} holds a lone surrogate (e.g. '\\ud800'), which no UTF-8 text can hold; "
                "decode the text properly (errors='replace' keeps the rest)"
            ) from None
    return text


def check_positive_int(name: str, value: object, *, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise EmbeddingError(f"{name} must be a positive int, got {value!r}")
    if maximum is not None and value > maximum:
        raise EmbeddingError(f"{name} must be at most {maximum}, got {value!r}")
    return value


def check_vectors(vectors: np.ndarray, expected_rows: int, dimension: int) -> None:
    import numpy as np

    if vectors.shape != (expected_rows, dimension):
        raise EmbeddingError(
            f"the embedding model returned vectors of shape {tuple(vectors.shape)}, "
            f"expected ({expected_rows}, {dimension}); is the model file the right one?"
        )
    if not np.isfinite(vectors).all():
        raise EmbeddingError("the embedding model returned NaN or infinite values")


def unit_vector(vector: Sequence[float]) -> list[float]:
    """``vector`` scaled to length 1, checked to be finite and non-zero."""
    import numpy as np  # here, not at module level: importing the package loads no numpy

    try:
        arr = np.asarray(vector, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise EmbeddingError(f"the embeddings returned something that is not a vector: {exc}") from None
    if arr.ndim != 1 or not arr.size:
        raise EmbeddingError("the embeddings returned an empty or nested vector")
    norm = float(np.linalg.norm(arr))
    if not np.isfinite(norm):
        raise EmbeddingError("the embeddings returned NaN or infinite values")
    if norm == 0.0:
        raise EmbeddingError("the embeddings returned a zero vector, which has no direction")
    unit: list[float] = (arr / norm).tolist()
    return unit


def embedding_dimension(embeddings: Embeddings) -> int:
    """The width of ``embeddings``' vectors: its ``dimension`` attribute, else one probe."""
    value = getattr(embeddings, "dimension", None)
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    try:
        probe = embeddings.embed_query("dimension probe")
    except TieredMemoryError:
        raise
    except Exception as exc:
        raise EmbeddingError(f"the embeddings failed on a probe text: {exc}") from exc
    if not probe:
        raise EmbeddingError("the embeddings returned an empty vector")
    return len(probe)
