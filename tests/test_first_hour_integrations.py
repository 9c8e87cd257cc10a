"""Issue 41, point 5: what a user meets in the first hour with the integrations, on real
components (a memory directory, the default embedder, LangGraph's own agent and graphs); only
the chat model is scripted.

1. ``create_react_agent`` with our hooks sends the model exactly one system message.
2. ``TieredChatMessageHistory.messages`` is the conversation, without the memory block.
3. The same fact put in the LangGraph store under two keys is found once.
"""

from __future__ import annotations

import warnings

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables.history import RunnableWithMessageHistory
from langgraph.graph import START, StateGraph

import agent_scenario as scenario
from langchain_tiered_memory import (
    InvalidInputError,
    MemoryConfig,
    MemoryState,
    TieredChatMessageHistory,
    TieredMemory,
    post_model_hook,
    pre_model_hook,
    recall_node,
)
from scripted_model import ScriptedChatModel

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # create_react_agent is deprecated in LangGraph 1.0
    from langgraph.prebuilt import create_react_agent

FACT = "Alice is allergic to peanuts"
PROMPT = "You are a careful cooking assistant."
PINNED = "Always answer in French."
CONFIG = MemoryConfig(job_mode="inline")


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


@pytest.fixture
def memory(tmp_path):
    with TieredMemory(tmp_path, CONFIG) as m:
        m.memories.remember("alice", FACT)
        yield m


def the_one_system_message(sent):
    """The model input's system message, checked to be the only one and first."""
    systems = [m for m in sent if isinstance(m, SystemMessage)]
    assert len(systems) == 1, [m.text[:40] for m in systems]
    assert sent[0] is systems[0]
    return systems[0].text


def react_agent(memory, model, **hook):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return create_react_agent(model, [scenario.clock], pre_model_hook=pre_model_hook(memory, **hook),
                                  post_model_hook=post_model_hook(memory), checkpointer=memory.checkpointer)


# --- 1. one system message -------------------------------------------------------------------


def test_react_agent_without_a_prompt_folds_the_pinned_message_and_the_memory_into_one(memory):
    model = ScriptedChatModel(default=scenario.responder)
    agent = react_agent(memory, model)
    question = "Is peanut butter ok at this time?"
    agent.invoke({"messages": [SystemMessage(PINNED), HumanMessage(question)]}, scenario.config("t1"))
    assert model.calls == 2  # the clock tool's loop: each model call is checked
    for sent in model.inputs:
        text = the_one_system_message(sent)
        assert text.startswith(f"{PINNED}\n\n<memory>") and "peanuts" in text
        assert sent[-1].text == question or sent[-1].type == "tool"


def test_react_agent_with_a_prompt_puts_it_first_then_the_memory(memory):
    model = ScriptedChatModel(default=scenario.responder)
    agent = react_agent(memory, model, prompt=PROMPT)
    agent.invoke({"messages": [HumanMessage("What should I avoid eating?")]}, scenario.config("t1"))
    agent.invoke({"messages": [SystemMessage(PINNED), HumanMessage("Is peanut butter ok at this time?")]},
                 scenario.config("t2"))
    assert model.calls == 3
    first = the_one_system_message(model.inputs[0])
    assert first.startswith(f"{PROMPT}\n\n<memory>") and "peanuts" in first
    for sent in model.inputs[1:]:
        assert the_one_system_message(sent).startswith(f"{PROMPT}\n\n{PINNED}\n\n<memory>")
    # The prompt is the agent's, not the thread's: it is not stored.
    assert PROMPT not in scenario.text_of(memory.threads.messages("alice", "t2"))


def test_a_prompt_that_is_not_text_is_refused_when_the_hook_is_built(memory):
    with pytest.raises(InvalidInputError, match="prompt must be a str or a SystemMessage"):
        pre_model_hook(memory, prompt=["You are nice."])


def test_the_recall_node_writes_one_system_message(memory):
    builder = StateGraph(MemoryState)
    builder.add_node("recall", recall_node(memory, prompt=SystemMessage(PROMPT)))
    builder.add_edge(START, "recall")
    state = builder.compile().invoke({"messages": [HumanMessage("What should I avoid eating?")]},
                                     scenario.config("t1"))
    context = state["memory_context"]
    text = the_one_system_message(context)
    assert text.startswith(f"{PROMPT}\n\n<memory>") and "peanuts" in text
    assert context[-1].text == "What should I avoid eating?"


