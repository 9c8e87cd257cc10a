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

**Ranking** (:func:`recall`'s order) is a fitted model, not a sum of hand-set weights:
boosted trees (or a logistic regression) over the features every candidate has
(:mod:`.recall.features`: cosine, BM25, the neighbours' match, speaker, date fit, length,
grain, age…), shipped in ``data/ranking.json``, refitted by ``benchmarks/fit_ranking.py`` on
real conversations and reported by cross-validation across conversations
(:class:`RankingModel`). Its output is the probability that a unit is evidence for the
query; a recalled unit's score is that probability, nudged by the prior below. The
relevance above stays what the threshold reads: whether a unit matches at all.

**Score** of a long-term memory in ``search`` = ``relevance + TIE_BREAK × (prior − ½)``,
and in ``recall`` = ``probability + TIE_BREAK × (prior − ½)``, where the *prior* is the unit's
standing apart from the query: for a memory, its effective importance ``min(1, importance +
boost) × decay^days`` (``days`` since it was last recalled, ``boost`` what recalls added,
capped so that importance + boost ≤ 1); for a dated query, nearness to the time asked
about; for something said, to a question about now, how recently it was said
(:func:`said_prior`); else ½. So the prior moves a score by at most ``±TIE_BREAK/2``: it orders matches
whose relevance is within ``TIE_BREAK`` of each other and can never lift a clearly worse
match over a better one — and since a recall only raises the boost of what was returned,
and the boost is capped, popularity cannot snowball into relevance.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from .errors import ConfigError

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "DEFAULT_CALIBRATION",
    "FORMULA",
    "TIE_BREAK",
    "MODEL_PATH",
    "Calibration",
    "RankingModel",
    "ScoreParts",
    "Trees",
    "boosted",
    "days_between",
    "decay_factor",
    "in_context",
    "prior",
    "raised",
    "ranking_model",
    "relevance",
    "said_prior",
    "score",
    "strength",
]

#: How far the prior can move a score (in relevance units, in total).
TIE_BREAK = 0.05
#: The formula, as the display and the CLI print it.
FORMULA = (
    f"score = p + {TIE_BREAK:g} × (prior − 0.5), p = the fitted ranking's probability of evidence; "
    "relevance = min(1, w × dense + bm25 / bm25_full); prior = min(1, importance + boost) × decay^days "
    "(a memory), recency (said, to a question about now), else 0.5"
)
#: The shipped ranking model (``benchmarks/fit_ranking.py`` writes it).
MODEL_PATH = Path(__file__).resolve().parent / "data" / "ranking.json"
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


def said_prior(stale: float) -> float:
    """The prior of something said, to a question about now ("which phone do I use these
    days?"): 1 just said, 0 a year or more before (``stale``: the ranking's ``stale_age``
    feature, days on a log scale). The latest wins a near-tie, as a memory's importance does."""
    return 1.0 - min(1.0, max(0.0, stale))


def score(relevance_value: float, prior_value: float = 0.5) -> float:
    """The ranking score: relevance, nudged by at most ``±TIE_BREAK/2`` by the prior."""
    return relevance_value + TIE_BREAK * (min(1.0, max(0.0, prior_value)) - 0.5)


def boosted(boost: float, importance: float, access_boost: float) -> float:
    """A memory's boost after one more recall: ``+access_boost``, capped so that
    ``importance + boost`` stays within 1."""
    return min(boost + access_boost, max(0.0, 1.0 - importance))


