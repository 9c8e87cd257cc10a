"""The embedded database: one SQLite file, ``memory.db``, in the data directory.

Opened in WAL mode with a busy timeout, so several threads and processes share it; writes
take the write lock up front (``BEGIN IMMEDIATE``), so concurrent appends serialise instead
of failing. ``synchronous = FULL``: a committed message survives power loss.
``secure_delete = ON``, set here rather than left to the build's default: a deleted row's
bytes are overwritten, and :meth:`SQLiteDatabase.scrub` truncates the write-ahead log after a
forget, so no forgotten text stays in a file. A file that is not ours, or is corrupt, is
refused and never written to.

Truncating the log must wait until no reader uses it: a read transaction open in this
process (a checkpointer's ``list()`` iterator not run to its end) or in another keeps the
frames that still hold the deleted rows. The scrub waits for them ``reader_wait_seconds``
(not the 30 s busy timeout: a forget must not hang on a reader) and says whether it got
there. The forget's transaction journals the scrub in ``meta`` (:data:`SCRUB_KEY`), and only
a scrub that got there clears it, so one left to do — held off, or cut short by a crash —
is retried (:meth:`SQLiteDatabase.finish_scrub`) by the upkeep, at close, on the next open.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import (
    CorruptDatabaseError,
    DataDirError,
    ForeignDatabaseError,
    MemoryClosedError,
    SchemaVersionError,
    StorageError,
)
from .database import Database, Dialect, Tx, WriteLockBusy
from .text_search import FTS5
from .schema import MIGRATIONS

if TYPE_CHECKING:
    import sqlite_utils

DB_FILENAME = "memory.db"
#: ``PRAGMA application_id`` of our files ("TMEM"): how a foreign SQLite file is told apart.
APPLICATION_ID = 0x544D454D
BUSY_TIMEOUT_S = 30.0
#: How long a forget's scrub (and a close) waits for readers of the write-ahead log by
#: default (``MemoryConfig.scrub_wait_seconds``). Writers wait meanwhile: keep it short.
READER_WAIT_S = 2.0
#: The ``meta`` row of a scrub journaled by a forget and not done yet (its value: a token
#: per forget, so that a scrub clears only what it covered).
SCRUB_KEY = "scrub_pending"
_SQLITE_HEADER = b"SQLite format 3\x00"
#: SQLite's smallest page: a database file is at least this long.
_MIN_PAGE_BYTES = 512


#: How SQLite spells what SQL does not standardise.
SQLITE = Dialect(
    name="sqlite", greatest="MAX", least="MIN", skip_locked="", placeholder="?", for_update="",
    advisory_lock="", tables="SELECT name FROM sqlite_master WHERE type = 'table'", lock_table="",
    sync_identity="", text_search=FTS5,
)


class SQLiteDatabase(Database):
    """``memory.db`` in ``data_dir``: two connections shared by the process's threads, one
    that writes and one that only reads.

    Reads have a connection of their own so that no read waits for a write: a thread that
    waits for SQLite's write lock (held by another process: an import, another worker)
    holds the writing connection meanwhile, and with one connection every read of the
    process (a turn's context) waited with it. In WAL mode the reading connection sees
    every commit and never waits for a writer; a thread inside its own write reads on the
    writing connection, and so sees what it has written.

    Args:
        data_dir: the directory (created if missing; must be writable).
        migrations: schema steps, ``{version: step}`` (tests add steps).
        reader_wait_seconds: how long a scrub, or a close, waits for readers of the
            write-ahead log (see the module doc).
    """

    dialect = SQLITE

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        *,
        migrations: dict[int, Callable[[sqlite_utils.Database], None]] | None = None,
        reader_wait_seconds: float = READER_WAIT_S,
    ) -> None:
        self.reader_wait_seconds = reader_wait_seconds
        self.data_dir = prepare_dir(Path(data_dir))
        self.path = self.data_dir / DB_FILENAME
        self.location = str(self.path)
        self._migrations = dict(MIGRATIONS if migrations is None else migrations)
        self.schema_version = max(self._migrations)
        _check_header(self.path)
        self._lock = threading.RLock()
        #: The thread inside a write, if any (its reads go to the writing connection).
        self._writer: int | None = None
        self._read_lock = threading.RLock()
        self._reader: sqlite3.Connection | None = None
        self._created = False
        try:
            conn = sqlite3.connect(
                self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise DataDirError(
                f"cannot open {self.path}: {exc}; check that the data directory is writable"
            ) from exc
        self._conn: sqlite3.Connection | None = conn
        # Imported here, not at module level: sqlite-utils loads numpy (and pandas when
        # installed), which `import langchain_tiered_memory` should not pay for.
        import sqlite_utils

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
            conn.execute("PRAGMA synchronous = FULL")
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("PRAGMA secure_delete = ON")
            self._migrate()
            self._reader = sqlite3.connect(
                self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )
            # A write slipped into read() would skip the write lock and durability: refused.
            self._reader.execute("PRAGMA query_only = ON")
        except BaseException:
            conn.close()
            self._conn = None
            if self._reader is not None:
                self._reader.close()
                self._reader = None
            raise

    @property
    def is_new(self) -> bool:
        """Whether this open created the schema in an empty (or missing) file."""
        return self._created

    # --- opening ------------------------------------------------------------------------

    def _identify(self) -> None:
        """Refuse a file that is not ours before anything is written to it."""
        conn = self._connection()
        try:
            app_id = conn.execute("PRAGMA application_id").fetchone()[0]
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master")]
        except sqlite3.DatabaseError as exc:
            if "not a database" in str(exc):
                # SQLite refused the file, so no connection of this process holds a lock
                # on it: reading its first bytes (open(), see _check_header) is safe now.
                raise CorruptDatabaseError(_not_sqlite(self.path, _first_bytes(self.path))) from exc
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
        with self.write() as tx:
            # Read inside the write lock: two processes opening a new file at once must not
            # both run the same migration.
            version = tx.scalar("PRAGMA user_version")
            if version > self.schema_version:
                raise SchemaVersionError(
                    f"{self.path} was upgraded to schema version {version} by a newer "
                    "langchain-tiered-memory; upgrade the package"
                )
            if version == self.schema_version:
                return
            if version == 0:
                self._created = True
                tx.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            for target in range(version + 1, self.schema_version + 1):
                self._migrations[target](self.db)
                tx.execute(f"PRAGMA user_version = {target}")
            self.db.table("meta").upsert(
                {"key": "schema_version", "value": str(self.schema_version)}, pk="key"
            )

    # --- transactions -------------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise MemoryClosedError("this memory is closed; create a new TieredMemory")
        return self._conn

    def _reading(self) -> sqlite3.Connection:
        if self._reader is None:
            raise MemoryClosedError("this memory is closed; create a new TieredMemory")
        return self._reader

    @contextlib.contextmanager
    def read(self, *, snapshot: bool = False) -> Iterator[Tx]:
        """Statements that only read. Each sees the latest commit (SQLite's autocommit: no
        transaction to begin and end on the hot path); ``snapshot=True`` makes them all see
        one consistent state (an export)."""
        if self._writer == threading.get_ident():
            # Inside this thread's write: read what it wrote, on its connection.
            with self._lock, self._errors():
                yield Tx(self._connection(), self.dialect)
            return
        with self._read_lock, self._errors():
            conn = self._reading()
            if not snapshot or conn.in_transaction:
                yield Tx(conn, self.dialect)
                return
            conn.execute("BEGIN")
            try:
                yield Tx(conn, self.dialect)
            finally:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")

    @contextlib.contextmanager
    def write(self, *, durable: bool = True, wait: bool = True) -> Iterator[Tx]:
        """One write transaction holding SQLite's write lock from its first statement
        (``wait=False``: :class:`WriteLockBusy` at once while another connection holds it)."""
        with self._lock, self._errors():
            conn = self._connection()
            if conn.in_transaction:
                raise StorageError("a write transaction was opened inside another; this is a bug")
            if not durable:
                # WAL with NORMAL: still atomic and consistent, only the fsync is skipped.
                conn.execute("PRAGMA synchronous = NORMAL")
            if not wait:
                # The writing connection is the process's: a thread waiting here holds up
                # every other thread's writes.
                conn.execute("PRAGMA busy_timeout = 0")
            self._writer = threading.get_ident()
            try:
                try:
                    conn.execute("BEGIN IMMEDIATE")
                except sqlite3.OperationalError as exc:
                    if wait or not any(w in str(exc).lower() for w in ("locked", "busy")):
                        raise
                    raise WriteLockBusy(f"{self.path} is being written by another connection") from exc
                try:
                    yield Tx(conn, self.dialect)
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
            finally:
                self._writer = None
                if not durable:
                    conn.execute("PRAGMA synchronous = FULL")
                if not wait:
                    conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")

    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.DatabaseError as exc:
            raise storage_error(self.path, exc) from exc

    # --- scrubbing after a forget (see the module doc) ------------------------------------

    def journal_scrub(self, tx: Tx) -> None:
        """In a forget's transaction: the files are to be scrubbed (cleared once they are)."""
        tx.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (SCRUB_KEY, uuid.uuid4().hex),
        )

    def scrub(self) -> bool:
        """Merge the entity full-text index (its old segments go, zeroed by secure_delete)
        and truncate the write-ahead log, whose old frames may still hold deleted rows;
        ``False`` if readers held the log for ``reader_wait_seconds`` (it stays journaled)."""
        with self.write() as tx:
            tx.dialect.text_search.optimize(tx)
        return self._finish_scrub(self.reader_wait_seconds)

    def finish_scrub(self, wait_seconds: float | None = None) -> bool | None:
        """Retry a journaled scrub: ``None`` if none is left, else whether it is done now."""
        with self.read() as tx:
            if tx.scalar("SELECT value FROM meta WHERE key = ?", (SCRUB_KEY,)) is None:
                return None
        return self._finish_scrub(self.reader_wait_seconds if wait_seconds is None else wait_seconds)

    def _finish_scrub(self, wait_seconds: float) -> bool:
        with self.read() as tx:
            token = tx.scalar("SELECT value FROM meta WHERE key = ?", (SCRUB_KEY,))
        if not self._truncate_log(wait_seconds):
            return False
        if token is not None:
            # Cleared only if no forget journaled another scrub since this one read it.
            with self.write() as tx:
                tx.execute("DELETE FROM meta WHERE key = ? AND value = ?", (SCRUB_KEY, token))
            # The clearing's frame holds no forgotten byte; leave the log empty all the same.
            self._truncate_log(0.0)
        return True

    def _truncate_log(self, wait_seconds: float) -> bool:
        """Checkpoint the write-ahead log into the file and truncate it, waiting at most
        ``wait_seconds`` for its readers; whether it got there."""
        self._connection()
        # A connection of its own, with the wait as its busy timeout: the shared one stays
        # free for the process's other threads meanwhile, and keeps its 30 s for writes.
        try:
            conn = sqlite3.connect(self.path, timeout=wait_seconds, isolation_level=None)
        except sqlite3.DatabaseError as exc:
            raise storage_error(self.path, exc) from exc
        try:
            busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc).lower() or "busy" in str(exc).lower():
                return False
            raise storage_error(self.path, exc) from exc
        except sqlite3.DatabaseError as exc:
            raise storage_error(self.path, exc) from exc
        finally:
            conn.close()
        return not busy

    # --- connections for others ---------------------------------------------------------

    def connect(self) -> sqlite3.Connection:
        """A new connection to the same file, for a component that manages its own
        transactions (LangGraph's SQLite checkpointer). WAL lets it work beside ours."""
        self._connection()
        conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, check_same_thread=False)
        _tune(conn)
        return conn

    async def aconnect(self) -> Any:
        """An ``aiosqlite`` connection to the same file, for the async checkpointer."""
        import aiosqlite

        self._connection()
        conn = await aiosqlite.connect(self.path, timeout=BUSY_TIMEOUT_S)
        await conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        await conn.execute("PRAGMA synchronous = FULL")
        await conn.execute("PRAGMA secure_delete = ON")
        return conn

    def close(self) -> None:
        """Close the connections, truncating the log if its readers let it within
        ``reader_wait_seconds`` (a journaled scrub not done by then sets
        :attr:`scrub_pending_at_close`; the next open retries it). Safe twice."""
        # The reading lock first, as a thread that reads and then writes takes them.
        with self._read_lock, self._lock:
            if self._conn is not None:
                with contextlib.suppress(sqlite3.Error, StorageError):
                    # Bounded like a scrub: a reader elsewhere must not hold a close for 30 s.
                    pending = self.finish_scrub()
                    self.scrub_pending_at_close = pending is False
                    if pending is None:
                        self._truncate_log(self.reader_wait_seconds)
            for conn in (self._reader, self._conn):
                if conn is not None:
                    conn.close()
            self._reader = self._conn = None

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._conn is None

    def size_bytes(self) -> int:
        """The file's size, its write-ahead log included."""
        return sum(
            p.stat().st_size
            for p in (self.path, self.path.with_name(DB_FILENAME + "-wal"))
            if p.exists()
        )


