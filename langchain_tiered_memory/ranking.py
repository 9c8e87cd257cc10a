"""Ranking: recall's candidates of every grain turned into scored hits, the best ``k`` first,
each bringing something new.

Relevance comes from similarity (:mod:`.scoring`); besides it, four signals every
conversation has shape it (bounded, so none can make a non-match relevant):

- **who said it**: a question in the first person ("where do *I* live?") is about what the
  user said, so the assistant's turns count for less; one that names a speaker ("what did
  Caroline paint?") prefers that speaker's turns;
- **when**: a named time keeps what was said then ahead, and what was said at other times
  behind; a question about how things stand now ("these days", "currently") weighs what was
  said last more, and what tells of a change or of the present ("I've switched to tea",
  "my new phone") more, since such a statement is the answer however far its words are
  from the question's; otherwise newer evidence wins near-ties (``decay`` per day since said);
- **asking or telling**: to a question, a unit that is itself a question ("any advice on
  drinking more water?") counts for less: a symmetric embedder finds questions alike by
  their form, but the answer is in what someone said, not in what they asked;
- **whom it is about**: (in :mod:`.recall`) a question about "my brother" is also asked
  about the names the entity profiles give the user's brother.

Reading records is most of a ranking's cost, so it reads lazily: every candidate first gets
a bound on its score from what its point carries (its similarities, time and grain), and
the records behind the candidates are read best bound first, a batch at a time, until no
unread candidate can beat the ``k``-th hit. The result is the one a full read would give.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from functools import cached_property
from typing import TYPE_CHECKING, Any

from . import scoring
from .dates import TimeRange, asks_current
from .index import Candidate
from .sentences import is_question

if TYPE_CHECKING:
    from .config import MemoryConfig
    from .facts import FactLayer
    from .storage import Storage
    from .storage.units import Spoken, UnitRow

__all__ = ["TIME_SLACK", "Asked", "Hit", "Ranker", "words_of"]

#: How much being said in the time a query names adds (a noisy OR with the relevance).
TIME_WEIGHT = 0.5
#: What relevance keeps when said outside the time a query names.
OFF_TIME = 0.75
#: For a question about how things stand now: what an old statement loses at most
#: (relevance × (1 − w × (1 − decay^days since said))).
CURRENT_WEIGHT = 0.3
#: For a question about how things stand now: what telling of a change or of the present
#: adds (a noisy OR with the relevance; a window whose people say it in half their lines
#: gets half). Measured on benchmarks/longchat: update recall@10 0.73 → 0.82 over three
#: seeds, no other kind lower; more than 0.2 gained nothing.
NEWS_WEIGHT = 0.2
#: What relevance keeps when said by the other side of a question's speaker.
OTHER_SPEAKER = 0.8
#: What naming a unit's speaker adds (a noisy OR with the relevance).
NAMED_SPEAKER = 0.2
#: What relevance keeps, for a question, when the evidence is all questions too (a window
#: half made of questions keeps half of the loss).
ASKING = 0.6
#: Slack around a named time (a thing said the evening before "yesterday" still counts).
TIME_SLACK = timedelta(hours=12)
#: Records read per batch, per result wanted (the first batch usually settles the ranking).
_BATCH_PER_RESULT = 2
_FIRST_PERSON = re.compile(r"\b(i|me|my|mine|myself|we|us|our|ours)\b|\bthe user\b", re.IGNORECASE)
_SECOND_PERSON = re.compile(r"\b(you|your|yours|yourself)\b", re.IGNORECASE)
_WORDS = re.compile(r"[\w'’-]+")


@dataclass
class Hit:
    """A candidate whose records were read: its score, the parts of it, its messages."""

    grain: str
    id: str
    at: datetime
    relevance: float
    score: float
    parts: scoring.ScoreParts
    message_ids: tuple[str, ...] = ()
    thread_key: int | None = None
    row: object = None
    #: A turn's or a window's messages as read, ``(seq, message_id, created_at, data, tokens)``.
    spans: tuple[Spoken, ...] = ()


@dataclass(frozen=True)
class Asked:
    """Who a question is about, and when it is asked."""

    query: str
    at: datetime

    @cached_property
    def words(self) -> set[str]:
        return words_of(self.query)

    @cached_property
    def is_question(self) -> bool:
        return is_question(self.query)

    @cached_property
    def _mine(self) -> bool:
        return bool(_FIRST_PERSON.search(self.query))

    @cached_property
    def _yours(self) -> bool:
        return bool(_SECOND_PERSON.search(self.query))

    def against(self, asks: object, relevance: float) -> float:
        """``relevance`` of evidence whose lines are questions in the share ``asks`` (0..1),
        for this query: less, when the query is a question too."""
        if not isinstance(asks, (int, float)) or asks <= 0 or not self.is_question:
            return relevance
        return relevance * (1.0 - (1.0 - ASKING) * min(1.0, float(asks)))

    def by(self, speaker: str | None, relevance: float) -> float:
        """``relevance`` as who said it makes it: less from the other side of a first- (or
        second-) person question, more from a speaker the question names."""
        if speaker is None:
            return relevance
        if speaker in ("user", "assistant"):
            if self._mine != self._yours and (speaker == "assistant") == self._mine:
                return relevance * OTHER_SPEAKER
            return relevance
        if speaker.casefold() in self.words or speaker.split()[0].casefold() in self.words:
            return 1.0 - (1.0 - relevance) * (1.0 - NAMED_SPEAKER)
        return relevance


def words_of(text: str) -> set[str]:
    """The casefolded words of ``text``, a possessive's "'s" cut ("aunt's" → "aunt")."""
    return {re.sub(r"['’]s$", "", w.casefold()) for w in _WORDS.findall(text)}


