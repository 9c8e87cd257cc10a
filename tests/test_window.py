"""The window: never over budget, a contiguous newest suffix, tool-call groups intact."""

import functools
import uuid

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from langchain_tiered_memory import TRUNCATION_MARKER, MemoryConfig, TieredMemory
from langchain_tiered_memory.embeddings import MiniLMEmbeddings
from langchain_tiered_memory.storage import IndexRow
from langchain_tiered_memory.tokens import TiktokenCounter
from langchain_tiered_memory.layers.window import ThreadIndex, select

WORDS = ["alpha", "tea", "Paris", "budget", "réunion", "東京", "🙂", "the", "42", "ok"]


# --- the selection itself, over many shapes of thread ---------------------------------

@st.composite
def index_rows(draw):
    """A thread's rows: plain messages, tool-call groups, orphan tool results, system messages."""
    rows, seq = [], 0
    for _ in range(draw(st.integers(0, 40))):
        kind = draw(st.sampled_from(["human", "ai", "group", "orphan", "system"]))
        if kind == "group":
            calls = draw(st.integers(1, 3))
            rows.append(IndexRow(seq, "ai", draw(st.integers(1, 60)), "c", tool_calls=calls))
            seq += 1
            for _ in range(calls):
                rows.append(IndexRow(seq, "tool", draw(st.integers(1, 80)), "c"))
                seq += 1
        else:
            rows.append(IndexRow(seq, "tool" if kind == "orphan" else kind, draw(st.integers(0, 120)), "c"))
            seq += 1
    return rows


@given(rows=index_rows(), budget=st.integers(0, 600))
@settings(max_examples=400, deadline=None)
def test_selection_is_the_longest_valid_suffix_within_budget(rows, budget):
    index = ThreadIndex(key=1, generation=0)
    index.extend(rows)
    n = len(index)
    kept = set(index.seqs)
    for prev, row in zip([None, *rows], rows):
        if row.type == "tool" and row.seq in kept:
            # A kept tool message follows its call or a sibling result.
            before = index.seqs[index.seqs.index(row.seq) - 1]
            assert any(r.seq == before and (r.type == "tool" or r.tool_calls) for r in rows)
    assert not any(r.type == "system" for r in rows if r.seq in kept)
    chosen = select(index, budget)
    if chosen.truncate:
        # Only when not even the newest group fits, and then exactly that group.
        assert chosen.start == index.group_start(n - 1)
        assert index.tokens(chosen.start) > budget
        return
    assert index.tokens(chosen.start) <= budget
    assert chosen.start == n or not index.is_tool[chosen.start]
    if 0 < chosen.start < n:
        # Maximal: adding the group just before the window would break the budget.
        assert index.tokens(index.group_start(chosen.start - 1)) > budget


def test_a_floor_keeps_summarised_messages_out():
    index = ThreadIndex(key=1, generation=0)
    index.extend([IndexRow(i, "human", 10, "c") for i in range(10)])
    assert select(index, 1_000).start == 0
    assert select(index, 1_000, floor_seq=4).start == 5


# --- end to end: real SQLite, real tiktoken -------------------------------------------

@st.composite
def conversations(draw):
    """Turns of a conversation as lists of real messages."""
    turns = []
    for _ in range(draw(st.integers(1, 14))):
        kind = draw(st.sampled_from(["chat", "chat", "tools", "system", "orphan", "huge"]))
        text = lambda lo, hi: " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=lo, max_size=hi)))  # noqa: E731
        if kind == "chat":
            turns.append([HumanMessage(text(1, 40)), AIMessage(text(0, 60))])
        elif kind == "tools":
            ids = [f"call_{uuid.uuid4().hex[:8]}" for _ in range(draw(st.integers(1, 3)))]
            turns.append(
                [HumanMessage(text(1, 10)),
                 AIMessage("", tool_calls=[{"name": "lookup", "args": {"q": text(1, 4)}, "id": i} for i in ids]),
                 *[ToolMessage(text(1, 80), tool_call_id=i) for i in ids],
                 AIMessage(text(1, 20))]
            )
        elif kind == "system":
            turns.append([SystemMessage("You are assistant " + text(1, 10))])
        elif kind == "orphan":
            turns.append([ToolMessage(text(1, 10), tool_call_id="call_missing")])
        else:
            turns.append([HumanMessage("START " + text(400, 600) + " END")])
    return turns


def _check_context(ctx, log, config, counter):
    budget = config.context_budget
    assert ctx.token_usage.total <= budget
    assert ctx.token_usage.budget == budget
    # The accounting is honest: recounting what is sent gives the reported total.
    assert counter.count_messages(ctx.messages) == ctx.token_usage.total
    systems = [m for m in log if m.type == "system"]
    convo, in_group = [], False
    for m in log:  # what can be sent: no system messages, no orphan tool results
        if m.type == "system" or (m.type == "tool" and not in_group):
            continue
        in_group = m.type == "tool" or bool(getattr(m, "tool_calls", None))
        convo.append(m)
    if systems:
        assert ctx.messages[0].id == systems[-1].id
    # A contiguous newest suffix of the log (truncated copies keep their ids).
    ids = [m.id for m in ctx.window]
    if ids:
        assert ids == [m.id for m in convo[len(convo) - len(ids):]]
        assert ctx.window[0].type != "tool"
    assert ctx.evicted + len(ctx.window) == len(convo) or (ctx.truncated and not ctx.window)
    # Tool-call groups intact: each tool result's call is in the window, and each call's
    # results that exist in the log are in the window.
    calls = {tc["id"] for m in ctx.window if isinstance(m, AIMessage) for tc in m.tool_calls}
    results_in_log = {m.tool_call_id for m in convo if isinstance(m, ToolMessage)}
    assert not any(m.tool_call_id == "call_missing" for m in ctx.window if isinstance(m, ToolMessage))
    results = {m.tool_call_id for m in ctx.window if isinstance(m, ToolMessage)}
    assert results <= calls
    assert calls & results_in_log <= results
    if ctx.truncated and ctx.window:
        assert any("tokens cut by langchain-tiered-memory" in m.text for m in ctx.window)


