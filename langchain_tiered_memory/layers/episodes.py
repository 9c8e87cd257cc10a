"""Episodic memory: one snapshot per finished session of a thread.

An episode says what happened, the decisions, the outcome, the topics and the time span. It
is written by a journaled job through the extraction path (one LLM call, or the offline
extractive episode), stored as a database record (its owner) and indexed for recall as a
``session`` unit. A session is the span of a thread's messages after its previous episode;
``end_session`` closes it, and so does an idle timeout.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, TypeGuard

from .. import scoring
from ..context import ContextSection
from .sections import SectionRequest, section_of_lines
from ..index.points import Probe
from ..storage.rows import EpisodeRow, Unit

if TYPE_CHECKING:
    from ..index.points import Candidate
    from ..index.recall_index import RecallIndex
    from ..storage import Storage
    from ..tokens import TokenCounter

_NAMESPACE = uuid.UUID("6f1d7c62-3a55-4c1e-9a49-5b1f0e2d8a11")
#: Episode candidates read per search before the time range is applied.
_CANDIDATES = 50


def episode_id(thread_id: str, last_seq: int, namespace: uuid.UUID = _NAMESPACE) -> str:
    """The id of the episode ending at ``last_seq``: the same however often it is written,
    in the deployment's ``namespace`` (:meth:`~..storage.Storage.id_namespace`): another
    directory's thread of the same id mints another."""
    return str(uuid.uuid5(namespace, f"{_NAMESPACE}\x1f{thread_id}\x1f{last_seq}"))


@dataclass(frozen=True)
class Episode:
    """A finished session: what happened, what was decided, how it ended, when."""

    id: str
    user_id: str
    thread_id: str
    started_at: datetime
    ended_at: datetime
    summary: str
    decisions: list[str]
    outcome: str
    topics: list[str]

    @classmethod
    def from_row(cls, row: EpisodeRow) -> Episode:
        """An episode from its record."""
        return cls(row.id, row.user_id, row.thread_id, datetime.fromisoformat(row.started_at),
                   datetime.fromisoformat(row.ended_at), row.summary, list(row.decisions),
                   row.outcome, list(row.topics))

    def text(self) -> str:
        """The text embedded and indexed for recall."""
        return episode_text(self.summary, self.decisions, self.outcome, self.topics)


def episode_text(summary: str, decisions: Sequence[str], outcome: str, topics: Sequence[str]) -> str:
    """An episode's indexed text: the summary, then decisions, outcome and topics."""
    parts = [summary]
    if decisions:
        parts.append("Decisions: " + "; ".join(decisions))
    if outcome:
        parts.append("Outcome: " + outcome)
    if topics:
        parts.append("Topics: " + ", ".join(topics))
    return "\n".join(parts)


@dataclass(frozen=True)
class EpisodeHit:
    """An episode found by :meth:`TieredMemory.search_episodes`, with its relevance."""

    episode: Episode
    score: float | None


