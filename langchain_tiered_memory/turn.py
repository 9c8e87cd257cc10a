"""One turn's memory work over one token budget: what to send the model, and what to store.

``before`` is the latency-critical path and makes no LLM call: it reads the thread's
cached index, asks each memory section for its text within its share of the budget, and
fits the window into what is left. ``after`` appends the turn's messages to the durable
log — the only synchronous write — with the turn's extraction job in the same transaction,
and records which messages have left the window.
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
import warnings
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
    convert_to_messages,
    message_chunk_to_message,
    message_to_dict,
    messages_from_dict,
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
from .storage.rows import IndexRow, NewMessage, ThreadRow
from .layers.window import ThreadIndex, fit_group, select, truncate_message

if TYPE_CHECKING:
    from .config import MemoryConfig
    from .index.searches import Searches
    from .storage import Storage
    from .tokens import TokenCounter

logger = logging.getLogger("langchain_tiered_memory")

# Threads whose index stays in memory; an evicted one is rebuilt from the database on next use.
_CACHED_THREADS = 256
# The share of the memory block each section keeps for itself while earlier ones fill it.
SECTION_FLOOR = 0.25
# Truncated windows kept (a message cut to fit is cut once, not on every turn).
_CACHED_CUTS = 64


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
        self._lock = threading.RLock()
        self._indexes: OrderedDict[str, ThreadIndex] = OrderedDict()
        self._memory_tokens: dict[str, int] = {}
        self._cuts: OrderedDict[tuple[int, int, int, int], tuple[list[BaseMessage], int]] = OrderedDict()
        #: Told of each section left out for an index error (``degradation.py``): the
        #: context says so in ``degraded``, this makes it speak and count.
        self.on_degraded: Callable[[VectorStoreError, str], object] | None = None

    def forget_cache(self, thread_id: str | None = None) -> None:
        """Drop cached state of a thread (or of all: ids are global, the cache knows no owner)."""
        with self._lock:
            if thread_id is None:
                self._indexes.clear()
                self._memory_tokens.clear()
                self._cuts.clear()
            else:
                self._indexes.pop(thread_id, None)
                self._memory_tokens.pop(thread_id, None)

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
        with self._lock:
            index = self._index(thread, peek=peek)
            avail = self._available()
            system_msg, system_tokens = self._system_message(index)
            system_charge = max(self.config.system_reserve, system_tokens)
            if query is None and index is not None:
                query = self._last_human_text(index)
                # A huge message is searched for by its beginning, as an explicit query is.
                query = query[:MAX_QUERY_CHARS] if query is not None else None
            searches = self._searches() if self._searches is not None and query else None
            request = SectionRequest(user_id, thread, query, peek, at, searches)
            sections, degraded = self._build_sections(request, (avail - system_charge) // 2)
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
            index.messages.update(self._loader(index.key)([seq]))
        message, tokens = index.messages[seq], index.system_tokens
        cap = self._system_cap()
        if tokens > cap:
            cut = self._cut(index.key, seq, cap, lambda: truncate_message(message, cap, self.counter))
            if cut is None:
                return None, 0
            return cut[0][0], cut[1]
        return message, tokens

    def _cut(
        self, key: int, seq: int, budget: int, make: Callable[[], BaseMessage | None]
    ) -> tuple[list[BaseMessage], int] | None:
        """A truncated message, cached: it depends only on the message and the budget."""
        cache_key = (key, seq, budget, 0)
        found = self._cuts.get(cache_key)
        if found is None:
            message = make()
            if message is None:
                return None
            found = ([message], self.counter.count_message(message))
            self._cuts[cache_key] = found
            while len(self._cuts) > _CACHED_CUTS:
                self._cuts.popitem(last=False)
        return found

    def _last_human_text(self, index: ThreadIndex) -> str | None:
        for i in range(len(index) - 1, max(len(index) - 20, 0) - 1, -1):
            if index.is_tool[i]:
                continue
            messages = index.load(i, self._loader(index.key))
            if isinstance(messages[0], HumanMessage):
                return messages[0].text
        return None

    def _window(
        self, index: ThreadIndex | None, budget: int, thread: ThreadRow | None
    ) -> tuple[list[BaseMessage], int, int, bool]:
        """The window's messages, their tokens, how many messages precede it, truncation.

        The window starts after the summarised messages: none is both summarised and sent.
        """
        if index is None or thread is None or len(index) == 0:
            return [], 0, 0, False
        chosen = select(index, budget, thread.summarized_through)
        window = index.load(chosen.start, self._loader(index.key))
        if len(index.messages) > 2 * len(window) + 64:
            index.drop_before(chosen.start)
        if not chosen.truncate:
            return window, index.tokens(chosen.start), chosen.start, False
        # The newest group alone exceeds the budget: cut it, once per message and budget.
        cache_key = (index.key, index.seqs[chosen.start], budget, len(index))
        found = self._cuts.get(cache_key)
        if found is None:
            counts = [index.tokens(i, i + 1) for i in range(chosen.start, len(index))]
            fitted = fit_group(window, budget, self.counter, counts)
            found = (fitted, sum(self.counter.count_message(m) for m in fitted))
            self._cuts[cache_key] = found
            while len(self._cuts) > _CACHED_CUTS:
                self._cuts.popitem(last=False)
        fitted, tokens = found
        if not fitted:
            return [], 0, len(index), True
        return list(fitted), tokens, chosen.start, True

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
        with self._lock:
            result = self._storage.threads.append(
                user_id, thread_id, rows, counter=self.counter.name, now=now,
                job_kind="extract" if extract else None, job_needs=needs,
            )
            index = self._indexes.get(thread_id)
            seqs = [seq for seq, _ in result.stored]
            if index is not None and index.key == result.thread.key and seqs and index.next_seq == seqs[0]:
                # Nobody appended in between: extend the cached index without a read.
                by_id = {r.message_id: r for r in rows}
                index.extend(
                    [
                        IndexRow(seq, by_id[mid].type, by_id[mid].tokens, self.counter.name, by_id[mid].tool_calls)
                        for seq, mid in result.stored
                    ]
                )
            evicted = self._record_eviction(result.thread)
        return TurnResult(len(seqs), result.duplicates, seqs, evicted)

    def serialise(self, message: BaseMessage, at: str | None = None) -> NewMessage:
        """A message as the log stores it; refused (``InvalidMessageError``) if it would not
        read back as the same message."""
        if message.id is None:
            message = message.model_copy(update={"id": str(uuid.uuid4())})
        try:
            with warnings.catch_warnings():
                # A message built around validation makes pydantic warn while dumping it;
                # the refusal below says what is wrong, once, as our error.
                warnings.simplefilter("ignore")
                data = message_to_dict(message)
            text = json.dumps(data, ensure_ascii=False, allow_nan=False)
            text.encode("utf-8")
            # What is stored must read back: a message built around validation (say, with
            # model_construct) would otherwise make its thread unreadable for good.
            messages_from_dict([json.loads(text)])
        except (TypeError, ValueError, RecursionError) as exc:
            raise InvalidMessageError(
                f"{type(message).__name__} {message.id!r} cannot be stored: {_brief(exc)}; keep "
                "message content a str or a list of content blocks, and kwargs JSON-serialisable "
                "valid text (no lone surrogates)"
            ) from None
        except Exception as exc:  # pydantic's ValidationError, from reading it back
            raise InvalidMessageError(
                f"{type(message).__name__} {message.id!r} is not a valid message: {_brief(exc)}"
            ) from None
        if not isinstance(message.id, str) or not message.id or "\x00" in message.id or len(message.id) > 512:
            raise InvalidMessageError(f"message id {message.id!r} must be a non-empty str of at most 512 characters")
        calls = len(message.tool_calls) if isinstance(message, AIMessage) else 0
        return NewMessage(message.id, message.type, text, self.counter.count_message(message), calls, at)

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
            self._storage.threads.set_evicted_through(index.key, index.seqs[start - 1])
        return start

    # --- reading the log ------------------------------------------------------------------

    def messages(self, thread_key: int, first: int, last: int) -> list[BaseMessage]:
        """The thread's messages ``first..last`` (seqs), oldest first."""
        if last < first:
            return []
        data = self._storage.threads.data(thread_key, first, last)
        return read_messages([data[s] for s in sorted(data)])

    def _index(self, thread: ThreadRow | None, *, peek: bool = False) -> ThreadIndex | None:
        """The thread's index, brought up to date with what other processes appended
        (with ``peek``, without storing recounted token counts)."""
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
            rows = self._storage.threads.index(index.key, index.next_seq - 1)
            index.extend(self._recounted(index.key, rows, store=not peek))
        return index

    def _recounted(self, thread_key: int, rows: list[IndexRow], *, store: bool = True) -> list[IndexRow]:
        """Rows counted by another counter, recounted with ours (and, unless this is a look
        that must change nothing, the new count stored)."""
        stale = [r.seq for r in rows if r.counter != self.counter.name]
        if not stale:
            return rows
        data = self._storage.threads.data_at(thread_key, stale)
        counts = {s: self.counter.count_message(read_messages([data[s]])[0]) for s in stale}
        if store:
            self._storage.threads.update_token_counts(thread_key, list(counts.items()), counter=self.counter.name)
        return [IndexRow(r.seq, r.type, counts.get(r.seq, r.tokens), self.counter.name, r.tool_calls) for r in rows]

    def _loader(self, thread_key: int) -> Callable[[list[int]], dict[int, BaseMessage]]:
        def load(seqs: list[int]) -> dict[int, BaseMessage]:
            data = self._storage.threads.data(thread_key, seqs[0], seqs[-1])
            wanted = [s for s in seqs if s in data]
            return dict(zip(wanted, read_messages([data[s] for s in wanted])))

        return load


