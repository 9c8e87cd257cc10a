"""``memory.memories``: the long-term memories of each user (remember, search, read, change,
forget), with async twins of the same signatures."""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..entries import MemoryEntry, check_id
from ..errors import VectorStoreError
from ..views import SearchResults
from .admin import forget
from .parts import Parts

__all__ = ["Memories"]


class Memories:
    """The long-term memories of each user: ``memory.memories``.

    A memory is a short statement about a user (a fact, a preference, an event) with an
    importance and metadata; the extraction jobs write them from conversations, and
    :meth:`remember` writes one directly. Recall ranks them by relevance.
    """

    def __init__(self, parts: Parts) -> None:
        self._parts = parts

    def remember(
        self, user_id: str, content: str, memory_type: str = "fact", importance: float = 0.5,
        metadata: dict[str, Any] | None = None, *, session_id: str | None = None, memory_id: str | None = None,
        merge: bool = True,
    ) -> str:
        """Store a long-term memory; returns its id (or that of the memory it merged into).

        A memory nearly identical (cosine > ``merge_threshold``) to one of the user's merges
        into it instead of adding a duplicate, unless ``merge=False``. No LLM call.
        """
        self._parts.check_open()
        item = {"content": content, "memory_type": memory_type, "importance": importance,
                "metadata": metadata, "session_id": session_id, "memory_id": memory_id}
        return self._parts.facts.remember_many(user_id, [item], merge=merge)[0]

    async def aremember(
        self, user_id: str, content: str, memory_type: str = "fact", importance: float = 0.5,
        metadata: dict[str, Any] | None = None, *, session_id: str | None = None, memory_id: str | None = None,
        merge: bool = True,
    ) -> str:
        """Async :meth:`remember` (embeds in a worker thread)."""
        return await asyncio.to_thread(
            self.remember, user_id, content, memory_type, importance, metadata,
            session_id=session_id, memory_id=memory_id, merge=merge,
        )

    def remember_many(
        self, user_id: str, items: Iterable[Mapping[str, Any]], *, merge: bool = True
    ) -> list[str]:
        """Store several memories with one embedding call; one id per item, in order.

        Each item is a mapping with ``content`` and optionally ``memory_type``,
        ``importance``, ``metadata``, ``session_id``, ``memory_id``,
        ``source_message_ids``, ``valid_from`` and ``subject``. Every item is checked
        before anything is written.
        """
        self._parts.check_open()
        return self._parts.facts.remember_many(user_id, items, merge=merge)

    async def aremember_many(
        self, user_id: str, items: Iterable[Mapping[str, Any]], *, merge: bool = True
    ) -> list[str]:
        """Async :meth:`remember_many` (embeds in a worker thread)."""
        return await asyncio.to_thread(self.remember_many, user_id, items, merge=merge)

    def search(
        self,
        user_id: str,
        query: str,
        k: int = 5,
        memory_types: Sequence[str] | None = None,
        min_importance: float | None = None,
        explain: bool = False,
        *,
        peek: bool = False,
    ) -> SearchResults:
        """The user's memories best matching ``query``: dense + BM25 candidates ranked by
        relevance (similarity), with importance and recency as bounded tie-breakers.

        Returned memories count as recalled unless ``peek=True``. Raises
        :class:`ShardLockedError` while another process holds the embedded index.
        """
        self._parts.check_open()
        try:
            hits = self._parts.facts.search(
                user_id, query, k, memory_types, min_importance, explain=explain, peek=peek
            )
        except VectorStoreError as exc:
            self._parts.degradations.note(exc, "search")
            raise
        return SearchResults(hits, query=query)

    async def asearch(
        self,
        user_id: str,
        query: str,
        k: int = 5,
        memory_types: Sequence[str] | None = None,
        min_importance: float | None = None,
        explain: bool = False,
        *,
        peek: bool = False,
    ) -> SearchResults:
        """Async :meth:`search` (embeds and queries in a worker thread)."""
        return await asyncio.to_thread(
            self.search, user_id, query, k, memory_types, min_importance, explain, peek=peek
        )

    def get(self, user_id: str, memory_id: str) -> MemoryEntry:
        """One memory of the user (``NotFoundError`` if it does not exist or is another's)."""
        self._parts.check_open()
        return self._parts.facts.get(user_id, memory_id)

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
        """Change a memory's ``content`` (embedded again), ``importance``, ``memory_type`` or
        ``metadata`` (replaced whole); what is not given stays. Returns the memory as it is now."""
        self._parts.check_open()
        return self._parts.facts.update(
            user_id, memory_id, content=content, importance=importance, memory_type=memory_type, metadata=metadata
        )

    def list(
        self, user_id: str, memory_types: Sequence[str] | None = None, limit: int = 100, offset: int = 0
    ) -> builtins.list[MemoryEntry]:
        """The user's memories, newest first (superseded ones included: their history)."""
        self._parts.check_open()
        return self._parts.facts.page(user_id, memory_types, limit, offset)

    def vectors(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, builtins.list[float]]:
        """The stored embedding of each of ``user_id``'s memories among ``memory_ids``, by id:
        what recall and the merge check compare. A memory not indexed yet, or another user's,
        has none here."""
        self._parts.check_open()
        check_id("user_id", user_id)
        return self._parts.facts.vectors(user_id, list(memory_ids))

    def count(self, user_id: str) -> int:
        """How many memories the user has, superseded ones included (what :meth:`list` pages
        through). One ``COUNT`` in the database: as cheap for 10,000 memories as for ten."""
        self._parts.check_open()
        check_id("user_id", user_id)
        return self._parts.storage.memories.count(user_id)

    async def acount(self, user_id: str) -> int:
        """Async :meth:`count` (runs in a worker thread)."""
        return await asyncio.to_thread(self.count, user_id)

    def forget(self, user_id: str, memory_id: str) -> dict[str, int]:
        """Delete one memory of the user everywhere (its record, vector and store address);
        returns counts of what was deleted (zeros when there was no such memory). For a
        thread, an entity or a whole user, see ``memory.admin.forget``."""
        return forget(self._parts, user_id=user_id, memory_id=memory_id)

    async def aforget(self, user_id: str, memory_id: str) -> dict[str, int]:
        """Async :meth:`forget` (runs in a worker thread)."""
        return await asyncio.to_thread(self.forget, user_id, memory_id)
