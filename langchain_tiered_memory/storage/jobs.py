"""The job journal: work that needs an LLM or an embedding, journaled with what it is about.

A job is written in the same transaction as the records it concerns. A worker claims it with
a lease (several workers in several processes share the journal: the lease, not a lock in
memory, keeps them apart), and an attempt is counted when it is claimed — so a job whose
processing kills its process still runs out of attempts and ends failed.

A job records what it needs of the memory that runs it (``needs``: ``"llm"`` when journaled
by a memory with a chat model, ``NULL`` for anything); a claim names what its memory
provides and skips the jobs it cannot meet, and the jobs queued behind one of those on the
same thread (an extraction covers every message not yet extracted, so running a later one
would do the earlier one's work too).

A job's lease is renewed while it runs (:meth:`Jobs.renew`, the runner's heartbeat), so a
slow model never lets a second worker take a job that is still running. A job that failed
for good runs again when asked (:meth:`Jobs.retry`, or journaled again with ``revive``).

A job's saved answer keeps what validation dropped from it (each part's ``dropped``: the
item's kind, position, count and reason); :meth:`Jobs.dropped_items` adds them up.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from .database import Database, Tx
from .job_answers import JobAnswer, answer_parts, dump_answer, end_answer
from .rows import JobRow

JOB_COLUMNS = (
    "id, key, kind, user_id, thread_key, payload, result, status, attempts, next_run_at, "
    "lease_until, leased_by, last_error, created_at, updated_at, needs, failing_since, waiting"
)
#: What a saved answer's text holds when a part of it lists dropped items (a non-empty
#: ``"dropped"`` list, as :meth:`Jobs.save_result` writes it): the few such answers are
#: found by the database without parsing the others.
_DROPPED_MARKS = ('%"dropped": [{%', '%"dropped":[{%')


def iso_epoch(epoch: float) -> str:
    """Epoch seconds as an ISO 8601 UTC time."""
    return datetime.fromtimestamp(epoch, timezone.utc).isoformat()


def enqueue(
    tx: Tx,
    kind: str,
    user_id: str,
    thread_key: int | None,
    payload: dict[str, Any],
    now: str,
    needs: str | None = None,
    *,
    revive: bool = False,
) -> bool:
    """Journal a job in ``tx``; ``False`` when the same job (same key) exists already.

    ``needs`` is what the memory running it must provide (see the module doc). ``revive``:
    a job of the same key that failed for good is made pending again, with fresh attempts
    (an explicit request for the same work, e.g. ``end_session`` after an outage, must not
    be swallowed by the failed job that holds its key)."""
    # The key makes a job idempotent: the same work journaled twice is one row.
    key = f"{kind}:{thread_key}:{json.dumps(payload, sort_keys=True)}"
    conflict = "DO NOTHING"
    if revive:
        conflict = (
            f"DO UPDATE SET {_FRESH}, next_run_at = excluded.next_run_at, needs = excluded.needs, "
            "updated_at = excluded.updated_at WHERE jobs.status = 'failed'"
        )
    return (
        tx.rowcount(
            "INSERT INTO jobs (key, kind, user_id, thread_key, payload, status, attempts, "
            "next_run_at, created_at, updated_at, needs) "
            f"VALUES (?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?, ?) ON CONFLICT(key) {conflict}",
            (key, kind, user_id, thread_key, json.dumps(payload), time.time(), now, now, needs),
        )
        == 1
    )


# What a failed job is given to run again: attempts and outage clock from zero, no lease, and
# no saved answer (a retry asks the model again: the saved one may be what failed).
_FRESH = (
    "status = 'pending', attempts = 0, lease_until = NULL, leased_by = NULL, failing_since = NULL, "
    "result = NULL"
)


def _runnable(tx: Tx, provides: Sequence[str] | None) -> tuple[str, tuple[Any, ...]]:
    """The condition (over ``jobs``) of a job that a memory providing ``provides`` may run:
    its needs are met, and no unfinished job before it on its thread needs what is not.
    ``None`` provides everything."""
    if provides is None:
        return "1 = 1", ()
    met = f"jobs.needs IN {tx.in_list(provides)}" if provides else "0 = 1"
    unmet = f"b.needs NOT IN {tx.in_list(provides)}" if provides else "1 = 1"
    sql = (
        f"(jobs.needs IS NULL OR {met}) AND NOT EXISTS (SELECT 1 FROM jobs b "
        "WHERE b.needs IS NOT NULL AND b.status IN ('pending', 'running') "
        f"AND b.thread_key = jobs.thread_key AND b.id < jobs.id AND {unmet})"
    )
    return sql, (*provides, *provides)


def holds_lease(tx: Tx, job_id: int, worker: str) -> bool:
    """Whether ``worker`` still holds the running job's lease (checked before committing)."""
    # Locked until the commit: a worker whose lease just ran out cannot claim the job (its
    # claim skips locked rows) between this check and the results it guards.
    owner = tx.one(
        f"SELECT leased_by FROM jobs WHERE id = ? AND status = 'running'{tx.dialect.for_update}", (job_id,)
    )
    return owner is not None and owner[0] == worker


