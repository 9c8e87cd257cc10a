"""Long-term memory: facts, preferences, experiences and instructions, recalled by meaning.

A memory is a row of the database (its owner) and a point of the recall index (grain
``fact``). Content is stored and indexed exactly as given, speaker prefix included ("user:
I like tea" stays so): dropping the speaker cut dense recall@10 by a third on a public
long-conversation benchmark.

Writing (:meth:`FactLayer.remember_many`): rows first, then — where this process holds the
index — their points, at once. A memory whose nearest neighbour of the same user has cosine
above ``merge_threshold`` is merged into that older memory when its point is written (the
newer wording, the higher importance, its id as an alias; no LLM call), so the same happens
whichever process wrote it. Past ``max_memories_per_user`` the memories of lowest effective
importance are forgotten (an index scan, see ``storage/memories.py``), never one stored by
the same call unless that call alone exceeds the cap.

Recall (:meth:`FactLayer.search`): the index's dense and BM25 candidates of that user, the
rows read from the database, ranked by :mod:`.scoring` (relevance from similarity,
importance and recency as bounded tie-breakers), ``score_threshold`` applied to relevance.
The memories returned count as recalled: a database write, never an index one (those a
context quotes are written after the turn, :mod:`.recall_counts`).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from .. import scoring
from ..config import MemoryConfig
from ..entries import (
    MAX_CONTENT_CHARS, MAX_CONTENT_TOKENS, MemoryEntry, MemoryHit, as_list, check_content, check_importance,
    check_k, check_memory_id, check_metadata, check_query, check_session, check_time, check_type, check_types,
    check_user,
)
from ..errors import InvalidInputError, NotFoundError
from ..index.points import Candidate
from ..index.recall_index import RecallIndex
from ..storage.rows import MemoryRow, Unit
from .fact_rows import entry_of, unit
from .recall_counts import PendingRecalls

if TYPE_CHECKING:
    from ..backends.records import ScoredRecord
    from ..storage import Storage
    from ..tokens import TokenCounter

logger = logging.getLogger("langchain_tiered_memory")

__all__ = ["CANDIDATES", "MAX_CONTENT_CHARS", "MAX_CONTENT_TOKENS", "FactLayer", "Scored"]

#: Candidates per retrieval leg (dense, BM25); at least 4 × k are taken.
CANDIDATES = 50
# Records read per round when ranking: a few more than a search usually returns.
_READ_BATCH = 8
_LIST_LIMIT = 1_000


@dataclass(frozen=True)
class Scored:
    """A memory row with its score and the parts of it."""

    row: MemoryRow
    score: float
    parts: scoring.ScoreParts


class FactLayer:
    """Long-term memories of every user (see the module docs).

    Args:
        storage: the relational store (owner of the rows).
        index: the recall index.
        config: forgetting and recall parameters.
        clock: returns the current time (aware); tests freeze it.
        counter: the token counter (for the content limit and the section).
        evict: forgets memories of a user (journaled; the capacity eviction calls it).
    """

    name = "memories"
    grains: tuple[str, ...] = ("fact",)

    def __init__(
        self,
        storage: Storage,
        index: RecallIndex,
        config: MemoryConfig,
        *,
        clock: Callable[[], datetime],
        counter: TokenCounter,
        evict: Callable[[str, list[str]], int],
    ) -> None:
        self._storage = storage
        self._index = index
        self.config = config
        self._clock = clock
        self._counter = counter
        self._evict = evict
        self.calibration = scoring.DEFAULT_CALIBRATION
        self.recalls = PendingRecalls(storage.memories, config.access_boost)

    def _now(self) -> datetime:
        value = self._clock()
        if not isinstance(value, datetime) or value.tzinfo is None:
            raise InvalidInputError(f"clock() must return a timezone-aware datetime, got {value!r}")
        return value.astimezone(timezone.utc)

    # --- writing ------------------------------------------------------------------------

    def remember_many(
        self, user_id: str, items: Iterable[Mapping[str, Any] | Any], *, merge: bool = True
    ) -> list[str]:
        """Store several memories; one id per item, in order (that of the memory an item
        merged into, where this process holds the index).

        Each item is a mapping (or an object with those attributes) with ``content`` and
        optionally ``memory_type``, ``importance``, ``metadata``, ``session_id``,
        ``memory_id`` (a UUID: storing it again changes nothing), ``source_message_ids``,
        ``valid_from``, ``subject`` and ``replaces`` (what the user gave up for it: their
        current memories that name it close). Every item is validated before anything is
        written.
        ``merge=False`` keeps them apart from near-duplicates (a LangGraph store put is one
        exact item).
        """
        check_user(user_id)
        batch = as_list(items, "items")
        now = self._now()
        rows = [self._row(user_id, i if len(batch) > 1 else None, item, now, merge) for i, item in enumerate(batch)]
        if not rows:
            return []
        self._storage.results.add_memories(rows)
        if self._index.available():
            # What this call wrote (and memories waiting before it): a thread's turns waiting
            # for their points are the job worker's, and would make a bulk load pay for them.
            self._index.sync(sources=[self])
        out = [self._resolve(user_id, r.id) for r in rows]
        self._enforce_capacity(user_id, set(out))
        return out

    def _resolve(self, user_id: str, memory_id: str) -> str:
        try:
            found = self._storage.memories.resolve(user_id, memory_id)
        except LookupError:
            raise InvalidInputError(f"memory_id {memory_id!r} is already used by another user") from None
        return found or memory_id

    def _row(self, user_id: str, index: int | None, item: Any, now: datetime, merge: bool) -> MemoryRow:
        def field(name: str, default: Any = None) -> Any:
            if isinstance(item, Mapping):
                return item.get(name, default)
            return getattr(item, name, default)

        if isinstance(item, str) or (not isinstance(item, Mapping) and not hasattr(item, "content")):
            raise InvalidInputError(
                f"items[{index or 0}] must be a mapping with 'content' (and optionally memory_type, "
                f"importance, metadata, session_id, memory_id), got {type(item).__name__}"
            )
        try:
            importance = field("importance")
            memory_id = field("memory_id")
            valid_from = field("valid_from") or now
            check_time("valid_from", valid_from)
            stamp = now.isoformat()
            sources = field("source_message_ids") or []
            if not isinstance(sources, (list, tuple)) or not all(isinstance(s, str) for s in sources):
                raise InvalidInputError("source_message_ids must be a list of message ids")
            subject = field("subject")
            if subject is not None and (not isinstance(subject, str) or not subject.strip()):
                raise InvalidInputError("subject must be None or a non-empty str")
            replaces = field("replaces")
            if replaces is not None and (not isinstance(replaces, str) or not replaces.strip()):
                raise InvalidInputError("replaces must be None or a non-empty str")
            if memory_id is not None:
                memory_id = check_memory_id(memory_id)
                self._resolve(user_id, memory_id)  # another user's id is refused here
            return MemoryRow(
                id=memory_id or str(uuid.uuid4()),
                user_id=user_id,
                content=check_content(field("content"), lambda: self._counter),
                memory_type=check_type(field("memory_type") or "fact"),
                importance=check_importance(0.5 if importance is None else importance),
                metadata=check_metadata(field("metadata")),
                session_id=check_session(field("session_id")),
                source_messages=list(sources),
                created_at=stamp,
                updated_at=stamp,
                last_accessed=stamp,
                access_count=0,
                boost=0.0,
                merged_from=[],
                valid_from=valid_from.astimezone(timezone.utc).isoformat(),
                subject=subject,
                mergeable=merge,
                replaces=replaces.strip() if replaces else None,
            )
        except InvalidInputError as exc:
            if index is None:
                raise
            raise type(exc)(f"items[{index}]: {exc}") from None

    def _enforce_capacity(self, user_id: str, written: set[str]) -> None:
        cap = self.config.max_memories_per_user
        excess = self._storage.memories.count(user_id) - cap
        if excess <= 0:
            return
        self.recalls.write()  # the weakest are chosen by what recalls added
        victims = self._storage.memories.weakest(user_id, excess, exclude=sorted(written))
        if len(victims) < excess:  # this call alone stored more than the cap
            weakest = self._storage.memories.weakest(user_id, excess + len(written))
            victims += [v for v in weakest if v in written][: excess - len(victims)]
        if victims:
            logger.debug("evicting %d memories of %r over the cap of %d", len(victims), user_id, cap)
            self._evict(user_id, victims)

    # --- the index's source -------------------------------------------------------------

    def pending(self, limit: int) -> list[Unit]:
        """Memories whose point is not written yet, as units (oldest first)."""
        return [unit(r) for r in self._storage.memories.unindexed(limit)]

    def indexed(self, units: Sequence[Unit], vectors: Sequence[Sequence[float]]) -> None:
        """Mark the rows indexed; merge each new memory into an older near-duplicate."""
        rows = self._storage.memories.get_many([u.id for u in units])
        merged_away: list[str] = []
        ops: list[int] = []
        # Only a memory never indexed merges: a rebuilt index must not merge old ones.
        checked = [
            (row, vector) for row, vector in ((rows.get(u.id), v) for u, v in zip(units, vectors))
            if row is not None and row.indexed == 0 and row.mergeable and row.valid_to is None
        ]
        # Their points are written already: one batch of the engine finds each one's
        # neighbours among the batch and the index alike.
        nearest = self._index.nearest_many([(row.user_id, vector) for row, vector in checked], "fact", 4)
        for (row, _), hits in zip(checked, nearest):
            target = self._merge_target(row, hits)
            if target is not None:
                op = self._storage.memories.merge(target, row, self._now().isoformat())
                merged_away.append(row.id)
                ops += [op] if op is not None else []
        self._storage.memories.mark_indexed(
            [u.id for u in units if u.id in rows and u.id not in merged_away],
            {r.id: r.updated_at for r in rows.values()},
        )
        # The merges journaled their points' deletion: a crash before this line leaves the
        # journal for the next holder. (No shard flush, unlike a forget: the merged text
        # lives on in the target, there is nothing to scrub.)
        self._index.delete(merged_away)
        for op in ops:
            self._storage.forgetting.finish(op)

    def _merge_target(self, row: MemoryRow, nearest: Sequence[ScoredRecord]) -> MemoryRow | None:
        close = [h for h in nearest if h.id != row.id and h.score > self.config.merge_threshold]
        if not close:
            return None
        found = self._storage.memories.get_many([h.id for h in close], user_id=row.user_id)
        for h in close:
            other = found.get(h.id)
            # Into the older one: the record that was there first keeps its id (at one
            # instant, the one already indexed; else the smaller id, so one direction wins).
            if other is not None and other.mergeable and other.valid_to is None and (
                other.created_at, other.indexed != 1, other.id) < (row.created_at, True, row.id):
                return other
        return None

    def reset(self) -> int:
        """Every memory needs its point again."""
        return self._storage.memories.mark_all_unindexed()

    def indexed_count(self) -> int:
        """Memories with their point written."""
        return self._storage.memories.indexed_count()

    def vectors(self, user_id: str, ids: Sequence[str]) -> dict[str, list[float]]:
        """The stored embedding of each of the user's memories among ``ids`` that has one in
        the space in use (read from the index, not embedded again)."""
        owned = self._storage.memories.get_many(list(ids), user_id=user_id)
        return self._index.vectors(list(owned)) if owned and self._index.available() else {}

    def texts(self, ids: Sequence[str]) -> dict[str, str]:
        """The indexed text of the memories among ``ids``."""
        return {i: r.content for i, r in self._storage.memories.get_many(list(ids)).items()}

    # --- recall -------------------------------------------------------------------------

    def search(
        self,
        user_id: str,
        query: str,
        k: int = 5,
        memory_types: Sequence[str] | str | None = None,
        min_importance: float | None = None,
        *,
        explain: bool = False,
        peek: bool = False,
        include_superseded: bool = False,
    ) -> list[MemoryHit]:
        """The user's memories that best match ``query``, best first (see the module docs).

        ``memory_types`` keeps those types only; ``min_importance`` keeps memories whose
        importance is at least that. An empty or blank query, or a user with no memories,
        returns ``[]``. The memories returned count as recalled unless ``peek``;
        ``explain=True`` adds the parts of each score. Superseded memories are left out
        unless ``include_superseded``.
        """
        check_user(user_id)
        k = check_k(k)
        query = check_query(query)
        types = check_types(memory_types) if memory_types is not None else None
        floor = check_importance(min_importance, "min_importance") if min_importance is not None else None
        if not query.strip() or not self._storage.has_any(user_id, ("memories",)):
            return []
        now = self._now()
        scored = self.rank(user_id, query, k, types, floor, now, include_superseded=include_superseded)
        entries = self.record(scored, now, peek)
        return [
            MemoryHit(entry=e, score=s.score, parts=s.parts if explain else None)
            for e, s in zip(entries, scored)
        ]

    def rank(
        self,
        user_id: str,
        query: str,
        k: int,
        memory_types: Sequence[str] | None,
        min_importance: float | None,
        now: datetime,
        *,
        include_superseded: bool = False,
        vector: Sequence[float] | None = None,
    ) -> list[Scored]:
        """The ``k`` best memories for ``query`` with their scores (nothing recorded)."""
        if vector is None:
            vector = self._index.embed_query(query)
        candidates = self._index.candidates(
            user_id, query, vector, grains=self.grains, limit=max(CANDIDATES, 4 * k),
            memory_types=memory_types, min_importance=min_importance,
            current_only=not include_superseded,
            fields=(),  # the ranking reads the rows, not the payload (which cost the engine ~40%)
        )
        return self.best(user_id, candidates, now, k, include_superseded=include_superseded)

    def best(
        self, user_id: str, candidates: Sequence[Candidate], now: datetime, k: int, *, include_superseded: bool = False
    ) -> list[Scored]:
        """The ``k`` best of :meth:`score`, reading the records best relevance first, a few at
        a time, until none left unread could still rank: a record's prior moves its score by
        at most ``TIE_BREAK / 2`` above its relevance (:func:`scoring.score`), so the rest are
        known to lose without their rows (a search at 100k memories read ~100 of them for 5)."""
        floor = self.config.score_threshold
        pending = sorted(
            ((scoring.relevance(c.dense, c.sparse, self.calibration), c) for c in candidates),
            key=lambda p: (-p[0], p[1].id),
        )
        pending = [p for p in pending if p[0] >= floor]
        found: list[Scored] = []
        batch = max(k, _READ_BATCH)
        while pending:
            if len(found) >= k and scoring.score(pending[0][0], 1.0) < found[k - 1].score:
                break
            chosen, pending = pending[:batch], pending[batch:]
            found += self.score(user_id, [c for _, c in chosen], now, include_superseded=include_superseded)
            found.sort(key=_rank_key)
        return found[:k]

    def score(
        self,
        user_id: str,
        candidates: Sequence[Candidate],
        now: datetime,
        *,
        include_superseded: bool = False,
        threshold: float | None = None,
    ) -> list[Scored]:
        """Rows for the candidates that are this user's, scored, at or above the relevance
        ``threshold`` (default ``score_threshold``), best first."""
        floor = self.config.score_threshold if threshold is None else threshold
        # With the recalls counted and not written yet: the prior reads them, and nothing
        # on the read path writes (they are written after, batched: recall_counts.py).
        rows = self.recalls.applied(self._storage.memories.get_many([c.id for c in candidates], user_id=user_id))
        out: list[Scored] = []
        for c in candidates:
            row = rows.get(c.id)
            if row is None or (row.valid_to is not None and not include_superseded):
                continue  # forgotten or merged since the point was written: never shown
            rel = scoring.relevance(c.dense, c.sparse, self.calibration)
            if rel < floor:
                continue
            days = scoring.days_between(now, datetime.fromisoformat(row.last_accessed))
            factor = scoring.decay_factor(self.config.decay, days)
            prior = scoring.prior(row.importance, row.boost, days, self.config.decay)
            value = scoring.score(rel, prior)
            parts = scoring.ScoreParts(
                relevance=rel, dense=c.dense, sparse=c.sparse, importance=row.importance, boost=row.boost,
                days_since_access=days, decay=factor, effective_importance=prior, score=value,
            )
            out.append(Scored(row, value, parts))
        out.sort(key=_rank_key)
        return out

    def record(self, scored: Sequence[Scored], now: datetime, peek: bool) -> list[MemoryEntry]:
        """The entries of ``scored``, counted as recalled now (unless ``peek``)."""
        entries = [entry_of(s.row) for s in scored]
        if peek or not entries:
            return entries
        self.recalled([e.id for e in entries], now)  # written after, batched (recall_counts.py)
        return [
            e.model_copy(update={
                "last_accessed": now, "access_count": e.access_count + 1,
                "boost": scoring.boosted(e.boost, e.importance, self.config.access_boost),
            })
            for e in entries
        ]

    def recalled(self, ids: Sequence[str], now: datetime) -> None:
        """Count the memories ``ids`` as recalled ``now``, written after the turn (:attr:`recalls`)."""
        self.recalls.add(list(ids), now)

    # --- reading and editing ------------------------------------------------------------

    def get(self, user_id: str, memory_id: str) -> MemoryEntry:
        """The memory ``memory_id`` of ``user_id``; :class:`NotFoundError` if there is none
        (another user's memory is not found either)."""
        check_user(user_id)
        key = check_memory_id(memory_id, missing_ok=True)
        self.recalls.write()
        row = self._storage.memories.get_many([key], user_id=user_id).get(key) if key else None
        if row is None:
            raise NotFoundError(f"user {user_id!r} has no memory {memory_id!r}")
        return entry_of(row)

    def update(
        self,
        user_id: str,
        memory_id: str,
        *,
        content: str | None = None,
        importance: float | None = None,
        memory_type: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> MemoryEntry:
        """Change a memory's fields; new content is re-embedded. ``metadata`` replaces the old.

        The access state is kept. Raises :class:`NotFoundError` as :meth:`get` does.
        """
        changes: dict[str, Any] = {}
        if content is not None:
            changes["content"] = check_content(content, lambda: self._counter)
        if importance is not None:
            changes["importance"] = check_importance(importance)
        if memory_type is not None:
            changes["memory_type"] = check_type(memory_type)
        if metadata is not None:
            changes["metadata"] = check_metadata(metadata)
        entry = self.get(user_id, memory_id)
        changes = {k: v for k, v in changes.items() if getattr(entry, k) != v}
        if not changes:
            return entry
        self._storage.memories.update(entry.id, changes, self._now().isoformat())
        if self._index.available():
            self._index.sync(sources=[self])
        return self.get(user_id, entry.id)

    def page(
        self,
        user_id: str,
        memory_types: Sequence[str] | str | None = None,
        limit: int = 100,
        offset: int = 0,
        *,
        include_superseded: bool = True,
    ) -> list[MemoryEntry]:
        """The user's memories, newest first, ``limit`` from ``offset``."""
        check_user(user_id)
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= _LIST_LIMIT:
            raise InvalidInputError(f"limit must be an int within 1..{_LIST_LIMIT}, got {limit!r}")
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise InvalidInputError(f"offset must be a non-negative int, got {offset!r}")
        types = check_types(memory_types) if memory_types is not None else None
        self.recalls.write()
        rows = self._storage.memories.page(user_id, types, limit, offset, include_superseded=include_superseded)
        return [entry_of(r) for r in rows]


def _rank_key(s: Scored) -> tuple[float, str, str]:
    # Best first; equal scores by age, then id, so that a ranking is the same every time.
    return (-s.score, s.row.created_at, s.row.id)
