"""recall_node / record_node in a hand-built StateGraph."""

from __future__ import annotations

import operator
from typing import Annotated

import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage
from langgraph.graph import START, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from typing_extensions import TypedDict

import agent_scenario as scenario
from langchain_tiered_memory import InvalidMessageError, TieredMemory
from langchain_tiered_memory.integrations.nodes import MemoryState, recall_node, record_node
from scripted_model import ScriptedChatModel


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def memory_graph(memory: TieredMemory, model):
    """recall → model → record, with a tool loop back through recall."""
    bound = model.bind_tools([scenario.clock])

    def call_model(state: MemoryState) -> dict:
        # The context opens with one system message: the prompt, then the memory block.
        return {"messages": [bound.invoke(state["memory_context"])]}

    builder = StateGraph(MemoryState)
    builder.add_node("recall", recall_node(memory, prompt=scenario.PROMPT))
    builder.add_node("model", call_model)
    builder.add_node("record", record_node(memory))
    builder.add_node("tools", ToolNode([scenario.clock]))
    builder.add_edge(START, "recall")
    builder.add_edge("recall", "model")
    builder.add_edge("model", "record")
    builder.add_conditional_edges("record", tools_condition)
    builder.add_edge("tools", "recall")
    return builder.compile(checkpointer=memory.checkpointer)


def test_twenty_turns_in_two_threads_with_reopen(data_dir):
    model = ScriptedChatModel(default=scenario.responder)
    inputs, memory = scenario.run(data_dir, memory_graph, model)
    try:
        scenario.check(inputs, memory)
    finally:
        memory.close()


def test_recall_writes_the_context_and_leaves_messages_alone(data_dir):
    model = ScriptedChatModel(default=scenario.responder)
    with TieredMemory(data_dir, scenario.CONFIG) as memory:
        graph = memory_graph(memory, model)
        state = graph.invoke({"messages": [HumanMessage(scenario.FACT)]}, scenario.config("t1"))
        assert [m.type for m in state["messages"]] == ["human", "ai"]
        assert [m.text for m in state["memory_context"]] == [scenario.PROMPT, scenario.FACT]
        state = graph.invoke({"messages": [HumanMessage("Anything new?")]}, scenario.config("t1"))
        assert state["memory_context"][0].text.startswith(f"{scenario.PROMPT}\n\n<memory>")
        assert state["memory_context"][-1].text == "Anything new?"


def test_messages_without_ids_are_refused(data_dir):
    class PlainState(TypedDict):
        messages: Annotated[list[AnyMessage], operator.add]

    builder = StateGraph(PlainState)
    with TieredMemory(data_dir, scenario.CONFIG) as memory:
        builder.add_node("record", record_node(memory))
        builder.add_edge(START, "record")
        graph = builder.compile()
        with pytest.raises(InvalidMessageError, match="add_messages"):
            graph.invoke({"messages": [AIMessage("hello")]}, scenario.config("t1"))
        assert memory.threads.list("alice") == []
