"""The stored-message format: how a LangChain message is written to the log and read back.

The one home of it. A message is stored as the JSON text of ``message_to_dict`` (its type
and its fields), with an id; every write checks that the text reads back as a message
(:func:`encode`), the stored text reads back as that dict (:func:`decode`), and reading never fails for a message that no longer validates
(:func:`read_messages`). :func:`said` reads who said a stored message and what, without
building the message object when it is plain text (quoting evidence reads many).

Used by the turn (writes the log), the window and the thread repository (read it), the
dialogue units and the extraction prompts (who said what), export (the stored dict) and
import (an export's messages are read, checked and encoded again). No other module turns
a message into stored text or back.
"""

from __future__ import annotations

import json
import logging
import uuid
import warnings
from collections.abc import Mapping
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    message_to_dict,
    messages_from_dict,
)

from ..errors import InvalidMessageError
from ..text.speakers import written_speaker

__all__ = [
    "MAX_MESSAGE_ID",
    "brief_error",
    "decode",
    "encode",
    "message_text",
    "name_of",
    "named",
    "read_message",
    "read_messages",
    "said",
    "speaker",
    "speaker_name",
    "spoken",
]

logger = logging.getLogger("langchain_tiered_memory")

#: Longest message id accepted.
MAX_MESSAGE_ID = 512
_SPEAKERS = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}
#: Message types whose plain-text form needs no message object.
_PLAIN = {"human": "user", "ai": "assistant"}
#: A stored message that no longer reads as its type is returned as one of these, by type.
_REPAIR_TYPES: dict[str, type[BaseMessage]] = {
    "human": HumanMessage, "ai": AIMessage, "system": SystemMessage, "tool": ToolMessage,
    "function": FunctionMessage, "chat": ChatMessage,
}
_REPAIRED: set[Any] = set()


# --- writing --------------------------------------------------------------------------------


def encode(message: BaseMessage) -> tuple[BaseMessage, str]:
    """The message (given an id if it had none) and the text the log stores for it.

    Raises:
        InvalidMessageError: it would not read back as the same message, or its id is not
            a non-empty str of at most :data:`MAX_MESSAGE_ID` characters.
    """
    if message.id is None:
        message = message.model_copy(update={"id": str(uuid.uuid4())})
    try:
        with warnings.catch_warnings():
            # A message built around validation makes pydantic warn while dumping it;
            # the refusal below says what is wrong, once, as our error.
            warnings.simplefilter("ignore")
            data = message_to_dict(message)
        text = json.dumps(data, ensure_ascii=False, allow_nan=False)
        text.encode("utf-8")
        # What is stored must read back: a message built around validation (say, with
        # model_construct) would otherwise make its thread unreadable for good.
        messages_from_dict([json.loads(text)])
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidMessageError(
            f"{type(message).__name__} {message.id!r} cannot be stored: {brief_error(exc)}; keep "
            "message content a str or a list of content blocks, and kwargs JSON-serialisable "
            "valid text (no lone surrogates)"
        ) from None
    except Exception as exc:  # pydantic's ValidationError, from reading it back
        raise InvalidMessageError(
            f"{type(message).__name__} {message.id!r} is not a valid message: {brief_error(exc)}"
        ) from None
    if not isinstance(message.id, str) or not message.id or "\x00" in message.id or len(message.id) > MAX_MESSAGE_ID:
        raise InvalidMessageError(
            f"message id {message.id!r} must be a non-empty str of at most {MAX_MESSAGE_ID} characters"
        )
    return message, text


# --- reading --------------------------------------------------------------------------------


def decode(text: str) -> dict[str, Any]:
    """The stored text of a message (what :func:`encode` wrote) as its ``message_to_dict``
    form, which :func:`read_messages`, :func:`said` and :func:`named` read."""
    data: dict[str, Any] = json.loads(text)
    return data


def read_message(stored: dict[str, Any]) -> BaseMessage:
    """One stored message (its ``message_to_dict`` form) as a message; raises what
    langchain-core raises for one that does not validate (an import refuses it)."""
    return messages_from_dict([stored])[0]


def read_messages(data: list[dict[str, Any]]) -> list[BaseMessage]:
    """Stored messages as LangChain messages; never raises for one that no longer validates.

    Every write checks that its message reads back (:func:`encode`), but a file written by
    an older version, another tool, or a LangChain whose message classes have changed may
    hold one that does not: rather than make the whole thread unreadable for good, that
    message is returned as a message of its type whose content is the stored content as
    text, with ``additional_kwargs["tiered_memory_repaired"]`` saying why.
    """
    try:
        return messages_from_dict(data)
    except Exception:  # pydantic's ValidationError and its kin: find the bad one(s)
        return [_read_one(d) for d in data]


