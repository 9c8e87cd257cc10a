"""Issue 14's errors that were not ours: each is our error at the boundary with nothing
stored, or a documented degradation; and nothing a caller stores makes a thread unreadable."""

from __future__ import annotations

import json
import shutil
import sqlite3
import time
import warnings

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from langchain_tiered_memory import (
    InvalidInputError,
    InvalidMessageError,
    MemoryClosedError,
    MemoryConfig,
    TieredChatMessageHistory,
    TieredMemory,
    VectorStoreError,
)
from langchain_tiered_memory.embeddings import HashingEmbeddings

INLINE = MemoryConfig(job_mode="inline", max_tokens=2_000, system_reserve=100, output_reserve=100)


def _open(path, config=INLINE):
    return TieredMemory(path, config, embeddings=HashingEmbeddings())


def test_a_model_constructed_message_with_dict_content_is_refused_and_the_thread_stays_readable(tmp_path):
    bad = HumanMessage.model_construct(
        content={"text": "hi"}, id="bad-1", type="human", additional_kwargs={}, response_metadata={}
    )
    with _open(tmp_path / "m") as m:
        m.after_turn("u", "t", [HumanMessage("before", id="ok-1")])
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no pydantic serializer warning leaks either
            with pytest.raises(InvalidMessageError, match="bad-1"):
                m.after_turn("u", "t", [HumanMessage("kept?", id="ok-2"), bad])
        # The whole turn is refused: nothing of it is stored, the thread reads as before.
        assert [x.id for x in m.threads.messages("u", "t")] == ["ok-1"]
        assert [x.id for x in m.before_turn("u", "t").window] == ["ok-1"]
        assert m.admin.stats()["jobs"]["pending"] == 0 and m.admin.stats()["jobs"]["done"] == 1


def _poison(db_path, thread_id: str, seq: int, message: dict) -> None:
    """Write a message row the way an older version or another tool might have: around our
    checks, straight into the file."""
    with sqlite3.connect(db_path) as conn:
        key, user = conn.execute("SELECT id, user_id FROM threads WHERE thread_id = ?", (thread_id,)).fetchone()
        conn.execute(
            "INSERT INTO messages (thread_key, user_id, seq, message_id, type, tool_calls, data, tokens, "
            "counter, created_at) VALUES (?, ?, ?, ?, ?, 0, ?, 5, 'tiktoken:cl100k_base', '2026-01-01T00:00:00+00:00')",
            (key, user, seq, message["data"]["id"], message["type"], json.dumps(message)),
        )
        conn.execute("UPDATE threads SET next_seq = ? WHERE id = ?", (seq + 1, key))


@pytest.mark.parametrize(
    ("stored", "sent"),
    [
        ({"type": "human", "data": {"content": {"text": "dict content"}, "id": "p1", "type": "human"}}, True),
        # A tool result answering no call is an orphan: kept in the log, never sent.
        ({"type": "tool", "data": {"content": "no call id", "id": "p1", "type": "tool"}}, False),
        ({"type": "ai", "data": {"content": 42, "id": "p1", "type": "ai", "tool_calls": "broken"}}, True),
        ({"type": "nonsense", "data": {"content": "unknown type", "id": "p1"}}, True),
    ],
)
def test_a_stored_message_that_no_longer_validates_is_read_as_text_not_raised(tmp_path, stored, sent):
    with _open(tmp_path / "m") as m:
        m.after_turn("u", "t", [HumanMessage("first", id="a")])
    _poison(tmp_path / "m" / "memory.db", "t", 1, stored)
    with _open(tmp_path / "m") as m:
        m.after_turn("u", "t", [AIMessage("after", id="b")])
        log = m.threads.messages("u", "t")
        assert [x.id for x in log] == ["a", "p1", "b"]
        repaired = log[1]
        assert "tiered_memory_repaired" in repaired.additional_kwargs
        assert json.dumps(stored["data"]["content"]).strip('"') in repaired.text  # nothing lost
        context = m.before_turn("u", "t")
        assert ("p1" in [x.id for x in context.window]) is sent
        assert TieredChatMessageHistory(m, "u", "t").messages
        assert m.flush(timeout=30)
        assert m.admin.stats()["failed_jobs"] == []  # the extraction read the thread too


