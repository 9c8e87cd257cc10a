"""The window of each thread, kept between turns: its index of the log, its pinned system
message, its truncated messages, and which messages have left it.

:class:`Window` is the one owner of that state. A turn asks it for the system message, the
messages that fit what the memory block left, and, after an append, how many messages are
now outside the window (recorded in the log as ``evicted_through``, which the summary job
reads). Which messages fit is decided in :mod:`.selection`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from langchain_core.messages import BaseMessage, HumanMessage

from ...storage.message_format import read_messages
from ...storage.rows import IndexRow, NewMessage, ThreadRow
from .selection import ThreadIndex, fit_group, select, truncate_message

if TYPE_CHECKING:
    from ...config import MemoryConfig
    from ...storage import Storage
    from ...tokens import TokenCounter

__all__ = ["Window"]

# Threads whose index stays in memory; an evicted one is rebuilt from the database on next use.
_CACHED_THREADS = 256
# Truncated windows kept (a message cut to fit is cut once, not on every turn).
_CACHED_CUTS = 64
# Messages looked back over for the newest human one (the turn's query when none is given).
_QUERY_LOOKBACK = 20


class Window:
    """The windows of every thread of one memory.

    ``lock`` guards the cached state; a turn holds it for the whole of its read of the
    window (and of the sections sized against it), so that two turns of one process see
    one thread's cache in step. A turn's append and its eviction mark are written outside it:
    a write may wait for another process's write lock, and every turn of the process would
    wait with it. (The one write left under it is rare: storing the recounts of messages
    that another token counter counted.)
    """

    def __init__(self, storage: Storage, config: MemoryConfig, counter: TokenCounter) -> None:
        self._storage = storage
        self.config = config
        self.counter = counter
        self.lock = threading.RLock()
        self._indexes: OrderedDict[str, ThreadIndex] = OrderedDict()
        self._memory_tokens: dict[str, int] = {}
        self._cuts: OrderedDict[tuple[int, int, int, int], tuple[list[BaseMessage], int]] = OrderedDict()

    def forget(self, thread_id: str | None = None) -> None:
        """Drop cached state of a thread (or of all: ids are global, the cache knows no owner)."""
        with self.lock:
            if thread_id is None:
                self._indexes.clear()
                self._memory_tokens.clear()
                self._cuts.clear()
            else:
                self._indexes.pop(thread_id, None)
                self._memory_tokens.pop(thread_id, None)

    # --- a turn's window ------------------------------------------------------------------

    def available(self) -> int:
        """The context budget less the request's fixed overhead."""
        return self.config.context_budget - self.counter.overhead

    def system_cap(self) -> int:
        """The most the system message may take: its reserve, or up to half of the budget."""
        # A system prompt may outgrow its reserve, but never take more than half of the
        # budget: the conversation keeps room.
        return max(self.config.system_reserve, self.available() // 2)

    def system_message(self, index: ThreadIndex | None) -> tuple[BaseMessage | None, int]:
        """The thread's pinned system message (cut to :meth:`system_cap`) and its tokens."""
        if index is None or index.system_seq is None:
            return None, 0
        seq = index.system_seq
        if seq not in index.messages:
            index.messages.update(self._loader(index.key)([seq]))
        message, tokens = index.messages[seq], index.system_tokens
        cap = self.system_cap()
        if tokens > cap:
            cut = self._cut(index.key, seq, cap, lambda: truncate_message(message, cap, self.counter))
            if cut is None:
                return None, 0
            return cut[0][0], cut[1]
        return message, tokens

    def last_human_text(self, index: ThreadIndex) -> str | None:
        """The text of the thread's newest human message among its last few."""
        for i in range(len(index) - 1, max(len(index) - _QUERY_LOOKBACK, 0) - 1, -1):
            if index.is_tool[i]:
                continue
            messages = index.load(i, self._loader(index.key))
            if isinstance(messages[0], HumanMessage):
                return messages[0].text
        return None

    def note_memory_tokens(self, thread_id: str, tokens: int) -> None:
        """The memory block of this thread's turn took ``tokens``: the best estimate of what
        the next turn's will take (eviction after an append sizes the window with it)."""
        self._memory_tokens[thread_id] = tokens

    def fit(
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
            self._remember_cut(cache_key, found)
        fitted, tokens = found
        if not fitted:
            return [], 0, len(index), True
        return list(fitted), tokens, chosen.start, True

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
            self._remember_cut(cache_key, found)
        return found

    def _remember_cut(self, key: tuple[int, int, int, int], cut: tuple[list[BaseMessage], int]) -> None:
        self._cuts[key] = cut
        while len(self._cuts) > _CACHED_CUTS:
            self._cuts.popitem(last=False)

    # --- after an append ------------------------------------------------------------------

    def appended(self, thread_id: str, thread_key: int, stored: Sequence[tuple[int, NewMessage]]) -> None:
        """Messages were appended at these seqs: extend the cached index without a read
        when nobody appended in between (else the next read catches up)."""
        index = self._indexes.get(thread_id)
        if index is not None and index.key == thread_key and stored and index.next_seq == stored[0][0]:
            index.extend(
                [IndexRow(seq, row.type, row.tokens, self.counter.name, row.tool_calls) for seq, row in stored]
            )

    def evicting(self, thread: ThreadRow) -> tuple[int, int | None]:
        """How many of the thread's messages are now outside the window, and the seq to
        record as evicted through if it moved (``None``: it did not). Called under
        :attr:`lock`; the caller records it after letting the lock go
        (``threads.set_evicted_through``), as the write may wait for another process."""
        index = self.index(thread)
        if index is None or len(index) == 0:
            return 0, None
        system_charge = max(self.config.system_reserve, min(index.system_tokens, self.system_cap()))
        # The memory block's size is that of this thread's last before_turn: the best
        # estimate of what the next one will take.
        budget = self.available() - system_charge - self._memory_tokens.get(thread.thread_id, 0)
        start = select(index, budget, thread.summarized_through).start
        if start > 0 and index.seqs[start - 1] > thread.evicted_through:
            return start, index.seqs[start - 1]
        return start, None

    # --- reading the log ------------------------------------------------------------------

    def messages(self, thread_key: int, first: int, last: int) -> list[BaseMessage]:
        """The thread's messages ``first..last`` (seqs), oldest first."""
        if last < first:
            return []
        data = self._storage.threads.data(thread_key, first, last)
        return read_messages([data[s] for s in sorted(data)])

    def index(self, thread: ThreadRow | None, *, peek: bool = False) -> ThreadIndex | None:
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
