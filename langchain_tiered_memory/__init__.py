"""Layered memory for LangChain and LangGraph agents.

A token-budgeted conversation window over a durable message log, a running summary, entity
profiles, long-term memory and episodes -- in one local directory by default, on PostgreSQL
and a Qdrant server past one machine -- behind the interfaces agent code already uses.
Start with :class:`TieredMemory`::

    from langchain_tiered_memory import TieredMemory

    with TieredMemory("./memory") as memory:
        context = memory.before_turn("alice", "thread-1")
        reply = model.invoke(context.messages + [user_message])
        memory.after_turn("alice", "thread-1", [user_message, reply])

Every name is imported on first use (module ``__getattr__``): ``import
langchain_tiered_memory`` costs nothing, ``from langchain_tiered_memory import TieredMemory``
loads only what the memory needs, and ``tiered-memory --help`` starts without LangChain
(``benchmarks/bench_startup.py`` measures both). The ``TYPE_CHECKING`` imports below give
type checkers every name with its real type.
"""

from __future__ import annotations

from importlib import metadata as _metadata
from types import ModuleType
from typing import TYPE_CHECKING, Any

from .api import adapters as _api_adapters

# One home for the version: the distribution's metadata (pyproject.toml).
__version__ = _metadata.version("langchain-tiered-memory")

if TYPE_CHECKING:
    from .config import SpendBudget
    from .config import MemoryConfig
    from .context import ContextSection, MemoryContext, TokenUsage
    from .embeddings import (
        CachedQueryEmbeddings,
        HashingEmbeddings,
        MiniLMEmbeddings,
        SentenceTransformerEmbeddings,
        default_embeddings,
    )
    from .views import AttributeValue, Entity
    from .entries import MemoryEntry, MemoryHit
    from .layers.episodes import Episode, EpisodeHit
    from .errors import (
        ConfigError,
        CorruptDatabaseError,
        DataDirError,
        EmbeddingError,
        EmbeddingMismatchError,
        ExtractionCutOffError,
        ExtractionError,
        ExtractionTimeoutError,
        ForeignDatabaseError,
        InvalidIdentifierError,
        InvalidInputError,
        InvalidMessageError,
        MemoryClosedError,
        ModelUnavailableError,
        NotFoundError,
        SchemaVersionError,
        ShardLockedError,
        StorageError,
        ThreadOwnershipError,
        TieredMemoryError,
        TokenCounterError,
        VectorStoreError,
    )
    from .integrations import TieredChatMessageHistory
    from .integrations.checkpointer import AsyncTieredCheckpointSaver, TieredCheckpointSaver
    from .integrations.hooks import post_model_hook, pre_model_hook
    from .integrations.checkpointer_postgres import (
        AsyncPostgresTieredCheckpointSaver,
        PostgresTieredCheckpointSaver,
    )
    from .integrations.mcp_server import create_mcp_server
    from .integrations.mcp_transport import serve_mcp
    from .integrations.middleware import TieredMemoryMiddleware
    from .integrations.nodes import MemoryState, recall_node, record_node
    from .integrations.store import TieredMemoryStore
    from .integrations.tools import create_memory_tools
    from .integrations.vectorstore import MemoryVectorStore
    from .jobs import JobInfo, JobJournal
    from .llm.settings import ModelSettings
    from .api.threads import ThreadInfo
    from .memory import TieredMemory
    from .scoring import ScoreParts
    from .tokens import TokenCounter, TokenCounterLike
    from .turn import TurnResult
    from .llm.usage import JobUsage
    from .views import MemoryStats, SearchResults
    from .vocabulary import MemoryType
    from .layers.window import TRUNCATION_MARKER

_ERRORS = (
    "ConfigError", "CorruptDatabaseError", "DataDirError", "EmbeddingError", "EmbeddingMismatchError",
    "ExtractionCutOffError", "ExtractionError", "ExtractionTimeoutError", "ForeignDatabaseError",
    "InvalidIdentifierError",
    "InvalidInputError", "InvalidMessageError", "MemoryClosedError", "ModelUnavailableError",
    "NotFoundError", "SchemaVersionError", "ShardLockedError", "StorageError", "ThreadOwnershipError",
    "TieredMemoryError", "TokenCounterError", "VectorStoreError",
)
#: Each public name and the module that defines it (relative to this package).
_LAZY: dict[str, str] = {
    **dict.fromkeys(_ERRORS, ".errors"),
    "SpendBudget": ".config",
    "MemoryConfig": ".config",
    "ContextSection": ".context",
    "MemoryContext": ".context",
    "TokenUsage": ".context",
    "CachedQueryEmbeddings": ".embeddings",
    "HashingEmbeddings": ".embeddings",
    "MiniLMEmbeddings": ".embeddings",
    "SentenceTransformerEmbeddings": ".embeddings",
    "default_embeddings": ".embeddings",
    "AttributeValue": ".views",
    "Entity": ".views",
    "MemoryEntry": ".entries",
    "MemoryHit": ".entries",
    "Episode": ".layers.episodes",
    "EpisodeHit": ".layers.episodes",
    "TieredChatMessageHistory": ".integrations",
    "TieredCheckpointSaver": ".integrations.checkpointer",
    "AsyncTieredCheckpointSaver": ".integrations.checkpointer",
    "PostgresTieredCheckpointSaver": ".integrations.checkpointer_postgres",
    "AsyncPostgresTieredCheckpointSaver": ".integrations.checkpointer_postgres",
    # LangChain v1's agents (the optional ``agents`` extra): loaded only when asked for.
    "TieredMemoryMiddleware": ".integrations.middleware",
    "MemoryState": ".integrations.nodes",
    "recall_node": ".integrations.nodes",
    "record_node": ".integrations.nodes",
    "TieredMemoryStore": ".integrations.store",
    # An MCP server over one user's memory (the optional ``mcp`` extra).
    "create_mcp_server": ".integrations.mcp_server",
    "serve_mcp": ".integrations.mcp_transport",
    "pre_model_hook": ".integrations.hooks",
    "post_model_hook": ".integrations.hooks",
    "create_memory_tools": ".integrations.tools",
    "MemoryVectorStore": ".integrations.vectorstore",
    "JobInfo": ".jobs",
    "JobJournal": ".jobs",
    "ModelSettings": ".llm.settings",
    "ThreadInfo": ".api.threads",
    "TieredMemory": ".memory",
    "ScoreParts": ".scoring",
    "TokenCounter": ".tokens",
    "TokenCounterLike": ".tokens",
    "TurnResult": ".turn",
    "JobUsage": ".llm.usage",
    "MemoryStats": ".views",
    "SearchResults": ".views",
    "MemoryType": ".vocabulary",
    "TRUNCATION_MARKER": ".layers.window",
}


