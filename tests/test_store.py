"""The LangGraph store: ``memory.store`` behaves as LangGraph's ``InMemoryStore``.

Three kinds of test:

- parametrized ones run one body against ``InMemoryStore`` and against ``memory.store``;
- differential ones (two with hypothesis) apply one operation sequence to both and compare
  every result — values, keys, namespaces, order and scores;
- the rest show what only ours does (persistence, TTLs, the memories namespace seen through
  ``memory.search``, semantic search with the real MiniLM model, a real graph) and each
  deliberate difference the ``TieredMemoryStore`` docstring lists, against InMemoryStore.

Ours runs on each relational backend (``conftest.BACKENDS``): SQLite in a directory, and
PostgreSQL with a qdrant-client in local mode standing in for the Qdrant server.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import tempfile
import time
import uuid
from datetime import datetime
from pathlib import Path
from typing import TypedDict

import pytest
from conftest import BACKENDS
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore

from langchain_tiered_memory import InvalidInputError, MemoryConfig, TieredMemory
from langchain_tiered_memory.embeddings import HashingEmbeddings, MiniLMEmbeddings
from langchain_tiered_memory.integrations.store import TieredMemoryStore

DIM = 384
INLINE = MemoryConfig(job_mode="inline")
NS = [("docs", "alice"), ("docs", "alice", "work"), ("docs", "bob"), ("prefs", "alice"), ("a", "b", "c", "d")]


def open_memory(path: Path) -> TieredMemory:
    return TieredMemory(path, INLINE, embeddings=HashingEmbeddings())


@contextlib.contextmanager
def fresh_memory(backend: str, pg=None):
    """A memory on an empty store of ``backend``: a temporary directory (SQLite), or a fresh
    database of the test cluster ``pg`` with a qdrant-client in local mode (PostgreSQL)."""
    if backend == "sqlite":
        with tempfile.TemporaryDirectory() as tmp, open_memory(Path(tmp)) as memory:
            yield memory
        return
    from qdrant_client import QdrantClient

    url, client = pg.new_database(), QdrantClient(":memory:")
    try:
        with TieredMemory(config=INLINE, embeddings=HashingEmbeddings(), database_url=url,
                          qdrant_client=client) as memory:
            yield memory
    finally:
        client.close()
        pg.recycle(url)


def in_memory_store(embeddings=None, **index) -> InMemoryStore:
    # With an index, so a query ranks as it does in ours (which always embeds).
    return InMemoryStore(index={"dims": DIM, "embed": embeddings or HashingEmbeddings(), **index})


class ReferenceStore(InMemoryStore):
    """InMemoryStore without three artefacts ours deliberately does not reproduce.

    1. A namespace stays listed once emptied, or once a ``get`` looked into it (its dict is a
       ``defaultdict``): here a namespace goes when its last item does.
    2. A put keeps the previous value's vectors for the paths the new value does not embed
       (all of them with ``index=False``): here a put replaces the item's vectors.
    3. A batch whose puts (or fields) share one text fails (one vector for several paths):
       here each path gets its text's vector.
    Everything else is InMemoryStore's own code.
    """

    def _extract_texts(self, put_ops):
        for namespace, key in put_ops:
            self._vectors[namespace].pop(key, None)
        return super()._extract_texts(put_ops)

    def _insertinmem_store(self, to_embed, embeddings):
        for places, vector in zip(to_embed.values(), embeddings, strict=True):
            for namespace, key, path in places:
                self._vectors[namespace][key][path] = vector

    def _apply_put_ops(self, put_ops):
        # Before the puts too: a get of the batch may have made one, and placed it first.
        self._prune()
        for place, op in put_ops.items():
            super()._apply_put_ops({place: op})
            self._prune()

    def _handle_list_namespaces(self, op):
        self._prune()  # a get earlier in the batch may have made one
        return super()._handle_list_namespaces(op)

    def _prune(self):
        for namespace in [ns for ns, items in self._data.items() if not items]:
            del self._data[namespace]


@pytest.fixture(params=["inmemory", *BACKENDS])
def store(request):
    """One body, InMemoryStore and ours on each backend."""
    if request.param == "inmemory":
        yield in_memory_store()
        return
    pg = request.getfixturevalue("pg") if request.param == "postgresql" else None
    with fresh_memory(request.param, pg) as memory:
        yield memory.store


@pytest.fixture
def memory(make_memory):
    """Ours on each backend (conftest's ``make_memory``), jobs inline, hashing embeddings."""
    with make_memory(INLINE, embeddings=HashingEmbeddings()) as m:
        yield m


@pytest.fixture
def fresh(backend, request):
    """``fresh()`` opens a memory on an empty store of the test's backend, each time."""
    pg = request.getfixturevalue("pg") if backend == "postgresql" else None
    return lambda: fresh_memory(backend, pg)


@pytest.fixture(scope="module")
def minilm():
    return MiniLMEmbeddings()


def fill(store: BaseStore) -> None:
    for i, ns in enumerate(NS):
        for j in range(3):
            store.put(ns, f"k{j}", {"n": i * 10 + j, "tag": "even" if j % 2 == 0 else "odd",
                                    "nested": {"x": j}, "list": [j, i], "flag": j == 1})


def view(items) -> list[tuple]:
    return [(tuple(it.namespace), it.key, it.value) for it in items]


def normalise(result):
    """A store result as plain data: items as (namespace, key, value[, score])."""
    if isinstance(result, list):
        return [normalise(r) for r in result]
    if isinstance(result, tuple):
        return tuple(result)
    if result is None:
        return None
    out = (tuple(result.namespace), result.key, result.value)
    if hasattr(result, "score"):
        out += (None if result.score is None else pytest.approx(result.score, rel=1e-9, abs=1e-12),)
    return out


def outcome(call, store):
    try:
        return "ok", normalise(call(store))
    except InvalidNamespaceError:
        return "error", "namespace"
    except (ValueError, TypeError):
        return "error", "bad input"


def same(reference: BaseStore, ours: BaseStore, call) -> tuple:
    expected, got = outcome(call, reference), outcome(call, ours)
    assert got == expected
    return got


# --- the same test body on both stores ---------------------------------------------------


def test_put_get_overwrite_delete(store):
    store.put(("docs",), "a", {"text": "one", "nested": {"list": [1, 2, {"x": None}]}})
    assert store.get(("docs",), "a").value == {"text": "one", "nested": {"list": [1, 2, {"x": None}]}}
    store.put(("docs",), "a", {"text": "two"})
    item = store.get(("docs",), "a")
    assert (item.namespace, item.key, item.value) == (("docs",), "a", {"text": "two"})
    assert store.get(("docs",), "missing") is None
    assert store.get(("elsewhere",), "a") is None
    store.delete(("docs",), "a")
    assert store.get(("docs",), "a") is None
    store.delete(("docs",), "a")  # deleting a missing key is no error
    store.delete(("never",), "x")
    assert store.search(("docs",)) == []


def test_timestamps(store):
    store.put(("docs",), "a", {"v": 1})
    first = store.get(("docs",), "a")
    assert isinstance(first.created_at, datetime) and first.created_at.tzinfo is not None
    assert first.created_at <= first.updated_at
    time.sleep(0.01)
    store.put(("docs",), "a", {"v": 2})
    second = store.get(("docs",), "a")
    assert second.updated_at > first.updated_at
    assert second.created_at <= second.updated_at
    [hit] = store.search(("docs",))
    assert (hit.created_at, hit.updated_at) == (second.created_at, second.updated_at)


def test_search_by_prefix_at_every_depth(store):
    fill(store)
    everything = view(store.search((), limit=100))
    assert len(everything) == 15
    # Namespace by namespace in the order they got their first item, keys in put order.
    assert everything == [(ns, f"k{j}", store.get(ns, f"k{j}").value) for ns in NS for j in range(3)]
    for prefix in [("docs",), ("docs", "alice"), ("docs", "alice", "work"), ("a", "b", "c"), ("prefs", "alice")]:
        assert view(store.search(prefix, limit=100)) == [x for x in everything if x[0][: len(prefix)] == prefix]
    assert store.search(("doc",)) == []  # a prefix is whole labels, not characters
    assert store.search(("docs", "alice", "work", "deeper")) == []


def test_order_across_interleaved_namespaces(store):
    store.put(("n", "a"), "1", {"v": 1})
    store.put(("n", "b"), "2", {"v": 2})
    store.put(("n", "a"), "3", {"v": 3})
    store.put(("n", "b"), "2", {"v": 22})  # an overwrite keeps its place
    assert [i.key for i in store.search(("n",))] == ["1", "3", "2"]
    store.delete(("n", "a"), "1")  # the namespace keeps its place without its first item
    assert [i.key for i in store.search(("n",))] == ["3", "2"]
    store.put(("n", "a"), "1", {"v": 1})  # a re-put goes last in its namespace
    assert [i.key for i in store.search(("n",))] == ["3", "1", "2"]


FILTERS = [
    ({"tag": "odd"}, 5),
    ({"n": 21}, 1),
    ({"n": {"$eq": 21}}, 1),
    ({"n": {"$ne": 21}}, 14),
    ({"n": {"$gt": 21}}, 7),
    ({"n": {"$gte": 21}}, 8),
    ({"n": {"$lt": 10}}, 3),
    ({"n": {"$lte": 10}}, 4),
    ({"n": {"$gte": 10, "$lt": 21}}, 4),
    ({"n": {"$gt": "20"}}, 8),  # operands are compared as numbers
    ({"tag": {"$ne": "odd"}, "n": {"$lt": 30}}, 6),
    ({"nested": {"x": 2}}, 5),
    ({"nested": {"x": {"$gte": 1}}}, 10),
    ({"nested": {"missing": None}}, 15),
    ({"list": [1, 2]}, 1),
    ({"list": [1]}, 0),
    ({"flag": True}, 5),
    ({"tag": "odd", "flag": False}, 0),
    ({"absent": None}, 15),
    ({"n": "21"}, 0),
]


@pytest.mark.parametrize(("flt", "count"), FILTERS, ids=[json.dumps(f) for f, _ in FILTERS])
def test_filters(store, flt, count):
    fill(store)
    found = store.search((), filter=flt, limit=100)
    assert len(found) == count
    assert view(found) == [x for x in view(store.search((), limit=100)) if x in view(found)]


def test_unknown_filter_operator_is_refused(store):
    fill(store)
    with pytest.raises(ValueError, match=r"\$in"):
        store.search((), filter={"n": {"$in": [1, 2]}})


def test_limit_and_offset(store):
    fill(store)
    everything = view(store.search((), limit=100))
    assert view(store.search(())) == everything[:10]  # LangGraph's default limit
    assert view(store.search((), limit=4)) + view(store.search((), limit=4, offset=4)) == everything[:8]
    assert view(store.search((), limit=5, offset=13)) == everything[13:]
    assert store.search((), offset=100) == []
    assert store.search((), limit=0) == []
    assert view(store.search(("docs",), filter={"tag": "even"}, limit=2, offset=1)) == [
        x for x in everything if x[0][0] == "docs" and x[2]["tag"] == "even"
    ][1:3]


def test_query_ranks_by_cosine_with_scores(store):
    store.put(("docs",), "tea", {"text": "green tea in the morning"})
    store.put(("docs",), "port", {"text": "server port 8080"})
    store.put(("docs",), "cat", {"text": "a cat called miso"})
    store.put(("docs",), "plain", {"text": "green tea again"}, index=False)
    hits = store.search(("docs",), query="green tea", limit=10)
    assert [h.key for h in hits][:1] == ["tea"]
    scores = [h.score for h in hits if h.score is not None]
    assert scores == sorted(scores, reverse=True) and len(scores) == 3
    # Not embedded: no score, after the ranked ones, only to fill the page.
    assert (hits[-1].key, hits[-1].score) == ("plain", None)
    assert [h.key for h in store.search(("docs",), query="green tea", limit=2)] == ["tea", hits[1].key]
    assert [h.key for h in store.search(("docs",), query="green tea", limit=2, offset=1)] == [h.key for h in hits[1:3]]
    assert [h.key for h in store.search(("docs",), query="cat", filter={"text": "server port 8080"})] == ["port"]


def test_put_then_get_in_one_batch_sees_the_state_before_the_batch(store):
    store.put(("docs",), "a", {"v": "old"})
    results = store.batch([
        GetOp(("docs",), "a"),
        PutOp(("docs",), "a", {"v": "new"}),
        GetOp(("docs",), "a"),
        PutOp(("docs",), "b", {"v": "first"}),
        SearchOp(("docs",)),
        ListNamespacesOp(),
        PutOp(("docs",), "b", {"v": "second"}),  # the last put of a key wins
        PutOp(("docs",), "a", None),
        PutOp(("other",), "c", {"v": 1}),
        GetOp(("docs",), "b"),
    ])
    assert len(results) == 10
    assert results[0].value == results[2].value == {"v": "old"}
    assert [r for i, r in enumerate(results) if i in (1, 3, 6, 7, 8)] == [None] * 5
    assert view(results[4]) == [(("docs",), "a", {"v": "old"})]
    assert results[5] == [("docs",)]
    assert results[9] is None
    assert store.get(("docs",), "a") is None
    assert store.get(("docs",), "b").value == {"v": "second"}
    assert store.list_namespaces() == [("docs",), ("other",)]


async def test_async_operations(store):
    await store.aput(("docs",), "a", {"text": "async"})
    assert (await store.aget(("docs",), "a")).value == {"text": "async"}
    assert [i.key for i in await store.asearch(("docs",), query="async")] == ["a"]
    assert await store.alist_namespaces() == [("docs",)]
    results = await store.abatch([PutOp(("docs",), "b", {"v": 1}), GetOp(("docs",), "b"), SearchOp(("docs",))])
    assert results[0] is None and results[1] is None and [i.key for i in results[2]] == ["a"]
    await store.adelete(("docs",), "a")
    assert await store.aget(("docs",), "a") is None
    assert [i.key for i in await store.asearch(("docs",))] == ["b"]


def test_list_namespaces(store):
    fill(store)
    assert store.list_namespaces() == sorted(NS)
    assert store.list_namespaces(prefix=("docs",)) == [("docs", "alice"), ("docs", "alice", "work"), ("docs", "bob")]
    assert store.list_namespaces(suffix=("alice",)) == [("docs", "alice"), ("prefs", "alice")]
    assert store.list_namespaces(prefix=("docs",), suffix=("alice",)) == [("docs", "alice")]
    assert store.list_namespaces(prefix=("docs", "*")) == [("docs", "alice"), ("docs", "alice", "work"), ("docs", "bob")]
    assert store.list_namespaces(prefix=("*", "alice")) == [("docs", "alice"), ("docs", "alice", "work"), ("prefs", "alice")]
    assert store.list_namespaces(suffix=("alice", "*")) == [("docs", "alice", "work")]
    assert store.list_namespaces(suffix=("*",)) == sorted(NS)
    assert store.list_namespaces(prefix=("a", "b", "c", "d", "e")) == []
    assert store.list_namespaces(max_depth=2) == [("a", "b"), ("docs", "alice"), ("docs", "bob"), ("prefs", "alice")]
    assert store.list_namespaces(prefix=("docs",), max_depth=1) == [("docs",)]
    assert store.list_namespaces(max_depth=0) == [()]
    assert store.list_namespaces(limit=2, offset=1) == sorted(NS)[1:3]
    assert store.list_namespaces(offset=10) == []


@pytest.mark.parametrize(
    "call",
    [
        lambda s: s.put((), "k", {}),
        lambda s: s.put(("langgraph", "x"), "k", {}),
        lambda s: s.put(("a.b",), "k", {}),
        lambda s: s.put(("docs", ""), "k", {}),
        lambda s: s.put(("docs", 1), "k", {}),
        lambda s: s.put(("docs", "a\x00b"), "k", {}),
        lambda s: s.get(("a.b",), "k"),
        lambda s: s.delete(("",), "k"),
        lambda s: s.search(("docs", 2)),
        lambda s: s.list_namespaces(prefix=("a.b",)),
        lambda s: s.list_namespaces(suffix=("",)),
    ],
    ids=["empty", "langgraph-root", "period", "empty-label", "int-label", "nul", "get", "delete", "search",
         "list-prefix", "list-suffix"],
)
def test_invalid_namespaces_raise_invalid_namespace_error(store, call):
    with pytest.raises(InvalidNamespaceError):
        call(store)
    assert store.list_namespaces() == []


@pytest.mark.parametrize("value", ["text", 5, ["a", "b"], 1.5])
def test_a_value_that_is_not_a_dict_is_refused(store, value):
    with pytest.raises((ValueError, TypeError)):
        store.put(("docs",), "k", value)
    assert store.get(("docs",), "k") is None


def test_index_fields_config(memory):
    values = {
        "a": {"text": "green tea", "other": "server port"},
        "b": {"text": "server port", "other": "green tea"},
        "c": {"text": "a cat", "tags": ["green", "tea leaves"]},
    }

    def run(store):
        for key, value in values.items():
            store.put(("docs",), key, value)
        store.put(("docs",), "d", {"text": "nothing", "other": "green tea pot"}, index=["other"])
        return [normalise(store.search(("docs",), query=q)) for q in ("green tea", "server port", "tea leaves")]

    for fields in (["text"], ["text", "tags[*]"], ["$"], ["other", "tags[0]"]):
        ours = run(TieredMemoryStore(memory, index={"fields": fields}))
        assert ours == run(in_memory_store(fields=fields)), fields
        if fields == ["text"]:
            assert ours[0][0][1] == "a" and ours[1][0][1] == "b"
            assert ours[0][1][1] == "d"  # its own index=["other"]
        for key in [*values, "d"]:
            memory.store.delete(("docs",), key)


# --- differential: one sequence, both stores ---------------------------------------------


def test_a_scripted_sequence_gives_identical_results(memory):
    reference, ours = ReferenceStore(index={"dims": DIM, "embed": HashingEmbeddings()}), memory.store
    steps = [
        lambda s: s.put(("docs", "alice"), "k1", {"text": "alpha beta", "n": 1}),
        lambda s: s.put(("docs", "bob"), "k1", {"text": "beta gamma", "n": 2}),
        lambda s: s.put(("docs", "alice"), "k2", {"text": "gamma delta", "n": 3}, index=False),
        lambda s: s.put(("memories", "alice"), "m1", {"content": "Alice likes tea", "importance": 0.9}),
        lambda s: s.put(("memories", "alice", "work"), "m2", {"content": "Alice works in Lyon"}),
        lambda s: s.put(("memories", "alice"), "m3", {"topic": "no content at all"}),
        lambda s: s.put(("memories", "bob"), "m1", {"content": "Bob likes coffee", "memory_type": "preference"}),
        lambda s: s.search(("docs",), query="beta"),
        lambda s: s.search(("docs",), query="gamma", limit=1, offset=1),
        lambda s: s.search(("docs", "alice"), filter={"n": {"$gte": 2}}),
        lambda s: s.search(("memories", "alice")),
        lambda s: s.search(("memories", "alice"), filter={"importance": 0.9}),
        lambda s: s.search(("memories", "alice", "work")),
        lambda s: s.get(("memories", "alice"), "m2"),  # it lives under ("memories", "alice", "work")
        lambda s: s.get(("memories", "alice", "work"), "m2"),
        lambda s: s.get(("memories", "bob"), "m1"),
        lambda s: s.list_namespaces(),
        lambda s: s.list_namespaces(prefix=("memories",), max_depth=2),
        lambda s: s.list_namespaces(suffix=("work",)),
        lambda s: s.put(("memories", "alice"), "m1", {"content": "Alice likes green tea"}),
        lambda s: s.get(("memories", "alice"), "m1"),
        lambda s: s.delete(("memories", "alice", "work"), "m1"),  # another namespace: nothing
        lambda s: s.search(("memories", "alice")),
        lambda s: s.delete(("memories", "alice"), "m1"),
        lambda s: s.delete(("memories", "alice", "work"), "m2"),
        lambda s: s.search(("memories", "alice")),
        lambda s: s.list_namespaces(),
        lambda s: s.batch([
            PutOp(("memories", "bob"), "m2", {"content": "Bob has a dog"}),
            GetOp(("memories", "bob"), "m2"),
            SearchOp(("memories", "bob")),
            PutOp(("docs", "bob"), "k1", None),
            ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("docs",)),)),
        ]),
        lambda s: s.search(("memories", "bob")),
        lambda s: s.list_namespaces(),
    ]
    for step in steps:
        assert same(reference, ours, step)[0] == "ok"


