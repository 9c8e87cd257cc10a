"""Deterministic offline extraction: English rules for facts, extractive summaries.

Used when no chat model is configured, so that memory still works (and the demo shows real
behaviour) without a network or a key. Same input, same output: no randomness, no model.

Rules read only the user's (human) messages, clause by clause; questions and hypotheticals
("do I…", "if I…") are skipped. What they recognise, and the importance they give:

============================================  ===========================  ==========
pattern (examples)                            result                       importance
============================================  ===========================  ==========
"always/never …", "from now on …"             instruction                  0.9
"remember that …", "don't forget …"           memory (fact/preference)     0.9
"my name is X", "I'm X", "call me X"          user entity named X          0.8
"I live in X", "I moved to X", "based in X"   user ``location``, place X   0.8
"I'm from X", "I grew up in X"                user ``hometown``, place X   0.8
"I work as a X", "I'm a X at Y", "work at Y"  user ``job`` / ``employer``  0.8
"I'm 34 (years old)"                          user ``age``                 0.8
"I'm vegan", "I'm allergic to X"              user ``diet`` / ``allergies``  0.8
"my wife/boss/friend … (is/named) X"          person X, ``relation_to_user``  0.7
"I like/love/enjoy/prefer X", "my favourite"  preference, user ``likes``   0.7
"I hate/dislike/can't stand/don't like X"     preference, user ``dislikes``  0.7
"I'm married/single …"                        user ``marital_status``      0.7
"I visited/went to/bought/met X"              experience                   0.6
"I always/usually/never X" (a habit)          fact                         0.6
"I speak X", "I'm learning X", "I have X"     fact                         0.6
capitalised proper nouns                      entity (no memory)           —
============================================  ===========================  ==========

The user's own entity is named by the name stated in the turn, or :data:`USER_ENTITY`
(``"user"``) when the turn states none; it carries ``relation_to_user: self``, as the LLM
prompt asks too, so the entity layer can tell it apart. Proper nouns are capitalised words
that do not start a sentence (unless already known, found by a rule, or several words
long), minus pronouns, greetings, days and months; their type comes from their context
("in X" → place, "work at X" → organization, "Inc"/"University" → organization, CamelCase
or digits → product, nationalities and languages → topic, else other).

The extractive summary scores sentences (content words, proper nouns, numbers, decision /
preference keywords, the user's own words, recency), keeps the best that fit the token
budget in conversation order, each as ``speaker: sentence``, and folds them into the
previous summary, whose oldest lines go first when the budget is short.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from langchain_core.messages import BaseMessage

from .errors import InvalidInputError
from .extraction import (
    RELATION_ATTRIBUTE,
    SELF,
    USER_ENTITY,
    EpisodeExtraction,
    TurnExtraction,
    _check_messages,
    _check_names,
    _check_summary,
    _check_tokens,
    message_text,
    speaker,
)
from .tokens import TiktokenCounter, TokenCounter

logger = logging.getLogger("langchain_tiered_memory")

#: Importance given by the rules, by kind of statement.
IMPORTANCE: dict[str, float] = {
    "instruction": 0.9,
    "remember": 0.9,
    "name": 0.8,
    "location": 0.8,
    "hometown": 0.8,
    "job": 0.8,
    "employer": 0.8,
    "age": 0.8,
    "health": 0.8,
    "relation": 0.7,
    "preference": 0.7,
    "marital": 0.7,
    "experience": 0.6,
    "habit": 0.6,
    "self": 0.6,
}

#: Budget of an offline episode's summary, in tokens.
EPISODE_SUMMARY_TOKENS = 200
#: A sentence longer than this is cut before it enters a summary.
MAX_SENTENCE_TOKENS = 60
MAX_DECISIONS = 8
MAX_TOPICS = 8

_notice_lock = threading.Lock()
_noticed = False


def _notice_once() -> None:
    global _noticed
    with _notice_lock:
        if _noticed:
            return
        _noticed = True
    logger.warning(
        "langchain-tiered-memory is in offline mode: no chat model is configured, so entities "
        "and memories come from English rules and summaries are extractive. Pass model=<any "
        "LangChain chat model>, or set OPENAI_API_KEY (and OPENAI_BASE_URL for an "
        "OpenAI-compatible server), to extract with an LLM."
    )


# --------------------------------------------------------------------------- text basics

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
            if word in _ABBREVIATIONS or re.fullmatch(r"[a-z]", word) or (after and after.islower()):
                continue
            piece = line[start : match.end()].strip()
            if piece:
                sentences.append(piece)
            start = match.end()
        rest = line[start:].strip()
        if rest:
            sentences.append(rest)
    return sentences


_STOPWORDS = frozenset(
    """
    a about above after again against all also am an and any are aren't as at be because been
    before being below between both but by can can't cannot could couldn't did didn't do does
    doesn't doing don't down during each few for from further get got had hadn't has hasn't have
    haven't having he he'd he'll he's her here here's hers herself him himself his how how's i
    i'd i'll i'm i've if in into is isn't it it's its itself just let's like me more most much
    mustn't my myself no nor not now of off on once only or other ought our ours ourselves out
    over own really same shan't she she'd she'll she's should shouldn't so some such than that
    that's the their theirs them themselves then there there's these they they'd they'll they're
    they've this those through to too under until up us very was wasn't we we'd we'll we're we've
    were weren't what what's when when's where where's which while who who's whom why why's will
    with won't would wouldn't you you'd you'll you're you've your yours yourself yourselves yes
    yeah ok okay sure thanks thank please hi hello hey maybe well one two lot lots thing things
    something anything everything know think want need make go going good great nice right
    actually probably definitely way even still back see say said tell told ask asked sounds
    """.split()
)
_WORD = re.compile(r"[A-Za-z][A-Za-z'\-]*[A-Za-z]|[A-Za-z]")
_NUMBER = re.compile(r"\d")
_FILLER = re.compile(
    r"^(?:(?:ok(?:ay)?|sure|thanks?(?: you)?(?: so much)?|hello|hi|hey|great|cool|nice|got it|"
    r"sounds good|you're welcome|no problem|perfect|awesome|yes|no|bye|goodbye|there|everyone|"
    r"again|good (?:morning|afternoon|evening|night))[\s,.!]*)+$",
    re.I,
)
_KEYWORDS = re.compile(
    r"\b(?:decid\w*|agree\w*|plan\w*|will|going to|need\w*|must|deadline|due|remember|prefer\w*|"
    r"like|love|hate|dislike|always|never|name|live|work\w*|todo|next step|action|important|"
    r"budget|schedule\w*|book\w*|meeting|appointment|flight|call|email|choose|chose|let's)\b",
    re.I,
)


# --------------------------------------------------------------------------- proper nouns

_DAYS_MONTHS = {
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
    "january", "february", "march", "april", "may", "june", "july", "august",
    "september", "october", "november", "december",
}
_NOT_PROPER = {
    "i", "i'm", "i've", "i'd", "i'll", "ok", "okay", "yes", "no", "hi", "hello", "hey",
    "thanks", "thank", "please", "sorry", "dear", "oh", "wow", "lol", "btw", "fyi", "also",
    "the", "a", "an", "my", "your", "our", "we", "you", "he", "she", "they", "it", "this",
    "that", "what", "why", "how", "when", "where", "who", "which", "and", "but", "or", "so",
    "if", "then", "now", "today", "tomorrow", "yesterday", "tonight", "mom", "dad", "ai",
    "always", "never", "remember", "just", "well", "sure", "great", "good", "cool", "nice",
    "user", "assistant", "bot", "chatgpt", "am", "pm", "tv", "asap",
} | _DAYS_MONTHS
_TITLES = {"mr", "mrs", "ms", "dr", "prof", "sir", "madam", "aunt", "uncle", "saint", "st"}
_NATIONALITIES = {
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


@dataclass
class _Span:
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
    return bool(word) and word[0].isupper() and word.lower() not in _NOT_PROPER


def _strip_possessive(word: str) -> str:
    word = word.rstrip(".")
    return word[:-2] if word.endswith("'s") else word


def proper_spans(sentence: str) -> list[_Span]:
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
    spans: list[_Span] = []
    i = 0
    while i < len(tokens):
        if not _is_cap(tokens[i]):
            i += 1
            continue
        j = i + 1
        while j < len(tokens) and joined[j]:
            if _is_cap(tokens[j]):
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
            _Span(
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


def _span_type(span: _Span, sentence: str) -> str:
    words = span.text.split()
    last = words[-1].lower().rstrip(".")
    if len(words) == 1 and last in _NATIONALITIES:
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


# --------------------------------------------------------------------------- pronouns

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


def third_person_verb(verb: str) -> str:
    """``verb`` conjugated for "the user" ("need" → "needs", "try" → "tries")."""
    low = verb.lower()
    if low in _IRREGULAR:
        return _IRREGULAR[low]
    past = low.endswith("ed") and not low.endswith("eed")  # "need", "feed" are present tense
    if low in _MODALS or not low.isalpha() or past or verb[0].isupper():
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
        text = pattern.sub(repl, text)  # type: ignore[arg-type]
    first = True

    def my(match: re.Match[str]) -> str:
        nonlocal first
        named = "the user" in match.string[: match.start()].lower()
        word = "the user's" if first and not named else "their"
        first = False
        return word

    return _MY.sub(my, text)


def _as_statement(text: str) -> str:
    text = " ".join(text.split()).strip(" ,;:-")
    if not text:
        return ""
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?" else text + "."


# --------------------------------------------------------------------------- clause rules

_OPENER = (
    r"(?:(?:and|but|also|so|then|plus)\s+)?(?:i|i'm|i've|i'd|i'll|im|my|we|we're|our|you|your|"
    r"please|remember|always|never|don't|do not|call|from now on)\b"
)
_ELIDED = r"(?:live|lived|work|moved|prefer|like|love|hate|enjoy|dislike|speak|grew|have|am)\b"
_CLAUSE_SPLIT = re.compile(
    rf"\s*(?:[;:]|,|\s-\s)\s*(?={_OPENER})|\s+(?:and|but|so|because|while|although|though|whereas|or)\s+(?={_OPENER}|{_ELIDED})",
    re.I,
)
_ELIDED_START = re.compile(rf"^{_ELIDED}", re.I)
_QUESTION_START = re.compile(
    r"^(?:(?:so|and|but|hey|ok|okay|well|also)[,\s]+)?(?:do|does|did|can|could|would|will|should|"
    r"is|are|am|was|were|what|where|who|when|why|how|which|whose|shall|have|has|if|unless|"
    r"suppose|imagine|what if|in case)\b",
    re.I,
)
_SUB_CLAUSE = re.compile(
    r"\s+(?:because|since|although|though|when|whenever|which|who|if|unless|so that|but|as long as|while)\b.*$",
    re.I,
)
_TRAILING_FILLER = re.compile(
    r"(?:[\s,]+(?:too|as well|a lot|very much|so much|the most|really|though|lol|haha|please|"
    r"thanks|thank you|anyway|tbh|honestly|actually))+\s*$",
    re.I,
)
_PRONOUN_OBJECT = re.compile(r"^(?:it|that|this|them|you|him|her|these|those|what|how|when|one)\b", re.I)

_CAP = r"(?:[A-Z][a-z]+'[A-Z][a-zA-Z]+|[A-Z][a-zA-Z0-9\-]*)"
_PROPER = rf"{_CAP}(?:\s+(?:(?:of|de|del|della|da|di|la|le|du|des|von|van|der|upon)\s+)?{_CAP})*(?:,\s*{_CAP}(?:\s+{_CAP})*)?"
_NAME = rf"{_CAP}(?:\s+{_CAP})?"
_NOT_NAMES = _NOT_PROPER | _NATIONALITIES | {
    "not", "fine", "good", "here", "back", "happy", "sad", "tired", "busy", "ready", "done",
    "new", "glad", "excited", "sorry", "looking", "trying", "going", "interested", "single",
    "married", "retired", "vegan", "vegetarian", "allergic", "from", "in", "at", "a", "an",
    "the", "very", "so", "really", "still", "just", "also", "currently", "originally",
    "learning", "working", "planning", "based", "living", "moving", "on", "off", "out",
}
_JOB_WORDS = {
    "engineer", "developer", "programmer", "designer", "teacher", "doctor", "nurse", "lawyer",
    "attorney", "student", "scientist", "researcher", "manager", "writer", "author", "artist",
    "chef", "cook", "accountant", "consultant", "analyst", "architect", "professor", "lecturer",
    "journalist", "photographer", "musician", "pilot", "dentist", "pharmacist", "therapist",
    "psychologist", "mechanic", "electrician", "plumber", "carpenter", "farmer",
    "entrepreneur", "founder", "co-founder", "ceo", "cto", "cfo", "director", "officer",
    "intern", "librarian", "editor", "translator", "baker", "waiter", "waitress", "barista",
    "firefighter", "physician", "surgeon", "veterinarian", "vet", "economist", "banker",
    "trader", "salesperson", "marketer", "recruiter", "administrator", "admin", "technician",
    "assistant", "secretary", "clerk", "cashier", "driver", "tutor", "coach", "trainer",
    "paramedic", "soldier", "police", "detective", "actor", "actress", "singer", "dancer",
    "producer", "director", "freelancer", "contractor", "lead", "specialist", "coordinator",
    "executive", "owner", "partner", "sre", "devops", "student", "phd", "postdoc", "retiree",
    "scientist", "mathematician", "physicist", "chemist", "biologist", "statistician",
}
_DIETS = {"vegan", "vegetarian", "pescatarian", "keto", "gluten-free", "kosher", "halal"}
_HEALTH = {"diabetic", "celiac", "coeliac", "lactose intolerant", "gluten intolerant",
           "pregnant", "colorblind", "colourblind", "deaf", "blind", "asthmatic", "epileptic"}
_MARITAL = {"married", "single", "divorced", "engaged", "widowed", "separated"}
_RELATIONS = (
    "wife", "husband", "partner", "spouse", "girlfriend", "boyfriend", "fiancee", "fiance",
    "sister", "brother", "sibling", "mother", "mom", "mum", "father", "dad", "son",
    "daughter", "child", "kid", "baby", "friend", "boss", "manager", "colleague",
    "coworker", "co-worker", "cousin", "aunt", "uncle", "niece", "nephew", "grandmother",
    "grandfather", "grandma", "grandpa", "neighbour", "neighbor", "roommate", "flatmate",
    "teacher", "doctor", "therapist", "mentor", "dog", "cat", "pet", "puppy", "kitten",
    "horse", "parrot", "rabbit", "hamster",
)
_PETS = {"dog", "cat", "pet", "puppy", "kitten", "horse", "parrot", "rabbit", "hamster"}
_REL = (
    r"(?P<rel>(?:(?:older|younger|little|big|baby|best|new|old|ex|elder|twin|step|eldest|youngest)[\s-]+)?"
    r"(?:" + "|".join(sorted(_RELATIONS, key=len, reverse=True)) + r"))"
)
_LIKE_VERBS = {
    "like": "likes", "love": "loves", "enjoy": "enjoys", "prefer": "prefers", "adore": "adores",
    "am fond of": "is fond of", "'m fond of": "is fond of", "am a fan of": "is a fan of",
    "'m a fan of": "is a fan of", "am into": "is into", "'m into": "is into",
    "am passionate about": "is passionate about", "'m passionate about": "is passionate about",
    "am a big fan of": "is a big fan of", "'m a big fan of": "is a big fan of",
    "am a huge fan of": "is a huge fan of", "'m a huge fan of": "is a huge fan of",
}
_DISLIKE_VERBS = {
    "hate": "hates", "dislike": "dislikes", "detest": "detests", "despise": "despises",
    "can't stand": "can't stand", "cannot stand": "cannot stand", "can't bear": "can't bear",
    "don't like": "doesn't like", "do not like": "does not like", "don't enjoy": "doesn't enjoy",
    "do not enjoy": "does not enjoy", "don't care for": "doesn't care for",
    "am not a fan of": "is not a fan of", "'m not a fan of": "is not a fan of",
    "am not into": "is not into", "'m not into": "is not into",
}
_INTENS = r"(?:(?:really|absolutely|truly|also|just|totally|kind of|kinda|do|actually|especially|mostly|generally|definitely|honestly|still)\s+)*"


def _alternation(words: Sequence[str]) -> str:
    return "|".join(re.escape(w).replace(r"\ ", r"\s+") for w in sorted(words, key=len, reverse=True))


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


_IM_ADVERBS = re.compile(
    r"(?i)\b(i'm|i\s+am|im)\s+(?:(?:really|absolutely|totally|so|very|kind\s+of|kinda|super|quite|"
    r"pretty|actually|also|just|definitely|honestly|still|now)\s+)+"
)
_I = r"(?i:\bi)"
_IM = r"(?i:\b(?:i'm|i\s+am|im))"
# "I'm 34 and married": an adjective rule may follow another adjective.
_IM_AND = rf"{_IM}\s+(?:[\w\-' ]{{1,40}}?\s+and\s+)?"

_R_NAME = [
    _rx(rf"(?i:\bmy\s+name(?:'s|\s+is))\s+(?P<name>[A-Za-z][A-Za-z'\-]*(?:\s+{_CAP})?)"),
    _rx(rf"(?i:\b(?:call\s+me|people\s+call\s+me|everyone\s+calls\s+me|i\s+go\s+by|i'm\s+called|i\s+am\s+called))\s+(?P<name>[A-Za-z][A-Za-z'\-]*(?:\s+{_CAP})?)"),
    _rx(rf"^(?i:(?:(?:hi|hello|hey)[\s,!]+)?(?:there[\s,!]+)?(?:i'm|i\s+am|im|it's|this\s+is))\s+(?P<name>{_NAME})(?=\s*(?:[,.!;]|$|\s+(?i:and|from|here|by|at)\b))"),
]
_R_LOCATION = _rx(
    rf"{_I}(?i:(?:'ve|\s+have)?(?:\s+(?:just|recently|now|currently))?\s+(?:live|am\s+living|'m\s+living|reside|stay|moved|relocated|am\s+moving|'m\s+moving|am\s+based|'m\s+based|am\s+located|'m\s+located|am\s+staying|'m\s+staying))\s+(?i:in|to)\s+(?P<place>.+)"
)
_R_LOCATION2 = _rx(rf"(?i:\b(?:my\s+home\s+is|my\s+city\s+is|i\s+call)\s+(?:in\s+)?)(?P<place>.+)")
_R_HOMETOWN = _rx(
    rf"(?:{_IM}(?:\s+{_NAME})?(?i:\s+(?:originally\s+)?from)|{_I}(?i:\s+(?:grew\s+up|was\s+born|was\s+raised)\s+in)|(?i:\bi\s+come\s+from))\s+(?P<place>.+)"
)
_R_JOB_AS = _rx(
    rf"(?:{_I}(?i:\s+(?:currently\s+)?work(?:ing)?\s+as)|{_IM}(?i:\s+working\s+as)|(?i:\bmy\s+(?:job|role|position|title|profession|occupation)\s+is))\s+(?i:(?:a|an|the)\s+)?(?P<role>[A-Za-z][\w\-]*(?:\s+(?!(?i:at|for|with|in|and|but|from|who|which|since|on)\b)[A-Za-z][\w\-]*){{0,3}})(?:\s+(?i:at|for|with)\s+(?P<org>.+))?"
)
_R_IM_A = _rx(
    rf"{_IM}\s+(?i:(?:a|an)\s+)(?P<role>[A-Za-z][\w\-]*(?:\s+(?!(?i:at|for|with|in|and|but|from|who|which|since|on|of|to)\b)[A-Za-z][\w\-]*){{0,3}})(?:\s+(?i:at|for|with)\s+(?P<org>.+))?"
)
_R_WORK_AT = _rx(
    rf"(?:{_I}(?i:\s+(?:currently\s+|now\s+)?work(?:ing)?\s+(?:at|for))|{_IM}(?i:\s+(?:working|employed)\s+(?:at|for|by))|(?i:\bmy\s+(?:employer|company)\s+is))\s+(?P<org>.+)"
)
_R_AGE = _rx(rf"{_IM}\s+(?P<age>\d{{1,3}})(?:\s*(?i:years?\s+old|yo|y/o|year-old))?\s*[.!]?$")
_R_AGE2 = _rx(rf"{_IM}\s+(?P<age>\d{{1,3}})\s*(?i:years?\s+old|yo|y/o)")
_R_DIET = _rx(rf"{_IM_AND}(?i:(?:a\s+)?(?:strict\s+)?)(?P<diet>(?i:{_alternation(sorted(_DIETS))}))\b")
_R_HEALTH = _rx(rf"{_IM_AND}(?P<cond>(?i:{_alternation(sorted(_HEALTH))}))\b")
_R_ALLERGY = _rx(rf"(?:{_IM_AND}(?i:(?:very\s+|severely\s+|deathly\s+)?allergic\s+to)|(?i:\bi\s+have\s+an?\s+(?:\w+\s+)?allergy\s+to))\s+(?P<what>.+)")
_R_MARITAL = _rx(rf"{_IM_AND}(?P<status>(?i:{_alternation(sorted(_MARITAL))}))\b")
_R_REL_NAMED = _rx(
    rf"(?i:\bmy\s+){_REL}(?:(?i:'s\s+name\s+is|\s+is\s+called|\s+is\s+named|,?\s+(?:who\s+is\s+)?(?:called|named)|\s+is)\s+|,?\s+)(?P<name>{_NAME})\b"
)
_R_HAVE_REL = _rx(
    rf"{_I}(?i:\s+(?:have|'ve\s+got|have\s+got)\b.*?\b(?:a|an|one|two|three|\d+)\s+){_REL}(?i:s?\s+(?:named|called))\s+(?P<name>{_NAME})\b"
)
_R_NAME_IS_MY = _rx(rf"^(?P<name>{_NAME})\s+(?i:is\s+my\s+){_REL}\b")
_R_LIKE = _rx(rf"{_I}(?:\s+|(?='))(?i:{_INTENS})(?P<verb>(?i:{_alternation(list(_LIKE_VERBS))}))\s+(?P<obj>.+)")
_R_DISLIKE = _rx(rf"{_I}(?:\s+|(?='))(?i:{_INTENS})(?P<verb>(?i:{_alternation(list(_DISLIKE_VERBS))}))\s+(?P<obj>.+)")
_R_FAVOURITE = _rx(r"(?i:\bmy\s+(?:absolute\s+)?favou?rite\s+)(?P<what>[a-z][\w\-]*(?:\s+[a-z][\w\-]*)?)(?i:\s+is|\s+are|'s)\s+(?P<obj>.+)")
_R_SPEAK = _rx(rf"{_I}(?i:\s+(?:also\s+)?speak)\s+(?P<obj>.+)")
_R_LEARNING = _rx(rf"{_IM}\s+(?P<verb>(?i:learning|studying|training\s+for|saving\s+for|preparing\s+for|planning\s+to|working\s+on))\s+(?P<obj>.+)")
_R_EXPERIENCE = _rx(
    rf"{_I}(?i:(?:'ve|\s+have)?(?:\s+(?:just|recently|once|finally|already|actually))?\s+)(?P<verb>(?i:visited|went\s+to|travel(?:l)?ed\s+to|got\s+back\s+from|returned\s+from|been\s+to|attended|graduated\s+from|finished|completed|started|bought|adopted|met|ran|climbed|won|lost|got\s+married|broke\s+up|moved\s+out|quit|retired))\s+(?P<obj>.+)"
)
_R_HABIT = _rx(rf"{_I}\s+(?P<adv>(?i:always|usually|never|often|rarely|normally|generally|typically))\s+(?P<obj>.+)")
_R_HAVE = _rx(rf"{_I}(?i:\s+(?:have|'ve\s+got|have\s+got))\s+(?P<obj>(?i:a|an|two|three|four|five|\d+)\s+.+)")
_HAVE_SKIP = re.compile(
    r"^(?:an?|\w+)\s+(?:\w+\s+)?(?:question|problem|issue|idea|doubt|suggestion|minute|moment|"
    r"feeling|request|favou?r|bit|little|lot|few|couple|look|go|try|chance|time)\b",
    re.I,
)
_R_REMEMBER = _rx(
    r"(?i:^(?:(?:can|could|would|will)\s+you\s+)?(?:please\s+)?(?:remember|don't\s+forget|do\s+not\s+forget|never\s+forget|keep\s+in\s+mind|make\s+a\s+note|note|take\s+note)(?:\s+that|\s*:|\s*,)|^for\s+future\s+reference[\s,:]+)\s*(?P<what>.+)"
)
_R_REMEMBER_TO = _rx(r"(?i:^(?:please\s+)?(?:remember|don't\s+forget)\s+to)\s+(?P<what>.+)")
_R_INSTRUCTION = _rx(
    r"(?i:^(?:(?:and|also|so|ok|okay)[\s,]+)?(?:please[\s,]+)?(?:(?:from\s+now\s+on|going\s+forward|in\s+(?:the\s+)?future|for\s+the\s+rest\s+of\s+(?:this|our)\s+conversation)[\s,]+)?(?:please[\s,]+)?(?:you\s+(?:should|must|need\s+to|have\s+to)\s+|make\s+sure\s+(?:to|you)\s+)?(?:please\s+)?)(?P<what>(?i:always|never|don't\s+ever|do\s+not\s+ever)\b.+)"
)
_R_FROM_NOW_ON = _rx(
    r"(?i:^(?:please[\s,]+)?(?:from\s+now\s+on|going\s+forward|in\s+(?:the\s+)?future)[\s,]+(?:please[\s,]+)?)(?P<what>.+)"
)


def _phrase(text: str, max_words: int = 12) -> str | None:
    """The object phrase at the start of ``text``: up to a sub-clause, fillers trimmed."""
    text = _SUB_CLAUSE.sub("", text.strip())
    text = re.split(r"[.!?;:()\"]|,\s+(?:and\s+)?(?:but|so|because)\b", text)[0]
    text = _TRAILING_FILLER.sub("", text).strip(" ,-")
    words = text.split()
    if not words or _PRONOUN_OBJECT.match(text):
        return None
    return " ".join(words[:max_words])


def _object(text: str) -> str:
    # "The user loves their dog" reads better than "… loves the user's dog".
    return to_third_person(text).replace("the user's", "their")


def _a(noun: str) -> str:
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def _instruction(text: str) -> str:
    return to_third_person(_TRAILING_FILLER.sub("", text.strip().rstrip("?!. ")))


def _place(text: str) -> str | None:
    text = text.strip()
    lead = re.match(r"(?i:the\s+)?", text)
    rest = text[lead.end() if lead else 0 :]
    proper = re.match(_PROPER, rest)
    if proper:
        words = proper.group(0)
        kept = []
        for w in re.split(r"(\s+|,\s*)", words):
            if w.strip(", ").lower() in _NOT_PROPER:
                break
            kept.append(w)
        value = "".join(kept).strip(" ,")
        if value:
            return value
    phrase = _phrase(text, 8)
    if phrase and len(phrase.split()) == 1 and phrase.isalpha():
        return phrase.capitalize()  # "i live in paris": casual lowercase
    return phrase


def _name(text: str) -> str | None:
    words = []
    for word in text.split():
        if word.lower() in _NOT_NAMES or word.lower().endswith("ing"):
            break
        words.append(word[0].upper() + word[1:])
    return " ".join(words) or None


@dataclass
class _Found:
    """What the rules found in one turn, in order of appearance."""

    user_name: str | None = None
    user_attrs: dict[str, str] = field(default_factory=dict)
    entities: dict[str, tuple[str, str, dict[str, str]]] = field(default_factory=dict)
    memories: list[tuple[str, str, float]] = field(default_factory=list)

    def entity(self, name: str, type_: str, **attrs: str) -> None:
        key = name.casefold()
        if key in self.entities:
            old_name, old_type, old_attrs = self.entities[key]
            old_attrs.update(attrs)
            self.entities[key] = (old_name, old_type if old_type != "other" else type_, old_attrs)
        else:
            self.entities[key] = (name, type_, dict(attrs))

    def memory(self, content: str, memory_type: str, kind: str) -> None:
        statement = _as_statement(content)
        if statement:
            self.memories.append((statement, memory_type, IMPORTANCE[kind]))

    def add_attr(self, key: str, value: str, *, join: bool = False) -> None:
        old = self.user_attrs.get(key)
        if join and old and value.casefold() not in old.casefold():
            value = f"{old}, {value}"
        self.user_attrs[key] = value


class _Rules:
    """Applies the clause rules to the user's sentences."""

    def __init__(self, canon: dict[str, str]) -> None:
        self.found = _Found()
        self.canon = canon

    def name(self, raw: str) -> str:
        return self.canon.get(raw.casefold(), raw)

    def sentence(self, sentence: str) -> None:
        text = sentence.strip()
        if self._remember(text):
            return
        for clause in _CLAUSE_SPLIT.split(text):
            clause = clause.strip(" ,;")
            if clause:
                self.clause(clause)

    def _remember(self, text: str) -> bool:
        m = _R_REMEMBER_TO.match(text)
        if m and (what := _phrase(m.group("what"), 30)):
            self.found.memory(f"The user wants to remember to {to_third_person(what)}", "fact", "remember")
            return True
        m = _R_REMEMBER.match(text)
        if not m:
            return False
        what = m.group("what").strip().rstrip("?!. ")
        if not what:
            return False
        kind = "fact"
        if _R_LIKE.search(what) or _R_DISLIKE.search(what):
            kind = "preference"
        elif re.match(r"(?i:always|never)\b", what):
            kind = "instruction"
        content = to_third_person(what)
        if kind == "instruction":
            self.found.memory(content, "instruction", "instruction")
        else:
            self.found.memory(content, kind, "remember")
        # The remembered statement may also say who the user is, where they live…
        for clause in _CLAUSE_SPLIT.split(what):
            if clause.strip():
                self.clause(clause.strip(" ,;"), memories=False)
        return True

    def clause(self, clause: str, *, memories: bool = True) -> None:
        if _ELIDED_START.match(clause):
            clause = "I " + clause  # "… and work at Acme": the subject is elided
        clause = _IM_ADVERBS.sub(r"\1 ", clause)
        if _QUESTION_START.match(clause):
            return
        f = self.found
        mem = f.memory if memories else (lambda *a, **k: None)

        m = _R_INSTRUCTION.match(clause)
        if m:
            what = re.sub(r"(?i)^(?:don't|do\s+not)\s+ever\b", "never", m.group("what"))
            mem(_instruction(what), "instruction", "instruction")
            return
        m = _R_FROM_NOW_ON.match(clause)
        if m and m.group("what").strip():
            mem(_instruction(m.group("what")), "instruction", "instruction")
            return

        for rx in _R_NAME:
            m = rx.search(clause)
            if m and (name := _name(m.group("name"))):
                f.user_name = self.name(name)
                mem(f"The user's name is {f.user_name}", "fact", "name")
                break

        for rx, key in ((_R_LOCATION, "location"), (_R_LOCATION2, "location"), (_R_HOMETOWN, "hometown")):
            m = rx.search(clause)
            if m and (place := _place(m.group("place"))):
                place = self.name(place)
                f.add_attr(key, place)
                if place[0].isupper():
                    f.entity(place, "place")
                verb = "lives in" if key == "location" else "is from"
                mem(f"The user {verb} {place}", "fact", key)

        job = org = None
        m = _R_JOB_AS.search(clause)
        if m:
            job, org = _phrase(m.group("role"), 5), m.group("org")
        else:
            m = _R_IM_A.search(clause)
            if m:
                role = _phrase(m.group("role"), 5)
                head = role.split()[-1].lower() if role else ""
                if role and (m.group("org") or head in _JOB_WORDS or head.rstrip("s") in _JOB_WORDS):
                    job, org = role, m.group("org")
                elif (
                    role
                    and head not in _DIETS | _HEALTH | _MARITAL
                    and not re.match(r"(?i)(?:bit|little|lot|fan|big\s+fan|huge\s+fan)\b", role)
                ):
                    mem(f"The user is {_a(role)}", "fact", "self")
        if org is None:
            m = _R_WORK_AT.search(clause)
            if m:
                org = m.group("org")
        org_name = _place(org) if org else None
        if org_name and _PRONOUN_OBJECT.match(org_name) or (org_name or "").lower() in ("myself", "home"):
            org_name = None
        if job:
            f.add_attr("job", job)
        if org_name:
            org_name = self.name(org_name)
            f.add_attr("employer", org_name)
            if org_name[0].isupper():
                f.entity(org_name, "organization")
        if job and org_name:
            mem(f"The user works as {_a(job)} at {org_name}", "fact", "job")
        elif job:
            mem(f"The user works as {_a(job)}", "fact", "job")
        elif org_name:
            mem(f"The user works at {org_name}", "fact", "employer")

        m = _R_AGE.search(clause) or _R_AGE2.search(clause)
        if m and 0 < int(m.group("age")) < 125:
            f.add_attr("age", m.group("age"))
            mem(f"The user is {m.group('age')} years old", "fact", "age")
        m = _R_DIET.search(clause)
        if m:
            diet = m.group("diet").lower()
            f.add_attr("diet", diet)
            mem(f"The user is {diet}", "fact", "health")
        m = _R_HEALTH.search(clause)
        if m:
            cond = " ".join(m.group("cond").lower().split())
            f.add_attr("health", cond, join=True)
            mem(f"The user is {cond}", "fact", "health")
        m = _R_ALLERGY.search(clause)
        if m and (what := _phrase(m.group("what"), 6)):
            f.add_attr("allergies", what, join=True)
            mem(f"The user is allergic to {what}", "fact", "health")
        m = _R_MARITAL.search(clause)
        if m:
            status = m.group("status").lower()
            f.add_attr("marital_status", status)
            mem(f"The user is {status}", "fact", "marital")

        for rx in (_R_REL_NAMED, _R_HAVE_REL, _R_NAME_IS_MY):
            for m in rx.finditer(clause):
                rel = " ".join(m.group("rel").lower().split())
                name = _name(m.group("name"))
                if not name:
                    continue
                name = self.name(name)
                base = rel.split()[-1].split("-")[-1]
                f.entity(name, "other" if base in _PETS else "person", **{RELATION_ATTRIBUTE: rel})
                f.add_attr(re.sub(r"[\s\-]+", "_", rel), name, join=True)
                mem(f"The user's {rel} is {'named ' if base in _PETS else ''}{name}", "fact", "relation")

        m = _R_DISLIKE.search(clause)
        if m and (obj := _phrase(m.group("obj"))):
            verb = " ".join(m.group("verb").lower().split())
            obj3 = _object(obj)
            f.add_attr("dislikes", obj3, join=True)
            mem(f"The user {_DISLIKE_VERBS.get(verb, verb)} {obj3}", "preference", "preference")
        else:
            m = _R_LIKE.search(clause)
            if m and (obj := _phrase(m.group("obj"))):
                verb = " ".join(m.group("verb").lower().split())
                obj3 = _object(obj)
                f.add_attr("prefers" if verb == "prefer" else "likes", obj3, join=True)
                mem(f"The user {_LIKE_VERBS.get(verb, verb + 's')} {obj3}", "preference", "preference")
        m = _R_FAVOURITE.search(clause)
        if m and (obj := _phrase(m.group("obj"))):
            what = " ".join(m.group("what").lower().split())
            f.add_attr("favorite_" + re.sub(r"[\s\-]+", "_", what), obj)
            mem(f"The user's favourite {what} is {obj}", "preference", "preference")

        m = _R_SPEAK.search(clause)
        if m and (obj := _phrase(m.group("obj"))):
            f.add_attr("languages", obj, join=True)
            mem(f"The user speaks {obj}", "fact", "self")
        m = _R_LEARNING.search(clause)
        if m and (obj := _phrase(m.group("obj"))):
            verb = " ".join(m.group("verb").lower().split())
            mem(f"The user is {verb} {_object(obj)}", "fact", "self")
        m = _R_EXPERIENCE.search(clause)
        if m and (obj := _phrase(m.group("obj"))):
            verb = " ".join(m.group("verb").lower().split())
            perfect = re.search(r"(?i)(?:'ve|\bhave)\s", clause[: m.start("verb")])
            verb = f"has {verb}" if perfect or verb == "been to" else verb
            mem(f"The user {verb} {_object(obj)}", "experience", "experience")
        m = _R_HABIT.search(clause)
        if m and (obj := _phrase(m.group("obj"))):
            verb_phrase = _object("I " + obj).removeprefix("the user ")
            mem(f"The user {m.group('adv').lower()} {verb_phrase}", "fact", "habit")
        m = _R_HAVE.search(clause)
        if m and not _HAVE_SKIP.match(m.group("obj")):
            if (obj := _phrase(m.group("obj"))):
                mem(f"The user has {_object(obj)}", "fact", "self")


