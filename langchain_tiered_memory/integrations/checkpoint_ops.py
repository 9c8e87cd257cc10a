"""The optional operations of LangGraph's checkpointers -- ``copy_thread``, ``prune`` and
``delete_for_runs`` -- for the savers of ``checkpointer.py`` (SQLite) and
``checkpointer_postgres.py`` (PostgreSQL, whose ``prune`` is langgraph-checkpoint-postgres's).

Each operation is written once, as a generator of statements: it yields ``(sql, params)``
and is sent back each statement's rows. :func:`run` and :func:`arun` execute it on a sync or
an async cursor, inside the one transaction the saver holds, so a sync saver and its async
twin run the same statements. The tables are LangGraph's (``checkpoints`` and ``writes`` on
SQLite; ``checkpoints``, ``checkpoint_blobs`` and ``checkpoint_writes`` on PostgreSQL); a
copy reads their columns from the database's catalog, so it carries every column the
saver's own migrations add.

What each keeps, on both databases:

- ``copy_thread(source, target)`` copies every checkpoint (all namespaces, the whole parent
  chain), its pending writes and, on PostgreSQL, its channel values; a ``thread_id`` in the
  metadata becomes ``target``, anything else (a ``user_id``) is kept, so forgetting the user
  forgets the copy too. ``target`` must have no checkpoints yet.
- ``delete_for_runs(run_ids)`` deletes the checkpoints whose metadata's ``run_id`` is one of
  ``run_ids`` (how LangGraph's server rolls back a cancelled run), their writes, and the
  channel values only they used; a checkpoint whose parent is deleted is left with none.
- ``prune(thread_ids, strategy="keep_latest")`` keeps each namespace's latest checkpoint with
  its writes (a finished subgraph call's namespace goes with the root checkpoint it started
  from), and refuses threads whose graph uses a ``DeltaChannel``, whose latest state is
  rebuilt from older checkpoints; ``strategy="delete"`` deletes the threads' checkpoints.
"""

from __future__ import annotations

import json
from collections.abc import Generator, Sequence
from typing import Any

from ..errors import InvalidInputError

#: A statement generator: yields ``(sql, params)``, is sent each statement's rows.
Statements = Generator[tuple[str, Sequence[Any]], list[Any], None]

PRUNE_STRATEGIES = ("keep_latest", "delete")
#: SQLite binds at most 32766 parameters a statement (999 before 3.32): lists go in chunks.
_CHUNK = 500


# --- arguments ---------------------------------------------------------------------------


def _ids(what: str, ids: Sequence[str]) -> list[str]:
    if isinstance(ids, (str, bytes)):
        raise InvalidInputError(f"{what} takes a list of ids, not one string: pass [{ids!r}]")
    return [str(i) for i in ids]


def prune_arguments(thread_ids: Sequence[str], strategy: str) -> list[str]:
    """The thread ids to prune, once ``strategy`` is known to be one LangGraph defines."""
    if strategy not in PRUNE_STRATEGIES:
        raise InvalidInputError(
            f"unknown prune strategy {strategy!r}: use 'keep_latest' (keep each namespace's "
            "latest checkpoint) or 'delete' (delete the threads' checkpoints)"
        )
    return _ids("prune", thread_ids)


def delta_refused(thread_ids: Sequence[str]) -> InvalidInputError:
    """The error of a ``keep_latest`` prune of threads that use a ``DeltaChannel``."""
    return InvalidInputError(
        f"prune(strategy='keep_latest') cannot prune threads whose graph uses a DeltaChannel "
        f"({', '.join(thread_ids)}): their latest state is rebuilt from older checkpoints; "
        "prune them with strategy='delete', or keep their history"
    )


def _target_taken(target: str) -> InvalidInputError:
    return InvalidInputError(
        f"thread {target!r} already has checkpoints: copy_thread copies into a new thread; "
        f"delete_thread({target!r}) first, or copy to another thread id"
    )