@functools.lru_cache(maxsize=1)
def _shared_embeddings() -> MiniLMEmbeddings:
    return MiniLMEmbeddings()


@given(turns=conversations(), max_tokens=st.integers(250, 1_500), reserve=st.integers(0, 90))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_window_properties_end_to_end(tmp_path_factory, turns, max_tokens, reserve):
    config = MemoryConfig(max_tokens=max_tokens, system_reserve=reserve, output_reserve=reserve)
    counter = TiktokenCounter()
    # The real embedder, loaded once for the 80 memories the examples open (not once each).
    with TieredMemory(tmp_path_factory.mktemp("w"), config, embeddings=_shared_embeddings()) as memory:
        for turn in turns:
            memory.after_turn("u", "t", turn)
            log = memory.threads.messages("u", "t")
            _check_context(memory.before_turn("u", "t"), log, config, counter)
    # A fresh process state (no cache) sees the same window.
    with TieredMemory(memory.data_dir, config, embeddings=_shared_embeddings()) as again:
        ctx = again.before_turn("u", "t")
        _check_context(ctx, again.threads.messages("u", "t"), config, counter)


def test_oldest_evicted_first_and_nothing_deleted(memory):
    for i in range(40):
        memory.after_turn("u", "t", [HumanMessage(f"question {i} " + "word " * 10), AIMessage(f"answer {i}")])
    ctx = memory.before_turn("u", "t")
    assert ctx.evicted > 0
    log = memory.threads.messages("u", "t")
    assert len(log) == 80
    assert ctx.window[-1].text == "answer 39"
    assert ctx.window[0].id == log[ctx.evicted].id


def test_huge_message_is_truncated_with_a_marker_and_kept_whole(memory, small_config):
    huge = "BEGINNING " + "lorem ipsum dolor sit amet " * 800 + " THE QUESTION?"
    memory.after_turn("u", "t", [HumanMessage("hi"), AIMessage("hello"), HumanMessage(huge)])
    ctx = memory.before_turn("u", "t")
    assert ctx.truncated
    last = ctx.messages[-1]
    assert last.text.startswith("BEGINNING") and last.text.endswith("THE QUESTION?")
    marker_head = TRUNCATION_MARKER.split("{")[0]
    assert marker_head in last.text
    assert ctx.token_usage.total <= small_config.context_budget
    # The log keeps the whole message.
    assert memory.threads.messages("u", "t")[-1].text == huge


def test_huge_tool_result_is_truncated_inside_its_group(memory):
    memory.after_turn(
        "u",
        "t",
        [
            HumanMessage("read the file"),
            AIMessage("", tool_calls=[{"name": "read", "args": {"path": "a.txt"}, "id": "c1"}]),
            ToolMessage("data " * 5_000, tool_call_id="c1"),
        ],
    )
    ctx = memory.before_turn("u", "t")
    assert ctx.truncated
    types = [m.type for m in ctx.window]
    assert types[-2:] == ["ai", "tool"]
    assert "tokens cut" in ctx.window[-1].text


def test_tool_call_arguments_too_big_for_any_window(memory):
    big_args = {"blob": "x " * 5_000}
    memory.after_turn(
        "u", "t", [HumanMessage("go"), AIMessage("", tool_calls=[{"name": "f", "args": big_args, "id": "c1"}])]
    )
    ctx = memory.before_turn("u", "t")  # no crash: the group cannot be split, so it is left out
    assert ctx.truncated and ctx.window == []
    assert ctx.token_usage.total <= memory.config.context_budget


def test_pinned_system_message_survives_eviction(memory):
    memory.after_turn("u", "t", [SystemMessage("You are Ada.")])
    for i in range(50):
        memory.after_turn("u", "t", [HumanMessage(f"q{i} " * 5), AIMessage(f"a{i}")])
    ctx = memory.before_turn("u", "t")
    assert ctx.evicted > 0
    assert ctx.messages[0].text == "You are Ada." and ctx.system_message is ctx.messages[0]
    assert all(m.type != "system" for m in ctx.window)


def test_oversized_system_message_is_capped(data_dir):
    config = MemoryConfig(max_tokens=300, system_reserve=20, output_reserve=20)
    with TieredMemory(data_dir, config) as memory:
        memory.after_turn("u", "t", [SystemMessage("rule " * 1_000), HumanMessage("hello")])
        ctx = memory.before_turn("u", "t")
        assert ctx.token_usage["system"] <= config.context_budget // 2
        assert ctx.window[-1].text == "hello"
        assert ctx.token_usage.total <= config.context_budget
