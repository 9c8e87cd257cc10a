"""What the memory's LLM calls cost, and the LangChain runs they show up as.

Every attempt of a background job runs as a LangChain run of its own — name
``tiered-memory extract`` (or ``episode``), tags ``tiered-memory`` and
``tiered-memory:<kind>``, metadata ``user_id``, ``thread_id``, ``job_kind``, ``job_key`` —
through a ``RunnableConfig``, so LangSmith or any LangChain tracer shows each model call as a
child of its job, with the user and thread it was for. Tracers are reached through the
environment (LangSmith's variables) or ``TieredMemory(callbacks=[...])``.

A :class:`UsageCollector` rides the same config: it counts the job's model calls and adds
up the prompt and completion tokens each answer reports (``AIMessage.usage_metadata``, the
standard field every LangChain chat model fills from its provider). With the duration, the
structured-output method that worked and the model's name, that is the job's
:class:`JobUsage`, which the memory writes to its usage ledger (``storage/usage.py``) for
``stats()`` and the spend budget (:mod:`.budget`).
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from langchain_core.callbacks import BaseCallbackHandler

if TYPE_CHECKING:
    from langchain_core.outputs import LLMResult
    from langchain_core.runnables import RunnableConfig

    from ..storage import JobRow

__all__ = ["JobMeter", "JobUsage", "UsageCollector", "metered", "note_method"]

#: Tag on every run of the memory's background jobs.
TAG = "tiered-memory"


@dataclass(frozen=True)
class JobUsage:
    """What one attempt of a job spent on the chat model.

    ``input_tokens`` and ``output_tokens`` are the prompt and completion tokens the model
    reported; ``method`` the structured-output method that answered (``json_schema``,
    ``function_calling``, ``text``), ``None`` when no call succeeded.
    """

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    duration_s: float = 0.0
    method: str | None = None
    model: str | None = None

    @property
    def total_tokens(self) -> int:
        """Prompt and completion tokens together."""
        return self.input_tokens + self.output_tokens


def _tokens(result: LLMResult) -> tuple[int, int]:
    """Prompt and completion tokens of one model answer, as the model reported them."""
    found_in, found_out, seen = 0, 0, False
    for generations in result.generations:
        for generation in generations:
            usage = getattr(getattr(generation, "message", None), "usage_metadata", None)
            if usage:
                seen = True
                found_in += int(usage.get("input_tokens", 0) or 0)
                found_out += int(usage.get("output_tokens", 0) or 0)
    if not seen:  # an older integration: the provider's own counts in llm_output
        counts = (result.llm_output or {}).get("token_usage") or {}
        found_in = int(counts.get("prompt_tokens", 0) or 0)
        found_out = int(counts.get("completion_tokens", 0) or 0)
    return found_in, found_out


class UsageCollector(BaseCallbackHandler):
    """A LangChain callback counting chat-model calls and the tokens they report.

    Thread-safe: a job's calls may run in a worker thread of their own.
    """

    raise_error = False

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.model: str | None = None

    def _start(self, metadata: dict[str, Any] | None, kwargs: dict[str, Any]) -> None:
        params = kwargs.get("invocation_params") or {}
        name = (metadata or {}).get("ls_model_name") or params.get("model_name") or params.get("model")
        with self._lock:
            self.calls += 1
            if isinstance(name, str) and name:
                self.model = name

    def on_chat_model_start(self, serialized: dict[str, Any], messages: Any, *, metadata: dict[str, Any] | None = None, **kwargs: Any) -> None:
        """A call begins: count it (a refused request is a call too)."""
        self._start(metadata, kwargs)

    def on_llm_start(self, serialized: dict[str, Any], prompts: Any, *, metadata: dict[str, Any] | None = None, **kwargs: Any) -> None:
        """A completion-model call begins."""
        self._start(metadata, kwargs)

    def on_llm_end(self, response: LLMResult, **kwargs: Any) -> None:
        """A call answered: add the tokens it reports."""
        prompt, completion = _tokens(response)
        with self._lock:
            self.input_tokens += prompt
            self.output_tokens += completion


# The meter of the job running in this thread (context), for note_method().
_current: contextvars.ContextVar[JobMeter | None] = contextvars.ContextVar("tiered_memory_job", default=None)


def note_method(method: str) -> None:
    """Record that ``method`` answered the running job's structured call (no-op outside a job)."""
    meter = _current.get()
    if meter is not None:
        meter.method = method


class JobMeter:
    """One attempt of a job: its LangChain config, its calls and tokens, its duration."""

    def __init__(
        self, kind: str, user_id: str, thread_id: str | None, job_key: str,
        callbacks: Sequence[BaseCallbackHandler] = (),
    ) -> None:
        self.kind = kind
        self.collector = UsageCollector()
        self.method: str | None = None
        handlers: list[BaseCallbackHandler] = [self.collector, *callbacks]
        self.config: RunnableConfig = {
            "run_name": f"{TAG} {kind}",
            "tags": [TAG, f"{TAG}:{kind}"],
            "metadata": {"job_kind": kind, "user_id": user_id, "thread_id": thread_id, "job_key": job_key},
            "callbacks": handlers,
        }
        self._start = time.perf_counter()

    def usage(self) -> JobUsage:
        """What the attempt spent so far."""
        c = self.collector
        return JobUsage(
            calls=c.calls, input_tokens=c.input_tokens, output_tokens=c.output_tokens,
            duration_s=time.perf_counter() - self._start, method=self.method, model=c.model,
        )


Handler = Callable[["JobRow", str], None]


def metered(
    kind: str,
    handler: Handler,
    *,
    thread_id: Callable[[JobRow], str | None],
    record: Callable[[JobRow, JobUsage, bool], None],
    callbacks: Sequence[BaseCallbackHandler] = (),
) -> Handler:
    """``handler`` run as a LangChain run of its own (module doc), its spend ``record``\\ ed
    after each attempt that called the model — ``record(job, usage, ok)``, also when the
    attempt fails (its calls were paid for)."""
    from langchain_core.runnables import RunnableLambda

    def run(job: JobRow, worker: str) -> None:
        def body(_key: str) -> None:  # the run's input is the job's key
            handler(job, worker)

        meter = JobMeter(kind, job.user_id, thread_id(job), job.key, callbacks)
        token = _current.set(meter)
        ok = False
        try:
            # The handler runs inside the job's run: the model calls it makes (in this
            # thread or one started from its context) are children of it, with its
            # tags, metadata and callbacks.
            RunnableLambda(body, name=meter.config["run_name"]).invoke(job.key, meter.config)
            ok = True
        finally:
            _current.reset(token)
            usage = meter.usage()
            if usage.calls:
                record(job, usage, ok)

    return run
