"""The SQLite schema: one step per version, each run once in the transaction that bumps
``PRAGMA user_version``, so a crash mid-migration leaves the old version intact.

Tables (what owns what is in ``../shared/DESIGN.md``): ``threads`` and ``messages`` (the log),
``summaries``, ``entities`` with ``entity_attributes`` and the FTS5 index ``entities_fts``,
``jobs`` (the journal), ``episodes``, ``store_items`` (LangGraph store), ``memories`` with
``memory_aliases`` (ids merged into a memory), ``units`` (the conversation's recall units),
``unit_sentences`` (the vectors of a turn's sentences), ``forget_ops`` (forgets whose
index deletions are pending), ``job_usage`` (what jobs' LLM calls cost) and ``meta``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the steps are given a sqlite_utils.Database; importing it loads numpy
    import sqlite_utils


def _migrate_to_1(db: sqlite_utils.Database) -> None:
    db.table("meta").create({"key": str, "value": str}, pk="key")
    # AUTOINCREMENT, which sqlite-utils cannot declare: a thread forgotten and started again
    # gets a new key, so an in-process cache keyed by it never takes the new for the old.
    db.execute(
        "CREATE TABLE threads ("
        "id INTEGER PRIMARY KEY AUTOINCREMENT, "
        "thread_id TEXT NOT NULL, "
        "user_id TEXT NOT NULL, "
        "created_at TEXT NOT NULL, "
        "updated_at TEXT NOT NULL, "
        "next_seq INTEGER NOT NULL DEFAULT 0, "
        "generation INTEGER NOT NULL DEFAULT 0, "
        "evicted_through INTEGER NOT NULL DEFAULT -1)"
    )
    db.table("threads").create_index(["thread_id"], unique=True)
    db.table("threads").create_index(["user_id"])
    db.table("messages").create(
        {
            "id": int, "thread_key": int, "user_id": str, "seq": int, "message_id": str,
            "type": str, "tool_calls": int, "data": str, "tokens": int, "counter": str,
            "created_at": str,
        },
        pk="id",
        not_null={
            "thread_key", "user_id", "seq", "message_id", "type", "tool_calls", "data", "tokens",
            "counter", "created_at",
        },
        foreign_keys=[("thread_key", "threads", "id")],
    )
    db.table("messages").create_index(["thread_key", "seq"], unique=True)
    db.table("messages").create_index(["thread_key", "message_id"], unique=True)
    db.table("messages").create_index(["user_id"])


def _migrate_to_2(db: sqlite_utils.Database) -> None:
    """Summaries, entity profiles with attribute history, the job journal and episodes."""
    # Watermarks of the work done on a thread's log: summarised (left the window and folded
    # into the summary) and extracted (entities and memories taken from it).
    db.table("threads").add_column("summarized_through", int, not_null_default=-1)
    db.table("threads").add_column("extracted_through", int, not_null_default=-1)
    db.table("summaries").create(
        {
            "thread_key": int, "user_id": str, "text": str, "tokens": int, "first_seq": int,
            "last_seq": int, "updated_at": str,
        },
        pk="thread_key",
        not_null={"user_id", "text", "tokens", "first_seq", "last_seq", "updated_at"},
        foreign_keys=[("thread_key", "threads", "id")],
    )
    db.table("summaries").create_index(["user_id"])
    db.table("entities").create(
        {
            "id": int, "user_id": str, "name": str, "name_key": str, "type": str,
            "search_text": str, "source": str, "created_at": str, "updated_at": str,
        },
        pk="id",
        not_null={"user_id", "name", "name_key", "type", "search_text", "created_at", "updated_at"},
    )
    db.table("entities").create_index(["user_id", "name_key"], unique=True)
    db.table("entities").create_index(["user_id", "updated_at"])
    # Triggers keep the index in step with every write, inside the same transaction.
    db.table("entities").enable_fts(["name", "search_text"], create_triggers=True, tokenize="unicode61")
    db.table("entity_attributes").create(
        {
            "id": int, "entity_id": int, "key": str, "value": str, "learned_at": str,
            "source": str, "source_message": str, "superseded_at": str,
        },
        pk="id",
        not_null={"entity_id", "key", "value", "learned_at"},
        foreign_keys=[("entity_id", "entities", "id")],
    )
    db.table("entity_attributes").create_index(["entity_id", "key"])
    db.table("jobs").create(
        {
            "id": int, "key": str, "kind": str, "user_id": str, "thread_key": int, "payload": str,
            "result": str, "status": str, "attempts": int, "next_run_at": float,
            "lease_until": float, "leased_by": str, "last_error": str, "created_at": str,
            "updated_at": str,
        },
        pk="id",
        not_null={"key", "kind", "user_id", "payload", "status", "attempts", "next_run_at", "created_at", "updated_at"},
        defaults={"attempts": 0, "status": "pending"},
    )
    db.table("jobs").create_index(["key"], unique=True)
    db.table("jobs").create_index(["status", "next_run_at"])
    db.table("jobs").create_index(["user_id"])
    db.table("episodes").create(
        {
            "id": str, "user_id": str, "thread_id": str, "started_at": str, "ended_at": str,
            "summary": str, "decisions": str, "outcome": str, "topics": str, "first_seq": int,
            "last_seq": int, "created_at": str,
        },
        pk="id",
        not_null={"user_id", "thread_id", "started_at", "ended_at", "summary", "decisions", "outcome", "topics", "first_seq", "last_seq", "created_at"},
    )
    db.table("episodes").create_index(["thread_id", "last_seq"], unique=True)
    db.table("episodes").create_index(["user_id", "ended_at"])


def _migrate_to_3(db: sqlite_utils.Database) -> None:
    """Generic LangGraph store items (namespaces other than a user's memories)."""
    # AUTOINCREMENT: insertion order is the order InMemoryStore lists items in.
    db.execute(
        "CREATE TABLE store_items ("
        "id INTEGER PRIMARY KEY AUTOINCREMENT, "
        "ns_path TEXT NOT NULL, "
        "namespace TEXT NOT NULL, "
        "key TEXT NOT NULL, "
        "value TEXT NOT NULL, "
        "vectors TEXT, "
        "created_at TEXT NOT NULL, "
        "updated_at TEXT NOT NULL, "
        "ttl_minutes REAL, "
        "expires_at REAL)"
    )
    db.table("store_items").create_index(["ns_path", "key"], unique=True)
    db.table("store_items").create_index(["expires_at"])


def _migrate_to_4(db: sqlite_utils.Database) -> None:
    """Long-term memories owned by the database (the vector index only points at them),
    the journal of forgets, the store addresses of memories, and what each job needs."""
    db.execute(
        "CREATE TABLE memories ("
        "id TEXT PRIMARY KEY, "
        "user_id TEXT NOT NULL, "
        "content TEXT NOT NULL, "
        "memory_type TEXT NOT NULL, "
        "importance REAL NOT NULL, "
        "metadata TEXT NOT NULL DEFAULT '{}', "
        "session_id TEXT, "
        "source_messages TEXT NOT NULL DEFAULT '[]', "
        "created_at TEXT NOT NULL, "
        "updated_at TEXT NOT NULL, "
        "last_accessed TEXT NOT NULL, "
        "access_count INTEGER NOT NULL DEFAULT 0, "
        "boost REAL NOT NULL DEFAULT 0, "
        "valid_from TEXT NOT NULL, "
        "valid_to TEXT, "
        "superseded_by TEXT, "
        "subject TEXT, "
        "mergeable INTEGER NOT NULL DEFAULT 1, "
        # ln(weight) + days × −ln(decay): the order of effective importance at any time, so
        # the capacity eviction is an index scan (see storage/memories.py).
        "keep_score REAL NOT NULL, "
        # The recall index's point: 0 never written, 1 written, 2 to be rewritten.
        "indexed INTEGER NOT NULL DEFAULT 0"
        ") WITHOUT ROWID"
    )
    db.execute("CREATE INDEX memories_user_created ON memories (user_id, created_at)")
    db.execute("CREATE INDEX memories_user_keep ON memories (user_id, keep_score)")
    db.execute("CREATE INDEX memories_session ON memories (session_id)")
    db.execute("CREATE INDEX memories_subject ON memories (user_id, subject) WHERE subject IS NOT NULL")
    db.execute("CREATE INDEX memories_unindexed ON memories (indexed) WHERE indexed != 1")
    db.execute(
        "CREATE TABLE memory_aliases ("
        "alias TEXT PRIMARY KEY, memory_id TEXT NOT NULL, user_id TEXT NOT NULL, "
        "created_at TEXT NOT NULL) WITHOUT ROWID"
    )
    db.execute("CREATE INDEX memory_aliases_memory ON memory_aliases (memory_id)")
    db.execute(
        "CREATE TABLE forget_ops ("
        "id INTEGER PRIMARY KEY AUTOINCREMENT, scope TEXT NOT NULL, point_ids TEXT NOT NULL, "
        "created_at TEXT NOT NULL)"
    )
    db.execute("ALTER TABLE store_items ADD COLUMN memory_id TEXT")
    db.execute("CREATE INDEX store_items_memory ON store_items (memory_id) WHERE memory_id IS NOT NULL")
    db.execute("ALTER TABLE episodes ADD COLUMN indexed INTEGER NOT NULL DEFAULT 0")
    db.execute("CREATE INDEX episodes_unindexed ON episodes (indexed) WHERE indexed != 1")
    db.execute("CREATE INDEX messages_created ON messages (thread_key, created_at)")
    # The conversation's recall units (storage/units.py): spans of the log, not copies of it.
    db.execute(
        "CREATE TABLE units ("
        "id TEXT PRIMARY KEY, user_id TEXT NOT NULL, thread_key INTEGER NOT NULL, grain TEXT NOT NULL, "
        "first_seq INTEGER NOT NULL, last_seq INTEGER NOT NULL, at TEXT NOT NULL, speaker TEXT, "
        "indexed INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID"
    )
    db.execute("CREATE INDEX units_thread ON units (thread_key, first_seq)")
    db.execute("CREATE INDEX units_user ON units (user_id)")
    db.execute("CREATE INDEX units_unindexed ON units (indexed) WHERE indexed != 1")
    # What a job needs of the memory that runs it ('llm': a chat model, journaled by a memory
    # that had one, so offline rules never do its work); NULL: any memory may run it.
    db.execute("ALTER TABLE jobs ADD COLUMN needs TEXT")
    # A claim skips the jobs queued behind an unfinished job with needs on the same thread
    # (storage/jobs.py); this keeps that check a lookup (without it: 1.2 s per claim at
    # 3,000 pending jobs). Its WHERE must match the claim's terms for SQLite to use it.
    db.execute(
        "CREATE INDEX jobs_needing ON jobs (thread_key, id) "
        "WHERE needs IS NOT NULL AND status IN ('pending', 'running')"
    )


def _migrate_to_5(db: sqlite_utils.Database) -> None:
    """The usage ledger (what each job's LLM calls cost, ``storage/usage.py``) and the mark
    of jobs waiting for the spend budget (``budget.py``)."""
    db.execute(
        "CREATE TABLE job_usage ("
        "id INTEGER PRIMARY KEY AUTOINCREMENT, "
        "job_key TEXT NOT NULL, "
        "kind TEXT NOT NULL, "
        "user_id TEXT NOT NULL, "
        "thread_id TEXT, "
        # When the attempt ended, epoch seconds on the memory's clock, and its UTC date.
        "at REAL NOT NULL, "
        "day TEXT NOT NULL, "
        "calls INTEGER NOT NULL, "
        "input_tokens INTEGER NOT NULL, "
        "output_tokens INTEGER NOT NULL, "
        "duration_ms REAL NOT NULL, "
        "method TEXT, "
        "model TEXT, "
        "outcome TEXT NOT NULL)"
    )
    db.execute("CREATE INDEX job_usage_at ON job_usage (at)")
    db.execute("CREATE INDEX job_usage_user_at ON job_usage (user_id, at)")
    db.execute("CREATE INDEX job_usage_day ON job_usage (day)")
    # Why a pending job waits ('budget'); NULL for every other job.
    db.execute("ALTER TABLE jobs ADD COLUMN waiting TEXT")
    db.execute("CREATE INDEX jobs_waiting ON jobs (user_id) WHERE waiting IS NOT NULL")


#: Mark every indexed unit for its point to be written again (as a rebuild does).
REFRESH_UNIT_POINTS = "UPDATE units SET indexed = 2 WHERE indexed = 1"


def _migrate_to_6(db: sqlite_utils.Database) -> None:
    """Turn and window points carry ``asks`` (the share of their lines that only ask, which
    recall trusts less as evidence): every unit's point is written again. Its vector is
    kept (``DialogueLayer.embed``), so this re-embeds nothing."""
    db.execute(REFRESH_UNIT_POINTS)


def _migrate_to_7(db: sqlite_utils.Database) -> None:
    """Turn and window points carry ``news`` (the share of the people's lines that tell of a
    change or of how things stand now, which a question about now looks for): every unit's
    point is written again, its vector kept."""
    db.execute(REFRESH_UNIT_POINTS)


def _migrate_to_8(db: sqlite_utils.Database) -> None:
    """The ``news`` mark reads more verbs of change ("dropped", "took up", "upgraded",
    "started"...): every unit's point is written again with it, its vector kept."""
    db.execute(REFRESH_UNIT_POINTS)


def _migrate_to_9(db: sqlite_utils.Database) -> None:
    """When a job's run of failures to reach its model began (epoch seconds; NULL: it is in
    none): its retries go on until ``job_retry_horizon_seconds`` after it (``jobs/retry.py``)
    rather than for a count of tries, so a job outlives a model's outage."""
    # Idempotent: a directory whose version mark was set back runs the steps again.
    if "failing_since" not in db["jobs"].columns_dict:
        db.execute("ALTER TABLE jobs ADD COLUMN failing_since REAL")


def _migrate_to_10(db: sqlite_utils.Database) -> None:
    """The vectors of a turn's sentences (``storage/units.py``): recall reads a long message
    by its best sentence as well as by the whole. Turns indexed before have none (recall
    reads them whole) until ``reindex`` embeds them again."""
    db.execute(
        "CREATE TABLE IF NOT EXISTS unit_sentences (unit_id TEXT NOT NULL, n INTEGER NOT NULL, "
        "vector BLOB NOT NULL, PRIMARY KEY (unit_id, n))"
    )


def _migrate_to_11(db: sqlite_utils.Database) -> None:
    """Turn points carry ``told_from``/``told_until``: the time a message tells of
    ("yesterday we ran a class", said on the 17th: the 16th), which a question naming that
    time finds. Every unit's point is written again, its vector kept."""
    db.execute(REFRESH_UNIT_POINTS)


#: ``MIGRATIONS[n]`` brings a database from schema version ``n - 1`` to ``n``.
MIGRATIONS: dict[int, Callable[[sqlite_utils.Database], None]] = {
    1: _migrate_to_1,
    2: _migrate_to_2,
    3: _migrate_to_3,
    4: _migrate_to_4,
    5: _migrate_to_5,
    6: _migrate_to_6,
    7: _migrate_to_7,
    8: _migrate_to_8,
    9: _migrate_to_9,
    10: _migrate_to_10,
    11: _migrate_to_11,
}