KEYS = ["k0", "k1", "2b1f6c3e-8d4a-4f5b-9c7e-1a2b3c4d5e6f"]
WORDS = ["alpha", "beta", "gamma", "tea", "port"]
GENERIC_NS = [("docs",), ("docs", "alice"), ("docs", "alice", "work"), ("docs", "bob"), ("prefs", "alice"), ("a", "b", "c")]
MEMORY_NS = [("memories", "alice"), ("memories", "alice", "work"), ("memories", "alice", "work", "x"), ("memories", "bob")]
FILTER_POOL = [None, {"tag": "odd"}, {"n": {"$gte": 2}}, {"n": {"$lt": 3, "$ne": 1}}, {"nested": {"x": 1}},
               {"tag": {"$ne": "odd"}}, {"list": [0, 1]}, {"n": 3, "tag": "even"}]
LIST_PREFIXES = [None, ("docs",), ("docs", "*"), ("*", "alice"), ("memories",), ("memories", "alice"), ("a",)]
LIST_SUFFIXES = [None, ("alice",), ("work",), ("*",), ("alice", "*")]

values = st.builds(
    lambda n, words: {"n": n, "tag": "odd" if n % 2 else "even", "nested": {"x": n % 2}, "list": [0, n % 2],
                      "words": " ".join(words)},
    st.integers(0, 4), st.lists(st.sampled_from(WORDS), max_size=3),
)
memory_values = st.builds(
    lambda base, content, extra: {**base, **({"content": content} if content is not None else {}), **extra},
    values,
    st.one_of(st.none(), st.just(""), st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join)),
    st.sampled_from([{}, {"importance": 0.2}, {"memory_type": "preference"}, {"memory_type": "note"}, {"importance": 7}]),
)


