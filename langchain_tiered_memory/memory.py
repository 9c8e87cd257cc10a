"""``TieredMemory``: the one object agent code holds — a thin facade over the layers.

It keeps the turn API (``before_turn``/``after_turn``, ``recall``, ``end_session``) and the
lifecycle (``flush``, ``close``); the rest is grouped (``memory.memories``, ``.episodes``,
``.entities``, ``.threads``, ``.items``, ``.admin``: ``api/``), and the parts it is made of
are wired in ``api/parts.py``. The adapters it offers as properties (``store``,
``checkpointer``) live above it, in ``integrations/``, and are built through the slot the
package root fills (``api/adapters.py``): this module imports none of them. The names of the
old, flat facade keep working for one release (``api/deprecated.py``).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage

from .api.adapters import build
from .api.admin import Admin
from .api.deprecated import DeprecatedNames
from .api.entities import Entities
from .api.episodes import Episodes
from .api.memories import Memories
from .api.parts import Parts
from .api.threads import ThreadInfo, Threads
from .config import MemoryConfig, as_config
from .context import MemoryContext
from .entries import check_id, check_query, check_time
from .errors import VectorStoreError
from .layers.episodes import episode_id
from .layers.items import Items
from .recall.layer import Evidence
from .tokens import TokenCounter, TokenCounterLike
from .turn import TurnResult

if TYPE_CHECKING:
    from langchain_core.callbacks import BaseCallbackHandler
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.store.base import BaseStore

__all__ = ["ThreadInfo", "TieredMemory", "TurnResult"]


class TieredMemory(DeprecatedNames):
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
        self._parts = Parts(
            data_dir, as_config(config), model, embeddings, token_counter=token_counter, qdrant_url=qdrant_url,
            qdrant_api_key=qdrant_api_key, qdrant_client=qdrant_client, database_url=database_url,
            pool_min=pool_min, pool_max=pool_max, callbacks=callbacks,
        )
        self._adapters: dict[str, Any] = {}
        self._adapter_lock = threading.Lock()
        self._memories = Memories(self._parts)
        self._episodes = Episodes(self._parts)
        self._entities = Entities(self._parts)
        self._threads = Threads(self._parts)
        self._admin = Admin(self._parts, self)

    # --- what it is -------------------------------------------------------------------

    @property
    def config(self) -> MemoryConfig:
        """The budgets and forgetting parameters this memory runs with."""
        return self._parts.config

    @property
    def data_dir(self) -> Path | None:
        """The directory holding this memory (``None`` with ``database_url``)."""
        return self._parts.data_dir

    # --- the grouped sub-APIs ---------------------------------------------------------

    @property
    def memories(self) -> Memories:
        """Long-term memories: ``remember``, ``remember_many``, ``search``, ``get``,
        ``update``, ``list``, ``count``, ``forget`` (and ``a``-prefixed async twins)."""
        return self._memories

    @property
    def episodes(self) -> Episodes:
        """Episodes (what happened in each session): ``search``, ``asearch``."""
        return self._episodes

    @property
    def entities(self) -> Entities:
        """Entity profiles: ``list``, ``get``."""
        return self._entities

    @property
    def threads(self) -> Threads:
        """Threads and their logs: ``list``, ``users``, ``messages``, ``summary``,
        ``recorded_ids``."""
        return self._threads

    @property
    def items(self) -> Items:
        """The LangGraph store's documents besides memories (namespaced JSON values, searchable
        by their fields): what :attr:`store` keeps outside ``("memories", user_id, …)``."""
        self._parts.check_open()
        return self._parts.item_view

    @property
    def admin(self) -> Admin:
        """Running the memory: ``stats``, ``forget`` (a user, a thread, an entity), ``scrub``,
        ``reindex``, ``optimize``, ``export_user``, ``import_user``, ``jobs``, ``serve`` (the
        inspector), and what it is built from (``extractor``, ``embeddings``, ``counter``,
        ``database()``)."""
        return self._admin

    # --- adapters -----------------------------------------------------------------------

    @property
    def store(self) -> BaseStore:
        """This memory as a LangGraph ``BaseStore`` (``graph.compile(store=memory.store)``):
        one :class:`TieredMemoryStore`, made on first use and closed with the memory."""
        return self._adapter("store")  # type: ignore[no-any-return]

    @property
    def checkpointer(self) -> BaseCheckpointSaver[str]:
        """A LangGraph checkpointer keeping thread state in this memory's database
        (``graph.compile(checkpointer=memory.checkpointer)``): one
        :class:`TieredCheckpointSaver` (PostgreSQL's with ``database_url``), made on first
        use and closed with the memory. For ``ainvoke`` graphs, build an
        ``AsyncTieredCheckpointSaver(memory)``."""
        return self._adapter("checkpointer")  # type: ignore[no-any-return]

    def _adapter(self, name: str) -> Any:
        self._parts.check_open()
        with self._adapter_lock:
            if name not in self._adapters:
                self._adapters[name] = build(self, name)
            return self._adapters[name]

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
        thread = self._parts.thread(user_id, thread_id)
        return self._parts.turns.before(user_id, thread, thread_id, query, peek=peek, at=at)

    async def abefore_turn(
        self,
        user_id: str,
        thread_id: str,
        query: str | None = None,
        *,
        peek: bool = False,
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
        parts = self._parts
        result = parts.turns.after(
            user_id, thread_id, messages, extract=extract, at=at, needs=parts.job_needs() if extract else None
        )
        if result.stored and extract:
            parts.jobs.notify()
        return result

    async def aafter_turn(
        self,
        user_id: str,
        thread_id: str,
        messages: Sequence[BaseMessage],
        *,
        extract: bool = True,
        at: datetime | None = None,
    ) -> TurnResult:
        """Async :meth:`after_turn` (runs in a worker thread: the database is blocking)."""
        return await asyncio.to_thread(self.after_turn, user_id, thread_id, messages, extract=extract, at=at)

    def recall(
        self,
        user_id: str, query: str, k: int = 10, *, grains: Sequence[str] | None = None,
        at: datetime | None = None, since: datetime | None = None, until: datetime | None = None,
        peek: bool = False, explain: bool = False,
    ) -> list[Evidence]:
        """The ``k`` best pieces of evidence for ``query`` across everything stored of the
        user: long-term memories (``fact``), single messages (``turn``), short runs of
        messages (``window``) and, if asked for, episodes (``session``).

        Ranked by relevance from similarity, like ``memory.memories.search``; a time the
        query names ("last weekend", "in May 2023", "two weeks ago") is read against ``at``
        (when the question is asked; default now), and what was said then ranks ahead. Each
        result carries its text, when it was said and the ids of the messages it came from.
        ``since``/``until`` keep only what was said in that span. No LLM is called.
        """
        self._parts.check_open()
        # Bounded as search() bounds it: a 10 MB query took 10 s to embed and parse for dates.
        query = check_query(query)
        check_time("at", at)
        check_time("since", since)
        check_time("until", until)
        try:
            return self._parts.recall.recall(user_id, query, k, grains=grains, at=at, since=since, until=until,
                                             peek=peek, explain=explain)
        except VectorStoreError as exc:
            self._parts.degradations.note(exc, "recall")
            raise

    async def arecall(
        self,
        user_id: str, query: str, k: int = 10, *, grains: Sequence[str] | None = None,
        at: datetime | None = None, since: datetime | None = None, until: datetime | None = None,
        peek: bool = False, explain: bool = False,
    ) -> list[Evidence]:
        """Async :meth:`recall` (embeds and queries in a worker thread)."""
        return await asyncio.to_thread(
            self.recall, user_id, query, k, grains=grains, at=at, since=since, until=until, peek=peek, explain=explain
        )

    def end_session(self, user_id: str, thread_id: str) -> str | None:
        """Close the thread's current session: write one episode of what happened in it.

        The episode covers the messages after the thread's previous episode. Returns its
        id (written by the time this returns in ``inline`` mode, after :meth:`flush` in
        ``background`` mode), or ``None`` when no message is new since the last episode.
        """
        parts = self._parts
        thread = parts.thread(user_id, thread_id)
        if thread is None:
            return None
        last = thread.next_seq - 1
        if last <= parts.storage.episodes.last_seq(thread_id):
            return None
        # revive: an episode job of the same span that failed (a model outage) runs again,
        # rather than holding its key with nothing written.
        parts.enqueue_episode(thread, last, revive=True)
        parts.jobs.notify()
        return episode_id(thread_id, last, parts.storage.id_namespace())

    # --- lifecycle --------------------------------------------------------------------

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until the jobs of earlier turns are done (or failed for good), and the
        records this process can index are indexed.

        Returns ``False`` if ``timeout`` seconds passed first, or if jobs wait for what this
        memory lacks — a chat model: journaled by a memory with one, with the later jobs of
        their threads behind them. Those are not waited for; a WARNING names their threads
        once, and ``memory.admin.jobs.retry(offline=True)`` hands them to the offline rules.
        Jobs retrying while the model cannot be reached are waited for, up to
        ``job_retry_horizon_seconds``. Records waiting for another process that holds the
        vector index are not waited for: ``memory.admin.stats()`` shows them
        (``index.pending``). Call it before reading what background jobs produce.
        """
        self._parts.check_open()
        self._parts.facts.recalls.write()
        done = self._parts.jobs.flush(timeout)
        return not self._parts.journal.stranded() and done

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
            self._parts.jobs.close()
            # The adapters that hold connections (the checkpointers) registered their close.
            for close in self._parts.closers:
                close()
        finally:
            self._parts.close()

    def __enter__(self) -> TieredMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
