"""``memory.jobs``: the job journal as its users see it — what waits and why, and re-running.

Jobs run by themselves (``runner.py``); this is for when they cannot:

- a job failed for good (a model down longer than the retry horizon, a poison job):
  :meth:`JobJournal.retry` runs it again, and so does ``tiered-memory jobs retry --failed``;
- a job is *stranded*: journaled by a memory with a chat model, it waits for a memory with
  one, and the later jobs of its thread wait behind it (an extraction covers every message
  not yet extracted, so they cannot run first). A memory opened without a model says so
  once in a WARNING that names their threads, its ``flush()`` returns ``False``, and
  ``retry(offline=True)`` hands them to its offline rules.
"""

from __future__ import annotations

import builtins
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Literal

from ..entries import check_id
from ..errors import InvalidInputError

if TYPE_CHECKING:
    from ..storage import JobRow, Storage
    from .runner import JobRunner

logger = logging.getLogger("langchain_tiered_memory")

__all__ = ["JobInfo", "JobJournal", "JobStatus"]

JobStatus = Literal["pending", "running", "done", "failed"]
_STATUSES = ("pending", "running", "done", "failed")
#: What a pending job waits for (:attr:`JobInfo.waits_for`).
MODEL = "a chat model: journaled by a memory with one, it runs only where one is configured"
BEHIND = "an earlier job of its thread that waits for a chat model"
BUDGET = "the spend budget"
NEXT_TRY = "its next try"
OUTAGE = "the model, which could not be reached (tried again until the retry horizon)"
#: Threads named in the stranded-jobs warning, at most.
_NAMED = 5


@dataclass(frozen=True)
class JobInfo:
    """One job of the journal, as :meth:`JobJournal.list` reports it."""

    key: str
    #: ``"extract"`` (a turn's extraction) or ``"episode"`` (a finished session).
    kind: str
    user_id: str
    thread_id: str | None
    status: str
    #: Attempts counted so far (tries against an unreachable model are not counted).
    attempts: int
    #: Why its last attempt failed (``None``: none failed, or it is done).
    reason: str | None
    #: When a pending job runs next (UTC).
    next_run_at: datetime | None
    #: What a pending job waits for, when it is not due to run now: see the module doc.
    waits_for: str | None
    #: What it needs of the memory that runs it (``"llm"``: a chat model), ``None``: nothing.
    needs: str | None
    created_at: str
    updated_at: str