def operations(namespaces, prefixes, queries, value_strategy):
    def with_id(ns, key, value):
        # Every item's text differs from every other's: no exact ties for a query to order.
        return {**value, "id": "/".join([*ns, key])}

    put = st.builds(lambda ns, key, v, index: ("put", ns, key, with_id(ns, key, v), index),
                    st.sampled_from(namespaces), st.sampled_from(KEYS), value_strategy, st.sampled_from([None, False]))
    delete = st.builds(lambda ns, key: ("delete", ns, key), st.sampled_from(namespaces), st.sampled_from(KEYS))
    get = st.builds(lambda ns, key: ("get", ns, key), st.sampled_from(namespaces), st.sampled_from(KEYS))
    search = st.builds(lambda *a: ("search", *a), st.sampled_from(prefixes), st.sampled_from(FILTER_POOL),
                       st.integers(0, 6), st.integers(0, 3), st.sampled_from(queries))
    listing = st.builds(lambda *a: ("list", *a), st.sampled_from(LIST_PREFIXES), st.sampled_from(LIST_SUFFIXES),
                        st.sampled_from([None, 1, 2, 3]), st.integers(1, 6), st.integers(0, 2))
    single = st.one_of(put, put, delete, get, search, listing)
    batch = st.lists(single, min_size=2, max_size=5).map(lambda ops: ("batch", ops))
    return st.lists(st.one_of(single, single, single, batch), min_size=1, max_size=25)


