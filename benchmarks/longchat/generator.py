"""A deterministic, seeded generator of long multi-session conversations with questions.

Each persona talks with an assistant over ``sessions`` dated sessions (days to weeks
apart, spanning months). Facts are planted in user turns among distractor chatter; each
fact yields one question whose evidence is the ids of the turns that state it:

* ``preference``, ``place``, ``person``, ``plan``, ``event``: one statement, asked with a
  paraphrase (the question names the category, the statement the value), often beside a
  near-miss about someone else ("my coworker can't stand dill");
* ``update``: a value, mentioned again, then replaced in a later session; the answer is
  the new value, ``stale_answer`` the old;
* ``multi_hop``: "my sister Ana" in one session, "Ana just moved to Porto" in a later one;
  "where does my sister live?";
* ``temporal``: "when did I ...?" (the answer is the date of the session that said
  "today"), or a question relative to when it is asked — "what did I do last weekend?",
  "what did I cook two weeks ago?", "... yesterday?" — about a topic the user mentioned on
  other dates too (with other values). These are often asked mid-way through the
  conversation: a system that knows the question's date should ignore later turns.

The same arguments give byte-identical data: every choice comes from one
``random.Random`` per persona, seeded from ``seed`` and the persona's index.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import date, datetime, time, timedelta, timezone
from pathlib import Path
from typing import Any

from . import chatter, templates
from .vocab import CATEGORIES

KINDS = ("preference", "place", "person", "plan", "event", "update", "multi_hop", "temporal")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
FORMAT = "longchat/1"


# --- data ------------------------------------------------------------------------------


@dataclass
class Turn:
    """One message. ``id`` is the message id used when it is stored."""

    id: str
    session_id: str
    speaker: str  # "user" | "assistant"
    text: str
    at: datetime

    @property
    def indexed_text(self) -> str:
        """The text as every system indexes it: ``"<speaker>: <text>"``."""
        return f"{self.speaker}: {self.text}"


@dataclass
class Session:
    id: str
    user_id: str
    index: int
    date: datetime  # when it started
    turns: list[Turn] = field(default_factory=list)


@dataclass
class Question:
    id: str
    user_id: str
    kind: str
    text: str
    asked_at: datetime
    evidence_ids: list[str]
    answer: str
    stale_answer: str | None = None
    #: Other spellings that count as the answer (the date forms of "when" questions).
    aliases: list[str] = field(default_factory=list)
    #: For temporal questions: "when", "last_weekend", "yesterday", "2_weeks_ago", "3_weeks_ago".
    relative: str | None = None
    template: str = ""

    @property
    def accepted(self) -> list[str]:
        return [self.answer, *self.aliases]


@dataclass
class Conversation:
    user_id: str
    persona: str
    sessions: list[Session]
    questions: list[Question]

    @property
    def turns(self) -> list[Turn]:
        return [t for s in self.sessions for t in s.turns]

    def turn_map(self) -> dict[str, Turn]:
        return {t.id: t for t in self.turns}


# --- answer matching -------------------------------------------------------------------


def _pattern(value: str) -> re.Pattern[str]:
    return re.compile(r"(?<!\w)" + re.escape(value) + r"(?!\w)", re.IGNORECASE)


def find(value: str, text: str) -> int:
    """Position of ``value`` in ``text`` as a whole word, case-insensitive; -1 if absent."""
    m = _pattern(value).search(text)
    return -1 if m is None else m.start()


def contains(value: str, text: str) -> bool:
    return find(value, text) >= 0


def contains_any(values: Iterable[str], text: str) -> bool:
    return any(contains(v, text) for v in values)


def date_forms(d: date) -> list[str]:
    """Spellings of a date that count as it: ISO, "March 4, 2024", "4 March 2024", ..."""
    month = d.strftime("%B")
    return [
        d.isoformat(),
        f"{month} {d.day}, {d.year}",
        f"{d.day} {month} {d.year}",
        f"{month} {d.day}",
        f"{d.day} {month}",
        f"{d.strftime('%b')} {d.day}",
        f"{d.year}/{d.month:02d}/{d.day:02d}",
        f"{d.day:02d}/{d.month:02d}/{d.year}",
    ]


# --- generation ------------------------------------------------------------------------


class _Values:
    """Per-persona pools: each value is used once in a conversation."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.pools = {name: list(values) for name, values in CATEGORIES.items()}
        for pool in self.pools.values():
            rng.shuffle(pool)

    def take(self, category: str) -> str:
        if category == "name":
            category = self.rng.choice(("female", "male"))
        pool = self.pools[category]
        if not pool:
            raise _NoRoom(f"out of {category} values")
        return pool.pop()

    def name(self, gender: str = "any") -> tuple[str, str]:
        if gender == "any":
            gender = self.rng.choice(("female", "male"))
        return self.take(gender), gender