# --------------------------------------------------------------------------- extraction


def _human_texts(messages: Sequence[BaseMessage]) -> list[str]:
    return [message_text(m) for m in messages if speaker(m) == "user"]


def extract_rules(
    messages: Sequence[BaseMessage], known_entities: Sequence[str] = ()
) -> TurnExtraction:
    """The rule-based entities and memories of a turn (the user's messages only)."""
    canon = {name.casefold(): name for name in known_entities}
    rules = _Rules(canon)
    sentences = [s for text in _human_texts(messages) for s in split_sentences(text)]
    for sentence in sentences:
        rules.sentence(sentence)
    found = rules.found

    entities: list[dict[str, object]] = []
    taken: set[str] = set()
    if found.user_name or found.user_attrs:
        name = found.user_name or USER_ENTITY
        attrs = {**found.user_attrs, RELATION_ATTRIBUTE: SELF}
        entities.append({"name": name, "type": "person", "attributes": attrs})
        taken.add(name.casefold())
        taken.update(part.casefold() for part in name.split())
    for name, type_, attrs in found.entities.values():
        if name.casefold() not in taken:
            entities.append({"name": name, "type": type_, "attributes": attrs})
            taken.add(name.casefold())

    # Proper nouns: a capital that starts a sentence may be grammar, so such a word counts
    # only when it is known, found by a rule, several words long, or capitalised elsewhere.
    spans = [(span, s) for s in sentences for span in proper_spans(s)]
    mid_sentence = {span.text.casefold() for span, _ in spans if not span.initial}
    trusted = taken | set(canon) | mid_sentence
    kinds: dict[str, str] = {}
    before = "other"
    for span, sentence in spans:  # any telling context types every mention ("in Paris")
        key = span.text.casefold()
        kind = _span_type(span, sentence)
        if kind == "other" and span.listed:
            kind = before  # "in Rome, Paris and Berlin": the list shares its context
        if kinds.get(key, "other") == "other":
            kinds[key] = kind
        before = kind
    for span, sentence in spans:
        key = span.text.casefold()
        if key in taken:
            continue
        if span.initial and span.words == 1 and key not in trusted:
            continue
        entities.append({"name": canon.get(key, span.text), "type": kinds[key], "attributes": {}})
        taken.add(key)

    memories = [
        {"content": content, "memory_type": memory_type, "importance": importance}
        for content, memory_type, importance in found.memories
    ]
    return TurnExtraction.model_validate({"entities": entities, "memories": memories})


