"""``TieredMemoryStore``: the memory as a LangGraph ``BaseStore``.

So ``graph.compile(store=memory.store)``, ``get_store()`` in a node, and store-based tools
(LangMem's ``create_manage_memory_tool`` / ``create_search_memory_tool``) work on the same
data as ``memory.search``:

- a namespace ``("memories", user_id, *sub)`` holds that user's long-term memories — the
  vector layer's records, searched with hybrid recall when a query is given;
- any other namespace holds generic items in ``memory.db``.

Both behave as LangGraph's ``InMemoryStore`` does (``tests/test_store.py`` runs the same
operations against both); :class:`TieredMemoryStore` lists where and why they differ.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

import numpy as np
from langchain_core.embeddings import Embeddings
from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    InvalidNamespaceError,
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
    validate_op_namespace,
)

from ..errors import InvalidInputError, NotFoundError

if TYPE_CHECKING:
    from ..manager import TieredMemory
    from ..vectors import MemoryEntry

MEMORIES = "memories"
#: Memory metadata: the value the memory was put with, so ``get`` returns it as given.
STORE_VALUE = "store_value"
#: Memory metadata: the ``sub`` of the ``("memories", user_id, *sub)`` it was put under.
STORE_SUBSPACE = "store_namespace"
#: Memory metadata: its store key, what the put derived from the value, and its place.
STORE_ITEM = "store_item"

_OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")
# Memory ids are UUIDs; a key that is not one is mapped to a stable UUID under this.
_KEY_IDS = uuid.UUID("6f0d8a52-4c1e-5b7a-9d3e-2a6c0b1f7e45")
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


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

    - Data persists in the memory's directory; values must be JSON (a ``dict`` with ``str``
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
      JSON), with its ``memory_type``/``importance`` when valid; ``memory.search``,
      ``list_memories`` and ``get_memory`` see it. A key that is a UUID, at ``sub == ()``, is
      the memory's id (LangMem's keys); another key maps to a stable UUID. Once the memory
      changed (``memory.update_memory``, a merge, a recall's importance boost), ``get`` shows
      its current ``content`` — and ``memory_type``/``importance`` if the value has those
      keys; a memory made by ``memory.remember`` reads as ``{"content", "memory_type",
      "importance"}``. An overwrite keeps the type and importance the value does not set.
    - A ``query`` search is ``memory.search`` (hybrid recall, importance and decay; at most
      100 candidates, recalled memories get the access boost).
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
        self.index_config = dict(index) if index else None
        self._embeddings: Embeddings | None = None
        fields = (self.index_config or {}).get("fields") or ["$"]
        self._fields = [(f, f if f == "$" else tokenize_path(f)) for f in fields]

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
        """Async :meth:`batch` (in a worker thread: SQLite and embedding are blocking)."""
        return await asyncio.to_thread(self.batch, list(ops))

    def sweep_ttl(self) -> int:
        """Delete the generic items whose TTL has run out; returns how many."""
        return self.memory._storage.store_sweep()

    def _check(self, op: Any) -> None:
        _check_op(op)
        if not isinstance(op, PutOp) or op.value is None or _not_provided(op.ttl) or op.ttl is None:
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
        if user is not None:
            entry = self._find_memory(user, sub, op.key)
            return None if entry is None else _memory_item(entry, namespace)
        rows = self.memory._storage.store_items(namespace, op.key, refresh_ttl=op.refresh_ttl)
        return _item(rows[0]) if rows else None

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        user, sub = _memory_namespace(prefix)
        if user is not None:
            return self._search_memories(user, sub, op)
        if prefix == (MEMORIES,):
            raise InvalidInputError(
                "search ('memories', user_id, ...) for one user's memories; searching every "
                "user's memories at once is not allowed"
            )
        rows = _by_namespace(self.memory._storage.store_items(prefix))
        rows = [r for r in rows if _matches(r.value, op.filter)]
        if not op.query:
            found = [_search_item(r) for r in rows[op.offset : op.offset + op.limit]]
        else:
            query = np.asarray(self._embedder().embed_query(op.query), dtype=float)
            scored, scoreless = [], []
            for r in rows:
                vectors = [v for v in (r.vectors or {}).values() if len(v) == len(query)]
                if vectors:
                    scored.append((max(_cosine(query, vectors)), r))
                else:  # not embedded (index=False, no field found, or another model's vectors)
                    scoreless.append(r)
            scored.sort(key=lambda pair: pair[0], reverse=True)
            found = [_search_item(r, score) for score, r in scored[op.offset : op.offset + op.limit]]
            # As InMemoryStore: items without vectors fill a page the scored ones leave short.
            found += [_search_item(r) for r in scoreless[: max(op.limit - len(found), 0)]]
        if op.refresh_ttl:
            self.memory._storage.store_refresh([(i.namespace, i.key) for i in found])
        return found

    def _search_memories(self, user: str, sub: tuple[str, ...], op: SearchOp) -> list[SearchItem]:
        end = op.offset + op.limit
        if op.query:
            from ..vectors import MAX_K

            hits = self.memory.search(user, op.query, k=min(MAX_K, max(end * 3, 10)))
            ranked: list[tuple[MemoryEntry, float | None]] = [(h.entry, h.score) for h in hits]
        else:
            ranked = [(e, None) for e in _in_store_order(self._user_memories(user))]
        out: list[SearchItem] = []
        for entry, score in ranked:
            entry_sub, _ = _address(entry)
            if entry_sub[: len(sub)] != sub:
                continue
            item = _memory_item(entry, (MEMORIES, user, *entry_sub))
            if _matches(item.value, op.filter):
                out.append(
                    SearchItem(item.namespace, item.key, item.value, item.created_at, item.updated_at, score)
                )
                if len(out) >= end:
                    break
        return out[op.offset : end]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        namespaces = set(self.memory._storage.store_namespaces())
        for user in self.memory._memory_users():
            namespaces.update((MEMORIES, user, *sub) for sub in self.memory._memory_subspaces(user))
        found = [ns for ns in namespaces if all(_does_match(c, ns) for c in op.match_conditions or ())]
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
            id(op): self._texts(op.value, op.index) if op.value is not None and op.index is not False else {}
            for op in generic
        }
        unique = list(dict.fromkeys(t for paths in texts.values() for t in paths.values()))
        vectors = dict(zip(unique, self._embedder().embed_documents(unique))) if unique else {}
        now = self._now().isoformat()
        storage = self.memory._storage
        for op in generic:
            ttl = None if _not_provided(op.ttl) else op.ttl
            if _not_provided(op.ttl) and self.ttl_config:
                ttl = self.ttl_config.get("default_ttl")
            embedded = {path: vectors[text] for path, text in texts[id(op)].items()}
            storage.store_put(
                tuple(op.namespace), op.key, None if op.value is None else dict(op.value),
                vectors=embedded or None, ttl_minutes=ttl, now=now,
            )
        storage.store_sweep()

    def _put_memory(self, user: str, sub: tuple[str, ...], op: PutOp) -> None:
        existing = self._find_memory(user, sub, op.key)
        if op.value is None:
            if existing is not None:
                self.memory.forget(user_id=user, memory_id=existing.id)
            return
        value = dict(op.value)
        text = value.get("content")
        if not isinstance(text, str) or not text.strip():
            fields = [(f, tokenize_path(f)) for f in op.index] if isinstance(op.index, list) else self._fields
            text = "\n".join(t for path in fields for t in _texts_at(value, path[1]) if t.strip())
            text = text or json.dumps(value, sort_keys=True, ensure_ascii=False)
        kind = value.get("memory_type", value.get("kind"))
        kind = kind if kind in ("fact", "preference", "experience", "instruction") else None
        importance = value.get("importance")
        if isinstance(importance, bool) or not isinstance(importance, (int, float)) or not 0 <= importance <= 1:
            importance = None  # as InMemoryStore would, keep the value; the memory gets the default
        info: dict[str, Any] = {"key": op.key, "updated_at": self._now().isoformat()}
        if existing is not None:
            # Unless the value says otherwise, an overwrite keeps what the memory had.
            old = existing.metadata.get(STORE_ITEM) or {}
            seq = old.get("seq", _created_seq(existing))
            info.update(
                content=text, memory_type=kind or existing.memory_type,
                importance=existing.importance if importance is None else importance,
                seq=seq, ns_seq=old.get("ns_seq", seq),
            )
            metadata = {**existing.metadata, STORE_VALUE: value, STORE_SUBSPACE: list(sub), STORE_ITEM: info}
            self.memory.update_memory(
                user, existing.id, content=text, memory_type=kind, importance=importance, metadata=metadata
            )
            return
        seq = _next_seq()
        same_namespace = [e for e in self._user_memories(user) if _address(e)[0] == sub]
        info.update(
            content=text, memory_type=kind or "fact", importance=0.5 if importance is None else importance,
            seq=seq, ns_seq=min([_namespace_seq(e) for e in same_namespace], default=seq),
        )
        metadata = {STORE_VALUE: value, STORE_SUBSPACE: list(sub), STORE_ITEM: info}
        ids = _memory_ids(user, sub, op.key)
        for i, memory_id in enumerate(ids):
            try:
                self.memory.remember(
                    user, text, memory_type=info["memory_type"], importance=info["importance"],
                    metadata=metadata, memory_id=memory_id, merge=False,
                )
                return
            except InvalidInputError:
                # The key, a UUID, is another user's memory id: fall back to the mapped one.
                if i == len(ids) - 1:
                    raise

    # --- helpers ------------------------------------------------------------------------

    def _find_memory(self, user: str, sub: tuple[str, ...], key: str) -> MemoryEntry | None:
        for memory_id in _memory_ids(user, sub, key):
            try:
                entry = self.memory.get_memory(user, memory_id)
            except NotFoundError:
                continue
            if _address(entry) == (sub, key):
                return entry
        return None

    def _user_memories(self, user: str) -> list[MemoryEntry]:
        from ..vectors import MemoryEntry

        return [MemoryEntry.from_payload(r.id, r.payload) for r in self.memory._scroll_all(user)]

    def _now(self) -> datetime:
        return self.memory._clock().astimezone(timezone.utc)

    def _embedder(self) -> Embeddings:
        if self._embeddings is None:
            embed = (self.index_config or {}).get("embed")
            self._embeddings = ensure_embeddings(embed) if embed is not None else self.memory._embedder()
        return self._embeddings

    def _texts(self, value: Mapping[str, Any], index: Sequence[str] | None) -> dict[str, str]:
        """The texts to embed, by field path (``path.i`` for each of several), as InMemoryStore."""
        fields = self._fields if index is None else [(f, tokenize_path(f)) for f in index]
        texts: dict[str, str] = {}
        for path, tokens in fields:
            found = _texts_at(value, tokens)
            for i, text in enumerate(found):
                texts[f"{path}.{i}" if len(found) > 1 else path] = text
        return texts

    def _embed_value(
        self, value: Mapping[str, Any], index: Sequence[str] | None
    ) -> dict[str, list[float]] | None:
        """The vectors a put of ``value`` stores (None when nothing is embedded)."""
        texts = self._texts(value, index)
        if not texts:
            return None
        return dict(zip(texts, self._embedder().embed_documents(list(texts.values()))))


# --- validation ---------------------------------------------------------------------------


def _check_op(op: Any) -> None:
    """Refuse a malformed op before anything of its batch runs."""
    if not isinstance(op, (GetOp, PutOp, SearchOp, ListNamespacesOp)):
        raise InvalidInputError(
            f"unknown store operation {type(op).__name__}; use GetOp, PutOp, SearchOp or ListNamespacesOp"
        )
    if isinstance(op, ListNamespacesOp):
        for condition in op.match_conditions or ():
            if condition.match_type not in ("prefix", "suffix"):
                raise InvalidInputError(
                    f"match_type must be 'prefix' or 'suffix', got {condition.match_type!r}"
                )
            _check_namespace(condition.path, "a match condition's path")
        if op.max_depth is not None:
            _check_count("max_depth", op.max_depth)
        _check_count("limit", op.limit)
        _check_count("offset", op.offset)
        return
    if isinstance(op, SearchOp):
        _check_namespace(op.namespace_prefix, "namespace_prefix")
        if op.query is not None and not isinstance(op.query, str):
            raise InvalidInputError(f"query must be a str or None, got {type(op.query).__name__}")
        if op.filter is not None:
            if not isinstance(op.filter, Mapping):
                raise InvalidInputError(f"filter must be a dict or None, got {type(op.filter).__name__}")
            _check_filter(op.filter)
        _check_count("limit", op.limit)
        _check_count("offset", op.offset)
        return
    _check_namespace(op.namespace, "namespace")
    if not isinstance(op.key, str):
        raise InvalidInputError(f"key must be a str, got {type(op.key).__name__}")
    if isinstance(op, GetOp) or op.value is None:
        return
    namespace = tuple(op.namespace)
    if not namespace:
        raise InvalidNamespaceError("Namespace cannot be empty.")
    if namespace[0] == "langgraph":
        raise InvalidNamespaceError(f'Root label for namespace cannot be "langgraph". Got: {namespace}')
    if namespace == (MEMORIES,):
        raise InvalidInputError(
            "('memories',) holds no items: put a memory under ('memories', user_id, ...), or "
            "use another namespace for generic items"
        )
    _check_value(op.value)
    if not (op.index is None or op.index is False) and (
        not isinstance(op.index, list) or not all(isinstance(f, str) for f in op.index)
    ):
        raise InvalidInputError(f"index must be None, False or a list of field paths, got {op.index!r}")
    if not (_not_provided(op.ttl) or op.ttl is None):
        if isinstance(op.ttl, bool) or not isinstance(op.ttl, (int, float)) or not op.ttl > 0:
            raise InvalidInputError(
                f"ttl is in minutes and must be a positive number or None, got {op.ttl!r}"
            )


def _check_namespace(namespace: Any, what: str) -> None:
    if not isinstance(namespace, (tuple, list)):
        raise InvalidNamespaceError(
            f"{what} must be a tuple of str labels, got {type(namespace).__name__} {namespace!r}; "
            f"write e.g. ({namespace!r},)"
        )
    for label in namespace:
        if isinstance(label, str) and "\x1f" in label:
            raise InvalidNamespaceError(
                f"Invalid namespace label {label!r} found in {tuple(namespace)}. Namespace labels "
                "cannot contain the unit separator ('\\x1f')."
            )
    validate_op_namespace(GetOp(tuple(namespace), ""))


def _check_count(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInputError(f"{name} must be a non-negative int, got {value!r}")


def _check_filter(flt: Mapping[str, Any]) -> None:
    for value in flt.values():
        if isinstance(value, Mapping):
            if any(isinstance(k, str) and k.startswith("$") for k in value):
                unknown = [k for k in value if k not in _OPERATORS]
                if unknown:
                    raise InvalidInputError(
                        f"unsupported filter operator {unknown[0]!r}; use {', '.join(_OPERATORS)}, "
                        "or a plain value for equality"
                    )
            else:
                _check_filter(value)
        elif isinstance(value, (list, tuple)):
            for element in value:
                if isinstance(element, Mapping):
                    _check_filter({"": element})


def _check_value(value: Any) -> None:
    if not isinstance(value, Mapping):
        raise InvalidInputError(
            f"a store value must be a dict, got {type(value).__name__}; wrap it, e.g. {{'value': ...}}"
        )
    bad_key = _non_str_key(value)
    if bad_key is not None:
        raise InvalidInputError(f"store values are JSON: keys must be str, got {bad_key!r}")
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(
            f"a store value must be JSON-serialisable (str, numbers, bools, None, lists, dicts): {exc}"
        ) from None


def _non_str_key(value: Any) -> Any:
    if isinstance(value, Mapping):
        for k, v in value.items():
            if not isinstance(k, str):
                return k
            found = _non_str_key(v)
            if found is not None:
                return found
    elif isinstance(value, (list, tuple)):
        for v in value:
            found = _non_str_key(v)
            if found is not None:
                return found
    return None


# --- memories -----------------------------------------------------------------------------


def _memory_namespace(namespace: tuple[str, ...]) -> tuple[str | None, tuple[str, ...]]:
    """``(user_id, sub-namespace)`` of a memories namespace, ``(None, ())`` for any other."""
    if len(namespace) >= 2 and namespace[0] == MEMORIES:
        return namespace[1], namespace[2:]
    return None, ()


def _memory_ids(user: str, sub: tuple[str, ...], key: str) -> list[str]:
    """The memory ids a store key may live under, in the order a new put tries them."""
    mapped = str(uuid.uuid5(_KEY_IDS, json.dumps([user, *sub, key])))
    try:
        own = not sub and str(uuid.UUID(key)) == key
    except ValueError:
        own = False
    return [key, mapped] if own else [mapped]


def _address(entry: MemoryEntry) -> tuple[tuple[str, ...], str]:
    """The ``(sub-namespace, key)`` a memory has in the store."""
    info = entry.metadata.get(STORE_ITEM) or {}
    return tuple(entry.metadata.get(STORE_SUBSPACE) or ()), info.get("key", entry.id)


def _memory_item(entry: MemoryEntry, namespace: tuple[str, ...]) -> Item:
    value = entry.metadata.get(STORE_VALUE)
    info = entry.metadata.get(STORE_ITEM) or {}
    if not isinstance(value, dict):  # made by memory.remember, not by a put
        value = {"content": entry.content, "memory_type": entry.memory_type, "importance": entry.importance}
        return Item(value=value, key=entry.id, namespace=namespace, created_at=entry.created_at,
                    updated_at=entry.last_accessed)
    updated = entry.last_accessed
    if "updated_at" in info:  # the put's time (a new memory's created_at is stamped just after)
        updated = max(datetime.fromisoformat(info["updated_at"]), entry.created_at)
    value = dict(value)
    if entry.content != info.get("content", value.get("content")):
        # Rewritten since the put (update_memory, a merge): the store shows what it is now.
        value["content"] = entry.content
        updated = max(updated, entry.last_accessed)
    for field in ("memory_type", "importance"):
        if field in value and getattr(entry, field) != info.get(field, value[field]):
            value[field] = getattr(entry, field)
    return Item(value=value, key=info.get("key", entry.id), namespace=namespace,
                created_at=entry.created_at, updated_at=updated)


def _created_seq(entry: MemoryEntry) -> int:
    return (entry.created_at - _EPOCH) // timedelta(microseconds=1) * 1000


def _namespace_seq(entry: MemoryEntry) -> int:
    info = entry.metadata.get(STORE_ITEM) or {}
    return info.get("ns_seq", info.get("seq", _created_seq(entry)))


def _in_store_order(entries: list[MemoryEntry]) -> list[MemoryEntry]:
    """Memories as InMemoryStore lists items: by namespace birth, then by first put."""
    born: dict[tuple[str, ...], int] = {}
    for e in entries:
        sub = _address(e)[0]
        born[sub] = min(born.get(sub, _namespace_seq(e)), _namespace_seq(e))
    def place(e: MemoryEntry) -> tuple[int, int, str]:
        return born[_address(e)[0]], (e.metadata.get(STORE_ITEM) or {}).get("seq", _created_seq(e)), e.id

    return sorted(entries, key=place)


_seq_lock = threading.Lock()
_last_seq = 0


def _next_seq() -> int:
    """Wall-clock nanoseconds, strictly increasing within the process: the order of puts."""
    global _last_seq
    with _seq_lock:
        _last_seq = max(_last_seq + 1, time.time_ns())
        return _last_seq


# --- generic items ------------------------------------------------------------------------


def _not_provided(value: Any) -> bool:
    return type(value).__name__ == "NotProvided"


def _by_namespace(rows: list[Any]) -> list[Any]:
    """Rows (in insertion order) regrouped namespace by namespace, as InMemoryStore lists them."""
    first: dict[tuple[str, ...], int] = {}
    for i, r in enumerate(rows):
        first.setdefault(r.namespace, i)
    return sorted(rows, key=lambda r: first[r.namespace])


def _item(row: Any) -> Item:
    return Item(
        value=row.value, key=row.key, namespace=row.namespace,
        created_at=datetime.fromisoformat(row.created_at), updated_at=datetime.fromisoformat(row.updated_at),
    )


def _search_item(row: Any, score: float | None = None) -> SearchItem:
    return SearchItem(row.namespace, row.key, row.value, datetime.fromisoformat(row.created_at),
                      datetime.fromisoformat(row.updated_at), score)


def _texts_at(value: Mapping[str, Any], tokens: Any) -> list[str]:
    return get_text_at_path(value, "$" if tokens == "$" else tokens)


def _cosine(query: np.ndarray, vectors: list[list[float]]) -> list[float]:
    # InMemoryStore's arithmetic, so equal inputs give equal scores (and the same order).
    matrix = np.asarray(vectors, dtype=float)
    norms = np.linalg.norm(matrix, axis=1)
    scores = np.zeros_like(norms)
    mask = norms != 0
    scores[mask] = np.dot(matrix[mask], query) / (norms[mask] * np.linalg.norm(query))
    return [float(s) for s in scores]


def _matches(value: dict[str, Any], flt: Mapping[str, Any] | None) -> bool:
    return not flt or all(_compare(value.get(k), v) for k, v in flt.items())


def _compare(item_value: Any, filter_value: Any) -> bool:
    """InMemoryStore's JSON-like comparison: nested dicts, lists, and $eq/$ne/$gt/… operators."""
    if isinstance(filter_value, Mapping):
        if any(isinstance(k, str) and k.startswith("$") for k in filter_value):
            return all(_operator(item_value, k, v) for k, v in filter_value.items())
        return isinstance(item_value, dict) and all(
            _compare(item_value.get(k), v) for k, v in filter_value.items()
        )
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
    try:
        a, b = float(value), float(operand)
    except (TypeError, ValueError):
        return False
    return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]


def _does_match(condition: MatchCondition, ns: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(ns) < len(path):
        return False
    pairs = zip(ns, path) if condition.match_type == "prefix" else zip(reversed(ns), reversed(path))
    return all(p == "*" or k == p for k, p in pairs)
