"""What an extraction returns and how an answer is validated item by item.

Shared by the LLM extractor and the offline rules: :class:`TurnExtraction` (entities,
memories, the running summary), :class:`EpisodeExtraction` and the argument checks (the
:class:`~.protocol.Extractor` protocol they answer is in :mod:`.protocol`).

Validation keeps what is good. The answer as a whole must have the right shape — an object
whose ``entities`` / ``memories`` are lists — or it is an error (the job retries). Inside
the lists each item stands alone: an unusable item (no name, empty or over-long content, an
importance that is not a number, NaN) is dropped and recorded in ``dropped`` with its
position and the reason, and the rest is kept; so is everything past the per-answer limits
of :mod:`~langchain_tiered_memory.extraction.normalise`. A summary that is not text is
dropped the same way (the turn then folds the evicted messages in extractively).

Normalisation (every path, models built directly too): importance as in
:func:`~langchain_tiered_memory.extraction.normalise.normalise_importance`; content and
names with whitespace collapsed; types through the vocabulary's aliases (unknown memory
type → ``fact``, unknown entity type → ``other``); attributes as short strings; entities of
the same name (case-insensitive) merge, later attributes winning; memories of the same
content keep the highest importance.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from ..errors import InvalidInputError
from ..tokens import TokenCounter
from ..vocabulary import DISCLOSURES, ENTITY_TYPES, Disclosure, MemoryType
from .normalise import (
    MAX_ATTRIBUTES,
    MAX_CONTENT_CHARS,
    MAX_CONTENT_TOKENS,
    MAX_ENTITIES,
    MAX_ENTITY_NAME_CHARS,
    MAX_EPISODE_ITEMS,
    MAX_EPISODE_TEXT_CHARS,
    MAX_MEMORIES,
    brief,
    clean_text,
    kind_of,
    normalise_attributes,
    split_attributes,
    normalise_entity_type,
    normalise_importance,
    normalise_memory_type,
)

__all__ = [
    "DroppedItem",
    "EpisodeExtraction",
    "ExtractedEntity",
    "ExtractedMemory",
    "ExtractionMethod",
    "TurnExtraction",
    "drop_reason",
]

#: How an answer was obtained: a structured-output method, JSON parsed from text, or the
#: offline rules.
ExtractionMethod = Literal["json_schema", "function_calling", "json_mode", "text", "rules"]
DroppedKind = Literal["entity", "memory", "attribute", "summary", "decision", "topic"]
_MAX_REASON = 300


class DroppedItem(BaseModel):
    """An item of the model's answer that was left out, and why."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    kind: DroppedKind
    #: Position of the (first) dropped item in the model's list; for an attribute, the
    #: position of its entity.
    index: int = Field(ge=0)
    #: How many consecutive items this record stands for (the excess past a limit).
    count: int = Field(default=1, ge=1)
    reason: str


def drop_reason(exc: Exception) -> str:
    """A one-line reason from a validation error, for :class:`DroppedItem`."""
    if isinstance(exc, ValidationError):
        parts = []
        for err in exc.errors()[:3]:
            loc = ".".join(str(p) for p in err.get("loc", ()))
            msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
            parts.append(f"{loc}: {msg}" if loc else msg)
        text = "; ".join(parts)
    else:
        text = str(exc)
    return text if len(text) <= _MAX_REASON else text[: _MAX_REASON - 1] + "…"


