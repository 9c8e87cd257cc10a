"""The relational store: one SQLite file, ``memory.db``, and every SQL statement of the package.

No other module opens a connection or writes SQL, so the relational layers can move to
another database behind this one interface. The file is opened in WAL mode with a busy
timeout, so several threads and processes share it; writes take the write lock up front
(``BEGIN IMMEDIATE``), so concurrent appends to one thread serialise instead of failing.

The message log is append-only: eviction from the window never deletes a row. Rows go only
when a thread or a user is explicitly forgotten.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import time
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlite_utils

from .errors import (
    CorruptDatabaseError,
    DataDirError,
    ForeignDatabaseError,
    InvalidInputError,
    MemoryClosedError,
    SchemaVersionError,
    StorageError,
    ThreadOwnershipError,
)

DB_FILENAME = "memory.db"
#: ``PRAGMA application_id`` of our files ("TMEM"): how a foreign SQLite file is told apart.
APPLICATION_ID = 0x544D454D
BUSY_TIMEOUT_S = 30.0
_SQLITE_HEADER = b"SQLite format 3\x00"


# --- schema -----------------------------------------------------------------------------


def _migrate_to_1(db: sqlite_utils.Database) -> None:
    db["meta"].create({"key": str, "value": str}, pk="key")
    # AUTOINCREMENT, which sqlite-utils cannot declare: a thread forgotten and started again
    # gets a new key, so an in-process cache keyed by it never takes the new for the old.
    db.execute(
        "CREATE TABLE threads ("
        "id INTEGER PRIMARY KEY AUTOINCREMENT, "
        "thread_id TEXT NOT NULL, "
        "user_id TEXT NOT NULL, "
        "created_at TEXT NOT NULL, "
        "updated_at TEXT NOT NULL, "
        "next_seq INTEGER NOT NULL DEFAULT 0, "
        "generation INTEGER NOT NULL DEFAULT 0, "
        "evicted_through INTEGER NOT NULL DEFAULT -1)"
    )
    db["threads"].create_index(["thread_id"], unique=True)
    db["threads"].create_index(["user_id"])
    db["messages"].create(
        {
            "id": int,
            "thread_key": int,
            "user_id": str,
            "seq": int,
            "message_id": str,
            "type": str,
            "tool_calls": int,
            "data": str,
            "tokens": int,
            "counter": str,
            "created_at": str,
        },
        pk="id",
        not_null={
            "thread_key",
            "user_id",
            "seq",
            "message_id",
            "type",
            "tool_calls",
            "data",
            "tokens",
            "counter",
            "created_at",
        },
        foreign_keys=[("thread_key", "threads", "id")],
    )
    db["messages"].create_index(["thread_key", "seq"], unique=True)
    db["messages"].create_index(["thread_key", "message_id"], unique=True)
    db["messages"].create_index(["user_id"])


def _migrate_to_2(db: sqlite_utils.Database) -> None:
    """Summaries, entity profiles with attribute history, the job journal and episodes."""
    # Watermarks of the work done on a thread's log: summarised (left the window and folded
    # into the summary) and extracted (entities and memories taken from it).
    db["threads"].add_column("summarized_through", int, not_null_default=-1)
    db["threads"].add_column("extracted_through", int, not_null_default=-1)
    db["summaries"].create(
        {
            "thread_key": int,
            "user_id": str,
            "text": str,
            "tokens": int,
            "first_seq": int,
            "last_seq": int,
            "updated_at": str,
        },
        pk="thread_key",
        not_null={"user_id", "text", "tokens", "first_seq", "last_seq", "updated_at"},
        foreign_keys=[("thread_key", "threads", "id")],
    )
    db["summaries"].create_index(["user_id"])
    db["entities"].create(
        {
            "id": int,
            "user_id": str,
            "name": str,
            "name_key": str,
            "type": str,
            "search_text": str,
            "source": str,
            "created_at": str,
            "updated_at": str,
        },
        pk="id",
        not_null={"user_id", "name", "name_key", "type", "search_text", "created_at", "updated_at"},
    )
    db["entities"].create_index(["user_id", "name_key"], unique=True)
    db["entities"].create_index(["user_id", "updated_at"])
    # Triggers keep the index in step with every write, inside the same transaction.
    db["entities"].enable_fts(["name", "search_text"], create_triggers=True, tokenize="unicode61")
    db["entity_attributes"].create(
        {
            "id": int,
            "entity_id": int,
            "key": str,
            "value": str,
            "learned_at": str,
            "source": str,
            "source_message": str,
            "superseded_at": str,
        },
        pk="id",
        not_null={"entity_id", "key", "value", "learned_at"},
        foreign_keys=[("entity_id", "entities", "id")],
    )
    db["entity_attributes"].create_index(["entity_id", "key"])
    db["jobs"].create(
        {
            "id": int,
            "key": str,
            "kind": str,
            "user_id": str,
            "thread_key": int,
            "payload": str,
            "result": str,
            "status": str,
            "attempts": int,
            "next_run_at": float,
            "lease_until": float,
            "leased_by": str,
            "last_error": str,
            "created_at": str,
            "updated_at": str,
        },
        pk="id",
        not_null={"key", "kind", "user_id", "payload", "status", "attempts", "next_run_at", "created_at", "updated_at"},
        defaults={"attempts": 0, "status": "pending"},
    )
    db["jobs"].create_index(["key"], unique=True)
    db["jobs"].create_index(["status", "next_run_at"])
    db["jobs"].create_index(["user_id"])
    db["episodes"].create(
        {
            "id": str,
            "user_id": str,
            "thread_id": str,
            "started_at": str,
            "ended_at": str,
            "summary": str,
            "decisions": str,
            "outcome": str,
            "topics": str,
            "first_seq": int,
            "last_seq": int,
            "created_at": str,
        },
        pk="id",
        not_null={"user_id", "thread_id", "started_at", "ended_at", "summary", "decisions", "outcome", "topics", "first_seq", "last_seq", "created_at"},
    )
    db["episodes"].create_index(["thread_id", "last_seq"], unique=True)
    db["episodes"].create_index(["user_id", "ended_at"])


def _migrate_to_3(db: sqlite_utils.Database) -> None:
    """Generic LangGraph store items (namespaces other than a user's memories)."""
    # AUTOINCREMENT: insertion order is the order InMemoryStore lists items in.
    db.execute(
        "CREATE TABLE store_items ("
        "id INTEGER PRIMARY KEY AUTOINCREMENT, "
        "ns_path TEXT NOT NULL, "
        "namespace TEXT NOT NULL, "
        "key TEXT NOT NULL, "
        "value TEXT NOT NULL, "
        "vectors TEXT, "
        "created_at TEXT NOT NULL, "
        "updated_at TEXT NOT NULL, "
        "ttl_minutes REAL, "
        "expires_at REAL)"
    )
    db["store_items"].create_index(["ns_path", "key"], unique=True)
    db["store_items"].create_index(["expires_at"])


#: ``MIGRATIONS[n]`` brings a database from schema version ``n - 1`` to ``n``. Each runs in
#: one transaction with the version bump, so a crash leaves the old version intact.
MIGRATIONS: dict[int, Callable[[sqlite_utils.Database], None]] = {
    1: _migrate_to_1,
    2: _migrate_to_2,
    3: _migrate_to_3,
}


# --- rows -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ThreadRow:
    """A thread's bookkeeping row. ``key`` is unique for the life of the file."""

    key: int
    thread_id: str
    user_id: str
    created_at: str
    updated_at: str
    next_seq: int
    generation: int
    evicted_through: int
    summarized_through: int = -1
    extracted_through: int = -1


@dataclass(frozen=True)
class NewMessage:
    """A message ready to be appended: serialised, typed and counted."""

    message_id: str
    type: str
    data: str
    tokens: int
    #: How many tool calls an AI message makes (0 for other messages).
    tool_calls: int = 0


@dataclass(frozen=True)
class IndexRow:
    """What the window needs of a stored message, without its content."""

    seq: int
    type: str
    tokens: int
    counter: str
    tool_calls: int = 0


@dataclass(frozen=True)
class AppendResult:
    """The outcome of :meth:`Storage.append_messages`."""

    thread: ThreadRow
    #: ``(seq, message_id)`` of each message stored, in order; duplicates are left out.
    stored: list[tuple[int, str]]
    duplicates: int


@dataclass(frozen=True)
class SummaryRow:
    """A thread's running summary and the message range it covers."""

    thread_key: int
    user_id: str
    text: str
    tokens: int
    first_seq: int
    last_seq: int
    updated_at: str


@dataclass(frozen=True)
class SummaryUpdate:
    """A new running summary for a thread, covering messages up to ``last_seq``."""

    text: str
    tokens: int
    first_seq: int
    last_seq: int


@dataclass(frozen=True)
class AttributeRow:
    """One value an entity's attribute had: when it was learned, from where, until when."""

    key: str
    value: str
    learned_at: str
    #: The thread the value was learned in, and the message.
    source: str | None
    source_message: str | None
    superseded_at: str | None


@dataclass(frozen=True)
class EntityRow:
    """An entity with its attributes (current ones, or the whole history)."""

    id: int
    user_id: str
    name: str
    name_key: str
    type: str
    created_at: str
    updated_at: str
    attributes: tuple[AttributeRow, ...]


@dataclass(frozen=True)
class EntityUpdate:
    """What one turn says of an entity; ``name_key`` is its normalised name."""

    name: str
    name_key: str
    type: str
    attributes: dict[str, str]
    #: Id of the message the values were learned from.
    source_message: str | None = None


@dataclass(frozen=True)
class JobRow:
    """A row of the job journal."""

    id: int
    key: str
    kind: str
    user_id: str
    thread_key: int | None
    payload: str
    result: str | None
    status: str
    attempts: int
    next_run_at: float
    lease_until: float | None
    leased_by: str | None
    last_error: str | None
    created_at: str
    updated_at: str


@dataclass(frozen=True)
class EpisodeRow:
    """One finished session of a thread."""

    id: str
    user_id: str
    thread_id: str
    started_at: str
    ended_at: str
    summary: str
    decisions: list[str]
    outcome: str
    topics: list[str]
    first_seq: int
    last_seq: int
    created_at: str


@dataclass(frozen=True)
class StoreRow:
    """A generic LangGraph store item."""

    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    vectors: dict[str, list[float]] | None
    created_at: str
    updated_at: str


def ns_path(namespace: Sequence[str]) -> str:
    """A namespace as text whose prefixes are the namespace's prefixes (unit separators)."""
    return "".join(f"{label}\x1f" for label in namespace)


_JOB_COLUMNS = (
    "id, key, kind, user_id, thread_key, payload, result, status, attempts, next_run_at, "
    "lease_until, leased_by, last_error, created_at, updated_at"
)
_EPISODE_COLUMNS = (
    "id, user_id, thread_id, started_at, ended_at, summary, decisions, outcome, topics, "
    "first_seq, last_seq, created_at"
)


_THREAD_COLUMNS = (
    "id, thread_id, user_id, created_at, updated_at, next_seq, generation, evicted_through, "
    "summarized_through, extracted_through"
)


class Storage:
    """The SQLite database of one data directory."""

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        *,
        migrations: dict[int, Callable[[sqlite_utils.Database], None]] | None = None,
    ) -> None:
        self.data_dir = _prepare_dir(Path(data_dir))
        self.path = self.data_dir / DB_FILENAME
        self._migrations = dict(MIGRATIONS if migrations is None else migrations)
        self.schema_version = max(self._migrations)
        _check_header(self.path)
        self._lock = threading.RLock()
        try:
            conn = sqlite3.connect(
                self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise DataDirError(
                f"cannot open {self.path}: {exc}; check that the data directory is writable"
            ) from exc
        self._conn: sqlite3.Connection | None = conn
        self.db = sqlite_utils.Database(conn)
        try:
            self._identify()
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise StorageError(
                    f"{self.path} cannot use WAL journaling (got {mode!r}); put the data "
                    "directory on a local file system"
                )
            # FULL: a committed message survives power loss, not only a process crash.
            conn.execute("PRAGMA synchronous = FULL")
            conn.execute("PRAGMA foreign_keys = ON")
            self._migrate()
        except BaseException:
            conn.close()
            self._conn = None
            raise

    # --- opening ------------------------------------------------------------------------

    def _identify(self) -> None:
        """Refuse a file that is not ours before anything is written to it."""
        conn = self._connection()
        try:
            app_id = conn.execute("PRAGMA application_id").fetchone()[0]
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master")]
        except sqlite3.DatabaseError as exc:
            raise CorruptDatabaseError(_corrupt_message(self.path, exc)) from exc
        if app_id != APPLICATION_ID and (app_id != 0 or tables):
            raise ForeignDatabaseError(
                f"{self.path} is a SQLite database of another application "
                f"(application_id={app_id}, tables: {', '.join(tables[:5]) or 'none'}); it was "
                "left untouched. Point data_dir at a directory of its own."
            )
        if version > self.schema_version:
            raise SchemaVersionError(
                f"{self.path} has schema version {version}, newer than this "
                f"langchain-tiered-memory supports ({self.schema_version}); upgrade the package "
                "(pip install -U langchain-tiered-memory)"
            )

    def _migrate(self) -> None:
        with self._write() as conn:
            # Read inside the write lock: two processes opening a new file at once must not
            # both run the same migration.
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version > self.schema_version:
                raise SchemaVersionError(
                    f"{self.path} was upgraded to schema version {version} by a newer "
                    "langchain-tiered-memory; upgrade the package"
                )
            if version == self.schema_version:
                return
            if version == 0:
                conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            for target in range(version + 1, self.schema_version + 1):
                self._migrations[target](self.db)
                conn.execute(f"PRAGMA user_version = {target}")
            self.db["meta"].upsert(
                {"key": "schema_version", "value": str(self.schema_version)}, pk="key"
            )

    # --- plumbing -----------------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise MemoryClosedError("this memory is closed; create a new TieredMemory")
        return self._conn

    @contextlib.contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        with self._lock, self._errors():
            yield self._connection()

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction holding SQLite's write lock from its first statement."""
        with self._lock, self._errors():
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.DatabaseError as exc:
            text = str(exc).lower()
            if "malformed" in text or "not a database" in text:
                raise CorruptDatabaseError(_corrupt_message(self.path, exc)) from exc
            if "readonly" in text or "read-only" in text or "unable to open" in text:
                raise DataDirError(
                    f"cannot write {self.path}: {exc}; check the data directory's permissions "
                    "and free space"
                ) from exc
            if "locked" in text or "busy" in text:
                raise StorageError(
                    f"{self.path} stayed locked for {BUSY_TIMEOUT_S:.0f} s by another "
                    "connection; retry, or look for a process holding a long transaction"
                ) from exc
            if "disk" in text and "full" in text:
                raise StorageError(f"the disk holding {self.path} is full: {exc}") from exc
            raise StorageError(f"database error on {self.path}: {exc}") from exc

    def connect(self) -> sqlite3.Connection:
        """A new connection to the same file, for a component that manages its own
        transactions (LangGraph's SQLite checkpointer). WAL lets it work beside ours."""
        self._connection()
        conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        conn.execute("PRAGMA synchronous = FULL")
        return conn

    async def aconnect(self) -> Any:
        """An ``aiosqlite`` connection to the same file, for the async checkpointer."""
        import aiosqlite

        self._connection()
        conn = await aiosqlite.connect(self.path, timeout=BUSY_TIMEOUT_S)
        await conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        await conn.execute("PRAGMA synchronous = FULL")
        return conn

    def close(self) -> None:
        """Close the connection. Safe to call twice."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._conn is None

    # --- threads and messages -----------------------------------------------------------

    def thread(self, thread_id: str) -> ThreadRow | None:
        """The thread's row, or ``None`` if it has no messages yet."""
        with self._read() as conn:
            row = conn.execute(
                f"SELECT {_THREAD_COLUMNS} FROM threads WHERE thread_id = ?", (thread_id,)
            ).fetchone()
        return ThreadRow(*row) if row else None

    def thread_by_key(self, key: int) -> ThreadRow | None:
        """The thread with storage key ``key``, or ``None`` if it was forgotten."""
        with self._read() as conn:
            row = conn.execute(f"SELECT {_THREAD_COLUMNS} FROM threads WHERE id = ?", (key,)).fetchone()
        return ThreadRow(*row) if row else None

    def threads_of(self, user_id: str) -> list[ThreadRow]:
        """The user's threads, most recently updated first."""
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {_THREAD_COLUMNS} FROM threads WHERE user_id = ? "
                "ORDER BY updated_at DESC, id DESC",
                (user_id,),
            ).fetchall()
        return [ThreadRow(*r) for r in rows]

    def append_messages(
        self,
        user_id: str,
        thread_id: str,
        messages: Sequence[NewMessage],
        *,
        counter: str,
        now: str,
        job_kind: str | None = None,
    ) -> AppendResult:
        """Append ``messages`` to the thread in one transaction, creating it if needed.

        ``counter`` names the token counter of the counts, so a later change of counter is
        noticed and the counts redone. With ``job_kind``, a job covering the thread up to
        its newest message is journaled in the same transaction, so no stored turn can miss
        its processing, whatever crashes after.
        A message whose ``message_id`` the thread already holds is skipped, so repeating an
        append (a retry, a graph re-sending its state) stores nothing twice.
        """
        with self._write() as conn:
            row = conn.execute(
                f"SELECT {_THREAD_COLUMNS} FROM threads WHERE thread_id = ?", (thread_id,)
            ).fetchone()
            if row is None:
                conn.execute(
                    "INSERT INTO threads (thread_id, user_id, created_at, updated_at, next_seq, "
                    "generation, evicted_through) VALUES (?, ?, ?, ?, 0, 0, -1)",
                    (thread_id, user_id, now, now),
                )
                row = conn.execute(
                    f"SELECT {_THREAD_COLUMNS} FROM threads WHERE thread_id = ?", (thread_id,)
                ).fetchone()
            thread = ThreadRow(*row)
            if thread.user_id != user_id:
                raise ThreadOwnershipError(
                    f"thread {thread_id!r} belongs to another user; thread ids are global "
                    "(as in LangGraph), so give each user's threads ids of their own"
                )
            existing = _existing_ids(conn, thread.key, [m.message_id for m in messages])
            seq = thread.next_seq
            rows, stored, duplicates = [], [], 0
            for m in messages:
                if m.message_id in existing:
                    duplicates += 1
                    continue
                existing.add(m.message_id)
                rows.append(
                    (thread.key, user_id, seq, m.message_id, m.type, m.tool_calls, m.data, m.tokens)
                )
                stored.append((seq, m.message_id))
                seq += 1
            conn.executemany(
                "INSERT INTO messages (thread_key, user_id, seq, message_id, type, tool_calls, "
                "data, tokens, counter, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [r + (counter, now) for r in rows],
            )
            conn.execute(
                "UPDATE threads SET next_seq = ?, updated_at = ? WHERE id = ?",
                (seq, now, thread.key),
            )
            if job_kind is not None and stored:
                _enqueue(conn, job_kind, user_id, thread.key, {"through_seq": seq - 1}, now)
        updated = dataclasses.replace(thread, updated_at=now, next_seq=seq)
        return AppendResult(updated, stored, duplicates)

    def message_index(self, thread_key: int, after_seq: int = -1) -> list[IndexRow]:
        """Seq, type and token count of the thread's messages after ``after_seq``."""
        with self._read() as conn:
            rows = conn.execute(
                "SELECT seq, type, tokens, counter, tool_calls FROM messages "
                "WHERE thread_key = ? AND seq > ? "
                "ORDER BY seq",
                (thread_key, after_seq),
            ).fetchall()
        return [IndexRow(*r) for r in rows]

    def message_data(self, thread_key: int, first_seq: int, last_seq: int) -> dict[int, dict[str, Any]]:
        """The serialised messages with ``first_seq <= seq <= last_seq``, by seq."""
        with self._read() as conn:
            rows = conn.execute(
                "SELECT seq, data FROM messages WHERE thread_key = ? AND seq BETWEEN ? AND ?",
                (thread_key, first_seq, last_seq),
            ).fetchall()
        return {seq: json.loads(data) for seq, data in rows}

    def message_span(self, thread_key: int, first_seq: int, last_seq: int) -> tuple[str, str] | None:
        """When the first and the last message of the range were stored."""
        with self._read() as conn:
            row = conn.execute(
                "SELECT MIN(created_at), MAX(created_at) FROM messages WHERE thread_key = ? "
                "AND seq BETWEEN ? AND ?",
                (thread_key, first_seq, last_seq),
            ).fetchone()
        return None if row[0] is None else (row[0], row[1])

    def message_data_at(self, thread_key: int, seqs: Sequence[int]) -> dict[int, dict[str, Any]]:
        """The serialised messages at the given seqs, by seq."""
        out: dict[int, dict[str, Any]] = {}
        with self._read() as conn:
            for chunk in _chunks(list(seqs), 500):
                marks = ",".join("?" * len(chunk))
                for seq, data in conn.execute(
                    f"SELECT seq, data FROM messages WHERE thread_key = ? AND seq IN ({marks})",
                    (thread_key, *chunk),
                ):
                    out[seq] = json.loads(data)
        return out

    def update_token_counts(
        self, thread_key: int, counts: Sequence[tuple[int, int]], *, counter: str
    ) -> None:
        """Store recounted ``(seq, tokens)`` pairs made by ``counter``."""
        with self._write() as conn:
            conn.executemany(
                "UPDATE messages SET tokens = ?, counter = ? WHERE thread_key = ? AND seq = ?",
                [(tokens, counter, thread_key, seq) for seq, tokens in counts],
            )

    def set_evicted_through(self, thread_key: int, seq: int) -> None:
        """Record that messages up to ``seq`` have left the window (never moves back)."""
        with self._write() as conn:
            conn.execute(
                "UPDATE threads SET evicted_through = MAX(evicted_through, ?) WHERE id = ?",
                (seq, thread_key),
            )

    def recorded_ids(self, thread_key: int, message_ids: list[str]) -> set[str]:
        """Which of ``message_ids`` the thread holds."""
        with self._read() as conn:
            return _existing_ids(conn, thread_key, message_ids)

    # --- forgetting ---------------------------------------------------------------------

    def forget_thread(self, thread_id: str, user_id: str | None = None) -> dict[str, int]:
        """Delete a thread from every relational layer; with ``user_id``, only if it is theirs.

        Goes: its messages, summary, jobs and episodes, and the entity attributes learned
        from it (an entity first met in it and left with no attribute goes too).
        """
        with self._write() as conn:
            row = conn.execute(
                "SELECT id, user_id FROM threads WHERE thread_id = ?", (thread_id,)
            ).fetchone()
            if row is None:
                return {"threads": 0, "messages": 0}
            if user_id is not None and row[1] != user_id:
                raise ThreadOwnershipError(
                    f"thread {thread_id!r} does not belong to user {user_id!r}; nothing was "
                    "forgotten"
                )
            key, owner = row
            counts = {"threads": 1}
            counts["messages"] = conn.execute("DELETE FROM messages WHERE thread_key = ?", (key,)).rowcount
            counts["summaries"] = conn.execute("DELETE FROM summaries WHERE thread_key = ?", (key,)).rowcount
            counts["jobs"] = conn.execute("DELETE FROM jobs WHERE thread_key = ?", (key,)).rowcount
            counts["episodes"] = conn.execute(
                "DELETE FROM episodes WHERE thread_id = ? AND user_id = ?", (thread_id, owner)
            ).rowcount
            counts["entity_attributes"] = conn.execute(
                "DELETE FROM entity_attributes WHERE source = ? AND entity_id IN "
                "(SELECT id FROM entities WHERE user_id = ?)",
                (thread_id, owner),
            ).rowcount
            counts["entities"] = conn.execute(
                "DELETE FROM entities WHERE user_id = ? AND source = ? AND id NOT IN "
                "(SELECT entity_id FROM entity_attributes)",
                (owner, thread_id),
            ).rowcount
            for entity_id, in conn.execute(
                "SELECT DISTINCT e.id FROM entities e WHERE e.user_id = ?", (owner,)
            ).fetchall():
                _refresh_search_text(conn, entity_id)
            conn.execute("DELETE FROM threads WHERE id = ?", (key,))
        return counts

    def forget_user(self, user_id: str) -> dict[str, int]:
        """Delete everything of the user from every relational layer."""
        with self._write() as conn:
            counts = {
                "messages": conn.execute("DELETE FROM messages WHERE user_id = ?", (user_id,)).rowcount,
                "summaries": conn.execute("DELETE FROM summaries WHERE user_id = ?", (user_id,)).rowcount,
                "jobs": conn.execute("DELETE FROM jobs WHERE user_id = ?", (user_id,)).rowcount,
                "episodes": conn.execute("DELETE FROM episodes WHERE user_id = ?", (user_id,)).rowcount,
                "entity_attributes": conn.execute(
                    "DELETE FROM entity_attributes WHERE entity_id IN "
                    "(SELECT id FROM entities WHERE user_id = ?)",
                    (user_id,),
                ).rowcount,
                "entities": conn.execute("DELETE FROM entities WHERE user_id = ?", (user_id,)).rowcount,
            }
            counts["threads"] = conn.execute("DELETE FROM threads WHERE user_id = ?", (user_id,)).rowcount
        return counts

    # --- summaries ----------------------------------------------------------------------

    def summary(self, thread_key: int) -> SummaryRow | None:
        """The thread's running summary, or ``None`` before anything left the window."""
        with self._read() as conn:
            row = conn.execute(
                "SELECT thread_key, user_id, text, tokens, first_seq, last_seq, updated_at "
                "FROM summaries WHERE thread_key = ?",
                (thread_key,),
            ).fetchone()
        return SummaryRow(*row) if row else None

    # --- entities -----------------------------------------------------------------------

    def entities_of(self, user_id: str, limit: int | None = None) -> list[EntityRow]:
        """The user's entities, most recently updated first, with current attributes."""
        with self._read() as conn:
            ids = [
                r[0]
                for r in conn.execute(
                    "SELECT id FROM entities WHERE user_id = ? ORDER BY updated_at DESC, id DESC "
                    "LIMIT ?",
                    (user_id, -1 if limit is None else limit),
                )
            ]
            return _entity_rows(conn, ids, history=False)

    def entity(self, user_id: str, name_key: str) -> EntityRow | None:
        """One entity by normalised name, with its whole attribute history."""
        with self._read() as conn:
            row = conn.execute(
                "SELECT id FROM entities WHERE user_id = ? AND name_key = ?", (user_id, name_key)
            ).fetchone()
            return _entity_rows(conn, [row[0]], history=True)[0] if row else None

    def search_entities(self, user_id: str, match: str, limit: int) -> list[EntityRow]:
        """The user's entities matching an FTS5 ``match`` expression, best first, then newest."""
        with self._read() as conn:
            ids = [
                r[0]
                for r in conn.execute(
                    "SELECT e.id FROM entities_fts f JOIN entities e ON e.id = f.rowid "
                    "WHERE entities_fts MATCH ? AND e.user_id = ? "
                    "ORDER BY f.rank, e.updated_at DESC LIMIT ?",
                    (match, user_id, limit),
                )
            ]
            return _entity_rows(conn, ids, history=False)

    def forget_entity(self, user_id: str, name_key: str) -> int:
        """Delete one entity and its attribute history; returns how many entities went."""
        with self._write() as conn:
            row = conn.execute(
                "SELECT id FROM entities WHERE user_id = ? AND name_key = ?", (user_id, name_key)
            ).fetchone()
            if row is None:
                return 0
            conn.execute("DELETE FROM entity_attributes WHERE entity_id = ?", (row[0],))
            conn.execute("DELETE FROM entities WHERE id = ?", (row[0],))
        return 1

    # --- jobs ---------------------------------------------------------------------------

    def enqueue(self, kind: str, user_id: str, thread_key: int | None, payload: dict[str, Any], now: str) -> bool:
        """Journal a job; ``False`` when a job with the same key exists (it is not repeated)."""
        with self._write() as conn:
            return _enqueue(conn, kind, user_id, thread_key, payload, now)

    def claim_job(self, worker: str, lease_seconds: float, kinds: Sequence[str] | None = None) -> JobRow | None:
        """Lease the oldest due job (pending, or running under an expired lease) to ``worker``.

        The lease, not an in-process lock, is what makes this safe for several workers in
        several processes: a worker that dies leaves a lease that runs out.
        """
        now = time.time()
        kind_sql = f" AND kind IN ({','.join('?' * len(kinds))})" if kinds else ""
        with self._write() as conn:
            row = conn.execute(
                f"SELECT {_JOB_COLUMNS} FROM jobs WHERE "
                "((status = 'pending' AND next_run_at <= ?) OR (status = 'running' AND lease_until < ?))"
                f"{kind_sql} ORDER BY id LIMIT 1",
                (now, now, *(kinds or ())),
            ).fetchone()
            if row is None:
                return None
            conn.execute(
                "UPDATE jobs SET status = 'running', attempts = attempts + 1, lease_until = ?, "
                "leased_by = ?, updated_at = ? WHERE id = ?",
                (now + lease_seconds, worker, _iso(now), row[0]),
            )
        job = JobRow(*row)
        return dataclasses.replace(job, status="running", attempts=job.attempts + 1, leased_by=worker)

    def save_job_result(self, job_id: int, worker: str, result: dict[str, Any]) -> None:
        """Keep a job's model answer, so a retry replays it instead of asking again."""
        with self._write() as conn:
            conn.execute(
                "UPDATE jobs SET result = ? WHERE id = ? AND leased_by = ?",
                (json.dumps(result, ensure_ascii=False), job_id, worker),
            )

    def fail_job(self, job_id: int, worker: str, error: str, retry_at: float | None) -> None:
        """Record a failure: back to pending until ``retry_at``, or failed for good (``None``)."""
        with self._write() as conn:
            if retry_at is None:
                conn.execute(
                    "UPDATE jobs SET status = 'failed', last_error = ?, lease_until = NULL, "
                    "updated_at = ? WHERE id = ? AND leased_by = ?",
                    (error, _iso(time.time()), job_id, worker),
                )
            else:
                conn.execute(
                    "UPDATE jobs SET status = 'pending', last_error = ?, next_run_at = ?, "
                    "lease_until = NULL, updated_at = ? WHERE id = ? AND leased_by = ?",
                    (error, retry_at, _iso(time.time()), job_id, worker),
                )

    def finish_job(self, job_id: int, worker: str) -> bool:
        """Mark a job done; ``False`` if the worker lost its lease (another took it over)."""
        with self._write() as conn:
            return _finish(conn, job_id, worker)

    def release_leases(self, workers: Sequence[str]) -> int:
        """Make the jobs leased by dead ``workers`` due now, instead of after their lease."""
        if not workers:
            return 0
        with self._write() as conn:
            return conn.execute(
                f"UPDATE jobs SET lease_until = 0 WHERE status = 'running' AND leased_by IN "
                f"({','.join('?' * len(workers))})",
                tuple(workers),
            ).rowcount

    def running_workers(self) -> list[str]:
        """Workers holding a lease now."""
        with self._read() as conn:
            return [r[0] for r in conn.execute(
                "SELECT DISTINCT leased_by FROM jobs WHERE status = 'running' AND leased_by IS NOT NULL"
            )]

    def job_counts(self) -> dict[str, int]:
        """Jobs per status."""
        with self._read() as conn:
            return dict(conn.execute("SELECT status, COUNT(*) FROM jobs GROUP BY status").fetchall())

    def jobs(self, status: str | None = None, limit: int = 100) -> list[JobRow]:
        """Journal rows, newest first, optionally of one status."""
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {_JOB_COLUMNS} FROM jobs WHERE (? IS NULL OR status = ?) ORDER BY id DESC LIMIT ?",
                (status, status, limit),
            ).fetchall()
        return [JobRow(*r) for r in rows]

    def next_due(self) -> float | None:
        """When the next pending job is due (epoch seconds), ``None`` if none is pending or running."""
        with self._read() as conn:
            row = conn.execute(
                "SELECT MIN(CASE status WHEN 'pending' THEN next_run_at ELSE lease_until END) "
                "FROM jobs WHERE status IN ('pending', 'running')"
            ).fetchone()
        return row[0]

    def complete_extraction(
        self,
        job: JobRow,
        worker: str,
        *,
        user_id: str,
        thread_id: str,
        entities: Sequence[EntityUpdate],
        summary: SummaryUpdate | None,
        extracted_through: int,
        now: str,
    ) -> bool:
        """Commit an extraction job's relational results and mark it done, atomically.

        Returns ``False`` (committing nothing) if the worker lost its lease meanwhile.
        Entity merges read the current profile inside the transaction, so concurrent jobs
        of one user cannot lose each other's attributes.
        """
        with self._write() as conn:
            owner = conn.execute(
                "SELECT leased_by FROM jobs WHERE id = ? AND status = 'running'", (job.id,)
            ).fetchone()
            if owner is None or owner[0] != worker:
                return False
            for update in entities:
                _upsert_entity(conn, user_id, thread_id, update, now)
            if summary is not None and job.thread_key is not None:
                conn.execute(
                    "INSERT INTO summaries (thread_key, user_id, text, tokens, first_seq, last_seq, "
                    "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(thread_key) DO UPDATE SET "
                    "text = excluded.text, tokens = excluded.tokens, last_seq = excluded.last_seq, "
                    "updated_at = excluded.updated_at",
                    (job.thread_key, user_id, summary.text, summary.tokens, summary.first_seq,
                     summary.last_seq, now),
                )
                conn.execute(
                    "UPDATE threads SET summarized_through = MAX(summarized_through, ?) WHERE id = ?",
                    (summary.last_seq, job.thread_key),
                )
            if job.thread_key is not None:
                conn.execute(
                    "UPDATE threads SET extracted_through = MAX(extracted_through, ?) WHERE id = ?",
                    (extracted_through, job.thread_key),
                )
            _finish(conn, job.id, worker)
        return True

    # --- episodes -----------------------------------------------------------------------

    def insert_episode(self, episode: EpisodeRow, job: JobRow | None = None, worker: str = "") -> bool:
        """Store an episode (once per thread and last message); with ``job``, finish it too."""
        with self._write() as conn:
            if job is not None:
                owner = conn.execute(
                    "SELECT leased_by FROM jobs WHERE id = ? AND status = 'running'", (job.id,)
                ).fetchone()
                if owner is None or owner[0] != worker:
                    return False
            conn.execute(
                "INSERT INTO episodes (id, user_id, thread_id, started_at, ended_at, summary, "
                "decisions, outcome, topics, first_seq, last_seq, created_at) VALUES "
                "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(thread_id, last_seq) DO NOTHING",
                (episode.id, episode.user_id, episode.thread_id, episode.started_at,
                 episode.ended_at, episode.summary, json.dumps(episode.decisions, ensure_ascii=False),
                 episode.outcome, json.dumps(episode.topics, ensure_ascii=False),
                 episode.first_seq, episode.last_seq, episode.created_at),
            )
            if job is not None:
                _finish(conn, job.id, worker)
        return True

    def episodes_of(
        self, user_id: str, since: str | None = None, until: str | None = None, ids: Sequence[str] | None = None
    ) -> list[EpisodeRow]:
        """The user's episodes overlapping ``[since, until]`` (ISO times), newest first."""
        sql = f"SELECT {_EPISODE_COLUMNS} FROM episodes WHERE user_id = ?"
        args: list[Any] = [user_id]
        if since is not None:
            sql += " AND ended_at >= ?"
            args.append(since)
        if until is not None:
            sql += " AND started_at <= ?"
            args.append(until)
        if ids is not None:
            sql += f" AND id IN ({','.join('?' * len(ids))})"
            args.extend(ids)
        with self._read() as conn:
            rows = conn.execute(sql + " ORDER BY ended_at DESC", args).fetchall()
        return [_episode(r) for r in rows]

    def all_episodes(self) -> list[EpisodeRow]:
        """Every episode (for reindexing)."""
        with self._read() as conn:
            rows = conn.execute(f"SELECT {_EPISODE_COLUMNS} FROM episodes ORDER BY created_at").fetchall()
        return [_episode(r) for r in rows]

    def has_episodes(self) -> bool:
        """Whether any episode exists."""
        with self._read() as conn:
            return conn.execute("SELECT 1 FROM episodes LIMIT 1").fetchone() is not None

    @staticmethod
    def has_vectors(data_dir: Path) -> bool:
        """Whether an embedded vector collection was ever created under ``data_dir``."""
        return (data_dir / "qdrant").is_dir()

    def last_episode_seq(self, thread_id: str) -> int:
        """The last message seq covered by the thread's episodes (-1 if none)."""
        with self._read() as conn:
            row = conn.execute(
                "SELECT MAX(last_seq) FROM episodes WHERE thread_id = ?", (thread_id,)
            ).fetchone()
        return -1 if row[0] is None else row[0]

    def idle_threads(self, before: str) -> list[ThreadRow]:
        """Threads last updated before ``before`` whose newest messages no episode covers."""
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {', '.join('t.' + c.strip() for c in _THREAD_COLUMNS.split(','))} "
                "FROM threads t WHERE t.updated_at < ? AND t.next_seq > 0 AND "
                "COALESCE((SELECT MAX(last_seq) FROM episodes e WHERE e.thread_id = t.thread_id), -1) "
                "< t.next_seq - 1",
                (before,),
            ).fetchall()
        return [ThreadRow(*r) for r in rows]

    # --- generic store items ------------------------------------------------------------

    def store_put(
        self,
        namespace: Sequence[str],
        key: str,
        value: dict[str, Any] | None,
        *,
        vectors: dict[str, list[float]] | None = None,
        ttl_minutes: float | None = None,
        now: str,
    ) -> None:
        """Insert, replace (keeping ``created_at`` and the item's place) or, with ``value=None``, delete."""
        path = ns_path(namespace)
        with self._write() as conn:
            if value is None:
                row = conn.execute(
                    "SELECT id FROM store_items WHERE ns_path = ? AND key = ?", (path, key)
                ).fetchone()
                if row is not None:
                    conn.execute("DELETE FROM store_items WHERE id = ?", (row[0],))
                    # Items are listed namespace by namespace, in the order the namespaces
                    # got their first item (InMemoryStore's order): if this was the oldest,
                    # the next-oldest takes its id, so the namespace keeps its place.
                    conn.execute(
                        "UPDATE store_items SET id = ? WHERE id = "
                        "(SELECT MIN(id) FROM store_items WHERE ns_path = ?) AND id > ?",
                        (row[0], path, row[0]),
                    )
                return
            expires = None if ttl_minutes is None else time.time() + ttl_minutes * 60
            conn.execute(
                "INSERT INTO store_items (ns_path, namespace, key, value, vectors, created_at, "
                "updated_at, ttl_minutes, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(ns_path, key) DO UPDATE SET value = excluded.value, "
                "vectors = excluded.vectors, updated_at = excluded.updated_at, "
                "ttl_minutes = excluded.ttl_minutes, expires_at = excluded.expires_at",
                (path, json.dumps(list(namespace)), key, json.dumps(value, ensure_ascii=False),
                 None if vectors is None else json.dumps(vectors), now, now, ttl_minutes, expires),
            )

    def store_items(
        self, prefix: Sequence[str], key: str | None = None, *, refresh_ttl: bool = False
    ) -> list[StoreRow]:
        """Live items under a namespace prefix (or one item), in insertion order."""
        now = time.time()
        path = ns_path(prefix)
        sql = (
            "SELECT id, namespace, key, value, vectors, created_at, updated_at FROM store_items "
            "WHERE substr(ns_path, 1, ?) = ? AND (expires_at IS NULL OR expires_at > ?)"
        )
        args: list[Any] = [len(path), path, now]
        if key is not None:
            sql, args = sql + " AND ns_path = ? AND key = ?", [*args, path, key]
        with self._read() as conn:
            rows = conn.execute(sql + " ORDER BY id", args).fetchall()
        if refresh_ttl and rows:
            with self._write() as conn:
                conn.executemany(
                    "UPDATE store_items SET expires_at = ? + ttl_minutes * 60 WHERE id = ? "
                    "AND ttl_minutes IS NOT NULL",
                    [(now, r[0]) for r in rows],
                )
        return [
            StoreRow(tuple(json.loads(r[1])), r[2], json.loads(r[3]),
                     None if r[4] is None else json.loads(r[4]), r[5], r[6])
            for r in rows
        ]

    def store_refresh(self, items: Sequence[tuple[Sequence[str], str]]) -> None:
        """Restart the TTL of these ``(namespace, key)`` items (of those that have one)."""
        if not items:
            return
        now = time.time()
        with self._write() as conn:
            conn.executemany(
                "UPDATE store_items SET expires_at = ? + ttl_minutes * 60 "
                "WHERE ns_path = ? AND key = ? AND ttl_minutes IS NOT NULL",
                [(now, ns_path(namespace), key) for namespace, key in items],
            )

    def store_namespaces(self) -> list[tuple[str, ...]]:
        """Every namespace holding a live item."""
        with self._read() as conn:
            rows = conn.execute(
                "SELECT DISTINCT namespace FROM store_items WHERE expires_at IS NULL OR expires_at > ?",
                (time.time(),),
            ).fetchall()
        return [tuple(json.loads(r[0])) for r in rows]

    def store_sweep(self) -> int:
        """Delete expired items; returns how many."""
        with self._write() as conn:
            return conn.execute(
                "DELETE FROM store_items WHERE expires_at IS NOT NULL AND expires_at <= ?", (time.time(),)
            ).rowcount

    def store_forget_user(self, user_id: str) -> int:
        """Delete generic items whose namespace starts with the user, or has it second."""
        with self._write() as conn:
            ids = [
                r[0]
                for r in conn.execute("SELECT id, namespace FROM store_items").fetchall()
                if _names_user(r[1], user_id)
            ]
            for chunk in _chunks(ids, 500):
                conn.execute(f"DELETE FROM store_items WHERE id IN ({','.join('?' * len(chunk))})", chunk)
        return len(ids)

    # --- checkpoints ----------------------------------------------------------------------

    def checkpoint_users(self, thread_id: str) -> set[str]:
        """The ``user_id`` values the thread's checkpoint metadata names (none if untagged)."""
        with self._read() as conn:
            tables = _table_names(conn)
            if "checkpoints" not in tables:
                return set()
            rows = conn.execute(
                "SELECT DISTINCT json_extract(CAST(metadata AS TEXT), '$.user_id') FROM checkpoints "
                "WHERE thread_id = ? AND json_valid(CAST(metadata AS TEXT))",
                (thread_id,),
            ).fetchall()
        return {r[0] for r in rows if isinstance(r[0], str)}

    def forget_checkpoints(self, thread_ids: Sequence[str], user_id: str | None = None) -> int:
        """Delete LangGraph checkpoints (and pending writes) of the threads; returns how many.

        With ``user_id``, also the threads whose checkpoint metadata names that user: a graph
        run through the checkpointer alone never created a row in ``threads``. The tables are
        langgraph-checkpoint-sqlite's, created only once a checkpointer was used.
        """
        with self._write() as conn:
            tables = _table_names(conn)
            if "checkpoints" not in tables:
                return 0
            ids = set(thread_ids)
            if user_id is not None:
                ids.update(
                    r[0]
                    for r in conn.execute(
                        "SELECT DISTINCT thread_id FROM checkpoints WHERE json_valid(CAST(metadata AS TEXT)) "
                        "AND json_extract(CAST(metadata AS TEXT), '$.user_id') = ?",
                        (user_id,),
                    )
                )
            deleted = 0
            for chunk in _chunks(sorted(ids), 500):
                marks = ",".join("?" * len(chunk))
                deleted += conn.execute(f"DELETE FROM checkpoints WHERE thread_id IN ({marks})", chunk).rowcount
                if "writes" in tables:
                    conn.execute(f"DELETE FROM writes WHERE thread_id IN ({marks})", chunk)
        return deleted

    # --- export/import ------------------------------------------------------------------

    def export_user(self, user_id: str) -> dict[str, list[dict[str, Any]]]:
        """Every relational row of the user as plain data, read in one snapshot.

        Keys: ``threads`` (with their watermarks), ``messages`` (their serialised form),
        ``summaries``, ``entities`` (each with its whole attribute history), ``episodes``
        and ``store_items`` (live generic items whose namespace starts with the user or has
        it second; ``indexed`` says whether the item had vectors, which are not exported).
        Jobs are not: they are work in progress, journaled again on import.
        """
        with self._read() as conn:
            # One read transaction: a writer in another process cannot tear the export.
            conn.execute("BEGIN")
            try:
                return self._export_rows(conn, user_id)
            finally:
                conn.execute("ROLLBACK")

    def _export_rows(self, conn: sqlite3.Connection, user_id: str) -> dict[str, list[dict[str, Any]]]:
        threads = conn.execute(
            "SELECT id, thread_id, created_at, updated_at, next_seq, evicted_through, "
            "summarized_through, extracted_through FROM threads WHERE user_id = ? ORDER BY id",
            (user_id,),
        ).fetchall()
        names = {r[0]: r[1] for r in threads}
        out: dict[str, list[dict[str, Any]]] = {
            "threads": [
                dict(zip(("thread_id", "created_at", "updated_at", "next_seq", "evicted_through",
                          "summarized_through", "extracted_through"), r[1:]))
                for r in threads
            ]
        }
        out["messages"] = [
            {"thread_id": names[key], "seq": seq, "message_id": mid, "created_at": created,
             "message": json.loads(data)}
            for key, seq, mid, created, data in conn.execute(
                "SELECT thread_key, seq, message_id, created_at, data FROM messages "
                "WHERE user_id = ? ORDER BY thread_key, seq",
                (user_id,),
            )
            if key in names
        ]
        out["summaries"] = [
            {"thread_id": names[key], "text": text, "tokens": tokens, "first_seq": first,
             "last_seq": last, "updated_at": updated}
            for key, text, tokens, first, last, updated in conn.execute(
                "SELECT thread_key, text, tokens, first_seq, last_seq, updated_at FROM summaries "
                "WHERE user_id = ? ORDER BY thread_key",
                (user_id,),
            )
            if key in names
        ]
        sources = dict(conn.execute("SELECT id, source FROM entities WHERE user_id = ? ORDER BY id", (user_id,)).fetchall())
        ids = list(sources)
        out["entities"] = [
            {"name": e.name, "type": e.type, "source": sources.get(e.id), "created_at": e.created_at,
             "updated_at": e.updated_at, "attributes": [dataclasses.asdict(a) for a in e.attributes]}
            for e in _entity_rows(conn, ids, history=True)
        ]
        out["episodes"] = [
            {k: v for k, v in dataclasses.asdict(_episode(r)).items() if k != "user_id"}
            for r in conn.execute(
                f"SELECT {_EPISODE_COLUMNS} FROM episodes WHERE user_id = ? ORDER BY started_at, id",
                (user_id,),
            )
        ]
        out["store_items"] = [
            {"namespace": json.loads(ns), "key": key, "value": json.loads(value),
             "indexed": vectors is not None, "created_at": created, "updated_at": updated,
             "ttl_minutes": ttl, "expires_at": expires}
            for ns, key, value, vectors, created, updated, ttl, expires in conn.execute(
                "SELECT namespace, key, value, vectors, created_at, updated_at, ttl_minutes, "
                "expires_at FROM store_items WHERE expires_at IS NULL OR expires_at > ? ORDER BY id",
                (time.time(),),
            )
            if user_id in json.loads(ns)[:2]
        ]
        return out

    def import_user(
        self, user_id: str, data: dict[str, Sequence[dict[str, Any]]], *, counter: str, now: str
    ) -> dict[str, int]:
        """Restore rows of the shape :meth:`export_user` returns, in one transaction.

        Messages carry ``data`` (their serialised text) and ``tokens`` counted by
        ``counter``; store items carry ``vectors`` (or ``None``). Refused, writing nothing,
        when the user already has data here or a thread id or store item is taken: an import
        restores, it never merges. A thread whose extraction or summary was not done at
        export gets its job journaled again.
        """
        with self._write() as conn:
            has_rows = conn.execute(
                "SELECT 1 FROM threads WHERE user_id = ? UNION ALL SELECT 1 FROM entities WHERE user_id = ? "
                "UNION ALL SELECT 1 FROM episodes WHERE user_id = ? LIMIT 1",
                (user_id, user_id, user_id),
            ).fetchone()
            if has_rows or any(
                _names_user(r[0], user_id) for r in conn.execute("SELECT namespace FROM store_items")
            ):
                raise InvalidInputError(
                    f"user {user_id!r} already has data in {self.data_dir}; an import restores into "
                    "a memory without them: forget the user first, or import into another data dir"
                )
            for t in data.get("threads", ()):
                owner = conn.execute("SELECT user_id FROM threads WHERE thread_id = ?", (t["thread_id"],)).fetchone()
                if owner is not None:
                    raise ThreadOwnershipError(
                        f"thread {t['thread_id']!r} already exists in {self.data_dir} (user {owner[0]!r}); "
                        "thread ids are global: import into another data dir"
                    )
            for item in data.get("store_items", ()):
                if conn.execute(
                    "SELECT 1 FROM store_items WHERE ns_path = ? AND key = ?", (ns_path(item["namespace"]), item["key"])
                ).fetchone():
                    raise InvalidInputError(
                        f"store item {tuple(item['namespace'])!r}/{item['key']!r} already exists in "
                        f"{self.data_dir}; import into another data dir"
                    )
            keys: dict[str, int] = {}
            jobs = 0
            for t in data.get("threads", ()):
                keys[t["thread_id"]] = conn.execute(
                    "INSERT INTO threads (thread_id, user_id, created_at, updated_at, next_seq, generation, "
                    "evicted_through, summarized_through, extracted_through) VALUES (?, ?, ?, ?, ?, 0, ?, ?, ?)",
                    (t["thread_id"], user_id, t["created_at"], t["updated_at"], t["next_seq"],
                     t["evicted_through"], t["summarized_through"], t["extracted_through"]),
                ).lastrowid
            conn.executemany(
                "INSERT INTO messages (thread_key, user_id, seq, message_id, type, tool_calls, data, tokens, "
                "counter, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(keys[m["thread_id"]], user_id, m["seq"], m["message_id"], m["type"], m["tool_calls"],
                  m["data"], m["tokens"], counter, m["created_at"]) for m in data.get("messages", ())],
            )
            conn.executemany(
                "INSERT INTO summaries (thread_key, user_id, text, tokens, first_seq, last_seq, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(keys[s["thread_id"]], user_id, s["text"], s["tokens"], s["first_seq"], s["last_seq"],
                  s["updated_at"]) for s in data.get("summaries", ())],
            )
            for e in data.get("entities", ()):
                entity_id = conn.execute(
                    "INSERT INTO entities (user_id, name, name_key, type, search_text, source, created_at, "
                    "updated_at) VALUES (?, ?, ?, ?, '', ?, ?, ?)",
                    (user_id, e["name"], e["name_key"], e["type"], e.get("source"), e["created_at"], e["updated_at"]),
                ).lastrowid
                conn.executemany(
                    "INSERT INTO entity_attributes (entity_id, key, value, learned_at, source, source_message, "
                    "superseded_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [(entity_id, a["key"], a["value"], a["learned_at"], a.get("source"), a.get("source_message"),
                      a.get("superseded_at")) for a in e.get("attributes", ())],
                )
                _refresh_search_text(conn, entity_id)
            conn.executemany(
                f"INSERT INTO episodes ({_EPISODE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(ep["id"], user_id, ep["thread_id"], ep["started_at"], ep["ended_at"], ep["summary"],
                  json.dumps(ep["decisions"], ensure_ascii=False), ep["outcome"],
                  json.dumps(ep["topics"], ensure_ascii=False), ep["first_seq"], ep["last_seq"],
                  ep["created_at"]) for ep in data.get("episodes", ())],
            )
            conn.executemany(
                "INSERT INTO store_items (ns_path, namespace, key, value, vectors, created_at, updated_at, "
                "ttl_minutes, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(ns_path(i["namespace"]), json.dumps(list(i["namespace"])), i["key"],
                  json.dumps(i["value"], ensure_ascii=False),
                  None if i.get("vectors") is None else json.dumps(i["vectors"]),
                  i["created_at"], i["updated_at"], i.get("ttl_minutes"), i.get("expires_at"))
                 for i in data.get("store_items", ())],
            )
            for t in data.get("threads", ()):
                last = t["next_seq"] - 1
                if last >= 0 and (t["extracted_through"] < last or t["evicted_through"] > t["summarized_through"]):
                    jobs += _enqueue(conn, "extract", user_id, keys[t["thread_id"]], {"through_seq": last}, now)
        return {
            "threads": len(keys),
            **{k: len(data.get(k, ())) for k in ("messages", "summaries", "entities", "episodes", "store_items")},
            "jobs": jobs,
        }

    # --- stats --------------------------------------------------------------------------

    def counts(self) -> dict[str, int]:
        """Row counts of the main tables and the file's size in bytes."""
        with self._read() as conn:
            users = conn.execute("SELECT COUNT(DISTINCT user_id) FROM threads").fetchone()[0]
            threads = conn.execute("SELECT COUNT(*) FROM threads").fetchone()[0]
            messages = conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
            entities = conn.execute("SELECT COUNT(*) FROM entities").fetchone()[0]
            episodes = conn.execute("SELECT COUNT(*) FROM episodes").fetchone()[0]
        size = sum(
            p.stat().st_size
            for p in (self.path, self.path.with_name(DB_FILENAME + "-wal"))
            if p.exists()
        )
        return {
            "users": users, "threads": threads, "messages": messages, "entities": entities,
            "episodes": episodes, "db_bytes": size,
        }


