"""Who the user is when the turn does not say it: the name their messages carry.

A chat of two people through one app, or an imported one, names each message's speaker
(LangChain's ``name``, or "Caroline: …" written in front of the text). The LLM extractor's
prompt shows it ("user [Caroline]: …"), so a model names the user's profile by it; the rules
do the same, so that both extractors file the user's facts under one profile, never under
:data:`~langchain_tiered_memory.vocabulary.USER_ENTITY` beside it.

Only a name that reads as a person's counts: one to three capitalised words of letters
("Caroline", "Mary Ann", "José"), and never a role or a handle ("user", "human",
"alice_w", "u42", "jdoe"). Two speakers among the user's messages of one turn name no one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from langchain_core.messages import BaseMessage

from ..messages import speaker, spoken
from .entities import NOT_PROPER, not_a_name

__all__ = ["speaker_name"]

#: A word of a person's name: a capital, then letters ("O'Neil", "Jean-Luc"), or an initial.
_NAME_WORD = re.compile(r"^(?:[^\W\d_][^\W\d_'\-]*[^\W\d_]|[^\W\d_]\.?)$")
#: Roles a message's ``name`` may hold that are nobody's name.
_ROLES = frozenset("user human assistant ai bot system tool me you guest anonymous customer client".split())


def speaker_name(messages: Sequence[BaseMessage]) -> str | None:
    """The one person's name the user's messages of the turn carry, else ``None``."""
    names = {name for name, _ in (spoken(m) for m in messages if speaker(m) == "user") if name}
    if len(names) != 1:
        return None
    (name,) = names
    words = name.split()
    if not 1 <= len(words) <= 3 or not all(_NAME_WORD.match(w) and w[0].isupper() for w in words):
        return None
    if any(w.casefold() in _ROLES or w.casefold() in NOT_PROPER for w in words) or not_a_name(words[0]):
        return None
    return " ".join(words)
