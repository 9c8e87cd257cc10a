"""A collection on a Qdrant server or cluster, through qdrant-client.

Same layout as the Edge shard: a named dense vector (``dense``, cosine), a sparse vector
``bm25`` with ``Modifier.IDF`` (the server weighs terms by inverse document frequency at
query time) and payload indexes, the tenant field a keyword index with ``is_tenant``. The
BM25 term weights are computed here with Qdrant Edge's ``Bm25`` (the same tokenizer and
weights as the Edge backend, and as the server's own ``Qdrant/bm25`` inference), so a
deployment moved from the embedded shard to a server ranks text the same way, and
qdrant-client's local mode (which cannot run server-side inference without fastembed)
behaves like a server. The model record lives in the collection's metadata.

Every call is idempotent (upserts and deletes by id, queries), so a transient failure — a
timeout, a refused connection, a 5xx — is retried with a short exponential backoff before it
becomes a :class:`~langchain_tiered_memory.errors.VectorStoreError`.
"""

from __future__ import annotations

import logging
import threading
import time
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import VectorStoreError
from .base import BaseBackend, Search
from .filters import FilterBuilder
from .records import (
    SPARSE_VECTOR,
    CollectionSchema,
    Range,
    Record,
    ScoredRecord,
    Where,
    new_meta,
)

logger = logging.getLogger("langchain_tiered_memory")

__all__ = ["QdrantServerBackend"]

META_KEY = "langchain_tiered_memory"
_UPSERT_BATCH = 256
#: Attempts of a call that fails transiently, and the first pause between them.
RETRIES = 3
_BACKOFF_S = 0.2


def _models() -> Any:
    try:
        from qdrant_client import models
    except ImportError as exc:  # pragma: no cover - a dependency
        raise VectorStoreError(f"qdrant-client is not installed ({exc}): pip install qdrant-client") from exc
    return models


def _transient(exc: Exception) -> bool:
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return status >= 500 or status == 429
    name = type(exc).__name__
    return isinstance(exc, (ConnectionError, TimeoutError)) or name in (
        "ResponseHandlingException", "ConnectError", "ReadTimeout", "ConnectTimeout", "RemoteProtocolError",
    )


class _ServerFilters(FilterBuilder):
    def match(self, key: str, value: str | int | bool) -> Any:
        m = _models()
        return m.FieldCondition(key=key, match=m.MatchValue(value=value))

    def match_any(self, key: str, values: list[Any]) -> Any:
        m = _models()
        return m.FieldCondition(key=key, match=m.MatchAny(any=values))

    def range(self, key: str, bounds: Range) -> Any:
        m = _models()
        values = bounds.values()
        if bounds.is_datetime():
            return m.FieldCondition(key=key, range=m.DatetimeRange(**values))
        return m.FieldCondition(key=key, range=m.Range(**{k: float(v) if v is not None else None for k, v in values.items()}))  # type: ignore[arg-type]

    def has_id(self, ids: list[str]) -> Any:
        return _models().HasIdCondition(has_id=ids)

    def conjunction(self, must: list[Any], must_not: list[Any]) -> Any:
        return _models().Filter(must=must or None, must_not=must_not or None)


