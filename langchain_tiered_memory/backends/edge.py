"""The embedded default: a Qdrant Edge shard in a directory, no server, no key.

Layout of ``path`` (the manager passes ``data_dir / "qdrant" / <collection>``)::

    path/collection.json   the embedding model and dimension the vectors were built with
    path/LOCK              held (flock) by the one process that has the shard open
    path/shard/            the Qdrant Edge shard (segments, WAL)

Only one process may open a shard: a second one gets :class:`ShardLockedError` before it
touches a file, instead of the shard's own opaque WAL error (or worse, two writers).

Tuning, measured on 2 cores with 384-d vectors (``benchmarks/bench_recall.py`` has the
end-to-end figures). Every query of the package filters on the tenant, and a tenant holds
at most ``max_memories_per_user`` points (10,000 by default), so the plan that matters is
the tenant's payload index followed by an exact scan of its points:

* 100 tenants × 1,000 points: hybrid top-5 ~0.36 ms once segments are optimised (~0.55 ms
  in the unoptimised appendable segment). Optimising without graphs took 2.5 s.
* A global HNSW graph (``m=16``) took 57 s to build per 100k points and is never used by a
  tenant-filtered query; per-tenant graphs (``payload_m=16``) took 140-200 s per 100k and
  made tenants of 1,000 no faster (0.36 ms either way).
* 10 tenants × 10,000 points: 1.8 ms by exact scan, 1.4 ms with per-tenant graphs, which
  took 120 s to build.

So the shard builds no global graph (``m=0``), scans tenants smaller than
:data:`FULL_SCAN_KB` of vectors exactly (Qdrant's ``full_scan_threshold``), and builds
per-tenant HNSW graphs only when a tenant can outgrow that threshold (``max_tenant_points``
× dimension × 4 bytes; with the default cap and 384-d that is never). The optimizer
(segment merge and vacuum, plus the per-tenant graphs when enabled) runs in a background
thread once ``optimize_after`` points were written since its last run, and at open when
the shard is that large; Edge releases the GIL meanwhile and keeps serving queries.
"""

from __future__ import annotations

import atexit
import errno
import json
import logging
import os
import threading
import uuid
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import EmbeddingMismatchError, ShardLockedError, VectorStoreError
from .base import (
    DENSE_VECTOR,
    MEMORY_SCHEMA,
    MODEL_FIELD,
    RRF_K,
    SECONDS_PER_DAY,
    SPARSE_VECTOR,
    BackendInfo,
    CollectionSchema,
    Decay,
    HybridQuery,
    OrderBy,
    PointData,
    Range,
    Record,
    ScoredRecord,
    Where,
    bm25_document,
    bm25_query,
    check_vector,
    iso,
    mismatch_message,
    rrf_max,
)

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

logger = logging.getLogger("langchain_tiered_memory")

__all__ = ["EdgeBackend", "FULL_SCAN_KB", "OPTIMIZE_AFTER"]

META_FILE = "collection.json"
LOCK_FILE = "LOCK"
SHARD_DIR = "shard"
META_FORMAT = 1
#: Tenants with fewer vector kilobytes than this are searched by exact scan over their
#: payload index, never by graph (Qdrant's ``full_scan_threshold``): 16 MB, a tenant of
#: ~10,400 384-d vectors, just above the default per-user cap.
FULL_SCAN_KB = 16_000
#: Points written since the last optimizer run that trigger a background run.
OPTIMIZE_AFTER = 10_000
# Per-tenant graph degree (Qdrant's default m), when tenant graphs are on.
_PAYLOAD_M = 16
_EF_CONSTRUCT = 100

_open_backends: weakref.WeakSet[EdgeBackend] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    # An optimizer thread is a daemon; let it finish its segment swap before exit.
    for backend in list(_open_backends):
        backend._join_optimizer()


def _edge() -> Any:
    try:
        import qdrant_edge
    except ImportError as exc:  # pragma: no cover - a dependency
        raise VectorStoreError(
            f"qdrant-edge-py is not installed ({exc}): pip install qdrant-edge-py"
        ) from exc
    return qdrant_edge


