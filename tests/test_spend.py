"""Issue 16, items 4 and 5: what background jobs cost, the runs a tracer sees, and a spend
budget that makes jobs wait — never fail, never lose a message — on a frozen clock.

The chat model is scripted (its answers carry ``usage_metadata`` as real models' do);
everything else is real: the SQLite file, the Qdrant Edge shard, the local embedder."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tracers.base import BaseTracer
from scripted_model import ScriptedChatModel, episode_tool_call, memory, turn_tool_call

from langchain_tiered_memory import ConfigError, MemoryConfig, SpendBudget, TieredMemory

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)


def answer(prompt_tokens: int = 120, completion_tokens: int = 30) -> AIMessage:
    """A turn extraction as a real tool-calling model returns it, with its token usage."""
    out = turn_tool_call(memories=[memory("The user likes tea.", "preference", 0.8)])
    out.usage_metadata = {"input_tokens": prompt_tokens, "output_tokens": completion_tokens,
                          "total_tokens": prompt_tokens + completion_tokens}
    return out


class Clock:
    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now


class Runs(BaseTracer):
    """A real LangChain tracer that keeps every finished root run (with its children)."""

    def __init__(self) -> None:
        super().__init__()
        self.roots: list = []

    def _persist_run(self, run) -> None:
        self.roots.append(run)


def _open(tmp_path, model, clock=None, callbacks=None, **config):
    config.setdefault("job_mode", "inline")
    config.setdefault("job_backoff_seconds", 0.0)
    m = TieredMemory(tmp_path / "m", MemoryConfig(**config), model=model, callbacks=callbacks)
    if clock is not None:
        m._parts.clock = clock
    return m


def _turn(m, user, thread, n):
    return m.after_turn(user, thread, [HumanMessage(f"I like tea, note {n}."), AIMessage("Noted.")])


def test_each_job_records_calls_tokens_time_and_method_per_user_and_day(tmp_path):
    clock = Clock(T0)
    model = ScriptedChatModel(default=answer(100, 20))
    with _open(tmp_path, model, clock) as m:
        _turn(m, "alice", "a1", 1)
        _turn(m, "alice", "a1", 2)
        clock.now = T0 + timedelta(days=1)
        _turn(m, "bob", "b1", 1)
        model.default = episode_tool_call("Bob liked tea.")
        model.default.usage_metadata = {"input_tokens": 50, "output_tokens": 10, "total_tokens": 60}
        m.end_session("bob", "b1")
        stats = m.admin.stats()
    usage = stats["usage"]
    assert usage["total"] == {"jobs": 4, "calls": 4, "input_tokens": 350, "output_tokens": 70,
                              "total_tokens": 420, "duration_s": usage["total"]["duration_s"]}
    assert usage["total"]["duration_s"] > 0
    assert usage["by_user"]["alice"]["calls"] == 2 and usage["by_user"]["bob"]["total_tokens"] == 180
    assert usage["by_day"]["2026-03-02"]["total_tokens"] == 240 and usage["by_day"]["2026-03-03"]["jobs"] == 2
    assert usage["methods"] == {"function_calling": 4} and usage["users"] == 2
    assert model.calls == 4


def test_a_failed_attempt_is_paid_for_and_recorded(tmp_path):
    bad = turn_tool_call()
    bad.tool_calls[0]["args"] = {"entities": "Alice", "memories": 3, "summary": None}
    bad.usage_metadata = {"input_tokens": 80, "output_tokens": 5, "total_tokens": 85}
    model = ScriptedChatModel(script=[bad], default=answer(100, 20))
    with _open(tmp_path, model, job_max_attempts=2) as m:
        _turn(m, "alice", "a1", 1)
        assert m.flush(timeout=30)
        stats = m.admin.stats()
    assert stats["jobs"]["done"] == 1 and stats["jobs"]["failed"] == 0
    assert stats["usage"]["total"]["calls"] == 2 and stats["usage"]["total"]["input_tokens"] == 180


def test_a_tracer_sees_each_job_as_its_own_run_with_user_thread_and_kind(tmp_path):
    tracer = Runs()
    model = ScriptedChatModel(default=answer())
    with _open(tmp_path, model, callbacks=[tracer]) as m:
        _turn(m, "alice", "thread-7", 1)
    jobs = [r for r in tracer.roots if "tiered-memory" in (r.tags or [])]
    assert len(jobs) == 1
    job = jobs[0]
    assert job.name == "tiered-memory extract" and job.run_type == "chain"
    assert {"tiered-memory", "tiered-memory:extract"} <= set(job.tags)
    meta = job.extra["metadata"]
    assert (meta["user_id"], meta["thread_id"], meta["job_kind"]) == ("alice", "thread-7", "extract")
    calls = [c for c in job.child_runs if c.run_type == "llm"]
    assert len(calls) == 1 and calls[0].name == "tiered-memory turn extraction"
    assert calls[0].extra["metadata"]["user_id"] == "alice"
    assert calls[0].extra["metadata"]["structured_output_method"] == "function_calling"


def test_over_budget_jobs_wait_and_run_when_the_hour_frees(tmp_path):
    clock = Clock(T0)
    model = ScriptedChatModel(default=answer(100, 20))
    # job_max_attempts=1: a wait that used up an attempt would fail the job at its next claim.
    with _open(tmp_path, model, clock, job_max_attempts=1, budget={"user_calls_per_hour": 2}) as m:
        for n in range(3):
            clock.now = T0 + timedelta(minutes=10 * n)
            _turn(m, "alice", "a1", n)
        assert model.calls == 2
        assert m.flush(timeout=5)  # returns: it does not wait an hour for the budget
        stats = m.admin.stats()
        assert stats["jobs"]["pending"] == 1 and stats["jobs"]["failed"] == 0
        assert stats["budget"]["waiting_jobs"] == 1
        # The oldest call (at T0) ages out first: the budget frees one hour after it.
        assert stats["budget"]["frees_at"] == (T0 + timedelta(hours=1)).isoformat()
        assert stats["budget"]["last_hour"] == {"calls": 2, "tokens": 240}
        # Another user is not held by alice's budget.
        _turn(m, "bob", "b1", 1)
        assert model.calls == 3
        # Every message is stored already.
        assert len(m.threads.messages("alice", "a1")) == 6
        clock.now = T0 + timedelta(minutes=59)
        assert m.flush(timeout=5) and model.calls == 3
        clock.now = T0 + timedelta(hours=1, seconds=1)
        assert m.flush(timeout=30)
        stats = m.admin.stats()
    assert model.calls == 4
    assert stats["jobs"] == {"pending": 0, "waiting": 0, "running": 0, "stale": 0, "done": 4, "failed": 0}
    assert stats["budget"]["waiting_jobs"] == 0


def test_a_global_token_budget_holds_every_user(tmp_path):
    clock = Clock(T0)
    model = ScriptedChatModel(default=answer(400, 100))
    with _open(tmp_path, model, clock, budget=SpendBudget(tokens_per_hour=1_000)) as m:
        _turn(m, "alice", "a1", 1)
        _turn(m, "bob", "b1", 1)
        _turn(m, "carol", "c1", 1)  # 1,000 tokens spent: carol waits
        assert model.calls == 2 and m.admin.stats()["budget"]["waiting_jobs"] == 1
        clock.now = T0 + timedelta(hours=1, minutes=1)
        assert m.flush(timeout=30)
        assert model.calls == 3 and m.admin.stats()["jobs"]["done"] == 3


def test_the_offline_extractor_is_never_held(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with _open(tmp_path, None, budget={"calls_per_hour": 1}) as m:
        for n in range(3):
            _turn(m, "alice", "a1", n)
        stats = m.admin.stats()
    assert stats["jobs"]["done"] == 3 and stats["budget"]["waiting_jobs"] == 0
    assert stats["usage"]["total"]["calls"] == 0


def test_forgetting_a_user_deletes_their_usage(tmp_path):
    model = ScriptedChatModel(default=answer())
    with _open(tmp_path, model) as m:
        _turn(m, "alice", "a1", 1)
        _turn(m, "bob", "b1", 1)
        m.admin.forget(user_id="alice")
        usage = m.admin.stats()["usage"]
    assert list(usage["by_user"]) == ["bob"] and usage["total"]["calls"] == 1


def test_bad_budgets_are_config_errors_naming_the_field():
    with pytest.raises(ConfigError, match="budget.tokens_per_hour"):
        MemoryConfig(budget={"tokens_per_hour": 0})
    with pytest.raises(ConfigError, match="budget.calls_per_day"):
        MemoryConfig(budget={"calls_per_day": 5})


def test_the_cli_stats_shows_spend_per_day_and_user(tmp_path):
    import json
    import subprocess
    import sys
    from pathlib import Path

    clock = Clock(T0)
    model = ScriptedChatModel(default=answer(1_000, 200))
    with _open(tmp_path, model, clock, budget={"user_calls_per_hour": 1}) as m:
        _turn(m, "alice", "a1", 1)
        _turn(m, "alice", "a1", 2)  # waits for the budget
        clock.now = T0 + timedelta(days=1)
        _turn(m, "bob", "b1", 1)
    cli = [sys.executable, "-m", "langchain_tiered_memory.cli", "--data-dir", str(tmp_path / "m"), "stats"]
    root = Path(__file__).parent.parent
    text = subprocess.run(cli, capture_output=True, text=True, cwd=root, timeout=120)
    data = subprocess.run([*cli, "--json"], capture_output=True, text=True, cwd=root, timeout=120)
    assert text.returncode == 0 and data.returncode == 0, text.stderr + data.stderr
    usage = json.loads(data.stdout)["usage"]
    # alice's second job waited, and ran when bob's turn a day later found the budget free.
    assert usage["total"]["calls"] == 3 and usage["by_user"]["bob"]["input_tokens"] == 1_000
    out = text.stdout
    assert "LLM spend: 3 calls, 3,000 prompt + 600 completion tokens" in out and "3 function_calling" in out
    assert "    2026-03-02  1 calls, 1,000 prompt + 200 completion tokens" in out
    assert "    2026-03-03  2 calls" in out and "    alice  2 calls" in out and "    bob  1 calls" in out


@pytest.mark.parametrize(
    ("env", "config", "limits"),
    [
        # OPENAI_API_KEY alone: OpenAI itself, paid: the default budget.
        ({"OPENAI_API_KEY": "sk-test"}, {}, {"tokens_per_hour": 200_000, "user_tokens_per_hour": 50_000}),
        # A hosted OpenAI-compatible server with a key: paid too.
        ({"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}, {},
         {"tokens_per_hour": 200_000, "user_tokens_per_hour": 50_000}),
        # A budget of one's own wins, and so does an explicit "no limit".
        ({"OPENAI_API_KEY": "sk-test"}, {"budget": SpendBudget(calls_per_hour=5)}, {"calls_per_hour": 5}),
        ({"OPENAI_API_KEY": "sk-test"}, {"budget": SpendBudget()}, {}),
        ({"OPENAI_API_KEY": "sk-test"}, {"budget": {}}, {}),
        # A local server without a key costs nothing: no budget unless asked for.
        ({"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}, {}, {}),
        ({}, {}, {}),
    ],
)
def test_a_model_from_the_environment_gets_a_default_spend_budget(tmp_path, monkeypatch, env, config, limits):
    from langchain_tiered_memory.llm.spending import ENV_MODEL_BUDGET

    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE", "TIERED_MEMORY_MODEL"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with TieredMemory(tmp_path / "m", {"job_mode": "manual", **config}) as m:
        stats = m.admin.stats()
    assert stats["budget"]["limits"] == limits
    assert stats["extractor"] != "offline" or not env
    if limits and "budget" not in config:
        assert limits == {k: v for k, v in ENV_MODEL_BUDGET.model_dump().items() if v is not None}


def test_a_model_passed_in_keeps_its_configured_budget(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with _open(tmp_path, ScriptedChatModel(default=answer())) as m:
        assert m.admin.stats()["budget"]["limits"] == {}


def test_the_default_budget_holds_jobs_of_a_model_from_the_environment(tmp_path, monkeypatch):
    """Jobs over the default budget wait (never fail) like jobs over any budget."""
    from langchain_openai import ChatOpenAI

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    clock = Clock(T0)
    with TieredMemory(tmp_path / "m", {"job_mode": "inline", "job_backoff_seconds": 0.0}) as m:
        assert isinstance(m.admin.extractor.model, ChatOpenAI)  # the environment's model
        m._parts.clock = clock
        # Stand the environment's model in for a scripted one that spends 120k tokens a call:
        # the budget is what is under test, not OpenAI.
        m._parts._extractor = type(m.admin.extractor)(ScriptedChatModel(default=answer(100_000, 20_000)), counter=m.admin.counter)
        m.after_turn("u", "t", [HumanMessage("I like tea.")])
        m.after_turn("v", "t2", [HumanMessage("I like coffee.")])
        m.after_turn("w", "t3", [HumanMessage("I like cocoa.")])
        stats = m.admin.stats()
        assert stats["jobs"]["done"] == 2 and stats["jobs"]["failed"] == 0
        assert stats["budget"]["waiting_jobs"] == 1 and stats["budget"]["frees_at"] is not None
        clock.now = T0 + timedelta(hours=1, minutes=1)
        m.flush(timeout=30)
        assert m.admin.stats()["jobs"]["done"] == 3
