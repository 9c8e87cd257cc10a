"""The index searches of one turn, gathered into one trip to the engine.

``before_turn`` is the latency-critical path: its sections that search the index (recall,
episodes) add their probes first, and the first to read runs them all in one batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import VectorStoreError

if TYPE_CHECKING:
    from .points import Candidate, Probe
    from .recall_index import RecallIndex

__all__ = ["Searches"]


class Searches:
    """The index searches of one turn, in one trip to the engine.

    Each layer that searches for the turn adds its probes under a key of its own
    (:meth:`add`) before any is read; the first :meth:`found` runs every probe added so far
    in one :meth:`RecallIndex.candidates_many` batch, and hands each key its part. A batch
    that fails raises its error to each of its readers (each section degrades alike).
    """

    def __init__(self, index: RecallIndex) -> None:
        self._index = index
        self._pending: dict[object, list[Probe]] = {}
        self._done: dict[object, list[list[Candidate]] | VectorStoreError] = {}

    def add(self, key: object, probes: Sequence[Probe]) -> None:
        """Probes to run in the next batch, read back with ``found(key)`` (replacing what
        ``key`` added or found before)."""
        self._done.pop(key, None)
        self._pending[key] = list(probes)

    def holds(self, key: object) -> bool:
        """Whether ``key`` added probes (run or not)."""
        return key in self._pending or key in self._done

    def found(self, key: object) -> list[list[Candidate]]:
        """The candidates of each probe added under ``key``, in order (running the batch
        if it has not run)."""
        if key not in self._done:
            if key not in self._pending:
                raise KeyError(f"no probes were added under {key!r}")
            batch, self._pending = self._pending, {}
            try:
                results = self._index.candidates_many([p for probes in batch.values() for p in probes])
            except VectorStoreError as exc:
                self._done.update(dict.fromkeys(batch, exc))
            else:
                start = 0
                for k, probes in batch.items():
                    self._done[k] = results[start : start + len(probes)]
                    start += len(probes)
        done = self._done[key]
        if isinstance(done, VectorStoreError):
            raise done
        return done
