"""One structured model call per turn: entities, memories with importance, the summary.

The seed design spent three LLM calls a turn (summary, entities, importance). Here one call
returns a :class:`TurnExtraction`; the running summary is part of it only when messages left
the window (``evicted``), so most turns ask for less.

Any ``BaseChatModel`` works:

- a model with tool calling is asked through ``with_structured_output(TurnExtraction,
  method="function_calling", include_raw=True)`` — function calling because it is the most
  widely supported method (OpenAI's default ``json_schema`` in strict mode rejects free-form
  ``attributes`` objects and field constraints);
- a model without (``with_structured_output`` raises ``NotImplementedError``, or neither it nor
  ``bind_tools`` is overridden) gets a plain call whose prompt asks for JSON, and the JSON
  object is found in its text (prose, ```json fences and ``<think>`` blocks are tolerated);
- when structured output fails to parse (``parsing_error``) or the model answered in text
  instead of calling the tool, the same tolerant parser reads the raw tool-call arguments
  and the text before giving up.

Normalisation, applied to every answer whatever the path (and to models built directly):

- ``importance``: a number, or a numeric string ("0.8", "80%"), or high / medium / low; out
  of 0..1 it is clamped; missing is 0.5; NaN drops the memory; anything else (a boolean, a
  list, "very") is a shape error.
- ``content``: whitespace collapsed; empty or missing drops the memory; a memory given as a
  bare string is a fact of importance 0.5.
- ``memory_type``: case-insensitive, common synonyms mapped ("preferences", "rule",
  "event" …); an unknown type becomes ``"fact"`` — the statement is still worth keeping and
  the type only groups it.
- entity ``name``: whitespace stripped and collapsed; empty or missing drops the entity; an
  entity given as a bare string has that name. ``type``: synonyms mapped ("company" →
  organization, "city" → place …), unknown → ``"other"``. Attribute keys are lowercased with
  ``_`` for spaces; values are coerced to str (numbers, booleans as true/false, lists joined
  with ", "); empty or null values are dropped; a list of ``{"key", "value"}`` pairs is
  accepted.
- duplicates: entities with the same name (case- and whitespace-insensitive) merge, later
  attributes winning; memories with the same content keep the highest importance.
- ``summary``: stripped; empty means none; a list of strings is joined by newlines. A summary
  is kept only when one was asked for (``evicted`` non-empty); when asked for and missing,
  the evicted messages are folded in extractively and a warning is logged, so a turn never
  loses them.
- wrong overall shape — the answer is not an object, ``entities`` / ``memories`` is not a
  list, an item is neither an object nor a string, an object with none of the expected
  keys — raises :class:`~langchain_tiered_memory.errors.ExtractionError` naming the field.

Errors: an exception from the model becomes ``ExtractionError`` (``__cause__`` is the
original); a call longer than ``timeout`` seconds raises ``ExtractionTimeoutError``. The call
runs in a daemon worker thread; on timeout it is abandoned, not cancelled (Python cannot
kill a thread): it finishes or hangs on its own and its answer is discarded.
"""

from __future__ import annotations

import ast
import contextvars
import json
import logging
import math
import os
import re
import threading
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar, runtime_checkable

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from .errors import ExtractionError, ExtractionTimeoutError, InvalidInputError
from .prompts import Prompts
from .tokens import TiktokenCounter, TokenCounter

if TYPE_CHECKING:
    from .offline import OfflineExtractor

logger = logging.getLogger("langchain_tiered_memory")

ENTITY_TYPES: tuple[str, ...] = ("person", "organization", "place", "product", "topic", "other")
MEMORY_TYPES: tuple[str, ...] = ("fact", "preference", "experience", "instruction")
MemoryType = Literal["fact", "preference", "experience", "instruction"]

#: The entity that stands for the user when a turn does not state their name.
USER_ENTITY = "user"
#: The attribute relating an entity to the user; the user's own entity has ``"self"``.
RELATION_ATTRIBUTE = "relation_to_user"
SELF = "self"

DEFAULT_IMPORTANCE = 0.5
DEFAULT_OPENAI_MODEL = "gpt-4o-mini"
DEFAULT_TIMEOUT = 60.0
#: Each message is cut (middle out) to this many tokens in the extraction prompt, so that
#: one pasted document cannot crowd out the turn.
DEFAULT_MAX_MESSAGE_TOKENS = 4_000