def test_a_clean_thread_is_read_without_repairs(tmp_path):
    # The repair is only for what does not validate: ordinary messages come back identical.
    turn = [HumanMessage("hi", id="h"), AIMessage("", id="a", tool_calls=[{"name": "f", "args": {}, "id": "c"}]),
            ToolMessage("42", tool_call_id="c", id="t")]
    with _open(tmp_path / "m") as m:
        m.after_turn("u", "t", turn)
        assert m.threads.messages("u", "t") == turn


SURROGATE = "a\ud800b"


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.after_turn(SURROGATE, "t", [HumanMessage("hi")]),
        lambda m: m.after_turn("u", SURROGATE, [HumanMessage("hi")]),
        lambda m: m.after_turn("u", "t", [HumanMessage(SURROGATE)]),
        lambda m: m.after_turn("u", "t", [HumanMessage("hi", id=SURROGATE)]),
        lambda m: m.before_turn("u", "t", query=SURROGATE),
        lambda m: m.memories.search("u", SURROGATE),
        lambda m: m.episodes.search("u", SURROGATE),
        lambda m: m.entities.get("u", SURROGATE),
        lambda m: m.admin.forget(user_id="u", entity=SURROGATE),
        lambda m: m.memories.remember("u", SURROGATE),
        lambda m: m.memories.remember("u", "fine", metadata={"k": SURROGATE}),
        lambda m: m.store.put(("docs", SURROGATE), "k", {"a": 1}),
        lambda m: m.store.put(("docs",), SURROGATE, {"a": 1}),
        lambda m: m.store.get(("memories", SURROGATE), "k"),
        lambda m: m.store.search(("docs",), query=SURROGATE),
        lambda m: m.recall("u", SURROGATE),
        # A string value of a generic item reached the embedder: a bare TypeError.
        lambda m: m.store.put(("x", "u"), "k", {"v": SURROGATE}),
        lambda m: m.store.put(("x", "u"), "k", {SURROGATE: "v"}),
        lambda m: m.store.put(("x", "u"), "k", {"v": ["fine", {"w": SURROGATE}]}, index=["v"]),
        lambda m: m.store.put(("memories", "u"), "k", {"content": SURROGATE}),
        lambda m: m.store.put(("memories", "u"), "k", {"content": "fine", SURROGATE: 1}),
    ],
)
def test_lone_surrogates_are_our_error_and_store_nothing(tmp_path, call):
    # They used to escape as UnicodeEncodeError from SQLite or the tokenizer.
    with _open(tmp_path / "m") as m:
        m.after_turn("u", "t", [HumanMessage("My name is Alice.", id="h")])
        m.memories.remember("u", "user: I like tea")
        before = m.admin.stats()
        with pytest.raises(InvalidInputError, match="surrogate"):
            call(m)
        after = m.admin.stats()
        for key in ("threads", "messages", "memories", "entities", "episodes"):
            assert after[key] == before[key], key
        assert [x.id for x in m.threads.messages("u", "t")] == ["h"]


def test_a_huge_message_costs_little_on_every_later_turn(tmp_path):
    """A 1 MB message is the turn's query and is cut to fit the window: the cut is cached,
    and the query is searched by its first 32,000 characters (its first 64 words for the
    entity search, which took 4 s per turn with every word of it)."""
    import random
    import string

    rnd = random.Random(14)
    words = " ".join("".join(rnd.choices(string.ascii_lowercase, k=6)) for _ in range(150_000))
    with _open(tmp_path / "m") as m:
        m.memories.remember("u", "user: I like green tea")
        m.after_turn("u", "t", [HumanMessage("My name is Alice and I live in Paris.")])
        m.after_turn("u", "t", [HumanMessage(words, id="big")])
        first = m.before_turn("u", "t")
        assert first.truncated and first.window[-1].id == "big"
        times = []
        for _ in range(3):
            start = time.perf_counter()
            context = m.before_turn("u", "t")
            times.append(time.perf_counter() - start)
        assert context.messages == first.messages
        assert max(times) < 0.5, times  # was 4.5 s each
        assert len(m.threads.messages("u", "t")[-1].text) == len(words)  # the log keeps it whole