class _NoRoom(Exception):
    pass


@dataclass
class _Exchange:
    user: str
    assistant: str
    key: int = 0


class _Planner:
    """Free exchange slots per session; facts claim slots, chatter fills the rest."""

    def __init__(self, rng: random.Random, dates: list[datetime], sizes: list[int]) -> None:
        self.rng = rng
        self.dates = dates
        self.free = {s: list(range(n)) for s, n in enumerate(sizes)}
        self.placed: dict[tuple[int, int], _Exchange] = {}
        self._keys = 0

    def sessions(self, pred: Callable[[int], bool] = lambda s: True, need: int = 1) -> list[int]:
        return [s for s in self.free if len(self.free[s]) >= need and pred(s)]

    def day(self, s: int) -> date:
        return self.dates[s].date()

    def put(self, s: int, ex: _Exchange) -> _Exchange:
        slots = self.free[s]
        slot = slots.pop(self.rng.randrange(len(slots)))
        self._keys += 1
        ex.key = self._keys
        self.placed[(s, slot)] = ex
        return ex


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _article(value: str) -> str:
    return ("an " if value[:1].lower() in "aeiou" else "a ") + value


def _fill(template: str, **values: str) -> str:
    full = dict(values)
    for k, v in values.items():
        full[_cap(k)] = _cap(v)
    return template.format_map(full)


def _pronouns(gender: str) -> dict[str, str]:
    return {"pron": "she", "poss": "her"} if gender == "female" else {"pron": "he", "poss": "his"}


@dataclass
class _Pending:
    """A question waiting for its evidence exchanges to get turn ids."""

    kind: str
    text: str
    asked_at: datetime | None  # None: after the last session
    evidence: list[_Exchange]
    answer: str
    stale: str | None = None
    aliases: list[str] = field(default_factory=list)
    relative: str | None = None
    template: str = ""


