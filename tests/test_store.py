"""The LangGraph store: the same test module against InMemoryStore and ours."""

import pytest
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from langchain_tiered_memory import InvalidInputError, MemoryConfig, TieredMemory
from langchain_tiered_memory.embeddings import HashingEmbeddings

NS = [("docs", "alice"), ("docs", "alice", "work"), ("docs", "bob"), ("prefs", "alice"), ("a", "b", "c", "d")]


@pytest.fixture(params=["inmemory", "tiered"])
def store(request, tmp_path):
    if request.param == "inmemory":
        yield InMemoryStore()
        return
    with TieredMemory(tmp_path / "m", MemoryConfig(job_mode="inline"), embeddings=HashingEmbeddings()) as memory:
        yield memory.store


def _fill(store: BaseStore):
    for i, ns in enumerate(NS):
        for j in range(3):
            store.put(ns, f"k{j}", {"n": i * 10 + j, "tag": "even" if j % 2 == 0 else "odd", "nested": {"x": j}})


def _view(items):
    return [(tuple(it.namespace), it.key, it.value) for it in items]


def test_put_get_update_delete(store):
    store.put(("docs",), "a", {"text": "one"})
    assert store.get(("docs",), "a").value == {"text": "one"}
    store.put(("docs",), "a", {"text": "two"})
    assert store.get(("docs",), "a").value == {"text": "two"}
    assert store.get(("docs",), "missing") is None
    store.delete(("docs",), "a")
    assert store.get(("docs",), "a") is None


def test_search_by_prefix_filter_limit_offset(store):
    _fill(store)
    assert _view(store.search(("docs",), limit=100))
    everything = _view(store.search(("docs",), limit=100))
    assert len(everything) == 9
    assert _view(store.search(("docs", "alice"), limit=100)) == [x for x in everything if x[0][:2] == ("docs", "alice")]
    assert [x[1] for x in _view(store.search(("docs",), filter={"tag": "odd"}, limit=100))] == ["k1"] * 3
    assert len(store.search(("docs",), filter={"n": {"$gte": 10, "$lt": 21}}, limit=100)) == 4
    assert len(store.search(("docs",), filter={"nested": {"x": 2}}, limit=100)) == 3
    assert len(store.search(("docs",), filter={"tag": {"$ne": "odd"}}, limit=100)) == 6
    page1 = _view(store.search(("docs",), limit=4))
    page2 = _view(store.search(("docs",), limit=4, offset=4))
    assert page1 + page2 == everything[:8]


def test_list_namespaces(store):
    _fill(store)
    assert store.list_namespaces() == sorted(NS)
    assert store.list_namespaces(prefix=("docs",)) == [("docs", "alice"), ("docs", "alice", "work"), ("docs", "bob")]
    assert store.list_namespaces(suffix=("alice",)) == [("docs", "alice"), ("prefs", "alice")]
    assert store.list_namespaces(prefix=("docs", "*")) == [("docs", "alice"), ("docs", "alice", "work"), ("docs", "bob")]
    assert store.list_namespaces(max_depth=2) == [("a", "b"), ("docs", "alice"), ("docs", "bob"), ("prefs", "alice")]
    assert store.list_namespaces(limit=2, offset=1) == sorted(NS)[1:3]


async def test_async_operations(store):
    await store.aput(("docs",), "a", {"text": "async"})
    assert (await store.aget(("docs",), "a")).value == {"text": "async"}
    assert [i.key for i in await store.asearch(("docs",))] == ["a"]
    await store.adelete(("docs",), "a")
    assert await store.aget(("docs",), "a") is None


def test_generic_items_persist_and_expire(tmp_path):
    with TieredMemory(tmp_path / "m", embeddings=HashingEmbeddings()) as memory:
        memory.store.put(("cfg",), "theme", {"v": "dark"})
        memory.store.put(("cfg",), "tmp", {"v": 1}, ttl=0.0005)  # minutes: 30 ms
    import time

    time.sleep(0.1)
    with TieredMemory(tmp_path / "m", embeddings=HashingEmbeddings()) as memory:
        assert memory.store.get(("cfg",), "theme").value == {"v": "dark"}
        assert memory.store.get(("cfg",), "tmp") is None
        assert [i.key for i in memory.store.search(("cfg",))] == ["theme"]


def test_semantic_search_on_generic_items(tmp_path):
    from langchain_tiered_memory.embeddings import MiniLMEmbeddings

    with TieredMemory(tmp_path / "m", embeddings=MiniLMEmbeddings()) as memory:
        store = memory.store
        store.put(("notes",), "tea", {"text": "The user prefers green tea in the morning"})
        store.put(("notes",), "port", {"text": "The server listens on port 8080"})
        store.put(("notes",), "cat", {"text": "Their cat is called Miso"})
        hits = store.search(("notes",), query="what does the user like to drink?", limit=2)
        assert hits[0].key == "tea" and hits[0].score > hits[1].score


def test_searching_all_users_memories_at_once_is_refused(tmp_path):
    with TieredMemory(tmp_path / "m", embeddings=HashingEmbeddings()) as memory:
        with pytest.raises(InvalidInputError):
            memory.store.search(("memories",), query="anything")
