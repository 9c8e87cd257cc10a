"""What the ranking knows of each candidate: one row of numbers per unit, the same for every
query, that the fitted model (:mod:`..scoring`) turns into a score.

Each feature is a signal a conversation has, read from what the index returned and the
unit's small row — never from its text, which is read only for the units that rank:

- **similarity**: the cosine to the query (the whole unit, and its best sentence: a long
  message is about several things and its whole vector is their average), the BM25 score,
  each also as its rank in this query's pool and against this query's best, so that the
  model reads them calibrated whatever the embedder's or the index's scale;
- **the messages beside it**: the best cosine and BM25 share of the turns one and two places
  away, of the turn just before it (the answer to a question is often the reply after the
  words that match it), and of its thread; the share of the pool said in its thread and
  near it (a session is about a few subjects: one the search keeps meeting is likely the
  one asked of);
- **who said it**: the speaker the query names ("what did Caroline paint?"), the query's
  own speaker ("Caroline: I finally…", a message she says), the other side of a first- or
  second-person question;
- **what it is**: a question itself, next to no content (names and pleasantries), its length;
  a statement of the speaker's own state, goal, value or cause (:mod:`..text.disclosure`);
- **when**: said in the time the query names, or telling of it; a time told, for a question
  asking when; news, for a question about now; how long before the query it was said;
- **grain**: a long-term memory, a turn, a window, a session;
- **the query's own** (the same in every row of a pool, so they rank nothing alone but let
  the model weigh the rest by them): its length, its best cosine and best BM25 in the pool
  (a query whose words nothing shares leans on meaning, one a rare phrase matches on words).

The features are values in about 0..1, named in :data:`FEATURES`; ``scoring.RankingModel``
weighs them (fitted by ``benchmarks/fit_ranking.py``, cross-validated across
conversations). A feature no unit of a kind has is 0 for it.
"""

from __future__ import annotations

import bisect
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

__all__ = ["FEATURES", "FILLER_WORDS", "LOCAL_SEQS", "TIME_SLACK", "Unit", "features"]

#: Slack around a named time (a thing said the evening before "yesterday" still counts).
TIME_SLACK = timedelta(hours=12)
#: Distinct content words below which a message is mostly names and pleasantries.
FILLER_WORDS = 4
#: The places either side of a turn whose pool turns count towards its ``local_share``.
LOCAL_SEQS = 5
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
    "before_dense", "before_bm25", "thread_share", "local_share", "query_words", "top_dense", "top_bm25",
)
_INDEX = {name: i for i, name in enumerate(FEATURES)}
_GRAIN_FLAGS = ("fact", "window", "session")
#: The features written unit by unit (the rest are whole-pool numpy columns).
_PER_UNIT = (
    "near_dense", "near_bm25", "far_dense", "far_bm25", "before_dense", "before_bm25", "thread_dense",
    "thread_bm25", "thread_share", "local_share", "named", "asker", "other_side", "asks", "filler", "length",
    "discloses", "implicit", "in_time", "off_time", "tells_when", "news", "age", "stale_age", *_GRAIN_FLAGS,
)


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


