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

__all__ = ["Asked", "words_of"]

_FIRST_PERSON = re.compile(r"\b(i|me|my|mine|myself|we|us|our|ours)\b|\bthe user\b", re.IGNORECASE)
_SECOND_PERSON = re.compile(r"\b(you|your|yours|yourself)\b", re.IGNORECASE)
_WORDS = re.compile(r"[\w'’-]+")


@dataclass(frozen=True)
class Asked:
    """Who a question is about, who asks it, and when it is asked.

    ``query`` is the text asked (a speaker written in front of it taken off: see
    :mod:`..text.speakers`); ``speaker`` is who says it, when the query names its speaker
    ("Caroline: I finally…"), else ``None``.
    """

    query: str
    at: datetime
    speaker: str | None = None

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

    def other_side(self, speaker: str | None) -> bool:
        """Whether ``speaker`` is the other side of a first- (or second-) person question:
        the assistant, for a question about what *I* said (the user, for one about *you*)."""
        if speaker in ("user", "assistant"):
            return self._mine != self._yours and (speaker == "assistant") == self._mine
        return False

    def said_by(self, speaker: str | None) -> bool:
        """Whether ``speaker`` is who says the query (a named speaker written in front of it)."""
        return speaker is not None and self.speaker is not None and speaker.casefold() == self.speaker.casefold()

    def names(self, speaker: str | None) -> bool:
        """Whether the question names ``speaker`` (a person, not ``user``/``assistant``), by
        full name or first name."""
        if speaker is None or speaker in ("user", "assistant") or self.said_by(speaker):
            return False
        return speaker.casefold() in self.words or speaker.split()[0].casefold() in self.words


def words_of(text: str) -> set[str]:
    """The casefolded words of ``text``, a possessive's "'s" cut ("aunt's" → "aunt")."""
    return {re.sub(r"['’]s$", "", w.casefold()) for w in _WORDS.findall(text)}
