"""Thin adapters that plug one :class:`~langchain_tiered_memory.TieredMemory` into LangChain and
LangGraph, each built on the memory's public methods. Build them yourself
(``TieredMemoryStore(memory)``, ``TieredCheckpointSaver(memory)``,
``TieredChatMessageHistory(memory, user_id, thread_id)``, ``hooks.pre_model_hook(memory)``, …);
``memory.store`` and ``memory.checkpointer`` are the ones the facade keeps for you, made by
:func:`build_adapter`."""

from __future__ import annotations

from typing import Any

from ..memory import TieredMemory
from .chat_history import TieredChatMessageHistory

__all__ = ["TieredChatMessageHistory", "build_adapter"]


def build_adapter(memory: TieredMemory, name: str, *args: Any) -> Any:
    """The adapter ``name`` of ``memory`` (what ``memory.store``, ``memory.checkpointer`` and
    the deprecated accessors return): the savers of the memory's database, SQLite's or
    PostgreSQL's. The package root hands this to the facade (``api/adapters.py``)."""
    postgres = memory.admin.database().dialect.name == "postgresql"
    if name == "store":
        from .store import TieredMemoryStore

        return TieredMemoryStore(memory)
    if name == "checkpointer":
        if postgres:
            from .checkpointer_postgres import PostgresTieredCheckpointSaver

            return PostgresTieredCheckpointSaver(memory)
        from .checkpointer import TieredCheckpointSaver

        return TieredCheckpointSaver(memory)
    if name == "async_checkpointer":
        if postgres:
            from .checkpointer_postgres import AsyncPostgresTieredCheckpointSaver

            return AsyncPostgresTieredCheckpointSaver(memory)
        from .checkpointer import AsyncTieredCheckpointSaver

        return AsyncTieredCheckpointSaver(memory)
    if name in ("pre_model_hook", "post_model_hook"):
        from . import hooks

        return hooks.pre_model_hook(memory) if name == "pre_model_hook" else hooks.post_model_hook(memory)
    if name == "chat_history":
        return TieredChatMessageHistory(memory, *args)
    if name == "vectorstore":
        from .vectorstore import MemoryVectorStore

        return MemoryVectorStore(memory, *args)
    raise ValueError(f"no adapter named {name!r}")
