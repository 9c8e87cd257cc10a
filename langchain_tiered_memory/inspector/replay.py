"""A replayed turn as the page shows it: the context's parts against the budget, and each
piece of recalled evidence with its score parts, its sources and whether it was sent.

Pure: it reads a :class:`~langchain_tiered_memory.context.MemoryContext` and the evidence
:mod:`.source` fetched, and writes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

    from ..context import MemoryContext
    from ..recall.layer import Evidence

__all__ = ["Bar", "Item", "Replay", "build"]

#: Characters of a quoted text compared when telling whether the context quotes it (a
#: neighbouring message is quoted shortened; its start is enough to know it).
_PREFIX = 60
#: The context's section of recalled evidence (``RecallLayer.name``).
MEMORIES = "memories"


@dataclass(frozen=True)
class Bar:
    """One part of the context (system, a memory section, the window, overhead): its share
    of the budget (``percent``) and of the tokens used (``share``, the bar's width: at the
    default budget of 96,000 a turn uses a few hundred, and drawn against the budget every
    part was a sliver)."""

    name: str
    tokens: int
    percent: float
    share: float


@dataclass(frozen=True)
class Item:
    """One recalled piece of evidence: grain, date, score parts, sources, and its fate."""

    grain: str
    id: str
    text: str
    at: str
    score: float
    relevance: float
    dense: float | None
    sparse: float | None
    importance: float | None
    recency: float | None
    thread_id: str | None
    message_ids: tuple[str, ...]
    #: ``"sent"`` (the memories section quotes it), ``"window"`` (its messages are in the
    #: window, sent as they are) or ``"cut"`` (left out by the section's budget).
    fate: str

    @property
    def sent(self) -> bool:
        """Whether the model would see it (quoted, or in the window)."""
        return self.fate != "cut"


@dataclass(frozen=True)
class Message:
    """A message of the window with its tokens."""

    type: str
    id: str | None
    text: str
    tokens: int


@dataclass
class Replay:
    """Everything the replay page shows."""

    user_id: str
    thread_id: str
    query: str | None
    budget: int
    total: int
    remaining: int
    bars: list[Bar]
    sections: list[tuple[str, int, str]]
    items: list[Item]
    window: list[Message]
    system: str | None
    evicted: int
    truncated: bool
    degraded: tuple[str, ...]
    limits: dict[str, int] = field(default_factory=dict)

    @property
    def used_percent(self) -> float:
        """The tokens used, as a share of the budget (the gauge under the bar)."""
        return min(100.0, 100.0 * self.total / max(self.budget, 1))

    @property
    def cut(self) -> list[Item]:
        """Evidence ranked but not sent."""
        return [i for i in self.items if not i.sent]


def build(
    context: MemoryContext, evidence: Sequence[Evidence], count: Callable[[BaseMessage], int],
    limits: dict[str, int] | None = None,
) -> Replay:
    """The page's view of a replayed turn."""
    usage = context.token_usage
    budget, used = max(usage.budget, 1), max(usage.total, 1)
    bars = [Bar(name, tokens, 100.0 * tokens / budget, 100.0 * tokens / used) for name, tokens in usage.items() if tokens]
    quoted = next((s.text for s in context.sections if s.name == MEMORIES), "")
    said = _flat(quoted)
    window = [Message(m.type, m.id, m.text, count(m)) for m in context.window]
    in_window = {m.id for m in window if m.id}
    items = [_item(e, said, in_window) for e in evidence]
    system = context.system_message.text if context.system_message is not None else None
    return Replay(
        user_id=context.user_id, thread_id=context.thread_id, query=context.query, budget=usage.budget,
        total=usage.total, remaining=usage.remaining, bars=bars,
        sections=[(s.name, s.tokens, s.text) for s in context.sections], items=items, window=window,
        system=system, evicted=context.evicted, truncated=context.truncated, degraded=tuple(context.degraded),
        limits=dict(limits or {}),
    )


def _item(e: Evidence, said: str, in_window: set[str]) -> Item:
    parts = e.parts
    return Item(
        grain=e.grain, id=e.id, text=e.text, at=e.at.astimezone().strftime("%Y-%m-%d %H:%M"),
        score=e.score, relevance=e.relevance,
        dense=parts.dense if parts else None, sparse=parts.sparse if parts else None,
        importance=parts.effective_importance if parts else None, recency=parts.decay if parts else None,
        thread_id=e.thread_id, message_ids=tuple(e.message_ids), fate=_fate(e, said, in_window),
    )


def _fate(e: Evidence, said: str, in_window: set[str]) -> str:
    if _quoted(e, said):
        return "sent"
    if e.grain != "fact" and e.message_ids and set(e.message_ids) <= in_window:
        return "window"
    return "cut"


def _quoted(e: Evidence, said: str) -> bool:
    """Whether the memories section quotes ``e``: a fact's or an episode's text, or the
    start of one of a turn's messages (the section renders them with speaker and time)."""
    if not said:
        return False
    texts = [line.text for line in e.lines] if e.lines else [e.text]
    return any(_flat(t)[:_PREFIX] in said for t in texts if t.strip())


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()
