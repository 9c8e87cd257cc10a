"""The embedded default: a Qdrant Edge shard in a directory, no server, no key.

Layout of ``path`` (the index passes ``data_dir / "qdrant" / <collection>``)::

    path/collection.json   the embedding model and dimension the vectors were built with
    path/LOCK              held (flock) by the one process that has the shard open
    path/shard/            the Qdrant Edge shard (segments, WAL)

Only one process may open a shard: a second one gets :class:`ShardLockedError` before it
touches a file, instead of the shard's own opaque WAL error (or worse, two writers; see
:mod:`.shard_lock`). Inside
one process, :func:`open_shared` hands every opener of a path the same backend (counted, so
the last ``close`` closes it): a second memory object on the same directory — a notebook
cell run twice — shares the shard instead of locking itself out.

Tuning, measured on 2 cores with 384-d vectors. Every query of the package filters on
the tenant (the user), so the plan that matters is the tenant's payload index, then an
exact scan of a small tenant's points or a walk of a large tenant's graph:

* 100 tenants × 1,000 points: hybrid top-5 ~0.36 ms by exact scan once segments are
  optimised (~0.55 ms in the unoptimised appendable segment).
* A global graph (``m=16``) is not a tenant's graph: with 10 tenants of 3,000 points, a
  filtered walk found 0.2 of a tenant's 10 nearest points (ACORN's two-hop walk 0.3);
  per-tenant graphs (``payload_m=16``, ``m=0``: Qdrant's multitenancy layout) found all of
  them, and took ~8 s to build per 30k points against ~4 s for the global graph.
* ``quantize``: the walk and the scan read an int8 copy of the vectors and rescore twice
  the points asked for with the exact ones (the scores stay exact cosines; recall@10
  against an exact search 0.998).

The recall index (:mod:`langchain_tiered_memory.index`) opens its shard with per-tenant
graphs past ~2,600 points (``full_scan_kb`` 4,000) and quantization; the defaults here (no
graph, exact scans below :data:`FULL_SCAN_KB`) suit small collections. The optimizer
(segment merge and vacuum, and the graphs) runs in a background thread once
``optimize_after`` points were written since its last run, and at open when the shard is
that large. qdrant-edge-py 0.9 holds the GIL for the whole run (measured: a run of 8.8 s
over 15,000 points stopped a 1 ms Python ticker for 8.8 s), so every thread of the process
waits for it: the rarer the runs the better, and a run merging a big segment stalls for
seconds. (Running them every 1,000 writes with a 1 MB indexing threshold made a recall's
legs 3x faster on a 10k-message thread, and stalled for 4 s every ~350 turns: not taken.)
Segments keep the layout they were built with: a shard made under another one changes as
the optimizer rebuilds its segments.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import threading
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import VectorStoreError
from .base import BaseBackend, Search, check_vector
from .records import (
    SPARSE_VECTOR,
    CollectionSchema,
    Record,
    ScoredRecord,
    Where,
)
from .edge_shard import (
    EdgeFilters,
    edge_module,
    ensure_indexes,
    load_meta,
    open_shard,
    point_id,
    rescore_params,
    save_meta,
    shard_config,
)
from .shard_lock import lock_shard

logger = logging.getLogger("langchain_tiered_memory")

__all__ = ["FULL_SCAN_KB", "OPTIMIZE_AFTER", "EdgeBackend", "open_shared"]

#: Tenants with fewer vector kilobytes than this are searched by exact scan over their
#: payload index, never by graph (Qdrant's ``full_scan_threshold``): 16 MB, a tenant of
#: ~10,400 384-d vectors.
FULL_SCAN_KB = 16_000
#: Points written since the last optimizer run that trigger a background run.
OPTIMIZE_AFTER = 10_000
_open_backends: weakref.WeakSet[EdgeBackend] = weakref.WeakSet()
_shared_lock = threading.Lock()
_shared: dict[Path, EdgeBackend] = {}


@atexit.register
def _close_all() -> None:
    # An optimizer thread is a daemon; let it finish its segment swap before exit.
    for backend in list(_open_backends):
        backend._join_optimizer()


def open_shared(path: str | os.PathLike[str], dimension: int, model_id: str, **kwargs: Any) -> EdgeBackend:
    """The process's backend of the shard at ``path``, opening it if no one here has.

    Every caller gets the same object and must :meth:`EdgeBackend.close` it once; the shard
    closes with the last. The embeddings must match those of the first opener.
    """
    key = Path(path).resolve()
    with _shared_lock:
        backend = _shared.get(key)
        if backend is not None and not backend._closed:
            if (backend.dimension, backend.model_id) != (dimension, model_id):
                raise VectorStoreError(
                    f"the Qdrant Edge shard {key} is open in this process with embedding model "
                    f"{backend.model_id!r} ({backend.dimension}-d); a second memory on the same "
                    f"directory must use the same embeddings, not {model_id!r} ({dimension}-d)"
                )
            backend._refs += 1
            return backend
        backend = EdgeBackend(key, dimension, model_id, **kwargs)
        backend._shared_key = key
        _shared[key] = backend
        return backend


class EdgeBackend(BaseBackend):
    """A collection in an embedded Qdrant Edge shard under ``path``.

    Args:
        path: the collection's directory (created if missing).
        dimension: dimension of the embeddings in use.
        model_id: name of the embedding model in use (``embedding_model_id(emb)``).
        schema: payload fields to index.
        optimize_after: points written before a background optimizer run; 0 never runs it
            (call :meth:`optimize`).
        hnsw_m: degree of a global HNSW graph (0: none; a tenant-filtered query scans).
        tenant_graphs: build one HNSW graph per tenant (for tenants past
            ``full_scan_kb`` of vectors).
        full_scan_kb: a filtered search over fewer vector kilobytes than this scans them
            exactly (Qdrant's ``full_scan_threshold``); above it, the graph is searched.
        search_threads: threads of the shard's search pool. 1 is fastest for the small
            per-tenant queries the package makes; more helps only huge unfiltered scans.
        quantize: keep an int8 copy of the dense vectors (scalar quantization) that
            searches read, rescoring twice the points asked for with the exact vectors: a
            quarter of the memory to read, the same scores. Segments built since it was set
            have it; a shard made without it gains it as the optimizer rebuilds them.

    Raises:
        ShardLockedError: another process (or an unshared backend in this one) has it open.
        VectorStoreError: the directory is unusable or holds something else.
    """

    kind = "edge"

    def __init__(
        self,
        path: str | os.PathLike[str],
        dimension: int,
        model_id: str,
        *,
        schema: CollectionSchema | None = None,
        optimize_after: int = OPTIMIZE_AFTER,
        hnsw_m: int = 0,
        tenant_graphs: bool = False,
        full_scan_kb: int = FULL_SCAN_KB,
        search_threads: int = 1,
        quantize: bool = False,
    ) -> None:
        self._init_model(dimension, model_id, schema or CollectionSchema())
        self.path = Path(path)
        self.location = str(self.path)
        self.filters = EdgeFilters()
        self._optimize_after = max(0, int(optimize_after))
        self._search_threads = search_threads
        self._hnsw_m = hnsw_m
        self._full_scan_kb = full_scan_kb
        self._quantize = bool(quantize)
        #: Whether the optimizer builds a graph per tenant (see the module docstring).
        self.tenant_graphs = bool(tenant_graphs)
        self._optimizer: threading.Thread | None = None
        self._optimizer_lock = threading.Lock()
        self._written = 0
        self._closed = False
        self._refs = 1
        self._shared_key: Path | None = None
        self._shard: Any = None
        #: Whether this open created the shard (there was no index before).
        self.created = False
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise VectorStoreError(f"cannot create the vector directory {self.path}: {exc}") from exc
        if not self.path.is_dir():
            raise VectorStoreError(f"{self.path} exists and is not a directory")
        self._lock_fd = lock_shard(self.path)
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
        return load_meta(self.path, self.model_id, self.dimension)

    def _save_meta(self, meta: dict[str, Any]) -> None:
        save_meta(self.path, meta)

    def _open_shard(self) -> Any:
        config = shard_config(
            self._meta, hnsw_m=self._hnsw_m, full_scan_kb=self._full_scan_kb, tenant_graphs=self.tenant_graphs,
            search_threads=self._search_threads, quantize=self._quantize,
        )
        shard, self.created = open_shard(self.path, config)
        return shard

    def _ensure_indexes(self) -> None:
        ensure_indexes(self._shard, self.schema, self._update)

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
        """Release this holder; the last one waits for a running optimizer, flushes and
        closes the shard and releases the lock."""
        with _shared_lock:
            if self._closed:
                return
            self._refs -= 1
            if self._refs > 0:
                return
            self._closed = True
            if self._shared_key is not None and _shared.get(self._shared_key) is self:
                del _shared[self._shared_key]
        try:
            self._join_optimizer()
            if self._shard is not None:
                try:
                    self._shard.flush()
                finally:
                    self._shard.close()
                    self._shard = None
        except Exception as exc:
            # A shard whose files were removed under it cannot flush: the lock still goes,
            # and the error is ours.
            raise VectorStoreError(f"closing the Qdrant Edge shard {self.path} failed: {exc}") from exc
        finally:
            _open_backends.discard(self)
            self._release()

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
            # A thread, so the caller's write returns; the run holds the GIL (see the module
            # docs), so the process's other threads wait for it.
            self._optimizer = threading.Thread(
                target=self._run_optimizer, name=f"qdrant-edge-optimize:{self.path.name}", daemon=True
            )
            self._optimizer.start()

    def _run_optimizer(self) -> None:
        try:
            self._shard.optimize()
        except Exception as exc:  # the shard stays usable; the next trigger retries
            logger.warning("background optimization of %s failed: %s", self.path, exc)

    # --- the engine's half --------------------------------------------------------------

    def _update(self, op: Any) -> None:
        try:
            self._shard.update(op)
        except Exception as exc:
            raise VectorStoreError(f"writing to the shard {self.path} failed: {exc}") from exc

    def _add_vector(self, name: str, dimension: int) -> None:
        qe = edge_module()
        self._update(qe.UpdateOperation.create_dense_vector(name, dimension, qe.Distance.Cosine))

    def _drop_vector(self, name: str) -> None:
        try:
            self._shard.update(edge_module().UpdateOperation.delete_vector_name(name))
        except Exception as exc:  # already gone after a crash here: fine
            logger.debug("deleting vector %s of %s: %s", name, self.path, exc)

    def _sparse_vector(self, indices: list[int], values: list[float]) -> Any:
        return edge_module().SparseVector(indices, values)

    def _write_points(self, points: Sequence[tuple[str, dict[str, Any], dict[str, Any]]]) -> None:
        qe = edge_module()
        self._update(qe.UpdateOperation.upsert_points([qe.Point(point_id(i), v, p) for i, v, p in points]))
        self._wrote(len(points))

    def _write_vectors(self, points: Sequence[tuple[str, dict[str, Any]]]) -> None:
        qe = edge_module()
        self._update(qe.UpdateOperation.update_vectors([qe.PointVectors(point_id(i), v) for i, v in points]))
        self._wrote(len(points))

    def set_payload(self, updates: Mapping[str, Mapping[str, Any]]) -> None:
        """Merge fields into several points' payloads; one shard operation per distinct
        payload (Edge sets one payload on a list of ids)."""
        if not updates:
            return
        self._check_open()
        qe = edge_module()
        groups: dict[str, tuple[dict[str, Any], list[str]]] = {}
        for pid, payload in updates.items():
            key = json.dumps(payload, sort_keys=True, default=str)
            groups.setdefault(key, (dict(payload), []))[1].append(point_id(pid))
        for payload, ids in groups.values():
            self._update(qe.UpdateOperation.set_payload(ids, payload))

    def delete(self, ids: Sequence[str]) -> None:
        """Delete points by id."""
        if not ids:
            return
        self._check_open()
        self._update(edge_module().UpdateOperation.delete_points([point_id(i) for i in ids]))
        self._wrote(len(ids))

    def delete_where(self, where: Where) -> int:
        """Delete every point matching ``where``; returns how many matched."""
        self._check_open()
        flt = self.filters.build(where)
        if flt is None:
            raise VectorStoreError("refusing to delete every point: pass a non-empty Where")
        n = self.count(where)
        if n:
            self._update(edge_module().UpdateOperation.delete_points_by_filter(flt))
            self._wrote(n)
        return n

    def retrieve(self, ids: Sequence[str], *, with_vectors: bool = False) -> list[Record]:
        """Stored points among ``ids``."""
        self._check_open()
        if not ids:
            return []
        try:
            records = self._shard.retrieve(
                [point_id(i) for i in ids], True, [self.vector_name] if with_vectors else False
            )
        except Exception as exc:
            raise VectorStoreError(f"reading from the shard {self.path} failed: {exc}") from exc
        return [self._record(r, with_vectors) for r in records]

    def _record(self, r: Any, with_vectors: bool = False) -> Record:
        vector = None
        if with_vectors and r.vector:
            found = r.vector.get(self.vector_name)
            # Edge hands over a fresh list already: copying it again cost a recall ~0.1 ms.
            vector = (found if isinstance(found, list) else list(found or [])) or None
        return Record(str(r.id), dict(r.payload or {}), vector)

    def scroll(
        self, where: Where, *, limit: int, offset: str | None = None
    ) -> tuple[list[Record], str | None]:
        """Points matching ``where``, by id."""
        self._check_open()
        request = edge_module().ScrollRequest(
            offset=point_id(offset) if offset is not None else None,
            limit=limit,
            filter=self.filters.build(where),
            with_payload=True,
            with_vector=False,
        )
        try:
            records, next_offset = self._shard.scroll(request)
        except Exception as exc:
            raise VectorStoreError(f"reading from the shard {self.path} failed: {exc}") from exc
        return [self._record(r) for r in records], (str(next_offset) if next_offset is not None else None)

    def count(self, where: Where | None = None) -> int:
        """Exact number of points matching ``where``."""
        self._check_open()
        flt = self.filters.build(where) if where is not None else None
        try:
            return int(self._shard.count(edge_module().CountRequest(exact=True, filter=flt)))
        except Exception as exc:
            raise VectorStoreError(f"reading from the shard {self.path} failed: {exc}") from exc

    def cosines(self, ids: Sequence[str], vector: Sequence[float], fields: Sequence[str]) -> list[ScoredRecord]:
        """As :meth:`BaseBackend.cosines`, scored by the shard: an exact search among the
        ids. For the ~25 turns beside a recall's best, 0.26 ms against 0.66 ms for reading
        their vectors out and scoring them here."""
        self._require_vectors()
        wanted = {point_id(i) for i in ids}
        if not wanted:
            return []
        qe = edge_module()
        request = qe.QueryRequest(
            limit=len(wanted), query=qe.Query.Nearest(check_vector(vector, self.dimension), using=self.vector_name),
            filter=qe.Filter(must=[qe.HasIdCondition(wanted)]), with_payload=qe.PayloadSelector.Include(list(fields)),
            # Every one of them, scored with its exact vector (no graph, no int8 copy).
            params=qe.SearchParams(exact=True),
        )
        try:
            points = self._shard.query(request)
        except Exception as exc:
            raise VectorStoreError(f"querying the shard {self.path} failed: {exc}") from exc
        return [ScoredRecord(str(p.id), float(p.score), p.payload or {}) for p in points]

    def _query(self, search: Search) -> list[ScoredRecord]:
        return self._query_many([search])[0]

    def _query_many(self, searches: Sequence[Search]) -> list[list[ScoredRecord]]:
        qe = edge_module()
        requests = [self._request(search) for search in searches]
        try:
            if len(requests) == 1:
                found = [self._shard.query(requests[0])]
            else:
                # One planned batch shares the pass over the segments.
                found = self._shard.query_batch(qe.QueryBatchRequest(requests))
        except Exception as exc:
            raise VectorStoreError(f"querying the shard {self.path} failed: {exc}") from exc
        return [[ScoredRecord(str(p.id), float(p.score), dict(p.payload or {})) for p in points] for points in found]

    def _request(self, search: Search) -> Any:
        qe = edge_module()
        fields = search.fields
        payload: Any = True if fields is None else (qe.PayloadSelector.Include(list(fields)) if fields else False)
        return qe.QueryRequest(
            limit=search.limit, query=qe.Query.Nearest(search.vector, using=search.using),
            filter=search.flt, with_payload=payload,
            # Scores are similarities the ranking weighs: always the exact vectors' (the
            # int8 copy only chooses which points to score).
            params=rescore_params() if self._quantize and search.using != SPARSE_VECTOR else None,
        )
