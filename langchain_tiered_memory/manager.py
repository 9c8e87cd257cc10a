"""``TieredMemory``: one turn's memory work, ``before_turn`` and ``after_turn``, over one budget.

``before_turn`` is the latency-critical path and makes no LLM call: it reads the thread's
cached index, asks each memory section for its text, and fits the window into what is left.
``after_turn`` appends the turn's messages to the durable log (the only synchronous write)
and records which messages have left the window.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    convert_to_messages,
    message_chunk_to_message,
    message_to_dict,
    messages_from_dict,
)

from .config import MemoryConfig
from .context import OVERHEAD, SYSTEM, WINDOW, ContextSection, MemoryContext, TokenUsage, render_memory_block
from .display import MemoryStats, SearchResults
from .errors import (
    ConfigError,
    EmbeddingError,
    InvalidIdentifierError,
    InvalidInputError,
    InvalidMessageError,
    MemoryClosedError,
    ShardLockedError,
    ThreadOwnershipError,
)
from .entities import Entity, EntityLayer, name_key, updates
from .episodes import Episode, EpisodeHit, EpisodeIndex, EpisodeLayer, episode_id, payload
from .jobs import JobRunner
from .storage import EpisodeRow, IndexRow, JobRow, NewMessage, Storage, SummaryUpdate, ThreadRow
from .summary import SummaryLayer
from .tokens import TokenCounter, TokenCounterLike, make_counter
from .window import ThreadIndex, fit_group, select, truncate_message

if TYPE_CHECKING:
    from .extraction import Extractor
    from .vectors import MemoryEntry, MemoryHit, VectorMemory
    from .integrations.chat_history import TieredChatMessageHistory
    from .integrations.checkpointer import AsyncTieredCheckpointSaver, TieredCheckpointSaver
    from .integrations.store import TieredMemoryStore

MAX_ID_LENGTH = 512
# Threads whose index stays in memory; an evicted one is rebuilt from SQLite on next use.
_CACHED_THREADS = 256


class SectionProvider(Protocol):
    """A memory layer that contributes a section to the context (summary, entities, …)."""

    name: str

    def section(
        self, user_id: str, thread: ThreadRow | None, query: str | None, max_tokens: int
    ) -> ContextSection | None:
        """The layer's section for this turn, at most ``max_tokens`` tokens, or ``None``."""


@dataclass(frozen=True)
class TurnResult:
    """What :meth:`TieredMemory.after_turn` stored."""

    stored: int
    duplicates: int
    seqs: list[int]
    evicted: int


@dataclass(frozen=True)
class ThreadInfo:
    """A thread of a user, as listed by :meth:`TieredMemory.threads`."""

    thread_id: str
    user_id: str
    messages: int
    created_at: str
    updated_at: str