def _text_or_none(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return None


class ExtractedEntity(BaseModel):
    """A person, organization, place, product or topic named in the conversation."""

    model_config = ConfigDict(extra="ignore")

    name: str = Field(description="The entity's proper name, as written in the conversation.")
    type: str = Field(
        "other",
        description=f"One of: {', '.join(ENTITY_TYPES)}.",
        json_schema_extra={"enum": list(ENTITY_TYPES)},
    )
    attributes: dict[str, str] = Field(
        default_factory=dict,
        description=(
            'Stable facts about the entity as short strings, e.g. {"location": "Paris", '
            '"job": "nurse"}. The user\'s own entity has "relation_to_user": "self".'
        ),
    )

    @field_validator("name", mode="before")
    @classmethod
    def _name(cls, value: Any) -> str:
        text = _text_or_none(value)
        if text is None:
            raise ValueError(f"entity name must be a string, got {kind_of(value)}")
        name = clean_text(text[: 2 * MAX_ENTITY_NAME_CHARS + 1])
        if not name:
            raise ValueError("entity name is empty")
        if len(name) > MAX_ENTITY_NAME_CHARS:
            raise ValueError(f"entity name is longer than {MAX_ENTITY_NAME_CHARS} characters")
        return name

    @field_validator("type", mode="before")
    @classmethod
    def _type(cls, value: Any) -> str:
        return normalise_entity_type(value)

    @field_validator("attributes", mode="before")
    @classmethod
    def _attributes(cls, value: Any) -> dict[str, str]:
        return normalise_attributes(value)


class ExtractedMemory(BaseModel):
    """A self-contained statement worth remembering in later conversations."""

    model_config = ConfigDict(extra="ignore")

    content: str = Field(
        description="One statement in the third person, e.g. 'The user prefers green tea.'"
    )
    memory_type: MemoryType = Field(
        description=(
            "fact (about the user or the world), preference (likes, dislikes), experience "
            "(something that happened), instruction (how the assistant should behave)."
        )
    )
    importance: float = Field(
        ge=0.0,
        le=1.0,
        description=(
            "0 to 1: 0.9 instructions and things the user asked to remember, 0.8 identity, "
            "location, job, health, 0.7 preferences and relationships, 0.5 ordinary facts."
        ),
    )
    subject: str | None = Field(
        default=None,
        description=(
            "Only for a fact with one current value at a time (where the user lives, their "
            "job, their partner, their favourite X): a short key for what it is about, e.g. "
            "'user home city', 'user job', 'sister Ana job'. A later fact with the same "
            "subject replaces it. null otherwise."
        ),
    )
    replaces: str | None = Field(default=None, description=(
        "Only when the user has given something up for what this states ('I switched from coffee "
        "to tea', 'I traded my Honda for a bike'): the old thing in one to three words, e.g. "
        "'coffee', 'Honda'. The user's memories that name it are closed. null otherwise."))

    about: Disclosure | None = Field(default=None, description=(
        "Only for a statement of the user's own state (how they feel or are doing), goal (what "
        "they want or work towards), value (what matters to them) or cause (what made them change "
        "a habit or a view): which of 'state', 'goal', 'value', 'cause'. A later message may lean "
        "on it without sharing its words. null otherwise."))

    @field_validator("about", mode="before")
    @classmethod
    def _about(cls, value: Any) -> str | None:
        text = (_text_or_none(value) or "").strip().casefold()
        return text if text in DISCLOSURES else None

    @field_validator("subject", mode="before")
    @classmethod
    def _subject(cls, value: Any) -> str | None:
        text = _text_or_none(value)
        key = " ".join(text.casefold().replace("_", " ").split()) if text else ""
        return key[:200] or None

    @field_validator("replaces", mode="before")
    @classmethod
    def _replaces(cls, value: Any) -> str | None:
        return " ".join((_text_or_none(value) or "").split())[:200] or None

    @field_validator("content", mode="before")
    @classmethod
    def _content(cls, value: Any) -> str:
        text = _text_or_none(value)
        if text is None:
            raise ValueError(f"memory content must be a string, got {kind_of(value)}")
        content = clean_text(text)
        if not content:
            raise ValueError("memory content is empty")
        if len(content) > MAX_CONTENT_CHARS:
            raise ValueError(
                f"memory content is {len(content):,} characters long; the long-term limit is "
                f"{MAX_CONTENT_CHARS:,}"
            )
        return content

    @field_validator("memory_type", mode="before")
    @classmethod
    def _type(cls, value: Any) -> str:
        return normalise_memory_type(value)

    @field_validator("importance", mode="before")
    @classmethod
    def _importance(cls, value: Any) -> float:
        importance = normalise_importance(value)
        if importance is None:
            raise ValueError("importance is NaN")
        return importance


def _items(data: Mapping[str, Any], key: str) -> list[Any]:
    value = data.get(key)
    if value is None:
        return []
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"{key} must be a list, got {kind_of(value)}")
    return list(value)


def _over(kind: DroppedKind, items: Sequence[Any], limit: int, plural: str) -> DroppedItem:
    excess = len(items) - limit
    return DroppedItem(
        kind=kind, index=limit, count=excess,
        reason=f"{excess:,} {plural} past the limit of {limit} per answer",
    )


