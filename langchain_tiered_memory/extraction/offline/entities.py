"""Proper nouns: the entities the offline rules find without a rule for them.

Proper nouns are runs of capitalised words (``New York``, ``Bank of America``, ``Lord of
the Rings``, ``J.K. Rowling``), a quoted title whole ("The Name of the Wind"), minus
pronouns, greetings, days and months; a word of grammar opening a run is dropped ("Bye
Joanna" → Joanna, "Definitely Star Wars", "Learning German") and is no name by itself
("See you soon", "Thankfully"). A model number after a name belongs to it (``Pixel 8``,
``Tesla Model 3``), a count does not ("Anna 2 weeks ago"). Their type comes from their
context: "in/from/near/visit X", "get to X", "the train to X", "trip to X" → place, as is the
"to" end of "from <place> to X"; "work at X" → organization, "Inc"/"University" →
organization, CamelCase or digits → product, nationalities and languages → topic, else
other. Names listed together share their type (:mod:`.rules` types a list by a word, "Tokyo
and Kyoto, maybe Osaka", as a place when one of them is one anywhere in the turn, or was
typed a place in an earlier turn: the types the memory already holds, ``known_types``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = ["NATIONALITIES", "NOT_A_NAME", "NOT_PROPER", "Span", "not_a_name", "name_kinds", "proper_spans", "sentence_types", "span_type"]

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
    # Pronouns in every case: a capital opening a sentence ("Her sister…", "Us too!") or a
    # title's ("The Last of Us") never makes one of them a name.
    "me", "us", "him", "her", "them", "his", "its", "their", "mine", "yours", "ours", "hers",
    "theirs", "myself", "yourself", "himself", "herself", "itself", "ourselves", "yourselves",
    "themselves", "users", "assistants",
    # Interjections open a sentence capitalised and run into the name after them ("Woohoo
    # Melanie!", "Yeah Mel"): on LoCoMo's chats they made entities of greetings.
    "yeah", "yep", "yup", "yay", "woohoo", "woo", "hooray", "haha", "hah", "omg", "aw", "aww",
    "awesome", "congrats", "congratulations", "hmm", "ah", "whoa", "wohoo", "gosh", "ugh", "hiya",
} | _DAYS_MONTHS | {"mon", "tue", "tues", "wed", "thu", "thur", "thurs", "fri"}
#: Words a sentence opens with, capitalised by grammar, and no name: interjections and
#: farewells ("Bye Joanna!", "Yo Tim"), prepositions and conjunctions ("During Thanksgiving",
#: "Besides Italy"), a few verbs of talk ("See you soon", "Bet it's great", "Hang in there").
#: Opening a run of capitals they are dropped from it ("Bye Joanna" → "Joanna"); alone they
#: are never an entity, wherever they stand ("Sounds great, See you soon").
NOT_A_NAME = frozenset("""
    bye goodbye byebye cya woah yo alright anytime glad welcome cheers indeed exactly totally
    wait look listen see bet hang bring let go come keep take try check imagine guess here
    there even last next every besides during after before since until till with without about for
    at on in from to by like as once while though although because unless whether not only anyway
    anyways still yet otherwise meanwhile nope nah sure really sadly simply truly surely mostly
    nearly clearly hardly early likely speaking talking hoping sounds sounded love loved
    glad happy nice lovely cute beautiful amazing stunning funny interesting exciting
    congrats good great cool wonderful fantastic terrible awful same both either neither
    some many much more most such lots plus another other also
