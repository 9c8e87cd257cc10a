"""Long-term memory through ``TieredMemory``: on a real Qdrant Edge shard (the default) and on
qdrant-client's local mode (the server path), with the real MiniLM model."""

from __future__ import annotations

import contextlib
import math
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from datetime import datetime, timedelta, timezone

import pytest
from qdrant_client import QdrantClient

from langchain_tiered_memory import MemoryConfig, TieredMemory
from langchain_tiered_memory.embeddings import HashingEmbeddings, MiniLMEmbeddings
from langchain_tiered_memory.errors import (
    EmbeddingMismatchError,
    InvalidInputError,
    NotFoundError,
    TieredMemoryError,
)
from langchain_tiered_memory.entries import MAX_CONTENT_CHARS
from langchain_tiered_memory.scoring import TIE_BREAK

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def minilm():
    return MiniLMEmbeddings()


class Clock:
    """A frozen clock the test moves by hand."""

    def __init__(self, now: datetime = T0) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


@pytest.fixture(params=["edge", "qdrant-local"])
def open_memory(request, tmp_path, minilm):
    """Opens ``TieredMemory`` on one directory (and, in server mode, one qdrant-client)."""
    client = QdrantClient(":memory:") if request.param == "qdrant-local" else None
    opened: list[TieredMemory] = []
    clock = Clock()

    def make(config: MemoryConfig | dict | None = None, embeddings=None) -> TieredMemory:
        memory = TieredMemory(
            tmp_path / "memory", config, embeddings=embeddings or minilm, qdrant_client=client
        )
        memory._parts.clock = clock
        opened.append(memory)
        return memory

    make.clock = clock  # type: ignore[attr-defined]
    make.kind = request.param  # type: ignore[attr-defined]
    yield make
    for memory in opened:
        memory.close()
    if client is not None:
        client.close()


def test_no_query_of_one_user_returns_another_users_memory(open_memory):
    memory = open_memory()
    alice = {memory.memories.remember("alice", f"user: my favourite {w} is {v}") for w, v in
             [("colour", "green"), ("city", "Lisbon"), ("food", "ramen"), ("band", "Muse")]}
    bob = {memory.memories.remember("bob", f"user: my favourite {w} is {v}") for w, v in
           [("colour", "red"), ("city", "Oslo"), ("food", "tacos"), ("band", "Queen")]}
    for query in ["favourite colour", "which city", "green Lisbon ramen Muse", "red Oslo", "favourite"]:
        for user, own in (("alice", alice), ("bob", bob)):
            hits = memory.memories.search(user, query, k=10)
            assert hits, (user, query)
            assert {h.entry.id for h in hits} <= own
            assert {h.entry.user_id for h in hits} == {user}
    assert {m.id for m in memory.memories.list("alice")} == alice
    with pytest.raises(NotFoundError):
        memory.memories.get("bob", next(iter(alice)))
    # Forgetting through the wrong user deletes nothing.
    assert memory.memories.forget(user_id="bob", memory_id=next(iter(alice)))["memories"] == 0
    assert len(memory.memories.list("alice")) == 4


def test_a_query_before_any_memory_exists_returns_nothing(open_memory):
    memory = open_memory()
    assert memory.memories.search("alice", "anything at all") == []
    assert memory.memories.list("alice") == []
    memory.memories.remember("bob", "user: I have a cat")
    assert memory.memories.search("alice", "cat") == []
    assert memory.memories.search("bob", "   ") == []


def test_real_minilm_ranks_a_paraphrase_above_unrelated_memories(open_memory):
    memory = open_memory()
    dog = memory.memories.remember("alice", "user: My dog Rex loves running on the beach")
    memory.memories.remember("alice", "user: I work as an accountant in Munich")
    memory.memories.remember("alice", "user: I am allergic to peanuts")
    memory.memories.remember("alice", "assistant: The train to Hamburg leaves at nine")
    hits = memory.memories.search("alice", "What is the name of my pet?", k=4)
    assert hits[0].entry.id == dog
    hits = memory.memories.search("alice", "which foods should I avoid", k=4)
    assert "peanuts" in hits[0].entry.content


def test_the_speaker_stays_in_the_stored_and_indexed_text(open_memory):
    memory = open_memory()
    mid = memory.memories.remember("alice", "assistant: I booked the table for eight")
    assert memory.memories.get("alice", mid).content == "assistant: I booked the table for eight"
    # BM25 indexes the prefix too: the speaker word alone finds it.
    assert [h.entry.id for h in memory.memories.search("alice", "assistant", k=3)] == [mid]


