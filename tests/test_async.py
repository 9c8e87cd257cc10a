"""Issue 16, item 6: the async forms an async LangGraph server calls do their blocking work
(SQLite, embeddings, waiting for jobs) off the event loop — in worker threads, as documented —
so other coroutines keep running; and bulk loads embed in batches with a progress bar."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.store.base import GetOp, PutOp
from scripted_model import Hang, ScriptedChatModel, memory, turn_tool_call

from langchain_tiered_memory import MemoryConfig, TieredMemory
from langchain_tiered_memory.embeddings import default_embeddings

import agent_scenario as scenario

ROOT = Path(__file__).parent.parent


def _record_threads(target, names, seen):
    """Wrap ``target``'s methods ``names`` to record the thread each call runs in."""
    for name in names:
        original = getattr(target, name)

        def wrapper(*args, __original=original, __name=name, **kwargs):
            seen.append((__name, threading.get_ident()))
            return __original(*args, **kwargs)

        setattr(target, name, wrapper)


async def test_the_async_methods_run_their_work_off_the_event_loop(tmp_path):
    loop_thread = threading.get_ident()
    seen: list[tuple[str, int]] = []
    with TieredMemory(tmp_path / "m", MemoryConfig(job_mode="inline")) as m:
        _record_threads(m, ["recall", "flush", "before_turn", "after_turn"], seen)
        _record_threads(m.memories, ["remember", "search", "forget"], seen)
        facts = ["I like green tea", "my sister lives in Porto", "I play the cello", "I work night shifts",
                 "my cat is called Miso"]
        ids = await asyncio.gather(*(m.memories.aremember("alice", f"user: {fact}") for fact in facts))
        await m.aafter_turn("alice", "t1", [HumanMessage("I live in Lisbon."), AIMessage("Noted.")])
        context = await m.abefore_turn("alice", "t1", query="where do I live?")
        hits = await m.memories.asearch("alice", "what do I drink and play?", k=3)
        evidence = await m.arecall("alice", "Lisbon", k=3)
        assert await m.aflush(timeout=30)
        gone = await m.memories.aforget(user_id="alice", memory_id=ids[0])
        store = m.store
        _record_threads(store, ["batch"], seen)
        await store.abatch([PutOp(("docs",), "a", {"v": 1})])
        results = await store.abatch([GetOp(("docs",), "a")])
    assert len(set(ids)) == 5 and hits and hits[0].entry.content in {"user: I like green tea", "user: I play the cello"} and evidence and context.window
    assert gone["memories"] == 1 and results[0].value == {"v": 1}
    called = {name for name, _ in seen}
    assert called == {"remember", "search", "recall", "forget", "flush", "before_turn", "after_turn", "batch"}
    assert all(ident != loop_thread for _, ident in seen), seen


async def test_aflush_waits_for_a_slow_job_while_the_loop_keeps_ticking(tmp_path):
    slow = Hang(1.5, then=turn_tool_call(memories=[memory("The user likes tea.", "preference", 0.8)]))
    model = ScriptedChatModel(script=[slow])
    with TieredMemory(tmp_path / "m", MemoryConfig(job_mode="background"), model=model) as m:
        m.after_turn("alice", "t1", [HumanMessage("I like tea."), AIMessage("Noted.")])
        gaps: list[float] = []
        done = asyncio.Event()

        async def ticker() -> None:
            last = time.perf_counter()
            while not done.is_set():
                await asyncio.sleep(0.01)
                now = time.perf_counter()
                gaps.append(now - last)
                last = now

        async def flush() -> bool:
            try:
                return await m.aflush(timeout=30)
            finally:
                done.set()

        start = time.perf_counter()
        flushed, _ = await asyncio.gather(flush(), ticker())
        waited = time.perf_counter() - start
    assert flushed and model.calls == 1 and waited >= 1.4
    # The loop ran all along: a flush blocking it would show one gap as long as the wait
    # (some slack for a loaded machine: the job's own work competes for the GIL).
    assert len(gaps) > 30 and max(gaps) < waited / 2


async def test_hooks_and_middleware_do_not_run_memory_work_on_the_loop(tmp_path):
    from test_hooks import react_agent
    from test_middleware import agent_with_middleware

    loop_thread = threading.get_ident()
    for build in (react_agent, agent_with_middleware):
        seen: list[tuple[str, int]] = []
        model = ScriptedChatModel(default=scenario.responder)
        with TieredMemory(tmp_path / build.__name__, scenario.CONFIG) as m:
            _record_threads(m, ["before_turn", "after_turn"], seen)
            _record_threads(m.threads, ["recorded_ids"], seen)
            agent = build(m, model)
            await agent.ainvoke({"messages": [HumanMessage("What time is it?")]}, scenario.config("t1"))
            assert len(m.threads.messages("alice", "t1")) == 4  # question, tool call, result, answer
        assert {name for name, _ in seen} == {"before_turn", "after_turn", "recorded_ids"}
        assert all(ident != loop_thread for _, ident in seen), (build.__name__, seen)


class CountingEmbeddings:
    """The real offline embedder, counting how many calls a load makes."""

    def __init__(self) -> None:
        self.inner = default_embeddings()
        self.dimension = 384
        self.document_calls = 0

    def embed_documents(self, texts):
        self.document_calls += 1
        return self.inner.embed_documents(texts)

    def embed_query(self, text):
        return self.inner.embed_query(text)


def test_remember_many_and_import_embed_in_batches_with_a_progress_bar(tmp_path):
    from langchain_core.embeddings import Embeddings

    Embeddings.register(CountingEmbeddings)
    embeddings = CountingEmbeddings()
    items = [{"content": f"user: note {i} about my garden, my cello and the market"} for i in range(150)]
    with TieredMemory(tmp_path / "a", embeddings=embeddings) as m:
        ids = m.memories.remember_many("alice", items, merge=False)  # near-duplicates on purpose
        assert len(set(ids)) == 150
        # Batches of 64 (three) and one for the embedding space's fingerprint (issue 43),
        # not one call per item.
        assert embeddings.document_calls <= 3 + 1
        from langchain_tiered_memory.ops.portability import export_jsonl

        with open(tmp_path / "alice.jsonl", "w") as f:
            export_jsonl(m.admin, "alice", f)
    out = subprocess.run(
        [sys.executable, "-m", "langchain_tiered_memory.cli", "--data-dir", str(tmp_path / "b"), "import",
         str(tmp_path / "alice.jsonl")],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert "embedding" in out.stderr and "150/150" in out.stderr  # tqdm's bar on stderr
    assert "150 memories" in out.stdout
