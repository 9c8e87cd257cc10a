"""``memory.episodes``: what happened in each session of a thread, searchable by time and
topic (``memory.end_session`` writes one)."""

from __future__ import annotations

import asyncio
from datetime import datetime

from ..entries import check_id, check_query, check_time
from ..errors import InvalidInputError, VectorStoreError
from ..layers.episodes import EpisodeHit
from .parts import Parts

__all__ = ["Episodes"]


class Episodes:
    """The episodes of each user: ``memory.episodes``.

    An episode is written when a session of a thread ends (``memory.end_session``, or after
    ``idle_timeout_minutes``): a summary, the decisions, the outcome and the topics.
    """

    def __init__(self, parts: Parts) -> None:
        self._parts = parts

    def search(
        self,
        user_id: str,
        query: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        k: int = 5,
    ) -> list[EpisodeHit]:
        """The user's episodes overlapping ``[since, until]``, most relevant to ``query`` first
        (newest first without a query)."""
        self._parts.check_open()
        check_id("user_id", user_id)
        if query is not None:
            query = check_query(query)
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise InvalidInputError(f"k must be a positive int, got {k!r}")
        check_time("since", since)
        check_time("until", until)
        try:
            return self._parts.episodes.search(user_id, query, since=since, until=until, k=k)
        except VectorStoreError as exc:
            self._parts.degradations.note(exc, "search_episodes")
            raise

    async def asearch(
        self,
        user_id: str,
        query: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        k: int = 5,
    ) -> list[EpisodeHit]:
        """Async :meth:`search` (embeds and queries in a worker thread)."""
        return await asyncio.to_thread(self.search, user_id, query, since, until, k)
