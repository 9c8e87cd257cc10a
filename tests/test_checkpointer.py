"""LangGraph checkpointers over memory.db: conformance, persistence, forgetting, concurrency."""

import asyncio
import contextlib
import json
import operator
import os
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from pathlib import Path
from typing import Annotated, TypedDict

import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

from langchain_tiered_memory import (
    AsyncPostgresTieredCheckpointSaver,
    InvalidInputError,
    MemoryClosedError,
    MemoryConfig,
    StorageError,
    TieredMemory,
)
from langchain_tiered_memory.embeddings import HashingEmbeddings
from langchain_tiered_memory.integrations.checkpointer import (
    AsyncTieredCheckpointSaver,
    TieredCheckpointSaver,
)

sys.path.insert(0, str(Path(__file__).parent))
import conformance  # noqa: E402

CONFIG = MemoryConfig(job_mode="inline")


def _open(path: Path, config: MemoryConfig = CONFIG) -> TieredMemory:
    return TieredMemory(path, config, embeddings=HashingEmbeddings())


class Chat(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    turns: Annotated[int, operator.add]


def _reply(state: Chat) -> dict:
    last = state["messages"][-1].content
    return {"messages": [AIMessage(f"echo {last} (turn {state['turns'] + 1})")], "turns": 1}


async def _areply(state: Chat) -> dict:
    return _reply(state)


def _graph(checkpointer, node=_reply):
    builder = StateGraph(Chat)
    builder.add_node("reply", node)
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    return builder.compile(checkpointer=checkpointer)


def _cfg(thread_id: str, user_id: str | None = None) -> dict:
    configurable = {"thread_id": thread_id}
    if user_id is not None:
        configurable["user_id"] = user_id
    return {"configurable": configurable}


def _say(text: str) -> dict:
    return {"messages": [HumanMessage(text)], "turns": 0}


def _checkpoint_threads(db: Path) -> dict[str, int]:
    """Checkpoint rows per thread, read with a plain sqlite3 connection to ``memory.db``."""
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        rows = conn.execute("SELECT thread_id, COUNT(*) FROM checkpoints GROUP BY thread_id").fetchall()
        writes = {r[0] for r in conn.execute("SELECT DISTINCT thread_id FROM writes")}
    counts = dict(rows)
    assert writes <= set(counts), "pending writes left behind for a deleted thread"
    return counts


def _aiosqlite_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if "_connection_worker_thread" in t.name and t.is_alive()}


def _wait_gone(threads: set[threading.Thread], timeout: float = 5.0) -> set[threading.Thread]:
    deadline = time.monotonic() + timeout
    while (alive := {t for t in threads if t.is_alive()}) and time.monotonic() < deadline:
        time.sleep(0.02)
    return alive


# --- conformance ----------------------------------------------------------------------
# Every saver, on each database, through its async and its sync methods (tests/conformance.py):
# every capability, base and extended, must pass, and docs/conformance.md must show this run.


@pytest.mark.parametrize("combo", conformance.COMBOS, ids=lambda combo: combo.id)
async def test_conformance_suite_passes(combo, tmp_path, request, capsys):
    urls: list[str] = []
    if combo.backend == "sqlite":
        open_memory = conformance.sqlite_opener(tmp_path)
    else:
        pg = request.getfixturevalue("pg")

        def open_memory():
            urls.append(pg.new_database())  # a fresh database for every capability suite
            return conformance.postgres_memory(urls[-1])

    try:
        report = await conformance.run(combo, open_memory)
    finally:
        for url in urls:
            pg.drop_database(url)
    text = conformance.printed(report)
    with capsys.disabled():  # shown in the normal pytest output, not only with -s
        print(text)

    failures = {cap: r.failures for cap, r in report.results.items() if r.failures}
    assert sorted(report.results) == sorted(conformance.CAPABILITIES)
    assert all(r.detected for r in report.results.values()), text
    assert report.conformance_level() == "FULL", f"{text}\n{failures}"
    if combo.backend == "sqlite":
        # Each suite ran on a deployment of its own and wrote into its memory.db, nowhere else.
        dirs = sorted(tmp_path.iterdir())
        assert len(dirs) == len(conformance.CAPABILITIES)
        for data_dir in dirs:
            assert sorted(p.name for p in data_dir.glob("*.db")) == ["memory.db"]
            with contextlib.closing(sqlite3.connect(data_dir / "memory.db")) as conn:
                tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            assert {"threads", "messages", "checkpoints", "writes"} <= tables
    else:
        assert len(urls) == len(conformance.CAPABILITIES)

    row = conformance.row(combo, report)
    if conformance.documented_versions() == conformance.versions():
        assert conformance.documented_rows().get(conformance.key(combo)) == row, (
            f"docs/conformance.md does not show this run ({row}): run "
            "`.venv/bin/python scripts/conformance_report.py` to regenerate it"
        )
    else:
        warnings.warn(
            f"docs/conformance.md was generated with other versions ({conformance.documented_versions()}); "
            "run `.venv/bin/python scripts/conformance_report.py` to regenerate it", stacklevel=1,
        )


