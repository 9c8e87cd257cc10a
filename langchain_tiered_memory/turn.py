"""One turn's memory work over one token budget: what to send the model, and what to store.

``before`` is the latency-critical path and makes no LLM call: it reads the thread's
cached index, asks each memory section for its text within its share of the budget, and
fits the window into what is left. ``after`` appends the turn's messages to the durable
log — the only synchronous write — with the turn's extraction job in the same transaction,
and records which messages have left the window.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    RemoveMessage,
    convert_to_messages,
    message_chunk_to_message,
)

from .context import (
    OVERHEAD,
    SYSTEM,
    WINDOW,
    ContextSection,
    MemoryContext,
    TokenUsage,
    render_memory_block,
)
from .entries import MAX_QUERY_CHARS
from .layers.sections import SectionProvider, SectionRequest
from .errors import InvalidMessageError, TieredMemoryError, VectorStoreError
from .layers.window import Window
from .storage.message_format import brief_error, encode
from .storage.rows import NewMessage, ThreadRow

if TYPE_CHECKING:
    from .config import MemoryConfig
    from .index.searches import Searches
    from .storage import Storage
    from .tokens import TokenCounter


# The share of the memory block each section keeps for itself while earlier ones fill it.
SECTION_FLOOR = 0.25


@dataclass(frozen=True)
class TurnResult:
    """What :meth:`TieredMemory.after_turn` stored."""

    stored: int
    duplicates: int
    seqs: list[int]
    evicted: int


class Turns:
    """Assembles contexts and appends turns for one memory.

    Args:
        storage: the relational store.
        config: the budgets.
        counter: the token counter.
        sections: the memory layers, in priority order (earlier ones are served first).
        clock: the current time.
        searches: a new :class:`~.searches.Searches` for a turn with a query, so the
            layers' index searches go to the engine in one trip.
    """

    def __init__(
        self,
        storage: Storage,
        config: MemoryConfig,
        counter: TokenCounter,
        sections: Sequence[SectionProvider],
        clock: Callable[[], datetime],
        searches: Callable[[], Searches] | None = None,
    ) -> None:
        self._storage = storage
        self.config = config
        self.counter = counter
        self.sections = list(sections)
        self._clock = clock
        self._searches = searches
        #: The window layer: each thread's cached window, its system message and eviction.
        self.window = Window(storage, config, counter)
        #: Told of each section left out for an index error (``degradation.py``): the
        #: context says so in ``degraded``, this makes it speak and count.
        self.on_degraded: Callable[[VectorStoreError, str], object] | None = None

    def forget_cache(self, thread_id: str | None = None) -> None:
        """Drop cached state of a thread (or of all: ids are global, the cache knows no owner)."""
        self.window.forget(thread_id)

    # --- before ---------------------------------------------------------------------------

    def before(
        self,
        user_id: str,
        thread: ThreadRow | None,
        thread_id: str,
        query: str | None,
        *,
        peek: bool = False,
        at: datetime | None = None,
    ) -> MemoryContext:
        """What to send the model this turn, within the context budget (see the module docs)."""
        window_layer = self.window
        with window_layer.lock:
            index = window_layer.index(thread, peek=peek)
            avail = window_layer.available()
            system_msg, system_tokens = window_layer.system_message(index)
            system_charge = max(self.config.system_reserve, system_tokens)
            if query is None and index is not None:
                query = window_layer.last_human_text(index)
                # A huge message is searched for by its beginning, as an explicit query is.
                query = query[:MAX_QUERY_CHARS] if query is not None else None
            searches = self._searches() if self._searches is not None and query else None
            request = SectionRequest(user_id, thread, query, peek, at, searches)
            sections, degraded = self._build_sections(request, (avail - system_charge) // 2)
            block = render_memory_block(sections)
            block_tokens = self.counter.count_message(block) if block is not None else 0
            if thread is not None:
                window_layer.note_memory_tokens(thread_id, block_tokens)
            window, window_tokens, start, truncated = window_layer.fit(
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
            degraded=tuple(degraded),
        )

    def _build_sections(
        self, request: SectionRequest, budget: int
    ) -> tuple[list[ContextSection], list[str]]:
        sections: list[ContextSection] = []
        degraded: list[str] = []
        caps = {
            "summary": self.config.summary_max_tokens, "entities": self.config.entities_max_tokens,
            "memories": self.config.memories_max_tokens, "episodes": self.config.episodes_max_tokens,
        }
        # Each later section keeps a floor of the share, so an early one that could fill it
        # all (recall always has more evidence) leaves the others a say; unused floors flow on.
        floors = [min(caps.get(p.name, 0), int(budget * SECTION_FLOOR)) for p in self.sections]
        self._plan(request)
        for i, provider in enumerate(self.sections):
            if budget <= 0:
                break
            room = budget - sum(floors[i + 1 :])
            if room <= 0:
                continue
            try:
                section = provider.section(request, room)
            except VectorStoreError as exc:
                # The index is held by another process, or needs a reindex: the other
                # sections still answer, and the context says what is missing.
                degraded.append(f"{provider.name}: {exc}")
                if self.on_degraded is not None:
                    self.on_degraded(exc, f"the {provider.name} section of before_turn")
                continue
            if section is not None and section.text.strip():
                tokens = section.tokens or self.counter.count_text(section.text)
                sections.append(ContextSection(section.name, section.text, tokens))
                budget -= tokens
        return sections, degraded

    def _plan(self, request: SectionRequest) -> None:
        """Lets the layers that search add their probes to the turn's searches (embedding
        the query), so they go to the engine in one trip."""
        if request.searches is None:
            return
        for provider in self.sections:
            plan = getattr(provider, "plan", None)
            if plan is not None:
                try:
                    plan(request)
                except VectorStoreError:
                    pass  # its section searches on its own, and says what is missing

    # --- after ----------------------------------------------------------------------------

    def after(
        self,
        user_id: str,
        thread_id: str,
        messages: Sequence[BaseMessage],
        *,
        extract: bool,
        at: datetime | None = None,
        needs: str | None = None,
    ) -> TurnResult:
        """Append the turn's messages durably (see :meth:`TieredMemory.after_turn`); the
        turn's job records ``needs`` (what the memory running it must provide)."""
        items = normalise(messages)
        when = None if at is None else at.astimezone(timezone.utc).isoformat()
        rows = [self.serialise(m, when) for m in items]
        now = self._clock().isoformat()
        # Written before the window's lock is taken: the write may wait for another
        # process's write lock, and the other threads' turns must not wait with it. A turn
        # that reads the thread meanwhile catches up from the log (see Window.appended).
        result = self._storage.threads.append(
            user_id, thread_id, rows, counter=self.counter.name, now=now,
            job_kind="extract" if extract else None, job_needs=needs,
        )
        by_id = {r.message_id: r for r in rows}
        with self.window.lock:
            self.window.appended(thread_id, result.thread.key, [(seq, by_id[mid]) for seq, mid in result.stored])
            evicted, through = self.window.evicting(result.thread)
        if through is not None:
            self._storage.threads.set_evicted_through(result.thread.key, through)
        seqs = [seq for seq, _ in result.stored]
        return TurnResult(len(seqs), result.duplicates, seqs, evicted)

    def serialise(self, message: BaseMessage, at: str | None = None) -> NewMessage:
        """A message as the log stores it (:mod:`~.storage.message_format`); refused
        (``InvalidMessageError``) if it would not read back as the same message."""
        message, text = encode(message)
        assert message.id is not None  # encode gives every message an id
        calls = len(message.tool_calls) if isinstance(message, AIMessage) else 0
        return NewMessage(message.id, message.type, text, self.counter.count_message(message), calls, at)

    # --- reading the log ------------------------------------------------------------------

    def messages(self, thread_key: int, first: int, last: int) -> list[BaseMessage]:
        """The thread's messages ``first..last`` (seqs), oldest first."""
        return self.window.messages(thread_key, first, last)


def normalise(messages: Any) -> list[BaseMessage]:
    """``messages`` as LangChain messages (dicts and tuples converted, chunks merged)."""
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
            except TieredMemoryError:
                raise
            except Exception as exc:
                raise InvalidMessageError(f"messages[{i}] is not a valid message: {brief_error(exc)}") from exc
        raise InvalidMessageError(
            f"messages[{i}] is a {type(item).__name__}, not a message; pass LangChain "
            "messages (HumanMessage, AIMessage, …), role/content dicts or (role, content) tuples"
        )
    return out
