"""Tools an agent uses to edit its own long-term memory: ``remember``, ``recall``, ``forget``
(or, ``style="langmem"``, LangMem's ``manage_memory`` and ``search_memory``).

    tools = create_memory_tools(memory)
    agent = create_react_agent(model, tools, pre_model_hook=pre_model_hook(memory), ...)

As Letta's agents do, the model decides what to keep. Each tool acts for the user in
``config["configurable"]["user_id"]`` of the run (the config LangChain injects into tools);
no tool takes a user id from the model, so a model cannot read or change another user's
memories. ``remember`` ties the memory to the run's ``thread_id`` when there is one, so
forgetting that thread forgets it too. Answers are plain text with the memory ids and
scores, for the model to read. A mistake the model can fix (an empty text, an unknown id)
comes back as the tool's answer; a run without ``user_id`` raises :class:`ConfigError`.

``style="langmem"`` gives the tools LangMem's ``create_manage_memory_tool`` and
``create_search_memory_tool`` make, with their names, argument schemas and answers, over the
memory's store at ``("memories", user_id)`` (what LangMem's ``namespace=("memories",
"{langgraph_user_id}")`` names), so an agent written for LangMem moves over unchanged: its
config's ``langgraph_user_id`` is read when there is no ``user_id``, and no store needs to be
compiled into the graph. One difference, on purpose: updating or deleting an id that is not
one of the user's memories is answered as an error (LangMem's tools create or ignore it).
"""

from __future__ import annotations

import asyncio
import functools
import json
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from pydantic import BaseModel, Field

from ..entries import check_id
from ..errors import ConfigError, InvalidInputError, TieredMemoryError
from ..vocabulary import MEMORY_TYPES, MemoryType
from .hooks import _CONFIG_EXAMPLE

if TYPE_CHECKING:
    from ..memory import TieredMemory

#: The memory types as the ``remember`` tool's schema describes them to the model.
_KINDS_TEXT = ", ".join(MEMORY_TYPES[:-1]) + " or " + MEMORY_TYPES[-1]


#: The tool sets :func:`create_memory_tools` makes.
ToolStyle = Literal["default", "langmem"]


def _user(config: RunnableConfig | None, *, langmem: bool = False) -> tuple[str, str | None]:
    """The run's user id (required; LangMem's ``langgraph_user_id`` too, for its tools) and
    thread id (optional)."""
    configurable = (config or {}).get("configurable") or {}
    user_id = configurable.get("user_id")
    if langmem and user_id in (None, ""):
        user_id = configurable.get("langgraph_user_id")
    if user_id in (None, ""):
        also = " (or langgraph_user_id, as LangMem's tools read)" if langmem else ""
        raise ConfigError(
            f"user_id missing from config['configurable']{also}: the memory tools act for the "
            f"run's user; invoke the agent with {_CONFIG_EXAMPLE}"
        )
    check_id("user_id", user_id)
    thread_id = configurable.get("thread_id")
    return user_id, thread_id if isinstance(thread_id, str) and thread_id.strip() else None


def create_memory_tools(memory: TieredMemory, *, style: ToolStyle = "default") -> list[BaseTool]:
    """The ``remember``, ``recall`` and ``forget`` tools over ``memory``; with
    ``style="langmem"``, LangMem's ``manage_memory`` and ``search_memory`` (module doc)."""
    if style == "langmem":
        return _langmem_tools(memory)
    if style != "default":
        raise InvalidInputError(f"unknown tool style {style!r}: use 'default' (remember, recall, forget) or 'langmem'")

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


# --- LangMem's tools --------------------------------------------------------------------

_MANAGE_DESCRIPTION = """Create, update, or delete a memory to persist across conversations.
Include the MEMORY ID when updating or deleting a MEMORY. Omit when creating a new MEMORY - it will be created for you.
Call this tool when you:

1. Identify a new USER preference.
2. Receive an explicit USER request to remember something or otherwise alter your behavior.
3. Are working and want to record important context.
4. Identify that an existing MEMORY is incorrect or outdated."""
_SEARCH_DESCRIPTION = "Search your long-term memories for information relevant to your current context."


