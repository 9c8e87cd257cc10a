"""after_turn's journaled work through TieredMemory: one extraction call per turn, retries,
failures with reasons, summaries of evicted messages, entity history, and crash recovery."""

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langchain_tiered_memory import MemoryConfig, TieredMemory

sys.path.insert(0, str(Path(__file__).parent))
from scripted_model import (  # noqa: E402
    Hang,
    ScriptedChatModel,
    empty_content_tool_call,
    entity,
    invalid_json_tool_call,
    memory,
    out_of_range_tool_call,
    turn_tool_call,
    wrong_types_tool_call,
)


def inline(**overrides):
    base = dict(max_tokens=2_000, system_reserve=100, output_reserve=100, job_mode="inline",
                job_backoff_seconds=0.0, job_max_attempts=3, llm_timeout_seconds=5.0)
    base.update(overrides)
    return MemoryConfig(**base)


TURN = [HumanMessage("My name is Alice and I live in Paris."), AIMessage("Hello Alice!")]
GOOD = turn_tool_call(entities=[entity("Alice", "person", location="Paris")],
                      memories=[memory("The user lives in Paris.", "fact", 0.8)])


@pytest.mark.parametrize(
    "bad",
    [invalid_json_tool_call(), wrong_types_tool_call(), RuntimeError("503 upstream overloaded"),
     "I'm sorry, I can't help with that."],
    ids=["invalid-json", "wrong-types", "exception", "prose-no-json"],
)
def test_malformed_answers_are_retried_and_the_turn_is_kept(make_memory, bad):
    model = ScriptedChatModel(script=[bad, GOOD])
    with make_memory(inline(), model=model) as m:
        result = m.after_turn("u", "t", TURN)
        assert result.stored == 2
        assert [x.text for x in m.threads.messages("u", "t")] == [x.text for x in TURN]
        assert m.flush(timeout=30)
        assert model.calls == 2
        stats = m.admin.stats()
        assert stats["jobs"]["done"] == 1 and stats["jobs"]["failed"] == 0
        assert m.entities.get("u", "alice").attributes == {"location": "Paris"}


def test_a_job_that_keeps_failing_is_marked_failed_with_a_readable_reason(make_memory):
    model = ScriptedChatModel(script=[], default=wrong_types_tool_call())
    with make_memory(inline(job_max_attempts=3), model=model) as m:
        m.after_turn("u", "t", TURN)
        assert m.flush(timeout=30)
        stats = m.admin.stats()
        assert stats["jobs"]["failed"] == 1 and model.calls == 3
        reason = stats["failed_jobs"][0]["reason"]
        assert "ExtractionError" in reason and "entities" in reason
        assert stats["failed_jobs"][0]["attempts"] == 3
        assert len(m.threads.messages("u", "t")) == 2  # the turn is never lost
        # The memory keeps working: the next turn is stored and answered from.
        m.after_turn("u", "t", [HumanMessage("still here")])
        assert m.before_turn("u", "t").window[-1].text == "still here"


def test_a_hang_past_the_timeout_fails_the_attempt_not_the_turn(make_memory):
    model = ScriptedChatModel(script=[Hang(10, then=GOOD), GOOD])
    with make_memory(inline(llm_timeout_seconds=0.5), model=model) as m:
        t = time.monotonic()
        m.after_turn("u", "t", TURN)
        assert time.monotonic() - t < 8  # the turn did not wait for the hung call
        assert m.flush(timeout=30)
        assert m.admin.stats()["jobs"]["done"] == 1
        assert m.entities.get("u", "Alice") is not None


@pytest.mark.parametrize("answer", [out_of_range_tool_call(), empty_content_tool_call()], ids=["importance", "empty"])
def test_normalisable_answers_are_applied(make_memory, answer):
    model = ScriptedChatModel(script=[answer])
    with make_memory(inline(), model=model) as m:
        m.after_turn("u", "t", TURN)
        assert m.flush(timeout=10)
        assert m.admin.stats()["jobs"] == {"pending": 0, "waiting": 0, "running": 0, "stale": 0, "done": 1, "failed": 0}


def test_one_extraction_call_per_turn_and_none_on_before_turn(make_memory):
    model = ScriptedChatModel(script=[], default=turn_tool_call(summary="They talked."))
    with make_memory(inline(max_tokens=400, system_reserve=20, output_reserve=20), model=model) as m:
        for i in range(30):
            before = model.calls
            m.before_turn("u", "t")
            assert model.calls == before  # no LLM call on the hot path
            m.after_turn("u", "t", [HumanMessage(f"turn {i}: " + "words " * 15), AIMessage(f"reply {i}")])
        assert model.calls == 30
        # A summary was requested exactly for the turns that evicted something.
        asked = sum("summary" in str(inp).lower() and "evicted" in str(inp).lower() for inp in model.inputs)
        assert asked >= 1


