"""Clean-up of LangGraph's checkpoints, which live in the same database.

The tables are langgraph-checkpoint-sqlite's (``checkpoints``, ``writes``), created by the
saver on first use; this module only finds and deletes a thread's or a user's rows, inside
the forget's transaction.
"""

from __future__ import annotations

from collections.abc import Sequence

from .database import Database, Tx, chunks


def _tables(tx: Tx) -> set[str]:
    return set(tx.column("SELECT name FROM sqlite_master WHERE type = 'table'"))


def checkpoint_threads_of(tx: Tx, user_id: str) -> set[str]:
    """Threads whose checkpoint metadata names ``user_id`` (a graph run through the
    checkpointer alone has no row in ``threads``)."""
    if "checkpoints" not in _tables(tx):
        return set()
    return set(
        tx.column(
            "SELECT DISTINCT thread_id FROM checkpoints WHERE json_valid(CAST(metadata AS TEXT)) "
            "AND json_extract(CAST(metadata AS TEXT), '$.user_id') = ?",
            (user_id,),
        )
    )


def delete_checkpoints(tx: Tx, thread_ids: Sequence[str]) -> int:
    """Delete the threads' checkpoints and pending writes in ``tx``; how many checkpoints."""
    tables = _tables(tx)
    if "checkpoints" not in tables:
        return 0
    deleted = 0
    for chunk in chunks(sorted(set(thread_ids))):
        marks = tx.in_list(chunk)
        deleted += tx.rowcount(f"DELETE FROM checkpoints WHERE thread_id IN {marks}", chunk)
        if "writes" in tables:
            tx.execute(f"DELETE FROM writes WHERE thread_id IN {marks}", chunk)
    return deleted


class Checkpoints:
    """What the memory needs to know of the checkpointer's rows."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def users_of(self, thread_id: str) -> set[str]:
        """The ``user_id`` values the thread's checkpoint metadata names (none if untagged)."""
        with self.db.read() as tx:
            if "checkpoints" not in _tables(tx):
                return set()
            values = tx.column(
                "SELECT DISTINCT json_extract(CAST(metadata AS TEXT), '$.user_id') FROM checkpoints "
                "WHERE thread_id = ? AND json_valid(CAST(metadata AS TEXT))",
                (thread_id,),
            )
        return {v for v in values if isinstance(v, str)}
