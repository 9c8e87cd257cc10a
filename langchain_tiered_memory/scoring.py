"""How recall ranks: relevance from similarity, with importance and time as bounded tie-breakers.

The one home of the formula; search, ``explain``, the context's sections, the display and
the CLI all go through it.

**Relevance** (0..1) says how well a unit matches the query, from the magnitudes of the two
retrieval legs, not from ranks alone (ranks make the best of a bad lot look like a match):

- dense: the cosine similarity ``c`` of query and unit above the embedder's *floor* (what
  unrelated texts score), ``d = max(0, c − floor) / (1 − floor)``;
- sparse: the unit's BM25 score ``s`` (term weights × IDF, computed by Qdrant);
- fused linearly: ``strength = w_d · d + s / s_full``, where ``s_full`` is the BM25 score
  that alone makes a full match (several rare terms in common); ``relevance = min(1,
  strength)``. Recall ranks messages by the strength itself (capped, every strong match
  would tie at 1), the threshold reads the relevance. A sum,
  not a noisy OR of saturated legs: saturating either leg made every loose paraphrase and
  every turn sharing one word look alike at the top, and on real conversations (LoCoMo,
  ``benchmarks/bench_locomo.py``) the sum ranked the answering turn first far more often
  (R@1 0.10 → 0.36 in the same harness). Either signal alone can still make a match, and
  the default threshold (``MemoryConfig.score_threshold``) means "not relevant".

**Score** = ``relevance + TIE_BREAK × (prior − ½)``, where the *prior* is the unit's
standing apart from the query: for a memory, its effective importance ``min(1, importance +
boost) × decay^days`` (``days`` since it was last recalled, ``boost`` what recalls added,
capped so that importance + boost ≤ 1); for a dated query, nearness to the time asked
about; else ½. So the prior moves a score by at most ``±TIE_BREAK/2``: it orders matches
whose relevance is within ``TIE_BREAK`` of each other and can never lift a clearly worse
match over a better one — and since a recall only raises the boost of what was returned,
and the boost is capped, popularity cannot snowball into relevance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

from pydantic import BaseModel, ConfigDict

__all__ = [
    "DEFAULT_CALIBRATION",
    "FORMULA",
    "TIE_BREAK",
    "Calibration",
    "ScoreParts",
    "boosted",
    "days_between",
    "decay_factor",
    "in_context",
    "prior",
    "raised",
    "relevance",
    "score",
    "strength",
]

#: How far the prior can move a score (in relevance units, in total).
TIE_BREAK = 0.05
#: The formula, as the display and the CLI print it.
FORMULA = (
    f"score = relevance + {TIE_BREAK:g} × (prior − 0.5); relevance = min(1, w × dense + "
    "bm25 / bm25_full); prior = min(1, importance + boost) × decay^days"
)
_SECONDS_PER_DAY = 86_400.0


@dataclass(frozen=True)
class Calibration:
    """What similarity values mean for one embedder and one BM25 index.

    ``dense_floor``: the cosine of unrelated texts (maps to 0); ``dense_weight``: what a
    cosine of 1 adds; ``sparse_full``: the BM25 score that alone makes a full match.
    """

    dense_floor: float = 0.0
    dense_weight: float = 1.0
    sparse_full: float = 33.0


#: all-MiniLM-L6-v2's scale, the offline default embedder's, beside Qdrant's BM25 (k 1.2,
#: b 0.75, stemmed English): a question and an unrelated statement sit near cosine 0.0–0.15,
#: the statement that answers it near 0.25–0.6; one rare word in common scores BM25 5–10,
#: a phrase 15–30. The ratio of the two weights (a BM25 point is worth 0.03 of cosine) was
#: chosen on LoCoMo's real conversations (``benchmarks/bench_locomo.py``): 0.02–0.05 rank
#: alike (R@10 within 0.01), the cosine alone or BM25 alone 0.10–0.20 lower. A loose
#: paraphrase at cosine 0.15 or one rare shared word (BM25 5) passes the default threshold.
DEFAULT_CALIBRATION = Calibration()


def strength(dense: float | None, sparse: float | None, calibration: Calibration = DEFAULT_CALIBRATION) -> float:
    """How strongly a unit matches, ``w_d · d + s / s_full`` uncapped: what recall ranks by
    (capping it would tie every strong match at 1); see the module docs."""
    cal = calibration
    d = 0.0
    if dense is not None:
        d = max(0.0, dense - cal.dense_floor) / (1.0 - cal.dense_floor)
    b = 0.0
    if sparse is not None and sparse > 0:
        b = sparse / cal.sparse_full
    return cal.dense_weight * d + b


def relevance(dense: float | None, sparse: float | None, calibration: Calibration = DEFAULT_CALIBRATION) -> float:
    """Relevance in 0..1 from a unit's cosine (``None``: not a dense candidate) and BM25
    score (``None``: no shared term): :func:`strength` capped at 1."""
    return min(1.0, strength(dense, sparse, calibration))


def raised(value: float, share: float) -> float:
    """``value`` raised ``share`` of the way towards 1 (a noisy OR with a signal of strength
    ``share``), never lowered: a match's strength may exceed 1 (a cosine plus a BM25 share is
    uncapped), and past 1 the OR alone would pull it down (1.3 raised by 0.2 read 1.24)."""
    return max(value, value + share * (1.0 - value))


def in_context(own: float, context: float, weight: float) -> float:
    """The relevance of a message read with the messages beside it: its own, raised by
    ``weight`` × the best neighbour's (``context``) towards 1. The answer to a question is
    often the reply right after the words that match it ("What inspired you to join?" —
    "I've always respected the military"), and the matching words often sit in the
    question just before the answer: each lends the other some of its relevance."""
    return raised(own, weight * context)


def days_between(now: datetime, then: datetime) -> float:
    """Days from ``then`` to ``now`` (never negative: a clock set back reads as now)."""
    return max(0.0, (now - then).total_seconds() / _SECONDS_PER_DAY)


def decay_factor(rate: float, days: float) -> float:
    """``rate^days``: what is left of a weight after ``days`` (rate 1: nothing decays)."""
    if rate >= 1.0:
        return 1.0
    if rate <= 0.0:
        return 0.0 if days > 0 else 1.0
    return math.exp(math.log(rate) * days)


def prior(importance: float, boost: float, days: float, rate: float) -> float:
    """A memory's effective importance: ``min(1, importance + boost) × rate^days``."""
    return min(1.0, importance + boost) * decay_factor(rate, days)