class _PersonaBuilder:
    def __init__(self, rng: random.Random, planner: _Planner, values: _Values) -> None:
        self.rng = rng
        self.plan = planner
        self.values = values
        self.questions: list[_Pending] = []

    # helpers ------------------------------------------------------------------------

    def who(self, possessive: bool = False) -> str:
        """Someone else; ``possessive``: a form that reads well before "'s"."""
        name, _ = self.values.name()
        forms = [w for w in templates.WHO if w.startswith("my ") and "'s" not in w] if possessive else templates.WHO
        return self.rng.choice(forms).format(n=name)

    def say(self, s: int, user: str, assistant: str, wrap: bool = True) -> _Exchange:
        if wrap and self.rng.random() < 0.35:
            if self.rng.random() < 0.5:
                user = self.rng.choice(templates.WRAP_PREFIXES) + user
            else:
                user = user + self.rng.choice(templates.WRAP_SUFFIXES)
        return self.plan.put(s, _Exchange(user, assistant))

    def reply(self, restating: Sequence[str], **values: str) -> str:
        if self.rng.random() < 0.5:
            return _fill(self.rng.choice(restating), **values)
        return self.rng.choice(templates.GENERIC_ACKS)

    def question(self, key: str, paraphrases: Sequence[str], statement: int | None = None) -> str:
        """A paraphrase, or (``ECHO_RATE`` of the time) a question echoing the statement."""
        echoes = templates.ECHOES.get(key, ())
        if echoes and self.rng.random() < templates.ECHO_RATE:
            return echoes[statement] if statement is not None else self.rng.choice(echoes)
        return self.rng.choice(paraphrases)

    def pick(self, sessions: list[int]) -> int:
        if not sessions:
            raise _NoRoom("no session fits")
        return self.rng.choice(sessions)

    def near_miss(self, spec: templates.FactSpec, category: str, s_avoid: int | None = None) -> None:
        if self.rng.random() > 0.7 or not spec.near_misses:
            return
        value = self.values.take(category)
        sessions = self.plan.sessions(lambda s: s != s_avoid) or self.plan.sessions()
        if not sessions:
            return
        s = self.rng.choice(sessions)
        template = self.rng.choice(spec.near_misses)
        who = self.who(possessive="'s" in template.split("}", 1)[-1][:2])
        text = _fill(template, v=value, who=who, a_v=_article(value))
        self.say(s, text, self.rng.choice(templates.GENERIC_ACKS))

    # facts --------------------------------------------------------------------------

    def fact(self, spec: templates.FactSpec) -> None:
        s = self.pick(self.plan.sessions())
        if spec.category == "name":
            value, gender = self.values.name()
        else:
            value, gender = self.values.take(spec.category), "any"
        extra = {"v": value, "a_v": _article(value), **_pronouns(gender)}
        i = self.rng.randrange(len(spec.statements))
        ex = self.say(s, _fill(spec.statements[i], **extra), self.reply(spec.replies, **extra))
        self.near_miss(spec, spec.category, s)
        question = self.question(spec.key, spec.questions, i)
        self.questions.append(_Pending(spec.kind, question, None, [ex], value, template=spec.key))

    def update(self, spec: templates.UpdateSpec) -> None:
        n = len(self.plan.dates)
        gap = 2 if n >= 4 else 1
        olds = self.plan.sessions(lambda s: s + gap < n)
        s_old = self.pick(olds)
        s_new = self.pick(self.plan.sessions(lambda s: s >= s_old + gap))
        old, new = self.values.take(spec.category), self.values.take(spec.category)
        kv = {"old": old, "new": new}
        self.say(s_old, _fill(self.rng.choice(spec.old_statements), **kv), self.reply(spec.old_replies, **kv))
        between = self.plan.sessions(lambda s: s_old < s < s_new)
        if between and self.rng.random() < 0.7:
            s_mid = self.rng.choice(between)
            self.say(s_mid, _fill(self.rng.choice(spec.old_mentions), **kv), self.rng.choice(templates.GENERIC_ACKS))
        i = self.rng.randrange(len(spec.new_statements))
        ex = self.say(s_new, _fill(spec.new_statements[i], **kv), self.reply(spec.new_replies, **kv))
        question = self.question(spec.key, spec.questions, i)
        self.questions.append(_Pending("update", question, None, [ex], new, stale=old, template=spec.key))

    def multi_hop(self, spec: templates.HopSpec, used_relations: list[str]) -> None:
        n = len(self.plan.dates)
        options = [r for r in templates.RELATIONS if r[0] not in used_relations]
        rel, gender = self.rng.choice(options)
        s_a = self.pick(self.plan.sessions(lambda s: s + 1 < n))
        s_b = self.pick(self.plan.sessions(lambda s: s > s_a))
        name, gender = self.values.name(gender)
        value = self.values.take(spec.category)
        kv = {"rel": rel, "name": name, "v": value, "a_v": _article(value), **_pronouns(gender)}
        a = self.say(s_a, _fill(self.rng.choice(templates.HOP_INTROS), **kv),
                     _fill(self.rng.choice(templates.HOP_INTRO_REPLIES), **kv))
        b = self.say(s_b, _fill(self.rng.choice(spec.statements), **kv), self.reply(spec.replies, **kv))
        used_relations.append(rel)
        self.questions.append(
            _Pending("multi_hop", _fill(self.rng.choice(spec.questions), **kv), None, [a, b], value,
                     template=spec.key)
        )
        # A near miss: another relative with a value of the same category, in one turn.
        if self.rng.random() < 0.6:
            others = [r for r in templates.RELATIONS if r[0] not in used_relations]
            rel2, g2 = self.rng.choice(others)
            name2, g2 = self.values.name(g2)
            v2 = self.values.take(spec.category)
            kv2 = {"rel": rel2, "name": name2, "v": v2, "a_v": _article(v2), **_pronouns(g2)}
            kv2["name"] = f"my {rel2} {name2}"
            text = _cap(_fill(self.rng.choice(spec.statements), **kv2))
            s = self.pick(self.plan.sessions())
            self.say(s, text, self.rng.choice(templates.GENERIC_ACKS), wrap=False)
            used_relations.append(rel2)

    def when(self, spec: templates.MilestoneSpec) -> None:
        s = self.pick(self.plan.sessions())
        ex = self.say(s, self.rng.choice(spec.statements), self.rng.choice(spec.replies))
        d = self.plan.day(s)
        self.questions.append(
            _Pending("temporal", self.question(spec.key, spec.questions), None, [ex], d.isoformat(),
                     aliases=date_forms(d)[1:], relative="when", template=spec.key)
        )

    def last_weekend(self) -> None:
        weekend = self.plan.sessions(lambda s: self.plan.day(s).weekday() >= 5)
        s = self.pick(weekend)
        d = self.plan.day(s)
        value = self.values.take("activity")
        kv = {"v": value, "day": WEEKDAYS[d.weekday()]}
        ex = self.say(s, _fill(self.rng.choice(templates.WEEKEND_STATEMENTS), **kv),
                      self.rng.choice(templates.WEEKEND_REPLIES))
        # Asked Monday to Wednesday after that weekend.
        monday = d + timedelta(days=7 - d.weekday())
        asked = _at(monday + timedelta(days=self.rng.randrange(3)), self.rng)
        # Other days out, a week or more away: last weekend's is the one that answers.
        far = self.plan.sessions(lambda j: abs((self.plan.day(j) - d).days) >= 7)
        for j in self.rng.sample(far, min(len(far), 2)):
            other = self.values.take("activity")
            dj = self.plan.day(j)
            text = _fill(self.rng.choice(templates.WEEKEND_STATEMENTS), v=other, day=WEEKDAYS[dj.weekday()])
            self.say(j, text, self.rng.choice(templates.WEEKEND_REPLIES))
        self.questions.append(
            _Pending("temporal", self.rng.choice(templates.WEEKEND_QUESTIONS), asked, [ex], value,
                     relative="last_weekend", template="weekend.activity")
        )

    def ago(self, spec: templates.TopicSpec, relative: str) -> None:
        days = {"yesterday": (1, 3), "2_weeks_ago": (14, 6), "3_weeks_ago": (21, 6)}
        offset, distance = days[relative]
        s = self.pick(self.plan.sessions())
        d = self.plan.day(s)
        if relative != "yesterday":
            offset += self.rng.choice((-1, 0, 1))
        asked = _at(d + timedelta(days=offset), self.rng)
        value = self.values.take(spec.category)
        ex = self.say(s, _fill(self.rng.choice(spec.statements), v=value), self.rng.choice(spec.replies))
        far = self.plan.sessions(lambda j: abs((self.plan.day(j) - d).days) >= distance)
        for j in self.rng.sample(far, min(len(far), 2)):
            other = self.values.take(spec.category)
            self.say(j, _fill(self.rng.choice(spec.statements), v=other), self.rng.choice(spec.replies))
        question = _fill(self.question(spec.key, spec.questions), ago=templates.AGO[relative])
        self.questions.append(
            _Pending("temporal", question, asked, [ex], value, relative=relative, template=spec.key)
        )


