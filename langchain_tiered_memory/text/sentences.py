"""Sentences: where one ends, and whether one asks.

Used where a message's parts mean different things: a line that only asks is weaker
evidence (:mod:`.dialogue`), and the time a message asks about is in its question, not in
what it tells (:mod:`.dates`).
"""

from __future__ import annotations

import re

__all__ = ["is_question", "only_asks", "sentences_of"]

#: Where one sentence ends and the next begins (an end mark, then space: not "3.5").
_SENTENCES = re.compile(r"(?<=[.!?？。])\s+")
#: How a question starts when it has no question mark ("remind me where I parked").
_INTERROGATIVE = re.compile(
    r"^\W*(what|where|which|who|whom|whose|when|why|how|do|does|did|is|are|am|was|were|have|has|had|"
    r"can|could|will|would|should|remind me)\b",
    re.IGNORECASE,
)
_QUOTES = " \t\n\"'“”‘’()"


def sentences_of(text: str) -> list[str]:
    """``text`` cut into sentences (at an end mark followed by space)."""
    return _SENTENCES.split(text.strip())


def is_question(text: str) -> bool:
    """Whether ``text`` asks: it ends with a question mark or starts like a question."""
    return text.rstrip(_QUOTES).endswith(("?", "？")) or bool(_INTERROGATIVE.match(text))


def only_asks(text: str) -> bool:
    """Whether each sentence of ``text`` is a question ("any advice on sleep?") and none
    says anything ("My budget is 3,000 euros. Is that enough?" says)."""
    sentences = [x for x in sentences_of(text) if x.strip(_QUOTES)]
    return bool(sentences) and all(x.rstrip(_QUOTES).endswith(("?", "？")) for x in sentences)