def _chunks(items: Sequence[Any]) -> list[Sequence[Any]]:
    return [items[i : i + _CHUNK] for i in range(0, len(items), _CHUNK)]


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _parents(metadata: Any) -> dict[str, Any]:
    """``metadata["parents"]`` of a checkpoint row's metadata (JSON text or bytes on SQLite)."""
    try:
        value = json.loads(metadata) if isinstance(metadata, (str, bytes)) else metadata
    except ValueError:
        return {}
    parents = value.get("parents") if isinstance(value, dict) else None
    return parents if isinstance(parents, dict) else {}


# --- running -----------------------------------------------------------------------------


def run(cur: Any, statements: Statements) -> None:
    """Execute ``statements`` on a sync cursor (sqlite3's or psycopg's)."""
    try:
        sql, params = next(statements)
        while True:
            cur.execute(sql, params)
            rows = list(cur.fetchall()) if cur.description else []
            sql, params = statements.send(rows)
    except StopIteration:
        return


async def arun(cur: Any, statements: Statements) -> None:
    """Execute ``statements`` on an async cursor (aiosqlite's or psycopg's)."""
    try:
        sql, params = next(statements)
        while True:
            await cur.execute(sql, params)
            rows = list(await cur.fetchall()) if cur.description else []
            sql, params = statements.send(rows)
    except StopIteration:
        return


# --- SQLite ------------------------------------------------------------------------------

_SQLITE_TABLES = ("checkpoints", "writes")
#: The metadata of a copied checkpoint: a ``thread_id`` in it names the target.
_SQLITE_METADATA = (
    "CASE WHEN json_type(CAST(metadata AS TEXT), '$.thread_id') IS NULL THEN metadata "
    "ELSE CAST(json_set(CAST(metadata AS TEXT), '$.thread_id', ?) AS BLOB) END"
)
_SQLITE_DELTA = (
    "json_type(CAST(metadata AS TEXT), '$.counters_since_delta_snapshot') IS NOT NULL "
    "OR json_type(CAST(metadata AS TEXT), '$.delta_writes_versioned') IS NOT NULL"
)


def _marks(n: int) -> str:
    return ", ".join("?" * n)


def sqlite_copy_thread(source: str, target: str) -> Statements:
    """Copy thread ``source`` to the new thread ``target`` (module doc)."""
    return _sqlite_copy(str(source), str(target))


def _sqlite_copy(source: str, target: str) -> Statements:
    if (yield "SELECT 1 FROM checkpoints WHERE thread_id = ? LIMIT 1", (target,)):
        raise _target_taken(target)
    for table in _SQLITE_TABLES:
        columns = [row[0] for row in (yield "SELECT name FROM pragma_table_info(?)", (table,))]
        values, params = [], []
        for column in columns:
            if column == "thread_id":
                values.append("?")
                params.append(target)
            elif column == "metadata" and table == "checkpoints":
                values.append(_SQLITE_METADATA)
                params.append(target)
            else:
                values.append(_quote(column))
        yield (
            (f"INSERT INTO {table} ({', '.join(map(_quote, columns))}) "
            f"SELECT {', '.join(values)} FROM {table} WHERE thread_id = ?"),
            (*params, source),
        )


def sqlite_delete_for_runs(run_ids: Sequence[str]) -> Statements:
    """Delete the checkpoints of the runs ``run_ids`` (module doc)."""
    return _sqlite_delete_for_runs(_ids("delete_for_runs", run_ids))


def _sqlite_delete_for_runs(run_ids: list[str]) -> Statements:
    found: dict[tuple[str, str], list[str]] = {}
    for chunk in _chunks(run_ids):
        rows = yield (
            ("SELECT thread_id, checkpoint_ns, checkpoint_id FROM checkpoints "
            f"WHERE json_extract(CAST(metadata AS TEXT), '$.run_id') IN ({_marks(len(chunk))})"),
            chunk,
        )
        for thread_id, ns, checkpoint_id in rows:
            found.setdefault((thread_id, ns), []).append(checkpoint_id)
    for (thread_id, ns), ids in found.items():
        for chunk in _chunks(ids):
            where = f"thread_id = ? AND checkpoint_ns = ? AND checkpoint_id IN ({_marks(len(chunk))})"
            yield f"DELETE FROM writes WHERE {where}", (thread_id, ns, *chunk)
            yield f"DELETE FROM checkpoints WHERE {where}", (thread_id, ns, *chunk)
            yield (
                ("UPDATE checkpoints SET parent_checkpoint_id = NULL WHERE thread_id = ? AND "
                f"checkpoint_ns = ? AND parent_checkpoint_id IN ({_marks(len(chunk))})"),
                (thread_id, ns, *chunk),
            )


