"""Exceptions raised by langchain-tiered-memory.

Every error the package raises on purpose derives from :class:`TieredMemoryError`, so
``except TieredMemoryError`` catches them all. Each message says what went wrong and what
to do about it.
"""

from __future__ import annotations


class TieredMemoryError(Exception):
    """Base class of every error raised by langchain-tiered-memory."""


class ConfigError(TieredMemoryError, ValueError):
    """A configuration value is invalid; the message names the field."""


class InvalidInputError(TieredMemoryError, ValueError):
    """An argument passed to the public API is not acceptable."""


class InvalidIdentifierError(InvalidInputError):
    """A ``user_id`` or ``thread_id`` is empty, not a string, or otherwise unusable."""


class InvalidMessageError(InvalidInputError):
    """Something passed as a chat message is not one."""


class ThreadOwnershipError(InvalidInputError):
    """A ``thread_id`` is already used by another user."""


class StorageError(TieredMemoryError):
    """The data directory or the database cannot be used."""


class DataDirError(StorageError):
    """The data directory does not exist and cannot be created, or is not writable."""


class CorruptDatabaseError(StorageError):
    """``memory.db`` is not a readable SQLite database. It is never overwritten."""


class ForeignDatabaseError(StorageError):
    """``memory.db`` is a SQLite database that belongs to another application."""


class SchemaVersionError(StorageError):
    """``memory.db`` was written by a newer version of langchain-tiered-memory."""


class MemoryClosedError(TieredMemoryError):
    """The :class:`TieredMemory` was closed; open a new one."""


class TokenCounterError(TieredMemoryError):
    """The token counter failed or returned something that is not a token count."""


class EmbeddingError(TieredMemoryError):
    """The embedding model cannot be loaded or returned unusable vectors."""


class ExtractionError(TieredMemoryError):
    """The chat model's extraction answer was unusable (malformed, wrong types, a timeout).

    Raised inside background jobs, which retry and finally record the reason; a turn's
    messages are stored before extraction runs, so they are never lost to it.
    """


class ExtractionTimeoutError(ExtractionError):
    """The chat model did not answer the extraction call in time."""


class ExtractionCutOffError(ExtractionError):
    """Every way of asking the chat model gave an answer cut off at the output-token cap
    (``MemoryConfig.llm_max_output_tokens``, or the model's own limit): a model looping, or
    a cap too small for it. The job retries."""


class ModelUnavailableError(TieredMemoryError):
    """The chat model's server cannot be reached (refused, unknown host, no answer).

    The message names the address tried and the settings that chose it
    (``OPENAI_BASE_URL``, ``TIERED_MEMORY_MODEL``, ``--model``).
    """


class VectorStoreError(TieredMemoryError):
    """The vector backend (Qdrant Edge shard or Qdrant server) cannot be used."""


class ShardLockedError(VectorStoreError):
    """Another process has the Qdrant Edge shard open; only one process may."""


class EmbeddingMismatchError(VectorStoreError, ConfigError):
    """The embedding model or dimension differs from the one the collection was built with.

    Run ``memory.admin.reindex()`` (or ``tiered-memory reindex``) to rebuild the vectors.
    """


class NotFoundError(InvalidInputError):
    """The memory, entity or episode asked for does not exist (for that user)."""
