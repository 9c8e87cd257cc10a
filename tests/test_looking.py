"""Looking changes nothing, and a job runs only where its needs are met (issue 14, item 9).

`tiered-memory stats` run without the API key used to complete a pending job journaled by a
memory with an LLM, with the offline rules; `search` added to recall counts; a job showed
"1 running" after its process had died.
"""

from __future__ import annotations

import io
import json
import socket
import sqlite3
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from scripted_model import ScriptedChatModel, entity, memory, turn_tool_call

from langchain_tiered_memory import MemoryConfig, TieredMemory
from langchain_tiered_memory.cli import main

#: What the scripted LLM extracts: an entity the offline rules could not find in the turn.
LLM_ANSWER = turn_tool_call(entities=[entity("Zed", "person", role="mentor")],
                            memories=[memory("The user's mentor is Zed.", "fact", 0.9)])
#: The offline rules find "Alice" here; the LLM answer above does not.
TURN = [HumanMessage("My name is Alice and I live in Paris."), AIMessage("Hello Alice!")]


def _dump(path) -> list[str]:
    """Every row of every table, as SQL: what "changes nothing" compares."""
    with sqlite3.connect(path / "memory.db") as conn:
        return list(conn.iterdump())


def _dead_worker() -> str:
    """The worker id of a process of this host that has exited."""
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return f"{socket.gethostname()}:{int(proc.stdout)}:deadbeef"