def sqlite_prune(thread_ids: Sequence[str], strategy: str) -> Statements:
    """Prune the threads ``thread_ids`` with ``strategy`` (module doc)."""
    return _sqlite_prune(prune_arguments(thread_ids, strategy), strategy)


def _sqlite_prune(thread_ids: list[str], strategy: str) -> Statements:
    if strategy == "delete":
        for chunk in _chunks(thread_ids):
            for table in _SQLITE_TABLES:
                yield f"DELETE FROM {table} WHERE thread_id IN ({_marks(len(chunk))})", chunk
        return
    delta: list[str] = []
    for chunk in _chunks(thread_ids):
        rows = yield (
            (f"SELECT DISTINCT thread_id FROM checkpoints WHERE thread_id IN ({_marks(len(chunk))}) "
            f"AND ({_SQLITE_DELTA})"),
            chunk,
        )
        delta.extend(row[0] for row in rows)
    if delta:
        raise delta_refused(sorted(delta))
    for thread_id in dict.fromkeys(thread_ids):
        yield from _sqlite_keep_latest(thread_id)


def _sqlite_keep_latest(thread_id: str) -> Statements:
    # The latest checkpoint of each namespace: the one get_tuple loads.
    heads = yield (
        ("SELECT c.checkpoint_ns, c.checkpoint_id, c.metadata FROM checkpoints c WHERE c.thread_id = ? "
        "AND c.checkpoint_id = (SELECT MAX(m.checkpoint_id) FROM checkpoints m "
        "WHERE m.thread_id = c.thread_id AND m.checkpoint_ns = c.checkpoint_ns)"),
        (thread_id,),
    )
    kept = {ns: head for ns, head, _ in heads}
    # A subgraph call's namespace (its task id after a ":", unlike a checkpointer=True
    # subgraph's, whose state outlives each call) goes with the root checkpoint it started
    # from, once that one is saved and is not the one kept.
    calls: list[str] = []
    for ns, _, metadata in heads:
        root = _parents(metadata).get("")
        if ":" in ns and isinstance(root, str) and root != kept.get(""):
            if (yield ("SELECT 1 FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' "
                      "AND checkpoint_id = ?"), (thread_id, root)):
                calls.append(ns)
    for chunk in _chunks(calls):
        for table in _SQLITE_TABLES:
            yield (
                f"DELETE FROM {table} WHERE thread_id = ? AND checkpoint_ns IN ({_marks(len(chunk))})",
                (thread_id, *chunk),
            )
    for ns, head in kept.items():
        if ns in calls:
            continue
        unkept = [row[0] for row in (yield (
            ("SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? "
            "AND checkpoint_id <> ?"), (thread_id, ns, head),
        ))]
        for chunk in _chunks(unkept):
            where = f"thread_id = ? AND checkpoint_ns = ? AND checkpoint_id IN ({_marks(len(chunk))})"
            yield f"DELETE FROM writes WHERE {where}", (thread_id, ns, *chunk)
            yield f"DELETE FROM checkpoints WHERE {where}", (thread_id, ns, *chunk)
        if unkept:
            yield (
                ("UPDATE checkpoints SET parent_checkpoint_id = NULL "
                "WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?"),
                (thread_id, ns, head),
            )


# --- PostgreSQL --------------------------------------------------------------------------

