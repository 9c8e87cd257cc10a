"""Long-term memories: the records themselves, their access state and their merge trace.

The vector index holds a point per memory (id, vectors, the fields it filters on) and is
rebuilt from these rows; ``indexed`` says whether a row's point is written. Recording a
recall is a write here (``record_accesses``), never one to the index.

``keep_score`` orders memories by effective importance, ``weight × decay^days`` with
``weight = min(1, importance + boost)`` and ``days`` since the last access, at any moment:
``weight × decay^(now − t)`` is ``decay^now × weight × decay^−t``, and the first factor is
common to all memories, so ``ln(weight) − t·ln(decay)`` (``t`` in days since the epoch)
sorts them the same way forever. The capacity eviction is then an index scan.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from .database import Database, Tx, chunks
from .forgetting import journal_points
from .marks import Indexed
from .rows import MemoryRow

MEMORY_COLUMNS = (
    "id, user_id, content, memory_type, importance, metadata, session_id, source_messages, "
    "created_at, updated_at, last_accessed, access_count, boost, valid_from, valid_to, "
    "superseded_by, subject, mergeable, indexed"
)
#: Sets a row's ``indexed`` mark to "stale" (2) unless it was never indexed (0).
STALE = "indexed = CASE indexed WHEN 1 THEN 2 ELSE indexed END"
_EPOCH_DAY = 86_400.0
# Below this a weight is "nothing": ln(0) would be −inf, which sorts but cannot be stored.
_MIN_WEIGHT = 1e-9
_MIN_DECAY = 1e-12


def close(tx: Tx, ids: Sequence[str], at: str, by: str) -> None:
    """Close the current memories ``ids``: a newer memory ``by`` states another value of the
    same thing from ``at`` (they stay, for history; their points are to be rewritten)."""
    if ids:
        tx.execute(
            f"UPDATE memories SET valid_to = ?, superseded_by = ?, {STALE} "
            f"WHERE id IN {tx.in_list(ids)} AND valid_to IS NULL",
            (at, by, *ids),
        )


def keep_score(importance: float, boost: float, last_accessed: str, decay: float) -> float:
    """The time-invariant sort key of effective importance (see the module docs)."""
    weight = max(min(1.0, importance + boost), _MIN_WEIGHT)
    days = datetime.fromisoformat(last_accessed).timestamp() / _EPOCH_DAY
    return math.log(weight) - days * math.log(max(min(decay, 1.0), _MIN_DECAY))


def memory_row(row: Sequence[Any], merged_from: list[str] | None = None) -> MemoryRow:
    """A :class:`MemoryRow` from the columns of :data:`MEMORY_COLUMNS`."""
    (mid, user, content, kind, importance, metadata, session, sources, created, updated,
     accessed, count, boost, valid_from, valid_to, superseded_by, subject, mergeable, indexed) = row
    return MemoryRow(
        id=mid, user_id=user, content=content, memory_type=kind, importance=float(importance),
        metadata=json.loads(metadata), session_id=session, source_messages=json.loads(sources),
        created_at=created, updated_at=updated, last_accessed=accessed, access_count=int(count),
        boost=float(boost), merged_from=list(merged_from or []), valid_from=valid_from,
        valid_to=valid_to, superseded_by=superseded_by, subject=subject, mergeable=bool(mergeable),
        indexed=int(indexed),
    )


def insert_memories(tx: Tx, rows: Sequence[MemoryRow], decay: float) -> list[str]:
    """Insert memories in ``tx``, unindexed; an id already stored is left as it is (a replayed
    job writes nothing twice). Returns the ids inserted now."""
    if not rows:
        return []
    ids = [r.id for r in rows]
    taken = set()
    for chunk in chunks(ids):
        taken.update(tx.column(f"SELECT id FROM memories WHERE id IN {tx.in_list(chunk)}", chunk))
        taken.update(tx.column(f"SELECT alias FROM memory_aliases WHERE alias IN {tx.in_list(chunk)}", chunk))
    fresh = [r for r in rows if r.id not in taken]
    tx.executemany(
        f"INSERT INTO memories ({MEMORY_COLUMNS}, keep_score) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?)",
        [
            (r.id, r.user_id, r.content, r.memory_type, r.importance,
             json.dumps(r.metadata, ensure_ascii=False), r.session_id,
             json.dumps(r.source_messages), r.created_at, r.updated_at, r.last_accessed,
             r.access_count, r.boost, r.valid_from, r.valid_to, r.superseded_by, r.subject,
             int(r.mergeable), keep_score(r.importance, r.boost, r.last_accessed, decay))
            for r in fresh
        ],
    )
    for r in fresh:
        if r.merged_from:
            add_aliases(tx, r.user_id, r.id, r.merged_from, r.created_at)
    return [r.id for r in fresh]


def add_aliases(tx: Tx, user_id: str, memory_id: str, aliases: Iterable[str], now: str) -> None:
    """Record ids merged into ``memory_id``."""
    tx.executemany(
        "INSERT INTO memory_aliases (alias, memory_id, user_id, created_at) VALUES (?, ?, ?, ?) "
        "ON CONFLICT(alias) DO UPDATE SET memory_id = excluded.memory_id",
        [(a, memory_id, user_id, now) for a in aliases],
    )


class Memories(Indexed):
    """Every user's long-term memories.

    Args:
        db: the database.
        decay: ``MemoryConfig.decay``, for :func:`keep_score`.
    """

    table = "memories"

    def __init__(self, db: Database, decay: float = 0.95) -> None:
        self.db = db
        self.decay = decay

    # --- writing ------------------------------------------------------------------------

    def add(self, rows: Sequence[MemoryRow]) -> list[str]:
        """Insert memories (see :func:`insert_memories`) in one transaction."""
        with self.db.write() as tx:
            tx.serialize(*{r.user_id for r in rows})
            return insert_memories(tx, rows, self.decay)

    def update(self, memory_id: str, changes: Mapping[str, Any], now: str) -> None:
        """Change ``content``, ``importance``, ``memory_type`` or ``metadata``; a content or
        type change marks the memory for re-indexing."""
        sets: list[str] = ["updated_at = ?"]
        args: list[Any] = [now]
        for key in ("content", "importance", "memory_type"):
            if key in changes:
                sets.append(f"{key} = ?")
                args.append(changes[key])
        if "metadata" in changes:
            sets.append("metadata = ?")
            args.append(json.dumps(changes["metadata"], ensure_ascii=False))
        if {"content", "memory_type", "importance"} & set(changes):
            sets.append(STALE)
        with self.db.write() as tx:
            tx.execute(f"UPDATE memories SET {', '.join(sets)} WHERE id = ?", (*args, memory_id))
            if "importance" in changes:
                self._rekeep(tx, [memory_id])

    def merge(self, target: MemoryRow, new: MemoryRow, now: str) -> int | None:
        """Fold ``new`` (a near-duplicate just written) into ``target``: the newer wording, the
        higher importance, the merged metadata, ``new``'s id (and its aliases) as aliases.
        The deletion of ``new``'s point is journaled (``forget_ops``) in the same transaction;
        returns the op, for the caller to finish once the point is gone."""
        metadata = {**target.metadata, **new.metadata}
        sources = list(dict.fromkeys([*target.source_messages, *new.source_messages]))
        with self.db.write() as tx:
            tx.serialize(target.user_id)
            tx.execute(
                "UPDATE memories SET content = ?, memory_type = ?, importance = ?, metadata = ?, "
                "session_id = COALESCE(?, session_id), source_messages = ?, updated_at = ?, "
                f"last_accessed = ?, {STALE} WHERE id = ?",
                (new.content, new.memory_type, max(target.importance, new.importance),
                 json.dumps(metadata, ensure_ascii=False), new.session_id, json.dumps(sources),
                 now, now, target.id),
            )
            aliases = [new.id, *tx.column("SELECT alias FROM memory_aliases WHERE memory_id = ?", (new.id,))]
            add_aliases(tx, target.user_id, target.id, aliases, now)
            tx.execute("DELETE FROM memories WHERE id = ?", (new.id,))
            # Its point was just written: journaled with the delete, so a crash before the
            # index drops it cannot leave a point without a record.
            op = journal_points(tx, {"merged_into": target.id}, [new.id], now)
            tx.execute("UPDATE store_items SET memory_id = ? WHERE memory_id = ?", (target.id, new.id))
            self._rekeep(tx, [target.id])
        return op

    def record_accesses(self, counts: Mapping[str, tuple[int, str]], boost: float, *, wait: bool = True) -> None:
        """Count recalls, ``id → (times, last access)``: each memory's last access, count +
        times, boost + times × ``boost`` (capped so that importance + boost stays within 1,
        as one recall at a time would be). Not worth an fsync: bookkeeping. ``wait=False``:
        see :meth:`Database.write`."""
        if not counts:
            return
        ids = list(counts)
        with self.db.write(durable=False, wait=wait) as tx:
            if tx.dialect.advisory_lock:
                # Taken like every other write of these rows (a job's supersede), so two
                # transactions never lock the same memories in opposite orders.
                owners: set[str] = set()
                for chunk in chunks(ids):
                    owners.update(tx.column(f"SELECT user_id FROM memories WHERE id IN {tx.in_list(chunk)}", chunk))
                tx.serialize(*owners)
            tx.executemany(
                "UPDATE memories SET last_accessed = ?, access_count = access_count + ?, "
                f"boost = {tx.dialect.least}(boost + ?, {tx.dialect.greatest}(0, 1 - importance)) WHERE id = ?",
                [(when, times, times * boost, memory_id) for memory_id, (times, when) in counts.items()],
            )
            self._rekeep(tx, ids)

    def _rekeep(self, tx: Tx, ids: Sequence[str]) -> None:
        rows = []
        for chunk in chunks(list(ids)):
            rows += tx.all(
                f"SELECT id, importance, boost, last_accessed FROM memories WHERE id IN {tx.in_list(chunk)}",
                chunk,
            )
        tx.executemany(
            "UPDATE memories SET keep_score = ? WHERE id = ?",
            [(keep_score(i, b, t, self.decay), mid) for mid, i, b, t in rows],
        )

    def rekeep_all(self) -> int:
        """Recompute every ``keep_score`` (after the decay rate changed); how many."""
        with self.db.write() as tx:
            rows = tx.all("SELECT id, importance, boost, last_accessed FROM memories")
            tx.executemany(
                "UPDATE memories SET keep_score = ? WHERE id = ?",
                [(keep_score(i, b, t, self.decay), mid) for mid, i, b, t in rows],
            )
            tx.execute(
                "INSERT INTO meta (key, value) VALUES ('keep_decay', ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (repr(self.decay),),
            )
        return len(rows)

    def keep_decay(self) -> float | None:
        """The decay rate the stored ``keep_score`` values were made with."""
        with self.db.read() as tx:
            value = tx.scalar("SELECT value FROM meta WHERE key = 'keep_decay'")
        return None if value is None else float(value)

    # --- reading ------------------------------------------------------------------------

    def get_many(self, ids: Sequence[str], user_id: str | None = None) -> dict[str, MemoryRow]:
        """The memories among ``ids`` that exist (of ``user_id`` only, if given), by id."""
        out: dict[str, MemoryRow] = {}
        if not ids:
            return out
        with self.db.read() as tx:
            for chunk in chunks(list(ids)):
                rows = tx.all(f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id IN {tx.in_list(chunk)}", chunk)
                aliases = aliases_of(tx, [r[0] for r in rows])
                for r in rows:
                    if user_id is None or r[1] == user_id:
                        out[r[0]] = memory_row(r, aliases.get(r[0]))
        return out

    def resolve(self, user_id: str, memory_id: str) -> str | None:
        """Where a memory stored under ``memory_id`` lives now (itself, or the memory it was
        merged into), ``None`` if nowhere; another user's id raises ``LookupError``."""
        with self.db.read() as tx:
            row = tx.one("SELECT user_id FROM memories WHERE id = ?", (memory_id,))
            if row is None:
                row = tx.one("SELECT user_id, memory_id FROM memory_aliases WHERE alias = ?", (memory_id,))
                if row is None:
                    return None
                if row[0] != user_id:
                    raise LookupError(memory_id)
                return str(row[1])
        if row[0] != user_id:
            raise LookupError(memory_id)
        return memory_id

    def page(
        self,
        user_id: str,
        memory_types: Sequence[str] | None = None,
        limit: int = 100,
        offset: int = 0,
        *,
        include_superseded: bool = True,
    ) -> list[MemoryRow]:
        """The user's memories, newest first."""
        sql = f"SELECT {MEMORY_COLUMNS} FROM memories WHERE user_id = ?"
        args: list[Any] = [user_id]
        if memory_types:
            sql += f" AND memory_type IN ({','.join('?' * len(memory_types))})"
            args += list(memory_types)
        if not include_superseded:
            sql += " AND valid_to IS NULL"
        sql += " ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?"
        with self.db.read() as tx:
            rows = tx.all(sql, (*args, limit, offset))
            aliases = aliases_of(tx, [r[0] for r in rows])
        return [memory_row(r, aliases.get(r[0])) for r in rows]

    def by_subject(self, user_id: str, subject: str) -> list[MemoryRow]:
        """The user's current memories about ``subject`` (a normalised subject/attribute key)."""
        with self.db.read() as tx:
            rows = tx.all(
                f"SELECT {MEMORY_COLUMNS} FROM memories WHERE user_id = ? AND subject = ? "
                "AND valid_to IS NULL ORDER BY valid_from",
                (user_id, subject),
            )
        return [memory_row(r) for r in rows]

    def count(self, user_id: str | None = None) -> int:
        """Memories of one user, or of all."""
        with self.db.read() as tx:
            if user_id is None:
                return int(tx.scalar("SELECT COUNT(*) FROM memories"))
            return int(tx.scalar("SELECT COUNT(*) FROM memories WHERE user_id = ?", (user_id,)))

    def users(self) -> list[str]:
        """Every user with a memory."""
        with self.db.read() as tx:
            return sorted(tx.column("SELECT DISTINCT user_id FROM memories"))

    def weakest(self, user_id: str, n: int, exclude: Sequence[str] = ()) -> list[str]:
        """The ids of the user's ``n`` memories of lowest effective importance."""
        if n <= 0:
            return []
        skip = set(exclude)
        with self.db.read() as tx:
            ids = tx.column(
                "SELECT id FROM memories WHERE user_id = ? ORDER BY keep_score, created_at LIMIT ?",
                (user_id, n + len(skip)),
            )
        return [i for i in ids if i not in skip][:n]

    # --- the index's bookkeeping -----------------------------------------------------------

    def unindexed(self, limit: int) -> list[MemoryRow]:
        """Memories whose index point is not written yet (oldest first)."""
        with self.db.read() as tx:
            rows = tx.all(
                f"SELECT {MEMORY_COLUMNS} FROM memories WHERE indexed != 1 ORDER BY created_at LIMIT ?",
                (limit,),
            )
        return [memory_row(r) for r in rows]

    def mark_indexed(self, ids: Sequence[str], updated: Mapping[str, str] | None = None) -> None:
        """Record that the points of ``ids`` are written; a row changed since (its
        ``updated_at`` differs from ``updated``) stays unindexed."""
        if updated is None:
            super().mark_indexed(ids)
            return
        with self.db.write(durable=False) as tx:
            tx.executemany(
                "UPDATE memories SET indexed = 1 WHERE id = ? AND updated_at = ?", [(i, updated[i]) for i in ids]
            )


def aliases_of(tx: Tx, ids: Sequence[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for chunk in chunks(list(ids)):
        for alias, target in tx.all(
            f"SELECT alias, memory_id FROM memory_aliases WHERE memory_id IN {tx.in_list(chunk)} "
            "ORDER BY created_at, alias",
            chunk,
        ):
            out.setdefault(target, []).append(alias)
    return out
