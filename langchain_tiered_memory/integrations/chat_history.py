"""``TieredChatMessageHistory``: the memory as a LangChain ``BaseChatMessageHistory``.

For ``RunnableWithMessageHistory`` and code that used ``ConversationBufferMemory``:
``messages`` is the budgeted view of the thread (pinned system message, memory block,
window) rather than the whole log, and ``add_messages`` records a turn. LangChain marks
``BaseChatMessageHistory`` deprecated (removal in langchain-core 2.0); new code should use
the LangGraph integration, which works on the same data.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import BaseMessage

from ..entries import check_id

if TYPE_CHECKING:
    from ..memory import TieredMemory


class TieredChatMessageHistory(BaseChatMessageHistory):
    """One thread of a :class:`TieredMemory`, as a chat message history.

    Args:
        memory: The memory the thread lives in.
        user_id: Owner of the thread.
        thread_id: The thread (a ``session_id`` in ``RunnableWithMessageHistory`` terms).
    """

    def __init__(self, memory: TieredMemory, user_id: str, thread_id: str) -> None:
        check_id("user_id", user_id)
        check_id("thread_id", thread_id)
        self.memory = memory
        self.user_id = user_id
        self.thread_id = thread_id

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """What the model should see now: the budgeted view, not the whole log."""
        return self.memory.before_turn(self.user_id, self.thread_id).messages

    async def aget_messages(self) -> list[BaseMessage]:
        """Async :attr:`messages`."""
        return (await self.memory.abefore_turn(self.user_id, self.thread_id)).messages

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Record messages in the thread's log (``after_turn``)."""
        self.memory.after_turn(self.user_id, self.thread_id, list(messages))

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Async :meth:`add_messages`."""
        await self.memory.aafter_turn(self.user_id, self.thread_id, list(messages))

    def clear(self) -> None:
        """Forget the thread: its messages leave the log for good."""
        self.memory.admin.forget(user_id=self.user_id, thread_id=self.thread_id)

    async def aclear(self) -> None:
        """Async :meth:`clear`."""
        import asyncio

        await asyncio.to_thread(self.clear)
