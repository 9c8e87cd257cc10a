"""Journaled work done after a turn: the runner (leases, retries, the worker thread) and the
handlers (extraction, episodes)."""

from .handlers import JobHandlers
from .runner import JobRunner

#: What a job journaled by a memory with a chat model needs of the memory that runs it.
NEEDS_LLM = "llm"

__all__ = ["NEEDS_LLM", "JobHandlers", "JobRunner"]