_ENTITY_TYPE_ALIASES = {
    "people": "person", "human": "person", "individual": "person", "user": "person",
    "character": "person", "contact": "person", "persona": "person",
    "org": "organization", "organisation": "organization", "company": "organization",
    "business": "organization", "institution": "organization", "employer": "organization",
    "team": "organization", "school": "organization", "university": "organization",
    "location": "place", "city": "place", "country": "place", "region": "place",
    "town": "place", "state": "place", "address": "place", "venue": "place",
    "item": "product", "tool": "product", "software": "product", "app": "product",
    "device": "product", "brand": "product", "service": "product",
    "subject": "topic", "concept": "topic", "interest": "topic", "hobby": "topic",
    "skill": "topic", "language": "topic", "field": "topic",
}
_MEMORY_TYPE_ALIASES = {
    "facts": "fact", "information": "fact", "info": "fact", "knowledge": "fact",
    "preferences": "preference", "like": "preference", "likes": "preference",
    "dislike": "preference", "dislikes": "preference", "opinion": "preference",
    "taste": "preference", "interest": "preference",
    "experiences": "experience", "event": "experience", "episode": "experience",
    "history": "experience", "episodic": "experience",
    "instructions": "instruction", "rule": "instruction", "directive": "instruction",
    "command": "instruction", "request": "instruction", "behavior": "instruction",
    "behaviour": "instruction", "guideline": "instruction",
}
_IMPORTANCE_WORDS = {
    "critical": 1.0, "very high": 0.9, "high": 0.8, "medium": 0.5, "moderate": 0.5,
    "normal": 0.5, "low": 0.2, "very low": 0.1, "none": 0.0,
}


# --------------------------------------------------------------------------- models


def _brief(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _kind(value: Any) -> str:
    return f"{type(value).__name__} {_brief(value)}"


def _clean(text: str) -> str:
    return " ".join(text.split())


def normalise_importance(value: Any) -> float | None:
    """``value`` as an importance in 0..1 (clamped); ``None`` for NaN, which drops a memory.

    Raises ``ValueError`` for what is not a number at all.
    """
    if value is None:
        return DEFAULT_IMPORTANCE
    if isinstance(value, bool):
        raise ValueError("importance must be a number from 0 to 1, got a boolean")
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        text = value.strip().lower()
        if not text:
            return DEFAULT_IMPORTANCE
        if text in _IMPORTANCE_WORDS:
            return _IMPORTANCE_WORDS[text]
        percent = text.endswith("%")
        try:
            number = float(text.rstrip("%").strip())
        except ValueError:
            raise ValueError(
                f"importance must be a number from 0 to 1, got {_brief(value)}"
            ) from None
        if percent:
            number /= 100
    else:
        raise ValueError(f"importance must be a number from 0 to 1, got {_kind(value)}")
    if math.isnan(number):
        return None
    return min(1.0, max(0.0, number))


def _memory_type(value: Any) -> str:
    if value is None:
        return "fact"
    if not isinstance(value, str):
        raise ValueError(f"memory_type must be a string, got {_kind(value)}")
    key = value.strip().lower()
    if key in MEMORY_TYPES:
        return key
    return _MEMORY_TYPE_ALIASES.get(key, "fact")


def _entity_type(value: Any) -> str:
    if value is None:
        return "other"
    if not isinstance(value, str):
        raise ValueError(f"entity type must be a string, got {_kind(value)}")
    key = value.strip().lower()
    if key in ENTITY_TYPES:
        return key
    return _ENTITY_TYPE_ALIASES.get(key, "other")


def _attr_value(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, int):
        text = str(value)
    elif isinstance(value, float):
        if not math.isfinite(value):
            return None
        text = str(int(value)) if value.is_integer() else str(value)
    elif isinstance(value, str):
        text = value
    elif isinstance(value, (list, tuple)):
        parts = [p for p in (_attr_value(v) for v in value) if p]
        text = ", ".join(parts)
    elif isinstance(value, Mapping):
        text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    else:
        text = str(value)
    text = _clean(text)
    return text or None


def _attr_key(key: Any) -> str:
    return re.sub(r"[\s\-]+", "_", str(key).strip().lower()).strip("_")


def normalise_attributes(value: Any) -> dict[str, str]:
    """Attributes as ``{lowercased_key: str}``, dropping empty values (see the module doc)."""
    if value is None:
        return {}
    pairs: list[tuple[Any, Any]] = []
    if isinstance(value, Mapping):
        pairs = list(value.items())
    elif isinstance(value, (list, tuple)):
        for item in value:
            if isinstance(item, Mapping) and "value" in item:
                key = item.get("key", item.get("name", item.get("attribute")))
                if key is None:
                    raise ValueError("an attribute pair has no key")
                pairs.append((key, item["value"]))
            elif isinstance(item, (list, tuple)) and len(item) == 2:
                pairs.append((item[0], item[1]))
            else:
                raise ValueError(f"attributes must be an object of strings, got {_kind(value)}")
    else:
        raise ValueError(f"attributes must be an object of strings, got {_kind(value)}")
    out: dict[str, str] = {}
    for key, raw in pairs:
        name, text = _attr_key(key), _attr_value(raw)
        if name and text:
            out[name] = text
    return out


class ExtractedEntity(BaseModel):
    """A person, organization, place, product or topic named in the conversation."""

    model_config = ConfigDict(extra="ignore")

    name: str = Field(description="The entity's proper name, as written in the conversation.")
    type: str = Field(
        "other",
        description="One of: person, organization, place, product, topic, other.",
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
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str):
            raise ValueError(f"entity name must be a string, got {_kind(value)}")
        name = _clean(value)
        if not name:
            raise ValueError("entity name is empty")
        return name

    @field_validator("type", mode="before")
    @classmethod
    def _type(cls, value: Any) -> str:
        return _entity_type(value)

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

    @field_validator("content", mode="before")
    @classmethod
    def _content(cls, value: Any) -> str:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str):
            raise ValueError(f"memory content must be a string, got {_kind(value)}")
        content = _clean(value)
        if not content:
            raise ValueError("memory content is empty")
        return content

    @field_validator("memory_type", mode="before")
    @classmethod
    def _type(cls, value: Any) -> str:
        return _memory_type(value)

    @field_validator("importance", mode="before")
    @classmethod
    def _importance(cls, value: Any) -> float:
        importance = normalise_importance(value)
        if importance is None:
            raise ValueError("importance is NaN")
        return importance


