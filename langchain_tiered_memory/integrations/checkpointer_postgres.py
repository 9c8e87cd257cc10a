"""LangGraph checkpointers in the memory's PostgreSQL database (``TieredMemory(database_url=…)``).

langgraph-checkpoint-postgres's own savers, on connection pools of the memory's database
(``checkpoints``, ``checkpoint_blobs``, ``checkpoint_writes``: LangGraph's tables, which
a plain ``PostgresSaver`` on the same database reads too). ``memory.admin.forget`` deletes their
rows with everything else, in the forget's transaction.

- :class:`PostgresTieredCheckpointSaver` (``memory.checkpointer``) is ``PostgresSaver`` on a
  pool; its async methods run the sync ones in a worker thread, so it serves ``ainvoke``
  graphs too.
- :class:`AsyncPostgresTieredCheckpointSaver` (``AsyncPostgresTieredCheckpointSaver(memory)``) is
  ``AsyncPostgresSaver`` whose async pool opens on first use inside the running event loop
  (an async pool belongs to the loop that opened it).

Both implement every method of ``BaseCheckpointSaver``, sync and async, with the optional
``copy_thread``, ``delete_for_runs`` (``checkpoint_ops.py``) and ``prune`` (LangGraph's).
Driver errors become our :class:`~langchain_tiered_memory.errors.StorageError` with the
database's advice; ``TieredMemory.close()`` closes the pools.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import TYPE_CHECKING

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.serde.base import SerializerProtocol

from ..errors import ConfigError, InvalidInputError, MemoryClosedError, StorageError
from ..storage.postgres import postgres_missing
from . import checkpoint_ops as ops

try:  # the [postgres] extra
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg import AsyncCursor, Capabilities, Cursor
except ImportError as exc:
    raise ConfigError(postgres_missing(exc)) from exc
from .checkpointer import _CLOSED, CLOSE_TIMEOUT_S, LoopBoundSync, ThreadedAsync

if TYPE_CHECKING:
    from psycopg.rows import DictRow
    from psycopg_pool import AsyncConnectionPool

    from ..memory import TieredMemory
    from ..storage import PostgresDatabase

logger = logging.getLogger("langchain_tiered_memory")


def _database(memory: TieredMemory) -> PostgresDatabase:
    from ..storage import PostgresDatabase

    db = memory.admin.database()
    if not isinstance(db, PostgresDatabase):  # pragma: no cover - picked by the factory
        raise StorageError("the PostgreSQL checkpointer needs a memory opened with database_url=")
    return db


class PostgresTieredCheckpointSaver(ThreadedAsync, PostgresSaver):
    """LangGraph's ``PostgresSaver`` on the memory's database.

    ``graph.compile(checkpointer=memory.checkpointer)``. Creates LangGraph's tables on first
    use (its own migrations). Thread-safe as ``PostgresSaver`` is; the async methods run
    the sync ones in a worker thread.

    Args:
        memory: The memory (opened with ``database_url=``).
        serde: LangGraph serializer for checkpoints (default: ``JsonPlusSerializer``).
    """

    def __init__(self, memory: TieredMemory, *, serde: SerializerProtocol | None = None) -> None:
        self._db = _database(memory)
        super().__init__(self._db.saver_pool(), serde=serde)  # type: ignore[arg-type]  # dict rows
        # An Event, not a bool: ``with_allowlist`` clones share it with the original.
        self._closed = threading.Event()
        self.setup()
        memory.admin.close_with(self.close)

    @contextmanager
    def _cursor(self, *, pipeline: bool = False) -> Iterator[Cursor[DictRow]]:
        if self._closed.is_set():
            raise MemoryClosedError(_CLOSED)
        try:
            with super()._cursor(pipeline=pipeline) as cur:
                yield cur
        except psycopg.Error as exc:
            raise self._db.connection_error(exc) from None

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints the runs ``run_ids`` made, with their writes and blobs."""
        self._transaction(ops.pg_delete_for_runs(run_ids))

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy a thread's checkpoints, writes and blobs to a thread that has none yet."""
        self._transaction(ops.pg_copy_thread(source_thread_id, target_thread_id))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """``PostgresSaver.prune``: keep each namespace's latest checkpoint (``"keep_latest"``),
        or delete the threads' checkpoints (``"delete"``)."""
        ids = ops.prune_arguments(thread_ids, strategy)
        try:
            super().prune(ids, strategy=strategy)
        except NotImplementedError as exc:  # a thread with a DeltaChannel
            raise _delta_refused(exc) from None

    def _transaction(self, statements: ops.Statements) -> None:
        with self._cursor() as cur, cur.connection.transaction():
            ops.run(cur, statements)

    def close(self) -> None:
        """Stop serving; the pool closes with the memory's database. Safe to call twice."""
        self._closed.set()


def _delta_refused(exc: NotImplementedError) -> InvalidInputError:
    threads = str(exc).rpartition(": ")[2]
    return ops.delta_refused(threads.split(", ") if threads else [])


