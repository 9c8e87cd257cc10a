"""The server database: PostgreSQL through psycopg 3 and a ``psycopg_pool`` connection pool.

Any number of processes on any number of machines share one database. Reads run in a
``REPEATABLE READ READ ONLY`` transaction (one snapshot for all their statements, as a SQLite
read transaction); writes in ``READ COMMITTED``, where the repositories serialise what must
not interleave (a user's writes, a job's claim and its lease check: see ``database.py``).
Opening checks the database before writing to it: a database holding tables under our names
that we did not create, or our schema at a newer version, is refused and left untouched.

The URL's password never appears in a message: :attr:`PostgresDatabase.location` is the URL
without it, and errors from the driver are scrubbed of it.

LangGraph's savers need connections of their own kind (autocommit, rows as dicts):
:meth:`PostgresDatabase.saver_pool` and :meth:`PostgresDatabase.async_saver_pool` make them
on the same database.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ..errors import (
    ConfigError,
    ForeignDatabaseError,
    MemoryClosedError,
    SchemaVersionError,
    StorageError,
)
from .database import Database, Dialect, Tx, lock_key
from .text_search import TSVECTOR
from .schema_postgres import APPLICATION, MIGRATIONS, OUR_TABLES, SCHEMA_TABLE

#: How to get PostgreSQL's drivers: they are the ``[postgres]`` extra, not required.
POSTGRES_EXTRA = "pip install 'langchain-tiered-memory[postgres]'"


def postgres_missing(exc: ImportError) -> str:
    """The message of the :class:`ConfigError` raised when the ``[postgres]`` extra is missing."""
    return f"PostgreSQL support needs the [postgres] extra ({exc}): {POSTGRES_EXTRA}"

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import AsyncConnectionPool, ConnectionPool

#: Seconds to wait for the server when connecting, and for a free pooled connection.
CONNECT_TIMEOUT_S = 10.0
POOL_TIMEOUT_S = 30.0
# Held while a schema is created or migrated, so two processes opening a new database at
# once do not both run a step.
_MIGRATION_LOCK = lock_key("langchain-tiered-memory:migrate")
# SQLSTATE classes and codes we explain.
_AUTH = ("28000", "28P01")
_NO_DATABASE = "3D000"
_NO_PRIVILEGE = "42501"
_RETRYABLE = ("40001", "40P01")  # serialization failure, deadlock


#: How PostgreSQL spells what SQL does not standardise.
POSTGRESQL = Dialect(
    name="postgresql", greatest="GREATEST", least="LEAST", skip_locked=" FOR UPDATE SKIP LOCKED",
    placeholder="%s", for_update=" FOR UPDATE", advisory_lock="SELECT pg_advisory_xact_lock(?)",
    tables="SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()",
    lock_table="LOCK TABLE {} IN SHARE ROW EXCLUSIVE MODE",
    sync_identity="SELECT setval(pg_get_serial_sequence('{0}', 'id'), COALESCE(MAX(id), 0) + 1, false) FROM {0}",
    text_search=TSVECTOR,
)


class PostgresDatabase(Database):
    """A PostgreSQL database by URL, shared by every process that opens it.

    Args:
        url: ``postgresql://user:password@host:5432/dbname`` (any libpq URL or conninfo;
            ``?host=/path`` for a Unix socket).
        pool_min, pool_max: connections kept open and the most opened at once by this
            process (each thread doing a read or write holds one while it runs).
        connect_timeout: seconds to wait for the server when connecting.
        pool_timeout: seconds a thread waits for a free connection before an error.
        migrations: schema steps, ``{version: step(tx)}`` (tests add steps).
        connect_kwargs: extra ``psycopg.connect`` arguments for every connection (e.g.
            ``{"prepare_threshold": None}`` behind PgBouncer in transaction mode).

    Raises:
        StorageError: the server cannot be reached or refuses the login (the message says
            which, and what to check), or the database cannot be used.
        ForeignDatabaseError: the database holds tables under our names that another
            application made.
        SchemaVersionError: a newer langchain-tiered-memory migrated it.
    """

    dialect = POSTGRESQL

    def __init__(
        self,
        url: str,
        *,
        pool_min: int = 1,
        pool_max: int = 10,
        connect_timeout: float = CONNECT_TIMEOUT_S,
        pool_timeout: float = POOL_TIMEOUT_S,
        migrations: dict[int, Callable[[Tx], None]] | None = None,
        connect_kwargs: dict[str, Any] | None = None,
    ) -> None:
        if not isinstance(url, str) or not url.strip():
            raise ConfigError("database_url must be a postgresql:// URL")
        if isinstance(pool_min, bool) or isinstance(pool_max, bool) or not (
            isinstance(pool_min, int) and isinstance(pool_max, int) and 0 <= pool_min <= pool_max and pool_max >= 1
        ):
            raise ConfigError(
                f"pool_min ({pool_min!r}) and pool_max ({pool_max!r}) must be whole numbers with "
                "0 <= pool_min <= pool_max and pool_max >= 1"
            )
        try:
            import psycopg
            from psycopg_pool import ConnectionPool
        except ImportError as exc:  # the [postgres] extra is not installed
            raise ConfigError(postgres_missing(exc)) from exc
        self.url = url
        self.location, self._password = describe(url)
        self._migrations = dict(MIGRATIONS if migrations is None else migrations)
        self.schema_version = max(self._migrations)
        self._connect_timeout = connect_timeout
        self._kwargs: dict[str, Any] = {"connect_timeout": max(1, round(connect_timeout)), **(connect_kwargs or {})}
        self._local = threading.local()
        self._created = False
        self._pool_max = pool_max
        self._saver_pool: ConnectionPool | None = None
        self._saver_lock = threading.Lock()
        with self._errors("connect to"):
            first = psycopg.connect(url, autocommit=True, **self._kwargs)
        try:
            with self._errors("open"):
                self._identify(first)
                self._migrate(first)
        finally:
            first.close()
        self._pool: ConnectionPool | None = ConnectionPool(
            url, min_size=pool_min, max_size=pool_max, timeout=pool_timeout,
            kwargs={"autocommit": True, **self._kwargs}, open=False,
            name=f"tiered-memory {self.location}",
        )
        with self._errors("connect to"):
            self._pool.open(wait=pool_min > 0, timeout=connect_timeout)

    @property
    def is_new(self) -> bool:
        """Whether this open created the schema in a database without it."""
        return self._created

    # --- opening ------------------------------------------------------------------------

    def _identify(self, conn: psycopg.Connection[Any]) -> None:
        """Refuse a database that is not ours (or is newer) before anything is written."""
        tables = {r[0] for r in conn.execute(POSTGRESQL.tables).fetchall()}
        if SCHEMA_TABLE in tables:
            row = conn.execute(f"SELECT application, version FROM {SCHEMA_TABLE}").fetchone()
            if row is None or row[0] != APPLICATION:
                raise ForeignDatabaseError(
                    f"{self.location} has a {SCHEMA_TABLE} table that another application wrote "
                    f"({row!r}); it was left untouched. Give the memory a database of its own."
                )
            if row[1] > self.schema_version:
                raise SchemaVersionError(
                    f"{self.location} has schema version {row[1]}, newer than this "
                    f"langchain-tiered-memory supports ({self.schema_version}); upgrade the package "
                    "(pip install -U langchain-tiered-memory)"
                )
            return
        clash = sorted(tables & OUR_TABLES)
        if clash:
            raise ForeignDatabaseError(
                f"{self.location} holds tables named {', '.join(clash[:6])} that "
                "langchain-tiered-memory did not create (they belong to another application); "
                "they were left untouched. Give the memory a database of its own (CREATE DATABASE "
                "tiered_memory), or a schema of its own: CREATE SCHEMA tiered_memory, then add "
                "?options=-csearch_path%3Dtiered_memory to the URL."
            )

    def _migrate(self, conn: psycopg.Connection[Any]) -> None:
        with conn.transaction():
            tx = Tx(conn, self.dialect)
            # Inside the lock, read again: another process may have migrated meanwhile.
            tx.execute("SELECT pg_advisory_xact_lock(?)", (_MIGRATION_LOCK,))
            version = 0
            if SCHEMA_TABLE in tx.tables():
                version = int(tx.scalar(f"SELECT version FROM {SCHEMA_TABLE}"))
            else:
                self._created = True
                tx.execute(
                    f"CREATE TABLE {SCHEMA_TABLE} (application TEXT PRIMARY KEY, version BIGINT NOT NULL)"
                )
                tx.execute(f"INSERT INTO {SCHEMA_TABLE} VALUES (?, 0)", (APPLICATION,))
            if version > self.schema_version:
                raise SchemaVersionError(
                    f"{self.location} was upgraded to schema version {version} by a newer "
                    "langchain-tiered-memory; upgrade the package"
                )
            for target in range(version + 1, self.schema_version + 1):
                self._migrations[target](tx)
                tx.execute(f"UPDATE {SCHEMA_TABLE} SET version = ?", (target,))
            if version < self.schema_version:
                tx.execute(
                    "INSERT INTO meta (key, value) VALUES ('schema_version', ?) "
                    "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                    (str(self.schema_version),),
                )

    # --- transactions -------------------------------------------------------------------

    def _pool_or_closed(self) -> ConnectionPool:
        if self._pool is None:
            raise MemoryClosedError("this memory is closed; create a new TieredMemory")
        return self._pool

    @contextlib.contextmanager
    def read(self, *, snapshot: bool = False) -> Iterator[Tx]:
        """Statements in one read-only snapshot (``REPEATABLE READ``; always, so
        ``snapshot`` changes nothing here)."""
        current = getattr(self._local, "tx", None)
        if current is not None:  # inside this thread's write: read what it wrote
            yield current
            return
        with self._errors("read from"), self._pool_or_closed().connection() as conn:
            conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            try:
                yield Tx(conn, self.dialect)
            finally:
                if not conn.closed:
                    conn.execute("ROLLBACK")

    @contextlib.contextmanager
    def write(self, *, durable: bool = True, wait: bool = True) -> Iterator[Tx]:
        """One ``READ COMMITTED`` write transaction; ``durable=False`` commits without waiting
        for the server's disk (``synchronous_commit = off``: bookkeeping only). ``wait`` is
        moot here: each thread has a connection of its own, so a wait holds up no other."""
        if getattr(self._local, "tx", None) is not None:
            raise StorageError("a write transaction was opened inside another; this is a bug")
        with self._errors("write to"), self._pool_or_closed().connection() as conn:
            conn.execute("BEGIN")
            if not durable:
                conn.execute("SET LOCAL synchronous_commit = off")
            tx = self._local.tx = Tx(conn, self.dialect)
            try:
                yield tx
            except BaseException:
                if not conn.closed:
                    with contextlib.suppress(Exception):
                        conn.execute("ROLLBACK")
                raise
            finally:
                self._local.tx = None
            conn.execute("COMMIT")

    @contextlib.contextmanager
    def _errors(self, doing: str) -> Iterator[None]:
        import psycopg
        from psycopg_pool import PoolTimeout

        try:
            yield
        except PoolTimeout as exc:
            raise StorageError(
                f"no connection to {self.location} was free or could be opened in time "
                f"({self._scrub(str(exc))}); check that the server runs, or raise pool_max if "
                "every connection was busy"
            ) from None
        except psycopg.Error as exc:
            raise self._storage_error(doing, exc) from None

    def _storage_error(self, doing: str, exc: Exception) -> StorageError:
        """Our error for a driver failure, saying what to do (never with the password)."""
        code = getattr(exc, "sqlstate", None) or ""
        text = self._scrub(" ".join(str(exc).split()))
        where = self.location
        # A refused connection carries no SQLSTATE: the server's words tell what happened.
        missing = "does not exist" in text
        if code in _AUTH or "authentication failed" in text or "no password supplied" in text or (
            missing and 'role "' in text
        ):
            return StorageError(
                f"cannot {doing} {where}: the server refused the login ({text}); check the user "
                "and password in database_url"
            )
        if code == _NO_DATABASE or (missing and 'database "' in text):
            return StorageError(
                f"cannot {doing} {where}: the database does not exist ({text}); create it "
                "(createdb, or CREATE DATABASE) or fix the name in database_url"
            )
        if code == _NO_PRIVILEGE:
            return StorageError(
                f"cannot {doing} {where}: permission denied ({text}); grant the user CREATE on "
                "the database's schema, or use a database it owns"
            )
        if code in _RETRYABLE:
            return StorageError(
                f"cannot {doing} {where}: the transaction collided with another ({text}); retry"
            )
        if "NUL (0x00)" in text:
            return StorageError(
                f"cannot {doing} {where}: PostgreSQL text cannot hold a NUL character (\\x00); "
                "remove it from the value"
            )
        import psycopg

        if isinstance(exc, psycopg.OperationalError):
            return StorageError(
                f"cannot {doing} {where}: the server is unreachable or closed the connection "
                f"({text}); check that PostgreSQL runs and that the host and port in "
                "database_url are right, then retry"
            )
        return StorageError(f"database error on {where}: {text}")

    def _scrub(self, text: str) -> str:
        return text.replace(self._password, "***") if self._password else text

    # --- connections for others ---------------------------------------------------------

    def saver_pool(self) -> ConnectionPool:
        """The pool LangGraph's ``PostgresSaver`` runs on (autocommit, rows as dicts, as it
        requires), made on first use and closed with this database."""
        from psycopg.rows import dict_row
        from psycopg_pool import ConnectionPool

        with self._saver_lock:
            self._pool_or_closed()
            if self._saver_pool is None:
                # Graphs save a checkpoint per step, a fraction of the memory's own traffic.
                saver = ConnectionPool(
                    self.url, min_size=1, max_size=max(2, self._pool_max // 2),
                    kwargs=saver_kwargs(self._kwargs, dict_row), open=False,
                    name=f"tiered-memory checkpoints {self.location}",
                )
                with self._errors("connect to"):
                    saver.open(wait=True, timeout=self._connect_timeout)
                self._saver_pool = saver
            return self._saver_pool

    def async_saver_pool(self) -> AsyncConnectionPool:
        """A new, unopened async pool for ``AsyncPostgresSaver`` (it belongs to the event loop
        that opens it; the caller opens and closes it)."""
        from psycopg.rows import dict_row
        from psycopg_pool import AsyncConnectionPool

        self._pool_or_closed()
        return AsyncConnectionPool(
            self.url, min_size=1, max_size=4, kwargs=saver_kwargs(self._kwargs, dict_row), open=False,
            name=f"tiered-memory async checkpoints {self.location}",
        )

    def connection_error(self, exc: Exception) -> StorageError:
        """Our error for a driver failure met by a component on our pools (the savers)."""
        return self._storage_error("use", exc)

    def close(self) -> None:
        """Close the pools. Safe to call twice."""
        pools = [p for p in (self._saver_pool, self._pool) if p is not None]
        self._saver_pool = self._pool = None
        for pool in pools:
            with contextlib.suppress(Exception):
                pool.close()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._pool is None

    def size_bytes(self) -> int:
        """The size of the database on the server."""
        with self.read() as tx:
            return int(tx.scalar("SELECT pg_database_size(current_database())"))


def saver_kwargs(kwargs: dict[str, Any], row_factory: Any) -> dict[str, Any]:
    """Connection arguments LangGraph's Postgres savers expect (as ``from_conn_string``)."""
    return {**kwargs, "autocommit": True, "prepare_threshold": 0, "row_factory": row_factory}


def describe(url: str) -> tuple[str, str]:
    """``(location, password)``: the URL without its password, for messages, and the
    password, to scrub it from the driver's messages."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        parts = conninfo_to_dict(url)
    except Exception as exc:
        raise ConfigError(
            "database_url is not a PostgreSQL URL or conninfo string; expected "
            f"postgresql://user:password@host:5432/dbname ({type(exc).__name__})"
        ) from None
    password = str(parts.pop("password", "") or "")
    user = parts.get("user")
    host = str(parts.get("host") or "")
    port = parts.get("port")
    dbname = parts.get("dbname") or user or ""
    netloc = ("" if not user else f"{user}@") + ("" if host.startswith("/") else host)
    netloc += f":{port}" if port and not host.startswith("/") else ""
    query = f"?host={host}" if host.startswith("/") else ""
    return f"postgresql://{netloc}/{dbname}{query}", password
