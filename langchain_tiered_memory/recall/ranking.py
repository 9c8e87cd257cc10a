"""Ranking: recall's candidates of every grain turned into scored hits, the best ``k`` first,
each bringing something new.

Relevance comes from similarity (:mod:`.scoring`); besides it, the signals every
conversation has shape it (bounded, so none can make a non-match relevant):

- **its sentences**: a message of several sentences is read by its best sentence as well as
  whole (:data:`SENTENCE_WEIGHT`): "Morning! The move took forever. Oh, and I passed my
  driving test!" answers "how did the road test go?", whatever the move does to its average;
- **the messages beside it**: a message is read with its neighbours. The answer to a
  question is often the reply right after the words that match it ("What inspired you to
  join?" — "I've always respected the military"), so each message takes a share of its
  best neighbour's match (:data:`NEIGHBOUR_WEIGHT`, :func:`scoring.in_context`); the
  neighbours of the best candidates are read even when the index did not return them.
  A message that says next to nothing ("That's the spirit! Bye!", "Noted.") keeps little
  of its own match and takes little of its neighbours' (:data:`FILLER_WORDS`); the
  messages two places away lend less (:data:`FAR_NEIGHBOUR_WEIGHT`);
- **the session it was said in**: a thread is about a few subjects, and the one where the
  question's subject came up holds its answer, often in words the question does not share
  ("Did anything stand out?" — "the ramen stalls in Osaka"): every message gains a share
  of the best match among its thread's candidates (:data:`SESSION_WEIGHT`);
- **who said it**: a question in the first person ("where do *I* live?") is about what the
  user said, so the assistant's turns count for less; one that names a speaker ("what did
  Caroline paint?") ranks that speaker's turns ahead (:data:`NAMED_SPEAKER`; the names
  are left out of the query's embedding and its BM25 terms, in :mod:`.layer`, so that a
  short turn saying a name is not near every question about that person);
- **when**: a named time keeps what was said then, or tells of then ("yesterday we ran a
  workshop", said the day after), ahead, and what was said at other times behind; a
  question asking when prefers what tells a time (:data:`WHEN_WEIGHT`); a question about
  how things stand now ("these days", "currently") weighs what was said last more, and
  what tells of a change or of the present ("I've switched to tea",
  "my new phone") more, since such a statement is the answer however far its words are
  from the question's; otherwise newer evidence wins near-ties (``decay`` per day since said);
- **asking or telling**: to a question, a unit that is itself a question ("any advice on
  drinking more water?") counts for less: a symmetric embedder finds questions alike by
  their form, but the answer is in what someone said, not in what they asked;
- **whom it is about**: (in :mod:`.recall`) a question about "my brother" is also asked
  about the names the entity profiles give the user's brother.

Messages rank by their match's strength (uncapped: several strong matches must not tie
at 1); their ``relevance`` (0..1) is what the threshold reads. The weights were chosen on
LoCoMo's real conversations (``benchmarks/bench_locomo.py``), not on generated ones.

Reading records is most of a ranking's cost, so it reads lazily: every candidate first gets
a bound on its score from what its point carries (its similarities, time and grain), and
the records behind the candidates are read best bound first, a batch at a time, until no
unread candidate can beat the ``k``-th hit. The result is the one a full read would give.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from functools import cached_property
from typing import TYPE_CHECKING, Any

from .. import scoring
from .asked import Asked
from .dates import TimeRange, asks_current, asks_when
from ..index.points import Candidate
from ..storage.units import unit_id

if TYPE_CHECKING:
    from ..config import MemoryConfig
    from ..layers.facts import FactLayer
    from ..storage import Storage
    from ..storage.units import Spoken, UnitRow

__all__ = ["TIME_SLACK", "Hit", "Ranker"]

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
#: What a turn of the speaker a question names ("what did Caroline paint?") gains in the
#: ranking (not in its relevance: naming someone does not make all they said relevant).
#: On LoCoMo 96% of the evidence of questions naming one of the two speakers was said by
#: that speaker. Since the names are left out of both legs' query (:mod:`.layer`), this is
#: what matches them: 0.45-0.8 rank alike (R@10 0.801-0.803), 0.28 lower (0.799).
NAMED_SPEAKER = 0.5
#: How much of its best neighbour's relevance a message gains (:func:`scoring.in_context`).
#: On LoCoMo, 0.5 of the neighbour's ranking score raised R@10 0.68 → 0.75; 0.3 and 0.8
#: less, and more lets a chatty neighbour outrank the answer.
NEIGHBOUR_WEIGHT = 0.5
#: What a message gains from the better of the messages two places away (a reply's reply
#: often still speaks of what was asked): on LoCoMo 0.2 raised R@10 by 0.02 with the
#: session's share below; 0.4 less.
FAR_NEIGHBOUR_WEIGHT = 0.2
#: Candidates whose messages two places away are read even when the index did not find them
#: (5 ranks as 10 did on LoCoMo, with :data:`NEIGHBOURED` 10: R@10 0.790 and 0.785).
FAR_NEIGHBOURED = 5
#: What a message gains from the best match among its thread's messages (a session is
#: about a few subjects; the one where the question's subject came up holds its answer,
#: in words the question may not share). On LoCoMo 0.4 raised R@10 by 0.02; 0.2–0.6 alike.
SESSION_WEIGHT = 0.4
#: For a message of several sentences, the share of its match that comes from its best
#: sentence (the rest from the message whole): a long message is about several things, and
#: its whole vector is their average. On LoCoMo 0.7 raised R@10 by 0.025 in a model of
#: this ranking; 0.5 a little less.
SENTENCE_WEIGHT = 0.7
#: Candidates whose neighbours are read even when the index did not find them (the reply
#: after a matching question is often the answer, in other words than the question's). On
#: LoCoMo 10 ranks as 15 and 30 did (R@10 0.786, 0.785; 0.776 and 0.775 before the time a
#: message tells of counted), and each one fewer is fewer records read per turn.
NEIGHBOURED = 10
#: Distinct content words below which a message is mostly names and pleasantries ("That's
#: the spirit! Bye!"): neutral on LoCoMo's questions (R@10 within 0.002), it keeps a
#: goodbye from outranking a turn that says something when the dense leg alone finds both.
#: Such a message keeps ``(words + 1) / FILLER_WORDS`` of its relevance (names count).
FILLER_WORDS = 4
#: For a question that asks when ("when did she start painting?"): what a message that tells
#: of a time ("I started painting a few years ago", "yesterday we signed the lease") adds to
#: its match, if it is a match at all: the answer to "when" is said with a time. On LoCoMo
#: 0.15 raised temporal questions' R@10 0.835 -> 0.847 (0.25: 0.854, but LongChat's dated
#: questions lost one in their first ten).
WHEN_WEIGHT = 0.15
#: Slack around a named time (a thing said the evening before "yesterday" still counts).
TIME_SLACK = timedelta(hours=12)
#: Records read per batch, per result wanted (the first batch usually settles the ranking).
_BATCH_PER_RESULT = 2


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
    #: What it ranks by before the prior: its relevance, raised for the speaker the question
    #: names, with its neighbours' share.
    rank: float = 0.0


@dataclass
class _Own:
    """A message's (or a window's) match on its own, before its neighbours count."""

    unit: UnitRow
    candidate: Candidate
    relevance: float
    rank: float
    #: How much of its neighbours' match it may take (a message of a word or two: little).
    content: float = 1.0
    #: Its match uncapped, before the speaker counts: what its thread's topic is read from.
    value: float = 0.0


#: The cosine to the query and the point's payload of the units among some ids (turns the
#: index did not return, read for the candidates beside them).
Cosines = Callable[[Sequence[str]], dict[str, tuple[float, dict[str, Any]]]]
#: The best cosine to the query among each unit's sentences, for the units among some ids
#: that have sentence vectors.
Sentences = Callable[[Sequence[str]], dict[str, float]]
#: What a search keeps: the thread's window ``(thread_key, evicted_through)`` whose newer
#: messages the model is sent anyway, and the span ``since``/``until`` asked for.
Keep = tuple[tuple[int, int] | None, datetime | None, datetime | None]


class Ranker:
    """Scores one search's candidates and keeps the best ``k`` that each add something."""

    def __init__(self, storage: Storage, facts: FactLayer, config: MemoryConfig) -> None:
        self._storage = storage
        self._facts = facts
        self.config = config

    def rank(
        self, user_id: str, candidates: Sequence[Candidate], k: int, now: datetime, named: TimeRange | None,
        asked: Asked, keep: Keep = (None, None, None), cosines: Cosines | None = None,
        sentences: Sentences | None = None,
    ) -> list[Hit]:
        """The best ``k`` hits among ``candidates``; ``keep`` says which messages a search
        may return (see :data:`Keep`); ``cosines`` reads the neighbours of the best turns
        that the index did not return."""
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
                pending.append(_Pending(scoring.score(rel, 1.0), at, c.id, "fact", c, relevance=rel, rank=rel))
        pending.extend(self._spoken(user_id, by_grain, weigh, keep, cosines, sentences))
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
            hits.extend(self._units_of([p for p in chosen if p.unit is not None], weigh, cosines))
            hits.sort(key=lambda h: (-h.score, h.at, h.id))
            best = _diverse(hits, k)
        return best

    def _spoken(
        self, user_id: str, by_grain: dict[str, list[Candidate]], weigh: _Weigh, keep: Keep, cosines: Cosines | None,
        sentences: Sentences | None = None,
    ) -> list[_Pending]:
        # A unit's row is small and says who spoke, which its relevance needs: read them all;
        # only its messages (the ids a hit names) wait for the unit to rank.
        spoken = [c for g in ("turn", "window") for c in by_grain.get(g, [])]
        if not spoken:
            return []
        units = self._storage.units.get_many([c.id for c in spoken])
        best = sentences([c.id for c in spoken if c.grain == "turn"]) if sentences is not None else {}
        own: dict[str, _Own] = {}
        for c in spoken:
            unit = units.get(c.id)
            if unit is not None and _kept(unit, user_id, keep):
                own[unit.id] = self._own(unit, _by_sentence(c, best.get(c.id)), weigh)
        if cosines is not None:
            own.update(self._beside(user_id, own, weigh, keep, cosines, sentences))
        # Neighbours by place in their thread (a unit id is a hash of it: slower to make).
        turns = {(o.unit.thread_key, o.unit.first_seq): o for o in own.values() if o.unit.grain == "turn"}
        # The best match of each thread (session): what was said where the subject came up.
        topic: dict[int, float] = {}
        for o in own.values():
            topic[o.unit.thread_key] = max(topic.get(o.unit.thread_key, 0.0), o.value)
        out = []
        for o in own.values():
            rel, rank = o.relevance, o.rank
            if o.unit.grain == "turn":
                key, seq = o.unit.thread_key, o.unit.first_seq
                near = [n for n in (turns.get((key, seq - 1)), turns.get((key, seq + 1))) if n is not None]
                far = [n for n in (turns.get((key, seq - 2)), turns.get((key, seq + 2))) if n is not None]
                weight = NEIGHBOUR_WEIGHT * o.content
                rel = scoring.in_context(rel, max((n.relevance for n in near), default=0.0), weight)
                rank += weight * max((n.rank for n in near), default=0.0)
                rank += FAR_NEIGHBOUR_WEIGHT * o.content * max((n.rank for n in far), default=0.0)
            rank += SESSION_WEIGHT * topic.get(o.unit.thread_key, 0.0)
            if rel >= self.config.score_threshold:
                at = datetime.fromisoformat(o.unit.at)
                out.append(_Pending(scoring.score(rank, weigh.recency(at)), at, o.unit.id, o.unit.grain, o.candidate,
                                    o.unit, rel, rank))
        return out

    def _own(self, unit: UnitRow, c: Candidate, weigh: _Weigh) -> _Own:
        """How well a unit matches on its own (see the module docs)."""
        at = datetime.fromisoformat(unit.at)
        strength = scoring.strength(c.dense, c.sparse, self._facts.calibration)
        told = (c.payload.get("told_from"), c.payload.get("told_until"))
        value = weigh.asked.by(unit.speaker, weigh.timed(strength, at, told))
        value = weigh.asked.against(c.payload.get("asks"), value)
        value = weigh.news(c.payload.get("news"), value)
        value = weigh.when(told, value)
        words = c.payload.get("words")
        content = 1.0
        if isinstance(words, (int, float)):
            value *= min(1.0, (max(0.0, float(words)) + 1.0) / FILLER_WORDS)
            # A message that says next to nothing ("Noted.") gains little from the words beside it.
            content = min(1.0, max(0.0, float(words)) / FILLER_WORDS)
        rank = value + (NAMED_SPEAKER if weigh.asked.names(unit.speaker) else 0.0)
        return _Own(unit, c, min(1.0, value), rank, content, value)

    def _beside(
        self, user_id: str, own: dict[str, _Own], weigh: _Weigh, keep: Keep, cosines: Cosines,
        sentences: Sentences | None = None,
    ) -> dict[str, _Own]:
        """The turns next to the best candidate turns that the index did not return, with
        their cosine to the query (their BM25, had they shared a rare word, would have made
        them candidates)."""
        turns = sorted((o for o in own.values() if o.unit.grain == "turn"), key=lambda o: -o.rank)[:NEIGHBOURED]
        have = {(o.unit.thread_key, o.unit.first_seq) for o in own.values() if o.unit.grain == "turn"}
        places = {(o.unit.thread_key, o.unit.first_seq + d) for o in turns for d in (-1, 1)}
        places |= {(o.unit.thread_key, o.unit.first_seq + d) for o in turns[:FAR_NEIGHBOURED] for d in (-2, 2)}
        places -= have
        wanted = sorted(unit_id(key, "turn", seq) for key, seq in places if seq >= 0)
        if not wanted:
            return {}
        rows = self._storage.units.get_many(wanted)
        found = cosines([i for i, u in rows.items() if _kept(u, user_id, keep)])
        best = sentences(list(found)) if sentences is not None else {}
        return {
            uid: self._own(rows[uid], _by_sentence(Candidate(uid, "turn", cos, None, payload), best.get(uid)), weigh)
            for uid, (cos, payload) in found.items()
        }

    def _units_of(self, chosen: Sequence[_Pending], weigh: _Weigh, cosines: Cosines | None) -> list[Hit]:
        if not chosen:
            return []
        # With their text: the hits that rank are quoted next, and a unit's messages are few.
        spans = self._storage.units.spans([p.unit for p in chosen if p.unit is not None])
        # A window names its messages best first (the one that matched leads what it quotes).
        windows = [p.unit for p in chosen if p.unit is not None and p.unit.grain == "window"]
        inner = [unit_id(u.thread_key, "turn", seq) for u in windows for seq in range(u.first_seq, u.last_seq + 1)]
        cos = {i: v for i, (v, _) in cosines(inner).items()} if cosines is not None and inner else {}
        out = []
        for p in chosen:
            unit, c = p.unit, p.candidate
            if unit is None or not spans.get(unit.id) or p.at is None:
                continue  # its messages were forgotten: nothing to show
            parts = _said(c, p.relevance, weigh.recency(p.at), p.rank)
            rows = tuple(spans[unit.id])
            ids = tuple(r[1] for r in rows)
            if unit.grain == "window":
                order = sorted(rows, key=lambda r: -cos.get(unit_id(unit.thread_key, "turn", r[0]), -1.0))
                ids = tuple(r[1] for r in order)
            out.append(Hit(unit.grain, unit.id, p.at, p.relevance, parts.score, parts, ids, unit.thread_key, unit, rows))
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
    def _when(self) -> bool:
        return asks_when(self.asked.query)

    def when(self, told: tuple[object, object], relevance: float) -> float:
        """``relevance`` of a unit that tells of the time ``told`` (``(None, None)``: of
        none): more, for a question that asks when, if it is a match at all."""
        if not self._when or not isinstance(told[0], str) or relevance < self.config.score_threshold:
            return relevance
        return relevance + WHEN_WEIGHT

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
        return scoring.raised(relevance, NEWS_WEIGHT * min(1.0, float(share)))

    def timed(self, relevance: float, at: datetime | None, told: object = None) -> float:
        """``relevance`` of a unit said ``at`` (``None``: unknown, so the most it can be),
        telling of the time ``told`` (``(start, end)`` as ISO 8601 strings; see
        :func:`.dates.told_of`): a named time is matched by either."""
        if self._current:
            return relevance if at is None else relevance * (1.0 - CURRENT_WEIGHT * (1.0 - self.recency(at)))
        named = self.named
        if named is None:
            return relevance
        if at is None or named.start - TIME_SLACK <= at < named.end + TIME_SLACK or _tells_of(told, named):
            return scoring.raised(relevance, TIME_WEIGHT)
        return relevance * OFF_TIME


