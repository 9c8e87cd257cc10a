"""The inspector's one door to the memory: every read and write the pages make, through the
public API of :class:`~langchain_tiered_memory.TieredMemory` only.

Kept in one module so that a change of the facade's names touches one file. Reads are
looks that change nothing: searches and the replayed turn pass ``peek=True`` (no recall is
counted), and the memory the command line opens runs no job (``job_mode="manual"``).
Calls are serialised by one lock: the pages run in a thread pool, and one memory's
connection and index are used by one request at a time.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

    from ..context import MemoryContext
    from ..entries import MemoryEntry
    from ..jobs import JobInfo
    from ..layers.entities import Entity
    from ..layers.episodes import EpisodeHit
    from ..api.threads import ThreadInfo
    from ..memory import TieredMemory
    from ..recall.layer import Evidence

__all__ = ["MemoryPage", "Source", "UserSummary", "job_label"]

#: Episodes listed per user, at most (newest first).
EPISODES_SHOWN = 200
#: How long a re-run of failed jobs waits for them, in seconds.
RETRY_WAIT_SECONDS = 120.0
#: Entities listed per user with their attribute history, at most.
ENTITIES_SHOWN = 500
#: A job's kind, as the jobs page names it.
JOB_KINDS = {"extract": "extraction", "episode": "episode"}


@dataclass(frozen=True)
class UserSummary:
    """A user as the users page lists them: counts per layer and last activity."""

    user_id: str
    threads: int
    messages: int
    memories: int
    entities: int
    episodes: int
    last_activity: str | None


@dataclass(frozen=True)
class MemoryPage:
    """One page of a user's memories (newest first) and whether more follow."""

    entries: list[MemoryEntry]
    offset: int
    limit: int
    more: bool


