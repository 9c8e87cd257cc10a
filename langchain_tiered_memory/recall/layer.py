"""Recall: one search across grains — facts, turns, windows of turns, sessions — for one user.

The index returns candidates of every grain with both legs' scores; the records come from
the database; :mod:`.scoring` turns similarity into relevance (the threshold means "not
relevant") and lets importance and recency break near-ties. A query that names a time
("last weekend", "in May") is read against the time it is asked (:mod:`.dates`): units said
then are fetched even when their words are far from the question's, and count as more
relevant; a question about how things stand now ("which phone do I use these days?") fetches
what tells of a change or of the present ("setting up my new OnePlus") the same way.
Evidence that repeats messages already found is dropped, so each result brings something
new. Every result names its time and the messages it came from.

How similarity, who said it, when, and whether it only asks make the ranking is
:mod:`.ranking`'s. One signal comes from here, **whom it is about**: a question about "my
brother" is also asked about the names the entity profiles give the user's brother ("what
pet does Zeno have?"), so "Zeno got a guinea pig" is found although it never says
"brother" (a second hop, from what the profiles learned).

The context's ``memories`` section quotes the best evidence, each line dated, and where the
budget allows the turns around a turn that matched.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from .. import scoring
from ..backends.records import Where
from ..context import ContextSection
from ..layers.sections import SectionRequest
from .dates import asks_current, resolve
from .dialogue import Line, best_sentences, lines_of
from ..entries import check_k, check_user
from ..errors import InvalidInputError
from ..index.points import GRAINS, Candidate, Probe
from ..index.recall_index import RecallIndex
from .evidence import Evidence as Evidence  # re-exported: what recall returns
from .quotes import Neighbours, quote_evidence
from .asked import Asked, words_of
from .ranking import FUTURE_SLACK, TIME_SLACK, Hit, Ranker
from ..text.sentences import sentences_of
from ..text.speakers import written_speaker

if TYPE_CHECKING:
    from ..config import MemoryConfig
    from ..layers.entities import EntityLayer
    from ..layers.facts import FactLayer
    from ..index.searches import Searches
    from ..storage import Storage
    from ..tokens import TokenCounter

__all__ = ["DEFAULT_GRAINS", "Evidence", "RecallLayer"]

#: What recall searches unless told otherwise (sessions are the episodes section's). A
#: window is not a piece of evidence of its own: a turn is read with the turns beside it
#: (:mod:`.ranking`), so ten hits name ten turns; windows are searched when asked for.
DEFAULT_GRAINS: tuple[str, ...] = ("fact", "turn")
#: Candidates per retrieval leg: at least ``CANDIDATES``, ``CANDIDATES_PER_RESULT`` per
#: result asked for. The fitted model ranks what the legs bring, so the pool is what bounds
#: it: with 30 per leg, 0.91 of LoCoMo's evidence and 0.60 of LoCoMo-Plus's cues were in
#: the pool, with 50 (and the neighbours of the best) 0.94 and 0.67 (cross-validated R@10
#: 0.796 → 0.789 on LoCoMo, within noise; hit@10 0.51 → 0.63 on the cues). The neighbours of
#: the best candidates are read besides (:mod:`.ranking`), so a thin pool still reaches the
#: turns around a match.
CANDIDATES = 50
CANDIDATES_PER_RESULT = 1
#: The table whose rows are the units of each grain.
_TABLES = {"fact": "memories", "turn": "units", "window": "units", "session": "episodes"}
#: Names followed from a question's relation words ("my brother") to the entity profiles.
MAX_LINKED_NAMES = 3
#: Seconds a user's speaker names are kept between reads (another process may add one).
SPEAKERS_TTL = 30.0


class RecallLayer:
    """Search across grains, and the context's ``memories`` section."""

    name = "memories"

    def __init__(
        self,
        storage: Storage,
        index: RecallIndex,
        facts: FactLayer,
        entities: EntityLayer,
        config: MemoryConfig,
        counter: TokenCounter,
        clock: Callable[[], datetime],
    ) -> None:
        self._storage = storage
        self._index = index
        self._facts = facts
        self._ranker = Ranker(storage, facts, config)
        self._entities = entities
        self.config = config
        self._counter = counter
        self._clock = clock
        self._speaker_cache: dict[str, tuple[float, frozenset[str]]] = {}

    # --- search -----------------------------------------------------------------------

    def recall(
        self,
        user_id: str, query: str, k: int = 10, *, grains: Sequence[str] | None = None,
        at: datetime | None = None, since: datetime | None = None, until: datetime | None = None,
        peek: bool = False, explain: bool = False,
    ) -> list[Evidence]:
        """The user's ``k`` best pieces of evidence for ``query`` (see the module docs).

        ``at`` is when the question is asked (default now: relative dates read from it);
        ``since``/``until`` keep units said in that span. The memories returned count as
        recalled unless ``peek``. An empty query, or a user with nothing stored, gives ``[]``.
        """
        check_user(user_id)
        k = check_k(k)
        if not isinstance(query, str):
            raise InvalidInputError(f"query must be a str, got {type(query).__name__}")
        wanted = tuple(grains) if grains is not None else DEFAULT_GRAINS
        unknown = [g for g in wanted if g not in GRAINS]
        if unknown or not wanted:
            raise InvalidInputError(f"grains must be some of {', '.join(GRAINS)}, got {list(wanted)!r}")
        now = self._now()
        hits = self._search(user_id, query, k, wanted, at or now, since, until, now, explain=explain)
        return self._evidence(hits, now, peek=peek, explain=explain)

    def _now(self) -> datetime:
        return self._clock().astimezone(timezone.utc)

    def _search(
        self, user_id: str, query: str, k: int, grains: Sequence[str], at: datetime,
        since: datetime | None, until: datetime | None, now: datetime,
        window: tuple[int, int] | None = None, searches: Searches | None = None, explain: bool = True,
    ) -> list[Hit]:
        if not query.strip() or not self._has_any(user_id, grains):
            return []
        # A query written "Caroline: I finally…" is a message Caroline says: she is who asks,
        # not whom it asks about (text/speakers.py).
        speaker = None
        written = written_speaker(query)
        if written is not None:
            speaker, query = written
        # What was said after the question was asked is not known yet (a day's slack: clocks).
        said_until = at + FUTURE_SLACK
        # The speakers a question names are matched by who said a turn (ranking), not by its
        # words: in the embedding a name pulls every short turn that says it ("Go get 'em,
        # Jon!") towards the question, and in BM25 it matches every line that names or
        # addresses that person and every line they said (each turn's text begins with its
        # speaker). On LoCoMo, leaving the names to the ranking in both legs raised R@10
        # 0.793 -> 0.803 and R@5 0.699 -> 0.725 (last round's hand-set ranking).
        unnamed = _unnamed(query, self._speakers(user_id))
        vector = self._index.embed_query(unnamed)
        limit = max(CANDIDATES, CANDIDATES_PER_RESULT * k)
        # The time a question names, not the one a statement tells of (see dates.asked_part).
        named = resolve(query, at)

        def where(
            start: datetime | None, end: datetime | None, news: bool = False,
            told: tuple[datetime, datetime] | None = None, discloses: bool = False,
        ) -> Where:
            return self._index.where(user_id, grains, since=start, until=end, news=news, told=told,
                                     said_until=said_until, discloses=discloses)

        # Every search of the question goes to the index in one batch.
        probes = [Probe(unnamed, vector, where(since, until), limit)]
        if named is not None:
            # Units said then, however far their words are from the question's.
            start = max(named.start - TIME_SLACK, since) if since else named.start - TIME_SLACK
            end = min(named.end + TIME_SLACK, until) if until else named.end + TIME_SLACK
            probes.append(Probe(unnamed, vector, where(start, end), limit))
            # And units said later that tell of then ("yesterday we ran a class").
            probes.append(Probe(unnamed, vector, where(since, until, told=(start, end)), limit))
        elif asks_current(query):
            # What tells of a change or of the present ("setting up my new OnePlus"), however
            # far its words are from the question's ("which handset do I have now?").
            probes.append(Probe(unnamed, vector, where(since, until, news=True), limit))
        # What states a speaker's state, goal, value or a cause (text/disclosure.py): a later
        # message leans on it without sharing its words ("I ended up volunteering, and now
        # I'm overwhelmed" on "since I learned to say no I'm less stressed"), so its nearest
        # are searched among such statements too, not only among everything said.
        probes.append(Probe(unnamed, vector, where(since, until, discloses=True), limit))
        direct = len(probes)
        for relation, name in self._linked_names(user_id, query):
            # The second hop: the same question about the person the relation names (in a
            # long message, the sentence that names them: cheaper to embed, and on point).
            linked = _about(_naming(query, relation), relation, name)
            probes.append(Probe(linked, self._index.embed_query(linked), where(since, until), max(20, 2 * k)))
        if searches is not None:
            # With the turn's other searches (episodes), in one trip.
            searches.add(self, probes)
            results = searches.found(self)
        else:
            results = self._index.candidates_many(probes)
        if named is not None and not any(results[1:3]):
            # Nothing was said then, nor tells of then (a time before the conversation, or
            # read against another clock): the time tells no unit from another, and lowering
            # every one of them would only lift what carries no time over what was said.
            named = None
        found: dict[str, Candidate] = {}
        for n, candidates in enumerate(results):
            for c in candidates:
                best = found.get(c.id)
                # A linked name's search scores a unit by other words: the stronger counts.
                if best is None or (n >= direct and _strength(c) > _strength(best)):
                    found[c.id] = c
        return self._ranker.rank(
            user_id, list(found.values()), k, now, named, Asked(query, at, speaker), (window, since, until, said_until),
            lambda ids: self._index.cosines(ids, vector),
            lambda ids: best_sentences(self._storage.units.sentences(ids), vector), explain=explain,
        )

    def embedded_text(self, user_id: str, query: str) -> str:
        """What ``query`` is embedded as for ``user_id``: without a speaker written in front
        of it, nor the names of the user's speakers (see :meth:`_search`). The episodes
        section embeds the same text, so a turn's query is embedded once."""
        written = written_speaker(query)
        return _unnamed(written[1] if written is not None else query, self._speakers(user_id))

    def _speakers(self, user_id: str) -> frozenset[str]:
        """The user's named speakers (cached a few seconds: read on the latency path)."""
        now = time.monotonic()
        cached = self._speaker_cache.get(user_id)
        if cached is None or now - cached[0] > SPEAKERS_TTL:
            if len(self._speaker_cache) > 1024:
                self._speaker_cache.clear()
            cached = (now, frozenset(self._storage.units.speakers(user_id)))
            self._speaker_cache[user_id] = cached
        return cached[1]

    def _linked_names(self, user_id: str, query: str) -> list[tuple[str, str]]:
        """``(relation, name)`` of the people and things the query's relation words point
        to ("my sister")."""
        words = words_of(query)
        names: list[tuple[str, str]] = []
        # A profile's relation is in its search text: the query's words find it (no fill).
        for entity in self._entities.relevant(user_id, query, limit=10, fill=False):
            relation = entity.attributes.get("relation_to_user", "")
            if relation and relation != "self" and relation.casefold() in words:
                if entity.name.casefold() not in words and all(entity.name != n for _, n in names):
                    names.append((relation, entity.name))
        return names[:MAX_LINKED_NAMES]

    def _has_any(self, user_id: str, grains: Sequence[str]) -> bool:
        tables = [table for grain, table in _TABLES.items() if grain in grains]
        return self._storage.has_any(user_id, tables)

    def _evidence(self, hits: Sequence[Hit], now: datetime, *, peek: bool, explain: bool) -> list[Evidence]:
        from ..layers.episodes import Episode
        from ..layers.facts import Scored

        facts = [h for h in hits if h.grain == "fact"]
        entries = self._facts.record([Scored(h.row, h.score, h.parts) for h in facts], now, peek)  # type: ignore[arg-type]
        by_fact = {e.id: e for e in entries}
        # The ranking read each unit's messages already (to name them): their lines from that.
        lines = {h.id: lines_of(h.spans) for h in hits if h.grain in ("turn", "window")}
        threads = self._storage.units.thread_ids(sorted({h.thread_key for h in hits if h.thread_key is not None}))
        out = []
        for h in hits:
            parts = h.parts if explain else None
            if h.grain == "fact":
                entry = by_fact[h.id]
                out.append(Evidence("fact", h.id, entry.content, h.at, h.message_ids, h.score, h.relevance,
                                    entry.session_id, entry, (), parts))
            elif h.grain == "session":
                episode = Episode.from_row(h.row)  # type: ignore[arg-type]
                span = self._span_ids(episode.thread_id, h.row.first_seq, h.row.last_seq)  # type: ignore[attr-defined]
                out.append(Evidence("session", h.id, episode.text(), h.at, span, h.score, h.relevance,
                                    episode.thread_id, None, (), parts))
            else:
                own = tuple(lines.get(h.id, ()))
                text = "\n".join(line.render() for line in own)
                out.append(Evidence(h.grain, h.id, text, h.at, h.message_ids, h.score, h.relevance,
                                    threads.get(h.thread_key) if h.thread_key is not None else None, None, own, parts))
        return out

    def _span_ids(self, thread_id: str, first: int, last: int) -> tuple[str, ...]:
        thread = self._storage.threads.get(thread_id)
        return () if thread is None else tuple(self._storage.threads.message_ids(thread.key, first, last))

    # --- the context ------------------------------------------------------------------

    def section(self, request: SectionRequest, max_tokens: int) -> ContextSection | None:
        """The best evidence for the turn's query, quoted best first while it fits (at most
        ``memories_max_tokens``; see :mod:`.quotes`). Only the memories shown count as
        recalled."""
        query = request.query
        budget = min(max_tokens, self.config.memories_max_tokens)
        k = self.config.memories_k
        if not query or not query.strip() or budget <= 0 or k == 0:
            return None
        now = self._now()
        thread = request.thread
        window = (thread.key, thread.evicted_through) if thread is not None else None
        hits = self._search(
            request.user_id, query, min(k, 100), DEFAULT_GRAINS, request.at or now, None, None, now, window,
            request.searches, explain=False,
        )
        if not hits:
            return None
        evidence = self._evidence(hits, now, peek=True, explain=False)
        keys = {e.thread_id: h.thread_key for h, e in zip(hits, evidence) if e.thread_id and h.thread_key is not None}
        quoted = quote_evidence(evidence, budget, self._counter, self._neighbours(keys))
        if quoted is None:
            return None
        shown = quoted.shown
        facts = [e.id for e in shown if e.grain == "fact"]
        if facts and not request.peek:
            self._facts.recalled(facts, now)
        return ContextSection(self.name, quoted.text, quoted.tokens)

    def _neighbours(self, keys: Mapping[str, int]) -> Neighbours:
        """Reads the neighbours a section asks for in one query (``keys``: the thread key of
        each thread id among the hits)."""

        def read(requests: Sequence[tuple[str, Sequence[int]]]) -> dict[tuple[str, int], Line]:
            threads = {keys[t]: t for t, _ in requests if t in keys}
            rows = self._storage.units.spoken_many([(keys[t], seqs) for t, seqs in requests if t in keys])
            return {(threads[k], line.seq): line for k, found in rows.items() for line in lines_of(found)}

        return read


