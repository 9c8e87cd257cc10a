"""Running summaries of the messages that left a thread's window (written by the extraction
job's commit, ``results.py``)."""

from __future__ import annotations

from .database import Database
from .rows import SummaryRow


class Summaries:
    """Each thread's running summary."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def get(self, thread_key: int) -> SummaryRow | None:
        """The thread's running summary, or ``None`` before anything left the window."""
        with self.db.read() as tx:
            row = tx.one(
                "SELECT thread_key, user_id, text, tokens, first_seq, last_seq, updated_at "
                "FROM summaries WHERE thread_key = ?",
                (thread_key,),
            )
        return SummaryRow(*row) if row else None
