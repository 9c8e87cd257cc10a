"""Clean-up of LangGraph's checkpoints, which live in the same database.

The tables are the checkpointer's, created by the saver on first use:
langgraph-checkpoint-sqlite's (``checkpoints``, ``writes``) on SQLite,
langgraph-checkpoint-postgres's (``checkpoints``, ``checkpoint_writes``,
``checkpoint_blobs``) on PostgreSQL. This module only finds and deletes a thread's or a
user's rows, inside the forget's transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .database import Database, Tx, chunks


@dataclass(frozen=True)
class _Layout:
    #: The table with one row per checkpoint (its ``metadata`` names the run's user).
    checkpoints: str
    #: The other tables keyed by ``thread_id`` (pending writes, channel values).
    others: tuple[str, ...]
    #: The ``user_id`` of a checkpoint's metadata, as SQL (NULL when absent).
    user_of: str
    #: Whether the metadata can be read as JSON at all.
    readable: str


_LAYOUTS = {
    # SqliteSaver stores metadata as JSON text (or bytes): cast, and skip what is not JSON.
    "sqlite": _Layout(
        "checkpoints", ("writes",),
        "json_extract(CAST(metadata AS TEXT), '$.user_id')", "json_valid(CAST(metadata AS TEXT))",
    ),
    # PostgresSaver stores it as JSONB.
    "postgresql": _Layout(
        "checkpoints", ("checkpoint_writes", "checkpoint_blobs"), "metadata ->> 'user_id'", "TRUE"
    ),
}


def _layout(tx: Tx, tables: set[str] | None = None) -> _Layout | None:
    """The checkpointer's tables, or ``None`` before the checkpointer made them."""
    layout = _LAYOUTS[tx.dialect.name]
    return layout if layout.checkpoints in (tx.tables() if tables is None else tables) else None


def checkpoint_threads_of(tx: Tx, user_id: str) -> set[str]:
    """Threads whose checkpoint metadata names ``user_id`` (a graph run through the
    checkpointer alone has no row in ``threads``)."""
    layout = _layout(tx)
    if layout is None:
        return set()
    return set(
        tx.column(
            f"SELECT DISTINCT thread_id FROM {layout.checkpoints} WHERE {layout.readable} "
            f"AND {layout.user_of} = ?",
            (user_id,),
        )
    )


def delete_checkpoints(tx: Tx, thread_ids: Sequence[str]) -> int:
    """Delete the threads' checkpoints, pending writes and channel values in ``tx``; how
    many checkpoints."""
    tables = tx.tables()
    layout = _layout(tx, tables)
    if layout is None:
        return 0
    deleted = 0
    for chunk in chunks(sorted(set(thread_ids))):
        marks = tx.in_list(chunk)
        deleted += tx.rowcount(f"DELETE FROM {layout.checkpoints} WHERE thread_id IN {marks}", chunk)
        for table in layout.others:
            if table in tables:
                tx.execute(f"DELETE FROM {table} WHERE thread_id IN {marks}", chunk)
    return deleted


class Checkpoints:
    """What the memory needs to know of the checkpointer's rows."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def users_of(self, thread_id: str) -> set[str]:
        """The ``user_id`` values the thread's checkpoint metadata names (none if untagged)."""
        with self.db.read() as tx:
            layout = _layout(tx)
            if layout is None:
                return set()
            values = tx.column(
                f"SELECT DISTINCT {layout.user_of} FROM {layout.checkpoints} "
                f"WHERE thread_id = ? AND {layout.readable}",
                (thread_id,),
            )
        return {v for v in values if isinstance(v, str)}

    def counts(self) -> dict[str, int]:
        """Checkpoints and pending writes, as the checkpointer stores them (0 before it ran)."""
        with self.db.read() as tx:
            tables = tx.tables()
            layout = _layout(tx, tables)
            if layout is None:
                return {"checkpoints": 0, "checkpoint_writes": 0}
            writes = layout.others[0]
            return {
                "checkpoints": int(tx.scalar(f"SELECT COUNT(*) FROM {layout.checkpoints}")),
                "checkpoint_writes": int(tx.scalar(f"SELECT COUNT(*) FROM {writes}")) if writes in tables else 0,
            }
