"""The files and settings of a Qdrant Edge shard: its meta file, its configuration, its
payload indexes, filters and point ids (what :class:`~.edge.EdgeBackend` opens and talks to).

Layout and tuning are described in :mod:`.edge`.
"""

from __future__ import annotations

import functools
import json
import os
import re
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import VectorStoreError
from .filters import FilterBuilder, iso
from .records import SPARSE_VECTOR, CollectionSchema, Range, new_meta

__all__ = [
    "META_FILE",
    "SHARD_DIR",
    "EdgeFilters",
    "edge_module",
    "ensure_indexes",
    "load_meta",
    "open_shard",
    "point_id",
    "rescore_params",
    "save_meta",
    "shard_config",
]

META_FILE = "collection.json"
SHARD_DIR = "shard"
META_FORMAT = 1
# Per-tenant graph degree (Qdrant's default m), when tenant graphs are on.
_PAYLOAD_M = 16
_EF_CONSTRUCT = 100
# Scalar quantization's clipping quantile (Qdrant's recommended 0.99), and how many times
# the points asked for a quantized search rescores.
_QUANTILE = 0.99
_OVERSAMPLING = 2.0


def edge_module() -> Any:
    """The ``qdrant_edge`` module, imported on first use (a clear error if it is missing)."""
    try:
        import qdrant_edge
    except ImportError as exc:  # pragma: no cover - a dependency
        raise VectorStoreError(
            f"qdrant-edge-py is not installed ({exc}): pip install qdrant-edge-py"
        ) from exc
    return qdrant_edge


def load_meta(path: Path, model_id: str, dimension: int) -> dict[str, Any]:
    """The shard's meta file (which embedding model built it), written first for a new one."""
    meta_path = path / META_FILE
    shard_path = path / SHARD_DIR
    if not meta_path.exists():
        if shard_path.exists() and any(shard_path.iterdir()):
            raise VectorStoreError(
                f"{shard_path} holds a Qdrant Edge shard but {meta_path} is missing, so "
                "the embedding model of its vectors is unknown; restore the file, or move "
                "the directory away: the index is rebuilt from memory.db"
            )
        meta = new_meta(model_id, dimension)
        # Written before the shard exists: a crash in between leaves a recoverable state.
        save_meta(path, meta)
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
            "the shard beside it: restore it, or move the directory away: the index is "
            "rebuilt from memory.db"
        ) from exc
    return meta


def save_meta(path: Path, meta: dict[str, Any]) -> None:
    """Write the meta file atomically (a crash leaves the old one or the new one)."""
    tmp = path / f".{META_FILE}.{os.getpid()}.tmp"
    try:
        tmp.write_text(json.dumps(meta, indent=2, sort_keys=True), "utf-8")
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path / META_FILE)
    except OSError as exc:
        raise VectorStoreError(f"cannot write {path / META_FILE}: {exc}") from exc


