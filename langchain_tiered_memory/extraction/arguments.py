"""The checks on what callers pass an extractor: messages, known entity names, token counts
and the current summary. Each failure is an :class:`InvalidInputError` naming the argument."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from langchain_core.messages import BaseMessage

from ..errors import InvalidInputError
from ..vocabulary import entity_type
from .normalise import brief, clean_text

__all__ = ["check_messages", "check_names", "check_summary", "check_tokens", "check_types"]


def check_messages(messages: Any, field: str) -> list[BaseMessage]:
    """``messages`` as a list of messages, or :class:`InvalidInputError` naming ``field``."""
    if isinstance(messages, (str, bytes, BaseMessage)) or not isinstance(messages, Sequence):
        raise InvalidInputError(f"{field} must be a sequence of messages, got {type(messages).__name__}")
    for i, message in enumerate(messages):
        if not isinstance(message, BaseMessage):
            raise InvalidInputError(
                f"{field}[{i}] must be a langchain BaseMessage, got {type(message).__name__}"
            )
    return list(messages)


def check_names(names: Any) -> list[str]:
    """Known entity names, blank ones left out; :class:`InvalidInputError` for a non-list."""
    if isinstance(names, str) or not isinstance(names, Collection):
        raise InvalidInputError("known_entities must be a sequence of names, e.g. ['Alice', 'Paris']")
    out = []
    for name in names:
        if not isinstance(name, str):
            raise InvalidInputError(f"known_entities holds {type(name).__name__}, not a name")
        if name.strip():
            out.append(clean_text(name))
    return out


def check_types(types: Any) -> dict[str, str]:
    """Known names' stored types (``{"Kyoto": "place"}``, or ``None``), an unknown type left
    out; :class:`InvalidInputError` for anything else."""
    if types is None:
        return {}
    if not isinstance(types, Mapping):
        raise InvalidInputError(f"known_types must be a mapping of names to entity types, got {type(types).__name__}")
    out = {}
    for name, kind in types.items():
        if not isinstance(name, str) or not isinstance(kind, str):
            raise InvalidInputError("known_types maps names (str) to entity types (str), e.g. {'Kyoto': 'place'}")
        if name.strip() and (known := entity_type(kind)) is not None:
            out[" ".join(name.split())] = known
    return out


def check_tokens(value: Any, field: str) -> int:
    """A non-negative token count, or :class:`InvalidInputError` naming ``field``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInputError(f"{field} must be a non-negative int, got {brief(value)}")
    return value


def check_summary(summary: Any) -> str | None:
    """A summary (or ``None``), or :class:`InvalidInputError`."""
    if summary is not None and not isinstance(summary, str):
        raise InvalidInputError(f"summary must be a str or None, got {type(summary).__name__}")
    return summary