# --------------------------------------------------------------------------- summaries


@dataclass
class _Unit:
    pos: int
    label: str
    text: str
    score: float
    tokens: int = 0


def _salience(sentence: str, label: str, pos: int, total: int) -> float:
    if _FILLER.match(sentence.strip()):
        return 0.0
    words = _WORD.findall(sentence)
    content = {w.lower() for w in words if len(w) > 2 and w.lower() not in _STOPWORDS}
    score = float(min(len(content), 12))
    proper = [s for s in proper_spans(sentence) if not s.initial]
    score += 1.5 * min(len(proper), 3)
    score += 1.0 * min(len(_NUMBER.findall(sentence)), 3)
    if _KEYWORDS.search(sentence):
        score += 3.0
    if label == "user":
        score *= 1.25
    if len(words) < 4:
        score *= 0.3
    return score + 2.0 * (pos + 1) / max(total, 1)


def _units(messages: Sequence[BaseMessage], counter: TokenCounter) -> list[_Unit]:
    raw: list[tuple[str, str]] = []
    for message in messages:
        label = speaker(message)
        if label not in ("user", "assistant"):
            continue  # system prompts and tool output are not conversation
        for sentence in split_sentences(message_text(message)):
            raw.append((label, sentence))
    units = []
    for pos, (label, sentence) in enumerate(raw):
        if counter.count_text(sentence) > MAX_SENTENCE_TOKENS:
            sentence = counter.truncate_text(sentence, MAX_SENTENCE_TOKENS).rstrip() + "…"
        units.append(_Unit(pos, label, sentence, _salience(sentence, label, pos, len(raw))))
    return units