def as_op(step):
    kind, *args = step
    if kind == "put":
        ns, key, value, index = args
        return PutOp(ns, key, value, index=index)
    if kind == "delete":
        return PutOp(args[0], args[1], None)
    if kind == "get":
        return GetOp(*args)
    if kind == "search":
        prefix, flt, limit, offset, query = args
        return SearchOp(prefix, flt, limit, offset, query)
    prefix, suffix, max_depth, limit, offset = args
    conditions = tuple(MatchCondition(t, p) for t, p in (("prefix", prefix), ("suffix", suffix)) if p)
    return ListNamespacesOp(conditions, max_depth, limit, offset)


def run(store: BaseStore, step):
    kind, *args = step
    if kind == "batch":
        return store.batch([as_op(s) for s in args[0]])
    if kind == "put":
        ns, key, value, index = args
        return store.put(ns, key, value, index=index)
    if kind == "delete":
        return store.delete(*args)
    if kind == "get":
        return store.get(*args)
    if kind == "search":
        prefix, flt, limit, offset, query = args
        return store.search(prefix, query=query, filter=flt, limit=limit, offset=offset)
    prefix, suffix, max_depth, limit, offset = args
    return store.list_namespaces(prefix=prefix, suffix=suffix, max_depth=max_depth, limit=limit, offset=offset)


