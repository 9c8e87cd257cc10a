"""Degradation that speaks: what a memory answers without, said once and counted.

Where the vector index cannot answer — another process holds the embedded shard, the index
is missing from a memory that only looks, its embedding model changed — ``before_turn``
leaves the sections that need it out (``context.degraded`` says so) and ``search``/``recall``
raise. Several web workers on one directory would recall in one of them, and nobody would
know: so the first time a cause is met, the process logs one WARNING naming it and what
this process sees, and every answer it affects is counted (``stats()["degraded"]``, per
cause) — not a log line per call.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter

from ..errors import EmbeddingMismatchError, ShardLockedError, VectorStoreError

__all__ = ["CAUSES", "Degradations", "cause_of"]

logger = logging.getLogger("langchain_tiered_memory")

#: Each cause, and what a process meeting it sees (the warning's second half).
CAUSES: dict[str, str] = {
    "index_held_elsewhere": (
        "in this process before_turn leaves recalled memories (and episodes ranked by the "
        "query) out of the context, search() and recall() raise ShardLockedError, and new "
        "records wait for the holding process to index them; the other layers (window, "
        "summary, entities) and the jobs work as usual"
    ),
    "index_missing": "recall is left out until a memory that runs jobs rebuilds the index",
    "embedding_mismatch": "recall is left out until reindex() rebuilds the vectors",
    "index_unavailable": "recall is left out while the vector index cannot be used",
}

# (cause, memory location) pairs already warned about in this process.
_warned: set[tuple[str, str]] = set()
_warned_lock = threading.Lock()


def cause_of(exc: VectorStoreError) -> str:
    """The :data:`CAUSES` key of an index error."""
    if isinstance(exc, ShardLockedError):
        return "index_held_elsewhere"
    if isinstance(exc, EmbeddingMismatchError):
        return "embedding_mismatch"
    from .recall_index import _IndexLost  # the index's own error for "lost, and not rebuilt here"

    if isinstance(exc, _IndexLost):
        return "index_missing"
    return "index_unavailable"


class Degradations:
    """What one memory answered without, by cause.

    Args:
        where: the memory's location (its directory or database), named in the warning; a
            process warns once per cause and location.
    """

    def __init__(self, where: str) -> None:
        self.where = where
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def note(self, exc: VectorStoreError, what: str, *, count: bool = True) -> str:
        """Record that ``what`` (``"the memories section of before_turn"``, ``"search"``)
        went without the index because of ``exc``; warns the first time its cause is met in
        this process. Returns the cause."""
        cause = cause_of(exc)
        if count:
            with self._lock:
                self._counts[cause] += 1
        with _warned_lock:
            first = (cause, self.where) not in _warned
            _warned.add((cause, self.where))
        if first:
            logger.warning(
                "memory %s: this process works without the vector index (%s, first met by %s): %s. "
                "Until that changes, %s. Said once per process; stats()['degraded'] counts the "
                "answers affected.",
                self.where, cause, what, exc, CAUSES[cause],
            )
        return cause

    def counts(self) -> dict[str, int]:
        """Answers given without the index so far, per cause (empty when none)."""
        with self._lock:
            return dict(self._counts)
