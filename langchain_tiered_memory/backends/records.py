"""The plain types a backend speaks, engine-free: what a collection indexes, the filters a
query takes, the points written and read, and the model record that says which embeddings
built the vectors.

A point is a dense vector (the caller's embedding), a BM25 sparse vector computed from its
text (:mod:`.bm25`) and a small payload of fields to filter on. **No text is stored**: the
relational store owns every record, and a collection is an index that can be rebuilt from
it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

__all__ = [
    "DENSE_VECTOR",
    "META_FORMAT",
    "MODEL_FIELD",
    "SPARSE_VECTOR",
    "BackendInfo",
    "CollectionSchema",
    "PointData",
    "Range",
    "Record",
    "ScoredRecord",
    "Where",
    "mismatch_message",
    "new_meta",
]

#: Name of the dense vector of a new collection. A reindex to another dimension adds a
#: vector named ``dense_<dimension>``; :attr:`BackendInfo.vector_name` is the live one.
DENSE_VECTOR = "dense"
#: Name of the BM25 sparse vector (IDF applied by Qdrant at query time).
SPARSE_VECTOR = "bm25"
#: Payload key, written by the backend on every point, naming the model of its dense
#: vector. A reindex skips points already stamped with the target model: it resumes.
MODEL_FIELD = "_embedding_model"
META_FORMAT = 1


@dataclass(frozen=True)
class CollectionSchema:
    """The payload fields a collection indexes, by type.

    ``tenant_field`` gets a keyword index marked ``is_tenant`` (Qdrant co-locates each
    tenant's points and plans per-tenant search); every query of the package filters on it.
    Datetime fields hold ISO 8601 strings with a UTC offset and can be ranges in a
    :class:`Where`.
    """

    tenant_field: str = "user"
    keyword_fields: tuple[str, ...] = ()
    float_fields: tuple[str, ...] = ()
    integer_fields: tuple[str, ...] = ()
    datetime_fields: tuple[str, ...] = ()

    def indexes(self) -> list[tuple[str, str]]:
        """``(field, kind)`` of every payload index, the tenant and the model stamp first."""
        out = [(self.tenant_field, "tenant"), (MODEL_FIELD, "keyword")]
        out += [(f, "keyword") for f in self.keyword_fields]
        out += [(f, "float") for f in self.float_fields]
        out += [(f, "integer") for f in self.integer_fields]
        out += [(f, "datetime") for f in self.datetime_fields]
        return out


@dataclass(frozen=True)
class Range:
    """Bounds on a float or datetime payload field; ``None`` leaves a side open."""

    gte: float | datetime | None = None
    gt: float | datetime | None = None
    lte: float | datetime | None = None
    lt: float | datetime | None = None

    def values(self) -> dict[str, float | datetime | None]:
        """The four bounds by name."""
        return {"gte": self.gte, "gt": self.gt, "lte": self.lte, "lt": self.lt}

    def is_datetime(self) -> bool:
        """Whether the bounds are datetimes (else numbers)."""
        return any(isinstance(v, datetime) for v in self.values().values())


@dataclass(frozen=True)
class Where:
    """A conjunction of payload conditions (all must hold).

    ``equals`` matches one value, ``any_of`` any of several, ``none_of`` none of them (a
    point without the field matches ``none_of``); ``ranges`` bound float or datetime
    fields; ``ids`` restricts to those point ids, ``exclude_ids`` removes some;
    ``excluded`` removes the points that match any of these filters.
    """

    equals: Mapping[str, str | int | bool] = field(default_factory=dict)
    any_of: Mapping[str, Sequence[str]] = field(default_factory=dict)
    none_of: Mapping[str, Sequence[str]] = field(default_factory=dict)
    ranges: Mapping[str, Range] = field(default_factory=dict)
    ids: Sequence[str] | None = None
    exclude_ids: Sequence[str] = ()
    excluded: Sequence[Where] = ()

    def is_empty(self) -> bool:
        """True when the filter matches every point."""
        return not (
            self.equals or self.any_of or self.none_of or self.ranges or self.exclude_ids or self.excluded
        ) and self.ids is None


@dataclass(frozen=True)
class PointData:
    """A point to write: its id (a UUID string), dense vector, BM25 text and payload.

    The text is tokenised into the sparse vector and then dropped: it is not stored.
    """

    id: str
    vector: Sequence[float]
    text: str
    payload: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Record:
    """A stored point: id, payload, and the live dense vector when asked for."""

    id: str
    payload: dict[str, Any]
    vector: list[float] | None = None


@dataclass(frozen=True)
class ScoredRecord:
    """A point returned by a query, with its score (see the query for what it means)."""

    id: str
    score: float
    payload: dict[str, Any]


@dataclass(frozen=True)
class BackendInfo:
    """What a collection was built with, against what the caller uses now."""

    kind: str
    location: str
    dimension: int
    model_id: str
    expected_dimension: int
    expected_model_id: str
    vector_name: str
    points: int
    reindex_target: str | None = None

    @property
    def mismatch(self) -> str | None:
        """Why vectors cannot be used now (a model change, an unfinished reindex), or None."""
        return mismatch_message(
            self.location,
            (self.model_id, self.dimension),
            (self.expected_model_id, self.expected_dimension),
            self.reindex_target,
        )


def mismatch_message(
    location: str,
    stored: tuple[str, int],
    expected: tuple[str, int],
    reindex_target: str | None = None,
) -> str | None:
    """The :class:`EmbeddingMismatchError` message for a collection, or None if usable.

    During a reindex the old model's embeddings stay usable: the old vectors stay whole
    until it finishes (the new ones are written beside them), so a process still on the old
    model reads and writes the old space; the new model waits for the whole new space."""
    if reindex_target is not None and stored == expected:
        return None
    if reindex_target is not None:
        return (
            f"the vector index at {location} has an unfinished reindex to "
            f"{reindex_target!r}; run memory.reindex() (or `tiered-memory reindex`) again "
            "to finish it: it resumes where it stopped"
        )
    if stored != expected:
        return (
            f"the vector index at {location} was built with embedding model "
            f"{stored[0]!r} ({stored[1]}-d), but the embeddings in use are {expected[0]!r} "
            f"({expected[1]}-d); run memory.reindex() (or `tiered-memory reindex`) to "
            "rebuild the vectors with the new model, or pass the original embeddings"
        )
    return None


def new_meta(model_id: str, dimension: int) -> dict[str, Any]:
    """The model record of a new collection."""
    return {
        "format": META_FORMAT,
        "created_by": "langchain-tiered-memory",
        "model_id": model_id,
        "dimension": dimension,
        "vector": DENSE_VECTOR,
        "vectors": {DENSE_VECTOR: dimension},
        "target": None,
    }
