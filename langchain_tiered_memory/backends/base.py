"""What every vector backend shares: the plain types it speaks, BM25, and the engine-free half
of a collection (its model record, reindexing, filters, the two retrieval legs).

A backend holds one collection of points: a dense vector (the caller's embedding), a BM25
sparse vector (computed here from the point's text with Qdrant Edge's own ``Bm25``
tokenizer, so both backends index text identically) and a small payload of fields to filter
on. **No text is stored**: the relational store owns every record, and a collection is an
index that can be rebuilt from it. Nothing here knows about memories; :mod:`..index` decides
what the points are.

Retrieval is two legs, each filtered by a :class:`Where` and each returning its own scores:
:meth:`BaseBackend.dense` (cosine similarity) and :meth:`BaseBackend.sparse` (BM25, the
inverse document frequency applied by Qdrant at query time). The caller fuses them
(``scoring.py``): the magnitudes, not only the ranks, say how well a point matches.

:class:`BaseBackend` implements everything above the engine: the model record
(``model_id``, ``dimension``, the live vector's name, an unfinished reindex's target), the
mismatch errors, the resumable reindex and the translation of a :class:`Where` into an
engine filter through a :class:`FilterBuilder`. The Edge and server subclasses provide the
engine calls.
"""

from __future__ import annotations

import abc
import math
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from ..errors import EmbeddingMismatchError, VectorStoreError