# --- copy_thread, delete_for_runs, prune on a real graph ---------------------------------

SAVERS = [("sqlite", "sync"), ("sqlite", "async"), ("postgresql", "sync"), ("postgresql", "async")]


@contextlib.contextmanager
def _deployment(backend: str, tmp_path: Path, request):
    if backend == "sqlite":
        with _open(tmp_path / "m") as memory:
            yield memory
    else:
        with _open_pg(request.getfixturevalue("pg_url")) as memory:
            yield memory


class _Drive:
    """One saver and its graph, driven through its sync API (a sync saver) or its async one."""

    def __init__(self, memory: TieredMemory, kind: str) -> None:
        self.kind = kind
        self.saver = memory.checkpointer if kind == "sync" else conformance._saver(
            conformance.Combo("sqlite" if memory.data_dir else "postgresql", "async", "async"), memory
        )
        self.graph = _graph(self.saver, _reply if kind == "sync" else _areply)

    async def call(self, name: str, *args, **kwargs):
        if self.kind == "sync":
            return getattr(self.saver, name)(*args, **kwargs)
        return await getattr(self.saver, "a" + name)(*args, **kwargs)

    async def turn(self, text: str, thread: str, run_id: str) -> int:
        config = {"configurable": {"thread_id": thread, "user_id": "alice"}, "metadata": {"run_id": run_id}}
        if self.kind == "sync":
            return self.graph.invoke(_say(text), config)["turns"]
        return (await self.graph.ainvoke(_say(text), config))["turns"]

    async def state(self, thread: str) -> dict:
        if self.kind == "sync":
            return self.graph.get_state(_cfg(thread)).values
        return (await self.graph.aget_state(_cfg(thread))).values

    async def history(self, thread: str) -> list:
        if self.kind == "sync":
            return list(self.saver.list(_cfg(thread)))
        return [t async for t in self.saver.alist(_cfg(thread))]


