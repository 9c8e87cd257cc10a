"""A scripted chat model for tests: it answers what a real model would, in order.

``ScriptedChatModel(script=[...])`` answers its n-th call with the n-th script item:

- an ``AIMessage`` (text content, or ``tool_calls`` as a tool-calling model answers);
- a ``str`` — a plain text answer;
- an ``Exception`` instance — raised, as a failing API call would;
- ``Hang(seconds, then=None)`` — sleeps, then answers ``then`` (an empty message if None);
- a callable taking the prompt's messages and returning any of the above.

Past the end of the script it answers ``default`` (when set) or raises
:class:`ScriptExhausted`. ``calls`` counts the calls and ``inputs`` keeps each call's
messages; ``call_kwargs`` keeps what was bound (``tools``, ``tool_choice``, ``max_tokens`` …).
Like ``ChatOpenAI`` it has a ``max_tokens`` field, so the extractor sends it its output cap
per call; :func:`cut_off` builds an answer that the cap stopped.
``tool_calling=False`` makes ``bind_tools`` raise ``NotImplementedError``, as a model
without tool support does, so ``with_structured_output`` is unavailable.

The helpers below build typical answers: a valid ``TurnExtraction`` tool call, JSON text,
prose-wrapped JSON, invalid JSON, wrong types, out-of-range importance, empty content.

    model = ScriptedChatModel(script=[turn_tool_call(memories=[memory("The user likes tea.")])])
    extractor = LLMExtractor(model)
    extractor.extract_turn([HumanMessage("I like tea")])
    assert model.calls == 1
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field, PrivateAttr


@dataclass(frozen=True)
class Hang:
    """A script item that makes the call take ``seconds``, then answer ``then``."""

    seconds: float
    then: Any = None


class ScriptExhausted(AssertionError):
    """The model was called more often than its script has answers (and has no default)."""


class ScriptedChatModel(BaseChatModel):
    """A ``BaseChatModel`` that answers from a script; see the module doc."""

    script: list[Any] = Field(default_factory=list)
    default: Any = None
    max_tokens: int | None = None
    tool_calling: bool = True
    calls: int = 0
    inputs: list[list[BaseMessage]] = Field(default_factory=list)
    call_kwargs: list[dict[str, Any]] = Field(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": "scripted"}

    def bind_tools(
        self,
        tools: Sequence[Any],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[Any, AIMessage]:
        if not self.tool_calling:
            raise NotImplementedError("this ScriptedChatModel has no tool calling")
        formatted = [convert_to_openai_tool(tool) for tool in tools]
        return self.bind(tools=formatted, tool_choice=tool_choice, **kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        with self._lock:
            index = self.calls
            self.calls += 1
            self.inputs.append(list(messages))
            self.call_kwargs.append(dict(kwargs))
            if index < len(self.script):
                item = self.script[index]
            elif self.default is not None:
                item = self.default
            else:
                raise ScriptExhausted(
                    f"ScriptedChatModel called {index + 1} times; its script has {len(self.script)}"
                )
        return ChatResult(generations=[ChatGeneration(message=self._answer(item, messages))])

    def _answer(self, item: Any, messages: list[BaseMessage]) -> AIMessage:
        if isinstance(item, Hang):
            time.sleep(item.seconds)
            return self._answer(item.then if item.then is not None else "", messages)
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, AIMessage):
            return item.model_copy(deep=True)
        if isinstance(item, str):
            return AIMessage(content=item)
        if callable(item):
            return self._answer(item(messages), messages)
        raise TypeError(f"cannot answer with a script item of type {type(item).__name__}")


# --------------------------------------------------------------------------- answers


def entity(name: str, type: str = "person", **attributes: Any) -> dict[str, Any]:
    """An entity as a model writes it."""
    return {"name": name, "type": type, "attributes": attributes}


def memory(content: str, memory_type: str = "fact", importance: Any = 0.5) -> dict[str, Any]:
    """A memory as a model writes it."""
    return {"content": content, "memory_type": memory_type, "importance": importance}


def turn_payload(
    entities: Iterable[dict[str, Any]] = (),
    memories: Iterable[dict[str, Any]] = (),
    summary: str | None = None,
) -> dict[str, Any]:
    """The arguments of a ``TurnExtraction`` answer."""
    return {"entities": list(entities), "memories": list(memories), "summary": summary}


def tool_call(args: Any, name: str = "TurnExtraction", call_id: str = "call_1") -> AIMessage:
    """An answer calling tool ``name`` with ``args`` (as a tool-calling model answers)."""
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id, "type": "tool_call"}])


def turn_tool_call(
    entities: Iterable[dict[str, Any]] = (),
    memories: Iterable[dict[str, Any]] = (),
    summary: str | None = None,
) -> AIMessage:
    """A valid ``TurnExtraction`` tool call."""
    return tool_call(turn_payload(entities, memories, summary))


def episode_tool_call(
    summary: str, decisions: Sequence[str] = (), outcome: str = "", topics: Sequence[str] = ()
) -> AIMessage:
    """A valid ``EpisodeExtraction`` tool call."""
    args = {"summary": summary, "decisions": list(decisions), "outcome": outcome, "topics": list(topics)}
    return tool_call(args, name="EpisodeExtraction")


def turn_json(
    entities: Iterable[dict[str, Any]] = (),
    memories: Iterable[dict[str, Any]] = (),
    summary: str | None = None,
) -> str:
    """A ``TurnExtraction`` as the bare JSON text a JSON-prompted model answers."""
    return json.dumps(turn_payload(entities, memories, summary))


def prose_json(payload: Any, *, fence: bool = True) -> str:
    """``payload`` as JSON wrapped in chatty prose (and a ```json fence), as small models do."""
    body = json.dumps(payload, indent=2)
    if fence:
        return f"Sure! Here is the extraction you asked for:\n\n```json\n{body}\n```\n\nLet me know if you need anything else."
    return f"Here is what I found: {body} Hope this helps!"


def invalid_json_text() -> str:
    """A truncated JSON answer (the model ran out of tokens)."""
    return '{"entities": [{"name": "Alice", "type": "person", "attributes": {"location": "Pa'


def cut_off(answer: str | AIMessage) -> AIMessage:
    """``answer`` marked as stopped by the output limit (``finish_reason: "length"``), as
    ``ChatOpenAI`` reports a model that ran into ``max_tokens``."""
    message = AIMessage(content=answer) if isinstance(answer, str) else answer.model_copy(deep=True)
    message.response_metadata = {**message.response_metadata, "finish_reason": "length"}
    return message


def invalid_json_tool_call() -> AIMessage:
    """A tool call whose arguments are not valid JSON (langchain puts it in invalid_tool_calls)."""
    return AIMessage(
        content="",
        invalid_tool_calls=[
            {
                "name": "TurnExtraction",
                "args": '{"entities": [{"name": "Alice",, }',
                "id": "call_1",
                "error": "Function TurnExtraction arguments are not valid JSON",
                "type": "invalid_tool_call",
            }
        ],
    )


def wrong_types_tool_call() -> AIMessage:
    """A tool call with the wrong overall shape: entities is a string, memories a number."""
    return tool_call({"entities": "Alice, Paris", "memories": 42, "summary": None})


def out_of_range_tool_call() -> AIMessage:
    """Importance out of 0..1, as a string, and NaN."""
    return turn_tool_call(
        memories=[
            memory("The user loves jazz.", "preference", 7),
            memory("The user dislikes rain.", "preference", -0.5),
            memory("The user lives in Oslo.", "fact", "0.8"),
            memory("The user has a cat.", "fact", float("nan")),
        ]
    )


def empty_content_tool_call() -> AIMessage:
    """Empty and blank memory contents and entity names beside one good memory."""
    return turn_tool_call(
        entities=[entity("  "), entity(""), entity("  Bob  ", "person")],
        memories=[memory(""), memory("   "), memory("The user plays chess.", "fact", 0.6)],
    )


Responder = Callable[[list[BaseMessage]], Any]

__all__ = [
    "Hang",
    "Responder",
    "ScriptExhausted",
    "ScriptedChatModel",
    "cut_off",
    "empty_content_tool_call",
    "entity",
    "episode_tool_call",
    "invalid_json_text",
    "invalid_json_tool_call",
    "memory",
    "out_of_range_tool_call",
    "prose_json",
    "tool_call",
    "turn_json",
    "turn_payload",
    "turn_tool_call",
    "wrong_types_tool_call",
]
