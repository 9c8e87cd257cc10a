"""``TieredMemoryStore``: the memory as a LangGraph ``BaseStore``.

So ``graph.compile(store=memory.store)``, ``get_store()`` in a node, and store-based tools
(LangMem's ``create_manage_memory_tool`` / ``create_search_memory_tool``) work on the same
data as ``memory.search``:

- a namespace ``("memories", user_id, *sub)`` holds that user's long-term memories — the
  vector layer's records, searched with hybrid recall; ``sub`` is kept with each memory and
  matched as a prefix;
- any other namespace holds generic items in ``memory.db`` with the semantics of LangGraph's
  ``InMemoryStore`` (insertion order, JSON-like filters, cosine search over the fields named
  by ``index``), plus TTLs.

TTLs apply to generic items; a memory's lifetime is governed by decay and capacity instead,
so a ``ttl`` on a ``("memories", …)`` put is refused with an error saying so.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from langchain_core.embeddings import Embeddings
from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    ensure_embeddings,
    get_text_at_path,
    tokenize_path,
)

from ..errors import InvalidInputError, NotFoundError

if TYPE_CHECKING:
    from ..manager import TieredMemory

MEMORIES = "memories"
#: Where a memory keeps the value it was put with, so ``get`` returns it as given.
STORE_VALUE = "store_value"
STORE_SUBSPACE = "store_namespace"


class TieredMemoryStore(BaseStore):
    """A LangGraph store over one :class:`TieredMemory`.

    Args:
        memory: The memory whose data the store exposes.
        index: LangGraph's index config for generic items (``fields`` to embed, ``embed``);
            by default the memory's embeddings over the whole value.
        ttl: LangGraph's TTL config for generic items (``default_ttl``, ``refresh_on_read``).
    """

    supports_ttl = True

    def __init__(
        self, memory: TieredMemory, *, index: IndexConfig | None = None, ttl: TTLConfig | None = None
    ) -> None:
        self.memory = memory
        self.ttl_config = ttl
        self.index_config = dict(index) if index else None
        self._embeddings: Embeddings | None = None
        fields = (self.index_config or {}).get("fields") or ["$"]
        self._fields = [(f, tokenize_path(f) if f != "$" else f) for f in fields]

    # --- BaseStore ----------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run get/put/search/list-namespaces operations, in order."""
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, PutOp):
                self._put(op)
                results.append(None)
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            else:
                raise InvalidInputError(f"unknown store operation {type(op).__name__}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async :meth:`batch` (in a worker thread: SQLite and embedding are blocking)."""
        return await asyncio.to_thread(self.batch, list(ops))

    # --- operations ---------------------------------------------------------------------

    def _get(self, op: GetOp) -> Item | None:
        user, sub = _memory_namespace(op.namespace)
        if user is not None:
            try:
                entry = self.memory.get_memory(user, op.key)
            except NotFoundError:
                return None
            if tuple(entry.metadata.get(STORE_SUBSPACE, ())) != sub:
                return None
            return _memory_item(entry, op.namespace)
        rows = self.memory._storage.store_items(op.namespace, op.key, refresh_ttl=self._refresh(op.refresh_ttl))
        return _item(rows[0]) if rows else None

    def _put(self, op: PutOp) -> None:
        user, sub = _memory_namespace(op.namespace)
        if user is not None:
            if op.ttl not in (None,) and not _is_not_provided(op.ttl):
                raise InvalidInputError(
                    "memories expire by decay and capacity, not TTL; put without ttl, or use "
                    "a namespace not starting with 'memories'"
                )
            self._put_memory(user, sub, op)
            return
        ttl = None if _is_not_provided(op.ttl) else op.ttl
        if ttl is None and self.ttl_config and _is_not_provided(op.ttl):
            ttl = self.ttl_config.get("default_ttl")
        vectors = None
        if op.value is not None and op.index is not False:
            vectors = self._embed_value(op.value, op.index)
        self.memory._storage.store_put(
            op.namespace, op.key, None if op.value is None else dict(op.value),
            vectors=vectors, ttl_minutes=ttl, now=_now(),
        )

    def _put_memory(self, user: str, sub: tuple[str, ...], op: PutOp) -> None:
        if op.value is None:
            try:
                self.memory.forget(user_id=user, memory_id=op.key)
            except NotFoundError:
                pass
            return
        value = dict(op.value)
        content = value.get("content")
        text = content if isinstance(content, str) and content.strip() else _as_text(value, self._fields)
        kind = value.get("memory_type", value.get("kind", "fact"))
        if kind not in ("fact", "preference", "experience", "instruction"):
            kind = "fact"
        importance = value.get("importance", 0.5)
        if not isinstance(importance, (int, float)) or isinstance(importance, bool) or not 0 <= importance <= 1:
            importance = 0.5
        metadata = {STORE_VALUE: value, STORE_SUBSPACE: list(sub)}
        try:
            self.memory.update_memory(user, op.key, content=text, memory_type=kind, importance=importance, metadata=metadata)
        except NotFoundError:
            self.memory.remember(user, text, memory_type=kind, importance=importance, metadata=metadata, memory_id=op.key)

    def _search(self, op: SearchOp) -> list[SearchItem]:
        user, sub = _memory_namespace(op.namespace_prefix, prefix=True)
        if user is not None:
            return self._search_memories(user, sub, op)
        if op.namespace_prefix[:1] == (MEMORIES,) and len(op.namespace_prefix) == 1:
            # ("memories",) spans every user: refused, so no search can mix users' memories.
            raise InvalidInputError(
                "search ('memories', user_id, ...) for one user's memories; searching every "
                "user's memories at once is not allowed"
            )
        rows = self.memory._storage.store_items(op.namespace_prefix, refresh_ttl=self._refresh(op.refresh_ttl))
        rows = [r for r in rows if _matches(r.value, op.filter)]
        if not op.query:
            return [_search_item(r) for r in rows[op.offset : op.offset + op.limit]]
        query = self._embedder().embed_query(op.query)
        scored, scoreless = [], []
        for r in rows:
            if r.vectors:
                scored.append((max(_cosine(query, v) for v in r.vectors.values()), r))
            else:
                scoreless.append(r)
        scored.sort(key=lambda pair: pair[0], reverse=True)
        kept = [_search_item(r, score) for score, r in scored[op.offset : op.offset + op.limit]]
        if len(kept) < op.limit:
            kept += [_search_item(r) for r in scoreless[: op.limit - len(kept)]]
        return kept

    def _search_memories(self, user: str, sub: tuple[str, ...], op: SearchOp) -> list[SearchItem]:
        namespace = (MEMORIES, user)
        want = op.offset + op.limit
        if op.query:
            hits = self.memory.search(user, op.query, k=max(want * 3, 10))
            entries = [(h.entry, h.score) for h in hits]
        else:
            entries = [(e, None) for e in self.memory.list_memories(user, limit=10_000)]
        out: list[SearchItem] = []
        for entry, score in entries:
            entry_sub = tuple(entry.metadata.get(STORE_SUBSPACE, ()))
            if entry_sub[: len(sub)] != sub:
                continue
            item = _memory_item(entry, namespace + entry_sub)
            if not _matches(item.value, op.filter):
                continue
            out.append(SearchItem(item.namespace, item.key, item.value, item.created_at, item.updated_at, score))
        return out[op.offset : want]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        namespaces = set(self.memory._storage.store_namespaces())
        for user in self.memory._memory_users():
            namespaces.update((MEMORIES, user, *sub) for sub in self.memory._memory_subspaces(user))
        found = [ns for ns in namespaces if all(_does_match(c, ns) for c in op.match_conditions or ())]
        if op.max_depth is not None:
            found = list({ns[: op.max_depth] for ns in found})
        return sorted(found)[op.offset : op.offset + op.limit]

    # --- helpers ------------------------------------------------------------------------

    def _refresh(self, refresh: bool | None) -> bool:
        if refresh is not None:
            return refresh
        return bool(self.ttl_config and self.ttl_config.get("refresh_on_read", True))

    def _embedder(self) -> Embeddings:
        if self._embeddings is None:
            embed = (self.index_config or {}).get("embed")
            self._embeddings = ensure_embeddings(embed) if embed is not None else self.memory._embedder()
        return self._embeddings

    def _embed_value(self, value: dict[str, Any], index: Sequence[str] | None) -> dict[str, list[float]] | None:
        fields = self._fields if index is None else [(f, tokenize_path(f)) for f in index]
        texts: dict[str, str] = {}
        for path, tokens in fields:
            found = [value] if tokens == "$" else get_text_at_path(value, tokens)
            found = [_stringify(t) for t in found]
            for i, text in enumerate(found):
                if text:
                    texts[path if len(found) == 1 else f"{path}.{i}"] = text
        if not texts:
            return None
        vectors = self._embedder().embed_documents(list(texts.values()))
        return dict(zip(texts, vectors))


def _is_not_provided(value: Any) -> bool:
    return type(value).__name__ == "NotProvided"


def _memory_namespace(namespace: Sequence[str], *, prefix: bool = False) -> tuple[str | None, tuple[str, ...]]:
    """``(user_id, sub-namespace)`` of a memories namespace, ``(None, ())`` for any other."""
    ns = tuple(namespace)
    if len(ns) >= 2 and ns[0] == MEMORIES:
        return ns[1], ns[2:]
    return None, ()


def _memory_item(entry: Any, namespace: tuple[str, ...]) -> Item:
    value = entry.metadata.get(STORE_VALUE)
    if not isinstance(value, dict):
        value = {"content": entry.content, "memory_type": entry.memory_type, "importance": entry.importance}
    return Item(value=value, key=entry.id, namespace=namespace, created_at=entry.created_at, updated_at=entry.last_accessed)


def _item(row: Any) -> Item:
    return Item(value=row.value, key=row.key, namespace=row.namespace,
                created_at=datetime.fromisoformat(row.created_at), updated_at=datetime.fromisoformat(row.updated_at))


def _search_item(row: Any, score: float | None = None) -> SearchItem:
    return SearchItem(row.namespace, row.key, row.value, datetime.fromisoformat(row.created_at),
                      datetime.fromisoformat(row.updated_at), score)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


def _stringify(value: Any) -> str:
    import json

    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


def _as_text(value: dict[str, Any], fields: list[tuple[str, Any]]) -> str:
    parts = []
    for _, tokens in fields:
        found = [value] if tokens == "$" else get_text_at_path(value, tokens)
        parts += [_stringify(t) for t in found if t]
    return "\n".join(parts)


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b))
    na, nb = math.sqrt(sum(x * x for x in a)), math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


