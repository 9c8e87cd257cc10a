"""The embedding space an index was built in, checked before its vectors are used.

The model record (``model_id``, dimension) tells a model change when the name changes. Two
embedders can share a name and not a space: a custom ``Embeddings`` class without a model
attribute is named by its class alone, a local model's weights are swapped under one path,
a fine-tune keeps its base's name. Their vectors mixed in one index make every search a
quiet mismatch. So the index also records a fingerprint: the vectors of a few fixed
reference texts, taken with the embeddings in use the first time this index embeds
anything, and compared each time a process starts embedding (three short texts: a few
milliseconds, once per process). Cosines below :data:`SAME_SPACE` are another space under
the same name, refused as :class:`~..errors.EmbeddingMismatchError` (a ``ConfigError``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..backends.base import BaseBackend
from ..errors import EmbeddingMismatchError

__all__ = ["REFERENCE_TEXTS", "SAME_SPACE", "check_space"]

#: What the fingerprint embeds: unlike one another, in two languages, no topic of ours.
REFERENCE_TEXTS = (
    "The cat slept on the warm windowsill all afternoon.",
    "Quarterly revenue rose four percent despite higher shipping costs.",
    "Wie spät ist es in Lissabon?",
)
#: The least cosine between a reference text's recorded and current vectors of one space:
#: the same model on another CPU or build differs by far less (int8 kernels: > 0.999), and
#: two models of one width by far more (MiniLM against a hashing embedder: < 0.2).
SAME_SPACE = 0.98


def check_space(backend: BaseBackend, embed: Callable[[list[str]], Sequence[Sequence[float]]]) -> str | None:
    """Record the fingerprint of the embeddings in use if there is none; the problem if it
    differs from the recorded one (``None``: the same space)."""
    vectors = [_unit(v) for v in embed(list(REFERENCE_TEXTS))]
    recorded = backend.space_fingerprint()
    if recorded is None or len(recorded) != len(vectors):
        backend.record_fingerprint(vectors)
        return None
    worst = min(sum(a * b for a, b in zip(old, _unit(new), strict=False)) for old, new in zip(recorded, vectors))
    if worst >= SAME_SPACE:
        return None
    return (
        f"the vector index at {backend.location} was built with embeddings named "
        f"{backend.model_id!r}, and the embeddings in use have that name but other vectors (a "
        f"reference text's cosine {worst:.2f}, the same model gives > {SAME_SPACE}): another "
        "model under the same name. Pass the original embeddings, or give the new ones a name "
        "of their own (a model_id) and run memory.admin.reindex() (or `tiered-memory reindex`); "
        "or move the directory's qdrant/ away: it is rebuilt from memory.db with the new model"
    )


def raise_if(problem: str | None) -> None:
    if problem is not None:
        raise EmbeddingMismatchError(problem)


def _unit(vector: Sequence[float]) -> list[float]:
    norm = sum(x * x for x in vector) ** 0.5 or 1.0
    return [float(x) / norm for x in vector]
