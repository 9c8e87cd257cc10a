"""One model call, bounded in time, that can neither keep the process alive nor pile up threads.

Python cannot stop a thread, so a call that outlives its timeout is abandoned, not cancelled.
What keeps an abandoned call harmless:

- **the provider's own timeout** — where the model's SDK takes a per-request ``timeout``
  (``ChatOpenAI`` and every OpenAI-compatible server behind it, ``ChatAnthropic``), the
  request is sent with it, so the abandoned call ends on its own soon after (after the SDK's
  own retries, if the model was built with any; :func:`~langchain_tiered_memory.extraction.factory.default_model`
  builds it with none);
- **a daemon thread per call** — never a ``ThreadPoolExecutor``, whose workers Python joins
  at exit (which is why extraction does not run through ``with_structured_output``'s
  ``RunnableParallel``): a call hung for good does not keep the process from exiting;
- **a bound on abandoned calls** — at most :data:`MAX_HUNG_CALLS` per model may be
  outstanding; further calls fail at once with :class:`ExtractionTimeoutError` saying an
  earlier call is still hung, until one of them returns.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import Runnable

from ..errors import ExtractionError, ExtractionTimeoutError
from ..llm.settings import is_connection_error

__all__ = ["MAX_HUNG_CALLS", "call_with_timeout", "hung_calls", "with_request_timeout"]

#: Abandoned (timed-out, still running) calls allowed per model before calls fail fast.
MAX_HUNG_CALLS = 4
#: Fields by which a chat model says its SDK takes a per-request ``timeout`` argument.
_TIMEOUT_FIELDS = ("request_timeout", "default_request_timeout")

_T = TypeVar("_T")
_lock = threading.Lock()
_hung: dict[str, int] = {}


def hung_calls(key: str | None = None) -> int:
    """Abandoned calls still running: for the model ``key``, or in all."""
    with _lock:
        return sum(_hung.values()) if key is None else _hung.get(key, 0)


def with_request_timeout(runnable: Runnable[Any, Any], model: BaseChatModel, seconds: float) -> Runnable[Any, Any]:
    """``runnable`` sending ``seconds`` as the request timeout, if ``model``'s SDK takes one."""
    fields = getattr(type(model), "model_fields", {})
    if any(name in fields for name in _TIMEOUT_FIELDS):
        return runnable.bind(timeout=seconds)
    return runnable


def call_with_timeout(fn: Callable[[], _T], *, timeout: float, key: str, label: str, what: str) -> _T:
    """``fn()`` in a daemon thread, waited for ``timeout`` seconds (see the module doc).

    ``key`` identifies the model for the bound on hung calls, ``label`` names it in
    messages. An exception from ``fn`` becomes :class:`ExtractionError` (its
    ``__cause__`` the original); a call past ``timeout`` raises
    :class:`ExtractionTimeoutError`, and so does any call while :data:`MAX_HUNG_CALLS` of
    this model's calls are hung.
    """
    with _lock:
        if _hung.get(key, 0) >= MAX_HUNG_CALLS:
            raise ExtractionTimeoutError(
                f"{what}: not calling {label}: {_hung[key]} earlier calls to it timed out and are "
                "still hung (MAX_HUNG_CALLS). Calls fail fast until one of them returns: check "
                "that the model server is up, or raise llm_timeout_seconds for a slow model"
            )
    box: dict[str, Any] = {}
    done = threading.Event()
    abandoned = False
    # Callbacks and tracing live in context variables: carry them into the thread.
    context = contextvars.copy_context()

    def run() -> None:
        try:
            box["value"] = context.run(fn)
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            box["error"] = exc
        finally:
            with _lock:
                done.set()
                if abandoned:
                    _hung[key] -= 1
                    if not _hung[key]:
                        del _hung[key]

    worker = threading.Thread(target=run, name=f"tiered-memory-{what.replace(' ', '-')}", daemon=True)
    worker.start()
    if not done.wait(timeout):
        with _lock:
            if not done.is_set():  # it may have finished between the wait and the lock
                abandoned = True
                _hung[key] = _hung.get(key, 0) + 1
                raise ExtractionTimeoutError(
                    f"{what}: {label} did not answer within {timeout:g} s; the call was "
                    "abandoned (raise llm_timeout_seconds / timeout= for slow local models)"
                )
    if "error" in box:
        exc = box["error"]
        if not isinstance(exc, Exception):
            raise exc
        if isinstance(exc, ExtractionError):
            raise exc
        advice = ""
        if is_connection_error(exc):
            advice = ("; the model server cannot be reached: start it, or point OPENAI_BASE_URL "
                      "(or the model's base_url) at one that runs")
        raise ExtractionError(f"{what}: {label} failed: {type(exc).__name__}: {exc}{advice}") from exc
    value: _T = box["value"]
    return value