def test_summary_covers_exactly_the_evicted_messages(make_memory):
    model = ScriptedChatModel(script=[], default=lambda msgs: turn_tool_call(summary="Alice plans a trip."))
    config = inline(max_tokens=400, system_reserve=20, output_reserve=20)
    with make_memory(config, model=model) as m:
        for i in range(25):
            m.after_turn("u", "t", [HumanMessage(f"message {i} " + "blah " * 12)])
        thread = m._parts.storage.threads.get("t")
        assert thread.summarized_through >= 0
        assert m.threads.summary("u", "t") == "Alice plans a trip."
        ctx = m.before_turn("u", "t")
        assert ctx.sections[0].name == "summary" and "Alice plans a trip." in ctx.memory_block
        log = m.threads.messages("u", "t")
        # The window starts right after the summarised range: nothing both summarised and sent.
        first_sent = next(i for i, x in enumerate(log) if x.id == ctx.window[0].id)
        assert first_sent > thread.summarized_through
        assert ctx.token_usage.total <= config.context_budget
        row = m._parts.storage.summaries.get(thread.key)
        assert row.first_seq == 0 and row.last_seq == thread.summarized_through


def test_an_overlong_summary_is_compressed_then_bounded(make_memory):
    long = "Alice said many things. " * 400
    model = ScriptedChatModel(script=[], default=lambda msgs: (
        "Short: Alice plans a trip." if "You compress the running summary" in msgs[0].text
        else turn_tool_call(summary=long)))
    config = inline(max_tokens=400, system_reserve=20, output_reserve=20, summary_max_tokens=60)
    with make_memory(config, model=model) as m:
        for i in range(25):
            m.after_turn("u", "t", [HumanMessage(f"message {i} " + "blah " * 12)])
        text = m.threads.summary("u", "t")
        assert text == "Short: Alice plans a trip."
        assert m.admin.stats()["jobs"]["failed"] == 0


def test_entity_history_and_case_insensitive_names(make_memory):
    model = ScriptedChatModel(script=[
        turn_tool_call(entities=[entity("Alice", "person", location="Paris", job="nurse")]),
        turn_tool_call(entities=[entity("  alice ", "person", location="Berlin")]),
        turn_tool_call(entities=[entity("ALICE", "other", location="berlin")]),
    ])
    with make_memory(inline(), model=model) as m:
        m.after_turn("u", "t", [HumanMessage("I'm Alice, a nurse in Paris.", id="m1")])
        m.after_turn("u", "t", [HumanMessage("I moved to Berlin.", id="m2")])
        m.after_turn("u", "t", [HumanMessage("Berlin is great.", id="m3")])
        alice = m.entities.get("u", "ALICE")
        assert alice.attributes == {"location": "Berlin", "job": "nurse"} and alice.type == "person"
        history = alice.history["location"]
        assert [(h.value, h.superseded_at is None) for h in history] == [("Paris", False), ("Berlin", True)]
        assert history[0].source_message == "m1" and history[1].source_message == "m2"
        assert [e.name for e in m.entities.list("u")] == ["ALICE"]
        assert m.entities.list("someone-else") == []
        # Relevant entities enter the context as their own section.
        ctx = m.before_turn("u", "t", query="where does Alice live now?")
        assert "Alice" in ctx.memory_block or "ALICE" in ctx.memory_block
        assert m.admin.forget(user_id="u", entity="alice")["entities"] == 1
        assert m.entities.get("u", "Alice") is None


