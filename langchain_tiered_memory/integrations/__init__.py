"""Thin adapters that plug one :class:`~langchain_tiered_memory.TieredMemory` into LangChain and
LangGraph. Each builds on the memory's public methods; importing this package registers the
convenience accessors (``memory.store``, ``memory.checkpointer``, …), the heavier adapters
loaded on first use."""

from __future__ import annotations

from typing import Any

from ..adapters import register_adapter
from ..memory import TieredMemory
from .chat_history import TieredChatMessageHistory


def _store(memory: TieredMemory) -> Any:
    from .store import TieredMemoryStore

    return TieredMemoryStore(memory)


def _checkpointer(memory: TieredMemory) -> Any:
    # LangGraph's saver for the memory's database: SQLite's, or PostgreSQL's.
    if memory.storage.dialect.name == "postgresql":
        from .checkpointer_postgres import PostgresTieredCheckpointSaver

        return PostgresTieredCheckpointSaver(memory)
    from .checkpointer import TieredCheckpointSaver

    return TieredCheckpointSaver(memory)


def _async_checkpointer(memory: TieredMemory) -> Any:
    if memory.storage.dialect.name == "postgresql":
        from .checkpointer_postgres import AsyncPostgresTieredCheckpointSaver

        return AsyncPostgresTieredCheckpointSaver(memory)
    from .checkpointer import AsyncTieredCheckpointSaver

    return AsyncTieredCheckpointSaver(memory)


def _hook(name: str) -> Any:
    def make(memory: TieredMemory) -> Any:
        from . import hooks

        return getattr(hooks, name)(memory)

    return make


def _vectorstore(memory: TieredMemory, user_id: str) -> Any:
    from .vectorstore import MemoryVectorStore

    return MemoryVectorStore(memory, user_id)


register_adapter("store", _store)
register_adapter("checkpointer", _checkpointer)
register_adapter("async_checkpointer", _async_checkpointer)
register_adapter("pre_model_hook", _hook("pre_model_hook"))
register_adapter("post_model_hook", _hook("post_model_hook"))
register_adapter("chat_history", TieredChatMessageHistory)
register_adapter("vectorstore", _vectorstore)

__all__ = ["TieredChatMessageHistory"]
