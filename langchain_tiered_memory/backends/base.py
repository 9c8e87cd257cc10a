"""The engine-independent half of a vector backend: :class:`BaseBackend`.

A backend holds one collection of points: a dense vector (the caller's embedding), a BM25
sparse vector (computed from the point's text by :mod:`.bm25`, so both backends index text
identically) and a small payload of fields to filter on (the types are in :mod:`.records`).
**No text is stored**: the relational store owns every record, and a collection is an
index that can be rebuilt from it. Nothing here knows about memories; :mod:`..index` decides
what the points are.

Retrieval is two legs, each filtered by a :class:`Where` and each returning its own scores:
:meth:`BaseBackend.dense` (cosine similarity) and :meth:`BaseBackend.sparse` (BM25, the
inverse document frequency applied by Qdrant at query time). The caller fuses them
(``scoring.py``): the magnitudes, not only the ranks, say how well a point matches.

:class:`BaseBackend` implements everything above the engine: the model record
(``model_id``, ``dimension``, the live vector's name, an unfinished reindex's target), the
mismatch errors, the resumable reindex and the translation of a :class:`Where` into an
engine filter through a :class:`FilterBuilder` (:mod:`.filters`). The Edge and server
subclasses provide the engine calls.

The point and filter types are :mod:`.records`', the BM25 encoding :mod:`.bm25`'s, and the
resumable model change that drives a backend :mod:`.reindex`'s.
"""

from __future__ import annotations

import abc
import math
import threading
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from ..errors import EmbeddingMismatchError, VectorStoreError
from .bm25 import bm25_document, bm25_query
from .filters import FilterBuilder
from .records import (
    DENSE_VECTOR,
    MODEL_FIELD,
    SPARSE_VECTOR,
    BackendInfo,
    CollectionSchema,
    PointData,
    Record,
    ScoredRecord,
    Where,
    mismatch_message,
)

__all__ = ["BaseBackend", "check_vector"]


class Search(NamedTuple):
    """One search as :meth:`BaseBackend._query` takes it: the points nearest ``vector`` (a
    dense list or the engine's sparse vector) by the vector ``using``, under the engine
    filter ``flt``, at most ``limit``, with the payload ``fields`` (``None``: all of it).
    """

    vector: Any
    using: str
    flt: Any
    limit: int
    fields: Sequence[str] | None = None


