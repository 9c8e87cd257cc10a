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
