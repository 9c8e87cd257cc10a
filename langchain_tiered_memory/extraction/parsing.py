"""The model's answer read tolerantly, in bounded time: JSON in prose, in tool calls, in fences.

Models wrap JSON in prose, in a ```json fence, after a ``<think>`` block; small ones write
trailing commas, single quotes and Python literals. :func:`parse_json_object` finds the
object anyway, with bounded work:

- an answer longer than :data:`MAX_ANSWER_CHARS` is refused (an :class:`ExtractionError`
  saying so): an extraction answer is a few kilobytes, and a longer one is a model looping;
- objects are decoded by the standard library's C decoder (``JSONDecoder.raw_decode``,
  which reads one object where it starts and ignores what follows), tried at no more than
  :data:`MAX_OBJECT_STARTS` opening braces — so the work is linear in the answer's length;
- only when that finds nothing, one repair pass: trailing commas removed and, for
  single-quoted or Python-literal answers, ``ast.literal_eval`` (literals only: untrusted
  text cannot run code), over the span from the first ``{`` to the last ``}``.

langchain-core's ``parse_partial_json`` and the ``json-repair`` package were measured and
rejected here: both are quadratic on hostile input (16 kB took 3 s, and 200 kB 250 s,
respectively), and a truncated answer is better retried than half stored.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Collection, Mapping
from typing import Any, Literal, TypeVar

from langchain_core.messages import AIMessage, BaseMessage
from pydantic import BaseModel, ValidationError

from ..errors import ExtractionError
from .normalise import brief, kind_of
from .schema import drop_reason

__all__ = [
    "MAX_ANSWER_CHARS",
    "MAX_OBJECT_STARTS",
    "check_size",
    "from_message",
    "parse_json_object",
    "parse_text",
    "read_message",
    "strip_reasoning",
    "tool_payloads",
    "validate_payload",
]

#: Longest answer (in characters) that is parsed; a longer one is an ``ExtractionError``.
MAX_ANSWER_CHARS = 256 * 1024
#: Opening braces at which an object is looked for, per text.
MAX_OBJECT_STARTS = 64

_CODE_FENCE = re.compile(r"```[ \t]*(?:json|JSON|json5|javascript|js)?[ \t]*\n?(.*?)```", re.S)
_THINK_OPEN = re.compile(r"<(think|thinking|reasoning)>", re.I)
_THINK_CLOSE = {name: re.compile(f"</{name}>", re.I) for name in ("think", "thinking", "reasoning")}
_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_WRAPPER_KEYS = ("arguments", "parameters", "args", "input", "output", "result", "data")
#: Keys of a result that the model does not write (a model echoing them is ignored).
_OUR_KEYS = ("dropped", "method")
_DECODER = json.JSONDecoder(strict=False)  # strict=False: raw newlines inside strings

_M = TypeVar("_M", bound=BaseModel)


def check_size(text: str, what: str = "the answer") -> None:
    """Raise :class:`ExtractionError` when ``text`` is longer than :data:`MAX_ANSWER_CHARS`."""
    if len(text) > MAX_ANSWER_CHARS:
        raise ExtractionError(
            f"{what} is {len(text):,} characters long; the limit is {MAX_ANSWER_CHARS:,} "
            "(MAX_ANSWER_CHARS): the model probably looped. It is not parsed; the job retries, "
            "and a smaller max_tokens on the model stops such answers early"
        )


def strip_reasoning(text: str) -> str:
    """``text`` without its closed ``<think>`` / ``<thinking>`` / ``<reasoning>`` blocks.

    An unclosed block is kept: a cut-off answer may be inside it. Linear in ``len(text)``.
    """
    out: list[str] = []
    pos = 0
    while (opened := _THINK_OPEN.search(text, pos)) is not None:
        closed = _THINK_CLOSE[opened.group(1).lower()].search(text, opened.end())
        if closed is None:
            break
        out.append(text[pos : opened.start()])
        pos = closed.end()
    out.append(text[pos:])
    return "".join(out)


def _objects(text: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    pos = 0
    for _ in range(MAX_OBJECT_STARTS):
        start = text.find("{", pos)
        if start < 0:
            break
        try:
            value, end = _DECODER.raw_decode(text, start)
        except (ValueError, RecursionError):
            pos = start + 1
            continue
        if isinstance(value, dict):
            found.append(value)
            pos = end
        else:
            pos = start + 1
    return found


def _repaired(text: str) -> dict[str, Any] | None:
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        return None
    span = text[start : end + 1]
    try:
        value = json.loads(_TRAILING_COMMA.sub(r"\1", span), strict=False)
    except (ValueError, RecursionError):
        try:
            value = ast.literal_eval(span)
        except Exception:  # SyntaxError, ValueError, and MemoryError from the parser's stack
            return None
    return value if isinstance(value, dict) else None


def _unwrap(obj: dict[str, Any], keys: Collection[str]) -> dict[str, Any]:
    # Models without native tool calling often answer with the call itself
    # ({"name": ..., "arguments": {...}}) or wrap the payload under the schema's name.
    for _ in range(3):
        if not keys or set(obj) & set(keys):
            return obj
        inner: Any = None
        for key in _WRAPPER_KEYS:
            if key in obj:
                inner = obj[key]
                break
        if inner is None and len(obj) == 1:
            inner = next(iter(obj.values()))
        if isinstance(inner, str):
            parsed = _objects(inner)
            inner = parsed[0] if parsed else None
        if not isinstance(inner, dict):
            return obj
        obj = inner
    return obj


def parse_json_object(text: str, keys: Collection[str] = ()) -> dict[str, Any]:
    """The JSON object in a model's text answer.

    Tolerates prose around it, ```json fences, ``<think>`` blocks, trailing commas, single
    quotes, Python literals, and a wrapper such as ``{"arguments": {...}}``. With ``keys``,
    an object holding one of them is preferred over other objects in the text. Raises
    :class:`ExtractionError` when there is none, or when the text is longer than
    :data:`MAX_ANSWER_CHARS`. See the module doc for the bounds on the work.
    """
    if not isinstance(text, str):
        raise ExtractionError(f"expected text with a JSON object, got {kind_of(text)}")
    check_size(text)
    cleaned = strip_reasoning(text)
    candidates: list[dict[str, Any]] = []
    for block in _CODE_FENCE.findall(cleaned):
        candidates.extend(_objects(block))
    candidates.extend(_objects(cleaned))
    if not candidates or (keys and not any(set(_unwrap(c, keys)) & set(keys) for c in candidates)):
        repaired = _repaired(cleaned)
        if repaired is not None:
            candidates.insert(0, repaired)
    if not candidates:
        raise ExtractionError(f"no JSON object in the model's answer {brief(text.strip(), 120)}")
    unwrapped = [_unwrap(c, keys) for c in candidates]
    for obj in unwrapped:
        if keys and set(obj) & set(keys):
            return obj
    return max(unwrapped, key=lambda o: len(json.dumps(o, default=str)))


def validate_payload(
    payload: Any, schema: type[_M], *, what: str = "extraction", context: Mapping[str, Any] | None = None
) -> _M:
    """``payload`` (a parsed JSON object from the model) validated as ``schema``.

    Items are validated one by one (see :mod:`~langchain_tiered_memory.extraction.schema`);
    :class:`ExtractionError` with a readable reason when the overall shape is wrong.
    ``context`` is passed to pydantic (``{"counter": ...}`` applies token limits).
    """
    keys = set(schema.model_fields) - set(_OUR_KEYS)
    if isinstance(payload, Mapping):
        payload = {k: v for k, v in _unwrap(dict(payload), keys).items() if k not in _OUR_KEYS}
        if payload and not set(payload) & keys:
            raise ExtractionError(
                f"{what}: the model's JSON object has none of the keys "
                f"{', '.join(sorted(keys))} (it has {', '.join(sorted(map(str, payload))[:6])})"
            )
    try:
        return schema.model_validate(payload, context=dict(context or {}))
    except ValidationError as exc:
        raise ExtractionError(f"{what}: the model's answer has the wrong shape: {drop_reason(exc)}") from exc


def parse_text(
    text: str, schema: type[_M], *, what: str = "extraction", context: Mapping[str, Any] | None = None
) -> _M:
    """A text answer parsed (tolerantly, see :func:`parse_json_object`) and validated."""
    try:
        payload = parse_json_object(text, set(schema.model_fields))
    except ExtractionError as exc:
        raise ExtractionError(f"{what}: {exc}") from None
    return validate_payload(payload, schema, what=what, context=context)


def tool_payloads(raw: AIMessage, name: str) -> tuple[list[Any], list[str]]:
    """The arguments of ``raw``'s tool calls (``name``'s first) and why others are unusable."""
    payloads: list[Any] = []
    reasons: list[str] = []
    calls = sorted(raw.tool_calls, key=lambda c: c.get("name") != name)
    payloads.extend(c.get("args") for c in calls)
    for bad in raw.invalid_tool_calls:
        args = bad.get("args")
        if isinstance(args, str):
            try:
                payloads.append(parse_json_object(args, ()))
            except ExtractionError:
                reasons.append(f"tool call {bad.get('name')!r} has invalid JSON arguments {brief(args, 80)}")
    return payloads, reasons


def read_message(
    raw: Any, schema: type[_M], what: str, *, name: str | None = None, context: Mapping[str, Any] | None = None
) -> tuple[_M, Literal["tool", "text"]]:
    """The answer in a model message, and where it was: a tool call's arguments, or the text.

    Tool calls come first (``name``'s, default the schema's class name), then the text is
    parsed tolerantly. Raises :class:`ExtractionError` listing why each was unusable.
    """
    if not isinstance(raw, BaseMessage):
        raise ExtractionError(f"{what}: the model returned {kind_of(raw)}, not a message")
    reasons: list[str] = []
    payloads: list[Any] = []
    cause: BaseException | None = None  # the first validation error, for __cause__
    if isinstance(raw, AIMessage):
        payloads, reasons = tool_payloads(raw, name or schema.__name__)
    for payload in payloads:
        try:
            return validate_payload(payload, schema, what=what, context=context), "tool"
        except ExtractionError as exc:
            reasons.append(str(exc).removeprefix(f"{what}: "))
            cause = cause or exc.__cause__
    text = raw.text
    if text.strip():
        try:
            return parse_text(text, schema, what=what, context=context), "text"
        except ExtractionError as exc:
            reasons.append(str(exc).removeprefix(f"{what}: "))
            cause = cause or exc.__cause__
    elif not payloads and not reasons:
        reasons.append("the model's answer is empty (no tool call, no text)")
    raise ExtractionError(f"{what}: " + "; ".join(reasons)) from cause


def from_message(
    raw: Any, schema: type[_M], what: str = "extraction", *, name: str | None = None,
    context: Mapping[str, Any] | None = None,
) -> _M:
    """The answer in a model message (see :func:`read_message`)."""
    return read_message(raw, schema, what, name=name, context=context)[0]