def test_decay_and_access_boost_with_a_frozen_clock(open_memory):
    memory = open_memory({"decay": 0.9, "access_boost": 0.1})
    clock = open_memory.clock
    mid = memory.memories.remember("alice", "user: I keep my passport in the blue drawer", importance=0.5)
    clock.advance(days=10)
    hit = memory.memories.search("alice", "where is my passport", explain=True)[0]
    parts = hit.parts
    assert parts is not None and hit.entry.id == mid
    assert parts.days_since_access == pytest.approx(10)
    assert parts.decay == pytest.approx(0.9**10)
    assert parts.effective_importance == pytest.approx(0.5 * 0.9**10)
    assert hit.score == pytest.approx(parts.relevance + TIE_BREAK * (0.5 * 0.9**10 - 0.5))
    # The recall itself was written back: now accessed, once, boosted; the importance it
    # was given stays as it was.
    entry = memory.memories.get("alice", mid)
    assert entry.last_accessed == clock.now
    assert entry.access_count == 1
    assert entry.importance == 0.5 and entry.boost == pytest.approx(0.1)
    # Recalled just now: no decay, and a higher score for the same relevance.
    again = memory.memories.search("alice", "where is my passport", explain=True)[0]
    assert again.parts.days_since_access == pytest.approx(0)
    assert again.parts.decay == pytest.approx(1.0)
    assert again.parts.effective_importance == pytest.approx(0.6)
    assert again.score > hit.score
    # The boost is capped: importance + boost never passes 1.0.
    for _ in range(8):
        memory.memories.search("alice", "where is my passport")
    entry = memory.memories.get("alice", mid)
    assert entry.boost == pytest.approx(0.5) and entry.access_count == 10
    # However often it is recalled, the prior moves the score by at most TIE_BREAK / 2.
    last = memory.memories.search("alice", "where is my passport", explain=True)[0]
    assert last.score - last.parts.relevance == pytest.approx(TIE_BREAK / 2)


def test_age_reorders_equally_relevant_memories(open_memory):
    memory = open_memory({"decay": 0.8})
    clock = open_memory.clock
    old = memory.memories.remember("alice", "user: my sister lives in Porto", importance=0.9)
    clock.advance(days=30)
    new = memory.memories.remember("alice", "user: my brother lives in Porto", importance=0.9)
    hits = memory.memories.search("alice", "lives in Porto", k=2, explain=True)
    assert [h.entry.id for h in hits] == [new, old]
    assert hits[1].parts.decay == pytest.approx(0.8**30)


def test_a_short_search_is_the_head_of_a_long_one(open_memory):
    # Records are read best relevance first and only while one could still rank: the
    # first k of a search must be what ranking every candidate would put first, though
    # near-equal matches are reordered by their importance (which only the records hold).
    memory = open_memory()
    words = ["apple", "birch", "cedar", "daisy", "elder", "fern", "ginger", "hazel", "iris", "juniper",
             "kale", "lilac", "maple", "nettle", "olive", "peony", "quince", "rose", "sage", "tulip"]
    for i, word in enumerate(words):
        memory.memories.remember("alice", f"user: the garden notebook, page about {word}", importance=(i * 7 % 20) / 20)
    memory.memories.remember("alice", "user: my sister moved to Porto", importance=1.0)
    for query in ("garden notebook page", "what is in my garden notes", "where does my sister live"):
        whole = [(h.entry.id, h.score) for h in memory.memories.search("alice", query, k=40, peek=True)]
        assert len(whole) > 8 or "sister" in query
        for k in (1, 3, 8):
            assert [(h.entry.id, h.score) for h in memory.memories.search("alice", query, k=k, peek=True)] == whole[:k]


def test_a_near_duplicate_merges_into_the_existing_memory(open_memory):
    memory = open_memory()
    clock = open_memory.clock
    first = memory.memories.remember("alice", "user: I live in Berlin", importance=0.8, metadata={"a": 1})
    memory.memories.search("alice", "where do I live")  # one access
    clock.advance(days=1)
    second = memory.memories.remember("alice", "user: I live in Berlin.", importance=0.4)
    assert second == first
    [entry] = memory.memories.list("alice")
    assert entry.content == "user: I live in Berlin."  # the newer wording
    assert entry.importance == pytest.approx(0.8)  # the higher
    assert entry.access_count == 1 and entry.boost == pytest.approx(memory.config.access_boost)
    assert len(entry.merged_from) == 1 and entry.merged_from[0] != first
    # Another user's identical memory is not a duplicate of Alice's.
    assert memory.memories.remember("bob", "user: I live in Berlin") != first
    # A different statement is kept apart.
    memory.memories.remember("alice", "user: I lived in Paris as a child")
    assert len(memory.memories.list("alice")) == 2


