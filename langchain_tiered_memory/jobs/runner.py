"""The job journal's runner: work that needs an LLM or an embedding, done after the turn.

A job is a row of the journal, written in the same transaction as the messages it is
about, so a crash between the two cannot happen. A worker leases a job (an attempt is
counted when it is claimed), renews the lease while the job runs (``lease.py``), runs its
handler and marks it done when the handler's results are committed; a failure goes back to
pending to be tried again later, or fails for good, as ``retry.py`` decides: a model that
cannot be reached is waited for up to a horizon, other failures count attempts — also when
every attempt killed its process. Handlers are idempotent (a job run twice changes nothing),
so a lease that runs out, or a process killed mid-job, only means the work is done again,
once.

Besides jobs, the worker runs the memory's periodic upkeep (:attr:`JobRunner.upkeep`):
indexing the records that wait for their vector point, finishing journaled forgets, closing
idle sessions. ``flush`` waits for both.

Three modes: ``inline`` runs due jobs in the caller's thread (tests, notebooks: results are
visible when ``after_turn`` returns), ``background`` in one worker thread per memory,
``manual`` only in ``flush`` — creating the runner then writes nothing (no lease of a dead
worker is released before the first flush), so a memory opened to look changes nothing —
and ``external`` not at all: other processes on the same database run them (app processes
that only serve turns beside dedicated workers; ``flush`` waits for those workers).

A runner claims only the jobs whose needs its memory provides (``provides``: a memory with
a chat model provides ``"llm"``); the others wait for a memory that can run them, and
``flush`` does not wait for them. :meth:`JobRunner.counts` reports them apart, and a job
leased by a process that no longer runs (or whose lease ran out) as ``stale``.
"""

from __future__ import annotations

import atexit
import functools
import logging
import os
import socket
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Sequence
from typing import Literal, Protocol

from ..errors import MemoryClosedError
from ..storage import JobRow, Storage
from .lease import Heartbeat
from .retry import RetryPolicy

logger = logging.getLogger("langchain_tiered_memory")

Handler = Callable[[JobRow, str], None]


class JobGate(Protocol):
    """What may hold a claimed job back (the spend budget, ``budget.SpendGate``)."""

    def defer(self, job: JobRow, worker: str) -> bool:
        """Put the job back to wait, without counting the attempt; ``True`` if it did."""

    def release(self) -> int:
        """Make due the held jobs that may run now."""

    def next_due(self, provides: Sequence[str] | None) -> float | None:
        """When the next job that is not held, of those a memory that ``provides`` may run,
        is due (``flush`` does not wait for held ones)."""


_POLL_SECONDS = 1.0
# Upkeep that makes no progress this long ends a flush (the error is logged).
_STALLED_SECONDS = 10.0
# How often the background worker runs the periodic check (idle sessions).
_PERIODIC_SECONDS = 30.0


# Workers still running. At exit, the interpreter tears down native libraries (the ONNX
# runtime's thread pools, the shard) while a daemon worker may still be inside one: C++'s
# ``terminate called without an active exception`` and exit 134, seen with two memories on
# one directory left unclosed. Each is stopped first, its running job left to finish.
_running: weakref.WeakSet[JobRunner] = weakref.WeakSet()
#: How long exit waits for a worker's running job (a model call may take longer: its job
#: stays journaled and runs when the directory is opened again).
EXIT_WAIT_SECONDS = 10.0


@atexit.register
def _stop_all_at_exit() -> None:
    runners = list(_running)
    for runner in runners:  # all told first: they stop together, not one after another
        runner._stop.set()
        runner._wake.set()
    deadline = time.monotonic() + EXIT_WAIT_SECONDS
    for runner in runners:
        if runner._thread is not None:
            runner._thread.join(timeout=max(0.0, deadline - time.monotonic()))


