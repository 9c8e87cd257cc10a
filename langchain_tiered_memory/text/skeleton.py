"""Unicode's confusable skeleton (UTS #39, section 4): what a text looks like, letter for letter.

Two strings that look alike — ``memory`` and ``mеmory`` with a Cyrillic ``е``, ``‹`` and
``<`` — have the same skeleton. :mod:`.fence` looks for its markers in the skeleton of the
text, so a look-alike cannot close or fake a fence.

The data is Unicode's ``confusables.txt`` as the ``confusable-homoglyphs`` package ships
it: each line pairs a character with the prototype it looks like. That package gives the
pairs both ways round and no skeleton function, so the skeleton is computed here: the pairs
form stars (a prototype and the characters that look like it; a prototype never maps on),
and every character of a star maps to its prototype — the one string of several characters
(``m`` → ``rn``), else the one paired with every other, else (a pair) the lower code point.
Which member stands for a two-member class does not matter: equal skeletons are what count.

Case is folded (``MEMORY`` and ``memory`` are one marker to a model) — after a capital
that looks like another capital is read as it — and the result is mapped and folded again
until it holds still. Everything is per character,
so :class:`Skeleton` can say which characters of the text a part of the skeleton came from.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import importlib.util
import json
import unicodedata
from collections import defaultdict
from pathlib import Path
from typing import Any

__all__ = ["Skeleton", "build_final", "build_table", "data_digest", "look_alikes", "skeleton"]

#: Folding and mapping settle in two rounds; a third is a safety margin.
_ROUNDS = 3


#: The tables below, computed from the data once and shipped (``scripts/build_skeleton.py``):
#: building them takes ~0.3 s, which a process's first fenced context would otherwise pay.
_SHIPPED = Path(__file__).resolve().parent.parent / "data" / "skeleton.json"


def data_digest() -> str:
    """A digest of the installed ``confusables.json``: the shipped tables are used only when
    they were built from these very bytes."""
    spec = importlib.util.find_spec("confusable_homoglyphs")
    origin = Path(spec.origin) if spec is not None and spec.origin else None
    if origin is None:
        return ""
    try:
        return hashlib.blake2b((origin.parent / "confusables.json").read_bytes(), digest_size=16).hexdigest()
    except OSError:
        return ""


@functools.cache
def _shipped() -> dict[str, Any] | None:
    try:
        data = json.loads(_SHIPPED.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("digest") == data_digest() else None


@functools.cache
def _table() -> dict[int, str]:
    """``str.translate`` table: each character that is not its own prototype -> prototype."""
    shipped = _shipped()
    if shipped is not None:
        return {int(k): v for k, v in shipped["table"].items()}
    return build_table()


def build_table() -> dict[int, str]:
    """:func:`_table` computed from the data (what ``data/skeleton.json`` ships)."""
    # Imported on first use: loading the data (9,600 entries) takes about 0.1 s.
    from confusable_homoglyphs.confusables import confusables_data  # type: ignore[import-untyped]

    def clean(text: str) -> str:
        # The data shows right-to-left letters between LEFT-TO-RIGHT MARKs (format characters,
        # which the fence drops before it looks): the letter alone is the character.
        if text.isascii() or (len(text) == 1 and unicodedata.category(text) != "Cf"):
            return text
        return "".join(ch for ch in text if unicodedata.category(ch) != "Cf")

    linked: defaultdict[str, set[str]] = defaultdict(set)
    for source, pairs in confusables_data.items():
        for pair in pairs:
            a, b = clean(source), clean(pair["c"])
            if a and b and a != b:
                linked[a].add(b)
                linked[b].add(a)
    table: dict[int, str] = {}
    done: set[str] = set()
    for start in linked:
        if start in done:
            continue
        star, todo = {start}, [start]
        while todo:
            for other in linked[todo.pop()] - star:
                star.add(other)
                todo.append(other)
        done |= star
        prototype = _prototype(star, linked)
        table.update({ord(ch): prototype for ch in star if len(ch) == 1 and ch != prototype})
    return table


def _prototype(star: set[str], linked: dict[str, set[str]]) -> str:
    several = [s for s in star if len(s) > 1]
    if several:
        return several[0]  # sources are single characters: a longer string is the prototype
    centre = [s for s in star if linked[s] >= star - {s}]
    return centre[0] if len(centre) == 1 else min(star)


@functools.cache
def _final() -> dict[str, str]:
    """Each (case-folded) character that maps -> its skeleton, folded and mapped until it
    holds still, so that one pass over a text is enough."""
    shipped = _shipped()
    if shipped is not None:
        return dict(shipped["final"])
    return build_final(_table())


def build_final(table: dict[int, str]) -> dict[str, str]:
    """:func:`_final` computed from ``table``."""
    out: dict[str, str] = {}
    for code in table:
        text = chr(code)
        for _ in range(_ROUNDS):
            mapped = text.casefold().translate(table)
            if mapped == text:
                break
            text = mapped
        out[chr(code)] = text
    return out


@functools.cache
def _ascii() -> dict[int, str]:
    return {ord(c): v for c, v in _final().items() if c.isascii()}


@functools.cache
def _capitals() -> dict[str, str]:
    """Capitals whose prototype is a capital (Greek ``Μ`` and Cyrillic ``М``: ``M``).

    They are read as that capital before case is folded: folded first, ``Μ`` would be
    ``μ``, which looks like no ``m``. (A capital whose prototype is small, such as ``I``
    for ``l``, is folded first: ``I`` is ``i`` to a reader that ignores case.)
    """
    return {chr(k): v for k, v in _table().items() if chr(k) != chr(k).casefold() and v.isupper()}


def skeleton(text: str) -> str:
    """The skeleton of ``text`` (case-folded): equal for texts that look alike."""
    if text.isascii():
        return text.casefold().translate(_ascii())
    # Tables of the text's own characters: str.translate is three times slower when most
    # characters are missing from its table.
    capitals = _capitals()
    folded = text.translate({ord(c): capitals.get(c, c) for c in set(text)}).casefold()
    final = _final()
    return folded.translate({ord(c): final.get(c, c) for c in set(folded)})


@functools.lru_cache(maxsize=65_536)
def _of_char(ch: str) -> str:
    return skeleton(ch)


@functools.cache
def _by_skeleton() -> dict[str, frozenset[str]]:
    found: defaultdict[str, set[str]] = defaultdict(set)
    for ch, shape in _final().items():
        found[shape].add(ch)
    return {shape: frozenset(chars) for shape, chars in found.items()}


@functools.cache
def look_alikes(ch: str) -> frozenset[str]:
    """Every single character whose skeleton is that of ``ch`` (``ch`` included)."""
    target = skeleton(ch)
    cases = {c for c in (ch, ch.upper(), ch.lower()) if len(c) == 1 and skeleton(c) == target}
    if len(target) == 1:
        cases.add(target)  # the prototype itself
    return _by_skeleton().get(target, frozenset()) | cases


class Skeleton:
    """The skeleton of a text, with the way back from its positions to the text's."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.value = skeleton(text)
        self._starts: list[int] | None = None

    def _positions(self) -> list[int]:
        # Built only when something was found: a character at a time in Python.
        if self._starts is None:
            starts, at = [], 0
            for ch in self.text:
                starts.append(at)
                at += len(_of_char(ch))
            self._starts = starts
        return self._starts

    def source(self, start: int, end: int) -> tuple[int, int]:
        """The span of the text whose skeleton covers ``value[start:end]``."""
        starts = self._positions()
        if end <= start:
            at = bisect.bisect_left(starts, start)
            return at, at
        # From the character whose skeleton holds ``start`` to the last one starting before ``end``.
        return bisect.bisect_right(starts, start) - 1, bisect.bisect_left(starts, end)
