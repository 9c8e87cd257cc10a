"""``memory.threads``: the conversations each user had, read back (their log, summary, ids)."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.messages import BaseMessage

from ..entries import check_id
from .deprecation import warn_renamed
from .parts import Parts

__all__ = ["ThreadInfo", "Threads"]


@dataclass(frozen=True)
class ThreadInfo:
    """A thread of a user, as listed by ``memory.threads.list``."""

    thread_id: str
    user_id: str
    messages: int
    created_at: str
    updated_at: str


class Threads:
    """The threads of each user and what their logs hold: ``memory.threads``.

    Thread ids are global (as in LangGraph): a thread belongs to the user who wrote it
    first, and reading it as another user raises ``ThreadOwnershipError``.
    """

    def __init__(self, parts: Parts) -> None:
        self._parts = parts

    def list(self, user_id: str) -> builtins.list[ThreadInfo]:
        """The user's threads, most recently active first."""
        self._parts.check_open()
        check_id("user_id", user_id)
        return [
            ThreadInfo(t.thread_id, t.user_id, t.next_seq, t.created_at, t.updated_at)
            for t in self._parts.storage.threads.of_user(user_id)
        ]

    def users(self) -> builtins.list[str]:
        """Every user with a thread or a long-term memory."""
        self._parts.check_open()
        return self._parts.storage.users()

    def messages(self, user_id: str, thread_id: str) -> builtins.list[BaseMessage]:
        """Every message of the thread's log, evicted ones included, oldest first."""
        self._parts.check_open()
        thread = self._parts.thread(user_id, thread_id)
        if thread is None or thread.next_seq == 0:
            return []
        return self._parts.turns.messages(thread.key, 0, thread.next_seq - 1)

    def summary(self, user_id: str, thread_id: str) -> str | None:
        """The thread's running summary of evicted messages, ``None`` if there is none yet."""
        self._parts.check_open()
        return self._parts.summary.current(self._parts.thread(user_id, thread_id))

    def recorded_ids(self, user_id: str, thread_id: str, message_ids: Sequence[str]) -> set[str]:
        """Which of ``message_ids`` the thread's log already holds.

        Lets an adapter whose graph state holds the whole thread send only what is new.
        """
        self._parts.check_open()
        thread = self._parts.thread(user_id, thread_id)
        if thread is None or not message_ids:
            return set()
        return self._parts.storage.threads.recorded_ids(thread.key, builtins.list(message_ids))

    def __call__(self, user_id: str) -> builtins.list[ThreadInfo]:
        """Deprecated: ``memory.threads(user_id)`` was a method; use :meth:`list`."""
        warn_renamed("threads(user_id)", "memory.threads.list(user_id)")
        return self.list(user_id)
