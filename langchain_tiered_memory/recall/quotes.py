"""The ``memories`` section of the context: recalled evidence quoted within a token budget.

Evidence arrives best first and is chosen best first while it fits; the section then reads
newest first, so that where two pieces disagree ("I live in Paris", later "we moved to
Lisbon") the one a model meets first is the current one. A fact or an episode is one dated
line. Messages are quoted as passages: evidence from the same thread whose messages overlap
or touch joins one passage, in the order they were said, so no message is quoted twice and
a question's answer reads with what was said around it. Where budget is left, the message
before and after each matching turn joins its passage too — shortened, since it is there
for context and a long reply would crowd out evidence.

A passage's first line carries its date and time; a later line carries them again only
where the conversation resumed (another day, or an hour after the line above). Within one
exchange the stamp said nothing new and cost a dozen tokens a line — about an eighth of
the section — which now quotes more evidence instead.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

from .dialogue import Line

if TYPE_CHECKING:
    from .evidence import Evidence
    from ..tokens import TokenCounter

__all__ = ["BARE_FRAME", "LINE_FRAME", "NEIGHBOUR_CHARS", "RESUMED", "Quoted", "quote_evidence"]

#: A neighbouring message is quoted up to this many characters (about 60 tokens).
NEIGHBOUR_CHARS = 280
#: What a quoted line costs beyond its message's stored count (chat format: its role or
#: name and about 4 tokens of overhead): the indent, speaker, date, time and newline. On
#: LoCoMo's messages it was 5-9; one more for safety.
LINE_FRAME = 10
#: The same for a line without its date and time: -6 to -2 there (the stored overhead pays
#: for the indent, speaker and newline); 0 is safe.
BARE_FRAME = 0
#: A line said this long after the line above it (or on another day) is stamped again.
RESUMED = timedelta(hours=1)

_EPOCH = datetime.min.replace(tzinfo=timezone.utc)

#: The messages at the given seqs of each thread, by ``(thread_id, seq)`` (the neighbours
#: of the matching turns, all read at once).
Neighbours = Callable[[Sequence[tuple[str, Sequence[int]]]], Mapping[tuple[str, int], Line]]


@dataclass
class _Passage:
    """One block of the section: a fact, an episode, or consecutive messages of a thread."""

    head: str | None = None  # a fact's or an episode's line
    thread_id: str | None = None
    lines: dict[int, Line] = field(default_factory=dict)
    context: set[int] = field(default_factory=set)  # seqs quoted as neighbours, shortened
    matched: list[int] = field(default_factory=list)  # seqs of matching turns, best first
    tokens: int = 0
    at: datetime | None = None  # when its newest line was said
    sources: frozenset[str] = frozenset()  # a fact's source messages

    def stamps(self) -> list[tuple[int, bool]]:
        """Each line's seq, in order, and whether it carries its date: the first line, and
        one where the conversation resumed after the line above it."""
        out: list[tuple[int, bool]] = []
        above: datetime | None = None
        for seq in sorted(self.lines):
            at = self.lines[seq].at
            out.append((seq, above is None or at.date() != above.date() or at - above >= RESUMED))
            above = at
        return out

    def text(self, seq: int, stamped: bool) -> str:
        limit = NEIGHBOUR_CHARS if seq in self.context else None
        return self.lines[seq].render(time=True, limit=limit, stamp=stamped)

    def render(self) -> list[str]:
        if self.head is not None:
            return [self.head]
        return [("- " if i == 0 else "  ") + self.text(seq, stamped) for i, (seq, stamped) in enumerate(self.stamps())]

    def touches(self, thread_id: str | None, seqs: Sequence[int]) -> bool:
        if self.head is not None or thread_id != self.thread_id or not self.lines:
            return False
        low, high = min(self.lines) - 1, max(self.lines) + 1
        for s in seqs:  # a loop, not any() of a generator: asked of every passage per evidence
            if low <= s <= high:
                return True
        return False


@dataclass(frozen=True)
class Quoted:
    """The section's text, its tokens, and the evidence it quotes (best first)."""

    text: str
    tokens: int
    shown: tuple[Evidence, ...]


