"""The job retry policy: when a failed job runs again, and when it has failed for good.

Two kinds of failure, told apart by :func:`is_transient`:

- **The model cannot be reached** — a refused or reset connection, a timeout, HTTP 408, 425,
  429 or 5xx: an outage or an overload, which says nothing about the job. The job waits and
  tries again, for as long as the outage lasts up to ``job_retry_horizon_seconds`` (default
  15 minutes) counted from its first such failure. The waits grow with the outage — at
  least ``job_backoff_seconds`` (and a second), then as long as it has lasted so far, at
  most :data:`MAX_RETRY_DELAY` — so a model that comes back is used within a minute, and
  a long outage costs a try a minute. These tries do not count as attempts.
- **Anything else** — an unusable answer, a refused request, a bug, a process killed during
  the job — counts an attempt; after ``job_max_attempts`` of them the job fails for good.
  The waits double from ``job_backoff_seconds``. This is what ends a poison job fast.

A waiting job is a pending row with its next run time: no worker holds it, and the workers
serve other jobs meanwhile. ``job_retry_horizon_seconds=0`` counts every failure as an
attempt. A job that failed for good runs again with ``memory.jobs.retry()`` (or
``tiered-memory jobs retry --failed``).
"""

from __future__ import annotations

import socket
from dataclasses import dataclass

from ..errors import ExtractionTimeoutError, ModelUnavailableError
from ..storage import JobRow

__all__ = ["MAX_RETRY_DELAY", "MIN_OUTAGE_DELAY", "RetryPolicy", "Verdict", "is_transient"]

#: Longest wait between two tries against an unreachable model: the delay after which a
#: model that came back is used.
MAX_RETRY_DELAY = 60.0
#: Shortest wait after failing to reach the model (also with ``job_backoff_seconds=0``): an
#: outage does not end within a second, and a job retried at once would spin.
MIN_OUTAGE_DELAY = 1.0
#: HTTP statuses of a server that is there but cannot answer now.
_TRANSIENT_STATUSES = frozenset({408, 425, 429})
#: Exception classes (by name: the SDKs are optional) of a request that never got an answer.
_TRANSIENT_NAMES = frozenset({
    "APIConnectionError", "APITimeoutError", "ConnectError", "ConnectTimeout", "ReadTimeout",
    "WriteTimeout", "PoolTimeout", "RemoteProtocolError", "ServiceUnavailableError",
    "InternalServerError", "RateLimitError", "OverloadedError",
})


def is_transient(exc: BaseException) -> bool:
    """Whether ``exc`` (or what caused it) says the model could not be reached or could not
    answer now, rather than that this job's request or answer was wrong."""
    seen = 0
    current: BaseException | None = exc
    while current is not None and seen < 6:
        if isinstance(current, (ExtractionTimeoutError, ModelUnavailableError, ConnectionError, TimeoutError, socket.gaierror)):
            return True
        if type(current).__name__ in _TRANSIENT_NAMES:
            return True
        status = _status(current)
        if status is not None:
            return status in _TRANSIENT_STATUSES or status >= 500
        current, seen = current.__cause__ or current.__context__, seen + 1
    return False


def _status(exc: BaseException) -> int | None:
    """The HTTP status an SDK's exception carries (``status_code``, or its response's)."""
    for holder in (exc, getattr(exc, "response", None)):
        status = getattr(holder, "status_code", None)
        if isinstance(status, int) and not isinstance(status, bool):
            return status
    return None


@dataclass(frozen=True)
class Verdict:
    """What becomes of a failed attempt."""

    #: When the job runs again (epoch seconds); ``None``: it failed for good.
    retry_at: float | None
    #: When its run of failures to reach the model began (``None``: not in one).
    failing_since: float | None
    #: Whether the attempt counts against ``job_max_attempts``.
    counted: bool
    #: The failure's reason, with what the policy decided.
    reason: str


@dataclass(frozen=True)
class RetryPolicy:
    """The policy of the module doc, with a memory's settings."""

    max_attempts: int
    backoff: float
    horizon: float

    def after(self, job: JobRow, exc: BaseException, now: float) -> Verdict:
        """The verdict on ``job``'s attempt that raised ``exc`` at ``now``."""
        reason = f"{type(exc).__name__}: {exc}"
        if self.horizon > 0 and is_transient(exc):
            since = job.failing_since if job.failing_since is not None else now
            end = since + self.horizon
            if now >= end:
                return Verdict(None, since, False, (
                    f"{reason} (the model could not be reached for {now - since:.0f} s, past "
                    f"job_retry_horizon_seconds = {self.horizon:g}; run memory.jobs.retry() or "
                    "`tiered-memory jobs retry --failed` once it is back)"
                ))
            delay = min(MAX_RETRY_DELAY, max(self.backoff, MIN_OUTAGE_DELAY, now - since))
            # The last try falls on the horizon itself, so the whole horizon is waited out.
            return Verdict(min(now + delay, end), since, False, reason)
        if job.attempts >= self.max_attempts:
            return Verdict(None, None, True, reason)
        return Verdict(now + self.backoff * 2 ** (job.attempts - 1), None, True, reason)
