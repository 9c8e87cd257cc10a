"""Ranking: recall's candidates of every grain turned into scored hits, the best ``k`` first,
each bringing something new.

A search's **pool** is what the index returned for every probe of the query (each leg's
best: the dense leg's nearest and the BM25 leg's best-scoring, so nothing either leg alone
would rank first is missing), and the turns beside the pool's best turns, read even when the
index did not return them (the reply after a matching question is often the answer, in
other words than the question's). Every unit of the pool gets a row of features
(:mod:`.features`) and the fitted model (:class:`..scoring.RankingModel`) its probability of
being evidence; that probability is what ranks. Its weights are fitted on real
conversations and reported by cross-validation across conversations
(``benchmarks/fit_ranking.py``), not set by hand.

Besides, **relevance** (0..1, from similarity: :func:`..scoring.relevance`) says whether a
unit matches at all, and the threshold reads it: a turn's is its best of the whole message
and its best sentence, raised by a share of its neighbours' (the answer to a matching
question is relevant to it) and, for a query naming a time, by being said or telling of
then. What was said after the question was asked (more than a day: clocks differ) is not
searched: recall reads the conversation as it stood then.

Reading records is most of a ranking's cost, so it reads lazily: every candidate's score
is known from what its point carries but for a long-term memory's prior (at most
``TIE_BREAK/2`` more), so records are read best first, a batch at a time, until no unread
candidate can beat the ``k``-th hit. The result is the one a full read would give.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from .. import scoring
from .asked import Asked
from .dates import TimeRange, asks_current, asks_when
from .features import FEATURES, TIME_SLACK, Unit, features
from ..index.points import Candidate
from ..storage.units import unit_id

if TYPE_CHECKING:
    import numpy as np

    from ..config import MemoryConfig
    from ..layers.facts import FactLayer
    from ..storage import Storage
    from ..storage.units import Spoken, UnitRow

__all__ = ["FUTURE_SLACK", "TIME_SLACK", "Hit", "Pool", "Ranker"]

#: What was said up to this long after the time a question is asked still counts as said
#: before it (a message stamped by another machine's clock, or in another time zone).
FUTURE_SLACK = timedelta(days=1)
#: How much of its best neighbour's relevance a message's own relevance takes (a noisy OR):
#: the reply after a matching question is relevant to what it asked. Relevance only (what
#: the threshold reads); the ranking reads the neighbours through the fitted model.
NEIGHBOUR_RELEVANCE = 0.5
#: How much being said in (or telling of) the time a query names raises relevance.
TIME_RELEVANCE = 0.5
#: For a question about now: how much telling of a change raises relevance (by its share).
NEWS_RELEVANCE = 0.2
#: The pool's best turns (by the legs' reciprocal ranks) whose neighbours are read even when
#: the index did not return them, and those whose turns two places away are too.
NEIGHBOURED = 20
FAR_NEIGHBOURED = 10
#: Records read in a batch beyond the ``k`` wanted (twice ``k`` read a hundred records a
#: turn for the context's fifty): the first batch usually settles the ranking, and the loop
#: reads on until nothing unread can reach the ``k``-th, so the result is a full read's
#: whatever the batch.
_BATCH_MARGIN = 10
#: Reciprocal-rank constant of the pre-order that picks whose neighbours are read.
_RRF = 60


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
class Pool:
    """One search's candidates as the model saw them: the units, their feature rows (columns
    :data:`~.features.FEATURES`), probabilities and relevances (what ``benchmarks/
    fit_ranking.py`` reads through :attr:`Ranker.observer`)."""

    units: list[Unit]
    rows: np.ndarray
    probability: np.ndarray
    relevance: list[float]


#: The cosine to the query and the point's payload of the units among some ids (turns the
#: index did not return, read for the candidates beside them).
Cosines = Callable[[Sequence[str]], dict[str, tuple[float, dict[str, Any]]]]
#: The best cosine to the query among each unit's sentences, for the units among some ids
#: that have sentence vectors.
Sentences = Callable[[Sequence[str]], dict[str, float]]
#: What a search keeps: the thread's window ``(thread_key, evicted_through)`` whose newer
#: messages the model is sent anyway, the span ``since``/``until`` asked for, and the time
#: after which nothing said is known yet.
Keep = tuple[tuple[int, int] | None, datetime | None, datetime | None, datetime | None]


class Ranker:
    """Scores one search's pool with the fitted model and keeps the best ``k`` that each add
    something."""

    def __init__(self, storage: Storage, facts: FactLayer, config: MemoryConfig) -> None:
        self._storage = storage
        self._facts = facts
        self.config = config
        self.model = scoring.ranking_model(config.ranking_model)
        self.model.check(FEATURES)
        #: Called with each search's :class:`Pool` (for fitting the model), when set.
        self.observer: Callable[[Pool], None] | None = None

    def rank(
        self, user_id: str, candidates: Sequence[Candidate], k: int, now: datetime, named: TimeRange | None,
        asked: Asked, keep: Keep = (None, None, None, None), cosines: Cosines | None = None,
        sentences: Sentences | None = None, explain: bool = True,
    ) -> list[Hit]:
        """The best ``k`` hits among ``candidates``; ``keep`` says which messages a search
        may return (see :data:`Keep`); ``cosines`` reads the neighbours of the best turns
        that the index did not return. ``explain``: each hit's parts name its nonzero
        features (the context's search shows no parts, and skips them)."""
        units = self._pool(user_id, candidates, keep, cosines, sentences)
        if not units:
            return []
        # A question about now ("which phone do I use these days?"), not a message that says
        # how things are now ("now I'm overwhelmed again"): that one leans on what came before.
        current = asked.is_question and asks_current(asked.query) and named is None
        rows = features(units, asked, named, current=current, when=asks_when(asked.query))
        probability = self.model.probability(rows, FEATURES)
        relevance = _relevance(units, rows, named, current)
        if self.observer is not None:
            self.observer(Pool(units, rows, probability, relevance))
        threshold = self.config.score_threshold
        pending = [
            (float(p) + (scoring.TIE_BREAK / 2 if u.grain == "fact" or current else 0.0), i)
            for i, (u, p, r) in enumerate(zip(units, probability, relevance)) if r >= threshold
        ]
        pending.sort(key=lambda b: (-b[0], units[b[1]].at or datetime.max.replace(tzinfo=timezone.utc), units[b[1]].id))
        # The k best and a margin for the ones diversity skips: read more only if needed.
        batch = max(1, k + _BATCH_MARGIN)
        hits: list[Hit] = []
        best: list[Hit] = []
        while pending:
            if len(best) == k and pending[0][0] < best[-1].score:
                break  # nothing unread can reach the k best
            chosen, pending = [i for _, i in pending[:batch]], pending[batch:]
            named_of = _named_rows(rows[chosen]) if explain else [{} for _ in chosen]
            read = [(units[i], float(probability[i]), relevance[i], rows[i], named_of[j]) for j, i in enumerate(chosen)]
            hits.extend(self._facts_of(user_id, [r for r in read if r[0].grain == "fact"], now))
            hits.extend(self._said_of(user_id, [r for r in read if r[0].grain != "fact"], cosines))
            hits.sort(key=lambda h: (-h.score, h.at, h.id))
            best = _diverse(hits, k)
        return best

    # --- the pool -----------------------------------------------------------------------

    def _pool(
        self, user_id: str, candidates: Sequence[Candidate], keep: Keep, cosines: Cosines | None,
        sentences: Sentences | None,
    ) -> list[Unit]:
        units: list[Unit] = []
        spoken: list[Candidate] = []
        for c in candidates:
            if c.grain in ("turn", "window"):
                spoken.append(c)
            elif c.grain == "session" and not _kept_time(_payload_time(c.payload), keep):
                continue
            else:
                units.append(Unit(c, _payload_time(c.payload)))
        if not spoken:
            return units
        # A unit's row is small and says who spoke and where: read them all; only its
        # messages (the ids a hit names) wait for the unit to rank.
        rows = self._storage.units.get_many([c.id for c in spoken])
        best = sentences([c.id for c in spoken if c.grain == "turn"]) if sentences is not None else {}
        said = [
            Unit(c, datetime.fromisoformat(rows[c.id].at), rows[c.id], best.get(c.id))
            for c in spoken if c.id in rows and _kept(rows[c.id], user_id, keep)
        ]
        if cosines is not None:
            said.extend(self._beside(user_id, said, keep, cosines, sentences))
        return units + said

    def _beside(
        self, user_id: str, said: list[Unit], keep: Keep, cosines: Cosines, sentences: Sentences | None,
    ) -> list[Unit]:
        """The turns next to the pool's best turns that the index did not return, with their
        cosine to the query (their BM25, had they shared a rare word, would have made them
        candidates). The best by the legs' reciprocal ranks: a pre-order of the index's own,
        the same whatever the model."""
        turns = [u for u in said if u.grain == "turn" and u.row is not None]
        by_dense = sorted(turns, key=lambda u: -(u.candidate.dense or 0.0))
        by_sparse = sorted((u for u in turns if u.candidate.sparse), key=lambda u: -(u.candidate.sparse or 0.0))
        order: dict[str, float] = {}
        for ranked in (by_dense, by_sparse):
            for r, u in enumerate(ranked):
                order[u.id] = order.get(u.id, 0.0) + 1.0 / (_RRF + r + 1)
        top = sorted(turns, key=lambda u: (-order.get(u.id, 0.0), u.id))
        have = {(u.row.thread_key, u.row.first_seq) for u in turns if u.row is not None}
        places = {(u.row.thread_key, u.row.first_seq + d) for u in top[:NEIGHBOURED] if u.row for d in (-1, 1)}
        places |= {(u.row.thread_key, u.row.first_seq + d) for u in top[:FAR_NEIGHBOURED] if u.row for d in (-2, 2)}
        wanted = sorted(unit_id(key, "turn", seq) for key, seq in places - have if seq >= 0)
        if not wanted:
            return []
        rows = self._storage.units.get_many(wanted)
        found = cosines([i for i, u in rows.items() if _kept(u, user_id, keep)])
        best = sentences(list(found)) if sentences is not None else {}
        return [
            Unit(Candidate(uid, "turn", cos, None, payload), datetime.fromisoformat(rows[uid].at), rows[uid], best.get(uid))
            for uid, (cos, payload) in found.items()
        ]

    # --- reading the records ------------------------------------------------------------

    def _said_of(
        self, user_id: str, chosen: Sequence[tuple[Unit, float, float, np.ndarray, dict[str, float]]],
        cosines: Cosines | None,
    ) -> list[Hit]:
        if not chosen:
            return []
        out = []
        sessions = [u for u, *_ in chosen if u.grain == "session"]
        episodes = self._storage.episodes.get_many([u.id for u in sessions]) if sessions else {}
        # With their text: the hits that rank are quoted next, and a unit's messages are few.
        spans = self._storage.units.spans([u.row for u, *_ in chosen if u.row is not None])
        # A window names its messages best first (the one that matched leads what it quotes).
        windows = [u.row for u, *_ in chosen if u.row is not None and u.grain == "window"]
        inner = [unit_id(w.thread_key, "turn", seq) for w in windows for seq in range(w.first_seq, w.last_seq + 1)]
        cos = {i: v for i, (v, _) in cosines(inner).items()} if cosines is not None and inner else {}
        for unit, p, rel, row, named in chosen:
            c = unit.candidate
            parts = _parts(c, rel, p, row, named)
            if unit.grain == "session":
                episode = episodes.get(unit.id)
                if episode is None or episode.user_id != user_id:
                    continue
                out.append(Hit("session", episode.id, datetime.fromisoformat(episode.started_at), rel, parts.score,
                               parts, row=episode))
                continue
            unit_row = unit.row
            if unit_row is None or not spans.get(unit.id) or unit.at is None:
                continue  # its messages were forgotten: nothing to show
            said = tuple(spans[unit.id])
            ids = tuple(r[1] for r in said)
            if unit.grain == "window":
                order = sorted(said, key=lambda r: -cos.get(unit_id(unit_row.thread_key, "turn", r[0]), -1.0))
                ids = tuple(r[1] for r in order)
            out.append(Hit(unit.grain, unit.id, unit.at, rel, parts.score, parts, ids, unit_row.thread_key, unit_row,
                           said))
        return out

    def _facts_of(
        self, user_id: str, chosen: Sequence[tuple[Unit, float, float, np.ndarray, dict[str, float]]], now: datetime,
    ) -> list[Hit]:
        if not chosen:
            return []
        by_id = {u.id: (p, rel, named) for u, p, rel, _, named in chosen}
        out = []
        for s in self._facts.score(user_id, [u.candidate for u, *_ in chosen], now, threshold=0.0):  # applied already
            p, rel, named = by_id[s.row.id]
            value = p + scoring.TIE_BREAK * (min(1.0, max(0.0, s.parts.effective_importance)) - 0.5)
            parts = s.parts.model_copy(update={"relevance": rel, "score": value, "probability": p,
                                               "features": named})
            out.append(Hit("fact", s.row.id, datetime.fromisoformat(s.row.valid_from), rel, value, parts,
                           tuple(s.row.source_messages), row=s.row))
        return out


def _relevance(units: Sequence[Unit], rows: np.ndarray, named: TimeRange | None, current: bool) -> list[float]:
    """Each unit's relevance (0..1, see the module docs): what the threshold reads."""
    index = {name: i for i, name in enumerate(FEATURES)}
    own = []
    for u in units:
        dense = u.candidate.dense
        if dense is not None and u.sentence is not None:
            dense = max(dense, u.sentence)
        own.append(scoring.relevance(dense, u.candidate.sparse))
    place = {(u.row.thread_key, u.row.first_seq): i for i, u in enumerate(units) if u.row is not None and u.grain == "turn"}
    out = []
    for i, u in enumerate(units):
        rel = own[i]
        if u.grain == "turn" and u.row is not None:
            near = [own[place[k]] for k in ((u.row.thread_key, u.row.first_seq - 1), (u.row.thread_key, u.row.first_seq + 1))
                    if k in place]
            content = 1.0 - float(rows[i, index["filler"]])
            rel = scoring.in_context(rel, max(near, default=0.0), NEIGHBOUR_RELEVANCE * content)
        if named is not None and rows[i, index["in_time"]] > 0:
            rel = scoring.raised(rel, TIME_RELEVANCE)
        if current and rows[i, index["news"]] > 0:
            rel = scoring.raised(rel, NEWS_RELEVANCE * float(rows[i, index["news"]]))
        out.append(min(1.0, rel))
    return out


def _named_rows(rows: np.ndarray) -> list[dict[str, float]]:
    """Each row's nonzero features by name (what ``explain`` shows): the rows read out of
    numpy at once, a per-row numpy step cost ten times as much (a hundred rows a turn)."""
    return [{FEATURES[i]: round(v, 6) for i, v in enumerate(row) if v} for row in rows.tolist()]


def _parts(c: Candidate, relevance: float, probability: float, row: np.ndarray,
           named: dict[str, float]) -> scoring.ScoreParts:
    """The score of something said (a turn, a window, a session): the model's probability,
    and to a question about now the latest wins a near-tie (:func:`~..scoring.said_prior`;
    the ``stale_age`` feature is set only then)."""
    stale = float(row[_STALE])
    value = probability if stale <= 0 else probability + scoring.TIE_BREAK * (scoring.said_prior(stale) - 0.5)
    return scoring.ScoreParts(relevance=relevance, dense=c.dense, sparse=c.sparse, probability=probability,
                              features=named, score=value)


_STALE = FEATURES.index("stale_age")


def _kept_time(at: datetime | None, keep: Keep) -> bool:
    _, since, until, said_until = keep
    if at is None:
        return True
    return not ((since is not None and at < since) or (until is not None and at > until)
                or (said_until is not None and at > said_until))


def _kept(unit: UnitRow, user_id: str, keep: Keep) -> bool:
    """Whether a search may return ``unit``: the user's, not in the thread's window (sent
    whole already), said in the span asked for and before the question."""
    window = keep[0]
    if unit.user_id != user_id:
        return False  # forgotten since its point was written, or another's: never shown
    if window is not None and unit.thread_key == window[0] and unit.first_seq > window[1]:
        return False
    return _kept_time(datetime.fromisoformat(unit.at), keep)


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
    """The best ``k`` hits, skipping one whose messages the hits above it already cover. A
    long-term memory covers nothing: it restates a part of its source messages ("the
    user's cousin is Lena"), and the message itself may say what the question wants ("my
    cousin Lena is vegetarian")."""
    out: list[Hit] = []
    covered: set[str] = set()
    for h in hits:
        ids = set(h.message_ids)
        if h.grain != "fact" and ids and ids <= covered:
            continue
        out.append(h)
        if h.grain != "fact":
            covered |= ids
        if len(out) == k:
            break
    return out
