"""langchain_tiered_memory.deploy: a LangGraph server's store and checkpointer by import path.

The server (langgraph-api) is not run here; :func:`server_load` and :func:`server_enter` do
what its loader does with langgraph.json's ``"store"`` and ``"checkpointer"`` paths
(langgraph_api/store.py and langgraph_api/_checkpointer/_adapter.py, 0.16.7): a path with a
``/`` or ``.py:`` is a file and its attribute; anything else is a dotted path whose last dot
separates the attribute. The value is called, and what it returns is entered as an (async)
context manager for as long as the server serves.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import json
import os
import re
import subprocess
import sys
import textwrap
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore

from langchain_tiered_memory import (
    AsyncTieredCheckpointSaver,
    ConfigError,
    TieredMemory,
    TieredMemoryError,
    TieredMemoryStore,
    VectorStoreError,
    deploy,
)

ROOT = Path(__file__).resolve().parent.parent
STORE, CHECKPOINTER = "langchain_tiered_memory.deploy.store", "langchain_tiered_memory.deploy.checkpointer"
ENV = (deploy.DIR_ENV, deploy.DATABASE_ENV, deploy.QDRANT_ENV, deploy.QDRANT_KEY_ENV)


def server_load(path: str) -> Any:
    """The object langgraph.json's ``path`` names, found as langgraph-api finds it."""
    if "/" in path or ".py:" in path:
        file, attr = path.rsplit(":", 1)
        spec = importlib.util.spec_from_file_location(f"deploy_file_{uuid.uuid4().hex}", file)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    else:
        module_name, attr = path.rsplit(".", 1)
        module = importlib.import_module(module_name)
    return module.__dict__[attr]


@asynccontextmanager
async def server_enter(value: Any) -> AsyncIterator[Any]:
    """``value`` entered as langgraph-api enters a custom store or checkpointer."""
    if isinstance(value, (BaseStore, BaseCheckpointSaver)):
        yield value
    elif hasattr(value, "__aenter__"):
        async with value as entered:
            yield entered
    elif callable(value):
        async with server_enter(value()) as entered:
            yield entered
    else:  # pragma: no cover - what the server refuses
        raise ValueError(f"unsupported: {value!r}")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    yield
    assert deploy._open == {}, "a deployment's memory was left open"


