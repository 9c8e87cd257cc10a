"""One owner for every record: the database owns the text, the vector index is rebuilt from it.

Forgetting leaves no byte of what was forgotten in any file; a lost index catches up; an
interrupted forget finishes; several processes and several memory objects share a directory;
a directory written by 0.1 moves its memories into the database.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path
from typing import Annotated, TypedDict

import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

from langchain_tiered_memory import CorruptDatabaseError, MemoryConfig, ShardLockedError, TieredMemory
from langchain_tiered_memory.backends import Where
from langchain_tiered_memory.embeddings import HashingEmbeddings
from langchain_tiered_memory.index.points import tenant_key

INLINE = MemoryConfig(job_mode="inline")
EMB = HashingEmbeddings()
DATA = Path(__file__).parent / "data"


def _open(path: Path, config: MemoryConfig = INLINE, **kw) -> TieredMemory:
    return TieredMemory(path, config, embeddings=EMB, **kw)


def _hits(root: Path, needle: str) -> list[str]:
    """Every file under ``root`` holding ``needle`` (as UTF-8 bytes), ignoring ASCII case: a
    copy lowered or capitalised (a full-text index, a title-cased name) is a copy too."""
    raw = needle.lower().encode()
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and raw in p.read_bytes().lower())


class Chat(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def _checkpoint(memory: TieredMemory, user: str, thread: str, text: str) -> None:
    builder = StateGraph(Chat)
    builder.add_node("reply", lambda state: {"messages": [AIMessage(f"noted: {state['messages'][-1].content}")]})
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    graph = builder.compile(checkpointer=memory.checkpointer)
    graph.invoke({"messages": [HumanMessage(text)]}, {"configurable": {"thread_id": thread, "user_id": user}})


def _plant(memory: TieredMemory, user: str, canary: str) -> None:
    """The canary in every layer of ``user``: messages, summary, an extracted memory and
    entity, a remembered memory, a store item and a store memory, an episode, a checkpoint."""
    for i in range(12):  # enough to evict, so the summary holds it too
        memory.after_turn(user, f"{user}-t", [
            HumanMessage(f"My name is {canary.title()} and I prefer {canary} tea. Turn {i}."),
            AIMessage(f"Noted, {canary}."),
        ])
    memory.memories.remember(user, f"user: my locker code is {canary}", "fact", 0.9)
    memory.store.put(("profiles", user), "p", {"note": f"likes {canary}"})
    memory.store.put(("memories", user), "k", {"content": f"the {canary} rule applies"})
    memory.end_session(user, f"{user}-t")
    _checkpoint(memory, user, f"{user}-graph", f"remember {canary}")
    memory.flush()


def test_forgetting_a_user_leaves_no_byte_of_them_in_any_file(tmp_path):
    data = tmp_path / "memory"
    gone, kept = "quokkavaporwave", "wombatsynthwave"
    with _open(data, MemoryConfig(job_mode="inline", max_tokens=400, system_reserve=50, output_reserve=50)) as memory:
        _plant(memory, "alice", gone)
        _plant(memory, "bob", kept)
        assert memory.threads.summary("alice", "alice-t") and memory.entities.list("alice")
        assert _hits(data, gone)  # it is on disk before: the scan can see it
        counts = memory.admin.forget(user_id="alice")
        assert counts["messages"] == 24 and counts["memories"] >= 2 and counts["checkpoints"] >= 1
        assert counts["episodes"] == 1 and counts["store_items"] == 2
    assert _hits(data, gone) == []
    # Bob is intact, in every layer.
    with _open(data) as memory:
        assert kept in memory.threads.messages("bob", "bob-t")[0].text
        assert memory.memories.search("bob", f"locker code {kept}", k=1)[0].entry.content.endswith(kept)
        assert memory.store.get(("profiles", "bob"), "p").value == {"note": f"likes {kept}"}
        assert memory.episodes.search("bob") and memory.entities.list("bob")
        assert memory.admin.stats()["index"] == {"pending": 0, "forgets_pending": 0, "held_elsewhere": None}
    assert _hits(data, kept)


@pytest.mark.parametrize("what", ["thread", "memory", "entity"])
def test_forgetting_a_thread_a_memory_or_an_entity_leaves_no_byte_of_it(tmp_path, what):
    from scripted_model import ScriptedChatModel, entity, memory as extracted, turn_tool_call

    data = tmp_path / "memory"
    gone = "AxolotlMarimba"
    # The model names what the user only hinted at: the name is in its answer, not the turn.
    answer = turn_tool_call(entities=[entity(f"{gone} Band", "organization", genre=f"{gone} jazz")],
                            memories=[extracted(f"The user's band is {gone}.", "fact", 0.9)])
    model = ScriptedChatModel(script=[turn_tool_call(), answer], default=turn_tool_call())
    with _open(data, model=model if what == "entity" else None) as memory:
        memory.after_turn("alice", "keep", [HumanMessage("I like plain water.")])
        if what == "thread":
            memory.after_turn("alice", "t", [HumanMessage(f"My dog is called {gone}."), AIMessage(f"Hello {gone}!")])
            memory.end_session("alice", "t")
            memory.flush()
            assert _hits(data, gone)  # it is on disk before: the scan can see it
            assert memory.admin.forget(thread_id="t")["messages"] == 2
        elif what == "memory":
            mid = memory.memories.remember("alice", f"user: my password hint is {gone}")
            assert _hits(data, gone)
            assert memory.memories.forget(user_id="alice", memory_id=mid)["memories"] == 1
        else:
            memory.after_turn("alice", "t", [HumanMessage("I play in a band on weekends.")])
            memory.flush()
            assert memory.entities.get("alice", f"{gone} band") is not None
            assert _hits(data, gone)  # in the profile, and in the job's saved answer before this fix
            mid = next(m.id for m in memory.memories.list("alice") if gone in m.content)
            assert memory.memories.forget(user_id="alice", memory_id=mid)["memories"] == 1
            result = memory.admin.forget(user_id="alice", entity=f"{gone.upper()} BAND")
            assert result["entities"] == 1 and result["wal_scrubbed"] is True
        assert memory.threads.messages("alice", "keep")
    assert _hits(data, gone) == []


def _progress(caplog: pytest.LogCaptureFixture) -> list[tuple[int, int]]:
    """The ``(done, total)`` of each catch-up progress line logged."""
    import re

    found = []
    for record in caplog.records:
        match = re.search(r"catching up the vector index at .*: (\d+)/(\d+) records", record.getMessage())
        if match:
            found.append((int(match[1]), int(match[2])))
    return found


def test_a_deleted_index_is_rebuilt_from_the_database(tmp_path, caplog):
    data = tmp_path / "memory"
    facts = [f"user: fact number {i} is about the colour {c}" for i, c in enumerate(["red", "teal", "ochre", "mauve"])]
    with _open(data) as memory:
        ids = [memory.memories.remember("alice", f) for f in facts]
        memory.after_turn("alice", "t", [HumanMessage("We planned the Kyoto trip."), AIMessage("Booked.")])
        memory.end_session("alice", "t")
        memory.flush()
        points = memory._parts.index.count()
    shutil.rmtree(data / "qdrant")
    with caplog.at_level("INFO", logger="langchain_tiered_memory"), _open(data) as memory:
        # The records were never in the index alone: nothing is lost, and it says so.
        assert memory.admin.stats()["memories"] == len(memory.memories.list("alice")) >= 4
        assert memory.flush(timeout=60)
        for memory_id, fact in zip(ids, facts):
            colour = fact.split()[-1]
            assert memory.memories.search("alice", f"the colour {colour}", k=1)[0].entry.id == memory_id
        assert memory.episodes.search("alice", "Kyoto trip")
        assert memory.admin.stats()["index"]["pending"] == 0
        assert memory._parts.index.count() == points
    # The rebuild reports its progress with counts, from 0 to every record, and its end.
    progress = _progress(caplog)
    assert progress[0] == (0, points) and progress[-1] == (points, points)
    assert f"caught up: {points} records indexed" in caplog.text


def test_a_large_rebuild_logs_its_progress_every_tenth(tmp_path, caplog):
    data = tmp_path / "memory"
    with _open(data) as memory:
        items = [{"content": f"user: item {i} of the list is {i * 7919 % 1000}"} for i in range(2_000)]
        memory.memories.remember_many("alice", items, merge=False)
        memory.flush()
        points = memory._parts.index.count()
    assert points == 2_000  # ~32 batches of 64
    shutil.rmtree(data / "qdrant")
    with caplog.at_level("INFO", logger="langchain_tiered_memory"), _open(data) as memory:
        assert memory.flush(timeout=120)
        assert memory._parts.index.count() == points
    progress = _progress(caplog)
    done = [d for d, _ in progress]
    assert progress[0] == (0, points) and progress[-1] == (points, points)
    assert done == sorted(done) and all(total == points for _, total in progress)
    # A line about every tenth (after the batch that crosses it), not one per batch or record.
    assert 10 <= len(progress) <= 12
    assert f"caught up: {points} records indexed" in caplog.text


def test_an_older_database_beside_a_newer_index_has_the_orphan_points_deleted(tmp_path, caplog):
    data = tmp_path / "memory"
    with _open(data) as memory:
        kept = [memory.memories.remember("alice", f"user: my {w} is in the attic") for w in ("oboe", "kayak")]
        memory.after_turn("alice", "t", [HumanMessage("We planned the Kyoto trip."), AIMessage("Booked.")])
        memory.flush()
        older_points = memory._parts.index.count()
    # Closed: the WAL was checkpointed into memory.db, which now holds the whole database.
    assert not (data / "memory.db-wal").exists() or (data / "memory.db-wal").stat().st_size == 0
    shutil.copy2(data / "memory.db", tmp_path / "older.db")
    with _open(data) as memory:
        newer = [memory.memories.remember("alice", f"user: zither {w} quartet rehearsal") for w in ("monday", "friday")]
        memory.after_turn("alice", "t2", [HumanMessage("The zither quartet rehearses in Osaka."), AIMessage("Noted.")])
        memory.flush()
        newer_points = memory._parts.index.count()
    assert newer_points > older_points
    # The older database restored beside the newer index (its WAL state with it: none).
    for side in ("memory.db-wal", "memory.db-shm"):
        (data / side).unlink(missing_ok=True)
    shutil.copy2(tmp_path / "older.db", data / "memory.db")
    with caplog.at_level("WARNING", logger="langchain_tiered_memory"), _open(data) as memory:
        [warning] = [r for r in caplog.records if "whose records are not in" in r.getMessage()]
        text = warning.getMessage()
        assert warning.levelname == "WARNING"
        assert f"held {newer_points - older_points} points" in text and "back in line with the database" in text
        assert str(data / "memory.db") in text and "rebuild the index from scratch" in text
        # The orphan points are gone: the index holds one point per record the database has.
        assert memory._parts.index.count() == older_points
        assert memory._parts.index.backend().retrieve(newer) == []
        assert memory.flush(timeout=60) and memory._parts.index.count() == older_points
        assert memory.admin.stats()["index"]["pending"] == 0
        # Search and recall find only what the database holds.
        assert {h.entry.id for h in memory.memories.search("alice", "zither quartet rehearsal", k=10)} <= set(kept)
        assert memory.memories.search("alice", "oboe attic", k=1)[0].entry.id == kept[0]
        evidence = memory.recall("alice", "zither quartet rehearses in Osaka", k=10)
        assert all("zither" not in e.text for e in evidence)
        assert not [e for e in evidence if e.grain == "fact" and e.id not in kept]
        assert [e for e in memory.recall("alice", "We planned the Kyoto trip", k=10) if "Kyoto" in e.text]
    # Once in line, opening again finds nothing to delete.
    caplog.clear()
    with caplog.at_level("WARNING", logger="langchain_tiered_memory"), _open(data) as memory:
        assert memory._parts.index.count() == older_points
    assert "whose records are not in" not in caplog.text


def test_a_partly_lost_index_catches_up_on_open(tmp_path):
    data = tmp_path / "memory"
    with _open(data) as memory:
        ids = [memory.memories.remember("alice", f"user: my note {i} mentions {w}") for i, w in enumerate(["oboe", "kayak", "quince"])]
        memory._parts.index.backend().delete(ids[:2])  # points lost, records kept
    with _open(data) as memory:
        assert memory.flush(timeout=60)
        assert memory.memories.search("alice", "oboe", k=1)[0].entry.id == ids[0]
        assert memory.memories.search("alice", "kayak", k=1)[0].entry.id == ids[1]


def test_an_older_directory_has_its_turn_points_marked_again_without_embedding_them_again(tmp_path, monkeypatch):
    data = tmp_path / "memory"
    with _open(data) as memory:
        memory.after_turn("alice", "t", [HumanMessage("Any advice on sleeping better?"),
                                         AIMessage("Less screen time at night. Does that help?")])
        memory.after_turn("alice", "t", [HumanMessage("I've switched to decaf these days."), AIMessage("Good call.")])
        memory.flush()
        backend = memory._parts.index.backend()
        turns, _ = backend.scroll(Where(equals={"grain": "turn"}), limit=10)
        ids = [r.id for r in turns]
        # A point written before recall marked questions and news carries no mark.
        backend.set_payload({i: {"asks": 0, "news": 0} for i in ids})
    import sqlite3

    conn = sqlite3.connect(data / "memory.db")
    conn.execute("PRAGMA user_version = 5")  # the schema before the mark
    conn.commit()
    conn.close()
    embedded: list[str] = []
    real = EMB.embed_documents
    monkeypatch.setattr(EMB, "embed_documents", lambda texts: embedded.extend(texts) or real(texts))
    with _open(data) as memory:
        assert memory.flush(timeout=60)
        points = memory._parts.index.backend().retrieve(ids)
        asks = {r.payload.get("asks") for r in points}
        assert asks == {1.0, 0.0}  # the user's question; the replies say something first
        news = sorted(r.payload.get("news") for r in points)
        assert news == [0.0, 0.0, 0.0, 1.0]  # "switched … these days"; replies count for nothing
        assert embedded == []  # the vectors were kept
        assert memory.recall("alice", "advice on sleeping better", k=2)


KILLED_FORGET = """
import os, sys
sys.path.insert(0, {tests!r})
from langchain_tiered_memory import MemoryConfig, TieredMemory
from langchain_tiered_memory.embeddings import HashingEmbeddings
from langchain_tiered_memory.index.recall_index import RecallIndex

