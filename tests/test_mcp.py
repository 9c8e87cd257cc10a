"""``tiered-memory mcp`` (issue 43): one user's memory as an MCP server on the official SDK.

Real components throughout: a memory directory in ``tmp_path`` with the default local
embeddings, the SDK's own clients over stdio (the command in a subprocess) and streamable
HTTP (the command on a free port, with a token), a LangGraph agent calling the tools through
langchain-mcp-adapters, and the SDK's in-memory transport for the isolation checks.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_mcp_adapters.tools import load_mcp_tools
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.memory import create_connected_server_and_client_session

from langchain_tiered_memory import MemoryConfig, TieredMemory, create_mcp_server
from langchain_tiered_memory.cli import main
from scripted_model import ScriptedChatModel

ROOT = Path(__file__).resolve().parent.parent
TOOLS = {"remember", "recall", "search_memories", "forget_memory", "record_turn", "context"}
RESOURCES = {"tiered-memory://profile", "tiered-memory://episodes"}
INLINE = MemoryConfig(job_mode="inline")
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
TOKEN = "s3cret-token-for-the-test"


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    env["HF_HUB_OFFLINE"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def _command(data_dir: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "langchain_tiered_memory.cli", "mcp", "--data-dir", str(data_dir),
            "--user", "alice", *extra]


def _text(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


async def _remember_and_recall(session: ClientSession) -> None:
    """What both transports must do: list the tools and resources, remember, recall, fail."""
    assert {t.name for t in (await session.list_tools()).tools} == TOOLS
    assert {str(r.uri) for r in (await session.list_resources()).resources} == RESOURCES

    stored = await session.call_tool("remember", {"content": "My sister lives in Porto.", "importance": 0.8})
    assert not stored.isError, _text(stored)
    memory_id = stored.structuredContent["id"]
    assert UUID.fullmatch(memory_id)

    found = await session.call_tool("recall", {"query": "where does my sister live?", "k": 3})
    assert not found.isError, _text(found)
    evidence = found.structuredContent["evidence"]
    assert evidence[0]["id"] == memory_id and evidence[0]["text"] == "My sister lives in Porto."
    assert evidence[0]["grain"] == "fact" and evidence[0]["score"] > 0 and evidence[0]["date"][:4].isdigit()
    assert "Porto" in _text(found)  # the same, as text, for clients that read only that

    # Our error, as a tool error with our message: nothing of the user's is touched.
    wrong = await session.call_tool("forget_memory", {"memory_id": "00000000-0000-4000-8000-000000000000"})
    assert wrong.isError and "has no memory" in _text(wrong) and "nothing was forgotten" in _text(wrong)
    searched = await session.call_tool("search_memories", {"query": "sister"})
    assert [m["id"] for m in searched.structuredContent["memories"]] == [memory_id]


# --- the command, over stdio and streamable HTTP --------------------------------------------


async def test_the_sdk_client_over_stdio_lists_remembers_and_recalls(tmp_path):
    errlog = (tmp_path / "server.err").open("w")
    params = StdioServerParameters(command=sys.executable, args=_command(tmp_path / "memory")[1:], env=_env(), cwd=tmp_path)
    try:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            info = await session.initialize()
            assert info.serverInfo.name == "tiered-memory"
            await _remember_and_recall(session)
            turn = await session.call_tool("record_turn", {"thread_id": "t1", "user_message": "I prefer green tea.",
                                                           "assistant_message": "Noted."})
            assert turn.structuredContent["stored"] == 2, _text(turn)
            block = (await session.call_tool("context", {"thread_id": "t1", "query": "sister"})).structuredContent
            assert block["memory_block"].startswith("<memory>") and "Porto" in block["memory_block"]
    finally:
        errlog.close()
    # The protocol had stdout to itself, and the server closed the memory on the client's EOF.
    assert "Traceback" not in (tmp_path / "server.err").read_text()
    with TieredMemory(tmp_path / "memory") as memory:
        assert [m.content for m in memory.memories.list("alice")][-1] == "My sister lives in Porto."


class _Server:
    """``tiered-memory mcp --http`` in a subprocess, on a free port: its address once it listens."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
        self._watchdog = threading.Timer(90, self.proc.kill)
        self._watchdog.start()
        line = self.proc.stdout.readline()
        found = re.search(r"http://\S+/mcp", line)
        if not found:
            self.stop()
            raise AssertionError(f"the server did not start: {line!r} {self.proc.stderr.read()}")
        self.url = found.group(0)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)  # Ctrl-C: the command closes the memory
        code = self.proc.wait(timeout=30)
        self._watchdog.cancel()
        return code


