"""Messages as the extraction prompt shows them: ``speaker: text`` lines, quoted.

Shared by the LLM extractor (which renders the conversation into its prompt) and the offline
rules (which read the user's text). Who said a message and its text are read as the
stored-message format reads them (:mod:`~langchain_tiered_memory.storage.message_format`).
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import BaseMessage

from ..fence import quote
from ..storage.message_format import message_text, name_of, speaker, spoken
from ..tokens import TokenCounter
from .normalise import clean_text

__all__ = ["message_text", "name_of", "render_messages", "speaker", "spoken"]

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
