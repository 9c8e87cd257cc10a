"""A long-term memory as users see it (:class:`MemoryEntry`, :class:`MemoryHit`), and the checks
on what a memory may hold."""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Literal, overload

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator

from .display import hits_html
from .errors import InvalidIdentifierError, InvalidInputError
from .scoring import ScoreParts
from .vocabulary import MEMORY_TYPES, MemoryType

if TYPE_CHECKING:
    from .tokens import TokenCounter

__all__ = [
    "MAX_CONTENT_CHARS",
    "MAX_CONTENT_TOKENS",
    "MAX_K",
    "MAX_QUERY_CHARS",
    "MemoryEntry",
    "MemoryHit",
    "MemoryType",
    "ScoreParts",
]

#: Longest content accepted, in characters. A memory is one statement; longer text
#: belongs in several memories (and MiniLM embeds only its first 256 tokens anyway).
MAX_CONTENT_CHARS = 32_000
#: Longest content accepted, in the counter's tokens.
MAX_CONTENT_TOKENS = 8_000
#: Most memories one search returns.
MAX_K = 100
#: Longest query searched for; a longer one is searched by its beginning (the embedding
#: model reads its first 256 tokens anyway), so a 10 MB message as the query of a turn
#: costs what a page does.
MAX_QUERY_CHARS = 32_000
MAX_ID_LENGTH = 512
#: Deepest nesting of metadata accepted (JSON that deep is an attack, not data).
MAX_METADATA_DEPTH = 32
#: Largest metadata accepted, as JSON text.
MAX_METADATA_CHARS = 64_000


class MemoryEntry(BaseModel):
    """One long-term memory of one user.

    ``importance`` (0..1) is what it was given; ``boost`` is what recalls added (capped so
    that importance + boost ≤ 1); ``last_accessed`` is when it was stored, merged or last
    recalled. ``merged_from`` holds the ids of the memories merged into it;
    ``source_message_ids`` the messages it was learned from. ``valid_from`` is when it
    became true (when it was said); ``valid_to`` is set once a newer memory about the same
    thing (``superseded_by``) replaced it — kept for history, left out of default recall.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    content: str
    memory_type: MemoryType
    user_id: str
    session_id: str | None = None
    importance: float = Field(ge=0.0, le=1.0)
    boost: float = Field(0.0, ge=0.0, le=1.0)
    created_at: AwareDatetime
    updated_at: AwareDatetime | None = None
    last_accessed: AwareDatetime
    access_count: int = Field(0, ge=0)
    metadata: dict[str, Any] = Field(default_factory=dict)
    merged_from: list[str] = Field(default_factory=list)
    source_message_ids: list[str] = Field(default_factory=list)
    valid_from: AwareDatetime | None = None
    valid_to: AwareDatetime | None = None
    superseded_by: str | None = None

    @field_validator("created_at", "updated_at", "last_accessed", "valid_from", "valid_to")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        return None if value is None else value.astimezone(timezone.utc)

    def effective_importance(self, now: datetime, decay: float) -> float:
        """``min(1, importance + boost) × decay^days`` since :attr:`last_accessed`."""
        from . import scoring

        days = scoring.days_between(now, self.last_accessed)
        return scoring.prior(self.importance, self.boost, days, decay)

    @property
    def current(self) -> bool:
        """Whether it still holds (no newer memory superseded it)."""
        return self.valid_to is None


class MemoryHit(BaseModel):
    """A recalled memory: the entry (after the recall was counted), its score, and with
    ``explain`` the parts of the score."""

    model_config = ConfigDict(frozen=True)

    entry: MemoryEntry
    score: float
    parts: ScoreParts | None = None

    def _repr_html_(self) -> str:
        return hits_html([self])


# --- checks ---------------------------------------------------------------------------------


def as_list(items: Any, name: str) -> list[Any]:
    """``items`` as a list; a string or mapping is refused (a common slip for one item)."""
    if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Iterable):
        raise InvalidInputError(f"{name} must be a list of memories, got {type(items).__name__}")
    return list(items)


def check_text(value: Any, name: str) -> str:
    """``value`` as text that SQLite and JSON can hold (no lone surrogates)."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{name} must be a str, got {type(value).__name__}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError(
            f"{name} holds a lone surrogate (e.g. '\\ud800'), which no UTF-8 text can hold; "
            "decode the text properly (errors='replace' keeps the rest)"
        ) from None
    return value


def check_query(value: Any, name: str = "query") -> str:
    """A search query: text without lone surrogates, cut to :data:`MAX_QUERY_CHARS`."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{name} must be a str, got {type(value).__name__}")
    return check_text(value[:MAX_QUERY_CHARS], name)


def check_content(content: Any, counter: Callable[[], TokenCounter]) -> str:
    """A memory's content: a non-blank statement within the length limits."""
    text = check_text(content, "content")
    if not text.strip():
        raise InvalidInputError("content is empty: a memory needs some text")
    if "\x00" in text:
        raise InvalidInputError("content must not contain NUL characters")
    if len(text) > MAX_CONTENT_CHARS:
        raise InvalidInputError(
            f"content is {len(text):,} characters long; the limit is {MAX_CONTENT_CHARS:,}: "
            "split it into several memories, one statement each"
        )
    # A token is at least one character, so only long texts can exceed the token limit.
    if len(text) > MAX_CONTENT_TOKENS:
        tokens = counter().count_text(text)
        if tokens > MAX_CONTENT_TOKENS:
            raise InvalidInputError(
                f"content is {tokens:,} tokens long; the limit is {MAX_CONTENT_TOKENS:,}: "
                "split it into several memories, one statement each"
            )
    return text


