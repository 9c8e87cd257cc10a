"""Messages as the extraction prompt shows them: ``speaker: text`` lines, quoted.

Shared by the LLM extractor (which renders the conversation into its prompt) and the offline
rules (which read the user's text).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage

from ..fence import quote
from ..tokens import TokenCounter
from .normalise import clean_text

__all__ = ["message_text", "render_messages", "speaker"]

_SPEAKERS = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}


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


def render_messages(
    messages: Sequence[BaseMessage],
    *,
    counter: TokenCounter | None = None,
    max_message_tokens: int | None = None,
) -> str:
    """Messages as ``speaker: text`` lines, continuation lines indented, fences quoted.

    Indenting continuation lines keeps a message from forging another speaker's line;
    :func:`~langchain_tiered_memory.fence.quote` keeps it from closing the prompt's fences.
    """
    lines: list[str] = []
    for message in messages:
        text = message_text(message).strip()
        if counter is not None and max_message_tokens is not None:
            text = counter.truncate_middle(text, max_message_tokens, " […] ")
        label = quote(speaker(message))
        name = getattr(message, "name", None)
        if name:
            label = f"{label} [{quote(clean_text(str(name))[:40])}]"
        body = quote(text).splitlines() or [""]
        lines.append(f"{label}: {body[0]}")
        lines.extend(f"  {line}" for line in body[1:])
    return "\n".join(lines)