@dataclass
class _Pending:
    """A candidate not read yet: the most it can score, and what reading it needs."""

    bound: float
    at: datetime | None
    id: str
    grain: str
    candidate: Candidate
    unit: UnitRow | None = None
    relevance: float = 0.0


class Ranker:
    """Scores one search's candidates and keeps the best ``k`` that each add something."""

    def __init__(self, storage: Storage, facts: FactLayer, config: MemoryConfig) -> None:
        self._storage = storage
        self._facts = facts
        self.config = config

    def rank(
        self, user_id: str, candidates: Sequence[Candidate], k: int, now: datetime, named: TimeRange | None,
        asked: Asked, window: tuple[int, int] | None = None,
    ) -> list[Hit]:
        """The best ``k`` hits among ``candidates``; ``window`` is ``(thread_key,
        evicted_through)`` of the turn's thread, whose messages after it the model is sent
        anyway."""
        weigh = _Weigh(self.config, asked, named)
        threshold = self.config.score_threshold
        hits: list[Hit] = []
        pending: list[_Pending] = []
        by_grain: dict[str, list[Candidate]] = {}
        for c in candidates:
            by_grain.setdefault(c.grain, []).append(c)
        for c in by_grain.get("fact", []):
            # What the point carries bounds the score: the record can only lower it (its
            # prior is at most 1; a forgotten or superseded one is dropped).
            at = _payload_time(c.payload)
            rel = weigh.timed(scoring.relevance(c.dense, c.sparse, self._facts.calibration), at)
            if rel >= threshold:
                pending.append(_Pending(scoring.score(rel, 1.0), at, c.id, "fact", c))
        pending.extend(self._spoken(user_id, by_grain, weigh, window))
        hits.extend(self._sessions(user_id, by_grain.get("session", []), weigh))
        pending.sort(key=lambda p: (-p.bound, p.at or datetime.max.replace(tzinfo=now.tzinfo), p.id))
        batch = max(1, k) * _BATCH_PER_RESULT
        hits.sort(key=lambda h: (-h.score, h.at, h.id))
        best = _diverse(hits, k)
        while pending:
            if len(best) == k and pending[0].bound < best[-1].score:
                break  # nothing unread can reach the k best
            chosen, pending = pending[:batch], pending[batch:]
            hits.extend(self._facts_of(user_id, [p for p in chosen if p.grain == "fact"], now, weigh))
            hits.extend(self._units_of([p for p in chosen if p.unit is not None], weigh))
            hits.sort(key=lambda h: (-h.score, h.at, h.id))
            best = _diverse(hits, k)
        return best

    def _spoken(
        self, user_id: str, by_grain: dict[str, list[Candidate]], weigh: _Weigh, window: tuple[int, int] | None
    ) -> list[_Pending]:
        # A unit's row is small and says who spoke, which its relevance needs: read them all;
        # only its messages (the ids a hit names) wait for the unit to rank.
        spoken = [c for g in ("turn", "window") for c in by_grain.get(g, [])]
        if not spoken:
            return []
        units = self._storage.units.get_many([c.id for c in spoken])
        out = []
        for c in spoken:
            unit = units.get(c.id)
            if unit is None or unit.user_id != user_id:
                continue  # forgotten since its point was written: never shown
            if window is not None and unit.thread_key == window[0] and unit.first_seq > window[1]:
                continue  # still in the thread's window: sent whole already
            at = datetime.fromisoformat(unit.at)
            rel = weigh.asked.by(unit.speaker, weigh.timed(scoring.relevance(c.dense, c.sparse, self._facts.calibration), at))
            rel = weigh.asked.against(c.payload.get("asks"), rel)
            rel = weigh.news(c.payload.get("news"), rel)
            if rel >= self.config.score_threshold:
                out.append(_Pending(scoring.score(rel, weigh.recency(at)), at, unit.id, unit.grain, c, unit, rel))
        return out

    def _units_of(self, chosen: Sequence[_Pending], weigh: _Weigh) -> list[Hit]:
        if not chosen:
            return []
        # With their text: the hits that rank are quoted next, and a unit's messages are few.
        spans = self._storage.units.spans([p.unit for p in chosen if p.unit is not None])
        out = []
        for p in chosen:
            unit, c = p.unit, p.candidate
            if unit is None or not spans.get(unit.id) or p.at is None:
                continue  # its messages were forgotten: nothing to show
            parts = _said(c, p.relevance, weigh.recency(p.at))
            rows = tuple(spans[unit.id])
            out.append(Hit(unit.grain, unit.id, p.at, p.relevance, parts.score, parts, tuple(r[1] for r in rows),
                           unit.thread_key, unit, rows))
        return out

    def _facts_of(self, user_id: str, chosen: Sequence[_Pending], now: datetime, weigh: _Weigh) -> list[Hit]:
        if not chosen:
            return []
        out = []
        for s in self._facts.score(user_id, [p.candidate for p in chosen], now, threshold=0.0):  # applied below
            at = datetime.fromisoformat(s.row.valid_from)
            rel = weigh.timed(s.parts.relevance, at)
            if rel >= self.config.score_threshold:
                parts = s.parts.model_copy(update={"relevance": rel, "score": scoring.score(rel, s.parts.effective_importance)})
                out.append(Hit("fact", s.row.id, at, rel, parts.score, parts, tuple(s.row.source_messages), row=s.row))
        return out

    def _sessions(self, user_id: str, sessions: Sequence[Candidate], weigh: _Weigh) -> list[Hit]:
        if not sessions:
            return []
        rows = self._storage.episodes.get_many([c.id for c in sessions])
        out = []
        for c in sessions:
            episode = rows.get(c.id)
            if episode is None or episode.user_id != user_id:
                continue
            at = datetime.fromisoformat(episode.started_at)
            rel = weigh.timed(scoring.relevance(c.dense, c.sparse, self._facts.calibration), at)
            if rel >= self.config.score_threshold:
                parts = _said(c, rel, weigh.recency(at))
                out.append(Hit("session", episode.id, at, rel, parts.score, parts, row=episode))
        return out


