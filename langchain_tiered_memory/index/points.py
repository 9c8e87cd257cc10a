"""What the recall index stores and returns: the collection's schema, a unit's point, the
opaque tenant key, and the candidates and probes of a search.

Apart from :mod:`.recall_index` so that what feeds the index (:class:`UnitSource`) and what
repairs it (:mod:`.repair`) can name these without importing the index itself.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ..backends.records import CollectionSchema, ScoredRecord, Where

if TYPE_CHECKING:
    from ..storage import Unit

__all__ = [
    "CANDIDATE_FIELDS",
    "COLLECTION",
    "GRAINS",
    "RECALL_SCHEMA",
    "Candidate",
    "Probe",
    "UnitSource",
    "candidate_of",
    "point_payload",
    "tenant_key",
]

#: The grains of recall, finest last.
GRAINS: tuple[str, ...] = ("fact", "session", "window", "turn")
#: The collection's name (an Edge shard in ``data_dir/qdrant/recall``, or on the server).
COLLECTION = "recall"
RECALL_SCHEMA = CollectionSchema(
    tenant_field="user",
    keyword_fields=("grain", "memory_type"),
    float_fields=("importance", "news", "discloses"),
    integer_fields=("current",),
    datetime_fields=("at", "told_from", "told_until"),
)
#: The payload fields a candidate carries: what the ranking reads before the records (the
#: rest of a point's payload is for filters; leaving it in the engine makes a query cheaper).
CANDIDATE_FIELDS = ("grain", "at", "asks", "news", "words", "told_from", "told_until", "discloses", "implicit")


def tenant_key(user_id: str) -> str:
    """The opaque key a user's points carry instead of their id (BLAKE2b, 128 bits)."""
    return hashlib.blake2b(user_id.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


@dataclass(frozen=True)
class Candidate:
    """A unit the index found for a query: its id, grain, and each leg's score.

    ``dense`` is the cosine similarity, ``sparse`` the BM25 score (``None``: no term in
    common, or not among the sparse candidates).
    """

    id: str
    grain: str
    dense: float | None
    sparse: float | None
    payload: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Probe:
    """One search of :meth:`RecallIndex.candidates_many`: the query's text (BM25) and
    vector (dense), the filter (:meth:`RecallIndex.where`) and how many per leg."""

    query: str
    vector: Sequence[float]
    where: Where
    limit: int


class UnitSource(Protocol):
    """A family of records that the index holds points for (memories, episodes, turns)."""

    grains: tuple[str, ...]

    def pending(self, limit: int) -> Sequence[Unit]:
        """Records whose point is not written yet, as units to index."""

    def indexed(self, units: Sequence[Unit], vectors: Sequence[Sequence[float]]) -> None:
        """The points of ``units`` were written (with these vectors): mark the records."""

    def reset(self) -> int:
        """Mark every record unindexed (the index is rebuilt); how many there are."""

    def indexed_count(self) -> int:
        """How many records have their point written."""

    def texts(self, ids: Sequence[str]) -> dict[str, str]:
        """The indexed text of the records among ``ids`` that exist, by id."""


def candidate_of(hit: ScoredRecord, dense: float | None, sparse: float | None) -> Candidate:
    """The candidate of a point the engine returned, with each leg's score."""
    return Candidate(hit.id, str(hit.payload.get("grain", "")), dense, sparse, hit.payload)


def point_payload(unit: Unit) -> dict[str, Any]:
    """What a unit's point carries: the tenant key, grain, time, and its filter fields."""
    return {"user": tenant_key(unit.user_id), "grain": unit.grain, "at": unit.at, **unit.fields}