def _text_or_none(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return None


def _items(data: Mapping[str, Any], key: str) -> list[Any]:
    value = data.get(key)
    if value is None:
        return []
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"{key} must be a list, got {_kind(value)}")
    return list(value)


def _normalise_entities(items: list[Any]) -> list[Any]:
    out: list[Any] = []
    for i, item in enumerate(items):
        if isinstance(item, ExtractedEntity):
            out.append(item)
            continue
        if isinstance(item, str):
            item = {"name": item}
        if not isinstance(item, Mapping):
            raise ValueError(f"entities[{i}] must be an object, got {_kind(item)}")
        entity = dict(item)
        name = entity.get("name")
        if name is None:
            name = entity.get("entity", entity.get("entity_name"))
        if name is None or (isinstance(name, str) and not name.strip()):
            continue  # a nameless entity cannot be stored or merged
        entity["name"] = name
        out.append(entity)
    return out


def _normalise_memories(items: list[Any]) -> list[Any]:
    out: list[Any] = []
    for i, item in enumerate(items):
        if isinstance(item, ExtractedMemory):
            out.append(item)
            continue
        if isinstance(item, str):
            item = {"content": item}
        if not isinstance(item, Mapping):
            raise ValueError(f"memories[{i}] must be an object, got {_kind(item)}")
        memory = dict(item)
        content = memory.get("content")
        if content is None:
            content = memory.get("text", memory.get("memory", memory.get("statement")))
        if content is None or (isinstance(content, str) and not content.strip()):
            continue
        try:
            importance = normalise_importance(memory.get("importance"))
        except ValueError as exc:
            raise ValueError(f"memories[{i}].{exc}") from None
        if importance is None:
            continue  # NaN: the model gave no usable judgement of this memory
        memory.update(
            content=content,
            importance=importance,
            memory_type=memory.get("memory_type", memory.get("type")),
        )
        out.append(memory)
    return out