@dataclass
class _Weigh:
    """How time shapes one query's relevance."""

    config: MemoryConfig
    asked: Asked
    named: TimeRange | None

    @cached_property
    def _current(self) -> bool:
        return asks_current(self.asked.query) and self.named is None

    def recency(self, at: datetime) -> float:
        return scoring.decay_factor(self.config.decay, scoring.days_between(self.asked.at, at))

    def news(self, share: object, relevance: float) -> float:
        """``relevance`` of a unit whose people tell of a change or of the present in the
        share ``share`` of their lines: more, for a question about now, if it is a match at
        all (telling news does not make a unit relevant to every such question)."""
        if not self._current or not isinstance(share, (int, float)) or share <= 0:
            return relevance
        if relevance < self.config.score_threshold:
            return relevance
        return 1.0 - (1.0 - relevance) * (1.0 - NEWS_WEIGHT * min(1.0, float(share)))

    def timed(self, relevance: float, at: datetime | None) -> float:
        """``relevance`` of a unit said ``at`` (``None``: unknown, so the most it can be)."""
        if self._current:
            return relevance if at is None else relevance * (1.0 - CURRENT_WEIGHT * (1.0 - self.recency(at)))
        named = self.named
        if named is None:
            return relevance
        if at is None or named.start - TIME_SLACK <= at < named.end + TIME_SLACK:
            return 1.0 - (1.0 - relevance) * (1.0 - TIME_WEIGHT)
        return relevance * OFF_TIME


def _said(c: Candidate, relevance: float, recency: float) -> scoring.ScoreParts:
    """The score of something said (a turn, a window, a session): its relevance, nudged by
    how recently it was said."""
    return scoring.ScoreParts(relevance=relevance, dense=c.dense, sparse=c.sparse, decay=recency,
                              effective_importance=recency, score=scoring.score(relevance, recency))


def _payload_time(payload: dict[str, Any]) -> datetime | None:
    value = payload.get("at")
    if not isinstance(value, str):
        return None
    try:
        at = datetime.fromisoformat(value)
    except ValueError:
        return None
    return at if at.tzinfo is not None else at.replace(tzinfo=timezone.utc)  # stored as UTC


def _diverse(hits: Sequence[Hit], k: int) -> list[Hit]:
    """The best ``k`` hits, skipping one whose messages the hits above it already cover."""
    out: list[Hit] = []
    covered: set[str] = set()
    for h in hits:
        ids = set(h.message_ids)
        if h.grain != "fact" and ids and ids <= covered:
            continue
        out.append(h)
        covered |= ids
        if len(out) == k:
            break
    return out
