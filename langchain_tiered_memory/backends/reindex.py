"""The resumable reindex: rebuilding a collection's dense vectors with the embeddings in use,
from the texts their owner keeps.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..errors import VectorStoreError
from .records import MODEL_FIELD, PointData, Where

if TYPE_CHECKING:
    # For the annotation only: the backend module re-exports this one, so it imports it.
    from .base import BaseBackend

__all__ = ["reindex_backend"]


def reindex_backend(
    backend: BaseBackend,
    embed: Callable[[list[str]], list[list[float]]],
    texts: Callable[[list[str]], dict[str, str]],
    *,
    progress: Callable[[int, int], None] | None = None,
    batch_size: int = 128,
) -> int:
    """Re-embed every point of ``backend`` whose vector is not from its current model.

    ``embed`` embeds a batch of texts with the current model; ``texts`` gives the points'
    texts by id, from their owner (a point whose record is gone is deleted). Points are
    stamped with the model as their new vectors are written, so an interrupted run that is
    started again skips the points it had done. ``progress(done, total)`` is called before
    the first batch and after each. Returns the number of points re-embedded by this call.
    """
    backend.begin_reindex()
    pending = Where(none_of={MODEL_FIELD: [backend.model_id]})
    total = backend.count()
    done = total - backend.count(pending)
    if progress is not None:
        progress(done, total)
    rebuilt = 0
    previous: set[str] = set()
    while True:
        records, _ = backend.scroll(pending, limit=batch_size)
        if not records:
            break
        ids = {r.id for r in records}
        if ids & previous:
            # A backend that does not stamp would loop here forever.
            raise VectorStoreError("reindex made no progress: re-embedded points are still pending")
        previous = ids
        found = texts([r.id for r in records])
        orphans = [r.id for r in records if r.id not in found]
        if orphans:
            backend.delete(orphans)
        live = [r for r in records if r.id in found]
        vectors = embed([found[r.id] for r in live]) if live else []
        if len(vectors) != len(live):
            raise VectorStoreError(f"the embeddings returned {len(vectors)} vectors for {len(live)} texts")
        backend.update_vectors([PointData(r.id, v, found[r.id]) for r, v in zip(live, vectors)])
        rebuilt += len(live)
        done += len(records)
        if progress is not None:
            progress(min(done, total), total)
    backend.finish_reindex()
    return rebuilt