def quote_evidence(
    evidence: Sequence[Evidence], budget: int, counter: TokenCounter, neighbours: Neighbours | None = None
) -> Quoted | None:
    """The evidence that fits ``budget`` tokens, quoted (see the module docs)."""
    passages: list[_Passage] = []
    shown: list[Evidence] = []
    present: set[str] = set()
    used = 0
    # A passage costs the sum of its lines. A message's line is priced from the count
    # stored with it (counted once, when it was written) plus its speaker and date, so
    # trying a candidate encodes nothing; a shortened line is short to count. The section
    # is counted exactly at the end, and trimmed should the estimate have fallen short.
    counted: dict[tuple[str | None, int, bool, bool], int] = {}

    def line_cost(p: _Passage, seq: int, stamped: bool) -> int:
        line = p.lines[seq]
        # Only a neighbour cut short is counted afresh: one quoted whole costs its count.
        cut = seq in p.context and len(line.text) > NEIGHBOUR_CHARS
        key = (p.thread_id, seq, cut, stamped)
        if key not in counted:
            if line.tokens is not None and not cut:
                counted[key] = line.tokens + (LINE_FRAME if stamped else BARE_FRAME)
            else:
                counted[key] = counter.count_text("  " + p.text(seq, stamped) + "\n")
        return counted[key]

    def cost(p: _Passage) -> int:
        if p.head is not None:
            return counter.count_text(p.head + "\n")
        return sum(line_cost(p, seq, stamped) for seq, stamped in p.stamps())

    for e in evidence:
        if e.grain in ("fact", "session"):
            date = f"{e.at:%Y-%m-%d}"
            label = date if e.grain == "fact" else f"{date}, session"
            p = _Passage(head=f"- [{label}] " + " ".join(e.text.split()), at=e.at,
                         sources=frozenset(e.message_ids) if e.grain == "fact" else frozenset())
            p.tokens = cost(p)
            if used + p.tokens <= budget:
                passages.append(p)
                shown.append(e)
                used += p.tokens
            continue
        new = [line for line in e.lines if line.message_id not in present]
        if not new:
            continue  # every message of it is quoted already
        seqs = [line.seq for line in new]
        joined = [i for i, p in enumerate(passages) if p.touches(e.thread_id, seqs)]
        merged = _Passage(thread_id=e.thread_id)
        for i in joined:
            merged.lines.update(passages[i].lines)
            merged.context |= passages[i].context
            merged.matched += passages[i].matched
        merged.lines.update({line.seq: line for line in new})
        merged.context -= set(seqs)  # now evidence in its own right: quoted whole
        if e.grain == "turn":
            merged.matched.append(new[0].seq)
        merged.tokens = cost(merged)
        merged.at = max(line.at for line in merged.lines.values())
        delta = merged.tokens - sum(passages[i].tokens for i in joined)
        if used + delta > budget:
            continue
        if joined:
            passages[joined[0]] = merged
            for i in reversed(joined[1:]):
                del passages[i]
        else:
            passages.append(merged)
        shown.append(e)
        present.update(line.message_id for line in new)
        used += delta
    if not passages:
        return None
    if neighbours is not None:
        used = _add_neighbours(passages, present, budget, used, cost, neighbours)
    # A fact drawn from messages quoted whole says again what they say, in other words.
    whole = {line.message_id for p in passages for seq, line in p.lines.items()
             if seq not in p.context or len(line.text) <= NEIGHBOUR_CHARS}
    repeated = [p for p in passages if p.sources and p.sources <= whole]
    if repeated:
        said_again = {p.sources for p in repeated}
        passages = [p for p in passages if p not in repeated]
        shown = [e for e in shown if not (e.grain == "fact" and frozenset(e.message_ids) in said_again)]
    while True:
        newest_first = sorted(passages, key=lambda p: p.at or _EPOCH, reverse=True)
        text = "\n".join(line for p in newest_first for line in p.render())
        tokens = counter.count_text(text)
        if tokens <= budget or len(passages) == 1:
            break
        passages.pop()  # the estimate fell short: the least relevant passage goes
    return Quoted(text, tokens, tuple(shown))


def _add_neighbours(
    passages: Sequence[_Passage], present: set[str], budget: int, used: int,
    cost: Callable[[_Passage], int], neighbours: Neighbours,
) -> int:
    """Around each matching turn, the message before and after it, while they fit."""
    wanted: list[tuple[_Passage, str, list[int]]] = []
    for p in passages:
        seqs = sorted({s + d for s in p.matched for d in (-1, 1)} - set(p.lines))
        if p.thread_id is not None and seqs:
            wanted.append((p, p.thread_id, seqs))
    found = neighbours([(thread, seqs) for _, thread, seqs in wanted]) if wanted else {}
    for p, thread, seqs in wanted:
        for seq in seqs:
            line = found.get((thread, seq))
            if line is None or line.message_id in present:
                continue
            p.lines[line.seq] = line
            p.context.add(line.seq)
            tokens = cost(p)
            if used + tokens - p.tokens > budget:
                del p.lines[line.seq]
                p.context.discard(line.seq)
                return used
            used += tokens - p.tokens
            p.tokens = tokens
            present.add(line.message_id)
    return used
