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
import json
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


#: ``MIGRATIONS[n]`` brings a database from schema version ``n - 1`` to ``n``. Each runs in
#: one transaction with the version bump, so a crash leaves the old version intact.
MIGRATIONS: dict[int, Callable[[sqlite_utils.Database], None]] = {1: _migrate_to_1}


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


_THREAD_COLUMNS = (
    "id, thread_id, user_id, created_at, updated_at, next_seq, generation, evicted_through"
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
    ) -> AppendResult:
        """Append ``messages`` to the thread in one transaction, creating it if needed.

        ``counter`` names the token counter of the counts, so a later change of counter is
        noticed and the counts redone.
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
        updated = ThreadRow(
            thread.key,
            thread.thread_id,
            thread.user_id,
            thread.created_at,
            now,
            seq,
            thread.generation,
            thread.evicted_through,
        )
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

    # --- forgetting ---------------------------------------------------------------------

    def forget_thread(self, thread_id: str, user_id: str | None = None) -> dict[str, int]:
        """Delete a thread and its messages; with ``user_id``, only if it is that user's."""
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
            deleted = conn.execute("DELETE FROM messages WHERE thread_key = ?", (row[0],)).rowcount
            conn.execute("DELETE FROM threads WHERE id = ?", (row[0],))
        return {"threads": 1, "messages": deleted}

    def forget_user(self, user_id: str) -> dict[str, int]:
        """Delete every thread and message of the user."""
        with self._write() as conn:
            messages = conn.execute("DELETE FROM messages WHERE user_id = ?", (user_id,)).rowcount
            threads = conn.execute("DELETE FROM threads WHERE user_id = ?", (user_id,)).rowcount
        return {"threads": threads, "messages": messages}

    # --- stats --------------------------------------------------------------------------

    def counts(self) -> dict[str, int]:
        """Row counts of the main tables and the file's size in bytes."""
        with self._read() as conn:
            users = conn.execute("SELECT COUNT(DISTINCT user_id) FROM threads").fetchone()[0]
            threads = conn.execute("SELECT COUNT(*) FROM threads").fetchone()[0]
            messages = conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
        size = sum(
            p.stat().st_size
            for p in (self.path, self.path.with_name(DB_FILENAME + "-wal"))
            if p.exists()
        )
        return {"users": users, "threads": threads, "messages": messages, "db_bytes": size}


# --- helpers ----------------------------------------------------------------------------


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
