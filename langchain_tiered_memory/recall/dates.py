"""Dates and relative times in a query, read against the time it is asked.

"What did I do last weekend?", "two weeks ago", "in May 2023", "on March 3rd": recall keeps
the units said in that span ahead of the others (``recall.py``). Relative expressions
("yesterday", "last week", "N days ago", "last May", "last Friday") are resolved here, by the
calendar; explicit dates ("March 3rd", "2023-05-07", "3 May 2023") by ``dateparser``, a
well-kept library, asked only when the query holds something date-shaped, so that the read
path does not pay for its language detection on every turn. No LLM is involved. A message
that tells and asks is read for the times its question names, and a question that looks
ahead ("what should I cook tonight?") names no past time (:func:`asked_part`).
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from ..text.sentences import is_question, sentences_of

__all__ = ["TimeRange", "asked_part", "asks_current", "asks_when", "resolve", "tells_current", "told_of"]

_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
_MONTHS.update({name.lower(): i for i, name in enumerate(calendar.month_abbr) if name and name != "May"})
_WEEKDAYS = {name.lower(): i for i, name in enumerate(calendar.day_name)}
_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "a few": 3,
    "couple of": 2, "few": 3, "a couple": 2, "couple": 2, "several": 4,
}
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}
_NUMBER = (
    r"(\d+|a couple of|couple of|a couple|couple|a few|few|several|an?|one|two|three|four|five|six|seven|"
    r"eight|nine|ten|eleven|twelve)"
)
_AGO = re.compile(rf"\b{_NUMBER}\s+(day|week|month|year)s?\s+ago\b", re.I)
# "the past few days", "over the last two weeks": from then until now.
_RECENT = re.compile(rf"\b(?:last|past)\s+{_NUMBER}\s+(day|week)s\b", re.I)
# "over the weekend", "at the weekend": the one just gone (or under way), as "this weekend".
_LAST = re.compile(r"\b(last|this|past|over the|on the|at the)\s+(weekend|week|month|year)\b", re.I)
# "on the 5th": the last 5th of a month up to today (not "the 5th of May", nor "the 3rd time").
_ON_NTH = re.compile(r"\bon\s+the\s+(\d{1,2})(?:st|nd|rd|th)\b(?=\s*(?:[?.!,;]|$|of\s+this\s+month\b))", re.I)
# "the other day": a few days back, not said which.
_OTHER_DAY = re.compile(r"\bthe\s+other\s+day\b", re.I)
_LAST_NAMED = re.compile(r"\b(last|this|on)\s+([a-z]+)\b", re.I)
_YEAR = re.compile(r"\b(?:in\s+)?((?:19|20)\d\d)\b", re.I)
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_MONTH_WORD = re.compile(r"\b(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\b\.?", re.I)
_DAY_NUMBER = re.compile(r"\b\d{1,2}(?:st|nd|rd|th)?\b")


_CURRENT = re.compile(
    r"\b(now|nowadays|currently|current|these days|at the moment|at present|presently|"
    r"still|anymore|any more|latest|most recent|lately|recently|today's)\b",
    re.I,
)


#: A question that looks ahead: memory holds no answer said at the time it names.
_LOOKS_AHEAD = re.compile(
    r"\b(will|shall|should|going to|gonna|tomorrow|next|upcoming|coming up|coming over|this coming|"
    r"plan to|planning to)\b|\w'll\b",
    re.IGNORECASE,
)
#: ... unless it also looks back ("what did I plan for tonight?").
_LOOKS_BACK = re.compile(
    r"\b(did|was|were|had|went|said|told|mentioned|ago|last|yesterday|earlier)\b", re.IGNORECASE
)
#: After "last week" and the like, the date it is a part of ("the last week of August",
#: "the last weekend before May 3"): read as that date, not as a week before now.
_OF_DATE = re.compile(r"\s+(of|in|before|after)\s+(\d|" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")", re.I)
#: After a weekday, a habit ("on Thursday evenings"), not a day.
_HABIT = re.compile(r"\s+(mornings|afternoons|evenings|nights)\b")
#: What a statement of how things stand now says: a change ("I've *switched* to tea", "my
#: *new* phone", "I *stopped* doing archery", "I *no longer* eat meat", "I *took up*
#: climbing", "*upgraded* to a Pixel") or the present ("*these days* it's chai", "it's my
#: main thing *now*"). Verbs of change in their usual forms: which ones a person uses to say
#: that something is different now varies, and a missed one leaves its statement to
#: similarity alone.
_CHANGE_VERBS = (
    r"switch(?:ed|es|ing)?|mov(?:e|ed|es|ing)|chang(?:e|ed|es|ing)|stop(?:ped|s|ping)?|quit(?:s|ting)?|"
    r"replac(?:e|ed|es|ing)|drop(?:ped|s|ping)?|ditch(?:ed|es|ing)?|swap(?:ped|s|ping)?|"
    r"upgrad(?:e|ed|es|ing)|start(?:ed|s|ing)?|began|begun|traded in|"
    r"(?:give|gave|given|giving|take|took|taken|taking|pick|picked|picking) up|"
    r"(?:get|got|gotten|getting) into"
)
_TELLS_CURRENT = re.compile(
    r"\b(now|nowadays|currently|these days|at the moment|at present|lately|recently|new|"
    r"no longer|anymore|any more|instead|used to|" + _CHANGE_VERBS + r")\b",
    re.IGNORECASE,
)


#: A request for what memory holds ("Remind me what I did on Sunday"): it asks, as a question does.
_REQUEST = re.compile(
    r"^(?:(?:ok|okay|so|and|hey)[,\s]+)?(?:please\s+)?(?:can you\s+|could you\s+)?"
    r"(?:remind|tell|show|find|search|list|recall|look\s+up|give|summari[sz]e|describe|what|which)\b",
    re.I,
)
#: Someone who did something: a subject and a verb in the past ("I finally finished", "Mel
#: ran", "we went").
_DID = re.compile(
    r"\b(?:I|we|he|she|they|[A-Z][a-z]+)\s+(?:(?:just|finally|already|also|really|recently|actually|then|"
    r"never|even|first)\s+)?(?:[a-z]{2,}ed|ran|went|saw|made|took|got|had|did|came|met|won|lost|bought|"
    r"found|gave|left|told|felt|wrote|began|spent|sent|built|ate|drank|sang|flew|drove|rode|swam|read)\b"
)


def _done(text: str) -> bool:
    """Whether ``text``, which asks no question, tells of something done ("Yesterday I
    finally ran the marathon!", a message ``before_turn`` reads as its query): no request,
    and someone who did something. The time it names is when that happened, not the time
    whose memories it wants: what it calls back (the weeks of training) was said before."""
    return not _REQUEST.match(text.strip()) and bool(_DID.search(text))


#: A question about when something happened.
_ASKS_WHEN = re.compile(r"\bwhen\b|\bhow long ago\b|\bwhat (?:date|day|month|year|time)\b", re.I)


def asks_when(query: str) -> bool:
    """Whether ``query`` asks when something happened ("when did I start painting?", "what
    day was the move?"): its answer is said with a time (:func:`told_of`)."""
    return bool(_ASKS_WHEN.search(query))


def asks_current(query: str) -> bool:
    """Whether ``query`` asks how things stand now ("which phone do I use *these days*?"):
    then what was said last matters more than a near-tie."""
    return bool(_CURRENT.search(query))


def tells_current(text: str) -> bool:
    """Whether ``text`` says that something changed or how it stands now ("I've switched
    to tea", "setting up my new phone"): the statements that answer :func:`asks_current`
    questions, often in words far from the question's."""
    return bool(_TELLS_CURRENT.search(text))


@dataclass(frozen=True)
class TimeRange:
    """A span of time a query asks about: ``[start, end)``, and the words that said it."""

    start: datetime
    end: datetime
    text: str

    def __contains__(self, moment: datetime) -> bool:
        return self.start <= moment < self.end


def _day(moment: datetime) -> datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def _span(start: datetime, days: float, text: str) -> TimeRange:
    return TimeRange(start, start + timedelta(days=days), text)


def _month(year: int, month: int, text: str, tz: timezone | None) -> TimeRange:
    start = datetime(year, month, 1, tzinfo=tz)
    end = datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=tz)
    return TimeRange(start, end, text)


def asked_part(query: str) -> str | None:
    """The part of ``query`` whose times it asks about, or ``None`` when it asks about none.

    A message that tells and asks asks in its questions: "My cousin is coming over on
    Sunday. What should I cook?" asks about no Sunday. A question that looks ahead ("what
    should I cook tonight?", "what's on next week?") asks about no past time either, and
    memory holds the past — unless it also looks back ("what did I plan for tonight?").
    A message that only tells of something done (``_done``) asks about no time: the one it
    names is when that happened.
    """
    sentences = [s for s in sentences_of(query) if s.strip()]
    asking = [s for s in sentences if is_question(s)]
    if not asking and _done(query):
        return None
    part = " ".join(asking) if asking and len(asking) < len(sentences) else query
    if _LOOKS_AHEAD.search(part) and not _LOOKS_BACK.search(part):
        return None
    return part


def resolve(query: str, at: datetime) -> TimeRange | None:
    """The span of time ``query`` asks about (see :func:`asked_part`), read against ``at``
    (aware), or ``None``.

    Past readings are preferred: memory holds what was said. A day-precise expression gets
    a whole day ("yesterday"), a vague one a wider span ("two weeks ago": the week around
    it), so a unit said near the date still counts. A weekday said as a habit ("on Thursday
    evenings") names no day.
    """
    if not query:
        return None
    asked = asked_part(query)
    if asked is None:
        return None
    return _read(asked, at)


def told_of(text: str, at: datetime) -> TimeRange | None:
    """The past time a message said ``at`` tells of, or ``None``: "Yesterday my neighbour
    and I ran a gardening class", said on the 17th, tells of the 16th. People report what
    they did in words relative to when they say it ("last weekend", "two days ago"), and a
    question names the time it happened ("on the 16th"): what was said a day or a month
    later is still about then. Only what the message tells counts: its questions name
    times they ask about, and plans ("next week") are not what happened."""
    statements = [s for s in sentences_of(text) if s.strip() and not is_question(s)]
    if not statements:
        return None
    told = " ".join(statements)
    if _LOOKS_AHEAD.search(told) and not _LOOKS_BACK.search(told):
        return None
    return _read(told, at)


def _count(raw: str) -> int:
    """How many a number in a relative time says ("3", "a couple of", "few")."""
    return int(raw) if raw.isdigit() else _NUMBERS.get(raw, 1)


def _read(query: str, at: datetime) -> TimeRange | None:
    """The span of time ``query`` names, read against ``at`` (see :func:`resolve`)."""
    tz = at.tzinfo
    today = _day(at)
    text = query.lower()

    match = _AGO.search(text)
    if match:
        raw = match.group(1)
        n = _count(raw)
        unit = _UNIT_DAYS[match.group(2)]
        centre = today - timedelta(days=n * unit)
        slack = {1: 1, 7: 4, 30: 15, 365: 120}[unit]
        return TimeRange(centre - timedelta(days=slack), centre + timedelta(days=slack + 1), match.group(0))

    match = _RECENT.search(text)
    if match and not _OF_DATE.match(text, match.end()):  # not "the last two weeks of May"
        raw = match.group(1)
        n = _count(raw)
        days = n * _UNIT_DAYS[match.group(2)]
        return TimeRange(today - timedelta(days=days), today + timedelta(days=1), match.group(0))

    # Before "yesterday", which it says too.
    if re.search(r"\bday before yesterday\b", text):
        return _span(today - timedelta(days=2), 1, "the day before yesterday")
    if re.search(r"\b(yesterday|last night)\b", text):
        return _span(today - timedelta(days=1), 1, "yesterday")
    if re.search(r"\b(today|this morning|tonight|this afternoon|this evening)\b", text):
        return _span(today, 1, "today")

    match = _OTHER_DAY.search(text)
    if match:
        return TimeRange(today - timedelta(days=10), today, match.group(0))

    match = _LAST.search(text)
    if match and (_OF_DATE.match(text, match.end()) or (match.group(1) in ("over the", "on the", "at the")
                                                        and match.group(2) != "weekend")):
        match = None  # "the last week of August 2023": a part of the date named next
    if match:
        which, what = match.group(1), match.group(2)
        monday = today - timedelta(days=today.weekday())
        if what == "weekend":
            saturday = monday - timedelta(days=2) if which in ("last", "past") or today.weekday() < 5 else monday + timedelta(days=5)
            return _span(saturday, 2, match.group(0))
        if what == "week":
            return _span(monday - timedelta(days=7), 7, match.group(0)) if which != "this" else _span(monday, 7, match.group(0))
        if what == "month":
            if which == "this":
                return _month(today.year, today.month, match.group(0), tz)  # type: ignore[arg-type]
            year, month = (today.year, today.month - 1) if today.month > 1 else (today.year - 1, 12)
            return _month(year, month, match.group(0), tz)  # type: ignore[arg-type]
        year = today.year - (which != "this")
        return TimeRange(datetime(year, 1, 1, tzinfo=tz), datetime(year + 1, 1, 1, tzinfo=tz), match.group(0))

    for match in _LAST_NAMED.finditer(text):
        which, name = match.group(1), match.group(2)
        if name in _WEEKDAYS and _HABIT.match(text, match.end()):
            continue
        if name in _WEEKDAYS:
            back = (today.weekday() - _WEEKDAYS[name]) % 7 or 7
            if which == "this" and back == 7:
                back = 0
            return _span(today - timedelta(days=back), 1, match.group(0))
        if name in _MONTHS and which in ("last", "this"):
            month = _MONTHS[name]
            year = today.year if month < today.month or (which == "this" and month == today.month) else today.year - 1
            return _month(year, month, match.group(0), tz)  # type: ignore[arg-type]

    match = _ON_NTH.search(text)
    if match and 1 <= int(match.group(1)) <= 31:
        day, month, year = int(match.group(1)), today.month, today.year
        while True:  # the last such day up to today (not every month has a 31st)
            if day <= calendar.monthrange(year, month)[1] and datetime(year, month, day, tzinfo=tz) <= today:
                return _span(datetime(year, month, day, tzinfo=tz), 1, match.group(0))
            year, month = (year, month - 1) if month > 1 else (year - 1, 12)

    explicit = _explicit(query, at)
    if explicit is not None:
        return explicit
    match = _YEAR.search(text)
    if match:
        year = int(match.group(1))
        return TimeRange(datetime(year, 1, 1, tzinfo=tz), datetime(year + 1, 1, 1, tzinfo=tz), match.group(0))
    return None


def _explicit(query: str, at: datetime) -> TimeRange | None:
    """An explicit date or month in ``query`` (through ``dateparser``), as a day or a month."""
    tz = at.tzinfo
    iso = _ISO.search(query)
    if iso:
        try:
            day = datetime(int(iso.group(1)), int(iso.group(2)), int(iso.group(3)), tzinfo=tz)
        except ValueError:
            return None
        return _span(day, 1, iso.group(0))
    month = _MONTH_WORD.search(query)
    if month is None:
        return None
    word = month.group(1).lower()
    if word == "may" and not re.search(
        r"\b(in|last|this|of|on|since|until|during|early|late|mid)\s+may\b|\bmay\s+(\d|of)|\b\d{1,2}(st|nd|rd|th)?\s+may\b",
        query, re.I,
    ):
        return None  # the verb, not the month
    from dateparser.search import search_dates  # type: ignore[import-untyped]

    settings = {
        "RELATIVE_BASE": at.astimezone(timezone.utc).replace(tzinfo=None),
        "PREFER_DATES_FROM": "past",
        "RETURN_AS_TIMEZONE_AWARE": False,
    }
    found = search_dates(query, languages=["en"], settings=settings) or []
    for words, moment in found:
        if not _MONTH_WORD.search(words):
            continue
        moment = moment.replace(tzinfo=tz)
        if _DAY_NUMBER.search(_MONTH_WORD.sub(" ", words).replace(str(moment.year), " ")):
            return _span(_day(moment), 1, words)
        return _month(moment.year, moment.month, words, tz)  # type: ignore[arg-type]
    return None
