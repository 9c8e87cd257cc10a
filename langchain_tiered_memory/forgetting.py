"""Forgetting a user, a thread, memories or an entity: from the database and every index.

The database deletes every row in one transaction and journals the index points to delete
(``storage/forgetting.py``); the points go next, here if this process holds the index, else
by the process that does (its upkeep resumes the journal). Then the database is scrubbed so
no forgotten byte stays in a file. Interrupted anywhere, it finishes on the next open.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from .errors import ShardLockedError

if TYPE_CHECKING:
    from .index import RecallIndex
    from .storage import Storage

logger = logging.getLogger("langchain_tiered_memory")


class Forgetter:
    """Journaled deletes across the database and the recall index."""

    def __init__(self, storage: Storage, index: RecallIndex, clock: Callable[[], datetime]) -> None:
        self._storage = storage
        self._index = index
        self._clock = clock

    def user(self, user_id: str) -> dict[str, int]:
        """Everything of the user."""
        counts, op = self._storage.forgetting.user(user_id, self._now())
        self._finish(op)
        return counts

    def thread(self, thread_id: str, user_id: str | None) -> dict[str, int]:
        """A thread and what was learned in it."""
        counts, op = self._storage.forgetting.thread(thread_id, user_id, self._now())
        self._finish(op)
        return counts

    def memories(self, user_id: str, ids: Sequence[str]) -> int:
        """Some of the user's memories (explicitly, or evicted over the cap)."""
        n, op = self._storage.forgetting.memories(user_id, ids, self._now())
        self._finish(op)
        return n

    def entity(self, user_id: str, name_key: str) -> int:
        """One entity profile and its history."""
        n = self._storage.forgetting.entity(user_id, name_key)
        if n:
            self._storage.scrub()
        return n

    def resume(self) -> int:
        """Finish journaled forgets whose index points are left (holder only); how many."""
        if not self._storage.forgetting.pending() or not self._index.available():
            return 0
        return self._index.resume_forgets()

    def _finish(self, op: int | None) -> None:
        if op is not None:
            try:
                if self._index.available():
                    self._index.resume_forgets()
            except ShardLockedError:
                pass  # the holder finishes it
            except Exception as exc:  # the journal keeps it: the next upkeep or open retries
                logger.warning("forget: the index points are left for later (%s)", exc)
        self._storage.scrub()

    def _now(self) -> str:
        return self._clock().isoformat()
