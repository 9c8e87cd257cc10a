"""TieredMemoryMiddleware in LangChain v1's create_agent (the `agents` extra)."""

from __future__ import annotations

import importlib
import sys

import pytest
from langchain_core.messages import HumanMessage

import agent_scenario as scenario
from langchain_tiered_memory import ConfigError, TieredMemory
from scripted_model import ScriptedChatModel

pytest.importorskip("langchain.agents", reason="the `agents` extra (langchain>=1.0) is not installed")
from langchain.agents import create_agent  # noqa: E402

from langchain_tiered_memory.integrations.middleware import TieredMemoryMiddleware  # noqa: E402


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def agent_with_middleware(memory: TieredMemory, model, **kwargs):
    return create_agent(
        model,
        [scenario.clock],
        system_prompt=scenario.PROMPT,
        middleware=[TieredMemoryMiddleware(memory, **kwargs)],
        checkpointer=memory.checkpointer,
    )


def test_twenty_turns_in_two_threads_with_reopen(data_dir):
    model = ScriptedChatModel(default=scenario.responder)
    inputs, memory = scenario.run(data_dir, agent_with_middleware, model)
    try:
        scenario.check(inputs, memory)
    finally:
        memory.close()


async def test_async_agent(data_dir):
    model = ScriptedChatModel(default=scenario.responder)
    with TieredMemory(data_dir, scenario.CONFIG) as memory:
        agent = agent_with_middleware(memory, model)
        await agent.ainvoke({"messages": [HumanMessage(scenario.FACT)]}, scenario.config("t1"))
        state = await agent.ainvoke({"messages": [HumanMessage("What time is it?")]}, scenario.config("t1"))
        assert [m.id for m in memory.threads.messages("alice", "t1")] == [m.id for m in state["messages"]]
        await agent.ainvoke({"messages": [HumanMessage("Any drink ideas?")]}, scenario.config("t2"))
        assert "green tea" in scenario.text_of(model.inputs[-1])
        assert memory.admin.stats()["jobs"]["done"] == 3


def test_missing_user_id_raises_a_clear_error(data_dir):
    model = ScriptedChatModel(default=scenario.responder)
    with TieredMemory(data_dir, scenario.CONFIG) as memory:
        agent = agent_with_middleware(memory, model)
        with pytest.raises(ConfigError, match=r"user_id missing from config\['configurable'\]"):
            agent.invoke({"messages": [HumanMessage("hi")]}, {"configurable": {"thread_id": "t1"}})
        assert model.calls == 0


def test_memory_tools_can_come_with_the_middleware(data_dir):
    model = ScriptedChatModel(
        script=[
            scenario.AIMessage("", tool_calls=[{"name": "remember", "id": "c1", "type": "tool_call",
                                                "args": {"content": "The user's dog is called Pixel.", "importance": 0.8}}]),
            "Noted.",
        ]
    )
    with TieredMemory(data_dir, scenario.CONFIG) as memory:
        agent = agent_with_middleware(memory, model, memory_tools=True)
        state = agent.invoke({"messages": [HumanMessage("Keep my dog's name in mind.")]}, scenario.config("t1"))
        bound = {t["function"]["name"] for t in model.call_kwargs[0]["tools"]}
        assert bound == {"clock", "remember", "recall", "forget"}
        assert state["messages"][2].text.startswith("Remembered as memory ")
        assert [e.content for e in memory.memories.list("alice")] == ["The user's dog is called Pixel."]


def test_without_langchain_the_error_says_what_to_install(monkeypatch):
    # langchain is a core dependency now (issue 41): a venv that lost it is told to reinstall it.
    monkeypatch.delitem(sys.modules, "langchain_tiered_memory.integrations.middleware")
    monkeypatch.setitem(sys.modules, "langchain.agents.middleware", None)
    with pytest.raises(ImportError, match=r"pip install 'langchain>=1\.0'"):
        importlib.import_module("langchain_tiered_memory.integrations.middleware")


def test_the_model_gets_one_system_message_the_agents_prompt_first(data_dir):
    # create_agent puts its system_prompt before the messages the middleware sends: with the
    # context's pinned message and memory block that made two or three system messages.
    model = ScriptedChatModel(default="Noted.")
    with TieredMemory(data_dir, scenario.CONFIG) as m:
        m.memories.remember(scenario.USER, "The user prefers green tea.")
        agent = agent_with_middleware(m, model)
        agent.invoke({"messages": [HumanMessage("What should I drink?")]}, scenario.config("t1"))
        sent = model.inputs[-1]
    systems = [i for i, msg in enumerate(sent) if msg.type == "system"]
    assert systems == [0], [msg.type for msg in sent]
    assert sent[0].text.startswith(scenario.PROMPT) and "<memory>" in sent[0].text and "green tea" in sent[0].text
