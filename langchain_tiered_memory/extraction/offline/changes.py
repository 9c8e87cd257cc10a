"""What the user took up, switched to or has new: the offline rules' statements of how
things stand now (``changes``, called for each clause by :mod:`.rules`)."""

from __future__ import annotations

from collections.abc import Callable

from .patterns import (
    LEARNING_GROUPS,
    NOT_PASTIMES,
    NOT_POSSESSIONS,
    NOT_TAKEN_UP,
    PEOPLE,
    R_JOINED,
    R_MY_NEW,
    R_REPLACES,
    R_SWITCHED,
    R_TOOK_UP,
)
from .phrases import counted, third_person_object, thing_phrase, with_article

__all__ = ["changes"]


def changes(clause: str, mem: Callable[..., None]) -> None:
    """What the user took up or has that is new: statements of how things stand now,
    often said in words far from the questions that ask for them ("signed up for a
    whittling club" against "how do I spend my free time?"), so the memory names the
    kind of thing ("hobby", "phone"). No profile attribute: an attribute has no date, so
    the hobby given up would read as current once the next one is said in words no rule
    knows ("I've dropped everything else for fly fishing")."""
    m = R_JOINED.search(clause)
    if m:
        what = " ".join(m.group("what").split())
        group = m.group("group").lower()
        if what.casefold() not in NOT_PASTIMES:
            joined = counted(f"{what} {group}")
            if group in LEARNING_GROUPS:
                mem(f"The user is learning {what}: they signed up for {joined}", "fact", "pastime")
            else:
                mem(f"The user's hobby is {what}: they joined {joined}", "fact", "pastime")
    m = R_TOOK_UP.search(clause)
    if m and (obj := thing_phrase(m.group("obj"), pastime=True)) and not NOT_TAKEN_UP.match(obj):
        mem(f"The user's hobby is {third_person_object(obj)}: they took it up", "fact", "pastime")
    m = R_SWITCHED.search(clause)
    if m and (new := thing_phrase(m.group("new"))):
        # "switched from X to Y": what named X is past (the memories that name it close).
        was = thing_phrase(m.group("old")) if m.group("old") else None
        old = f" from {third_person_object(m.group('old').strip())}" if m.group("old") else ""
        mem(f"The user switched{old} to {third_person_object(new)}", "preference", "preference", None, was)
        return
    m = R_REPLACES.search(clause)
    if m and (new := thing_phrase(m.group("new"))):
        old = " ".join(m.group("old").split())
        mem(f"The user's new {old} is {with_article(new)}, replacing their old one", "fact", "possession")
        return
    m = R_MY_NEW.search(clause)
    if m and (obj := thing_phrase(m.group("obj"))) and obj.split()[0].casefold() not in NOT_POSSESSIONS | PEOPLE:
        mem(f"The user has {counted('new ' + third_person_object(obj))}", "fact", "possession")