class JobRunner:
    """Runs journaled jobs with the handler registered for their kind."""

    def __init__(
        self,
        storage: Storage,
        handlers: dict[str, Handler],
        *,
        mode: Literal["inline", "background", "manual", "external"],
        max_attempts: int,
        backoff_seconds: float,
        lease_seconds: float,
        retry_horizon: float = 0.0,
        renew_for: float | None = None,
        periodic: Callable[[], None] | None = None,
        upkeep: Callable[[], int] | None = None,
        backlog: Callable[[], int] | None = None,
        provides: Callable[[], Sequence[str]] | None = None,
        gate: JobGate | None = None,
    ) -> None:
        self._storage = storage
        #: What this memory can do for a job's needs (``None``: whatever a job needs).
        self._provides = provides
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
        self._policy = RetryPolicy(max_attempts, backoff_seconds, retry_horizon)
        self._lease = lease_seconds
        #: How long a running job's lease is renewed at most (``lease.py``).
        self._renew_for = renew_for
        #: The journal's clock (epoch seconds) and the waits of ``flush``: the wall clock;
        #: a test may put a simulated one in their place to play out a long outage at once.
        self.clock: Callable[[], float] = time.time
        self.sleep: Callable[[float], None] = time.sleep
        self.worker_id = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._busy = threading.Event()
        self._idle = threading.Event()
        self._run_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._released = False
        if mode != "manual":
            self._release_dead_workers()

    def start(self) -> None:
        """Start the background worker (mode ``"background"``), once its owner is whole: the
        worker calls the owner's upkeep, which must not find the owner half-built."""
        if self.mode == "background" and self._thread is None:
            self._thread = threading.Thread(
                target=self._loop, name="tiered-memory-jobs", daemon=True
            )
            _running.add(self)
            self._thread.start()

    def notify(self) -> None:
        """A job was journaled: run it now (inline) or wake the worker (background)."""
        if self.mode == "inline":
            self.run_due()
        elif self.mode == "background":
            self._wake.set()

    def provides(self) -> Sequence[str] | None:
        """The needs this runner's memory meets (``None``: any)."""
        return None if self._provides is None else tuple(self._provides())

    def run_due(self) -> int:
        """Run every job that is due now; returns how many ran."""
        ran = 0
        # One runner at a time per memory: inline callers in several threads take turns.
        with self._run_lock:
            if not self._released:
                self._release_dead_workers()
            if self._gate is not None:
                self._gate.release()
            provides = self.provides()
            while not self._stop.is_set():
                job = self._storage.jobs.claim(
                    self.worker_id, self._lease, max_attempts=self._max_attempts, provides=provides,
                    now=self.clock(),
                )
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

        Jobs waiting for a retry are waited for (also while the model cannot be reached, up
        to the retry horizon: ``retry.py``); failed jobs, jobs that need what this memory does
        not provide (another extractor) and jobs waiting for the spend budget are not.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        last, since = -1, time.monotonic()
        provides = self.provides()
        while True:
            if self.mode == "background":
                self._wake.set()
            else:
                self.run_due()
            due = self._storage.jobs.next_due(provides) if self._gate is None else self._gate.next_due(provides)
            now = time.monotonic()
            if due is None:
                left = 0 if self.mode == "external" else self.backlog()
                if left == 0:
                    return True
                if left != last or self.busy:
                    last, since = left, now
                elif now - since > _STALLED_SECONDS:
                    logger.warning("flush: %d records still wait for the index after %.0f s", left, now - since)
                    return False
                due = self.clock()
            if deadline is not None and now >= deadline:
                return False
            wait = max(0.0, due - self.clock()) if self.mode != "background" else 0.02
            if deadline is not None:
                wait = min(wait, deadline - now)
            self.sleep(min(max(wait, 0.005), 0.5))

    def close(self, timeout: float = 30.0) -> None:
        """Stop the worker; a job it is running finishes first (``timeout``: how long to
        wait for it)."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=timeout)
        _running.discard(self)

    # --- internals --------------------------------------------------------------------

    def _run(self, job: JobRow) -> None:
        handler = self._handlers.get(job.kind)
        if handler is not None and self._gate is not None and self._gate.defer(job, self.worker_id):
            return  # over the spend budget: it waits, its attempt not counted
        try:
            if handler is None:
                raise RuntimeError(f"no handler for jobs of kind {job.kind!r}")
            renew = functools.partial(self._storage.jobs.renew, job.id, self.worker_id)
            with Heartbeat(renew, self._lease, self.clock, limit=self._renew_for, what=job.key):
                handler(job, self.worker_id)
        except MemoryClosedError:
            raise
        except Exception as exc:  # a job's failure is recorded, never raised into a turn
            now = self.clock()
            verdict = self._policy.after(job, exc, now)
            if verdict.retry_at is None:
                after = f"after {job.attempts} attempts" if verdict.counted else "when its retry horizon ran out"
                logger.warning("job %s failed for good %s: %s", job.key, after, verdict.reason)
            else:
                logger.info(
                    "job %s failed (%s), retry in %.1f s: %s", job.key,
                    f"attempt {job.attempts}" if verdict.counted else "the model cannot be reached",
                    verdict.retry_at - now, verdict.reason,
                )
            self._storage.jobs.fail(
                job.id, self.worker_id, verdict.reason, verdict.retry_at,
                failing_since=verdict.failing_since, counted=verdict.counted,
            )

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
                due = self._storage.jobs.next_due(self.provides())
            except MemoryClosedError:
                return
            except Exception:  # pragma: no cover
                pass
            wait = _POLL_SECONDS if due is None else min(_POLL_SECONDS, max(0.0, due - self.clock()))
            self._wake.wait(timeout=wait)
            self._wake.clear()

    def counts(self) -> dict[str, int]:
        """The journal as this memory sees it: ``pending`` (it will run them), ``waiting``
        (they need what it does not provide — another extractor — or wait behind such a
        job of their thread), ``running``, ``stale`` (leased by a process that no longer
        runs, or whose lease ran out: they run again), ``done`` and ``failed``. Reading
        changes nothing."""
        out = dict.fromkeys(("pending", "waiting", "running", "stale", "done", "failed"), 0)
        for status, waiting, worker, expired, n in self._storage.jobs.queue(self.clock(), self.provides()):
            if status == "running":
                status = "stale" if expired or (worker is not None and dead_worker(worker)) else "running"
            elif waiting:
                status = "waiting"
            out[status] = out.get(status, 0) + n
        return out

    def _release_dead_workers(self) -> None:
        """Jobs leased by a process of this host that no longer runs are due at once."""
        self._released = True
        dead = [w for w in self._storage.jobs.running_workers() if dead_worker(w)]
        if dead and self._storage.jobs.release(dead):
            logger.info("resuming jobs of %d stopped worker(s)", len(dead))


def dead_worker(worker: str) -> bool:
    """Whether ``worker`` (``host:pid:nonce``) is a process of this host that no longer runs."""
    parts = worker.split(":")
    return len(parts) == 3 and parts[0] == socket.gethostname() and parts[1].isdigit() and not _alive(int(parts[1]))


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