class _LangMemTool(StructuredTool):
    """A tool whose call schema always lists ``required`` (LangMem's do: some providers insist)."""

    @functools.cached_property
    def tool_call_schema(self) -> Any:
        schema = super().tool_call_schema
        if isinstance(schema, type) and issubclass(schema, BaseModel):
            schema.model_config["json_schema_extra"] = _with_required
        return schema


def _with_required(schema: dict[str, Any]) -> None:
    schema.setdefault("required", [])


def _dumps(items: list[dict[str, Any]]) -> str:
    # LangMem's answer: the items as compact JSON (orjson's layout).
    return json.dumps(items, ensure_ascii=False, separators=(",", ":"))


def _langmem_tools(memory: TieredMemory) -> list[BaseTool]:
    def namespace(config: RunnableConfig) -> tuple[str, str]:
        return ("memories", _user(config, langmem=True)[0])

    def check(action: str, id: uuid.UUID | None, content: str | None, config: RunnableConfig) -> tuple[str, str]:
        if action not in ("create", "update", "delete"):
            raise ToolException(f"Invalid action {action}. Must be one of ('create', 'update', 'delete').")
        if action == "create" and id is not None:
            raise ToolException(
                "You cannot provide a MEMORY ID when creating a MEMORY. Please try again, omitting the id argument."
            )
        if action in ("delete", "update") and not id:
            raise ToolException("You must provide a MEMORY ID when deleting or updating a MEMORY.")
        if action != "delete" and (content is None or not str(content).strip()):
            raise ToolException(f"Nothing was stored: give the memory's content to {action} it.")
        ns = namespace(config)
        key = str(id) if id else str(uuid.uuid4())
        if action != "create" and memory.store.get(ns, key) is None:
            raise ToolException(
                f"There is no memory {key}; nothing was {action}d. Use search_memory to find ids"
                + (", or action='create' for a new memory." if action == "update" else ".")
            )
        return ns[1], key

    def manage_memory(
        config: RunnableConfig,
        content: str | None = None,
        action: Literal["create", "update", "delete"] = "create",
        *,
        id: uuid.UUID | None = None,
    ) -> str:
        user_id, key = check(action, id, content, config)
        try:
            if action == "delete":
                memory.store.delete(("memories", user_id), key)
                return f"Deleted memory {key}"
            memory.store.put(("memories", user_id), key, {"content": content})
        except TieredMemoryError as exc:
            raise ToolException(f"Nothing was stored: {exc}") from exc
        return f"{action}d memory {key}"

    async def amanage_memory(
        config: RunnableConfig,
        content: str | None = None,
        action: Literal["create", "update", "delete"] = "create",
        *,
        id: uuid.UUID | None = None,
    ) -> str:
        return await asyncio.to_thread(manage_memory, config, content, action, id=id)

    def search_memory(
        query: str,
        config: RunnableConfig,
        *,
        limit: int = 10,
        offset: int = 0,
        filter: dict[str, Any] | None = None,
    ) -> str:
        ns = namespace(config)  # no user: the ConfigError propagates, as the other tools'
        try:
            items = memory.store.search(ns, query=query or None, filter=filter, limit=limit, offset=offset)
        except TieredMemoryError as exc:
            raise ToolException(f"Search failed: {exc}") from exc
        return _dumps([item.dict() for item in items])

    async def asearch_memory(
        query: str,
        config: RunnableConfig,
        *,
        limit: int = 10,
        offset: int = 0,
        filter: dict[str, Any] | None = None,
    ) -> str:
        return await asyncio.to_thread(search_memory, query, config, limit=limit, offset=offset, filter=filter)

    return [
        _LangMemTool.from_function(
            manage_memory, amanage_memory, name="manage_memory", description=_MANAGE_DESCRIPTION,
            handle_tool_error=True,
        ),
        _LangMemTool.from_function(
            search_memory, asearch_memory, name="search_memory", description=_SEARCH_DESCRIPTION,
            handle_tool_error=True,
        ),
    ]


__all__ = ["ToolStyle", "create_memory_tools"]
