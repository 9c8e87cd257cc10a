"""The conversation itself, searchable: single turns and short windows of turns.

Every stored user or assistant message is a ``turn`` unit, and every few consecutive
messages a ``window`` unit (``storage/units.py``). Their indexed text is built from the log
each time it is needed — the messages are its only copy — with the speaker and the date on
each line, so "when" and "who said it" are in what is embedded and what BM25 sees::

    user (2024-03-31): They finally made me team lead at work!
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from functools import cached_property
from typing import TYPE_CHECKING, Any

from ..backends.bm25 import content_words
from ..backends.filters import iso
from .dates import tells_current, told_of
from ..text.disclosure import discloses as discloses_of
from ..text.sentences import only_asks, sentences_of
from ..text.vocatives import unaddressed
from ..storage.message_format import decode, said
from ..storage.rows import Unit
from ..storage.units import unit_id

if TYPE_CHECKING:
    from ..index.recall_index import RecallIndex
    from ..storage import Storage, UnitRow

#: The speakers of messages that name none: their roles.
ROLES = frozenset({"user", "assistant"})
#: Characters of one message kept in an indexed text (MiniLM reads 256 tokens; BM25 all).
MAX_INDEXED_CHARS = 4_000
#: Sentences of one message kept as vectors of their own (the first ones: a long message's
#: later sentences are still in its whole vector and its BM25 terms).
MAX_SENTENCES = 12


@dataclass(frozen=True)
class Line:
    """One message of a unit: its id, when and by whom it was said, what was said."""

    message_id: str
    seq: int
    at: datetime
    speaker: str
    text: str
    #: The message's token count as stored (chat format), when read from the log.
    tokens: int | None = None

    @cached_property
    def asks(self) -> bool:
        """Whether the line only asks: each of its sentences is a question ("any advice on
        sleep?"), none says anything ("My budget is 3,000 euros. Is that enough?" says).
        Cached: indexing reads it for a unit's share and again for :attr:`tells_current`."""
        return only_asks(self.text)

    @property
    def tells_current(self) -> bool:
        """Whether a person (not the assistant, whose replies echo) says here that something
        changed or how it stands now ("I've switched to tea"; "any tips for my new flat?"
        only asks)."""
        return self.speaker != "assistant" and tells_current(self.text) and not self.asks

    def render(self, *, time: bool = False, limit: int | None = None, stamp: bool = True) -> str:
        """``speaker (date): text`` on one line (``time``: with the hour; ``stamp=False``:
        ``speaker: text``, for a line whose date the line above it already gives)."""
        text = " ".join(self.text.split())
        if limit is not None and len(text) > limit:
            text = text[: limit - 1] + "…"
        return self.prefix(time=time, stamp=stamp) + text

    def prefix(self, *, time: bool = False, stamp: bool = True) -> str:
        """What :meth:`render` puts before the text: ``speaker (date): `` (``speaker: ``
        without the stamp)."""
        if not stamp:
            return f"{self.speaker}: "
        when = f"{self.at:%Y-%m-%d %H:%M}" if time else f"{self.at:%Y-%m-%d}"
        return f"{self.speaker} ({when}): "


def lines_of(rows: Sequence[tuple[Any, ...]]) -> list[Line]:
    """The lines of a unit's messages, ``(seq, message_id, created_at, data[, tokens])`` each."""
    out = []
    for seq, message_id, created, data, *rest in rows:
        who, text = said(decode(data))
        tokens = rest[0] if rest else None
        out.append(Line(message_id, seq, datetime.fromisoformat(created), who, text, tokens))
    return out


class DialogueLayer:
    """The index's source of ``turn`` and ``window`` units."""

    name = "conversation"
    grains: tuple[str, ...] = ("turn", "window")

    def __init__(self, storage: Storage) -> None:
        self._storage = storage

    def lines(self, units: Sequence[UnitRow]) -> dict[str, list[Line]]:
        """Each unit's lines, by unit id."""
        return {uid: lines_of(rows) for uid, rows in self._storage.units.spans(units).items()}

    def pending(self, limit: int) -> list[Unit]:
        """Units whose point is not written yet, with their indexed text, ``asks``: the
        share of their lines that only ask (recall trusts a question less as evidence),
        ``news``: the share of the people's lines that tell of a change or of how things
        stand now (what a question about now looks for), and ``words``: how many distinct
        content words they say (a line of names and pleasantries says one or two)."""
        units = self._storage.units.unindexed(limit)
        lines = self.lines(units)
        out = []
        for u in units:
            own = lines[u.id]
            text = indexed_text(own)
            asks = round(sum(line.asks for line in own) / len(own), 2) if own else 0.0
            people = [line for line in own if line.speaker != "assistant"]
            news = round(sum(line.tells_current for line in people) / len(people), 2) if people else 0.0
            # What the people say of their own state, goal, value or causes (text/disclosure.py).
            discloses = round(sum(discloses_of(line.text) for line in people) / len(people), 2) if people else 0.0
            # A span whose messages were all tool calls or system text has nothing to find.
            words = len(content_words(" ".join(line.text for line in own)))
            fields: dict[str, Any] = {"current": 1, "asks": asks, "news": news, "words": words, "discloses": discloses}
            told = told_of(own[0].text, own[0].at) if u.grain == "turn" and own else None
            if told is not None:
                # The time the message tells of: a question naming it finds it (:mod:`.layer`).
                fields["told_from"], fields["told_until"] = iso(told.start), iso(told.end)
            out.append(Unit(id=u.id, user_id=u.user_id, grain=u.grain, text=text or " ", at=u.at, fields=fields))
        return out

    def embed(
        self, units: Sequence[Unit], embed: Callable[[list[str]], list[list[float]]], index: RecallIndex
    ) -> list[list[float]]:
        """Turns are embedded; a window's vector is the mean of its turns' vectors, each
        turn weighing the same — without embedding each message again, and without cutting
        a long window at 256 tokens. Weighting by length (what a mean-pooling model makes of
        the joined text) let one long, generic reply pull every window it sits in towards
        every question (recall@10 on benchmarks/longchat 0.89 with it, 0.90 without)."""
        turns = [u for u in units if u.grain == "turn"]
        windows = [u for u in units if u.grain == "window"]
        rows = self._storage.units.get_many([u.id for u in windows])
        parts = {
            uid: [unit_id(rows[uid].thread_key, "turn", line.seq) for line in lines]
            for uid, lines in self.lines(list(rows.values())).items()
        }
        # One read for every turn vector the batch needs. A turn's text never changes: a
        # point written before (its marks refreshed by a migration, or a rebuild after
        # points went missing) keeps its vector.
        made = index.vectors(sorted({u.id for u in turns} | {t for ts in parts.values() for t in ts}))
        fresh = [u for u in turns if u.id not in made]
        if fresh:
            made.update(self._embed_turns(fresh, index))
        out: list[list[float]] = []
        missing = [u for u in windows if not parts.get(u.id) or any(t not in made for t in parts[u.id])]
        fallback = dict(zip([u.id for u in missing], embed([u.text for u in missing]))) if missing else {}
        for u in units:
            if u.grain == "turn":
                out.append(made[u.id])
            elif u.id in fallback:
                out.append(fallback[u.id])
            else:
                import numpy as np  # here, not at module level: importing the package loads no numpy

                mean = np.sum([np.asarray(made[t]) for t in parts[u.id]], axis=0)
                norm = float(np.linalg.norm(mean))
                out.append((mean / norm).tolist() if norm else embed([u.text])[0])
        return out

    def _embed_turns(self, turns: Sequence[Unit], index: RecallIndex) -> dict[str, list[float]]:
        """The vectors of ``turns``, with those of the sentences of each turn that has several
        stored beside: a message that greets, tells and asks is read by its best sentence
        too, since its whole vector is the average of its topics. The default model pools
        the sentences from the run that embeds the turn (each read in its message's context:
        on LoCoMo, R@10 within 0.005 of embedding them apart, in half the ingest time)."""
        rows = self._storage.units.get_many([u.id for u in turns])
        lines = self.lines(list(rows.values()))
        spans = [sentence_spans(lines[u.id][0], u.text) if lines.get(u.id) else [] for u in turns]
        vectors, parts = index.embed_with_spans([u.text for u in turns], spans)
        packed = {u.id: [pack(v) for v in part if v is not None] for u, part in zip(turns, parts) if part}
        self._storage.units.put_sentences({uid: vs for uid, vs in packed.items() if vs})
        return dict(zip([u.id for u in turns], vectors))

    def indexed(self, units: Sequence[Unit], vectors: Sequence[Sequence[float]]) -> None:
        """Mark the units indexed."""
        self._storage.units.mark_indexed([u.id for u in units])

    def reset(self) -> int:
        """Every unit needs its point again."""
        return self._storage.units.mark_all_unindexed()

    def indexed_count(self) -> int:
        """Units with their point written."""
        return self._storage.units.indexed_count()

    def texts(self, ids: Sequence[str]) -> dict[str, str]:
        """The indexed text of the units among ``ids``."""
        units = list(self._storage.units.get_many(list(ids)).values())
        return {uid: indexed_text(lines) or " " for uid, lines in self.lines(units).items()}


def indexed_text(lines: Sequence[Line]) -> str:
    """What the index reads of a unit's lines (BM25's terms, the embedding's input): each as
    :meth:`Line.render` writes it; a line whose speaker is not named, without the names it
    calls its listener by (:mod:`..text.vocatives`). Where speakers are named, recall leaves
    their names out of the query and matches them by who said a line, so a name in a line's
    call matches nothing already (and LoCoMo, fed with names, ranks alike either way: R@10
    0.801 with the calls left out, 0.802 kept). Fed without names, R@1 0.289 -> 0.350 and
    R@10 0.700 -> 0.736."""
    return "\n".join(
        (replace(line, text=unaddressed(line.text)) if line.speaker in ROLES else line).render(limit=MAX_INDEXED_CHARS)
        for line in lines
    )


def sentence_spans(line: Line, text: str) -> list[tuple[int, int]]:
    """Where the sentences of ``line`` sit in ``text``, its unit's indexed text (the line as
    :meth:`Line.render` wrote it): the first :data:`MAX_SENTENCES` that say something, none
    for a message of one sentence."""
    start = len(line.prefix())
    body = text[start:]
    out: list[tuple[int, int]] = []
    at = 0
    for sentence in sentences_of(body):
        sentence = sentence.strip()
        found = body.find(sentence, at) if any(ch.isalnum() for ch in sentence) else -1
        if found >= 0:
            at = found + len(sentence)
            out.append((start + found, start + at))
    return out[:MAX_SENTENCES] if len(out) > 1 else []


def pack(vector: Sequence[float]) -> bytes:
    """A sentence vector as stored: half-precision floats (a cosine needs no more)."""
    import numpy as np  # here, not at module level: importing the package loads no numpy

    return np.asarray(vector, dtype=np.float16).tobytes()


def best_sentences(found: Mapping[str, Sequence[bytes]], vector: Sequence[float]) -> dict[str, float]:
    """The best cosine to ``vector`` among each unit's stored sentence vectors (units whose
    vectors are of another size, from another model awaiting ``reindex``, are left out)."""
    if not found:
        return {}
    import numpy as np

    query = np.asarray(vector, dtype=np.float32)
    out: dict[str, float] = {}
    for uid, vectors in found.items():
        matrix = np.frombuffer(b"".join(vectors), dtype=np.float16)
        if matrix.size != len(vectors) * query.size:
            continue
        out[uid] = float((matrix.reshape(len(vectors), query.size).astype(np.float32) @ query).max())
    return out
