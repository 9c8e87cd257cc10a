"""The names a message calls its listener by: "Thanks, Mel!", "Hey Caroline!", "Go get 'em, Jon!".

A vocative says who is spoken to, not what is spoken of. Indexed as words, it makes every
pleasantry that names the listener a match for a question that names them ("When did Gina
lose her job?" meeting "That's the spirit, Gina! Bye!"). Where the speakers are named on
their messages recall leaves their names out of its query; where they are not, the index
leaves the vocatives out of what it reads (:mod:`..recall.dialogue`).
"""

from __future__ import annotations

import re

__all__ = ["unaddressed"]

#: A greeting, thanks or cheer, then the listener's name before a pause ("Hey Caroline!",
#: "Thanks, Mel,", "Congrats Nate!").
_GREETED = re.compile(
    r"(?P<word>\b(?i:hey|hi|hello|hiya|thanks|thank\s+you|thx|bye|goodbye|congrats|congratulations|wow|oh|"
    r"aw+|yay|yeah|yes|sorry|good\s+(?:morning|night|luck)|see\s+(?:you|ya)|take\s+care|great|cool|nice|"
    r"awesome|haha|welcome))[\s,]+[A-Z][a-z]+\b(?=\s*[!,.?])"
)
#: The listener's name closing a sentence after a comma ("That's the spirit, Jon!").
_CLOSING = re.compile(r",\s*[A-Z][a-z]+(?=\s*[!?.])")


def unaddressed(text: str) -> str:
    """``text`` without the names it calls its listener by; the rest as it was."""
    return _CLOSING.sub("", _GREETED.sub(r"\g<word>", text))