class Chat(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


async def answer(state: Chat, config: RunnableConfig, runtime: Runtime) -> dict:
    """Remembers what it is told to, through the store; answers from it otherwise."""
    user, text = config["configurable"]["user_id"], state["messages"][-1].content
    if text.startswith("remember: "):
        await runtime.store.aput(("memories", user), str(uuid.uuid4()), {"content": text.removeprefix("remember: ")})
        return {"messages": [AIMessage("Noted.")]}
    hits = await runtime.store.asearch(("memories", user), query=text, limit=1)
    return {"messages": [AIMessage(hits[0].value["content"] if hits else "I do not know.")]}


async def a_turn_through_the_server_paths() -> tuple[Any, Any]:
    """Enter the store and the checkpointer as the server does, and run two threads' turns."""
    async with server_enter(server_load(STORE)) as store, server_enter(server_load(CHECKPOINTER)) as saver:
        builder = StateGraph(Chat)
        builder.add_node("answer", answer)
        builder.add_edge(START, "answer")
        builder.add_edge("answer", END)
        graph = builder.compile(store=store, checkpointer=saver)
        first = {"configurable": {"user_id": "alice", "thread_id": "t1"}}
        await graph.ainvoke({"messages": [HumanMessage("remember: Alice drinks green tea.")]}, first)
        out = await graph.ainvoke(
            {"messages": [HumanMessage("What does Alice drink?")]},
            {"configurable": {"user_id": "alice", "thread_id": "t2"}},
        )
        assert out["messages"][-1].content == "Alice drinks green tea."
        state = await graph.aget_state(first)
        assert [m.content for m in state.values["messages"]] == ["remember: Alice drinks green tea.", "Noted."]
        # One memory behind both, held while the server holds either.
        ((deployment, shared),) = deploy._open.items()
        assert shared.holders == 2 and store is shared.memory.store
        return store, saver


def test_the_paths_name_async_context_managers(tmp_path):
    assert server_load(STORE) is deploy.store and server_load(CHECKPOINTER) is deploy.checkpointer
    # A file of the project re-exporting them (langgraph.json's "./file.py:attr" form).
    mine = tmp_path / "memory_paths.py"
    mine.write_text("from langchain_tiered_memory.deploy import checkpointer, store\n", encoding="utf-8")
    assert server_load(f"{mine}:store") is deploy.store
    assert server_load(f"{mine}:checkpointer") is deploy.checkpointer
    for cm in (deploy.store, deploy.checkpointer):
        value = cm()
        assert hasattr(value, "__aenter__") and hasattr(value, "__aexit__")


def test_the_langgraph_json_of_the_docs_validates_and_names_these_paths():
    cli = pytest.importorskip("langgraph_cli.config")
    text = (ROOT / "docs" / "integrations.md").read_text(encoding="utf-8")
    blocks = [json.loads(b) for b in re.findall(r"```json\n(.*?)```", text, re.DOTALL) if "deploy.store" in b]
    assert blocks, "docs/integrations.md shows no langgraph.json with the deploy paths"
    for block in blocks:
        config = cli.validate_config(block)
        assert config["store"]["path"] == STORE and config["checkpointer"]["path"] == CHECKPOINTER


async def test_a_directory_deployment(tmp_path, monkeypatch):
    monkeypatch.setenv(deploy.DIR_ENV, str(tmp_path / "memory"))
    store, saver = await a_turn_through_the_server_paths()
    assert isinstance(store, TieredMemoryStore) and isinstance(saver, AsyncTieredCheckpointSaver)
    # Closed on the last exit: the directory opens again, with the turns and the memory.
    with TieredMemory(tmp_path / "memory") as memory:
        assert [e.content for e in memory.memories.list("alice")] == ["Alice drinks green tea."]
        state = memory.checkpointer.get_tuple({"configurable": {"thread_id": "t2"}})
        assert state.checkpoint["channel_values"]["messages"][-1].content == "Alice drinks green tea."


async def test_a_postgresql_deployment_with_qdrant_in_local_mode(pg_url, monkeypatch):
    import psycopg

    from langchain_tiered_memory import AsyncPostgresTieredCheckpointSaver

    monkeypatch.setenv(deploy.DATABASE_ENV, pg_url)
    monkeypatch.setenv(deploy.QDRANT_ENV, deploy.LOCAL_QDRANT)  # qdrant-client's local mode
    store, saver = await a_turn_through_the_server_paths()
    assert isinstance(saver, AsyncPostgresTieredCheckpointSaver)
    with psycopg.connect(pg_url) as conn:
        threads = {r[0] for r in conn.execute("SELECT DISTINCT thread_id FROM checkpoints")}
        memories = conn.execute("SELECT content FROM memories WHERE user_id = 'alice'").fetchall()
    assert threads == {"t1", "t2"} and memories == [("Alice drinks green tea.",)]


async def test_an_unreachable_qdrant_server_is_named(pg_url, monkeypatch):
    monkeypatch.setenv(deploy.DATABASE_ENV, pg_url)
    monkeypatch.setenv(deploy.QDRANT_ENV, "http://127.0.0.1:1")
    with pytest.raises(VectorStoreError, match=r"127\.0\.0\.1:1"):
        async with server_enter(server_load(STORE)):
            pass  # pragma: no cover


async def test_without_a_deployment_the_error_says_what_to_set(tmp_path, monkeypatch):
    for path in (STORE, CHECKPOINTER):
        with pytest.raises(ConfigError) as caught:
            async with server_enter(server_load(path)):
                pass  # pragma: no cover
        message = str(caught.value)
        assert all(name in message for name in ("TIERED_MEMORY_DIR", "DATABASE_URL", "QDRANT_URL", '"env"'))
        assert isinstance(caught.value, TieredMemoryError)
    monkeypatch.setenv(deploy.DATABASE_ENV, "postgresql://memory@db/memory")
    with pytest.raises(ConfigError, match="DATABASE_URL needs QDRANT_URL"):
        deploy.Deployment.from_env()
    monkeypatch.setenv(deploy.DIR_ENV, str(tmp_path))
    with pytest.raises(ConfigError, match="not both"):
        deploy.Deployment.from_env()
    # A directory with its vectors on a Qdrant server is a deployment too.
    env = {deploy.DIR_ENV: " ./memory ", deploy.QDRANT_ENV: "http://qdrant:6333", deploy.QDRANT_KEY_ENV: "k"}
    assert deploy.Deployment.from_env(env) == deploy.Deployment("./memory", None, "http://qdrant:6333", "k")


def test_a_graph_module_shares_the_servers_memory_until_the_process_exits(tmp_path):
    script = textwrap.dedent(
        """
        import asyncio
        from langchain_tiered_memory import deploy

        memory = deploy.memory()  # what a graph module hands its middleware or nodes
        assert deploy.memory() is memory

        async def serve():
            async with deploy.store() as store, deploy.checkpointer() as saver:
                assert store is memory.store
                await saver.aput({"configurable": {"thread_id": "t", "checkpoint_ns": ""}},
                                 {"v": 1, "id": "1", "ts": "", "channel_values": {}, "channel_versions": {},
                                  "versions_seen": {}}, {}, {})

        asyncio.run(serve())
        memory.memories.remember("alice", "Alice keeps bees.")  # still open once the server let go
        print("served")
        """
    )
    env = {k: v for k, v in os.environ.items() if k not in (*ENV, "OPENAI_API_KEY", "OPENAI_BASE_URL")}
    env.update({"HF_HUB_OFFLINE": "1", deploy.DIR_ENV: str(tmp_path / "memory"), "PYTHONPATH": str(ROOT)})
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "served" in done.stdout, done.stderr[-3000:]
    # The process closed it on exit: the directory (and its index) opens here.
    with TieredMemory(tmp_path / "memory") as memory:
        assert [h.entry.content for h in memory.memories.search("alice", "bees")] == ["Alice keeps bees."]
        assert memory.checkpointer.get_tuple({"configurable": {"thread_id": "t"}}) is not None


def test_the_server_may_enter_them_from_several_threads(tmp_path, monkeypatch):
    # langgraph-api keeps one entered store and checkpointer per thread: each thread's event
    # loop gets a saver of its own, all on one memory.
    monkeypatch.setenv(deploy.DIR_ENV, str(tmp_path / "memory"))
    config = {"configurable": {"thread_id": "shared", "checkpoint_ns": ""}}

    def a_server_thread(i: int) -> int:
        async def serve() -> int:
            async with deploy.store() as store, deploy.checkpointer() as saver:
                await store.aput(("notes",), f"k{i}", {"i": i})
                await saver.aput(config, {"v": 1, "id": f"{i}", "ts": "", "channel_values": {},
                                          "channel_versions": {}, "versions_seen": {}}, {}, {})
                return len(deploy._open)

        return asyncio.run(serve())

    async def main() -> list[int]:
        return list(await asyncio.gather(*(asyncio.to_thread(a_server_thread, i) for i in range(3))))

    assert asyncio.run(main()) == [1, 1, 1]
    with TieredMemory(tmp_path / "memory") as memory:
        assert sorted(item.key for item in memory.store.search(("notes",))) == ["k0", "k1", "k2"]
        assert len(list(memory.checkpointer.list({"configurable": {"thread_id": "shared"}}))) == 3
