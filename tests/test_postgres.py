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
            assert m._parts.storage.is_new and m.data_dir is None
            m.after_turn("u", "t", [HumanMessage("hi")])
            assert m.admin.stats()["data_dir"] == url  # where the data lives (no password to hide here)
        with _open(url) as m:
            assert not m._parts.storage.is_new
            assert [x.text for x in m.threads.messages("u", "t")] == ["hi"]
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
            m._parts.storage.store_items.put(("ns",), name, {"v": name}, now="2026-01-01T00:00:00+00:00")
        with m._parts.storage.db.read() as tx:
            assert tx.column("SELECT key FROM store_items ORDER BY key") == ["B", "a", "é"]


# --- moving a user between backends -----------------------------------------------------------


def test_a_user_exported_from_sqlite_imports_into_postgresql_unchanged(tmp_path, pg_url, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # the offline extractor and episodes
    with TieredMemory(tmp_path / "dir", INLINE, embeddings=HashingEmbeddings()) as source:
        source.after_turn("alice", "t1", [HumanMessage("My name is Alice and I live in Lisbon."), AIMessage("Noted.")])
        source.memories.remember("alice", "user: I prefer window seats", "preference", importance=0.8)
        source.store.put(("profiles", "alice"), "k", {"lang": "pt"})
        source.end_session("alice", "t1")
        data = source.admin.export_user("alice")
    assert all(data[k] for k in ("threads", "messages", "entities", "memories", "episodes", "store_items"))
    with _open(pg_url) as target:
        counts = target.admin.import_user("alice", data)
        assert {k: counts[k] for k in data} == {k: len(v) for k, v in data.items()}
        assert target.admin.export_user("alice") == data
        assert target.entities.get("alice", "alice").attributes["location"] == "Lisbon"
        assert [h.entry.content for h in target.memories.search("alice", "window seats", k=1)] == [
            "user: I prefer window seats"
        ]


def _readable(m: TieredMemory, user: str) -> dict:
    """What a user reads back through the public API, every layer (no read here counts as a
    recall: search and recall are asked after)."""
    return {
        "threads": [(t, [msg.model_dump() for msg in m.threads.messages(user, t.thread_id)]) for t in m.threads.list(user)],
        "summaries": {t.thread_id: m.threads.summary(user, t.thread_id) for t in m.threads.list(user)},
        "entities": {e.name: m.entities.get(user, e.name) for e in m.entities.list(user)},
        "memories": sorted((e.model_dump() for e in m.memories.list(user)), key=lambda d: d["id"]),
        "episodes": [h.episode for h in m.episodes.search(user)],
        "store": [(i.namespace, i.key, i.value, i.created_at, i.updated_at)
                  for ns in (("profiles", user), ("memories", user), ("cache", user))
                  for i in m.store.search(ns, limit=100)],
    }


def test_a_user_exported_from_postgresql_imports_into_either_backend_unchanged(pg, make_memory, monkeypatch):
    # The source is a PostgreSQL database of its own; the target is the test's backend.
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # the offline extractor and episodes
    config = MemoryConfig(job_mode="inline", job_backoff_seconds=0.0, max_tokens=400, system_reserve=50,
                          output_reserve=50)
    source_url = pg.new_database()
    try:
        with _open(source_url, config) as source:
            source.after_turn("alice", "t1", [HumanMessage("My name is Alice and I live in Lisbon."),
                                              AIMessage("Noted, Alice.")])
            for i in range(12):  # enough to evict the first turns: a running summary
                source.after_turn("alice", "t1", [
                    HumanMessage(f"Tell me about museum number {i} in the old town and its tiles."),
                    AIMessage(f"Museum {i} has azulejos from the sixteenth century and a garden."),
                ])
            source.after_turn("alice", "t1", [HumanMessage("I moved to Porto last week."), AIMessage("Congratulations!")])
            source.end_session("alice", "t1")
            source.after_turn("alice", "t2", [HumanMessage("I prefer trains to planes."), AIMessage("Trains it is.")])
            source.memories.remember("alice", "user: I prefer window seats", "preference", importance=0.8)
            source.store.put(("profiles", "alice"), "lang", {"lang": "pt", "text": "speaks Portuguese"})
            source.store.put(("profiles", "alice"), "plain", {"v": 1}, index=False)
            source.store.put(("cache", "alice"), "tmp", {"v": 2}, ttl=60)
            source.store.put(("memories", "alice"), "tiles", {"content": "Alice collects azulejo tiles"})
            source.after_turn("bob", "tb", [HumanMessage("My name is Bob and I live in Oslo.")])
            data = source.admin.export_user("alice")
            before = _readable(source, "alice")
    finally:
        pg.recycle(source_url)

    layers = ("threads", "messages", "summaries", "entities", "memories", "episodes", "store_items")
    assert set(data) == set(layers) and all(data[k] for k in layers), {k: len(v) for k, v in data.items()}
    assert "bob" not in json.dumps(data).lower()
    # The entity's attribute history came along: Lisbon superseded by Porto.
    [alice] = [e for e in data["entities"] if e["name"] == "Alice"]
    locations = [(a["value"], a["superseded_at"] is not None) for a in alice["attributes"] if a["key"] == "location"]
    assert locations == [("Lisbon", True), ("Porto", False)]
    assert {(tuple(i["namespace"]), i["key"], i["indexed"], i["ttl_minutes"] is not None) for i in data["store_items"]} == {
        (("profiles", "alice"), "lang", True, False), (("profiles", "alice"), "plain", False, False),
        (("cache", "alice"), "tmp", True, True), (("memories", "alice"), "tiles", False, False),
    }

    with make_memory(config, embeddings=HashingEmbeddings()) as target:
        counts = target.admin.import_user("alice", data)
        assert {k: counts[k] for k in layers} == {k: len(v) for k, v in data.items()}
        assert target.admin.export_user("alice") == data  # every row of every layer, as exported
        assert _readable(target, "alice") == before
        assert target.entities.get("alice", "alice").attributes["location"] == "Porto"
        assert [v.value for v in target.entities.get("alice", "alice").history["location"]] == ["Lisbon", "Porto"]
        # The vectors were built again on the target: memories, episodes and store items rank.
        assert [h.entry.content for h in target.memories.search("alice", "window seats", k=1)] == ["user: I prefer window seats"]
        assert target.episodes.search("alice", "museum azulejos")
        assert [i.key for i in target.store.search(("profiles", "alice"), query="speaks Portuguese", limit=1)] == ["lang"]
        # The restored thread is live: the next turn continues its log.
        target.after_turn("alice", "t2", [HumanMessage("And I work as a nurse.")])
        assert [m.text for m in target.threads.messages("alice", "t2")][-1] == "And I work as a nurse."


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
print(m._parts.jobs.worker_id, flush=True)
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
            assert leased_by == other._parts.jobs.worker_id != killed_worker
            assert model.calls == 1
            assert other.entities.get("u", "alice").attributes == {"location": "Paris"}
            assert len(other.threads.messages("u", "t")) == 2
            assert time.time() - killed_at < 30
    finally:
        if proc.poll() is None:
            proc.kill()


#: A worker id as a process of another machine writes it (``host:pid:nonce``): this host
#: cannot tell whether it still runs, so only the end of its lease frees its job.
ELSEWHERE = "worker-7.elsewhere.example:4242:0badcafe"


def test_a_lease_of_a_worker_on_another_host_is_taken_over_only_once_it_expires(make_memory, monkeypatch):
    # No dead-pid shortcut (``JobRunner._release_dead_workers``) applies to another host's
    # worker: the other worker here waits for the lease to run out, then finishes the job once.
    lease = 2.0
    from langchain_tiered_memory.jobs.runner import dead_worker
    from langchain_tiered_memory.storage.results import Results

    assert not dead_worker(ELSEWHERE)
    committed: list[str] = []
    original = Results.complete_extraction

    def counted(self, job, worker, **kwargs):
        done = original(self, job, worker, **kwargs)
        if done:
            committed.append(worker)
        return done

    monkeypatch.setattr(Results, "complete_extraction", counted)
    asked_at: list[float] = []
    late: list[bool] = []
    holder: list[TieredMemory] = []

    def answer(messages):
        asked_at.append(time.time())
        # The silent worker comes back while the job's new owner waits for its model: its
        # results are refused (its lease is gone), and it cannot mark the job done.
        storage = holder[0]._parts.storage
        late.append(storage.results.complete_extraction(
            job, ELSEWHERE, user_id="u", thread_id="t", entities=[], memories=[], summary=None,
            extracted_through=1, now="2030-01-01T00:00:00+00:00",
        ))
        late.append(storage.jobs.finish(job.id, ELSEWHERE))
        return turn_tool_call(entities=[entity("Alice", "person", location="Paris")],
                              memories=[memory("The user lives in Paris.", "fact", 0.8)])

    model = ScriptedChatModel(script=[answer])  # a second call would fail the job
    config = {"job_lease_seconds": lease, "job_backoff_seconds": 0.0, "llm_timeout_seconds": 1.0}

    # An app process that only journals (the turn's job waits for a worker) ...
    with make_memory(MemoryConfig(job_mode="external", **config), model=model) as app:
        app.after_turn("u", "t", [HumanMessage("My name is Alice and I live in Paris.", id="h1"),
                                  AIMessage("Hello Alice!", id="a1")])
        # ... and a worker on another machine claims the job, then goes silent mid-job.
        job = app._parts.storage.jobs.claim(ELSEWHERE, lease, max_attempts=3)
        assert job is not None and job.kind == "extract"
        [row] = app._parts.storage.jobs.rows()
        lease_until = row.lease_until
        assert (row.status, row.leased_by, row.attempts) == ("running", ELSEWHERE, 1)

    with make_memory(MemoryConfig(job_mode="background", **config), model=model) as other:
        holder.append(other)
        assert other._parts.jobs.counts()["running"] == 1  # not "stale": its host may be up
        # Before the lease runs out, the background worker leaves the job alone.
        while time.time() < lease_until - 0.3:
            [row] = other._parts.storage.jobs.rows()
            assert (row.status, row.leased_by, row.attempts, row.lease_until) == (
                "running", ELSEWHERE, 1, lease_until), "the job was taken before its lease ran out"
            assert model.calls == 0
            time.sleep(0.1)
        # After, it takes the job over and finishes it, once.
        assert other.flush(timeout=10)
        [row] = other._parts.storage.jobs.rows()
        assert (row.status, row.leased_by, row.attempts) == ("done", other._parts.jobs.worker_id, 2)
        assert model.calls == 1 and asked_at[0] >= lease_until
        assert late == [False, False]
        assert committed == [other._parts.jobs.worker_id]  # the results were committed once, by it
        assert other.entities.get("u", "alice").attributes == {"location": "Paris"}
        assert [m.content for m in other.memories.list("u")] == ["The user lives in Paris."]
        assert other.flush(timeout=5) and model.calls == 1
        [row] = other._parts.storage.jobs.rows()
        assert (row.status, row.leased_by, row.attempts) == ("done", other._parts.jobs.worker_id, 2)