@pytest.mark.parametrize(("backend", "kind"), SAVERS, ids=[f"{b}-{k}" for b, k in SAVERS])
async def test_copy_thread_delete_for_runs_and_prune_on_a_graph(backend, kind, tmp_path, request):
    with _deployment(backend, tmp_path, request) as memory:
        drive = _Drive(memory, kind)
        for i, run_id in enumerate(["r1", "r2", "r3"]):
            assert await drive.turn(f"m{i}", "t1", run_id) == i + 1
        before = await drive.history("t1")

        # copy_thread: the whole history, with its metadata; each thread goes on on its own.
        await drive.call("copy_thread", "t1", "t2")
        copied = await drive.history("t2")
        assert [t.checkpoint["id"] for t in copied] == [t.checkpoint["id"] for t in before]
        assert [t.metadata for t in copied] == [t.metadata for t in before]
        assert (await drive.state("t2")) == (await drive.state("t1"))
        assert await drive.turn("more", "t2", "r4") == 4
        assert (await drive.state("t1"))["turns"] == 3
        with pytest.raises(InvalidInputError, match="already has checkpoints"):
            await drive.call("copy_thread", "t1", "t2")

        # delete_for_runs: the thread is as the runs before left it, and goes on from there.
        await drive.call("delete_for_runs", ["r3"])
        assert {t.metadata.get("run_id") for t in await drive.history("t1")} == {"r1", "r2"}
        assert (await drive.state("t1"))["turns"] == 2
        # A run's checkpoints go wherever they were copied to (run ids are global).
        assert {t.metadata.get("run_id") for t in await drive.history("t2")} == {"r1", "r2", "r4"}
        assert await drive.turn("again", "t1", "r5") == 3

        # prune: keep_latest leaves one checkpoint with the state; delete leaves nothing.
        await drive.call("prune", ["t1"])
        (latest,) = await drive.history("t1")
        assert latest.parent_config is None and (await drive.state("t1"))["turns"] == 3
        assert await drive.turn("after", "t1", "r6") == 4
        await drive.call("prune", ["t2"], strategy="delete")
        assert await drive.history("t2") == [] and (await drive.state("t2")) == {}
        with pytest.raises(InvalidInputError, match="list of ids"):
            await drive.call("prune", "t1")
        with pytest.raises(InvalidInputError, match="keep_latest"):
            await drive.call("prune", ["t1"], strategy="oldest")

        # A copy keeps the user in its metadata: forgetting the user forgets the copy.
        await drive.call("copy_thread", "t1", "t3")
        assert memory.admin.forget(user_id="alice")["checkpoints"] > 0
        assert await drive.history("t3") == [] and await drive.history("t1") == []


def _append(state: list, writes: list) -> list:
    return [*state, *(item for write in writes for item in write)]


class Deltas(TypedDict):
    items: Annotated[list, DeltaChannel(_append)]


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_keep_latest_refuses_threads_with_a_delta_channel(backend, tmp_path, request):
    with _deployment(backend, tmp_path, request) as memory:
        builder = StateGraph(Deltas)
        builder.add_node("add", lambda state: {"items": [len(state["items"])]})
        builder.add_edge(START, "add")
        builder.add_edge("add", END)
        deltas = builder.compile(checkpointer=memory.checkpointer)
        for _ in range(3):
            deltas.invoke({"items": []}, _cfg("d"))
        plain = _graph(memory.checkpointer)
        plain.invoke(_say("hi"), _cfg("p"))
        plain.invoke(_say("hi"), _cfg("p"))
        saver = memory.checkpointer
        count = {t: len(list(saver.list(_cfg(t)))) for t in ("d", "p")}

        with pytest.raises(InvalidInputError, match=r"DeltaChannel \(d\).*strategy='delete'"):
            saver.prune(["p", "d"])
        assert {t: len(list(saver.list(_cfg(t)))) for t in ("d", "p")} == count  # nothing pruned
        assert deltas.get_state(_cfg("d")).values["items"] == [0, 1, 2]
        saver.prune(["p"])
        assert len(list(saver.list(_cfg("p")))) == 1
        saver.prune(["d"], strategy="delete")
        assert list(saver.list(_cfg("d"))) == []


# --- sync saver -------------------------------------------------------------------------


def test_graph_state_survives_reopening_and_lives_in_memory_db(tmp_path):
    data_dir = tmp_path / "deploy"
    with _open(data_dir) as memory:
        assert isinstance(memory.checkpointer, TieredCheckpointSaver)
        assert memory.checkpointer is memory.checkpointer
        graph = _graph(memory.checkpointer)
        graph.invoke(_say("hi"), _cfg("t1"))
        out = graph.invoke(_say("again"), _cfg("t1"))
        assert out["turns"] == 2

    with _open(data_dir) as memory:
        graph = _graph(memory.checkpointer)
        state = graph.get_state(_cfg("t1"))
        assert state.values["turns"] == 2
        assert [m.content for m in state.values["messages"]] == [
            "hi", "echo hi (turn 1)", "again", "echo again (turn 2)"
        ]
        out = graph.invoke(_say("third"), _cfg("t1"))
        assert out["turns"] == 3
        assert len(list(graph.get_state_history(_cfg("t1")))) == 9

    # One file: LangGraph's own SqliteSaver reads the same state straight from memory.db.
    db = data_dir / "memory.db"
    assert sorted(p.name for p in data_dir.rglob("*.db")) == ["memory.db"]
    assert not list(data_dir.rglob("*.sqlite*"))
    with contextlib.closing(sqlite3.connect(db, check_same_thread=False)) as conn:
        plain = SqliteSaver(conn)
        values = plain.get_tuple(_cfg("t1")).checkpoint["channel_values"]
        assert values["turns"] == 3


