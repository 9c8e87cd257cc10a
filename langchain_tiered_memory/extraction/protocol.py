"""The :class:`Extractor` protocol: what the memory layers need from an extractor."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from langchain_core.messages import BaseMessage

from .schema import EpisodeExtraction, TurnExtraction

__all__ = ["Extractor"]


@runtime_checkable
class Extractor(Protocol):
    """What the memory layers need from an extractor: an LLM or the offline rules."""

    #: True when no LLM is involved (rules and extractive summaries).
    offline: bool
    #: Identifies the extractor (and model) in logs and job records.
    name: str

    def extract_turn(
        self,
        messages: Sequence[BaseMessage],
        *,
        summary: str | None = None,
        evicted: Sequence[BaseMessage] = (),
        known_entities: Sequence[str] = (),
        summary_max_tokens: int = 2000,
    ) -> TurnExtraction:
        """Entities and memories of ``messages`` (the new turn), in one model call.

        When ``evicted`` is non-empty, ``summary`` of the result is ``summary`` with the
        evicted messages folded in (aimed at under ``summary_max_tokens``; use
        :meth:`compress_summary` if it is over); otherwise it is ``None``.
        ``known_entities`` are names already stored, so the same spelling is reused.
        """
        ...

    def extract_episode(self, messages: Sequence[BaseMessage]) -> EpisodeExtraction:
        """A record of a finished conversation: summary, decisions, outcome, topics."""
        ...

    def compress_summary(self, summary: str, max_tokens: int) -> str:
        """``summary`` rewritten to at most ``max_tokens`` tokens."""
        ...
