"""Forgetting: deleting a user, a thread, memories or an entity from every table at once.

Each forget is one transaction over every relational layer, and it journals what it leaves
for the vector index to delete (the ids of the points built from the deleted rows) in
``forget_ops``. The caller deletes those points and then :meth:`Forgetting.finish`\\ es the
op; an op left over by a crash or a locked index is finished by whoever next holds the
index. The points of deleted rows can never surface meanwhile: recall reads the records
from here, and a point without a record is dropped.

The same transaction scrubs the user's job rows of the deleted text (``job_answers.py``)
and journals the scrub of the files (:meth:`Database.journal_scrub`): the caller then
scrubs them, and if readers hold it off, the journal says it is still to do.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .checkpoints import checkpoint_threads_of, delete_checkpoints
from .database import Database, Tx, chunks
from .entities import delete_entities, refresh_search_text
from .job_answers import scrub_answers
from .rows import ForgetOp
from .store_items import delete_user_items
from .threads import ownership_error
from .usage import forget_thread_usage, forget_user_usage


def journal_points(tx: Tx, scope: dict[str, Any], point_ids: Sequence[str], now: str) -> int | None:
    """Journal, in ``tx``, index points to delete once the rows they were built from are
    gone (``scope`` says why); ``None`` when there is nothing to journal."""
    if not point_ids and "user" not in scope:
        return None
    return tx.insert(
        "INSERT INTO forget_ops (scope, point_ids, created_at) VALUES (?, ?, ?) RETURNING id",
        (json.dumps(scope), json.dumps(list(point_ids)), now),
    )


def _delete_ids(tx: Tx, table: str, column: str, ids: Sequence[str]) -> int:
    n = 0
    for chunk in chunks(list(ids)):
        n += tx.rowcount(f"DELETE FROM {table} WHERE {column} IN {tx.in_list(chunk)}", chunk)
    return n


def _delete_units(tx: Tx, ids: Sequence[str]) -> None:
    """Delete conversation units with what is kept beside them (their sentences' vectors)."""
    _delete_ids(tx, "unit_sentences", "unit_id", ids)
    _delete_ids(tx, "units", "id", ids)


def _texts(tx: Tx, sql: str, args: Sequence[Any]) -> list[str]:
    """The text column of the rows a forget is about to delete (to scrub their copies)."""
    return [t for t in tx.column(sql, args) if isinstance(t, str)]


def delete_memories(tx: Tx, ids: Sequence[str]) -> int:
    """Delete memories, their aliases and their store addresses in ``tx``."""
    _delete_ids(tx, "memory_aliases", "memory_id", ids)
    _delete_ids(tx, "store_items", "memory_id", ids)
    return _delete_ids(tx, "memories", "id", ids)


class Forgetting:
    """Journaled deletes across the tables (see the module docs)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def thread(
        self, thread_id: str, user_id: str | None, now: str
    ) -> tuple[dict[str, int], int | None]:
        """Delete a thread: its messages, summary, jobs, episodes, checkpoints, the memories
        learned in it, and the entity attributes learned from it (an entity first met in it
        and left with no attribute goes too). With ``user_id``, only if it is theirs.

        Returns the counts and the journaled op (``None`` when no index point is left)."""
        with self.db.write() as tx:
            row = tx.one("SELECT id, user_id FROM threads WHERE thread_id = ?", (thread_id,))
            lock_owner = row[1] if row is not None else user_id
            if lock_owner is not None:
                tx.serialize(lock_owner)
                # Read again under the owner's lock: an append may have created it meanwhile.
                row = tx.one("SELECT id, user_id FROM threads WHERE thread_id = ?", (thread_id,))
            counts: dict[str, int] = {"threads": 0, "messages": 0}
            owner = row[1] if row else user_id
            if row is not None and user_id is not None and row[1] != user_id:
                raise ownership_error(thread_id)
            points: list[str] = []
            if row is not None:
                key = row[0]
                units = tx.column("SELECT id FROM units WHERE thread_key = ?", (key,))
                _delete_units(tx, units)
                points += units
                counts["threads"] = 1
                counts["messages"] = tx.rowcount("DELETE FROM messages WHERE thread_key = ?", (key,))
                counts["summaries"] = tx.rowcount("DELETE FROM summaries WHERE thread_key = ?", (key,))
                counts["jobs"] = tx.rowcount("DELETE FROM jobs WHERE thread_key = ?", (key,))
                tx.execute("DELETE FROM threads WHERE id = ?", (key,))
            if owner is not None:
                episodes = tx.column(
                    "SELECT id FROM episodes WHERE thread_id = ? AND user_id = ?", (thread_id, owner)
                )
                counts["episodes"] = _delete_ids(tx, "episodes", "id", episodes)
                memories = tx.column(
                    "SELECT id FROM memories WHERE session_id = ? AND user_id = ?", (thread_id, owner)
                )
                # What the thread taught, whose copies the user's other jobs may hold.
                taught = _texts(
                    tx, "SELECT content FROM memories WHERE session_id = ? AND user_id = ?", (thread_id, owner)
                )
                taught += _texts(
                    tx, "SELECT value FROM entity_attributes WHERE source = ? AND entity_id IN "
                    "(SELECT id FROM entities WHERE user_id = ?)", (thread_id, owner),
                )
                counts["memories"] = delete_memories(tx, memories)
                points += [*memories, *episodes]
                counts["entity_attributes"] = tx.rowcount(
                    "DELETE FROM entity_attributes WHERE source = ? AND entity_id IN "
                    "(SELECT id FROM entities WHERE user_id = ?)",
                    (thread_id, owner),
                )
                orphans = "user_id = ? AND source = ? AND id NOT IN (SELECT entity_id FROM entity_attributes)"
                taught += _texts(tx, f"SELECT name FROM entities WHERE {orphans}", (owner, thread_id))
                counts["entities"] = delete_entities(tx, orphans, (owner, thread_id))
                for entity_id in tx.column("SELECT id FROM entities WHERE user_id = ?", (owner,)):
                    refresh_search_text(tx, entity_id)
                counts["job_answers_scrubbed"] = scrub_answers(tx, owner, taught)
            counts["checkpoints"] = delete_checkpoints(tx, [thread_id])
            counts.setdefault("job_answers_scrubbed", 0)
            forget_thread_usage(tx, thread_id)
            op = journal_points(tx, {"thread": thread_id}, points, now)
            self.db.journal_scrub(tx)
        return counts, op

    def user(self, user_id: str, now: str) -> tuple[dict[str, int], int | None]:
        """Delete everything of the user: messages, summaries, jobs, episodes, entities,
        memories, store items and the checkpoints of their threads (those in ``threads`` and
        those whose checkpoint metadata names them)."""
        with self.db.write() as tx:
            tx.serialize(user_id)
            # Store items name their user only inside the namespace, so their writers take no
            # user lock: hold them off while this reads which items are the user's.
            tx.lock_table("store_items")
            threads = tx.column("SELECT thread_id FROM threads WHERE user_id = ?", (user_id,))
            threads += sorted(checkpoint_threads_of(tx, user_id))
            memories = tx.column("SELECT id FROM memories WHERE user_id = ?", (user_id,))
            episodes = tx.column("SELECT id FROM episodes WHERE user_id = ?", (user_id,))
            units = tx.column("SELECT id FROM units WHERE user_id = ?", (user_id,))
            _delete_units(tx, units)
            # Store items first: those that address memories count as items too.
            items = delete_user_items(tx, user_id)
            counts = {
                "messages": tx.rowcount("DELETE FROM messages WHERE user_id = ?", (user_id,)),
                "summaries": tx.rowcount("DELETE FROM summaries WHERE user_id = ?", (user_id,)),
                "jobs": tx.rowcount("DELETE FROM jobs WHERE user_id = ?", (user_id,)),
                "episodes": _delete_ids(tx, "episodes", "id", episodes),
                "entity_attributes": tx.rowcount(
                    "DELETE FROM entity_attributes WHERE entity_id IN "
                    "(SELECT id FROM entities WHERE user_id = ?)",
                    (user_id,),
                ),
                "entities": tx.rowcount("DELETE FROM entities WHERE user_id = ?", (user_id,)),
                "memories": delete_memories(tx, memories),
            }
            tx.execute("DELETE FROM memory_aliases WHERE user_id = ?", (user_id,))
            counts["store_items"] = items
            counts["threads"] = tx.rowcount("DELETE FROM threads WHERE user_id = ?", (user_id,))
            counts["checkpoints"] = delete_checkpoints(tx, threads)
            counts["job_answers_scrubbed"] = 0  # their jobs went with them
            forget_user_usage(tx, user_id)  # not counted: bookkeeping, not the user's data
            # The user's points go by their tenant key: the ids are not needed.
            op = journal_points(tx, {"user": user_id}, [], now)
            self.db.journal_scrub(tx)
        return counts, op

    def memories(self, user_id: str, ids: Sequence[str], now: str) -> tuple[dict[str, int], int | None]:
        """Delete the user's memories among ``ids`` (another user's are left alone).

        Returns the counts (``memories``, ``job_answers_scrubbed``) and the journaled op."""
        with self.db.write() as tx:
            tx.serialize(user_id)
            mine: list[str] = []
            contents: list[str] = []
            for chunk in chunks(list(ids)):
                rows = tx.all(
                    f"SELECT id, content FROM memories WHERE user_id = ? AND id IN {tx.in_list(chunk)}",
                    (user_id, *chunk),
                )
                mine += [r[0] for r in rows]
                contents += [r[1] for r in rows]
            n = delete_memories(tx, mine)
            scrubbed = scrub_answers(tx, user_id, contents) if mine else 0
            op = journal_points(tx, {"memories": len(mine)}, mine, now)
            self.db.journal_scrub(tx)
        return {"memories": n, "job_answers_scrubbed": scrubbed}, op

    def entity(self, user_id: str, name_key: str) -> dict[str, int]:
        """Delete one entity profile and its attribute history (no index points); the counts
        (``entities``, ``job_answers_scrubbed``)."""
        with self.db.write() as tx:
            tx.serialize(user_id)
            which = "user_id = ? AND name_key = ?"
            names = _texts(tx, f"SELECT name FROM entities WHERE {which}", (user_id, name_key))
            names += _texts(
                tx, f"SELECT value FROM entity_attributes WHERE entity_id IN (SELECT id FROM entities WHERE {which})",
                (user_id, name_key),
            )
            n = delete_entities(tx, which, (user_id, name_key))
            scrubbed = scrub_answers(tx, user_id, names) if n else 0
            self.db.journal_scrub(tx)
        return {"entities": n, "job_answers_scrubbed": scrubbed}

    # --- the journal --------------------------------------------------------------------

    def pending(self) -> list[ForgetOp]:
        """Forgets whose index points are not deleted yet, oldest first."""
        with self.db.read() as tx:
            rows = tx.all("SELECT id, scope, point_ids, created_at FROM forget_ops ORDER BY id")
        return [ForgetOp(r[0], json.loads(r[1]), json.loads(r[2]), r[3]) for r in rows]

    def finish(self, op_id: int) -> None:
        """The op's points are deleted from the index: drop it from the journal."""
        with self.db.write() as tx:
            tx.execute("DELETE FROM forget_ops WHERE id = ?", (op_id,))
