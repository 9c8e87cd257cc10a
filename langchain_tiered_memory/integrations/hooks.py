"""Hooks for LangGraph's ``create_react_agent``: the budgeted context in, the turn recorded out.

    from langchain_tiered_memory import post_model_hook, pre_model_hook

    agent = create_react_agent(
        model, tools,
        pre_model_hook=pre_model_hook(memory),
        post_model_hook=post_model_hook(memory),
        checkpointer=memory.checkpointer,
    )
    agent.invoke({"messages": [("user", "hi")]},
                 {"configurable": {"user_id": "alice", "thread_id": "t1"}})

How a turn goes:

- The **pre hook** runs before every model call. It first records the state's messages that
  the thread's log does not hold yet (the user's input, tool results), so what the user sent
  is durable before the model runs. Then it returns ``{"llm_input_messages": ...}``: one
  system message (the hook's ``prompt``, the pinned system message, the fenced memory block,
  in that order), then the window, within the budget, ending with the new input. The graph's
  ``messages`` are not rewritten.
- The **post hook** runs after every model call and records the model's message. Only a
  message without tool calls (the turn's answer) journals the extraction job, which covers
  the whole turn: a tool loop of any length costs one extraction call.

Messages are matched by ``id`` (``add_messages`` gives each one), so the state may hold the
whole thread (with a checkpointer) or only the new input (without one): either way each
message is stored once. ``user_id`` and ``thread_id`` come from ``config["configurable"]``;
``thread_id`` is also LangGraph's checkpoint thread. Give the agent's instructions to the
hook, ``pre_model_hook(memory, prompt="...")``, not to ``create_react_agent(prompt=...)``:
LangGraph prepends its ``prompt`` to the hook's ``llm_input_messages`` out of the hook's
reach, so the model would get two system messages. The prompt is not stored; it should fit
``MemoryConfig.system_reserve``. The result
of a ``return_direct`` tool ends the run without a model call: it is recorded on the
thread's next turn (when a checkpointer keeps it in the state). With ``response_format``,
``create_react_agent``'s extra structured-output call reads the graph's ``messages``, not
the budgeted context.

The helpers here (:func:`ids_from_config`, :func:`record_new`) serve the other adapters too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig

from ..entries import check_id
from ..errors import ConfigError, InvalidInputError, InvalidMessageError

if TYPE_CHECKING:
    from ..memory import TieredMemory

_CONFIG_EXAMPLE = 'config={"configurable": {"user_id": ..., "thread_id": ...}}'


def ids_from_config(config: RunnableConfig | Mapping[str, Any] | None) -> tuple[str, str]:
    """``(user_id, thread_id)`` from ``config["configurable"]``; :class:`ConfigError` naming
    the missing keys otherwise."""
    configurable = (config or {}).get("configurable") or {}
    missing = [k for k in ("user_id", "thread_id") if configurable.get(k) in (None, "")]
    if missing:
        raise ConfigError(
            f"{' and '.join(missing)} missing from config['configurable']: tiered memory needs "
            f"to know whose thread this is; invoke the graph with {_CONFIG_EXAMPLE} "
            "(thread_id is also LangGraph's checkpoint thread)"
        )
    user_id, thread_id = configurable["user_id"], configurable["thread_id"]
    check_id("user_id", user_id)
    check_id("thread_id", thread_id)
    return user_id, thread_id


def state_messages(state: Any, key: str = "messages") -> list[BaseMessage]:
    """The messages under ``key`` of a dict or pydantic graph state."""
    value = state.get(key) if isinstance(state, Mapping) else getattr(state, key, None)
    if value is None:
        raise InvalidInputError(f"the graph state has no {key!r} key; memory reads the thread from it")
    return list(value)


def record_new(
    memory: TieredMemory,
    user_id: str,
    thread_id: str,
    messages: Sequence[BaseMessage],
    *,
    extract: bool,
) -> list[BaseMessage]:
    """Store the messages the thread's log does not hold yet; returns them.

    Every message needs an ``id``: without one, the same message in the next step's state
    could not be recognised and would be stored again.
    """
    for i, m in enumerate(messages):
        if not isinstance(m, BaseMessage):
            raise InvalidMessageError(
                f"messages[{i}] of the graph state is a {type(m).__name__}, not a message; "
                "reduce the key with langgraph's add_messages, which converts and ids them"
            )
        if not m.id:
            raise InvalidMessageError(
                f"messages[{i}] ({type(m).__name__}) has no id; reduce the state key with "
                "langgraph's add_messages, which gives every message one"
            )
    known = memory.threads.recorded_ids(user_id, thread_id, [str(m.id) for m in messages])
    new = [m for m in messages if m.id not in known]
    if new:
        memory.after_turn(user_id, thread_id, new, extract=extract)
    return new


def turn_complete(messages: Sequence[BaseMessage]) -> bool:
    """Whether the newest message ends the turn: a model answer that calls no tool."""
    return bool(messages) and isinstance(messages[-1], AIMessage) and not messages[-1].tool_calls


def last_human_text(messages: Sequence[BaseMessage]) -> str | None:
    """The text of the newest human message, what memory searches for."""
    for m in reversed(messages):
        if isinstance(m, HumanMessage):
            return m.text
    return None


def model_input(
    memory: TieredMemory,
    user_id: str,
    thread_id: str,
    messages: Sequence[BaseMessage],
    prompt: str | SystemMessage | None = None,
) -> list[BaseMessage]:
    """Record the new input, then the budgeted context to send the model in its place, with
    one system message (:func:`one_system_message`)."""
    record_new(memory, user_id, thread_id, messages, extract=False)
    return one_system_message(budgeted_context(memory, user_id, thread_id, last_human_text(messages)), prompt)


def one_system_message(
    messages: Sequence[BaseMessage], prompt: str | SystemMessage | None = None
) -> list[BaseMessage]:
    """``messages`` with ``prompt`` and their leading system messages (the pinned one, the
    memory block) folded into one system message, first, in that order.

    Several system messages are refused or mishandled by many providers (Anthropic's and
    Gemini's APIs take one system prompt), and the caller's instructions must come before the
    quoted memory. A system message later in the window stays where it was said.
    """
    lead: list[BaseMessage] = [SystemMessage(prompt) if isinstance(prompt, str) else prompt] if prompt else []
    rest = list(messages)
    while rest and isinstance(rest[0], SystemMessage):
        lead.append(rest.pop(0))
    if len(lead) < 2:
        return lead + rest
    if all(isinstance(m.content, str) for m in lead):
        content: Any = "\n\n".join(str(m.content) for m in lead if m.content)
    else:  # content blocks (an image in a pinned message): keep every block, in order
        content = [b for m in lead for b in ([{"type": "text", "text": m.content}] if isinstance(m.content, str)
                                             else m.content)]
    return [SystemMessage(content), *rest]


def budgeted_context(
    memory: TieredMemory, user_id: str, thread_id: str, query: str | None
) -> list[BaseMessage]:
    """The thread's context from the log (system, memory block, window), never empty."""
    context = memory.before_turn(user_id, thread_id, query=query)
    if not context.messages:
        # An empty input would make LangGraph fall back to the whole, unbudgeted state.
        raise InvalidInputError(
            f"the newest messages of thread {thread_id!r} do not fit the context budget even "
            "truncated (a tool call's arguments are never cut); raise MemoryConfig.max_tokens"
        )
    return context.messages


def check_prompt(prompt: Any) -> None:
    """Refuse a ``prompt`` that is neither ``None``, a ``str`` nor a ``SystemMessage``, when the
    hook or node is built rather than at the first model call."""
    if prompt is not None and not isinstance(prompt, (str, SystemMessage)):
        raise InvalidInputError(f"prompt must be a str or a SystemMessage, got {type(prompt).__name__}")


def pre_model_hook(
    memory: TieredMemory, *, prompt: str | SystemMessage | None = None
) -> Callable[[Any, RunnableConfig], dict[str, Any]]:
    """The ``pre_model_hook`` of ``create_react_agent`` for ``memory`` (see the module doc).

    ``prompt``: the agent's instructions, sent first in the one system message, before the
    memory block (pass them here instead of ``create_react_agent(prompt=...)``). Build the
    hook once per memory and agent. Async graphs run it in a worker thread.
    """
    check_prompt(prompt)

    def tiered_memory_pre_model_hook(state: Any, config: RunnableConfig) -> dict[str, Any]:
        user_id, thread_id = ids_from_config(config)
        messages = state_messages(state)
        return {"llm_input_messages": model_input(memory, user_id, thread_id, messages, prompt)}

    return tiered_memory_pre_model_hook


def post_model_hook(memory: TieredMemory) -> Callable[[Any, RunnableConfig], dict[str, Any]]:
    """The ``post_model_hook`` of ``create_react_agent`` for ``memory`` (see the module doc).

    Build it once per memory and agent. Returns no state update.
    """

    def tiered_memory_post_model_hook(state: Any, config: RunnableConfig) -> dict[str, Any]:
        user_id, thread_id = ids_from_config(config)
        messages = state_messages(state)
        record_new(memory, user_id, thread_id, messages, extract=turn_complete(messages))
        return {}

    return tiered_memory_post_model_hook


__all__ = [
    "budgeted_context",
    "check_prompt",
    "ids_from_config",
    "last_human_text",
    "model_input",
    "one_system_message",
    "post_model_hook",
    "pre_model_hook",
    "record_new",
    "state_messages",
    "turn_complete",
]
