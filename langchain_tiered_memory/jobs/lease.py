"""The heartbeat that renews a running job's lease.

A lease says how long a worker owns a job before another may take it over (its process may
have died). A job may take longer than any fixed lease: each of its model calls may run up
to ``llm_timeout_seconds``, and a question may try every structured-output method in turn
(``config.CALLS_PER_JOB``). Rather than size the lease for the slowest job — which would
keep a crashed worker's job for as long — the worker renews it every third of a lease while
the job runs, so a slow model never lets a second worker take the job and pay for it again,
and a worker that dies frees its job one lease after its last renewal.

Renewal stops after ``limit`` seconds, the most a job's calls can take: a job still running
then is wedged, and its lease is left to run out (the results of a worker that lost its
lease are refused when it commits, ``storage/jobs.holds_lease``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from types import TracebackType

from ..errors import MemoryClosedError

logger = logging.getLogger("langchain_tiered_memory")

__all__ = ["Heartbeat"]

#: Shortest time between two renewals, whatever the lease (each is a database write).
_MIN_EVERY = 0.01


class Heartbeat:
    """Renews a lease while a ``with`` block runs (see the module doc).

    Args:
        renew: extends the lease to the given time (epoch seconds); ``False`` when the
            worker no longer holds it, which ends the heartbeat.
        lease: the lease's length in seconds.
        clock: the runner's clock (epoch seconds).
        limit: stop renewing after this many seconds (``None``: never).
        what: names the job in log records.
    """

    def __init__(
        self,
        renew: Callable[[float], bool],
        lease: float,
        clock: Callable[[], float],
        *,
        limit: float | None,
        what: str,
    ) -> None:
        self._renew = renew
        self._lease = lease
        self._clock = clock
        self._limit = limit
        self._what = what
        self._every = max(lease / 3, _MIN_EVERY)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        #: How many times the lease was renewed.
        self.renewals = 0

    def __enter__(self) -> Heartbeat:
        self._thread = threading.Thread(target=self._beat, name="tiered-memory-lease", daemon=True)
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _beat(self) -> None:
        start = time.monotonic()
        while not self._stop.wait(self._every):
            if self._limit is not None and time.monotonic() - start > self._limit:
                logger.warning(
                    "job %s still runs after %.0f s, longer than its model calls can take; its lease "
                    "is no longer renewed, and another worker may take it over when it ends",
                    self._what, time.monotonic() - start,
                )
                return
            try:
                if not self._renew(self._clock() + self._lease):
                    return  # the job ended, or it was taken over: nothing left to hold
            except MemoryClosedError:
                return
            except Exception as exc:  # a busy or lost database: the next beat tries again
                logger.warning("renewing the lease of job %s failed (tried again): %s", self._what, exc)
                continue
            self.renewals += 1
