"""What models write, turned into the values memory stores, and the limits of one answer.

Models write importance as "80%", types as "city", attributes as lists of pairs; each
normaliser here accepts what real models send and raises ``ValueError`` (with a readable
reason) only for what cannot be meant as a value at all. Types and their aliases come from
:mod:`langchain_tiered_memory.vocabulary`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from ..entries import MAX_CONTENT_CHARS, MAX_CONTENT_TOKENS
from ..vocabulary import entity_type, memory_type

__all__ = [
    "DEFAULT_IMPORTANCE",
    "MAX_ATTRIBUTES",
    "MAX_ATTRIBUTE_KEY_CHARS",
    "MAX_ATTRIBUTE_VALUE_CHARS",
    "MAX_CONTENT_CHARS",
    "MAX_CONTENT_TOKENS",
    "MAX_ENTITIES",
    "MAX_ENTITY_NAME_CHARS",
    "MAX_EPISODE_ITEMS",
    "MAX_EPISODE_TEXT_CHARS",
    "MAX_MEMORIES",
    "brief",
    "kind_of",
    "clean_text",
    "normalise_attribute_key",
    "normalise_attribute_value",
    "normalise_attributes",
    "normalise_entity_type",
    "normalise_importance",
    "normalise_memory_type",
    "split_attributes",
]

DEFAULT_IMPORTANCE = 0.5

# Limits of what one answer may add. A turn names a few entities and states a few facts; an
# answer past these is a model looping or quoting a document, and applying it would cost one
# embedding and one write per item. The excess is dropped and recorded on the result.
#: Entities kept from one answer.
MAX_ENTITIES = 50
#: Memories kept from one answer.
MAX_MEMORIES = 50
#: Attributes kept per entity.
MAX_ATTRIBUTES = 50
#: Longest entity name: a name, not a sentence.
MAX_ENTITY_NAME_CHARS = 200
#: Longest attribute key.
MAX_ATTRIBUTE_KEY_CHARS = 100
#: Longest attribute value: a short fact, as the prompt asks.
MAX_ATTRIBUTE_VALUE_CHARS = 2_000
#: Decisions and topics kept from one episode answer (each list).
MAX_EPISODE_ITEMS = 20
#: Longest episode summary, outcome, decision or topic (longer text is cut).
MAX_EPISODE_TEXT_CHARS = 8_000
# Memory content has the long-term layer's limits (MAX_CONTENT_CHARS, MAX_CONTENT_TOKENS,
# imported from vectors.py), so that nothing extracted is refused when it is stored.

_IMPORTANCE_WORDS = {
    "critical": 1.0, "very high": 0.9, "high": 0.8, "medium": 0.5, "moderate": 0.5,
    "normal": 0.5, "low": 0.2, "very low": 0.1, "none": 0.0,
}


def brief(value: Any, limit: int = 60) -> str:
    """``repr(value)``, cut to ``limit`` characters, for error messages."""
    text = repr(value) if not isinstance(value, str) or len(value) <= 4 * limit else repr(value[: 4 * limit])
    return text if len(text) <= limit else text[: limit - 1] + "…"


def kind_of(value: Any) -> str:
    """The type and a brief repr of ``value``, for error messages."""
    return f"{type(value).__name__} {brief(value)}"


def clean_text(text: str) -> str:
    """``text`` with its whitespace collapsed to single spaces."""
    return " ".join(text.split())


def normalise_importance(value: Any) -> float | None:
    """``value`` as an importance in 0..1 (clamped); ``None`` for NaN, which drops a memory.

    Missing is :data:`DEFAULT_IMPORTANCE`; "0.8", "80%", "high" are understood. Raises
    ``ValueError`` for what is not a number at all (a boolean, a list, "very").
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
            raise ValueError(f"importance must be a number from 0 to 1, got {brief(value)}") from None
        if percent:
            number /= 100
    else:
        raise ValueError(f"importance must be a number from 0 to 1, got {kind_of(value)}")
    if math.isnan(number):
        return None
    return min(1.0, max(0.0, number))


def normalise_memory_type(value: Any) -> str:
    """One of the memory types; an unknown type becomes ``"fact"`` (it only groups)."""
    if value is None:
        return "fact"
    if not isinstance(value, str):
        raise ValueError(f"memory_type must be a string, got {kind_of(value)}")
    return memory_type(value) or "fact"


