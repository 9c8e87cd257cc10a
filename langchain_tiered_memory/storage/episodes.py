"""Episodes: one record per finished session of a thread (indexed for recall as sessions)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .database import Database, Tx, chunks
from .jobs import finish, holds_lease
from .marks import Indexed
from .rows import EpisodeRow, JobRow

EPISODE_COLUMNS = (
    "id, user_id, thread_id, started_at, ended_at, summary, decisions, outcome, topics, "
    "first_seq, last_seq, created_at"
)


def episode_row(row: Sequence[Any]) -> EpisodeRow:
    """An :class:`EpisodeRow` from the columns of :data:`EPISODE_COLUMNS`."""
    values = list(row)
    values[6] = json.loads(values[6])
    values[8] = json.loads(values[8])
    return EpisodeRow(*values)


def insert_episodes(tx: Tx, episodes: Sequence[EpisodeRow]) -> None:
    """Insert episodes (each once per thread and last message) in ``tx``, unindexed."""
    tx.executemany(
        f"INSERT INTO episodes ({EPISODE_COLUMNS}, indexed) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0) "
        "ON CONFLICT(thread_id, last_seq) DO NOTHING",
        [
            (e.id, e.user_id, e.thread_id, e.started_at, e.ended_at, e.summary,
             json.dumps(e.decisions, ensure_ascii=False), e.outcome,
             json.dumps(e.topics, ensure_ascii=False), e.first_seq, e.last_seq, e.created_at)
            for e in episodes
        ],
    )


class Episodes(Indexed):
    """Every user's episodes."""

    table = "episodes"

    def __init__(self, db: Database) -> None:
        self.db = db

    def insert(self, episode: EpisodeRow, job: JobRow | None = None, worker: str = "") -> bool:
        """Store an episode; with ``job``, finish the job in the same transaction (``False``,
        storing nothing, when the worker lost its lease)."""
        with self.db.write() as tx:
            tx.serialize(episode.user_id)
            if job is not None and not holds_lease(tx, job.id, worker):
                return False
            insert_episodes(tx, [episode])
            if job is not None:
                finish(tx, job.id, worker)
        return True

    def of_user(
        self, user_id: str, since: str | None = None, until: str | None = None, ids: Sequence[str] | None = None
    ) -> list[EpisodeRow]:
        """The user's episodes overlapping ``[since, until]`` (ISO times), newest first."""
        sql = f"SELECT {EPISODE_COLUMNS} FROM episodes WHERE user_id = ?"
        args: list[Any] = [user_id]
        if since is not None:
            sql += " AND ended_at >= ?"
            args.append(since)
        if until is not None:
            sql += " AND started_at <= ?"
            args.append(until)
        if ids is not None:
            if not ids:
                return []
            sql += f" AND id IN ({','.join('?' * len(ids))})"
            args.extend(ids)
        with self.db.read() as tx:
            rows = tx.all(sql + " ORDER BY ended_at DESC", args)
        return [episode_row(r) for r in rows]

    def get_many(self, ids: Sequence[str]) -> dict[str, EpisodeRow]:
        """The episodes among ``ids`` that exist, by id."""
        if not ids:
            return {}
        with self.db.read() as tx:
            rows = tx.all(f"SELECT {EPISODE_COLUMNS} FROM episodes WHERE id IN {tx.in_list(ids)}", ids)
        return {r[0]: episode_row(r) for r in rows}

    def last_seq(self, thread_id: str) -> int:
        """The last message seq covered by the thread's episodes (-1 if none)."""
        with self.db.read() as tx:
            value = tx.scalar("SELECT MAX(last_seq) FROM episodes WHERE thread_id = ?", (thread_id,))
        return -1 if value is None else int(value)

    def exists(self) -> bool:
        """Whether any episode exists."""
        with self.db.read() as tx:
            return tx.one("SELECT 1 FROM episodes LIMIT 1") is not None

    def count(self) -> int:
        """Episodes of every user."""
        with self.db.read() as tx:
            return int(tx.scalar("SELECT COUNT(*) FROM episodes"))

    # --- the index's bookkeeping -----------------------------------------------------------

    def unindexed(self, limit: int) -> list[EpisodeRow]:
        """Episodes whose index point is not written yet (oldest first)."""
        with self.db.read() as tx:
            rows = tx.all(
                f"SELECT {EPISODE_COLUMNS} FROM episodes WHERE indexed != 1 ORDER BY created_at LIMIT ?",
                (limit,),
            )
        return [episode_row(r) for r in rows]