def _cli(*argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue() + err.getvalue()


@pytest.fixture
def journal(tmp_path, monkeypatch):
    """A directory whose journal holds a job journaled with an LLM (waiting for one), a later
    offline job of the same thread, a job whose worker died (stale), and recalled memories."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    path = tmp_path / "memory"
    llm = ScriptedChatModel(default=LLM_ANSWER)
    # Manual mode: the turn is journaled (needing the LLM) and left for later.
    with TieredMemory(path, MemoryConfig(job_mode="manual"), model=llm) as m:
        m.after_turn("alice", "trip", TURN)
        m.memories.remember("alice", "user: I prefer window seats", "preference", 0.8)
    with TieredMemory(path, MemoryConfig(job_mode="manual")) as m:
        m.after_turn("bob", "chess", [HumanMessage("My name is Bob and I play chess.")])
        m.after_turn("alice", "trip", [HumanMessage("I also like green tea.")])
        # Bob's job is claimed by a process that then died: its lease is left behind.
        job = m._parts.storage.jobs.claim(_dead_worker(), 600, max_attempts=5, provides=())
        assert job is not None and job.user_id == "bob"
    assert llm.calls == 0
    return path


def test_the_read_commands_run_no_job_and_write_nothing(journal):
    before = _dump(journal)
    code, out = _cli("--data-dir", str(journal), "stats", "--json")
    assert code == 0, out
    stats = json.loads(out)
    # Alice's first job waits for an LLM, her second waits behind it; Bob's is stale.
    assert stats["jobs"] == {"pending": 0, "waiting": 2, "running": 0, "stale": 1, "done": 0, "failed": 0}
    for argv in (
        ["stats"],
        ["search", "window seats", "--user", "alice", "--explain"],
        ["inspect", "--user", "alice", "--thread", "trip", "--query", "seats"],
        ["entities", "--user", "alice"],
        ["episodes", "--user", "alice", "--query", "tea"],
        ["threads", "--user", "alice"],
        ["export", "--user", "alice"],
    ):
        code, out = _cli("--data-dir", str(journal), *argv)
        assert code == 0, (argv, out)
        assert _dump(journal) == before, argv
    code, out = _cli("--data-dir", str(journal), "stats")
    assert "2 waiting: journaled by a memory with a chat model" in out
    assert "1 stale: leased by a process that no longer runs" in out
    # What search showed it did not count: the memory has no recall and no boost.
    code, out = _cli("--data-dir", str(journal), "search", "window seats", "--user", "alice", "--json")
    (hit,) = json.loads(out)
    assert hit["entry"]["access_count"] == 0 and hit["entry"]["boost"] == 0


def test_an_llm_job_waits_for_an_llm_and_offline_memories_leave_it_and_its_thread_alone(journal):
    with TieredMemory(journal, MemoryConfig(job_mode="inline")) as offline:
        # It returns at once, not waiting for what it cannot run, and says so (issue 29).
        assert offline.flush(timeout=10) is False
        # Bob's stale job is taken over and done offline (it needs nothing); Alice's wait.
        assert offline.admin.stats()["jobs"] == {"pending": 0, "waiting": 2, "running": 0, "stale": 0, "done": 1, "failed": 0}
        assert offline.entities.get("bob", "Bob") is not None
        assert offline.entities.list("alice") == []  # the offline rules did not read her turn
        offline.after_turn("carol", "t", [HumanMessage("My name is Carol.")])  # its own work runs
        assert offline.entities.get("carol", "Carol") is not None
    llm = ScriptedChatModel(default=LLM_ANSWER)
    with TieredMemory(journal, MemoryConfig(job_mode="inline"), model=llm) as m:
        assert m.flush(timeout=30)
        jobs = m.admin.stats()["jobs"]
        assert (jobs["pending"], jobs["waiting"], jobs["failed"]) == (0, 0, 0)
        assert llm.calls >= 1
        # The LLM's answer was applied to Alice's turn, and the offline rules' never was.
        assert [e.name for e in m.entities.list("alice")] == ["Zed"]
        assert [e.content for e in m.memories.list("alice") if "Zed" in e.content] == ["The user's mentor is Zed."]


def test_a_manual_memory_runs_jobs_only_in_flush(tmp_path):
    with TieredMemory(tmp_path / "m", MemoryConfig(job_mode="manual")) as m:
        m.after_turn("u", "t", TURN)
        assert m.admin.stats()["jobs"]["pending"] == 1 and m.entities.list("u") == []
        assert m.flush(timeout=30)
        assert m.admin.stats()["jobs"]["done"] == 1 and m.entities.get("u", "Alice") is not None


def test_a_manual_memory_does_not_repair_a_lost_index_but_says_why(tmp_path):
    import shutil

    from langchain_tiered_memory import VectorStoreError
    from langchain_tiered_memory.embeddings import HashingEmbeddings

    with TieredMemory(tmp_path / "m", MemoryConfig(job_mode="inline"), embeddings=HashingEmbeddings()) as m:
        m.memories.remember("u", "user: I like tea")
    shutil.rmtree(tmp_path / "m" / "qdrant")
    before = _dump(tmp_path / "m")
    with TieredMemory(tmp_path / "m", MemoryConfig(job_mode="manual"), embeddings=HashingEmbeddings()) as m:
        with pytest.raises(VectorStoreError, match="rebuilds it"):
            m.memories.search("u", "tea")
        context = m.before_turn("u", "t", query="tea", peek=True)
        assert any("missing" in d for d in context.degraded)
        assert "missing" in m.admin.stats()["index"]["held_elsewhere"]
    assert not (tmp_path / "m" / "qdrant").exists() and _dump(tmp_path / "m") == before
    with TieredMemory(tmp_path / "m", MemoryConfig(job_mode="inline"), embeddings=HashingEmbeddings()) as m:
        assert m.flush(timeout=30)
        assert [h.entry.content for h in m.memories.search("u", "tea", peek=True)] == ["user: I like tea"]


def test_skipping_jobs_behind_an_llm_job_stays_a_lookup(tmp_path):
    """The claim's check for an earlier job with unmet needs on the same thread is indexed:
    unindexed, it made each claim O(pending²) — 1.2 s at 3,000 pending jobs, holding the
    write lock, so concurrent appends timed out."""
    import time

    from langchain_tiered_memory.storage import Storage
    from langchain_tiered_memory.storage.jobs import enqueue

    storage = Storage.open(tmp_path)
    try:
        with storage.db.write() as tx:
            enqueue(tx, "extract", "u", 1, {"through_seq": 0}, "2026-01-01", needs="llm")
            for i in range(1, 3_000):
                enqueue(tx, "extract", "u", 1 + i % 2, {"through_seq": i}, "2026-01-01")
        start = time.perf_counter()
        job = storage.jobs.claim("w:1:x", 60, max_attempts=3, provides=())
        due = storage.jobs.next_due(())
        elapsed = time.perf_counter() - start
        # Thread 1 waits behind its LLM job; thread 2's first job is claimed.
        assert job is not None and job.thread_key == 2 and due is not None
        assert elapsed < 0.3, elapsed
    finally:
        storage.close()