class TurnExtraction(BaseModel):
    """What one conversation turn adds to the assistant's long-term memory."""

    model_config = ConfigDict(extra="ignore")

    entities: list[ExtractedEntity] = Field(
        default_factory=list, description="Entities named in the new turn (may be empty)."
    )
    memories: list[ExtractedMemory] = Field(
        default_factory=list, description="Statements worth remembering (may be empty)."
    )
    summary: str | None = Field(
        None,
        description="The updated running summary when you were asked to update it, else null.",
    )

    @model_validator(mode="before")
    @classmethod
    def _normalise(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            raise ValueError(
                f"expected an object with entities, memories and summary, got {_kind(data)}"
            )
        out = dict(data)
        out["entities"] = _normalise_entities(_items(data, "entities"))
        out["memories"] = _normalise_memories(_items(data, "memories"))
        summary = data.get("summary")
        if isinstance(summary, (list, tuple)) and all(isinstance(s, str) for s in summary):
            summary = "\n".join(s.strip() for s in summary if s.strip())
        if summary is not None and _text_or_none(summary) is None:
            raise ValueError(f"summary must be a string or null, got {_kind(summary)}")
        summary = (_text_or_none(summary) or "").strip()
        out["summary"] = None if summary.lower() in ("", "null", "none") else summary
        return out

    @model_validator(mode="after")
    def _dedupe(self) -> TurnExtraction:
        entities: dict[str, ExtractedEntity] = {}
        for entity in self.entities:
            key = entity.name.casefold()
            seen = entities.get(key)
            if seen is None:
                entities[key] = entity.model_copy(deep=True)
                continue
            seen.attributes.update(entity.attributes)
            if seen.type == "other":
                seen.type = entity.type
        memories: dict[str, ExtractedMemory] = {}
        for memory in self.memories:
            key = memory.content.casefold()
            seen_m = memories.get(key)
            if seen_m is None:
                memories[key] = memory.model_copy()
            elif memory.importance > seen_m.importance:
                seen_m.importance = memory.importance
        self.entities = list(entities.values())
        self.memories = list(memories.values())
        return self


def _string_list(value: Any, field: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"{field} must be a list of strings, got {_kind(value)}")
    out: list[str] = []
    seen: set[str] = set()
    for i, item in enumerate(value):
        text = _text_or_none(item)
        if text is None:
            raise ValueError(f"{field}[{i}] must be a string, got {_kind(item)}")
        text = _clean(text)
        if text and text.casefold() not in seen:
            seen.add(text.casefold())
            out.append(text)
    return out


class EpisodeExtraction(BaseModel):
    """A short record of one finished conversation, for episodic memory."""

    model_config = ConfigDict(extra="ignore")

    summary: str = Field(description="What happened in the conversation, in a few sentences.")
    decisions: list[str] = Field(
        default_factory=list, description="Decisions taken or plans agreed, one sentence each."
    )
    outcome: str = Field("", description="How the conversation ended, in one sentence.")
    topics: list[str] = Field(default_factory=list, description="Up to 8 topic keywords.")

    @field_validator("summary", mode="before")
    @classmethod
    def _summary(cls, value: Any) -> str:
        text = _text_or_none(value)
        if text is None:
            raise ValueError(f"summary must be a string, got {_kind(value)}")
        if not text.strip():
            raise ValueError("summary is empty")
        return text.strip()

    @field_validator("outcome", mode="before")
    @classmethod
    def _outcome(cls, value: Any) -> str:
        if value is None:
            return ""
        text = _text_or_none(value)
        if text is None:
            raise ValueError(f"outcome must be a string, got {_kind(value)}")
        return text.strip()

    @field_validator("decisions", mode="before")
    @classmethod
    def _decisions(cls, value: Any) -> list[str]:
        return _string_list(value, "decisions")

    @field_validator("topics", mode="before")
    @classmethod
    def _topics(cls, value: Any) -> list[str]:
        return _string_list(value, "topics")


# --------------------------------------------------------------------------- protocol


@runtime_checkable
class Extractor(Protocol):
    """What the memory layers need from an extractor: an LLM or the offline rules."""

    #: True when no LLM is involved (rules and extractive summaries).
    offline: bool
    #: Identifies the extractor (and model) in logs and job records.
    name: str

    def extract_turn(
        self,
        messages: Sequence[BaseMessage],
        *,
        summary: str | None = None,
        evicted: Sequence[BaseMessage] = (),
        known_entities: Sequence[str] = (),
        summary_max_tokens: int = 2000,
    ) -> TurnExtraction:
        """Entities and memories of ``messages`` (the new turn), in one model call.

        When ``evicted`` is non-empty, ``summary`` of the result is ``summary`` with the
        evicted messages folded in (aimed at under ``summary_max_tokens``; use
        :meth:`compress_summary` if it is over); otherwise it is ``None``.
        ``known_entities`` are names already stored, so the same spelling is reused.
        """
        ...

    def extract_episode(self, messages: Sequence[BaseMessage]) -> EpisodeExtraction:
        """A record of a finished conversation: summary, decisions, outcome, topics."""
        ...

    def compress_summary(self, summary: str, max_tokens: int) -> str:
        """``summary`` rewritten to at most ``max_tokens`` tokens."""
        ...


# --------------------------------------------------------------------------- rendering

_FENCE_TAGS = re.compile(
    r"<(/?\s*(?:conversation|evicted_messages|current_summary|known_entities)\b)", re.I
)
_SPEAKERS = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}


def _defang(text: str) -> str:
    # Text inside a fence must not be able to close it and talk to the model directly.
    return _FENCE_TAGS.sub(r"&lt;\1", text)


def message_text(message: BaseMessage) -> str:
    """The text of a message (text blocks only), tool calls described briefly."""
    text = message.text
    if isinstance(message, AIMessage) and message.tool_calls:
        calls = ", ".join(
            f"{c['name']}({json.dumps(c.get('args', {}), ensure_ascii=False, default=str)})"
            for c in message.tool_calls
        )
        text = f"{text}\n[calls {calls}]" if text else f"[calls {calls}]"
    return text


def speaker(message: BaseMessage) -> str:
    """``user``, ``assistant``, ``system`` or ``tool`` (a ChatMessage's role otherwise)."""
    role = getattr(message, "role", None)
    if message.type == "chat" and isinstance(role, str):
        return {"human": "user", "ai": "assistant"}.get(role, role)
    return _SPEAKERS.get(message.type, message.type)


def render_messages(
    messages: Sequence[BaseMessage],
    *,
    counter: TokenCounter | None = None,
    max_message_tokens: int | None = None,
) -> str:
    """Messages as ``speaker: text`` lines, continuation lines indented, fences defanged.

    Indenting continuation lines keeps a message from forging another speaker's line.
    """
    lines: list[str] = []
    for message in messages:
        text = message_text(message).strip()
        if counter is not None and max_message_tokens is not None:
            text = counter.truncate_middle(text, max_message_tokens, " […] ")
        label = speaker(message)
        name = getattr(message, "name", None)
        if name:
            label = f"{label} [{_clean(str(name))[:40]}]"
        body = _defang(text).splitlines() or [""]
        lines.append(f"{label}: {body[0]}")
        lines.extend(f"  {line}" for line in body[1:])
    return "\n".join(lines)


# --------------------------------------------------------------------------- parsing