class TieredMemory:
    """Layered memory for LangChain and LangGraph agents, stored under one directory.

    Args:
        data_dir: Directory of the memory; ``memory.db`` is created in it.
        config: Budgets and forgetting parameters (a :class:`MemoryConfig` or a dict).
        model: Chat model for the layers that need an LLM (summary, extraction).
        embeddings: Embeddings for the long-term layers.
        token_counter: A chat model or a callable over a list of messages, to count tokens
            instead of tiktoken ``cl100k_base``.
        qdrant_url, qdrant_api_key: Keep long-term memories and episodes on a Qdrant server
            or cluster instead of the embedded Qdrant Edge shards under ``data_dir``.
        qdrant_client: A ``qdrant_client.QdrantClient`` to use instead of ``qdrant_url``.

    Use it as a context manager, or call :meth:`close` when done.
    """

    def __init__(
        self,
        data_dir: str | Path = "./memory",
        config: MemoryConfig | dict[str, Any] | None = None,
        model: BaseChatModel | None = None,
        embeddings: Embeddings | None = None,
        *,
        token_counter: TokenCounterLike | TokenCounter | None = None,
        qdrant_url: str | None = None,
        qdrant_api_key: str | None = None,
        qdrant_client: Any = None,
    ) -> None:
        self.config = _as_config(config)
        # Server mode: the same collections on a Qdrant server or cluster (or a given
        # qdrant-client, e.g. its local mode in tests). Default: Edge shards in data_dir.
        self._qdrant = {"url": qdrant_url, "api_key": qdrant_api_key, "client": qdrant_client}
        self._vectors: VectorMemory | None = None
        self._vector_lock = threading.Lock()
        self.model = model
        self.embeddings = embeddings
        self.counter = make_counter(token_counter)
        self._storage = Storage(data_dir)
        self._lock = threading.RLock()
        self._indexes: OrderedDict[str, ThreadIndex] = OrderedDict()
        self._memory_tokens: dict[str, int] = {}
        self._clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc)
        self._extractor: Extractor | None = None
        self._summary = SummaryLayer(self._storage, self.counter, self.config.summary_max_tokens)
        self._entities = EntityLayer(self._storage, self.counter, self.config.entities_max_tokens)
        self._episode_index: EpisodeIndex | None = None
        self._episode_backend: Any = None
        self._store: TieredMemoryStore | None = None
        self._checkpointer: TieredCheckpointSaver | None = None
        self._async_checkpointer: AsyncTieredCheckpointSaver | None = None
        self._hooks: dict[str, Callable[..., Any]] = {}
        self._peek = False
        self._episodes = EpisodeLayer(
            self._storage,
            self.counter,
            self._episode_index_or_open,
            max_tokens=self.config.episodes_max_tokens,
            k=self.config.episodes_k,
        )
        # Order is priority: a section early in the list is served first from the budget.
        self._sections: list[SectionProvider] = [
            self._summary,
            self._entities,
            _MemoriesSection(self),
            self._episodes,
        ]
        self._jobs = JobRunner(
            self._storage,
            {"extract": self._run_extract_job, "episode": self._run_episode_job},
            periodic=self._end_idle_sessions,
            mode=self.config.job_mode,
            max_attempts=self.config.job_max_attempts,
            backoff_seconds=self.config.job_backoff_seconds,
            lease_seconds=self.config.job_lease_seconds,
        )
        # Work journaled by an earlier process that stopped mid-way resumes now.
        self._end_idle_sessions()
        self._jobs.notify()

    # --- lifecycle --------------------------------------------------------------------

    @property
    def data_dir(self) -> Path:
        """The directory holding this memory."""
        return self._storage.data_dir

    @property
    def extractor(self) -> Extractor:
        """The extractor of entities, memories and summaries: the LLM one, or offline."""
        if self._extractor is None:
            from .extraction import make_extractor

            self._extractor = make_extractor(
                self.model, timeout=self.config.llm_timeout_seconds, counter=self.counter
            )
        return self._extractor

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until the jobs of earlier turns are done (or failed for good).

        Returns ``False`` if ``timeout`` seconds passed first. Call it before reading what
        background jobs produce (summaries, entities, memories).
        """
        self._check_open()
        return self._jobs.flush(timeout)

    def close(self) -> None:
        """Stop the job worker and release the database. Safe to call twice.

        Jobs not yet run stay in the journal and run when the directory is opened again.
        """
        self._jobs.close()
        for saver in (self._checkpointer, self._async_checkpointer):
            if saver is not None:
                saver.close()
        with self._vector_lock:
            if self._vectors is not None:
                self._vectors.close()
            if self._episode_backend is not None:
                self._episode_backend.close()
        self._storage.close()
        with self._lock:
            self._indexes.clear()

    def __enter__(self) -> TieredMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._storage.closed:
            raise MemoryClosedError("this TieredMemory is closed; create a new one")

    # --- the turn ---------------------------------------------------------------------

    def before_turn(
        self, user_id: str, thread_id: str, query: str | None = None, *, peek: bool = False
    ) -> MemoryContext:
        """What to send the model this turn, within the context budget.

        ``query`` is what memory sections search for; by default the thread's newest human
        message. No LLM is called. The memories shown count as recalled (access boost),
        unless ``peek=True``: a look at the context that changes nothing (``inspect``).
        """
        _check_id("user_id", user_id)
        _check_id("thread_id", thread_id)
        if query is not None and not isinstance(query, str):
            raise InvalidInputError(f"query must be a str or None, got {type(query).__name__}")
        with self._lock:
            thread = self._storage.thread(thread_id)
            _check_owner(thread, user_id)
            index = self._index(thread)
            avail = self._available()
            system_msg, system_tokens = self._system_message(index)
            system_charge = max(self.config.system_reserve, system_tokens)
            if query is None and index is not None:
                query = self._last_human_text(index)
            # Read by the memories section; safe as an attribute: the lock is held throughout.
            self._peek = peek
            try:
                sections = self._build_sections(user_id, thread, query, (avail - system_charge) // 2)
            finally:
                self._peek = False
            block = render_memory_block(sections)
            block_tokens = self.counter.count_message(block) if block is not None else 0
            if thread is not None:
                self._memory_tokens[thread_id] = block_tokens
            window, window_tokens, start, truncated = self._window(
                index, avail - system_charge - block_tokens, thread
            )
        usage: dict[str, int] = {SYSTEM: system_tokens}
        usage.update({s.name: s.tokens for s in sections})
        if block is not None:
            # The fence and headings around the sections cost tokens too.
            usage["memory_frame"] = block_tokens - sum(s.tokens for s in sections)
        usage[WINDOW] = window_tokens
        usage[OVERHEAD] = self.counter.overhead
        messages = [m for m in (system_msg, block) if m is not None] + window
        return MemoryContext(
            user_id=user_id,
            thread_id=thread_id,
            messages=messages,
            token_usage=TokenUsage(usage, self.config.context_budget),
            sections=tuple(sections),
            window=window,
            system_message=system_msg,
            evicted=start,
            truncated=truncated,
            query=query,
        )

    async def abefore_turn(
        self, user_id: str, thread_id: str, query: str | None = None, *, peek: bool = False
    ) -> MemoryContext:
        """Async :meth:`before_turn` (runs in a worker thread: SQLite is blocking)."""
        return await asyncio.to_thread(self.before_turn, user_id, thread_id, query, peek=peek)

    def after_turn(
        self, user_id: str, thread_id: str, messages: Sequence[BaseMessage], *, extract: bool = True
    ) -> TurnResult:
        """Append the turn's messages to the thread's log, durably, before anything else.

        A message whose ``id`` the thread already holds is skipped, so sending the same
        messages again stores nothing twice. Messages without an ``id`` get one.
        ``extract=False`` stores them without journaling an extraction job, for a turn still
        under way (its input, its tool steps): the turn's last ``after_turn`` journals one
        job that covers every message not yet extracted, so a turn costs one LLM call.
        """
        _check_id("user_id", user_id)
        _check_id("thread_id", thread_id)
        items = _normalise(messages)
        rows = [self._serialise(m) for m in items]
        now = self._clock().isoformat()
        with self._lock:
            result = self._storage.append_messages(
                user_id, thread_id, rows, counter=self.counter.name, now=now,
                job_kind="extract" if extract else None,
            )
            index = self._indexes.get(thread_id)
            seqs = [seq for seq, _ in result.stored]
            if index is not None and index.key == result.thread.key and seqs and index.next_seq == seqs[0]:
                # Nobody appended in between: extend the cached index without a read.
                by_id = {r.message_id: r for r in rows}
                index.extend(
                    [
                        IndexRow(
                            seq, by_id[mid].type, by_id[mid].tokens, self.counter.name,
                            by_id[mid].tool_calls,
                        )
                        for seq, mid in result.stored
                    ]
                )
            evicted = self._record_eviction(result.thread)
        if seqs and extract:
            self._jobs.notify()
        return TurnResult(len(seqs), result.duplicates, seqs, evicted)

    async def aafter_turn(
        self, user_id: str, thread_id: str, messages: Sequence[BaseMessage], *, extract: bool = True
    ) -> TurnResult:
        """Async :meth:`after_turn` (runs in a worker thread: SQLite is blocking)."""
        return await asyncio.to_thread(self.after_turn, user_id, thread_id, messages, extract=extract)

    def recorded_ids(self, user_id: str, thread_id: str, message_ids: Sequence[str]) -> set[str]:
        """Which of ``message_ids`` the thread's log already holds.

        Lets an adapter whose graph state holds the whole thread send only what is new.
        """
        _check_id("user_id", user_id)
        _check_id("thread_id", thread_id)
        thread = self._storage.thread(thread_id)
        _check_owner(thread, user_id)
        if thread is None or not message_ids:
            return set()
        return self._storage.recorded_ids(thread.key, list(message_ids))

    # --- reading the log --------------------------------------------------------------

    def get_messages(self, user_id: str, thread_id: str) -> list[BaseMessage]:
        """Every message of the thread's log, evicted ones included, oldest first."""
        _check_id("user_id", user_id)
        _check_id("thread_id", thread_id)
        thread = self._storage.thread(thread_id)
        _check_owner(thread, user_id)
        if thread is None or thread.next_seq == 0:
            return []
        data = self._storage.message_data(thread.key, 0, thread.next_seq - 1)
        return messages_from_dict([data[s] for s in sorted(data)])

    def threads(self, user_id: str) -> list[ThreadInfo]:
        """The user's threads, most recently active first."""
        _check_id("user_id", user_id)
        return [
            ThreadInfo(t.thread_id, t.user_id, t.next_seq, t.created_at, t.updated_at)
            for t in self._storage.threads_of(user_id)
        ]

    @property
    def store(self) -> TieredMemoryStore:
        """This memory as a LangGraph ``BaseStore`` (``graph.compile(store=memory.store)``)."""
        if self._store is None:
            from .integrations.store import TieredMemoryStore

            self._store = TieredMemoryStore(self)
        return self._store

    @property
    def checkpointer(self) -> TieredCheckpointSaver:
        """A LangGraph checkpointer keeping thread state in this memory's database file
        (``graph.compile(checkpointer=memory.checkpointer)``)."""
        self._check_open()
        with self._lock:
            if self._checkpointer is None:
                from .integrations.checkpointer import TieredCheckpointSaver

                self._checkpointer = TieredCheckpointSaver(self._storage)
            return self._checkpointer

    @property
    def async_checkpointer(self) -> AsyncTieredCheckpointSaver:
        """The async checkpointer over the same file, for ``ainvoke``/``astream`` graphs."""
        self._check_open()
        with self._lock:
            if self._async_checkpointer is None:
                from .integrations.checkpointer import AsyncTieredCheckpointSaver

                self._async_checkpointer = AsyncTieredCheckpointSaver(self._storage)
            return self._async_checkpointer

    @property
    def pre_model_hook(self) -> Callable[..., Any]:
        """``create_react_agent(pre_model_hook=...)``: the budgeted context as the model's
        input, without rewriting the graph's messages. Ids from ``config["configurable"]``."""
        return self._hook("pre_model_hook")

    @property
    def post_model_hook(self) -> Callable[..., Any]:
        """``create_react_agent(post_model_hook=...)``: records the turn in every layer."""
        return self._hook("post_model_hook")

    def _hook(self, name: str) -> Callable[..., Any]:
        if name not in self._hooks:
            from .integrations import hooks

            self._hooks[name] = getattr(hooks, name)(self)
        return self._hooks[name]

    def _has_vectors(self) -> bool:
        """Whether long-term memories may exist: a server collection, or an Edge shard on
        disk. Lets reads skip opening the vectors (which loads the embedding model and would
        create an empty shard)."""
        return any(self._qdrant.values()) or self._storage.has_vectors(self.data_dir)

    def _memory_users(self) -> list[str]:
        """Users with long-term memories (for the store's namespace listing)."""
        if not self._has_vectors():
            return []
        return sorted({r.payload.get("user_id") for r in self._scroll_all() if r.payload.get("user_id")})

    def _memory_subspaces(self, user_id: str) -> set[tuple[str, ...]]:
        """The store sub-namespaces the user's memories were put under."""
        from .integrations.store import STORE_SUBSPACE

        return {
            tuple((r.payload.get("metadata") or {}).get(STORE_SUBSPACE, ()))
            for r in self._scroll_all(user_id)
        }

    def _scroll_all(self, user_id: str | None = None) -> list[Any]:
        from .backends.base import Where

        where = Where(equals={"user_id": user_id}) if user_id else Where()
        out, offset = [], None
        while True:
            records, offset = self.vectors.backend.scroll(where, limit=1_000, offset=offset)
            out += records
            if offset is None:
                return out

    def _embedder(self) -> Embeddings:
        """The embeddings in use: those passed in, else the offline default (loaded once)."""
        if self.embeddings is None:
            from .embeddings import default_embeddings

            self.embeddings = default_embeddings()
        return self.embeddings

    def chat_history(self, user_id: str, thread_id: str) -> TieredChatMessageHistory:
        """A LangChain ``BaseChatMessageHistory`` over this thread (budgeted ``messages``)."""
        from .integrations.chat_history import TieredChatMessageHistory

        return TieredChatMessageHistory(self, user_id, thread_id)

    def stats(self) -> MemoryStats:
        """Counts of what is stored, the database's size, and the job journal's state.

        ``failed_jobs`` lists the jobs that failed for good, with their reasons; ``memories``
        is ``None`` while another process holds the Edge shard.
        """
        jobs = self._storage.job_counts()
        return MemoryStats({
            "data_dir": str(self.data_dir),
            **self._storage.counts(),
            "memories": self._memory_count(),
            "extractor": "offline" if self.extractor.offline else self.extractor.name,
            "jobs": {k: jobs.get(k, 0) for k in ("pending", "running", "done", "failed")},
            "failed_jobs": [
                {"key": j.key, "attempts": j.attempts, "reason": j.last_error, "at": j.updated_at}
                for j in self._storage.jobs("failed", limit=20)
            ],
        })

    def _memory_count(self) -> int | None:
        # Opening the vectors loads the embedding model: not for a memory that has none.
        if not self._has_vectors():
            return 0
        try:
            return self.vectors.backend.count()
        except ShardLockedError:
            return None  # another process has the shard; the rest of the stats still hold

    # --- summary and entities ---------------------------------------------------------

    def summary(self, user_id: str, thread_id: str) -> str | None:
        """The thread's running summary of evicted messages, ``None`` if there is none yet."""
        _check_id("user_id", user_id)
        _check_id("thread_id", thread_id)
        thread = self._storage.thread(thread_id)
        _check_owner(thread, user_id)
        return self._summary.current(thread)

    def entities(self, user_id: str) -> list[Entity]:
        """The user's entity profiles, most recently updated first."""
        _check_id("user_id", user_id)
        return self._entities.all(user_id)

    def entity(self, user_id: str, name: str) -> Entity | None:
        """One entity profile with its attribute history; names match case-insensitively."""
        _check_id("user_id", user_id)
        return self._entities.get(user_id, name)

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
        memories and entity attributes learned in it (with ``user_id``, only if it is theirs). ``user_id`` with
        ``entity`` or ``memory_id``: that one profile or memory. ``user_id`` alone: all of
        the user — messages, summaries, entities, memories, episodes, jobs, store items and
        the checkpoints of their threads.
        Returns counts of what was deleted. This is the only way messages leave the log.
        """
        if user_id is None and thread_id is None:
            raise InvalidInputError("forget() needs user_id=, thread_id=, or both")
        if user_id is not None:
            _check_id("user_id", user_id)
        if thread_id is not None:
            _check_id("thread_id", thread_id)
        if memory_id is not None:
            if user_id is None or thread_id is not None or entity is not None:
                raise InvalidInputError("forget(memory_id=...) takes user_id= and nothing else")
            return {"memories": int(self.vectors.forget(user_id, memory_id))}
        if entity is not None:
            if user_id is None or thread_id is not None:
                raise InvalidInputError("forget(entity=...) takes user_id= and no thread_id=")
            if not isinstance(entity, str) or not entity.strip():
                raise InvalidInputError("entity must be a non-empty name")
            return {"entities": self._storage.forget_entity(user_id, name_key(entity))}
        with self._lock:
            if thread_id is not None:
                thread = self._storage.thread(thread_id)
                if thread is None and user_id is not None:
                    # A thread only the checkpointer knows: its metadata says whose it is.
                    owners = self._storage.checkpoint_users(thread_id)
                    if owners and user_id not in owners:
                        raise ThreadOwnershipError(
                            f"thread {thread_id!r} does not belong to user {user_id!r}; nothing "
                            "was forgotten"
                        )
                counts = self._storage.forget_thread(thread_id, user_id)
                if thread is not None:
                    counts.update(self._forget_vectors(thread.user_id, thread_id))
                counts["checkpoints"] = self._storage.forget_checkpoints([thread_id])
                self._indexes.pop(thread_id, None)
                self._memory_tokens.pop(thread_id, None)
            else:
                assert user_id is not None
                own_threads = [t.thread_id for t in self._storage.threads_of(user_id)]
                counts = self._storage.forget_user(user_id)
                counts["checkpoints"] = self._storage.forget_checkpoints(own_threads, user_id)
                counts.update(self._forget_vectors(user_id, None))
                counts["store_items"] = self._storage.store_forget_user(user_id)
                # Thread ids are global, and the cache does not know owners: drop it all.
                self._indexes.clear()
                self._memory_tokens.clear()
        return counts

    # --- long-term memory --------------------------------------------------------------

    @property
    def vectors(self) -> VectorMemory:
        """The long-term memory layer (opened on first use: it loads the embedding model)."""
        self._check_open()
        with self._vector_lock:
            if self._vectors is None:
                from .vectors import VectorMemory

                self._vectors = VectorMemory.open(
                    self.data_dir, self._query_cached(), self.config, clock=lambda: self._clock(),
                    counter=self.counter, **self._qdrant,
                )
            return self._vectors

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
        _check_id("user_id", user_id)
        return self.vectors.remember(
            user_id, content, memory_type, importance, metadata, session_id, memory_id=memory_id,  # type: ignore[arg-type]
            merge=merge,
        )

    def search(
        self,
        user_id: str,
        query: str,
        k: int = 5,
        memory_types: Sequence[str] | None = None,
        min_importance: float | None = None,
        explain: bool = False,
    ) -> SearchResults:
        """The user's memories best matching ``query``: hybrid (dense + BM25, RRF), ranked
        with importance and decay; recalled memories get the access boost."""
        _check_id("user_id", user_id)
        hits = self.vectors.search(user_id, query, k, memory_types, min_importance, explain)  # type: ignore[arg-type]
        return SearchResults(hits, query=query)

    def get_memory(self, user_id: str, memory_id: str) -> MemoryEntry:
        """One memory of the user (``NotFoundError`` if it does not exist or is another's)."""
        _check_id("user_id", user_id)
        return self.vectors.get(user_id, memory_id)

    def update_memory(self, user_id: str, memory_id: str, **changes: Any) -> MemoryEntry:
        """Change a memory's ``content``, ``importance``, ``memory_type`` or ``metadata``."""
        _check_id("user_id", user_id)
        return self.vectors.update(user_id, memory_id, **changes)

    def list_memories(
        self, user_id: str, memory_types: Sequence[str] | None = None, limit: int = 100, offset: int = 0
    ) -> list[MemoryEntry]:
        """The user's memories, newest first."""
        _check_id("user_id", user_id)
        return self.vectors.list(user_id, memory_types, limit, offset)  # type: ignore[arg-type]

    def reindex(self, progress: Callable[[int, int], None] | None = None) -> dict[str, int]:
        """Rebuild every vector (memories, episodes) from its owner's text with the current
        embeddings, e.g. after changing the model. Resumable: run it again after a stop."""
        done = {"memories": self.vectors.reindex(progress)}
        from .backends.base import MODEL_FIELD, PointData, Where

        backend = self._episode_backend_open(reindexing=True)
        rows = self._storage.all_episodes()
        backend.begin_reindex()
        stale = backend.count(Where(none_of={MODEL_FIELD: [backend.model_id]}))
        if not stale and backend.count() >= len(rows):
            rows = []  # every episode has a vector of this model already
        # Without a model change there is no reindex target: missing vectors are written anew.
        write = backend.update_vectors if stale else backend.upsert
        embeddings = self._query_cached()
        for start in range(0, len(rows), 64):
            batch = [Episode.from_row(r) for r in rows[start : start + 64]]
            vectors = embeddings.embed_documents([e.text() for e in batch])
            write(
                [PointData(e.id, v, e.text(), payload(e)) for e, v in zip(batch, vectors)]
            )
            if progress is not None:
                progress(start + len(batch), len(rows))
        backend.finish_reindex()
        done["episodes"] = len(rows)
        return done

    def export_user(self, user_id: str) -> dict[str, list[dict[str, Any]]]:
        """Everything stored of the user as JSON-ready data (``tiered-memory export``).

        Keys: ``threads``, ``messages``, ``summaries``, ``entities`` (with attribute
        history), ``memories`` (metadata, importance, timestamps; not vectors),
        ``episodes`` and ``store_items``. :meth:`import_user` restores it.
        """
        _check_id("user_id", user_id)
        data = self._storage.export_user(user_id)
        data["memories"] = []
        if self._has_vectors():
            from .vectors import MemoryEntry

            entries = [MemoryEntry.from_payload(r.id, r.payload) for r in self._scroll_all(user_id)]
            entries.sort(key=lambda e: (e.created_at, e.id))
            data["memories"] = [e.model_dump(mode="json", exclude={"user_id"}) for e in entries]
        return data

    def import_user(self, user_id: str, data: dict[str, Sequence[dict[str, Any]]]) -> dict[str, int]:
        """Restore what :meth:`export_user` returned; returns counts of what was written.

        Memories and episodes are embedded again with this memory's embeddings, before
        anything is written. Refused, writing nothing, when the user already has data here
        or an id is taken: an import restores, it never merges.
        """
        _check_id("user_id", user_id)
        from pydantic import ValidationError

        from .backends.base import PointData
        from .vectors import MemoryEntry, _unit

        try:
            messages = []
            for m in data.get("messages", ()):
                row = self._serialise(messages_from_dict([m["message"]])[0])
                messages.append({**m, "message_id": row.message_id, "type": row.type,
                                 "tool_calls": row.tool_calls, "data": row.data, "tokens": row.tokens})
            entries = [MemoryEntry.model_validate({**m, "user_id": user_id}) for m in data.get("memories", ())]
            episodes = [Episode.from_row(EpisodeRow(user_id=user_id, **e)) for e in data.get("episodes", ())]
            entities = [{**e, "name_key": name_key(e["name"])} for e in data.get("entities", ())]
        except (ValidationError, KeyError, TypeError, ValueError) as exc:
            raise InvalidInputError(f"the data to import is malformed: {exc}") from None
        if self._has_vectors() or entries:
            taken = self.vectors.backend.retrieve([e.id for e in entries]) if entries else []
            if taken or self.vectors.count(user_id):
                raise InvalidInputError(
                    f"user {user_id!r} already has memories in {self.data_dir}, or a memory id is taken; "
                    "an import restores into a memory without them: forget the user first, or import "
                    "into another data dir"
                )

        def embed(texts: list[str]) -> list[list[float]]:
            if not texts:
                return []
            try:
                return self._query_cached().embed_documents(texts)
            except EmbeddingError:
                raise
            except Exception as exc:
                raise EmbeddingError(f"the embeddings failed on the imported texts: {exc}") from exc

        memory_vectors = [_unit(v) for v in embed([e.content for e in entries])]
        episode_vectors = embed([e.text() for e in episodes])
        items = [
            {**i, "vectors": self.store._embed_value(dict(i["value"]), None) if i.get("indexed") else None}
            for i in data.get("store_items", ())
        ]
        counts = self._storage.import_user(
            user_id,
            {**data, "messages": messages, "entities": entities, "store_items": items},
            counter=self.counter.name,
            now=self._clock().isoformat(),
        )
        try:
            if entries:
                self.vectors.backend.upsert(
                    [PointData(e.id, v, e.content, e.to_payload()) for e, v in zip(entries, memory_vectors)]
                )
            if episodes:
                self._episode_backend_open().upsert(
                    [PointData(e.id, v, e.text(), payload(e)) for e, v in zip(episodes, episode_vectors)]
                )
        except BaseException:
            # The user had nothing here before: all of them is exactly what this call wrote.
            self.forget(user_id=user_id)
            raise
        counts["memories"] = len(entries)
        self._jobs.notify()
        return counts

    def as_vectorstore(self) -> Any:
        """A ``langchain_qdrant.QdrantVectorStore`` over the memories collection (server mode)."""
        return self.vectors.backend.as_vectorstore(self._query_cached())  # type: ignore[attr-defined]

    def _query_cached(self) -> Embeddings:
        from .embeddings import CachedQueryEmbeddings

        if not isinstance(self.embeddings, CachedQueryEmbeddings):
            self.embeddings = CachedQueryEmbeddings(self._embedder())
        return self.embeddings

    def _episode_backend_open(self, reindexing: bool = False) -> Any:
        with self._vector_lock:
            if self._episode_backend is None:
                from .backends import open_backend
                from .embeddings import embedding_model_id
                from .episodes import BackendEpisodeIndex, episode_schema
                from .vectors import embedding_dimension

                embeddings = self._query_cached()
                self._episode_backend = open_backend(
                    self.data_dir, "episodes", dimension=embedding_dimension(embeddings),
                    model_id=embedding_model_id(embeddings), schema=episode_schema(), **self._qdrant,
                )
                self._episode_index = BackendEpisodeIndex(self._episode_backend, embeddings)
            return self._episode_backend

    def _episode_index_or_open(self) -> EpisodeIndex | None:
        if self._episode_index is None and self._storage.has_episodes():
            self._episode_backend_open()
        return self._episode_index

    # --- episodes ---------------------------------------------------------------------

    def end_session(self, user_id: str, thread_id: str) -> str | None:
        """Close the thread's current session: write one episode of what happened in it.

        The episode covers the messages after the thread's previous episode. Returns its
        id (written by the time this returns in ``inline`` mode, after :meth:`flush` in
        ``background`` mode), or ``None`` when no message is new since the last episode.
        """
        _check_id("user_id", user_id)
        _check_id("thread_id", thread_id)
        thread = self._storage.thread(thread_id)
        _check_owner(thread, user_id)
        if thread is None:
            return None
        last = thread.next_seq - 1
        if last <= self._storage.last_episode_seq(thread_id):
            return None
        self._storage.enqueue("episode", user_id, thread.key, {"last_seq": last}, self._clock().isoformat())
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
        _check_id("user_id", user_id)
        if query is not None and not isinstance(query, str):
            raise InvalidInputError(f"query must be a str or None, got {type(query).__name__}")
        if not isinstance(k, int) or k < 1:
            raise InvalidInputError(f"k must be a positive int, got {k!r}")
        for name, value in (("since", since), ("until", until)):
            if value is not None and (not isinstance(value, datetime) or value.tzinfo is None):
                raise InvalidInputError(f"{name} must be a timezone-aware datetime, got {value!r}")
        return self._episodes.search(user_id, query, since=since, until=until, k=k)

    def _end_idle_sessions(self) -> None:
        minutes = self.config.idle_timeout_minutes
        if minutes is None:
            return
        cutoff = (self._clock() - timedelta(minutes=minutes)).isoformat()
        for thread in self._storage.idle_threads(cutoff):
            self._storage.enqueue(
                "episode", thread.user_id, thread.key, {"last_seq": thread.next_seq - 1}, self._clock().isoformat()
            )

    def _run_episode_job(self, job: JobRow, worker: str) -> None:
        thread = self._storage.thread_by_key(job.thread_key) if job.thread_key is not None else None
        if thread is None:
            self._storage.finish_job(job.id, worker)
            return
        last = json.loads(job.payload)["last_seq"]
        first = self._storage.last_episode_seq(thread.thread_id) + 1
        if first > last:
            self._storage.finish_job(job.id, worker)
            return
        if job.result:
            result = json.loads(job.result)
        else:
            messages = [m for m in self._messages(thread.key, first, last) if m.type != "system"]
            extraction = self.extractor.extract_episode(messages)
            result = {"episode": extraction.model_dump(mode="json")}
            self._storage.save_job_result(job.id, worker, result)
        span = self._storage.message_span(thread.key, first, last)
        started, ended = span if span else (self._clock().isoformat(),) * 2
        data = result["episode"]
        row = EpisodeRow(
            episode_id(thread.thread_id, last), thread.user_id, thread.thread_id, started, ended,
            data["summary"], list(data.get("decisions", [])), data.get("outcome", ""),
            list(data.get("topics", [])), first, last, self._clock().isoformat(),
        )
        self._episode_backend_open()
        assert self._episode_index is not None
        # Index first: a crash after it leaves a vector that the retry overwrites.
        episode = Episode.from_row(row)
        self._episode_index.upsert(thread.user_id, row.id, episode.text(), payload(episode))
        self._storage.insert_episode(row, job, worker)

    def _forget_vectors(self, user_id: str, thread_id: str | None) -> dict[str, int]:
        """Delete the user's (or one thread's) points from the vector collections."""
        from .backends.base import Where

        equals = {"user_id": user_id} if thread_id is None else {"user_id": user_id, "session_id": thread_id}
        out = {"memories": 0}
        if self._has_vectors():
            out["memories"] = self.vectors.backend.delete_where(Where(equals=equals))
            episodes = {"user_id": user_id} if thread_id is None else {"user_id": user_id, "thread_id": thread_id}
            self._episode_backend_open().delete_where(Where(equals=episodes))
        return out

    # --- jobs -------------------------------------------------------------------------

    def _messages(self, thread_key: int, first: int, last: int) -> list[BaseMessage]:
        if last < first:
            return []
        data = self._storage.message_data(thread_key, first, last)
        return messages_from_dict([data[s] for s in sorted(data)])

    def _run_extract_job(self, job: JobRow, worker: str) -> None:
        """One extraction call for the thread's new messages, folding evicted ones into the summary.

        The model's answer is saved in the journal before it is applied, so a retry after a
        crash replays the same answer instead of asking again; applying it twice changes
        nothing.
        """
        thread = self._storage.thread_by_key(job.thread_key) if job.thread_key is not None else None
        if thread is None:  # forgotten since: nothing to do
            self._storage.finish_job(job.id, worker)
            return
        through = min(json.loads(job.payload)["through_seq"], thread.next_seq - 1)
        first = thread.extracted_through + 1
        ev_first, ev_last = thread.summarized_through + 1, thread.evicted_through
        if first > through and ev_last < ev_first:
            self._storage.finish_job(job.id, worker)  # a later job already covered it
            return
        if job.result:
            result = json.loads(job.result)
        else:
            result = self._extract(thread, first, through, ev_first, ev_last)
            self._storage.save_job_result(job.id, worker, result)
        from .extraction import TurnExtraction

        extraction = TurnExtraction.model_validate(result["extraction"])
        summary = result.get("summary")
        keep = [m for m in extraction.memories if m.importance >= self.config.importance_threshold]
        if keep:
            # Ids derived from the job: a replay after a crash stores nothing twice.
            self.vectors.remember_many(
                thread.user_id,
                [
                    {"content": m.content, "memory_type": m.memory_type, "importance": m.importance,
                     "session_id": thread.thread_id,
                     "memory_id": str(uuid.uuid5(_JOB_NAMESPACE, f"{job.key}\x1f{i}"))}
                    for i, m in enumerate(keep)
                ],
            )
        self._storage.complete_extraction(
            job,
            worker,
            user_id=thread.user_id,
            thread_id=thread.thread_id,
            entities=updates(
                extraction.entities, result.get("source_message"), self._entities.self_name(thread.user_id)
            ),
            summary=None if summary is None else _summary_update(summary),
            extracted_through=result["through"],
            now=self._clock().isoformat(),
        )

    def _extract(
        self, thread: ThreadRow, first: int, through: int, ev_first: int, ev_last: int
    ) -> dict[str, Any]:
        new = [m for m in self._messages(thread.key, first, through) if m.type != "system"]
        evicted = [m for m in self._messages(thread.key, ev_first, ev_last) if m.type != "system"]
        current = self._summary.current(thread)
        known = [e.name for e in self._entities.relevant(thread.user_id, None, limit=50)]
        extractor = self.extractor
        extraction = extractor.extract_turn(
            new,
            summary=current,
            evicted=evicted,
            known_entities=known,
            summary_max_tokens=self.config.summary_max_tokens,
        )
        summary = None
        if evicted:
            text = extraction.summary
            if not text or not text.strip():
                # Asked for a summary and given none: fold extractively rather than leave the
                # evicted messages in neither the window nor the summary.
                from .offline import extractive_summary

                text = extractive_summary(
                    evicted, previous=current, max_tokens=self.config.summary_max_tokens, counter=self.counter
                )
            bounded = self._summary.bounded(
                text,
                first_seq=ev_first,
                last_seq=ev_last,
                compress=None if extractor.offline else extractor.compress_summary,
            )
            summary = dataclasses.asdict(bounded)
        humans = [m for m in new if isinstance(m, HumanMessage)]
        return {
            "extraction": extraction.model_dump(mode="json"),
            "summary": summary,
            "through": through,
            "source_message": (humans[-1].id if humans else (new[-1].id if new else None)),
        }

    # --- internals --------------------------------------------------------------------

    def _serialise(self, message: BaseMessage) -> NewMessage:
        if message.id is None:
            message = message.model_copy(update={"id": str(uuid.uuid4())})
        data = message_to_dict(message)
        try:
            text = _json_dumps(data)
        except (TypeError, ValueError) as exc:
            raise InvalidMessageError(
                f"{type(message).__name__} {message.id!r} cannot be stored: {exc}; keep "
                "message content and kwargs JSON-serialisable"
            ) from exc
        calls = len(message.tool_calls) if isinstance(message, AIMessage) else 0
        return NewMessage(
            str(message.id), message.type, text, self.counter.count_message(message), calls
        )

    def _index(self, thread: ThreadRow | None) -> ThreadIndex | None:
        """The thread's index, brought up to date with what other processes appended."""
        if thread is None:
            return None
        index = self._indexes.get(thread.thread_id)
        if index is None or index.key != thread.key or index.generation != thread.generation:
            index = ThreadIndex(thread.key, thread.generation)
            self._indexes[thread.thread_id] = index
            while len(self._indexes) > _CACHED_THREADS:
                self._indexes.popitem(last=False)
        else:
            self._indexes.move_to_end(thread.thread_id)
        if index.next_seq < thread.next_seq:
            index.extend(self._recounted(index.key, self._storage.message_index(index.key, index.next_seq - 1)))
        return index

    def _recounted(self, thread_key: int, rows: list[IndexRow]) -> list[IndexRow]:
        """Rows counted by another counter, recounted with ours (and the new count stored)."""
        stale = [r.seq for r in rows if r.counter != self.counter.name]
        if not stale:
            return rows
        data = self._storage.message_data_at(thread_key, stale)
        counts = {s: self.counter.count_message(messages_from_dict([data[s]])[0]) for s in stale}
        self._storage.update_token_counts(thread_key, list(counts.items()), counter=self.counter.name)
        return [
            IndexRow(r.seq, r.type, counts.get(r.seq, r.tokens), self.counter.name, r.tool_calls)
            for r in rows
        ]

    def _load(self, thread_key: int) -> Callable[[list[int]], dict[int, BaseMessage]]:
        def load(seqs: list[int]) -> dict[int, BaseMessage]:
            data = self._storage.message_data(thread_key, seqs[0], seqs[-1])
            wanted = [s for s in seqs if s in data]
            return dict(zip(wanted, messages_from_dict([data[s] for s in wanted])))

        return load

    def _available(self) -> int:
        """The context budget less the request's fixed overhead."""
        return self.config.context_budget - self.counter.overhead

    def _system_cap(self) -> int:
        # A system prompt may outgrow its reserve, but never take more than half of the
        # budget: the conversation keeps room.
        return max(self.config.system_reserve, self._available() // 2)

    def _system_message(self, index: ThreadIndex | None) -> tuple[BaseMessage | None, int]:
        if index is None or index.system_seq is None:
            return None, 0
        seq = index.system_seq
        if seq not in index.messages:
            index.messages.update(self._load(index.key)([seq]))
        message, tokens = index.messages[seq], index.system_tokens
        cap = self._system_cap()
        if tokens > cap:
            cut = truncate_message(message, cap, self.counter)
            if cut is None:
                return None, 0
            message, tokens = cut, self.counter.count_message(cut)
        return message, tokens

    def _last_human_text(self, index: ThreadIndex) -> str | None:
        for i in range(len(index) - 1, max(len(index) - 20, 0) - 1, -1):
            if index.is_tool[i]:
                continue
            messages = index.load(i, self._load(index.key))
            if isinstance(messages[0], HumanMessage):
                return messages[0].text
        return None

    def _build_sections(
        self, user_id: str, thread: ThreadRow | None, query: str | None, budget: int
    ) -> list[ContextSection]:
        sections: list[ContextSection] = []
        for provider in self._sections:
            if budget <= 0:
                break
            section = provider.section(user_id, thread, query, budget)
            if section is not None and section.text.strip():
                tokens = section.tokens or self.counter.count_text(section.text)
                sections.append(ContextSection(section.name, section.text, tokens))
                budget -= tokens
        return sections

    def _window(
        self, index: ThreadIndex | None, budget: int, thread: ThreadRow | None
    ) -> tuple[list[BaseMessage], int, int, bool]:
        """The window's messages, their tokens, how many messages precede it, truncation.

        The window starts after the summarised messages: none is both summarised and sent.
        """
        if index is None or thread is None or len(index) == 0:
            return [], 0, 0, False
        chosen = select(index, budget, thread.summarized_through)
        window = index.load(chosen.start, self._load(index.key))
        if len(index.messages) > 2 * len(window) + 64:
            index.drop_before(chosen.start)
        if not chosen.truncate:
            return window, index.tokens(chosen.start), chosen.start, False
        counts = [index.tokens(i, i + 1) for i in range(chosen.start, len(index))]
        fitted = fit_group(window, budget, self.counter, counts)
        if not fitted:
            return [], 0, len(index), True
        return fitted, sum(self.counter.count_message(m) for m in fitted), chosen.start, True

    def _record_eviction(self, thread: ThreadRow) -> int:
        """Mark the messages now outside the window as evicted; returns how many there are."""
        index = self._index(thread)
        if index is None or len(index) == 0:
            return 0
        system_charge = max(self.config.system_reserve, min(index.system_tokens, self._system_cap()))
        # The memory block's size is that of this thread's last before_turn: the best
        # estimate of what the next one will take.
        budget = self._available() - system_charge - self._memory_tokens.get(thread.thread_id, 0)
        start = select(index, budget, thread.summarized_through).start
        if start > 0 and index.seqs[start - 1] > thread.evicted_through:
            self._storage.set_evicted_through(index.key, index.seqs[start - 1])
        return start


def _as_config(config: MemoryConfig | dict[str, Any] | None) -> MemoryConfig:
    if config is None:
        return MemoryConfig()
    if isinstance(config, MemoryConfig):
        return config
    if isinstance(config, dict):
        return MemoryConfig(**config)
    raise ConfigError(f"config must be a MemoryConfig or a dict, got {type(config).__name__}")


def _check_id(name: str, value: Any) -> None:
    if not isinstance(value, str):
        raise InvalidIdentifierError(f"{name} must be a non-empty str, got {type(value).__name__}")
    if not value.strip():
        raise InvalidIdentifierError(f"{name} must be a non-empty str, got {value!r}")
    if len(value) > MAX_ID_LENGTH:
        raise InvalidIdentifierError(f"{name} is {len(value)} characters long; the limit is {MAX_ID_LENGTH}")
    if "\x00" in value:
        raise InvalidIdentifierError(f"{name} must not contain NUL characters")


def _check_owner(thread: ThreadRow | None, user_id: str) -> None:
    if thread is not None and thread.user_id != user_id:
        raise ThreadOwnershipError(
            f"thread {thread.thread_id!r} belongs to another user; thread ids are global (as "
            "in LangGraph), so give each user's threads ids of their own"
        )


def _normalise(messages: Any) -> list[BaseMessage]:
    if isinstance(messages, (str, bytes, BaseMessage, dict)) or not isinstance(messages, Sequence):
        raise InvalidMessageError(
            f"messages must be a list of LangChain messages, got {type(messages).__name__}; "
            "wrap a single message in a list"
        )
    out: list[BaseMessage] = []
    for i, item in enumerate(messages):
        if isinstance(item, RemoveMessage):
            raise InvalidMessageError(
                f"messages[{i}] is a RemoveMessage; the log is append-only, use forget() to delete"
            )
        if isinstance(item, BaseMessage):
            out.append(message_chunk_to_message(item))
            continue
        if isinstance(item, (dict, tuple)):
            try:
                out.extend(convert_to_messages([item]))
                continue
            except Exception as exc:
                raise InvalidMessageError(f"messages[{i}] is not a valid message: {exc}") from exc
        raise InvalidMessageError(
            f"messages[{i}] is a {type(item).__name__}, not a message; pass LangChain "
            "messages (HumanMessage, AIMessage, …), role/content dicts or (role, content) tuples"
        )
    return out


_JOB_NAMESPACE = uuid.UUID("0d6b2f0c-7a55-4f1e-8f0c-2b7d1e9a4c33")


class _MemoriesSection:
    """The long-term memories section of the context."""

    name = "memories"

    def __init__(self, memory: TieredMemory) -> None:
        self._memory = memory

    def section(
        self, user_id: str, thread: ThreadRow | None, query: str | None, max_tokens: int
    ) -> ContextSection | None:
        m = self._memory
        if not query or not query.strip() or m.config.memories_k == 0:
            return None
        # Without a shard yet there is nothing to recall: skip loading the model.
        if m._vectors is None and not m._has_vectors():
            return None
        return m.vectors.section(
            user_id, query, min(max_tokens, m.config.memories_max_tokens), touch=not m._peek
        )


def _summary_update(data: dict[str, Any]) -> SummaryUpdate:
    return SummaryUpdate(**data)


def _json_dumps(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False, allow_nan=False)