__all__ = [
    "DENSE_VECTOR",
    "MODEL_FIELD",
    "SPARSE_VECTOR",
    "BackendInfo",
    "BaseBackend",
    "CollectionSchema",
    "FilterBuilder",
    "PointData",
    "Range",
    "Record",
    "ScoredRecord",
    "Where",
    "bm25_document",
    "bm25_query",
    "check_vector",
    "iso",
    "mismatch_message",
    "reindex_backend",
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
    """The :class:`EmbeddingMismatchError` message for a collection, or None if usable."""
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


class FilterBuilder(abc.ABC):
    """The engine's filter constructors; :meth:`build` does the translation once for all."""

    @abc.abstractmethod
    def match(self, key: str, value: str | int | bool) -> Any:
        """``key`` equals ``value``."""

    @abc.abstractmethod
    def match_any(self, key: str, values: list[Any]) -> Any:
        """``key`` is one of ``values``."""

    @abc.abstractmethod
    def range(self, key: str, bounds: Range) -> Any:
        """``key`` within ``bounds`` (datetimes as ISO strings, or numbers)."""

    @abc.abstractmethod
    def has_id(self, ids: list[str]) -> Any:
        """The point is one of ``ids``."""

    @abc.abstractmethod
    def conjunction(self, must: list[Any], must_not: list[Any]) -> Any:
        """All of ``must`` and none of ``must_not``."""

    def build(self, where: Where | None) -> Any:
        """The engine filter of ``where`` (``None`` when it matches everything)."""
        if where is None or where.is_empty():
            return None
        must: list[Any] = [self.match(k, v) for k, v in where.equals.items()]
        must_not: list[Any] = []
        for key, values in where.any_of.items():
            if not values:
                raise VectorStoreError(f"Where.any_of[{key!r}] is empty: it would match nothing")
            must.append(self.match_any(key, list(values)))
        for key, values in where.none_of.items():
            if values:
                must_not.append(self.match_any(key, list(values)))
        for key, bounds in where.ranges.items():
            must.append(self.range(key, bounds))
        if where.ids is not None:
            must.append(self.has_id(list(where.ids)))
        if where.exclude_ids:
            must_not.append(self.has_id(list(where.exclude_ids)))
        return self.conjunction(must, must_not)


class BaseBackend(abc.ABC):
    """One collection in Qdrant: the engine-independent half (see the module docs).

    ``dimension`` and ``model_id`` are those of the embeddings the caller uses now; the
    collection remembers the ones it was built with (:meth:`info`). While they differ,
    every call that reads or writes dense vectors raises
    :class:`~langchain_tiered_memory.errors.EmbeddingMismatchError`; payload calls
    (retrieve, scroll, count, set_payload, delete) keep working, so records can still be
    forgotten. :func:`reindex_backend` rebuilds the vectors.
    """

    kind: str
    dimension: int
    model_id: str
    schema: CollectionSchema
    location: str
    filters: FilterBuilder
    #: Whether the open that made this backend created the collection (there was none).
    created: bool = False
    _meta: dict[str, Any]

    def _init_model(self, dimension: int, model_id: str, schema: CollectionSchema) -> None:
        if isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 1:
            raise VectorStoreError(f"dimension must be a positive int, got {dimension!r}")
        if not isinstance(model_id, str) or not model_id:
            raise VectorStoreError(f"model_id must be a non-empty str, got {model_id!r}")
        self.dimension = dimension
        self.model_id = model_id
        self.schema = schema
        self._meta_lock = threading.Lock()

    # --- the engine's half --------------------------------------------------------------

    @abc.abstractmethod
    def _save_meta(self, meta: dict[str, Any]) -> None:
        """Persist the model record."""

    @abc.abstractmethod
    def _add_vector(self, name: str, dimension: int) -> None:
        """Add a named dense vector (cosine) to the collection."""

    @abc.abstractmethod
    def _drop_vector(self, name: str) -> None:
        """Remove a named dense vector (no error if it is gone)."""

    @abc.abstractmethod
    def _write_points(self, points: Sequence[tuple[str, dict[str, Any], dict[str, Any]]]) -> None:
        """Upsert ``(id, vectors by name, payload)``; ``vectors`` hold engine objects."""

    @abc.abstractmethod
    def _write_vectors(self, points: Sequence[tuple[str, dict[str, Any]]]) -> None:
        """Replace the named vectors of existing points."""

    @abc.abstractmethod
    def _sparse_vector(self, indices: list[int], values: list[float]) -> Any:
        """The engine's sparse vector."""

    @abc.abstractmethod
    def _query(self, vector: Any, using: str, flt: Any, limit: int) -> list[ScoredRecord]:
        """Nearest points to ``vector`` (dense list or sparse object) by vector ``using``."""

    @abc.abstractmethod
    def set_payload(self, updates: Mapping[str, Mapping[str, Any]]) -> None:
        """Merge payload fields into several points."""

    @abc.abstractmethod
    def retrieve(self, ids: Sequence[str], *, with_vectors: bool = False) -> list[Record]:
        """The stored points among ``ids`` (missing ids are skipped), in no set order."""

    @abc.abstractmethod
    def delete(self, ids: Sequence[str]) -> None:
        """Delete points by id; unknown ids are ignored."""

    @abc.abstractmethod
    def delete_where(self, where: Where) -> int:
        """Delete every point matching ``where``; returns how many there were."""

    @abc.abstractmethod
    def scroll(
        self, where: Where, *, limit: int, offset: str | None = None
    ) -> tuple[list[Record], str | None]:
        """Up to ``limit`` points matching ``where`` (by id) and the id to continue from."""

    @abc.abstractmethod
    def count(self, where: Where | None = None) -> int:
        """Exact number of points matching ``where`` (all points for ``None``)."""

    @abc.abstractmethod
    def flush(self) -> None:
        """Make every write durable."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release the collection (idempotent)."""

    @abc.abstractmethod
    def _check_open(self) -> None:
        """Raise if closed."""

    # --- the model record ---------------------------------------------------------------

    @property
    def vector_name(self) -> str:
        """The live dense vector's name."""
        return str(self._meta["vector"])

    def _problem(self) -> str | None:
        target = self._meta.get("target")
        return mismatch_message(
            self.location,
            (str(self._meta["model_id"]), int(self._meta["dimension"])),
            (self.model_id, self.dimension),
            target["model_id"] if target else None,
        )

    def info(self) -> BackendInfo:
        """Stored and expected model and dimension, and the number of points."""
        self._check_open()
        target = self._meta.get("target")
        return BackendInfo(
            kind=self.kind,
            location=self.location,
            dimension=int(self._meta["dimension"]),
            model_id=str(self._meta["model_id"]),
            expected_dimension=self.dimension,
            expected_model_id=self.model_id,
            vector_name=self.vector_name,
            points=self.count(),
            reindex_target=target["model_id"] if target else None,
        )

    def _require_vectors(self) -> None:
        self._check_open()
        problem = self._problem()
        if problem is not None:
            raise EmbeddingMismatchError(problem)

    def _adopt_if_empty(self) -> None:
        # A collection with no points has no vectors to rebuild: switching models costs
        # nothing, so do it rather than demand a reindex of nothing.
        if self._problem() is not None and self.count() == 0:
            self.begin_reindex()
            self.finish_reindex()

    # --- writes and reads ---------------------------------------------------------------

    def _vectors(self, name: str, point: PointData) -> dict[str, Any]:
        indices, values = bm25_document(point.text)
        return {
            name: check_vector(point.vector, self.dimension),
            SPARSE_VECTOR: self._sparse_vector(indices, values),
        }

    def upsert(self, points: Sequence[PointData]) -> None:
        """Insert or replace points in one write; each is stamped with the model id."""
        if not points:
            return
        self._require_vectors()
        self._write_points(
            [(p.id, self._vectors(self.vector_name, p), {**p.payload, MODEL_FIELD: self.model_id})
             for p in points]
        )

    def dense(self, vector: Sequence[float], where: Where, limit: int) -> list[ScoredRecord]:
        """Dense nearest neighbours; the score is the cosine similarity."""
        self._require_vectors()
        return self._query(check_vector(vector, self.dimension), self.vector_name, self.filters.build(where), limit)

    def sparse(self, text: str, where: Where, limit: int) -> list[ScoredRecord]:
        """BM25 best matches of ``text``; the score is BM25 (term weights × IDF)."""
        self._check_open()
        indices, values = bm25_query(text)
        if not indices:
            return []
        return self._query(self._sparse_vector(indices, values), SPARSE_VECTOR, self.filters.build(where), limit)

    # --- reindex ------------------------------------------------------------------------

    def begin_reindex(self) -> None:
        """Record the embeddings in use as the target; add a vector if the width changes."""
        self._check_open()
        with self._meta_lock:
            meta = dict(self._meta)
            target = meta.get("target")
            want = (self.model_id, self.dimension)
            if target and (target["model_id"], target["dimension"]) == want:
                return
            if not target and (meta["model_id"], meta["dimension"]) == want:
                return
            vectors = dict(meta["vectors"])
            if self.dimension == meta["dimension"]:
                name = meta["vector"]
            else:
                name = f"{DENSE_VECTOR}_{self.dimension}"
                if vectors.get(name) != self.dimension:
                    self._add_vector(name, self.dimension)
                    vectors[name] = self.dimension
            meta["vectors"] = vectors
            meta["target"] = {"model_id": self.model_id, "dimension": self.dimension, "vector": name}
            self._save_meta(meta)
            self._meta = meta

    def update_vectors(self, points: Sequence[PointData]) -> None:
        """Write the target model's vectors of existing points and stamp them."""
        self._check_open()
        target = self._meta.get("target")
        if not target or target["model_id"] != self.model_id:
            raise VectorStoreError("update_vectors() is for a reindex: call begin_reindex() first")
        if not points:
            return
        self._write_vectors([(p.id, self._vectors(target["vector"], p)) for p in points])
        # Stamped after the vectors: a crash in between redoes these points, never skips them.
        self.set_payload({p.id: {MODEL_FIELD: self.model_id} for p in points})

    def finish_reindex(self) -> None:
        """Switch the collection to the target model once no point lacks its vectors."""
        self._check_open()
        with self._meta_lock:
            meta = dict(self._meta)
            target = meta.get("target")
            if not target:
                return
            left = self.count(Where(none_of={MODEL_FIELD: [target["model_id"]]}))
            if left:
                raise VectorStoreError(
                    f"{left} points of {self.location} still lack vectors of {target['model_id']!r}; "
                    "run the reindex again"
                )
            for name in meta["vectors"]:
                if name != target["vector"]:
                    self._drop_vector(name)
            meta.update(
                model_id=target["model_id"],
                dimension=target["dimension"],
                vector=target["vector"],
                vectors={target["vector"]: target["dimension"]},
                target=None,
            )
            self._save_meta(meta)
            self._meta = meta

    def __enter__(self) -> BaseBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


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
    backend: BaseBackend,
    embed: Callable[[list[str]], list[list[float]]],
    texts: Callable[[list[str]], dict[str, str]],
    *,
    progress: Callable[[int, int], None] | None = None,
    batch_size: int = 128,
) -> int:
    """Re-embed every point of ``backend`` whose vector is not from its current model.

    ``embed`` embeds a batch of texts with the current model; ``texts`` gives the points'
    texts by id, from their owner (a point whose record is gone is deleted). Points are
    stamped with the model as their new vectors are written, so an interrupted run that is
    started again skips the points it had done. ``progress(done, total)`` is called before
    the first batch and after each. Returns the number of points re-embedded by this call.
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
        found = texts([r.id for r in records])
        orphans = [r.id for r in records if r.id not in found]
        if orphans:
            backend.delete(orphans)
        live = [r for r in records if r.id in found]
        vectors = embed([found[r.id] for r in live]) if live else []
        if len(vectors) != len(live):
            raise VectorStoreError(f"the embeddings returned {len(vectors)} vectors for {len(live)} texts")
        backend.update_vectors([PointData(r.id, v, found[r.id]) for r, v in zip(live, vectors)])
        rebuilt += len(live)
        done += len(records)
        if progress is not None:
            progress(min(done, total), total)
    backend.finish_reindex()
    return rebuilt