class Source:
    """What the pages read and do, over one open memory."""

    def __init__(self, memory: TieredMemory) -> None:
        self.memory = memory
        self._lock = threading.Lock()

    # --- users and threads ------------------------------------------------------------

    def users(self, search: str | None = None) -> list[str]:
        """Every user id, those containing ``search`` (case-insensitively) if given."""
        with self._lock:
            users = self.memory.threads.users()
        if search:
            needle = search.casefold()
            users = [u for u in users if needle in u.casefold()]
        return users

    def user_summary(self, user_id: str) -> UserSummary:
        """Counts per layer of one user, and when their newest thread was last active.

        The memories are counted by the database (``memory.memories.count``: one COUNT on
        the user's index), so a user with 10,000 of them costs what a user with ten does."""
        memory = self.memory
        with self._lock:
            threads = memory.threads.list(user_id)
            entities = len(memory.entities.list(user_id))
            episodes = len(memory.episodes.search(user_id, k=1_000_000))
            memories = memory.memories.count(user_id)
        last = max((t.updated_at for t in threads), default=None)
        return UserSummary(user_id, len(threads), sum(t.messages for t in threads), memories, entities, episodes,
                           last)

    def find_threads(self, search: str, users_scanned: int = 1_000) -> list[ThreadInfo]:
        """The threads whose id contains ``search`` (case-insensitively), of the first
        ``users_scanned`` users (thread ids are global; the API lists them per user)."""
        needle = search.casefold()
        with self._lock:
            users = self.memory.threads.users()[:users_scanned]
            return [t for u in users for t in self.memory.threads.list(u) if needle in t.thread_id.casefold()]

    def threads(self, user_id: str) -> list[ThreadInfo]:
        """The user's threads, most recently active first."""
        with self._lock:
            return self.memory.threads.list(user_id)

    def messages(self, user_id: str, thread_id: str) -> list[BaseMessage]:
        """Every message of the thread's log, oldest first."""
        with self._lock:
            return self.memory.threads.messages(user_id, thread_id)

    def summary(self, user_id: str, thread_id: str) -> str | None:
        """The thread's running summary."""
        with self._lock:
            return self.memory.threads.summary(user_id, thread_id)

    # --- the turn, replayed -------------------------------------------------------------

    def replay(self, user_id: str, thread_id: str, query: str | None) -> tuple[MemoryContext, list[Evidence]]:
        """What ``before_turn`` would send now, and the evidence ranked for ``query`` with
        its score parts; both looks (``peek=True``): nothing is counted or written."""
        with self._lock:
            context = self.memory.before_turn(user_id, thread_id, query or None, peek=True)
            asked = context.query
            evidence: list[Evidence] = []
            k = self.memory.config.memories_k
            if asked and asked.strip() and k:
                evidence = self.memory.recall(user_id, asked, k=k, peek=True, explain=True)
        return context, evidence

    def count_message_tokens(self, message: BaseMessage) -> int:
        """The tokens one message costs in the context."""
        return self.memory.admin.counter.count_message(message)

    def budget(self) -> dict[str, int]:
        """The budget's parts: ``max_tokens``, ``output_reserve``, ``system_reserve``."""
        config = self.memory.config
        return {"max_tokens": config.max_tokens, "output_reserve": config.output_reserve,
                "system_reserve": config.system_reserve}

    # --- long-term memory ---------------------------------------------------------------

    def memories(self, user_id: str, offset: int = 0, limit: int = 50) -> MemoryPage:
        """A page of the user's memories, newest first, superseded ones included."""
        with self._lock:
            entries = self.memory.memories.list(user_id, limit=limit + 1, offset=offset)
        return MemoryPage(entries[:limit], offset, limit, len(entries) > limit)

    def search(self, user_id: str, query: str, k: int = 20) -> list[MemoryEntry]:
        """The user's memories best matching ``query`` (a look: no recall is counted)."""
        with self._lock:
            return [hit.entry for hit in self.memory.memories.search(user_id, query, k=k, peek=True)]

    def entities(self, user_id: str) -> list[Entity]:
        """The user's entities with their attribute history, most recently updated first."""
        with self._lock:
            shown = self.memory.entities.list(user_id)[:ENTITIES_SHOWN]
            full = [self.memory.entities.get(user_id, e.name) for e in shown]
        return [e for e in full if e is not None]

    def episodes(self, user_id: str) -> list[EpisodeHit]:
        """The user's episodes, newest first."""
        with self._lock:
            return self.memory.episodes.search(user_id, k=EPISODES_SHOWN)

    # --- operations ---------------------------------------------------------------------

    def forget(self, user_id: str, *, thread_id: str | None = None, memory_id: str | None = None) -> dict[str, Any]:
        """Forget a memory (``memory.memories.forget``), a thread or all of a user
        (``memory.admin.forget``), journaled and scrubbed as the API does; returns its counts,
        with ``wal_scrubbed`` and ``job_answers_scrubbed``."""
        with self._lock:
            if memory_id is not None:
                return dict(self.memory.memories.forget(user_id, memory_id))
            if thread_id is not None:
                return dict(self.memory.admin.forget(user_id=user_id, thread_id=thread_id))
            return dict(self.memory.admin.forget(user_id=user_id))

    def export_user(self, user_id: str) -> dict[str, list[dict[str, Any]]]:
        """Everything stored of the user as JSON-ready data."""
        with self._lock:
            return self.memory.admin.export_user(user_id)

    def retry_failed(self) -> dict[str, int]:
        """Run the jobs that failed again and wait for them (up to ``RETRY_WAIT_SECONDS``):
        how many were retried, and how many are still failed or pending after."""
        with self._lock:
            changed = self.memory.admin.jobs.retry(failed=True)
            if changed:
                self.memory.flush(timeout=RETRY_WAIT_SECONDS)
            jobs = self.memory.admin.stats()["jobs"]
        return {"retried": changed, "failed": int(jobs["failed"]), "pending": int(jobs["pending"])}

    def jobs(self, status: str | None = None, limit: int = 100) -> list[JobInfo]:
        """The job journal, newest first."""
        with self._lock:
            return self.memory.admin.jobs.list(status=status, limit=limit)

    def stats(self) -> dict[str, Any]:
        """``memory.admin.stats()``: counts, the jobs, and the spend (``usage``)."""
        with self._lock:
            return dict(self.memory.admin.stats())

    def where(self) -> str:
        """Where the memory lives (its directory, or its database)."""
        data_dir = self.memory.data_dir
        return str(data_dir) if data_dir is not None else "a database"


def when(value: str | datetime | None) -> str:
    """A stored time as local ``YYYY-MM-DD HH:MM`` (``—`` for none)."""
    if value is None:
        return "—"
    moment = datetime.fromisoformat(value) if isinstance(value, str) else value
    return moment.astimezone().strftime("%Y-%m-%d %H:%M")


def ids(values: Sequence[str]) -> str:
    """Ids as one short line."""
    return ", ".join(v[:8] for v in values)


def job_label(job: JobInfo) -> str:
    """A job in words: ``extraction · thread t1 · through message 27`` for the key
    ``extract:2:{"through_seq": 27}`` (kind, the thread's internal key, the last message the
    job covers: the number the thread page shows it under)."""
    parts = [JOB_KINDS.get(job.kind, job.kind)]
    if job.thread_id:
        parts.append(f"thread {job.thread_id}")
    try:
        payload = json.loads(job.key.split(":", 2)[2])
    except (IndexError, ValueError):  # a key of another shape: the kind and thread say enough
        payload = None
    if isinstance(payload, dict):
        through = payload.get("through_seq", payload.get("last_seq"))
        if isinstance(through, int):
            parts.append(f"through message {through}")
    return " · ".join(parts)