def _read_one(stored: dict[str, Any]) -> BaseMessage:
    try:
        return messages_from_dict([stored])[0]
    except Exception as exc:
        reason = f"stored message could not be read as is: {brief_error(exc, 200)}"
    fields = stored.get("data") if isinstance(stored, dict) else None
    fields = fields if isinstance(fields, dict) else {}
    content = fields.get("content")
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False, default=str)
    kind = stored.get("type") if isinstance(stored, dict) else None
    cls = _REPAIR_TYPES.get(kind, HumanMessage) if isinstance(kind, str) else HumanMessage
    extra: dict[str, Any] = {}
    if cls is ToolMessage:
        extra["tool_call_id"] = str(fields.get("tool_call_id") or "")
    elif cls is ChatMessage:
        extra["role"] = str(fields.get("role") or "user")
    elif cls is FunctionMessage:
        extra["name"] = str(fields.get("name") or "function")
    msg_id = fields.get("id")
    if len(_REPAIRED) < 1_000 and msg_id not in _REPAIRED:  # said once per message, not per read
        _REPAIRED.add(msg_id)
        logger.warning("a stored message (id %r) could not be read as is; returned as text: %s", msg_id, reason)
    return cls(
        content=text, id=msg_id if isinstance(msg_id, str) else None,
        additional_kwargs={"tiered_memory_repaired": reason}, **extra,
    )


# --- who said what --------------------------------------------------------------------------


def message_text(message: BaseMessage) -> str:
    """The text of a message (text blocks only), tool calls described briefly."""
    text = str(message.text)
    if isinstance(message, AIMessage) and message.tool_calls:
        calls = ", ".join(
            f"{c['name']}({json.dumps(c.get('args', {}), ensure_ascii=False, default=str)})"
            for c in message.tool_calls
        )
        text = f"{text}\n[calls {calls}]" if text else f"[calls {calls}]"
    return text


def speaker(message: BaseMessage) -> str:
    """``user``, ``assistant``, ``system`` or ``tool`` (a ChatMessage's role otherwise)."""
    role = getattr(message, "role", None)
    if message.type == "chat" and isinstance(role, str):
        return {"human": "user", "ai": "assistant"}.get(role, role)
    return _SPEAKERS.get(message.type, message.type)


def named(stored: Mapping[str, Any]) -> str | None:
    """The ``name`` a stored message gives its speaker (two people talking, an imported
    chat), whitespace collapsed; ``None`` without one."""
    fields = stored.get("data") or {}
    return _plain_name(fields.get("name") if isinstance(fields, Mapping) else None)


def name_of(message: BaseMessage) -> str | None:
    """:func:`speaker_name` of a message not yet stored: its ``name``, else one written in
    front of its text."""
    return spoken(message)[0]


def spoken(message: BaseMessage) -> tuple[str | None, str]:
    """A message's speaker's name (``None``: it names none) and its text, a speaker written
    in front of the text taken off (as :func:`said` reads a stored message)."""
    text = message_text(message)
    name = _plain_name(message.name)
    if name is None and speaker(message) in ("user", "assistant"):
        written = written_speaker(text)
        if written is not None:
            return written
    return name, text


def _plain_name(name: object) -> str | None:
    if isinstance(name, str) and name.strip():
        return " ".join(name.split())
    return None


def said(stored: dict[str, Any]) -> tuple[str, str]:
    """Who said a stored message and its text. A plain text message is read from its dict
    (building the message object is most of the cost of quoting evidence); anything else
    (content blocks, tool calls) through langchain-core. A speaker written in front of the
    text ("Caroline: I went…", with no ``name``) is read as its named speaker, and the text
    as what follows (:mod:`..text.speakers`)."""
    fields = stored.get("data") or {}
    content = fields.get("content")
    if stored.get("type") in _PLAIN and isinstance(content, str) and not fields.get("tool_calls"):
        who, text = _PLAIN[stored["type"]], content
    else:
        message = messages_from_dict([stored])[0]
        who, text = speaker(message), message_text(message)
    # A named speaker (two people talking, an imported chat) is named: questions do.
    name = named(stored)
    if name is not None:
        return name, text
    if who in ("user", "assistant"):
        written = written_speaker(text)
        if written is not None:
            return written
    return who, text


def speaker_name(stored: dict[str, Any]) -> str | None:
    """The name of a stored message's speaker: its ``name``, else one written in front of
    its text (:func:`said`); ``None`` when it names none."""
    name = named(stored)
    if name is not None:
        return name
    who, _ = said(stored)
    return None if who in _SPEAKERS.values() else who


def brief_error(exc: BaseException, limit: int = 300) -> str:
    """The first line of an error's message, at most ``limit`` characters."""
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"