_CODE_FENCE = re.compile(r"```[ \t]*(?:json|JSON|json5|javascript|js)?[ \t]*\n?(.*?)```", re.S)
_THINK = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.S | re.I)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_WRAPPER_KEYS = ("arguments", "parameters", "args", "input", "output", "result", "data")
_MAX_SCAN = 64


def _balanced_end(text: str, start: int) -> int | None:
    """Index of the ``}`` closing the ``{`` at ``start``, skipping quoted strings."""
    depth, quote, escaped = 0, "", False
    for i in range(start, len(text)):
        ch = text[i]
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i
    return None


def _loads(piece: str) -> Any:
    for candidate in (piece, _TRAILING_COMMA.sub(r"\1", piece)):
        try:
            return json.loads(candidate, strict=False)
        except (ValueError, RecursionError):
            pass
    try:
        # Single-quoted, Python-literal answers (True/None) are common from small models;
        # literal_eval evaluates literals only, so untrusted text cannot run code.
        value = ast.literal_eval(piece)
    except Exception:
        return None
    return value if isinstance(value, dict) else None


def _objects(text: str) -> list[dict[str, Any]]:
    stripped = text.strip()
    if stripped.startswith("{"):
        whole = _loads(stripped)
        if isinstance(whole, dict):
            return [whole]
    found: list[dict[str, Any]] = []
    pos = 0
    for _ in range(_MAX_SCAN):
        start = text.find("{", pos)
        if start < 0:
            break
        end = _balanced_end(text, start)
        value = _loads(text[start : end + 1]) if end is not None else None
        if isinstance(value, dict):
            found.append(value)
            pos = end + 1  # type: ignore[operator]
        else:
            pos = start + 1
    return found


def _unwrap(obj: dict[str, Any], keys: Collection[str]) -> dict[str, Any]:
    # Models without native tool calling often answer with the call itself
    # ({"name": ..., "arguments": {...}}) or wrap the payload under the schema's name.
    for _ in range(3):
        if not keys or set(obj) & set(keys):
            return obj
        inner: Any = None
        for key in _WRAPPER_KEYS:
            if key in obj:
                inner = obj[key]
                break
        if inner is None and len(obj) == 1:
            inner = next(iter(obj.values()))
        if isinstance(inner, str):
            parsed = _objects(inner)
            inner = parsed[0] if parsed else None
        if not isinstance(inner, dict):
            return obj
        obj = inner
    return obj


def parse_json_object(text: str, keys: Collection[str] = ()) -> dict[str, Any]:
    """The JSON object in a model's text answer.

    Tolerates prose around it, ```json fences, ``<think>`` blocks, trailing commas,
    single quotes, and a wrapper such as ``{"arguments": {...}}``. With ``keys``, an object
    holding one of them is preferred over other objects in the text.
    Raises :class:`ExtractionError` when there is none.
    """
    if not isinstance(text, str):
        raise ExtractionError(f"expected text with a JSON object, got {_kind(text)}")
    cleaned = _THINK.sub("", text)
    candidates: list[dict[str, Any]] = []
    for block in _CODE_FENCE.findall(cleaned):
        candidates.extend(_objects(block))
    candidates.extend(_objects(cleaned))
    if not candidates:
        raise ExtractionError(f"no JSON object in the model's answer {_brief(text.strip(), 120)}")
    unwrapped = [_unwrap(c, keys) for c in candidates]
    for obj in unwrapped:
        if keys and set(obj) & set(keys):
            return obj
    return max(unwrapped, key=lambda o: len(json.dumps(o, default=str)))


def _describe(exc: ValidationError) -> str:
    errors = exc.errors()
    parts = []
    for err in errors[:3]:
        loc = ".".join(str(p) for p in err.get("loc", ()))
        msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
        parts.append(f"{loc}: {msg}" if loc else msg)
    if len(errors) > 3:
        parts.append(f"and {len(errors) - 3} more")
    return "; ".join(parts)


_M = TypeVar("_M", bound=BaseModel)


def validate_payload(payload: Any, schema: type[_M], *, what: str = "extraction") -> _M:
    """``payload`` (a parsed JSON object) validated and normalised as ``schema``.

    Raises :class:`ExtractionError` with a readable reason when its shape is wrong.
    """
    keys = set(schema.model_fields)
    if isinstance(payload, Mapping):
        payload = _unwrap(dict(payload), keys)
        if payload and not set(payload) & keys:
            raise ExtractionError(
                f"{what}: the model's JSON object has none of the keys "
                f"{', '.join(sorted(keys))} (it has {', '.join(sorted(map(str, payload))[:6])})"
            )
    try:
        return schema.model_validate(payload)
    except ValidationError as exc:
        raise ExtractionError(f"{what}: the model's answer has the wrong shape: {_describe(exc)}") from exc


def parse_text(text: str, schema: type[_M], *, what: str = "extraction") -> _M:
    """A text answer parsed (tolerantly, see :func:`parse_json_object`) and validated."""
    try:
        payload = parse_json_object(text, set(schema.model_fields))
    except ExtractionError as exc:
        raise ExtractionError(f"{what}: {exc}") from None
    return validate_payload(payload, schema, what=what)