def _line(unit: _Unit) -> str:
    return f"{unit.label}: {unit.text}" if unit.label else unit.text


def _select(units: list[_Unit], budget: int, counter: TokenCounter) -> list[_Unit]:
    """The best units that fit ``budget`` (one token per newline), in original order."""
    for unit in units:
        unit.tokens = counter.count_text(_line(unit)) + 1
    ranked = sorted(
        (u for u in units if u.score > 0),
        key=lambda u: (-u.score / max(u.tokens, 1) ** 0.5, -u.pos),
    )
    chosen, used = [], 0
    for unit in ranked:
        if used + unit.tokens <= budget:
            chosen.append(unit)
            used += unit.tokens
    return sorted(chosen, key=lambda u: u.pos)


def _fit(lines: list[str], budget: int, counter: TokenCounter) -> str:
    """``lines`` joined, dropping from the front (oldest) until within ``budget``.

    Lines are budgeted one by one; tokens can merge across a newline, so the joined text
    is checked once more.
    """
    lines = list(lines)
    while lines and counter.count_text("\n".join(lines)) > budget:
        lines.pop(0)
    return "\n".join(lines)


def _summary_lines(summary: str, counter: TokenCounter) -> list[str]:
    lines: list[str] = []
    for line in summary.splitlines():
        line = line.strip()
        if not line:
            continue
        if counter.count_text(line) > 2 * MAX_SENTENCE_TOKENS:
            lines.extend(split_sentences(line))  # prose from an LLM summary
        else:
            lines.append(line)
    return lines


