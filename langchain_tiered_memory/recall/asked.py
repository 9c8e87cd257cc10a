"""The question's side of a search: who it is about, whether it asks, and its words.

:class:`Asked` is what the ranking (:mod:`.ranking`) reads of a query: a question in the
first person is about what the user said, one that names a speaker ranks their turns ahead,
and a question meets evidence that only asks with less trust.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property

from ..text.sentences import is_question

__all__ = ["ASKING", "OTHER_SPEAKER", "Asked", "words_of"]

#: What relevance keeps when said by the other side of a question's speaker.
OTHER_SPEAKER = 0.8
#: What relevance keeps, for a question, when the evidence is all questions too (a window
#: half made of questions keeps half of the loss).
ASKING = 0.6
_FIRST_PERSON = re.compile(r"\b(i|me|my|mine|myself|we|us|our|ours)\b|\bthe user\b", re.IGNORECASE)
_SECOND_PERSON = re.compile(r"\b(you|your|yours|yourself)\b", re.IGNORECASE)
_WORDS = re.compile(r"[\w'’-]+")


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
        second-) person question."""
        if speaker in ("user", "assistant"):
            if self._mine != self._yours and (speaker == "assistant") == self._mine:
                return relevance * OTHER_SPEAKER
        return relevance

    def names(self, speaker: str | None) -> bool:
        """Whether the question names ``speaker`` (a person, not ``user``/``assistant``), by
        full name or first name."""
        if speaker is None or speaker in ("user", "assistant"):
            return False
        return speaker.casefold() in self.words or speaker.split()[0].casefold() in self.words


def words_of(text: str) -> set[str]:
    """The casefolded words of ``text``, a possessive's "'s" cut ("aunt's" → "aunt")."""
    return {re.sub(r"['’]s$", "", w.casefold()) for w in _WORDS.findall(text)}