def _from_raw(raw: Any, schema: type[_M], what: str) -> _M:
    """The answer recovered from a raw model message: tool-call args first, then text."""
    if not isinstance(raw, BaseMessage):
        raise ExtractionError(f"{what}: the model returned {_kind(raw)}, not a message")
    reasons: list[str] = []
    payloads: list[Any] = []
    if isinstance(raw, AIMessage):
        calls = sorted(raw.tool_calls, key=lambda c: c.get("name") != schema.__name__)
        payloads.extend(c.get("args") for c in calls)
        for bad in raw.invalid_tool_calls:
            args = bad.get("args")
            if isinstance(args, str):
                try:
                    payloads.append(parse_json_object(args, set(schema.model_fields)))
                except ExtractionError:
                    reasons.append(
                        f"tool call {bad.get('name')!r} has invalid JSON arguments {_brief(args, 80)}"
                    )
    for payload in payloads:
        try:
            return validate_payload(payload, schema, what=what)
        except ExtractionError as exc:
            reasons.append(str(exc).removeprefix(f"{what}: "))
    text = raw.text
    if text.strip():
        try:
            return parse_text(text, schema, what=what)
        except ExtractionError as exc:
            reasons.append(str(exc).removeprefix(f"{what}: "))
    elif not payloads and not reasons:
        reasons.append("the model's answer is empty (no tool call, no text)")
    raise ExtractionError(f"{what}: " + "; ".join(reasons))


# --------------------------------------------------------------------------- LLM extractor


def _check_messages(messages: Any, field: str) -> list[BaseMessage]:
    if isinstance(messages, (str, bytes, BaseMessage)) or not isinstance(messages, Sequence):
        raise InvalidInputError(f"{field} must be a sequence of messages, got {type(messages).__name__}")
    for i, message in enumerate(messages):
        if not isinstance(message, BaseMessage):
            raise InvalidInputError(
                f"{field}[{i}] must be a langchain BaseMessage, got {type(message).__name__}"
            )
    return list(messages)


def _check_names(names: Any) -> list[str]:
    if isinstance(names, str) or not isinstance(names, (Sequence, Collection)):
        raise InvalidInputError("known_entities must be a sequence of names")
    out = []
    for name in names:
        if not isinstance(name, str):
            raise InvalidInputError(f"known_entities holds {type(name).__name__}, not a name")
        if name.strip():
            out.append(_clean(name))
    return out


