"""How a model is asked for structured output, and which way works for which model.

OpenAI-compatible servers differ: OpenAI honours ``response_format`` JSON schemas (strict);
llama.cpp's server rejects an object ``tool_choice`` (or its model writes the call as text,
so ``with_structured_output`` parses nothing); a model without tool calling can only be asked
for JSON in text. The extractor tries, in order, :data:`AUTO_METHODS`:

1. ``json_schema`` — strict, where the integration implements structured output itself
   (the base ``BaseChatModel`` ignores ``method`` and always calls tools);
2. ``function_calling`` — where the model binds tools;
3. ``text`` — the prompt asks for JSON, and the tolerant parser reads it.

A method *fails* when the provider refuses the request's shape (:func:`rejects_method`:
HTTP 400/415/422/501, ``NotImplementedError``), when its answer holds no structured
output at all (no tool call, no usable JSON), or when the answer was cut off at the
output-token cap (:mod:`~langchain_tiered_memory.extraction.caps`); the next method is then
tried within the same extraction. A timeout, a connection error or a malformed tool call is not a method's
failure: it is raised, and the job retries. What worked is remembered per model identity
(:func:`model_key`: class, endpoint and model name) for the life of the process, so later
calls — of any extractor over the same model — go straight to it (a model without a name
only within its extractor).

The schemas sent (:data:`TURN_TOOL`, :data:`EPISODE_TOOL`) are strict-mode compatible:
every field required, no free-form objects (attributes are ``{"key", "value"}`` pairs).
"""

from __future__ import annotations

import threading
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import Runnable, RunnableSequence

from ..vocabulary import ENTITY_TYPES, MEMORY_TYPES

__all__ = [
    "AUTO_METHODS",
    "EPISODE_TOOL",
    "TURN_TOOL",
    "StructuredMethod",
    "bound_for",
    "forget_methods",
    "model_id",
    "model_key",
    "rejects_method",
    "remember_method",
    "remembered_method",
    "supports",
]

StructuredMethod = Literal["json_schema", "function_calling", "json_mode", "text"]
#: The methods tried when none is forced, best first.
AUTO_METHODS: tuple[StructuredMethod, ...] = ("json_schema", "function_calling", "text")
#: HTTP statuses by which a server refuses the shape of a request (not its content).
_REFUSED = frozenset({400, 415, 422, 501})


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


_ENTITY = _object(
    {
        "name": {"type": "string", "description": "The entity's proper name, as written."},
        "type": {"type": "string", "enum": list(ENTITY_TYPES)},
        "attributes": {
            "type": "array",
            "description": (
                'Stable facts as short strings, e.g. [{"key": "location", "value": "Paris"}]. '
                'The user\'s own entity has {"key": "relation_to_user", "value": "self"}.'
            ),
            "items": _object({"key": {"type": "string"}, "value": {"type": "string"}}),
        },
    }
)
_MEMORY = _object(
    {
        "content": {
            "type": "string",
            "description": "One statement in the third person, e.g. 'The user prefers green tea.'",
        },
        "memory_type": {"type": "string", "enum": list(MEMORY_TYPES)},
        "importance": {
            "type": "number",
            "description": (
                "0 to 1: 0.9 instructions and things the user asked to remember, 0.8 identity, "
                "location, job, health, 0.7 preferences and relationships, 0.5 ordinary facts."
            ),
        },
    }
)
#: The turn's answer as a tool / response-format schema (OpenAI function format).
TURN_TOOL: dict[str, Any] = {
    "name": "TurnExtraction",
    "description": "What one conversation turn adds to the assistant's long-term memory.",
    "parameters": _object(
        {
            "entities": {"type": "array", "items": _ENTITY, "description": "Entities named in the turn (may be empty)."},
            "memories": {"type": "array", "items": _MEMORY, "description": "Statements worth remembering (may be empty)."},
            "summary": {
                "type": ["string", "null"],
                "description": "The updated running summary when you were asked to update it, else null.",
            },
        }
    ),
}
#: The episode's answer as a tool / response-format schema.
EPISODE_TOOL: dict[str, Any] = {
    "name": "EpisodeExtraction",
    "description": "A short record of one finished conversation, for episodic memory.",
    "parameters": _object(
        {
            "summary": {"type": "string", "description": "What happened, in a few sentences."},
            "decisions": {"type": "array", "items": {"type": "string"}, "description": "Decisions taken or plans agreed."},
            "outcome": {"type": "string", "description": "How the conversation ended, in one sentence."},
            "topics": {"type": "array", "items": {"type": "string"}, "description": "Up to 8 topic keywords."},
        }
    ),
}