async def test_streamable_http_with_a_token_and_without_it(tmp_path):
    server = _Server(*_command(tmp_path / "memory", "--http", "--port", "0", "--token", TOKEN))
    try:
        assert server.url.startswith("http://127.0.0.1:")
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with httpx.AsyncClient(headers=headers, timeout=60) as http, \
                streamable_http_client(server.url, http_client=http) as (read, write, _), \
                ClientSession(read, write) as session:
            await session.initialize()
            await _remember_and_recall(session)

        # Without the token (or with another), every request is refused before the server.
        hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}}
        accept = {"Accept": "application/json, text/event-stream"}
        async with httpx.AsyncClient(timeout=30) as http:
            for wrong in ({}, {"Authorization": "Bearer nope"}, {"Authorization": TOKEN}):
                refused = await http.post(server.url, json=hello, headers={**accept, **wrong})
                assert refused.status_code == 401 and "token" in refused.text
        with pytest.raises(Exception) as refused_client:
            async with httpx.AsyncClient(timeout=30) as http, \
                    streamable_http_client(server.url, http_client=http) as (read, write, _), \
                    ClientSession(read, write) as session:
                await session.initialize()
        assert "401" in repr(refused_client.value) or "Unauthorized" in repr(refused_client.value)
    finally:
        code = server.stop()
    assert code == 130, server.proc.stderr.read()


def test_a_reachable_address_needs_a_token_and_options_go_with_http(tmp_path, capsys):
    data_dir = tmp_path / "memory"
    assert main(["mcp", "--data-dir", str(data_dir), "--user", "alice", "--http", "--host", "0.0.0.0"]) == 1
    err = capsys.readouterr().err
    assert "refusing to serve the memory over MCP on 0.0.0.0" in err and "--token" in err
    assert not data_dir.exists()  # refused before the memory was opened
    with pytest.raises(SystemExit) as exit_:
        main(["mcp", "--data-dir", str(data_dir), "--user", "alice", "--port", "9000"])
    assert exit_.value.code == 2 and "--port go with --http" in capsys.readouterr().err
    # The parser's defaults are the server's (kept apart so that --help loads no SDK).
    from langchain_tiered_memory.cli import mcp as command
    from langchain_tiered_memory.integrations import mcp_transport

    assert (command.PORT, command.TOKEN_ENV) == (mcp_transport.DEFAULT_PORT, mcp_transport.TOKEN_ENV)


def test_without_the_extra_the_command_names_it(tmp_path):
    probe = ("import sys\nsys.modules['mcp'] = None\nfrom langchain_tiered_memory.cli import main\n"
             f"sys.exit(main(['mcp', '--data-dir', {str(tmp_path / 'm')!r}, '--user', 'alice']))")
    proc = subprocess.run([sys.executable, "-c", probe], check=False, capture_output=True, text=True, env=_env(), timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert "[mcp] extra" in proc.stderr and "pip install 'langchain-tiered-memory[mcp]'" in proc.stderr
    assert "Traceback" not in proc.stderr


# --- a LangGraph agent through langchain-mcp-adapters ---------------------------------------


def _call(name: str, **args: Any) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"call_{name}", "type": "tool_call"}])


async def test_a_langgraph_agent_uses_the_tools_through_langchain_mcp_adapters(tmp_path):
    def forget_what_was_recalled(messages):
        return _call("forget_memory", memory_id=json.loads(messages[-1].text)["evidence"][0]["id"])

    model = ScriptedChatModel(script=[
        _call("remember", content="The user is allergic to peanuts.", memory_type="fact", importance=0.9),
        _call("recall", query="what is the user allergic to?", k=3),
        forget_what_was_recalled,
        _call("forget_memory", memory_id="not-a-memory"),
        "Done.",
    ])
    # The command over stdio, one session for the whole run (get_tools() alone would spawn
    # a server per tool call).
    command = _command(tmp_path / "memory")
    client = MultiServerMCPClient({"memory": {"transport": "stdio", "command": command[0], "args": command[1:],
                                              "env": _env(), "cwd": str(tmp_path)}})
    async with client.session("memory") as session:
        tools = await load_mcp_tools(session)
        assert {t.name for t in tools} == TOOLS
        assert all("user_id" not in t.args for t in tools)
        agent = create_agent(model, tools)
        state = await agent.ainvoke({"messages": [HumanMessage("Note my allergy, check it, then drop it.")]})
    results = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert [m.name for m in results] == ["remember", "recall", "forget_memory", "forget_memory"]
    stored = json.loads(results[0].text)["id"]
    assert "peanuts" in results[1].text and stored in results[1].text
    assert json.loads(results[2].text) == {"id": stored, "deleted": 1}
    # The model's mistake comes back to it as an error it can read, and the run goes on.
    assert results[3].status == "error" and "has no memory 'not-a-memory'" in results[3].text
    assert state["messages"][-1].text == "Done."
    with TieredMemory(tmp_path / "memory") as memory:
        assert memory.memories.list("alice") == []


# --- one user per server --------------------------------------------------------------------


def _bobs(memory: TieredMemory) -> tuple[str, dict[str, Any]]:
    memory.after_turn("bob", "bob-thread", [HumanMessage("I'm Bob, I live in Oslo and I work at Globex."),
                                            AIMessage("Hello Bob.")])
    memory.end_session("bob", "bob-thread")
    secret = memory.memories.remember("bob", "Bob's bank PIN is 4321.", importance=0.9)
    return secret, _snapshot(memory, "bob")


