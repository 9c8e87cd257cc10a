"""A collection on a Qdrant server or cluster, through qdrant-client.

Same schema as the Edge shard: a named dense vector (``dense``, cosine), a sparse vector
``bm25`` with ``Modifier.IDF`` (the server weighs terms by inverse document frequency at
query time) and payload indexes, the tenant field a keyword index with ``is_tenant``. The
BM25 term weights are computed here with Qdrant Edge's ``Bm25`` (the same tokenizer and
weights as the Edge backend, and as the server's own ``Qdrant/bm25`` inference), so a
deployment moved from the embedded shard to a server ranks text the same way, and
qdrant-client's local mode (which cannot run server-side inference without fastembed)
behaves like a server. The model and dimension the vectors were built with live in the
collection's metadata.

The collection is created with ``m=0, payload_m=16``: no global HNSW graph (every query is
tenant-filtered) and one graph per tenant, Qdrant's recommended multitenant layout.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import EmbeddingMismatchError, VectorStoreError
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

__all__ = ["QdrantServerBackend"]

META_KEY = "langchain_tiered_memory"
META_FORMAT = 1
_PAYLOAD_M = 16
_UPSERT_BATCH = 256


def _models() -> Any:
    try:
        from qdrant_client import models
    except ImportError as exc:  # pragma: no cover - a dependency
        raise VectorStoreError(f"qdrant-client is not installed ({exc}): pip install qdrant-client") from exc
    return models


class QdrantServerBackend:
    """A collection on a Qdrant server (``url=``) or any ``QdrantClient`` (``client=``).

    Args:
        url: the server, e.g. ``"http://localhost:6333"``; ignored when ``client`` is given.
        api_key: its API key, if it needs one.
        client: a ready ``QdrantClient`` (tests pass ``QdrantClient(":memory:")`` or
            ``QdrantClient(path=...)``, qdrant-client's local mode). Closed by :meth:`close`
            only if this backend created it.
        collection: the collection name.
        dimension: dimension of the embeddings in use.
        model_id: name of the embedding model in use.
        schema: payload fields to index.
        timeout: request timeout in seconds for a client created here.

    Raises:
        VectorStoreError: the server is unreachable, or the collection exists with another
            layout (no ``dense``/``bm25`` vectors).
    """

    kind = "server"

    def __init__(
        self,
        url: str | None = None,
        api_key: str | None = None,
        *,
        client: Any = None,
        collection: str = "memories",
        dimension: int,
        model_id: str,
        schema: CollectionSchema = MEMORY_SCHEMA,
        timeout: float | None = None,
    ) -> None:
        if isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 1:
            raise VectorStoreError(f"dimension must be a positive int, got {dimension!r}")
        if not isinstance(model_id, str) or not model_id:
            raise VectorStoreError(f"model_id must be a non-empty str, got {model_id!r}")
        if client is None and not url:
            raise VectorStoreError("QdrantServerBackend needs url= (or a client=)")
        self.dimension = dimension
        self.model_id = model_id
        self.schema = schema
        self.collection = collection
        self._owns_client = client is None
        if client is None:
            from qdrant_client import QdrantClient

            kwargs: dict[str, Any] = {"url": url, "api_key": api_key}
            if timeout is not None:
                kwargs["timeout"] = int(timeout)
            client = QdrantClient(**kwargs)
        self.client = client
        self._location = f"{url or _describe(client)}/collections/{collection}"
        self._closed = False
        try:
            self._meta = self._open_collection()
            self._adopt_if_empty()
        except BaseException:
            if self._owns_client:
                self.client.close()
            raise

    def __repr__(self) -> str:
        return f"QdrantServerBackend({self._location!r}, dimension={self.dimension}, model_id={self.model_id!r})"

    # --- lifecycle ----------------------------------------------------------------------

    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        if self._closed:
            raise VectorStoreError(f"the Qdrant collection {self._location} is closed")
        try:
            return fn(*args, **kwargs)
        except VectorStoreError:
            raise
        except Exception as exc:
            raise VectorStoreError(f"{what} on {self._location} failed: {exc}") from exc

    def _open_collection(self) -> dict[str, Any]:
        m = _models()
        exists = self._call("checking the collection", self.client.collection_exists, self.collection)
        if not exists:
            meta = {
                "format": META_FORMAT,
                "model_id": self.model_id,
                "dimension": self.dimension,
                "vector": DENSE_VECTOR,
                "vectors": {DENSE_VECTOR: self.dimension},
                "target": None,
            }
            self._call(
                "creating the collection",
                self.client.create_collection,
                self.collection,
                vectors_config={DENSE_VECTOR: m.VectorParams(size=self.dimension, distance=m.Distance.COSINE)},
                sparse_vectors_config={SPARSE_VECTOR: m.SparseVectorParams(modifier=m.Modifier.IDF)},
                hnsw_config=m.HnswConfigDiff(m=0, payload_m=_PAYLOAD_M),
                metadata={META_KEY: meta},
            )
        info = self._call("reading the collection", self.client.get_collection, self.collection)
        meta = (info.config.metadata or {}).get(META_KEY)
        vectors = info.config.params.vectors
        sparse = info.config.params.sparse_vectors or {}
        if meta is None:
            raise VectorStoreError(
                f"the collection {self._location} exists but was not created by "
                "langchain-tiered-memory (its metadata has no embedding model); pass another "
                "collection= name"
            )
        if not isinstance(vectors, dict) or meta["vector"] not in vectors or SPARSE_VECTOR not in sparse:
            raise VectorStoreError(
                f"the collection {self._location} lacks the {meta['vector']!r} dense or "
                f"{SPARSE_VECTOR!r} sparse vector; pass another collection= name"
            )
        self._ensure_indexes(set((info.payload_schema or {}).keys()))
        return dict(meta)

    def _ensure_indexes(self, existing: set[str]) -> None:
        m = _models()
        kinds = {
            "keyword": m.PayloadSchemaType.KEYWORD,
            "float": m.PayloadSchemaType.FLOAT,
            "integer": m.PayloadSchemaType.INTEGER,
            "datetime": m.PayloadSchemaType.DATETIME,
        }
        with warnings.catch_warnings():
            # Local mode warns that it ignores payload indexes; a server uses them.
            warnings.simplefilter("ignore", UserWarning)
            for name, kind in self.schema.indexes():
                if name in existing:
                    continue
                schema = (
                    m.KeywordIndexParams(type=m.KeywordIndexType.KEYWORD, is_tenant=True)
                    if kind == "tenant"
                    else kinds[kind]
                )
                self._call(
                    f"creating the payload index {name}",
                    self.client.create_payload_index,
                    self.collection,
                    field_name=name,
                    field_schema=schema,
                    wait=True,
                )

    def _save_meta(self, meta: dict[str, Any]) -> None:
        self._call("writing the collection metadata", self.client.update_collection, self.collection, metadata={META_KEY: meta})
        self._meta = meta

    def _adopt_if_empty(self) -> None:
        if self._problem() is not None and self.count() == 0:
            self.begin_reindex()
            self.finish_reindex()

    def flush(self) -> None:
        """Writes are sent with ``wait=True``: nothing to do."""

    def close(self) -> None:
        """Close the client if this backend created it (idempotent)."""
        if self._closed:
            return
        self._closed = True
        if self._owns_client:
            try:
                self.client.close()
            except Exception:  # pragma: no cover - closing a dead connection
                pass

    def __enter__(self) -> QdrantServerBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- metadata -----------------------------------------------------------------------

    @property
    def vector_name(self) -> str:
        """The live dense vector's name."""
        return str(self._meta["vector"])

    def _problem(self) -> str | None:
        target = self._meta.get("target")
        return mismatch_message(
            self._location,
            (str(self._meta["model_id"]), int(self._meta["dimension"])),
            (self.model_id, self.dimension),
            target["model_id"] if target else None,
        )

    def info(self) -> BackendInfo:
        """Stored and expected model and dimension, and the number of points."""
        target = self._meta.get("target")
        return BackendInfo(
            kind=self.kind,
            location=self._location,
            dimension=int(self._meta["dimension"]),
            model_id=str(self._meta["model_id"]),
            expected_dimension=self.dimension,
            expected_model_id=self.model_id,
            vector_name=self.vector_name,
            points=self.count(),
            reindex_target=target["model_id"] if target else None,
        )

    def _require_vectors(self) -> None:
        if self._closed:
            raise VectorStoreError(f"the Qdrant collection {self._location} is closed")
        problem = self._problem()
        if problem is not None:
            raise EmbeddingMismatchError(problem)

    # --- writes -------------------------------------------------------------------------

    def _vectors(self, name: str, point: PointData) -> dict[str, Any]:
        m = _models()
        indices, values = bm25_document(point.text)
        return {
            name: check_vector(point.vector, self.dimension),
            SPARSE_VECTOR: m.SparseVector(indices=indices, values=values),
        }

    def upsert(self, points: Sequence[PointData]) -> None:
        """Insert or replace points; each is stamped with the model id."""
        if not points:
            return
        self._require_vectors()
        m = _models()
        structs = []
        for p in points:
            payload = dict(p.payload)
            payload[MODEL_FIELD] = self.model_id
            structs.append(m.PointStruct(id=p.id, vector=self._vectors(self.vector_name, p), payload=payload))
        for start in range(0, len(structs), _UPSERT_BATCH):
            self._call(
                "writing points", self.client.upsert, self.collection,
                points=structs[start : start + _UPSERT_BATCH], wait=True,
            )

    def set_payload(self, updates: Mapping[str, Mapping[str, Any]]) -> None:
        """Merge fields into several points' payloads in one batched request."""
        if not updates:
            return
        m = _models()
        ops = []
        for point_id, payload in updates.items():
            if MODEL_FIELD in payload:
                raise VectorStoreError(f"{MODEL_FIELD} is managed by the backend")
            ops.append(m.SetPayloadOperation(set_payload=m.SetPayload(payload=dict(payload), points=[point_id])))
        self._call("updating payloads", self.client.batch_update_points, self.collection, update_operations=ops, wait=True)

    def delete(self, ids: Sequence[str]) -> None:
        """Delete points by id."""
        if not ids:
            return
        m = _models()
        self._call(
            "deleting points", self.client.delete, self.collection,
            points_selector=m.PointIdsList(points=list(ids)), wait=True,
        )

    def delete_where(self, where: Where) -> int:
        """Delete every point matching ``where``; returns how many matched."""
        flt = _filter(where)
        if flt is None:
            raise VectorStoreError("refusing to delete every point: pass a non-empty Where")
        n = self.count(where)
        if n:
            m = _models()
            self._call(
                "deleting points", self.client.delete, self.collection,
                points_selector=m.FilterSelector(filter=flt), wait=True,
            )
        return n

    # --- reads --------------------------------------------------------------------------

    def retrieve(self, ids: Sequence[str], *, with_vectors: bool = False) -> list[Record]:
        """Stored points among ``ids``."""
        if not ids:
            return []
        points = self._call(
            "reading points", self.client.retrieve, self.collection, ids=list(ids),
            with_payload=True, with_vectors=[self.vector_name] if with_vectors else False,
        )
        return [self._record(p, with_vectors) for p in points]

    def _record(self, p: Any, with_vectors: bool = False) -> Record:
        vector = None
        if with_vectors and isinstance(p.vector, dict) and p.vector.get(self.vector_name) is not None:
            vector = list(p.vector[self.vector_name])
        return Record(str(p.id), dict(p.payload or {}), vector)

    def scroll(
        self,
        where: Where,
        *,
        limit: int,
        offset: str | None = None,
        order_by: OrderBy | None = None,
    ) -> tuple[list[Record], str | None]:
        """Points matching ``where``, by id or sorted by ``order_by``."""
        m = _models()
        order = None
        if order_by is not None:
            order = m.OrderBy(
                key=order_by.field,
                direction=m.Direction.DESC if order_by.descending else m.Direction.ASC,
            )
        points, next_offset = self._call(
            "reading points", self.client.scroll, self.collection,
            scroll_filter=_filter(where), limit=limit, offset=offset if order is None else None,
            with_payload=True, with_vectors=False, order_by=order,
        )
        return [self._record(p) for p in points], (str(next_offset) if next_offset is not None and order is None else None)

    def count(self, where: Where | None = None) -> int:
        """Exact number of points matching ``where``."""
        result = self._call(
            "counting points", self.client.count, self.collection,
            count_filter=_filter(where) if where is not None else None, exact=True,
        )
        return int(result.count)

    def _query(self, **kwargs: Any) -> list[ScoredRecord]:
        response = self._call("querying", self.client.query_points, self.collection, with_payload=True, **kwargs)
        return [ScoredRecord(str(p.id), float(p.score), dict(p.payload or {})) for p in response.points]

    def nearest(self, vector: Sequence[float], where: Where, limit: int) -> list[ScoredRecord]:
        """Dense nearest neighbours by cosine."""
        self._require_vectors()
        return self._query(
            query=check_vector(vector, self.dimension), using=self.vector_name,
            query_filter=_filter(where), limit=limit,
        )

    def hybrid(self, query: HybridQuery) -> list[ScoredRecord]:
        """Dense + BM25 candidates, fused by RRF and scored on the server (see ``base``)."""
        self._require_vectors()
        m = _models()
        flt = _filter(query.where)
        indices, values = bm25_query(query.text)
        legs = [
            m.Prefetch(
                query=check_vector(query.vector, self.dimension), using=self.vector_name,
                filter=flt, limit=query.candidates,
            ),
            m.Prefetch(
                query=m.SparseVector(indices=indices, values=values), using=SPARSE_VECTOR,
                filter=flt, limit=query.candidates,
            ),
        ]
        threshold = query.relevance_threshold()
        rrf = m.RrfQuery(rrf=m.Rrf(k=RRF_K))
        if query.decay is None:
            hits = self._query(
                prefetch=legs, query=rrf, query_filter=flt, limit=query.limit, score_threshold=threshold
            )
            scale = 1.0 / rrf_max()
            return [ScoredRecord(h.id, h.score * scale, h.payload) for h in hits]
        fused = m.Prefetch(prefetch=legs, query=rrf, filter=flt, limit=query.candidates, score_threshold=threshold)
        return self._query(
            prefetch=[fused], query=_server_formula(query.decay, query.decay_weight),
            query_filter=flt, limit=query.limit,
        )

    def weakest(self, where: Where, decay: Decay, limit: int) -> list[ScoredRecord]:
        """The points of lowest ``importance × rate^days``, computed on the server."""
        m = _models()
        n = self.count(where)
        if n == 0 or limit < 1:
            return []
        flt = _filter(where)
        every = m.Prefetch(query=m.OrderByQuery(order_by=m.OrderBy(key=decay.time_field)), filter=flt, limit=n)
        formula = m.FormulaQuery(
            formula=m.NegExpression(neg=_server_effective(decay)), defaults=_defaults(decay)
        )
        hits = self._query(prefetch=[every], query=formula, query_filter=flt, limit=limit)
        return [ScoredRecord(h.id, -h.score, h.payload) for h in hits]

    # --- reindex ------------------------------------------------------------------------

    def begin_reindex(self) -> None:
        """Record the embeddings in use as the target; add a vector if the width changes."""
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
                m = _models()
                self._call(
                    "adding a dense vector", self.client.create_vector_name, self.collection,
                    vector_name=name,
                    vector_name_config=m.DenseVectorNameConfig(
                        dense=m.DenseVectorConfig(size=self.dimension, distance=m.Distance.COSINE)
                    ),
                )
                vectors[name] = self.dimension
        meta["vectors"] = vectors
        meta["target"] = {"model_id": self.model_id, "dimension": self.dimension, "vector": name}
        self._save_meta(meta)

    def update_vectors(self, points: Sequence[PointData]) -> None:
        """Write the target model's vectors of existing points and stamp them."""
        target = self._meta.get("target")
        if not target or target["model_id"] != self.model_id:
            raise VectorStoreError("update_vectors() is for a reindex: call begin_reindex() first")
        if not points:
            return
        m = _models()
        self._call(
            "writing vectors", self.client.update_vectors, self.collection,
            points=[m.PointVectors(id=p.id, vector=self._vectors(target["vector"], p)) for p in points],
            wait=True,
        )
        # Stamped after the vectors: a crash in between redoes these points, never skips them.
        self._call(
            "stamping points", self.client.set_payload, self.collection,
            payload={MODEL_FIELD: self.model_id}, points=[p.id for p in points], wait=True,
        )

    def finish_reindex(self) -> None:
        """Switch the collection to the target model once no point lacks its vectors."""
        meta = dict(self._meta)
        target = meta.get("target")
        if not target:
            return
        left = self.count(Where(none_of={MODEL_FIELD: [target["model_id"]]}))
        if left:
            raise VectorStoreError(
                f"{left} points of {self._location} still lack vectors of {target['model_id']!r}; "
                "run the reindex again"
            )
        for name in meta["vectors"]:
            if name != target["vector"]:
                try:
                    self.client.delete_vector_name(self.collection, vector_name=name)
                except Exception:  # already gone after a crash here: fine
                    pass
        meta.update(
            model_id=target["model_id"],
            dimension=target["dimension"],
            vector=target["vector"],
            vectors={target["vector"]: target["dimension"]},
            target=None,
        )
        self._save_meta(meta)

    def as_vectorstore(self, embeddings: Any, **kwargs: Any) -> Any:
        """A ``langchain_qdrant.QdrantVectorStore`` over this collection's dense vector.

        Documents are the ``content`` payload with ``metadata`` as their metadata. It sees
        every tenant: filter on ``user_id`` yourself (``filter=models.Filter(...)``), and
        prefer :meth:`VectorMemory.remember` for writes, which sets the fields recall needs.
        ``kwargs`` go to ``QdrantVectorStore``.
        """
        self._require_vectors()
        try:
            from langchain_qdrant import QdrantVectorStore, RetrievalMode
        except ImportError as exc:  # pragma: no cover - a dependency
            raise VectorStoreError(f"langchain-qdrant is not installed ({exc}): pip install langchain-qdrant") from exc
        options: dict[str, Any] = dict(
            client=self.client,
            collection_name=self.collection,
            embedding=embeddings,
            retrieval_mode=RetrievalMode.DENSE,
            vector_name=self.vector_name,
            content_payload_key="content",
            metadata_payload_key="metadata",
        )
        options.update(kwargs)
        return QdrantVectorStore(**options)


# --- conversions ---------------------------------------------------------------------------


def _describe(client: Any) -> str:
    inner = getattr(client, "_client", None)
    location = getattr(inner, "location", None)
    if location:
        return f"qdrant-local:{location}"
    rest = getattr(inner, "rest_uri", None)
    return str(rest or "qdrant")


def _range(bounds: Range) -> Any:
    m = _models()
    values = {k: getattr(bounds, k) for k in ("gte", "gt", "lte", "lt")}
    if any(hasattr(v, "tzinfo") for v in values.values() if v is not None):
        return m.DatetimeRange(**values)
    return m.Range(**{k: float(v) if v is not None else None for k, v in values.items()})


def _filter(where: Where | None) -> Any:
    if where is None or where.is_empty():
        return None
    m = _models()
    must: list[Any] = []
    must_not: list[Any] = []
    for key, value in where.equals.items():
        must.append(m.FieldCondition(key=key, match=m.MatchValue(value=value)))
    for key, values in where.any_of.items():
        if not values:
            raise VectorStoreError(f"Where.any_of[{key!r}] is empty: it would match nothing")
        must.append(m.FieldCondition(key=key, match=m.MatchAny(any=list(values))))
    for key, values in where.none_of.items():
        if values:
            must_not.append(m.FieldCondition(key=key, match=m.MatchAny(any=list(values))))
    for key, bounds in where.ranges.items():
        must.append(m.FieldCondition(key=key, range=_range(bounds)))
    if where.ids is not None:
        must.append(m.HasIdCondition(has_id=list(where.ids)))
    if where.exclude_ids:
        must_not.append(m.HasIdCondition(has_id=list(where.exclude_ids)))
    return m.Filter(must=must or None, must_not=must_not or None)


def _defaults(decay: Decay) -> dict[str, Any]:
    return {decay.importance_field: 0.0, decay.time_field: iso(decay.now)}


def _server_effective(decay: Decay) -> Any:
    m = _models()
    midpoint = decay.midpoint
    if midpoint is None:
        return decay.importance_field
    factor = m.ExpDecayExpression(
        exp_decay=m.DecayParamsExpression(
            x=m.DatetimeKeyExpression(datetime_key=decay.time_field),
            target=m.DatetimeExpression(datetime=iso(decay.now)),
            midpoint=midpoint,
            scale=SECONDS_PER_DAY,
        )
    )
    return m.MultExpression(mult=[decay.importance_field, factor])


def _server_formula(decay: Decay, weight: float) -> Any:
    m = _models()
    return m.FormulaQuery(
        formula=m.MultExpression(
            mult=[
                "$score",
                1.0 / rrf_max(),
                m.SumExpression(sum=[1.0 - weight, m.MultExpression(mult=[weight, _server_effective(decay)])]),
            ]
        ),
        defaults=_defaults(decay),
    )
