"""LoCoMo (Maharana et al., ACL 2024) as read by ``bench_locomo.py``: conversations, their
dated turns, the questions with their evidence turns, and the observations.

The data is CC BY-NC 4.0 and never copied into this repository: the benchmark takes the
path of ``locomo10.json`` (the public ``snap-research/LoCoMo`` repository, ``data/``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import dateparser

#: The question categories counted (5, adversarial, has no evidence to find).
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
_EVIDENCE = re.compile(r"D:?(\d+):0*(\d+)")


@dataclass(frozen=True)
class Turn:
    """One message: ``id`` is the conversation's own ``dia_id`` ("D3:12")."""

    id: str
    speaker: str
    text: str
    session: int
    at: datetime

    @property
    def indexed_text(self) -> str:
        """What the baselines index (``speaker: text``)."""
        return f"{self.speaker}: {self.text}"


@dataclass(frozen=True)
class Question:
    text: str
    answer: str
    evidence: tuple[str, ...]
    category: int


@dataclass
class Conversation:
    id: str
    speakers: tuple[str, str]
    sessions: list[list[Turn]]
    questions: list[Question]
    #: ``(fact, dia_id)`` of every observation, for measuring extraction.
    observations: list[tuple[str, str]] = field(default_factory=list)

    @property
    def turns(self) -> list[Turn]:
        return [t for s in self.sessions for t in s]

    @property
    def last_at(self) -> datetime:
        return self.sessions[-1][-1].at


def evidence_ids(raw: Any) -> list[str]:
    """``dia_id``s of one evidence entry, the malformed ones read too ("D8:6; D9:17",
    "D:11:26", "D30:05")."""
    return [f"D{int(a)}:{int(b)}" for a, b in _EVIDENCE.findall(str(raw))]


def session_date(text: str) -> datetime:
    """"1:56 pm on 8 May, 2023" as a UTC datetime."""
    parsed = dateparser.parse(text.replace(" on ", " "), settings={"TIMEZONE": "UTC", "RETURN_AS_TIMEZONE_AWARE": True})
    if parsed is None:
        raise ValueError(f"unreadable session date {text!r}")
    return parsed.astimezone(timezone.utc)


def load(path: str | Path, conversations: int | None = None) -> list[Conversation]:
    """The conversations of ``locomo10.json`` (the first ``conversations`` of them), each
    with its questions of categories 1–4 that keep at least one evidence turn."""
    data = json.loads(Path(path).read_text())
    out = []
    for raw in data[:conversations]:
        conv = raw["conversation"]
        sessions: list[list[Turn]] = []
        n = 1
        while f"session_{n}" in conv:
            start = session_date(conv[f"session_{n}_date_time"])
            # One second apart: the order of a session's turns survives in their times.
            sessions.append([
                Turn(t["dia_id"], t["speaker"], t["text"], n, start + timedelta(seconds=i))
                for i, t in enumerate(conv[f"session_{n}"])
            ])
            n += 1
        known = {t.id for s in sessions for t in s}
        questions = []
        for q in raw["qa"]:
            if q.get("category") not in CATEGORIES:
                continue
            evidence = tuple(dict.fromkeys(e for item in q.get("evidence", []) for e in evidence_ids(item) if e in known))
            if evidence:
                questions.append(Question(q["question"], str(q.get("answer", "")), evidence, q["category"]))
        observations = [
            (fact, dia)
            for per_session in (raw.get("observation") or {}).values()
            for facts in per_session.values()
            for fact, *ids in facts
            for item in ids
            for dia in evidence_ids(item)
            if dia in known
        ]
        out.append(Conversation(raw["sample_id"], (conv["speaker_a"], conv["speaker_b"]), sessions, questions,
                                observations))
    return out


#: How a benchmark feeds each message's speaker: on the message (``name=``), in its text
#: (``Name: text``, as many apps write a multi-party chat), or not at all.
SPEAKER_FORMS = ("name", "text", "none")


def message_id(conv: Conversation, dia: str) -> str:
    """The id a turn is stored under (the conversation's, then its ``dia_id``)."""
    return f"{conv.id}:{dia}"


def ingest(memory: Any, conversations: list[Conversation], speakers: str = "name") -> float:
    """Every conversation through ``after_turn``, an exchange (two turns) at a time, one
    thread per session, ``end_session`` after each, then ``flush``; seconds taken.

    ``speakers`` (one of :data:`SPEAKER_FORMS`) says how each message names who said it.
    The conversation's first speaker is fed as the user, the other as the assistant.
    """
    import time as _time

    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

    if speakers not in SPEAKER_FORMS:
        raise ValueError(f"speakers must be one of {SPEAKER_FORMS}, got {speakers!r}")
    start = _time.perf_counter()
    for conv in conversations:
        first = conv.speakers[0]
        for n, session in enumerate(conv.sessions, 1):
            thread = f"{conv.id}-s{n}"
            for i in range(0, len(session), 2):
                pair = session[i : i + 2]
                messages: list[BaseMessage] = [
                    (HumanMessage if t.speaker == first else AIMessage)(
                        f"{t.speaker}: {t.text}" if speakers == "text" else t.text,
                        name=t.speaker if speakers == "name" else None, id=message_id(conv, t.id),
                    )
                    for t in pair
                ]
                memory.after_turn(conv.id, thread, messages, at=pair[0].at)
            memory.end_session(conv.id, thread)
    memory.flush()
    return _time.perf_counter() - start
