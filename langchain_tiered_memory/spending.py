"""The memory's LLM spend: jobs metered as LangChain runs (:mod:`.usage`), their cost in the
ledger, and the budget that holds them back (:mod:`.budget`) — wired for one memory."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .budget import SpendBudget, SpendGate
from .storage.usage import UsageRow
from .usage import JobUsage, metered

if TYPE_CHECKING:
    from langchain_core.callbacks import BaseCallbackHandler

    from .storage import JobRow, Storage

__all__ = ["Spending"]

Handler = Callable[["JobRow", str], None]


class Spending:
    """Meters, records and budgets the model calls of one memory's jobs.

    Args:
        storage: the relational store (the ledger, the journal).
        budget: ``MemoryConfig.budget``.
        clock: the memory's clock.
        calls_model: whether jobs call a model now (not with the offline extractor).
        callbacks: LangChain handlers (tracers) to see the jobs' runs.
    """

    def __init__(
        self,
        storage: Storage,
        budget: SpendBudget,
        clock: Callable[[], datetime],
        calls_model: Callable[[], bool],
        callbacks: Sequence[BaseCallbackHandler] | None = None,
    ) -> None:
        self._storage = storage
        self._clock = clock
        self._callbacks = tuple(callbacks or ())
        #: Holds LLM jobs back while the budget is spent (the runner's gate).
        self.gate = SpendGate(storage, budget, clock, calls_model)

    def metered(self, handlers: dict[str, Handler]) -> dict[str, Handler]:
        """``handlers``, each attempt run as a traced LangChain run and its spend recorded."""
        return {
            kind: metered(kind, handler, thread_id=self._thread_id, record=self._record, callbacks=self._callbacks)
            for kind, handler in handlers.items()
        }

    def _thread_id(self, job: JobRow) -> str | None:
        thread = self._storage.threads.by_key(job.thread_key) if job.thread_key is not None else None
        return None if thread is None else thread.thread_id

    def _record(self, job: JobRow, usage: JobUsage, ok: bool) -> None:
        self._storage.usage.record(UsageRow(
            job_key=job.key, kind=job.kind, user_id=job.user_id, thread_id=self._thread_id(job),
            at=self._clock().timestamp(), calls=usage.calls, input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens, duration_ms=usage.duration_s * 1000,
            method=usage.method, model=usage.model, ok=ok,
        ))

    def stats(self) -> dict[str, Any]:
        """``usage`` (totals in all, per day, per user) and ``budget`` for ``stats()``."""
        return {"usage": self._storage.usage.totals(), "budget": self.gate.status()}
