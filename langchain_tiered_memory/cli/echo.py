"""The offline model of ``tiered-memory chat``: imported only when a chat runs without a server."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from ..context import MEMORY_BLOCK_OPEN

__all__ = ["OfflineEchoModel"]


class OfflineEchoModel(BaseChatModel):
    """The model of ``tiered-memory chat`` without a configured server: it echoes the user
    and quotes the first line of each memory section it was sent, so what the memory
    recalls stays visible offline."""

    @property
    def _llm_type(self) -> str:
        return "offline-echo"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        said = next((m.text for m in reversed(messages) if m.type == "human"), "")
        recalled = []
        for m in messages:
            # The memory block may follow the pinned system prompt in the same message.
            start = m.text.find(MEMORY_BLOCK_OPEN) if m.type == "system" else -1
            if start < 0:
                continue
            for part in m.text[start:].split("\n## ")[1:]:
                name, _, body = part.partition("\n")
                first = body.strip().splitlines()[0] if body.strip() else ""
                if first and first != "</memory>":
                    recalled.append(f"{name}: {first}")
        text = f"(offline echo; set OPENAI_BASE_URL or OPENAI_API_KEY for a real model) You said: {said}"
        if recalled:
            text += "\nI was sent from memory: " + " | ".join(recalled)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(text))])
