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
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..config import MemoryConfig
from ..errors import ConfigError, DataDirError
from ..index.recall_index import RecallIndex
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
    path = Path(data_dir)
    if not (path / DB_FILENAME).is_file():
        raise DataDirError(f"no memory at {path} (no {DB_FILENAME}); pass the directory to migrate with --data-dir")
    step = progress or (lambda name, total, done: None)
    source = Storage.open(path)
    try:
        target = _Target(database_url, qdrant_url, qdrant_api_key, qdrant_client, embeddings)
        try:
            report = MigrationReport()
            _copy_records(source, target.storage, step, report)
            _copy_checkpoints(source, target.storage, step, report)
            _index(target, step, report)
            return report
        finally:
            target.close()
    finally:
        source.close()


class _Target:
    """The deployment copied to: the database, and the recall index on the Qdrant server with
    the record families it indexes (as a memory opens them, without its layers' reading side)."""

    def __init__(
        self, database_url: str, qdrant_url: str | None, qdrant_api_key: str | None, qdrant_client: Any,
        embeddings: Any,
    ) -> None:
        from ..embeddings import CachedQueryEmbeddings, default_embeddings
        from ..layers.episodes import EpisodeLayer
        from ..layers.facts import FactLayer
        from ..recall.dialogue import DialogueLayer
        from ..tokens import make_counter

        config = MemoryConfig()
        if qdrant_url is None and qdrant_client is None:
            raise ConfigError("migrate needs qdrant_url= (or qdrant_client=): the vectors go to a Qdrant server")
        self.storage = Storage.open_url(database_url, decay=config.decay)
        try:
            model = CachedQueryEmbeddings(embeddings if embeddings is not None else default_embeddings())
            self.index = RecallIndex(None, self.storage, lambda: model, url=qdrant_url, api_key=qdrant_api_key,
                                     client=qdrant_client)
            now, counter = (lambda: datetime.now(timezone.utc)), make_counter(None)
            self.index.add_source(FactLayer(self.storage, self.index, config, clock=now, counter=counter,
                                            evict=lambda user_id, ids: 0))
            self.index.add_source(EpisodeLayer(self.storage, self.index, counter, max_tokens=config.episodes_max_tokens,
                                               k=config.episodes_k, threshold=config.score_threshold))
            self.index.add_source(DialogueLayer(self.storage))
        except BaseException:
            self.storage.close()
            raise

    def close(self) -> None:
        try:
            self.index.close()
        finally:
            self.storage.close()


def _copy_records(source: Storage, target: Storage, step: Progress, report: MigrationReport) -> None:
    claim_target(target.db, source.location, str(source.id_namespace()))
    before = row_counts(source.db)
    step("records", sum(before.values()), 0)
    copy_tables(source.db, target.db, lambda table, n: step("records", 0, n))
    after = row_counts(target.db)
    report.counts.update({table: (n, after[table]) for table, n in before.items()})


def _copy_checkpoints(source: Storage, target: Storage, step: Progress, report: MigrationReport) -> None:
    expected = source.checkpoints.counts()
    if expected["checkpoints"]:
        from langgraph.checkpoint.sqlite import SqliteSaver

        from ..storage import PostgresDatabase
        from ..storage.postgres import postgres_missing

        try:  # the [postgres] extra
            from langgraph.checkpoint.postgres import PostgresSaver
        except ImportError as exc:
            raise ConfigError(postgres_missing(exc)) from exc

        conn = source.connect()
        try:
            assert isinstance(target.db, PostgresDatabase)
            # LangGraph's own savers on both sides (the writer on the database's saver pool,
            # closed with it); setup() creates LangGraph's tables by its own migrations.
            reader, writer = SqliteSaver(conn), PostgresSaver(target.db.saver_pool())  # type: ignore[arg-type]
            writer.setup()
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
    got = target.checkpoints.counts()
    report.counts.update({name: (n, got[name]) for name, n in expected.items()})


def _index(target: _Target, step: Progress, report: MigrationReport) -> None:
    index, storage = target.index, target.storage
    step("vectors", storage.unindexed_count(), 0)
    while done := index.sync(limit=256):
        step("vectors", 0, done)
    records = storage.memories.count() + storage.episodes.count() + storage.units.count()
    indexed = storage.memories.indexed_count() + storage.episodes.indexed_count() + storage.units.indexed_count()
    report.counts["indexed records"] = (records, indexed)
    report.counts["vector points"] = (records, index.count())
