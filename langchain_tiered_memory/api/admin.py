"""``memory.admin``: running a memory rather than talking through it — its state, forgetting
a user, a thread or an entity, the index's upkeep, export and import, the job journal, and
what it is built from (extractor, embeddings, token counter, database)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from langchain_core.embeddings import Embeddings

from ..entries import check_id, check_text
from ..errors import InvalidInputError, ThreadOwnershipError
from ..jobs import JobJournal
from ..layers.entities import name_key
from ..ops import portability
from ..storage import Database
from ..tokens import TokenCounter
from ..views import MemoryStats
from .adapters import build
from .parts import Parts

if TYPE_CHECKING:
    from ..extraction import Extractor

__all__ = ["Admin", "RunningInspector"]


class RunningInspector(Protocol):
    """What :meth:`Admin.serve` returns: the inspector serving from a thread (its class lives
    in ``inspector/``, above this module, which therefore names only what it offers)."""

    #: The address to open in a browser (with ``?token=…`` when a token is required).
    url: str

    def stop(self, timeout: float = 10.0) -> None:
        """Stop serving and wait for the server to close."""

    def wait(self) -> None:
        """Serve until the server stops, or until Ctrl-C."""


class Admin:
    """Operating one memory: ``memory.admin``."""

    def __init__(self, parts: Parts, memory: object) -> None:
        self._parts = parts
        # The facade this belongs to: what the inspector serves (built through the adapter
        # slot, as it lives above the facade).
        self._memory = memory

    # --- state ------------------------------------------------------------------------

    def stats(self) -> MemoryStats:
        """Counts of what is stored, the database's size, the index, and the job journal.

        ``jobs`` counts the journal: ``pending`` (this memory runs them), ``waiting`` (they
        need an extractor this memory lacks: journaled by a memory with a chat model, they
        wait for one, and so do the later jobs of their thread), ``running``, ``stale``
        (leased by a process that no longer runs, or whose lease ran out: they run again),
        ``done``, ``failed``. ``failed_jobs`` lists the jobs that failed for good, with
        their reasons; ``dropped_items`` counts the items of models' answers that validation
        left out (the rest of each answer was applied) and ``dropped`` lists the newest, with
        their job, position and reason; ``usage`` what the jobs' LLM calls cost (calls,
        prompt and completion tokens, time; in all, per day and per user) and ``budget`` the
        spend budget's state (jobs held back by it, when it frees); ``index`` says how many
        records wait for their vector point and, while another process holds the index (or,
        for a manual memory, a lost index), why this one cannot write them; ``degraded``
        counts, per cause (``index_held_elsewhere``, ``index_missing``,
        ``embedding_mismatch``, ``index_unavailable``), the answers given without the index:
        each section a context left out, each search or recall refused (the first is also
        logged, once per process). Reading changes nothing.
        """
        parts = self._parts
        storage = parts.storage
        dropped = storage.jobs.dropped_items()
        return MemoryStats({
            # Where the data lives: the directory, or the database (without its password).
            "data_dir": str(parts.data_dir) if parts.data_dir is not None else storage.location,
            **storage.counts(),
            "index": {
                "pending": storage.unindexed_count(),
                "forgets_pending": len(storage.forgetting.pending()),
                "held_elsewhere": parts.index.unavailable,
            },
            # Answers given without the index, per cause (degradation.py); {} when none.
            "degraded": parts.degradations.counts(),
            "extractor": "offline" if parts.extractor.offline else parts.extractor.name,
            "jobs": parts.jobs.counts(),
            "failed_jobs": [
                {"key": j.key, "attempts": j.attempts, "reason": j.last_error, "at": j.updated_at}
                for j in storage.jobs.rows("failed", limit=20)
            ],
            # What validation left out of the models' answers (the rest was applied).
            "dropped_items": dropped["items"],
            "dropped": dropped["recent"],
            **parts.spend.stats(),
        })

    @property
    def jobs(self) -> JobJournal:
        """The job journal: ``memory.admin.jobs.list(...)`` shows jobs and what they wait
        for, ``memory.admin.jobs.retry(...)`` runs failed or stranded jobs again."""
        self._parts.check_open()
        return self._parts.journal

    # --- forgetting -------------------------------------------------------------------

    def forget(
        self, *, user_id: str | None = None, thread_id: str | None = None, entity: str | None = None
    ) -> dict[str, int]:
        """Delete a thread, an entity, or everything of a user, in every layer (one memory:
        ``memory.memories.forget``).

        ``thread_id``: the thread, its summary, jobs, episodes, LangGraph checkpoints and the
        memories and entity attributes learned in it (with ``user_id``, only if it is theirs).
        ``user_id`` with ``entity``: that one profile. ``user_id`` alone: all of the user —
        messages, summaries, entities, memories, episodes, jobs, store items and the
        checkpoints of their threads. One journaled operation: the database rows go at once,
        the vector points now or (if another process holds the index) as soon as it can, and
        no forgotten text stays in a file. Returns counts of what was deleted. This is the
        only way messages leave the log.

        The result also says what was scrubbed: ``job_answers_scrubbed``, the job rows whose
        copies of the deleted text (a job's saved model answer, a reason quoting it) were
        dropped or redacted; and, for a directory memory, ``wal_scrubbed``: ``True`` when
        ``memory.db``'s write-ahead log was truncated, ``False`` when a reader (an open read
        transaction here or in another process, such as a checkpointer ``list()`` iterator)
        held it past ``scrub_wait_seconds`` — its frames keep the deleted rows until the
        reader ends; a WARNING says so, and the truncation is retried by the upkeep, at
        ``close()``, on the next open, and by :meth:`scrub`.
        """
        return forget(self._parts, user_id=user_id, thread_id=thread_id, entity=entity)

    async def aforget(
        self, *, user_id: str | None = None, thread_id: str | None = None, entity: str | None = None
    ) -> dict[str, int]:
        """Async :meth:`forget` (runs in a worker thread)."""
        return await asyncio.to_thread(self.forget, user_id=user_id, thread_id=thread_id, entity=entity)

    def scrub(self, wait_seconds: float | None = None) -> bool:
        """Finish the scrub of a forget that readers held off (``forget(...)["wal_scrubbed"]``
        was ``False``): truncate ``memory.db``'s write-ahead log, waiting at most
        ``wait_seconds`` (default ``scrub_wait_seconds``) for its readers. Returns whether
        no frame of a forgotten row is left (``True`` too when nothing was left to do, and
        for a database server, whose log is its own); ``False`` logs a WARNING. The upkeep,
        ``close()`` and the next open retry it on their own; call this to know now.
        """
        self._parts.check_open()
        if wait_seconds is not None and (
            isinstance(wait_seconds, bool) or not isinstance(wait_seconds, (int, float)) or not 0 <= wait_seconds <= 3600
        ):
            raise InvalidInputError(f"wait_seconds must be a number of seconds from 0 to 3600, got {wait_seconds!r}")
        return self._parts.forgetter.scrub(None if wait_seconds is None else float(wait_seconds))

    # --- the index --------------------------------------------------------------------

    def reindex(self, progress: Callable[[int, int], None] | None = None) -> dict[str, int]:
        """Rebuild every vector (memories, episodes) from its record's text with the current
        embeddings, e.g. after changing the model. Resumable: run it again after a stop.
        Returns how many were re-embedded: ``{"memories": …, "episodes": …}``."""
        self._parts.check_open()
        return self._parts.index.reindex(progress)

    def optimize(self) -> None:
        """Compact the vector index and build its search graphs now (waits for it).

        The embedded index does this in the background as writes accumulate; call it after a
        bulk load to search at full speed at once. A Qdrant server optimises by itself.
        """
        self._parts.check_open()
        self._parts.index.optimize()

    # --- export and import --------------------------------------------------------------

    def export_user(self, user_id: str) -> dict[str, list[dict[str, Any]]]:
        """Everything stored of the user as JSON-ready data (``tiered-memory export``).

        Keys: ``threads``, ``messages``, ``summaries``, ``entities`` (with attribute
        history), ``memories`` (with their access state; not vectors), ``episodes`` and
        ``store_items``. :meth:`import_user` restores it.
        """
        self._parts.check_open()
        self._parts.facts.recalls.write()  # with the recalls the last turns counted
        return portability.export_user(self._parts.storage, user_id)

    def import_user(
        self,
        user_id: str,
        data: Mapping[str, Sequence[dict[str, Any]]],
        *,
        progress: Callable[[int, int], None] | None = None,
    ) -> dict[str, int]:
        """Restore what :meth:`export_user` returned; returns counts of what was written.

        Refused, writing nothing, when the user already has data here or an id is taken: an
        import restores, it never merges. Memories, episodes and the conversation are
        indexed after, embedded in batches with this memory's embeddings (``progress(done,
        total)`` is called after each batch); generic store items that had vectors are
        embedded again.
        """
        self._parts.check_open()
        parts = self._parts
        counts = portability.import_user(
            parts.storage, parts.index, user_id, data, serialise=parts.turns.serialise,
            embed_value=parts.items.embed_value, counter=parts.counter.name, now=parts.now(), progress=progress,
        )
        parts.jobs.notify()
        return counts

    # --- looking at it ----------------------------------------------------------------

    def serve(
        self,
        port: int = 8765,
        *,
        host: str = "127.0.0.1",
        allow_writes: bool = False,
        token: str | None = None,
        block: bool = False,
    ) -> RunningInspector | None:
        """Serve the memory inspector (what ``tiered-memory serve`` runs) for this memory, at
        ``http://host:port``; needs ``pip install 'langchain-tiered-memory[inspector]'``.

        From a notebook (``block=False``, the default) it serves from a thread and returns
        the running inspector: ``.url`` to open, ``.stop()`` to end it (or use it in a
        ``with``). ``block=True`` prints the address and serves until Ctrl-C. Read-only
        unless ``allow_writes`` (forget, export, re-run failed jobs); binds to 127.0.0.1, and
        another address needs a ``token`` every request must carry. ``port=0`` picks a free
        port. Raises ``ConfigError`` for a refused bind, ``InspectorUnavailableError`` (a
        ``ConfigError``) without the extra.
        """
        self._parts.check_open()
        served: RunningInspector | None = build(self._memory, "inspector", port, host, allow_writes, token, block)
        return served

    # --- what the memory is built from --------------------------------------------------

    @property
    def extractor(self) -> Extractor:
        """The extractor of entities, memories and summaries: the LLM one, or offline."""
        return self._parts.extractor

    @property
    def embeddings(self) -> Embeddings:
        """The embeddings recall uses (the default model unless one was given), with
        queries cached; loaded on first use."""
        return self._parts.query_cached()

    @property
    def counter(self) -> TokenCounter:
        """The token counter every budget is measured with."""
        return self._parts.counter

    def close_with(self, close: Callable[[], None]) -> None:
        """Call ``close`` when the memory closes, before its database is released: for an
        adapter that holds connections of its own (the checkpointers register their
        ``close``). Called once, in the order given; raises ``MemoryClosedError`` if the
        memory is closed already."""
        self._parts.check_open()
        if close not in self._parts.closers:
            self._parts.closers.append(close)

    def database(self) -> Database:
        """The database this memory keeps its records in, for LangGraph's checkpointers to
        open their own connections: ``dialect.name`` (``"sqlite"`` or ``"postgresql"``),
        then SQLite's ``connect()``/``aconnect()`` or PostgreSQL's ``saver_pool()``/
        ``async_saver_pool()``. Read the memory itself through the grouped APIs."""
        self._parts.check_open()
        return self._parts.storage.db


def forget(
    parts: Parts,
    *,
    user_id: str | None = None,
    thread_id: str | None = None,
    entity: str | None = None,
    memory_id: str | None = None,
) -> dict[str, int]:
    """What :meth:`Admin.forget` and ``Memories.forget`` do, and the deprecated
    ``memory.forget`` with all four keywords: the arguments checked, then one forget."""
    parts.check_open()
    if user_id is None and thread_id is None:
        raise InvalidInputError("forget() needs user_id=, thread_id=, or both")
    if user_id is not None:
        check_id("user_id", user_id)
    if thread_id is not None:
        check_id("thread_id", thread_id)
    if memory_id is not None:
        if user_id is None or thread_id is not None or entity is not None:
            raise InvalidInputError("forget(memory_id=...) takes user_id= and nothing else")
        from ..entries import check_memory_id

        key = check_memory_id(memory_id, missing_ok=True)
        return parts.forgetter.memory(user_id, [key] if key else [])
    if entity is not None:
        if user_id is None or thread_id is not None:
            raise InvalidInputError("forget(entity=...) takes user_id= and no thread_id=")
        if not isinstance(entity, str) or not check_text(entity, "entity").strip():
            raise InvalidInputError("entity must be a non-empty name")
        return parts.forgetter.entity(user_id, name_key(entity))
    if thread_id is not None:
        thread = parts.storage.threads.get(thread_id)
        if thread is None and user_id is not None:
            # A thread only the checkpointer knows: its metadata says whose it is.
            owners = parts.storage.checkpoints.users_of(thread_id)
            if owners and user_id not in owners:
                raise ThreadOwnershipError(
                    f"thread {thread_id!r} does not belong to user {user_id!r}; nothing was forgotten"
                )
        counts = parts.forgetter.thread(thread_id, user_id)
        parts.turns.forget_cache(thread_id)
        return counts
    assert user_id is not None
    counts = parts.forgetter.user(user_id)
    # Thread ids are global, and the cache does not know owners: drop it all.
    parts.turns.forget_cache()
    return counts
