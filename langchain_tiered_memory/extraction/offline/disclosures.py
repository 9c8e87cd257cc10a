"""A sentence in which the user discloses their state, goal, value or a cause, as a memory.

Kept whole, in the third person, with its kind (``about``): a later message may lean on it
without sharing its words (:mod:`...text.disclosure` has the patterns).
"""

from __future__ import annotations

import re

from ...text.disclosure import disclosed_beyond
from ...text.sentences import is_question
from .text import to_third_person

__all__ = ["DISCLOSURE_TYPES", "MAX_DISCLOSURE_CHARS", "disclosure"]

#: The memory type of a statement of each kind of disclosure.
DISCLOSURE_TYPES = {"state": "fact", "goal": "preference", "value": "preference", "cause": "experience"}
#: Longer sentences are a story, not a statement: their parts are the other rules'.
MAX_DISCLOSURE_CHARS = 300
# Words that say when, not what: "I started a few days ago" tells of no change worth keeping.
_WHEN_WORDS = frozenset(
    "ago day days week weeks month months year years few couple now then today yesterday lately "
    "recently while since again already just last this that the and but".split()
)


def disclosure(sentence: str) -> tuple[str, str, str] | None:
    """``(statement, memory type, kind)`` of a sentence that discloses, else ``None`` (a
    question, a story too long to be one statement, or a cue with nothing said beyond it)."""
    said = disclosed_beyond(sentence)
    if said is None or is_question(sentence) or len(sentence) > MAX_DISCLOSURE_CHARS:
        return None
    about, rest = said
    words = [w for w in re.findall(r"[a-z']{3,}", rest.casefold()) if w not in _WHEN_WORDS]
    if len(words) < 2:
        return None
    return to_third_person(sentence), DISCLOSURE_TYPES[about], about