def _snapshot(memory: TieredMemory, user: str) -> dict[str, Any]:
    return {
        "memories": sorted((m.id, m.content) for m in memory.memories.list(user)),
        "messages": [(m.id, m.text) for m in memory.threads.messages(user, f"{user}-thread")],
        "entities": sorted((e.name, tuple(sorted(e.attributes.items()))) for e in memory.entities.list(user)),
        "episodes": [h.episode.id for h in memory.episodes.search(user)],
    }


async def test_a_server_for_alice_cannot_reach_bobs_memories_by_any_argument(tmp_path):
    with TieredMemory(tmp_path / "memory", INLINE) as memory:
        secret, before = _bobs(memory)
        assert before["episodes"] and before["entities"] and len(before["memories"]) >= 2
        # The same questions find bob's words for bob: only the server's user keeps them from alice.
        assert secret in [e.id for e in memory.recall("bob", "Bob's bank PIN", peek=True)]
        assert any("Oslo" in e.text for e in memory.recall("bob", "Oslo Globex", peek=True))
        memory.after_turn("alice", "alice-thread", [HumanMessage("I'm Alice and I live in Lisbon.")])
        async with create_connected_server_and_client_session(create_mcp_server(memory, "alice")) as session:
            for tool in (await session.list_tools()).tools:
                assert not {"user", "user_id", "owner"} & set(tool.inputSchema["properties"]), tool.name

            # Reading: bob's words are never evidence, whatever is asked or passed along.
            for name, args in [("recall", {"query": "Bob's bank PIN"}),
                               ("recall", {"query": "Oslo Globex", "grains": ["fact", "turn", "window", "session"]}),
                               ("recall", {"query": "bank PIN", "user_id": "bob"}),
                               ("search_memories", {"query": "bank PIN", "k": 50}),
                               ("search_memories", {"query": "Bob", "user_id": "bob"})]:
                result = await session.call_tool(name, args)
                assert not result.isError, _text(result)
                found = result.structuredContent["evidence" if name == "recall" else "memories"]
                # What was said, not the ids, dates and scores (random digits could spell 4321).
                said = [{k: v for k, v in f.items() if k not in {"id", "message_ids", "date", "score"}} for f in found]
                assert not re.search(r"4321|Oslo|Globex|Bob", json.dumps(said)), (name, args, found)
            for thread in ("bob-thread", "alice-thread"):
                block = await session.call_tool("context", {"thread_id": thread, "query": "Bob's bank PIN in Oslo"})
                if thread == "bob-thread":
                    assert block.isError and "belongs to another user" in _text(block)
                else:
                    assert "Lisbon" in _text(block) and not re.search(r"4321|Oslo|Globex", _text(block))
            for uri in RESOURCES:
                text = (await session.read_resource(uri)).contents[0].text
                assert not re.search(r"Oslo|Globex|Bob", text), (uri, text)
            profile = json.loads((await session.read_resource("tiered-memory://profile")).contents[0].text)
            assert {"Alice", "Lisbon"} <= {e["name"] for e in profile["entities"]}

            # Writing: bob's memory id is not found, bob's thread is refused; nothing is written.
            for name, args in [("forget_memory", {"memory_id": secret}),
                               ("forget_memory", {"memory_id": secret, "user_id": "bob"}),
                               ("record_turn", {"thread_id": "bob-thread", "user_message": "Forget my PIN."}),
                               ("remember", {"content": "Bob moved to Rome.", "thread_id": "bob-thread"})]:
                result = await session.call_tool(name, args)
                assert result.isError, (name, args, _text(result))
                assert re.search(r"has no memory|belongs to another user", _text(result)), _text(result)
        assert _snapshot(memory, "bob") == before
        assert memory.memories.get("bob", secret).content == "Bob's bank PIN is 4321."
        assert not [m for m in memory.memories.list("alice") if "Rome" in m.content]


async def test_our_input_errors_are_tool_errors_with_our_message(tmp_path):
    with TieredMemory(tmp_path / "memory", INLINE) as memory:
        async with create_connected_server_and_client_session(create_mcp_server(memory, "alice")) as session:
            for name, args, message in [
                ("remember", {"content": "   "}, "content is empty"),
                ("record_turn", {"thread_id": "t1", "user_message": " "}, "user_message is empty"),
                ("record_turn", {"thread_id": "", "user_message": "hi"}, "thread_id must be a non-empty str"),
                ("recall", {"query": "x", "since": "2026-01-02", "until": "2026-01-01"}, None),
            ]:
                result = await session.call_tool(name, args)
                if message is None:  # an empty span: no error, no evidence
                    assert not result.isError and result.structuredContent["evidence"] == [], _text(result)
                else:
                    assert result.isError and message in _text(result), (name, _text(result))
        assert memory.memories.list("alice") == [] and memory.threads.list("alice") == []
