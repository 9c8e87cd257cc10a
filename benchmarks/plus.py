"""LoCoMo-Plus "Cognitive" pairs (Li et al., arXiv 2602.10715) placed in LoCoMo's conversations,
as ``bench_implicit.py`` reads them.

An item is a cue (two turns, ``A: …`` and ``B: …``) and a later trigger (``A: …``) that
depends on the cue but shares few words with it. The protocol (``../shared/data/README.md``):
item ``index`` goes into LoCoMo conversation ``index % 10``, as its own session of two turns
right after one of that conversation's sessions (chosen at random with a fixed seed), dated a
day after that session; ``A`` is the conversation's first speaker, ``B`` its second; the
trigger, written ``"<first speaker>: <text>"``, is asked ``time_gap`` after the cue.

The session an item follows is drawn from a generator seeded by the seed and the item's own
index, so an item lands in the same place whichever other items are loaded with it (the
development half and the held-out half place their items alike).

The data has no licence of its own given: evaluation only, never copied into this repository;
the benchmark takes its path.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path

from dateutil.relativedelta import relativedelta

from locomo import Conversation, Turn

#: "two months later", "about six weeks later", "a couple of months later", "a year after".
_GAP = re.compile(
    r"^(?:(?:about|around|roughly|nearly|almost|over|just over|some)\s+)?(?P<n>[\w-]+(?:\s+(?:of|few|couple))*)\s+"
    r"(?P<unit>day|week|month|year)s?\s+(?:later|after)$",
    re.IGNORECASE,
)
_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "a few": 3, "several": 3, "a couple": 2,
}


@dataclass(frozen=True)
class Cue:
    """One item placed in a conversation: its cue turns, the trigger and when it is asked."""

    index: int
    relation: str
    conversation: str
    turns: tuple[Turn, Turn]
    trigger: str
    asked: datetime

    @property
    def ids(self) -> tuple[str, str]:
        return (self.turns[0].id, self.turns[1].id)


def gap(text: str) -> relativedelta:
    """A LoCoMo-Plus ``time_gap`` ("about six weeks later") as a span of time."""
    m = _GAP.match(" ".join(text.split()))
    if m is None:
        raise ValueError(f"unreadable time gap {text!r}")
    word = m.group("n").casefold()
    n = int(word) if word.isdigit() else _NUMBERS.get(word)
    if n is None:
        raise ValueError(f"unreadable number in time gap {text!r}")
    unit = m.group("unit").casefold()
    return relativedelta(**{f"{unit}s": n})


def _lines(dialogue: str) -> tuple[str, str]:
    """The cue's two turns, ``A: …`` and ``B: …`` (on two lines, joined by an escaped
    ``\\n``, or on one line)."""
    text = re.sub(r"\\n", "\n", dialogue)
    parts = re.split(r"(?:^|\s)(A|B):\s", text)
    said = {who: parts[i + 1].strip() for i, who in enumerate(parts) if who in ("A", "B") and i % 2 == 1}
    if set(said) != {"A", "B"} or len(parts) != 5:
        raise ValueError(f"a cue must be one A: turn and one B: turn, got {dialogue!r}")
    return said["A"], said["B"]


def place(items: list[dict], conversations: list[Conversation], seed: int = 0) -> list[Cue]:
    """Every item as a session of its conversation (the conversations are changed in place:
    each cue session follows the session drawn for it, cues after the same session in order
    of index, an hour apart); the cues, in order of index."""
    by_conv: dict[int, list[tuple[int, dict]]] = {}
    for item in sorted(items, key=lambda x: int(x["index"])):
        conv = conversations[int(item["index"]) % len(conversations)]
        after = random.Random(f"{seed}:{item['index']}").randrange(len(conv.sessions))
        by_conv.setdefault(id(conv), []).append((after, item))
    cues: list[Cue] = []
    for conv in conversations:
        placed = by_conv.get(id(conv), [])
        if not placed:
            continue
        original = list(conv.sessions)
        sessions: list[list[Turn]] = []
        for n, session in enumerate(original):
            sessions.append(session)
            for order, (_, item) in enumerate(sorted((p for p in placed if p[0] == n), key=lambda p: int(p[1]["index"]))):
                at = session[0].at + timedelta(days=1, hours=order)
                a, b = _lines(item["cue_dialogue"])
                number = len(sessions) + 1
                turns = (
                    Turn(f"P{item['index']}:1", conv.speakers[0], a, number, at),
                    Turn(f"P{item['index']}:2", conv.speakers[1], b, number, at + timedelta(seconds=1)),
                )
                sessions.append(list(turns))
                trigger = str(item["trigger_query"]).strip()
                if trigger.startswith("A:"):
                    trigger = trigger[2:].strip()
                cues.append(Cue(int(item["index"]), str(item["relation_type"]), conv.id, turns,
                                f"{conv.speakers[0]}: {trigger}", at + gap(str(item["time_gap"]))))
        # Numbered by place, as the threads they are fed as.
        conv.sessions = [[replace(t, session=n) for t in session] for n, session in enumerate(sessions, 1)]
    return sorted(cues, key=lambda c: c.index)


def load_items(path: str | Path) -> list[dict]:
    data = json.loads(Path(path).read_text())
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a list of LoCoMo-Plus items")
    return data
