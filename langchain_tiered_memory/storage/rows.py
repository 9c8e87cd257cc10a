"""The records the relational store hands out and takes in: plain frozen dataclasses.

Every layer above ``storage/`` speaks these, never SQL rows or connections, so the same
layers run on SQLite and on PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ThreadRow:
    """A thread's bookkeeping row. ``key`` is unique for the life of the database."""

    key: int
    thread_id: str
    user_id: str
    created_at: str
    updated_at: str
    next_seq: int
    generation: int
    evicted_through: int
    summarized_through: int = -1
    extracted_through: int = -1


@dataclass(frozen=True)
class NewMessage:
    """A message ready to be appended: serialised, typed and counted."""

    message_id: str
    type: str
    data: str
    tokens: int
    #: How many tool calls an AI message makes (0 for other messages).
    tool_calls: int = 0
    #: When it was said (ISO 8601 with offset); ``None``: when it is stored.
    at: str | None = None


@dataclass(frozen=True)
class IndexRow:
    """What the window needs of a stored message, without its content."""

    seq: int
    type: str
    tokens: int
    counter: str
    tool_calls: int = 0


@dataclass(frozen=True)
class AppendResult:
    """The outcome of :meth:`Threads.append`."""

    thread: ThreadRow
    #: ``(seq, message_id)`` of each message stored, in order; duplicates are left out.
    stored: list[tuple[int, str]]
    duplicates: int


@dataclass(frozen=True)
class SummaryRow:
    """A thread's running summary and the message range it covers."""

    thread_key: int
    user_id: str
    text: str
    tokens: int
    first_seq: int
    last_seq: int
    updated_at: str


@dataclass(frozen=True)
class SummaryUpdate:
    """A new running summary for a thread, covering messages up to ``last_seq``."""

    text: str
    tokens: int
    first_seq: int
    last_seq: int


@dataclass(frozen=True)
class AttributeRow:
    """One value an entity's attribute had: when it was learned, from where, until when."""

    key: str
    value: str
    learned_at: str
    #: The thread the value was learned in, and the message.
    source: str | None
    source_message: str | None
    superseded_at: str | None


@dataclass(frozen=True)
class EntityRow:
    """An entity with its attributes (current ones, or the whole history)."""

    id: int
    user_id: str
    name: str
    name_key: str
    type: str
    created_at: str
    updated_at: str
    attributes: tuple[AttributeRow, ...]


@dataclass(frozen=True)
class EntityUpdate:
    """What one turn says of an entity; ``name_key`` is its normalised name."""

    name: str
    name_key: str
    type: str
    attributes: dict[str, str]
    #: Id of the message the values were learned from.
    source_message: str | None = None


@dataclass(frozen=True)
class JobRow:
    """A row of the job journal."""

    id: int
    key: str
    kind: str
    user_id: str
    thread_key: int | None
    payload: str
    result: str | None
    status: str
    attempts: int
    next_run_at: float
    lease_until: float | None
    leased_by: str | None
    last_error: str | None
    created_at: str
    updated_at: str
    #: What the job needs of the memory that runs it (``"llm"``), ``None``: nothing.
    needs: str | None = None
    #: When its run of failures to reach the model began (epoch seconds), ``None``: none.
    failing_since: float | None = None
    #: Why a pending job is held back (``"budget"``: the spend budget), ``None``: it is not.
    waiting: str | None = None


@dataclass(frozen=True)
class EpisodeRow:
    """One finished session of a thread."""

    id: str
    user_id: str
    thread_id: str
    started_at: str
    ended_at: str
    summary: str
    decisions: list[str]
    outcome: str
    topics: list[str]
    first_seq: int
    last_seq: int
    created_at: str


@dataclass(frozen=True)
class MemoryRow:
    """One long-term memory as the relational store owns it.

    ``boost`` is what recalls added (capped), kept apart from the ``importance`` the memory
    was given; ``merged_from`` lists the ids merged into it; ``valid_to`` is set when a
    newer memory superseded it (``superseded_by``).
    """

    id: str
    user_id: str
    content: str
    memory_type: str
    importance: float
    metadata: dict[str, Any]
    session_id: str | None
    source_messages: list[str]
    created_at: str
    updated_at: str
    last_accessed: str
    access_count: int
    boost: float
    merged_from: list[str]
    valid_from: str
    valid_to: str | None = None
    superseded_by: str | None = None
    subject: str | None = None
    #: Whether near-duplicates may merge into it or it into them (a store put may not).
    mergeable: bool = True
    #: Its point in the recall index: 0 never written, 1 written, 2 to be rewritten.
    indexed: int = 0
    #: What the user gave up for it ("coffee" in "I switched from coffee to tea"): not a
    #: column, read once when the row is committed (the memories that name it close).
    replaces: str | None = None


@dataclass(frozen=True)
class StoreRow:
    """A LangGraph store item; ``memory_id`` when it is the address of a long-term memory."""

    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    vectors: dict[str, list[float]] | None
    created_at: str
    updated_at: str
    memory_id: str | None = None


@dataclass(frozen=True)
class ForgetOp:
    """A journaled forget: what it covers and the index points still to delete."""

    id: int
    scope: dict[str, Any]
    point_ids: list[str]
    created_at: str


@dataclass(frozen=True)
class Unit:
    """A record the recall index should hold a point for: its id, grain and owner."""

    id: str
    user_id: str
    grain: str
    text: str
    at: str
    #: Filterable fields of the point besides the owner, grain and time.
    fields: dict[str, Any] = field(default_factory=dict)


def ids_of(rows: Sequence[Any]) -> list[str]:
    """The ``id`` of each row, in order."""
    return [r.id for r in rows]