memory = TieredMemory({data!r}, MemoryConfig(job_mode="inline"), embeddings=HashingEmbeddings())
print(memory.memories.remember("alice", "user: my bank is Lunar Credit Union"), flush=True)
memory.memories.remember("bob", "user: my bank is Lunar Credit Union too")
# Die between the database's delete and the index's: the points are left behind.
RecallIndex.resume_forgets = lambda self: os._exit(9)
memory.admin.forget(user_id="alice")
"""


def test_a_forget_killed_between_the_layers_finishes_on_the_next_open(tmp_path):
    data = tmp_path / "memory"
    script = KILLED_FORGET.format(tests=str(Path(__file__).parent), data=str(data))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 9, proc.stderr
    with _open(data) as memory:
        # The records went in the forget's one transaction; the journal kept what is left.
        assert memory.memories.list("alice") == []
        assert memory.flush(timeout=60)
        backend = memory._parts.index.backend()
        assert backend.count(Where(equals={"user": tenant_key("alice")})) == 0
        assert backend.count(Where(equals={"user": tenant_key("bob")})) == 1
        assert memory.admin.stats()["index"]["forgets_pending"] == 0


HOLDER = """
import sys, time
from langchain_tiered_memory import MemoryConfig, TieredMemory
from langchain_tiered_memory.embeddings import HashingEmbeddings