class HybridHits(NamedTuple):
    """Both legs of one search: the dense hits, the sparse (BM25) hits, and the cosine to
    the query vector of each sparse hit, by id (so every hit has a dense score to fuse)."""

    dense: list[ScoredRecord]
    sparse: list[ScoredRecord]
    cosines: dict[str, float]


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
    def _query(self, search: Search) -> list[ScoredRecord]:
        """The points ``search`` finds, best first."""

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

    def space_fingerprint(self) -> list[list[float]] | None:
        """The reference vectors recorded for the embeddings in use (``model_id``), if any
        (:mod:`..index.space`)."""
        found = (self._meta.get("fingerprints") or {}).get(self.model_id)
        return None if found is None else [list(map(float, v)) for v in found]

    def record_fingerprint(self, vectors: Sequence[Sequence[float]]) -> None:
        """Record the reference vectors of the embeddings in use, with the model record."""
        self._check_open()
        with self._meta_lock:
            meta = dict(self._meta)
            prints = dict(meta.get("fingerprints") or {})
            prints[self.model_id] = [[round(float(x), 6) for x in v] for v in vectors]
            meta["fingerprints"] = prints
            self._save_meta(meta)
            self._meta = meta

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

    def dense(
        self, vector: Sequence[float], where: Where, limit: int, fields: Sequence[str] | None = None
    ) -> list[ScoredRecord]:
        """Dense nearest neighbours; the score is the cosine similarity. Each carries the
        payload ``fields`` (all of them by default: naming the few a caller reads makes a
        query cheaper)."""
        return self.dense_many([(vector, where, limit)], fields)[0]

    def dense_many(
        self, searches: Sequence[tuple[Sequence[float], Where, int]], fields: Sequence[str] | None = ()
    ) -> list[list[ScoredRecord]]:
        """:meth:`dense` of each ``(vector, where, limit)``, in one batch (by default
        without payload: the ids and cosines are what such a batch is for)."""
        self._require_vectors()
        return self._query_many(
            [Search(check_vector(v, self.dimension), self.vector_name, self.filters.build(w), n, fields)
             for v, w, n in searches]
        )

    def cosines(self, ids: Sequence[str], vector: Sequence[float], fields: Sequence[str]) -> list[ScoredRecord]:
        """The cosine to ``vector`` of each stored point among ``ids`` that has this model's
        vector, with the payload ``fields``: read by id, not searched (an engine that can
        score a set of ids itself overrides this, sparing the vectors' trip)."""
        self._require_vectors()
        if not ids:
            return []
        import numpy as np  # here, not at module level: importing the package loads no numpy

        records = [r for r in self.retrieve(list(ids), with_vectors=True) if r.vector]
        if not records:
            return []
        query = np.asarray(check_vector(vector, self.dimension), dtype=np.float32)
        found = np.asarray([r.vector for r in records], dtype=np.float32) @ query
        return [
            ScoredRecord(r.id, float(v), {f: r.payload[f] for f in fields if f in r.payload})
            for r, v in zip(records, found)
        ]

    def hybrid(
        self, vector: Sequence[float], text: str, where: Where, limit: int, fields: Sequence[str] | None = None
    ) -> HybridHits:
        """Both legs of one search under one filter: :meth:`dense` of ``vector`` and
        :meth:`sparse` of ``text``, as the engine runs them best together, with the cosine
        of each sparse hit."""
        return self.hybrid_many([(vector, text, where, limit)], fields)[0]

    def hybrid_many(
        self, searches: Sequence[tuple[Sequence[float], str, Where, int]], fields: Sequence[str] | None = None
    ) -> list[HybridHits]:
        """:meth:`hybrid` of each ``(vector, text, where, limit)``, all in one batch (one pass
        of the engine, one round trip to a server)."""
        self._require_vectors()
        batch: list[Search] = []
        legs: list[tuple[list[float], int, int | None]] = []
        for vector, text, where, limit in searches:
            flt = self.filters.build(where)
            dense = check_vector(vector, self.dimension)
            batch.append(Search(dense, self.vector_name, flt, limit, fields))
            dense_at, sparse_at = len(batch) - 1, None
            indices, values = bm25_query(text)
            if indices:
                batch.append(Search(self._sparse_vector(indices, values), SPARSE_VECTOR, flt, limit, fields))
                sparse_at = len(batch) - 1
            legs.append((dense, dense_at, sparse_at))
        found = self._query_many(batch)
        # The cosine of each sparse hit: the dense leg's score where it found it too, else
        # a search among the few it did not, scored as the dense leg scores (one small batch
        # for every leg). Searching the sparse leg again as a prefetch to score its hits cost
        # as much as the leg itself.
        out: list[HybridHits] = []
        rescore: list[tuple[HybridHits, Search]] = []
        for dense, dense_at, sparse_at in legs:
            dense_hits = found[dense_at]
            sparse_hits = found[sparse_at] if sparse_at is not None else []
            known = {h.id: h.score for h in dense_hits}
            hits = HybridHits(dense_hits, sparse_hits, {h.id: known[h.id] for h in sparse_hits if h.id in known})
            out.append(hits)
            rest = [h.id for h in sparse_hits if h.id not in known]
            if rest:
                rescore.append((hits, Search(dense, self.vector_name, self.filters.build(Where(ids=rest)), len(rest), ())))
        if rescore:
            for (hits, _), scored in zip(rescore, self._query_many([search for _, search in rescore])):
                hits.cosines.update({h.id: h.score for h in scored})
        return out

    def _query_many(self, searches: Sequence[Search]) -> list[list[ScoredRecord]]:
        """Several :meth:`_query` calls (an engine that batches them overrides this)."""
        return [self._query(search) for search in searches]

    def sparse(
        self, text: str, where: Where, limit: int, fields: Sequence[str] | None = None
    ) -> list[ScoredRecord]:
        """BM25 best matches of ``text``; the score is BM25 (term weights × IDF)."""
        self._check_open()
        indices, values = bm25_query(text)
        if not indices:
            return []
        return self._query(Search(self._sparse_vector(indices, values), SPARSE_VECTOR, self.filters.build(where), limit, fields))

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
            # Always a vector of its own, never the live one rewritten in place: until the
            # switch, whoever still embeds with the old model searches the old vectors whole
            # rather than a mix of two spaces that compare as noise.
            name = f"{DENSE_VECTOR}_{self.dimension}"
            if name == meta["vector"]:  # the live one is already named so (an earlier change)
                name += "_b"
            if vectors.get(name) != self.dimension:
                if name in vectors:  # a left-over of another width under this name
                    self._drop_vector(name)
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
