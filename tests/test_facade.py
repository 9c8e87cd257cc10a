"""Issue 30, item 3: a facade you can hold in your head.

``TieredMemory`` keeps the turn API and the lifecycle, at most 20 public names; the rest is
grouped (``memory.memories``, ``.episodes``, ``.entities``, ``.threads``, ``.items``,
``.admin``). Every async method has its sync twin's signature. The old, flat names keep
working for one release, each with a ``DeprecationWarning`` naming its new spelling. The
facade imports no adapter, and ``ops/`` imports no facade."""

from __future__ import annotations

import ast
import asyncio
import inspect
import sqlite3
import warnings
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langchain_tiered_memory import (
    AsyncTieredCheckpointSaver,
    Entity,
    InvalidInputError,
    MemoryClosedError,
    MemoryConfig,
    MemoryEntry,
    MemoryStats,
    MemoryVectorStore,
    SearchResults,
    ThreadInfo,
    TieredChatMessageHistory,
    TieredCheckpointSaver,
    TieredMemory,
    TieredMemoryStore,
)
from langchain_tiered_memory.api.admin import Admin
from langchain_tiered_memory.api.entities import Entities
from langchain_tiered_memory.api.episodes import Episodes
from langchain_tiered_memory.api.memories import Memories
from langchain_tiered_memory.api.threads import Threads
from langchain_tiered_memory.embeddings import HashingEmbeddings

PACKAGE = Path(__file__).parent.parent / "langchain_tiered_memory"
GROUPS = (Memories, Episodes, Entities, Threads, Admin)


@pytest.fixture
def memory(tmp_path):
    with TieredMemory(tmp_path / "m", MemoryConfig(job_mode="inline"), embeddings=HashingEmbeddings()) as m:
        m.after_turn("alice", "t1", [HumanMessage("I live in Lisbon and I drink green tea", id="h1"),
                                     AIMessage("Noted", id="a1")])
        yield m


def _public(obj: object) -> list[str]:
    return [name for name in dir(obj) if not name.startswith("_")]


# --- the shape ------------------------------------------------------------------------


def test_the_facade_has_at_most_twenty_public_names_in_at_most_400_lines(memory):
    names = _public(memory)  # the instance: attributes and properties count too
    assert len(names) <= 20, names
    assert set(names) >= {
        "before_turn", "abefore_turn", "after_turn", "aafter_turn", "recall", "arecall", "end_session",
        "flush", "aflush", "close", "config", "data_dir", "memories", "episodes", "entities", "threads",
        "admin", "store", "checkpointer",
    }
    assert len((PACKAGE / "memory.py").read_text().splitlines()) <= 400


def _async_pairs():
    for cls in (TieredMemory, *GROUPS):
        for name, member in inspect.getmembers(cls, inspect.iscoroutinefunction):
            if name.startswith("a") and not name.startswith("_") and hasattr(cls, name[1:]):
                yield pytest.param(cls, name, id=f"{cls.__name__}.{name}")


@pytest.mark.parametrize(("cls", "name"), list(_async_pairs()))
def test_every_async_twin_has_its_sync_twins_signature(cls, name):
    sync, coro = getattr(cls, name[1:]), getattr(cls, name)
    assert inspect.signature(coro) == inspect.signature(sync)
    kinds = {p.kind for p in inspect.signature(coro).parameters.values()}
    assert inspect.Parameter.VAR_KEYWORD not in kinds and inspect.Parameter.VAR_POSITIONAL not in kinds


def test_the_async_pairs_cover_what_the_old_facade_had():
    pairs = {p.id for p in _async_pairs()}
    assert {"TieredMemory.abefore_turn", "TieredMemory.aafter_turn", "TieredMemory.arecall",
            "TieredMemory.aflush", "Memories.aremember", "Memories.asearch", "Memories.aforget",
            "Admin.aforget"} <= pairs


def test_every_public_name_of_the_groups_is_documented():
    undocumented = [
        f"{cls.__name__}.{name}" for cls in GROUPS for name, member in inspect.getmembers(cls)
        if not name.startswith("_") and not (getattr(member, "__doc__", "") or "").strip()
    ]
    assert not undocumented