def _tells_of(told: object, named: TimeRange) -> bool:
    """Whether ``told``, the ``(start, end)`` a unit tells of (ISO 8601 strings, as its
    point carries them), meets the time ``named``."""
    if not isinstance(told, tuple) or not all(isinstance(t, str) for t in told):
        return False
    try:
        start, end = (datetime.fromisoformat(t) for t in told)
    except ValueError:
        return False
    return start < named.end + TIME_SLACK and named.start - TIME_SLACK < end


def _said(c: Candidate, relevance: float, recency: float, rank: float | None = None) -> scoring.ScoreParts:
    """The score of something said (a turn, a window, a session): what it ranks by (its
    relevance, or ``rank``: raised for a named speaker and by its neighbours), nudged by
    how recently it was said."""
    value = relevance if rank is None else rank
    return scoring.ScoreParts(relevance=relevance, dense=c.dense, sparse=c.sparse, decay=recency,
                              effective_importance=recency, score=scoring.score(value, recency))


def _by_sentence(c: Candidate, best: float | None) -> Candidate:
    """``c`` with its cosine read partly from its best sentence's (see
    :data:`SENTENCE_WEIGHT`); as it is for a message of one sentence."""
    if best is None or c.dense is None:
        return c
    dense = (1.0 - SENTENCE_WEIGHT) * c.dense + SENTENCE_WEIGHT * best
    return Candidate(c.id, c.grain, dense, c.sparse, c.payload)


def _kept(unit: UnitRow, user_id: str, keep: Keep) -> bool:
    """Whether a search may return ``unit``: the user's, not in the thread's window (sent
    whole already), said in the span asked for."""
    window, since, until = keep
    if unit.user_id != user_id:
        return False  # forgotten since its point was written, or another's: never shown
    if window is not None and unit.thread_key == window[0] and unit.first_seq > window[1]:
        return False
    if since is not None or until is not None:
        at = datetime.fromisoformat(unit.at)
        if (since is not None and at < since) or (until is not None and at > until):
            return False
    return True


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
