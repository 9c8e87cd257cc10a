"""Moving a directory deployment to PostgreSQL and a Qdrant server (``tiered-memory migrate``).

Three steps, each safe to run again after a stop (it continues, and writes nothing twice):

1. every record, table by table, from ``memory.db`` into the database
   (:func:`~langchain_tiered_memory.storage.copying.copy_tables`: ids kept, ``ON CONFLICT DO
   NOTHING``); pending jobs come along and run on the new deployment's workers;
2. LangGraph's checkpoints, read with ``SqliteSaver`` and written with ``PostgresSaver``
   (their own code on both sides; the writes are upserts);
3. the recall index: the vectors are not copied but made again from the records' text on
   the Qdrant server, as after any index loss.

Then every count is compared, source against target. Stop the application first: what it
writes to the directory during the copy may be missed (run the command again to pick it up).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import MemoryConfig
from ..errors import DataDirError
from ..storage import DB_FILENAME, Storage
from ..storage.copying import claim_target, copy_tables, row_counts

#: ``progress(step, total, done)``: a step's total units (once, ``done=0``), then each advance.
Progress = Callable[[str, int, int], None]


@dataclass
class MigrationReport:
    """What a migration found at the end: each count in the source and in the target."""

    #: ``{name: (source, target)}`` for every table, the checkpoints and the index.
    counts: dict[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def mismatches(self) -> dict[str, tuple[int, int]]:
        """The counts that differ."""
        return {k: v for k, v in self.counts.items() if v[0] != v[1]}

    @property
    def ok(self) -> bool:
        """Whether every count matches."""
        return not self.mismatches


def migrate(
    data_dir: str | Path,
    database_url: str,
    *,
    qdrant_url: str | None = None,
    qdrant_api_key: str | None = None,
    qdrant_client: Any = None,
    embeddings: Any = None,
    progress: Progress | None = None,
) -> MigrationReport:
    """Copy the memory in ``data_dir`` to ``database_url`` and a Qdrant server (see the module
    docs); returns the counts, which the caller must check (:attr:`MigrationReport.ok`).

    Raises:
        DataDirError: ``data_dir`` holds no memory.
        InvalidInputError: the database already holds another memory.
        StorageError, VectorStoreError: either side cannot be used.
    """
    from ..memory import TieredMemory

    path = Path(data_dir)
    if not (path / DB_FILENAME).is_file():
        raise DataDirError(f"no memory at {path} (no {DB_FILENAME}); pass the directory to migrate with --data-dir")
    step = progress or (lambda name, total, done: None)
    source = Storage.open(path)
    try:
        # "external": this process copies; jobs carried over wait for the deployment's workers.
        target = TieredMemory(
            config=MemoryConfig(job_mode="external"), embeddings=embeddings, database_url=database_url,
            qdrant_url=qdrant_url, qdrant_api_key=qdrant_api_key, qdrant_client=qdrant_client,
        )
        try:
            report = MigrationReport()
            _copy_records(source, target.storage, step, report)
            _copy_checkpoints(source, target, step, report)
            _index(target, step, report)
            return report
        finally:
            target.close()
    finally:
        source.close()


def _copy_records(source: Storage, target: Storage, step: Progress, report: MigrationReport) -> None:
    claim_target(target.db, source.location)
    before = row_counts(source.db)
    step("records", sum(before.values()), 0)
    copy_tables(source.db, target.db, lambda table, n: step("records", 0, n))
    after = row_counts(target.db)
    report.counts.update({table: (n, after[table]) for table, n in before.items()})


def _copy_checkpoints(source: Storage, target: Any, step: Progress, report: MigrationReport) -> None:
    expected = source.checkpoints.counts()
    if expected["checkpoints"]:
        from langgraph.checkpoint.sqlite import SqliteSaver

        conn = source.connect()
        try:
            reader, writer = SqliteSaver(conn), target.checkpointer
            step("checkpoints", expected["checkpoints"], 0)
            for item in reader.list(None):
                configurable = dict(item.config["configurable"])
                # put() takes the parent's id from the config, and the new id from the checkpoint.
                parent = {k: v for k, v in configurable.items() if k != "checkpoint_id"}
                if item.parent_config is not None:
                    parent["checkpoint_id"] = item.parent_config["configurable"]["checkpoint_id"]
                saved = writer.put({"configurable": parent}, item.checkpoint, item.metadata,
                                   item.checkpoint["channel_versions"])
                by_task: dict[str, list[tuple[str, Any]]] = {}
                for task_id, channel, value in item.pending_writes or ():
                    by_task.setdefault(task_id, []).append((channel, value))
                for task_id, writes in by_task.items():
                    writer.put_writes(saved, writes, task_id)
                step("checkpoints", 0, 1)
        finally:
            with contextlib.suppress(Exception):
                conn.close()
    got = target.storage.checkpoints.counts()
    report.counts.update({name: (n, got[name]) for name, n in expected.items()})


def _index(target: Any, step: Progress, report: MigrationReport) -> None:
    index, storage = target._index, target.storage
    step("vectors", storage.unindexed_count(), 0)
    while done := index.sync(limit=256):
        step("vectors", 0, done)
    records = storage.memories.count() + storage.episodes.count() + storage.units.count()
    indexed = storage.memories.indexed_count() + storage.episodes.indexed_count() + storage.units.indexed_count()
    report.counts["indexed records"] = (records, indexed)
    report.counts["vector points"] = (records, index.count())