def _entity(item: Any, i: int, dropped: list[DroppedItem]) -> ExtractedEntity:
    if isinstance(item, ExtractedEntity):
        return item
    if _text_or_none(item) is not None:
        item = {"name": item}  # a bare name
    if not isinstance(item, Mapping):
        raise ValueError(f"an entity must be an object, got {kind_of(item)}")
    name = item.get("name")
    if name is None:
        name = item.get("entity", item.get("entity_name"))
    raw = item.get("attributes")
    try:
        attributes, bad = split_attributes(raw)
    except ValueError as exc:
        attributes, bad = {}, [(0, str(exc))]
    entity = ExtractedEntity.model_validate({"name": name, "type": item.get("type"), "attributes": attributes})
    for pos, reason in bad:
        count = len(raw) - pos if isinstance(raw, (list, tuple, Mapping)) and pos == MAX_ATTRIBUTES else 1
        dropped.append(DroppedItem(kind="attribute", index=i, count=count, reason=f"{entity.name!r}: {reason}"))
    return entity


def _memory(item: Any, counter: TokenCounter | None) -> ExtractedMemory:
    if isinstance(item, ExtractedMemory):
        memory = item
    else:
        if isinstance(item, str):
            item = {"content": item}  # a bare statement
        if not isinstance(item, Mapping):
            raise ValueError(f"a memory must be an object, got {kind_of(item)}")
        content = item.get("content")
        if content is None:
            content = item.get("text", item.get("memory", item.get("statement")))
        memory = ExtractedMemory.model_validate(
            {
                "content": content,
                "memory_type": item.get("memory_type", item.get("type")),
                "importance": item.get("importance"),
                "subject": item.get("subject", item.get("key")),
                "replaces": item.get("replaces"),
                "about": item.get("about"),
            }
        )
    # A token is at least one character: only long contents can be over the token limit.
    if counter is not None and len(memory.content) > MAX_CONTENT_TOKENS:
        tokens = counter.count_text(memory.content)
        if tokens > MAX_CONTENT_TOKENS:
            raise ValueError(
                f"memory content is {tokens:,} tokens long; the long-term limit is {MAX_CONTENT_TOKENS:,}"
            )
    return memory


class TurnExtraction(BaseModel):
    """What one conversation turn adds to the assistant's long-term memory.

    ``dropped`` lists the items of the model's answer that were left out, and why;
    ``method`` says how the answer was obtained. Both survive ``model_dump(mode="json")``
    and ``model_validate``, as the extraction job's journal needs. Validate with
    ``context={"counter": TokenCounter}`` to apply the token limit of memory content too.
    """

    model_config = ConfigDict(extra="ignore")

    entities: list[ExtractedEntity] = Field(default_factory=list)
    memories: list[ExtractedMemory] = Field(default_factory=list)
    summary: str | None = None
    dropped: list[DroppedItem] = Field(default_factory=list)
    method: ExtractionMethod | None = None

    @model_validator(mode="before")
    @classmethod
    def _normalise(cls, data: Any, info: ValidationInfo) -> Any:
        if isinstance(data, TurnExtraction):
            return data
        if not isinstance(data, Mapping):
            raise ValueError(f"expected an object with entities, memories and summary, got {kind_of(data)}")
        counter = (info.context or {}).get("counter")
        dropped: list[Any] = list(data.get("dropped") or [])  # a replayed result keeps its record
        entity_items, memory_items = _items(data, "entities"), _items(data, "memories")
        entities, memories = [], []
        for i, item in enumerate(entity_items[:MAX_ENTITIES]):
            found: list[DroppedItem] = []
            try:
                entities.append(_entity(item, i, found))
            except (ValueError, ValidationError) as exc:
                dropped.append(DroppedItem(kind="entity", index=i, reason=drop_reason(exc)))
            dropped.extend(found)
        if len(entity_items) > MAX_ENTITIES:
            dropped.append(_over("entity", entity_items, MAX_ENTITIES, "entities"))
        for i, item in enumerate(memory_items[:MAX_MEMORIES]):
            try:
                memories.append(_memory(item, counter))
            except (ValueError, ValidationError) as exc:
                dropped.append(DroppedItem(kind="memory", index=i, reason=drop_reason(exc)))
        if len(memory_items) > MAX_MEMORIES:
            dropped.append(_over("memory", memory_items, MAX_MEMORIES, "memories"))
        summary = data.get("summary")
        if isinstance(summary, (list, tuple)) and all(isinstance(s, str) for s in summary):
            summary = "\n".join(s.strip() for s in summary if s.strip())
        text = (_text_or_none(summary) or "").strip()
        if summary is not None and _text_or_none(summary) is None:
            dropped.append(DroppedItem(kind="summary", index=0, reason=f"summary must be a string or null, got {kind_of(summary)}"))
        return {
            "entities": entities,
            "memories": memories,
            "summary": None if text.lower() in ("", "null", "none") else text,
            "dropped": dropped,
            "method": data.get("method"),
        }

    @model_validator(mode="after")
    def _dedupe(self) -> TurnExtraction:
        entities: dict[str, ExtractedEntity] = {}
        for entity in self.entities:
            seen = entities.get(entity.name.casefold())
            if seen is None:
                entities[entity.name.casefold()] = entity.model_copy(deep=True)
                continue
            for key, value in entity.attributes.items():
                if key in seen.attributes or len(seen.attributes) < MAX_ATTRIBUTES:
                    seen.attributes[key] = value
            if seen.type == "other":
                seen.type = entity.type
        memories: dict[str, ExtractedMemory] = {}
        for memory in self.memories:
            seen_m = memories.get(memory.content.casefold())
            if seen_m is None:
                memories[memory.content.casefold()] = memory.model_copy()
            elif memory.importance > seen_m.importance:
                seen_m.importance = memory.importance
        self.entities = list(entities.values())
        self.memories = list(memories.values())
        return self


