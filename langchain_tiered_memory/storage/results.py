"""Committing what a job produced, atomically with the job's completion.

An extraction job's results — entity updates, memories (and the older memories they
supersede), the new running summary and the thread's watermarks — are committed together
with marking the job done, or not at all: a job that loses its lease commits nothing, and
a replay after a crash finds its memories already stored under the same ids.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..vocabulary import RELATION_ATTRIBUTE, SELF, USER_ENTITY
from .database import Database, Tx
from .entities import upsert_entity
from .jobs import finish, holds_lease
from .memories import close, insert_memories
from .rows import EntityUpdate, JobRow, MemoryRow, SummaryUpdate


def supersede(tx: Tx, rows: Sequence[MemoryRow]) -> list[str]:
    """Close the current memories that ``rows`` restate with another value.

    A memory with a ``subject`` (a normalised "who/what + attribute" key, e.g. ``"user
    home city"``) supersedes the user's current memories of that subject stated before it:
    they get ``valid_to`` = its ``valid_from`` and ``superseded_by`` = its id, and stay for
    history. One stated after it (an import of older history) closes it instead. A memory
    that ``replaces`` a thing ("switched from coffee to tea") closes the user's current
    memories that name it, stated before it. Returns the ids closed (their index points
    must be rewritten: default recall leaves them out).
    """
    closed: list[str] = []
    for row in rows:
        if row.replaces:
            named = _naming(tx, row, row.replaces)
            close(tx, named, row.valid_from, row.id)
            closed += named
            _past_in_profile(tx, row, row.replaces)
        if not row.subject:
            continue
        current = tx.all(
            "SELECT id, valid_from FROM memories WHERE user_id = ? AND subject = ? "
            "AND valid_to IS NULL AND id != ?",
            (row.user_id, row.subject, row.id),
        )
        newer = [(vf, mid) for mid, vf in current if vf > row.valid_from]
        older = [mid for mid, vf in current if vf <= row.valid_from]
        close(tx, older, row.valid_from, row.id)
        closed += older
        if newer:
            at, by = min(newer)
            close(tx, [row.id], at, by)
            closed.append(row.id)
    return closed


def _naming(tx: Tx, row: MemoryRow, thing: str) -> list[str]:
    """The user's current memories, stated before ``row``, that name ``thing`` as a whole
    word ("switched from coffee to tea" closes "The user's favourite drink is coffee.", not
    "The user roasts coffeeberries")."""
    key = thing.casefold()
    sql = ("SELECT id, content FROM memories WHERE user_id = ? AND valid_to IS NULL AND id != ? "
           "AND valid_from <= ?")
    args: list[object] = [row.user_id, row.id, row.valid_from]
    if key.isascii():
        # A prefilter the database can run; lower() folds ASCII only, so only for ASCII.
        sql += " AND lower(content) LIKE ? ESCAPE '!'"
        args.append("%" + key.replace("!", "!!").replace("%", "!%").replace("_", "!_") + "%")
    word = _word(thing)
    return [mid for mid, content in tx.all(sql, args) if word.search(content.casefold())]


def _past_in_profile(tx: Tx, row: MemoryRow, thing: str) -> None:
    """The user's own profile attributes that name ``thing`` become "formerly …", as "I no
    longer …" makes them (the old value stays in the attribute's history)."""
    word = _word(thing)
    profiles = tx.all(
        "SELECT DISTINCT e.id, e.name, e.name_key, e.type FROM entities e LEFT JOIN entity_attributes a "
        "ON a.entity_id = e.id AND a.key = ? AND a.superseded_at IS NULL "
        "WHERE e.user_id = ? AND (e.name_key = ? OR a.value = ?)",
        (RELATION_ATTRIBUTE, row.user_id, USER_ENTITY, SELF),
    )
    for entity_id, name, key, kind in profiles:
        current = tx.all(
            "SELECT key, value FROM entity_attributes WHERE entity_id = ? AND superseded_at IS NULL", (entity_id,)
        )
        past = {k: f"formerly {v}" for k, v in current
                if k != RELATION_ATTRIBUTE and word.search(v.casefold()) and not v.startswith("formerly ")}
        if past:
            source = row.source_messages[0] if row.source_messages else None
            upsert_entity(tx, row.user_id, row.session_id or "", EntityUpdate(name, key, kind, past, source),
                          row.created_at)


def _word(thing: str) -> re.Pattern[str]:
    return re.compile(rf"(?<!\w){re.escape(thing.casefold())}(?!\w)")


class Results:
    """The commits of jobs' results."""

    def __init__(self, db: Database, decay: float = 0.95) -> None:
        self.db = db
        self.decay = decay

    def complete_extraction(
        self,
        job: JobRow,
        worker: str,
        *,
        user_id: str,
        thread_id: str,
        entities: Sequence[EntityUpdate],
        memories: Sequence[MemoryRow],
        summary: SummaryUpdate | None,
        extracted_through: int,
        now: str,
    ) -> bool:
        """Commit an extraction job's results and mark it done, atomically.

        Returns ``False`` (committing nothing) if the worker lost its lease meanwhile.
        Entity merges read the current profile inside the transaction, so concurrent jobs
        of one user cannot lose each other's attributes.
        """
        with self.db.write() as tx:
            tx.serialize(user_id)
            if not holds_lease(tx, job.id, worker):
                return False
            for update in entities:
                upsert_entity(tx, user_id, thread_id, update, now)
            inserted = set(insert_memories(tx, memories, self.decay))
            supersede(tx, [m for m in memories if m.id in inserted])
            greatest = tx.dialect.greatest
            if summary is not None and job.thread_key is not None:
                tx.execute(
                    "INSERT INTO summaries (thread_key, user_id, text, tokens, first_seq, last_seq, "
                    "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(thread_key) DO UPDATE SET "
                    "text = excluded.text, tokens = excluded.tokens, last_seq = excluded.last_seq, "
                    "updated_at = excluded.updated_at",
                    (job.thread_key, user_id, summary.text, summary.tokens, summary.first_seq,
                     summary.last_seq, now),
                )
                tx.execute(
                    f"UPDATE threads SET summarized_through = {greatest}(summarized_through, ?) WHERE id = ?",
                    (summary.last_seq, job.thread_key),
                )
            if job.thread_key is not None:
                tx.execute(
                    f"UPDATE threads SET extracted_through = {greatest}(extracted_through, ?) WHERE id = ?",
                    (extracted_through, job.thread_key),
                )
            finish(tx, job.id, worker)
        return True

    def add_memories(self, rows: Sequence[MemoryRow]) -> list[str]:
        """Insert memories (``remember``), superseding older values of their subjects."""
        with self.db.write() as tx:
            tx.serialize(*{r.user_id for r in rows})
            inserted = insert_memories(tx, rows, self.decay)
            keep = set(inserted)
            supersede(tx, [r for r in rows if r.id in keep])
        return inserted