def test_closed_checkpointer_says_so(tmp_path):
    memory = _open(tmp_path / "m")
    saver = memory.checkpointer
    graph = _graph(saver)
    graph.invoke(_say("hi"), _cfg("t1"))
    memory.close()
    memory.close()
    with pytest.raises(MemoryClosedError, match="closed"):
        graph.invoke(_say("more"), _cfg("t1"))
    with pytest.raises(MemoryClosedError):
        memory.checkpointer


async def test_sync_saver_also_serves_ainvoke(tmp_path):
    with _open(tmp_path / "m") as memory:
        graph = _graph(memory.checkpointer, _areply)
        await graph.ainvoke(_say("hi"), _cfg("t1"))
        out = await graph.ainvoke(_say("again"), _cfg("t1"))
        assert out["turns"] == 2
        assert [c async for c in memory.checkpointer.alist(_cfg("t1"), limit=2)][0].checkpoint[
            "channel_values"
        ]["turns"] == 2


# --- forgetting -------------------------------------------------------------------------


def test_forget_thread_removes_only_its_checkpoints(tmp_path):
    with _open(tmp_path / "m") as memory:
        graph = _graph(memory.checkpointer)
        for thread in ("t1", "t2"):
            graph.invoke(_say("hi"), _cfg(thread, "alice"))
        memory.after_turn("alice", "t1", [HumanMessage("hi"), AIMessage("echo hi")], extract=False)

        counts = memory.admin.forget(thread_id="t1")

        assert counts["checkpoints"] == 3
        assert counts["messages"] == 2
        assert graph.get_state(_cfg("t1")).values == {}
        assert graph.get_state(_cfg("t2")).values["turns"] == 1
        assert set(_checkpoint_threads(memory.data_dir / "memory.db")) == {"t2"}
        # The thread starts afresh.
        assert graph.invoke(_say("new"), _cfg("t1"))["turns"] == 1


def test_forget_user_removes_checkpoints_of_their_threads_only(tmp_path):
    with _open(tmp_path / "m") as memory:
        graph = _graph(memory.checkpointer)
        # alice: one thread known through after_turn, one only through the run config,
        # one through run metadata.
        graph.invoke(_say("hi"), _cfg("a-turns"))
        memory.after_turn("alice", "a-turns", [HumanMessage("hi"), AIMessage("echo hi")], extract=False)
        graph.invoke(_say("hi"), _cfg("a-config", "alice"))
        graph.invoke(_say("hi"), {"configurable": {"thread_id": "a-meta"}, "metadata": {"user_id": "alice"}})
        # bob: the same two ways, and a thread of nobody in particular.
        graph.invoke(_say("hi"), _cfg("b-turns"))
        memory.after_turn("bob", "b-turns", [HumanMessage("hi")], extract=False)
        graph.invoke(_say("hi"), _cfg("b-config", "bob"))
        graph.invoke(_say("hi"), _cfg("anon"))
        db = memory.data_dir / "memory.db"
        assert len(_checkpoint_threads(db)) == 6

        counts = memory.admin.forget(user_id="alice")

        assert counts["checkpoints"] == 9
        assert set(_checkpoint_threads(db)) == {"b-turns", "b-config", "anon"}
        for thread in ("a-turns", "a-config", "a-meta"):
            assert graph.get_state(_cfg(thread)).values == {}
        for thread in ("b-turns", "b-config", "anon"):
            assert graph.get_state(_cfg(thread)).values["turns"] == 1
        assert [t.thread_id for t in memory.threads.list("bob")] == ["b-turns"]