class EdgeBackend:
    """A collection in an embedded Qdrant Edge shard under ``path``.

    Args:
        path: the collection's directory (created if missing).
        dimension: dimension of the embeddings in use.
        model_id: name of the embedding model in use (``embedding_model_id(emb)``).
        schema: payload fields to index; the memory schema by default.
        optimize_after: points written before a background optimizer run; 0 never runs it
            (call :meth:`optimize`).
        max_tenant_points: the most points one tenant can hold (the manager passes
            ``max_memories_per_user``); decides whether per-tenant graphs can pay off.
        tenant_graphs: force per-tenant HNSW graphs on or off; ``None`` decides from
            ``max_tenant_points`` and ``dimension``.
        search_threads: threads of the shard's search pool. 1 is fastest for the small
            per-tenant queries the package makes; more helps only huge unfiltered scans.

    Raises:
        ShardLockedError: another process (or another backend in this one) has it open.
        VectorStoreError: the directory is unusable or holds something else.
    """

    kind = "edge"

    def __init__(
        self,
        path: str | os.PathLike[str],
        dimension: int,
        model_id: str,
        *,
        schema: CollectionSchema = MEMORY_SCHEMA,
        optimize_after: int = OPTIMIZE_AFTER,
        max_tenant_points: int = 10_000,
        tenant_graphs: bool | None = None,
        search_threads: int = 1,
    ) -> None:
        if isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 1:
            raise VectorStoreError(f"dimension must be a positive int, got {dimension!r}")
        if not isinstance(model_id, str) or not model_id:
            raise VectorStoreError(f"model_id must be a non-empty str, got {model_id!r}")
        self.path = Path(path)
        self.dimension = dimension
        self.model_id = model_id
        self.schema = schema
        self._optimize_after = max(0, int(optimize_after))
        self._search_threads = search_threads
        if tenant_graphs is None:
            tenant_graphs = max_tenant_points * dimension * 4 / 1024 > FULL_SCAN_KB
        #: Whether the optimizer builds a graph per tenant (see the module docstring).
        self.tenant_graphs = bool(tenant_graphs)
        self._meta_lock = threading.Lock()
        self._optimizer: threading.Thread | None = None
        self._optimizer_lock = threading.Lock()
        self._written = 0
        self._closed = False
        self._shard: Any = None
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise VectorStoreError(f"cannot create the vector directory {self.path}: {exc}") from exc
        if not self.path.is_dir():
            raise VectorStoreError(f"{self.path} exists and is not a directory")
        self._lock_fd = _lock(self.path)
        try:
            self._meta = self._load_meta()
            self._shard = self._open_shard()
            self._ensure_indexes()
            self._adopt_if_empty()
        except BaseException:
            self._release()
            raise
        _open_backends.add(self)
        if self._optimize_after and self._shard.info().points_count >= self._optimize_after:
            self._start_optimizer()

    # --- lifecycle ----------------------------------------------------------------------

    def __repr__(self) -> str:
        return f"EdgeBackend({str(self.path)!r}, dimension={self.dimension}, model_id={self.model_id!r})"

    def _load_meta(self) -> dict[str, Any]:
        meta_path = self.path / META_FILE
        shard_path = self.path / SHARD_DIR
        if not meta_path.exists():
            if shard_path.exists() and any(shard_path.iterdir()):
                raise VectorStoreError(
                    f"{shard_path} holds a Qdrant Edge shard but {meta_path} is missing, so "
                    "the embedding model of its vectors is unknown; restore the file, or move "
                    "the directory away to start an empty collection"
                )
            meta = {
                "format": META_FORMAT,
                "created_by": "langchain-tiered-memory",
                "model_id": self.model_id,
                "dimension": self.dimension,
                "vector": DENSE_VECTOR,
                "vectors": {DENSE_VECTOR: self.dimension},
                "target": None,
            }
            # Written before the shard exists: a crash in between leaves a recoverable state.
            self._write_meta(meta)
            return meta
        try:
            meta = json.loads(meta_path.read_text("utf-8"))
            if not isinstance(meta, dict) or meta.get("format") != META_FORMAT:
                raise ValueError(f"unknown format {meta.get('format') if isinstance(meta, dict) else meta!r}")
            for key in ("model_id", "dimension", "vector", "vectors"):
                if key not in meta:
                    raise ValueError(f"no {key!r}")
        except (OSError, ValueError) as exc:
            raise VectorStoreError(
                f"{meta_path} is unreadable ({exc}); it records which embedding model built "
                "the shard beside it: restore it, or move the directory away to start over"
            ) from exc
        return meta

    def _write_meta(self, meta: dict[str, Any]) -> None:
        tmp = self.path / f".{META_FILE}.{os.getpid()}.tmp"
        try:
            tmp.write_text(json.dumps(meta, indent=2, sort_keys=True), "utf-8")
            with open(tmp, "rb") as fh:
                os.fsync(fh.fileno())
            os.replace(tmp, self.path / META_FILE)
        except OSError as exc:
            raise VectorStoreError(f"cannot write {self.path / META_FILE}: {exc}") from exc

    def _config(self, *, new: bool) -> Any:
        qe = _edge()
        kwargs: dict[str, Any] = dict(
            hnsw_config=qe.HnswIndexConfig(
                m=0,
                ef_construct=_EF_CONSTRUCT,
                full_scan_threshold=FULL_SCAN_KB,
                payload_m=_PAYLOAD_M if self.tenant_graphs else 0,
            ),
            max_search_threads=self._search_threads,
            # The fused candidates' importance and timestamps are read from the payload by
            # the scoring formula: cold (on-disk) payload made a top-5 ~60% slower.
            payload_memory=qe.Memory.Cached,
        )
        if new:
            kwargs["vectors"] = {
                self._meta["vector"]: qe.EdgeVectorParams(size=self._meta["dimension"], distance=qe.Distance.Cosine)
            }
            kwargs["sparse_vectors"] = {SPARSE_VECTOR: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)}
        return qe.EdgeConfig(**kwargs)

    def _open_shard(self) -> Any:
        qe = _edge()
        shard_path = self.path / SHARD_DIR
        try:
            if shard_path.exists() and any(shard_path.iterdir()):
                return qe.EdgeShard.load(str(shard_path), self._config(new=True))
            return qe.EdgeShard.create(str(shard_path), self._config(new=True))
        except Exception as exc:
            raise VectorStoreError(f"cannot open the Qdrant Edge shard {shard_path}: {exc}") from exc

    def _ensure_indexes(self) -> None:
        qe = _edge()
        existing = set(self._shard.info().payload_schema)
        kinds = {
            "keyword": qe.PayloadSchemaType.Keyword,
            "float": qe.PayloadSchemaType.Float,
            "integer": qe.PayloadSchemaType.Integer,
            "datetime": qe.PayloadSchemaType.Datetime,
        }
        for name, kind in self.schema.indexes():
            if name in existing:
                continue
            schema = qe.KeywordIndexParams(is_tenant=True) if kind == "tenant" else kinds[kind]
            self._update(qe.UpdateOperation.create_field_index(name, schema))

    def _adopt_if_empty(self) -> None:
        # A collection with no points has no vectors to rebuild: switching models costs
        # nothing, so do it rather than demand a reindex of nothing.
        if self.info().mismatch is not None and self.info().points == 0:
            self.begin_reindex()
            self.finish_reindex()

    def _join_optimizer(self) -> None:
        thread = self._optimizer
        if thread is not None and thread.is_alive():
            thread.join()

    def _release(self) -> None:
        if self._lock_fd is not None:
            try:
                os.close(self._lock_fd)  # closing the descriptor drops the flock
            finally:
                self._lock_fd = None

    def flush(self) -> None:
        """Make every write durable (the WAL already is; this persists segments too)."""
        self._check_open()
        try:
            self._shard.flush()
        except Exception as exc:
            raise VectorStoreError(f"cannot flush the shard {self.path}: {exc}") from exc

    def close(self) -> None:
        """Wait for a running optimizer, flush and close the shard, release the lock."""
        if self._closed:
            return
        self._closed = True
        try:
            self._join_optimizer()
            if self._shard is not None:
                try:
                    self._shard.flush()
                finally:
                    self._shard.close()
                    self._shard = None
        finally:
            _open_backends.discard(self)
            self._release()

    def __enter__(self) -> EdgeBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise VectorStoreError(f"the Qdrant Edge shard {self.path} is closed")

    # --- optimizer ----------------------------------------------------------------------

    def optimize(self) -> bool:
        """Run the optimizer now, blocking; True if it changed any segment."""
        self._check_open()
        self._join_optimizer()
        try:
            return bool(self._shard.optimize())
        except Exception as exc:
            raise VectorStoreError(f"optimizing {self.path} failed: {exc}") from exc

    def _wrote(self, n: int) -> None:
        if not self._optimize_after:
            return
        self._written += n
        if self._written >= self._optimize_after:
            self._start_optimizer()

    def _start_optimizer(self) -> None:
        with self._optimizer_lock:
            if self._closed or (self._optimizer is not None and self._optimizer.is_alive()):
                return
            self._written = 0
            # Edge releases the GIL while optimizing; queries and writes go on meanwhile.
            self._optimizer = threading.Thread(
                target=self._run_optimizer, name=f"qdrant-edge-optimize:{self.path.name}", daemon=True
            )
            self._optimizer.start()

    def _run_optimizer(self) -> None:
        try:
            self._shard.optimize()
        except Exception as exc:  # the shard stays usable; the next trigger retries
            logger.warning("background optimization of %s failed: %s", self.path, exc)

    # --- metadata -----------------------------------------------------------------------

    @property
    def vector_name(self) -> str:
        """The live dense vector's name."""
        return str(self._meta["vector"])

    def info(self) -> BackendInfo:
        """Stored and expected model and dimension, and the number of points."""
        self._check_open()
        target = self._meta.get("target")
        return BackendInfo(
            kind=self.kind,
            location=str(self.path),
            dimension=int(self._meta["dimension"]),
            model_id=str(self._meta["model_id"]),
            expected_dimension=self.dimension,
            expected_model_id=self.model_id,
            vector_name=self.vector_name,
            points=int(self._shard.info().points_count),
            reindex_target=target["model_id"] if target else None,
        )

    def _require_vectors(self) -> None:
        self._check_open()
        meta = self._meta
        target = meta.get("target")
        problem = mismatch_message(
            str(self.path),
            (str(meta["model_id"]), int(meta["dimension"])),
            (self.model_id, self.dimension),
            target["model_id"] if target else None,
        )
        if problem is not None:
            raise EmbeddingMismatchError(problem)

    # --- writes -------------------------------------------------------------------------

    def _update(self, op: Any) -> None:
        try:
            self._shard.update(op)
        except Exception as exc:
            raise VectorStoreError(f"writing to the shard {self.path} failed: {exc}") from exc

    def _vectors(self, name: str, point: PointData) -> dict[str, Any]:
        qe = _edge()
        indices, values = bm25_document(point.text)
        return {
            name: check_vector(point.vector, self.dimension),
            SPARSE_VECTOR: qe.SparseVector(indices, values),
        }

    def upsert(self, points: Sequence[PointData]) -> None:
        """Insert or replace points in one write; each is stamped with the model id."""
        if not points:
            return
        self._require_vectors()
        qe = _edge()
        batch = []
        for p in points:
            payload = dict(p.payload)
            payload[MODEL_FIELD] = self.model_id
            batch.append(qe.Point(_point_id(p.id), self._vectors(self.vector_name, p), payload))
        self._update(qe.UpdateOperation.upsert_points(batch))
        self._wrote(len(batch))

    def set_payload(self, updates: Mapping[str, Mapping[str, Any]]) -> None:
        """Merge fields into several points' payloads; one call, one shard operation per
        distinct payload (Edge sets one payload on a list of ids, ~5 µs an operation)."""
        if not updates:
            return
        self._check_open()
        qe = _edge()
        groups: dict[str, tuple[dict[str, Any], list[str]]] = {}
        for point_id, payload in updates.items():
            if MODEL_FIELD in payload:
                raise VectorStoreError(f"{MODEL_FIELD} is managed by the backend")
            key = json.dumps(payload, sort_keys=True, default=str)
            groups.setdefault(key, (dict(payload), []))[1].append(_point_id(point_id))
        for payload, ids in groups.values():
            self._update(qe.UpdateOperation.set_payload(ids, payload))

    def delete(self, ids: Sequence[str]) -> None:
        """Delete points by id."""
        if not ids:
            return
        self._check_open()
        self._update(_edge().UpdateOperation.delete_points([_point_id(i) for i in ids]))
        self._wrote(len(ids))

    def delete_where(self, where: Where) -> int:
        """Delete every point matching ``where``; returns how many matched."""
        self._check_open()
        n = self.count(where)
        if n:
            flt = _filter(where)
            if flt is None:
                raise VectorStoreError("refusing to delete every point: pass a non-empty Where")
            self._update(_edge().UpdateOperation.delete_points_by_filter(flt))
            self._wrote(n)
        return n

    # --- reads --------------------------------------------------------------------------

    def retrieve(self, ids: Sequence[str], *, with_vectors: bool = False) -> list[Record]:
        """Stored points among ``ids``."""
        self._check_open()
        if not ids:
            return []
        try:
            records = self._shard.retrieve(
                [_point_id(i) for i in ids], True, [self.vector_name] if with_vectors else False
            )
        except Exception as exc:
            raise VectorStoreError(f"reading from the shard {self.path} failed: {exc}") from exc
        return [self._record(r, with_vectors) for r in records]

    def _record(self, r: Any, with_vectors: bool = False) -> Record:
        vector = None
        if with_vectors and r.vector:
            vector = list(r.vector.get(self.vector_name) or []) or None
        return Record(str(r.id), dict(r.payload or {}), vector)

    def scroll(
        self,
        where: Where,
        *,
        limit: int,
        offset: str | None = None,
        order_by: OrderBy | None = None,
    ) -> tuple[list[Record], str | None]:
        """Points matching ``where``, by id or sorted by ``order_by``."""
        self._check_open()
        qe = _edge()
        order = None
        if order_by is not None:
            direction = qe.Direction.Desc if order_by.descending else qe.Direction.Asc
            order = qe.OrderBy(order_by.field, direction=direction)
        request = qe.ScrollRequest(
            offset=_point_id(offset) if offset is not None else None,
            limit=limit,
            filter=_filter(where),
            with_payload=True,
            with_vector=False,
            order_by=order,
        )
        try:
            records, next_offset = self._shard.scroll(request)
        except Exception as exc:
            raise VectorStoreError(f"reading from the shard {self.path} failed: {exc}") from exc
        return [self._record(r) for r in records], (str(next_offset) if next_offset is not None else None)

    def count(self, where: Where | None = None) -> int:
        """Exact number of points matching ``where``."""
        self._check_open()
        qe = _edge()
        flt = _filter(where) if where is not None else None
        try:
            return int(self._shard.count(qe.CountRequest(exact=True, filter=flt)))
        except Exception as exc:
            raise VectorStoreError(f"reading from the shard {self.path} failed: {exc}") from exc

    def _query(self, request: Any) -> list[ScoredRecord]:
        try:
            points = self._shard.query(request)
        except Exception as exc:
            raise VectorStoreError(f"querying the shard {self.path} failed: {exc}") from exc
        return [ScoredRecord(str(p.id), float(p.score), dict(p.payload or {})) for p in points]

    def nearest(self, vector: Sequence[float], where: Where, limit: int) -> list[ScoredRecord]:
        """Dense nearest neighbours by cosine."""
        self._require_vectors()
        qe = _edge()
        request = qe.QueryRequest(
            limit=limit,
            query=qe.Query.Nearest(check_vector(vector, self.dimension), using=self.vector_name),
            filter=_filter(where),
            with_payload=True,
        )
        return self._query(request)

    def hybrid(self, query: HybridQuery) -> list[ScoredRecord]:
        """Dense + BM25 candidates, fused by RRF and scored in the shard (see ``base``)."""
        self._require_vectors()
        qe = _edge()
        flt = _filter(query.where)
        indices, values = bm25_query(query.text)
        legs = [
            qe.Prefetch(
                limit=query.candidates,
                query=qe.Query.Nearest(check_vector(query.vector, self.dimension), using=self.vector_name),
                filter=flt,
            ),
            # Kept when the text has no terms (it then finds nothing), so that the fused
            # score keeps one scale: relevance 1.0 is always "first in both lists".
            qe.Prefetch(
                limit=query.candidates,
                query=qe.Query.Nearest(qe.SparseVector(indices, values), using=SPARSE_VECTOR),
                filter=flt,
            ),
        ]
        threshold = query.relevance_threshold()
        rrf = qe.Fusion.Rrf(k=RRF_K)
        if query.decay is None:
            request = qe.QueryRequest(
                limit=query.limit, prefetches=legs, query=rrf, filter=flt,
                score_threshold=threshold, with_payload=True,
            )
            scale = 1.0 / rrf_max()
            return [ScoredRecord(h.id, h.score * scale, h.payload) for h in self._query(request)]
        fused = qe.Prefetch(
            limit=query.candidates, prefetches=legs, query=rrf, filter=flt, score_threshold=threshold
        )
        request = qe.QueryRequest(
            limit=query.limit,
            prefetches=[fused],
            query=_edge_formula(query.decay, query.decay_weight),
            filter=flt,
            with_payload=True,
        )
        return self._query(request)

    def weakest(self, where: Where, decay: Decay, limit: int) -> list[ScoredRecord]:
        """The points of lowest ``importance × rate^days``, computed in the shard."""
        self._check_open()
        qe = _edge()
        n = self.count(where)
        if n == 0 or limit < 1:
            return []
        flt = _filter(where)
        # A formula needs candidates: all the matching points, in any order.
        every = qe.Prefetch(limit=n, query=qe.OrderBy(decay.time_field), filter=flt)
        formula = qe.Formula(
            qe.Expression.Neg(_edge_effective(decay)), defaults=_formula_defaults(decay)
        )
        request = qe.QueryRequest(limit=limit, prefetches=[every], query=formula, filter=flt, with_payload=True)
        return [ScoredRecord(h.id, -h.score, h.payload) for h in self._query(request)]

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
                    qe = _edge()
                    self._update(qe.UpdateOperation.create_dense_vector(name, self.dimension, qe.Distance.Cosine))
                    vectors[name] = self.dimension
            meta["vectors"] = vectors
            meta["target"] = {"model_id": self.model_id, "dimension": self.dimension, "vector": name}
            self._write_meta(meta)
            self._meta = meta

    def update_vectors(self, points: Sequence[PointData]) -> None:
        """Write the target model's vectors of existing points and stamp them."""
        self._check_open()
        target = self._meta.get("target")
        if not target or target["model_id"] != self.model_id:
            raise VectorStoreError("update_vectors() is for a reindex: call begin_reindex() first")
        if not points:
            return
        qe = _edge()
        ids = [_point_id(p.id) for p in points]
        self._update(
            qe.UpdateOperation.update_vectors(
                [qe.PointVectors(pid, self._vectors(target["vector"], p)) for pid, p in zip(ids, points)]
            )
        )
        # Stamped after the vectors: a crash in between redoes these points, never skips them.
        self._update(qe.UpdateOperation.set_payload(ids, {MODEL_FIELD: self.model_id}))
        self._wrote(len(ids))

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
                    f"{left} points of {self.path} still lack vectors of {target['model_id']!r}; "
                    "run the reindex again"
                )
            qe = _edge()
            for name in meta["vectors"]:
                if name != target["vector"]:
                    try:
                        self._shard.update(qe.UpdateOperation.delete_vector_name(name))
                    except Exception as exc:  # already gone after a crash here: fine
                        logger.debug("deleting vector %s of %s: %s", name, self.path, exc)
            meta.update(
                model_id=target["model_id"],
                dimension=target["dimension"],
                vector=target["vector"],
                vectors={target["vector"]: target["dimension"]},
                target=None,
            )
            self._write_meta(meta)
            self._meta = meta

    def as_vectorstore(self, embeddings: Any, **kwargs: Any) -> Any:
        """Not available: langchain-qdrant speaks to a Qdrant server, not an Edge shard."""
        raise VectorStoreError(
            "as_vectorstore() needs a Qdrant server: langchain_qdrant.QdrantVectorStore talks "
            "to one through qdrant-client and cannot open an embedded Qdrant Edge shard; "
            "open the memory with url= (and api_key=) to use it"
        )


