"""The ``indexed`` mark of rows that have a point in the recall index (memories, episodes,
conversation units): 0 never written, 1 written, 2 to be rewritten."""

from __future__ import annotations

from collections.abc import Sequence

from .database import Database, chunks


class Indexed:
    """Bookkeeping of a table's index points, shared by the repositories that have them."""

    db: Database
    #: The table whose rows carry the mark.
    table: str

    def mark_indexed(self, ids: Sequence[str]) -> None:
        """Record that the points of ``ids`` are written."""
        with self.db.write(durable=False) as tx:
            for chunk in chunks(list(ids)):
                tx.execute(f"UPDATE {self.table} SET indexed = 1 WHERE id IN {tx.in_list(chunk)}", chunk)

    def mark_all_unindexed(self) -> int:
        """Every row needs its point written again (the index was lost or rebuilt)."""
        with self.db.write() as tx:
            return tx.rowcount(f"UPDATE {self.table} SET indexed = 2 WHERE indexed = 1")

    def indexed_count(self) -> int:
        """How many rows have their point written."""
        with self.db.read() as tx:
            return int(tx.scalar(f"SELECT COUNT(*) FROM {self.table} WHERE indexed = 1"))

    def pending_count(self) -> int:
        """How many rows wait for their point."""
        with self.db.read() as tx:
            return int(tx.scalar(f"SELECT COUNT(*) FROM {self.table} WHERE indexed != 1"))