def _matches(value: dict[str, Any], flt: dict[str, Any] | None) -> bool:
    return not flt or all(_compare(value.get(k), v) for k, v in flt.items())


def _compare(item_value: Any, filter_value: Any) -> bool:
    """InMemoryStore's JSON-like comparison: nested dicts, lists, and $eq/$ne/$gt/… operators."""
    if isinstance(filter_value, dict):
        if any(k.startswith("$") for k in filter_value):
            return all(_operator(item_value, k, v) for k, v in filter_value.items())
        return isinstance(item_value, dict) and all(_compare(item_value.get(k), v) for k, v in filter_value.items())
    if isinstance(filter_value, (list, tuple)):
        return (
            isinstance(item_value, (list, tuple))
            and len(item_value) == len(filter_value)
            and all(_compare(a, b) for a, b in zip(item_value, filter_value))
        )
    return item_value == filter_value


def _operator(value: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return value == operand
    if op == "$ne":
        return value != operand
    if op in ("$gt", "$gte", "$lt", "$lte"):
        try:
            a, b = float(value), float(operand)
        except (TypeError, ValueError):
            return False
        return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]
    raise InvalidInputError(f"unsupported filter operator {op!r}; use $eq, $ne, $gt, $gte, $lt or $lte")


def _does_match(condition: MatchCondition, ns: tuple[str, ...]) -> bool:
    path = condition.path
    if len(ns) < len(path):
        return False
    pairs = zip(ns, path) if condition.match_type == "prefix" else zip(reversed(ns), reversed(path))
    return all(p == "*" or k == p for k, p in pairs)
