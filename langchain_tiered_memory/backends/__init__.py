"""Vector backends: an embedded Qdrant Edge shard by default, a Qdrant server by URL.

Both implement :class:`~.base.VectorBackend` over the same collection layout, so a
deployment moves from one to the other without code changes (copy the points, or run
``reindex`` into the new backend). :func:`open_backend` picks one.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .base import (
    DENSE_VECTOR,
    MEMORY_SCHEMA,
    MODEL_FIELD,
    RRF_K,
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
    VectorBackend,
    Where,
    bm25_document,
    bm25_query,
    reindex_backend,
    rrf_max,
)
from .edge import EdgeBackend
from .server import QdrantServerBackend

__all__ = [
    "DENSE_VECTOR",
    "MEMORY_SCHEMA",
    "MODEL_FIELD",
    "RRF_K",
    "SPARSE_VECTOR",
    "BackendInfo",
    "CollectionSchema",
    "Decay",
    "EdgeBackend",
    "HybridQuery",
    "OrderBy",
    "PointData",
    "QdrantServerBackend",
    "Range",
    "Record",
    "ScoredRecord",
    "VectorBackend",
    "Where",
    "bm25_document",
    "bm25_query",
    "open_backend",
    "reindex_backend",
    "rrf_max",
]


def open_backend(
    data_dir: str | os.PathLike[str] | None,
    collection: str,
    *,
    dimension: int,
    model_id: str,
    schema: CollectionSchema = MEMORY_SCHEMA,
    url: str | None = None,
    api_key: str | None = None,
    client: Any = None,
    **kwargs: Any,
) -> VectorBackend:
    """The backend for one collection: a server one with ``url``/``client``, else Edge.

    The Edge shard lives in ``data_dir / "qdrant" / collection``; on a server the
    collection is named ``collection``. ``kwargs`` go to the backend's constructor.
    """
    if url is not None or client is not None:
        return QdrantServerBackend(
            url, api_key, client=client, collection=collection,
            dimension=dimension, model_id=model_id, schema=schema, **kwargs,
        )
    if data_dir is None:
        raise ValueError("open_backend() needs data_dir for the embedded Edge shard, or url=")
    return EdgeBackend(
        Path(data_dir) / "qdrant" / collection, dimension, model_id, schema=schema, **kwargs
    )
