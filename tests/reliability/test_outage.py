"""Jobs that survive a model outage and can be run again (issue 29, items 3, 5 and 6).

A model outage longer than ~30 s failed jobs for good, nothing re-ran them, and the episode
of a session ended in it was never written; jobs journaled with a model and reopened
without one waited silently; and a lease shorter than a slow model's calls let a second
worker take a running job. Real SQLite, Qdrant Edge shard and embeddings; only the chat
model is scripted.
"""

from __future__ import annotations

import io
import logging
import threading
import time
from contextlib import redirect_stderr, redirect_stdout

import httpx
import openai
import pytest
from langchain_core.messages import AIMessage, HumanMessage
from scripted_model import Hang, ScriptedChatModel, entity, episode_tool_call, turn_tool_call, wrong_types_tool_call

from langchain_tiered_memory import ExtractionError, ExtractionTimeoutError, JobInfo, MemoryConfig, TieredMemory
from langchain_tiered_memory.cli import main
from langchain_tiered_memory.jobs.retry import is_transient

from . import outage

TURN = [HumanMessage("My name is Alice and I live in Paris."), AIMessage("Hello Alice!")]
GOOD = turn_tool_call(entities=[entity("Alice", "person", location="Paris")])
#: A worker of another machine: no dead-process shortcut frees its claims.
ELSEWHERE = "worker-9.elsewhere.example:4242:0badcafe"


