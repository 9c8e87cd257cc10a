"""Short-term memory: a progressive summary of the messages that left a thread's window.

The summary covers exactly the messages from the thread's first evicted one up to
``summarized_through``; the window starts after it, so no message is both summarised and
sent. It is rewritten by the extraction job (one LLM call folds the newly evicted messages
into it), bounded by ``summary_max_tokens``: an answer over the bound is compressed once
more, then cut.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..context import ContextSection
from .sections import SectionRequest
from ..storage.rows import SummaryUpdate, ThreadRow

if TYPE_CHECKING:
    from ..storage import Storage
    from ..tokens import TokenCounter


def quoted_lines(text: str) -> str:
    """The summary as the block quotes it: one line per line of it, each a ``- `` item.

    A summary is free text written by a model from what users said; a line of it must not
    start anything of the block's own (a ``## instructions`` heading), so each reads as an
    item of the section, as the other sections' lines do.
    """
    lines = (" ".join(line.split()) for line in text.splitlines())
    # A model that wrote its summary as a list keeps its items (not "- - item").
    return "\n".join(line if line.startswith("- ") else f"- {line}" for line in lines if line)


class SummaryLayer:
    """Contributes the ``summary`` section of the context and bounds new summaries."""

    name = "summary"

    def __init__(self, storage: Storage, counter: TokenCounter, max_tokens: int) -> None:
        self._storage = storage
        self._counter = counter
        self.max_tokens = max_tokens

    def current(self, thread: ThreadRow | None) -> str | None:
        """The thread's summary text, ``None`` before anything was summarised."""
        if thread is None:
            return None
        row = self._storage.summaries.get(thread.key)
        return row.text if row else None

    def bounded(
        self,
        text: str,
        *,
        first_seq: int,
        last_seq: int,
        compress: Callable[[str, int], str] | None = None,
    ) -> SummaryUpdate:
        """A summary update within ``max_tokens``: compressed once if over, then cut."""
        text = text.strip()
        tokens = self._counter.count_text(text)
        if tokens > self.max_tokens and compress is not None:
            text = compress(text, self.max_tokens).strip()
            tokens = self._counter.count_text(text)
        if tokens > self.max_tokens:
            text = self._whole_lines(text, self.max_tokens)
            tokens = self._counter.count_text(text)
        return SummaryUpdate(text, tokens, first_seq, last_seq)

    def _whole_lines(self, text: str, max_tokens: int) -> str:
        """The first lines of ``text`` that fit ``max_tokens`` whole: a summary cut to its
        room never ends mid-item ("- Layers: A light waterproof"). Only a first line too long
        alone is cut, at a word, with an ellipsis."""
        kept: list[str] = []
        for line in text.splitlines():
            if self._counter.count_text("\n".join([*kept, line])) > max_tokens:
                break
            kept.append(line)
        while kept and not kept[-1].strip():
            kept.pop()
        if kept:
            return "\n".join(kept)
        cut = self._counter.truncate_text(text, max(max_tokens - 1, 1)).rstrip()
        if " " in cut:
            cut = cut.rsplit(" ", 1)[0]
        return (cut + "…") if self._counter.count_text(cut + "…") <= max_tokens else cut

    def section(self, request: SectionRequest, max_tokens: int) -> ContextSection | None:
        """The running summary, cut to the room left if need be."""
        thread = request.thread
        if thread is None or thread.summarized_through < 0:
            return None
        row = self._storage.summaries.get(thread.key)
        if row is None or not row.text.strip():
            return None
        text = quoted_lines(row.text)
        tokens = self._counter.count_text(text)
        if tokens > max_tokens:
            text = self._whole_lines(text, max_tokens)
            tokens = self._counter.count_text(text)
        return ContextSection(self.name, text, tokens) if text else None
