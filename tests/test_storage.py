"""The SQLite log: durable, shared by threads and processes, and careful with files not its own."""

import sqlite3
import subprocess
import sys
import textwrap
import threading
from datetime import datetime, timezone

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langchain_tiered_memory import (
    CorruptDatabaseError,
    DataDirError,
    ForeignDatabaseError,
    MemoryConfig,
    SchemaVersionError,
    StorageError,
    TieredMemory,
    TieredMemoryError,
)
from langchain_tiered_memory.storage import APPLICATION_ID, MIGRATIONS, SQLiteDatabase, Storage


def test_messages_survive_reopening(data_dir, small_config):
    with TieredMemory(data_dir, small_config) as m:
        m.after_turn("u", "t", [HumanMessage("my name is Alice", id="h1"), AIMessage("Hi Alice!")])
        m.flush()
        before = m.before_turn("u", "t").window
    with TieredMemory(data_dir, small_config) as m:
        after = m.before_turn("u", "t").window
        assert [(x.type, x.text, x.id) for x in after] == [(x.type, x.text, x.id) for x in before]
        assert after[0].id == "h1"
        assert m.threads.list("u")[0].messages == 2


def test_the_file_is_wal_and_versioned(data_dir):
    with TieredMemory(data_dir):
        pass
    conn = sqlite3.connect(data_dir / "memory.db")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    assert conn.execute("PRAGMA user_version").fetchone()[0] == max(MIGRATIONS)
    assert {"threads", "messages", "meta"} <= {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}


def test_a_migration_step_runs_once_and_keeps_data(data_dir):
    with TieredMemory(data_dir) as m:
        m.after_turn("u", "t", [HumanMessage("kept")])
    calls = []

    def to_2(db):
        calls.append(1)
        db["extra"].create({"id": int}, pk="id")

    nxt = max(MIGRATIONS) + 1
    SQLiteDatabase(data_dir, migrations={**MIGRATIONS, nxt: to_2}).close()
    db = SQLiteDatabase(data_dir, migrations={**MIGRATIONS, nxt: to_2})
    assert db.db["extra"].exists() and calls == [1]
    assert Storage(db).counts()["messages"] == 1
    db.close()
    # The package at the older schema now refuses the newer file instead of misreading it.
    with pytest.raises(SchemaVersionError, match="upgrade"):
        TieredMemory(data_dir)


def test_a_failed_migration_leaves_the_old_version(data_dir):
    with TieredMemory(data_dir):
        pass

    def broken(db):
        db["half"].create({"id": int}, pk="id")
        raise RuntimeError("boom")

    with pytest.raises(Exception, match="boom"):
        SQLiteDatabase(data_dir, migrations={**MIGRATIONS, max(MIGRATIONS) + 1: broken})
    conn = sqlite3.connect(data_dir / "memory.db")
    assert conn.execute("PRAGMA user_version").fetchone()[0] == max(MIGRATIONS)
    assert "half" not in {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}


def _bytes(path):
    return path.read_bytes()


def test_a_garbage_file_is_refused_and_not_overwritten(data_dir):
    data_dir.mkdir()
    db = data_dir / "memory.db"
    db.write_bytes(b"this is not sqlite at all" * 100)
    before = _bytes(db)
    with pytest.raises(CorruptDatabaseError, match="left untouched"):
        TieredMemory(data_dir)
    assert _bytes(db) == before


def test_a_damaged_sqlite_file_is_refused_and_not_overwritten(data_dir):
    with TieredMemory(data_dir) as m:
        for i in range(50):
            m.after_turn("u", "t", [HumanMessage("x" * 500)])
    db = data_dir / "memory.db"
    raw = bytearray(_bytes(db))
    raw[100:4096] = b"\xff" * (4096 - 100)  # smash the schema page after the header
    db.write_bytes(bytes(raw))
    for side in ("memory.db-wal", "memory.db-shm"):
        (data_dir / side).unlink(missing_ok=True)
    before = _bytes(db)
    with pytest.raises(CorruptDatabaseError):
        TieredMemory(data_dir)
    assert _bytes(db) == before


def test_a_foreign_database_is_refused_and_not_modified(data_dir):
    data_dir.mkdir()
    db = data_dir / "memory.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    conn.execute("INSERT INTO invoices (total) VALUES (9.5)")
    conn.commit()
    conn.close()
    before = _bytes(db)
    with pytest.raises(ForeignDatabaseError, match="another application"):
        TieredMemory(data_dir)
    assert _bytes(db) == before


def test_an_empty_file_is_a_new_memory(data_dir):
    data_dir.mkdir()
    (data_dir / "memory.db").write_bytes(b"")
    with TieredMemory(data_dir) as m:
        m.after_turn("u", "t", [HumanMessage("hi")])
        assert len(m.threads.messages("u", "t")) == 1


