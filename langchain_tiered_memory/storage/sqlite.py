"""The embedded database: one SQLite file, ``memory.db``, in the data directory.

Opened in WAL mode with a busy timeout, so several threads and processes share it; writes
take the write lock up front (``BEGIN IMMEDIATE``), so concurrent appends serialise instead
of failing. ``synchronous = FULL``: a committed message survives power loss.
``secure_delete = ON``, set here rather than left to the build's default: a deleted row's
bytes are overwritten, and :meth:`SQLiteDatabase.scrub` truncates the write-ahead log after a
forget, so no forgotten text stays in a file. A file that is not ours, or is corrupt, is
refused and never written to.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
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
from .database import SQLITE, Database, Tx
from .schema import MIGRATIONS

if TYPE_CHECKING:
    import sqlite_utils

DB_FILENAME = "memory.db"
#: ``PRAGMA application_id`` of our files ("TMEM"): how a foreign SQLite file is told apart.
APPLICATION_ID = 0x544D454D
BUSY_TIMEOUT_S = 30.0
_SQLITE_HEADER = b"SQLite format 3\x00"


class SQLiteDatabase(Database):
    """``memory.db`` in ``data_dir``: one connection shared by the process's threads.

    Args:
        data_dir: the directory (created if missing; must be writable).
        migrations: schema steps, ``{version: step}`` (tests add steps).
    """

    dialect = SQLITE

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        *,
        migrations: dict[int, Callable[[sqlite_utils.Database], None]] | None = None,
    ) -> None:
        self.data_dir = prepare_dir(Path(data_dir))
        self.path = self.data_dir / DB_FILENAME
        self.location = str(self.path)
        self._migrations = dict(MIGRATIONS if migrations is None else migrations)
        self.schema_version = max(self._migrations)
        _check_header(self.path)
        self._lock = threading.RLock()
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
        except BaseException:
            conn.close()
            self._conn = None
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

    @contextlib.contextmanager
    def read(self, *, snapshot: bool = False) -> Iterator[Tx]:
        """Statements that only read. Each sees the latest commit (SQLite's autocommit: no
        transaction to begin and end on the hot path); ``snapshot=True`` makes them all see
        one consistent state (an export)."""
        with self._lock, self._errors():
            conn = self._connection()
            if not snapshot or conn.in_transaction:  # inside this thread's write: read what it wrote
                yield Tx(conn, self.dialect)
                return
            conn.execute("BEGIN")
            try:
                yield Tx(conn, self.dialect)
            finally:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")

    @contextlib.contextmanager
    def write(self, *, durable: bool = True) -> Iterator[Tx]:
        """One write transaction holding SQLite's write lock from its first statement."""
        with self._lock, self._errors():
            conn = self._connection()
            if conn.in_transaction:
                raise StorageError("a write transaction was opened inside another; this is a bug")
            if not durable:
                # WAL with NORMAL: still atomic and consistent, only the fsync is skipped.
                conn.execute("PRAGMA synchronous = NORMAL")
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    yield Tx(conn, self.dialect)
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
            finally:
                if not durable:
                    conn.execute("PRAGMA synchronous = FULL")

    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.DatabaseError as exc:
            raise storage_error(self.path, exc) from exc

    def scrub(self) -> None:
        """Merge the entity full-text index (its old segments go, zeroed by secure_delete)
        and truncate the write-ahead log, whose old frames may still hold deleted rows."""
        with self.write() as tx:
            tx.dialect.text_search.optimize(tx)
        with self._lock, self._errors():
            busy, _, _ = self._connection().execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if busy:  # another connection is reading: the next forget (or close) truncates it
            pass

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
        """Close the connection (truncating the log if nobody else reads). Safe twice."""
        with self._lock:
            if self._conn is not None:
                with contextlib.suppress(sqlite3.Error):
                    self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                self._conn.close()
                self._conn = None

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