""".split())
#: Sentence adverbs by their ending ("Thankfully", "Definitely", "Honestly"): no name ends
#: so ("Italy", "Emily", "Kelly" do not match).
_ADVERB = re.compile(r"^[a-z]{2,}(?:ally|fully|tely|ently|antly|ously|ively|ably|ibly|ingly|edly|stly|ckily|ppily|asily)$")
#: A verb's -ing form opening a sentence ("Learning German", "Exploring Japan", "Lovin' it").
_GERUND = re.compile(r"^[A-Z][a-z]{2,}(?:ing|in')$")


def not_a_name(word: str) -> bool:
    """Whether ``word``, capitalised, is grammar and never a name by itself: see
    :data:`NOT_A_NAME`; an adverb in -ly; a shouted verb ("DOING")."""
    low = word.lower().rstrip(".'")
    return (
        low in NOT_A_NAME
        or low in NOT_PROPER
        or bool(_ADVERB.match(low))
        or (word.isupper() and len(word) > 4 and low.endswith("ing"))
    )


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
#: Words of a way or a ride, before "to" and a name: "get to Uji", "the train to Nara".
_MOTION_TO = frozenset(
    "get gets getting got route road roads ride rides train trains bus buses line flight flights "
    "drive drives walk walks commute ferry boat trip trips ticket tickets return returned returning".split()
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
    prev2: str = ""  # the lowercased word before ``prev`` ("get" in "get to Uji")
    conjoined: bool = False  # listed by a word, not a comma alone ("and", "or", ", maybe")


_LOWER_CAMEL = re.compile(r"^[a-z]{1,2}[A-Z][A-Za-z0-9]+$")  # iPhone, eBay


def _is_cap(word: str) -> bool:
    if _LOWER_CAMEL.match(word):
        return True
    return bool(word) and word[0].isupper() and word.lower() not in NOT_PROPER


def _strip_possessive(word: str) -> str:
    # A closing quote or a dash is no part of the word ("'Embracing Identity'", "California-").
    word = word.rstrip(".'-&")
    return word[:-2] if word.endswith("'s") else word


# Words that open a sentence by grammar (a question, a pronoun, a greeting): never the first
# word of a name, though capitalised there.
_OPENERS = frozenset(
    "is are was were do does did can could should would will shall may might must have has had what "
    "where when why how who which whose my our your his her their i we you they he she it there here so "
    "and but or if then also just please let maybe perhaps hey hi hello thanks yes no ok okay well oh "
    "any anyone anything some every".split()
)


#: Words a title leaves in lower case ("The Name of the Wind", "Lord of the Flies").
_TITLE_SMALL = frozenset("a an the of and or in on at to for with by from into over under nor but is my your".split())
_QUOTED = re.compile(r"\"([^\"]{3,80})\"")
#: Initials before a surname ("J.K. Rowling", "George R. R. Martin").
_INITIALS = re.compile(r"^(?:[A-Z]\.)+[A-Z]?\.?$")
#: Words that may stand between the names of a list beside its commas and "and"
#: ("Tokyo and Kyoto for sure, maybe Osaka", "Rome, then Florence").
_HEDGES = frozenset("maybe perhaps possibly probably".split())
_LIST_HEDGES = _HEDGES | frozenset("also even then plus and or".split())


def _titles(sentence: str, found: list[re.Match[str]]) -> list[tuple[int, int]]:
    """Token ranges ``(first, end)`` of the quoted titles of ``sentence`` ("The Name of the
    Wind"): several words, the first capitalised and every other capitalised or small."""
    ranges = []
    for q in _QUOTED.finditer(sentence):
        inside = [k for k, t in enumerate(found) if q.start(1) <= t.start() and t.end() <= q.end(1)]
        words = [found[k].group(0).rstrip(".,!?") for k in inside]
        if not 2 <= len(words) <= 10 or not words[0][:1].isupper():
            continue
        if all(w[:1].isupper() or w[:1].isdigit() or w.lower() in _TITLE_SMALL for w in words) and any(
            w[:1].isupper() and w.lower() not in NOT_PROPER for w in words
        ):
            ranges.append((inside[0], inside[-1] + 1))
    return ranges


def proper_spans(sentence: str) -> list[Span]:
    """Runs of capitalised words in ``sentence`` (``New York``, ``Bank of America``), a
    quoted title whole ("The Name of the Wind"), without a word of grammar opening them
    ("Bye Joanna" → ``Joanna``)."""
    found = list(_TOKEN.finditer(sentence))
    tokens = [_strip_possessive(t.group(0)) for t in found]
    # What lies between two tokens: a name never runs across punctuation ("Rome, Paris"),
    # and a word after a colon or a quote may be capitalised by grammar.
    gaps = [sentence[found[k - 1].end() : t.start()] if k else "" for k, t in enumerate(found)]
    joined = [
        bool(k)
        and not gap.strip()
        and (
            not found[k - 1].group(0).endswith(".")
            or tokens[k - 1].lower() in _TITLES
            or bool(_INITIALS.match(found[k - 1].group(0)))
        )
        for k, gap in enumerate(gaps)
    ]
    letters = [c for c in sentence if c.isalpha()]
    if letters and sum(c.isupper() for c in letters) > 0.6 * len(letters):
        return []  # shouting or a heading: capitals say nothing here
    titles = {first: end for first, end in _titles(sentence, found)}
    spans: list[Span] = []

    def add(i: int, j: int, initial: bool) -> None:
        words = [found[k].group(0).rstrip(",") if _INITIALS.match(found[k].group(0)) else tokens[k] for k in range(i, j)]
        listed = _listed(spans, tokens, gaps, i)
        end = spans[-1].start + spans[-1].words if spans else i
        spans.append(
            Span(
                text=" ".join(words),
                start=i,
                initial=initial,
                listed=listed,
                conjoined=listed
                and (any(w.lower() in _LIST_HEDGES for w in tokens[end:i]) or "&" in "".join(gaps[end : i + 1])),
                prev=tokens[i - 1].lower() if i else "",
                words=len(words),
                prev2=tokens[i - 2].lower() if i > 1 else "",
            )
        )

    i = 0
    while i < len(tokens):
        if i in titles:  # a quoted title is a name of its own, whatever its small words
            add(i, titles[i], initial=False)
            i = titles[i]
            continue
        if not _is_cap(tokens[i]):
            i += 1
            continue
        initial = i == 0 or any(c in gaps[i] for c in ':;"([')
        if initial and tokens[i].lower() in _OPENERS:
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
            elif (  # "Lord of the Rings", "Bank of the West"
                tokens[j].lower() == "of"
                and j + 2 < len(tokens)
                and tokens[j + 1] == "the"
                and joined[j + 1]
                and joined[j + 2]
                and _is_cap(tokens[j + 2])
            ):
                j += 3
            else:
                break
        # Grammar opening the run ("Bye Joanna", "Definitely Star Wars", "Learning German",
        # after a comma too: "Oh, Hang in there") is dropped; alone it is no name at all.
        opens = initial or any(c in gaps[i] for c in ",!?-")
        if (opens or j - i == 1) and (not_a_name(tokens[i]) or (j - i > 1 and _GERUND.match(found[i].group(0)))):
            i += 1
            continue
        add(i, j, initial)
        i = j
    return spans


def _listed(spans: list[Span], tokens: list[str], gaps: list[str], i: int) -> bool:
    """Whether the run at token ``i`` follows the last span in a list: a comma or an "and"
    between them, and nothing else but words that hedge ("Tokyo and Kyoto, maybe Osaka")."""
    if not spans:
        return False
    end = spans[-1].start + spans[-1].words
    between = tokens[end:i]
    joints = "".join(gaps[end : i + 1])
    if all(w.lower() in _LIST_HEDGES for w in between):
        return "," in joints or any(w.lower() in ("and", "or", "&", "plus") for w in between) or "&" in joints
    # "Tokyo and Kyoto for sure, maybe Osaka": a name hedged after a comma goes on with the
    # list a few words back (not a clause's "and": "Lab mixes, and Precious").
    commas = [k for k in range(end + 1, i + 1) if "," in gaps[k]]
    if not commas or commas[-1] == i or commas[-1] - end > 3:
        return False
    hedge = tokens[commas[-1] : i]
    return all(w.lower() in _LIST_HEDGES for w in hedge) and any(w.lower() in _HEDGES for w in hedge)


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
    if span.prev in _PLACE_BEFORE or (span.prev == "to" and span.prev2 in _MOTION_TO):
        return "place"
    head = sentence.lower()
    if span.prev in ("to", "for") and _TRAVEL.search(head):
        return "place"
    if span.prev in ("at", "for") and re.search(r"\b(?:work|job|employed|intern\w*)\b", head):
        return "organization"
    return "other"


def sentence_types(spans: list[Span], sentence: str) -> list[str]:
    """The type of each span of one sentence (:func:`span_type`), and what the sentence says
    around them: "from X to Y" makes Y a place when X is one ("from Kyoto Station to Uji")."""
    kinds = [span_type(span, sentence) for span in spans]
    for k, span in enumerate(spans):
        if kinds[k] == "other" and span.prev == "to" and any(
            spans[m].prev == "from" and kinds[m] == "place" for m in range(k)
        ):
            kinds[k] = "place"
    return kinds


def name_kinds(said: Sequence[tuple[str, list[Span]]], known: Mapping[str, str] | None = None) -> dict[str, str]:
    """Each name's type (casefolded) from the sentences it was said in, with their spans:
    any telling context types every mention ("in Paris"), and a list shares its type.

    ``known`` holds the types already stored for the user's names (casefolded): a known name
    the turn says nothing telling of keeps its type ("Kyoto was lovely" after "flying to
    Kyoto"), and so types a list it is in ("Kyoto and Uji" makes Uji a place)."""
    kinds: dict[str, str] = {}
    lists: list[list[str]] = []  # names said in one list by a word ("Tokyo and Kyoto, maybe Osaka")
    for sentence, found_spans in said:
        before = "other"
        for span, kind in zip(found_spans, sentence_types(found_spans, sentence)):
            key = span.text.casefold()
            if kind == "other" and span.listed:
                kind = before  # "in Rome, Paris and Berlin": the list shares its context
            if kinds.get(key, "other") == "other":
                kinds[key] = kind
            before = kind
            if span.listed and lists:
                lists[-1].append(key)
            else:
                lists.append([key])
            if span.conjoined:
                lists[-1].append("")  # marks a list joined by a word
    for key, kind in (known or {}).items():
        if kinds.get(key) == "other" and kind != "other":
            kinds[key] = kind  # typed in an earlier turn: this turn says nothing against it
    # Names listed by a word beside a place are places, wherever the place was typed (in
    # this turn: "Tokyo and Kyoto for sure, maybe Osaka" beside "in Kyoto"; or in an
    # earlier one, ``known``); a comma alone may address someone ("Wow, Calvin, Tokyo looks
    # incredible!"). Only places: a list of people or of companies is as often mixed
    # ("Ana and Google").
    for _ in range(3):
        for names in lists:
            if "" in names and any(kinds[k] == "place" for k in names if k):
                for k in names:
                    if k and kinds[k] == "other":
                        kinds[k] = "place"
    return kinds
