"""``TieredMemoryStore``: the memory as a LangGraph ``BaseStore``.

So ``graph.compile(store=memory.store)``, ``get_store()`` in a node, and store-based tools
(LangMem's ``create_manage_memory_tool`` / ``create_search_memory_tool``) work on the same
data as ``memory.memories.search``:

- a namespace ``("memories", user_id, *sub)`` holds that user's long-term memories — each
  item is the address (namespace, key, value as put) of a memory, which owns the text and
  is searched with recall when a query is given;
- any other namespace holds generic items (``memory.items``).

Both behave as LangGraph's ``InMemoryStore`` does (``tests/test_store.py`` runs the same
operations against both); :class:`TieredMemoryStore` lists where and why they differ.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterable
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import numpy as np
from langchain_core.embeddings import Embeddings
from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    ensure_embeddings,
)

from ..entries import MAX_K, MemoryEntry, check_query
from ..errors import InvalidInputError, NotFoundError
from ..layers.items import item_texts
from ..storage.rows import StoreRow
from ..vocabulary import MEMORY_TYPES
from .store_ops import (
    MEMORIES,
    by_namespace,
    check_op,
    cosine,
    does_match,
    item_of,
    matches,
    not_provided,
    search_item,
)

if TYPE_CHECKING:
    from ..memory import TieredMemory

# Memory ids are UUIDs; a key that is not one is mapped to a stable UUID under this.
_KEY_IDS = uuid.UUID("6f0d8a52-4c1e-5b7a-9d3e-2a6c0b1f7e45")


class TieredMemoryStore(BaseStore):
    """A LangGraph store over one :class:`TieredMemory`, with ``InMemoryStore``'s semantics.

    ``put``/``get``/``delete``, ``search`` (``query``, ``filter`` with ``$eq``, ``$ne``,
    ``$gt``, ``$gte``, ``$lt``, ``$lte``, nested dicts and lists, ``limit``, ``offset``) and
    ``list_namespaces`` (``prefix``/``suffix`` with ``"*"``, ``max_depth``) give the results
    ``InMemoryStore`` gives, in its order: items namespace by namespace (in the order the
    namespaces got their first item), each namespace's in the order its keys were first put;
    a ``query`` ranks by the best cosine over the item's embedded fields. A batch's reads see
    the store as it was before the batch; its puts apply after them, the last put of a key
    winning — as in ``InMemoryStore`` and ``SqliteStore``.

    Where it differs, on purpose:

    - Data persists in the memory's database; values must be JSON (a ``dict`` with ``str``
      keys; tuples come back as lists), else :class:`InvalidInputError` before anything is
      written. A non-dict value, a non-``str`` key, a negative ``limit``/``offset``, an unknown
      filter operator or match type are refused the same way; a namespace that is not a tuple
      of labels, or a label holding ``"\\x1f"``, raises ``InvalidNamespaceError`` as
      ``BaseStore`` does for the other bad labels (also for ops passed straight to ``batch``).
    - ``created_at`` is when the key was first put; an overwrite changes ``updated_at`` only
      (``InMemoryStore`` resets both).
    - Every item is embedded (``index`` defaults to the memory's embeddings over the whole
      value), so a ``query`` always ranks; a put replaces the item's vectors (``InMemoryStore``
      keeps those of the previous value when the new one has nothing to embed).
    - ``$gt``/``$gte``/``$lt``/``$lte`` on a missing or non-numeric field do not match
      (``InMemoryStore`` raises ``TypeError``/``ValueError``).
    - A namespace exists while it holds an item (``InMemoryStore`` keeps listing emptied ones,
      and those a ``get`` looked into).
    - TTLs (minutes, ``supports_ttl``): generic items expire, reads refresh them
      (``refresh_ttl``, ``ttl=`` config), :meth:`sweep_ttl` deletes the expired; puts sweep too.

    The memories namespace ``("memories", user_id, *sub)``:

    - A put stores exactly one memory — never merged into a near-duplicate — whose text is
      the value's ``content`` string (else the ``index`` fields' text, else the value as
      JSON), with its ``memory_type``/``importance`` when valid; ``memory.memories.search``,
      ``list_memories`` and ``get_memory`` see it. A key that is a UUID, at ``sub == ()``, is
      the memory's id (LangMem's keys); another key maps to a stable UUID. Once the memory
      changed after the put (``memory.memories.update``, a merge), ``get`` shows its current
      ``content`` — and ``memory_type``/``importance`` if the value has those keys. A memory
      made by ``memory.memories.remember`` lives at ``sub == ()`` under its id and reads as
      ``{"content", "memory_type", "importance"}``. An overwrite keeps the type and
      importance the value does not set.
    - A put under a new key stays its own memory even when another key holds the same fact:
      ``BaseStore`` makes each key its own item, so a merge would let a put, delete or
      rewording under one key change or remove what ``get`` returns under the other. A
      ``query`` search returns such a fact once (the best-ranked key; "the same" is what
      ``remember`` would merge, cosine above ``merge_threshold``); a listing, without a
      query, shows every key.
    - A ``query`` search is ``memory.memories.search`` (recall ranked by relevance; at most 100
      candidates; recalled memories count as recalled).
    - Memories live until forgotten, evicted by capacity or merged into: a ``ttl`` on a
      memories put is refused (a ``ttl=`` config's ``default_ttl`` does not apply to them).
    - One user at a time: ``search(("memories",))`` is refused, a search of ``()`` covers
      the generic items only, and ``("memories",)`` itself holds no items.

    Args:
        memory: The memory whose data the store exposes.
        index: LangGraph's index config for generic items (``fields`` to embed, ``embed``);
            by default the memory's embeddings over the whole value (``dims`` is not needed).
        ttl: LangGraph's TTL config for generic items (``default_ttl``, ``refresh_on_read``).
    """

    supports_ttl = True

    def __init__(
        self, memory: TieredMemory, *, index: IndexConfig | None = None, ttl: TTLConfig | None = None
    ) -> None:
        self.memory = memory
        self.ttl_config = ttl
        self.index_config: dict[str, Any] | None = dict(index) if index else None
        self._embeddings: Embeddings | None = None
        self._fields: list[str] = list((self.index_config or {}).get("fields") or ["$"])

    # --- BaseStore ----------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run get/put/search/list-namespaces operations; results in the order of ``ops``."""
        ops = list(ops)
        for op in ops:
            self._check(op)
        results: list[Result] = [None] * len(ops)
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for i, op in enumerate(ops):
            if isinstance(op, GetOp):
                results[i] = self._get(op)
            elif isinstance(op, SearchOp):
                results[i] = self._search(op)
            elif isinstance(op, ListNamespacesOp):
                results[i] = self._list_namespaces(op)
            else:
                puts[(tuple(op.namespace), op.key)] = op
        if puts:
            self._apply_puts(list(puts.values()))
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async :meth:`batch` (in a worker thread: the database and embedding are blocking)."""
        return await asyncio.to_thread(self.batch, list(ops))

    def sweep_ttl(self) -> int:
        """Delete the generic items whose TTL has run out; returns how many."""
        return self.memory.items.expire()

    def _check(self, op: Any) -> None:
        check_op(op)
        if not isinstance(op, PutOp) or op.value is None or not_provided(op.ttl) or op.ttl is None:
            return
        default = (self.ttl_config or {}).get("default_ttl")
        if op.namespace[0] == MEMORIES and op.ttl != default:
            raise InvalidInputError(
                "memories expire by decay and capacity, not TTL; put without ttl, or use "
                "a namespace not starting with 'memories'"
            )

    # --- reads --------------------------------------------------------------------------

    def _get(self, op: GetOp) -> Item | None:
        namespace = tuple(op.namespace)
        user, sub = _memory_namespace(namespace)
        if user is None:
            row = self.memory.items.get(namespace, op.key, refresh_ttl=op.refresh_ttl)
            return item_of(row) if row else None
        found = self._find(user, namespace, op.key)
        return None if found is None else _memory_item(*found)

    def _find(self, user: str, namespace: tuple[str, ...], key: str) -> tuple[MemoryEntry, StoreRow | None] | None:
        """The memory at ``(namespace, key)`` and its store address (``None``: remember()-made)."""
        row = self.memory.items.get(namespace, key)
        if row is not None and row.memory_id is not None:
            try:
                return self.memory.memories.get(user, row.memory_id), row
            except NotFoundError:
                return None
        if namespace == (MEMORIES, user) and _is_uuid(key):
            try:
                entry = self.memory.memories.get(user, key)
            except NotFoundError:
                return None
            if not self.memory.items.addresses.of([entry.id]):
                return entry, None
        return None

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        user, sub = _memory_namespace(prefix)
        if user is not None:
            return self._search_memories(user, prefix, op)
        if prefix == (MEMORIES,):
            raise InvalidInputError(
                "search ('memories', user_id, ...) for one user's memories; searching every "
                "user's memories at once is not allowed"
            )
        rows = by_namespace([r for r in self.memory.items.under(prefix) if r.memory_id is None
                             and _memory_namespace(r.namespace)[0] is None])
        rows = [r for r in rows if matches(r.value, op.filter)]
        if not op.query:
            found = [search_item(r) for r in rows[op.offset : op.offset + op.limit]]
        else:
            # Searched by its beginning, as memory.memories.search() does: a 10 MB query would take
            # seconds to tokenize, and the model reads its first 256 tokens anyway.
            query = np.asarray(self._embedder().embed_query(check_query(op.query)), dtype=float)
            scored, scoreless = [], []
            for r in rows:
                vectors = [v for v in (r.vectors or {}).values() if len(v) == len(query)]
                if vectors:
                    scored.append((max(cosine(query, vectors)), r))
                else:  # not embedded (index=False, no field found, or another model's vectors)
                    scoreless.append(r)
            scored.sort(key=lambda pair: pair[0], reverse=True)
            found = [search_item(r, score) for score, r in scored[op.offset : op.offset + op.limit]]
            # As InMemoryStore: items without vectors fill a page the scored ones leave short.
            found += [search_item(r) for r in scoreless[: max(op.limit - len(found), 0)]]
        if op.refresh_ttl:
            self.memory.items.refresh([(i.namespace, i.key) for i in found])
        return found

    def _search_memories(self, user: str, prefix: tuple[str, ...], op: SearchOp) -> list[SearchItem]:
        end = op.offset + op.limit
        ranked: list[tuple[Item, float | None, MemoryEntry | None]]
        if op.query:
            hits = self.memory.memories.search(user, op.query, k=min(MAX_K, max(end * 3, 10)))
            addresses = self.memory.items.addresses.of([h.entry.id for h in hits])
            ranked = [(_memory_item(h.entry, addresses.get(h.entry.id)), h.score, h.entry) for h in hits]
        else:
            ranked = [(item, None, None) for item in self._listing(user, prefix)]
        ranked = [r for r in ranked if r[0].namespace[: len(prefix)] == prefix and matches(r[0].value, op.filter)]
        if op.query:
            ranked = self._one_per_fact(user, ranked)
        out = [SearchItem(i.namespace, i.key, i.value, i.created_at, i.updated_at, s) for i, s, _ in ranked[:end]]
        return out[op.offset : end]

    def _one_per_fact(
        self, user: str, ranked: list[tuple[Item, float | None, MemoryEntry | None]]
    ) -> list[tuple[Item, float | None, MemoryEntry | None]]:
        """The ranked items less those whose memory says what a better-ranked one says.

        Keys stay separate memories (each key is its own item by ``BaseStore``'s contract: a
        put, get or delete of one never touches another), so the same fact put under two keys
        would come back twice; "the same" is what ``remember`` merges: cosine of the memories'
        embeddings above ``merge_threshold``. A listing (no query) shows every key."""
        if len(ranked) < 2:
            return ranked
        entries = [entry for _, _, entry in ranked if entry is not None]
        # The vectors the index holds (what the merge check compares); only a memory not
        # indexed yet is embedded here.
        stored = self.memory.memories.vectors(user, [e.id for e in entries])
        missing = [e.content for e in entries if e.id not in stored]
        made = iter(self.memory.admin.embeddings.embed_documents(missing) if missing else [])
        vectors = np.asarray([stored[e.id] if e.id in stored else next(made) for e in entries], dtype=float)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        unit = vectors / np.where(norms == 0, 1.0, norms)
        threshold = self.memory.config.merge_threshold
        kept: list[int] = []
        for i in range(len(ranked)):
            if not kept or float(np.max(unit[kept] @ unit[i])) <= threshold:
                kept.append(i)
        return [ranked[i] for i in kept]

    def _listing(self, user: str, prefix: tuple[str, ...]) -> list[Item]:
        """The user's memory items under ``prefix`` in InMemoryStore's order; memories made
        by ``memory.memories.remember`` (no store address) sit in ``("memories", user)``, in the order
        they were made among that namespace's items."""
        rows = by_namespace(self.memory.items.under(prefix))
        entries = {e.id: e for e in self._user_memories(user)} if rows or len(prefix) == 2 else {}
        groups: dict[tuple[str, ...], list[tuple[str, Item]]] = {}
        for row in rows:
            entry = entries.get(row.memory_id or "")
            if entry is not None:
                groups.setdefault(row.namespace, []).append((row.created_at, _memory_item(entry, row)))
        if len(prefix) == 2 and entries:
            addressed = self.memory.items.addresses.of(list(entries))
            loose = [e for e in entries.values() if e.id not in addressed]
            if loose:
                group = groups.setdefault(prefix, [])
                group += [(e.created_at.isoformat(), _memory_item(e, None)) for e in loose]
                group.sort(key=lambda pair: pair[0])
        return [item for group in groups.values() for _, item in group]

    def _user_memories(self, user: str) -> list[MemoryEntry]:
        out: list[MemoryEntry] = []
        while True:
            page = self.memory.memories.list(user, limit=1_000, offset=len(out))
            out += page
            if len(page) < 1_000:
                return out

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        namespaces = set(self.memory.items.namespaces())
        namespaces.update((MEMORIES, user) for user in self.memory.items.addresses.users_without())
        found = [ns for ns in namespaces if all(does_match(c, ns) for c in op.match_conditions or ())]
        if op.max_depth is not None:
            found = list({ns[: op.max_depth] for ns in found})
        return sorted(found)[op.offset : op.offset + op.limit]

    # --- writes -------------------------------------------------------------------------

    def _apply_puts(self, puts: list[PutOp]) -> None:
        generic = []
        for op in puts:
            user, sub = _memory_namespace(tuple(op.namespace))
            if user is not None:
                self._put_memory(user, sub, op)
            else:
                generic.append(op)
        if not generic:
            return
        texts = {
            id(op): item_texts(op.value, op.index or self._fields)
            if op.value is not None and op.index is not False else {}
            for op in generic
        }
        unique = list(dict.fromkeys(t for paths in texts.values() for t in paths.values()))
        vectors = dict(zip(unique, self._embedder().embed_documents(unique))) if unique else {}
        for op in generic:
            ttl = None if not_provided(op.ttl) else op.ttl
            if not_provided(op.ttl) and self.ttl_config:
                ttl = self.ttl_config.get("default_ttl")
            if op.value is None:
                self.memory.items.delete(tuple(op.namespace), op.key)
                continue
            embedded = {path: vectors[text] for path, text in texts[id(op)].items()}
            self.memory.items.put(tuple(op.namespace), op.key, dict(op.value), vectors=embedded or None,
                                  ttl_minutes=ttl)
        self.memory.items.expire()

    def _put_memory(self, user: str, sub: tuple[str, ...], op: PutOp) -> None:
        namespace = tuple(op.namespace)
        found = self._find(user, namespace, op.key)
        if op.value is None:
            # The item first: its delete keeps the namespace's place among the others (the
            # next-oldest item takes its slot), which forgetting the memory, removing the row
            # with it, would not.
            self.memory.items.delete(namespace, op.key)
            if found is not None:
                self.memory.memories.forget(user_id=user, memory_id=found[0].id)
            return
        value = dict(op.value)
        text = value.get("content")
        if not isinstance(text, str) or not text.strip():
            fields = op.index if isinstance(op.index, list) else self._fields
            text = "\n".join(t for t in item_texts(value, fields).values() if t.strip())
            text = text or json.dumps(value, sort_keys=True, ensure_ascii=False)
        kind = value.get("memory_type", value.get("kind"))
        kind = kind if kind in MEMORY_TYPES else None
        importance = value.get("importance")
        if isinstance(importance, bool) or not isinstance(importance, (int, float)) or not 0 <= importance <= 1:
            importance = None  # as InMemoryStore would, keep the value; the memory gets the default
        if found is not None:
            entry = found[0]
            # Unless the value says otherwise, an overwrite keeps what the memory had.
            self.memory.memories.update(user, entry.id, content=text, memory_type=kind, importance=importance)
            self.memory.items.addresses.put(namespace, op.key, value, memory_id=entry.id)
            return
        ids = _memory_ids(user, sub, op.key)
        for i, memory_id in enumerate(ids):
            try:
                made = self.memory.memories.remember(
                    user, text, memory_type=kind or "fact", importance=0.5 if importance is None else importance,
                    memory_id=memory_id, merge=False,
                )
            except InvalidInputError:
                # The key, a UUID, is another user's memory id: fall back to the mapped one.
                if i == len(ids) - 1:
                    raise
                continue
            self.memory.items.addresses.put(namespace, op.key, value, memory_id=made)
            return

    # --- helpers ------------------------------------------------------------------------

    def _embedder(self) -> Embeddings:
        if self._embeddings is None:
            embed = (self.index_config or {}).get("embed")
            if embed is not None:
                self._embeddings = ensure_embeddings(embed)
            else:
                self._embeddings = self.memory.admin.embeddings
        return self._embeddings


def _memory_namespace(namespace: tuple[str, ...]) -> tuple[str | None, tuple[str, ...]]:
    """``(user_id, sub-namespace)`` of a memories namespace, ``(None, ())`` for any other."""
    if len(namespace) >= 2 and namespace[0] == MEMORIES:
        return namespace[1], namespace[2:]
    return None, ()


def _is_uuid(key: str) -> bool:
    try:
        return str(uuid.UUID(key)) == key
    except ValueError:
        return False


def _memory_ids(user: str, sub: tuple[str, ...], key: str) -> list[str]:
    """The memory ids a new put tries, in order."""
    mapped = str(uuid.uuid5(_KEY_IDS, json.dumps([user, *sub, key])))
    return [key, mapped] if not sub and _is_uuid(key) else [mapped]


def _memory_item(entry: MemoryEntry, row: StoreRow | None) -> Item:
    """A memory as a store item: the value as put, updated where the memory changed since."""
    user = entry.user_id
    if row is None:  # made by memory.memories.remember, not by a put
        value = {"content": entry.content, "memory_type": entry.memory_type, "importance": entry.importance}
        updated = entry.updated_at or entry.created_at
        return Item(value=value, key=entry.id, namespace=(MEMORIES, user), created_at=entry.created_at,
                    updated_at=updated)
    value = dict(row.value)
    created = datetime.fromisoformat(row.created_at)
    updated = datetime.fromisoformat(row.updated_at)
    changed = entry.updated_at is not None and entry.updated_at > updated
    if changed:
        # Rewritten since the put (update_memory, a merge): the store shows what it is now.
        if entry.content != value.get("content"):
            value["content"] = entry.content
        for field in ("memory_type", "importance"):
            if field in value and getattr(entry, field) != value[field]:
                value[field] = getattr(entry, field)
        assert entry.updated_at is not None
        updated = entry.updated_at
    return Item(value=value, key=row.key, namespace=row.namespace, created_at=created,
                updated_at=max(updated, created).astimezone(timezone.utc))