class JobJournal:
    """``memory.jobs``: list the journal, re-run jobs (see the module doc).

    Built by :class:`~langchain_tiered_memory.TieredMemory`; use it as ``memory.jobs``.
    """

    def __init__(self, storage: Storage, runner: JobRunner, check_open: Callable[[], None]) -> None:
        self._storage = storage
        self._runner = runner
        self._check_open = check_open
        self._warned: set[int] = set()
        self._lock = threading.Lock()

    def list(
        self, *, status: str | None = None, user_id: str | None = None, limit: int = 100
    ) -> builtins.list[JobInfo]:
        """The journal's jobs, newest first: of one ``status`` (``pending``, ``running``,
        ``done``, ``failed``) and one user if given, at most ``limit``. Reading changes nothing."""
        self._check_open()
        if status is not None and status not in _STATUSES:
            raise InvalidInputError(f"status must be one of {', '.join(_STATUSES)} or None, got {status!r}")
        if user_id is not None:
            check_id("user_id", user_id)
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InvalidInputError(f"limit must be a positive int, got {limit!r}")
        rows = self._storage.jobs.rows(status, limit, user_id=user_id)
        provides = self._runner.provides()
        blocked: set[int | None] = set()
        if provides is not None and any(r.status == "pending" for r in rows):
            blocked = {r.thread_key for r in self._storage.jobs.unrunnable(provides, limit=10_000)[1]}
        now = self._runner.clock()
        threads: dict[int, str | None] = {}
        return [self._info(r, provides, blocked, now, threads) for r in rows]

    def retry(self, *, user_id: str | None = None, failed: bool = True, offline: bool = False) -> int:
        """Run jobs again now; returns how many were changed.

        Jobs waiting for their next try (a model that could not be reached) become due now;
        with ``failed`` (the default) jobs that failed for good run again with fresh attempts
        and a fresh retry horizon, and ask the model anew. ``offline=True`` hands the jobs
        that wait for a chat model this memory lacks to its offline rules (a memory with a
        model runs every job with it anyway). ``user_id``: only that user's jobs.

        Inline and background memories start them at once; call :meth:`~langchain_tiered_memory.TieredMemory.flush`
        to wait for them (a manual memory runs them there).
        """
        self._check_open()
        if user_id is not None:
            check_id("user_id", user_id)
        provided = None
        if offline:
            provides = self._runner.provides()
            provided = () if provides is None else tuple(provides)
        changed = self._storage.jobs.retry(
            now=self._runner.clock(), user_id=user_id, failed=bool(failed), provided=provided
        )
        if changed:
            logger.info("%d job(s) will run again%s", changed, f" (user {user_id!r})" if user_id else "")
            self._runner.notify()
        return changed

    def stranded(self) -> int:
        """How many jobs wait for what this memory lacks (a chat model), with the jobs
        queued behind them; the first time a job is among them, a WARNING names their
        threads and says what to do. Used by ``flush`` and when the memory opens."""
        provides = self._runner.provides()
        if provides is None or self._runner.mode == "external":
            return 0  # external: other processes run the jobs, with what they provide
        count, rows = self._storage.jobs.unrunnable(provides, limit=50)
        if not count:
            return 0
        waiting = max(self._runner.counts()["waiting"], count)
        with self._lock:
            new = {r.id for r in rows} - self._warned
            self._warned.update(r.id for r in rows)
        if new:
            logger.warning(
                "%d job(s) wait for a chat model (threads %s): they were journaled by a memory that "
                "had one and run only where one is configured, and %d later job(s) of their threads "
                "wait behind them. Open this memory with model= (or set OPENAI_API_KEY) to run them, "
                "or hand them to the offline rules: memory.jobs.retry(offline=True) or "
                "`tiered-memory jobs retry --offline`",
                count, self._threads(rows), waiting - count,
            )
        return waiting

    # --- internals --------------------------------------------------------------------

    def _threads(self, rows: Sequence[JobRow]) -> str:
        named: dict[str, int] = {}
        for row in rows:
            thread = self._storage.threads.by_key(row.thread_key) if row.thread_key is not None else None
            name = f"{row.user_id}/{thread.thread_id if thread else '?'}"
            named[name] = named.get(name, 0) + 1
        shown = [f"{name} ({n})" if n > 1 else name for name, n in list(named.items())[:_NAMED]]
        more = len(named) - len(shown)
        return ", ".join(shown) + (f" and {more} more" if more > 0 else "")

    def _info(
        self, row: JobRow, provides: Sequence[str] | None, blocked: set[int | None], now: float,
        threads: dict[int, str | None],
    ) -> JobInfo:
        thread_id = None
        if row.thread_key is not None:
            if row.thread_key not in threads:
                thread = self._storage.threads.by_key(row.thread_key)
                threads[row.thread_key] = thread.thread_id if thread else None
            thread_id = threads[row.thread_key]
        waits = None
        if row.status == "pending":
            if provides is not None and row.needs is not None and row.needs not in provides:
                waits = MODEL
            elif row.thread_key in blocked:
                waits = BEHIND
            elif row.waiting is not None:
                waits = BUDGET
            elif row.next_run_at > now:
                waits = OUTAGE if row.failing_since is not None else NEXT_TRY
        return JobInfo(
            key=row.key, kind=row.kind, user_id=row.user_id, thread_id=thread_id, status=row.status,
            attempts=row.attempts, reason=row.last_error,
            next_run_at=datetime.fromtimestamp(row.next_run_at, timezone.utc) if row.status == "pending" else None,
            waits_for=waits, needs=row.needs, created_at=row.created_at, updated_at=row.updated_at,
        )

