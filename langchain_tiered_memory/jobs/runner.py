"""The job journal's runner: work that needs an LLM or an embedding, done after the turn.

A job is a row of the journal, written in the same transaction as the messages it is
about, so a crash between the two cannot happen. A worker leases a job (an attempt is
counted when it is claimed), runs its handler and marks it done when the handler's results
are committed; a failure goes back to pending with an exponential backoff, and after
``max_attempts`` the job is marked failed with its reason — also when every attempt killed
its process. Handlers are idempotent (a job run twice changes nothing), so a lease that runs
out, or a process killed mid-job, only means the work is done again, once.

Besides jobs, the worker runs the memory's periodic upkeep (:attr:`JobRunner.upkeep`):
indexing the records that wait for their vector point, finishing journaled forgets, closing
idle sessions. ``flush`` waits for both.

Two modes: ``inline`` runs due jobs in the caller's thread (tests, notebooks: results are
visible when ``after_turn`` returns), ``background`` in one worker thread per memory.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from typing import Literal, Protocol

from ..errors import MemoryClosedError
from ..storage import JobRow, Storage

logger = logging.getLogger("langchain_tiered_memory")

Handler = Callable[[JobRow, str], None]


class JobGate(Protocol):
    """What may hold a claimed job back (the spend budget, ``budget.SpendGate``)."""

    def defer(self, job: JobRow, worker: str) -> bool:
        """Put the job back to wait, without counting the attempt; ``True`` if it did."""

    def release(self) -> int:
        """Make due the held jobs that may run now."""

    def next_due(self) -> float | None:
        """When the next job that is not held is due (``flush`` does not wait for held ones)."""
_POLL_SECONDS = 1.0
# Upkeep that makes no progress this long ends a flush (the error is logged).
_STALLED_SECONDS = 10.0
# How often the background worker runs the periodic check (idle sessions).
_PERIODIC_SECONDS = 30.0


class JobRunner:
    """Runs journaled jobs with the handler registered for their kind."""

    def __init__(
        self,
        storage: Storage,
        handlers: dict[str, Handler],
        *,
        mode: Literal["inline", "background"],
        max_attempts: int,
        backoff_seconds: float,
        lease_seconds: float,
        periodic: Callable[[], None] | None = None,
        upkeep: Callable[[], int] | None = None,
        backlog: Callable[[], int] | None = None,
        gate: JobGate | None = None,
    ) -> None:
        self._storage = storage
        self._gate = gate
        self._periodic = periodic
        #: Work besides jobs, run after each batch of jobs; returns how much it did (and
        #: ``flush`` waits until it does nothing more).
        self.upkeep = upkeep
        #: How much upkeep is left that this process can do (0: none).
        self.backlog = backlog or (lambda: 0)
        self._last_periodic = time.monotonic()
        self._handlers = handlers
        self.mode = mode
        self._max_attempts = max_attempts
        self._backoff = backoff_seconds
        self._lease = lease_seconds
        self.worker_id = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._busy = threading.Event()
        self._idle = threading.Event()
        self._run_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._release_dead_workers()
        if mode == "background":
            self._thread = threading.Thread(
                target=self._loop, name="tiered-memory-jobs", daemon=True
            )
            self._thread.start()

    def notify(self) -> None:
        """A job was journaled: run it now (inline) or wake the worker (background)."""
        if self.mode == "inline":
            self.run_due()
        else:
            self._wake.set()

    def run_due(self) -> int:
        """Run every job that is due now; returns how many ran."""
        ran = 0
        # One runner at a time per memory: inline callers in several threads take turns.
        with self._run_lock:
            if self._gate is not None:
                self._gate.release()
            while not self._stop.is_set():
                job = self._storage.jobs.claim(self.worker_id, self._lease, max_attempts=self._max_attempts)
                if job is None:
                    break
                self._run(job)
                ran += 1
            if self.upkeep is not None and not self._stop.is_set():
                ran += self._upkeep()
        return ran

    @property
    def stopping(self) -> threading.Event:
        """Set once :meth:`close` was called: long upkeep stops between batches."""
        return self._stop

    @property
    def busy(self) -> bool:
        """Whether the upkeep is running now (a flush waits for it, however slow)."""
        return self._busy.is_set()

    def _upkeep(self) -> int:
        assert self.upkeep is not None
        self._busy.set()
        try:
            return self.upkeep()
        except MemoryClosedError:
            raise
        except Exception as exc:  # the index or the embedder failed: retried on the next run
            logger.warning("memory upkeep failed (retried later): %s", exc)
            return 0
        finally:
            self._busy.clear()

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until no job is pending or running and the upkeep this process can do is
        done; ``False`` if ``timeout`` ran out first, or the upkeep stopped making progress
        (its failure is logged).

        Jobs waiting for a retry are waited for; failed jobs, and jobs waiting for the spend
        budget, are not.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        last, since = -1, time.monotonic()
        while True:
            if self.mode == "inline":
                self.run_due()
            else:
                self._wake.set()
            due = self._storage.jobs.next_due() if self._gate is None else self._gate.next_due()
            now = time.monotonic()
            if due is None:
                left = self.backlog()
                if left == 0:
                    return True
                if left != last or self.busy:
                    last, since = left, now
                elif now - since > _STALLED_SECONDS:
                    logger.warning("flush: %d records still wait for the index after %.0f s", left, now - since)
                    return False
                due = time.time()
            if deadline is not None and now >= deadline:
                return False
            wait = max(0.0, due - time.time()) if self.mode == "inline" else 0.02
            if deadline is not None:
                wait = min(wait, deadline - now)
            time.sleep(min(max(wait, 0.005), 0.5))

    def close(self) -> None:
        """Stop the worker; a job it is running finishes first."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    # --- internals --------------------------------------------------------------------

    def _run(self, job: JobRow) -> None:
        handler = self._handlers.get(job.kind)
        if handler is not None and self._gate is not None and self._gate.defer(job, self.worker_id):
            return  # over the spend budget: it waits, its attempt not counted
        try:
            if handler is None:
                raise RuntimeError(f"no handler for jobs of kind {job.kind!r}")
            handler(job, self.worker_id)
        except MemoryClosedError:
            raise
        except Exception as exc:  # a job's failure is recorded, never raised into a turn
            reason = f"{type(exc).__name__}: {exc}"
            if job.attempts >= self._max_attempts:
                logger.warning("job %s failed for good after %d attempts: %s", job.key, job.attempts, reason)
                self._storage.jobs.fail(job.id, self.worker_id, reason, None)
            else:
                delay = self._backoff * 2 ** (job.attempts - 1)
                logger.info("job %s failed (attempt %d), retry in %.1f s: %s", job.key, job.attempts, delay, reason)
                self._storage.jobs.fail(job.id, self.worker_id, reason, time.time() + delay)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                if self._periodic is not None and time.monotonic() - self._last_periodic > _PERIODIC_SECONDS:
                    self._last_periodic = time.monotonic()
                    self._periodic()
                self.run_due()
            except MemoryClosedError:
                return
            except Exception:  # pragma: no cover - a storage error: keep the worker alive
                logger.exception("job worker error")
            due = None
            try:
                due = self._storage.jobs.next_due()
            except MemoryClosedError:
                return
            except Exception:  # pragma: no cover
                pass
            wait = _POLL_SECONDS if due is None else min(_POLL_SECONDS, max(0.0, due - time.time()))
            self._wake.wait(timeout=wait)
            self._wake.clear()

    def _release_dead_workers(self) -> None:
        """Jobs leased by a process of this host that no longer runs are due at once."""
        host = socket.gethostname()
        dead = []
        for worker in self._storage.jobs.running_workers():
            parts = worker.split(":")
            if len(parts) == 3 and parts[0] == host and parts[1].isdigit() and not _alive(int(parts[1])):
                dead.append(worker)
        if dead and self._storage.jobs.release(dead):
            logger.info("resuming jobs of %d stopped worker(s)", len(dead))


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