def score(relevance_value: float, prior_value: float = 0.5) -> float:
    """The ranking score: relevance, nudged by at most ``±TIE_BREAK/2`` by the prior."""
    return relevance_value + TIE_BREAK * (min(1.0, max(0.0, prior_value)) - 0.5)


def boosted(boost: float, importance: float, access_boost: float) -> float:
    """A memory's boost after one more recall: ``+access_boost``, capped so that
    ``importance + boost`` stays within 1."""
    return min(boost + access_boost, max(0.0, 1.0 - importance))


class ScoreParts(BaseModel):
    """How a recalled unit's score was made (``search(..., explain=True)``).

    ``dense`` is the cosine similarity (``None`` when the unit was not among the dense
    candidates), ``sparse`` the BM25 score (``None`` without a shared term); ``relevance``
    fuses them; ``importance`` and ``boost`` are the memory's at query time, ``decay`` is
    ``MemoryConfig.decay ** days_since_access``; ``effective_importance`` (the prior) is
    ``min(1, importance + boost) × decay``; ``score = relevance + TIE_BREAK ×
    (effective_importance − 0.5)``. See :mod:`langchain_tiered_memory.scoring`.
    """

    model_config = ConfigDict(frozen=True)

    relevance: float
    dense: float | None = None
    sparse: float | None = None
    importance: float = 0.5
    boost: float = 0.0
    days_since_access: float = 0.0
    decay: float = 1.0
    effective_importance: float = 0.5
    score: float
