"""Connections and transactions, the only part of ``storage/`` that differs per database.

The table-family modules write their SQL once, with ``?`` placeholders, against :class:`Tx`;
a :class:`Database` hands out read and write transactions on SQLite or PostgreSQL and says,
through its :class:`Dialect`, the few spellings that differ (``MAX(a, b)`` against
``GREATEST(a, b)``, a claim's ``FOR UPDATE SKIP LOCKED``, how tables are listed, entity
full-text search).

Concurrency: SQLite has one writer at a time (``BEGIN IMMEDIATE``), so a write transaction
may read, decide and write. PostgreSQL runs writers side by side (READ COMMITTED), so the
repositories say what must not interleave: :meth:`Tx.serialize` on a user (every write of a
user's records takes it first, so a forget cannot miss a row written beside it), and
``FOR UPDATE`` on the rows a decision reads. On SQLite both are no-ops.
"""

from __future__ import annotations

import abc
import contextlib
import hashlib
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..errors import StorageError


class TextSearch(Protocol):
    """How one database indexes and searches entity text."""

    def match(self, tx: Tx, user_id: str, terms: Sequence[str], limit: int) -> list[int]:
        """Ids of the user's entities matching any of ``terms``, best first."""

    def index(self, tx: Tx, entity_id: int, name: str, text: str) -> None:
        """Index the entity's ``name`` and ``text`` (and store ``text`` as its ``search_text``)."""

    def optimize(self, tx: Tx) -> None:
        """Merge the index after deletions, so that deleted text leaves its pages."""


@dataclass(frozen=True)
class Dialect:
    """How one database spells what SQL does not standardise."""

    name: str
    #: Scalar maximum/minimum of two values.
    greatest: str
    least: str
    #: Appended to a claim's ``SELECT`` so that concurrent workers skip each other's rows.
    skip_locked: str
    #: Positional placeholder.
    placeholder: str
    #: Appended to a ``SELECT`` whose rows the transaction goes on to change on the strength
    #: of what it read (a lease check): other writers wait instead of interleaving.
    for_update: str
    #: A statement taking a transaction-scoped lock on a 64-bit key (``""``: writes are
    #: serialised already).
    advisory_lock: str
    #: A query of the names of the tables in the database (its current schema).
    tables: str
    #: A statement keeping other writers off a table until the transaction ends, for the
    #: rare write that must see every row (``{}`` is the table; ``""``: one writer anyway).
    lock_table: str
    #: After rows were inserted with their own ``id``: move the table's id counter past
    #: them (``{0}`` is the table; ``""``: the counter follows by itself).
    sync_identity: str
    #: Entity full-text search.
    text_search: TextSearch


