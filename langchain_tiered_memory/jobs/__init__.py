"""Journaled work done after a turn: the runner (leases, retries, the worker thread) and the
handlers (extraction, episodes)."""

from .handlers import JobHandlers
from .runner import JobRunner

__all__ = ["JobHandlers", "JobRunner"]
