"""LangGraph checkpointers that keep thread state in the memory's own ``memory.db``
(``checkpointer_postgres.py`` has their twins for a memory in PostgreSQL).

One file holds a whole deployment: messages, summaries, entities, jobs and LangGraph's
checkpoints (langgraph-checkpoint-sqlite's ``checkpoints`` and ``writes`` tables, so a file
written here opens with a plain ``SqliteSaver`` too). ``memory.admin.forget(thread_id=...)`` and
``memory.admin.forget(user_id=...)`` delete checkpoints with everything else.

- :class:`TieredCheckpointSaver` (``memory.checkpointer``) is ``SqliteSaver`` on its own
  connection, safe across threads (one lock per connection). Its async methods run the sync
  ones in a worker thread, so it also serves ``ainvoke`` graphs.
- :class:`AsyncTieredCheckpointSaver` (``AsyncTieredCheckpointSaver(memory)``) is ``AsyncSqliteSaver``
  whose ``aiosqlite`` connection opens on first use inside the running event loop.

Both implement every method of ``BaseCheckpointSaver``, sync and async, with the optional
``copy_thread``, ``prune`` and ``delete_for_runs`` (``checkpoint_ops.py``; docs/conformance.md).
Both connections come from ``memory.admin.database()`` (``storage/`` is the only package that
opens the database); ``TieredMemory.close()`` closes the one ``memory.checkpointer`` made.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import (
    AsyncIterator,
    Callable,
    Coroutine,
    Iterator,
    Mapping,
    Sequence,
)
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from ..errors import MemoryClosedError, StorageError
from . import checkpoint_ops as ops

if TYPE_CHECKING:
    import sqlite3

    import aiosqlite

    from ..memory import TieredMemory
    from ..storage import SQLiteDatabase

    # The mixins below call the saver methods of the class they are mixed into.
    _SaverMixin = BaseCheckpointSaver[str]
else:
    _SaverMixin = object

logger = logging.getLogger("langchain_tiered_memory")

#: How long a sync ``close()`` waits for the connection's in-flight work.
CLOSE_TIMEOUT_S = 30.0
T = TypeVar("T")
_CLOSED = "this checkpointer is closed (its TieredMemory was closed); open a new TieredMemory"


class ThreadedAsync(_SaverMixin):
    """The async half of a sync saver: each async method runs its sync twin in a worker
    thread, so one saver serves ``invoke`` and ``ainvoke`` graphs alike."""

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Async :meth:`get_tuple`."""
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Async :meth:`list`."""
        # Read in one go: ``list()`` holds the lock until exhausted, and an async consumer
        # may stop early or hop threads between items.
        items = await asyncio.to_thread(
            lambda: list(self.list(config, filter=filter, before=before, limit=limit))
        )
        for item in items:
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Async :meth:`put`."""
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Async :meth:`put_writes`."""
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        """Async :meth:`delete_thread`."""
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Async :meth:`delete_for_runs`."""
        await asyncio.to_thread(self.delete_for_runs, run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Async :meth:`copy_thread`."""
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Async :meth:`prune`."""
        await asyncio.to_thread(lambda: self.prune(thread_ids, strategy=strategy))

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """Async :meth:`get_delta_channel_history`."""
        return await asyncio.to_thread(self.get_delta_channel_history, config=config, channels=channels)


def sqlite_database(memory: TieredMemory) -> SQLiteDatabase:
    """The memory's SQLite database, where the savers open their connections."""
    from ..storage import SQLiteDatabase

    db = memory.admin.database()
    if not isinstance(db, SQLiteDatabase):
        raise StorageError(
            "this checkpointer keeps checkpoints in a directory's memory.db; for a memory opened with "
            "database_url=, use PostgresTieredCheckpointSaver (or memory.checkpointer)"
        )
    return db


class TieredCheckpointSaver(ThreadedAsync, SqliteSaver):
    """LangGraph's ``SqliteSaver`` over the memory's ``memory.db``: one file holds the deployment.

    ``graph.compile(checkpointer=memory.checkpointer)``. Thread-safe as ``SqliteSaver`` is:
    every call holds the connection's lock. The async methods (``aget_tuple``, ``aput``, …)
    run the sync ones in a worker thread, so ``ainvoke``/``astream`` graphs can use it too.

    Args:
        memory: The memory; the saver gets its own connection to its database.
        serde: LangGraph serializer for checkpoints (default: ``JsonPlusSerializer``).
    """

    def __init__(self, memory: TieredMemory, *, serde: SerializerProtocol | None = None) -> None:
        super().__init__(sqlite_database(memory).connect(), serde=serde)
        # An Event, not a bool: ``with_allowlist`` clones share it with the original.
        self._closed = threading.Event()
        memory.admin.close_with(self.close)

    @contextmanager
    def cursor(self, transaction: bool = True) -> Iterator[sqlite3.Cursor]:
        """A cursor holding the connection's lock; commits on exit when ``transaction``."""
        with self.lock:
            if self._closed.is_set():
                raise MemoryClosedError(_CLOSED)
            self.setup()
            cur = self.conn.cursor()
            try:
                yield cur
            finally:
                if transaction:
                    self.conn.commit()
                cur.close()

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints the runs ``run_ids`` made, with their writes."""
        self._transaction(ops.sqlite_delete_for_runs(run_ids))

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy a thread's checkpoints and writes to a thread that has none yet."""
        self._transaction(ops.sqlite_copy_thread(source_thread_id, target_thread_id))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Keep each namespace's latest checkpoint (``"keep_latest"``), or delete the
        threads' checkpoints (``"delete"``); see ``checkpoint_ops``."""
        self._transaction(ops.sqlite_prune(thread_ids, strategy))

    def _transaction(self, statements: ops.Statements) -> None:
        with self.cursor() as cur:
            cur.execute("BEGIN IMMEDIATE")  # the reads and the writes see one state
            try:
                ops.run(cur, statements)
            except BaseException:
                self.conn.rollback()
                raise

    def close(self) -> None:
        """Close the connection once in-flight calls finish. Safe to call twice."""
        if self._closed.is_set():
            return
        # A ``list()`` iterator left half-read holds the lock; do not hang on it forever.
        if not self.lock.acquire(timeout=CLOSE_TIMEOUT_S):
            logger.warning(
                "checkpointer still in use after %.0f s (a list() left half-read?); it is marked "
                "closed and its connection is left to the garbage collector", CLOSE_TIMEOUT_S,
            )
            self._closed.set()
            return
        try:
            if not self._closed.is_set():
                self._closed.set()
                self.conn.close()
        finally:
            self.lock.release()


class _AsyncState:
    """Connection state a saver shares with its ``with_allowlist`` clones (shallow copies)."""

    def __init__(self) -> None:
        self.conn: aiosqlite.Connection | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.lock = asyncio.Lock()
        self.is_setup = False
        self.closed = False


class LoopBoundSync(_SaverMixin):
    """The sync half of an async saver: each sync method hands its async twin to the
    event loop the saver's connection lives in, from another thread (as LangGraph's async
    savers do), with an error that says what to use instead where that cannot work.

    Needs ``self._state`` with ``loop``, ``lock`` and ``closed``.
    """

    _state: Any

    def _adopt_running_loop(self) -> bool:
        """Make the running loop the saver's (first use, or its earlier loop is over);
        ``True`` when it changed, so the caller drops what belonged to the old one. Refused
        while another loop still runs with it."""
        state = self._state
        if state.closed:
            raise MemoryClosedError(_CLOSED)
        running = asyncio.get_running_loop()
        if state.loop is running:
            return False
        previous = state.loop
        if previous is not None and not previous.is_closed() and previous.is_running():
            raise StorageError(
                "the async checkpointer is in use by another running event loop; use "
                "one event loop per TieredMemory, or memory.checkpointer from threads"
            )
        # An asyncio.Lock belongs to the loop that first waits on it.
        state.loop, state.lock = running, asyncio.Lock()
        return True

    def _loop_for_sync_call(self) -> asyncio.AbstractEventLoop:
        if self._state.closed:
            raise MemoryClosedError(_CLOSED)
        loop: asyncio.AbstractEventLoop | None = self._state.loop
        if loop is None or loop.is_closed() or not loop.is_running():
            raise StorageError(
                "the async checkpointer's sync methods (used by invoke/get_state) work only "
                "from another thread while its event loop runs; use ainvoke/aget_state, or "
                "memory.checkpointer for sync graphs"
            )
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            # Blocking the loop on work queued to that same loop would never return.
            raise StorageError(
                "a sync call to the async checkpointer from its own event loop would block "
                "it; use the async methods (aget_tuple, ainvoke, aget_state, ...)"
            )
        return loop

    def _sync(self, make: Callable[[], Coroutine[Any, Any, T]]) -> T:
        loop = self._loop_for_sync_call()
        return asyncio.run_coroutine_threadsafe(make(), loop).result()

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Sync :meth:`aget_tuple`, from a thread other than the saver's loop."""
        return self._sync(lambda: self.aget_tuple(config))

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Sync :meth:`alist`, from a thread other than the saver's loop."""
        async def read() -> list[CheckpointTuple]:
            # In one go: alist() holds the lock until exhausted, and a caller may stop early.
            return [item async for item in self.alist(config, filter=filter, before=before, limit=limit)]

        yield from self._sync(read)

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Sync :meth:`aput`, from a thread other than the saver's loop."""
        return self._sync(lambda: self.aput(config, checkpoint, metadata, new_versions))

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Sync :meth:`aput_writes`, from a thread other than the saver's loop."""
        self._sync(lambda: self.aput_writes(config, writes, task_id, task_path))

    def delete_thread(self, thread_id: str) -> None:
        """Sync :meth:`adelete_thread`, from a thread other than the saver's loop."""
        self._sync(lambda: self.adelete_thread(thread_id))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Sync :meth:`adelete_for_runs`, from a thread other than the saver's loop."""
        self._sync(lambda: self.adelete_for_runs(run_ids))

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Sync :meth:`acopy_thread`, from a thread other than the saver's loop."""
        self._sync(lambda: self.acopy_thread(source_thread_id, target_thread_id))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Sync :meth:`aprune`, from a thread other than the saver's loop."""
        self._sync(lambda: self.aprune(thread_ids, strategy=strategy))

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """Sync :meth:`aget_delta_channel_history`, from a thread other than the saver's loop."""
        return self._sync(lambda: self.aget_delta_channel_history(config=config, channels=channels))


class AsyncTieredCheckpointSaver(LoopBoundSync, AsyncSqliteSaver):
    """LangGraph's ``AsyncSqliteSaver`` over the memory's ``memory.db``: one file holds the
    deployment.

    ``graph.compile(checkpointer=AsyncTieredCheckpointSaver(memory))`` for ``ainvoke``/``astream``.
    The ``aiosqlite`` connection opens on first use, inside the event loop that uses it; a
    later ``asyncio.run`` may use the saver once the earlier loop has finished. As with
    ``AsyncSqliteSaver``, the sync methods work only from another thread while that loop
    runs; sync graphs should use ``memory.checkpointer``.

    Args:
        memory: The memory; the saver gets its own connection to its database.
        serde: LangGraph serializer for checkpoints (default: ``JsonPlusSerializer``).
    """

    _state: _AsyncState

    def __init__(self, memory: TieredMemory, *, serde: SerializerProtocol | None = None) -> None:
        # Not AsyncSqliteSaver.__init__: it needs a connection and a running loop now.
        BaseCheckpointSaver.__init__(self, serde=serde)
        self.jsonplus_serde = JsonPlusSerializer()
        self._db = sqlite_database(memory)
        self._state = _AsyncState()
        memory.admin.close_with(self.close)

    # AsyncSqliteSaver reads these as attributes; here they live in the shared state.

    @property
    def conn(self) -> aiosqlite.Connection:  # type: ignore[override]
        conn = self._state.conn
        if conn is None:
            if self._state.closed:
                raise MemoryClosedError(_CLOSED)
            raise StorageError("the async checkpointer has no connection yet; it opens on first async use")
        return conn

    @property
    def lock(self) -> asyncio.Lock:  # type: ignore[override]
        return self._state.lock

    @property
    def is_setup(self) -> bool:
        return self._state.is_setup

    @is_setup.setter
    def is_setup(self, value: bool) -> None:
        self._state.is_setup = value

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:  # type: ignore[override]
        """The event loop the connection was last used in; the sync methods hand work to it."""
        return self._state.loop

    # --- async ---------------------------------------------------------------------------

    async def setup(self) -> None:
        """Open the connection in the running loop (first use) and create the tables."""
        state = self._state
        # aiosqlite connections are not tied to a loop: the connection stays.
        self._adopt_running_loop()
        if state.conn is None:
            async with state.lock:
                if state.closed:
                    raise MemoryClosedError(_CLOSED)
                if state.conn is None:
                    state.conn = await self._db.aconnect()
        await super().setup()

    async def adelete_thread(self, thread_id: str) -> None:
        """Delete the thread's checkpoints and pending writes."""
        # AsyncSqliteSaver's version skips setup(), which opens our connection.
        await self.setup()
        await super().adelete_thread(thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints the runs ``run_ids`` made, with their writes."""
        await self._transaction(ops.sqlite_delete_for_runs(run_ids))

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy a thread's checkpoints and writes to a thread that has none yet."""
        await self._transaction(ops.sqlite_copy_thread(source_thread_id, target_thread_id))

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Keep each namespace's latest checkpoint (``"keep_latest"``), or delete the
        threads' checkpoints (``"delete"``); see ``checkpoint_ops``."""
        await self._transaction(ops.sqlite_prune(thread_ids, strategy))

    async def _transaction(self, statements: ops.Statements) -> None:
        await self.setup()
        async with self.lock, self.conn.cursor() as cur:
            await cur.execute("BEGIN IMMEDIATE")
            try:
                await ops.arun(cur, statements)
            except BaseException:
                await self.conn.rollback()
                raise
            await self.conn.commit()

    async def aclose(self) -> None:
        """Close the connection once in-flight calls finish. Safe to call twice."""
        state = self._state
        if state.conn is None:
            state.closed = True
            return
        if state.loop is asyncio.get_running_loop():
            async with state.lock:
                conn, state.conn, state.closed = state.conn, None, True
        else:
            conn, state.conn, state.closed = state.conn, None, True
        if conn is not None:
            await conn.close()

    def close(self) -> None:
        """Close the connection from sync code, best effort: never raises.

        Works with the loop that used the saver gone or still running; the connection's
        queued work finishes first.
        """
        state = self._state
        conn, state.conn, state.closed = state.conn, None, True
        if conn is None:
            return

        def run() -> None:
            try:
                asyncio.run(conn.close())
            except Exception as exc:  # best effort by contract
                logger.warning("closing the async checkpointer's connection failed: %s", exc)

        # A fresh loop in a helper thread: the calling thread may be running a loop (close()
        # from async code) or may have none; either way the connection closes in order.
        try:
            helper = threading.Thread(target=run, name="tiered-memory-checkpointer-close", daemon=True)
            helper.start()
            helper.join(CLOSE_TIMEOUT_S)
        except Exception as exc:
            logger.warning("closing the async checkpointer's connection failed: %s", exc)