def _cli(*argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue() + err.getvalue()


# --- item 3: an outage is waited out ---------------------------------------------------------


def test_a_60_second_outage_ends_with_every_job_done_and_an_episode_written(tmp_path):
    # Default settings (horizon 15 min, 5 attempts, backoff from 2 s) on a simulated clock:
    # the job of the outage's first second is tried through it and ends done, like the rest.
    start = time.monotonic()
    problems, figures = outage.play(tmp_path / "m", seconds=60)
    assert problems == []
    assert figures.faults > 13 and figures.turns == 13
    assert time.monotonic() - start < 60  # the outage is simulated, not waited for


def test_an_outage_past_the_horizon_fails_the_jobs_saying_why_and_jobs_retry_runs_them(tmp_path):
    problems, figures = outage.play(tmp_path / "m", seconds=1200, turns=3)
    assert problems == []
    assert figures.faults > 4 * 10  # about a try a minute for each of the 5 jobs


def test_a_job_waiting_for_the_model_holds_no_worker(tmp_path):
    """While Alice's job waits out its model's outage, the background worker runs Bob's."""
    down = threading.Event()
    down.set()

    def answer(messages):
        text = "\n".join(str(m.content) for m in messages)
        if "Alice" in text and down.is_set():
            raise ConnectionRefusedError(111, "Connection refused")
        name = "Alice" if "Alice" in text else "Bob"
        return turn_tool_call(entities=[entity(name, "person")])

    # Tries 5 s apart: Alice's job is seen waiting between two of them.
    config = MemoryConfig(job_mode="background", job_backoff_seconds=5.0)
    with TieredMemory(tmp_path / "m", config, model=ScriptedChatModel(default=answer)) as m:
        m.after_turn("alice", "a", TURN)
        deadline = time.monotonic() + 20
        while not m.admin.jobs.list(status="pending") or m.admin.jobs.list()[0].reason is None:
            assert time.monotonic() < deadline, m.admin.jobs.list()
            time.sleep(0.05)
        m.after_turn("bob", "b", [HumanMessage("My name is Bob."), AIMessage("Hi Bob!")])
        while m.entities.get("bob", "Bob") is None:
            assert time.monotonic() < deadline, m.admin.jobs.list()
            time.sleep(0.05)
        [alice] = m.admin.jobs.list(user_id="alice")
        # Alice's job waits as a pending row (no worker holds it), its tries not counted.
        assert (alice.status, alice.attempts, alice.waits_for) == ("pending", 0, outage_wait())
        assert "ConnectionRefusedError" in alice.reason
        down.clear()
        assert m.admin.jobs.retry(failed=False) == 1  # the model is back: try now, not in 5 s
        assert m.flush(timeout=30)
        assert m.entities.get("alice", "Alice") is not None
        assert m.admin.stats()["jobs"]["failed"] == 0


def outage_wait() -> str:
    from langchain_tiered_memory.jobs.journal import OUTAGE

    return OUTAGE


def test_failures_that_say_the_model_is_unreachable_are_told_from_the_others():
    request = httpx.Request("POST", "http://model.example/v1/chat/completions")

    def status(cls, code):
        return cls("e", response=httpx.Response(code, request=request), body=None)

    def wrapped(exc):
        try:
            raise ExtractionError("turn extraction: the model failed") from exc
        except ExtractionError as outer:
            return outer

    for exc in (openai.APIConnectionError(request=request), openai.APITimeoutError(request=request),
                status(openai.InternalServerError, 503), status(openai.RateLimitError, 429),
                ConnectionRefusedError(111, "refused"), ExtractionTimeoutError("did not answer")):
        assert is_transient(exc) and is_transient(wrapped(exc)), exc
    for exc in (status(openai.BadRequestError, 400), status(openai.AuthenticationError, 401),
                ValueError("bad"), RuntimeError("503 upstream overloaded"), ExtractionError("invalid JSON")):
        assert not is_transient(exc) and not is_transient(wrapped(exc)), exc


def test_a_poison_job_still_ends_failed_after_its_attempts_whatever_the_horizon(tmp_path):
    model = ScriptedChatModel(default=wrong_types_tool_call())
    config = MemoryConfig(job_mode="inline", job_backoff_seconds=0.0, job_max_attempts=3)
    with TieredMemory(tmp_path / "m", config, model=model) as m:
        m.after_turn("u", "t", TURN)
        assert m.flush(timeout=30)
        [job] = m.admin.jobs.list()
    assert (job.status, job.attempts, model.calls) == ("failed", 3, 3)


# --- item 3: jobs retry, and a failed episode does not block end_session -------------------


def test_jobs_retry_runs_a_failed_thread_extraction_again(make_memory):
    model = ScriptedChatModel(default=wrong_types_tool_call())
    config = MemoryConfig(job_mode="inline", job_backoff_seconds=0.0, job_max_attempts=2)
    with make_memory(config, model=model) as m:
        m.after_turn("u", "t", TURN)
        m.after_turn("v", "t2", [HumanMessage("My name is Vera."), AIMessage("Hi!")])
        assert m.flush(timeout=30)
        assert m.admin.stats()["jobs"]["failed"] == 2 and m.entities.get("u", "Alice") is None
        model.default = GOOD
        assert m.admin.jobs.retry(user_id="u") == 1  # only u's job
        assert m.flush(timeout=30)
        [job] = m.admin.jobs.list(user_id="u")
        assert isinstance(job, JobInfo) and (job.status, job.attempts, job.thread_id) == ("done", 1, "t")
        assert m.entities.get("u", "Alice").attributes == {"location": "Paris"}
        assert [j.status for j in m.admin.jobs.list(user_id="v")] == ["failed"]
        assert m.admin.jobs.retry() == 1 and m.flush(timeout=30)
        assert m.admin.stats()["jobs"]["failed"] == 0
        assert m.admin.jobs.retry() == 0  # nothing left to run again


def test_end_session_after_a_failed_episode_job_writes_the_episode(make_memory):
    model = ScriptedChatModel(default=GOOD)
    config = MemoryConfig(job_mode="inline", job_backoff_seconds=0.0, job_max_attempts=2)
    with make_memory(config, model=model) as m:
        m.after_turn("u", "t", TURN)
        model.default = wrong_types_tool_call()  # the episode's answers are unusable
        first = m.end_session("u", "t")
        assert m.flush(timeout=30)
        assert [j.status for j in m.admin.jobs.list() if j.kind == "episode"] == ["failed"]
        model.default = episode_tool_call("Alice said she lives in Paris.")
        # The failed job held the key of the same span: journaling it again ran nothing.
        assert m.end_session("u", "t") == first
        assert m.flush(timeout=30)
        assert [h.episode.id for h in m.episodes.search("u")] == [first]
        assert [j.status for j in m.admin.jobs.list() if j.kind == "episode"] == ["done"]


def test_the_cli_lists_jobs_and_runs_failed_ones_again(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    path = tmp_path / "memory"
    config = MemoryConfig(job_mode="inline", job_backoff_seconds=0.0, job_max_attempts=2)
    with TieredMemory(path, config, model=ScriptedChatModel(default=wrong_types_tool_call())) as m:
        m.after_turn("u", "t", TURN)
        m.after_turn("v", "t2", [HumanMessage("My name is Vera."), AIMessage("Hi!")])
    code, out = _cli("--data-dir", str(path), "jobs", "list", "--failed")
    assert code == 0 and out.count("  failed  ") == 2 and "ExtractionError" in out, out
    # Without a model here, the failed job (journaled with one) waits for one ...
    code, out = _cli("--data-dir", str(path), "jobs", "retry", "--failed", "--user", "u")
    assert code == 1 and "ran 1 job(s) again: 0 done, 0 failed" in out and "1 wait for a chat model" in out, out
    # ... until it is handed to the offline rules.
    code, out = _cli("--data-dir", str(path), "jobs", "retry", "--offline", "--user", "u")
    assert code == 0 and "ran 1 job(s) again: 1 done, 0 failed" in out, out
    code, out = _cli("--data-dir", str(path), "jobs", "retry", "--json")
    assert code == 0 and '"retried": 0' in out, out
    with TieredMemory(path, MemoryConfig(job_mode="manual")) as m:
        assert m.entities.get("u", "Alice") is not None  # extracted, by the offline rules
        assert [j.status for j in m.admin.jobs.list(user_id="v")] == ["failed"]  # --user u only


# --- item 5: stranded jobs -------------------------------------------------------------------


def test_stranded_jobs_are_named_once_flush_says_so_and_they_run_offline_on_request(tmp_path, monkeypatch, caplog):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    path = tmp_path / "memory"
    llm = ScriptedChatModel(default=GOOD)
    with TieredMemory(path, MemoryConfig(job_mode="manual"), model=llm) as m:
        m.after_turn("u", "t", TURN)
        m.after_turn("u", "t", [HumanMessage("I also like green tea."), AIMessage("Noted.")])
        m.after_turn("w", "x", [HumanMessage("My name is Wim."), AIMessage("Hi Wim!")])
    caplog.set_level(logging.WARNING, logger="langchain_tiered_memory")
    with TieredMemory(path, MemoryConfig(job_mode="inline")) as offline:
        warnings = [r.getMessage() for r in caplog.records if "wait for a chat model" in r.getMessage()]
        assert len(warnings) == 1, warnings  # said when it opens
        assert "u/t (2), w/x" in warnings[0] and "jobs.retry(offline=True)" in warnings[0]
        start = time.monotonic()
        assert offline.flush(timeout=30) is False  # they wait: flush says so, at once
        assert time.monotonic() - start < 5
        # A later turn of the thread queues behind them; nothing is named twice.
        offline.after_turn("u", "t", [HumanMessage("Still here.")])
        assert offline.flush(timeout=30) is False
        assert len([r for r in caplog.records if "wait for a chat model" in r.getMessage()]) == 1
        assert offline.admin.stats()["jobs"]["waiting"] == 4 and offline.entities.list("u") == []
        waits = {j.key: j.waits_for for j in offline.admin.jobs.list()}
        assert sorted(w.split(":")[0] for w in waits.values()) == ["a chat model"] * 3 + [
            "an earlier job of its thread that waits for a chat model"]
        assert offline.admin.jobs.retry(offline=True, user_id="u") == 2
        assert offline.flush(timeout=30) is False  # w's job still waits
        assert offline.entities.get("u", "Alice") is not None  # the offline rules read u's turns
        assert offline.admin.jobs.retry(offline=True) == 1 and offline.flush(timeout=30) is True
        jobs = offline.admin.stats()["jobs"]
        assert (jobs["waiting"], jobs["pending"], jobs["failed"], jobs["done"]) == (0, 0, 0, 4)
    assert llm.calls == 0


# --- item 6: the lease is renewed while a job runs --------------------------------------------


def test_a_slow_model_keeps_its_lease_and_no_second_worker_takes_the_job(make_memory):
    """The lease (1 s) is far shorter than the model's answer (3 s): renewed while the job
    runs, it is never free for another worker to claim — which would pay for the job again."""
    model = ScriptedChatModel(script=[Hang(3.0, then=GOOD)])  # a second call would fail
    config = MemoryConfig(job_mode="inline", job_lease_seconds=1.0, llm_timeout_seconds=10.0)
    with make_memory(config, model=model) as m, make_memory(MemoryConfig(job_mode="manual")) as other:
        turn = threading.Thread(target=m.after_turn, args=("u", "t", TURN))
        turn.start()
        deadline = time.monotonic() + 20
        while model.calls == 0:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        claims, leases = [], set()
        while turn.is_alive():
            claims.append(other._parts.storage.jobs.claim(ELSEWHERE, 1.0, max_attempts=5))
            [row] = other._parts.storage.jobs.rows()
            if row.status == "running":
                leases.add(row.lease_until)
            time.sleep(0.1)
        turn.join()
        assert claims and not any(claims), "a second worker took the running job"
        assert len(leases) >= 5  # renewed about every third of a second
        [row] = m._parts.storage.jobs.rows()
        assert (row.status, row.attempts, row.lease_until) == ("done", 1, None)
        assert model.calls == 1 and m.entities.get("u", "Alice") is not None


def test_a_lease_is_no_longer_renewed_once_the_job_ends_or_is_lost(tmp_path):
    from langchain_tiered_memory.jobs.lease import Heartbeat

    renewed: list[float] = []

    def renew(until: float) -> bool:
        renewed.append(until)
        return len(renewed) < 3  # the third finds the lease gone

    with Heartbeat(renew, 0.06, time.time, limit=None, what="job") as beat:
        time.sleep(0.5)
    assert len(renewed) == 3 and beat.renewals == 2
    with Heartbeat(lambda until: True, 0.06, time.time, limit=0.1, what="job") as beat:
        time.sleep(0.5)
    assert 2 <= beat.renewals <= 6  # stopped after its limit


def test_the_renewal_limit_counts_every_structured_output_method_and_the_compression():
    from langchain_tiered_memory.config import CALLS_PER_JOB
    from langchain_tiered_memory.extraction.structured import AUTO_METHODS

    assert CALLS_PER_JOB == len(AUTO_METHODS) + 1
