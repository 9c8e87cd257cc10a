"""A 20-turn, two-thread conversation of one user, driven through any agent built on memory.

Used by the create_react_agent (hooks), create_agent (middleware) and StateGraph (nodes)
tests: the same user tells a fact in thread 1, asks about it in thread 2, the memory
directory is reopened in a new ``TieredMemory``, and both threads go on. Only the chat
model is scripted (:func:`responder`): it calls the ``clock`` tool when asked the time, and
answers every other message in a sentence.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool

from langchain_tiered_memory import MemoryConfig, TieredMemory
from scripted_model import ScriptedChatModel

USER = "alice"
PROMPT = "You are a concise assistant."
FACT = "My name is Alice, I live in Lisbon and I prefer green tea."
# Long enough that the small budget below evicts the start of thread 1.
FILLER = (
    "Here is some context about my week: meetings on the roadmap, a long review of the "
    "quarterly numbers, and notes from the design discussion number {n} that I want kept."
)
THREAD_1 = [FACT, FILLER.format(n=1), "What time is it?", FILLER.format(n=2), FILLER.format(n=3),
            "What time is it now?", FILLER.format(n=4), FILLER.format(n=5)]
THREAD_2 = ["What should I drink this afternoon?", FILLER.format(n=6), "What time is it?",
            FILLER.format(n=7), FILLER.format(n=8), FILLER.format(n=9), "What time is it again?",
            FILLER.format(n=10)]
AFTER_REOPEN = [("t1", "Where was I in this thread?"), ("t2", "What time is it?"),
                ("t1", FILLER.format(n=11)), ("t2", "Thanks, that is all.")]
TURNS = len(THREAD_1) + len(THREAD_2) + len(AFTER_REOPEN)
assert TURNS == 20

CONFIG = MemoryConfig(max_tokens=600, system_reserve=60, output_reserve=100, job_mode="inline")


@tool
def clock() -> str:
    """The current time."""
    return "It is 12:00."


def responder(messages: list[BaseMessage]) -> AIMessage:
    """What the scripted model answers: a tool call for the time, else a short reply."""
    last = messages[-1]
    if isinstance(last, ToolMessage):
        return AIMessage(f"The clock tool says: {last.content}")
    if isinstance(last, HumanMessage) and "time" in last.text.lower():
        return AIMessage("", tool_calls=[{"name": "clock", "args": {}, "id": f"call_{uuid.uuid4().hex[:12]}", "type": "tool_call"}])
    return AIMessage(f"Understood: {last.text[:40]}")


@dataclass
class Inputs:
    """Every model input of the scenario, by thread, in order."""

    by_thread: dict[str, list[list[BaseMessage]]] = field(default_factory=lambda: {"t1": [], "t2": []})
    all: list[list[BaseMessage]] = field(default_factory=list)
    states: dict[str, list[BaseMessage]] = field(default_factory=dict)
    last_t1_before_reopen: list[BaseMessage] = field(default_factory=list)
    reopened_from: int = 0


def config(thread_id: str) -> dict[str, Any]:
    return {"configurable": {"user_id": USER, "thread_id": thread_id}}


def run(
    data_dir: Path, make_agent: Callable[[TieredMemory, ScriptedChatModel], Any], model: ScriptedChatModel
) -> tuple[Inputs, TieredMemory]:
    """Run the 20 turns; returns the model inputs and the (reopened, still open) memory."""
    inputs = Inputs()

    def turn(agent: Any, thread_id: str, text: str) -> None:
        before = len(model.inputs)
        state = agent.invoke({"messages": [HumanMessage(text)]}, config(thread_id))
        new = model.inputs[before:]
        assert new, "the model was not called"
        inputs.by_thread[thread_id] += new
        inputs.all += new
        inputs.states[thread_id] = state["messages"]

    memory = TieredMemory(data_dir, CONFIG)
    agent = make_agent(memory, model)
    for text in THREAD_1:
        turn(agent, "t1", text)
    inputs.last_t1_before_reopen = inputs.by_thread["t1"][-1]
    for text in THREAD_2:
        turn(agent, "t2", text)
    memory.close()

    memory = TieredMemory(data_dir, CONFIG)
    agent = make_agent(memory, model)
    inputs.reopened_from = len(inputs.all)
    for thread_id, text in AFTER_REOPEN:
        turn(agent, thread_id, text)
    return inputs, memory


def text_of(messages: list[BaseMessage]) -> str:
    return "\n".join(m.text for m in messages)


def check(inputs: Inputs, memory: TieredMemory) -> None:
    """What every agent integration must show for the scenario."""
    budget = memory.config.context_budget
    for i, sent in enumerate(inputs.all):
        tokens = memory.admin.counter.count_messages(sent)
        assert tokens <= budget, f"model input {i} has {tokens} tokens, over the budget of {budget}"
        # One system message, the agent's instructions first (issue 41: not the agent's and ours).
        assert isinstance(sent[0], SystemMessage) and sent[0].text.startswith(PROMPT)
        assert sum(isinstance(m, SystemMessage) for m in sent) == 1, [type(m).__name__ for m in sent]

    # The fact told in thread 1 reaches the model in thread 2, whose own history never held it.
    first_t2 = text_of(inputs.by_thread["t2"][0])
    assert "green tea" in first_t2 and "Lisbon" in first_t2
    assert "<memory>" in first_t2
    assert not any(FACT in m.text for m in memory.threads.messages(USER, "t2"))

    # The budget did its job: thread 1's window dropped its oldest messages from the input,
    # while the log (and the checkpointed state) kept them.
    assert not any(m.text == FACT for m in inputs.last_t1_before_reopen if isinstance(m, HumanMessage))
    log = memory.threads.messages(USER, "t1")
    assert log[0].text == FACT

    # Every message of each thread's state is in the log once, tool calls and results included.
    for thread_id, state in inputs.states.items():
        logged = memory.threads.messages(USER, thread_id)
        assert [m.id for m in logged] == [m.id for m in state]
        assert any(isinstance(m, ToolMessage) for m in logged)

    # After reopening, the model still sees the thread's recent messages and the new input.
    after = inputs.all[inputs.reopened_from]
    assert after[-1].text == AFTER_REOPEN[0][1]
    assert any(m.text.startswith("Understood:") for m in after if isinstance(m, AIMessage))

    # Tool calls and their results stay paired in every input.
    for sent in inputs.all:
        answered = {m.tool_call_id for m in sent if isinstance(m, ToolMessage)}
        called = {c["id"] for m in sent if isinstance(m, AIMessage) for c in m.tool_calls}
        assert answered == called

    # One extraction job per turn, however many model calls its tool loop took.
    assert memory.admin.stats()["jobs"] == {"pending": 0, "waiting": 0, "running": 0, "stale": 0, "done": TURNS, "failed": 0}