memory = TieredMemory({data!r}, MemoryConfig(job_mode="background"), embeddings=HashingEmbeddings())
memory.memories.remember("alice", "user: I like oolong tea")  # opens the index: this process holds it
print("holding", flush=True)
for line in sys.stdin:
    command = line.strip()
    if command == "search":
        memory.flush(timeout=60)
        hits = memory.memories.search("bob", "the user lives in Porto", k=3, peek=True)
        print("FOUND", [h.entry.content for h in hits], flush=True)
    elif command == "forgets":
        memory.flush(timeout=60)
        print("FORGETS", memory.admin.stats()["index"]["forgets_pending"], flush=True)
    elif command == "quit":
        break
memory.close()
print("closed", flush=True)
"""


def test_a_second_process_shares_the_directory_and_leaves_the_index_to_its_holder(tmp_path):
    data = tmp_path / "memory"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER.format(data=str(data))],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "holding"
        memory = _open(data, MemoryConfig(job_mode="background"))
        errors: list[BaseException] = []

        def talk(n: int) -> None:
            try:
                for i in range(5):
                    memory.after_turn("bob", f"bob-{n}", [
                        HumanMessage(f"My name is Bob and I live in Porto. Thread {n}, turn {i}."),
                        AIMessage("Noted."),
                    ])
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=talk, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        # B runs its jobs (extraction needs no index) and does not wait for the holder.
        assert memory.flush(timeout=60)
        stats = memory.admin.stats()
        assert stats["jobs"]["failed"] == 0 and stats["jobs"]["pending"] == 0 and stats["jobs"]["done"] >= 4
        assert "qdrant_url=" in stats["index"]["held_elsewhere"]
        # The context of a process without the index is the other sections, marked degraded.
        context = memory.before_turn("bob", "bob-0", query="where does Bob live?")
        assert context.degraded and "memories" in context.degraded[0] and "qdrant_url=" in context.degraded[0]
        assert "Porto" in context.memory_block  # the entities section still answers
        with pytest.raises(ShardLockedError, match="qdrant_url="):
            memory.memories.search("bob", "where does Bob live?")
        # A forget here deletes the records now and leaves the points to the holder.
        memory.memories.remember("carol", "user: I am Carol")
        assert memory.admin.forget(user_id="carol")["memories"] == 1
        # The holder indexes B's records and finishes B's forget.
        holder.stdin.write("search\n")
        holder.stdin.flush()
        found = holder.stdout.readline()
        assert found.startswith("FOUND") and "Porto" in found
        holder.stdin.write("forgets\n")
        holder.stdin.flush()
        assert holder.stdout.readline().strip() == "FORGETS 0"
        holder.stdin.write("quit\n")
        holder.stdin.flush()
        assert holder.stdout.readline().strip() == "closed"
        holder.wait(timeout=30)
        # Once the holder has gone, B takes the index over.
        deadline = time.monotonic() + 30
        while memory.admin.stats()["index"]["held_elsewhere"] and time.monotonic() < deadline:
            time.sleep(0.5)
            memory.flush(timeout=10)
        # Its upkeep took the shard over, before any search asked for it.
        assert memory.admin.stats()["index"]["held_elsewhere"] is None
        assert "Porto" in memory.memories.search("bob", "the user lives in Porto", k=3)[0].entry.content
        assert not memory.before_turn("bob", "bob-0", query="where does Bob live?").degraded
        memory.close()
    finally:
        holder.kill()
        holder.wait(timeout=30)


def test_two_memory_objects_in_one_process_share_the_shard(tmp_path, caplog):
    data = tmp_path / "memory"
    first = _open(data)
    first.memories.remember("alice", "user: I keep bees")
    with caplog.at_level("WARNING", logger="langchain_tiered_memory"):
        second = _open(data)  # a notebook cell run twice
    # The shard the first one created is whole: the second does not rebuild it.
    assert "rebuilding" not in caplog.text
    assert second.memories.search("alice", "bees")[0].entry.content == "user: I keep bees"
    second.memories.remember("alice", "user: I also keep chickens")
    assert first.memories.search("alice", "chickens")[0].entry.content == "user: I also keep chickens"
    first.close()
    assert second.memories.search("alice", "bees")  # still open for the second
    second.close()


def test_a_directory_of_version_0_1_moves_its_memories_into_the_database(tmp_path):
    data = tmp_path / "memory"
    data.mkdir()
    with tarfile.open(DATA / "directory-v0.1.tar.xz") as archive:
        archive.extractall(data, filter="data")
    assert (data / "qdrant" / "memories" / "shard").is_dir()
    with _open(data) as memory:
        contents = {e.content: e for e in memory.memories.list("alice")}
        assert set(contents) == {
            "Alice books aisle seats on planes", "user: I prefer window seats on trains",
            "The user's name is Alice.", "The user prefers green tea.", "The user lives in Paris.",
        }
        assert contents["user: I prefer window seats on trains"].metadata == {"src": "manual"}
        assert [e.content for e in memory.memories.list("bob")] == ["user: my sister lives in Porto"]
        # The store put is a store item again, its metadata no longer carrying the address.
        item = memory.store.get(("memories", "alice"), "seat-pref")
        assert item.value == {"content": "Alice books aisle seats on planes", "importance": 0.7}
        assert contents["Alice books aisle seats on planes"].metadata == {}
        assert memory.store.get(("profiles", "alice"), "p").value == {"tz": "Europe/Paris"}
        assert memory.flush(timeout=60)
        assert memory.memories.search("alice", "window seats trains", k=1)[0].entry.content.startswith("user: I prefer")
        assert memory.episodes.search("alice", "green tea Paris")
    # The old shards held text: they are gone, overwritten first.
    assert not (data / "qdrant" / "memories").exists() and not (data / "qdrant" / "episodes").exists()
    assert _hits(data, "window seats") == [] or all(h.startswith("memory.db") for h in _hits(data, "window seats"))


def test_an_emptied_database_beside_its_index_is_refused(tmp_path):
    data = tmp_path / "memory"
    with _open(data) as memory:
        memory.memories.remember("alice", "user: I have a cat")
    (data / "memory.db").write_bytes(b"")
    for side in ("memory.db-wal", "memory.db-shm"):
        (data / side).unlink(missing_ok=True)
    with pytest.raises(CorruptDatabaseError, match="backup"):
        _open(data)
    os.remove(data / "memory.db")
    with pytest.raises(CorruptDatabaseError, match="qdrant"):
        _open(data)
    shutil.rmtree(data / "qdrant")
    with _open(data) as memory:
        assert memory.admin.stats()["memories"] == 0