# --- 2. the chat history is the history ------------------------------------------------------


async def test_chat_history_messages_are_the_stored_conversation(memory):
    history = TieredChatMessageHistory(memory, "alice", "s1")
    turn = [HumanMessage("What should I avoid eating?"), AIMessage("Peanuts, as you told me.")]
    history.add_messages(turn)
    assert [(m.type, m.text) for m in history.messages] == [(m.type, m.text) for m in turn]
    assert [m.text for m in await history.aget_messages()] == [m.text for m in turn]
    # The memory block is on its own, named, path: what before_turn sends a model.
    context = history.context_messages
    assert isinstance(context[0], SystemMessage) and context[0].text.startswith("<memory>")
    assert "peanuts" in context[0].text and [m.text for m in context[1:]] == [m.text for m in turn]
    with_memory = TieredChatMessageHistory(memory, "alice", "s1", with_memory=True)
    assert [m.text for m in with_memory.messages] == [m.text for m in context]
    assert [m.text for m in await with_memory.aget_messages()] == [m.text for m in context]


def test_runnable_with_message_history_sends_the_memory_when_asked(memory):
    prompt = ChatPromptTemplate.from_messages(
        [("system", "You are terse."), MessagesPlaceholder("history"), ("human", "{question}")]
    )

    def chain(model, **kwargs):
        return RunnableWithMessageHistory(
            prompt | model, lambda session_id: TieredChatMessageHistory(memory, "alice", session_id, **kwargs),
            input_messages_key="question", history_messages_key="history",
        )

    # RunnableWithMessageHistory reads the history before it stores the question, so the
    # memory block recalls for the thread's previous question.
    asked = ScriptedChatModel(default="Noted.")
    for question in ["What should I avoid eating?", "Thanks."]:
        chain(asked, with_memory=True).invoke({"question": question}, {"configurable": {"session_id": "s1"}})
    sent = asked.inputs[-1]
    assert sent[1].type == "system" and sent[1].text.startswith("<memory>") and "peanuts" in sent[1].text
    assert [m.text for m in sent[2:]] == ["What should I avoid eating?", "Noted.", "Thanks."]

    plain = ScriptedChatModel(default="Noted.")
    chain(plain).invoke({"question": "And now?"}, {"configurable": {"session_id": "s1"}})
    assert [m.text for m in plain.inputs[-1]] == [
        "You are terse.", "What should I avoid eating?", "Noted.", "Thanks.", "Noted.", "And now?"
    ]
    assert [m.text for m in memory.threads.messages("alice", "s1")][-2:] == ["And now?", "Noted."]


# --- 3. one fact under two store keys --------------------------------------------------------


def test_the_same_fact_under_two_keys_is_found_once_and_each_key_keeps_its_item(tmp_path):
    with TieredMemory(tmp_path, CONFIG) as memory:
        store, ns = memory.store, ("memories", "alice")
        store.put(ns, "k1", {"content": "I am allergic to peanuts"})
        store.put(ns, "k2", {"content": "I am allergic to peanuts", "source": "form"})
        store.put(ns, "k3", {"content": "I'm allergic to peanuts."})
        store.put(ns, "other", {"content": "I am allergic to shellfish"})

        hits = store.search(ns, query="what am I allergic to?")
        peanuts = [h for h in hits if "peanuts" in h.value["content"]]
        assert len(peanuts) == 1 and {h.key for h in hits} >= {"other"}
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)

        # BaseStore's contract: each key is its own item, whatever the others hold.
        assert store.get(ns, "k2").value == {"content": "I am allergic to peanuts", "source": "form"}
        assert store.get(ns, "k3").value == {"content": "I'm allergic to peanuts."}
        assert {i.key for i in store.search(ns)} == {"k1", "k2", "k3", "other"}  # a listing shows each key
        store.delete(ns, peanuts[0].key)
        assert store.get(ns, peanuts[0].key) is None
        left = [h for h in store.search(ns, query="what am I allergic to?") if "peanuts" in h.value["content"]]
        assert len(left) == 1 and store.get(ns, left[0].key) is not None
        store.put(ns, left[0].key, {"content": "I am allergic to tree nuts"})
        rest = {"k1", "k2", "k3"} - {peanuts[0].key, left[0].key}
        assert all("peanuts" in store.get(ns, key).value["content"] for key in rest)
