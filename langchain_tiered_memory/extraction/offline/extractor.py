"""The offline :class:`~langchain_tiered_memory.extraction.Extractor`: rules and extractive summaries."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence

from langchain_core.messages import BaseMessage

from ...errors import InvalidInputError
from ..arguments import check_messages, check_names, check_summary, check_tokens, check_types
from ..schema import EpisodeExtraction, TurnExtraction
from ...tokens import TiktokenCounter, TokenCounter
from .rules import extract_rules
from .summary import compress_extractive, extractive_episode, extractive_summary

__all__ = ["ExtractiveSummaries", "OfflineExtractor"]

logger = logging.getLogger("langchain_tiered_memory")

_notice_lock = threading.Lock()
_noticed = False


def _notice_once() -> None:
    global _noticed
    with _notice_lock:
        if _noticed:
            return
        _noticed = True
    logger.warning(
        "langchain-tiered-memory is in offline mode: no chat model is configured, so entities "
        "and memories come from English rules and summaries are extractive. Pass model=<any "
        "LangChain chat model>, or set OPENAI_BASE_URL (a local OpenAI-compatible server) "
        "or OPENAI_API_KEY (OpenAI), with TIERED_MEMORY_MODEL naming the model, to extract "
        "with an LLM."
    )


class ExtractiveSummaries:
    """Summaries without a model: the fallback the LLM extractor is handed (its
    ``SummaryFallback``) for when a model's answer leaves the summary unusable.

    Unlike :class:`OfflineExtractor` it does not announce offline mode: a model is there.
    """

    def __init__(self, *, counter: TokenCounter | None = None) -> None:
        if counter is not None and not isinstance(counter, TokenCounter):
            raise InvalidInputError(f"counter must be a TokenCounter, got {type(counter).__name__}")
        self._counter = counter

    @property
    def counter(self) -> TokenCounter:
        """The token counter (tiktoken ``cl100k_base`` unless one was given)."""
        if self._counter is None:
            self._counter = TiktokenCounter()
        return self._counter

    def fold_summary(self, evicted: Sequence[BaseMessage], *, previous: str | None, max_tokens: int) -> str:
        """``previous`` with the salient sentences of ``evicted`` folded in, within ``max_tokens``."""
        return extractive_summary(evicted, previous=previous, max_tokens=max_tokens, counter=self.counter)

    def compress_summary(self, summary: str, max_tokens: int) -> str:
        """``summary`` cut to its most salient lines within ``max_tokens``."""
        if not isinstance(summary, str):
            raise InvalidInputError(f"summary must be a str, got {type(summary).__name__}")
        return compress_extractive(summary, max_tokens, self.counter)


class OfflineExtractor(ExtractiveSummaries):
    """The :class:`~langchain_tiered_memory.extraction.Extractor` without a model.

    Deterministic English rules for entities and memories and extractive summaries (see
    the module doc). Logs once per process that memory runs offline.
    """

    offline = True
    name = "offline-rules:1"

    def __init__(self, *, counter: TokenCounter | None = None) -> None:
        super().__init__(counter=counter)
        _notice_once()

    def extract_turn(
        self,
        messages: Sequence[BaseMessage],
        *,
        summary: str | None = None,
        evicted: Sequence[BaseMessage] = (),
        known_entities: Sequence[str] = (),
        summary_max_tokens: int = 2000,
        known_types: Mapping[str, str] | None = None,
    ) -> TurnExtraction:
        """Rule-based entities and memories of the turn; with ``evicted``, the summary.

        ``known_types`` (beyond the :class:`~langchain_tiered_memory.extraction.Extractor`
        protocol): the stored type of known names, ``{"Kyoto": "place"}``, so that a name
        keeps the type an earlier turn gave it and a name listed with a known place is one.
        """
        turn = check_messages(messages, "messages")
        gone = check_messages(evicted, "evicted")
        summary = check_summary(summary)
        known = check_names(known_entities)
        types = check_types(known_types)
        budget = check_tokens(summary_max_tokens, "summary_max_tokens")
        result = extract_rules(turn, known, types)
        if gone:
            folded = self.fold_summary(gone, previous=summary, max_tokens=budget)
            result = result.model_copy(update={"summary": folded or None})
        return result

    def extract_episode(self, messages: Sequence[BaseMessage]) -> EpisodeExtraction:
        """The extractive episode of a finished conversation."""
        turn = check_messages(messages, "messages")
        if not turn:
            raise InvalidInputError("extract_episode needs at least one message")
        return extractive_episode(turn, self.counter)