def model_id(model: BaseChatModel) -> str:
    """The model's name (``model_name``, ``model`` …), ``"?"`` when it has none."""
    for attr in ("model_name", "model", "model_id", "deployment_name"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            return value
    return "?"


def model_key(model: BaseChatModel) -> str:
    """The identity of the model behind ``model``: class, endpoint and model name.

    Two instances talking to the same server and model share it. A model without a name
    is identified by the instance itself (and its method is not remembered process-wide).
    """
    cls = f"{type(model).__module__}.{type(model).__qualname__}"
    name = model_id(model)
    if name == "?":
        return f"{cls}@{id(model):x}"
    endpoint = ""
    for attr in ("openai_api_base", "base_url", "anthropic_api_url", "azure_endpoint", "endpoint"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            endpoint = value
            break
    return f"{cls}|{endpoint}|{name}"


_lock = threading.Lock()
_methods: dict[str, StructuredMethod] = {}


def remembered_method(key: str) -> StructuredMethod | None:
    """The method that last worked for the model ``key`` in this process, if any."""
    with _lock:
        return _methods.get(key)


def remember_method(key: str, method: StructuredMethod) -> None:
    """Remember that ``method`` worked for the model ``key``."""
    with _lock:
        _methods[key] = method


def forget_methods() -> None:
    """Forget every remembered method (the next calls probe again)."""
    with _lock:
        _methods.clear()


def _overrides(model: BaseChatModel, attr: str) -> bool:
    return getattr(type(model), attr) is not getattr(BaseChatModel, attr)


def supports(model: BaseChatModel, method: StructuredMethod) -> bool:
    """Whether ``model``'s integration offers ``method`` at all (it may still refuse it)."""
    if method == "text":
        return True
    if method in ("json_schema", "json_mode"):
        # The base implementation ignores `method` and binds tools: only an integration
        # with its own with_structured_output can send a response format.
        return _overrides(model, "with_structured_output")
    return _overrides(model, "bind_tools") or _overrides(model, "with_structured_output")


def bound_for(model: BaseChatModel, tool: dict[str, Any], method: StructuredMethod) -> Runnable[Any, Any] | None:
    """``model`` bound to answer ``tool`` by ``method``, without an output parser.

    The extractor reads the raw message itself (tool calls, then text), so it sees what the
    model said even when a parser would fail, and no ``RunnableParallel`` thread pool is
    involved. ``None`` when the integration does not offer the method.
    """
    if method == "text":
        return model
    if not supports(model, method):
        return None
    attempts: list[dict[str, Any]] = [{"method": method}]
    if method == "json_schema":
        attempts.insert(0, {"method": method, "strict": True})
    structured: Any = None
    for kwargs in attempts:
        try:
            structured = model.with_structured_output(tool, include_raw=False, **kwargs)
            break
        except NotImplementedError:
            return None
        except (TypeError, ValueError):
            continue  # an integration without `strict` (or without this method)
    if structured is None:
        return None
    if isinstance(structured, RunnableSequence):
        return structured.first  # the model with tools / response format bound
    return structured if isinstance(structured, Runnable) else None


def rejects_method(exc: BaseException | None) -> bool:
    """Whether a provider error refuses the request's shape, so another method may work."""
    if exc is None:
        return False
    if isinstance(exc, NotImplementedError):
        return True
    status = getattr(exc, "status_code", None)
    if status is None:
        status = getattr(getattr(exc, "response", None), "status_code", None)
    return status in _REFUSED
