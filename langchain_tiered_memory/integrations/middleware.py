"""``TieredMemoryMiddleware``: tiered memory for LangChain v1's ``create_agent``.

    from langchain.agents import create_agent

    agent = create_agent(
        model, tools,
        middleware=[TieredMemoryMiddleware(memory)],
        checkpointer=memory.checkpointer,
    )
    agent.invoke({"messages": [("user", "hi")]},
                 {"configurable": {"user_id": "alice", "thread_id": "t1"}})

The same turn as the ``create_react_agent`` hooks (:mod:`.hooks`): ``before_model`` records
the state's messages the log does not hold yet (the user's input, tool results) before the
model runs; ``wrap_model_call`` sends the model the budgeted context (pinned system message,
memory block, window) through ``request.override(messages=...)``, so the graph's messages
are never rewritten; ``after_model`` records the model's message, and the turn's answer (no
tool calls) journals the one extraction job of the turn. ``user_id`` and ``thread_id`` come
from ``config["configurable"]``. The agent's ``system_prompt`` is folded with the
context's system messages into one, first (it should fit ``MemoryConfig.system_reserve``).

Needs LangChain v1 (``langchain>=1.0``), a dependency of the package.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, cast

try:
    from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
except ImportError as exc:  # pragma: no cover - exercised by a test that hides langchain
    raise ImportError(
        "TieredMemoryMiddleware needs LangChain v1's agents (langchain>=1.0), a dependency of "
        "langchain-tiered-memory: pip install 'langchain>=1.0'"
    ) from exc
from langchain_core.messages import SystemMessage
from langgraph.config import get_config
from langgraph.runtime import Runtime

from .hooks import (
    budgeted_context,
    ids_from_config,
    last_human_text,
    one_system_message,
    record_new,
    state_messages,
    turn_complete,
)

if TYPE_CHECKING:
    from langchain_core.messages import AnyMessage

    from ..memory import TieredMemory


class TieredMemoryMiddleware(AgentMiddleware):
    """Agent middleware giving a ``create_agent`` agent the memory of one :class:`TieredMemory`.

    Args:
        memory: The memory the agent's threads live in.
        memory_tools: Also give the agent the ``remember`` / ``recall`` / ``forget`` tools
            (:func:`~langchain_tiered_memory.integrations.tools.create_memory_tools`).
    """

    def __init__(self, memory: TieredMemory, *, memory_tools: bool = False) -> None:
        super().__init__()
        self.memory = memory
        if memory_tools:
            from .tools import create_memory_tools

            self.tools = create_memory_tools(memory)
        else:
            self.tools = []

    def before_model(self, state: AgentState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Record the new input (human and tool messages) before the model sees it."""
        user_id, thread_id = ids_from_config(get_config())
        record_new(self.memory, user_id, thread_id, state_messages(state), extract=False)
        return None

    async def abefore_model(self, state: AgentState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Async :meth:`before_model` (SQLite is blocking: it runs in a worker thread)."""
        return await asyncio.to_thread(self.before_model, state, runtime)

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> Any:
        """Call the model on the budgeted context instead of the whole thread."""
        return handler(self._budgeted(request))

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> Any:
        """Async :meth:`wrap_model_call`."""
        return await handler(await asyncio.to_thread(self._budgeted, request))

    def after_model(self, state: AgentState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Record the model's message; the turn's answer journals its extraction."""
        user_id, thread_id = ids_from_config(get_config())
        messages = state_messages(state)
        record_new(self.memory, user_id, thread_id, messages, extract=turn_complete(messages))
        return None

    async def aafter_model(self, state: AgentState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Async :meth:`after_model`."""
        return await asyncio.to_thread(self.after_model, state, runtime)

    def _budgeted(self, request: ModelRequest) -> ModelRequest:
        user_id, thread_id = ids_from_config(get_config())
        # No recording here: request.messages may hold id-less ToolMessages that create_agent
        # adds for malformed tool calls; after_model records them once the state gives ids.
        query = last_human_text(request.messages)
        # The context is LangChain's own message classes: system messages and the log's, as
        # messages_from_dict rebuilds them.
        messages = cast("list[AnyMessage]", budgeted_context(self.memory, user_id, thread_id, query))
        # One system message: the agent's system_prompt, then the pinned one and the memory
        # block (create_agent would put its own before ours as a second one; many providers
        # take one system prompt).
        folded = one_system_message(messages, request.system_message)
        if folded and isinstance(folded[0], SystemMessage):
            return request.override(system_message=folded[0], messages=cast("list[AnyMessage]", folded[1:]))
        return request.override(messages=cast("list[AnyMessage]", folded))


__all__ = ["TieredMemoryMiddleware"]