def lock_key(name: str) -> int:
    """A signed 64-bit key for ``name`` (an advisory lock's key; a collision only makes two
    users wait for each other)."""
    digest = hashlib.blake2b(name.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


# Placeholders outside quoted literals; our statements quote no question marks, but a
# literal containing one must survive the translation.
_QMARK = re.compile(r"'(?:[^']|'')*'|\?")


class Tx:
    """One open transaction (or read snapshot): run statements written with ``?``."""

    def __init__(self, conn: Any, dialect: Dialect) -> None:
        self.conn = conn
        self.dialect = dialect

    def _sql(self, sql: str) -> str:
        if self.dialect.placeholder == "?":
            return sql
        mark = self.dialect.placeholder
        # psycopg reads "%" as the start of a placeholder: literal ones are doubled.
        sql = sql.replace("%", "%%")
        return _QMARK.sub(lambda m: mark if m.group(0) == "?" else m.group(0), sql)

    def execute(self, sql: str, args: Sequence[Any] = ()) -> Any:
        """Run one statement; returns the driver's cursor."""
        return self.conn.execute(self._sql(sql), tuple(args))

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> int:
        """Run one statement for each row of arguments; how many rows they touched."""
        if not rows:
            return 0
        if hasattr(self.conn, "executemany"):
            return int(self.conn.executemany(self._sql(sql), [tuple(r) for r in rows]).rowcount)
        with self.conn.cursor() as cur:
            cur.executemany(self._sql(sql), [tuple(r) for r in rows])
            return int(cur.rowcount)

    def one(self, sql: str, args: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        """The first row of a query, or ``None``."""
        row = self.execute(sql, args).fetchone()
        return None if row is None else tuple(row)

    def all(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Every row of a query."""
        return [tuple(r) for r in self.execute(sql, args).fetchall()]

    def scalar(self, sql: str, args: Sequence[Any] = ()) -> Any:
        """The first column of the first row (``None`` without rows)."""
        row = self.one(sql, args)
        return None if row is None else row[0]

    def column(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        """The first column of every row."""
        return [r[0] for r in self.execute(sql, args).fetchall()]

    def rowcount(self, sql: str, args: Sequence[Any] = ()) -> int:
        """Run a write; how many rows it touched."""
        return int(self.execute(sql, args).rowcount)

    def insert(self, sql: str, args: Sequence[Any] = ()) -> int:
        """Run an ``INSERT … RETURNING id``; the new id."""
        row = self.execute(sql, args).fetchone()
        return int(row[0])

    def in_list(self, values: Sequence[Any]) -> str:
        """``(?, ?, …)`` for an ``IN`` over ``values`` (at least one)."""
        return "(" + ",".join("?" * len(values)) + ")"

    def serialize(self, *users: str) -> None:
        """Make this write wait for, and hold off, every other write of these users until it
        ends. Call it first in a transaction that writes a user's records: on PostgreSQL a
        transaction-scoped advisory lock per user (in one order, so two never deadlock); on
        SQLite nothing, its one write lock already does it."""
        if self.dialect.advisory_lock:
            for key in sorted({lock_key("user:" + u) for u in users}):
                self.execute(self.dialect.advisory_lock, (key,))

    def lock_table(self, table: str) -> None:
        """Hold off other writers of ``table`` (not its readers) until this transaction ends."""
        if self.dialect.lock_table:
            self.execute(self.dialect.lock_table.format(table))

    def sync_identity(self, table: str) -> None:
        """Move ``table``'s id counter past the ids inserted explicitly (a copy)."""
        if self.dialect.sync_identity:
            self.execute(self.dialect.sync_identity.format(table))

    def tables(self) -> set[str]:
        """The names of the tables in the database."""
        return set(self.column(self.dialect.tables))


class WriteLockBusy(StorageError):
    """A write asked not to wait (``Database.write(wait=False)``) found another connection
    holding the write lock; bookkeeping that asks so tries again later."""


class Database(abc.ABC):
    """One relational database: transactions, and what a checkpointer needs of it."""

    dialect: Dialect
    #: Where the data lives, for messages (a path, or a URL without its password).
    location: str

    @abc.abstractmethod
    def read(self, *, snapshot: bool = False) -> contextlib.AbstractContextManager[Tx]:
        """Statements that only read; with ``snapshot``, all of them see one consistent state."""

    @abc.abstractmethod
    def write(self, *, durable: bool = True, wait: bool = True) -> contextlib.AbstractContextManager[Tx]:
        """One write transaction holding the write lock (or the rows it locks) from its first
        statement; committed on exit, rolled back on an exception. ``durable=False`` may
        skip waiting for the disk (bookkeeping such as recall counts: losing the last few
        on a power cut is harmless). ``wait=False`` raises :class:`WriteLockBusy` at once where
        another connection holds the lock and waiting would hold up this process's other
        writes (SQLite's one writing connection); background bookkeeping retries it later."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release every connection. Safe to call twice."""

    @property
    @abc.abstractmethod
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""

    #: Set by :meth:`close` when a forget's scrub was still held off by readers then (the
    #: next open retries it).
    scrub_pending_at_close: bool = False

    def journal_scrub(self, tx: Tx) -> None:
        """In a forget's transaction: note that the files must be scrubbed of what it
        deletes, so that a scrub held off by readers (or a crash) is retried later."""

    def scrub(self) -> bool | None:
        """After a forget: make sure no deleted byte stays in a file (log, free pages).

        ``True``: done; ``False``: readers held the log past the wait, the frames stay
        until :meth:`finish_scrub` succeeds; ``None``: no file of ours to scrub (a server's
        log and vacuum are the server's)."""
        return None

    def finish_scrub(self, wait_seconds: float | None = None) -> bool | None:
        """Retry a scrub left to do (by readers, or a crash): ``None`` when none is left,
        else whether it is done now. ``wait_seconds``: how long to wait for readers
        (default: the database's own wait)."""
        return None

    @property
    def is_new(self) -> bool:
        """Whether this open created the schema (no earlier data)."""
        return False


def chunks(items: Sequence[Any], size: int = 500) -> Iterator[Sequence[Any]]:
    """``items`` in slices of at most ``size`` (SQLite caps the variables of a statement)."""
    for i in range(0, len(items), size):
        yield items[i : i + size]
