"""Generic items: namespaced JSON documents with optional TTLs and vectors.

The relational side of the LangGraph store (``memory.store``): what it keeps besides a
user's long-term memories. An item under a user's memories namespace is the store's
address of a memory (``memory_id``); the memory owns the text.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..storage.rows import StoreRow

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

    from ..storage import Storage

__all__ = ["Items", "StoreRow"]


class Items:
    """Every namespaced item of one memory."""

    def __init__(self, storage: Storage, clock: Callable[[], datetime], embeddings: Callable[[], Embeddings]) -> None:
        self._storage = storage
        self._clock = clock
        self._embeddings = embeddings

    @staticmethod
    def texts(value: Mapping[str, Any], fields: Sequence[str] = ("$",)) -> dict[str, str]:
        """The texts of ``value`` to embed, by field path (``path.i`` for each of several),
        as LangGraph's ``InMemoryStore`` finds them (``"$"``: the whole value as JSON)."""
        from langgraph.store.base import get_text_at_path, tokenize_path

        texts: dict[str, str] = {}
        for path in fields:
            found = get_text_at_path(value, "$" if path == "$" else tokenize_path(path))
            for i, text in enumerate(found):
                texts[f"{path}.{i}" if len(found) > 1 else path] = text
        return texts

    def embed_value(
        self, value: Mapping[str, Any], fields: Sequence[str] = ("$",), embeddings: Embeddings | None = None
    ) -> dict[str, list[float]] | None:
        """The vectors of ``value``'s texts by field path (``None`` when nothing is embedded)."""
        texts = self.texts(value, fields)
        if not texts:
            return None
        model = embeddings if embeddings is not None else self._embeddings()
        return dict(zip(texts, model.embed_documents(list(texts.values()))))

    def put(
        self,
        namespace: Sequence[str],
        key: str,
        value: dict[str, Any],
        *,
        vectors: dict[str, list[float]] | None = None,
        ttl_minutes: float | None = None,
        memory_id: str | None = None,
    ) -> None:
        """Insert or replace an item (a replacement keeps ``created_at`` and its place)."""
        self._storage.store_items.put(
            namespace, key, value, vectors=vectors, ttl_minutes=ttl_minutes, memory_id=memory_id,
            now=self._clock().isoformat(),
        )

    def delete(self, namespace: Sequence[str], key: str) -> None:
        """Delete an item (no error if there is none)."""
        self._storage.store_items.put(namespace, key, None, now=self._clock().isoformat())

    def get(self, namespace: Sequence[str], key: str, *, refresh_ttl: bool = False) -> StoreRow | None:
        """One live item, or ``None``."""
        rows = self._storage.store_items.items(namespace, key, refresh_ttl=refresh_ttl)
        return rows[0] if rows else None

    def under(self, prefix: Sequence[str], *, refresh_ttl: bool = False) -> list[StoreRow]:
        """The live items under a namespace prefix, in insertion order."""
        return self._storage.store_items.items(prefix, refresh_ttl=refresh_ttl)

    def refresh(self, items: Sequence[tuple[Sequence[str], str]]) -> None:
        """Restart the TTL of these ``(namespace, key)`` items."""
        self._storage.store_items.refresh(items)

    def namespaces(self) -> list[tuple[str, ...]]:
        """Every namespace holding a live item."""
        return self._storage.store_items.namespaces()

    def by_memory(self, memory_ids: Sequence[str]) -> dict[str, StoreRow]:
        """The store addresses of memories, by memory id (memories without one left out)."""
        return self._storage.store_items.by_memory(memory_ids)

    def loose_memory_users(self) -> list[str]:
        """Users with a memory that has no store address (made by ``remember``)."""
        return self._storage.store_items.loose_memory_users()

    def sweep(self) -> int:
        """Delete expired items; how many."""
        return self._storage.store_items.sweep()