def test_forget_thread_with_a_user_checks_the_owner_of_a_checkpoint_only_thread(tmp_path):
    from langchain_tiered_memory import ThreadOwnershipError

    with _open(tmp_path / "m") as memory:
        graph = _graph(memory.checkpointer)
        graph.invoke(_say("hi"), _cfg("b-config", "bob"))
        with pytest.raises(ThreadOwnershipError):
            memory.admin.forget(thread_id="b-config", user_id="alice")
        assert graph.get_state(_cfg("b-config")).values["turns"] == 1
        assert memory.admin.forget(thread_id="b-config", user_id="bob")["checkpoints"] > 0
        assert graph.get_state(_cfg("b-config")).values == {}


def test_forget_before_any_checkpointer_and_langgraph_delete_thread(tmp_path):
    with _open(tmp_path / "m") as memory:
        memory.after_turn("alice", "t1", [HumanMessage("hi")], extract=False)
        assert memory.admin.forget(user_id="alice")["checkpoints"] == 0

        graph = _graph(memory.checkpointer)
        graph.invoke(_say("hi"), _cfg("t1"))
        graph.invoke(_say("hi"), _cfg("t2"))
        memory.checkpointer.delete_thread("t1")
        assert set(_checkpoint_threads(memory.data_dir / "memory.db")) == {"t2"}


# --- async saver ------------------------------------------------------------------------


async def test_async_graph_state_survives_reopening(tmp_path):
    data_dir = tmp_path / "deploy"
    before = _aiosqlite_threads()
    memory = _open(data_dir)
    saver = AsyncTieredCheckpointSaver(memory)
    assert isinstance(saver, AsyncTieredCheckpointSaver)
    graph = _graph(saver, _areply)
    await graph.ainvoke(_say("hi"), _cfg("t1", "alice"))
    out = await graph.ainvoke(_say("again"), _cfg("t1", "alice"))
    assert out["turns"] == 2
    # AsyncSqliteSaver's sync methods work from another thread while the loop runs.
    state = await asyncio.to_thread(graph.get_state, _cfg("t1"))
    assert state.values["turns"] == 2
    # From the loop's own thread a sync call would block that loop forever: refused.
    with pytest.raises(StorageError, match="would block"):
        graph.get_state(_cfg("t1"))
    # A sync close from inside the running loop must not hang it or leak the connection
    # (whose worker thread would keep the process from exiting). Held here, so only a
    # real close, not garbage collection, ends it.
    conn = saver.conn
    memory.close()
    assert not _wait_gone(_aiosqlite_threads() - before)
    with pytest.raises(ValueError):
        await conn.execute("SELECT 1")

    memory = _open(data_dir)
    try:
        saver = AsyncTieredCheckpointSaver(memory)
        graph = _graph(saver, _areply)
        state = await graph.aget_state(_cfg("t1"))
        assert [m.content for m in state.values["messages"]][-1] == "echo again (turn 2)"
        assert (await graph.ainvoke(_say("third"), _cfg("t1")))["turns"] == 3
        # Both savers read the same rows.
        assert memory.checkpointer.get_tuple(_cfg("t1")).checkpoint["channel_values"]["turns"] == 3
        assert memory.admin.forget(user_id="alice")["checkpoints"] == 9
        assert (await graph.aget_state(_cfg("t1"))).values == {}
        conn = saver.conn
        await saver.aclose()
        assert not _wait_gone(_aiosqlite_threads() - before)
        with pytest.raises(MemoryClosedError):
            await graph.ainvoke(_say("more"), _cfg("t1"))
    finally:
        memory.close()
    del conn


def test_async_saver_across_event_loops_and_sync_misuse(tmp_path):
    before = _aiosqlite_threads()
    memory = _open(tmp_path / "m")
    saver = AsyncTieredCheckpointSaver(memory)
    graph = _graph(saver, _areply)

    async def turn(text: str) -> int:
        return (await graph.ainvoke(_say(text), _cfg("t1")))["turns"]

    # Each asyncio.run is a new loop; the saver follows once the earlier one is gone.
    assert asyncio.run(turn("one")) == 1
    assert asyncio.run(turn("two")) == 2
    # Sync calls need a running loop to hand work to: a clear error, not a hang.
    with pytest.raises(StorageError, match="memory.checkpointer for sync graphs"):
        graph.invoke(_say("sync"), _cfg("t1"))
    conn = saver.conn
    memory.close()  # the loop that opened the connection is closed by now
    assert not _wait_gone(_aiosqlite_threads() - before)
    del conn
    with _open(tmp_path / "m") as memory:
        assert memory.checkpointer.get_tuple(_cfg("t1")).checkpoint["channel_values"]["turns"] == 2


