"""What the ranking knows of each candidate: one row of numbers per unit, the same for every
query, that the fitted model (:mod:`..scoring`) turns into a score.

Each feature is a signal a conversation has, read from what the index returned and the
unit's small row — never from its text, which is read only for the units that rank:

- **similarity**: the cosine to the query (the whole unit, and its best sentence: a long
  message is about several things and its whole vector is their average), the BM25 score,
  each also as its rank in this query's pool and against this query's best, so that the
  model reads them calibrated whatever the embedder's or the index's scale;
- **the messages beside it**: the best cosine and BM25 share of the turns one and two places
  away, and of its thread (a session is about a few subjects; the answer to a question is
  often the reply after the words that match it);
- **who said it**: the speaker the query names ("what did Caroline paint?"), the query's
  own speaker ("Caroline: I finally…", a message she says), the other side of a first- or
  second-person question;
- **what it is**: a question itself, next to no content (names and pleasantries), its length;
  a statement of the speaker's own state, goal, value or cause (:mod:`..text.disclosure`);
- **when**: said in the time the query names, or telling of it; a time told, for a question
  asking when; news, for a question about now; how long before the query it was said;
- **grain**: a long-term memory, a turn, a window, a session.

The features are values in about 0..1, named in :data:`FEATURES`; ``scoring.RankingModel``
weighs them (fitted by ``benchmarks/fit_ranking.py``, cross-validated across
conversations). A feature no unit of a kind has is 0 for it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from .asked import Asked
from .dates import TimeRange

if TYPE_CHECKING:
    import numpy as np

    from ..index.points import Candidate
    from ..storage.units import UnitRow

__all__ = ["FEATURES", "FILLER_WORDS", "TIME_SLACK", "Unit", "features"]

#: Slack around a named time (a thing said the evening before "yesterday" still counts).
TIME_SLACK = timedelta(hours=12)
#: Distinct content words below which a message is mostly names and pleasantries.
FILLER_WORDS = 4
#: Ranks (0-based) are read on a log scale up to this many.
_RANKS = 100
#: BM25 scores are read on a log scale up to this (a phrase of rare words in common).
_BM25_FULL = 40.0
#: Days of age are read on a log scale up to this.
_DAYS = 365.0

#: The features, in the order of a row (the model's weights follow it).
FEATURES: tuple[str, ...] = (
    "dense", "dense_gap", "sentence", "dense_rank",
    "bm25", "bm25_share", "bm25_rank",
    "near_dense", "near_bm25", "far_dense", "far_bm25", "thread_dense", "thread_bm25",
    "named", "asker", "other_side",
    "asks", "filler", "length", "discloses",
    "in_time", "off_time", "tells_when", "news", "age", "stale_age",
    "fact", "window", "session", "implicit",
    "near_dense_content", "dense_filler",
)
_INDEX = {name: i for i, name in enumerate(FEATURES)}


@dataclass
class Unit:
    """One candidate of a search's pool: what the index returned and, for something said,
    its row (speaker, thread, place)."""

    candidate: Candidate
    at: datetime | None
    row: UnitRow | None = None
    #: The best cosine among its sentences (``None``: a message of one sentence).
    sentence: float | None = None

    @property
    def id(self) -> str:
        return self.candidate.id

    @property
    def grain(self) -> str:
        return self.candidate.grain

    def field(self, name: str) -> Any:
        return self.candidate.payload.get(name)


def _log_share(value: float, full: float) -> float:
    return min(1.0, math.log1p(max(0.0, value)) / math.log1p(full))


def _number(value: object) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def _told(unit: Unit) -> tuple[datetime, datetime] | None:
    start, end = unit.field("told_from"), unit.field("told_until")
    if not isinstance(start, str) or not isinstance(end, str):
        return None
    try:
        return datetime.fromisoformat(start), datetime.fromisoformat(end)
    except ValueError:
        return None


def features(units: Sequence[Unit], asked: Asked, named: TimeRange | None, *, current: bool, when: bool) -> np.ndarray:
    """The feature rows of ``units`` (one search's whole pool: ranks, shares and neighbours
    are read within it), for the query ``asked``, the time it names (``named``), whether it
    asks how things stand now (``current``) and whether it asks when (``when``)."""
    import numpy as np  # here, not at module level: importing the package loads no numpy

    n = len(units)
    x = np.zeros((n, len(FEATURES)), dtype=np.float64)
    if n == 0:
        return x
    cos = np.array([u.candidate.dense if u.candidate.dense is not None else 0.0 for u in units])
    bm25 = np.array([max(0.0, u.candidate.sparse) if u.candidate.sparse is not None else 0.0 for u in units])
    top_bm25 = float(bm25.max())
    share = bm25 / top_bm25 if top_bm25 > 0 else bm25
    dense_rank = np.empty(n)
    dense_rank[np.argsort(-cos, kind="stable")] = np.arange(n)
    sparse_rank = np.full(n, float(_RANKS))
    hits = np.flatnonzero(bm25 > 0)
    sparse_rank[hits[np.argsort(-bm25[hits], kind="stable")]] = np.arange(len(hits))
    log_ranks = math.log1p(_RANKS)
    x[:, _INDEX["dense"]] = cos
    x[:, _INDEX["dense_gap"]] = cos - cos.max()
    x[:, _INDEX["sentence"]] = [u.sentence if u.sentence is not None else c for u, c in zip(units, cos)]
    x[:, _INDEX["dense_rank"]] = np.minimum(1.0, np.log1p(dense_rank) / log_ranks)
    x[:, _INDEX["bm25"]] = [_log_share(b, _BM25_FULL) for b in bm25]
    x[:, _INDEX["bm25_share"]] = share
    x[:, _INDEX["bm25_rank"]] = np.minimum(1.0, np.log1p(sparse_rank) / log_ranks)

    # The messages beside each turn, and the best of its thread, among the pool.
    place = {(u.row.thread_key, u.row.first_seq): i for i, u in enumerate(units) if u.row is not None and u.grain == "turn"}
    # Each thread's two best by cosine and by BM25 share: the best of a unit's thread but
    # itself is the first, or the second where it is the first (linear, not a scan a unit).
    best_in_thread: dict[int, tuple[list[tuple[float, int]], list[tuple[float, int]]]] = {}
    for i, u in enumerate(units):
        if u.row is not None:
            by_cos, by_share = best_in_thread.setdefault(u.row.thread_key, ([], []))
            _keep_two(by_cos, (float(cos[i]), i))
            _keep_two(by_share, (float(share[i]), i))
    for i, u in enumerate(units):
        row = u.row
        if row is None:
            continue
        if u.grain == "turn":
            for near, d_cos, d_bm25 in ((1, "near_dense", "near_bm25"), (2, "far_dense", "far_bm25")):
                found = [place[k] for k in ((row.thread_key, row.first_seq - near), (row.thread_key, row.first_seq + near)) if k in place]
                if found:
                    x[i, _INDEX[d_cos]] = max(cos[j] for j in found)
                    x[i, _INDEX[d_bm25]] = max(share[j] for j in found)
        by_cos, by_share = best_in_thread[row.thread_key]
        other_cos = [v for v, j in by_cos if j != i][:1]
        if other_cos:
            x[i, _INDEX["thread_dense"]] = other_cos[0]
            x[i, _INDEX["thread_bm25"]] = [v for v, j in by_share if j != i][0]

    question = asked.is_question
    for i, u in enumerate(units):
        speaker = u.row.speaker if u.row is not None else None
        x[i, _INDEX["named"]] = float(asked.names(speaker))
        x[i, _INDEX["asker"]] = float(asked.said_by(speaker))
        x[i, _INDEX["other_side"]] = float(asked.other_side(speaker))
        if question:
            x[i, _INDEX["asks"]] = min(1.0, _number(u.field("asks")))
        words = u.field("words")
        if isinstance(words, (int, float)) and u.grain != "fact":
            x[i, _INDEX["filler"]] = 1.0 - min(1.0, max(0.0, float(words)) / FILLER_WORDS)
            x[i, _INDEX["length"]] = _log_share(float(words), 100.0)
        x[i, _INDEX["discloses"]] = min(1.0, _number(u.field("discloses")))
        x[i, _INDEX["implicit"]] = float(u.grain == "fact" and bool(u.field("implicit")))
        told = _told(u)
        if named is not None:
            inside = u.at is None or named.start - TIME_SLACK <= u.at < named.end + TIME_SLACK
            tells = told is not None and told[0] < named.end + TIME_SLACK and named.start - TIME_SLACK < told[1]
            x[i, _INDEX["in_time"]] = float(inside or tells)
            x[i, _INDEX["off_time"]] = float(not (inside or tells))
        if when and told is not None:
            x[i, _INDEX["tells_when"]] = 1.0
        if current:
            x[i, _INDEX["news"]] = min(1.0, _number(u.field("news")))
        if u.at is not None:
            days = max(0.0, (asked.at - u.at).total_seconds() / 86_400)
            # To a question about now, age is staleness (the model holds it to never a
            # merit); to any other message, what the data says of it.
            x[i, _INDEX["stale_age" if current else "age"]] = _log_share(days, _DAYS)
        if u.grain in ("fact", "window", "session"):
            x[i, _INDEX[u.grain]] = 1.0
    content = 1.0 - x[:, _INDEX["filler"]]
    x[:, _INDEX["near_dense_content"]] = x[:, _INDEX["near_dense"]] * content
    x[:, _INDEX["dense_filler"]] = cos * x[:, _INDEX["filler"]]
    return x


def _keep_two(best: list[tuple[float, int]], item: tuple[float, int]) -> None:
    """Keep the two largest values of ``best`` (ties: the first seen first)."""
    if len(best) < 2:
        best.append(item)
        best.sort(key=lambda t: -t[0])
    elif item[0] > best[1][0]:
        best[1] = item
        best.sort(key=lambda t: -t[0])
