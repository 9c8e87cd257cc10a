"""Phrase helpers of the offline rules: what a clause pattern captured, cut down to a value.

"Paris, which I love" → "Paris"; "a charity race last Saturday - it was really rewarding…" →
"a charity race last Saturday"; "my new bike from the shop" → "bike". The patterns that
capture them are in :mod:`.patterns`.
"""

from __future__ import annotations

import re

from .entities import NATIONALITIES, NOT_PROPER, not_a_name
from .text import to_third_person

#: A capitalised word (a name's, a place's): "Lisbon", "O'Neill", "McDonald's", "A380".
CAP = r"(?:[A-Z][a-z]+'[A-Z][a-zA-Z]+|[A-Z][a-zA-Z0-9\-]*)"
_PROPER = rf"{CAP}(?:\s+(?:(?:of|de|del|della|da|di|la|le|du|des|von|van|der|upon)\s+)?{CAP})*(?:,\s*{CAP}(?:\s+{CAP})*)?"

_NOT_NAMES = NOT_PROPER | NATIONALITIES | {
    "not", "fine", "good", "here", "back", "happy", "sad", "tired", "busy", "ready", "done",
    "new", "glad", "excited", "sorry", "looking", "trying", "going", "interested", "single",
    "married", "retired", "vegan", "vegetarian", "allergic", "from", "in", "at", "a", "an",
    "the", "very", "so", "really", "still", "just", "also", "currently", "originally",
    "learning", "working", "planning", "based", "living", "moving", "on", "off", "out",
}

_SUB_CLAUSE = re.compile(
    r"\s+(?:because|since|although|though|when|whenever|which|who|if|unless|so that|but|as long as|while)\b.*$",
    re.I,
)
_TRAILING_FILLER = re.compile(
    r"(?:[\s,]+(?:too|as well|a lot|very much|so much|the most|really|though|lol|haha|please|"
    r"thanks|thank you|anyway|tbh|honestly|actually|to be honest|i guess|i think))+\s*$",
    re.I,
)
PRONOUN_OBJECT = re.compile(
    r"^(?:it|that|this|them|you|him|her|these|those|what|how|when|one|yourself|yourselves|myself|ourselves|sure)\b", re.I
)


# A phrase cut at its word limit may end on a word that ends nothing ("went to a pride
# parade … so much", "to stay true and"): it ends where a clause of it did, if one did, and
# never on these words. Uncut, it only never ends on a conjunction ("to read, especially").
_DANGLING = re.compile(
    r"(?:[\s,]+(?:a|an|the|and|or|but|so|to|of|in|on|at|for|with|from|by|about|as|into|than|that|which|"
    r"who|my|your|their|his|her|our|its|this|these|those|especially|very|really|just|even|more|most|"
    r"some|any|every|is|are|was|were|be|been|it's|i|we|you|they|he|she|much|such)[\s,]*)+$",
    re.I,
)
_OPEN_END = re.compile(r"(?:[\s,]+(?:and|or|but|so|especially)[\s,]*)+$", re.I)
# Where a clause of a cut phrase ends, the surest first: a dash, a new subject, a comma;
# a bare "and" only when nothing else does (it joins a list as often as clauses).
_CLAUSE_BREAKS = [
    re.compile(r"\s+-\s+"),
    re.compile(r"\s+(?:and|but|so)\s+(?=(?:it|it's|that|this|they|we|i|he|she|there|now)\b)", re.I),
    re.compile(r"\s+(?:so|but)\s+|,\s+", re.I),
    re.compile(r"\s+and\s+", re.I),
]
# What opens another clause, not an object ("I saw while hiking", "like I said", "being a
# mom is awesome" read from its end), or says only when.
_NOT_AN_OBJECT = re.compile(
    r"^(?:(?:while|when|whenever|after|before|since|until|if|because|though|although|unless)\b"
    r"|(?:i|we|they|he|she|is|are|was|were|makes|made)\b"
    r"|(?:(?:a|an|one|two|three|four|five|a few|a couple of|several|\d+)\s+(?:days?|weeks?|months?|years?)\s+ago"
    r"|the\s+other\s+day|last\s+(?:night|week|weekend|month|year)|yesterday|today|recently|lately)\W*$)",
    re.I,
)


_CLAUSE_END = re.compile(
    r"[.!?;:()\"]|,\s+(?:and\s+)?(?:but|so|because|that's\s+why|which\s+is\s+why|any|anything|anyone|"
    r"what|how|where|when|who|which|why|could|can|would|should|will|do|does|did|is|are|was|were|i|i'm|"
    r"i've|i'd|we|you|it|it's|that|this|there|please|thanks|thank|btw|by\s+the\s+way|though|right|"
    r"ok|okay|maybe|just|also|honestly|really)\b",
    re.IGNORECASE,
)


def object_phrase(text: str, max_words: int = 12) -> str | None:
    """The object phrase at the start of ``text``: up to a sub-clause, fillers trimmed, at
    most ``max_words`` words and never ending on a word that ends nothing ("… and")."""
    text = _SUB_CLAUSE.sub("", text.strip())
    # A value ends where its clause does: at a comma that opens another clause ("Japanese,
    # any idea for Saturday?" is a cuisine and a question).
    text = re.split(_CLAUSE_END, text)[0]
    text = _TRAILING_FILLER.sub("", text).strip(" ,-")
    words = text.split()
    if not words or PRONOUN_OBJECT.match(text) or _NOT_AN_OBJECT.match(text):
        return None
    if len(words) > max_words:
        phrase = " ".join(words[:max_words])
        for pattern in _CLAUSE_BREAKS:
            breaks = [m for m in pattern.finditer(phrase) if m.start() > 0]
            if breaks:
                phrase = phrase[: breaks[-1].start()]
                break
        phrase = _DANGLING.sub("", phrase)
    else:
        phrase = _OPEN_END.sub("", " ".join(words))
    return phrase.strip(" ,-") or None


