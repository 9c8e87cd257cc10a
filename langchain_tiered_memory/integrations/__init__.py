"""Thin adapters that plug one :class:`~langchain_tiered_memory.TieredMemory` into LangChain."""

from .chat_history import TieredChatMessageHistory

__all__ = ["TieredChatMessageHistory"]