@dataclass(frozen=True)
class Trees:
    """Boosted regression trees, each padded to a complete binary tree of ``depth`` levels
    so that all of them are walked at once (a leaf above the last level is a node whose
    split always goes left, its value in every leaf below it).

    ``feature[t][n]`` (an index into the model's features) and ``threshold[t][n]`` split
    node ``n`` of tree ``t`` (a value ``<=`` the threshold goes left); ``leaf[t][j]`` is the
    value of leaf ``j``. Nodes are numbered level by level (the children of ``n`` are
    ``2n + 1`` and ``2n + 2``).
    """

    depth: int
    feature: tuple[tuple[int, ...], ...]
    threshold: tuple[tuple[float, ...], ...]
    leaf: tuple[tuple[float, ...], ...]
    #: The three as numpy arrays, made when first walked.
    _arrays: Any = field(default=None, init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        nodes, leaves = 2**self.depth - 1, 2**self.depth
        if not (len(self.feature) == len(self.threshold) == len(self.leaf)):
            raise ConfigError("a ranking model's trees need a feature, threshold and leaf list each")
        for f, t, v in zip(self.feature, self.threshold, self.leaf):
            if len(f) != nodes or len(t) != nodes or len(v) != leaves:
                raise ConfigError(f"each tree of depth {self.depth} needs {nodes} nodes and {leaves} leaves")
            if not all(math.isfinite(x) for x in (*v, *t)):
                raise ConfigError("a ranking model's trees must hold finite numbers")

    @property
    def count(self) -> int:
        return len(self.leaf)

    def total(self, rows: np.ndarray, columns: Sequence[int]) -> np.ndarray:
        """The sum of every tree's value for each row (``columns[f]``: the row's column of
        the model's feature ``f``)."""
        import numpy as np  # here, not at module level: importing the package loads no numpy

        arrays = self._arrays
        if arrays is None:
            arrays = (np.asarray(self.feature, dtype=np.int64), np.asarray(self.threshold, dtype=np.float64),
                      np.asarray(self.leaf, dtype=np.float64))
            object.__setattr__(self, "_arrays", arrays)  # a cache of the frozen fields
        feature = np.asarray(columns, dtype=np.int64)[arrays[0]]
        threshold, leaf = arrays[1], arrays[2]
        n, trees = len(rows), self.count
        if n == 0 or trees == 0:
            return np.zeros(n)
        each = np.arange(trees)[None, :]
        row = np.arange(n)[:, None]
        node = np.zeros((n, trees), dtype=np.int64)
        for _ in range(self.depth):
            right = rows[row, feature[each, node]] > threshold[each, node]
            node = 2 * node + 1 + right
        values: np.ndarray = leaf[each, node - (2**self.depth - 1)].sum(axis=1)
        return values


@dataclass(frozen=True)
class RankingModel:
    """The fitted ranking: ``p = 1 / (1 + exp(−(bias + scale × (Σ weight_f × feature_f +
    Σ trees))))``, the probability that a candidate is evidence for the query, over named
    features: a logistic regression (``weights``), boosted trees (``trees``), or both.

    ``about`` says how it was fitted (data, command, the cross-validated figures). A model
    names its features, so one fitted before a feature existed reads it as weight 0 (a
    linear model) — a model naming a feature the ranking does not compute is refused
    (:meth:`check`).
    """

    features: tuple[str, ...]
    weights: tuple[float, ...] = ()
    bias: float = 0.0
    scale: float = 1.0
    trees: Trees | None = None
    about: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)

    def __post_init__(self) -> None:
        if self.weights and len(self.features) != len(self.weights):
            raise ConfigError(f"a ranking model needs one weight per feature, got {len(self.weights)} for "
                              f"{len(self.features)}")
        if not all(math.isfinite(w) for w in (*self.weights, self.bias, self.scale)):
            raise ConfigError("a ranking model's weights must be finite numbers")
        if self.trees is not None and any(not 0 <= f < len(self.features) for t in self.trees.feature for f in t):
            raise ConfigError("a ranking model's trees split on features it does not name")

    def check(self, known: Sequence[str]) -> None:
        """Raise :class:`ConfigError` if the model names a feature not in ``known``."""
        unknown = [f for f in self.features if f not in known]
        if unknown:
            raise ConfigError(f"the ranking model names features this version does not compute: "
                              f"{', '.join(unknown)}; refit it with benchmarks/fit_ranking.py")

    def raw(self, rows: np.ndarray, names: Sequence[str]) -> np.ndarray:
        """The model's score of each row before the probability scale (columns ``names``)."""
        import numpy as np  # here, not at module level: importing the package loads no numpy

        out = np.zeros(len(rows))
        if self.weights:
            by_name = dict(zip(self.features, self.weights))
            out += rows @ np.array([by_name.get(n, 0.0) for n in names], dtype=np.float64)
        if self.trees is not None:
            index = {n: i for i, n in enumerate(names)}
            out += self.trees.total(rows, [index[f] for f in self.features])
        return out

    def probability(self, rows: np.ndarray, names: Sequence[str]) -> np.ndarray:
        """The probability of each row of features (columns named ``names``)."""
        import numpy as np

        logits = self.scale * self.raw(rows, names) + self.bias
        return 1.0 / (1.0 + np.exp(-np.clip(logits, -40.0, 40.0)))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"features": list(self.features), "weights": list(self.weights), "bias": self.bias,
                               "scale": self.scale}
        if self.trees is not None:
            t = self.trees
            out["trees"] = {"depth": t.depth, "feature": [list(x) for x in t.feature],
                            "threshold": [list(x) for x in t.threshold], "leaf": [list(x) for x in t.leaf]}
        out["about"] = dict(self.about)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: str = "the ranking model") -> RankingModel:
        try:
            raw = data.get("trees")
            trees = None
            if raw is not None:
                trees = Trees(int(raw["depth"]), tuple(tuple(int(f) for f in t) for t in raw["feature"]),
                              tuple(tuple(float(x) for x in t) for t in raw["threshold"]),
                              tuple(tuple(float(x) for x in t) for t in raw["leaf"]))
            return cls(tuple(str(f) for f in data["features"]), tuple(float(w) for w in data.get("weights") or ()),
                       float(data.get("bias", 0.0)), float(data.get("scale", 1.0)), trees, dict(data.get("about") or {}))
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"{where} is not a ranking model ({exc}); write one with "
                              "benchmarks/fit_ranking.py") from None


@lru_cache(maxsize=8)
def ranking_model(path: str | None = None) -> RankingModel:
    """The ranking model at ``path`` (a JSON file ``benchmarks/fit_ranking.py`` wrote), or
    the shipped one; read once per process."""
    where = Path(path) if path is not None else MODEL_PATH
    try:
        data = json.loads(where.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read the ranking model {where}: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{where} is not a ranking model; write one with benchmarks/fit_ranking.py")
    return RankingModel.from_json(data, str(where))


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
    #: For a recalled unit: the fitted ranking's probability that it is evidence, and the
    #: features it was read from (by name; see :mod:`.recall.features`).
    probability: float | None = None
    features: dict[str, float] | None = None
    score: float
