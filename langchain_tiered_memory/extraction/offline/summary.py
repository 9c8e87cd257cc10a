"""Extractive summaries: the running summary and episodes without a model.

The extractive summary scores sentences (content words, proper nouns, numbers, decision /
preference keywords, the user's own words, recency), keeps the best that fit the token
budget in conversation order, each as ``speaker: sentence``, and folds them into the
previous summary, whose oldest lines go first when the budget is short.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.messages import BaseMessage

from ..messages import message_text, name_of, speaker, spoken
from ..arguments import check_tokens
from ..schema import EpisodeExtraction
from ...tokens import TiktokenCounter, TokenCounter
from .entities import NOT_PROPER, proper_spans
from .text import MAX_OFFLINE_CHARS, split_sentences

__all__ = [
    "EPISODE_SUMMARY_TOKENS",
    "MAX_DECISIONS",
    "MAX_SENTENCE_TOKENS",
    "MAX_TOPICS",
    "compress_extractive",
    "extractive_episode",
    "extractive_summary",
]

#: Budget of an offline episode's summary, in tokens.
EPISODE_SUMMARY_TOKENS = 200
#: A sentence longer than this is cut before it enters a summary.
MAX_SENTENCE_TOKENS = 60
MAX_DECISIONS = 8
MAX_TOPICS = 8

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



@dataclass
class _Unit:
    pos: int
    label: str
    text: str
    score: float
    tokens: int = 0
    #: Who said it, as the line shows: the message's ``name`` where it has one (in a chat
    #: between named people "user:" and "assistant:" would credit the wrong person).
    who: str = ""


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
    raw: list[tuple[str, str, str]] = []
    for message in messages:
        label = speaker(message)
        if label not in ("user", "assistant"):
            continue  # system prompts and tool output are not conversation
        # A speaker written in front of the text ("Caroline: I went…") labels the line and
        # leaves the text, as a ``name`` would: never "Caroline: Caroline: …".
        written, text = spoken(message)
        who = (written or "")[:MAX_NAME_CHARS] or label
        for sentence in split_sentences(text[:MAX_OFFLINE_CHARS]):
            raw.append((label, who, sentence))
    units = []
    for pos, (label, who, sentence) in enumerate(raw):
        if counter.count_text(sentence) > MAX_SENTENCE_TOKENS:
            sentence = counter.truncate_text(sentence, MAX_SENTENCE_TOKENS).rstrip() + "…"
        units.append(_Unit(pos, label, sentence, _salience(sentence, label, pos, len(raw)), who=who))
    return units


#: A speaker's name is shown up to this many characters.
MAX_NAME_CHARS = 64


def _name(message: BaseMessage) -> str:
    """The message's speaker name as a line's label (:func:`name_of`, at most
    :data:`MAX_NAME_CHARS`); empty without one."""
    return (name_of(message) or "")[:MAX_NAME_CHARS]


def _line(unit: _Unit) -> str:
    who = unit.who or unit.label
    return f"{who}: {unit.text}" if who else unit.text


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
    budget = check_tokens(max_tokens, "max_tokens")
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
    budget = check_tokens(max_tokens, "max_tokens")
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
        for sentence in split_sentences(message_text(message)[:MAX_OFFLINE_CHARS]):
            pos += 1
            for span in proper_spans(sentence):
                if not span.initial or span.words > 1:
                    entry = proper.setdefault(span.text, [0, pos])
                    entry[0] += 1
            for word in _WORD.findall(sentence):
                low = word.lower()
                if len(low) > 3 and low not in _STOPWORDS and low not in NOT_PROPER:
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
    texts = [(speaker(m), message_text(m)[:MAX_OFFLINE_CHARS]) for m in messages]
    # Each sentence of the conversation with who said it, as a line labels them.
    sentences = [
        (_name(m) or label, s) for m, (label, t) in zip(messages, texts) if label in ("user", "assistant")
        for s in split_sentences(t)
    ]
    if not summary:
        first = next((f"{who}: {s}" for who, s in sentences), "")
        summary = first or f"A conversation of {len(messages)} messages without text."
    decisions: list[str] = []
    for _, sentence in sentences:
        if _DECISION.search(sentence) and not sentence.rstrip().endswith("?"):
            if sentence not in decisions:
                decisions.append(sentence)
    outcome = ""
    for label in ("assistant", None):
        for lab, text in reversed(texts):
            opening = split_sentences(text)
            if opening and (label is None or lab == label):
                outcome = opening[0]
                break
        if outcome:
            break
    return EpisodeExtraction(
        summary=summary,
        decisions=decisions[-MAX_DECISIONS:],
        outcome=outcome,
        topics=_topics(messages),
        method="rules",
    )


