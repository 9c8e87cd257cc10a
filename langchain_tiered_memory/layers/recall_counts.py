"""Recalls counted on the turn's path and written after it.

The memories a context quotes count as recalled (last access, count, boost: what decay and
forgetting read), but ``before_turn`` only reads: writing the counts there cost a write
transaction per turn (~0.5 ms at 10k × 10k, more on PostgreSQL, and a wait whenever another
process held the write lock). :class:`PendingRecalls` keeps them until the memory writes
them: at its jobs' upkeep (every second or so in the background worker, at each turn inline;
never waiting for another process's write lock there, since a thread waiting on SQLite's
writing connection would hold up this process's other writes: it tries again at the next upkeep),
before anything reads memories by those counts (``memory.memories`` reads, export, the
capacity eviction), at ``flush()`` and at ``close()``. A search or a recall writes nothing: it
ranks by the rows as the counts will leave them (:meth:`PendingRecalls.applied`) and adds its
own. A process that dies first loses those counts only: bookkeeping, never what a user said.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..storage.memories import Memories
    from ..storage.rows import MemoryRow

__all__ = ["MAX_PENDING", "PendingRecalls"]

#: Memories waiting past which the next count writes them all (a process that never writes).
MAX_PENDING = 2_000


class PendingRecalls:
    """Recall counts of memories not written yet (see the module docs)."""

    def __init__(self, memories: Memories, boost: float, limit: int = MAX_PENDING) -> None:
        self._memories = memories
        self._boost = boost
        self._limit = limit
        self._counts: dict[str, tuple[int, str]] = {}
        self._lock = threading.Lock()
        # Held from taking the counts to their commit: two writers could commit an older
        # last access over a newer one.
        self._writing = threading.Lock()

    def __len__(self) -> int:
        return len(self._counts)

    def add(self, ids: Sequence[str], now: datetime) -> None:
        """Count the memories ``ids`` as recalled ``now``; written later (see :meth:`write`)."""
        when = now.isoformat()
        with self._lock:
            for memory_id in ids:
                times = self._counts.get(memory_id, (0, when))[0]
                self._counts[memory_id] = (times + 1, when)
            full = len(self._counts) >= self._limit
        if full:
            self.write()

    def applied(self, rows: Mapping[str, MemoryRow]) -> dict[str, MemoryRow]:
        """``rows`` as they will read once the counts kept are written (what
        :meth:`.Memories.record_accesses` does to them): a search ranks by them without
        writing first, so a read never waits on, or takes, the write lock."""
        with self._lock:
            counts = {i: self._counts[i] for i in rows if i in self._counts}
        if not counts:
            return dict(rows)
        out = dict(rows)
        for memory_id, (times, when) in counts.items():
            row = out[memory_id]
            out[memory_id] = dataclasses.replace(
                row,
                last_accessed=max(row.last_accessed, when),
                access_count=row.access_count + times,
                boost=min(row.boost + times * self._boost, max(0.0, 1.0 - row.importance)),
            )
        return out

    def write(self, *, wait: bool = True) -> int:
        """Write the counts kept so far (one transaction); how many memories they were.
        ``wait=False`` raises :class:`.WriteLockBusy` at once, keeping them, while another
        process holds the database's write lock (see :meth:`.Database.write`)."""
        with self._writing:
            with self._lock:
                counts, self._counts = self._counts, {}
            if not counts:
                return 0
            try:
                self._memories.record_accesses(counts, self._boost, wait=wait)
            except BaseException:
                # Kept for the next write (a busy database): merged with what came since.
                with self._lock:
                    for memory_id, (times, when) in counts.items():
                        later = self._counts.get(memory_id)
                        self._counts[memory_id] = (times + later[0], later[1]) if later else (times, when)
                raise
            return len(counts)