def _build_adapter(memory: TieredMemory, name: str, *args: Any) -> object:
    # The facade builds ``memory.store``/``.checkpointer`` through this, never importing the
    # integrations above it: the root, which runs before any submodule, hands it down.
    if name == "inspector":
        # ``memory.admin.serve``: the inspector (tier 1) sits above the integrations, which
        # may not import it; the root may.
        from .inspector import serve

        port, host, allow_writes, token, block = args
        return serve(memory, port=port, host=host, allow_writes=allow_writes, token=token, block=block)
    from .integrations import build_adapter

    return build_adapter(memory, name, *args)


_api_adapters.provide(_build_adapter)


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_load(module), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def _load(module: str) -> ModuleType:
    """The module ``module`` (a path of :data:`_LAZY`), imported now.

    One import statement a module, written out, so that every module the public face loads
    is an import a reader, a type checker and ``tests/test_layers.py`` can find (a
    computed ``importlib.import_module`` would hide them).
    """
    match module:
        case ".api.threads":
            from .api import threads

            return threads
        case ".config":
            from . import config

            return config
        case ".context":
            from . import context

            return context
        case ".embeddings":
            from . import embeddings

            return embeddings
        case ".entries":
            from . import entries

            return entries
        case ".errors":
            from . import errors

            return errors
        case ".integrations":
            from . import integrations

            return integrations
        case ".integrations.checkpointer":
            from .integrations import checkpointer

            return checkpointer
        case ".integrations.checkpointer_postgres":
            from .integrations import checkpointer_postgres

            return checkpointer_postgres
        case ".integrations.hooks":
            from .integrations import hooks

            return hooks
        case ".integrations.mcp_server":
            from .integrations import mcp_server

            return mcp_server
        case ".integrations.mcp_transport":
            from .integrations import mcp_transport

            return mcp_transport
        case ".integrations.middleware":
            from .integrations import middleware

            return middleware
        case ".integrations.nodes":
            from .integrations import nodes

            return nodes
        case ".integrations.store":
            from .integrations import store

            return store
        case ".integrations.tools":
            from .integrations import tools

            return tools
        case ".integrations.vectorstore":
            from .integrations import vectorstore

            return vectorstore
        case ".jobs":
            from . import jobs

            return jobs
        case ".layers.episodes":
            from .layers import episodes

            return episodes
        case ".layers.window":
            from .layers import window

            return window
        case ".llm.settings":
            from .llm import settings

            return settings
        case ".llm.usage":
            from .llm import usage

            return usage
        case ".memory":
            from . import memory

            return memory
        case ".scoring":
            from . import scoring

            return scoring
        case ".tokens":
            from . import tokens

            return tokens
        case ".turn":
            from . import turn

            return turn
        case ".views":
            from . import views

            return views
        case ".vocabulary":
            from . import vocabulary

            return vocabulary
    raise AssertionError(f"{module} is in _LAZY but not loaded by _load")  # pragma: no cover


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


# A literal list, which type checkers read as the names this module exports.
__all__ = [
    "AsyncPostgresTieredCheckpointSaver",
    "AsyncTieredCheckpointSaver",
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
    "ExtractionCutOffError",
    "ExtractionError",
    "ExtractionTimeoutError",
    "ForeignDatabaseError",
    "HashingEmbeddings",
    "InvalidIdentifierError",
    "InvalidInputError",
    "InvalidMessageError",
    "JobInfo",
    "JobJournal",
    "JobUsage",
    "MemoryClosedError",
    "MemoryConfig",
    "MemoryContext",
    "MemoryEntry",
    "MemoryHit",
    "MemoryState",
    "MemoryStats",
    "MemoryType",
    "MemoryVectorStore",
    "MiniLMEmbeddings",
    "ModelSettings",
    "ModelUnavailableError",
    "NotFoundError",
    "PostgresTieredCheckpointSaver",
    "SchemaVersionError",
    "ScoreParts",
    "SearchResults",
    "SentenceTransformerEmbeddings",
    "ShardLockedError",
    "SpendBudget",
    "StorageError",
    "TRUNCATION_MARKER",
    "ThreadInfo",
    "ThreadOwnershipError",
    "TieredChatMessageHistory",
    "TieredCheckpointSaver",
    "TieredMemory",
    "TieredMemoryError",
    "TieredMemoryMiddleware",
    "TieredMemoryStore",
    "TokenCounter",
    "TokenCounterError",
    "TokenCounterLike",
    "TokenUsage",
    "TurnResult",
    "VectorStoreError",
    "__version__",
    "create_mcp_server",
    "create_memory_tools",
    "default_embeddings",
    "post_model_hook",
    "pre_model_hook",
    "recall_node",
    "record_node",
    "serve_mcp",
]