def shard_config(
    meta: dict[str, Any], *, hnsw_m: int, full_scan_kb: int, tenant_graphs: bool, search_threads: int, quantize: bool
) -> Any:
    """The shard's ``EdgeConfig`` (see :class:`~.edge.EdgeBackend` for each setting)."""
    qe = edge_module()
    return qe.EdgeConfig(
        hnsw_config=qe.HnswIndexConfig(
            m=hnsw_m,
            ef_construct=_EF_CONSTRUCT,
            full_scan_threshold=full_scan_kb,
            payload_m=_PAYLOAD_M if tenant_graphs else 0,
        ),
        max_search_threads=search_threads,
        # Every candidate's filter fields are read from the payload: cold (on-disk)
        # payload made a top-5 ~60% slower.
        payload_memory=qe.Memory.Cached,
        # Every dense vector the shard holds: two while a reindex is under way (the live
        # one and its successor), and a shard loads only with the config it was written in.
        vectors={
            name: qe.EdgeVectorParams(size=int(size), distance=qe.Distance.Cosine)
            for name, size in (meta.get("vectors") or {meta["vector"]: meta["dimension"]}).items()
        },
        sparse_vectors={SPARSE_VECTOR: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
        quantization_config=(
            qe.ScalarQuantizationConfig(qe.ScalarType.Int8, quantile=_QUANTILE, memory=qe.Memory.Cached)
            if quantize else None
        ),
    )


def open_shard(path: Path, config: Any) -> tuple[Any, bool]:
    """The shard under ``path``, loaded or created; and whether it was created."""
    qe = edge_module()
    shard_path = path / SHARD_DIR
    try:
        if shard_path.exists() and any(shard_path.iterdir()):
            return qe.EdgeShard.load(str(shard_path), config), False
        return qe.EdgeShard.create(str(shard_path), config), True
    except Exception as exc:
        raise VectorStoreError(f"cannot open the Qdrant Edge shard {shard_path}: {exc}") from exc


def ensure_indexes(shard: Any, schema: CollectionSchema, update: Callable[[Any], None]) -> None:
    """Create the payload indexes of ``schema`` the shard does not have yet."""
    qe = edge_module()
    existing = set(shard.info().payload_schema)
    kinds = {
        "keyword": qe.PayloadSchemaType.Keyword,
        "float": qe.PayloadSchemaType.Float,
        "integer": qe.PayloadSchemaType.Integer,
        "datetime": qe.PayloadSchemaType.Datetime,
    }
    for name, kind in schema.indexes():
        if name in existing:
            continue
        index = qe.KeywordIndexParams(is_tenant=True) if kind == "tenant" else kinds[kind]
        update(qe.UpdateOperation.create_field_index(name, index))


class EdgeFilters(FilterBuilder):
    """A :class:`~.records.Where` as Edge's filter objects."""

    def match(self, key: str, value: str | int | bool) -> Any:
        qe = edge_module()
        return qe.FieldCondition(key, match=qe.MatchValue(value))

    def match_any(self, key: str, values: list[Any]) -> Any:
        qe = edge_module()
        return qe.FieldCondition(key, match=qe.MatchAny(values))

    def range(self, key: str, bounds: Range) -> Any:
        qe = edge_module()
        values = bounds.values()
        if bounds.is_datetime():
            rng = qe.RangeDateTime(**{k: iso(v) if v is not None else None for k, v in values.items()})  # type: ignore[arg-type]
        else:
            rng = qe.RangeFloat(**{k: float(v) if v is not None else None for k, v in values.items()})  # type: ignore[arg-type]
        return qe.FieldCondition(key, range=rng)

    def has_id(self, ids: list[str]) -> Any:
        return edge_module().HasIdCondition({point_id(i) for i in ids})

    def conjunction(self, must: list[Any], must_not: list[Any]) -> Any:
        return edge_module().Filter(must=must or None, must_not=must_not or None)


@functools.cache
def rescore_params() -> Any:
    """Search parameters that rescore a quantized search with the exact vectors."""
    qe = edge_module()
    # Twice the points asked for are chosen by their int8 copy and rescored exactly: with
    # the limit alone, recall@10 against an exact search was 0.93 (a 30k-point graph) and
    # 0.96 (2k-point scans); oversampled, 0.998 and 1.0.
    return qe.SearchParams(quantization=qe.QuantizationSearchParams(rescore=True, oversampling=_OVERSAMPLING))


#: A UUID already in the form ``str(uuid.UUID(...))`` gives (every id this package makes).
_CANONICAL = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def point_id(value: str) -> str:
    """``value`` as the UUID string Edge takes for a point id."""
    # A recall reads a few hundred points by id: the canonical form passes as it is (a
    # regex is several times cheaper than parsing it into a UUID and back).
    if isinstance(value, str) and _CANONICAL.fullmatch(value):
        return value
    # Edge takes UUIDs (or ints); say so rather than pass on its parse error.
    try:
        return str(uuid.UUID(str(value)))
    except ValueError:
        raise VectorStoreError(f"point ids are UUID strings, got {value!r}") from None
