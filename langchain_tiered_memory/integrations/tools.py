"""Tools an agent uses to edit its own long-term memory: ``remember``, ``recall``, ``forget``.

    tools = create_memory_tools(memory)
    agent = create_react_agent(model, tools, pre_model_hook=pre_model_hook(memory), ...)

As Letta's agents do, the model decides what to keep. Each tool acts for the user in
``config["configurable"]["user_id"]`` of the run (the config LangChain injects into tools);
no tool takes a user id from the model, so a model cannot read or change another user's
memories. ``remember`` ties the memory to the run's ``thread_id`` when there is one, so
forgetting that thread forgets it too. Answers are plain text with the memory ids and
scores, for the model to read. A mistake the model can fix (an empty text, an unknown id)
comes back as the tool's answer; a run without ``user_id`` raises :class:`ConfigError`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from pydantic import Field

from ..entries import check_id
from ..errors import ConfigError, InvalidInputError
from ..vocabulary import MEMORY_TYPES, MemoryType
from .hooks import _CONFIG_EXAMPLE

if TYPE_CHECKING:
    from ..memory import TieredMemory

#: The memory types as the ``remember`` tool's schema describes them to the model.
_KINDS_TEXT = ", ".join(MEMORY_TYPES[:-1]) + " or " + MEMORY_TYPES[-1]


def _user(config: RunnableConfig | None) -> tuple[str, str | None]:
    """The run's user id (required) and thread id (optional)."""
    configurable = (config or {}).get("configurable") or {}
    user_id = configurable.get("user_id")
    if user_id in (None, ""):
        raise ConfigError(
            "user_id missing from config['configurable']: the memory tools act for the run's "
            f"user; invoke the agent with {_CONFIG_EXAMPLE}"
        )
    check_id("user_id", user_id)
    thread_id = configurable.get("thread_id")
    return user_id, thread_id if isinstance(thread_id, str) and thread_id.strip() else None


def create_memory_tools(memory: TieredMemory) -> list[BaseTool]:
    """The ``remember``, ``recall`` and ``forget`` tools over ``memory`` (see the module doc)."""

    def remember(
        content: Annotated[str, Field(description="The memory, one self-contained statement about the user or the work.")],
        config: RunnableConfig,
        memory_type: Annotated[MemoryType, Field(description=f"{_KINDS_TEXT}.")] = "fact",
        importance: Annotated[float, Field(ge=0.0, le=1.0, description="0 (trivial) to 1 (essential).")] = 0.5,
    ) -> str:
        user_id, thread_id = _user(config)
        try:
            memory_id = memory.memories.remember(user_id, content, memory_type, importance, session_id=thread_id)
        except InvalidInputError as exc:
            raise ToolException(f"Nothing was stored: {exc}") from exc
        return f"Remembered as memory {memory_id} ({memory_type}, importance {importance:.1f})."

    def recall(
        query: Annotated[str, Field(description="What to look for, in a few words.")],
        config: RunnableConfig,
        k: Annotated[int, Field(ge=1, le=50, description="How many memories at most.")] = 5,
    ) -> str:
        user_id, _ = _user(config)
        try:
            hits = memory.memories.search(user_id, query, k=k)
        except InvalidInputError as exc:
            raise ToolException(f"Recall failed: {exc}") from exc
        if not hits:
            return f"No memory matches {query!r}."
        lines = [
            f"- id {h.entry.id} | score {h.score:.2f} | {h.entry.memory_type}, importance "
            f"{h.entry.importance:.1f} | {' '.join(h.entry.content.split())}"
            for h in hits
        ]
        return "\n".join([f"Memories matching {query!r}, best first:", *lines])

    def forget(
        memory_id: Annotated[str, Field(description="The id of the memory, as recall shows it.")],
        config: RunnableConfig,
    ) -> str:
        user_id, _ = _user(config)
        deleted = memory.memories.forget(user_id=user_id, memory_id=memory_id)["memories"]
        if not deleted:
            raise ToolException(f"There is no memory {memory_id!r}; nothing was deleted. Use recall to find ids.")
        return f"Forgot memory {memory_id}."

    described: list[tuple[Callable[..., str], str]] = [
        (remember, "Store a long-term memory about the user that should outlive this conversation."),
        (recall, "Search your long-term memories of the user; returns ids, scores and contents."),
        (forget, "Delete one long-term memory by its id (from recall), e.g. when it is wrong or outdated."),
    ]
    return [
        StructuredTool.from_function(func, name=func.__name__, description=text, handle_tool_error=True)
        for func, text in described
    ]


__all__ = ["create_memory_tools"]
