"""Sentences and pronouns: the English the offline rules and summaries are built on.

:func:`split_sentences` cuts text into sentences (lines and list items count as sentences,
abbreviations do not end one); :func:`to_third_person` rewrites the user's first-person words
for a memory ("I moved to Paris" → "the user moved to Paris").
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["MAX_OFFLINE_CHARS", "as_statement", "split_sentences", "third_person_verb", "to_third_person"]

#: Characters of each message the rules and the extractive summaries read: its beginning.
#: They are linear but not cheap (~4 µs a character): a 10 MB message took 39 s in its
#: turn's job (inside after_turn, inline). An LLM does not read all of it either: the
#: extraction prompt cuts long messages too.
MAX_OFFLINE_CHARS = 20_000

_PUNCT = str.maketrans(
    {
        "\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"',
        "\u00a0": " ", "\u2014": " - ", "\u2013": " - ",
    }
)
_ABBREVIATIONS = {
    "mr", "mrs", "ms", "dr", "prof", "st", "sr", "jr", "vs", "etc", "e.g", "i.e", "inc",
    "ltd", "co", "corp", "no", "approx", "dept", "mt", "ft", "jan", "feb", "mar", "apr",
    "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "u.s", "u.k", "a.m", "p.m",
}
_BOUNDARY = re.compile(r"[.!?…]+[\"')\]]*\s+")
_BULLET = re.compile(r"^\s*(?:[-*•>]+|\d+[.)])\s+")


def _normalise_text(text: str) -> str:
    return text.translate(_PUNCT)


def split_sentences(text: str) -> list[str]:
    """``text`` cut into sentences (lines and list items count as sentences too)."""
    sentences: list[str] = []
    for line in _normalise_text(text).splitlines():
        line = _BULLET.sub("", line).strip()
        if not line:
            continue
        start = 0
        for match in _BOUNDARY.finditer(line):
            before = line[start : match.start()].rsplit(None, 1)
            word = before[-1].lower().rstrip(".") if before else ""
            after = line[match.end() : match.end() + 1]
            if word in _ABBREVIATIONS or re.fullmatch(r"(?:[a-z]\.)*[a-z]", word) or (after and after.islower()):
                continue
            piece = line[start : match.end()].strip()
            if piece:
                sentences.append(piece)
            start = match.end()
        rest = line[start:].strip()
        if rest:
            sentences.append(rest)
    return sentences



_MODALS = {
    "will", "would", "can", "could", "should", "must", "might", "may", "shall", "did",
    "had", "was", "used", "can't", "won't", "didn't", "wasn't", "wouldn't", "couldn't",
    "shouldn't", "mustn't", "cannot",
}
_ADVERBS = {
    "really", "also", "always", "never", "just", "still", "usually", "often", "sometimes",
    "only", "even", "already", "actually", "definitely", "probably", "mostly", "rarely",
    "generally", "normally", "absolutely", "truly", "totally", "honestly", "kind", "kinda",
}
_IRREGULAR = {"am": "is", "have": "has", "do": "does", "go": "goes", "don't": "doesn't",
              "haven't": "hasn't", "'m": "is", "'ve": "has", "'d": "would", "'ll": "will"}
# Past forms without "-ed" stay as they are ("I never knew" → "the user never knew", not
# "knews"); forms that are present as well ("read", "put", "cut") are read as present.
_IRREGULAR_PAST = frozenset("""
    ate began bent bought brought built came caught chose dealt drank drew drove dug fell felt
    fled flew forgave forgot fought found gave got grew heard held hid hung kept knew laid led
    left lent lost made meant met paid ran rang rode sang sat saw said sent shook slept sold
    spent spoke stood stole stuck swam swung taught thought threw told took understood went
    woke won wore wrote
""".split())


def third_person_verb(verb: str) -> str:
    """``verb`` conjugated for "the user" ("need" → "needs", "try" → "tries")."""
    low = verb.lower()
    if low in _IRREGULAR:
        return _IRREGULAR[low]
    past = low.endswith("ed") and not low.endswith("eed")  # "need", "feed" are present tense
    if low in _MODALS or low in _IRREGULAR_PAST or not low.isalpha() or past or verb[0].isupper():
        return verb
    if low.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if len(low) > 1 and low.endswith("y") and low[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def _conjugate_after_i(match: re.Match[str]) -> str:
    words = match.group(1).split()
    out: list[str] = []
    for k, word in enumerate(words):
        if word.lower() in _ADVERBS and k < len(words) - 1:
            out.append(word)
            continue
        out.append(third_person_verb(word))
        out.extend(words[k + 1 :])
        break
    return "the user " + " ".join(out)


_PRONOUN_RULES: list[tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]]] = [
    (re.compile(r"\b(?:I'm|I am|im)\b", re.I), "the user is"),
    (re.compile(r"\bI've\b", re.I), "the user has"),
    (re.compile(r"\bI'll\b", re.I), "the user will"),
    (re.compile(r"\bI'd\b", re.I), "the user would"),
    (re.compile(r"\bI((?:\s+(?:" + "|".join(sorted(_ADVERBS)) + r"))*\s+[A-Za-z']+)", re.I), _conjugate_after_i),
    (re.compile(r"\bI\b"), "the user"),
    (re.compile(r"\bmyself\b", re.I), "themselves"),
    (re.compile(r"\bmine\b", re.I), "theirs"),
    (re.compile(r"\bme\b", re.I), "the user"),
]
_MY = re.compile(r"\bmy\b", re.I)


def to_third_person(text: str) -> str:
    """First-person words of the user rewritten to "the user" ("my flight" → "the user's flight").

    The first "my" becomes "the user's" and later ones "their", which reads better than
    repeating "the user's".
    """
    for pattern, repl in _PRONOUN_RULES:
        text = pattern.sub(repl, text)
    first = True

    def my(match: re.Match[str]) -> str:
        nonlocal first
        named = "the user" in match.string[: match.start()].lower()
        word = "the user's" if first and not named else "their"
        first = False
        return word

    return _MY.sub(my, text)


def as_statement(text: str) -> str:
    text = " ".join(text.split()).strip(" ,;:-")
    if not text:
        return ""
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?" else text + "."