def normalise_entity_type(value: Any) -> str:
    """One of the entity types; an unknown type becomes ``"other"``."""
    if value is None:
        return "other"
    if not isinstance(value, str):
        raise ValueError(f"entity type must be a string, got {kind_of(value)}")
    return entity_type(value) or "other"


def normalise_attribute_value(value: Any) -> str | None:
    """An attribute value as text (lists joined, booleans true/false); ``None`` if empty.

    Raises ``ValueError`` when it is longer than :data:`MAX_ATTRIBUTE_VALUE_CHARS`.
    """
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
        parts = [p for p in (normalise_attribute_value(v) for v in value[:MAX_ATTRIBUTES]) if p]
        text = ", ".join(parts)
    elif isinstance(value, Mapping):
        text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    else:
        text = str(value)
    if len(text) > 2 * MAX_ATTRIBUTE_VALUE_CHARS:  # cheap test first: cleaning only shrinks
        text = text[: 2 * MAX_ATTRIBUTE_VALUE_CHARS + 1]
    text = clean_text(text)
    if len(text) > MAX_ATTRIBUTE_VALUE_CHARS:
        raise ValueError(f"the value is longer than {MAX_ATTRIBUTE_VALUE_CHARS:,} characters")
    return text or None


def normalise_attribute_key(key: Any) -> str:
    """An attribute key: lowercased, ``_`` for spaces and dashes; ``""`` if empty."""
    text = str(key)[: MAX_ATTRIBUTE_KEY_CHARS * 2]
    name = re.sub(r"[\s\-]+", "_", text.strip().lower()).strip("_")
    if len(name) > MAX_ATTRIBUTE_KEY_CHARS:
        raise ValueError(f"the key is longer than {MAX_ATTRIBUTE_KEY_CHARS} characters")
    return name


def _pairs(value: Any) -> list[tuple[Any, Any] | str]:
    """``value``'s (key, value) pairs, or for an unusable pair the reason it is unusable."""
    if isinstance(value, Mapping):
        return list(value.items())
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"attributes must be an object of strings, got {kind_of(value)}")
    out: list[tuple[Any, Any] | str] = []
    for item in value:
        if isinstance(item, Mapping) and "value" in item:
            key = item.get("key", item.get("name", item.get("attribute")))
            out.append((key, item["value"]) if key is not None else "an attribute pair has no key")
        elif isinstance(item, (list, tuple)) and len(item) == 2:
            out.append((item[0], item[1]))
        else:
            out.append(f"an attribute must be a key and a value, got {kind_of(item)}")
    return out


def normalise_attributes(value: Any) -> dict[str, str]:
    """Attributes as ``{key: str}``; unusable ones left out (see :func:`split_attributes`)."""
    return split_attributes(value)[0]


def split_attributes(value: Any) -> tuple[dict[str, str], list[tuple[int, str]]]:
    """Attributes as ``{key: str}`` and the ``(position, reason)`` of each one dropped.

    Accepts an object or a list of ``{"key", "value"}`` pairs (what strict JSON schemas
    ask for). Empty and null values are left out silently (models send them for "unknown");
    a pair without a key, an over-long key or value, and every attribute past
    :data:`MAX_ATTRIBUTES` are dropped with a reason. Raises ``ValueError`` only when
    ``value`` is neither an object nor a list.
    """
    if value is None:
        return {}, []
    out: dict[str, str] = {}
    dropped: list[tuple[int, str]] = []
    pairs = _pairs(value)
    for i, pair in enumerate(pairs):
        if i == MAX_ATTRIBUTES:
            dropped.append((i, f"{len(pairs) - i} attributes past the limit of {MAX_ATTRIBUTES} per entity"))
            break
        if isinstance(pair, str):
            dropped.append((i, pair))
            continue
        try:
            name, text = normalise_attribute_key(pair[0]), normalise_attribute_value(pair[1])
        except ValueError as exc:
            dropped.append((i, f"attribute {brief(pair[0], 40)}: {exc}"))
            continue
        if name and text:
            out[name] = text
    return out, dropped