class QdrantServerBackend(BaseBackend):
    """A collection on a Qdrant server (``url=``) or any ``QdrantClient`` (``client=``).

    Args:
        url: the server, e.g. ``"http://localhost:6333"`` (``https://`` for TLS); ignored
            when ``client`` is given.
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
        collection: str = "recall",
        dimension: int,
        model_id: str,
        schema: CollectionSchema | None = None,
        timeout: float | None = 10.0,
    ) -> None:
        self._init_model(dimension, model_id, schema or CollectionSchema())
        if client is None and not url:
            raise VectorStoreError("QdrantServerBackend needs url= (or a client=)")
        self.collection = collection
        self.filters = _ServerFilters()
        self._owns_client = client is None
        if client is None:
            from qdrant_client import QdrantClient

            kwargs: dict[str, Any] = {"url": url, "api_key": api_key}
            if timeout is not None:
                kwargs["timeout"] = int(max(1, timeout))
            client = QdrantClient(**kwargs)
        self.client = client
        self.location = f"{url or _describe(client)}/collections/{collection}"
        # qdrant-client's local mode (tests) is not thread-safe; a server serves any thread.
        self._serial = threading.Lock() if "qdrant-local:" in self.location else None
        self._closed = False
        #: Whether this open created the collection (there was no index before).
        self.created = False
        try:
            self._meta = self._open_collection()
            self._adopt_if_empty()
        except BaseException:
            if self._owns_client:
                self.client.close()
            raise

    def __repr__(self) -> str:
        return f"QdrantServerBackend({self.location!r}, dimension={self.dimension}, model_id={self.model_id!r})"

    # --- lifecycle ----------------------------------------------------------------------

    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        self._check_open()
        delay = _BACKOFF_S
        for attempt in range(1, RETRIES + 1):
            try:
                if self._serial is not None:
                    with self._serial:
                        return fn(*args, **kwargs)
                return fn(*args, **kwargs)
            except VectorStoreError:
                raise
            except Exception as exc:
                if attempt < RETRIES and _transient(exc):
                    logger.info("%s on %s failed (%s); retrying in %.1f s", what, self.location, exc, delay)
                    time.sleep(delay)
                    delay *= 2
                    continue
                raise VectorStoreError(f"{what} on {self.location} failed: {exc}") from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def _open_collection(self) -> dict[str, Any]:
        m = _models()
        exists = self._call("checking the collection", self.client.collection_exists, self.collection)
        if not exists:
            self.created = True
            self._call(
                "creating the collection",
                self.client.create_collection,
                self.collection,
                vectors_config={"dense": m.VectorParams(size=self.dimension, distance=m.Distance.COSINE)},
                sparse_vectors_config={SPARSE_VECTOR: m.SparseVectorParams(modifier=m.Modifier.IDF)},
                hnsw_config=m.HnswConfigDiff(m=0, payload_m=16),
                metadata={META_KEY: new_meta(self.model_id, self.dimension)},
            )
        info = self._call("reading the collection", self.client.get_collection, self.collection)
        meta = (info.config.metadata or {}).get(META_KEY)
        vectors = info.config.params.vectors
        sparse = info.config.params.sparse_vectors or {}
        if meta is None:
            raise VectorStoreError(
                f"the collection {self.location} exists but was not created by "
                "langchain-tiered-memory (its metadata has no embedding model); pass another "
                "collection= name"
            )
        if not isinstance(vectors, dict) or meta["vector"] not in vectors or SPARSE_VECTOR not in sparse:
            raise VectorStoreError(
                f"the collection {self.location} lacks the {meta['vector']!r} dense or "
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
                    f"creating the payload index {name}", self.client.create_payload_index,
                    self.collection, field_name=name, field_schema=schema, wait=True,
                )

    def _save_meta(self, meta: dict[str, Any]) -> None:
        self._call(
            "writing the collection metadata", self.client.update_collection, self.collection,
            metadata={META_KEY: meta},
        )

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

    def _check_open(self) -> None:
        if self._closed:
            raise VectorStoreError(f"the Qdrant collection {self.location} is closed")

    # --- the engine's half --------------------------------------------------------------

    def _add_vector(self, name: str, dimension: int) -> None:
        m = _models()
        self._call(
            "adding a dense vector", self.client.create_vector_name, self.collection,
            vector_name=name,
            vector_name_config=m.DenseVectorNameConfig(
                dense=m.DenseVectorConfig(size=dimension, distance=m.Distance.COSINE)
            ),
        )

    def _drop_vector(self, name: str) -> None:
        try:
            self.client.delete_vector_name(self.collection, vector_name=name)
        except Exception:  # already gone after a crash here: fine
            pass

    def _sparse_vector(self, indices: list[int], values: list[float]) -> Any:
        return _models().SparseVector(indices=indices, values=values)

    def _write_points(self, points: Sequence[tuple[str, dict[str, Any], dict[str, Any]]]) -> None:
        m = _models()
        structs = [m.PointStruct(id=i, vector=v, payload=p) for i, v, p in points]
        for start in range(0, len(structs), _UPSERT_BATCH):
            self._call(
                "writing points", self.client.upsert, self.collection,
                points=structs[start : start + _UPSERT_BATCH], wait=True,
            )

    def _write_vectors(self, points: Sequence[tuple[str, dict[str, Any]]]) -> None:
        m = _models()
        self._call(
            "writing vectors", self.client.update_vectors, self.collection,
            points=[m.PointVectors(id=i, vector=v) for i, v in points], wait=True,
        )

    def set_payload(self, updates: Mapping[str, Mapping[str, Any]]) -> None:
        """Merge fields into several points' payloads in one batched request."""
        if not updates:
            return
        m = _models()
        ops = [
            m.SetPayloadOperation(set_payload=m.SetPayload(payload=dict(payload), points=[point_id]))
            for point_id, payload in updates.items()
        ]
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
        flt = self.filters.build(where)
        if flt is None:
            raise VectorStoreError("refusing to delete every point: pass a non-empty Where")
        n = self.count(where)
        if n:
            self._call(
                "deleting points", self.client.delete, self.collection,
                points_selector=_models().FilterSelector(filter=flt), wait=True,
            )
        return n

    def retrieve(self, ids: Sequence[str], *, with_vectors: bool = False) -> list[Record]:
        """Stored points among ``ids``."""
        if not ids:
            return []
        points = self._call(
            "reading points", self.client.retrieve, self.collection, ids=list(ids),
            with_payload=True, with_vectors=[self.vector_name] if with_vectors else False,
        )
        out = []
        for p in points:
            vector = None
            if with_vectors and isinstance(p.vector, dict) and p.vector.get(self.vector_name) is not None:
                vector = list(p.vector[self.vector_name])
            out.append(Record(str(p.id), dict(p.payload or {}), vector))
        return out

    def scroll(
        self, where: Where, *, limit: int, offset: str | None = None
    ) -> tuple[list[Record], str | None]:
        """Points matching ``where``, by id."""
        points, next_offset = self._call(
            "reading points", self.client.scroll, self.collection,
            scroll_filter=self.filters.build(where), limit=limit, offset=offset,
            with_payload=True, with_vectors=False,
        )
        return [Record(str(p.id), dict(p.payload or {})) for p in points], (
            str(next_offset) if next_offset is not None else None
        )

    def count(self, where: Where | None = None) -> int:
        """Exact number of points matching ``where``."""
        result = self._call(
            "counting points", self.client.count, self.collection,
            count_filter=self.filters.build(where) if where is not None else None, exact=True,
        )
        return int(result.count)

    def _query(self, search: Search) -> list[ScoredRecord]:
        return self._query_many([search])[0]

    def _query_many(self, searches: Sequence[Search]) -> list[list[ScoredRecord]]:
        m = _models()
        requests = []
        for search in searches:
            requests.append(m.QueryRequest(
                query=search.vector, using=search.using, filter=search.flt,
                limit=search.limit, with_payload=_with_payload(search.fields),
            ))
        # One round trip for the lot.
        responses = self._call("querying", self.client.query_batch_points, self.collection, requests=requests)
        return [_scored(response.points) for response in responses]


def _scored(points: Sequence[Any]) -> list[ScoredRecord]:
    return [ScoredRecord(str(p.id), float(p.score), dict(p.payload or {})) for p in points]


def _with_payload(fields: Sequence[str] | None) -> bool | list[str]:
    return True if fields is None else (list(fields) or False)


def _describe(client: Any) -> str:
    inner = getattr(client, "_client", None)
    location = getattr(inner, "location", None)
    if location:
        return f"qdrant-local:{location}"
    rest = getattr(inner, "rest_uri", None)
    return str(rest or "qdrant")
