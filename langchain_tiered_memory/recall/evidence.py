"""What recall returns: one recalled unit of any grain (:class:`Evidence`).

Its own module so that what ranks and quotes evidence (:mod:`.layer`, :mod:`.quotes`) can
both name it without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from .. import scoring
from ..entries import MemoryEntry
from .dialogue import Line

__all__ = ["Evidence"]


@dataclass(frozen=True)
class Evidence:
    """One recalled unit: what it says, when, where from, and how well it matched.

    ``grain`` is ``fact`` (a long-term memory: ``memory`` holds it), ``turn`` (one message),
    ``window`` (a few consecutive messages) or ``session`` (an episode). ``message_ids`` are
    the messages it came from (a fact's sources, a turn's own id, a window's or a session's
    span); ``at`` is when it was said. ``parts`` explains the score with ``explain=True``.
    """

    grain: str
    id: str
    text: str
    at: datetime
    message_ids: tuple[str, ...]
    score: float
    relevance: float
    thread_id: str | None = None
    memory: MemoryEntry | None = None
    lines: tuple[Line, ...] = field(default=(), repr=False)
    parts: scoring.ScoreParts | None = None
