"""The memory's LLM spend: jobs metered as LangChain runs (:mod:`.usage`), their cost in the
ledger, and the budget that holds them back (:mod:`.budget`) — wired for one memory."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .budget import SpendBudget, SpendGate
from ..storage.usage import UsageRow
from .usage import JobUsage, metered

if TYPE_CHECKING:
    from langchain_core.callbacks import BaseCallbackHandler

    from ..config import MemoryConfig
    from ..storage import JobRow, Storage

__all__ = ["ENV_MODEL_BUDGET", "Spending", "budget_for"]

logger = logging.getLogger("langchain_tiered_memory")

#: The budget of a memory whose model the environment chose with an API key (paid access:
#: OpenAI, or any hosted OpenAI-compatible server), unless ``MemoryConfig(budget=...)`` says
#: otherwise: a key in the environment must not mean paid extraction without a limit. About
#: a hundred extraction calls an hour in all, a quarter of that for one user; jobs over it
#: wait, never fail.
ENV_MODEL_BUDGET = SpendBudget(tokens_per_hour=200_000, user_tokens_per_hour=50_000)


def budget_for(config: MemoryConfig, model_given: bool, environ: Mapping[str, str] | None = None) -> SpendBudget:
    """The spend budget of a memory: ``config.budget`` when it was set (even to no limits,
    ``SpendBudget()``) or the model was passed in; :data:`ENV_MODEL_BUDGET` when the model
    comes from the environment with an API key; else none."""
    if model_given or "budget" in config.model_fields_set:
        return config.budget
    from .settings import ModelSettings

    try:
        settings = ModelSettings.from_env(environ=environ)
    except Exception:  # noqa: BLE001 - a broken setting fails where the model is built, not here
        return config.budget
    if settings is None or settings.api_key is None:
        return config.budget  # offline, or a local server without a key: nothing is paid
    logger.info(
        "the model (%s) comes from OPENAI_API_KEY with no spend budget set: background jobs "
        "spend at most %s tokens an hour (%s per user); pass MemoryConfig(budget=SpendBudget(...)) "
        "to change it, or SpendBudget() for none",
        settings.describe(), f"{ENV_MODEL_BUDGET.tokens_per_hour:,}", f"{ENV_MODEL_BUDGET.user_tokens_per_hour:,}",
    )
    return ENV_MODEL_BUDGET

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