def _tune(conn: sqlite3.Connection) -> None:
    conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
    conn.execute("PRAGMA synchronous = FULL")
    conn.execute("PRAGMA secure_delete = ON")


def storage_error(path: Path, exc: sqlite3.DatabaseError) -> StorageError:
    """Our error for a SQLite failure on ``path``, saying what to do."""
    text = str(exc).lower()
    if "malformed" in text or "not a database" in text:
        return CorruptDatabaseError(_corrupt_message(path, exc))
    if "readonly" in text or "read-only" in text or "unable to open" in text:
        return DataDirError(
            f"cannot write {path}: {exc}; check the data directory's permissions and free space"
        )
    if "locked" in text or "busy" in text:
        return StorageError(
            f"{path} stayed locked for {BUSY_TIMEOUT_S:.0f} s by another connection; retry, "
            "or look for a process holding a long transaction"
        )
    if "disk" in text and "full" in text:
        return StorageError(f"the disk holding {path} is full: {exc}")
    return StorageError(f"database error on {path}: {exc}")


def prepare_dir(data_dir: Path) -> Path:
    """Create ``data_dir`` if needed and prove it writable; its resolved path."""
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
    """A non-empty file without SQLite's header is corrupt: refuse it before SQLite writes.

    Only a file smaller than a page is read here: SQLite takes some of those (one byte) for
    an empty database and would write over them, and refuses every larger one itself
    (:meth:`SQLiteDatabase._identify`). A larger file may be open in this process already
    (another memory on the directory, a checkpointer's connection), and closing any
    descriptor of it drops every POSIX lock the process holds on it, SQLite's included: a
    process closing the file last elsewhere would then delete the write-ahead log under the
    open connections. SQLite's own descriptors are closed only once none of its locks is held.
    """
    if path.is_dir():
        raise DataDirError(f"{path} is a directory; remove it or choose another data_dir")
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return
    except OSError as exc:
        raise DataDirError(f"cannot read {path}: {exc}") from exc
    if 0 < size < _MIN_PAGE_BYTES:
        head = _first_bytes(path)
        if head != _SQLITE_HEADER:
            raise CorruptDatabaseError(_not_sqlite(path, head))


def _first_bytes(path: Path) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(len(_SQLITE_HEADER))
    except OSError as exc:
        raise DataDirError(f"cannot read {path}: {exc}") from exc


def _not_sqlite(path: Path, head: bytes) -> str:
    return (
        f"{path} is not a SQLite database (its first bytes are {head[:8]!r}); it was left "
        "untouched. Restore it from a backup, or move it aside to start a new memory."
    )


def _corrupt_message(path: Path, exc: Exception) -> str:
    return (
        f"{path} is corrupt ({exc}); it was left untouched. Restore it from a backup, or move "
        "it aside to start a new memory."
    )
