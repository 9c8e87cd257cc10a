"""Episodic memory: one snapshot per finished session of a thread.

An episode says what happened, the decisions, the outcome, the topics and the time span. It
is written by a journaled job through the extraction path (one LLM call, or the offline
extractive episode), stored as a SQLite record (its owner) with a vector in the episodes
collection (an index, rebuilt by ``reindex``). A session is the span of a thread's messages
after its previous episode; ``end_session`` closes it, and so does an idle timeout.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from .context import ContextSection, section_of_lines
from .storage import EpisodeRow, Storage, ThreadRow
from .tokens import TokenCounter

_NAMESPACE = uuid.UUID("6f1d7c62-3a55-4c1e-9a49-5b1f0e2d8a11")


def episode_id(thread_id: str, last_seq: int) -> str:
    """The id of the episode ending at ``last_seq``: the same however often it is written."""
    return str(uuid.uuid5(_NAMESPACE, f"{thread_id}\x1f{last_seq}"))


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
        """An episode from its SQLite record."""
        return cls(row.id, row.user_id, row.thread_id, datetime.fromisoformat(row.started_at),
                   datetime.fromisoformat(row.ended_at), row.summary, list(row.decisions),
                   row.outcome, list(row.topics))

    def text(self) -> str:
        """The text embedded and indexed for recall."""
        parts = [self.summary]
        if self.decisions:
            parts.append("Decisions: " + "; ".join(self.decisions))
        if self.outcome:
            parts.append("Outcome: " + self.outcome)
        if self.topics:
            parts.append("Topics: " + ", ".join(self.topics))
        return "\n".join(parts)


@dataclass(frozen=True)
class EpisodeHit:
    """An episode found by :meth:`TieredMemory.search_episodes`, with its relevance."""

    episode: Episode
    score: float | None


class EpisodeIndex(Protocol):
    """The vector side of episodes: what the episodes layer needs of a vector collection."""

    def upsert(self, user_id: str, episode_id: str, text: str, payload: dict[str, Any]) -> None:
        """Index (or re-index) one episode."""

    def query(
        self, user_id: str, text: str, k: int, since: float | None, until: float | None
    ) -> list[tuple[str, float]]:
        """``(episode_id, score)`` of the user's episodes nearest ``text`` in the time range."""

    def delete(self, ids: Sequence[str]) -> None:
        """Remove episodes from the index."""


class EpisodeLayer:
    """Reads episodes and contributes the ``episodes`` section of the context."""

    name = "episodes"

    def __init__(
        self,
        storage: Storage,
        counter: TokenCounter,
        index: Callable[[], EpisodeIndex | None],
        *,
        max_tokens: int,
        k: int,
    ) -> None:
        self._storage = storage
        self._counter = counter
        self._index = index
        self._max_tokens = max_tokens
        self._k = k

    def search(
        self,
        user_id: str,
        query: str | None = None,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        k: int = 5,
    ) -> list[EpisodeHit]:
        """The user's episodes in ``[since, until]``: by relevance to ``query``, else newest first."""
        if query and query.strip() and (index := self._index()) is not None:
            found = index.query(user_id, query, k, _epoch(since), _epoch(until))
            rows = {r.id: r for r in self._storage.episodes_of(user_id, ids=[i for i, _ in found])}
            return [EpisodeHit(Episode.from_row(rows[i]), s) for i, s in found if i in rows]
        rows = self._storage.episodes_of(
            user_id, since.isoformat() if since else None, until.isoformat() if until else None
        )
        return [EpisodeHit(Episode.from_row(r), None) for r in rows[:k]]

    def section(
        self, user_id: str, thread: ThreadRow | None, query: str | None, max_tokens: int
    ) -> ContextSection | None:
        """Past episodes relevant to the query, one line each, within the budget."""
        if self._k == 0:
            return None
        lines = (render(hit.episode) for hit in self.search(user_id, query, k=self._k))
        return section_of_lines(self.name, lines, self._counter, min(max_tokens, self._max_tokens))


def render(episode: Episode) -> str:
    """One line of the episodes section."""
    span = f"{episode.started_at:%Y-%m-%d %H:%M} → {episode.ended_at:%Y-%m-%d %H:%M}"
    line = f"- [{span}] " + " ".join(episode.summary.split())
    if episode.decisions:
        line += " Decisions: " + "; ".join(d.strip().rstrip(".") for d in episode.decisions) + "."
    if episode.outcome:
        line += " Outcome: " + " ".join(episode.outcome.split())
    return line


def payload(episode: Episode) -> dict[str, Any]:
    """What the vector index keeps beside an episode: owner, thread and time span."""
    return {
        "user_id": episode.user_id,
        "thread_id": episode.thread_id,
        "started_at": episode.started_at.timestamp(),
        "ended_at": episode.ended_at.timestamp(),
    }


def _epoch(value: datetime | None) -> float | None:
    return None if value is None else value.timestamp()


class BackendEpisodeIndex:
    """:class:`EpisodeIndex` over a vector backend collection (Edge shard or server)."""

    def __init__(self, backend: Any, embeddings: Any) -> None:
        self._backend = backend
        self._embeddings = embeddings

    def upsert(self, user_id: str, episode_id: str, text: str, payload: dict[str, Any]) -> None:
        from .backends.base import PointData

        vector = self._embeddings.embed_documents([text])[0]
        self._backend.upsert([PointData(episode_id, vector, text, {**payload, "user_id": user_id})])

    def query(
        self, user_id: str, text: str, k: int, since: float | None, until: float | None
    ) -> list[tuple[str, float]]:
        from .backends.base import HybridQuery, Range, Where

        ranges = {}
        if since is not None:
            ranges["ended_at"] = Range(gte=since)
        if until is not None:
            ranges["started_at"] = Range(lte=until)
        where = Where(equals={"user_id": user_id}, ranges=ranges)
        hits = self._backend.hybrid(
            HybridQuery(vector=self._embeddings.embed_query(text), text=text, where=where, limit=k)
        )
        return [(h.id, h.score) for h in hits]

    def delete(self, ids: Sequence[str]) -> None:
        if ids:
            self._backend.delete(list(ids))


def episode_schema() -> Any:
    """The payload fields the episodes collection indexes."""
    from .backends.base import CollectionSchema

    return CollectionSchema(
        tenant_field="user_id", keyword_fields=("thread_id",), float_fields=("started_at", "ended_at")
    )