# --- helpers ----------------------------------------------------------------------------


def _table_names(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _names_user(namespace_json: str, user_id: str) -> bool:
    """Whether a store namespace belongs to the user: the user first, or second (after a
    kind such as ``"memories"`` or ``"profiles"``)."""
    return user_id in json.loads(namespace_json)[:2]


def _prepare_dir(data_dir: Path) -> Path:
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DataDirError(
            f"cannot create the data directory {data_dir}: {exc.strerror or exc}; pass a "
            "data_dir you can write to"
        ) from exc
    if not data_dir.is_dir():
        raise DataDirError(f"{data_dir} is not a directory; pass a directory as data_dir")
    probe = data_dir / f".write-probe-{os.getpid()}-{threading.get_ident()}"
    try:
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise DataDirError(
            f"the data directory {data_dir} is not writable ({exc.strerror or exc}); pass a "
            "data_dir you can write to"
        ) from exc
    return data_dir.resolve()


def _check_header(path: Path) -> None:
    """A non-empty file without SQLite's header is corrupt: refuse it before SQLite writes."""
    if path.is_dir():
        raise DataDirError(f"{path} is a directory; remove it or choose another data_dir")
    try:
        with open(path, "rb") as f:
            head = f.read(len(_SQLITE_HEADER))
    except FileNotFoundError:
        return
    except OSError as exc:
        raise DataDirError(f"cannot read {path}: {exc}") from exc
    if head and head != _SQLITE_HEADER:
        raise CorruptDatabaseError(
            f"{path} is not a SQLite database (its first bytes are {head[:8]!r}); it was left "
            "untouched. Restore it from a backup, or move it aside to start a new memory."
        )


def _corrupt_message(path: Path, exc: Exception) -> str:
    return (
        f"{path} is corrupt ({exc}); it was left untouched. Restore it from a backup, or move "
        "it aside to start a new memory."
    )


def _existing_ids(conn: sqlite3.Connection, thread_key: int, ids: list[str]) -> set[str]:
    found: set[str] = set()
    for chunk in _chunks(ids, 500):
        marks = ",".join("?" * len(chunk))
        found.update(
            r[0]
            for r in conn.execute(
                f"SELECT message_id FROM messages WHERE thread_key = ? AND message_id IN ({marks})",
                (thread_key, *chunk),
            )
        )
    return found


def _chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _iso(epoch: float) -> str:
    from datetime import datetime, timezone

    return datetime.fromtimestamp(epoch, timezone.utc).isoformat()


def _enqueue(
    conn: sqlite3.Connection,
    kind: str,
    user_id: str,
    thread_key: int | None,
    payload: dict[str, Any],
    now: str,
) -> bool:
    # The key makes a job idempotent: the same work journaled twice is one row.
    key = f"{kind}:{thread_key}:{json.dumps(payload, sort_keys=True)}"
    return (
        conn.execute(
            "INSERT INTO jobs (key, kind, user_id, thread_key, payload, status, attempts, "
            "next_run_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?) "
            "ON CONFLICT(key) DO NOTHING",
            (key, kind, user_id, thread_key, json.dumps(payload), time.time(), now, now),
        ).rowcount
        == 1
    )


def _finish(conn: sqlite3.Connection, job_id: int, worker: str) -> bool:
    return (
        conn.execute(
            "UPDATE jobs SET status = 'done', lease_until = NULL, last_error = NULL, "
            "updated_at = ? WHERE id = ? AND leased_by = ? AND status = 'running'",
            (_iso(time.time()), job_id, worker),
        ).rowcount
        == 1
    )


def _upsert_entity(
    conn: sqlite3.Connection, user_id: str, thread_id: str, update: EntityUpdate, now: str
) -> None:
    row = conn.execute(
        "SELECT id, type FROM entities WHERE user_id = ? AND name_key = ?", (user_id, update.name_key)
    ).fetchone()
    if row is None:
        entity_id = conn.execute(
            "INSERT INTO entities (user_id, name, name_key, type, search_text, source, created_at, "
            "updated_at) VALUES (?, ?, ?, ?, '', ?, ?, ?)",
            (user_id, update.name, update.name_key, update.type, thread_id, now, now),
        ).lastrowid
    else:
        entity_id = row[0]
        # A vague type never overwrites a specific one learned before.
        kind = row[1] if update.type in ("", "other", "topic") and row[1] not in ("", "other") else update.type
        conn.execute(
            "UPDATE entities SET name = ?, type = ?, updated_at = ? WHERE id = ?",
            (update.name, kind, now, entity_id),
        )
    current = dict(
        conn.execute(
            "SELECT key, value FROM entity_attributes WHERE entity_id = ? AND superseded_at IS NULL",
            (entity_id,),
        ).fetchall()
    )
    for key, value in update.attributes.items():
        old = current.get(key)
        if old is not None and old.casefold() == value.casefold():
            continue  # learned again, not changed: history records changes only
        if old is not None:
            conn.execute(
                "UPDATE entity_attributes SET superseded_at = ? WHERE entity_id = ? AND key = ? "
                "AND superseded_at IS NULL",
                (now, entity_id, key),
            )
        conn.execute(
            "INSERT INTO entity_attributes (entity_id, key, value, learned_at, source, "
            "source_message) VALUES (?, ?, ?, ?, ?, ?)",
            (entity_id, key, value, now, thread_id, update.source_message),
        )
    _refresh_search_text(conn, entity_id)


def _refresh_search_text(conn: sqlite3.Connection, entity_id: int) -> None:
    """Index an entity's type and current attributes beside its name."""
    row = conn.execute("SELECT type FROM entities WHERE id = ?", (entity_id,)).fetchone()
    if row is None:
        return
    pairs = conn.execute(
        "SELECT key, value FROM entity_attributes WHERE entity_id = ? AND superseded_at IS NULL "
        "ORDER BY id",
        (entity_id,),
    ).fetchall()
    text = " ".join([row[0], *(f"{k} {v}" for k, v in pairs)])
    conn.execute("UPDATE entities SET search_text = ? WHERE id = ? AND search_text != ?", (text, entity_id, text))


def _entity_rows(conn: sqlite3.Connection, ids: list[int], *, history: bool) -> list[EntityRow]:
    if not ids:
        return []
    marks = ",".join("?" * len(ids))
    entities = {
        r[0]: r
        for r in conn.execute(
            f"SELECT id, user_id, name, name_key, type, created_at, updated_at FROM entities "
            f"WHERE id IN ({marks})",
            ids,
        )
    }
    attrs: dict[int, list[AttributeRow]] = {i: [] for i in ids}
    current = "" if history else " AND superseded_at IS NULL"
    for entity_id, *fields in conn.execute(
        f"SELECT entity_id, key, value, learned_at, source, source_message, superseded_at "
        f"FROM entity_attributes "
        f"WHERE entity_id IN ({marks}){current} ORDER BY id",
        ids,
    ):
        attrs[entity_id].append(AttributeRow(*fields))
    return [EntityRow(*entities[i], attributes=tuple(attrs[i])) for i in ids if i in entities]


def _episode(row: tuple[Any, ...]) -> EpisodeRow:
    values = list(row)
    values[6] = json.loads(values[6])
    values[8] = json.loads(values[8])
    return EpisodeRow(*values)