#: A stored message that no longer reads as its type is returned as one of these, by type.
_REPAIR_TYPES: dict[str, type[BaseMessage]] = {
    "human": HumanMessage, "ai": AIMessage, "system": SystemMessage, "tool": ToolMessage,
    "function": FunctionMessage, "chat": ChatMessage,
}


_REPAIRED: set[Any] = set()


def read_messages(data: list[dict[str, Any]]) -> list[BaseMessage]:
    """Stored messages as LangChain messages; never raises for one that no longer validates.

    Every write checks that its message reads back (:meth:`Turns.serialise`), but a file
    written by an older version, another tool, or a LangChain whose message classes have
    changed may hold one that does not: rather than make the whole thread unreadable for
    good, that message is returned as a message of its type whose content is the stored
    content as text, with ``additional_kwargs["tiered_memory_repaired"]`` saying why.
    """
    try:
        return messages_from_dict(data)
    except Exception:  # pydantic's ValidationError and its kin: find the bad one(s)
        return [_read_one(d) for d in data]


def _read_one(stored: dict[str, Any]) -> BaseMessage:
    try:
        return messages_from_dict([stored])[0]
    except Exception as exc:
        reason = f"stored message could not be read as is: {_brief(exc, 200)}"
    fields = stored.get("data") if isinstance(stored, dict) else None
    fields = fields if isinstance(fields, dict) else {}
    content = fields.get("content")
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False, default=str)
    kind = stored.get("type") if isinstance(stored, dict) else None
    cls = _REPAIR_TYPES.get(kind, HumanMessage) if isinstance(kind, str) else HumanMessage
    extra: dict[str, Any] = {}
    if cls is ToolMessage:
        extra["tool_call_id"] = str(fields.get("tool_call_id") or "")
    elif cls is ChatMessage:
        extra["role"] = str(fields.get("role") or "user")
    elif cls is FunctionMessage:
        extra["name"] = str(fields.get("name") or "function")
    msg_id = fields.get("id")
    if len(_REPAIRED) < 1_000 and msg_id not in _REPAIRED:  # said once per message, not per read
        _REPAIRED.add(msg_id)
        logger.warning("a stored message (id %r) could not be read as is; returned as text: %s", msg_id, reason)
    return cls(
        content=text, id=msg_id if isinstance(msg_id, str) else None,
        additional_kwargs={"tiered_memory_repaired": reason}, **extra,
    )


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
                raise InvalidMessageError(f"messages[{i}] is not a valid message: {_brief(exc)}") from exc
        raise InvalidMessageError(
            f"messages[{i}] is a {type(item).__name__}, not a message; pass LangChain "
            "messages (HumanMessage, AIMessage, …), role/content dicts or (role, content) tuples"
        )
    return out


def _brief(exc: BaseException, limit: int = 300) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"