def test_past_the_cap_the_lowest_effective_importance_is_evicted(open_memory):
    memory = open_memory({"max_memories_per_user": 3, "decay": 0.9})
    clock = open_memory.clock
    stale = memory.memories.remember("alice", "user: I once owned a red bicycle", importance=0.9)
    clock.advance(days=60)  # 0.9 * 0.9**60 ≈ 0.002: effectively the weakest
    keep = [
        memory.memories.remember("alice", "user: I speak Portuguese", importance=0.3),
        memory.memories.remember("alice", "user: my daughter is called Ana", importance=0.6),
    ]
    bob = memory.memories.remember("bob", "user: I play chess", importance=0.1)
    newest = memory.memories.remember("alice", "user: I am training for a marathon", importance=0.2)
    ids = {m.id for m in memory.memories.list("alice")}
    assert ids == {*keep, newest}
    assert stale not in ids
    assert [m.id for m in memory.memories.list("bob")] == [bob]


def test_memories_persist_across_reopening(open_memory):
    memory = open_memory()
    mid = memory.memories.remember("alice", "user: my locker code is 4471", "fact", 0.7, {"src": "chat"})
    memory.memories.search("alice", "locker code")
    before = memory.memories.get("alice", mid)
    memory.close()
    again = open_memory()
    assert again.memories.get("alice", mid) == before
    assert again.admin.stats()["memories"] == 1
    assert again.memories.search("alice", "what is the code of my locker")[0].entry.id == mid


def test_update_and_forget_a_memory(open_memory):
    memory = open_memory()
    mid = memory.memories.remember("alice", "user: my dentist is Dr Silva")
    updated = memory.memories.update("alice", mid, content="user: my dentist is Dr Costa", importance=0.9)
    assert updated.content.endswith("Dr Costa") and updated.importance == 0.9
    assert memory.memories.search("alice", "Costa")[0].entry.id == mid
    assert all("Silva" not in h.entry.content for h in memory.memories.search("alice", "Silva"))
    assert memory.memories.forget(user_id="alice", memory_id=mid)["memories"] == 1
    assert memory.memories.list("alice") == []
    with pytest.raises(NotFoundError):
        memory.memories.get("alice", mid)


def test_filters_by_type_and_importance(open_memory):
    memory = open_memory()
    memory.memories.remember("alice", "user: I prefer window seats on trains", "preference", 0.9)
    memory.memories.remember("alice", "user: I took a train to Vienna last May", "experience", 0.3)
    prefs = memory.memories.search("alice", "train", memory_types=["preference"])
    assert [h.entry.memory_type for h in prefs] == ["preference"]
    strong = memory.memories.search("alice", "train", min_importance=0.5)
    assert [h.entry.importance >= 0.5 for h in strong] == [True]


@pytest.mark.parametrize(
    "kwargs, needle",
    [
        ({"content": ""}, "empty"),
        ({"content": "   \n"}, "empty"),
        ({"content": "x" * (MAX_CONTENT_CHARS + 1)}, "split it"),
        ({"content": "ok", "memory_type": "opinion"}, "fact"),
        ({"content": "ok", "importance": math.nan}, "importance"),
        ({"content": "ok", "importance": 1.5}, "importance"),
        ({"content": "ok", "metadata": {"x": object()}}, "JSON"),
        ({"content": 42}, "str"),
    ],
)
def test_bad_memories_are_clear_errors_and_store_nothing(open_memory, kwargs, needle):
    memory = open_memory()
    with pytest.raises(InvalidInputError, match=needle):
        memory.memories.remember("alice", **kwargs)
    assert memory.memories.list("alice") == []


def test_a_content_over_the_token_limit_is_refused(open_memory):
    memory = open_memory()
    # Under the character limit but over the token limit: one token per ~1 character.
    text = " ".join(f"{i:x}" for i in range(6000))[: MAX_CONTENT_CHARS - 1]
    with pytest.raises(InvalidInputError, match="tokens"):
        memory.memories.remember("alice", text)


@pytest.mark.parametrize("kwargs", [{"k": 0}, {"k": 1000}, {"query": None}, {"memory_types": ["x"]},
                                    {"min_importance": math.nan}])
def test_bad_searches_are_clear_errors(open_memory, kwargs):
    memory = open_memory()
    args = {"query": "tea", **kwargs}
    with pytest.raises(InvalidInputError):
        memory.memories.search("alice", **args)


