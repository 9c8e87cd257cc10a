"""TieredMemory's contract: bad input is our error, a turn is never stored twice, forget forgets."""

import asyncio

import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, RemoveMessage, SystemMessage

from langchain_tiered_memory import (
    InvalidIdentifierError,
    InvalidInputError,
    InvalidMessageError,
    MemoryClosedError,
    MemoryConfig,
    ThreadOwnershipError,
    TieredChatMessageHistory,
    TieredMemory,
    TieredMemoryError,
)
from langchain_tiered_memory.tokens import TiktokenCounter


@pytest.mark.parametrize("bad", ["", "   ", None, 42, b"bytes", "x" * 513, "a\x00b"])
def test_bad_ids_raise_our_error(memory, bad):
    for call in (
        lambda: memory.after_turn(bad, "t", [HumanMessage("hi")]),
        lambda: memory.after_turn("u", bad, [HumanMessage("hi")]),
        lambda: memory.before_turn(bad, "t"),
        lambda: memory.before_turn("u", bad),
        lambda: TieredChatMessageHistory(memory, bad, "t"),
    ):
        with pytest.raises(InvalidIdentifierError):
            call()


@pytest.mark.parametrize(
    "bad",
    [
        [42],
        [None],
        [HumanMessage("ok"), object()],
        ["a bare string in the list is not a message either"],
        "hello",
        HumanMessage("not in a list"),
        None,
        [RemoveMessage(id="x")],
        [{"role": "nonsense-role", "content": "x"}],
    ],
)
def test_non_messages_raise_our_error_and_store_nothing(memory, bad):
    with pytest.raises(InvalidMessageError):
        memory.after_turn("u", "t", bad)
    assert memory.threads.messages("u", "t") == []


def test_unserialisable_message_is_our_error(memory):
    with pytest.raises(InvalidMessageError, match="JSON"):
        memory.after_turn("u", "t", [HumanMessage("x", additional_kwargs={"obj": object()})])
    assert memory.threads.messages("u", "t") == []


def test_message_likes_and_chunks_are_accepted(memory):
    memory.after_turn(
        "u", "t", [{"role": "user", "content": "dict"}, ("assistant", "tuple"), AIMessageChunk("chunk")]
    )
    log = memory.threads.messages("u", "t")
    assert [(m.type, m.text) for m in log] == [("human", "dict"), ("ai", "tuple"), ("ai", "chunk")]
    assert type(log[2]) is AIMessage


def test_repeating_a_turn_stores_nothing_twice(memory):
    turn = [HumanMessage("hi", id="m1"), AIMessage("hello", id="m2")]
    first = memory.after_turn("u", "t", turn)
    again = memory.after_turn("u", "t", turn + [HumanMessage("more", id="m3")])
    assert (first.stored, first.duplicates) == (2, 0)
    assert (again.stored, again.duplicates, again.seqs) == (1, 2, [2])
    assert [m.id for m in memory.threads.messages("u", "t")] == ["m1", "m2", "m3"]


def test_messages_without_ids_get_one_and_the_callers_object_is_untouched(memory):
    msg = HumanMessage("no id")
    memory.after_turn("u", "t", [msg])
    assert msg.id is None
    assert memory.threads.messages("u", "t")[0].id


def test_a_thread_belongs_to_one_user(memory):
    memory.after_turn("alice", "t", [HumanMessage("secret")])
    with pytest.raises(ThreadOwnershipError):
        memory.after_turn("bob", "t", [HumanMessage("let me in")])
    with pytest.raises(ThreadOwnershipError):
        memory.before_turn("bob", "t")
    with pytest.raises(ThreadOwnershipError):
        memory.admin.forget(user_id="bob", thread_id="t")
    assert [m.text for m in memory.threads.messages("alice", "t")] == ["secret"]


