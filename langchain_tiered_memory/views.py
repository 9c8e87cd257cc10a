"""Values the public API returns that are plain containers and render as tables in Jupyter."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .entries import MemoryHit

__all__ = ["MemoryStats", "SearchResults"]


class MemoryStats(dict[str, Any]):
    """What :meth:`TieredMemory.stats` returns: a plain ``dict`` (equal to one, JSON-able)
    that renders as a table in Jupyter."""

    def _repr_html_(self) -> str:
        from .display import stats_html

        return stats_html(self)


class SearchResults(list["MemoryHit"]):
    """What :meth:`TieredMemory.search` returns: a plain ``list`` of ``MemoryHit`` (equal to
    one) that renders as a table in Jupyter. ``query`` is the text searched for."""

    query: str | None

    def __init__(self, hits: Iterable[MemoryHit] = (), query: str | None = None) -> None:
        super().__init__(hits)
        self.query = query

    def _repr_html_(self) -> str:
        from .display import hits_html

        return hits_html(self, query=self.query)
