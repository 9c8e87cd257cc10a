"""The usage ledger (``job_usage``) and the jobs that wait for the spend budget.

One row per attempt of a job that called the chat model: calls, prompt and completion
tokens, duration, the structured-output method and model, stamped with the memory's clock
(``at``, epoch seconds, and its UTC ``day``). ``stats()`` sums it per user and per day; the
spend budget (``budget.py``) reads the last hour of it. A job over the budget goes back to
pending with ``jobs.waiting = 'budget'`` and its claim's attempt returned, so waiting never
uses up attempts; :meth:`Usage.release` makes it due again.

Forgetting a user deletes their ledger rows; forgetting a thread unlinks its rows from the
thread id (the spend stays counted for the user).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from .database import Database, Tx
from .jobs import iso_epoch

__all__ = ["Usage", "UsageRow", "forget_thread_usage", "forget_user_usage"]

_TOTALS = (
    "COUNT(*), COALESCE(SUM(calls), 0), COALESCE(SUM(input_tokens), 0), "
    "COALESCE(SUM(output_tokens), 0), COALESCE(SUM(duration_ms), 0)"
)


@dataclass(frozen=True)
class UsageRow:
    """One attempt's spend, as the ledger keeps it."""

    job_key: str
    kind: str
    user_id: str
    thread_id: str | None
    at: float
    calls: int
    input_tokens: int
    output_tokens: int
    duration_ms: float
    method: str | None
    model: str | None
    ok: bool


def _totals(row: Sequence[Any]) -> dict[str, Any]:
    jobs, calls, prompt, completion, ms = row
    return {
        "jobs": int(jobs), "calls": int(calls), "input_tokens": int(prompt),
        "output_tokens": int(completion), "total_tokens": int(prompt) + int(completion),
        "duration_s": round(float(ms) / 1000, 3),
    }


def forget_user_usage(tx: Tx, user_id: str) -> int:
    """Delete the user's ledger rows in ``tx`` (their forget)."""
    return tx.rowcount("DELETE FROM job_usage WHERE user_id = ?", (user_id,))


def forget_thread_usage(tx: Tx, thread_id: str) -> int:
    """Unlink the thread's ledger rows from its id in ``tx`` (the spend stays counted)."""
    return tx.rowcount("UPDATE job_usage SET thread_id = NULL WHERE thread_id = ?", (thread_id,))


class Usage:
    """The ledger's rows and the budget's waiting jobs."""

    def __init__(self, db: Database) -> None:
        self.db = db

    # --- the ledger -----------------------------------------------------------------------

    def record(self, row: UsageRow) -> None:
        """Add one attempt's spend."""
        day = datetime.fromtimestamp(row.at, timezone.utc).date().isoformat()
        with self.db.write(durable=False) as tx:  # bookkeeping: a power cut may lose the last
            tx.execute(
                "INSERT INTO job_usage (job_key, kind, user_id, thread_id, at, day, calls, input_tokens, "
                "output_tokens, duration_ms, method, model, outcome) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (row.job_key, row.kind, row.user_id, row.thread_id, row.at, day, row.calls, row.input_tokens,
                 row.output_tokens, row.duration_ms, row.method, row.model, "done" if row.ok else "error"),
            )

    def totals(self, *, days: int = 30, users: int = 50) -> dict[str, Any]:
        """Totals in all, per day (the newest ``days``) and per user (the ``users`` who spent
        the most tokens), and jobs per structured-output method."""
        with self.db.read(snapshot=True) as tx:
            total = _totals(tx.one(f"SELECT {_TOTALS} FROM job_usage") or (0, 0, 0, 0, 0))
            by_day = tx.all(f"SELECT day, {_TOTALS} FROM job_usage GROUP BY day ORDER BY day DESC LIMIT ?", (days,))
            by_user = tx.all(
                f"SELECT user_id, {_TOTALS} FROM job_usage GROUP BY user_id "
                "ORDER BY SUM(input_tokens + output_tokens) DESC, user_id LIMIT ?",
                (users,),
            )
            methods = tx.all(
                "SELECT method, COUNT(*) FROM job_usage WHERE method IS NOT NULL GROUP BY method ORDER BY method"
            )
            user_count = int(tx.scalar("SELECT COUNT(DISTINCT user_id) FROM job_usage") or 0)
        return {
            "total": total,
            "by_day": {r[0]: _totals(r[1:]) for r in sorted(by_day)},
            "by_user": {r[0]: _totals(r[1:]) for r in by_user},
            "users": user_count,
            "methods": {m: int(n) for m, n in methods},
        }

    def window(self, since: float, user_id: str | None) -> list[tuple[float, int, int]]:
        """``(at, calls, tokens)`` of the spend since ``since``, oldest first, of ``user_id``
        (``None``: everyone's)."""
        with self.db.read() as tx:
            # Two statements, not "? IS NULL OR ...": PostgreSQL cannot type a bare NULL.
            if user_id is None:
                rows = tx.all(
                    "SELECT at, calls, input_tokens + output_tokens FROM job_usage WHERE at >= ? ORDER BY at",
                    (since,),
                )
            else:
                rows = tx.all(
                    "SELECT at, calls, input_tokens + output_tokens FROM job_usage "
                    "WHERE at >= ? AND user_id = ? ORDER BY at",
                    (since, user_id),
                )
        return [(float(a), int(c), int(t)) for a, c, t in rows]

    # --- jobs waiting for the budget ------------------------------------------------------

    def defer(self, job_id: int, worker: str, until: float, reason: str) -> None:
        """Put a claimed job back to pending until ``until`` (wall clock), waiting for
        ``reason``; the attempt its claim counted is given back."""
        with self.db.write() as tx:
            tx.execute(
                f"UPDATE jobs SET status = 'pending', attempts = {tx.dialect.greatest}(attempts - 1, 0), "
                "next_run_at = ?, lease_until = NULL, waiting = ?, updated_at = ? "
                "WHERE id = ? AND leased_by = ? AND status = 'running'",
                (until, reason, iso_epoch(time.time()), job_id, worker),
            )

    def clear_wait(self, job_id: int) -> None:
        """The job runs now: it no longer waits."""
        with self.db.write(durable=False) as tx:
            tx.execute("UPDATE jobs SET waiting = NULL WHERE id = ? AND waiting IS NOT NULL", (job_id,))

    def waiting_users(self) -> list[str]:
        """Users with jobs waiting for the budget."""
        with self.db.read() as tx:
            return tx.column(
                "SELECT DISTINCT user_id FROM jobs WHERE waiting IS NOT NULL AND status = 'pending' ORDER BY user_id"
            )

    def waiting_count(self) -> int:
        """Jobs waiting for the budget."""
        with self.db.read() as tx:
            return int(tx.scalar("SELECT COUNT(*) FROM jobs WHERE waiting IS NOT NULL AND status = 'pending'") or 0)

    def release(self, users: Sequence[str]) -> int:
        """Make the waiting jobs of ``users`` due now; how many."""
        if not users:
            return 0
        with self.db.write() as tx:
            return tx.rowcount(
                f"UPDATE jobs SET next_run_at = ?, waiting = NULL WHERE waiting IS NOT NULL "
                f"AND status = 'pending' AND user_id IN {tx.in_list(users)}",
                (time.time(), *users),
            )
