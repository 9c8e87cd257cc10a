"""The spend page's charts as geometry: columns per day, bars per user (the template draws
them as inline SVG; nothing is fetched from elsewhere)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Column", "columns", "rows"]

#: The chart's drawing height and a column's width, in SVG units.
HEIGHT = 160
WIDTH = 28


@dataclass(frozen=True)
class Column:
    """One day or one user: its label, calls and tokens, and the bar's length (0..1 of the
    largest)."""

    label: str
    calls: int
    tokens: int
    share: float
    x: int
    height: float


def columns(by_day: Mapping[str, Mapping[str, Any]]) -> list[Column]:
    """One column per day, oldest first, its height the day's tokens."""
    return _scaled(sorted(by_day.items()))


def rows(by_user: Mapping[str, Mapping[str, Any]]) -> list[Column]:
    """One bar per user, the most tokens first."""
    return _scaled(list(by_user.items()))


def _scaled(items: list[tuple[str, Mapping[str, Any]]]) -> list[Column]:
    tokens = [int(v.get("total_tokens") or 0) for _, v in items]
    top = max(tokens, default=0) or 1
    return [
        Column(label, int(v.get("calls") or 0), n, n / top, i * (WIDTH + 6), HEIGHT * n / top)
        for i, ((label, v), n) in enumerate(zip(items, tokens))
    ]
