"""Plain LangGraph nodes for any ``StateGraph``: recall before the model, record after it.

    builder = StateGraph(MemoryState)
    builder.add_node("recall", recall_node(memory))
    builder.add_node("model", lambda state: {"messages": [model.invoke(state["memory_context"])]})
    builder.add_node("record", record_node(memory))
    builder.add_edge(START, "recall")
    builder.add_edge("recall", "model")
    builder.add_edge("model", "record")
    graph = builder.compile(checkpointer=memory.checkpointer)
    graph.invoke({"messages": [("user", "hi")]},
                 {"configurable": {"user_id": "alice", "thread_id": "t1"}})

The state (:class:`MemoryState`, or any schema with the same two keys):

- ``messages`` — the thread, reduced with ``add_messages`` (which gives each message the id
  memory matches it by). It may hold the whole thread (with a checkpointer) or only the new
  input; it is never rewritten.
- ``memory_context`` — written by the recall node: what to send the model this step (one
  system message holding ``prompt``, the pinned system message and the fenced memory block,
  then the window ending with the new input), within ``MemoryConfig``'s budget. Each recall
  replaces it. Give your instructions as ``recall_node(memory, prompt=...)`` rather than
  prepending a system message of your own: the model then gets exactly one.

The recall node first stores the state's messages the log does not hold yet (the user's
input, tool results), so they are durable before the model runs. The record node stores
the rest (the model's answer); when the newest message is a model answer without tool calls
it journals the turn's one extraction job. In a tool loop, route tool results back through
the recall node. ``user_id`` and ``thread_id`` come from ``config["configurable"]``. The
nodes are sync; async graphs run them in a worker thread.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

from langchain_core.messages import AnyMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph.message import add_messages
from typing_extensions import NotRequired, TypedDict

from .hooks import (
    check_prompt,
    ids_from_config,
    model_input,
    record_new,
    state_messages,
    turn_complete,
)

if TYPE_CHECKING:
    from ..memory import TieredMemory

#: The state key the recall node writes.
MEMORY_CONTEXT = "memory_context"


class MemoryState(TypedDict):
    """Graph state for :func:`recall_node` and :func:`record_node` (see the module doc)."""

    messages: Annotated[list[AnyMessage], add_messages]
    memory_context: NotRequired[list[AnyMessage]]


def recall_node(
    memory: TieredMemory,
    *,
    messages_key: str = "messages",
    output_key: str = MEMORY_CONTEXT,
    prompt: str | SystemMessage | None = None,
) -> Callable[[Any, RunnableConfig], dict[str, Any]]:
    """A node that records the new input and writes the budgeted context to ``output_key``;
    ``prompt`` (your instructions) opens its one system message, before the memory block."""
    check_prompt(prompt)

    def recall(state: Any, config: RunnableConfig) -> dict[str, Any]:
        user_id, thread_id = ids_from_config(config)
        messages = state_messages(state, messages_key)
        return {output_key: model_input(memory, user_id, thread_id, messages, prompt)}

    return recall


def record_node(
    memory: TieredMemory, *, messages_key: str = "messages"
) -> Callable[[Any, RunnableConfig], dict[str, Any]]:
    """A node that records the state's messages not yet in the log; returns no update."""

    def record(state: Any, config: RunnableConfig) -> dict[str, Any]:
        user_id, thread_id = ids_from_config(config)
        messages = state_messages(state, messages_key)
        record_new(memory, user_id, thread_id, messages, extract=turn_complete(messages))
        return {}

    return record


__all__ = ["MEMORY_CONTEXT", "MemoryState", "recall_node", "record_node"]
