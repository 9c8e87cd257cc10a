"""The PostgreSQL store on a real server: opening and refusing databases, errors that say what
to do (without the password), moving a user between backends, and many processes sharing
one database — appends, job claims with leases, and a worker killed mid-job."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest
from langchain_core.messages import AIMessage, HumanMessage
from qdrant_client import QdrantClient

from langchain_tiered_memory import (
    ConfigError,
    ForeignDatabaseError,
    MemoryConfig,
    SchemaVersionError,
    StorageError,
    TieredMemory,
)
from langchain_tiered_memory.embeddings import HashingEmbeddings
from langchain_tiered_memory.storage import MIGRATIONS, PostgresDatabase
from langchain_tiered_memory.storage.schema_postgres import MIGRATIONS as PG_MIGRATIONS

sys.path.insert(0, str(Path(__file__).parent))
from scripted_model import ScriptedChatModel, entity, memory, turn_tool_call

HERE = Path(__file__).parent
INLINE = MemoryConfig(job_mode="inline", job_backoff_seconds=0.0)


def _open(url: str, config: MemoryConfig = INLINE, **kwargs) -> TieredMemory:
    return TieredMemory(config=config, embeddings=HashingEmbeddings(), database_url=url,
                        qdrant_client=QdrantClient(":memory:"), **kwargs)


def _sql(url: str, sql: str, args: tuple = ()) -> list[tuple]:
    with psycopg.connect(url, autocommit=True) as conn:
        cur = conn.execute(sql, args)
        return cur.fetchall() if cur.description else []


# --- opening --------------------------------------------------------------------------------


def test_a_database_url_needs_a_qdrant_server_and_no_data_dir(tmp_path):
    with pytest.raises(ConfigError, match="qdrant_url"):
        TieredMemory(database_url="postgresql://u@localhost/db")
    with pytest.raises(ConfigError, match="not both"):
        TieredMemory(tmp_path, database_url="postgresql://u@localhost/db", qdrant_client=QdrantClient(":memory:"))
    with pytest.raises(ConfigError, match="pool_min"):
        PostgresDatabase("postgresql://u@localhost/db", pool_min=5, pool_max=2)


def test_an_unreachable_server_says_so_and_never_shows_the_password():
    with pytest.raises(StorageError) as err:
        PostgresDatabase("postgresql://bob:s3cret-pw@127.0.0.1:1/memory", connect_timeout=2)
    message = str(err.value)
    assert "unreachable" in message and "host and port" in message
    assert "postgresql://bob@127.0.0.1:1/memory" in message
    assert "s3cret-pw" not in message and "s3cret-pw" not in repr(err.value.__cause__)


def test_an_unknown_login_or_database_says_what_to_fix(pg):
    with pytest.raises(StorageError, match="refused the login.*user and password") as err:
        PostgresDatabase(pg.url("postgres").replace("postgres@", "nobody:pa55word@"))
    assert "pa55word" not in str(err.value)
    with pytest.raises(StorageError, match="does not exist.*create it"):
        PostgresDatabase(pg.url("no_such_db"))


def test_a_new_database_gets_the_schema_once(pg):
    url = pg.new_database(schema=False)
    try:
        with _open(url) as m:
            assert m.storage.is_new and m.data_dir is None
            m.after_turn("u", "t", [HumanMessage("hi")])
            assert m.stats()["data_dir"] == url  # where the data lives (no password to hide here)
        with _open(url) as m:
            assert not m.storage.is_new
            assert [x.text for x in m.get_messages("u", "t")] == ["hi"]
        assert _sql(url, "SELECT application, version FROM tiered_memory_schema") == [
            ("langchain-tiered-memory", max(MIGRATIONS))
        ]
    finally:
        pg.drop_database(url)


def test_another_apps_tables_under_our_names_are_refused_and_left_alone(pg):
    url = pg.new_database(schema=False)
    try:
        _sql(url, "CREATE TABLE messages (id serial PRIMARY KEY, body text)")
        _sql(url, "INSERT INTO messages (body) VALUES ('theirs')")
        with pytest.raises(ForeignDatabaseError, match="messages.*database of its own"):
            _open(url)
        tables = {r[0] for r in _sql(url, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'")}
        assert tables == {"messages"}
        assert _sql(url, "SELECT body FROM messages") == [("theirs",)]
        # Unrelated tables are no reason to refuse: the memory moves in beside them.
        _sql(url, "ALTER TABLE messages RENAME TO their_messages")
        with _open(url) as m:
            m.after_turn("u", "t", [HumanMessage("hi")])
    finally:
        pg.drop_database(url)


def test_a_newer_schema_is_refused(pg_url):
    _sql(pg_url, "UPDATE tiered_memory_schema SET version = 99")
    with pytest.raises(SchemaVersionError, match="99.*upgrade the package"):
        _open(pg_url)


def test_a_migration_step_runs_once_and_a_failed_one_changes_nothing(pg_url):
    with _open(pg_url) as m:
        m.after_turn("u", "t", [HumanMessage("kept")])
    now = max(PG_MIGRATIONS)
    ran = []

    def step_a(tx):
        ran.append(now + 1)
        tx.execute("ALTER TABLE threads ADD COLUMN topic TEXT")

    def step_b(tx):
        tx.execute("ALTER TABLE threads ADD COLUMN mood TEXT")
        raise RuntimeError("step b broke")

    with pytest.raises(RuntimeError, match="step b"):
        PostgresDatabase(pg_url, migrations={**PG_MIGRATIONS, now + 1: step_a, now + 2: step_b})
    assert _sql(pg_url, "SELECT version FROM tiered_memory_schema") == [(now,)]  # all or nothing
    PostgresDatabase(pg_url, migrations={**PG_MIGRATIONS, now + 1: step_a}).close()
    PostgresDatabase(pg_url, migrations={**PG_MIGRATIONS, now + 1: step_a}).close()
    assert ran == [now + 1, now + 1]  # the failed attempt, then once
    assert _sql(pg_url, "SELECT version FROM tiered_memory_schema") == [(now + 1,)]
    assert len(_sql(pg_url, "SELECT 1 FROM messages")) == 1  # the data stayed


def test_text_sorts_by_code_point_whatever_the_locale(pg_url):
    # "B" < "a" < "é" by code point (SQLite's order); a locale collation would say a < B < é.
    with _open(pg_url) as m:
        for name in ("é", "a", "B"):
            m.storage.store_items.put(("ns",), name, {"v": name}, now="2026-01-01T00:00:00+00:00")
        with m.storage.db.read() as tx:
            assert tx.column("SELECT key FROM store_items ORDER BY key") == ["B", "a", "é"]


# --- moving a user between backends -----------------------------------------------------------


def test_a_user_exported_from_sqlite_imports_into_postgresql_unchanged(tmp_path, pg_url, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # the offline extractor and episodes
    with TieredMemory(tmp_path / "dir", INLINE, embeddings=HashingEmbeddings()) as source:
        source.after_turn("alice", "t1", [HumanMessage("My name is Alice and I live in Lisbon."), AIMessage("Noted.")])
        source.remember("alice", "user: I prefer window seats", "preference", importance=0.8)
        source.store.put(("profiles", "alice"), "k", {"lang": "pt"})
        source.end_session("alice", "t1")
        data = source.export_user("alice")
    assert all(data[k] for k in ("threads", "messages", "entities", "memories", "episodes", "store_items"))
    with _open(pg_url) as target:
        counts = target.import_user("alice", data)
        assert {k: counts[k] for k in data} == {k: len(v) for k, v in data.items()}
        assert target.export_user("alice") == data
        assert target.entity("alice", "alice").attributes["location"] == "Lisbon"
        assert [h.entry.content for h in target.search("alice", "window seats", k=1)] == [
            "user: I prefer window seats"
        ]


# --- many processes on one database -------------------------------------------------------------


def _run_workers(url: str, tmp_path: Path, processes: int, threads: int, seconds: float, turns: int = 0) -> list[dict]:
    start_at = time.time() + 4.0  # every process imports and opens before the common start
    procs = []
    for p in range(processes):
        out = tmp_path / f"w{p}.json"
        procs.append((subprocess.Popen(
            [sys.executable, str(HERE / "pg_worker.py"), url, str(p), str(threads), str(seconds),
             str(turns), str(start_at), str(out)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        ), out))
    results = []
    for proc, out in procs:
        output, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0, output[-3000:]
        results.append(json.loads(out.read_text()))
    return results


def _check_log_and_journal(url: str, results: list[dict]) -> None:
    assert not [e for r in results for e in r["errors"]]
    assert all(r["drained"] for r in results)
    appended = [i for r in results for i in r["appended"]]
    assert len(appended) == len(set(appended)) > 0
    stored = _sql(url, "SELECT message_id FROM messages")
    assert sorted(r[0] for r in stored) == sorted(appended), "a message was lost or stored twice"
    # Every thread's log is one gapless sequence: concurrent appends took turns for each seq.
    for thread_key, n, low, high, next_seq in _sql(
        url, "SELECT m.thread_key, COUNT(*), MIN(seq), MAX(seq), t.next_seq FROM messages m "
        "JOIN threads t ON t.id = m.thread_key GROUP BY m.thread_key, t.next_seq"
    ):
        assert (low, high, next_seq) == (0, n - 1, n), thread_key
    jobs = _sql(url, "SELECT status, attempts, COUNT(*) FROM jobs GROUP BY status, attempts")
    assert [(s, a) for s, a, _ in jobs] == [("done", 1)], jobs
    # No job's results were committed twice (a job may commit nothing: a later job of its
    # thread, run by another worker first, covered its messages), and every message was
    # extracted.
    assert 0 < sum(r["committed"] for r in results) <= jobs[0][2]
    assert not _sql(url, "SELECT id FROM threads WHERE extracted_through != next_seq - 1")
    workers = {r[0] for r in _sql(url, "SELECT DISTINCT leased_by FROM jobs")}
    assert len(workers) > 1, "the journal was not shared by several workers"


def test_four_processes_of_four_threads_lose_and_repeat_nothing(pg_url, tmp_path):
    # Bounded in time and in turns (each turn is a job to drain after): CI stays quick; the
    # soak below runs a minute without a cap.
    results = _run_workers(pg_url, tmp_path, processes=4, threads=4, seconds=3.0, turns=8)
    _check_log_and_journal(pg_url, results)


@pytest.mark.soak
def test_soak_four_processes_for_a_minute(pg_url, tmp_path):
    results = _run_workers(pg_url, tmp_path, processes=4, threads=4, seconds=60.0)
    _check_log_and_journal(pg_url, results)


KILLED = """
import sys, time
sys.path.insert(0, sys.argv[2])
from langchain_core.messages import AIMessage, HumanMessage
from scripted_model import Hang, ScriptedChatModel
from pg_worker import open_memory
from langchain_tiered_memory import TieredMemory
model = ScriptedChatModel(script=[], default=Hang(600))
m = open_memory(sys.argv[1], model, job_lease_seconds=2.0, llm_timeout_seconds=1.0)
m.after_turn("u", "t", [HumanMessage("My name is Alice and I live in Paris.", id="h1"), AIMessage("Hello Alice!", id="a1")])
while model.calls == 0:
    time.sleep(0.01)
