"""Vector backends: an embedded Qdrant Edge shard by default, a Qdrant server by URL.

Both are :class:`~.base.BaseBackend` over the same collection layout, so a deployment
moves from one to the other without code changes: the index is rebuilt from the relational
store. :func:`open_backend` picks one.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .base import BaseBackend
from .bm25 import bm25_document, bm25_query
from .edge import EdgeBackend, open_shared
from .records import (
    DENSE_VECTOR,
    MODEL_FIELD,
    SPARSE_VECTOR,
    BackendInfo,
    CollectionSchema,
    PointData,
    Range,
    Record,
    ScoredRecord,
    Where,
)
from .reindex import reindex_backend
from .server import QdrantServerBackend

__all__ = [
    "DENSE_VECTOR",
    "MODEL_FIELD",
    "SPARSE_VECTOR",
    "BackendInfo",
    "BaseBackend",
    "CollectionSchema",
    "EdgeBackend",
    "PointData",
    "QdrantServerBackend",
    "Range",
    "Record",
    "ScoredRecord",
    "Where",
    "bm25_document",
    "bm25_query",
    "open_backend",
    "open_shared",
    "reindex_backend",
]


def open_backend(
    data_dir: str | os.PathLike[str] | None,
    collection: str,
    *,
    dimension: int,
    model_id: str,
    schema: CollectionSchema | None = None,
    url: str | None = None,
    api_key: str | None = None,
    client: Any = None,
    **kwargs: Any,
) -> BaseBackend:
    """The backend for one collection: a server one with ``url``/``client``, else the
    process's shared Edge shard in ``data_dir / "qdrant" / collection``."""
    if url is not None or client is not None:
        return QdrantServerBackend(
            url, api_key, client=client, collection=collection,
            dimension=dimension, model_id=model_id, schema=schema, **kwargs,
        )
    if data_dir is None:
        raise ValueError("open_backend() needs data_dir for the embedded Edge shard, or url=")
    return open_shared(Path(data_dir) / "qdrant" / collection, dimension, model_id, schema=schema, **kwargs)