def test_another_embedding_model_is_a_clear_error_until_reindex(open_memory):
    memory = open_memory()
    mid = memory.memories.remember("alice", "user: I grow tomatoes on the balcony")
    memory.close()
    other = open_memory(embeddings=HashingEmbeddings(384))
    with pytest.raises(EmbeddingMismatchError, match="reindex"):
        other.memories.search("alice", "tomatoes")
    counts = other.admin.reindex()
    assert counts == {"memories": 1, "episodes": 0, "conversation": 0}
    assert other.memories.search("alice", "tomatoes balcony")[0].entry.id == mid


def test_before_turn_recalls_memories_inside_the_budget(open_memory):
    memory = open_memory({"max_tokens": 300, "system_reserve": 20, "output_reserve": 20,
                          "memories_max_tokens": 60})
    for i in range(20):
        memory.memories.remember("alice", f"user: fact number {i} about my garden: I planted {i} roses")
    memory.after_turn("alice", "t1", [("human", "tell me about my garden and the roses"), ("ai", "sure")])
    context = memory.before_turn("alice", "t1", query="roses in my garden")
    [section] = [s for s in context.sections if s.name == "memories"]
    assert "roses" in section.text and section.tokens <= 60
    assert "roses" in context.memory_block
    assert context.token_usage.total <= context.token_usage.budget
    assert context.token_usage.budget <= memory.config.max_tokens - memory.config.output_reserve


def test_a_peek_at_the_context_does_not_count_as_a_recall(open_memory):
    memory = open_memory()
    mid = memory.memories.remember("alice", "user: my bike is a blue Brompton")
    memory.after_turn("alice", "t1", [("human", "what bike do I ride?")])
    peeked = memory.before_turn("alice", "t1", peek=True)
    assert "Brompton" in peeked.memory_block
    assert memory.memories.get("alice", mid).access_count == 0
    assert "Brompton" in memory.before_turn("alice", "t1").memory_block
    assert memory.memories.get("alice", mid).access_count == 1


def _access_count(memory: TieredMemory, memory_id: str) -> int:
    # Read from the file by another connection: what the memory has written, not what it keeps.
    with contextlib.closing(sqlite3.connect(memory.data_dir / "memory.db")) as conn:
        return int(conn.execute("SELECT access_count FROM memories WHERE id = ?", (memory_id,)).fetchone()[0])


def _a_bike_to_recall(memory: TieredMemory) -> str:
    """A memory that the thread's last message asks about; its id (jobs done)."""
    mid = memory.memories.remember("alice", "user: my bike is a blue Brompton")
    memory.after_turn("alice", "t1", [("human", "what bike do I ride?")])
    memory.flush()
    return mid


