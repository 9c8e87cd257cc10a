"""Data written by earlier versions, brought to today's layout.

- A directory of version 0.1 kept long-term memories only in Qdrant Edge shards
  (``qdrant/memories``, text and all, and ``qdrant/episodes``). On open, the memories are
  read out of the old shard into the database (their owner now), the store addresses they
  carried in their metadata become store items, and the old shards are overwritten and
  removed: the recall index is rebuilt from the database.
- An export file of format 1 carried the same metadata keys; :func:`prepare_import` turns
  either format into the rows the database takes.

This module is the one place that knows the old layout.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ..layers.entities import name_key
from ..layers.fact_rows import entry_of
from ..entries import MemoryEntry
from ..errors import InvalidInputError, ShardLockedError, VectorStoreError
from ..storage.message_format import read_message
from ..storage.rows import EpisodeRow, MemoryRow

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings
    from langchain_core.messages import BaseMessage

    from ..storage import Storage
    from ..storage.rows import NewMessage

logger = logging.getLogger("langchain_tiered_memory")

#: The 0.1 metadata keys of a memory put through the LangGraph store.
_STORE_VALUE = "store_value"
_STORE_SUBSPACE = "store_namespace"
_STORE_ITEM = "store_item"
_LEGACY_COLLECTIONS = ("memories", "episodes")


def upgrade_directory(storage: Storage, data_dir: Path, embeddings: Callable[[], Embeddings]) -> int:
    """Move a 0.1 directory's memories out of ``qdrant/memories`` into the database and remove
    the old shards; returns how many memories moved (0 for a directory of today's layout)."""
    old = data_dir / "qdrant" / "memories"
    if not (old / "shard").is_dir():
        _remove_legacy(data_dir, only_empty=True)
        return 0
    from ..backends.edge import EdgeBackend

    try:
        meta = json.loads((old / "collection.json").read_text("utf-8"))
        backend = EdgeBackend(old, int(meta["dimension"]), str(meta["model_id"]), optimize_after=0)
    except ShardLockedError as exc:
        raise ShardLockedError(
            f"{data_dir} was written by langchain-tiered-memory 0.1, and its memories must move into "
            f"memory.db before it can be used; a process still has the old shard open ({exc}). "
            "Close it, then open the directory again."
        ) from None
    except (OSError, ValueError, KeyError) as exc:
        raise VectorStoreError(
            f"{old} (a 0.1 memory shard) is unreadable ({exc}); restore it from a backup, or move it "
            "away to open the directory without its long-term memories"
        ) from exc
    try:
        records, offset = [], None
        while True:
            page, offset = backend.scroll(_everything(), limit=1_000, offset=offset)
            records += page
            if offset is None:
                break
    finally:
        backend.close()
    rows, items = [], []
    for record in records:
        row, item = _legacy_row(record.id, record.payload)
        rows.append(row)
        if item is not None:
            items.append(item)
    storage.results.add_memories(rows)
    for item in items:
        storage.store_items.put(
            item["namespace"], item["key"], item["value"], memory_id=item["memory_id"], now=item["at"]
        )
    logger.warning(
        "moved %d long-term memories of %s out of its 0.1 vector shard into memory.db; the "
        "vector index is rebuilt from it", len(rows), data_dir,
    )
    _remove_legacy(data_dir)
    return len(rows)


def _everything() -> Any:
    from ..backends.records import Where

    # Every 0.1 point carried a user_id: "no point lacks the stamp field" is every point.
    return Where(none_of={"__no_such_field__": ["x"]})


def _legacy_row(point_id: str, payload: Mapping[str, Any]) -> tuple[MemoryRow, dict[str, Any] | None]:
    metadata = dict(payload.get("metadata") or {})
    value = metadata.pop(_STORE_VALUE, None)
    sub = metadata.pop(_STORE_SUBSPACE, None)
    info = metadata.pop(_STORE_ITEM, None)
    created = str(payload.get("created_at") or datetime.now(timezone.utc).isoformat())
    accessed = str(payload.get("last_accessed") or created)
    user = str(payload["user_id"])
    row = MemoryRow(
        id=str(uuid.UUID(point_id)), user_id=user, content=str(payload.get("content") or ""),
        memory_type=str(payload.get("memory_type") or "fact"),
        importance=min(1.0, max(0.0, float(payload.get("importance", 0.5)))), metadata=metadata,
        session_id=payload.get("session_id"), source_messages=[], created_at=created,
        updated_at=accessed, last_accessed=accessed, access_count=int(payload.get("access_count") or 0),
        boost=0.0, merged_from=[str(m) for m in payload.get("merged_from") or []], valid_from=created,
        mergeable=not isinstance(value, dict),
    )
    item = None
    if isinstance(value, dict):
        item = {
            "namespace": ("memories", user, *[str(s) for s in (sub or [])]),
            "key": str((info or {}).get("key", row.id)), "value": value, "memory_id": row.id,
            "at": str((info or {}).get("updated_at", created)),
        }
    return row, item


def _remove_legacy(data_dir: Path, *, only_empty: bool = False) -> None:
    """Overwrite and delete the 0.1 shards (their files held memory text)."""
    for name in _LEGACY_COLLECTIONS:
        path = data_dir / "qdrant" / name
        if not path.is_dir() or (only_empty and name == "memories"):
            continue
        if only_empty and not (path / "collection.json").exists():
            continue
        for root, _, files in os.walk(path):
            for file in files:
                _overwrite(Path(root) / file)
        shutil.rmtree(path, ignore_errors=True)


def _overwrite(path: Path) -> None:
    try:
        size = path.stat().st_size
        with open(path, "r+b") as fh:
            while size > 0:
                chunk = min(size, 1 << 20)
                fh.write(b"\0" * chunk)
                size -= chunk
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:  # removed anyway below
        logger.debug("could not overwrite %s: %s", path, exc)


# --- export and import ------------------------------------------------------------------------


def memory_record(row: MemoryRow) -> dict[str, Any]:
    """A memory as an export writes it: :class:`MemoryEntry`'s fields (no user id), and
    its ``subject`` and ``mergeable``."""
    entry = entry_of(row)
    return {**entry.model_dump(mode="json", exclude={"user_id"}), "subject": row.subject,
            "mergeable": row.mergeable}



def prepare_import(
    user_id: str,
    data: Mapping[str, Sequence[Mapping[str, Any]]],
    serialise: Callable[[BaseMessage], NewMessage],
    embed_value: Callable[[Mapping[str, Any]], dict[str, list[float]] | None],
) -> dict[str, Sequence[Mapping[str, Any]]]:
    """The rows of an export (format 1 or 2) as the database imports them.

    Messages are serialised and counted again, memories checked field by field (a format 1
    memory's store address becomes a store item), entities get their matching key, and
    store items that had vectors are embedded again with this memory's embeddings.
    Raises :class:`InvalidInputError` for anything malformed, before anything is written.
    """
    try:
        messages = []
        for m in data.get("messages", ()):
            new = serialise(read_message(m["message"]))
            messages.append({**m, "message_id": new.message_id, "type": new.type,
                             "tool_calls": new.tool_calls, "data": new.data, "tokens": new.tokens})
        memories, extra_items = [], []
        for m in data.get("memories", ()):
            fields = {k: v for k, v in m.items() if k not in ("subject", "mergeable")}
            entry = MemoryEntry.model_validate({**fields, "user_id": user_id})
            row, item = _legacy_row(entry.id, {**entry.model_dump(mode="json"), "user_id": user_id})
            fields = {k: v for k, v in row.__dict__.items() if k != "user_id"}
            fields.update(
                boost=entry.boost, updated_at=(entry.updated_at or entry.created_at).isoformat(),
                source_messages=list(entry.source_message_ids),
                valid_from=(entry.valid_from or entry.created_at).isoformat(),
                valid_to=entry.valid_to.isoformat() if entry.valid_to else None,
                superseded_by=entry.superseded_by, subject=m.get("subject"),
                mergeable=bool(m.get("mergeable", row.mergeable)),
            )
            memories.append(fields)
            if item is not None:
                extra_items.append({"namespace": list(item["namespace"]), "key": item["key"], "value": item["value"],
                                    "memory_id": item["memory_id"], "created_at": item["at"], "updated_at": item["at"],
                                    "vectors": None})
        episodes = [dict(EpisodeRow(user_id=user_id, **e).__dict__) for e in data.get("episodes", ())]
        for e in episodes:
            e.pop("user_id")
        entities = [{**e, "name_key": name_key(e["name"])} for e in data.get("entities", ())]
        items = [
            {**i, "vectors": embed_value(dict(i["value"])) if i.get("indexed") and not i.get("memory_id") else None}
            for i in data.get("store_items", ())
        ] + extra_items
    except (ValidationError, KeyError, TypeError, ValueError, AttributeError, RecursionError) as exc:
        raise InvalidInputError(f"the data to import is malformed: {exc}") from None
    return {**{k: list(v) for k, v in data.items()}, "messages": messages, "memories": memories,
            "episodes": episodes, "entities": entities, "store_items": items}
