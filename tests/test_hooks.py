"""pre_model_hook(memory) / post_model_hook(memory) in LangGraph's create_react_agent."""

from __future__ import annotations

import functools

import warnings

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

import agent_scenario as scenario
from langchain_tiered_memory import (
    ConfigError,
    InvalidIdentifierError,
    MemoryConfig,
    ThreadOwnershipError,
    TieredMemory,
    post_model_hook,
    pre_model_hook,
)
from scripted_model import ScriptedChatModel

with warnings.catch_warnings():
    # Deprecated in LangGraph 1.0 (removal in 2.0) in favour of create_agent; still widely used.
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def react_agent(memory: TieredMemory, model, *, checkpointer=True, tools=(scenario.clock,), hook_prompt=False):
    """The agent; ``hook_prompt``: its prompt goes to the hook (one system message), not to
    ``create_react_agent`` (which sends it as a system message of its own, before ours)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return create_react_agent(
            model,
            list(tools),
            prompt=None if hook_prompt else scenario.PROMPT,
            pre_model_hook=pre_model_hook(memory, prompt=scenario.PROMPT if hook_prompt else None),
            post_model_hook=post_model_hook(memory),
            checkpointer=memory.checkpointer if checkpointer else None,
        )


def test_twenty_turns_in_two_threads_with_reopen(data_dir):
    model = ScriptedChatModel(default=scenario.responder)
    inputs, memory = scenario.run(data_dir, functools.partial(react_agent, hook_prompt=True), model)
    try:
        scenario.check(inputs, memory)
    finally:
        memory.close()


def test_without_a_checkpointer_the_log_carries_the_thread(data_dir):
    model = ScriptedChatModel(default=scenario.responder)
    with TieredMemory(data_dir, scenario.CONFIG) as memory:
        agent = react_agent(memory, model, checkpointer=False)
        for text in ["I am planning a trip to Kyoto.", "It starts next Monday.", "What time is it?"]:
            state = agent.invoke({"messages": [HumanMessage(text)]}, scenario.config("t1"))
        # The state held only this turn; the model saw the earlier turns all the same.
        assert [type(m) for m in state["messages"]][0] is HumanMessage
        assert "Kyoto" not in scenario.text_of(state["messages"])
        assert "Kyoto" in scenario.text_of(model.inputs[-1])
        log = memory.threads.messages("alice", "t1")
        assert [m.type for m in log] == ["human", "ai", "human", "ai", "human", "ai", "tool", "ai"]
        assert len({m.id for m in log}) == len(log)


def test_missing_ids_in_config_raise_a_clear_error(data_dir):
    model = ScriptedChatModel(default=scenario.responder)
    with TieredMemory(data_dir, scenario.CONFIG) as memory:
        agent = react_agent(memory, model, checkpointer=False)
        with pytest.raises(ConfigError) as info:
            agent.invoke({"messages": [HumanMessage("hi")]}, {"configurable": {"thread_id": "t1"}})
        assert "user_id missing from config['configurable']" in str(info.value)
        assert 'config={"configurable": {"user_id": ..., "thread_id": ...}}' in str(info.value)
        with pytest.raises(ConfigError, match="user_id and thread_id missing"):
            agent.invoke({"messages": [HumanMessage("hi")]})
        with pytest.raises(InvalidIdentifierError, match="user_id must be a non-empty str"):
            agent.invoke({"messages": [HumanMessage("hi")]}, {"configurable": {"user_id": 7, "thread_id": "t1"}})
        assert model.calls == 0
        assert memory.threads.list("alice") == []


def test_the_users_message_is_stored_before_the_model_runs(data_dir):
    model = ScriptedChatModel(script=[RuntimeError("model API down"), "Back again."])
    with TieredMemory(data_dir, scenario.CONFIG) as memory:
        agent = react_agent(memory, model)
        with pytest.raises(RuntimeError, match="model API down"):
            agent.invoke({"messages": [HumanMessage("Please remember my flight is at 9.")]}, scenario.config("t1"))
        assert [m.text for m in memory.threads.messages("alice", "t1")] == ["Please remember my flight is at 9."]
        # The next turn goes on from there, and its one extraction covers both messages.
        agent.invoke({"messages": [HumanMessage("Are you there?")]}, scenario.config("t1"))
        assert [m.type for m in memory.threads.messages("alice", "t1")] == ["human", "human", "ai"]
        assert "flight is at 9" in scenario.text_of(model.inputs[-1])
        assert memory.admin.stats()["jobs"]["done"] == 1


def test_another_users_thread_is_refused(data_dir):
    model = ScriptedChatModel(default=scenario.responder)
    with TieredMemory(data_dir, scenario.CONFIG) as memory:
        agent = react_agent(memory, model)
        agent.invoke({"messages": [HumanMessage("hello")]}, scenario.config("t1"))
        with pytest.raises(ThreadOwnershipError):
            agent.invoke({"messages": [HumanMessage("hello")]}, {"configurable": {"user_id": "bob", "thread_id": "t1"}})
        assert memory.threads.list("bob") == []


def test_a_thread_system_message_is_pinned_and_the_budget_holds(data_dir):
    config = MemoryConfig(max_tokens=500, system_reserve=80, output_reserve=50, job_mode="inline")
    model = ScriptedChatModel(default=scenario.responder)
    with TieredMemory(data_dir, config) as memory:
        agent = react_agent(memory, model, hook_prompt=True)
        agent.invoke(
            {"messages": [SystemMessage("Always answer in French."), HumanMessage(scenario.FILLER.format(n=0))]},
            scenario.config("t1"),
        )
        for n in range(1, 10):
            agent.invoke({"messages": [HumanMessage(scenario.FILLER.format(n=n))]}, scenario.config("t1"))
        last = model.inputs[-1]
        # One system message: the agent's prompt, then the pinned system message, though older
        # turns were evicted, then the memory block.
        assert [type(m) for m in last].count(SystemMessage) == 1 and isinstance(last[0], SystemMessage)
        assert last[0].text.startswith(f"{scenario.PROMPT}\n\nAlways answer in French.\n\n<memory>")
        assert not any(m.text == scenario.FILLER.format(n=0) for m in last if isinstance(m, HumanMessage))
        assert all(memory.admin.counter.count_messages(i) <= config.context_budget for i in model.inputs)


async def test_async_agent(data_dir):
    model = ScriptedChatModel(default=scenario.responder)
    with TieredMemory(data_dir, scenario.CONFIG) as memory:
        agent = react_agent(memory, model)
        await agent.ainvoke({"messages": [HumanMessage(scenario.FACT)]}, scenario.config("t1"))
        state = await agent.ainvoke({"messages": [HumanMessage("What time is it?")]}, scenario.config("t1"))
        assert isinstance(state["messages"][-1], AIMessage)
        assert [m.id for m in memory.threads.messages("alice", "t1")] == [m.id for m in state["messages"]]
        await agent.ainvoke({"messages": [HumanMessage("Any drink ideas?")]}, scenario.config("t2"))
        assert "green tea" in scenario.text_of(model.inputs[-1])


def test_the_old_hook_accessors_warn_and_are_cached_per_memory(data_dir):
    with TieredMemory(data_dir) as memory:
        with pytest.warns(DeprecationWarning, match=r"use pre_model_hook\(memory\)"):
            pre = memory.pre_model_hook
            assert pre is memory.pre_model_hook
        with pytest.warns(DeprecationWarning, match=r"use post_model_hook\(memory\)"):
            post = memory.post_model_hook
            assert post is memory.post_model_hook
        assert pre is not post