async def test_the_grouped_apis_work(memory):
    mid = memory.memories.remember("alice", "user: I keep bees", importance=0.7)
    assert isinstance(memory.memories.search("alice", "bees"), SearchResults)
    assert (await memory.memories.asearch("alice", "bees"))[0].entry.id == mid
    assert isinstance(memory.memories.get("alice", mid), MemoryEntry)
    assert memory.memories.update("alice", mid, importance=0.9).importance == 0.9
    assert mid in [e.id for e in memory.memories.list("alice")]
    assert await memory.memories.aremember_many("alice", [{"content": "user: I also keep hens"}])
    assert memory.episodes.search("alice") == []
    assert all(isinstance(e, Entity) for e in memory.entities.list("alice"))
    [thread] = memory.threads.list("alice")
    assert isinstance(thread, ThreadInfo) and (thread.thread_id, thread.messages) == ("t1", 2)
    assert memory.threads.users() == ["alice"]
    assert [m.id for m in memory.threads.messages("alice", "t1")] == ["h1", "a1"]
    assert memory.threads.recorded_ids("alice", "t1", ["h1", "zz"]) == {"h1"}
    assert isinstance(memory.admin.stats(), MemoryStats)
    assert memory.memories.forget("alice", mid)["memories"] == 1
    assert (await memory.memories.aforget("alice", mid))["memories"] == 0
    assert memory.admin.export_user("alice")["messages"]
    assert memory.admin.jobs.list() is not None and memory.admin.extractor.offline
    assert memory.admin.counter.count_text("hello") > 0
    assert (await memory.admin.aforget(thread_id="t1"))["messages"] == 2


def test_admin_forget_takes_no_memory_id_and_memories_forget_checks_its_ids(memory):
    with pytest.raises(TypeError):
        memory.admin.forget(user_id="alice", memory_id="x")  # type: ignore[call-arg]
    with pytest.raises(InvalidInputError):
        memory.admin.forget()
    assert memory.memories.forget("alice", "not-a-uuid")["memories"] == 0


def test_a_bulk_load_indexes_what_it_wrote_and_leaves_a_threads_backlog_to_the_jobs(tmp_path):
    # remember_many costs what it adds: the turns a thread wrote, waiting for the job worker
    # to index them, are not indexed inside the bulk load's call (nor lost: flush does it).
    with TieredMemory(tmp_path / "m", MemoryConfig(job_mode="manual"), embeddings=HashingEmbeddings()) as m:
        for i in range(5):
            m.after_turn("dana", "d1", [HumanMessage(f"Question {i} about my garden?"), AIMessage(f"Answer {i}.")])
        waiting = m.admin.stats()["index"]["pending"]
        assert waiting > 0
        ids = m.memories.remember_many("dana", [{"content": f"Dana grows {k} in the garden."}
                                                 for k in ("tomatoes", "beans", "leeks")])
        assert m.admin.stats()["index"]["pending"] == waiting  # the memories are indexed, the turns wait
        assert [h.entry.id for h in m.memories.search("dana", "tomatoes", k=1)] == [ids[0]]
        m.flush()
        assert m.admin.stats()["index"]["pending"] == 0
        assert m.recall("dana", "Question 3 about my garden", k=3)


async def test_memories_count_is_what_list_pages_through_on_each_backend(make_memory):
    # A real COUNT in SQLite and PostgreSQL: superseded memories included, other users not.
    with make_memory(MemoryConfig(job_mode="inline"), embeddings=HashingEmbeddings()) as m:
        assert m.memories.count("erin") == 0
        m.after_turn("erin", "e1", [HumanMessage("I live in Paris."), AIMessage("Nice.")])
        m.after_turn("erin", "e1", [HumanMessage("I moved, I live in Lisbon now."), AIMessage("Great.")])
        erin = m.memories.list("erin")
        assert any(e.superseded_by for e in erin)  # the history is counted too
        assert m.memories.count("erin") == len(erin) >= 2
        ids = m.memories.remember_many("bulk", [{"content": f"Bulk fact {i} on topic {i}."} for i in range(130)],
                                       merge=False)
        assert m.memories.count("bulk") == 130 == len(m.memories.list("bulk", limit=1000))
        assert await m.memories.acount("bulk") == 130
        m.memories.forget("bulk", ids[0])
        assert m.memories.count("bulk") == 129 and m.memories.count("erin") == len(erin)
        with pytest.raises(InvalidInputError):
            m.memories.count("")
    with pytest.raises(MemoryClosedError):
        m.memories.count("bulk")


