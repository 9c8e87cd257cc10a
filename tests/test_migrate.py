"""``tiered-memory migrate``: a directory deployment moves to PostgreSQL and a Qdrant server
(qdrant-client's local mode here) whole — every user, layer and checkpoint — resumably."""

import contextlib

import psycopg
import pytest
from langchain_core.messages import AIMessage, HumanMessage
from qdrant_client import QdrantClient

from langchain_tiered_memory import MemoryConfig, TieredMemory
from langchain_tiered_memory.cli import main
from langchain_tiered_memory.embeddings import HashingEmbeddings

# tests/ is on the path (conftest.py): the graph helpers of the checkpointer tests.
from test_checkpointer import _cfg, _graph, _say  # isort: skip

USERS = ("alice", "bob")


@pytest.fixture
def deployment(tmp_path, monkeypatch):
    """A directory memory with every layer in use, checkpoints, and a job still pending."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # the offline extractor
    data_dir = tmp_path / "memory"
    with TieredMemory(data_dir, MemoryConfig(job_mode="inline"), embeddings=HashingEmbeddings()) as m:
        for user in USERS:
            m.after_turn(user, f"{user}-1", [HumanMessage(f"My name is {user.title()} and I live in Lisbon."),
                                             AIMessage("Noted.")])
            m.memories.remember(user, f"user: {user} prefers window seats", "preference", importance=0.8)
            m.store.put(("profiles", user), "lang", {"value": "pt"})
            m.end_session(user, f"{user}-1")
        m.store.put(("global",), "motd", {"text": "hello"})  # an item of no user
        graph = _graph(m.checkpointer)
        graph.invoke(_say("hi"), _cfg("alice-1", "alice"))
        graph.invoke(_say("again"), _cfg("alice-1", "alice"))
        graph.invoke(_say("hi"), _cfg("graph-only"))
        exports = {user: m.admin.export_user(user) for user in USERS}
    with TieredMemory(data_dir, MemoryConfig(job_mode="external"), embeddings=HashingEmbeddings()) as m:
        m.after_turn("bob", "bob-2", [HumanMessage("I moved to Porto.")])  # its job waits
        exports["bob"] = m.admin.export_user("bob")
    return data_dir, exports


def _migrate(data_dir, url, qdrant, *extra) -> int:
    return main(["--data-dir", str(data_dir), "migrate", "--to", url, "--qdrant-path", str(qdrant), *extra])


@contextlib.contextmanager
def _open(url, qdrant, **config):
    """The new deployment; ``job_mode`` "external" by default, so that opening runs no job.
    Its embeddings are the default model, as the migrate command's: the vectors were made
    anew with it (the directory's hashing vectors stayed behind)."""
    client = QdrantClient(path=str(qdrant))
    try:
        with TieredMemory(config=MemoryConfig(**{"job_mode": "external", **config}),
                          database_url=url, qdrant_client=client) as memory:
            yield memory
    finally:
        client.close()


def test_everything_moves_and_the_counts_are_verified(deployment, pg_url, tmp_path, capsys):
    data_dir, exports = deployment
    qdrant = tmp_path / "qdrant"
    assert _migrate(data_dir, pg_url, qdrant) == 0
    out = capsys.readouterr()
    assert "every count matches" in out.out
    for name in ("messages", "entities", "memories", "episodes", "store_items", "jobs", "checkpoints",
                 "vector points"):
        assert any(line.startswith(name) and line.endswith("ok") for line in out.out.splitlines()), name

    with _open(pg_url, qdrant) as m:
        assert {user: m.admin.export_user(user) for user in USERS} == exports
        assert m.items.get(("global",), "motd") is not None
        hits = m.memories.search("alice", "window seats", k=1)
        assert [h.entry.content for h in hits] == ["user: alice prefers window seats"]
        assert [h.episode.thread_id for h in m.episodes.search("bob")] == ["bob-1"]
        graph = _graph(m.checkpointer)
        assert graph.get_state(_cfg("alice-1")).values["turns"] == 2
        assert graph.invoke(_say("third"), _cfg("alice-1"))["turns"] == 3
        assert graph.get_state(_cfg("graph-only")).values["turns"] == 1
    with _open(pg_url, qdrant, job_mode="inline") as m:
        # The job left pending in the directory runs on the new deployment.
        assert m.flush(timeout=30)
        assert m.admin.stats()["jobs"]["pending"] == 0
        assert m.entities.get("bob", "Bob").attributes["location"] == "Porto"
        # Forgetting works across the copied checkpoints.
        assert m.admin.forget(user_id="alice")["checkpoints"] == 9  # 3 runs of 3 steps, one run new


def test_a_second_run_continues_and_never_duplicates(deployment, pg_url, tmp_path, capsys):
    data_dir, exports = deployment
    qdrant = tmp_path / "qdrant"
    assert _migrate(data_dir, pg_url, qdrant) == 0
    # As if the first run had stopped half-way: part of the copy is missing.
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("DELETE FROM messages WHERE id > 2")
        conn.execute("DELETE FROM checkpoint_writes")
        conn.execute("UPDATE memories SET indexed = 2")
    capsys.readouterr()
    assert _migrate(data_dir, pg_url, qdrant, "--json") == 0
    assert '"ok": true' in capsys.readouterr().out
    with _open(pg_url, qdrant) as m:
        assert {user: m.admin.export_user(user) for user in USERS} == exports
        # New rows get new ids after the copied ones.
        m.after_turn("carol", "carol-1", [HumanMessage("hello")])
        assert len(m.threads.messages("carol", "carol-1")) == 1


def test_a_mismatch_exits_non_zero_and_another_memory_is_never_mixed_in(deployment, pg_url, pg, tmp_path, capsys):
    data_dir, _ = deployment
    qdrant = tmp_path / "qdrant"
    assert _migrate(data_dir, pg_url, qdrant) == 0
    with _open(pg_url, qdrant) as m:  # the new deployment is used before the copy is re-run
        m.after_turn("dave", "dave-1", [HumanMessage("hi")], extract=False)
    capsys.readouterr()
    assert _migrate(data_dir, pg_url, qdrant) == 1
    out = capsys.readouterr()
    assert "MISMATCH" in out.out and "does not match" in out.err and "messages" in out.err

    other = pg.new_database()
    try:
        with _open(other, tmp_path / "q2") as m:
            m.after_turn("eve", "eve-1", [HumanMessage("hi")], extract=False)
        assert _migrate(data_dir, other, tmp_path / "q2") == 1
        assert "already holds a memory" in capsys.readouterr().err
    finally:
        pg.drop_database(other)


def test_a_directory_without_a_memory_is_refused(tmp_path, pg_url, capsys):
    assert _migrate(tmp_path / "nothing", pg_url, tmp_path / "q") == 1
    assert "no memory at" in capsys.readouterr().err