def _cut(text: str) -> str:
    return text if len(text) <= MAX_EPISODE_TEXT_CHARS else text[: MAX_EPISODE_TEXT_CHARS - 1].rstrip() + "…"


def _strings(value: Any, field: str, kind: DroppedKind, dropped: list[Any]) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"{field} must be a list of strings, got {kind_of(value)}")
    out: list[str] = []
    seen: set[str] = set()
    for i, item in enumerate(value[:MAX_EPISODE_ITEMS]):
        text = _text_or_none(item)
        if text is None:
            dropped.append(DroppedItem(kind=kind, index=i, reason=f"{field}[{i}] must be a string, got {kind_of(item)}"))
            continue
        text = _cut(clean_text(text))
        if text and text.casefold() not in seen:
            seen.add(text.casefold())
            out.append(text)
    if len(value) > MAX_EPISODE_ITEMS:
        dropped.append(_over(kind, value, MAX_EPISODE_ITEMS, field))
    return out


class EpisodeExtraction(BaseModel):
    """A short record of one finished conversation, for episodic memory.

    ``summary`` is required (an answer without one is an error); decisions and topics are
    validated one by one like a turn's items, with ``dropped`` and ``method`` as in
    :class:`TurnExtraction`.
    """

    model_config = ConfigDict(extra="ignore")

    summary: str = Field(description="What happened in the conversation, in a few sentences.")
    decisions: list[str] = Field(
        default_factory=list, description="Decisions taken or plans agreed, one sentence each."
    )
    outcome: str = Field("", description="How the conversation ended, in one sentence.")
    topics: list[str] = Field(default_factory=list, description="Up to 8 topic keywords.")
    dropped: list[DroppedItem] = Field(default_factory=list)
    method: ExtractionMethod | None = None

    @model_validator(mode="before")
    @classmethod
    def _items(cls, data: Any) -> Any:
        if not isinstance(data, Mapping) or isinstance(data, EpisodeExtraction):
            return data
        out = dict(data)
        dropped: list[Any] = list(data.get("dropped") or [])
        out["decisions"] = _strings(data.get("decisions"), "decisions", "decision", dropped)
        out["topics"] = _strings(data.get("topics"), "topics", "topic", dropped)
        out["dropped"] = dropped
        return out

    @field_validator("summary", mode="before")
    @classmethod
    def _summary(cls, value: Any) -> str:
        text = _text_or_none(value)
        if text is None:
            raise ValueError(f"summary must be a string, got {kind_of(value)}")
        if not text.strip():
            raise ValueError("summary is empty")
        return _cut(text.strip())

    @field_validator("outcome", mode="before")
    @classmethod
    def _outcome(cls, value: Any) -> str:
        if value is None:
            return ""
        text = _text_or_none(value)
        if text is None:
            raise ValueError(f"outcome must be a string, got {kind_of(value)}")
        return _cut(text.strip())