def test_unused_async_saver_closes_quietly(tmp_path):
    memory = _open(tmp_path / "m")
    saver = AsyncTieredCheckpointSaver(memory)
    memory.close()
    saver.close()
    asyncio.run(saver.aclose())


def test_strict_msgpack_clones_share_and_release_the_connection(tmp_path):
    # With LANGGRAPH_STRICT_MSGPACK, compile() uses a copy of the saver (with_allowlist).
    # The copy must write to the same file and be closed by memory.close(), or aiosqlite's
    # worker thread keeps the process alive.
    script = textwrap.dedent(
        f"""
        import asyncio, operator, json
        from typing import Annotated, TypedDict
        from langgraph.graph import StateGraph, START, END
        from langchain_tiered_memory import AsyncTieredCheckpointSaver, TieredMemory, MemoryConfig
        from langchain_tiered_memory.embeddings import HashingEmbeddings

        class S(TypedDict):
            n: Annotated[int, operator.add]

        b = StateGraph(S)
        b.add_node("inc", lambda s: {{"n": 1}})
        b.add_edge(START, "inc")
        b.add_edge("inc", END)
        memory = TieredMemory(
            {str(tmp_path / "m")!r}, MemoryConfig(job_mode="inline"), embeddings=HashingEmbeddings()
        )
        sync_graph = b.compile(checkpointer=memory.checkpointer)
        async_saver = AsyncTieredCheckpointSaver(memory)
        async_graph = b.compile(checkpointer=async_saver)
        cfg = {{"configurable": {{"thread_id": "t"}}}}
        sync_graph.invoke({{"n": 0}}, cfg)
        out = asyncio.run(async_graph.ainvoke({{"n": 0}}, cfg))
        print(json.dumps({{
            "cloned": [sync_graph.checkpointer is not memory.checkpointer,
                       async_graph.checkpointer is not async_saver],
            "n": out["n"],
        }}))
        memory.close()
        """
    )
    env = {**os.environ, "LANGGRAPH_STRICT_MSGPACK": "1", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"cloned": [True, True], "n": 2}


# --- concurrency ------------------------------------------------------------------------


def test_graph_runs_and_memory_writes_interleave_without_deadlock(tmp_path):
    with _open(tmp_path / "m", MemoryConfig(job_mode="background")) as memory:
        graph = _graph(memory.checkpointer)
        errors: list[BaseException] = []
        runs = 40

        def run_graph(thread: str) -> None:
            try:
                for i in range(runs):
                    graph.invoke(_say(f"{thread} {i}"), _cfg(thread, "alice"))
            except BaseException as exc:  # reported below
                errors.append(exc)

        def write_turns() -> None:
            try:
                for i in range(runs):
                    memory.after_turn("bob", "chat", [HumanMessage(f"q{i}"), AIMessage(f"a{i}")])
                    if i % 10 == 9:
                        memory.admin.forget(thread_id="scratch")
            except BaseException as exc:
                errors.append(exc)

        workers = [threading.Thread(target=run_graph, args=(t,)) for t in ("g1", "g2")]
        workers.append(threading.Thread(target=write_turns))
        for w in workers:
            w.start()
        for w in workers:
            w.join(120)
        assert not [w for w in workers if w.is_alive()], "deadlock: a worker is still running"
        assert not errors, errors
        assert memory.flush(60)
        assert graph.get_state(_cfg("g1")).values["turns"] == runs
        assert graph.get_state(_cfg("g2")).values["turns"] == runs
        assert len(memory.threads.messages("bob", "chat")) == 2 * runs