def check_type(memory_type: Any) -> str:
    """One of the memory types."""
    if memory_type not in MEMORY_TYPES:
        raise InvalidInputError(f"memory_type must be one of {', '.join(MEMORY_TYPES)}; got {memory_type!r}")
    return str(memory_type)


def check_types(memory_types: Any) -> list[str]:
    """A non-empty list of memory types (a single type is accepted too)."""
    if isinstance(memory_types, str):
        memory_types = [memory_types]
    types = [check_type(t) for t in as_list(memory_types, "memory_types")]
    if not types:
        raise InvalidInputError("memory_types is empty; pass None for every type")
    return types


def check_importance(value: Any, name: str = "importance") -> float:
    """A finite number within [0, 1]."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInputError(f"{name} must be a number within [0, 1], got {value!r}")
    number = float(value)
    if not math.isfinite(number) or not 0.0 <= number <= 1.0:
        raise InvalidInputError(f"{name} must be a finite number within [0, 1], got {number!r}")
    return number


def check_k(k: Any) -> int:
    """How many results: an int within 1..MAX_K."""
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise InvalidInputError(f"k must be an int within 1..{MAX_K}, got {k!r}")
    return k


def check_time(name: str, value: Any) -> None:
    """``value`` is ``None`` or a timezone-aware datetime (a naive one has no instant)."""
    if value is not None and (not isinstance(value, datetime) or value.tzinfo is None):
        raise InvalidInputError(f"{name} must be a timezone-aware datetime, got {value!r}")


def check_metadata(metadata: Any) -> dict[str, Any]:
    """Metadata as a JSON object of bounded size and depth."""
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise InvalidInputError(f"metadata must be a dict, got {type(metadata).__name__}")
    out = dict(metadata)
    if not all(isinstance(key, str) for key in out):
        raise InvalidInputError("metadata keys must be str")
    if _depth(out) > MAX_METADATA_DEPTH:
        raise InvalidInputError(f"metadata is nested deeper than {MAX_METADATA_DEPTH} levels; flatten it")
    try:
        text = json.dumps(out, allow_nan=False, ensure_ascii=False)
        text.encode("utf-8")
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"metadata must be JSON-serialisable: {exc}") from None
    if len(text) > MAX_METADATA_CHARS:
        raise InvalidInputError(
            f"metadata is {len(text):,} characters as JSON; the limit is {MAX_METADATA_CHARS:,}"
        )
    return out


def _depth(value: Any, limit: int = MAX_METADATA_DEPTH + 1) -> int:
    # Iterative: a recursive walk is what 2,000 levels of nesting would overflow.
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return depth
        deepest = max(deepest, depth)
        if isinstance(item, Mapping):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend((v, depth + 1) for v in item)
    return deepest


def check_session(session_id: Any) -> str | None:
    """A session (thread) id or ``None``."""
    if session_id is None:
        return None
    if not isinstance(session_id, str) or not session_id.strip() or len(session_id) > MAX_ID_LENGTH:
        raise InvalidInputError(f"session_id must be None or a non-empty str, got {session_id!r}")
    return check_text(session_id, "session_id")


@overload
def check_memory_id(memory_id: Any, *, missing_ok: Literal[False] = False) -> str: ...


@overload
def check_memory_id(memory_id: Any, *, missing_ok: bool) -> str | None: ...


def check_memory_id(memory_id: Any, *, missing_ok: bool = False) -> str | None:
    """A memory id: a UUID string (``None`` with ``missing_ok`` for one no memory can have)."""
    if not isinstance(memory_id, str):
        raise InvalidInputError(f"memory_id must be a str, got {type(memory_id).__name__}")
    try:
        return str(uuid.UUID(memory_id))
    except ValueError:
        if missing_ok:
            return None
        raise InvalidInputError(f"memory_id must be a UUID string, got {memory_id!r}") from None


def check_user(user_id: Any) -> str:
    """A user id: a non-empty str without NUL or lone surrogates, at most 512 characters."""
    return check_id("user_id", user_id)


def check_id(name: str, value: Any) -> str:
    """A user or thread id: a non-empty str without NUL or lone surrogates, ≤ 512 characters."""
    if not isinstance(value, str):
        raise InvalidIdentifierError(f"{name} must be a non-empty str, got {type(value).__name__}")
    if not value.strip():
        raise InvalidIdentifierError(f"{name} must be a non-empty str, got {value!r}")
    if len(value) > MAX_ID_LENGTH:
        raise InvalidIdentifierError(f"{name} is {len(value)} characters long; the limit is {MAX_ID_LENGTH}")
    if "\x00" in value:
        raise InvalidIdentifierError(f"{name} must not contain NUL characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidIdentifierError(f"{name} holds a lone surrogate (e.g. '\\ud800'); pass valid text") from None
    return value
