"""``TieredMemory``: the one object agent code holds — a thin facade over the layers.

It owns the relational store and the recall index of one memory and wires the layers
(window and turn assembly, summary, entities, long-term facts, episodes, generic items),
the job runner and forgetting. Every public method validates its arguments here and
delegates; adapters (LangGraph store, checkpointer, hooks, chat history) build on these
public methods and register themselves (:func:`register_adapter`, ``adapters.py``, which
also holds the facade's accessors for them), so this module imports none of them.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage

from .adapters import AdapterAccess, register_adapter
from .config import CALLS_PER_JOB, MemoryConfig, as_config
from .context import MemoryContext
from .layers.entities import Entity, EntityLayer, name_key
from .entries import MemoryEntry, check_id, check_memory_id, check_query, check_text, check_time
from .layers.episodes import EpisodeHit, EpisodeLayer, episode_id
from .errors import (
    ConfigError,
    CorruptDatabaseError,
    InvalidInputError,
    MemoryClosedError,
    ShardLockedError,
    ThreadOwnershipError,
    TieredMemoryError,
    VectorStoreError,
)
from .index.degradation import Degradations
from .recall.dialogue import DialogueLayer
from .layers.facts import FactLayer
from .ops.forgetting import Forgetter
from .index.recall_index import RecallIndex
from .layers.items import Items
from .jobs import NEEDS_LLM, JobHandlers, JobJournal, JobRunner
from .recall.layer import Evidence, RecallLayer
from .index.searches import Searches
from .llm.spending import Spending, budget_for
from .storage import Storage
from .storage.rows import MemoryRow, ThreadRow
from .layers.summary import SummaryLayer
from .tokens import TokenCounter, TokenCounterLike, make_counter
from .turn import TurnResult, Turns
from .views import MemoryStats, SearchResults

if TYPE_CHECKING:
    from langchain_core.callbacks import BaseCallbackHandler

    from .extraction import Extractor

logger = logging.getLogger("langchain_tiered_memory")

__all__ = ["ThreadInfo", "TieredMemory", "TurnResult", "register_adapter"]

#: Records indexed per progress step of an import (four embedding batches).
_IMPORT_PASS = 256

@dataclass(frozen=True)
class ThreadInfo:
    """A thread of a user, as listed by :meth:`TieredMemory.threads`."""

    thread_id: str
    user_id: str
    messages: int
    created_at: str
    updated_at: str


class TieredMemory(AdapterAccess):
    """Layered memory for LangChain and LangGraph agents, stored under one directory — or,
    past one machine, in a PostgreSQL database with the vectors on a Qdrant server.

    Args:
        data_dir: Directory of the memory (default ``./memory``); ``memory.db`` (the owner of
            every record) and the vector index (``qdrant/``) are created in it.
        config: Budgets and forgetting parameters (a :class:`MemoryConfig` or a dict).
        model: Chat model for the layers that need an LLM (summary, extraction). Without
            one (and without ``OPENAI_API_KEY``) deterministic offline rules run instead; one
            that ``OPENAI_API_KEY`` chooses spends within ``spending.ENV_MODEL_BUDGET`` unless
            ``config`` sets a budget.
        embeddings: Embeddings for recall (default: all-MiniLM-L6-v2 int8, offline).
        token_counter: A chat model or a callable over a list of messages, to count tokens
            instead of tiktoken ``cl100k_base``.
        qdrant_url, qdrant_api_key: Keep the vector index on a Qdrant server or cluster
            instead of the embedded Qdrant Edge shard under ``data_dir`` (several processes
            can then recall at once).
        qdrant_client: A ``qdrant_client.QdrantClient`` to use instead of ``qdrant_url``.
        database_url: ``postgresql://user:password@host:5432/dbname``: every relational layer
            (and the LangGraph checkpoints) in that PostgreSQL database instead of a
            directory, shared by any number of processes; needs ``qdrant_url`` (or
            ``qdrant_client``), since an embedded shard belongs to one directory.
        pool_min, pool_max: With ``database_url``, the connections this process keeps open
            and the most it opens at once.
        callbacks: LangChain callback handlers (tracers) for the background jobs' runs: each
            job is a run named ``tiered-memory extract`` / ``episode`` with the user and
            thread in its metadata, its model calls as children (LangSmith needs nothing
            here: its environment variables reach the jobs).

    Use it as a context manager, or call :meth:`close` when done.
    """

    def __init__(
        self,
        data_dir: str | Path | None = None,
        config: MemoryConfig | dict[str, Any] | None = None,
        model: BaseChatModel | None = None,
        embeddings: Embeddings | None = None,
        *,
        token_counter: TokenCounterLike | TokenCounter | None = None,
        qdrant_url: str | None = None,
        qdrant_api_key: str | None = None,
        qdrant_client: Any = None,
        database_url: str | None = None,
        pool_min: int = 1,
        pool_max: int = 10,
        callbacks: Sequence[BaseCallbackHandler] | None = None,
    ) -> None:
        self.config = as_config(config)
        self.model = model
        self.embeddings = embeddings
        self.counter = make_counter(token_counter)
        self._clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc)
        self._extractor: Extractor | None = None
        if model is not None and not isinstance(model, BaseChatModel):
            self.extractor  # noqa: B018 - an Extractor is used as is; anything else is refused now, not in every job
        self._adapters: dict[str, Any] = {}
        self._adapter_lock = threading.Lock()
        # A manual memory runs nothing and writes nothing on its own: it may be a look.
        manual = self.config.job_mode == "manual"
        self._storage = _open_storage(
            data_dir, database_url, server=qdrant_url is not None or qdrant_client is not None,
            decay=self.config.decay, pool_min=pool_min, pool_max=pool_max, rekeep=not manual,
            scrub_wait=self.config.scrub_wait_seconds,
        )
        try:
            self._index = RecallIndex(
                self.data_dir, self._storage, self._query_cached,
                url=qdrant_url, api_key=qdrant_api_key, client=qdrant_client, repair=not manual,
            )
            self._open_checks()
        except BaseException:
            self._storage.close()
            raise
        storage, config, counter = self._storage, self.config, self.counter
        self._forgetter = Forgetter(storage, self._index, self._now, scrub_wait=config.scrub_wait_seconds)
        if not manual:
            self._forgetter.retry_scrub()  # one an earlier process left (readers, a crash)
        self._summary = SummaryLayer(storage, counter, config.summary_max_tokens)
        self._entities = EntityLayer(storage, counter, config.entities_max_tokens)
        self._facts = FactLayer(
            storage, self._index, config, clock=self._now, counter=counter, evict=self._forgetter.memories
        )
        self._episodes = EpisodeLayer(
            storage, self._index, counter, max_tokens=config.episodes_max_tokens,
            k=config.episodes_k, threshold=config.score_threshold,
        )
        self._dialogue = DialogueLayer(storage)
        self._recall = RecallLayer(
            storage, self._index, self._facts, self._entities, config, counter,
            self._now,
        )
        for source in (self._facts, self._episodes, self._dialogue):
            self._index.add_source(source)
        # What this memory answers without (another process holds the index …): said once,
        # counted in stats()["degraded"] (degradation.py).
        self._degradations = Degradations(str(self.data_dir) if self.data_dir is not None else storage.location)
        if manual:
            pass  # the index opens when a search needs it, and repairs nothing
        elif self._index.exists():
            # Opening it checks it against the records (a lost point is rebuilt) and finishes
            # journaled forgets; cheap: the embedding model loads only when something embeds.
            try:
                self._index.backend()
            except ShardLockedError as exc:  # a second worker: it says so now, not at its first recall
                self._degradations.note(exc, "opening it", count=False)
        elif any(s.indexed_count() for s in (self._facts, self._episodes, self._dialogue)):
            logger.warning(
                "the vector index of %s is missing; it is being rebuilt from memory.db", self.data_dir
            )
            for source in (self._facts, self._episodes, self._dialogue):
                source.reset()
        #: Generic namespaced items (the LangGraph store's documents besides memories).
        self.items = Items(storage, self._now, self._query_cached)
        # Order is priority: a section early in the list is served first from the budget.
        self._turns = Turns(
            storage, config, counter, [self._summary, self._entities, self._recall, self._episodes], self._now,
            lambda: Searches(self._index),
        )
        self._turns.on_degraded = self._degradations.note
        handlers = JobHandlers(storage, self._turns, self._summary, self._entities, lambda: self.extractor, config, self._now)
        # What jobs spend on the model is metered and budgeted (usage.py, budget.py).
        self._spend = Spending(
            storage, budget_for(config, model is not None), self._now, lambda: not self.extractor.offline, callbacks
        )
        self._jobs = JobRunner(
            storage,
            self._spend.metered(handlers.handlers()),
            gate=self._spend.gate,
            periodic=self._end_idle_sessions,
            upkeep=self._upkeep,
            backlog=self._backlog,
            mode=config.job_mode,
            max_attempts=config.job_max_attempts,
            backoff_seconds=config.job_backoff_seconds,
            lease_seconds=config.job_lease_seconds,
            retry_horizon=config.job_retry_horizon_seconds,
            renew_for=CALLS_PER_JOB * config.llm_timeout_seconds,
            provides=self._provides,
        )
        self._journal = JobJournal(storage, self._jobs, self._check_open)
        if not manual:
            # Work journaled by an earlier process that stopped mid-way resumes now.
            self._end_idle_sessions()
            self._jobs.notify()
            # Jobs this memory cannot run (no chat model) are said at once, not found later.
            self._journal.stranded()

    def _open_checks(self) -> None:
        if self.data_dir is None:  # a database server: no directory of an older layout
            return
        from .ops.legacy import upgrade_directory

        upgrade_directory(self._storage, self.data_dir, self._query_cached)
        if self._storage.is_new and not self._index.server and self._index.path.is_dir():
            raise CorruptDatabaseError(
                f"{self._storage.location} is missing or empty, but {self._index.path} holds a vector "
                "index built from an earlier memory.db, whose records (the text) are gone with it. "
                "Restore memory.db from a backup; or, to start over, delete the qdrant/ directory too."
            )

    # --- lifecycle --------------------------------------------------------------------

    @property
    def data_dir(self) -> Path | None:
        """The directory holding this memory (``None`` with ``database_url``)."""
        if self._storage.dialect.name != "sqlite":
            return None
        return Path(self._storage.location).parent

    @property
    def storage(self) -> Storage:
        """The relational store (for adapters that need a connection, e.g. the checkpointer)."""
        self._check_open()
        return self._storage

    def _provides(self) -> tuple[str, ...]:
        """What this memory can do for a job's needs: an LLM extractor, or nothing special."""
        return () if self._offline() else (NEEDS_LLM,)

    def _job_needs(self) -> str | None:
        """What the jobs this memory journals need: its LLM, when it has one (the offline
        rules would silently do worse work), else nothing."""
        return None if self._offline() else NEEDS_LLM

    def _offline(self) -> bool:
        try:
            return bool(self.extractor.offline)
        except TieredMemoryError:
            # A model that cannot be used (the job records why): the turn is stored all
            # the same, and its job is this memory's to run and fail.
            return self.model is None

    @property
    def extractor(self) -> Extractor:
        """The extractor of entities, memories and summaries: the LLM one, or offline."""
        if self._extractor is None:
            from .extraction import make_extractor

            self._extractor = make_extractor(
                self.model, timeout=self.config.llm_timeout_seconds, counter=self.counter,
                max_output_tokens=self.config.llm_max_output_tokens,
            )
        return self._extractor

    @property
    def jobs(self) -> JobJournal:
        """The job journal: ``memory.jobs.list(...)`` shows jobs and what they wait for,
        ``memory.jobs.retry(...)`` runs failed or stranded jobs again (:class:`JobJournal`)."""
        self._check_open()
        return self._journal

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until the jobs of earlier turns are done (or failed for good), and the
        records this process can index are indexed.

        Returns ``False`` if ``timeout`` seconds passed first, or if jobs wait for what this
        memory lacks — a chat model: journaled by a memory with one, with the later jobs of
        their threads behind them. Those are not waited for; a WARNING names their threads
        once, and ``memory.jobs.retry(offline=True)`` hands them to the offline rules. Jobs
        retrying while the model cannot be reached are waited for, up to
        ``job_retry_horizon_seconds``. Records waiting for another process that holds the
        vector index are not waited for: :meth:`stats` shows them (``index.pending``). Call
        it before reading what background jobs produce.
        """
        self._check_open()
        done = self._jobs.flush(timeout)
        return not self._journal.stranded() and done

    async def aflush(self, timeout: float | None = None) -> bool:
        """Async :meth:`flush` (waits in a worker thread)."""
        return await asyncio.to_thread(self.flush, timeout)

    def close(self) -> None:
        """Stop the job worker and release the database and the index. Safe to call twice.

        Jobs not yet run stay in the journal and run when the directory is opened again.
        """
        # Whatever fails on the way (an adapter, a shard whose files vanished: our error),
        # the database is released: a failed close must not leave the file held.
        try:
            self._jobs.close()
            for adapter in self._adapters.values():
                closer = getattr(adapter, "close", None)
                if callable(closer):
                    closer()
        finally:
            try:
                self._index.close()
            finally:
                self._storage.close()
                self._forgetter.close()  # says if readers still held a forget's scrub
                self._turns.forget_cache()

    def __enter__(self) -> TieredMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._storage.closed:
            raise MemoryClosedError("this TieredMemory is closed; create a new one")

    def _now(self) -> datetime:
        return self._clock()

    # --- the turn ---------------------------------------------------------------------

    def before_turn(
        self,
        user_id: str,
        thread_id: str,
        query: str | None = None,
        *,
        peek: bool = False,
        at: datetime | None = None,
    ) -> MemoryContext:
        """What to send the model this turn, within the context budget.

        ``query`` is what memory sections search for; by default the thread's newest human
        message. ``at`` is when the question is asked (default now). No LLM is called. The
        memories shown count as recalled, unless ``peek=True``: a look that changes nothing.
        Where a layer cannot answer (another process holds the vector index),
        ``context.degraded`` says what is missing.
        """
        check_id("user_id", user_id)
        check_id("thread_id", thread_id)
        if query is not None:
            query = check_query(query)
        check_time("at", at)
        thread = self._thread(user_id, thread_id)
        return self._turns.before(user_id, thread, thread_id, query, peek=peek, at=at)

    async def abefore_turn(
        self, user_id: str, thread_id: str, query: str | None = None, *, peek: bool = False,
        at: datetime | None = None,
    ) -> MemoryContext:
        """Async :meth:`before_turn` (runs in a worker thread: the database is blocking)."""
        return await asyncio.to_thread(self.before_turn, user_id, thread_id, query, peek=peek, at=at)

    def after_turn(
        self,
        user_id: str,
        thread_id: str,
        messages: Sequence[BaseMessage],
        *,
        extract: bool = True,
        at: datetime | None = None,
    ) -> TurnResult:
        """Append the turn's messages to the thread's log, durably, before anything else.

        A message whose ``id`` the thread already holds is skipped, so sending the same
        messages again stores nothing twice. Messages without an ``id`` get one. ``at`` is
        when they were said (default now), for importing past conversations.
        ``extract=False`` stores them without journaling an extraction job, for a turn still
        under way (its input, its tool steps): the turn's last ``after_turn`` journals one
        job that covers every message not yet extracted, so a turn costs one LLM call.
        """
        check_id("user_id", user_id)
        check_id("thread_id", thread_id)
        check_time("at", at)
        result = self._turns.after(
            user_id, thread_id, messages, extract=extract, at=at, needs=self._job_needs() if extract else None
        )
        if result.stored and extract:
            self._jobs.notify()
        return result

    async def aafter_turn(
        self, user_id: str, thread_id: str, messages: Sequence[BaseMessage], *, extract: bool = True,
        at: datetime | None = None,
    ) -> TurnResult:
        """Async :meth:`after_turn` (runs in a worker thread: the database is blocking)."""
        return await asyncio.to_thread(self.after_turn, user_id, thread_id, messages, extract=extract, at=at)

    def recorded_ids(self, user_id: str, thread_id: str, message_ids: Sequence[str]) -> set[str]:
        """Which of ``message_ids`` the thread's log already holds.

        Lets an adapter whose graph state holds the whole thread send only what is new.
        """
        thread = self._thread(user_id, thread_id)
        if thread is None or not message_ids:
            return set()
        return self._storage.threads.recorded_ids(thread.key, list(message_ids))

    def _thread(self, user_id: str, thread_id: str) -> ThreadRow | None:
        check_id("user_id", user_id)
        check_id("thread_id", thread_id)
        thread = self._storage.threads.get(thread_id)
        if thread is not None and thread.user_id != user_id:
            raise ThreadOwnershipError(
                f"thread {thread_id!r} belongs to another user; thread ids are global (as "
                "in LangGraph), so give each user's threads ids of their own"
            )
        return thread

    # --- reading the log --------------------------------------------------------------

    def get_messages(self, user_id: str, thread_id: str) -> list[BaseMessage]:
        """Every message of the thread's log, evicted ones included, oldest first."""
        thread = self._thread(user_id, thread_id)
        if thread is None or thread.next_seq == 0:
            return []
        return self._turns.messages(thread.key, 0, thread.next_seq - 1)

    def threads(self, user_id: str) -> list[ThreadInfo]:
        """The user's threads, most recently active first."""
        check_id("user_id", user_id)
        return [
            ThreadInfo(t.thread_id, t.user_id, t.next_seq, t.created_at, t.updated_at)
            for t in self._storage.threads.of_user(user_id)
        ]

    def users(self) -> list[str]:
        """Every user with a thread or a long-term memory."""
        return self._storage.users()

    def summary(self, user_id: str, thread_id: str) -> str | None:
        """The thread's running summary of evicted messages, ``None`` if there is none yet."""
        return self._summary.current(self._thread(user_id, thread_id))

    def entities(self, user_id: str) -> list[Entity]:
        """The user's entity profiles, most recently updated first."""
        check_id("user_id", user_id)
        return self._entities.all(user_id)

    def entity(self, user_id: str, name: str) -> Entity | None:
        """One entity profile with its attribute history; names match case-insensitively."""
        check_id("user_id", user_id)
        return self._entities.get(user_id, name)

    def stats(self) -> MemoryStats:
        """Counts of what is stored, the database's size, the index, and the job journal.

        ``jobs`` counts the journal: ``pending`` (this memory runs them), ``waiting`` (they
        need an extractor this memory lacks: journaled by a memory with a chat model, they
        wait for one, and so do the later jobs of their thread), ``running``, ``stale``
        (leased by a process that no longer runs, or whose lease ran out: they run again),
        ``done``, ``failed``. ``failed_jobs`` lists the jobs that failed for good, with
        their reasons; ``dropped_items`` counts the items of models' answers that validation
        left out (the rest of each answer was applied) and ``dropped`` lists the newest, with
        their job, position and reason; ``usage`` what the jobs' LLM calls cost (calls, prompt and completion
        tokens, time; in all, per day and per user) and ``budget`` the spend budget's state
        (jobs held back by it, when it frees); ``index`` says how many records wait for
        their vector point and, while another process holds the index (or, for a manual
        memory, a lost index), why this one cannot write them; ``degraded`` counts, per
        cause (``index_held_elsewhere``, ``index_missing``, ``embedding_mismatch``,
        ``index_unavailable``), the answers given without the index: each section a context
        left out, each search or recall refused (the first is also logged, once per process).
        Reading changes nothing.
        """
        pending = self._storage.unindexed_count()
        dropped = self._storage.jobs.dropped_items()
        return MemoryStats({
            # Where the data lives: the directory, or the database (without its password).
            "data_dir": str(self.data_dir) if self.data_dir is not None else self._storage.location,
            **self._storage.counts(),
            "index": {
                "pending": pending,
                "forgets_pending": len(self._storage.forgetting.pending()),
                "held_elsewhere": self._index.unavailable,
            },
            # Answers given without the index, per cause (degradation.py); {} when none.
            "degraded": self._degradations.counts(),
            "extractor": "offline" if self.extractor.offline else self.extractor.name,
            "jobs": self._jobs.counts(),
            "failed_jobs": [
                {"key": j.key, "attempts": j.attempts, "reason": j.last_error, "at": j.updated_at}
                for j in self._storage.jobs.rows("failed", limit=20)
            ],
            # What validation left out of the models' answers (the rest was applied).
            "dropped_items": dropped["items"],
            "dropped": dropped["recent"],
            **self._spend.stats(),
        })

    # --- forgetting -------------------------------------------------------------------

    def forget(
        self,
        *,
        user_id: str | None = None,
        thread_id: str | None = None,
        entity: str | None = None,
        memory_id: str | None = None,
    ) -> dict[str, int]:
        """Delete a thread, an entity, a memory, or everything of a user, in every layer.

        ``thread_id``: the thread, its summary, jobs, episodes, LangGraph checkpoints and the
        memories and entity attributes learned in it (with ``user_id``, only if it is theirs).
        ``user_id`` with ``entity`` or ``memory_id``: that one profile or memory. ``user_id``
        alone: all of the user — messages, summaries, entities, memories, episodes, jobs,
        store items and the checkpoints of their threads. One journaled operation: the
        database rows go at once, the vector points now or (if another process holds the
        index) as soon as it can, and no forgotten text stays in a file.
        Returns counts of what was deleted. This is the only way messages leave the log.

        The result also says what was scrubbed: ``job_answers_scrubbed``, the job rows whose
        copies of the deleted text (a job's saved model answer, a reason quoting it) were
        dropped or redacted; and, for a directory memory, ``wal_scrubbed``: ``True`` when
        ``memory.db``'s write-ahead log was truncated, ``False`` when a reader (an open read
        transaction here or in another process, such as a checkpointer ``list()`` iterator)
        held it past ``scrub_wait_seconds`` — its frames keep the deleted rows until the
        reader ends; a WARNING says so, and the truncation is retried by the upkeep, at
        :meth:`close`, on the next open, and by :meth:`scrub`.
        """
        self._check_open()
        if user_id is None and thread_id is None:
            raise InvalidInputError("forget() needs user_id=, thread_id=, or both")
        if user_id is not None:
            check_id("user_id", user_id)
        if thread_id is not None:
            check_id("thread_id", thread_id)
        if memory_id is not None:
            if user_id is None or thread_id is not None or entity is not None:
                raise InvalidInputError("forget(memory_id=...) takes user_id= and nothing else")
            key = check_memory_id(memory_id, missing_ok=True)
            return self._forgetter.memory(user_id, [key] if key else [])
        if entity is not None:
            if user_id is None or thread_id is not None:
                raise InvalidInputError("forget(entity=...) takes user_id= and no thread_id=")
            if not isinstance(entity, str) or not check_text(entity, "entity").strip():
                raise InvalidInputError("entity must be a non-empty name")
            return self._forgetter.entity(user_id, name_key(entity))
        if thread_id is not None:
            thread = self._storage.threads.get(thread_id)
            if thread is None and user_id is not None:
                # A thread only the checkpointer knows: its metadata says whose it is.
                owners = self._storage.checkpoints.users_of(thread_id)
                if owners and user_id not in owners:
                    raise ThreadOwnershipError(
                        f"thread {thread_id!r} does not belong to user {user_id!r}; nothing was forgotten"
                    )
            counts = self._forgetter.thread(thread_id, user_id)
            self._turns.forget_cache(thread_id)
            return counts
        assert user_id is not None
        counts = self._forgetter.user(user_id)
        # Thread ids are global, and the cache does not know owners: drop it all.
        self._turns.forget_cache()
        return counts

    async def aforget(self, **kwargs: Any) -> dict[str, int]:
        """Async :meth:`forget` (runs in a worker thread)."""
        return await asyncio.to_thread(lambda: self.forget(**kwargs))

    def scrub(self, wait_seconds: float | None = None) -> bool:
        """Finish the scrub of a forget that readers held off (``forget(...)["wal_scrubbed"]``
        was ``False``): truncate ``memory.db``'s write-ahead log, waiting at most
        ``wait_seconds`` (default ``scrub_wait_seconds``) for its readers. Returns whether
        no frame of a forgotten row is left (``True`` too when nothing was left to do, and
        for a database server, whose log is its own); ``False`` logs a WARNING. The upkeep,
        :meth:`close` and the next open retry it on their own; call this to know now.
        """
        self._check_open()
        if wait_seconds is not None and (
            isinstance(wait_seconds, bool) or not isinstance(wait_seconds, (int, float)) or not 0 <= wait_seconds <= 3600
        ):
            raise InvalidInputError(f"wait_seconds must be a number of seconds from 0 to 3600, got {wait_seconds!r}")
        return self._forgetter.scrub(None if wait_seconds is None else float(wait_seconds))

    # --- long-term memory --------------------------------------------------------------

    def remember(
        self,
        user_id: str,
        content: str,
        memory_type: str = "fact",
        importance: float = 0.5,
        metadata: dict[str, Any] | None = None,
        *,
        session_id: str | None = None,
        memory_id: str | None = None,
        merge: bool = True,
    ) -> str:
        """Store a long-term memory; returns its id (or that of the memory it merged into).

        A memory nearly identical (cosine > ``merge_threshold``) to one of the user's merges
        into it instead of adding a duplicate, unless ``merge=False``. No LLM call.
        """
        self._check_open()
        item = {"content": content, "memory_type": memory_type, "importance": importance,
                "metadata": metadata, "session_id": session_id, "memory_id": memory_id}
        return self._facts.remember_many(user_id, [item], merge=merge)[0]

    def remember_many(
        self, user_id: str, items: Iterable[Mapping[str, Any]], *, merge: bool = True
    ) -> list[str]:
        """Store several memories with one embedding call; one id per item, in order.

        Each item is a mapping with ``content`` and optionally ``memory_type``,
        ``importance``, ``metadata``, ``session_id``, ``memory_id``,
        ``source_message_ids``, ``valid_from`` and ``subject``. Every item is checked
        before anything is written.
        """
        self._check_open()
        return self._facts.remember_many(user_id, items, merge=merge)

    async def aremember(self, user_id: str, content: str, **kwargs: Any) -> str:
        """Async :meth:`remember` (embeds in a worker thread)."""
        return await asyncio.to_thread(lambda: self.remember(user_id, content, **kwargs))

    def search(
        self,
        user_id: str,
        query: str,
        k: int = 5,
        memory_types: Sequence[str] | None = None,
        min_importance: float | None = None,
        explain: bool = False,
        *,
        peek: bool = False,
    ) -> SearchResults:
        """The user's memories best matching ``query``: dense + BM25 candidates ranked by
        relevance (similarity), with importance and recency as bounded tie-breakers.

        Returned memories count as recalled unless ``peek=True``. Raises
        :class:`ShardLockedError` while another process holds the embedded index.
        """
        self._check_open()
        try:
            hits = self._facts.search(user_id, query, k, memory_types, min_importance, explain=explain, peek=peek)
        except VectorStoreError as exc:
            self._degradations.note(exc, "search")
            raise
        return SearchResults(hits, query=query)

    def recall(
        self,
        user_id: str,
        query: str,
        k: int = 10,
        *,
        grains: Sequence[str] | None = None,
        at: datetime | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        peek: bool = False,
        explain: bool = False,
    ) -> list[Evidence]:
        """The ``k`` best pieces of evidence for ``query`` across everything stored of the
        user: long-term memories (``fact``), single messages (``turn``), short runs of
        messages (``window``) and, if asked for, episodes (``session``).

        Ranked by relevance from similarity, like :meth:`search`; a time the query names
        ("last weekend", "in May 2023", "two weeks ago") is read against ``at`` (when the
        question is asked; default now), and what was said then ranks ahead. Each result
        carries its text, when it was said and the ids of the messages it came from.
        ``since``/``until`` keep only what was said in that span. No LLM is called.
        """
        self._check_open()
        # Bounded as search() bounds it: a 10 MB query took 10 s to embed and parse for dates.
        query = check_query(query)
        check_time("at", at)
        check_time("since", since)
        check_time("until", until)
        try:
            return self._recall.recall(user_id, query, k, grains=grains, at=at, since=since, until=until,
                                       peek=peek, explain=explain)
        except VectorStoreError as exc:
            self._degradations.note(exc, "recall")
            raise

    async def arecall(self, user_id: str, query: str, k: int = 10, **kwargs: Any) -> list[Evidence]:
        """Async :meth:`recall` (embeds and queries in a worker thread)."""
        return await asyncio.to_thread(lambda: self.recall(user_id, query, k, **kwargs))

    async def asearch(self, user_id: str, query: str, k: int = 5, **kwargs: Any) -> SearchResults:
        """Async :meth:`search` (embeds and queries in a worker thread)."""
        return await asyncio.to_thread(lambda: self.search(user_id, query, k, **kwargs))

    def get_memory(self, user_id: str, memory_id: str) -> MemoryEntry:
        """One memory of the user (``NotFoundError`` if it does not exist or is another's)."""
        self._check_open()
        return self._facts.get(user_id, memory_id)

    def update_memory(self, user_id: str, memory_id: str, **changes: Any) -> MemoryEntry:
        """Change a memory's ``content``, ``importance``, ``memory_type`` or ``metadata``."""
        self._check_open()
        unknown = set(changes) - {"content", "importance", "memory_type", "metadata"}
        if unknown:
            raise InvalidInputError(f"update_memory() cannot change {', '.join(sorted(unknown))}")
        return self._facts.update(user_id, memory_id, **changes)

    def list_memories(
        self, user_id: str, memory_types: Sequence[str] | None = None, limit: int = 100, offset: int = 0
    ) -> list[MemoryEntry]:
        """The user's memories, newest first (superseded ones included: their history)."""
        self._check_open()
        return self._facts.page(user_id, memory_types, limit, offset)

    def reindex(self, progress: Callable[[int, int], None] | None = None) -> dict[str, int]:
        """Rebuild every vector (memories, episodes) from its record's text with the current
        embeddings, e.g. after changing the model. Resumable: run it again after a stop.
        Returns how many were re-embedded: ``{"memories": …, "episodes": …}``."""
        self._check_open()
        return self._index.reindex(progress)

    def optimize(self) -> None:
        """Compact the vector index and build its search graphs now (waits for it).

        The embedded index does this in the background as writes accumulate; call it after a
        bulk load to search at full speed at once. A Qdrant server optimises by itself.
        """
        self._check_open()
        self._index.optimize()

    # --- export and import ---------------------------------------------------------------

    def export_user(self, user_id: str) -> dict[str, list[dict[str, Any]]]:
        """Everything stored of the user as JSON-ready data (``tiered-memory export``).

        Keys: ``threads``, ``messages``, ``summaries``, ``entities`` (with attribute
        history), ``memories`` (with their access state; not vectors), ``episodes`` and
        ``store_items``. :meth:`import_user` restores it.
        """
        check_id("user_id", user_id)
        self._check_open()
        from .ops.legacy import memory_record

        data = self._storage.portability.export_user(user_id)
        data["memories"] = [memory_record(MemoryRow(**row)) for row in data["memories"]]
        return data

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
        check_id("user_id", user_id)
        self._check_open()
        if not isinstance(data, Mapping):
            raise InvalidInputError(f"data must be what export_user returned (a dict), got {type(data).__name__}")
        from .ops.legacy import prepare_import

        rows = prepare_import(user_id, data, self._turns.serialise, self.items.embed_value)
        counts = self._storage.portability.import_user(
            user_id, rows, counter=self.counter.name, now=self._clock().isoformat()
        )
        if self._index.available():
            total = self._storage.unindexed_count()
            # Bounded passes (a few embedding batches each) rather than one, to report
            # progress; counted by what is left, since a background worker may index too.
            while self._index.sync(limit=_IMPORT_PASS):
                if progress is not None:
                    left = self._storage.unindexed_count()
                    total = max(total, left)
                    progress(total - left, total)
        self._jobs.notify()
        return counts

    # --- episodes ---------------------------------------------------------------------

    def end_session(self, user_id: str, thread_id: str) -> str | None:
        """Close the thread's current session: write one episode of what happened in it.

        The episode covers the messages after the thread's previous episode. Returns its
        id (written by the time this returns in ``inline`` mode, after :meth:`flush` in
        ``background`` mode), or ``None`` when no message is new since the last episode.
        """
        thread = self._thread(user_id, thread_id)
        if thread is None:
            return None
        last = thread.next_seq - 1
        if last <= self._storage.episodes.last_seq(thread_id):
            return None
        # revive: an episode job of the same span that failed (a model outage) runs again,
        # rather than holding its key with nothing written.
        self._storage.jobs.enqueue(
            "episode", user_id, thread.key, {"last_seq": last}, self._clock().isoformat(), self._job_needs(),
            revive=True,
        )
        self._jobs.notify()
        return episode_id(thread_id, last)

    def search_episodes(
        self,
        user_id: str,
        query: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        k: int = 5,
    ) -> list[EpisodeHit]:
        """The user's episodes overlapping ``[since, until]``, most relevant to ``query`` first
        (newest first without a query)."""
        check_id("user_id", user_id)
        if query is not None:
            query = check_query(query)
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise InvalidInputError(f"k must be a positive int, got {k!r}")
        check_time("since", since)
        check_time("until", until)
        try:
            return self._episodes.search(user_id, query, since=since, until=until, k=k)
        except VectorStoreError as exc:
            self._degradations.note(exc, "search_episodes")
            raise

    def _end_idle_sessions(self) -> None:
        minutes = self.config.idle_timeout_minutes
        if minutes is None:
            return
        now = self._clock()
        cutoff = (now - timedelta(minutes=minutes)).isoformat()
        for thread in self._storage.threads.idle(cutoff):
            self._storage.jobs.enqueue(
                "episode", thread.user_id, thread.key, {"last_seq": thread.next_seq - 1}, now.isoformat(),
                self._job_needs(),
            )

    # --- the index's upkeep -----------------------------------------------------------

    def _upkeep(self) -> int:
        """Index what waits for its point and finish journaled forgets (holder only)."""
        # Any process may truncate the log: a scrub that readers held off is retried here
        # (not counted: flush does not wait for readers to go).
        self._forgetter.retry_scrub()
        if not self._backlog():
            return 0
        return self._forgetter.resume() + self._index.sync(stop=self._jobs.stopping)

    def _backlog(self) -> int:
        """Records and forgets this process could index now (0 when another holds it)."""
        waiting = self._storage.unindexed_count() + len(self._storage.forgetting.pending())
        if not waiting or not self._index.available():
            return 0
        return waiting

    def _query_cached(self) -> Embeddings:
        from .embeddings import CachedQueryEmbeddings, default_embeddings

        if self.embeddings is None:
            self.embeddings = default_embeddings()
        if not isinstance(self.embeddings, CachedQueryEmbeddings):
            self.embeddings = CachedQueryEmbeddings(self.embeddings)
        return self.embeddings


def _open_storage(
    data_dir: str | Path | None,
    database_url: str | None,
    *,
    server: bool,
    decay: float,
    pool_min: int,
    pool_max: int,
    rekeep: bool = True,
    scrub_wait: float = 2.0,
) -> Storage:
    """The directory's SQLite store, or the PostgreSQL database at ``database_url``."""
    if database_url is None:
        return Storage.open(
            "./memory" if data_dir is None else data_dir, decay=decay, rekeep=rekeep, reader_wait_seconds=scrub_wait
        )
    if data_dir is not None:
        raise ConfigError(
            "pass data_dir (a memory in a directory) or database_url (a memory in PostgreSQL), not both"
        )
    if not server:
        raise ConfigError(
            "database_url needs qdrant_url= (or qdrant_client=): the embedded Qdrant Edge shard "
            "belongs to one directory and one process, and a database is shared by many; run a "
            "Qdrant server (docker run -p 6333:6333 qdrant/qdrant) and pass its URL"
        )
    return Storage.open_url(database_url, decay=decay, pool_min=pool_min, pool_max=pool_max, rekeep=rekeep)
