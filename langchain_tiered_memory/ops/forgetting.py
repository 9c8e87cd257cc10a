"""Forgetting a user, a thread, memories or an entity: from the database and every index.

The database deletes every row in one transaction — scrubbing the copies its job journal
holds of the deleted text (``storage/job_answers.py``) — and journals the index points to
delete (``storage/forgetting.py``); the points go next, here if this process holds the
index, else by the process that does (its upkeep resumes the journal). Then the files are
scrubbed so no forgotten byte stays in one. Interrupted anywhere, it finishes on the next
open.

The files' scrub truncates SQLite's write-ahead log, which a reader (an open read
transaction, in this process or another) holds: it waits ``scrub_wait_seconds`` for them,
never the 30 s busy timeout. If they are still there, the forget returns all the same,
says so in its result (``wal_scrubbed: False``) and in a WARNING, and the scrub stays
journaled: the upkeep retries it (without waiting) until the readers are gone, and so do
:meth:`Forgetter.close` and the next open; :meth:`Forgetter.scrub` retries it on request.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from ..errors import ShardLockedError, StorageError

if TYPE_CHECKING:
    from ..index.recall_index import RecallIndex
    from ..storage import Storage

logger = logging.getLogger("langchain_tiered_memory")

#: How often the upkeep looks for a scrub left to do (one ``meta`` row read).
SCRUB_RETRY_SECONDS = 5.0


class Forgetter:
    """Journaled deletes across the database and the recall index.

    Args:
        storage, index: the relational store and the recall index.
        clock: the current time.
        scrub_wait: how long a forget waits for readers of the write-ahead log.
    """

    def __init__(
        self, storage: Storage, index: RecallIndex, clock: Callable[[], datetime], *, scrub_wait: float = 2.0
    ) -> None:
        self._storage = storage
        self._index = index
        self._clock = clock
        self._scrub_wait = scrub_wait
        # 0: the first upkeep (right after opening) retries a scrub an earlier process left.
        self._next_retry = 0.0

    def user(self, user_id: str) -> dict[str, int]:
        """Everything of the user."""
        counts, op = self._storage.forgetting.user(user_id, self._now())
        return {**counts, **self._finish(op)}

    def thread(self, thread_id: str, user_id: str | None) -> dict[str, int]:
        """A thread and what was learned in it."""
        counts, op = self._storage.forgetting.thread(thread_id, user_id, self._now())
        return {**counts, **self._finish(op)}

    def memory(self, user_id: str, ids: Sequence[str]) -> dict[str, int]:
        """Some of the user's memories, on request: the counts and what was scrubbed."""
        counts, op = self._storage.forgetting.memories(user_id, ids, self._now())
        return {**counts, **self._finish(op)}

    def memories(self, user_id: str, ids: Sequence[str]) -> int:
        """Memories evicted over the user's cap; how many went. The scrub does not wait
        for readers (an eviction runs inside a turn): the upkeep finishes it."""
        counts, op = self._storage.forgetting.memories(user_id, ids, self._now())
        self._finish(op, wait=False)
        return counts["memories"]

    def entity(self, user_id: str, name_key: str) -> dict[str, int]:
        """One entity profile and its history."""
        counts = self._storage.forgetting.entity(user_id, name_key)
        return {**counts, **self._finish(None)}

    def resume(self) -> int:
        """Finish journaled forgets whose index points are left (holder only); how many."""
        if not self._storage.forgetting.pending() or not self._index.available():
            return 0
        return self._index.resume_forgets()

    def retry_scrub(self) -> None:
        """The upkeep's part: every :data:`SCRUB_RETRY_SECONDS`, finish a scrub left to do,
        without waiting for readers (they may stay for long; writers would wait meanwhile)."""
        now = time.monotonic()
        if now < self._next_retry:
            return
        self._next_retry = now + SCRUB_RETRY_SECONDS
        try:
            done = self._storage.finish_scrub(0.0)
        except StorageError as exc:  # the database is busy or failing: the next retry sees
            logger.warning("forget: retrying the scrub of the write-ahead log failed (%s); retried later", exc)
            return
        if done:
            logger.info("forget: %s-wal is truncated now that its readers closed", self._storage.location)

    def scrub(self, wait_seconds: float | None = None) -> bool:
        """Finish a scrub left to do, waiting ``wait_seconds`` (default: the configured
        wait) for readers; whether no frame of a forgotten row is left."""
        done = self._storage.finish_scrub(self._scrub_wait if wait_seconds is None else wait_seconds)
        if done is False:
            self._warn(self._scrub_wait if wait_seconds is None else wait_seconds)
        return done is not False

    def close(self) -> None:
        """After the database closed: say if a scrub was still held off (the next open
        retries it)."""
        if self._storage.scrub_pending_at_close:
            logger.warning(
                "closing: %s-wal still holds frames of forgotten rows, held by a reader of another "
                "connection; the next open of this memory truncates it", self._storage.location,
            )

    def _finish(self, op: int | None, *, wait: bool = True) -> dict[str, int]:
        if op is not None:
            try:
                if self._index.available():
                    self._index.resume_forgets()
            except ShardLockedError:
                pass  # the holder finishes it
            except Exception as exc:  # the journal keeps it: the next upkeep or open retries
                logger.warning("forget: the index points are left for later (%s)", exc)
        if wait:
            done = self._storage.scrub()
        else:
            # An eviction (memories only: no full-text index to merge): truncate the log if
            # nobody reads it, else leave it journaled for the upkeep.
            done = self._storage.finish_scrub(0.0)
        if done is None:
            return {}  # a database server: its log and vacuum are its own
        if not done:
            if wait:
                self._warn(self._scrub_wait)
            else:
                logger.info("forget: %s-wal is read now; the upkeep truncates it later", self._storage.location)
        # An int, as the counts are (bool is one): the result stays a dict[str, int].
        return {"wal_scrubbed": done}

    def _warn(self, waited: float) -> None:
        logger.warning(
            "forget: %s-wal still holds frames of the forgotten rows: a read transaction open "
            "for over %g s (in this process, e.g. a checkpointer list() iterator not run to its "
            "end, or in another process) keeps the write-ahead log from being truncated. The "
            "frames go once it ends: this memory retries on its upkeep, at close and on the next "
            "open, or call memory.admin.scrub() when the readers are done",
            self._storage.location, waited,
        )

    def _now(self) -> str:
        return self._clock().isoformat()
