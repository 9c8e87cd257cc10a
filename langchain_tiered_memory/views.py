"""Values the public API returns that are plain containers and render as tables in Jupyter:
the stats, a search's results, an entity profile."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .display import entity_html, hits_html, stats_html

if TYPE_CHECKING:
    from .entries import MemoryHit

__all__ = ["AttributeValue", "Entity", "MemoryStats", "SearchResults"]


class MemoryStats(dict[str, Any]):
    """What :meth:`TieredMemory.stats` returns: a plain ``dict`` (equal to one, JSON-able)
    that renders as a table in Jupyter."""

    def _repr_html_(self) -> str:
        return stats_html(self)


class SearchResults(list["MemoryHit"]):
    """What :meth:`TieredMemory.search` returns: a plain ``list`` of ``MemoryHit`` (equal to
    one) that renders as a table in Jupyter. ``query`` is the text searched for."""

    query: str | None

    def __init__(self, hits: Iterable[MemoryHit] = (), query: str | None = None) -> None:
        super().__init__(hits)
        self.query = query

    def _repr_html_(self) -> str:
        return hits_html(self, query=self.query)


@dataclass(frozen=True)
class AttributeValue:
    """One value an attribute had: when it was learned, from where, and until when."""

    value: str
    learned_at: str
    source_thread: str | None
    source_message: str | None
    superseded_at: str | None


@dataclass(frozen=True)
class Entity:
    """An entity profile: its current attributes and, from :meth:`TieredMemory.entity`, their history."""

    name: str
    type: str
    attributes: dict[str, str]
    created_at: str
    updated_at: str
    history: dict[str, list[AttributeValue]]

    def _repr_html_(self) -> str:
        return entity_html(self)