@contextlib.contextmanager
def _write_locked(memory: TieredMemory):
    """Another process's write transaction on the memory's database, held meanwhile."""
    other = sqlite3.connect(memory.data_dir / "memory.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        other.execute("ROLLBACK")
        other.close()


def _wait_for_count(memory: TieredMemory, memory_id: str, count: int, seconds: float = 10) -> int:
    """The written access count, once it reaches ``count`` or ``seconds`` have passed."""
    deadline = time.monotonic() + seconds
    while _access_count(memory, memory_id) < count and time.monotonic() < deadline:
        time.sleep(0.1)
    return _access_count(memory, memory_id)


@pytest.mark.parametrize("open_memory", ["edge"], indirect=True)  # the database's, not the index's
def test_before_turn_writes_nothing_and_its_recalls_are_counted_after(open_memory):
    # Another process holds the database's write lock (an import, a job's commit): the
    # context is built at once, since the recalls it counts are written after the turn.
    memory = open_memory({"job_mode": "manual"})
    mid = _a_bike_to_recall(memory)
    with _write_locked(memory):
        started = time.monotonic()
        context = memory.before_turn("alice", "t1")
        assert time.monotonic() - started < 5.0  # a write would wait out the 30 s busy timeout
        assert "Brompton" in context.memory_block
    assert _access_count(memory, mid) == 0
    # Any read of the memories writes the counts first.
    assert memory.memories.get("alice", mid).access_count == 1
    assert _access_count(memory, mid) == 1
    # Counted twice before a write: both count, and the boost grows as two recalls make it.
    memory.before_turn("alice", "t1")
    memory.before_turn("alice", "t1")
    entry = memory.memories.list("alice")[0]
    assert entry.access_count == 3 and entry.boost == pytest.approx(3 * memory.config.access_boost)


@pytest.mark.parametrize("open_memory", ["edge"], indirect=True)  # the database's, not the index's
def test_search_and_recall_write_nothing_and_rank_by_the_counts_kept(open_memory):
    # Issue 42: a search or a recall is a read. While another process holds the write lock,
    # both answer at once; what they count is written after, and meanwhile the ranking (and
    # the entries returned) already read it.
    memory = open_memory({"job_mode": "manual"})
    mid = _a_bike_to_recall(memory)
    with _write_locked(memory):
        for call in range(3):
            started = time.monotonic()
            hits = memory.memories.search("alice", "which bike do I ride", k=3, explain=True)
            found = memory.recall("alice", "which bike do I ride", k=3)
            assert time.monotonic() - started < 5.0  # a write would wait out the 30 s busy timeout
            assert hits[0].entry.id == mid and any("Brompton" in e.text for e in found)
            # The counts kept (each search, and each recall that quoted it), and this one.
            assert hits[0].entry.access_count == 2 * call + 1
            assert hits[0].parts is not None and hits[0].parts.boost == pytest.approx(
                min(2 * call * memory.config.access_boost, 1 - hits[0].entry.importance))
    assert _access_count(memory, mid) == 0  # none written while the lock was held
    assert memory.memories.get("alice", mid).access_count == 6  # written at the next read


@pytest.mark.parametrize("open_memory", ["edge"], indirect=True)  # the database's, not the index's
def test_the_background_upkeep_writes_the_recalls_a_context_counted(open_memory):
    memory = open_memory({"job_mode": "background"})
    mid = _a_bike_to_recall(memory)
    assert "Brompton" in memory.before_turn("alice", "t1").memory_block
    assert _wait_for_count(memory, mid, 1) == 1  # no read of ours asked for it


@pytest.mark.parametrize("open_memory", ["edge"], indirect=True)  # the database's, not the index's
def test_the_upkeep_never_waits_for_another_process_to_write_the_recalls(open_memory):
    # Had the worker's upkeep waited for the lock another process holds, it would have held
    # the process's writing connection meanwhile (and, before reads had a connection of
    # their own, the next before_turn too).
    memory = open_memory({"job_mode": "background"})
    mid = _a_bike_to_recall(memory)
    with _write_locked(memory):
        for turn in range(2):
            started = time.monotonic()
            assert "Brompton" in memory.before_turn("alice", "t1").memory_block
            assert time.monotonic() - started < 5.0
            if turn == 0:
                time.sleep(2.5)  # the worker's upkeep runs (every second) and finds the lock held
    assert _wait_for_count(memory, mid, 2) == 2  # kept, and written once the lock was free


@pytest.mark.parametrize("open_memory", ["edge"], indirect=True)  # the database's, not the index's
def test_a_write_waiting_for_another_process_holds_up_no_context(open_memory):
    # Another user's turn is stored while another process holds the write lock: its thread
    # waits for the lock (as a job the worker runs would). The context of this user's turn,
    # built meanwhile in another thread, only reads: it must not wait behind that writer.
    memory = open_memory({"job_mode": "manual"})
    _a_bike_to_recall(memory)
    stored: list[object] = []
    with _write_locked(memory):
        writer = threading.Thread(
            target=lambda: stored.append(memory.after_turn("bob", "b1", [("human", "my cat is called Miso")]))
        )
        writer.start()
        time.sleep(1.0)  # the writer is in SQLite's busy wait now
        assert writer.is_alive()
        started = time.monotonic()
        context = memory.before_turn("alice", "t1")
        assert time.monotonic() - started < 5.0  # behind the writer: until the lock is free
        assert "Brompton" in context.memory_block
        assert memory.threads.messages("bob", "b1") == []  # reads see what is committed, no more
    writer.join(timeout=30)
    assert stored and [m.content for m in memory.threads.messages("bob", "b1")] == ["my cat is called Miso"]


def test_a_memory_vectorstore_is_one_users_memories(open_memory):
    from langchain_core.vectorstores import VectorStore

    from langchain_tiered_memory import MemoryVectorStore

    memory = open_memory()
    memory.memories.remember("alice", "user: I collect vinyl records")
    memory.memories.remember("bob", "user: I collect vinyl records too")
    store = MemoryVectorStore(memory, "alice")
    assert isinstance(store, VectorStore)
    [doc] = store.similarity_search("vinyl records", k=3)
    assert doc.page_content == "user: I collect vinyl records"
    [added] = store.add_texts(["user: my turntable is a Technics"], [{"importance": 0.9}])
    assert memory.memories.get("alice", added).importance == 0.9
    assert store.get_by_ids([added])[0].page_content.endswith("Technics")
    store.delete([added])
    assert store.get_by_ids([added]) == []
    with pytest.raises(TieredMemoryError):
        store.delete([])