# --- conversions ---------------------------------------------------------------------------


def _point_id(value: str) -> str:
    # Edge takes UUIDs (or ints); say so rather than pass on its parse error.
    try:
        return str(uuid.UUID(str(value)))
    except ValueError:
        raise VectorStoreError(f"point ids are UUID strings, got {value!r}") from None


def _lock(path: Path) -> int | None:
    lock_path = path / LOCK_FILE
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise VectorStoreError(f"cannot create the lock file {lock_path}: {exc}") from exc
    if fcntl is None:  # pragma: no cover - no flock: rely on the shard's own WAL lock
        return fd
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        try:
            holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
        except OSError:
            holder = ""
        os.close(fd)
        if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise VectorStoreError(f"cannot lock {lock_path}: {exc}") from exc
        who = f"process {holder}" if holder.isdigit() else "another process"
        raise ShardLockedError(
            f"the Qdrant Edge shard in {path} is open in {who} (or in another memory object "
            "of this one); an embedded shard has one owner at a time. Close the other "
            "TieredMemory first, give this process its own data_dir, or run a Qdrant server "
            "and pass url= so that several processes can share the memories"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
    return fd


def _range(bounds: Range) -> Any:
    qe = _edge()
    values = {k: getattr(bounds, k) for k in ("gte", "gt", "lte", "lt")}
    if any(hasattr(v, "tzinfo") for v in values.values() if v is not None):
        return qe.RangeDateTime(**{k: iso(v) if v is not None else None for k, v in values.items()})
    return qe.RangeFloat(**{k: float(v) if v is not None else None for k, v in values.items()})


def _filter(where: Where | None) -> Any:
    if where is None or where.is_empty():
        return None
    qe = _edge()
    must: list[Any] = []
    must_not: list[Any] = []
    for key, value in where.equals.items():
        must.append(qe.FieldCondition(key, match=qe.MatchValue(value)))
    for key, values in where.any_of.items():
        if not values:
            raise VectorStoreError(f"Where.any_of[{key!r}] is empty: it would match nothing")
        must.append(qe.FieldCondition(key, match=qe.MatchAny(list(values))))
    for key, values in where.none_of.items():
        if values:
            must_not.append(qe.FieldCondition(key, match=qe.MatchAny(list(values))))
    for key, bounds in where.ranges.items():
        must.append(qe.FieldCondition(key, range=_range(bounds)))
    if where.ids is not None:
        must.append(qe.HasIdCondition({_point_id(i) for i in where.ids}))
    if where.exclude_ids:
        must_not.append(qe.HasIdCondition({_point_id(i) for i in where.exclude_ids}))
    return qe.Filter(must=must or None, must_not=must_not or None)


def _formula_defaults(decay: Decay) -> dict[str, Any]:
    return {decay.importance_field: 0.0, decay.time_field: iso(decay.now)}


def _edge_effective(decay: Decay) -> Any:
    qe = _edge()
    importance = qe.Expression.Variable(decay.importance_field)
    midpoint = decay.midpoint
    if midpoint is None:
        return importance
    factor = qe.Expression.Decay(
        qe.DecayKind.Exp,
        qe.Expression.DatetimeKey(decay.time_field),
        target=qe.Expression.Datetime(iso(decay.now)),
        midpoint=midpoint,
        scale=SECONDS_PER_DAY,
    )
    return qe.Expression.Mult([importance, factor])


def _edge_formula(decay: Decay, weight: float) -> Any:
    qe = _edge()
    C = qe.Expression.Constant
    score = qe.Expression.Mult(
        [
            qe.Expression.Variable("$score"),
            C(1.0 / rrf_max()),
            qe.Expression.Sum([C(1.0 - weight), qe.Expression.Mult([C(weight), _edge_effective(decay)])]),
        ]
    )
    return qe.Formula(score, defaults=_formula_defaults(decay))
