"""Layered memory for LangChain and LangGraph agents.

A token-budgeted conversation window over a durable SQLite log, a running summary, entity
profiles, long-term vector memory (Qdrant Edge by default) and episodes, behind the
interfaces agent code already uses. Start with :class:`TieredMemory`::

    from langchain_tiered_memory import TieredMemory

    with TieredMemory("./memory") as memory:
        context = memory.before_turn("alice", "thread-1")
        reply = model.invoke(context.messages + [user_message])
        memory.after_turn("alice", "thread-1", [user_message, reply])
"""

from .config import MemoryConfig
from .context import ContextSection, MemoryContext, TokenUsage
from .embeddings import (
    CachedQueryEmbeddings,
    HashingEmbeddings,
    MiniLMEmbeddings,
    SentenceTransformerEmbeddings,
    default_embeddings,
)
from .entities import AttributeValue, Entity
from .episodes import Episode, EpisodeHit
from .errors import (
    ConfigError,
    CorruptDatabaseError,
    DataDirError,
    EmbeddingError,
    EmbeddingMismatchError,
    ExtractionError,
    ExtractionTimeoutError,
    ForeignDatabaseError,
    InvalidIdentifierError,
    InvalidInputError,
    InvalidMessageError,
    MemoryClosedError,
    NotFoundError,
    SchemaVersionError,
    ShardLockedError,
    StorageError,
    ThreadOwnershipError,
    TieredMemoryError,
    TokenCounterError,
    VectorStoreError,
)
from .entries import MemoryEntry, MemoryHit
from .integrations import TieredChatMessageHistory
from .integrations.store import TieredMemoryStore
from .memory import ThreadInfo, TieredMemory
from .scoring import ScoreParts
from .tokens import TokenCounter, TokenCounterLike
from .turn import TurnResult
from .views import MemoryStats, SearchResults
from .vocabulary import MemoryType
from .window import TRUNCATION_MARKER

__version__ = "0.1.0"

# Adapters imported on first use: they pull in LangGraph's prebuilt agents or LangChain v1
# (the optional ``agents`` extra), which plain users of the memory never load.
_LAZY = {
    "TieredCheckpointSaver": ".integrations.checkpointer",
    "AsyncTieredCheckpointSaver": ".integrations.checkpointer",
    "PostgresTieredCheckpointSaver": ".integrations.checkpointer_postgres",
    "AsyncPostgresTieredCheckpointSaver": ".integrations.checkpointer_postgres",
    "TieredMemoryMiddleware": ".integrations.middleware",
    "MemoryState": ".integrations.nodes",
    "recall_node": ".integrations.nodes",
    "record_node": ".integrations.nodes",
    "create_memory_tools": ".integrations.tools",
    "MemoryVectorStore": ".integrations.vectorstore",
}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = sorted(
    [
        "TRUNCATION_MARKER",
        "AttributeValue",
        "CachedQueryEmbeddings",
        "ConfigError",
        "ContextSection",
        "CorruptDatabaseError",
        "DataDirError",
        "EmbeddingError",
        "EmbeddingMismatchError",
        "Entity",
        "Episode",
        "EpisodeHit",
        "ExtractionError",
        "ExtractionTimeoutError",
        "ForeignDatabaseError",
        "HashingEmbeddings",
        "InvalidIdentifierError",
        "InvalidInputError",
        "InvalidMessageError",
        "MemoryClosedError",
        "MemoryConfig",
        "MemoryContext",
        "MemoryEntry",
        "MemoryHit",
        "MemoryStats",
        "MemoryType",
        "MiniLMEmbeddings",
        "NotFoundError",
        "SchemaVersionError",
        "ScoreParts",
        "SearchResults",
        "SentenceTransformerEmbeddings",
        "ShardLockedError",
        "StorageError",
        "ThreadInfo",
        "ThreadOwnershipError",
        "TieredChatMessageHistory",
        "TieredMemory",
        "TieredMemoryError",
        "TieredMemoryStore",
        "TokenCounter",
        "TokenCounterError",
        "TokenCounterLike",
        "TokenUsage",
        "TurnResult",
        "VectorStoreError",
        "__version__",
        "default_embeddings",
        *_LAZY,
    ]
)