def test_offline_mode_extracts_alice_without_a_model(make_memory, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with make_memory(inline()) as m:
        m.after_turn("u", "t", [HumanMessage("My name is Alice, I live in Paris and I prefer green tea.")])
        assert m.admin.stats()["extractor"] == "offline"
        alice = m.entities.get("u", "alice")
        assert alice is not None and alice.type == "person"
        assert alice.attributes.get("location") == "Paris"


def test_background_mode_and_flush(make_memory):
    model = ScriptedChatModel(script=[], default=GOOD)
    with make_memory(inline(job_mode="background"), model=model) as m:
        for i in range(5):
            m.after_turn("u", "t", [HumanMessage(f"hi {i}")])
        assert m.flush(timeout=30)
        assert m.admin.stats()["jobs"]["pending"] == 0
        assert m.entities.get("u", "Alice") is not None
        assert 1 <= model.calls <= 5  # a backlog is coalesced, never more than one per turn


def test_a_job_waiting_for_another_processs_write_lock_holds_up_no_turn(data_dir):
    # The worker's job asks its model, then waits to write while another process (an
    # import, another worker) holds SQLite's write lock. The next turn's context only
    # reads: it is built at once, not behind the job; the job's memory lands afterwards.
    model = ScriptedChatModel(script=[Hang(2.0, GOOD)], default=turn_tool_call())
    with TieredMemory(data_dir, inline(job_mode="background"), model=model) as m:
        m.after_turn("alice", "t1", TURN)
        deadline = time.monotonic() + 10
        while model.calls == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert model.calls == 1  # the job is running: its model answers in 2 s
        other = sqlite3.connect(data_dir / "memory.db", isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")
            time.sleep(3.0)  # the job has its answer and waits for the lock
            started = time.monotonic()
            context = m.before_turn("alice", "t1", query="where do I live?")
            assert time.monotonic() - started < 5.0  # behind the job: until the lock is free
            assert "My name is Alice" in str(context.messages)
            assert m.memories.list("alice") == []  # nothing of the job's is written yet
        finally:
            other.execute("ROLLBACK")
            other.close()
        assert m.flush(timeout=30)
        assert [e.content for e in m.memories.list("alice")] == ["The user lives in Paris."]


def test_jobs_left_by_a_closed_memory_run_on_next_open(make_memory):
    with make_memory(inline(job_mode="background"), model=ScriptedChatModel(script=[], default=Hang(2, GOOD))) as m:
        m.after_turn("u", "t", TURN)
        # closed at once: the job may or may not have started; either way nothing is lost
    model = ScriptedChatModel(script=[], default=GOOD)
    with make_memory(inline(), model=model) as m:
        assert m.flush(timeout=30)
        assert m.entities.get("u", "Alice").attributes["location"] == "Paris"
        assert m.admin.stats()["jobs"]["done"] == 1


KILLED = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, sys.argv[2])
    from langchain_core.messages import AIMessage, HumanMessage
    from scripted_model import Hang, ScriptedChatModel, turn_tool_call, entity, memory
    from langchain_tiered_memory import MemoryConfig, TieredMemory
    model = ScriptedChatModel(script=[], default=Hang(600))
    config = MemoryConfig(job_mode="background", llm_timeout_seconds=900, job_lease_seconds=1800)
    m = TieredMemory(sys.argv[1], config, model=model)
    m.after_turn("u", "t", [HumanMessage("My name is Alice and I live in Paris."), AIMessage("Hello Alice!")])
    print("appended", flush=True)
    import time
    while model.calls == 0:
        time.sleep(0.01)
    print("in-job", flush=True)
    time.sleep(600)
    """
)


def test_sigkill_mid_job_resumes_once_after_reopening(data_dir):
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED, str(data_dir), str(Path(__file__).parent)],
        stdout=subprocess.PIPE, text=True,
    )
    assert proc.stdout.readline().strip() == "appended"
    assert proc.stdout.readline().strip() == "in-job"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    model = ScriptedChatModel(script=[], default=GOOD)
    with TieredMemory(data_dir, inline(), model=model) as m:
        assert m.flush(timeout=30)
        assert model.calls == 1  # resumed once
        jobs = m._parts.storage.jobs.rows()
        assert [(j.status, j.attempts) for j in jobs] == [("done", 2)]
        assert len(m.entities.list("u")) == 1
        assert m.entities.get("u", "alice").attributes == {"location": "Paris"}
        assert len(m.threads.messages("u", "t")) == 2
    # Opening again runs nothing twice.
    with TieredMemory(data_dir, inline(), model=model) as m:
        assert m.flush(timeout=5) and model.calls == 1
        assert len(m.entities.get("u", "alice").history["location"]) == 1


def test_the_users_own_profile_keeps_their_name_offline(make_memory, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with make_memory(inline()) as m:
        m.after_turn("u", "t", [HumanMessage("My name is Alice, I live in Paris and I prefer green tea.")])
        m.after_turn("u", "t", [HumanMessage("I moved to Berlin last year.")])
        names = [e.name for e in m.entities.list("u")]
        assert "user" not in names
        alice = m.entities.get("u", "Alice")
        assert alice.attributes["location"] == "Berlin"
        assert [v.value for v in alice.history["location"]] == ["Paris", "Berlin"]


def test_what_the_user_discloses_of_themselves_is_kept_with_its_kind_and_a_bad_kind_is_dropped(make_memory):
    # The schema's "about": a model marks a statement of the user's own state, goal, value
    # or cause; anything else it writes there (a typo, another word) reads as no mark.
    stressed = {**memory("Since learning to say no at work, the user feels much less stressed.", "fact", 0.7),
                "about": "Cause"}
    odd = {**memory("The user's favourite colour is green.", "preference", 0.8), "about": "colour"}
    model = ScriptedChatModel(script=[turn_tool_call(memories=[stressed, odd])])
    with make_memory(inline(), model=model) as m:
        m.after_turn("u", "t", [HumanMessage("Since I learned to say no at work, I feel much less stressed. "
                                             "Oh, and green is my favourite colour."), AIMessage("Good for you!")])
        assert m.flush(timeout=10)
        by_content = {e.content: e for e in m.memories.list("u")}
        assert by_content[stressed["content"]].metadata == {"about": "cause"}
        assert "about" not in by_content[odd["content"]].metadata
        [hit, *_] = m.recall("u", "I took on a big new project and now I'm overwhelmed again.", k=3, peek=True)
        assert hit.grain in ("fact", "turn") and "say no" in hit.text
