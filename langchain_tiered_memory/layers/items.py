"""Generic items: namespaced JSON documents with optional TTLs and vectors.

The relational side of the LangGraph store (``memory.store``): what it keeps besides a
user's long-term memories. An item under a user's memories namespace is the store's
address of a memory (``memory_id``); the memory owns the text.

:class:`ItemLayer` is the layer, as the memory's parts use it (embedding values again on a
reindex, for one). ``memory.items`` is :class:`Items`, a narrow view over it: reading,
writing and deleting items, their namespaces and TTLs, and — under :attr:`Items.addresses`
— the store addresses of memories, which only the LangGraph store adapter writes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..storage.rows import StoreRow

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

    from ..storage import Storage

__all__ = ["ItemLayer", "Items", "MemoryAddresses", "StoreRow", "item_texts"]


def item_texts(value: Mapping[str, Any], fields: Sequence[str] = ("$",)) -> dict[str, str]:
    """The texts of ``value`` to embed, by field path (``path.i`` for each of several),
    as LangGraph's ``InMemoryStore`` finds them (``"$"``: the whole value as JSON)."""
    from langgraph.store.base import get_text_at_path, tokenize_path

    texts: dict[str, str] = {}
    for path in fields:
        found = get_text_at_path(value, "$" if path == "$" else tokenize_path(path))
        for i, text in enumerate(found):
            texts[f"{path}.{i}" if len(found) > 1 else path] = text
    return texts


class ItemLayer:
    """Every namespaced item of one memory: the layer (``memory.items`` is its :class:`Items` view)."""

    def __init__(self, storage: Storage, clock: Callable[[], datetime], embeddings: Callable[[], Embeddings]) -> None:
        self._storage = storage
        self._clock = clock
        self._embeddings = embeddings

    def embed_value(
        self, value: Mapping[str, Any], fields: Sequence[str] = ("$",), embeddings: Embeddings | None = None
    ) -> dict[str, list[float]] | None:
        """The vectors of ``value``'s texts by field path (``None`` when nothing is embedded)."""
        texts = item_texts(value, fields)
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


class MemoryAddresses:
    """The store addresses of memories: the items under ``("memories", user_id, …)`` that
    name a memory (``memory_id``) instead of holding a value of their own. The LangGraph
    store adapter (``memory.store``) writes them; reading them tells which store key a
    memory has."""

    def __init__(self, layer: ItemLayer) -> None:
        self._layer = layer

    def put(self, namespace: Sequence[str], key: str, value: dict[str, Any], *, memory_id: str) -> None:
        """Make ``(namespace, key)`` the address of memory ``memory_id`` (its value as put)."""
        self._layer.put(namespace, key, value, memory_id=memory_id)

    def of(self, memory_ids: Sequence[str]) -> dict[str, StoreRow]:
        """The addresses of these memories, by memory id (memories without one left out)."""
        return self._layer.by_memory(memory_ids)

    def users_without(self) -> list[str]:
        """Users with a memory that has no address (made by ``memories.remember``)."""
        return self._layer.loose_memory_users()


class Items:
    """The LangGraph store's documents besides memories: namespaced JSON values, with
    optional vectors (by field path) and TTLs. ``memory.items``; a view over the memory's
    :class:`ItemLayer` that leaves its internals (embedding, bulk lookups) out."""

    def __init__(self, layer: ItemLayer) -> None:
        self._layer = layer
        #: The store addresses of memories (see :class:`MemoryAddresses`).
        self.addresses = MemoryAddresses(layer)

    def get(self, namespace: Sequence[str], key: str, *, refresh_ttl: bool = False) -> StoreRow | None:
        """One live item, or ``None`` (``refresh_ttl``: restart its TTL)."""
        return self._layer.get(namespace, key, refresh_ttl=refresh_ttl)

    def under(self, prefix: Sequence[str], *, refresh_ttl: bool = False) -> list[StoreRow]:
        """The live items under a namespace prefix, in insertion order."""
        return self._layer.under(prefix, refresh_ttl=refresh_ttl)

    def namespaces(self) -> list[tuple[str, ...]]:
        """Every namespace holding a live item."""
        return self._layer.namespaces()

    def put(
        self,
        namespace: Sequence[str],
        key: str,
        value: dict[str, Any],
        *,
        vectors: dict[str, list[float]] | None = None,
        ttl_minutes: float | None = None,
    ) -> None:
        """Insert or replace an item (a replacement keeps ``created_at`` and its place);
        ``vectors`` by field path (see :func:`item_texts`), ``ttl_minutes`` its lifetime."""
        self._layer.put(namespace, key, value, vectors=vectors, ttl_minutes=ttl_minutes)

    def delete(self, namespace: Sequence[str], key: str) -> None:
        """Delete an item (no error if there is none)."""
        self._layer.delete(namespace, key)

    def refresh(self, items: Sequence[tuple[Sequence[str], str]]) -> None:
        """Restart the TTL of these ``(namespace, key)`` items."""
        self._layer.refresh(items)

    def expire(self) -> int:
        """Delete the items whose TTL has run out; how many."""
        return self._layer.sweep()