def _check_tokens(value: Any, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInputError(f"{field} must be a non-negative int, got {value!r}")
    return value


def _check_summary(summary: Any) -> str | None:
    if summary is not None and not isinstance(summary, str):
        raise InvalidInputError(f"summary must be a str or None, got {type(summary).__name__}")
    return summary


_MAX_KNOWN_ENTITIES = 200


def _known_block(names: Sequence[str]) -> str:
    if not names:
        return "(none)"
    return "\n".join(f"- {_defang(n[:100])}" for n in names[:_MAX_KNOWN_ENTITIES])


def _model_id(model: BaseChatModel) -> str:
    for attr in ("model_name", "model", "model_id", "deployment_name"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            return value
    return "?"


def _overrides(model: BaseChatModel, attr: str) -> bool:
    return getattr(type(model), attr) is not getattr(BaseChatModel, attr)


class LLMExtractor:
    """The :class:`Extractor` over any chat model: one structured call per turn.

    ``method`` is passed to ``with_structured_output`` (``"function_calling"`` by default,
    ``"json_schema"`` or ``"json_mode"`` where a provider prefers them); ``"text"`` forces
    the plain-call JSON parser even for a model with tool calling. ``timeout`` bounds each
    model call in seconds (see the module doc for what happens to a hung call).
    """

    offline = False

    def __init__(
        self,
        model: BaseChatModel,
        *,
        prompts: Prompts | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        counter: TokenCounter | None = None,
        method: Literal["function_calling", "json_schema", "json_mode", "text"] = "function_calling",
        max_message_tokens: int = DEFAULT_MAX_MESSAGE_TOKENS,
    ) -> None:
        if not isinstance(model, BaseChatModel):
            raise InvalidInputError(
                f"model must be a langchain BaseChatModel, got {type(model).__name__}"
            )
        if prompts is not None and not isinstance(prompts, Prompts):
            raise InvalidInputError(f"prompts must be a Prompts, got {type(prompts).__name__}")
        if (
            isinstance(timeout, bool)
            or not isinstance(timeout, (int, float))
            or not math.isfinite(timeout)
            or timeout <= 0
        ):
            raise InvalidInputError(f"timeout must be a positive number of seconds, got {timeout!r}")
        if method not in ("function_calling", "json_schema", "json_mode", "text"):
            raise InvalidInputError(f"unknown structured-output method {method!r}")
        if counter is not None and not isinstance(counter, TokenCounter):
            raise InvalidInputError(f"counter must be a TokenCounter, got {type(counter).__name__}")
        self.model = model
        self.prompts = prompts or Prompts()
        self.timeout = float(timeout)
        self.method = method
        self.max_message_tokens = _check_tokens(max_message_tokens, "max_message_tokens")
        self.name = f"llm:{type(model).__name__}:{_model_id(model)}"
        self._counter = counter
        self._turn_runnable = self._structured(TurnExtraction)
        self._episode_runnable = self._structured(EpisodeExtraction)
        #: Whether answers come through ``with_structured_output`` (else parsed from text).
        self.structured = self._turn_runnable is not None
        self._json_prompt = not self.structured or method == "json_mode"

    @property
    def counter(self) -> TokenCounter:
        """The token counter (tiktoken ``cl100k_base`` unless one was given)."""
        if self._counter is None:
            self._counter = TiktokenCounter()
        return self._counter

    def _structured(self, schema: type[BaseModel]) -> Any:
        if self.method == "text":
            return None
        if not (_overrides(self.model, "bind_tools") or _overrides(self.model, "with_structured_output")):
            return None
        try:
            return self.model.with_structured_output(schema, include_raw=True, method=self.method)
        except NotImplementedError:
            return None
        except (TypeError, ValueError):
            pass  # an integration whose with_structured_output takes no `method`
        try:
            return self.model.with_structured_output(schema, include_raw=True)
        except NotImplementedError:
            return None
        except Exception as exc:
            logger.warning(
                "%s: with_structured_output failed (%s); parsing JSON from text instead",
                self.name,
                exc,
            )
            return None

    # -- calls

    def _invoke(self, runnable: Any, prompt: list[BaseMessage], what: str) -> Any:
        box: dict[str, Any] = {}
        done = threading.Event()
        # Callbacks and tracing live in context variables: carry them into the worker.
        context = contextvars.copy_context()

        def run() -> None:
            try:
                box["value"] = context.run(runnable.invoke, prompt)
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
                box["error"] = exc
            finally:
                done.set()

        worker = threading.Thread(target=run, name=f"tiered-memory-{what}", daemon=True)
        worker.start()
        if not done.wait(self.timeout):
            raise ExtractionTimeoutError(
                f"{what}: {self.name} did not answer within {self.timeout:g} s; the call "
                "was abandoned (raise timeout= for slow local models)"
            )
        if "error" in box:
            exc = box["error"]
            if not isinstance(exc, Exception):
                raise exc
            raise ExtractionError(
                f"{what}: {self.name} failed: {type(exc).__name__}: {exc}"
            ) from exc
        return box["value"]

    def _ask(self, runnable: Any, schema: type[_M], system: str, user: str, what: str) -> _M:
        prompt: list[BaseMessage] = [SystemMessage(system), HumanMessage(user)]
        if runnable is None:
            answer = self._invoke(self.model, prompt, what)
            return _from_raw(answer, schema, what)
        out = self._invoke(runnable, prompt, what)
        if isinstance(out, schema):
            return out
        if isinstance(out, Mapping) and "raw" in out:
            parsed, error = out.get("parsed"), out.get("parsing_error")
            if isinstance(parsed, schema) and error is None:
                return parsed
            if isinstance(parsed, Mapping) and error is None:
                return validate_payload(parsed, schema, what=what)
            try:
                return _from_raw(out.get("raw"), schema, what)
            except ExtractionError as exc:
                if error is None:
                    raise
                if isinstance(error, ValidationError):
                    # The same arguments were re-validated: exc already says what is wrong.
                    raise exc from error
                raise ExtractionError(
                    f"{exc}; structured output said: {type(error).__name__}: {_brief(str(error), 200)}"
                ) from error
        if isinstance(out, BaseMessage):
            return _from_raw(out, schema, what)
        if isinstance(out, Mapping):
            return validate_payload(out, schema, what=what)
        raise ExtractionError(f"{what}: structured output returned {_kind(out)}")

    def _render(self, messages: Sequence[BaseMessage]) -> str:
        return render_messages(
            messages, counter=self.counter, max_message_tokens=self.max_message_tokens
        )

    # -- the Extractor protocol

    def extract_turn(
        self,
        messages: Sequence[BaseMessage],
        *,
        summary: str | None = None,
        evicted: Sequence[BaseMessage] = (),
        known_entities: Sequence[str] = (),
        summary_max_tokens: int = 2000,
    ) -> TurnExtraction:
        """Entities, memories and (with ``evicted``) the new summary, in one model call.

        No call is made when there are neither messages nor evicted messages. Raises
        :class:`ExtractionError` (or :class:`ExtractionTimeoutError`) when the answer cannot
        be used.
        """
        turn = _check_messages(messages, "messages")
        gone = _check_messages(evicted, "evicted")
        summary = _check_summary(summary)
        known = _check_names(known_entities)
        budget = _check_tokens(summary_max_tokens, "summary_max_tokens")
        if not turn and not gone:
            return TurnExtraction()
        p = self.prompts
        system = p.turn_system + (p.json_turn if self._json_prompt else "")
        user = p.render("turn_user", known_entities=_known_block(known), conversation=self._render(turn))
        if gone:
            user += p.render(
                "turn_summary",
                summary=_defang(summary) if summary and summary.strip() else "(empty)",
                evicted=self._render(gone),
                max_tokens=budget,
            )
        else:
            user += p.render("turn_no_summary")
        result = self._ask(self._turn_runnable, TurnExtraction, system, user, "turn extraction")
        if not gone:
            return result.model_copy(update={"summary": None}) if result.summary else result
        if not result.summary:
            from .offline import extractive_summary

            logger.warning(
                "%s returned no summary although messages were evicted; folding them in "
                "extractively",
                self.name,
            )
            folded = extractive_summary(gone, previous=summary, max_tokens=budget, counter=self.counter)
            return result.model_copy(update={"summary": folded or summary})
        return result

    def extract_episode(self, messages: Sequence[BaseMessage]) -> EpisodeExtraction:
        """A record of a finished conversation, in one model call."""
        turn = _check_messages(messages, "messages")
        if not turn:
            raise InvalidInputError("extract_episode needs at least one message")
        p = self.prompts
        system = p.episode_system + (p.json_episode if self._json_prompt else "")
        user = p.render("episode_user", conversation=self._render(turn))
        return self._ask(self._episode_runnable, EpisodeExtraction, system, user, "episode extraction")

    def compress_summary(self, summary: str, max_tokens: int) -> str:
        """``summary`` under ``max_tokens``: a model rewrite, cut extractively if still over.

        A summary already within budget is returned unchanged, without a call.
        """
        if not isinstance(summary, str):
            raise InvalidInputError(f"summary must be a str, got {type(summary).__name__}")
        budget = _check_tokens(max_tokens, "max_tokens")
        if self.counter.count_text(summary) <= budget:
            return summary
        if budget == 0:
            return ""
        p = self.prompts
        prompt: list[BaseMessage] = [
            SystemMessage(p.render("compress_system", max_tokens=budget)),
            HumanMessage(p.render("compress_user", summary=_defang(summary), max_tokens=budget)),
        ]
        answer = self._invoke(self.model, prompt, "summary compression")
        if not isinstance(answer, BaseMessage):
            raise ExtractionError(f"summary compression: the model returned {_kind(answer)}")
        text = _THINK.sub("", answer.text).strip()
        fenced = _CODE_FENCE.fullmatch(text)
        if fenced:
            text = fenced.group(1).strip()
        if not text:
            raise ExtractionError("summary compression: the model returned an empty summary")
        if self.counter.count_text(text) > budget:
            from .offline import compress_extractive

            text = compress_extractive(text, budget, self.counter)
        return text


# --------------------------------------------------------------------------- defaults


def default_model() -> BaseChatModel | None:
    """``ChatOpenAI(model="gpt-4o-mini")`` when ``OPENAI_API_KEY`` is set, else ``None``.

    ``OPENAI_BASE_URL`` (read by the OpenAI client) points it at any OpenAI-compatible
    server, e.g. a local vLLM, Ollama or llama.cpp.
    """
    if not os.environ.get("OPENAI_API_KEY", "").strip():
        return None
    try:
        from langchain_openai import ChatOpenAI

        return ChatOpenAI(model=DEFAULT_OPENAI_MODEL)
    except Exception as exc:
        logger.warning("OPENAI_API_KEY is set but ChatOpenAI cannot be built (%s); working offline", exc)
        return None


def make_extractor(
    model: BaseChatModel | Extractor | None = None,
    *,
    prompts: Prompts | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    counter: TokenCounter | None = None,
) -> Extractor:
    """The extractor for ``model``: an :class:`LLMExtractor` over it, over
    :func:`default_model` when it is ``None``, or the :class:`OfflineExtractor` when there
    is no model at all. An :class:`Extractor` passed in is returned as is.
    """
    if model is not None and not isinstance(model, BaseChatModel):
        if isinstance(model, Extractor):
            return model
        raise InvalidInputError(
            f"model must be a langchain BaseChatModel or None, got {type(model).__name__}"
        )
    chosen = model if model is not None else default_model()
    if chosen is None:
        from .offline import OfflineExtractor

        return OfflineExtractor(counter=counter)
    return LLMExtractor(chosen, prompts=prompts, timeout=timeout, counter=counter)


def __getattr__(name: str) -> Any:
    # offline.py imports the models above; importing it lazily avoids a cycle.
    if name == "OfflineExtractor":
        from .offline import OfflineExtractor

        return OfflineExtractor
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_IMPORTANCE",
    "ENTITY_TYPES",
    "MEMORY_TYPES",
    "RELATION_ATTRIBUTE",
    "SELF",
    "USER_ENTITY",
    "EpisodeExtraction",
    "ExtractedEntity",
    "ExtractedMemory",
    "Extractor",
    "LLMExtractor",
    "OfflineExtractor",
    "TurnExtraction",
    "default_model",
    "make_extractor",
    "message_text",
    "normalise_attributes",
    "normalise_importance",
    "parse_json_object",
    "parse_text",
    "render_messages",
    "speaker",
    "validate_payload",
]