def check_sequence(fresh, sequence, with_memories: bool) -> None:
    reference = ReferenceStore(index={"dims": DIM, "embed": HashingEmbeddings()})
    with fresh() as memory:
        for step in sequence:
            assert same(reference, memory.store, lambda s, step=step: run(s, step))[0] == "ok"  # valid ops only
        prefixes = [("memories", "alice"), ("memories", "bob")] if with_memories else [()]
        for prefix in prefixes:
            assert normalise(memory.store.search(prefix, limit=100)) == normalise(reference.search(prefix, limit=100))
            for item in memory.store.search(prefix, limit=100):
                assert item.created_at <= item.updated_at


# ``fresh`` opens a new memory for each example: the function-scoped fixture is not reused.
@settings(max_examples=30, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(operations(GENERIC_NS, [(), ("docs",), ("docs", "alice"), ("docs", "alice", "work"), ("prefs",), ("a", "b")],
                  [None, "alpha beta", "gamma", "tea port docs"], values))
def test_random_sequences_on_generic_namespaces(fresh, sequence):
    check_sequence(fresh, sequence, with_memories=False)


_V = {"n": 0, "tag": "even", "nested": {"x": 0}, "list": [0, 0], "words": ""}
_WORK, _ALICE = ("memories", "alice", "work"), ("memories", "alice")


@settings(max_examples=25, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
# Deleting the oldest item of a namespace keeps the namespace's place in a listing.
@example(sequence=[("put", _WORK, "k0", {**_V, "id": "w0"}, None), ("put", _ALICE, "k0", {**_V, "id": "a0"}, None),
                   ("put", _WORK, "k1", {**_V, "id": "w1"}, None), ("delete", _WORK, "k0"),
                   ("search", _ALICE, None, 1, 0, None)])
@given(operations(MEMORY_NS + [("docs", "alice")],
                  [("memories", "alice"), ("memories", "alice", "work"), ("memories", "bob"), ("docs",)],
                  [None], memory_values))
def test_random_sequences_on_the_memories_namespace(fresh, sequence):
    check_sequence(fresh, sequence, with_memories=True)


# --- the memories namespace is the user's long-term memory -------------------------------


def test_store_memories_are_the_users_memories(memory):
    store = memory.store
    key = str(uuid.uuid4())
    store.put(("memories", "alice"), key, {"content": "Alice is allergic to peanuts", "memory_type": "fact"})
    store.put(("memories", "alice", "work"), "office", {"content": "Alice works from the Lyon office"})
    store.put(("memories", "bob"), "office", {"content": "Bob works from the Oslo office"})

    # A UUID key is the memory's id; another key maps to one, and the entry remembers the key.
    entry = memory.memories.get("alice", key)
    assert entry.content == "Alice is allergic to peanuts"
    listed = {e.content: e for e in memory.memories.list("alice")}
    assert set(listed) == {"Alice is allergic to peanuts", "Alice works from the Lyon office"}
    assert [h.entry.id for h in memory.memories.search("alice", "allergic to peanuts", k=1)] == [key]
    assert [h.entry.content for h in memory.memories.search("bob", "Oslo office", k=5)] == ["Bob works from the Oslo office"]

    # memory.remember shows up in the store, with what the memory is.
    made = memory.memories.remember("alice", "Alice prefers window seats", memory_type="preference", importance=0.7)
    item = store.get(("memories", "alice"), made)
    assert item.value == {"content": "Alice prefers window seats", "memory_type": "preference", "importance": 0.7}
    assert {i.key for i in store.search(("memories", "alice"))} == {key, made, "office"}
    assert [i.key for i in store.search(("memories", "alice", "work"))] == ["office"]

    # An edit through the memory API shows in store.get; the rest of the value is kept.
    memory.memories.update("alice", key, content="Alice is allergic to peanuts and cashews")
    assert store.get(("memories", "alice"), key).value == {
        "content": "Alice is allergic to peanuts and cashews", "memory_type": "fact"
    }
    memory.memories.update("alice", made, importance=0.2)
    assert store.get(("memories", "alice"), made).value["importance"] == 0.2

    # A put overwrites the memory in place: same id, created_at kept, updated_at moves.
    before = store.get(("memories", "alice"), key)
    time.sleep(0.01)
    store.put(("memories", "alice"), key, {"content": "Alice is allergic to tree nuts", "importance": 0.9})
    after = store.get(("memories", "alice"), key)
    assert after.value == {"content": "Alice is allergic to tree nuts", "importance": 0.9}
    assert after.created_at == before.created_at and after.updated_at > before.updated_at
    assert memory.memories.get("alice", key).importance == 0.9
    assert len(memory.memories.list("alice")) == 3

    assert store.list_namespaces(prefix=("memories",)) == [
        ("memories", "alice"), ("memories", "alice", "work"), ("memories", "bob")
    ]
    store.delete(("memories", "alice"), made)
    assert store.get(("memories", "alice"), made) is None
    assert [e.content for e in memory.memories.list("alice")].count("Alice prefers window seats") == 0

    memory.admin.forget(user_id="alice")
    assert store.search(("memories", "alice")) == []
    assert store.get(("memories", "alice", "work"), "office") is None
    assert store.list_namespaces() == [("memories", "bob")]


def test_memory_items_is_a_narrow_view_that_sees_what_the_store_writes(memory):
    """``memory.items`` reads and writes the store's generic items and shows the store
    addresses of memories, but not the layer's internals (embedding, bulk lookups, sweeps)."""
    items = memory.items
    for internal in ("by_memory", "loose_memory_users", "sweep", "texts", "embed_value"):
        assert not hasattr(items, internal), internal
    memory.store.put(("docs", "a"), "k", {"title": "Lyon office"}, ttl=1)
    row = items.get(("docs", "a"), "k")
    assert row is not None and row.value == {"title": "Lyon office"} and row.memory_id is None
    assert row.vectors and set(row.vectors) == {"$"}  # the store embedded it
    items.put(("docs", "b"), "k2", {"n": 2})
    assert memory.store.get(("docs", "b"), "k2").value == {"n": 2}
    assert [r.key for r in items.under(("docs",))] == ["k", "k2"]
    assert set(items.namespaces()) == {("docs", "a"), ("docs", "b")}
    items.delete(("docs", "b"), "k2")
    assert memory.store.get(("docs", "b"), "k2") is None and items.expire() == 0

    made = memory.memories.remember("alice", "Alice prefers window seats")
    assert items.addresses.users_without() == ["alice"]  # remember made no store address yet
    memory.store.put(("memories", "alice"), "seat", {"content": "Alice prefers aisle seats"})
    address = next(iter(items.addresses.of([e.id for e in memory.memories.list("alice")]).values()))
    assert (address.namespace, address.key) == (("memories", "alice"), "seat") and address.memory_id != made


def test_near_duplicate_puts_stay_separate_items(memory):
    # memory.remember merges a near-duplicate into the old memory; a put is one exact item.
    store = memory.store
    store.put(("memories", "alice"), "a", {"content": "The user likes green tea"})
    store.put(("memories", "alice"), "b", {"content": "The user likes green tea!"})
    assert store.get(("memories", "alice"), "a").value == {"content": "The user likes green tea"}
    assert store.get(("memories", "alice"), "b").value == {"content": "The user likes green tea!"}
    assert len(memory.memories.list("alice")) == 2


def test_langmem_manage_tool_creates_updates_and_deletes(memory):
    langmem = pytest.importorskip("langmem")
    tool = langmem.create_manage_memory_tool(namespace=("memories", "{user_id}"), store=memory.store)
    config = {"configurable": {"user_id": "alice"}}
    created = tool.invoke({"content": "The user's favourite colour is teal.", "action": "create"}, config)
    memory_id = created.split()[-1]
    assert memory.memories.get("alice", memory_id).content == "The user's favourite colour is teal."
    tool.invoke({"content": "The user's favourite colour is teal!", "action": "update", "id": memory_id}, config)
    assert memory.memories.get("alice", memory_id).content == "The user's favourite colour is teal!"
    assert memory.store.get(("memories", "alice"), memory_id).value == {"content": "The user's favourite colour is teal!"}
    tool.invoke({"action": "delete", "id": memory_id}, config)
    assert memory.memories.list("alice") == []


def test_memories_namespace_refusals(memory):
    store = memory.store
    with pytest.raises(InvalidInputError, match="one user's memories"):
        store.search(("memories",))
    with pytest.raises(InvalidInputError, match=r"\('memories', user_id"):
        store.put(("memories",), "k", {"content": "whose?"})
    with pytest.raises(InvalidInputError, match="not TTL"):
        store.put(("memories", "alice"), "k", {"content": "short-lived"}, ttl=5)
    store.put(("memories", "alice"), "k", {"content": "kept"})
    store.put(("docs", "alice"), "d", {"v": 1})
    # A search of () covers the generic items only: users' memories are searched one at a time.
    assert [i.key for i in store.search(())] == ["d"]
    assert store.list_namespaces() == [("docs", "alice"), ("memories", "alice")]


# --- persistence and TTL (InMemoryStore has neither) -------------------------------------


def test_items_persist_across_reopening(make_memory):
    with make_memory(INLINE, embeddings=HashingEmbeddings()) as memory:
        memory.store.put(("cfg",), "theme", {"v": "dark"})
        memory.store.put(("cfg", "x"), "other", {"v": 2})
        memory.store.put(("memories", "alice"), "pref", {"content": "Alice likes jazz"})
        before = [normalise(memory.store.search(p)) for p in [("cfg",), ("memories", "alice")]]
    with make_memory(INLINE, embeddings=HashingEmbeddings()) as memory:
        assert [normalise(memory.store.search(p)) for p in [("cfg",), ("memories", "alice")]] == before
        assert memory.store.list_namespaces() == [("cfg",), ("cfg", "x"), ("memories", "alice")]


def test_in_memory_store_refuses_ttl_ours_supports_it(memory):
    assert InMemoryStore.supports_ttl is False and memory.store.supports_ttl is True
    with pytest.raises(NotImplementedError):
        in_memory_store().put(("docs",), "k", {"v": 1}, ttl=1)
    for bad in (-1, 0, "soon", True):
        with pytest.raises(InvalidInputError, match="ttl"):
            memory.store.put(("docs",), "k", {"v": 1}, ttl=bad)


def test_ttl_expires_and_reads_refresh_it(memory):
    store = memory.store
    ttl = 0.03  # minutes: 1.8 s
    store.put(("cfg",), "kept", {"v": 0})
    for key in ("got", "searched", "skipped", "quiet"):
        store.put(("cfg",), key, {"v": key}, ttl=ttl)
    time.sleep(1.1)
    assert store.get(("cfg",), "got") is not None  # refreshes it
    assert [i.key for i in store.search(("cfg",), filter={"v": "searched"})] == ["searched"]
    assert [i.key for i in store.search(("cfg",), limit=1)] == ["kept"]  # "skipped" was not returned
    assert store.get(("cfg",), "quiet", refresh_ttl=False) is not None
    time.sleep(1.1)  # 2.2 s after the puts, 1.1 s after the refreshes
    assert [i.key for i in store.search(("cfg",), refresh_ttl=False, limit=100)] == ["kept", "got", "searched"]
    assert store.list_namespaces() == [("cfg",)]
    time.sleep(1.0)
    assert [i.key for i in store.search(("cfg",), limit=100)] == ["kept"]
    assert store.sweep_ttl() == 4  # got, searched, skipped, quiet
    assert store.sweep_ttl() == 0


def test_ttl_config_default_and_no_refresh(memory):
    store = TieredMemoryStore(memory, ttl={"default_ttl": 0.02, "refresh_on_read": False})  # 1.2 s
    store.put(("memories", "alice"), "m", {"content": "a memory ignores the default TTL"})
    store.put(("cfg",), "default", {"v": 1})
    store.put(("cfg",), "forever", {"v": 2}, ttl=None)
    time.sleep(0.6)
    assert store.get(("cfg",), "default") is not None  # read, not refreshed
    time.sleep(0.9)
    assert store.get(("cfg",), "default") is None
    assert store.get(("cfg",), "forever").value == {"v": 2}
    assert store.get(("memories", "alice"), "m") is not None


def test_expired_items_stay_gone_after_reopening(make_memory):
    with make_memory(INLINE, embeddings=HashingEmbeddings()) as memory:
        memory.store.put(("cfg",), "theme", {"v": "dark"})
        memory.store.put(("cfg",), "tmp", {"v": 1}, ttl=0.0005)  # 30 ms
    time.sleep(0.1)
    with make_memory(INLINE, embeddings=HashingEmbeddings()) as memory:
        assert memory.store.get(("cfg",), "theme").value == {"v": "dark"}
        assert memory.store.get(("cfg",), "tmp") is None
        assert [i.key for i in memory.store.search(("cfg",))] == ["theme"]


# --- where ours differs from InMemoryStore, on purpose -----------------------------------


def test_created_at_is_kept_on_overwrite_where_in_memory_store_resets_it(memory):
    for store in (in_memory_store(), memory.store):
        store.put(("docs",), "a", {"v": 1})
        first = store.get(("docs",), "a")
        time.sleep(0.01)
        store.put(("docs",), "a", {"v": 2})
        second = store.get(("docs",), "a")
        if isinstance(store, InMemoryStore):
            assert second.created_at > first.created_at
        else:
            assert second.created_at == first.created_at < second.updated_at


def test_a_put_replaces_the_vectors(memory):
    for store in (in_memory_store(), memory.store):
        store.put(("docs",), "a", {"text": "green tea"})
        store.put(("docs",), "b", {"text": "server port"})
        store.put(("docs",), "a", {"text": "green tea"}, index=False)
        [first, second] = store.search(("docs",), query="green tea")
        if isinstance(store, InMemoryStore):
            assert first.key == "a" and first.score is not None  # still ranked by its old vector
        else:
            assert (first.key, second.key, second.score) == ("b", "a", None)


def test_a_comparison_on_a_missing_field_does_not_match(memory):
    for store in (in_memory_store(), memory.store):
        store.put(("docs",), "a", {"n": 1})
        store.put(("docs",), "b", {"text": "no n"})
        if isinstance(store, InMemoryStore):
            with pytest.raises(TypeError):
                store.search(("docs",), filter={"n": {"$gt": 0}})
        else:
            assert [i.key for i in store.search(("docs",), filter={"n": {"$gt": 0}})] == ["a"]
            assert store.search(("docs",), filter={"text": {"$lt": 5}}) == []


def test_a_namespace_exists_while_it_holds_an_item(memory):
    for store in (in_memory_store(), memory.store):
        store.put(("docs",), "a", {"v": 1})
        store.delete(("docs",), "a")
        store.get(("looked", "into"), "k")
        expected = [("docs",), ("looked", "into")] if isinstance(store, InMemoryStore) else []
        assert store.list_namespaces() == expected


def test_values_must_be_json(memory):
    InMemoryStore().put(("docs",), "k", {"when": datetime.now()})  # without an index, any object
    with pytest.raises(TypeError):  # with one, json.dumps fails deep in the embedding step
        in_memory_store().put(("docs",), "k", {"when": datetime.now()})
    for value in ({"when": datetime.now()}, {1: "int key"}, {"nested": {2: "x"}}, {"n": float("nan")}, {"s": {1, 2}}):
        with pytest.raises(InvalidInputError, match="JSON"):
            memory.store.put(("docs",), "k", value)
    assert memory.store.get(("docs",), "k") is None
    memory.store.put(("docs",), "k", {"t": (1, 2)})
    assert memory.store.get(("docs",), "k").value == {"t": [1, 2]}


def test_ops_straight_to_batch_are_checked(memory):
    # BaseStore's methods check namespaces; ops passed to batch skip them. Ours checks those too.
    in_memory_store().batch([PutOp(("a.b",), "k", {"v": 1})])
    for op in (PutOp(("a.b",), "k", {"v": 1}), GetOp(("",), "k"), SearchOp(("x", 3)),
               ListNamespacesOp((MatchCondition("prefix", ("a.b",)),)), PutOp(("a\x1fb",), "k", {"v": 1})):
        with pytest.raises(InvalidNamespaceError):
            memory.store.batch([op])
    with pytest.raises(InvalidNamespaceError, match=r"\('docs',\)"):
        memory.store.put("docs", "k", {"v": 1})  # a str, not a tuple
    with pytest.raises(InvalidInputError, match="match_type"):
        memory.store.batch([ListNamespacesOp((MatchCondition("infix", ("a",)),))])
    with pytest.raises(InvalidInputError, match="limit"):
        memory.store.search(("docs",), limit=-1)
    with pytest.raises(InvalidInputError, match="unknown store operation"):
        memory.store.batch(["not an op"])
    assert memory.store.list_namespaces() == []


def test_a_bad_put_in_a_batch_writes_nothing(memory):
    reference = in_memory_store()
    ops = [PutOp(("docs",), "good", {"v": 1}), PutOp(("docs",), "bad", "not a dict")]
    with pytest.raises(ValueError):
        reference.batch(ops)
    assert reference.get(("docs",), "good") is not None  # InMemoryStore applied the first put
    with pytest.raises(InvalidInputError, match="dict"):
        memory.store.batch(ops)
    assert memory.store.get(("docs",), "good") is None


def test_puts_sharing_a_text_in_one_batch(memory):
    ops = [PutOp(("docs",), "a", {"t": "same"}), PutOp(("docs",), "b", {"t": "same"})]
    with pytest.raises(ValueError, match="embeddings"):
        in_memory_store().batch(ops)
    memory.store.batch(ops)
    assert [h.key for h in memory.store.search(("docs",), query="same")] == ["a", "b"]


def test_a_query_always_ranks(memory):
    plain = InMemoryStore()  # no index: InMemoryStore ignores the query
    for store in (plain, memory.store):
        store.put(("docs",), "port", {"text": "server port"})
        store.put(("docs",), "tea", {"text": "green tea"})
    assert [(h.key, h.score) for h in plain.search(("docs",), query="tea")] == [("port", None), ("tea", None)]
    hits = memory.store.search(("docs",), query="tea")
    assert hits[0].key == "tea" and hits[0].score > hits[1].score


# --- semantic search with the real model -------------------------------------------------

CORPUS = {
    "tea": "The user prefers green tea in the morning",
    "port": "The API server listens on port 8080",
    "cat": "Their cat is called Miso and sleeps all day",
    "trip": "They are planning a hiking trip to Norway in July",
    "lang": "They write most of their code in Rust",
}
AREAS = {"tea": "habits", "port": "work", "cat": "home", "trip": "plans", "lang": "work"}
QUERIES = [
    ("what does the user like to drink?", "tea"),
    ("which port does the backend use", "port"),
    ("tell me about their pet", "cat"),
    ("summer holiday plans", "trip"),
    ("favourite programming language", "lang"),
]


def test_semantic_search_on_generic_items(make_memory, minilm):
    reference = in_memory_store(minilm, fields=["text"])
    with make_memory(INLINE, embeddings=minilm) as memory:
        ours = TieredMemoryStore(memory, index={"fields": ["text"]})
        for store in (reference, ours):
            for key, text in CORPUS.items():
                store.put(("notes", "alice"), key, {"text": text})
        for query, expected in QUERIES:
            hits = ours.search(("notes",), query=query, limit=5)
            assert hits[0].key == expected, query
            scores = [h.score for h in hits]
            assert scores == sorted(scores, reverse=True) and scores[0] > scores[1]
            assert normalise(hits) == normalise(reference.search(("notes",), query=query, limit=5))


def test_semantic_search_on_the_memories_namespace(make_memory, minilm):
    with make_memory(INLINE, embeddings=minilm) as memory:
        ids = {key: str(uuid.uuid4()) for key in CORPUS}
        for key, text in CORPUS.items():
            memory.store.put(("memories", "alice"), ids[key], {"content": text, "area": AREAS[key]})
        memory.store.put(("memories", "bob"), str(uuid.uuid4()), {"content": "Bob drinks black coffee"})
        for query, expected in QUERIES:
            hits = memory.store.search(("memories", "alice"), query=query, limit=3)
            assert hits[0].key == ids[expected], query
            assert hits[0].value == {"content": CORPUS[expected], "area": AREAS[expected]}
            scores = [h.score for h in hits]
            assert scores == sorted(scores, reverse=True)
            assert all(h.namespace == ("memories", "alice") for h in hits)
            assert memory.memories.search("alice", query, k=1)[0].entry.id == ids[expected]
        hits = memory.store.search(("memories", "alice"), query="what software do they work on?", filter={"area": "work"})
        assert hits and {h.key for h in hits} <= {ids["port"], ids["lang"]}
        assert memory.store.search(("memories", "alice"), query="favourite programming language",
                                   filter={"area": "home"}) == []


# --- a real graph ------------------------------------------------------------------------


class State(TypedDict):
    user: str
    note: str
    found: list[str]


def build_graph(store: BaseStore):
    from langgraph.config import get_store
    from langgraph.graph import END, START, StateGraph

    def write(state: State) -> dict:
        store = get_store()
        store.put(("memories", state["user"]), str(uuid.uuid5(uuid.NAMESPACE_URL, state["note"])), {"content": state["note"]})
        store.put(("notes", state["user"]), "last", {"text": state["note"]})
        return {}

    def read(state: State) -> dict:
        store = get_store()
        hits = store.search(("memories", state["user"]), query=state["note"], limit=5)
        return {"found": [h.value["content"] for h in hits] + [store.get(("notes", state["user"]), "last").value["text"]]}

    builder = StateGraph(State)
    builder.add_node("write", write)
    builder.add_node("read", read)
    builder.add_edge(START, "write")
    builder.add_edge("write", "read")
    builder.add_edge("read", END)
    return builder.compile(store=store)


def test_a_graph_uses_the_store_through_get_store(make_memory):
    with make_memory(INLINE, embeddings=HashingEmbeddings()) as memory:
        graph = build_graph(memory.store)
        out = graph.invoke({"user": "alice", "note": "Alice collects vinyl records", "found": []})
        assert out["found"] == ["Alice collects vinyl records", "Alice collects vinyl records"]
        out = asyncio.run(graph.ainvoke({"user": "alice", "note": "Alice plays the cello", "found": []}))
        assert out["found"][0] == "Alice plays the cello"  # the best match first
        assert out["found"][-1] == "Alice plays the cello"  # the note
        assert [h.entry.content for h in memory.memories.search("alice", "cello", k=1)] == ["Alice plays the cello"]
        assert len(memory.memories.search("bob", "cello")) == 0
    with make_memory(INLINE, embeddings=HashingEmbeddings()) as memory:
        assert memory.store.get(("notes", "alice"), "last").value == {"text": "Alice plays the cello"}
        assert len(memory.memories.list("alice")) == 2
