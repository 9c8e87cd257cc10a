"""A speaker written into a message's text: ``Caroline: I painted a lake sunrise``.

Many apps feed a chat of several people without the message's ``name`` field, writing who
spoke in front of what they said. Read that way, such a message is said by its named
speaker, exactly as one fed with ``name="Caroline"``: its unit is Caroline's turn, its
indexed line ``Caroline (date): I painted…``, and a query written ``Caroline: …`` is a
message Caroline says (she is its speaker, not what it asks about). The stored message is
left as it came; only how it is read changes.

A label is not a speaker: ``Note: …``, ``Update: …``, ``Q: …``, ``Step 2: …``, ``TL;DR: …``
the role words (``User:``, ``Assistant:``) and a reply's opening word (``Done: …``,
``Sure: …``, ``Noted: …``) are left in the text.
"""

from __future__ import annotations

import re

__all__ = ["written_speaker"]

#: One to three capitalised words (a first name, or first and last), then a colon and text.
_WRITTEN = re.compile(
    r"\A\s*(?P<name>[A-Z][a-z][\w'’.-]*(?:\s+(?:[A-Z][\w'’.-]*|de|da|van|von|del|la|le)){0,2})\s*:[ \t]+(?P<text>\S.*)\Z",
    re.DOTALL,
)
#: Words that begin a label, not a name (matched case-folded, the first word of the label).
_LABELS = frozenset(
    """note notes nb update updates summary question questions answer answers re fwd edit edited warning
    error errors tip tips step steps example examples title subject date time todo reminder status result
    results output input goal goals task tasks problem solution hint caution context background source
    sources topic agenda option options pros cons yes no ok okay also well so but and or then hi hello hey
    dear thanks thank update important breaking day week month today tomorrow yesterday morning evening
    night user users assistant assistants human ai bot system tool model me you we they he she it my your
    our his her their this that these those here there what why how when where who which action actions
    reason reasons fact facts idea ideas plan plans quote quotes link links ps pss tldr part chapter section
    item items list lists step total price cost costs location address phone email name names age role
    level score rating review reviews comment comments feedback response reply request description details
    detail info information instructions instruction rule rules definition meaning translation correction
    fix bug feature version draft final first second third last next previous other more less pro con
    warning caveat disclaimer spoiler trigger content monday tuesday wednesday thursday friday saturday
    sunday done sure great perfect sorry noted correct right true false absolutely certainly exactly indeed
    nice cool wow oh ah um please welcome congrats congratulations good bad fine agreed confirmed booked
    saved added removed updated changed fixed finished ready correction recap reminder verdict""".split()
)


def written_speaker(text: str) -> tuple[str, str] | None:
    """``(name, the rest)`` of a text that begins with a speaker's name and a colon
    ("Caroline: I went…" → ``("Caroline", "I went…")``), else ``None`` (a label such as
    "Note:", a role word, no colon)."""
    if not isinstance(text, str) or ":" not in text[:64]:
        return None
    m = _WRITTEN.match(text)
    if m is None:
        return None
    name = " ".join(m.group("name").split())
    if name.split()[0].casefold().strip(".'’") in _LABELS:
        return None
    return name, m.group("text").strip()