class _AsyncPoolState:
    """The pool a saver shares with its ``with_allowlist`` clones, and the loop it lives in."""

    def __init__(self) -> None:
        self.pool: AsyncConnectionPool | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.lock = asyncio.Lock()
        self.opening = asyncio.Lock()
        self.is_setup = False
        self.closed = False


class AsyncPostgresTieredCheckpointSaver(LoopBoundSync, AsyncPostgresSaver):
    """LangGraph's ``AsyncPostgresSaver`` on the memory's database.

    ``graph.compile(checkpointer=AsyncPostgresTieredCheckpointSaver(memory))`` for ``ainvoke``/``astream``.
    The async pool opens on first use, inside the event loop that uses it; a later
    ``asyncio.run`` may use the saver once the earlier loop has finished. The sync methods
    work only from another thread while that loop runs; sync graphs should use
    ``memory.checkpointer``.

    Args:
        memory: The memory (opened with ``database_url=``).
        serde: LangGraph serializer for checkpoints (default: ``JsonPlusSerializer``).
    """

    _state: _AsyncPoolState

    def __init__(self, memory: TieredMemory, *, serde: SerializerProtocol | None = None) -> None:
        # Not AsyncPostgresSaver.__init__: it needs a connection and a running loop now.
        BaseCheckpointSaver.__init__(self, serde=serde)
        self.pipe = None
        self.supports_pipeline = Capabilities().has_pipeline()
        self._db = _database(memory)
        self._state = _AsyncPoolState()
        memory.admin.close_with(self.close)

    # AsyncPostgresSaver reads these as attributes; here they live in the shared state.

    @property
    def conn(self) -> AsyncConnectionPool:  # type: ignore[override]
        pool = self._state.pool
        if pool is None:
            raise MemoryClosedError(_CLOSED) if self._state.closed else StorageError(
                "the async checkpointer has no pool yet; it opens on first async use"
            )
        return pool

    @property
    def lock(self) -> asyncio.Lock:  # type: ignore[override]
        return self._state.lock

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:  # type: ignore[override]
        """The event loop the pool lives in; the sync methods hand work to it."""
        return self._state.loop

    async def _ensure_open(self) -> None:
        state = self._state
        if self._adopt_running_loop():
            # The old loop is gone, and its pool's workers with it: start over in this one.
            state.opening, state.pool, state.is_setup = asyncio.Lock(), None, False
        if state.pool is not None and state.is_setup:
            return
        async with state.opening:
            if state.pool is None:
                pool = self._db.async_saver_pool()
                try:
                    await pool.open(wait=True, timeout=30)
                except Exception as exc:
                    raise self._db.connection_error(exc) if isinstance(exc, psycopg.Error) else StorageError(
                        f"cannot open the async checkpointer's connections to {self._db.location}: {exc}"
                    ) from None
                state.pool = pool
            if not state.is_setup:
                state.is_setup = True  # set first: setup() itself opens cursors
                try:
                    await AsyncPostgresSaver.setup(self)
                except BaseException:
                    state.is_setup = False
                    raise

    @asynccontextmanager
    async def _cursor(self, *, pipeline: bool = False) -> AsyncIterator[AsyncCursor[DictRow]]:
        await self._ensure_open()
        try:
            async with super()._cursor(pipeline=pipeline) as cur:
                yield cur
        except psycopg.Error as exc:
            raise self._db.connection_error(exc) from None

    async def setup(self) -> None:
        """Open the pool in the running loop (first use) and create LangGraph's tables."""
        await self._ensure_open()

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints the runs ``run_ids`` made, with their writes and blobs."""
        await self._transaction(ops.pg_delete_for_runs(run_ids))

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy a thread's checkpoints, writes and blobs to a thread that has none yet."""
        await self._transaction(ops.pg_copy_thread(source_thread_id, target_thread_id))

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """``AsyncPostgresSaver.aprune``: keep each namespace's latest checkpoint
        (``"keep_latest"``), or delete the threads' checkpoints (``"delete"``)."""
        ids = ops.prune_arguments(thread_ids, strategy)
        try:
            await super().aprune(ids, strategy=strategy)
        except NotImplementedError as exc:  # a thread with a DeltaChannel
            raise _delta_refused(exc) from None

    async def _transaction(self, statements: ops.Statements) -> None:
        async with self._cursor() as cur, cur.connection.transaction():
            await ops.arun(cur, statements)

    async def aclose(self) -> None:
        """Close the pool once in-flight calls finish. Safe to call twice."""
        state = self._state
        pool, state.pool, state.closed = state.pool, None, True
        if pool is not None and state.loop is asyncio.get_running_loop():
            await pool.close()

    def close(self) -> None:
        """Close the pool from sync code, best effort: never raises."""
        state = self._state
        pool, loop = state.pool, state.loop
        state.pool, state.closed = None, True
        if pool is None or loop is None or loop.is_closed() or not loop.is_running():
            return  # its loop is gone: so are the pool's workers, and the sockets with them
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        try:
            if running is not None and running is loop:
                running.create_task(pool.close())
            else:
                asyncio.run_coroutine_threadsafe(pool.close(), loop).result(CLOSE_TIMEOUT_S)
        except Exception as exc:  # best effort by contract
            logger.warning("closing the async checkpointer's pool failed: %s", exc)

