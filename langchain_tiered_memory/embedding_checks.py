"""Argument and result checks shared by this package's embedding models.

Every model validates its inputs and outputs the same way, so that a caller gets one
clear :class:`~langchain_tiered_memory.errors.EmbeddingError` whichever model runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .errors import EmbeddingError

if TYPE_CHECKING:
    import numpy as np

__all__ = ["check_positive_int", "check_query", "check_texts", "check_vectors"]


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
    return out


def check_query(text: object) -> str:
    if not isinstance(text, str):
        raise EmbeddingError(
            f"embed_query() takes a str, got {type(text).__name__}; pass the text itself "
            "(for a list of texts, use embed_documents)"
        )
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