async def test_async_graph_and_memory_writes_interleave(tmp_path):
    with _open(tmp_path / "m", MemoryConfig(job_mode="background")) as memory:
        saver = AsyncTieredCheckpointSaver(memory)
        graph = _graph(saver, _areply)

        async def chat(thread: str) -> None:
            for i in range(20):
                await graph.ainvoke(_say(f"{i}"), _cfg(thread))

        async def turns() -> None:
            for i in range(20):
                await memory.aafter_turn("bob", "chat", [HumanMessage(f"q{i}"), AIMessage(f"a{i}")])

        await asyncio.wait_for(asyncio.gather(chat("g1"), chat("g2"), turns()), 120)
        for thread in ("g1", "g2"):
            assert (await graph.aget_state(_cfg(thread))).values["turns"] == 20
        assert len(memory.threads.messages("bob", "chat")) == 40
        await saver.aclose()


# --- PostgreSQL: langgraph-checkpoint-postgres's savers on the memory's database ------------


def _open_pg(url: str) -> TieredMemory:
    from qdrant_client import QdrantClient

    return TieredMemory(config=CONFIG, embeddings=HashingEmbeddings(), database_url=url,
                        qdrant_client=QdrantClient(":memory:"))


def _pg_checkpoint_threads(url: str) -> dict[str, int]:
    import psycopg

    with psycopg.connect(url) as conn:
        counts = dict(conn.execute("SELECT thread_id, COUNT(*) FROM checkpoints GROUP BY thread_id").fetchall())
        others = {r[0] for r in conn.execute(
            "SELECT thread_id FROM checkpoint_writes UNION SELECT thread_id FROM checkpoint_blobs"
        )}
    assert others <= set(counts), "writes or channel values left behind for a deleted thread"
    return counts


def test_postgres_forget_removes_checkpoints_in_every_table(pg_url):
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver

    with _open_pg(pg_url) as memory:
        graph = _graph(memory.checkpointer)
        graph.invoke(_say("hi"), _cfg("a-turns"))
        memory.after_turn("alice", "a-turns", [HumanMessage("hi"), AIMessage("echo hi")], extract=False)
        graph.invoke(_say("hi"), _cfg("a-config", "alice"))
        graph.invoke(_say("hi"), _cfg("b-config", "bob"))
        graph.invoke(_say("hi"), _cfg("t-only"))
        assert set(_pg_checkpoint_threads(pg_url)) == {"a-turns", "a-config", "b-config", "t-only"}

        counts = memory.admin.forget(user_id="alice")
        assert counts["checkpoints"] == 6
        assert set(_pg_checkpoint_threads(pg_url)) == {"b-config", "t-only"}
        assert memory.admin.forget(thread_id="t-only")["checkpoints"] == 3
        with pytest.raises(Exception, match="belong"):
            memory.admin.forget(thread_id="b-config", user_id="alice")
        assert set(_pg_checkpoint_threads(pg_url)) == {"b-config"}
        assert graph.get_state(_cfg("b-config")).values["turns"] == 1

    # LangGraph's own PostgresSaver reads the same state from the same database.
    with psycopg.connect(pg_url, autocommit=True, prepare_threshold=0, row_factory=psycopg.rows.dict_row) as conn:
        values = PostgresSaver(conn).get_tuple(_cfg("b-config")).checkpoint["channel_values"]
        assert values["turns"] == 1


async def test_postgres_async_saver_across_event_loops_and_closing(pg_url):
    memory = _open_pg(pg_url)
    try:
        saver = AsyncPostgresTieredCheckpointSaver(memory)
        graph = _graph(saver, _areply)
        assert (await graph.ainvoke(_say("hi"), _cfg("t1")))["turns"] == 1

        def in_another_loop() -> int:
            async def again() -> int:
                return (await _graph(saver, _areply).ainvoke(_say("again"), _cfg("t1")))["turns"]

            return asyncio.run(again())

        with pytest.raises(StorageError, match="another running event loop"):
            await asyncio.to_thread(in_another_loop)
        # From another thread, the sync methods run on the saver's loop.
        state = await asyncio.to_thread(graph.get_state, _cfg("t1"))
        assert state.values["turns"] == 1
    finally:
        memory.close()
    with pytest.raises(MemoryClosedError):
        await saver.aget_tuple(_cfg("t1"))