class EpisodeLayer:
    """Episodes: the ``session`` units of the index, their search and the context section."""

    name = "episodes"
    grains: tuple[str, ...] = ("session",)

    def __init__(
        self,
        storage: Storage,
        index: RecallIndex,
        counter: TokenCounter,
        *,
        max_tokens: int,
        k: int,
        threshold: float,
        embedded: Callable[[str, str], str] | None = None,
    ) -> None:
        self._storage = storage
        # What a user's query is embedded as (the recall layer's text, so that the turn's
        # query is embedded once for both sections); the query itself by default.
        self._embedded = embedded
        self._index = index
        self._counter = counter
        self._max_tokens = max_tokens
        self._k = k
        self._threshold = threshold

    # --- the index's source -------------------------------------------------------------

    def pending(self, limit: int) -> list[Unit]:
        """Episodes whose point is not written yet."""
        return [unit(r) for r in self._storage.episodes.unindexed(limit)]

    def indexed(self, units: Sequence[Unit], vectors: Sequence[Sequence[float]]) -> None:
        """Mark the episodes indexed."""
        self._storage.episodes.mark_indexed([u.id for u in units])

    def reset(self) -> int:
        """Every episode needs its point again."""
        return self._storage.episodes.mark_all_unindexed()

    def indexed_count(self) -> int:
        """Episodes with their point written."""
        return self._storage.episodes.indexed_count()

    def texts(self, ids: Sequence[str]) -> dict[str, str]:
        """The indexed text of the episodes among ``ids``."""
        return {i: Episode.from_row(r).text() for i, r in self._storage.episodes.get_many(list(ids)).items()}

    # --- reading ------------------------------------------------------------------------

    def search(
        self,
        user_id: str,
        query: str | None = None,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        k: int = 5,
    ) -> list[EpisodeHit]:
        """The user's episodes overlapping ``[since, until]``: by relevance to ``query``,
        else newest first. Relevance needs the index (raises ``ShardLockedError`` while
        another process holds it)."""
        if self._by_relevance(query):
            found = self._index.candidates_many([self._probe(user_id, query)])[0]
            return self._ranked(user_id, found, since, until, k)
        newest = self._storage.episodes.of_user(
            user_id, since.isoformat() if since else None, until.isoformat() if until else None
        )
        return [EpisodeHit(Episode.from_row(r), None) for r in newest[:k]]

    def _by_relevance(self, query: str | None) -> TypeGuard[str]:
        """Whether a search for ``query`` ranks episodes by relevance: there is a query,
        and there are episodes to rank."""
        return bool(query and query.strip()) and self._storage.episodes.exists()

    def _probe(self, user_id: str, query: str) -> Probe:
        # Both legs without the speakers' names, as recall searches: an episode's lines are
        # credited to their speakers ("Mel: …"), so a name in the BM25 query would match
        # every episode that person spoke in.
        text = self._embedded(user_id, query) if self._embedded is not None else query
        return Probe(text, self._index.embed_query(text), self._index.where(user_id, self.grains), _CANDIDATES)

    def _ranked(
        self, user_id: str, found: Sequence[Candidate], since: datetime | None, until: datetime | None, k: int
    ) -> list[EpisodeHit]:
        # Relevance needs only the index's scores: rows (long summaries) are read best
        # first, a few at a time, until k of them pass the owner and time checks.
        ranked = sorted(((scoring.relevance(c.dense, c.sparse), c.id) for c in found), key=lambda rc: -rc[0])
        ranked = [(r, i) for r, i in ranked if r >= self._threshold]
        hits: list[EpisodeHit] = []
        step = max(1, 2 * k)
        for start in range(0, len(ranked), step):
            chunk = ranked[start : start + step]
            rows = self._storage.episodes.get_many([i for _, i in chunk])
            for relevance, episode_id in chunk:
                row = rows.get(episode_id)
                if row is not None and row.user_id == user_id and _overlaps(row, since, until):
                    hits.append(EpisodeHit(Episode.from_row(row), relevance))
            if len(hits) >= k:
                break
        return hits[:k]

    def plan(self, request: SectionRequest) -> None:
        """Adds the section's search to the turn's searches (:class:`~.searches.Searches`)."""
        query = request.query
        if request.searches is not None and self._k > 0 and self._index.available() and self._by_relevance(query):
            request.searches.add(self, [self._probe(request.user_id, query)])

    def section(self, request: SectionRequest, max_tokens: int) -> ContextSection | None:
        """Past episodes relevant to the query (the newest without one), one line each."""
        if self._k == 0:
            return None
        if request.searches is not None and request.searches.holds(self):
            hits = self._ranked(request.user_id, request.searches.found(self)[0], None, None, self._k)
        else:
            query = request.query if self._index.available() else None
            hits = self.search(request.user_id, query, k=self._k)
        lines = (render(hit.episode) for hit in hits)
        return section_of_lines(self.name, lines, self._counter, min(max_tokens, self._max_tokens))


def _overlaps(row: EpisodeRow, since: datetime | None, until: datetime | None) -> bool:
    if since is not None and datetime.fromisoformat(row.ended_at) < since:
        return False
    return not (until is not None and datetime.fromisoformat(row.started_at) > until)


def unit(row: EpisodeRow) -> Unit:
    """The index unit of an episode (a ``session``)."""
    text = episode_text(row.summary, row.decisions, row.outcome, row.topics)
    return Unit(id=row.id, user_id=row.user_id, grain="session", text=text, at=row.started_at,
                fields={"current": 1})


def render(episode: Episode) -> str:
    """One line of the episodes section."""
    span = f"{episode.started_at:%Y-%m-%d %H:%M} → {episode.ended_at:%Y-%m-%d %H:%M}"
    line = f"- [{span}] " + " ".join(episode.summary.split())
    if episode.decisions:
        line += " Decisions: " + "; ".join(" ".join(d.split()).rstrip(".") for d in episode.decisions) + "."
    if episode.outcome:
        line += " Outcome: " + " ".join(episode.outcome.split())
    return line
