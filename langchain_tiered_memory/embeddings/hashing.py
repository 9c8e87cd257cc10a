"""Lexical feature hashing: :class:`HashingEmbeddings`, the dependency-free last resort."""

from __future__ import annotations

import hashlib
import itertools
import math
import re

from langchain_core.embeddings import Embeddings

from .checks import check_positive_int, check_query, check_texts
from .minilm import MINILM_DIMENSION

__all__ = ["HashingEmbeddings"]

_WORD = re.compile(r"\w+", re.UNICODE)
# Stands in for a text with no words, so that every vector has unit length: a zero
# vector has no cosine with anything and some vector stores reject it.
_EMPTY_FEATURE = "\x00empty"


class HashingEmbeddings(Embeddings):
    """Lexical-only feature hashing: a last resort and a test double, not a semantic model.

    Each text is lower-cased and split into words (``\\w+``); every word unigram and
    adjacent-word bigram is hashed with blake2b (stable across processes and machines,
    unlike ``hash()``) to a bucket and a sign, counts are summed and the vector is
    L2-normalised. Texts that share words get a higher cosine; synonyms and paraphrases
    do not. A text with no words (``""``, punctuation only) gets one fixed unit vector,
    never a zero vector. Pure Python, no dependencies.

    Args:
        dimension: vector width (default 384, the width of all-MiniLM-L6-v2).
    """

    def __init__(self, dimension: int = MINILM_DIMENSION) -> None:
        self.dimension = check_positive_int("dimension", dimension)

    @property
    def model_id(self) -> str:
        """``"hashing-<dimension>"``."""
        return f"hashing-{self.dimension}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(dimension={self.dimension})"

    def _bucket(self, feature: str) -> tuple[int, float]:
        digest = hashlib.blake2b(
            feature.encode("utf-8"), digest_size=8, person=b"lctm-hash"
        ).digest()
        value = int.from_bytes(digest, "little")
        # The top bit picks the sign so colliding features cancel out on average.
        return (value & 0x7FFF_FFFF_FFFF_FFFF) % self.dimension, (-1.0 if value >> 63 else 1.0)

    def _vector(self, text: str) -> list[float]:
        words = _WORD.findall(text.lower())
        features = words + [f"{a} {b}" for a, b in itertools.pairwise(words)]
        if not features:
            features = [_EMPTY_FEATURE]
        vec = [0.0] * self.dimension
        for feature in features:
            index, sign = self._bucket(feature)
            vec[index] += sign
        norm = math.sqrt(sum(x * x for x in vec))
        if norm == 0.0:
            # Every feature cancelled out; fall back to the fixed no-word vector.
            return self._vector("")
        return [x / norm for x in vec]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed texts; one unit vector per text, in the order given."""
        return [self._vector(t) for t in check_texts(texts)]

    def embed_query(self, text: str) -> list[float]:
        """Embed one text."""
        return self._vector(check_query(text))