def finish(tx: Tx, job_id: int, worker: str) -> bool:
    """Mark the job done in ``tx`` if ``worker`` holds it; of its saved answer it keeps only
    what outlives the job (``job_answers.py``: no model text past the job's end)."""
    done = (
        tx.rowcount(
            "UPDATE jobs SET status = 'done', lease_until = NULL, last_error = NULL, "
            "updated_at = ? WHERE id = ? AND leased_by = ? AND status = 'running'",
            (iso_epoch(time.time()), job_id, worker),
        )
        == 1
    )
    if done:
        end_answer(tx, job_id)
    return done


class Jobs:
    """The journal's rows: enqueue, claim, record the outcome."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def enqueue(
        self, kind: str, user_id: str, thread_key: int | None, payload: dict[str, Any], now: str,
        needs: str | None = None, *, revive: bool = False,
    ) -> bool:
        """Journal a job; ``False`` when a job with the same key exists (it is not repeated,
        unless it failed and ``revive`` is set: see :func:`enqueue`)."""
        with self.db.write() as tx:
            tx.serialize(user_id)
            return enqueue(tx, kind, user_id, thread_key, payload, now, needs, revive=revive)

    def claim(
        self,
        worker: str,
        lease_seconds: float,
        *,
        max_attempts: int,
        kinds: Sequence[str] | None = None,
        provides: Sequence[str] | None = None,
        now: float | None = None,
    ) -> JobRow | None:
        """Lease the oldest due job (pending, or running under an expired lease) to ``worker``.

        A due job that already used ``max_attempts`` claims — its earlier runs never came
        back, so each killed its process — is marked failed instead of run again. With
        ``provides``, only jobs whose needs it meets are claimed (see the module doc).
        ``now``: the runner's clock (epoch seconds; default the wall clock).
        """
        now = time.time() if now is None else now
        kind_sql = f" AND kind IN ({','.join('?' * len(kinds))})" if kinds else ""
        # An idle worker asks every second: with nothing due it takes no write lock (on
        # SQLite, waiting for another process's would hold up this one's other writes).
        with self.db.read() as tx:
            needs_sql, needs_args = _runnable(tx, provides)
            due = (
                "((status = 'pending' AND next_run_at <= ?) OR (status = 'running' AND lease_until < ?))"
                f"{kind_sql} AND {needs_sql}"
            )
            args = (now, now, *(kinds or ()), *needs_args)
            if tx.one(f"SELECT 1 FROM jobs WHERE {due} LIMIT 1", args) is None:
                return None
        with self.db.write() as tx:
            while True:
                row = tx.one(f"SELECT {JOB_COLUMNS} FROM jobs WHERE {due} ORDER BY id LIMIT 1{tx.dialect.skip_locked}", args)
                if row is None:
                    return None
                job = JobRow(*row)
                if job.attempts < max_attempts:
                    break
                reason = (
                    f"the process running it stopped during each of its {job.attempts} attempts "
                    "(killed, out of memory, or crashed) without recording an outcome"
                )
                if job.last_error and job.status == "pending":
                    reason = job.last_error
                tx.execute(
                    "UPDATE jobs SET status = 'failed', last_error = ?, lease_until = NULL, "
                    "updated_at = ? WHERE id = ?",
                    (reason, iso_epoch(now), job.id),
                )
                end_answer(tx, job.id)
            tx.execute(
                "UPDATE jobs SET status = 'running', attempts = attempts + 1, lease_until = ?, "
                "leased_by = ?, updated_at = ? WHERE id = ?",
                (now + lease_seconds, worker, iso_epoch(now), job.id),
            )
        return dataclasses.replace(job, status="running", attempts=job.attempts + 1, leased_by=worker)

    def save_result(self, job_id: int, worker: str, result: JobAnswer) -> None:
        """Keep a job's model answer, so a retry replays it instead of asking again."""
        with self.db.write() as tx:
            tx.execute(
                "UPDATE jobs SET result = ? WHERE id = ? AND leased_by = ?",
                (dump_answer(result), job_id, worker),
            )

    def dropped_items(self, recent: int = 20) -> dict[str, Any]:
        """What validation dropped from the jobs' model answers, kept on their results.

        ``items``: how many items were dropped (a record of the excess past a limit counts
        as the items it stands for); ``jobs``: from how many jobs' answers; ``recent``: the
        newest records (at most ``recent``; newest job first), each with the job's ``key``,
        the item's ``kind``, ``index`` (its position in the answer), ``count``, the
        ``reason`` and the job's ``at``. Reading changes nothing.

        The answers are filtered by text in the database and only those with a drop are
        parsed: one pass over the journal's results, no JSON read for the others.
        """
        with self.db.read() as tx:
            rows = tx.all(
                "SELECT key, result, updated_at FROM jobs WHERE result LIKE ? OR result LIKE ? ORDER BY id DESC",
                _DROPPED_MARKS,
            )
        items = jobs = 0
        latest: list[dict[str, Any]] = []
        for key, result, at in rows:
            found = _dropped(result)
            if not found:
                continue
            jobs += 1
            for item in found:
                items += item["count"]
                if len(latest) < recent:
                    latest.append({"key": key, **item, "at": at})
        return {"items": items, "jobs": jobs, "recent": latest}

    def fail(
        self,
        job_id: int,
        worker: str,
        error: str,
        retry_at: float | None,
        *,
        failing_since: float | None = None,
        counted: bool = True,
    ) -> None:
        """Record a failure: back to pending until ``retry_at``, or failed for good (``None``).

        ``failing_since``: when the job's run of failures to reach its model began (kept for
        the next failure; ``None`` ends such a run). ``counted=False`` gives back the attempt
        its claim counted: a try against an unreachable model says nothing about the job."""
        with self.db.write() as tx:
            if retry_at is None:
                tx.execute(
                    "UPDATE jobs SET status = 'failed', last_error = ?, lease_until = NULL, "
                    "failing_since = ?, updated_at = ? WHERE id = ? AND leased_by = ?",
                    (error, failing_since, iso_epoch(time.time()), job_id, worker),
                )
                end_answer(tx, job_id)  # failed for good: no model text past the job's end
            else:
                refund = "" if counted else f", attempts = {tx.dialect.greatest}(attempts - 1, 0)"
                tx.execute(
                    "UPDATE jobs SET status = 'pending', last_error = ?, next_run_at = ?, "
                    f"lease_until = NULL, failing_since = ?{refund}, updated_at = ? "
                    "WHERE id = ? AND leased_by = ?",
                    (error, retry_at, failing_since, iso_epoch(time.time()), job_id, worker),
                )

    def renew(self, job_id: int, worker: str, until: float) -> bool:
        """Extend the lease of a job ``worker`` runs to ``until`` (epoch seconds); ``False``
        if it no longer holds it (the job ended, or another worker took it over)."""
        # Not durable: a renewal lost to a crash belongs to a worker that is gone anyway.
        with self.db.write(durable=False) as tx:
            return (
                tx.rowcount(
                    "UPDATE jobs SET lease_until = ? WHERE id = ? AND leased_by = ? AND status = 'running'",
                    (until, job_id, worker),
                )
                == 1
            )

    def retry(
        self,
        *,
        now: float,
        user_id: str | None = None,
        failed: bool = True,
        provided: Sequence[str] | None = None,
    ) -> int:
        """Run jobs again now; returns how many it changed.

        Pending jobs waiting for their next try become due now (not those held by the spend
        budget); with ``failed``, jobs that failed for good become pending with fresh
        attempts; with ``provided`` (what the asking memory provides), the jobs among those
        that need something else lose that need, so that memory runs them (a memory without a
        chat model: with the offline rules). ``user_id``: only that user's jobs.
        """
        who, who_args = ("", ()) if user_id is None else (" AND user_id = ?", (user_id,))
        statuses = "('pending', 'failed')" if failed else "('pending')"
        with self.db.write() as tx:
            if user_id is not None:
                tx.serialize(user_id)
            changed: set[int] = set()
            if provided is not None:
                unmet = f" AND needs NOT IN {tx.in_list(provided)}" if provided else ""
                where = f"status IN {statuses} AND needs IS NOT NULL{unmet}{who}"
                args = (*provided, *who_args)
                changed.update(tx.column(f"SELECT id FROM jobs WHERE {where}", args))
                tx.execute(f"UPDATE jobs SET needs = NULL WHERE {where}", args)
            if failed:
                where = f"status = 'failed'{who}"
                changed.update(tx.column(f"SELECT id FROM jobs WHERE {where}", who_args))
                tx.execute(
                    f"UPDATE jobs SET {_FRESH}, next_run_at = ?, updated_at = ? WHERE {where}",
                    (now, iso_epoch(now), *who_args),
                )
            where = f"status = 'pending' AND waiting IS NULL AND next_run_at > ?{who}"
            changed.update(tx.column(f"SELECT id FROM jobs WHERE {where}", (now, *who_args)))
            tx.execute(f"UPDATE jobs SET next_run_at = ? WHERE {where}", (now, now, *who_args))
        return len(changed)

    def unrunnable(self, provides: Sequence[str], limit: int = 20) -> tuple[int, list[JobRow]]:
        """Pending jobs that need what a memory providing ``provides`` lacks: how many, and
        the oldest ``limit`` of them (not counting the jobs queued behind them)."""
        with self.db.read() as tx:
            where = "status = 'pending' AND needs IS NOT NULL"
            if provides:
                where += f" AND needs NOT IN {tx.in_list(provides)}"
            count = int(tx.scalar(f"SELECT COUNT(*) FROM jobs WHERE {where}", tuple(provides)) or 0)
            rows = tx.all(
                f"SELECT {JOB_COLUMNS} FROM jobs WHERE {where} ORDER BY id LIMIT ?", (*provides, limit)
            ) if count else []
        return count, [JobRow(*r) for r in rows]

    def finish(self, job_id: int, worker: str) -> bool:
        """Mark a job done; ``False`` if the worker lost its lease (another took it over)."""
        with self.db.write() as tx:
            return finish(tx, job_id, worker)

    def release(self, workers: Sequence[str]) -> int:
        """Make the jobs leased by dead ``workers`` due now, instead of after their lease."""
        if not workers:
            return 0
        with self.db.write() as tx:
            return tx.rowcount(
                f"UPDATE jobs SET lease_until = 0 WHERE status = 'running' AND leased_by IN {tx.in_list(workers)}",
                tuple(workers),
            )

    def running_workers(self) -> list[str]:
        """Workers holding a lease now."""
        with self.db.read() as tx:
            return tx.column(
                "SELECT DISTINCT leased_by FROM jobs WHERE status = 'running' AND leased_by IS NOT NULL"
            )

    def counts(self) -> dict[str, int]:
        """Jobs per status."""
        with self.db.read() as tx:
            return {status: n for status, n in tx.all("SELECT status, COUNT(*) FROM jobs GROUP BY status")}

    def queue(
        self, now: float, provides: Sequence[str] | None = None
    ) -> list[tuple[str, bool, str | None, bool, int]]:
        """The journal grouped for a report: ``(status, waiting, worker, lease expired,
        count)``. ``waiting``: a pending job a memory that ``provides`` may not run (see
        :meth:`claim`); the worker (and expiry) only of running jobs."""
        with self.db.read() as tx:
            runnable, args = _runnable(tx, provides)
            rows = tx.all(
                f"SELECT status, CASE WHEN status = 'pending' AND NOT ({runnable}) THEN 1 ELSE 0 END, "
                "CASE WHEN status = 'running' THEN leased_by END, "
                "CASE WHEN status = 'running' AND lease_until < ? THEN 1 ELSE 0 END, COUNT(*) "
                "FROM jobs GROUP BY 1, 2, 3, 4",
                (*args, now),
            )
        return [(s, bool(w), k, bool(e), int(c)) for s, w, k, e, c in rows]

    def rows(self, status: str | None = None, limit: int = 100, *, user_id: str | None = None) -> list[JobRow]:
        """Journal rows, newest first, optionally of one status and one user."""
        # Terms added only when given, rather than "? IS NULL": PostgreSQL cannot type a bare
        # NULL parameter.
        terms = [(t, v) for t, v in (("status = ?", status), ("user_id = ?", user_id)) if v is not None]
        where = " WHERE " + " AND ".join(t for t, _ in terms) if terms else ""
        args = tuple(v for _, v in terms)
        with self.db.read() as tx:
            rows = tx.all(f"SELECT {JOB_COLUMNS} FROM jobs{where} ORDER BY id DESC LIMIT ?", (*args, limit))
        return [JobRow(*r) for r in rows]

    def next_due(self, provides: Sequence[str] | None = None, *, held: bool = True) -> float | None:
        """When the next job is due (epoch seconds): a pending one's run time or a running
        one's lease end; ``None`` when none is pending or running (of those a memory that
        ``provides`` may run, if given; ``held=False``: not counting the jobs that wait for
        the spend budget, ``budget.py``)."""
        with self.db.read() as tx:
            needs_sql, needs_args = _runnable(tx, provides)
            waiting = "" if held else " AND waiting IS NULL"
            due = tx.scalar(
                "SELECT MIN(CASE status WHEN 'pending' THEN next_run_at ELSE lease_until END) "
                f"FROM jobs WHERE status IN ('pending', 'running') AND {needs_sql}{waiting}",
                needs_args,
            )
        return None if due is None else float(due)


def _dropped(result: str | None) -> list[dict[str, Any]]:
    """The dropped-item records of a saved answer (of each part: an extraction, an
    episode), as ``{kind, index, count, reason}``; ``[]`` for an unreadable answer."""
    out = []
    for part in answer_parts(result).values():
        dropped = part.get("dropped")
        for item in dropped if isinstance(dropped, list) else ():
            if not isinstance(item, dict):
                continue
            count = item.get("count", 1)
            out.append({
                "kind": str(item.get("kind", "")),
                "index": item.get("index"),
                "count": count if isinstance(count, int) and not isinstance(count, bool) and count > 0 else 1,
                "reason": str(item.get("reason", "")),
            })
    return out
