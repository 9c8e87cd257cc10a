"""Layered memory for LangChain and LangGraph agents.

A token-budgeted conversation window over a durable SQLite log, behind the interfaces agent
code already uses. Start with :class:`TieredMemory`::

    from langchain_tiered_memory import TieredMemory

    with TieredMemory("./memory") as memory:
        context = memory.before_turn("alice", "thread-1")
        reply = model.invoke(context.messages + [user_message])
        memory.after_turn("alice", "thread-1", [user_message, reply])
"""

from .config import MemoryConfig
from .context import ContextSection, MemoryContext, TokenUsage
from .errors import (
    ConfigError,
    CorruptDatabaseError,
    DataDirError,
    EmbeddingError,
    ForeignDatabaseError,
    InvalidIdentifierError,
    InvalidInputError,
    InvalidMessageError,
    MemoryClosedError,
    SchemaVersionError,
    StorageError,
    ThreadOwnershipError,
    TieredMemoryError,
    TokenCounterError,
)
from .integrations.chat_history import TieredChatMessageHistory
from .manager import ThreadInfo, TieredMemory, TurnResult
from .tokens import TokenCounter, TokenCounterLike
from .window import TRUNCATION_MARKER

__version__ = "0.1.0"

__all__ = [
    "TRUNCATION_MARKER",
    "ConfigError",
    "ContextSection",
    "CorruptDatabaseError",
    "DataDirError",
    "EmbeddingError",
    "ForeignDatabaseError",
    "InvalidIdentifierError",
    "InvalidInputError",
    "InvalidMessageError",
    "MemoryClosedError",
    "MemoryConfig",
    "MemoryContext",
    "SchemaVersionError",
    "StorageError",
    "ThreadInfo",
    "ThreadOwnershipError",
    "TieredChatMessageHistory",
    "TieredMemory",
    "TieredMemoryError",
    "TokenCounter",
    "TokenCounterError",
    "TokenCounterLike",
    "TokenUsage",
    "TurnResult",
    "__version__",
]
