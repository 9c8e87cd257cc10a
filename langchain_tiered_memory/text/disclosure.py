"""What a person says of themselves that a later message may lean on: their state, goal,
value, or the cause of a change in them.

"After learning to say no, I've felt a lot less stressed" (a cause and a state), "I'm
saving to buy a van" (a goal), "honesty matters to me" (a value): months later, "I ended up
volunteering for that project, and now I'm totally overwhelmed" depends on it without sharing
a word. Such a statement is worth more as memory than chatter: recall reads it as a feature of
the turn (:mod:`..recall.features`), and the offline rules keep it as a short statement with
its source turn (``extraction/offline``).

English patterns of the first person, grouped by what they disclose; a statement must speak
of its speaker (I, my, me). No pattern names a topic.
"""

from __future__ import annotations

import re

from ..vocabulary import DISCLOSURES

__all__ = ["KINDS", "disclosed", "disclosed_beyond", "discloses"]

#: What a statement discloses (:data:`..vocabulary.DISCLOSURES`), in the order
#: :func:`disclosed` tries them: a cause first ("since my bike was stolen I …" tells what
#: changed and why).
KINDS = ("cause", "goal", "value", "state")
assert set(KINDS) == set(DISCLOSURES)

_FEELINGS = (
    r"stressed|anxious|nervous|worried|happy|happier|calm|calmer|tired|exhausted|overwhelmed|lonely|proud|"
    r"scared|afraid|terrified|excited|frustrated|relieved|confident|grateful|thankful|sad|angry|upset|"
    r"burn(?:ed|t) out|comfortable|uncomfortable|uneasy|insecure|hopeful|hopeless|stuck|lost|motivated|"
    r"unmotivated|energized|drained|content|fulfilled|restless|bored|guilty|ashamed|embarrassed|jealous|"
    r"heartbroken|devastated|thrilled|optimistic|pessimistic|isolated|supported|appreciated|safe|unsafe|"
    r"free|freer|lighter|better|worse|stronger|weaker|healthier|more (?:relaxed|focused|patient|careful|"
    r"present|balanced|organized|organised)|less (?:stressed|anxious|worried|lonely|patient|tense)|"
    r"at peace|on edge|in a rut|out of (?:place|sorts)|like myself"
)
_ADVERBS = r"(?:(?:so|really|a lot|much|way|more|less|very|pretty|kind of|sort of|always|still|now|finally|often|quite|super|extremely|incredibly|totally|a bit|a little)\s+)*"
_PATTERNS: dict[str, re.Pattern[str]] = {
    "cause": re.compile(
        r"\b(?:that(?:'s|’s| is) (?:why|how) i|(?:is|was) (?:the reason|why) i|the reason i|"
        r"(?:made|makes|pushed|got|taught|led|forced|inspired|encouraged|motivated|convinced|helped) me\b|"
        r"ever since|since (?:then|my|i\b|the|that|getting|losing|moving|starting)|"
        r"after (?:i\b|my|that|the|learning|getting|losing|moving|starting|seeing|realizing|realising|"
        r"finding|being|having|breaking|failing|watching|hearing|reading|going)|because\b|ever since|\bsince[.!]|"
        r"when (?:my|i|we|our)\b[^.!?]{3,80},\s*(?:i|we)\b|i now\b|"
        r"so now i|now i (?:always|never|make sure|try|only|just)|"
        r"i (?:started|stopped|quit|switched|gave up|decided|began|learned|learnt|realized|realised|swore|vowed)\b|"
        r"i(?:'ve|’ve| have) (?:started|stopped|quit|switched|learned|learnt|decided|become|been trying|"
        r"given up|begun|realized|realised|changed))",
        re.IGNORECASE,
    ),
    "goal": re.compile(
        r"\b(?:(?:i (?:really )?(?:want|hope|plan|aim|intend|need|mean|wish|dream|long) to|i(?:'d|’d| would) (?:love|like) to)"
        # "I'd like to know more", "I want to ask you": a turn of the talk, not a goal.
        r"(?!\s+(?:know|hear|ask|talk|say|share|thank|add|mention|clarify|check|point|remind|tell|show|understand|"
        r"discuss|confirm|see (?:if|whether|what|how)|make sure i understand)\b)|"
        r"my (?:goal|dream|plan|aim|hope|priority|resolution|target|mission) (?:is|was|for)|"
        r"i(?:'m|’m| am) (?:trying|working|saving|planning|hoping|determined|aiming|learning|preparing|"
        r"training|studying|getting ready|looking)(?: up)? (?:to|for|on)|i(?:'ve|’ve| have) (?:set|made) (?:a |myself )?(?:goal|plan))",
        re.IGNORECASE,
    ),
    "value": re.compile(
        r"\b(?:i (?:really |truly |deeply )?(?:value|believe|cherish|respect|admire|prioriti[sz]e)\b|"
        r"(?:matters|mattered|means|meant) (?:a lot |so much |the world |everything |most )?to me|"
        r"(?:important|precious|sacred|non-negotiable|essential) (?:to|for) me|"
        r"i (?:really |deeply )?care (?:a lot |so much |deeply )?about|"
        r"i(?:'d|’d| would) never|i (?:always|never) (?:make sure|let|compromise|skip|miss)|"
        r"for me,? (?:it(?:'s|’s| is)|the most)|what i (?:value|care about|believe))",
        re.IGNORECASE,
    ),
    "state": re.compile(
        rf"\b(?:i(?:'m|’m| am|'ve been|’ve been| have been| was| feel| felt|'ve felt|’ve felt| get| got| keep "
        rf"feeling)\s+{_ADVERBS}(?:feeling\s+)?{_ADVERBS}(?:{_FEELINGS})\b|"
        rf"(?:made|makes|leaves|left) me (?:feel )?{_ADVERBS}(?:{_FEELINGS})\b|"
        r"i(?:'ve|’ve| have) been (?:struggling|dealing|coping|going through|battling|having a hard time)|"
        r"i(?:'m|’m| am) (?:going through|dealing with|struggling with|recovering from|coping with))",
        re.IGNORECASE,
    ),
}
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i’m|i've|i’ve|i'd|i’d|my|me|myself)\b", re.IGNORECASE)


def disclosed(text: str) -> str | None:
    """What ``text`` discloses of its speaker (one of :data:`KINDS`), or ``None``."""
    if not _FIRST_PERSON.search(text):
        return None
    for kind in KINDS:
        if _PATTERNS[kind].search(text):
            return kind
    return None


def disclosed_beyond(text: str) -> tuple[str, str] | None:
    """What ``text`` discloses (as :func:`disclosed`) and what it says beyond the cue.

    "I started a few days ago" has the cue of a change ("I started") and nothing after it
    but a time: the caller decides whether the rest says enough to keep.
    """
    if not _FIRST_PERSON.search(text):
        return None
    for kind in KINDS:
        m = _PATTERNS[kind].search(text)
        if m:
            return kind, f"{text[: m.start()]} {text[m.end():]}".strip()
    return None


def discloses(text: str) -> bool:
    """Whether ``text`` discloses its speaker's state, goal, value or a cause of a change."""
    return disclosed(text) is not None
