"""The small interface every vector backend implements, and the plain types it speaks.

A backend holds one collection: points with a dense vector (the caller's embedding), a
BM25 sparse vector (computed here from the point's text, with Qdrant Edge's own ``Bm25``
tokenizer, so both backends index text identically) and a JSON payload. Nothing in this
interface knows about memories: the long-term layer and the episodic layer each open their
own collection with their own :class:`CollectionSchema`.

Hybrid recall (:meth:`VectorBackend.hybrid`) is specified here, once, for every backend:

* two candidate lists, dense cosine and BM25, each of ``candidates`` points, both filtered
  by the query's :class:`Where`;
* fused inside Qdrant by reciprocal rank fusion, ``rrf = Σ 1 / (RRF_K + rank)`` (rank from 0);
* ``relevance = rrf / rrf_max`` with ``rrf_max = 2 / RRF_K``, the fused score of a point that
  is first in both lists: 1.0 means first for dense and BM25 alike, 0.5 means first for one
  of them only (or about rank 60 in both). Points below ``min_relevance`` are dropped;
* with a :class:`Decay`, ``score = relevance × (1 − w + w × importance × rate^days)``, where
  ``days`` is the distance between ``decay.now`` and the point's time field and ``w`` the
  query's ``decay_weight``: importance and age can at most scale a match down by ``1 − w``.
  Both backends compute it in the engine with a formula query over the fused candidates,
  so only the ``limit`` best points leave Qdrant.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..errors import EmbeddingMismatchError, VectorStoreError

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

__all__ = [
    "DENSE_VECTOR",
    "MEMORY_SCHEMA",
    "MODEL_FIELD",
    "RRF_K",
    "SECONDS_PER_DAY",
    "SPARSE_VECTOR",
    "BackendInfo",
    "CollectionSchema",
    "Decay",
    "HybridQuery",
    "OrderBy",
    "PointData",
    "Range",
    "Record",
    "ScoredRecord",
    "VectorBackend",
    "Where",
    "bm25_document",
    "bm25_query",
    "mismatch_message",
    "reindex_backend",
    "rrf_max",
]

#: Name of the dense vector of a new collection. A reindex to another dimension adds a
#: vector named ``dense_<dimension>``; :attr:`BackendInfo.vector_name` is the live one.
DENSE_VECTOR = "dense"
#: Name of the BM25 sparse vector (IDF applied by Qdrant at query time).
SPARSE_VECTOR = "bm25"
#: Payload key, written by the backend on every point, naming the model of its dense
#: vector. A reindex skips points already stamped with the target model: it resumes.
MODEL_FIELD = "_embedding_model"
#: Reciprocal rank fusion constant, the usual 60.
RRF_K = 60
SECONDS_PER_DAY = 86_400.0
# Qdrant's exponential decay needs a midpoint inside (0, 1); a rate of 0 becomes this.
_MIN_RATE = 1e-12
# Fused scores come back as float32: 1/60 rounds to 0.016666668, a hair above the float64
# threshold or below it depending on the arithmetic, so thresholds get this much slack.
THRESHOLD_SLACK = 1e-5


def rrf_max(k: int = RRF_K, lists: int = 2) -> float:
    """The fused score of a point ranked first in each of ``lists`` candidate lists."""
    return lists / k


@dataclass(frozen=True)
class CollectionSchema:
    """The payload fields a collection indexes, by type.

    ``tenant_field`` gets a keyword index marked ``is_tenant`` (Qdrant co-locates each
    tenant's points and plans per-tenant search); every query of the package filters on it.
    Datetime fields hold ISO 8601 strings with a UTC offset and can be ranges in a
    :class:`Where`, the time field of a :class:`Decay`, or an :class:`OrderBy` key.
    """

    tenant_field: str = "user_id"
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


#: The long-term memory collection (:mod:`langchain_tiered_memory.vectors`).
MEMORY_SCHEMA = CollectionSchema(
    tenant_field="user_id",
    keyword_fields=("memory_type", "session_id"),
    float_fields=("importance",),
    datetime_fields=("created_at", "last_accessed"),
)


@dataclass(frozen=True)
class Range:
    """Bounds on a float or datetime payload field; ``None`` leaves a side open."""

    gte: float | datetime | None = None
    gt: float | datetime | None = None
    lte: float | datetime | None = None
    lt: float | datetime | None = None


@dataclass(frozen=True)
class Where:
    """A conjunction of payload conditions (all must hold).

    ``equals`` matches one value, ``any_of`` any of several, ``none_of`` none of them (a
    point without the field matches ``none_of``); ``ranges`` bound float or datetime
    fields; ``ids`` restricts to those point ids, ``exclude_ids`` removes some.
    """

    equals: Mapping[str, str | int | bool] = field(default_factory=dict)
    any_of: Mapping[str, Sequence[str]] = field(default_factory=dict)
    none_of: Mapping[str, Sequence[str]] = field(default_factory=dict)
    ranges: Mapping[str, Range] = field(default_factory=dict)
    ids: Sequence[str] | None = None
    exclude_ids: Sequence[str] = ()

    def is_empty(self) -> bool:
        """True when the filter matches every point."""
        return not (
            self.equals or self.any_of or self.none_of or self.ranges or self.exclude_ids
        ) and self.ids is None


@dataclass(frozen=True)
class OrderBy:
    """Scroll order on an indexed float, integer or datetime field."""

    field: str
    descending: bool = False


@dataclass(frozen=True)
class PointData:
    """A point to write: its id (a UUID string), dense vector, BM25 text and payload."""

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
class Decay:
    """Effective importance: ``importance × rate^days``, days between ``now`` and the time field.

    ``days`` is the absolute distance (Qdrant's decay functions are symmetric), so a time
    in the future of ``now`` decays too; with a clock that only moves forward it never is.
    """

    now: datetime
    rate: float
    importance_field: str = "importance"
    time_field: str = "last_accessed"

    def __post_init__(self) -> None:
        if self.now.tzinfo is None:
            raise ValueError("Decay.now must be timezone-aware")
        if not (0.0 <= self.rate <= 1.0) or math.isnan(self.rate):
            raise ValueError(f"Decay.rate must be within [0, 1], got {self.rate!r}")

    @property
    def midpoint(self) -> float | None:
        """The engine's decay midpoint per day; ``None`` when nothing decays (rate 1)."""
        return None if self.rate >= 1.0 else max(self.rate, _MIN_RATE)

    def days(self, when: datetime) -> float:
        """Days between ``now`` and ``when``."""
        return abs((self.now - when).total_seconds()) / SECONDS_PER_DAY

    def factor(self, when: datetime) -> float:
        """``rate^days``, as the engine computes it."""
        midpoint = self.midpoint
        return 1.0 if midpoint is None else math.exp(math.log(midpoint) * self.days(when))

    def effective(self, importance: float, when: datetime) -> float:
        """``importance × factor(when)``."""
        return importance * self.factor(when)


@dataclass(frozen=True)
class HybridQuery:
    """One hybrid recall; see the module docstring for the scoring.

    Args:
        vector: the query's dense embedding.
        text: the query's text, tokenised for BM25 (an empty token set searches dense only).
        where: filter applied to both candidate lists (always include the tenant).
        limit: points returned.
        candidates: points per candidate list before fusion.
        min_relevance: drop fused points whose normalised relevance is below this.
        decay: rank by relevance × effective importance; ``None`` ranks by relevance.
        decay_weight: ``w`` of the formula, within [0, 1].
    """

    vector: Sequence[float]
    text: str
    where: Where
    limit: int
    candidates: int = 50
    min_relevance: float = 0.0
    decay: Decay | None = None
    decay_weight: float = 0.5

    def relevance_threshold(self) -> float | None:
        """``min_relevance`` as a raw fused score, with float32 slack; ``None`` if off."""
        if self.min_relevance <= 0.0:
            return None
        return self.min_relevance * rrf_max() * (1.0 - THRESHOLD_SLACK)


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
    """The :class:`EmbeddingMismatchError` message for a collection, or None if usable."""
    if reindex_target is not None:
        return (
            f"the vector collection at {location} has an unfinished reindex to "
            f"{reindex_target!r}; run memory.reindex() (or `tiered-memory reindex`) again "
            "to finish it: it resumes where it stopped"
        )
    if stored != expected:
        return (
            f"the vector collection at {location} was built with embedding model "
            f"{stored[0]!r} ({stored[1]}-d), but the embeddings in use are {expected[0]!r} "
            f"({expected[1]}-d); run memory.reindex() (or `tiered-memory reindex`) to "
            "rebuild the vectors with the new model, or pass the original embeddings"
        )
    return None


@runtime_checkable
class VectorBackend(Protocol):
    """One collection of points in Qdrant (an embedded Edge shard or a server).

    ``dimension`` and ``model_id`` are those of the embeddings the caller uses now; the
    collection remembers the ones it was built with (:meth:`info`). While they differ,
    every call that reads or writes dense vectors raises
    :class:`~langchain_tiered_memory.errors.EmbeddingMismatchError`; payload calls
    (retrieve, scroll, count, set_payload, delete) keep working, so data can still be
    listed and forgotten. :func:`reindex_backend` rebuilds the vectors.
    """

    kind: str
    dimension: int
    model_id: str
    schema: CollectionSchema

    def info(self) -> BackendInfo:
        """The stored model and dimension, the expected ones, and the point count."""
        ...

    def upsert(self, points: Sequence[PointData]) -> None:
        """Insert or replace points (vectors, BM25 text and payload) in one write."""
        ...

    def retrieve(self, ids: Sequence[str], *, with_vectors: bool = False) -> list[Record]:
        """The stored points among ``ids`` (missing ids are skipped), in no set order."""
        ...

    def delete(self, ids: Sequence[str]) -> None:
        """Delete points by id; unknown ids are ignored."""
        ...

    def delete_where(self, where: Where) -> int:
        """Delete every point matching ``where``; returns how many there were."""
        ...

    def scroll(
        self,
        where: Where,
        *,
        limit: int,
        offset: str | None = None,
        order_by: OrderBy | None = None,
    ) -> tuple[list[Record], str | None]:
        """Up to ``limit`` points matching ``where`` and the id to continue from.

        With ``order_by`` the points come sorted and the continuation is ``None``: ask for
        ``offset + limit`` and slice.
        """
        ...

    def count(self, where: Where | None = None) -> int:
        """Exact number of points matching ``where`` (all points for ``None``)."""
        ...

    def set_payload(self, updates: Mapping[str, Mapping[str, Any]]) -> None:
        """Merge payload fields into several points in one batched write."""
        ...

    def nearest(self, vector: Sequence[float], where: Where, limit: int) -> list[ScoredRecord]:
        """Dense nearest neighbours; the score is the cosine similarity."""
        ...

    def hybrid(self, query: HybridQuery) -> list[ScoredRecord]:
        """Hybrid recall as specified in this module's docstring."""
        ...

    def weakest(self, where: Where, decay: Decay, limit: int) -> list[ScoredRecord]:
        """The ``limit`` points with the lowest effective importance (score: that value)."""
        ...

    def begin_reindex(self) -> None:
        """Record the current model as the reindex target (idempotent)."""
        ...

    def update_vectors(self, points: Sequence[PointData]) -> None:
        """Write target-model vectors (payloads untouched but the model stamp)."""
        ...

    def finish_reindex(self) -> None:
        """Make the target model the collection's model once every point has it."""
        ...

    def as_vectorstore(self, embeddings: Embeddings, **kwargs: Any) -> Any:
        """A ``langchain_qdrant.QdrantVectorStore`` over this collection (server only)."""
        ...

    def flush(self) -> None:
        """Make every write durable."""
        ...

    def close(self) -> None:
        """Release the collection (idempotent)."""
        ...


# --- BM25 --------------------------------------------------------------------------------

_bm25_lock = threading.Lock()
_bm25: Any = None


def _model() -> Any:
    global _bm25
    if _bm25 is None:
        with _bm25_lock:
            if _bm25 is None:
                try:
                    from qdrant_edge import Bm25
                except ImportError as exc:  # pragma: no cover - a dependency
                    raise VectorStoreError(
                        f"qdrant-edge-py is not installed ({exc}): pip install qdrant-edge-py"
                    ) from exc
                # Defaults: k=1.2, b=0.75, English stopwords and Snowball stemmer, the same
                # Bm25Config a Qdrant server's "Qdrant/bm25" inference uses.
                _bm25 = Bm25()
    return _bm25


def bm25_document(text: str) -> tuple[list[int], list[float]]:
    """BM25 term weights of an indexed text: ``(indices, values)``.

    Qdrant Edge's ``Bm25`` tokenizer (lower-case, English stopwords, Snowball stemming)
    hashes each term to an index and weights it by saturated term frequency; the IDF factor
    is applied by Qdrant at query time (``Modifier.IDF`` on the sparse vector). Deterministic
    across processes and machines. A text with no terms gives empty lists.
    """
    vec = _model().embed_document(text)
    return list(vec.indices), list(vec.values)


def bm25_query(text: str) -> tuple[list[int], list[float]]:
    """BM25 terms of a query: each distinct term with weight 1."""
    vec = _model().embed_query(text)
    return list(vec.indices), list(vec.values)


# --- shared helpers ----------------------------------------------------------------------


def iso(value: datetime) -> str:
    """A datetime as Qdrant stores it: ISO 8601 in UTC with an explicit offset."""
    if value.tzinfo is None:
        raise ValueError("datetimes stored in Qdrant must be timezone-aware")
    return value.astimezone(timezone.utc).isoformat()


def check_vector(vector: Sequence[float], dimension: int) -> list[float]:
    """``vector`` as a list of floats, or an error saying why Qdrant would refuse it."""
    out = vector if type(vector) is list else list(vector)
    if len(out) != dimension:
        raise EmbeddingMismatchError(
            f"got a {len(out)}-d vector for a {dimension}-d collection; the embeddings "
            "changed: run memory.reindex() to rebuild the vectors with the new model"
        )
    # NaN and ±inf survive a sum (as NaN or inf), and a sum is 20× cheaper than a scan.
    if not math.isfinite(sum(out)):
        raise VectorStoreError("a vector holds NaN or infinite values (or overflows)")
    return out


def reindex_backend(
    backend: VectorBackend,
    embed: Callable[[list[str]], list[list[float]]],
    text_of: Callable[[Mapping[str, Any]], str],
    *,
    progress: Callable[[int, int], None] | None = None,
    batch_size: int = 128,
) -> int:
    """Re-embed every point of ``backend`` whose vector is not from its current model.

    ``embed`` embeds a batch of texts with the current model; ``text_of`` gives a point's
    text from its payload (the same text is indexed for BM25). Points are stamped with
    the model as their new vectors are written, so an interrupted run that is started
    again skips the points it had done. ``progress(done, total)`` is called before the
    first batch and after each. Returns the number of points re-embedded by this call.
    """
    backend.begin_reindex()
    pending = Where(none_of={MODEL_FIELD: [backend.model_id]})
    total = backend.count()
    done = total - backend.count(pending)
    if progress is not None:
        progress(done, total)
    rebuilt = 0
    previous: set[str] = set()
    while True:
        records, _ = backend.scroll(pending, limit=batch_size)
        if not records:
            break
        ids = {r.id for r in records}
        if ids & previous:
            # A backend that does not stamp would loop here forever.
            raise VectorStoreError("reindex made no progress: re-embedded points are still pending")
        previous = ids
        texts = [text_of(r.payload) for r in records]
        vectors = embed(texts)
        if len(vectors) != len(records):
            raise VectorStoreError(
                f"the embeddings returned {len(vectors)} vectors for {len(records)} texts"
            )
        backend.update_vectors(
            [PointData(r.id, v, t) for r, v, t in zip(records, vectors, texts)]
        )
        rebuilt += len(records)
        done += len(records)
        if progress is not None:
            progress(min(done, total), total)
    backend.finish_reindex()
    return rebuilt
