"""The parts of one memory and their wiring: the relational store, the recall index, the
layers, the job runner and forgetting.

:class:`~langchain_tiered_memory.TieredMemory` and its grouped sub-APIs (``api/``) share one
:class:`Parts`; none of it is public: users reach it through the facade's methods only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel

from ..config import CALLS_PER_JOB, MemoryConfig
from ..entries import check_id
from ..errors import (
    ConfigError,
    CorruptDatabaseError,
    MemoryClosedError,
    ShardLockedError,
    ThreadOwnershipError,
    TieredMemoryError,
)
from ..index.degradation import Degradations
from ..index.recall_index import RecallIndex
from ..index.searches import Searches
from ..jobs import NEEDS_LLM, JobHandlers, JobJournal, JobRunner
from ..layers.entities import EntityLayer
from ..layers.episodes import EpisodeLayer
from ..layers.facts import FactLayer
from ..layers.items import ItemLayer, Items
from ..layers.summary import SummaryLayer
from ..llm.spending import Spending, budget_for
from ..ops.forgetting import Forgetter
from ..ops.legacy import upgrade_directory
from ..recall.dialogue import DialogueLayer
from ..recall.layer import RecallLayer
from ..storage import Storage
from ..storage.database import WriteLockBusy
from ..storage.rows import ThreadRow
from ..tokens import TokenCounter, TokenCounterLike, make_counter
from ..turn import Turns

if TYPE_CHECKING:
    from langchain_core.callbacks import BaseCallbackHandler

    from ..extraction import Extractor

logger = logging.getLogger("langchain_tiered_memory")

__all__ = ["Parts"]


class Parts:
    """Everything one memory is made of, opened and wired (the constructor arguments are
    :class:`~langchain_tiered_memory.TieredMemory`'s)."""

    def __init__(
        self,
        data_dir: str | Path | None,
        config: MemoryConfig,
        model: BaseChatModel | None,
        embeddings: Embeddings | None,
        *,
        token_counter: TokenCounterLike | TokenCounter | None,
        qdrant_url: str | None,
        qdrant_api_key: str | None,
        qdrant_client: Any,
        database_url: str | None,
        pool_min: int,
        pool_max: int,
        callbacks: Sequence[BaseCallbackHandler] | None,
    ) -> None:
        self.config = config
        self.model = model
        self.embeddings = embeddings
        # A manual memory runs nothing and writes nothing on its own: it may be a look.
        manual = config.job_mode == "manual"
        if not manual:
            self._load_embeddings()  # in the background while the rest opens
        self.counter = make_counter(token_counter)
        self.clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc)
        self._extractor: Extractor | None = None
        #: What closes with the memory, first to last (adapters holding connections).
        self.closers: list[Callable[[], None]] = []
        if model is not None and not isinstance(model, BaseChatModel):
            self.extractor  # noqa: B018 - an Extractor is used as is; anything else is refused now, not in every job
        self.storage = open_storage(
            data_dir, database_url, server=qdrant_url is not None or qdrant_client is not None,
            decay=config.decay, pool_min=pool_min, pool_max=pool_max, rekeep=not manual,
            scrub_wait=config.scrub_wait_seconds,
        )
        try:
            self.index = RecallIndex(
                self.data_dir, self.storage, self.query_cached,
                url=qdrant_url, api_key=qdrant_api_key, client=qdrant_client, repair=not manual,
            )
            self._open_checks()
        except BaseException:
            self.storage.close()
            raise
        storage, counter = self.storage, self.counter
        self.forgetter = Forgetter(storage, self.index, self.now, scrub_wait=config.scrub_wait_seconds)
        if not manual:
            self.forgetter.retry_scrub()  # one an earlier process left (readers, a crash)
        self.summary = SummaryLayer(storage, counter, config.summary_max_tokens)
        self.entities = EntityLayer(storage, counter, config.entities_max_tokens)
        self.facts = FactLayer(
            storage, self.index, config, clock=self.now, counter=counter, evict=self.forgetter.memories
        )
        self.episodes = EpisodeLayer(
            storage, self.index, counter, max_tokens=config.episodes_max_tokens,
            k=config.episodes_k, threshold=config.score_threshold,
            embedded=lambda user_id, query: self.recall.embedded_text(user_id, query),
        )
        self.dialogue = DialogueLayer(storage)
        self.recall = RecallLayer(storage, self.index, self.facts, self.entities, config, counter, self.now)
        for source in (self.facts, self.episodes, self.dialogue):
            self.index.add_source(source)
        # What this memory answers without (another process holds the index …): said once,
        # counted in stats()["degraded"] (degradation.py).
        self.degradations = Degradations(str(self.data_dir) if self.data_dir is not None else storage.location)
        if manual:
            pass  # the index opens when a search needs it, and repairs nothing
        elif self.index.exists():
            # Opening it checks it against the records (a lost point is rebuilt) and finishes
            # journaled forgets; cheap: the embedding model loads only when something embeds.
            try:
                self.index.backend()
            except ShardLockedError as exc:  # a second worker: it says so now, not at its first recall
                self.degradations.note(exc, "opening it", count=False)
        elif any(s.indexed_count() for s in (self.facts, self.episodes, self.dialogue)):
            logger.warning(
                "the vector index of %s is missing; it is being rebuilt from memory.db", self.data_dir
            )
            for source in (self.facts, self.episodes, self.dialogue):
                source.reset()
        #: Generic namespaced items (the LangGraph store's documents besides memories).
        self.items = ItemLayer(storage, self.now, self.query_cached)
        #: What ``memory.items`` shows of them: a narrow view, the layer's internals left out.
        self.item_view = Items(self.items)
        # Order is priority: a section early in the list is served first from the budget.
        self.turns = Turns(
            storage, config, counter, [self.summary, self.entities, self.recall, self.episodes], self.now,
            lambda: Searches(self.index),
        )
        self.turns.on_degraded = self.degradations.note
        handlers = JobHandlers(storage, self.turns, self.summary, self.entities, lambda: self.extractor, config, self.now)
        # What jobs spend on the model is metered and budgeted (usage.py, budget.py).
        self.spend = Spending(
            storage, budget_for(config, model is not None), self.now, lambda: not self.extractor.offline, callbacks
        )
        self.jobs = JobRunner(
            storage,
            self.spend.metered(handlers.handlers()),
            gate=self.spend.gate,
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
        self.journal = JobJournal(storage, self.jobs, self.check_open)
        # Started once this object is whole: the worker's upkeep reads self.jobs.
        self.jobs.start()
        if not manual:
            # Work journaled by an earlier process that stopped mid-way resumes now.
            self._end_idle_sessions()
            self.jobs.notify()
            # Jobs this memory cannot run (no chat model) are said at once, not found later.
            self.journal.stranded()

    def _open_checks(self) -> None:
        if self.data_dir is None:  # a database server: no directory of an older layout
            return
        upgrade_directory(self.storage, self.data_dir, self.query_cached)
        if self.storage.is_new and not self.index.server and self.index.path.is_dir():
            raise CorruptDatabaseError(
                f"{self.storage.location} is missing or empty, but {self.index.path} holds a vector "
                "index built from an earlier memory.db, whose records (the text) are gone with it. "
                "Restore memory.db from a backup; or, to start over, delete the qdrant/ directory too."
            )

    # --- shared by the facade and its groups --------------------------------------------

    @property
    def data_dir(self) -> Path | None:
        """The directory holding this memory (``None`` with ``database_url``)."""
        if self.storage.dialect.name != "sqlite":
            return None
        return Path(self.storage.location).parent

    def check_open(self) -> None:
        """Raise :class:`MemoryClosedError` once the memory is closed."""
        if self.storage.closed:
            raise MemoryClosedError("this TieredMemory is closed; create a new one")

    def now(self) -> datetime:
        """The memory's clock (tests set ``clock``)."""
        return self.clock()

    def thread(self, user_id: str, thread_id: str) -> ThreadRow | None:
        """The thread's row, checked to be the user's (``None``: no such thread yet)."""
        check_id("user_id", user_id)
        check_id("thread_id", thread_id)
        thread = self.storage.threads.get(thread_id)
        if thread is not None and thread.user_id != user_id:
            raise ThreadOwnershipError(
                f"thread {thread_id!r} belongs to another user; thread ids are global (as "
                "in LangGraph), so give each user's threads ids of their own"
            )
        return thread

    @property
    def extractor(self) -> Extractor:
        """The extractor of entities, memories and summaries: the LLM one, or offline."""
        if self._extractor is None:
            from ..extraction import make_extractor

            self._extractor = make_extractor(
                self.model, timeout=self.config.llm_timeout_seconds, counter=self.counter,
                max_output_tokens=self.config.llm_max_output_tokens,
            )
        return self._extractor

    def job_needs(self) -> str | None:
        """What the jobs this memory journals need: its LLM, when it has one (the offline
        rules would silently do worse work), else nothing."""
        return None if self._offline() else NEEDS_LLM

    def query_cached(self) -> Embeddings:
        """The memory's embeddings (the default model unless given), caching queries."""
        from ..embeddings import CachedQueryEmbeddings, default_embeddings

        if self.embeddings is None:
            self.embeddings = default_embeddings()
        if not isinstance(self.embeddings, CachedQueryEmbeddings):
            self.embeddings = CachedQueryEmbeddings(self.embeddings)
        return self.embeddings

    def _load_embeddings(self) -> None:
        """Start loading the local embedding model, if it is the one in use (a model behind
        an API is never called unasked): the first turn then finds it loaded."""
        from ..embeddings import MiniLMEmbeddings

        inner = getattr(self.query_cached(), "inner", None)
        if isinstance(inner, MiniLMEmbeddings):
            inner.load_in_background()

    def enqueue_episode(self, thread: ThreadRow, last_seq: int, *, revive: bool = False) -> None:
        """Journal the episode job of ``thread``'s messages through ``last_seq``."""
        self.storage.jobs.enqueue(
            "episode", thread.user_id, thread.key, {"last_seq": last_seq}, self.clock().isoformat(),
            self.job_needs(), revive=revive,
        )

    def close(self) -> None:
        """Release the index and the database (the jobs and adapters are closed first)."""
        try:
            self._write_recalls()
            self.index.close()
        finally:
            self.storage.close()
            self.forgetter.close()  # says if readers still held a forget's scrub
            self.turns.forget_cache()

    def _write_recalls(self) -> None:
        try:
            self.facts.recalls.write()
        except MemoryClosedError:
            pass
        except Exception as exc:  # noqa: BLE001 - bookkeeping: closing goes on
            logger.warning("closing: %d recall counts could not be written (%s)", len(self.facts.recalls), exc)

    # --- what the job runner calls ----------------------------------------------------

    def _provides(self) -> tuple[str, ...]:
        """What this memory can do for a job's needs: an LLM extractor, or nothing special."""
        return () if self._offline() else (NEEDS_LLM,)

    def _offline(self) -> bool:
        try:
            return bool(self.extractor.offline)
        except TieredMemoryError:
            # A model that cannot be used (the job records why): the turn is stored all
            # the same, and its job is this memory's to run and fail.
            return self.model is None

    def _end_idle_sessions(self) -> None:
        minutes = self.config.idle_timeout_minutes
        if minutes is None:
            return
        cutoff = (self.clock() - timedelta(minutes=minutes)).isoformat()
        for thread in self.storage.threads.idle(cutoff):
            self.enqueue_episode(thread, thread.next_seq - 1)

    def _upkeep(self) -> int:
        """Write the recalls counted since the last upkeep; index what waits for its point
        and finish journaled forgets (holder only)."""
        try:
            self.facts.recalls.write(wait=False)
        except WriteLockBusy as exc:  # another process holds the write lock: next time
            logger.debug("upkeep: recall counts kept for later (%s)", exc)
        # Any process may truncate the log: a scrub that readers held off is retried here
        # (not counted: flush does not wait for readers to go).
        self.forgetter.retry_scrub()
        if self.index.unavailable is not None:
            # Another process held the shard: once it lets go, this one takes it over now
            # (retried every few seconds), not at its next search, so stats() says so and
            # the forgets journaled meanwhile are finished.
            self.index.available()
        if not self._backlog():
            return 0
        return self.forgetter.resume() + self.index.sync(stop=self.jobs.stopping)

    def _backlog(self) -> int:
        """Records and forgets this process could index now (0 when another holds it)."""
        waiting = self.storage.unindexed_count() + len(self.storage.forgetting.pending())
        if not waiting or not self.index.available():
            return 0
        return waiting


def open_storage(
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
