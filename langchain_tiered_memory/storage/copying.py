"""Copying every record of one store into another, table by table (``tiered-memory migrate``).

Rows keep their ids, so references between tables hold. Each chunk is one transaction on
the target and inserts with ``ON CONFLICT DO NOTHING``: a copy stopped anywhere is run
again and continues, and never writes a row twice. Three things are not copied verbatim:

- the recall index's points are not in a table: copied memories, episodes and conversation
  units are marked for
  the target's index (a memory as "to be rewritten", so it never merges again);
- ``forget_ops`` (point deletions owed to the source's index) mean nothing to a new index;
- ``meta`` and the schema marker belong to each database (but for ``id_namespace``, which
  the copy carries on).

Entity search text is indexed again by the target's own full-text search.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidInputError
from .database import Database
from .entities import refresh_search_text

#: The tables copied, parents before children, with the key their rows are paged by.
TABLES: tuple[tuple[str, str], ...] = (
    ("threads", "id"),
    ("messages", "id"),
    ("units", "id"),
    ("summaries", "thread_key"),
    ("entities", "id"),
    ("entity_attributes", "id"),
    ("jobs", "id"),
    ("episodes", "id"),
    ("store_items", "id"),
    ("memories", "id"),
    ("memory_aliases", "alias"),
    ("job_usage", "id"),  # what the jobs cost: stats and the spend budget go on from it
)
#: Tables whose integer key comes from an identity/autoincrement counter.
_COUNTED = {"threads", "messages", "entities", "entity_attributes", "jobs", "store_items", "job_usage"}
#: Column values changed on the way: the target's index holds no point yet.
_FOR_NEW_INDEX: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "memories": ("indexed", lambda v: 2 if v == 1 else v),  # 2: rewrite its point, never merge
    "episodes": ("indexed", lambda v: 0),
    "units": ("indexed", lambda v: 0),
}
CHUNK = 1_000


@dataclass(frozen=True)
class TableCopy:
    """How far one table's copy got: rows read from the source, rows new in the target."""

    table: str
    read: int
    written: int


def claim_target(target: Database, source: str, id_namespace: str | None = None) -> None:
    """Mark ``target`` as the copy of ``source`` — refused (``InvalidInputError``) when it
    holds records and is not already that copy, so a copy never mixes two memories. The
    source's ``id_namespace`` goes with it: the copy goes on minting the source's ids."""
    with target.write() as tx:
        marked = tx.scalar("SELECT value FROM meta WHERE key = 'copied_from'")
        if marked == source:
            return
        used = [table for table, _ in TABLES if tx.one(f"SELECT 1 FROM {table} LIMIT 1")]
        if used or marked is not None:
            raise InvalidInputError(
                f"{target.location} already holds a memory ({', '.join(used) or 'copied from ' + str(marked)}); "
                "copy into an empty database, or forget what it holds first"
            )
        tx.execute("INSERT INTO meta (key, value) VALUES ('copied_from', ?)", (source,))
        if id_namespace is not None:
            tx.execute(
                "INSERT INTO meta (key, value) VALUES ('id_namespace', ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (id_namespace,),
            )


def row_counts(db: Database) -> dict[str, int]:
    """Rows of every copied table."""
    with db.read() as tx:
        return {table: int(tx.scalar(f"SELECT COUNT(*) FROM {table}")) for table, _ in TABLES}


def copy_tables(
    source: Database, target: Database, progress: Callable[[str, int], None] | None = None
) -> list[TableCopy]:
    """Copy every row of :data:`TABLES` from ``source`` into ``target`` (see the module docs);
    ``progress(table, rows)`` is called after each chunk."""
    done = []
    for table, key in TABLES:
        read = written = 0
        for columns, rows in _chunks(source, table, key):
            written += _insert(target, table, columns, rows)
            read += len(rows)
            if progress is not None:
                progress(table, len(rows))
        if table in _COUNTED:
            with target.write() as tx:
                tx.sync_identity(table)
        done.append(TableCopy(table, read, written))
    return done


def _chunks(db: Database, table: str, key: str) -> Iterator[tuple[list[str], list[tuple[Any, ...]]]]:
    """The table's rows in key order, a chunk (one read transaction) at a time."""
    last: Any = None
    while True:
        with db.read() as tx:
            where, args = ("", ()) if last is None else (f" WHERE {key} > ?", (last,))
            cursor = tx.execute(f"SELECT * FROM {table}{where} ORDER BY {key} LIMIT ?", (*args, CHUNK))
            columns = [d[0] for d in cursor.description]
            rows = [tuple(r) for r in cursor.fetchall()]
        if not rows:
            return
        if table in _FOR_NEW_INDEX:
            column, change = _FOR_NEW_INDEX[table]
            i = columns.index(column)
            rows = [(*r[:i], change(r[i]), *r[i + 1 :]) for r in rows]
        yield columns, rows
        last = rows[-1][columns.index(key)]


def _insert(db: Database, table: str, columns: list[str], rows: list[tuple[Any, ...]]) -> int:
    """Insert the rows that are not there yet; how many were new."""
    marks = ", ".join("?" * len(columns))
    sql = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks}) ON CONFLICT DO NOTHING"
    with db.write() as tx:
        written = tx.executemany(sql, rows)
        # The target's own full-text index, over the entity and (once they are there) its
        # current attributes.
        key = {"entities": "id", "entity_attributes": "entity_id"}.get(table)
        if key is not None:
            for entity_id in dict.fromkeys(row[columns.index(key)] for row in rows):
                refresh_search_text(tx, entity_id)
    return written
