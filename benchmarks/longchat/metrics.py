"""Measures of one question against what a system returned."""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Iterable, Sequence

from .generator import Question, contains_any, find


def recall_at(hits: Sequence[Sequence[str]], evidence: Sequence[str], k: int) -> float:
    """Share of the evidence turns among the message ids of the first ``k`` hits.

    A hit is a list of message ids: one turn for the turn retrievers, possibly several for
    a window or a session of turns.
    """
    if not evidence:
        return 0.0
    covered: set[str] = set()
    for hit in hits[:k]:
        covered.update(hit)
    return len(covered.intersection(evidence)) / len(set(evidence))


def answered(question: Question, text: str) -> bool:
    """The answer (or, for dates, one of its spellings) occurs in ``text`` as whole words."""
    return contains_any(question.accepted, text)


def latest_value(question: Question, text: str) -> bool:
    """The new value occurs, and before the stale one (or the stale one is absent)."""
    new = min((p for p in (find(v, text) for v in question.accepted) if p >= 0), default=-1)
    if new < 0:
        return False
    stale = find(question.stale_answer, text) if question.stale_answer else -1
    return stale < 0 or new < stale


def first_words(text: str, n: int) -> str:
    """``text`` cut to its first ``n`` whitespace-separated words."""
    return " ".join(text.split()[:n])


def word_count(text: str) -> int:
    return len(text.split())


def mean(values: Iterable[float]) -> float | None:
    values = list(values)
    return statistics.fmean(values) if values else None


def percentile(samples: Sequence[float], q: float) -> float | None:
    """The ``q`` percentile (0-100) by the nearest-rank method; ``None`` without samples."""
    if not samples:
        return None
    ordered = sorted(samples)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


_WORD = re.compile(r"[a-z]+")
_COMMON = frozenset(
    "a an the i my me we our you your user user's does do did what which who where when how is are "
    "was were to of in on at for with from about by it its that this these those and or be have has "
    "had can as so up out now these days".split()
)


def keyword_overlap(question: str, evidence: str, answer: str) -> float:
    """Share of the question's content words that occur in the evidence (answer excluded):
    how much a question can be matched by keywords alone."""
    words = {w for w in _WORD.findall(question.lower()) if w not in _COMMON and len(w) > 2}
    words -= set(_WORD.findall(answer.lower()))
    if not words:
        return 0.0
    evidence_words = set(_WORD.findall(evidence.lower()))
    return len(words & evidence_words) / len(words)
