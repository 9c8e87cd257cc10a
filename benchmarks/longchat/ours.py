"""The product path of langchain-tiered-memory, measured through its public API only.

The recall API is being rebuilt while this harness exists, so the adapter targets the API
as designed and degrades, saying so, where the installed package does not have it yet:

* ingest: ``after_turn(user, thread_id=session, [HumanMessage, AIMessage], at=turn time)``
  per exchange — without ``at`` when ``after_turn`` does not take it (then every message
  is stored at the wall-clock time of the run, and the relative-date questions cannot be
  answered from dates); ``end_session`` after each session; ``flush()`` at the end;
* ranked evidence: ``recall(user, query, k=10, at=question time)`` returning hits with
  ``.message_ids`` (best hit first); else ``search(user, query, k=10)`` with each hit's
  ``entry.source_message_ids`` when entries have that field; else nothing (recall 0);
* context: ``before_turn(user, fresh thread, query=question, at=question time)`` (``at``
  only if accepted) under an 8k budget: what the model would be sent.

Every ``hasattr``/``inspect.signature`` check lives here, so the benchmark itself stays
the same when the API lands.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage

from langchain_tiered_memory import MemoryConfig, TieredMemory

from .generator import Conversation, Question

#: The context budget of the answer-in-context measure: 8,192 tokens for the context,
#: 1,024 more kept for the answer, no reserve for a system prompt.
CONTEXT_CONFIG = dict(max_tokens=8192 + 1024, output_reserve=1024, system_reserve=0)
#: A lean budget for the cost series: 1,536 tokens of context (about 15% of what an
#: unbounded buffer sends at turn 300): the window keeps the last few turns, recall the rest.
SMALL_CONFIG = dict(max_tokens=1536 + 512, output_reserve=512, system_reserve=0)


def _accepts(fn: Any, name: str) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


@dataclass
class Capabilities:
    after_turn_at: bool
    before_turn_at: bool
    recall: bool
    recall_at: bool
    search_source_ids: bool | None  # None: not known until a hit is seen

    def notes(self) -> list[str]:
        out = []
        if not self.after_turn_at:
            out.append("`after_turn` takes no `at=`: turns were stored at the run's wall-clock "
                       "time, not at their conversation dates")
        if not self.before_turn_at:
            out.append("`before_turn` takes no `at=`: contexts were built without the question's date")
        if self.recall and not self.recall_at:
            out.append("`recall` takes no `at=`: evidence was ranked without the question's date")
        if not self.recall:
            if self.search_source_ids:
                out.append("no `recall`: ranked evidence came from `search` hits' "
                           "`entry.source_message_ids` (long-term memories only)")
            else:
                out.append("no `recall`, and `search` hits carry no source message ids: ranked "
                           "evidence could not be mapped to turns, so recall@k and latest-value "
                           "in ranked evidence are 0 by construction (answer-in-context still measures "
                           "what `before_turn` sends)")
        return out

    def as_dict(self) -> dict[str, Any]:
        return {
            "after_turn_at": self.after_turn_at, "before_turn_at": self.before_turn_at,
            "recall": self.recall, "recall_at": self.recall_at,
            "search_source_ids": bool(self.search_source_ids),
        }


@dataclass
class Ranked:
    """Ranked evidence: one list of message ids per hit, best hit first."""

    hits: list[list[str]] = field(default_factory=list)
    ms: float = 0.0


class Ours:
    """A :class:`TieredMemory` driven the way an application would drive it."""

    name = "ours"

    def __init__(
        self, data_dir: str | Path | None = None, model: Any = None, *, memory: Any = None, **config: Any
    ) -> None:
        """A new ``TieredMemory`` in ``data_dir`` at the 8k context budget (``config``
        overrides), or ``memory``: an existing one (or anything with its API)."""
        if memory is None:
            settings = {**CONTEXT_CONFIG, "job_mode": "background", **config}
            memory = TieredMemory(data_dir, MemoryConfig(**settings), model=model)
        self.memory = memory
        m = self.memory
        recall = getattr(m, "recall", None)
        self.caps = Capabilities(
            after_turn_at=_accepts(m.after_turn, "at"),
            before_turn_at=_accepts(m.before_turn, "at"),
            recall=callable(recall),
            recall_at=callable(recall) and _accepts(recall, "at"),
            search_source_ids=None,
        )
        self.ingest_s = 0.0
        self.turns = 0

    def close(self) -> None:
        self.memory.close()

    # --- ingest -----------------------------------------------------------------------

    def add_exchange(self, user_id: str, thread_id: str, user: Any, assistant: Any) -> None:
        """Store one user turn and the assistant's reply (``Turn`` objects)."""
        messages = [HumanMessage(user.text, id=user.id), AIMessage(assistant.text, id=assistant.id)]
        if self.caps.after_turn_at:
            self.memory.after_turn(user_id, thread_id, messages, at=user.at)
        else:
            self.memory.after_turn(user_id, thread_id, messages)

    def ingest(self, conversations: Sequence[Conversation]) -> None:
        """Every conversation, session by session, then ``flush()``: timed as a whole."""
        start = time.perf_counter()
        for c in conversations:
            for s in c.sessions:
                for i in range(0, len(s.turns) - 1, 2):
                    self.add_exchange(c.user_id, s.id, s.turns[i], s.turns[i + 1])
                    self.turns += 2
                self.memory.end_session(c.user_id, s.id)
        self.memory.flush()
        self.ingest_s += time.perf_counter() - start

    # --- reading ----------------------------------------------------------------------

    def ranked(self, question: Question, query: str | None = None, k: int = 10) -> Ranked:
        query = question.text if query is None else query
        m = self.memory
        start = time.perf_counter()
        if self.caps.recall:
            if self.caps.recall_at:
                hits = m.recall(question.user_id, query, k=k, at=question.asked_at)
            else:
                hits = m.recall(question.user_id, query, k=k)
            ms = (time.perf_counter() - start) * 1000
            return Ranked([list(getattr(h, "message_ids", None) or []) for h in hits], ms)
        hits = m.memories.search(question.user_id, query, k=k)
        ms = (time.perf_counter() - start) * 1000
        out = []
        for h in hits:
            ids = getattr(getattr(h, "entry", None), "source_message_ids", None)
            if self.caps.search_source_ids is None:
                self.caps.search_source_ids = ids is not None
            out.append(list(ids or []))
        return Ranked(out, ms)

    def context(self, question: Question, thread_id: str, query: str | None = None) -> tuple[Any, float]:
        """What ``before_turn`` sends for the question, in a thread of its own, and its ms."""
        query = question.text if query is None else query
        start = time.perf_counter()
        ctx = self.before_turn(question.user_id, thread_id, query, question.asked_at)
        return ctx, (time.perf_counter() - start) * 1000

    def before_turn(self, user_id: str, thread_id: str, query: str | None, at: Any) -> Any:
        """``before_turn``, dated ``at`` when the API takes a date."""
        if self.caps.before_turn_at:
            return self.memory.before_turn(user_id, thread_id, query=query, at=at)
        return self.memory.before_turn(user_id, thread_id, query=query)


def context_text(ctx: Any) -> str:
    """The text of everything ``before_turn`` put in front of the model."""
    return "\n".join(m.text for m in ctx.messages)

