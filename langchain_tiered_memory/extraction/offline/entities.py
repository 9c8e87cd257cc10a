"""Proper nouns: the entities the offline rules find without a rule for them.

Proper nouns are runs of capitalised words (``New York``, ``Bank of America``), minus
pronouns, greetings, days and months; a model number after a name belongs to it
(``Pixel 8``, ``Tesla Model 3``), a count does not ("Anna 2 weeks ago"). Their type comes
from their context: "in X" → place, "work at X" → organization, "Inc"/"University" →
organization, CamelCase or digits → product, nationalities and languages → topic, else
other.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["NATIONALITIES", "NOT_PROPER", "Span", "proper_spans", "span_type"]

_DAYS_MONTHS = {
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
    "january", "february", "march", "april", "may", "june", "july", "august",
    "september", "october", "november", "december",
}
NOT_PROPER = {
    "i", "i'm", "i've", "i'd", "i'll", "ok", "okay", "yes", "no", "hi", "hello", "hey",
    "thanks", "thank", "please", "sorry", "dear", "oh", "wow", "lol", "btw", "fyi", "also",
    "the", "a", "an", "my", "your", "our", "we", "you", "he", "she", "they", "it", "this",
    "that", "what", "why", "how", "when", "where", "who", "which", "and", "but", "or", "so",
    "if", "then", "now", "today", "tomorrow", "yesterday", "tonight", "mom", "dad", "ai",
    "always", "never", "remember", "just", "well", "sure", "great", "good", "cool", "nice",
    "user", "assistant", "bot", "chatgpt", "am", "pm", "tv", "asap",
    # Interjections open a sentence capitalised and run into the name after them ("Woohoo
    # Melanie!", "Yeah Mel"): on LoCoMo's chats they made entities of greetings.
    "yeah", "yep", "yup", "yay", "woohoo", "woo", "hooray", "haha", "hah", "omg", "aw", "aww",
    "awesome", "congrats", "congratulations", "hmm", "ah", "whoa", "wohoo", "gosh", "ugh", "hiya",
} | _DAYS_MONTHS | {"mon", "tue", "tues", "wed", "thu", "thur", "thurs", "fri"}
_TITLES = {"mr", "mrs", "ms", "dr", "prof", "sir", "madam", "aunt", "uncle", "saint", "st"}
NATIONALITIES = {
    "english", "french", "german", "spanish", "italian", "portuguese", "dutch", "russian",
    "chinese", "japanese", "korean", "arabic", "hindi", "greek", "turkish", "polish",
    "swedish", "norwegian", "danish", "finnish", "irish", "scottish", "welsh", "british",
    "american", "canadian", "mexican", "brazilian", "argentinian", "australian", "indian",
    "african", "european", "asian", "latin", "hebrew", "thai", "vietnamese", "ukrainian",
    "czech", "hungarian", "romanian", "swiss", "austrian", "belgian", "mandarin",
    "cantonese", "catalan", "persian", "urdu", "bengali", "swahili", "indonesian", "filipino",
    "christian", "muslim", "jewish", "buddhist", "hindu", "python", "javascript", "java",
}
_ORG_SUFFIXES = {
    "inc", "ltd", "llc", "corp", "corporation", "company", "co", "university", "college",
    "bank", "group", "labs", "lab", "institute", "foundation", "hospital", "school",
    "airlines", "airways", "agency", "association", "club", "gmbh", "plc", "ag", "sa",
    "studios", "technologies", "systems", "partners", "ministry", "department",
}
_PLACE_BEFORE = {"in", "from", "near", "around", "visit", "visited", "visiting", "across", "outside"}
_TRAVEL = re.compile(
    r"\b(?:fly|flying|flew|flight|travel\w*|trip|go|going|went|move|moving|moved|drive|"
    r"driving|drove|head\w*|vacation|holiday|left|leave|leaving)\b",
    re.I,
)
_CONNECTORS = {
    "of", "de", "del", "della", "da", "di", "la", "le", "du", "des", "von", "van", "der", "den",
    "upon", "&",
}
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9'\-&.]*")
#: A model number: "8", "12", "5G", "3s" (no year: four digits are a date, not a model).
_MODEL_NUMBER = re.compile(r"^\d{1,3}[A-Za-z]{0,2}$")
#: A plural noun, roughly (and "is", "was", "has", "does", "class" are not).
_PLURAL = re.compile(r"^(?!(?:is|was|has|does)$)[a-z]+[^s]s$")
#: Words that make the number before them a count or a time ("Anna 2 weeks ago").
_COUNTED = {
    "second", "seconds", "minute", "minutes", "min", "mins", "hour", "hours", "hrs", "day", "days",
    "week", "weeks", "month", "months", "year", "years", "yrs", "time", "times", "am", "pm",
    "o'clock", "am.", "pm.", "people", "kids", "children", "km", "kg", "miles", "euros", "dollars",
    "pounds", "percent", "of", "more", "less", "each", "things", "hundred",
    "thousand", "million",
}


@dataclass
class Span:
    text: str
    start: int  # token index in the sentence
    initial: bool  # starts the sentence (its capital may be grammar, not a name)
    prev: str  # the lowercased word before it
    words: int
    listed: bool = False  # follows another span in a list ("Rome, Paris and Berlin")


_LOWER_CAMEL = re.compile(r"^[a-z]{1,2}[A-Z][A-Za-z0-9]+$")  # iPhone, eBay


def _is_cap(word: str) -> bool:
    if _LOWER_CAMEL.match(word):
        return True
    return bool(word) and word[0].isupper() and word.lower() not in NOT_PROPER


def _strip_possessive(word: str) -> str:
    word = word.rstrip(".")
    return word[:-2] if word.endswith("'s") else word


# Words that open a sentence by grammar (a question, a pronoun, a greeting): never the first
# word of a name, though capitalised there.
_OPENERS = frozenset(
    "is are was were do does did can could should would will shall may might must have has had what "
    "where when why how who which whose my our your his her their i we you they he she it there here so "
    "and but or if then also just please let maybe perhaps hey hi hello thanks yes no ok okay well oh "
    "any anyone anything some every".split()
)


def proper_spans(sentence: str) -> list[Span]:
    """Runs of capitalised words in ``sentence`` (``New York``, ``Bank of America``)."""
    found = list(_TOKEN.finditer(sentence))
    tokens = [_strip_possessive(t.group(0)) for t in found]
    # What lies between two tokens: a name never runs across punctuation ("Rome, Paris"),
    # and a word after a colon or a quote may be capitalised by grammar.
    gaps = [sentence[found[k - 1].end() : t.start()] if k else "" for k, t in enumerate(found)]
    joined = [
        bool(k)
        and not gap.strip()
        and (not found[k - 1].group(0).endswith(".") or tokens[k - 1].lower() in _TITLES)
        for k, gap in enumerate(gaps)
    ]
    letters = [c for c in sentence if c.isalpha()]
    if letters and sum(c.isupper() for c in letters) > 0.6 * len(letters):
        return []  # shouting or a heading: capitals say nothing here
    spans: list[Span] = []
    i = 0
    while i < len(tokens):
        if not _is_cap(tokens[i]):
            i += 1
            continue
        if (i == 0 or any(c in gaps[i] for c in ':;"([')) and tokens[i].lower() in _OPENERS:
            i += 1  # "Is Sintra worth it?": the capital of "Is" is grammar; "Sintra" a name
            continue
        j = i + 1
        while j < len(tokens) and joined[j]:
            if _is_cap(tokens[j]) or _model_number(tokens, gaps, joined, j):
                j += 1
            elif (
                tokens[j].lower() in _CONNECTORS
                and j + 1 < len(tokens)
                and joined[j + 1]
                and _is_cap(tokens[j + 1])
            ):
                j += 2
            else:
                break
        words = tokens[i:j]
        spans.append(
            Span(
                text=" ".join(words),
                start=i,
                initial=i == 0 or any(c in gaps[i] for c in ':;"(['),
                listed=bool(spans)
                and spans[-1].start + spans[-1].words == i - (tokens[i - 1].lower() in ("and", "or", "&"))
                and ("," in gaps[i] or tokens[i - 1].lower() in ("and", "or", "&")),
                prev=tokens[i - 1].lower() if i else "",
                words=len(words),
            )
        )
        i = j
    return spans


def _model_number(tokens: list[str], gaps: list[str], joined: list[bool], j: int) -> bool:
    """Whether ``tokens[j]``, right after a capitalised word, is that name's model number
    ("Pixel 8 froze"), not a count ("Anna 2 weeks ago"), a time ("Paris 10:30") or a range."""
    if not _MODEL_NUMBER.match(tokens[j]):
        return False
    if j + 1 < len(tokens):
        after = gaps[j + 1]
        if after[:1] in (":", "/", "-", "–", ".", ",") and after.strip() == after[:1] and tokens[j + 1][:1].isdigit():
            return False  # 10:30, 3/4, 10-12, 2.5, 1,000
        word = tokens[j + 1]
        if joined[j + 1] and (
            word.lower() in _COUNTED
            # "3 floors": a count (a verb like "needs" loses the number too)
            or (word.islower() and _PLURAL.match(word) and tokens[j] != "1")
        ):
            return False
    return True


def span_type(span: Span, sentence: str) -> str:
    words = span.text.split()
    last = words[-1].lower().rstrip(".")
    if len(words) == 1 and last in NATIONALITIES:
        return "topic"
    if last in _ORG_SUFFIXES or (len(words) > 2 and words[0].lower() in _ORG_SUFFIXES):
        return "organization"  # "Acme Corp", "Bank of America"
    if words[0].lower() in _TITLES and len(words) > 1:
        return "person"
    if any(re.search(r"[a-z][A-Z]|\d", w) for w in words):
        return "product"
    if span.prev in _PLACE_BEFORE:
        return "place"
    head = sentence.lower()
    if span.prev in ("to", "for") and _TRAVEL.search(head):
        return "place"
    if span.prev in ("at", "for") and re.search(r"\b(?:work|job|employed|intern\w*)\b", head):
        return "organization"
    return "other"