def test_unusable_data_dirs(tmp_path):
    a_file = tmp_path / "file"
    a_file.write_text("x")
    for bad in (a_file, a_file / "below", "/proc/1/no-such-dir"):
        with pytest.raises(DataDirError) as err:
            TieredMemory(bad)
        assert "data_dir" in str(err.value)
    d = tmp_path / "d"
    (d / "memory.db").mkdir(parents=True)
    with pytest.raises(DataDirError, match="is a directory"):
        TieredMemory(d)


def test_one_base_class(tmp_path):
    for cls in (CorruptDatabaseError, DataDirError, ForeignDatabaseError, SchemaVersionError):
        assert issubclass(cls, StorageError) and issubclass(cls, TieredMemoryError)


# --- concurrency -------------------------------------------------------------------------

WRITER = textwrap.dedent(
    """
    import sys
    from langchain_core.messages import HumanMessage
    from langchain_tiered_memory import TieredMemory
    data_dir, name, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with TieredMemory(data_dir) as m:
        for i in range(n):
            m.after_turn("u", "shared", [HumanMessage(f"{name}:{i}")])
    """
)


def _check_order(messages, writers, n):
    seen = {w: [] for w in writers}
    for m in messages:
        name, i = m.text.split(":")
        seen[name].append(int(i))
    for w in writers:
        assert seen[w] == list(range(n)), w  # none lost, none doubled, each writer's order kept


def test_two_threads_and_two_processes_append_to_one_file(data_dir):
    n = 500
    with TieredMemory(data_dir) as m:
        m.after_turn("u", "shared", [HumanMessage("start:0")])
        procs = [
            subprocess.Popen([sys.executable, "-c", WRITER, str(data_dir), f"proc{k}", str(n)])
            for k in range(2)
        ]
        errors = []

        def write(name):
            try:
                for i in range(n):
                    m.after_turn("u", "shared", [HumanMessage(f"{name}:{i}")])
            except Exception as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=write, args=(f"thread{k}",)) for k in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert [p.wait(timeout=300) for p in procs] == [0, 0]
        assert not errors
        log = m.threads.messages("u", "shared")[1:]
        assert len(log) == 4 * n
        _check_order(log, ["thread0", "thread1", "proc0", "proc1"], n)
        # This process's cached window has caught up with what the others appended.
        ctx = m.before_turn("u", "shared")
        assert ctx.window[-1].id == log[-1].id
    with TieredMemory(data_dir) as m2:
        assert len(m2.threads.messages("u", "shared")) == 4 * n + 1


def test_switching_closes_memories_and_profile_values_on_each_backend(make_memory):
    """The SQL of "I switched from X to Y" (a LIKE prefilter, the user's profile found by its
    name or its relation) on SQLite and on PostgreSQL."""
    with make_memory(MemoryConfig(job_mode="inline")) as memory:
        memory.after_turn("u", "t1", [HumanMessage("My favourite drink is coffee_50%."), AIMessage("Noted.")],
                          at=datetime(2024, 1, 1, tzinfo=timezone.utc))
        memory.after_turn("u", "t2", [HumanMessage("I switched from coffee_50% to tea."), AIMessage("Noted.")],
                          at=datetime(2024, 2, 1, tzinfo=timezone.utc))
        memory.flush()
        closed = [m.content for m in memory.memories.list("u") if m.valid_to is not None]
        assert closed == ["The user's favourite drink is coffee_50%."]
        profile = memory.entities.get("u", "user")
        assert profile is not None and "formerly coffee_50%" in profile.attributes.values()


def test_sentence_vectors_are_kept_for_long_messages_and_forgotten_with_them(make_memory):
    """A message of several sentences keeps each sentence's vector beside its own (recall
    reads it by its best sentence); forgetting its thread or its user deletes them."""
    long = "I moved to a new flat last week. The cat hid under the bed. I also passed my driving test!"
    with make_memory(MemoryConfig(job_mode="inline")) as memory:
        for thread in ("t1", "t2"):
            memory.after_turn("u", thread, [HumanMessage(long, id=f"{thread}-h"), AIMessage("Congrats!", id=f"{thread}-a")])
        memory.after_turn("v", "t3", [HumanMessage(long, id="t3-h"), AIMessage("Nice.", id="t3-a")])
        memory.flush()
        units = memory._parts.storage.units  # what the index keeps beside the points

        def kept(user: str) -> dict[str, int]:
            ids = [h.id for h in memory.recall(user, "driving test", k=10, grains=["turn"])]
            return {i: len(v) for i, v in units.sentences(ids).items()}

        assert sorted(kept("u").values()) == [3, 3]  # the replies are one sentence: none kept
        first = set(kept("u"))
        memory.admin.forget(thread_id="t1")
        assert len(units.sentences(list(first))) == 1
        memory.admin.forget(user_id="v")
        assert units.sentences(list(first)) and not kept("v")
        with memory._parts.storage.db.read() as tx:
            assert tx.scalar("SELECT COUNT(*) FROM unit_sentences") == 3