_PG_TABLES = ("checkpoints", "checkpoint_blobs", "checkpoint_writes")
_PG_COLUMNS = (
    "SELECT attname AS name FROM pg_attribute WHERE attrelid = %s::regclass "
    "AND attnum > 0 AND NOT attisdropped ORDER BY attnum"
)
_PG_METADATA = (
    "CASE WHEN metadata ? 'thread_id' THEN jsonb_set(metadata, '{thread_id}', to_jsonb(%s::text)) "
    "ELSE metadata END"
)
_PG_REFERENCED = (
    "SELECT DISTINCT v.key AS channel, v.value AS version FROM checkpoints c "
    "CROSS JOIN LATERAL jsonb_each_text(c.checkpoint -> 'channel_versions') AS v "
    "WHERE c.thread_id = %s AND c.checkpoint_ns = %s"
)


def pg_copy_thread(source: str, target: str) -> Statements:
    """Copy thread ``source`` to the new thread ``target`` (module doc)."""
    return _pg_copy(str(source), str(target))


def _pg_copy(source: str, target: str) -> Statements:
    if (yield "SELECT 1 FROM checkpoints WHERE thread_id = %s LIMIT 1", (target,)):
        raise _target_taken(target)
    for table in _PG_TABLES:
        columns = [row["name"] for row in (yield _PG_COLUMNS, (table,))]
        values, params = [], []
        for column in columns:
            if column == "thread_id":
                values.append("%s")
                params.append(target)
            elif column == "metadata" and table == "checkpoints":
                values.append(_PG_METADATA)
                params.append(target)
            else:
                values.append(_quote(column))
        yield (
            (f"INSERT INTO {table} ({', '.join(map(_quote, columns))}) "
            f"SELECT {', '.join(values)} FROM {table} WHERE thread_id = %s"),
            (*params, source),
        )


def pg_delete_for_runs(run_ids: Sequence[str]) -> Statements:
    """Delete the checkpoints of the runs ``run_ids`` (module doc)."""
    return _pg_delete_for_runs(_ids("delete_for_runs", run_ids))


def _pg_delete_for_runs(run_ids: list[str]) -> Statements:
    if not run_ids:
        return
    deleted = yield (
        ("DELETE FROM checkpoints WHERE metadata ->> 'run_id' = ANY(%s) RETURNING thread_id, "
        "checkpoint_ns, checkpoint_id, checkpoint -> 'channel_versions' AS versions"),
        (run_ids,),
    )
    found: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in deleted:
        found.setdefault((row["thread_id"], row["checkpoint_ns"]), []).append(row)
    for (thread_id, ns), rows in found.items():
        ids = [row["checkpoint_id"] for row in rows]
        yield (
            ("DELETE FROM checkpoint_writes WHERE thread_id = %s AND checkpoint_ns = %s "
            "AND checkpoint_id = ANY(%s)"), (thread_id, ns, ids),
        )
        yield (
            ("UPDATE checkpoints SET parent_checkpoint_id = NULL WHERE thread_id = %s "
            "AND checkpoint_ns = %s AND parent_checkpoint_id = ANY(%s)"), (thread_id, ns, ids),
        )
        # The channel values only the deleted checkpoints used.
        kept = {(r["channel"], r["version"]) for r in (yield _PG_REFERENCED, (thread_id, ns))}
        garbage: dict[str, list[str]] = {}
        for row in rows:
            for channel, version in (row["versions"] or {}).items():
                if (channel, str(version)) not in kept:
                    garbage.setdefault(channel, []).append(str(version))
        for channel, versions in garbage.items():
            yield (
                ("DELETE FROM checkpoint_blobs WHERE thread_id = %s AND checkpoint_ns = %s "
                "AND channel = %s AND version = ANY(%s)"), (thread_id, ns, channel, versions),
            )


__all__ = [
    "PRUNE_STRATEGIES",
    "Statements",
    "arun",
    "delta_refused",
    "pg_copy_thread",
    "pg_delete_for_runs",
    "prune_arguments",
    "run",
    "sqlite_copy_thread",
    "sqlite_delete_for_runs",
    "sqlite_prune",
]
