"""The relational store: the one owner of every record, and the only package that speaks SQL.

:class:`Storage` is one :class:`~.database.Database` (SQLite in a data directory by
default, PostgreSQL by URL) and a repository per table family — ``threads`` (and their
messages), ``summaries``, ``entities``, ``memories``, ``jobs``, ``episodes``, ``units`` (the
conversation's recall units), ``store_items``, ``checkpoints`` — plus the operations that
span families: ``results`` (a job's output,
committed with the job), ``forgetting`` (journaled deletes) and ``portability`` (a user's
rows out and in). The layers above speak the row types of :mod:`.rows` only, so a second
database implements :class:`~.database.Database` and keeps every layer.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Sequence
from typing import Any

from .checkpoints import Checkpoints
from .database import Database, Dialect, Tx
from .entities import Entities
from .episodes import Episodes
from .forgetting import Forgetting
from .jobs import Jobs
from .memories import Memories
from .portability import Portability
from .postgres import PostgresDatabase
from .results import Results
from .rows import (
    AppendResult,
    AttributeRow,
    EntityRow,
    EntityUpdate,
    EpisodeRow,
    ForgetOp,
    IndexRow,
    JobRow,
    MemoryRow,
    NewMessage,
    StoreRow,
    SummaryRow,
    SummaryUpdate,
    ThreadRow,
    Unit,
)
from .schema import MIGRATIONS
from .sqlite import APPLICATION_ID, DB_FILENAME, READER_WAIT_S, SQLiteDatabase
from .store_items import StoreItems, ns_path
from .summaries import Summaries
from .threads import Threads
from .units import UnitRow, Units
from .usage import Usage, UsageRow

#: The tables whose rows belong to a user and that recall searches (:meth:`Storage.has_any`).
USER_TABLES = ("memories", "units", "episodes")

__all__ = [
    "APPLICATION_ID",
    "DB_FILENAME",
    "MIGRATIONS",
    "READER_WAIT_S",
    "AppendResult",
    "AttributeRow",
    "Database",
    "Dialect",
    "EntityRow",
    "EntityUpdate",
    "EpisodeRow",
    "ForgetOp",
    "IndexRow",
    "JobRow",
    "MemoryRow",
    "NewMessage",
    "PostgresDatabase",
    "SQLiteDatabase",
    "Storage",
    "StoreRow",
    "SummaryRow",
    "SummaryUpdate",
    "ThreadRow",
    "Tx",
    "Unit",
    "UnitRow",
    "Usage",
    "UsageRow",
    "ns_path",
]


class Storage:
    """The relational store of one memory: a database and its table families.

    Args:
        db: the database (:class:`SQLiteDatabase` for a directory).
        decay: ``MemoryConfig.decay``; the memories' eviction order is kept with it.
        rekeep: recompute that order when it was kept with another decay (``False`` for a
            memory that only looks).
    """

    def __init__(self, db: Database, *, decay: float = 0.95, rekeep: bool = True) -> None:
        self.db = db
        self.threads = Threads(db)
        self.summaries = Summaries(db)
        self.entities = Entities(db)
        self.memories = Memories(db, decay)
        self.jobs = Jobs(db)
        self.episodes = Episodes(db)
        self.units = Units(db)
        self.store_items = StoreItems(db)
        self.checkpoints = Checkpoints(db)
        self.forgetting = Forgetting(db)
        self.results = Results(db, decay)
        self.portability = Portability(db, decay)
        self.usage = Usage(db)
        # ``rekeep=False``: a memory that only looks leaves the eviction order as stored.
        if rekeep and self.memories.keep_decay() != decay:
            self.memories.rekeep_all()
        self._id_namespace: uuid.UUID | None = None

    def id_namespace(self) -> uuid.UUID:
        """This deployment's namespace for the ids it derives (extracted memories, episodes).

        Derived ids make a replayed job store nothing twice; a random namespace per database
        (made on first use, kept in ``meta``, carried by ``migrate``) makes two directories
        mint different ids for their own "thread 2", so a user moved between them collides
        with no one.
        """
        if self._id_namespace is None:
            with self.db.read() as tx:
                value = tx.scalar("SELECT value FROM meta WHERE key = 'id_namespace'")
            if value is None:
                with self.db.write() as tx:
                    tx.execute(
                        "INSERT INTO meta (key, value) VALUES ('id_namespace', ?) ON CONFLICT(key) DO NOTHING",
                        (str(uuid.uuid4()),),
                    )
                    value = tx.scalar("SELECT value FROM meta WHERE key = 'id_namespace'")
            self._id_namespace = uuid.UUID(str(value))
        return self._id_namespace

    @classmethod
    def open(
        cls, data_dir: str | os.PathLike[str], *, decay: float = 0.95, rekeep: bool = True,
        reader_wait_seconds: float = READER_WAIT_S,
    ) -> Storage:
        """The SQLite store in ``data_dir`` (``memory.db``, created if missing);
        ``reader_wait_seconds``: how long a forget's scrub waits for readers of its log."""
        db = SQLiteDatabase(data_dir, reader_wait_seconds=reader_wait_seconds)
        try:
            return cls(db, decay=decay, rekeep=rekeep)
        except BaseException:
            db.close()
            raise

    @classmethod
    def open_url(
        cls, url: str, *, decay: float = 0.95, pool_min: int = 1, pool_max: int = 10, rekeep: bool = True,
        **kwargs: Any,
    ) -> Storage:
        """The PostgreSQL store at ``url`` (the schema is created or migrated if needed);
        ``kwargs`` go to :class:`PostgresDatabase`."""
        db = PostgresDatabase(url, pool_min=pool_min, pool_max=pool_max, **kwargs)
        try:
            return cls(db, decay=decay, rekeep=rekeep)
        except BaseException:
            db.close()
            raise

    @property
    def dialect(self) -> Dialect:
        """Which database this is (``dialect.name``: ``"sqlite"`` or ``"postgresql"``)."""
        return self.db.dialect

    @property
    def location(self) -> str:
        """Where the data lives (the file, or the server without its password)."""
        return self.db.location

    @property
    def is_new(self) -> bool:
        """Whether opening created the schema (there was no earlier data)."""
        return self.db.is_new

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self.db.closed

    def close(self) -> None:
        """Release the database. Safe to call twice."""
        self.db.close()

    def scrub(self) -> bool | None:
        """Leave no deleted byte in a file (after a forget): ``True`` done, ``False`` readers
        held the log off (retried by :meth:`finish_scrub`), ``None`` no file of ours."""
        return self.db.scrub()

    def finish_scrub(self, wait_seconds: float | None = None) -> bool | None:
        """Retry a scrub left to do: ``None`` if none is, else whether it is done now."""
        return self.db.finish_scrub(wait_seconds)

    @property
    def scrub_pending_at_close(self) -> bool:
        """After :meth:`close`: a forget's scrub was still held off by readers (the next
        open retries it)."""
        return self.db.scrub_pending_at_close

    def connect(self) -> Any:
        """A new connection of the database's driver, for LangGraph's checkpointer."""
        return self.db.connect()  # type: ignore[attr-defined]

    async def aconnect(self) -> Any:
        """A new async connection, for LangGraph's async checkpointer."""
        return await self.db.aconnect()  # type: ignore[attr-defined]

    def counts(self) -> dict[str, int]:
        """Rows of the main tables, and the database's size in bytes."""
        with self.db.read() as tx:
            out = {
                "users": int(tx.scalar(
                    "SELECT COUNT(*) FROM (SELECT user_id FROM threads UNION SELECT user_id FROM memories) AS u"
                )),
                "threads": int(tx.scalar("SELECT COUNT(*) FROM threads")),
                "messages": int(tx.scalar("SELECT COUNT(*) FROM messages")),
                "entities": int(tx.scalar("SELECT COUNT(*) FROM entities")),
                "memories": int(tx.scalar("SELECT COUNT(*) FROM memories")),
                "episodes": int(tx.scalar("SELECT COUNT(*) FROM episodes")),
            }
        size = getattr(self.db, "size_bytes", None)
        out["db_bytes"] = size() if size is not None else 0
        return out

    def users(self) -> list[str]:
        """Every user with a thread or a memory."""
        with self.db.read() as tx:
            return sorted(tx.column("SELECT user_id FROM threads UNION SELECT user_id FROM memories"))

    def has_any(self, user_id: str, tables: Sequence[str]) -> bool:
        """Whether the user has a row in any of ``tables`` (of :data:`USER_TABLES`): one
        read, each table probed by its user index ("LIMIT 1", never a count: a user with
        10,000 memories answers as fast as one with a single memory)."""
        unknown = [t for t in tables if t not in USER_TABLES]
        if unknown or not tables:
            raise ValueError(f"tables must be some of {USER_TABLES}, got {list(tables)!r}")
        probes = [f"SELECT 1 FROM {t} WHERE user_id = ? LIMIT 1" for t in dict.fromkeys(tables)]
        sql = " UNION ALL ".join(f"SELECT * FROM ({p}) AS p{i}" for i, p in enumerate(probes)) + " LIMIT 1"
        with self.db.read() as tx:
            return tx.one(sql, (user_id,) * len(probes)) is not None

    def unindexed_count(self) -> int:
        """Records waiting for their point in the vector index."""
        return self.memories.pending_count() + self.episodes.pending_count() + self.units.pending_count()