def test_forget_a_thread_and_a_user(memory):
    memory.after_turn("alice", "t1", [HumanMessage("a1")])
    memory.after_turn("alice", "t2", [HumanMessage("a2")])
    memory.after_turn("bob", "t3", [HumanMessage("b1")])
    memory.before_turn("alice", "t1")  # warm the cache: forgetting must drop it
    assert memory.admin.forget(thread_id="t1").items() >= {"threads": 1, "messages": 1}.items()
    assert memory.before_turn("alice", "t1").messages == []
    assert memory.admin.forget(user_id="alice").items() >= {"threads": 1, "messages": 1}.items()
    assert memory.threads.list("alice") == []
    assert [m.text for m in memory.threads.messages("bob", "t3")] == ["b1"]
    # A forgotten thread id can start again from nothing.
    memory.after_turn("carol", "t1", [HumanMessage("fresh")])
    assert [m.text for m in memory.before_turn("carol", "t1").window] == ["fresh"]
    with pytest.raises(InvalidInputError):
        memory.admin.forget()


def test_closed_memory_says_so(data_dir):
    m = TieredMemory(data_dir)
    m.close()
    m.close()
    for call in (lambda: m.before_turn("u", "t"), lambda: m.after_turn("u", "t", [HumanMessage("x")]), m.flush):
        with pytest.raises(MemoryClosedError):
            call()


def test_empty_thread_context(memory):
    ctx = memory.before_turn("u", "never-used")
    assert ctx.messages == [] and ctx.evicted == 0
    assert ctx.token_usage.total == TiktokenCounter().overhead
    assert ctx.token_usage.remaining == ctx.token_usage.budget - ctx.token_usage.total


def test_query_defaults_to_the_newest_human_message(memory):
    memory.after_turn("u", "t", [HumanMessage("first"), AIMessage("a"), HumanMessage("latest question"), AIMessage("b")])
    assert memory.before_turn("u", "t").query == "latest question"
    assert memory.before_turn("u", "t", query="explicit").query == "explicit"
    with pytest.raises(InvalidInputError):
        memory.before_turn("u", "t", query=5)  # type: ignore[arg-type]


def test_counts_are_stored_and_redone_for_another_counter(data_dir, small_config):
    with TieredMemory(data_dir, small_config) as m:
        m.after_turn("u", "t", [HumanMessage("one two three four five six")])
        assert m.before_turn("u", "t").token_usage["window"] == TiktokenCounter().count_message(HumanMessage("one two three four five six"))
    words = lambda msgs: sum(len(x.text.split()) for x in msgs)  # noqa: E731
    with TieredMemory(data_dir, small_config, token_counter=words) as m:
        assert m.before_turn("u", "t").token_usage["window"] == 6
    with TieredMemory(data_dir, small_config, token_counter=words) as m:
        rows = m._parts.storage.threads.index(m._parts.storage.threads.get("t").key)
        assert [(r.tokens, r.counter) for r in rows] == [(6, m.admin.counter.name)]


def test_eviction_is_recorded_for_the_summary_layer(memory):
    for i in range(30):
        result = memory.after_turn("u", "t", [HumanMessage(f"message {i} " * 8)])
    thread = memory._parts.storage.threads.get("t")
    assert result.evicted > 0
    assert thread.evicted_through == result.evicted - 1
    # The summary written since takes room, so the window can only have shrunk.
    assert memory.before_turn("u", "t").evicted >= result.evicted


async def test_async_variants(memory):
    await memory.aafter_turn("u", "t", [HumanMessage("async hi")])
    ctx = await memory.abefore_turn("u", "t")
    assert ctx.window[0].text == "async hi"
    results = await asyncio.gather(*(memory.aafter_turn("u", "t", [HumanMessage(f"{i}")]) for i in range(20)))
    assert sum(r.stored for r in results) == 20
    assert len(memory.threads.messages("u", "t")) == 21


def test_everything_raised_is_ours(memory):
    with pytest.raises(TieredMemoryError):
        memory.after_turn("", "t", [])


def test_stats(memory):
    memory.after_turn("u", "t", [SystemMessage("s"), HumanMessage("h")])
    stats = memory.admin.stats()
    assert (stats["users"], stats["threads"], stats["messages"]) == (1, 1, 2)
    assert stats["db_bytes"] > 0


def test_context_manager_closes(data_dir):
    with TieredMemory(data_dir, MemoryConfig()) as m:
        pass
    with pytest.raises(MemoryClosedError):
        m.before_turn("u", "t")
