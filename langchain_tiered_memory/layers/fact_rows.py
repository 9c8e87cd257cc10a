"""A stored memory row as the API's :class:`MemoryEntry` and as the recall index's unit."""

from __future__ import annotations

from datetime import datetime

from ..entries import MemoryEntry
from ..storage.rows import MemoryRow, Unit
from ..vocabulary import DISCLOSURES

__all__ = ["entry_of", "unit"]


def entry_of(row: MemoryRow) -> MemoryEntry:
    """The :class:`MemoryEntry` of a stored row (the value type knows nothing of storage)."""
    return MemoryEntry(
        id=row.id, content=row.content, memory_type=row.memory_type,  # type: ignore[arg-type]
        user_id=row.user_id, session_id=row.session_id, importance=row.importance,
        boost=min(row.boost, 1.0), created_at=datetime.fromisoformat(row.created_at),
        updated_at=datetime.fromisoformat(row.updated_at),
        last_accessed=datetime.fromisoformat(row.last_accessed), access_count=row.access_count,
        metadata=row.metadata, merged_from=row.merged_from,
        source_message_ids=row.source_messages, valid_from=datetime.fromisoformat(row.valid_from),
        valid_to=datetime.fromisoformat(row.valid_to) if row.valid_to else None,
        superseded_by=row.superseded_by,
    )


def unit(row: MemoryRow) -> Unit:
    """The index unit of a memory."""
    return Unit(
        id=row.id, user_id=row.user_id, grain="fact", text=row.content, at=row.valid_from,
        fields={"memory_type": row.memory_type, "importance": row.importance,
                "current": 1 if row.valid_to is None else 0,
                # A statement of the user's state, goal, value or a cause (recall/features.py),
                # found by the probe of what discloses (recall/layer.py) as such turns are.
                **({"implicit": 1, "discloses": 1.0} if row.metadata.get("about") in DISCLOSURES else {})},
    )
