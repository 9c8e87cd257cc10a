"""``TieredChatMessageHistory``: the memory as a LangChain ``BaseChatMessageHistory``.

For ``RunnableWithMessageHistory`` and code that used ``ConversationBufferMemory``:
``messages`` is the thread's conversation as it fits the context budget (the pinned system
message, then the newest messages), never a message the memory made up; ``add_messages``
records a turn. ``context_messages`` is what ``before_turn`` sends a model (the same with the
memory block); ``with_memory=True`` makes ``messages`` return it, which is how
``RunnableWithMessageHistory`` (it reads ``messages`` only) gets the memory to the model. The
whole log, evicted messages included, is ``memory.threads.messages(user_id, thread_id)``.

LangChain marks ``BaseChatMessageHistory`` deprecated (removal in langchain-core 2.0); new
code should use the LangGraph integration, which works on the same data.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import BaseMessage

from ..entries import check_id

if TYPE_CHECKING:
    from ..context import MemoryContext
    from ..memory import TieredMemory


class TieredChatMessageHistory(BaseChatMessageHistory):
    """One thread of a :class:`TieredMemory`, as a chat message history.

    Args:
        memory: The memory the thread lives in.
        user_id: Owner of the thread.
        thread_id: The thread (a ``session_id`` in ``RunnableWithMessageHistory`` terms).
        with_memory: ``messages`` is :attr:`context_messages` (memory block included), for
            ``RunnableWithMessageHistory`` to send the model what memory recalls.
    """

    def __init__(self, memory: TieredMemory, user_id: str, thread_id: str, *, with_memory: bool = False) -> None:
        check_id("user_id", user_id)
        check_id("thread_id", thread_id)
        self.memory = memory
        self.user_id = user_id
        self.thread_id = thread_id
        self.with_memory = with_memory

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """The stored conversation that fits the budget: the pinned system message and the
        newest messages, oldest first (:attr:`context_messages` with ``with_memory=True``).

        The window rather than the whole log: ``RunnableWithMessageHistory`` puts all of
        ``messages`` in the prompt, and the whole log would overflow the model as
        ``ConversationBufferMemory`` does."""
        return self._view(self._context())

    @property
    def context_messages(self) -> list[BaseMessage]:
        """What the model should see now, as ``before_turn`` gives it: the pinned system
        message, the memory block (a system message) and the window. Memories shown count as
        recalled."""
        return self.memory.before_turn(self.user_id, self.thread_id).messages

    async def aget_messages(self) -> list[BaseMessage]:
        """Async :attr:`messages`."""
        return self._view(await asyncio.to_thread(self._context))

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
        await asyncio.to_thread(self.clear)

    def _context(self) -> MemoryContext:
        # Without the memory block nothing is shown, so nothing counts as recalled (peek).
        return self.memory.before_turn(self.user_id, self.thread_id, peek=not self.with_memory)

    def _view(self, context: MemoryContext) -> list[BaseMessage]:
        if self.with_memory:
            return context.messages
        return [m for m in (context.system_message,) if m is not None] + context.window