print(m._jobs.worker_id, flush=True)
time.sleep(600)
"""


def test_a_worker_killed_mid_job_loses_its_lease_and_another_finishes_the_job_once(pg_url):
    proc = subprocess.Popen([sys.executable, "-c", KILLED, pg_url, str(HERE)], stdout=subprocess.PIPE, text=True)
    try:
        killed_worker = proc.stdout.readline().strip()
        assert killed_worker, "the first worker never started its job"
        model = ScriptedChatModel(script=[], default=turn_tool_call(
            entities=[entity("Alice", "person", location="Paris")], memories=[memory("The user lives in Paris.", "fact", 0.8)]
        ))
        # Killed while its model call hangs (well inside the call's 1 s timeout), holding
        # the lease; another worker may take the job only once that lease is given up.
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        killed_at = time.time()
        config = MemoryConfig(job_mode="background", job_lease_seconds=2.0, job_backoff_seconds=0.0,
                              llm_timeout_seconds=1.0)
        with _open(pg_url, config, model=model) as other:
            assert other.flush(timeout=30)
            [(status, attempts, leased_by)] = _sql(
                pg_url, "SELECT status, attempts, leased_by FROM jobs"
            )
            assert (status, attempts) == ("done", 2)
            assert leased_by == other._jobs.worker_id != killed_worker
            assert model.calls == 1
            assert other.entity("u", "alice").attributes == {"location": "Paris"}
            assert len(other.get_messages("u", "t")) == 2
            assert time.time() - killed_at < 30
    finally:
        if proc.poll() is None:
            proc.kill()