def _log_shares(values: np.ndarray, full: float) -> np.ndarray:
    """:func:`_log_share` of each of ``values``."""
    import numpy as np

    out: np.ndarray = np.minimum(1.0, np.log1p(np.maximum(0.0, values)) / math.log1p(full))
    return out


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
    x[:, _INDEX["bm25"]] = _log_shares(bm25, _BM25_FULL)
    x[:, _INDEX["bm25_share"]] = share
    x[:, _INDEX["bm25_rank"]] = np.minimum(1.0, np.log1p(sparse_rank) / log_ranks)
    x[:, _INDEX["query_words"]] = _log_share(len(asked.words), 40.0)
    x[:, _INDEX["top_dense"]] = float(cos.max())
    x[:, _INDEX["top_bm25"]] = _log_share(top_bm25, _BM25_FULL)

    # Each column is written whole from a list: a numpy element set a unit and feature cost
    # as much as the rest of the function (a few hundred units a turn).
    column: dict[str, list[float]] = {name: [0.0] * n for name in _PER_UNIT}
    cos_of, share_of = cos.tolist(), share.tolist()

    # The messages beside each turn, and the best of its thread, among the pool.
    place = {(u.row.thread_key, u.row.first_seq): i for i, u in enumerate(units) if u.row is not None and u.grain == "turn"}
    # Each thread's two best by cosine and by BM25 share: the best of a unit's thread but
    # itself is the first, or the second where it is the first (linear, not a scan a unit).
    best_in_thread: dict[int, tuple[list[tuple[float, int]], list[tuple[float, int]]]] = {}
    # How much of the pool its thread holds, and how many pool turns sit within
    # :data:`LOCAL_SEQS` places of it: where the search keeps landing.
    in_thread: dict[int, int] = {}
    for i, u in enumerate(units):
        if u.row is not None:
            key = u.row.thread_key
            by_cos, by_share = best_in_thread.setdefault(key, ([], []))
            _keep_two(by_cos, (cos_of[i], i))
            _keep_two(by_share, (share_of[i], i))
            in_thread[key] = in_thread.get(key, 0) + 1
    seqs_of: dict[int, list[int]] = {}
    for key, seq in sorted(place):
        seqs_of.setdefault(key, []).append(seq)
    near_dense, near_bm25, far_dense, far_bm25 = (column[c] for c in ("near_dense", "near_bm25", "far_dense", "far_bm25"))
    before_dense, before_bm25 = column["before_dense"], column["before_bm25"]
    thread_dense, thread_bm25 = column["thread_dense"], column["thread_bm25"]
    thread_share, local_share = column["thread_share"], column["local_share"]
    for i, u in enumerate(units):
        row = u.row
        if row is None:
            continue
        key, seq = row.thread_key, row.first_seq
        if u.grain == "turn":
            for near, d_cos, d_bm25 in ((1, near_dense, near_bm25), (2, far_dense, far_bm25)):
                found = [place[k] for k in ((key, seq - near), (key, seq + near)) if k in place]
                if found:
                    d_cos[i] = max(cos_of[j] for j in found)
                    d_bm25[i] = max(share_of[j] for j in found)
            before = place.get((key, seq - 1))
            if before is not None:
                before_dense[i] = cos_of[before]
                before_bm25[i] = share_of[before]
            seqs = seqs_of[key]
            around = bisect.bisect_right(seqs, seq + LOCAL_SEQS) - bisect.bisect_left(seqs, seq - LOCAL_SEQS) - 1
            local_share[i] = around / (2 * LOCAL_SEQS)
        by_cos, by_share = best_in_thread[key]
        other_cos = [v for v, j in by_cos if j != i][:1]
        if other_cos:
            thread_dense[i] = other_cos[0]
            thread_bm25[i] = [v for v, j in by_share if j != i][0]
        thread_share[i] = (in_thread[key] - 1) / n

    question = asked.is_question
    named_c, asker, other_side, asks = column["named"], column["asker"], column["other_side"], column["asks"]
    filler, length, discloses, implicit = column["filler"], column["length"], column["discloses"], column["implicit"]
    in_time, off_time, tells_when, news = column["in_time"], column["off_time"], column["tells_when"], column["news"]
    # Words and days, raw here: read on their log scales below, a whole column at once.
    age = column["stale_age" if current else "age"]
    # A pool has a few speakers: what the query says of each is read once.
    by_speaker: dict[str | None, tuple[float, float, float]] = {}
    if named is not None:
        early, late = named.start - TIME_SLACK, named.end + TIME_SLACK
    for i, u in enumerate(units):
        payload = u.candidate.payload
        grain = u.candidate.grain
        speaker = u.row.speaker if u.row is not None else None
        sides = by_speaker.get(speaker)
        if sides is None:
            sides = by_speaker[speaker] = (float(asked.names(speaker)), float(asked.said_by(speaker)),
                                           float(asked.other_side(speaker)))
        named_c[i], asker[i], other_side[i] = sides
        if question:
            asks[i] = min(1.0, _number(payload.get("asks")))
        words = payload.get("words")
        if isinstance(words, (int, float)) and grain != "fact":
            filler[i] = 1.0 - min(1.0, max(0.0, float(words)) / FILLER_WORDS)
            length[i] = float(words)
        discloses[i] = min(1.0, _number(payload.get("discloses")))
        implicit[i] = float(grain == "fact" and bool(payload.get("implicit")))
        told = _told(u) if named is not None or when else None
        if named is not None:
            inside = u.at is None or early <= u.at < late
            tells = told is not None and told[0] < late and early < told[1]
            in_time[i] = float(inside or tells)
            off_time[i] = float(not (inside or tells))
        if when and told is not None:
            tells_when[i] = 1.0
        if current:
            news[i] = min(1.0, _number(payload.get("news")))
        if u.at is not None:
            # To a question about now, age is staleness (the model holds it to never a
            # merit); to any other message, what the data says of it.
            age[i] = max(0.0, (asked.at - u.at).total_seconds() / 86_400)
        if grain in _GRAIN_FLAGS:
            column[grain][i] = 1.0
    for name, values in column.items():
        x[:, _INDEX[name]] = values
    # A unit with no words or no date holds 0, which its log scale keeps 0.
    x[:, _INDEX["length"]] = _log_shares(x[:, _INDEX["length"]], 100.0)
    age_column = _INDEX["stale_age" if current else "age"]
    x[:, age_column] = _log_shares(x[:, age_column], _DAYS)
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