# --- adapters, built explicitly -------------------------------------------------------


async def test_adapters_are_built_from_their_classes_and_close_with_the_memory(tmp_path):
    memory = TieredMemory(tmp_path / "m", MemoryConfig(job_mode="inline"), embeddings=HashingEmbeddings())
    assert isinstance(memory.store, TieredMemoryStore) and memory.store is memory.store
    assert isinstance(memory.checkpointer, TieredCheckpointSaver) and memory.checkpointer is memory.checkpointer
    TieredMemoryStore(memory).put(("docs",), "k", {"text": "hello"})
    assert memory.items.get(("docs",), "k") is not None
    history = TieredChatMessageHistory(memory, "alice", "t")
    history.add_messages([HumanMessage("hi"), AIMessage("hello")])
    assert [m.text for m in memory.threads.messages("alice", "t")] == ["hi", "hello"]
    assert MemoryVectorStore(memory, "alice").embeddings is memory.admin.embeddings
    own = TieredCheckpointSaver(memory)
    saver = AsyncTieredCheckpointSaver(memory)
    await saver.setup()
    # The database is the memory's own file; the savers open their connections to it.
    db = memory.admin.database()
    assert db.dialect.name == "sqlite"
    assert isinstance(db.connect(), sqlite3.Connection)
    memory.close()
    # Each saver registered its close: the memory's close released their connections.
    with pytest.raises(MemoryClosedError):
        own.get_tuple({"configurable": {"thread_id": "t"}})
    with pytest.raises(MemoryClosedError):
        await saver.aget_tuple({"configurable": {"thread_id": "t"}})
    with pytest.raises(MemoryClosedError):
        memory.admin.database()
    with pytest.raises(MemoryClosedError):
        memory.admin.close_with(lambda: None)


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports, absolute, TYPE_CHECKING and in-function imports included."""
    package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if path.name == "__init__.py":
        package = package.rsplit(".", 1)[0] + ".__init__"
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: -node.level] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            out |= {module} | {f"{module}.{a.name}" for a in node.names}
    return out


def test_the_facade_imports_no_adapter_and_ops_no_facade():
    facade = [PACKAGE / "memory.py", *sorted((PACKAGE / "api").glob("*.py"))]
    for path in facade:
        up = {m for m in _imports(path) if m.startswith("langchain_tiered_memory.integrations")
              or m.startswith(("langchain_tiered_memory.cli", "langchain_tiered_memory.inspector"))}
        assert not up, f"{path.name} imports {up}"
        assert "importlib" not in path.read_text(), path
    for path in sorted((PACKAGE / "ops").glob("*.py")):
        up = {m for m in _imports(path) if m in ("langchain_tiered_memory", "langchain_tiered_memory.__init__")
              or m.startswith(("langchain_tiered_memory.memory", "langchain_tiered_memory.api",
                               "langchain_tiered_memory.integrations", "langchain_tiered_memory.cli"))}
        assert not up, f"ops/{path.name} imports {up}"
    assert not (PACKAGE / "adapters.py").exists()


# --- the old names: one release with a warning ---------------------------------------

OLD_CALLS = {
    "remember": (lambda m: m.remember("alice", "user: I keep bees"), "memory.memories.remember"),
    "remember_many": (lambda m: m.remember_many("alice", [{"content": "x y"}]), "memory.memories.remember_many"),
    "aremember": (lambda m: asyncio.run(m.aremember("alice", "user: I swim")), "memory.memories.aremember"),
    "search": (lambda m: m.search("alice", "tea"), "memory.memories.search"),
    "asearch": (lambda m: asyncio.run(m.asearch("alice", "tea")), "memory.memories.asearch"),
    "get_memory": (lambda m: m.get_memory("alice", m.memories.remember("alice", "a b")), "memory.memories.get"),
    "update_memory": (lambda m: m.update_memory("alice", m.memories.remember("alice", "c d"), importance=0.9),
                      "memory.memories.update"),
    "list_memories": (lambda m: m.list_memories("alice"), "memory.memories.list"),
    "search_episodes": (lambda m: m.search_episodes("alice"), "memory.episodes.search"),
    "entity": (lambda m: m.entity("alice", "Lisbon"), "memory.entities.get"),
    "get_messages": (lambda m: m.get_messages("alice", "t1"), "memory.threads.messages"),
    "users": (lambda m: m.users(), "memory.threads.users"),
    "summary": (lambda m: m.summary("alice", "t1"), "memory.threads.summary"),
    "recorded_ids": (lambda m: m.recorded_ids("alice", "t1", ["h1"]), "memory.threads.recorded_ids"),
    "stats": (lambda m: m.stats(), "memory.admin.stats"),
    "scrub": (lambda m: m.scrub(), "memory.admin.scrub"),
    "reindex": (lambda m: m.reindex(), "memory.admin.reindex"),
    "optimize": (lambda m: m.optimize(), "memory.admin.optimize"),
    "export_user": (lambda m: m.export_user("alice"), "memory.admin.export_user"),
    "import_user": (lambda m: m.import_user("bob", {}), "memory.admin.import_user"),
    "jobs": (lambda m: m.jobs.list(), "memory.admin.jobs"),
    "extractor": (lambda m: m.extractor.offline, "memory.admin.extractor"),
    "counter": (lambda m: m.counter.count_text("hi"), "memory.admin.counter"),
    "embeddings": (lambda m: m.embeddings.embed_query("hi"), "memory.admin.embeddings"),
    "forget": (lambda m: m.forget(user_id="alice", thread_id="t1"), "memory.admin.forget"),
    "aforget": (lambda m: asyncio.run(m.aforget(user_id="alice", memory_id=m.memories.remember("alice", "e f"))),
                "memory.admin.aforget"),
    "storage": (lambda m: m.storage.location, "memory.admin.database()"),
    "model": (lambda m: m.model is None, "the chat model you passed"),
    "async_checkpointer": (lambda m: isinstance(m.async_checkpointer, AsyncTieredCheckpointSaver),
                           "AsyncTieredCheckpointSaver(memory)"),
    "pre_model_hook": (lambda m: callable(m.pre_model_hook), "pre_model_hook(memory)"),
    "post_model_hook": (lambda m: callable(m.post_model_hook), "post_model_hook(memory)"),
    "chat_history": (lambda m: m.chat_history("alice", "t1").messages, "TieredChatMessageHistory(memory,"),
    "as_vectorstore": (lambda m: m.as_vectorstore("alice").similarity_search("tea", k=1),
                       "MemoryVectorStore(memory, user_id)"),
    "entities(user_id)": (lambda m: m.entities("alice"), "memory.entities.list(user_id)"),
    "threads(user_id)": (lambda m: m.threads("alice"), "memory.threads.list(user_id)"),
}


@pytest.mark.parametrize("old", list(OLD_CALLS))
def test_each_old_name_warns_with_its_new_spelling_and_still_works(memory, old):
    call, new = OLD_CALLS[old]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = call(memory)
    ours = [w for w in caught if issubclass(w.category, DeprecationWarning) and "is deprecated" in str(w.message)]
    assert ours, f"memory.{old} did not warn"
    assert str(ours[0].message).startswith(f"memory.{old} is deprecated") and new in str(ours[0].message)
    assert ours[0].filename == __file__  # the warning points at the caller's line
    assert result is not False


def test_the_old_names_are_not_public_names_and_do_what_they_did(memory):
    assert not set(OLD_CALLS) & set(_public(memory)) - {"entities", "threads"}
    with pytest.warns(DeprecationWarning):
        mid = memory.remember("alice", "user: my dentist is Dr Costa")
    assert memory.memories.get("alice", mid).content == "user: my dentist is Dr Costa"
    with pytest.warns(DeprecationWarning, match="memory.memories.update"):
        with pytest.raises(InvalidInputError, match="cannot change owner"):
            memory.update_memory("alice", mid, owner="bob")
    with pytest.warns(DeprecationWarning, match="memory.memories.forget for one memory"):
        assert memory.forget(user_id="alice", memory_id=mid)["memories"] == 1
    with pytest.warns(DeprecationWarning), pytest.raises(InvalidInputError, match="takes user_id= and nothing else"):
        memory.forget(user_id="alice", thread_id="t1", memory_id=mid)
    with pytest.warns(DeprecationWarning):
        assert memory.entities("alice") == memory.entities.list("alice")
    with pytest.raises(AttributeError):
        memory.no_such_name  # noqa: B018
