"""A LangGraph server's ``store`` and ``checkpointer``, by import path, from the environment.

``langgraph.json``::

    {
      "dependencies": ["."],
      "graphs": {"agent": "./agent.py:graph"},
      "store": {"path": "langchain_tiered_memory.deploy.store"},
      "checkpointer": {"path": "langchain_tiered_memory.deploy.checkpointer"},
      "env": ".env"
    }

The server (langgraph-api) imports the object at each path, calls it, and enters the async
context manager it returns for as long as it serves; :func:`store` yields ``memory.store``
and :func:`checkpointer` an async saver of the same memory. The deployment is the
environment's:

- ``TIERED_MEMORY_DIR``: a directory (``memory.db`` and the embedded Qdrant Edge index), held
  by one server process;
- ``DATABASE_URL`` and ``QDRANT_URL`` (``QDRANT_API_KEY`` if the server wants one): PostgreSQL
  and a Qdrant server, shared by any number of processes. ``QDRANT_URL=":memory:"`` is
  qdrant-client's local mode: the index lives in the process and is rebuilt from the
  database when it starts (one process; for trials and tests);
- the chat model for extraction, as for any memory: ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` /
  ``TIERED_MEMORY_MODEL`` (offline rules without one).

Neither ``TIERED_MEMORY_DIR`` nor ``DATABASE_URL`` set is a :class:`ConfigError` that says
what to set. Everything one process enters shares one :class:`TieredMemory` (a directory's
index admits one holder): it opens on the first entry and closes on the last exit. A graph
module that uses the memory itself (the middleware, nodes, tools) takes that one too,
:func:`memory`.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import threading
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.store.base import BaseStore

from .api.adapters import build
from .errors import ConfigError
from .memory import TieredMemory

#: The environment variables a deployment is read from.
DIR_ENV, DATABASE_ENV, QDRANT_ENV, QDRANT_KEY_ENV = "TIERED_MEMORY_DIR", "DATABASE_URL", "QDRANT_URL", "QDRANT_API_KEY"
#: ``QDRANT_URL`` naming qdrant-client's local mode rather than a server.
LOCAL_QDRANT = ":memory:"
_WHAT_TO_SET = (
    f"set {DIR_ENV} to a directory (SQLite and the embedded vector index, one server process), "
    f"or {DATABASE_ENV} and {QDRANT_ENV} (PostgreSQL and a Qdrant server, any number of "
    "processes) in the server's environment (langgraph.json's \"env\")"
)


@dataclass(frozen=True)
class Deployment:
    """Where the memory lives, as the environment names it."""

    data_dir: str | None = None
    database_url: str | None = None
    qdrant_url: str | None = None
    qdrant_api_key: str | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Deployment:
        """The deployment ``environ`` (default ``os.environ``) names; :class:`ConfigError`
        when it names none, or two."""
        env = os.environ if environ is None else environ

        def get(name: str) -> str | None:
            return env.get(name, "").strip() or None

        data_dir, url, qdrant = get(DIR_ENV), get(DATABASE_ENV), get(QDRANT_ENV)
        if data_dir is None and url is None:
            raise ConfigError(f"no memory deployment is configured: {_WHAT_TO_SET}")
        if data_dir is not None and url is not None:
            raise ConfigError(f"both {DIR_ENV} and {DATABASE_ENV} are set: {_WHAT_TO_SET}, not both")
        if url is not None and qdrant is None:
            raise ConfigError(
                f"{DATABASE_ENV} needs {QDRANT_ENV}: a database is shared by many processes and the "
                f"embedded index by one; set {QDRANT_ENV} to a Qdrant server (docker run -p 6333:6333 "
                f"qdrant/qdrant: {QDRANT_ENV}=http://localhost:6333), or {QDRANT_ENV}={LOCAL_QDRANT} "
                "for an index in this process alone"
            )
        return cls(data_dir, url, qdrant, get(QDRANT_KEY_ENV))

    def open(self) -> tuple[TieredMemory, Any]:
        """A new memory here, and the qdrant-client made for it (``None``: the memory owns its)."""
        client: Any = None
        server: dict[str, Any] = {"qdrant_url": self.qdrant_url, "qdrant_api_key": self.qdrant_api_key}
        if self.qdrant_url == LOCAL_QDRANT:
            from qdrant_client import QdrantClient

            client = QdrantClient(LOCAL_QDRANT)
            server = {"qdrant_client": client}
        try:
            return TieredMemory(self.data_dir, database_url=self.database_url, **server), client
        except BaseException:
            if client is not None:
                client.close()
            raise


class _Shared:
    """The open memory of a deployment, and how many entries (and :func:`memory`) hold it."""

    def __init__(self, memory: TieredMemory, client: Any) -> None:
        self.memory, self.client, self.holders = memory, client, 0
        #: Held by :func:`memory` until the process exits.
        self.pinned = False


_lock = threading.Lock()
_open: dict[Deployment, _Shared] = {}


def _acquire(deployment: Deployment) -> TieredMemory:
    with _lock:  # held while opening: a second entry waits for this memory, never opens another
        shared = _open.get(deployment)
        if shared is None:
            shared = _open[deployment] = _Shared(*deployment.open())
        shared.holders += 1
        return shared.memory


def _release(deployment: Deployment) -> None:
    with _lock:
        shared = _open.get(deployment)
        if shared is None:
            return
        shared.holders -= 1
        if shared.holders > 0:
            return
        del _open[deployment]
    try:
        shared.memory.close()
    finally:
        if shared.client is not None:
            shared.client.close()


@asynccontextmanager
async def _held() -> AsyncIterator[TieredMemory]:
    deployment = Deployment.from_env()
    memory = await asyncio.to_thread(_acquire, deployment)  # opening loads the embedder
    try:
        yield memory
    finally:
        await asyncio.to_thread(_release, deployment)


@asynccontextmanager
async def store() -> AsyncIterator[BaseStore]:
    """The environment's memory as a LangGraph store (``memory.store``), for langgraph.json's
    ``"store": {"path": "langchain_tiered_memory.deploy.store"}``."""
    async with _held() as memory:
        yield memory.store


@asynccontextmanager
async def checkpointer() -> AsyncIterator[BaseCheckpointSaver[str]]:
    """An async checkpointer in the environment's memory (``AsyncTieredCheckpointSaver``, or
    ``AsyncPostgresTieredCheckpointSaver`` on PostgreSQL), for langgraph.json's
    ``"checkpointer": {"path": "langchain_tiered_memory.deploy.checkpointer"}``.

    Each entry has a saver of its own, bound to the event loop that uses it; all share the
    memory.
    """
    async with _held() as memory:
        # Through the slot the facade builds memory.checkpointer through: this entry point
        # imports no adapter, as no module under them does (api/adapters.py).
        saver = build(memory, "async_checkpointer")
        try:
            yield saver
        finally:
            await saver.aclose()


def memory() -> TieredMemory:
    """The environment's memory, the one :func:`store` and :func:`checkpointer` use, for a
    graph module's middleware, nodes and tools (``TieredMemoryMiddleware(deploy.memory())``).
    Opened on the first call (or entry), closed when the process exits."""
    deployment = Deployment.from_env()
    opened = _acquire(deployment)
    with _lock:
        shared = _open[deployment]
        if shared.pinned:  # held for the process already: one hold is enough
            shared.holders -= 1
            return opened
        shared.pinned = True
    atexit.register(_release, deployment)
    return opened


__all__ = ["Deployment", "checkpointer", "memory", "store"]
