"""What a turn asks the memory layers for, and how a layer answers with a section.

The request names storage and index types (the thread's row, the turn's batched searches),
so it lives here with the layers rather than beside :class:`~..context.ContextSection`, a
value the public API returns.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from ..context import ContextSection

if TYPE_CHECKING:
    from ..index.searches import Searches
    from ..storage.rows import ThreadRow
    from ..tokens import TokenCounter

__all__ = ["SectionProvider", "SectionRequest", "section_of_lines"]


@dataclass(frozen=True)
class SectionRequest:
    """What a turn asks the memory layers for: whose, which thread, about what, and when.

    ``peek``: a look that must change nothing (no recall is counted). ``at``: the time of
    the question (relative dates in the query are read against it). ``searches``: the
    turn's index searches, run in one trip (a layer that searches adds its probes in
    ``plan`` and reads them in ``section``); ``None``: each layer searches on its own.
    """

    user_id: str
    thread: ThreadRow | None
    query: str | None
    peek: bool = False
    at: datetime | None = None
    searches: Searches | None = None


class SectionProvider(Protocol):
    """A memory layer that contributes a section to the context (summary, entities, …).

    A layer that searches the index may also have ``plan(request)``, called for every
    layer before any section is built: it adds its probes to ``request.searches``, so the
    turn's searches go to the engine together.
    """

    name: str

    def section(self, request: SectionRequest, max_tokens: int) -> ContextSection | None:
        """The layer's section for this turn, at most ``max_tokens`` tokens, or ``None``."""


def section_of_lines(
    name: str, lines: Iterable[str], counter: TokenCounter, budget: int
) -> ContextSection | None:
    """A section of the best-first ``lines`` that fit ``budget`` tokens; ``None`` if none fits."""
    kept: list[str] = []
    used = 0
    for line in lines:
        cost = counter.count_text(line + "\n")
        if used + cost > budget:
            break
        kept.append(line)
        used += cost
    if not kept:
        return None
    text = "\n".join(kept)
    return ContextSection(name, text, counter.count_text(text))
