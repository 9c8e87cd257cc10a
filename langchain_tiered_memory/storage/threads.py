"""Threads and their message log: append-only, durable, shared by threads and processes.

Eviction from the window never deletes a row; rows go only when a thread or a user is
explicitly forgotten (``forgetting.py``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from ..errors import ThreadOwnershipError
from .database import Database, Tx, chunks
from .jobs import enqueue
from .message_format import decode
from .rows import AppendResult, IndexRow, NewMessage, ThreadRow
from .units import add_units, speaker_of

THREAD_COLUMNS = (
    "id, thread_id, user_id, created_at, updated_at, next_seq, generation, evicted_through, "
    "summarized_through, extracted_through"
)


def ownership_error(thread_id: str) -> ThreadOwnershipError:
    """The error for a thread touched by a user who does not own it."""
    return ThreadOwnershipError(
        f"thread {thread_id!r} belongs to another user; thread ids are global (as in "
        "LangGraph), so give each user's threads ids of their own"
    )


class Threads:
    """Thread rows and the messages of each thread."""

    def __init__(self, db: Database) -> None:
        self.db = db

    # --- threads ------------------------------------------------------------------------

    def get(self, thread_id: str) -> ThreadRow | None:
        """The thread's row, or ``None`` if it has no messages yet."""
        with self.db.read() as tx:
            row = tx.one(f"SELECT {THREAD_COLUMNS} FROM threads WHERE thread_id = ?", (thread_id,))
        return ThreadRow(*row) if row else None

    def by_key(self, key: int) -> ThreadRow | None:
        """The thread with storage key ``key``, or ``None`` if it was forgotten."""
        with self.db.read() as tx:
            row = tx.one(f"SELECT {THREAD_COLUMNS} FROM threads WHERE id = ?", (key,))
        return ThreadRow(*row) if row else None

    def of_user(self, user_id: str) -> list[ThreadRow]:
        """The user's threads, most recently updated first."""
        with self.db.read() as tx:
            rows = tx.all(
                f"SELECT {THREAD_COLUMNS} FROM threads WHERE user_id = ? "
                "ORDER BY updated_at DESC, id DESC",
                (user_id,),
            )
        return [ThreadRow(*r) for r in rows]

    def users(self) -> list[str]:
        """Every user with a thread."""
        with self.db.read() as tx:
            return sorted(tx.column("SELECT DISTINCT user_id FROM threads"))

    def idle(self, before: str) -> list[ThreadRow]:
        """Threads last updated before ``before`` whose newest messages no episode covers."""
        columns = ", ".join("t." + c.strip() for c in THREAD_COLUMNS.split(","))
        with self.db.read() as tx:
            rows = tx.all(
                f"SELECT {columns} FROM threads t WHERE t.updated_at < ? AND t.next_seq > 0 AND "
                "COALESCE((SELECT MAX(last_seq) FROM episodes e WHERE e.thread_id = t.thread_id), -1) "
                "< t.next_seq - 1",
                (before,),
            )
        return [ThreadRow(*r) for r in rows]

    # --- messages -----------------------------------------------------------------------

    def append(
        self,
        user_id: str,
        thread_id: str,
        messages: Sequence[NewMessage],
        *,
        counter: str,
        now: str,
        job_kind: str | None = None,
        job_payload: dict[str, Any] | None = None,
        job_needs: str | None = None,
    ) -> AppendResult:
        """Append ``messages`` to the thread in one transaction, creating it if needed.

        ``counter`` names the token counter of the counts, so a later change of counter is
        noticed and the counts redone. With ``job_kind``, a job covering the thread up to
        its newest message is journaled in the same transaction, so no stored turn can miss
        its processing, whatever crashes after. A message whose ``message_id`` the thread
        already holds is skipped, so repeating an append stores nothing twice. ``job_needs``
        is what the job needs of the memory that runs it (``storage/jobs.py``).
        """
        with self.db.write() as tx:
            tx.serialize(user_id)
            # Locked, so two appends to the thread take turns for its next seq.
            select = f"SELECT {THREAD_COLUMNS} FROM threads WHERE thread_id = ?{tx.dialect.for_update}"
            row = tx.one(select, (thread_id,))
            if row is None:
                # Another user may be creating the same thread id at this moment: the
                # conflict leaves theirs, and the ownership check below refuses this one.
                tx.execute(
                    "INSERT INTO threads (thread_id, user_id, created_at, updated_at, next_seq, "
                    "generation, evicted_through) VALUES (?, ?, ?, ?, 0, 0, -1) "
                    "ON CONFLICT(thread_id) DO NOTHING",
                    (thread_id, user_id, now, now),
                )
                row = tx.one(select, (thread_id,))
                assert row is not None
            thread = ThreadRow(*row)
            if thread.user_id != user_id:
                raise ownership_error(thread_id)
            existing = existing_ids(tx, thread.key, [m.message_id for m in messages])
            seq = thread.next_seq
            rows, stored, duplicates = [], [], 0
            for m in messages:
                if m.message_id in existing:
                    duplicates += 1
                    continue
                existing.add(m.message_id)
                rows.append(
                    (thread.key, user_id, seq, m.message_id, m.type, m.tool_calls, m.data,
                     m.tokens, counter, m.at or now)
                )
                stored.append((seq, m.message_id))
                seq += 1
            tx.executemany(
                "INSERT INTO messages (thread_key, user_id, seq, message_id, type, tool_calls, "
                "data, tokens, counter, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
            tx.execute(
                "UPDATE threads SET next_seq = ?, updated_at = ? WHERE id = ?", (seq, now, thread.key)
            )
            add_units(tx, user_id, thread.key, [(r[2], r[4], r[9], speaker_of(r[4], r[6])) for r in rows])
            if job_kind is not None and stored:
                enqueue(
                    tx, job_kind, user_id, thread.key, {"through_seq": seq - 1, **(job_payload or {})}, now,
                    job_needs,
                )
        updated = dataclasses.replace(thread, updated_at=now, next_seq=seq)
        return AppendResult(updated, stored, duplicates)

    def index(self, thread_key: int, after_seq: int = -1) -> list[IndexRow]:
        """Seq, type and token count of the thread's messages after ``after_seq``."""
        with self.db.read() as tx:
            rows = tx.all(
                "SELECT seq, type, tokens, counter, tool_calls FROM messages "
                "WHERE thread_key = ? AND seq > ? ORDER BY seq",
                (thread_key, after_seq),
            )
        return [IndexRow(*r) for r in rows]

    def data(self, thread_key: int, first_seq: int, last_seq: int) -> dict[int, dict[str, Any]]:
        """The serialised messages with ``first_seq <= seq <= last_seq``, by seq."""
        with self.db.read() as tx:
            rows = tx.all(
                "SELECT seq, data FROM messages WHERE thread_key = ? AND seq BETWEEN ? AND ?",
                (thread_key, first_seq, last_seq),
            )
        return {seq: decode(data) for seq, data in rows}

    def data_at(self, thread_key: int, seqs: Sequence[int]) -> dict[int, dict[str, Any]]:
        """The serialised messages at the given seqs, by seq."""
        out: dict[int, dict[str, Any]] = {}
        with self.db.read() as tx:
            for chunk in chunks(list(seqs)):
                for seq, data in tx.all(
                    f"SELECT seq, data FROM messages WHERE thread_key = ? AND seq IN {tx.in_list(chunk)}",
                    (thread_key, *chunk),
                ):
                    out[seq] = decode(data)
        return out

    def message_ids(self, thread_key: int, first_seq: int, last_seq: int) -> list[str]:
        """The ids of the messages ``first_seq..last_seq``, in order."""
        with self.db.read() as tx:
            return tx.column(
                "SELECT message_id FROM messages WHERE thread_key = ? AND seq BETWEEN ? AND ? ORDER BY seq",
                (thread_key, first_seq, last_seq),
            )

    def span(self, thread_key: int, first_seq: int, last_seq: int) -> tuple[str, str] | None:
        """When the first and the last message of the range were said."""
        with self.db.read() as tx:
            row = tx.one(
                "SELECT MIN(created_at), MAX(created_at) FROM messages WHERE thread_key = ? "
                "AND seq BETWEEN ? AND ?",
                (thread_key, first_seq, last_seq),
            )
        return None if row is None or row[0] is None else (row[0], row[1])

    def update_token_counts(
        self, thread_key: int, counts: Sequence[tuple[int, int]], *, counter: str
    ) -> None:
        """Store recounted ``(seq, tokens)`` pairs made by ``counter``."""
        with self.db.write() as tx:
            tx.executemany(
                "UPDATE messages SET tokens = ?, counter = ? WHERE thread_key = ? AND seq = ?",
                [(tokens, counter, thread_key, seq) for seq, tokens in counts],
            )

    def set_evicted_through(self, thread_key: int, seq: int) -> None:
        """Record that messages up to ``seq`` have left the window (never moves back)."""
        with self.db.write() as tx:
            tx.execute(
                f"UPDATE threads SET evicted_through = {tx.dialect.greatest}(evicted_through, ?) "
                "WHERE id = ?",
                (seq, thread_key),
            )

    def recorded_ids(self, thread_key: int, message_ids: list[str]) -> set[str]:
        """Which of ``message_ids`` the thread holds."""
        with self.db.read() as tx:
            return existing_ids(tx, thread_key, message_ids)


def existing_ids(tx: Tx, thread_key: int, ids: list[str]) -> set[str]:
    """Which of ``ids`` the thread already holds."""
    found: set[str] = set()
    for chunk in chunks(ids):
        found.update(
            tx.column(
                f"SELECT message_id FROM messages WHERE thread_key = ? AND message_id IN {tx.in_list(chunk)}",
                (thread_key, *chunk),
            )
        )
    return found
