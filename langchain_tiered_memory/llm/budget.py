"""A spend budget for background LLM work: jobs over it wait, they never fail.

``MemoryConfig(budget=SpendBudget(tokens_per_hour=200_000, user_calls_per_hour=60))`` caps
what extraction and episode jobs may spend in any sliding hour — LLM calls and tokens
(prompt + completion, as the model reported them: :mod:`.usage`), in all and per user. Each
limit is optional; none set means no budget.

How it is kept (:class:`SpendGate`, consulted by the job runner before an LLM job runs):

- a job starts only while the spend of the last hour is under every limit that applies to
  it (the global ones, its user's); one job may take the spend past a limit by its own
  calls, and then the next waits;
- a job over the budget is put back as pending, its attempt not counted, and marked as
  waiting (``jobs.waiting = 'budget'``) until the hour's spend falls under the limit again
  (when the oldest calls of the window age out); its messages are stored already, so
  nothing is lost or skipped, only later;
- ``flush()`` does not wait for jobs that wait on the budget (it could be an hour), and
  :meth:`~langchain_tiered_memory.TieredMemory.stats` says how many wait and when the
  budget frees (``stats()["budget"]``).

Jobs that call no model (the offline extractor) are never held. The clock is the memory's,
so a test can move it forward and see waiting jobs run.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from ..config import SpendBudget

if TYPE_CHECKING:
    from ..storage import JobRow, Storage

logger = logging.getLogger("langchain_tiered_memory")

__all__ = ["LLM_JOBS", "WINDOW", "SpendBudget", "SpendGate"]

#: The sliding window the limits are counted over.
WINDOW = timedelta(hours=1)
#: Job kinds that call the chat model (and so are held by the budget).
LLM_JOBS = frozenset({"extract", "episode"})


def _frees_at(window: Sequence[tuple[float, int, int]], calls: int | None, tokens: int | None) -> float | None:
    """When the spend ``window`` (``(at, calls, tokens)`` oldest first, all within the last
    hour) falls under the limits; ``None`` when it is under them now."""
    spent_calls = sum(c for _, c, _ in window)
    spent_tokens = sum(t for _, _, t in window)

    def over() -> bool:
        return (calls is not None and spent_calls >= calls) or (tokens is not None and spent_tokens >= tokens)

    if not over():
        return None
    for at, c, t in window:  # the oldest spend ages out first
        spent_calls -= c
        spent_tokens -= t
        if not over():
            return at + WINDOW.total_seconds()
    return window[-1][0] + WINDOW.total_seconds() if window else None


class SpendGate:
    """Holds LLM jobs back while the budget is spent (see the module doc).

    Args:
        storage: the relational store (the usage ledger and the job journal).
        budget: the limits.
        clock: the memory's clock (aware datetimes).
        calls_model: whether jobs call a model now (``False`` for the offline extractor).
    """

    def __init__(
        self,
        storage: Storage,
        budget: SpendBudget,
        clock: Callable[[], datetime],
        calls_model: Callable[[], bool],
    ) -> None:
        self._storage = storage
        self.budget = budget
        self._clock = clock
        self._calls_model = calls_model

    def _now(self) -> float:
        return self._clock().timestamp()

    def frees_at(self, user_id: str, now: float | None = None) -> float | None:
        """When ``user_id``'s jobs may run again (epoch seconds, the memory's clock), or
        ``None`` when they may run now."""
        now = self._now() if now is None else now
        since = now - WINDOW.total_seconds()
        waits = []
        for scope, who in (("all", None), ("user", user_id)):
            calls, tokens = self.budget.limits(scope)
            if calls is None and tokens is None:
                continue
            until = _frees_at(self._storage.usage.window(since, who), calls, tokens)
            if until is not None:
                waits.append(until)
        return max(waits) if waits else None

    def defer(self, job: JobRow, worker: str) -> bool:
        """Put ``job`` back to wait for the budget if it is spent; ``True`` if it was.

        A job that may run and was waiting loses its mark here.
        """
        if not self.budget.limited or job.kind not in LLM_JOBS or not self._calls_model():
            return False
        now = self._now()
        until = self.frees_at(job.user_id, now)
        if until is None:
            self._storage.usage.clear_wait(job.id)
            return False
        import time

        # The journal runs on the wall clock; the budget on the memory's (a test's may be
        # frozen): release() makes the job due early when the memory's clock says so.
        self._storage.usage.defer(job.id, worker, time.time() + max(0.0, until - now), "budget")
        logger.info(
            "job %s waits for the spend budget until %s (user %r)",
            job.key, _iso(until), job.user_id,
        )
        return True

    def release(self) -> int:
        """Make due now the waiting jobs whose budget has freed; returns how many."""
        users = self._storage.usage.waiting_users()
        if not users:
            return 0
        now = self._now()
        free = [u for u in users if self.frees_at(u, now) is None] if self.budget.limited else users
        return self._storage.usage.release(free) if free else 0

    def next_due(self, provides: Sequence[str] | None) -> float | None:
        """When the next job that does not wait for the budget, of those a memory that
        ``provides`` may run, is due (wall clock)."""
        return self._storage.jobs.next_due(provides, held=False)

    def status(self) -> dict[str, Any]:
        """The budget's state for ``stats()``: limits, the last hour's spend, jobs waiting."""
        now = self._now()
        window = self._storage.usage.window(now - WINDOW.total_seconds(), None)
        waiting = self._storage.usage.waiting_users()
        frees = [f for f in (self.frees_at(u, now) for u in waiting) if f is not None]
        return {
            "limits": {k: v for k, v in self.budget.model_dump().items() if v is not None},
            "last_hour": {"calls": sum(c for _, c, _ in window), "tokens": sum(t for _, _, t in window)},
            "waiting_jobs": self._storage.usage.waiting_count(),
            "frees_at": _iso(min(frees)) if frees else None,
        }


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).isoformat()
