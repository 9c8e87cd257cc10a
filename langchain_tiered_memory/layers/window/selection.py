"""Which messages the window holds: the newest of a thread that fit a token budget.

The window is a contiguous newest suffix of the thread's log. Its rules:

- the oldest messages leave first; they stay in the log and become summary candidates;
- the newest system message of the thread is pinned (sent first, never evicted) and the
  thread's other system messages are not part of the sliding window;
- an AI message with tool calls is never separated from its tool results, and the window
  never starts on a tool message; a tool message that follows no tool call (an orphan,
  which a model API would reject) stays in the log but is never sent;
- when the newest message (or tool-call group) alone exceeds the budget, it is sent
  truncated: its text keeps its beginning and its end around :data:`TRUNCATION_MARKER`, and
  the stored message is left whole.

Selection is a bisection over cached prefix sums of stored token counts, so it costs
O(log n) whatever the thread's length; only the messages inside the window are ever
deserialised.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage

from ...storage.rows import IndexRow
from ...tokens import TokenCounter

#: Put where the middle of a truncated message was cut. ``{omitted}`` is the number of
#: tokens left out.
TRUNCATION_MARKER = (
    "\n[… {omitted} tokens cut by langchain-tiered-memory to fit the context window; "
    "the whole message is kept in the memory log …]\n"
)


@dataclass
class ThreadIndex:
    """What the window needs of one thread, kept in memory between turns.

    ``seqs``, ``prefix`` and ``is_tool`` describe the thread's non-system messages in log
    order; ``prefix[i]`` is the token total of the first ``i`` of them.
    """

    key: int
    generation: int
    next_seq: int = 0
    seqs: list[int] = field(default_factory=list)
    prefix: list[int] = field(default_factory=lambda: [0])
    is_tool: list[bool] = field(default_factory=list)
    system_seq: int | None = None
    system_tokens: int = 0
    messages: dict[int, BaseMessage] = field(default_factory=dict)
    # Whether the newest windowed message opens or continues a tool-call group, so that a
    # tool message appended next belongs to it.
    _in_group: bool = False

    def extend(self, rows: Sequence[IndexRow]) -> None:
        """Add rows newer than every row seen so far."""
        for row in rows:
            self.next_seq = max(self.next_seq, row.seq + 1)
            if row.type == "system":
                self.system_seq, self.system_tokens = row.seq, row.tokens
                continue
            is_tool = row.type == "tool"
            if is_tool and not self._in_group:
                continue  # an orphan tool result: never sent
            self._in_group = is_tool or (row.type == "ai" and row.tool_calls > 0)
            self.seqs.append(row.seq)
            self.prefix.append(self.prefix[-1] + row.tokens)
            self.is_tool.append(is_tool)

    def __len__(self) -> int:
        return len(self.seqs)

    def tokens(self, start: int, stop: int | None = None) -> int:
        """Token total of the non-system messages ``start:stop``."""
        stop = len(self.seqs) if stop is None else stop
        return self.prefix[stop] - self.prefix[start]

    def first_after(self, seq: int) -> int:
        """Index of the first non-system message with a seq above ``seq``."""
        return bisect.bisect_right(self.seqs, seq)

    def group_start(self, i: int) -> int:
        """Index of the message that opens the tool-call group ending at ``i``."""
        while i > 0 and self.is_tool[i]:
            i -= 1
        return i

    def load(self, start: int, loader: Callable[[list[int]], dict[int, BaseMessage]]) -> list[BaseMessage]:
        """The messages ``start:``, deserialising only those not cached yet."""
        wanted = self.seqs[start:]
        missing = [s for s in wanted if s not in self.messages]
        if missing:
            self.messages.update(loader(missing))
        return [self.messages[s] for s in wanted]

    def drop_before(self, start: int) -> None:
        """Uncache the messages before index ``start``: they left the window for good."""
        floor = self.seqs[start] if start < len(self.seqs) else self.next_seq
        if any(s < floor for s in self.messages if s != self.system_seq):
            keep = {s: m for s, m in self.messages.items() if s >= floor or s == self.system_seq}
            self.messages = keep


@dataclass(frozen=True)
class Selection:
    """Where the window starts and whether its newest group must be truncated."""

    start: int
    truncate: bool


def select(index: ThreadIndex, budget: int, floor_seq: int = -1) -> Selection:
    """Choose the window: the longest newest suffix after ``floor_seq`` within ``budget``."""
    n = len(index)
    lo = index.first_after(floor_seq)
    if lo >= n:
        return Selection(n, False)
    total = index.prefix[n]
    start = bisect.bisect_left(index.prefix, total - max(budget, 0), lo, n + 1)
    while start < n and index.is_tool[start]:
        start += 1
    if start < n:
        return Selection(start, False)
    # Nothing whole fits: send the newest group, truncated.
    return Selection(max(index.group_start(n - 1), lo), True)


def fit_group(
    messages: Sequence[BaseMessage], budget: int, counter: TokenCounter, counts: Sequence[int]
) -> list[BaseMessage]:
    """Truncate the text of the largest messages of a group until the group fits ``budget``.

    Returns ``[]`` when even empty texts do not fit (a tool call's arguments alone exceed
    the budget): a group is never split, so it is then left out.
    """
    out = list(messages)
    sizes = list(counts)
    for _ in range(len(out)):
        excess = sum(sizes) - budget
        if excess <= 0:
            return out
        j = max(range(len(out)), key=sizes.__getitem__)
        cut = truncate_message(out[j], sizes[j] - excess, counter)
        if cut is None:
            return []
        out[j] = cut
        sizes[j] = counter.count_message(cut)
    return out if sum(sizes) <= budget else []


def truncate_message(message: BaseMessage, max_tokens: int, counter: TokenCounter) -> BaseMessage | None:
    """A copy of ``message`` whose text is cut in the middle to cost at most ``max_tokens``.

    ``None`` when the message cannot be made that small by cutting its text.
    """
    text, other_blocks = _split_content(message.content)
    bare = message.model_copy(update={"content": other_blocks or ""})
    original = counter.count_text(text)
    room = max_tokens - counter.count_message(bare)
    for _ in range(8):  # a counter need not be additive: shrink until the whole fits
        keep = room - counter.count_text(TRUNCATION_MARKER.format(omitted=original))
        if keep < 0:
            return None
        cut = counter.truncate_middle(text, keep, TRUNCATION_MARKER.format(omitted=original - keep))
        content: Any = cut if not other_blocks else [{"type": "text", "text": cut}, *other_blocks]
        candidate = message.model_copy(update={"content": content})
        over = counter.count_message(candidate) - max_tokens
        if over <= 0:
            return candidate
        room -= over
    return None


def _split_content(content: Any) -> tuple[str, list[Any]]:
    if isinstance(content, str):
        return content, []
    texts, others = [], []
    for block in content:
        if isinstance(block, str):
            texts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            texts.append(str(block.get("text", "")))
        else:
            others.append(block)
    return "\n".join(texts), others