def extractive_summary(
    messages: Sequence[BaseMessage],
    *,
    previous: str | None = None,
    max_tokens: int,
    counter: TokenCounter | None = None,
) -> str:
    """``previous`` with the salient sentences of ``messages`` folded in, within ``max_tokens``.

    New sentences get the budget first, except that an existing summary keeps up to half
    of it; the previous summary's newest lines fill what remains, its oldest dropped first.
    """
    budget = _check_tokens(max_tokens, "max_tokens")
    counter = counter or TiktokenCounter()
    if budget == 0:
        return ""
    old = _summary_lines(previous or "", counter)
    old_tokens = counter.count_text("\n".join(old)) if old else 0
    reserve = min(old_tokens, budget // 2)
    new = [_line(u) for u in _select(_units(messages, counter), budget - reserve, counter)]
    new_tokens = counter.count_text("\n".join(new)) + 1 if new else 0
    room = budget - new_tokens
    kept: list[str] = []
    for line in reversed(old):
        cost = counter.count_text(line) + 1
        if cost > room:
            break  # keep a contiguous, newest run: a gap would misrepresent the story
        kept.insert(0, line)
        room -= cost
    return _fit(kept + new, budget, counter)


def compress_extractive(summary: str, max_tokens: int, counter: TokenCounter | None = None) -> str:
    """``summary`` cut to its most salient lines (in order) within ``max_tokens``."""
    budget = _check_tokens(max_tokens, "max_tokens")
    counter = counter or TiktokenCounter()
    if counter.count_text(summary) <= budget:
        return summary
    if budget == 0:
        return ""
    lines = _summary_lines(summary, counter)
    units = []
    for pos, line in enumerate(lines):
        if counter.count_text(line) > budget:
            line = counter.truncate_text(line, max(budget - 2, 1)).rstrip() + "…"
        units.append(_Unit(pos, "", line, _salience(line, "", pos, len(lines)) or 0.1))
    chosen = [_line(u) for u in _select(units, budget + 1, counter)]  # the last line has no newline
    return _fit(chosen, budget, counter)


_DECISION = re.compile(
    r"\b(?:decid\w*|decision|chose|chosen|choose|will|we'll|i'll|agree\w*|let's|let us|"
    r"plan\w*|going to|settled on|go with|opt\w* for)\b",
    re.I,
)


def _topics(messages: Sequence[BaseMessage]) -> list[str]:
    proper: dict[str, list[int]] = {}
    words: dict[str, list[int]] = {}
    pos = 0
    for message in messages:
        if speaker(message) not in ("user", "assistant"):
            continue
        for sentence in split_sentences(message_text(message)):
            pos += 1
            for span in proper_spans(sentence):
                if not span.initial or span.words > 1:
                    entry = proper.setdefault(span.text, [0, pos])
                    entry[0] += 1
            for word in _WORD.findall(sentence):
                low = word.lower()
                if len(low) > 3 and low not in _STOPWORDS and low not in _NOT_PROPER:
                    entry = words.setdefault(low, [0, pos])
                    entry[0] += 1
    ranked = sorted(proper.items(), key=lambda kv: (-kv[1][0], kv[1][1]))
    in_names = {w.casefold() for name in proper for w in name.split()}
    ranked += sorted(
        ((w, v) for w, v in words.items() if v[0] >= 2 and w not in in_names),
        key=lambda kv: (-kv[1][0], kv[1][1]),
    )
    out: list[str] = []
    seen: set[str] = set()
    for topic, _ in ranked:
        if topic.casefold() not in seen:
            seen.add(topic.casefold())
            out.append(topic)
        if len(out) == MAX_TOPICS:
            break
    return out


def extractive_episode(
    messages: Sequence[BaseMessage], counter: TokenCounter | None = None
) -> EpisodeExtraction:
    """The offline episode: salient sentences, decision sentences, the last answer, topics."""
    counter = counter or TiktokenCounter()
    summary = extractive_summary(messages, max_tokens=EPISODE_SUMMARY_TOKENS, counter=counter)
    texts = [(speaker(m), message_text(m)) for m in messages]
    sentences = [
        (label, s) for label, t in texts if label in ("user", "assistant") for s in split_sentences(t)
    ]
    if not summary:
        first = next((f"{label}: {s}" for label, s in sentences), "")
        summary = first or f"A conversation of {len(messages)} messages without text."
    decisions: list[str] = []
    for _, sentence in sentences:
        if _DECISION.search(sentence) and not sentence.rstrip().endswith("?"):
            if sentence not in decisions:
                decisions.append(sentence)
    outcome = ""
    for label in ("assistant", None):
        for lab, text in reversed(texts):
            first = split_sentences(text)
            if first and (label is None or lab == label):
                outcome = first[0]
                break
        if outcome:
            break
    return EpisodeExtraction(
        summary=summary,
        decisions=decisions[-MAX_DECISIONS:],
        outcome=outcome,
        topics=_topics(messages),
    )


class OfflineExtractor:
    """The :class:`~langchain_tiered_memory.extraction.Extractor` without a model.

    Deterministic English rules for entities and memories and extractive summaries (see
    the module doc). Logs once per process that memory runs offline.
    """

    offline = True
    name = "offline-rules:1"

    def __init__(self, *, counter: TokenCounter | None = None) -> None:
        if counter is not None and not isinstance(counter, TokenCounter):
            raise InvalidInputError(f"counter must be a TokenCounter, got {type(counter).__name__}")
        self._counter = counter
        _notice_once()

    @property
    def counter(self) -> TokenCounter:
        """The token counter (tiktoken ``cl100k_base`` unless one was given)."""
        if self._counter is None:
            self._counter = TiktokenCounter()
        return self._counter

    def extract_turn(
        self,
        messages: Sequence[BaseMessage],
        *,
        summary: str | None = None,
        evicted: Sequence[BaseMessage] = (),
        known_entities: Sequence[str] = (),
        summary_max_tokens: int = 2000,
    ) -> TurnExtraction:
        """Rule-based entities and memories of the turn; with ``evicted``, the summary."""
        turn = _check_messages(messages, "messages")
        gone = _check_messages(evicted, "evicted")
        summary = _check_summary(summary)
        known = _check_names(known_entities)
        budget = _check_tokens(summary_max_tokens, "summary_max_tokens")
        result = extract_rules(turn, known)
        if gone:
            folded = extractive_summary(gone, previous=summary, max_tokens=budget, counter=self.counter)
            result = result.model_copy(update={"summary": folded or None})
        return result

    def extract_episode(self, messages: Sequence[BaseMessage]) -> EpisodeExtraction:
        """The extractive episode of a finished conversation."""
        turn = _check_messages(messages, "messages")
        if not turn:
            raise InvalidInputError("extract_episode needs at least one message")
        return extractive_episode(turn, self.counter)

    def compress_summary(self, summary: str, max_tokens: int) -> str:
        """``summary`` cut to its most salient lines within ``max_tokens``."""
        if not isinstance(summary, str):
            raise InvalidInputError(f"summary must be a str, got {type(summary).__name__}")
        return compress_extractive(summary, max_tokens, self.counter)


__all__ = [
    "EPISODE_SUMMARY_TOKENS",
    "IMPORTANCE",
    "OfflineExtractor",
    "compress_extractive",
    "extract_rules",
    "extractive_episode",
    "extractive_summary",
    "proper_spans",
    "split_sentences",
    "third_person_verb",
    "to_third_person",
]