# What a like or dislike is not a taste of the user's when it is all it names: another's
# thing ("I love your turtles!", "I love his tech": praise of what was shown, and unreadable
# in a profile), a bare "to" ("Yeah, I love to."), or how often ("a job I enjoy every day").
_NOT_A_TASTE = re.compile(
    r"^(?:(?:your|yours|his|their|theirs|its)\b|to\W*$|(?:every\s*(?:day|where|time)|so\s+much|a\s+lot)\W*$)",
    re.I,
)


def taste(text: str) -> str | None:
    """The object phrase of a like or dislike (:func:`object_phrase`), or ``None`` when it
    names nothing the user likes in general (see ``_NOT_A_TASTE``)."""
    obj = object_phrase(text)
    return None if obj is None or _NOT_A_TASTE.match(obj) else obj


def third_person_object(text: str) -> str:
    # "The user loves their dog" reads better than "… loves the user's dog".
    return to_third_person(text).replace("the user's", "their")


def with_article(noun: str) -> str:
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def counted(noun: str) -> str:
    """``noun`` as one of a kind: with its article, or bare when its last word reads as a
    plural ("a pottery class", "salsa classes", "new glasses")."""
    last = noun.split()[-1]
    plural = last.islower() and last.endswith("s") and not last.endswith("ss")
    return noun if plural else with_article(noun)


def instruction_text(text: str) -> str:
    return to_third_person(_TRAILING_FILLER.sub("", text.strip().rstrip("?!. ")))


def place_name(text: str) -> str | None:
    text = text.strip()
    lead = re.match(r"(?i:the\s+)?", text)
    rest = text[lead.end() if lead else 0 :]
    proper = re.match(_PROPER, rest)
    if proper:
        words = proper.group(0)
        kept = []
        for w in re.split(r"(\s+|,\s*)", words):
            if w.strip(", ").lower() in NOT_PROPER:
                break
            kept.append(w)
        value = "".join(kept).strip(" ,")
        if value:
            return value
    phrase = object_phrase(text, 8)
    if phrase and len(phrase.split()) == 1 and phrase.isalpha():
        return phrase.capitalize()  # "i live in paris": casual lowercase
    return phrase


def person_name(text: str) -> str | None:
    words = []
    for word in text.split():
        # "Thankfully, my son's ok", "Last Friday, my partner…": an adverb is no one's name.
        if word.lower() in _NOT_NAMES or word.lower().endswith("ing") or not_a_name(word):
            break
        words.append(word[0].upper() + word[1:])
    return " ".join(words) or None


def thing_phrase(text: str, *, pastime: bool = False) -> str | None:
    """The thing a phrase names: up to its first comma or the verb that follows it, without
    the times and fillers after it ("my new Pixel 8 tonight, finally" → "Pixel 8"; "my new
    flat has a balcony" → "flat")."""
    phrase = object_phrase(text.split(",")[0], 6)
    if not phrase:
        return None
    words = phrase.split()
    ends = (_PREDICATE, _PAST) if pastime else (_PREDICATE, _PAST, _PREPOSITION)
    end = next((i for i, w in enumerate(words) if i and any(p.match(w) for p in ends)), len(words))
    phrase = _TRAILING_TIME.sub("", " ".join(words[:end])).strip()
    return phrase or None


#: Words that end the name of a thing: a verb or what joins a clause to it ("my new phone
#: *is* amazing", "pottery *and* it's great").
_PREDICATE = re.compile(
    r"(?i)^(?:is|are|was|were|be|been|'s|has|have|had|does|do|did|will|would|can|could|should|shall|may|might|"
    r"must|arrived|arrives|broke|breaks|came|comes|got|gets|looks|feels|felt|seems|needs|costs?|makes|made|"
    r"takes|took|keeps|kept|goes|went|works|runs|ran|sounds|just|already|still|really|so|and|but|or|that|"
    r"which|who|because|it|it's)$"
)
#: Prepositions other than "in" also end the name of an object ("my new bike *from* the
#: shop"; "our new place in Lisbon" keeps its place), not of a pastime ("going to the gym").
_PREPOSITION = re.compile(r"(?i)^(?:from|for|to|by|with|on|off|at|into|onto|about|after|before|since|than|like)$")
#: A regular past tense ("arrived", "crashed"): a verb after the thing, not part of its name
#: ("speed", "breed" are).
_PAST = re.compile(r"(?i)^(?![a-z]*eed$)[a-z]{3,}ed$")


#: Times and fillers that end a phrase without being part of the thing it names.
_TRAILING_TIME = re.compile(
    r"(?:\s+(?:(?:last|this|next|that)\s+(?:week|weekend|month|year|spring|summer|autumn|fall|winter|morning|"
    r"afternoon|evening|night)|today|tonight|yesterday|finally|again|lately|recently|now|at\s+last|"
    r"these\s+days|already|too|as\s+well))+$",
    re.IGNORECASE,
)
