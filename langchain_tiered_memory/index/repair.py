"""Bringing a just-opened recall index back in line with the database that owns its records.

The database owns every record; the index holds at most one point per record. When a
process opens the index it compares the two (a count of each: cheap when they agree):

- more points than records: some point has no record (an older ``memory.db`` restored
  beside a newer ``qdrant/``). The points are read by page and looked up in the database;
  those without a record are deleted, with a loud warning;
- fewer points than records, or an index created by this open beside earlier records: the
  index was lost or fell behind, so every record is marked unindexed and
  :meth:`~.index.RecallIndex.sync` rebuilds the points, its progress logged at INFO
  (:class:`CatchUp`).

Forgets interrupted between the layers are finished before (``RecallIndex.resume_forgets``):
their points lack records on purpose.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..backends.records import Where

if TYPE_CHECKING:
    from ..backends.base import BaseBackend
    from .points import UnitSource
    from ..storage import Storage

logger = logging.getLogger("langchain_tiered_memory")

__all__ = ["CatchUp", "drop_orphans", "reconcile"]

#: Points read per page when the index is checked for points without a record.
SWEEP_BATCH = 512
#: A catch-up logs its progress each time this share of its records is done, or this many
#: records if that is fewer (a rebuild of millions still reports as it goes).
PROGRESS_SHARE = 0.1
PROGRESS_EVERY = 10_000


def reconcile(backend: BaseBackend, sources: Sequence[UnitSource], storage: Storage) -> CatchUp | None:
    """Delete the points whose record is gone and, if the index lost points, mark every
    record for indexing again (see the module docs). Returns the progress of the catch-up
    this started, if it started one."""
    # "Created by this open" is true once: a second memory on the same directory in this
    # process is handed the same shared shard, which is whole -- rebuilding it would
    # re-embed everything (a notebook cell run twice).
    created = backend.created
    if created:
        backend.created = False
    expected = sum(s.indexed_count() for s in sources)
    points = backend.count()
    if points > expected and points > expected + storage.unindexed_count():
        # More points than records: some point has no record (each record has one point
        # at most). The database owns the records; a point is only an index entry.
        orphans = drop_orphans(backend, sources)
        if orphans:
            logger.warning(
                "the vector index at %s held %d points whose records are not in %s (was an "
                "older database restored beside a newer index?); they were deleted, and the "
                "index is back in line with the database. To rebuild the index from scratch "
                "instead, delete %s while no process uses it: the next open rebuilds it from "
                "the database",
                backend.location, orphans, storage.location, backend.location,
            )
            points = backend.count()
    if points < expected or (created and expected):
        logger.warning(
            "the vector index at %s holds %d points for %d indexed records of %s: "
            "rebuilding it from the database (progress is logged at INFO)",
            backend.location, points, expected, storage.location,
        )
        for source in sources:
            source.reset()
        return _start(backend, storage)
    if created and not storage.is_new:
        # A new index beside earlier records: the index was lost and its records' marks
        # reset before it opened (TieredMemory does that when qdrant/ is missing).
        return _start(backend, storage)
    return None


def drop_orphans(backend: BaseBackend, sources: Sequence[UnitSource]) -> int:
    """Delete the points whose record is not in the database; how many there were.

    Reads the points by page (no vectors) and asks the sources of each point's grain which
    of the ids they have, so memory stays bounded by a page. A record added meanwhile is
    written before its point, so a live record's point is never taken for an orphan.
    """
    removed = 0
    offset: str | None = None
    while True:
        page, offset = backend.scroll(Where(), limit=SWEEP_BATCH, offset=offset)
        by_grain: dict[str, list[str]] = {}
        for record in page:
            by_grain.setdefault(str(record.payload.get("grain", "")), []).append(record.id)
        orphans: list[str] = []
        for grain, ids in by_grain.items():
            known = _known(sources, grain, ids)
            orphans += [i for i in ids if i not in known]
        if orphans:
            backend.delete(orphans)
            removed += len(orphans)
        if offset is None or not page:
            break
    if removed:
        backend.flush()
    return removed


def _known(sources: Sequence[UnitSource], grain: str, ids: list[str]) -> set[str]:
    """The ids among ``ids`` (points of ``grain``) whose record the database has: the
    sources of that grain say, as they do for ``sync`` (their texts are of the records
    they have)."""
    known: set[str] = set()
    for source in sources:
        if grain in source.grains:
            known.update(source.texts(ids))
    return known


def _start(backend: BaseBackend, storage: Storage) -> CatchUp | None:
    """The progress log of indexing what waits now, as ``sync`` writes it."""
    total = storage.unindexed_count()
    return CatchUp(backend.location, total) if total else None


class CatchUp:
    """The progress of a catch-up, logged at INFO: a line when it starts, one each time
    :data:`PROGRESS_SHARE` of it (or :data:`PROGRESS_EVERY` records) is done, one at the end."""

    def __init__(self, location: str, total: int) -> None:
        self.location = location
        self.total = total
        self.done = 0
        self.started = time.monotonic()
        self.step = max(1, min(PROGRESS_EVERY, math.ceil(total * PROGRESS_SHARE)))
        self.next = self.step
        logger.info("catching up the vector index at %s: 0/%d records to index", location, total)

    def advance(self, n: int) -> None:
        """``n`` more records were indexed."""
        self.done += n
        # Records written meanwhile are indexed by the same passes: the total grows.
        self.total = max(self.total, self.done)
        if self.done >= self.next:
            logger.info(
                "catching up the vector index at %s: %d/%d records indexed (%d%%)",
                self.location, self.done, self.total, 100 * self.done // self.total,
            )
            self.next = (self.done // self.step + 1) * self.step

    def finish(self) -> None:
        """Nothing waits any more."""
        logger.info(
            "the vector index at %s caught up: %d records indexed in %.1f s",
            self.location, self.done, time.monotonic() - self.started,
        )