def _about(query: str, relation: str, name: str) -> str:
    """``query`` asked about ``name`` instead of the relation ("what does my aunt do?" →
    "what does Ilse do?"), so its words meet what was said about them by name; the name in
    front where the relation is not said as "my …"/"the user's …"."""
    pattern = re.compile(rf"\b(?:my|our|the user's|the user’s|your)\s+{re.escape(relation)}\b('s|’s)?", re.IGNORECASE)
    about, n = pattern.subn(lambda m: name + (m.group(1) or ""), query)
    return about if n else f"{name}: {query}"


def _naming(query: str, relation: str) -> str:
    """The sentence of ``query`` that says ``relation`` (the last such: a message's question
    tends to come last); the whole query when it is one sentence or none says it."""
    sentences = [s for s in sentences_of(query) if s.strip()]
    if len(sentences) < 2:
        return query
    says = re.compile(rf"\b{re.escape(relation)}\b", re.IGNORECASE)
    return next((s for s in reversed(sentences) if says.search(s)), query)


def _unnamed(query: str, speakers: frozenset[str]) -> str:
    """``query`` without the speakers' names it says (full or first name, possessive
    included); the query itself when nothing else would be left."""
    names = sorted({n for s in speakers for n in (s, s.split()[0])}, key=len, reverse=True)
    if not names:
        return query
    pattern = re.compile(r"\b(?:" + "|".join(re.escape(n) for n in names) + r")(?:'s|’s)?\b", re.IGNORECASE)
    left = " ".join(pattern.sub(" ", query).split())
    return left if re.search(r"\w", left) else query


def _strength(c: Candidate) -> float:
    return scoring.relevance(c.dense, c.sparse)
