"""The translation of a :class:`~.records.Where` into an engine filter: :class:`FilterBuilder`
does it once for all engines, each engine supplies the constructors.
"""

from __future__ import annotations

import abc
from datetime import datetime, timezone
from typing import Any

from ..errors import VectorStoreError
from .records import Range, Where

__all__ = ["FilterBuilder", "iso"]


class FilterBuilder(abc.ABC):
    """The engine's filter constructors; :meth:`build` does the translation once for all."""

    @abc.abstractmethod
    def match(self, key: str, value: str | int | bool) -> Any:
        """``key`` equals ``value``."""

    @abc.abstractmethod
    def match_any(self, key: str, values: list[Any]) -> Any:
        """``key`` is one of ``values``."""

    @abc.abstractmethod
    def range(self, key: str, bounds: Range) -> Any:
        """``key`` within ``bounds`` (datetimes as ISO strings, or numbers)."""

    @abc.abstractmethod
    def has_id(self, ids: list[str]) -> Any:
        """The point is one of ``ids``."""

    @abc.abstractmethod
    def conjunction(self, must: list[Any], must_not: list[Any]) -> Any:
        """All of ``must`` and none of ``must_not``."""

    def build(self, where: Where | None) -> Any:
        """The engine filter of ``where`` (``None`` when it matches everything)."""
        if where is None or where.is_empty():
            return None
        must: list[Any] = [self.match(k, v) for k, v in where.equals.items()]
        must_not: list[Any] = []
        for key, values in where.any_of.items():
            if not values:
                raise VectorStoreError(f"Where.any_of[{key!r}] is empty: it would match nothing")
            must.append(self.match_any(key, list(values)))
        for key, values in where.none_of.items():
            if values:
                must_not.append(self.match_any(key, list(values)))
        for key, bounds in where.ranges.items():
            must.append(self.range(key, bounds))
        if where.ids is not None:
            must.append(self.has_id(list(where.ids)))
        if where.exclude_ids:
            must_not.append(self.has_id(list(where.exclude_ids)))
        for sub in where.excluded:
            built = self.build(sub)
            if built is not None:
                must_not.append(built)
        return self.conjunction(must, must_not)


def iso(value: datetime) -> str:
    """A datetime as Qdrant stores it: ISO 8601 in UTC with an explicit offset."""
    if value.tzinfo is None:
        raise ValueError("datetimes stored in Qdrant must be timezone-aware")
    return value.astimezone(timezone.utc).isoformat()
