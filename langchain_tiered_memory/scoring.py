"""How recall ranks: relevance from similarity, with importance and time as bounded tie-breakers.

The one home of the formula; search, ``explain``, the context's sections, the display and
the CLI all go through it.

**Relevance** (0..1) says how well a unit matches the query, from the magnitudes of the two
retrieval legs, not from ranks alone (ranks make the best of a bad lot look like a match):

- dense: the cosine similarity ``c`` of query and unit, mapped linearly from the embedder's
  *floor* (what unrelated texts score) to its *ceiling* (a close paraphrase) onto 0..1:
  ``d = clip((c − floor) / (ceiling − floor), 0, 1)``;
- sparse: the unit's BM25 score ``s`` (term weights × IDF, computed by Qdrant) saturated as
  ``b = s / (s + half)``: ``half`` is the score of one solid rare-term match, so a name or
  number the query shares counts, and piling up common words cannot pass for a match;
- fused as a noisy OR: ``relevance = 1 − (1 − d) × (1 − w·b)``. Either signal alone can make
  a match; together they make a stronger one; neither can push a non-match far. The
  default threshold (``MemoryConfig.score_threshold``) then means "not relevant".

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
    "prior",
    "relevance",
    "score",
]

#: How far the prior can move a score (in relevance units, in total).
TIE_BREAK = 0.05
#: The formula, as the display and the CLI print it.
FORMULA = (
    f"score = relevance + {TIE_BREAK:g} × (prior − 0.5); relevance = 1 − (1 − dense) × "
    "(1 − w × bm25); prior = min(1, importance + boost) × decay^days"
)
_SECONDS_PER_DAY = 86_400.0


@dataclass(frozen=True)
class Calibration:
    """What similarity values mean for one embedder and one BM25 index.

    ``dense_floor``: the cosine of unrelated texts (maps to 0); ``dense_ceiling``: that of a
    close paraphrase (maps to 1); ``sparse_half``: the BM25 score that counts as half a
    match; ``sparse_weight``: how much a full BM25 match alone is worth (0..1).
    """

    dense_floor: float = 0.1
    dense_ceiling: float = 0.55
    sparse_half: float = 10.0
    sparse_weight: float = 0.6


#: all-MiniLM-L6-v2's scale, the offline default embedder's: a question and an unrelated
#: statement sit near 0.0–0.2, a question and the statement that answers it near 0.2–0.6,
#: paraphrases above 0.6. The floor sits low and BM25's half-match high because on long
#: conversations the answer is often a loose paraphrase (cosine 0.2–0.3) while chatter
#: shares the question's common words (BM25 4–7 on a window): measured on
#: ``benchmarks/longchat`` (recall@10 0.79 → 0.85 with the threshold at 0.15).
DEFAULT_CALIBRATION = Calibration()


def relevance(dense: float | None, sparse: float | None, calibration: Calibration = DEFAULT_CALIBRATION) -> float:
    """Relevance in 0..1 from a unit's cosine (``None``: not a dense candidate) and BM25
    score (``None``: no shared term); see the module docs."""
    cal = calibration
    d = 0.0
    if dense is not None:
        d = min(1.0, max(0.0, (dense - cal.dense_floor) / (cal.dense_ceiling - cal.dense_floor)))
    b = 0.0
    if sparse is not None and sparse > 0:
        b = sparse / (sparse + cal.sparse_half)
    return 1.0 - (1.0 - d) * (1.0 - cal.sparse_weight * b)


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