def _at(d: date, rng: random.Random) -> datetime:
    return datetime.combine(d, time(rng.randrange(8, 21), rng.randrange(60)), tzinfo=timezone.utc)


def _session_dates(rng: random.Random, n: int) -> list[datetime]:
    """Days to weeks apart over months; about a third of the sessions fall on a weekend."""
    start = date(2024, 1, 8) + timedelta(days=rng.randrange(90))
    weekend = set(rng.sample(range(n), max(1, round(n / 3)))) if n else set()
    out: list[datetime] = []
    d = start
    for i in range(n):
        if i:
            d = d + timedelta(days=rng.choice((2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 17, 21)))
        if i in weekend and d.weekday() < 5:
            d = d + timedelta(days=(5 - d.weekday()) + rng.randrange(2))
        out.append(datetime.combine(d, time(rng.randrange(7, 20), rng.randrange(60)), tzinfo=timezone.utc))
    return out


def _session_sizes(rng: random.Random, n: int, turns_per_session: int, min_turns: int) -> list[int]:
    """Exchanges per session: about ``turns_per_session / 2``, at least ``min_turns / 2`` in all."""
    half = max(2, turns_per_session // 2)
    sizes = [max(2, round(half * rng.uniform(0.75, 1.25))) for _ in range(n)]
    while 2 * sum(sizes) < min_turns:
        sizes[rng.randrange(n)] += 1
    return sizes


def _chatter(rng: random.Random) -> Callable[[], tuple[str, str]]:
    """Distractor exchanges: each bank is used without repeats before composed tips."""
    bank = list(chatter.HELP) + list(chatter.SMALL_TALK)
    rng.shuffle(bank)
    tips = [(p, t) for p in range(len(chatter.TIP_PHRASES)) for t in range(len(chatter.TIP_TOPICS))]
    rng.shuffle(tips)

    def next_one() -> tuple[str, str]:
        if bank and (not tips or rng.random() < 0.65):
            return bank.pop()
        if not tips:
            return rng.choice(chatter.SMALL_TALK)
        p, t = tips.pop()
        topic, advice = chatter.TIP_TOPICS[t]
        a, b, c = (x[0].lower() + x[1:] for x in advice)
        return (chatter.TIP_PHRASES[p].format(t=topic), rng.choice(chatter.TIP_REPLIES).format(a=a, b=b, c=c))

    return next_one


def _elaborate(rng: random.Random, reply: str) -> str:
    """A reply with 0-4 of the assistant's usual extra sentences around it."""
    n = rng.choice((0, 1, 2, 2, 3, 3, 4))
    extra = rng.sample(chatter.ELABORATIONS, n)
    if extra and rng.random() < 0.25:
        return " ".join([extra[0], reply, *extra[1:]])
    return " ".join([reply, *extra])


def _quota(rng: random.Random, total: int) -> list[str]:
    """``total`` question kinds, as even across the eight kinds as it gets."""
    kinds = list(KINDS)
    rng.shuffle(kinds)
    return [kinds[i % len(kinds)] for i in range(total)]


def _persona(
    rng: random.Random, index: int, sessions: int, turns_per_session: int, questions: int,
    min_turns: int,
) -> Conversation:
    user_id = f"user{index:02d}"
    values = _Values(rng)
    persona, _ = values.name()
    dates = _session_dates(rng, sessions)
    sizes = _session_sizes(rng, sessions, turns_per_session, min_turns)
    planner = _Planner(rng, dates, sizes)
    builder = _PersonaBuilder(rng, planner, values)

    facts = {k: [f for f in templates.FACTS if f.kind == k] for k in KINDS[:5]}
    for pool in facts.values():
        rng.shuffle(pool)
    updates = list(templates.UPDATES)
    hops = list(templates.HOPS)
    milestones = list(templates.MILESTONES)
    topics = list(templates.TOPICS)
    for pool in (updates, hops, milestones, topics):
        rng.shuffle(pool)
    # Rotated across personas, so that every relative form is asked about as often.
    modes = ["last_weekend", "when", "2_weeks_ago", "yesterday", "when", "3_weeks_ago"]
    turn = (3 * index) % len(modes)
    temporal_modes = list(reversed(modes[turn:] + modes[:turn]))
    used_relations: list[str] = []
    # Facts take at most 60% of the exchanges: chatter keeps the rest.
    limit = 0.6 * sum(sizes)

    for kind in _quota(rng, 3 * questions):
        used = sum(sizes) - sum(len(v) for v in planner.free.values())
        if len(builder.questions) >= questions or used > limit:
            break
        try:
            if kind in facts:
                if facts[kind]:
                    builder.fact(facts[kind].pop())
            elif kind == "update":
                if updates:
                    builder.update(updates.pop())
            elif kind == "multi_hop":
                if hops and len(used_relations) < len(templates.RELATIONS) - 2:
                    builder.multi_hop(hops.pop(), used_relations)
            else:
                mode = temporal_modes.pop() if temporal_modes else "when"
                if mode == "when":
                    if milestones:
                        builder.when(milestones.pop())
                elif mode == "last_weekend":
                    builder.last_weekend()
                elif topics:
                    builder.ago(topics.pop(), mode)
        except _NoRoom:
            continue

    next_chatter = _chatter(rng)
    session_list: list[Session] = []
    where: dict[int, str] = {}
    for s, (start, size) in enumerate(zip(dates, sizes)):
        sid = f"{user_id}-s{s:02d}"
        session = Session(sid, user_id, s, start)
        at = start
        for e in range(size):
            ex = planner.placed.get((s, e))
            if ex is None:
                user, assistant = next_chatter()
            else:
                user, assistant = ex.user, ex.assistant
            assistant = _elaborate(rng, assistant)
            for k, (speaker, text) in enumerate((("user", user), ("assistant", assistant))):
                tid = f"{sid}-t{2 * e + k:03d}"
                session.turns.append(Turn(tid, sid, speaker, text, at))
                at = at + timedelta(seconds=rng.randrange(20, 150))
            if ex is not None:
                where[ex.key] = session.turns[-2].id
        session_list.append(session)

    last = session_list[-1].turns[-1].at if session_list and session_list[-1].turns else dates[-1]
    out: list[Question] = []
    for i, p in enumerate(builder.questions):
        asked = p.asked_at or _at(last.date() + timedelta(days=rng.randrange(1, 5)), rng)
        out.append(Question(
            id=f"{user_id}-q{i:02d}", user_id=user_id, kind=p.kind, text=p.text, asked_at=asked,
            evidence_ids=[where[e.key] for e in p.evidence], answer=p.answer,
            stale_answer=p.stale, aliases=p.aliases, relative=p.relative, template=p.template,
        ))
    return Conversation(user_id, persona, session_list, out)


def generate(
    seed: int = 0,
    personas: int = 8,
    sessions: int = 12,
    turns_per_session: int = 24,
    questions_per_persona: int = 25,
    long_persona_turns: int = 320,
) -> list[Conversation]:
    """Conversations of ``personas`` users, ``sessions`` sessions each, about
    ``turns_per_session`` turns a session (user and assistant alternate), and up to
    ``questions_per_persona`` questions each (fewer when the conversation is too short to
    hold them among its chatter). The first persona has at least ``long_persona_turns``
    turns (0: no minimum), for cost series."""
    if personas < 1 or sessions < 1 or turns_per_session < 2:
        raise ValueError("need at least one persona, one session and two turns a session")
    out = []
    for i in range(personas):
        rng = random.Random(f"longchat:{seed}:{i}")
        minimum = long_persona_turns if i == 0 else 0
        out.append(_persona(rng, i, sessions, turns_per_session, questions_per_persona, minimum))
    return out


# --- JSON ------------------------------------------------------------------------------


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def dumps(conversations: Sequence[Conversation], meta: dict[str, Any] | None = None) -> str:
    """The conversations as JSON text (stable: the same data gives the same bytes)."""
    doc = {"format": FORMAT, "meta": meta or {}, "conversations": [asdict(c) for c in conversations]}
    return json.dumps(doc, default=_json_default, ensure_ascii=False, indent=1, sort_keys=True) + "\n"


def dump(conversations: Sequence[Conversation], path: str | Path, meta: dict[str, Any] | None = None) -> None:
    Path(path).write_text(dumps(conversations, meta), encoding="utf-8")


def loads(text: str) -> list[Conversation]:
    doc = json.loads(text)
    if doc.get("format") != FORMAT:
        raise ValueError(f"not a {FORMAT} document (format={doc.get('format')!r})")
    dt = datetime.fromisoformat
    out = []
    for c in doc["conversations"]:
        sessions = [
            Session(s["id"], s["user_id"], s["index"], dt(s["date"]),
                    [Turn(t["id"], t["session_id"], t["speaker"], t["text"], dt(t["at"])) for t in s["turns"]])
            for s in c["sessions"]
        ]
        questions = [Question(**{**q, "asked_at": dt(q["asked_at"])}) for q in c["questions"]]
        out.append(Conversation(c["user_id"], c["persona"], sessions, questions))
    return out


def load(path: str | Path) -> list[Conversation]:
    return loads(Path(path).read_text(encoding="utf-8"))


__all__ = [
    "KINDS", "Conversation", "Question", "Session", "Turn", "contains", "contains_any",
    "date_forms", "dump", "dumps", "find", "generate", "load", "loads",
]