def test_metadata_and_store_values_nested_2000_deep_are_our_error(tmp_path):
    deep: dict = {}
    for _ in range(2_000):
        deep = {"a": deep}
    with _open(tmp_path / "m") as m:
        with pytest.raises(InvalidInputError, match="nested"):
            m.memories.remember("u", "a fact", metadata=deep)
        with pytest.raises(InvalidInputError, match="nested"):
            m.store.put(("docs",), "k", deep)
        with pytest.raises(InvalidInputError, match="nested|malformed"):
            m.store.put(("memories", "u"), "k", {"content": "a fact", "metadata": deep})
        assert m.admin.stats()["memories"] == 0 and m.store.search(("docs",)) == []


def test_close_after_the_index_vanished_raises_our_error_and_releases_the_database(tmp_path):
    m = _open(tmp_path / "m")
    m.memories.remember("u", "user: I like tea")
    m.after_turn("u", "t", [HumanMessage("hi")])
    shutil.rmtree(tmp_path / "m" / "qdrant")
    with pytest.raises(VectorStoreError, match="closing the Qdrant Edge shard"):
        m.close()
    m.close()  # safe to call again
    with pytest.raises(MemoryClosedError):
        m.threads.messages("u", "t")
    # Released: the file is not held by a connection, and the directory opens again with
    # its index rebuilt from the database.
    with _open(tmp_path / "m") as again:
        assert [x.text for x in again.threads.messages("u", "t")] == ["hi"]
        assert again.flush(timeout=30)
        assert [h.entry.content for h in again.memories.search("u", "tea", peek=True)] == ["user: I like tea"]


def test_import_of_data_that_is_not_an_export_is_our_error(tmp_path):
    with _open(tmp_path / "m") as m:
        for data in ("text", None, [1, 2], {"messages": ["not a record"]}, {"entities": [1]}):
            with pytest.raises(InvalidInputError):
                m.admin.import_user("newcomer", data)
        assert m.threads.users() == []


def test_a_model_that_is_not_one_is_refused_at_construction(tmp_path):
    # It used to be accepted, and every job (and stats()) failed on it later.
    with pytest.raises(InvalidInputError, match="BaseChatModel"):
        TieredMemory(tmp_path / "m", INLINE, model=42)  # type: ignore[arg-type]
    with _open(tmp_path / "m") as m:  # the directory was not left locked
        m.after_turn("u", "t", [HumanMessage("hi")])


def test_a_user_named_like_the_memory_namespace_owns_no_other_users_store_memories(tmp_path):
    """The long isolation probe's find: store items belonged to the user named first or
    second in their namespace, so user "memories" exported — and forgot — every user's
    ("memories", user) items."""
    with _open(tmp_path / "m") as m:
        m.store.put(("memories", "alice"), "a", {"content": "alice's note"})
        m.store.put(("memories", "memories"), "m", {"content": "the note of the user named memories"})
        m.store.put(("profiles", "bob"), "b", {"likes": "tea"})
        exported = m.admin.export_user("memories")["store_items"]
        assert [(i["namespace"], i["key"]) for i in exported] == [(["memories", "memories"], "m")]
        m.admin.forget(user_id="memories")
        assert m.store.get(("memories", "alice"), "a") is not None
        assert m.store.get(("profiles", "bob"), "b") is not None
        assert m.store.get(("memories", "memories"), "m") is None
