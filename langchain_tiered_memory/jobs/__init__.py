"""Journaled work done after a turn: the runner (leases, retries, the worker thread), the
handlers (extraction, episodes), the retry policy, and ``memory.jobs`` (list, re-run)."""

from .handlers import JobHandlers
from .journal import JobInfo, JobJournal
from .runner import JobRunner

#: What a job journaled by a memory with a chat model needs of the memory that runs it.
NEEDS_LLM = "llm"

__all__ = ["NEEDS_LLM", "JobHandlers", "JobInfo", "JobJournal", "JobRunner"]
