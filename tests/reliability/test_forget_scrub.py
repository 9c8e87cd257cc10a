"""Forgetting leaves no byte of what was forgotten in any file of the directory, ignoring
case: after every kind of forget (user, thread, memory, entity), the job journal holding the
model's answers included, and with a reader open in this process or another — the forget
then comes back within its bounded wait, says the log is still held, and the retry scrubs
it once the reader ends. (Helpers and the ``--long`` probe: ``scrub.py``.)"""

from __future__ import annotations

import contextlib
import json
import logging
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .common import ROOT, child_env, python
from .scrub import (
    BOUND,
    CANARIES,
    ENTITY,
    KINDS,
    VICTIM,
    Warnings,
    forget,
    forget_with_reader,
    left,
    open_memory,
    other_process_reader,
    plant,
    scan,
    same_process_reader,
)


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_of_forget_leaves_no_byte_of_it_in_any_file(tmp_path, kind):
    data = tmp_path / "memory"
    with open_memory(data) as memory:
        ids = plant(memory)
        # Every canary is on disk before, the model's answers in the journal among them:
        # the scan can see what it looks for.
        before = scan(data, list(CANARIES.values()))
        assert all(before.values()), before
        result = forget(memory, kind, ids)
        assert result["wal_scrubbed"] is True
        if kind in ("memory", "entity"):
            # The waiting job's saved answer and error quoted it (and, for the entity, a
            # done job's dropped-item reason named it).
            assert result["job_answers_scrubbed"] >= 1, result
        assert left(data, kind) == {}  # while the memory is still open
        assert memory.admin.stats()["jobs"]["failed"] == 0
    # Closed too; the keeper's records are still there, and seen by the scan.
    assert left(data, kind, kept=True) == {}


def test_a_done_job_keeps_no_model_text_only_what_stats_read(tmp_path):
    data = tmp_path / "memory"
    with open_memory(data) as memory:
        plant(memory)
        done = [j for j in memory._parts.storage.jobs.rows("done", limit=100) if j.user_id == VICTIM]
        assert done and all(CANARIES["memory"] not in (j.result or "") for j in done)
        kept = [json.loads(j.result) for j in done if j.result]
        # What is left of the canary turn's answer: the dropped attribute's record (of the
        # others: how they were asked, at most).
        assert all(set(part) <= {"dropped", "method"} for k in kept for part in k.values())
        [record] = [k for k in kept if "dropped" in k.get("extraction", {})]
        [dropped] = record["extraction"]["dropped"]
        assert dropped["kind"] == "attribute" and ENTITY in dropped["reason"]
        assert set(record["extraction"]) <= {"dropped", "method"}
        assert memory.admin.stats()["dropped_items"] == 1
        memory.admin.forget(user_id=VICTIM, entity=ENTITY)
        # The reason named the forgotten entity: redacted, still counted.
        assert memory.admin.stats()["dropped_items"] == 1
        assert all(ENTITY.lower() not in (d["reason"] or "").lower() for d in memory.admin.stats()["dropped"])


@pytest.mark.parametrize("where", ["same", "other"])
@pytest.mark.parametrize("kind", KINDS)
def test_a_forget_with_a_reader_open_is_bounded_says_so_and_is_scrubbed_after(tmp_path, kind, where):
    took, escapes, losses = forget_with_reader(tmp_path, kind, where)
    assert escapes == [] and losses == []
    assert took < BOUND


def test_the_default_wait_does_not_block_for_the_busy_timeout(tmp_path):
    from langchain_tiered_memory import ConfigError, MemoryConfig

    assert MemoryConfig().scrub_wait_seconds <= 5
    with pytest.raises(ConfigError, match="scrub_wait_seconds.*every write waits as long"):
        MemoryConfig(scrub_wait_seconds=120)
    data = tmp_path / "memory"
    with open_memory(data, wait=MemoryConfig().scrub_wait_seconds) as memory:
        plant(memory)
        with other_process_reader(data), Warnings() as warned:
            start = time.monotonic()
            assert memory.admin.forget(user_id=VICTIM)["wal_scrubbed"] is False
            assert time.monotonic() - start < MemoryConfig().scrub_wait_seconds + 5  # was 30.2 s
            [message] = warned.about_the_log()
            assert "memory.admin.scrub()" in message and "read transaction" in message
            assert memory.admin.scrub(wait_seconds=0) is False  # still held: says so again
        assert memory.admin.scrub() is True
        assert left(data, "user") == {}


def test_a_reader_that_ends_within_the_wait_lets_the_forget_scrub(tmp_path):
    data = tmp_path / "memory"
    with open_memory(data, wait=15) as memory:
        plant(memory)
        with other_process_reader(data, seconds=1.0):
            start = time.monotonic()
            result = memory.admin.forget(user_id=VICTIM)
            took = time.monotonic() - start
        assert result["wal_scrubbed"] is True and took < 10
        assert left(data, "user") == {}


def test_the_background_upkeep_scrubs_once_the_reader_ends(tmp_path, monkeypatch):
    from langchain_tiered_memory.ops import forgetting
    monkeypatch.setattr(forgetting, "SCRUB_RETRY_SECONDS", 0.2)
    data = tmp_path / "memory"
    with open_memory(data) as memory:
        plant(memory)
    with open_memory(data, mode="background") as memory:
        with same_process_reader(memory):
            assert memory.admin.forget(user_id=VICTIM)["wal_scrubbed"] is False
            time.sleep(1.0)
            assert left(data, "user")  # the reader still holds it
        deadline = time.monotonic() + 20
        while left(data, "user") and time.monotonic() < deadline:
            time.sleep(0.2)
        assert left(data, "user") == {}  # no call: the worker's upkeep did it


@contextlib.contextmanager
def idle_connection(data: Path) -> Iterator[None]:
    """A connection that read once and holds no transaction: the memory's is not the last
    to close, so SQLite's own checkpoint at the last close cannot do the scrub looked for."""
    conn = sqlite3.connect(data / "memory.db")
    conn.execute("SELECT COUNT(*) FROM meta").fetchall()  # in WAL mode from now on
    try:
        yield
    finally:
        conn.close()


def test_close_scrubs_a_log_its_reader_let_go(tmp_path):
    data = tmp_path / "memory"
    with open_memory(data) as memory:
        plant(memory)
    with idle_connection(data):
        memory = open_memory(data, mode="external")
        with other_process_reader(data):
            assert memory.admin.forget(user_id=VICTIM)["wal_scrubbed"] is False
        assert left(data, "user")  # the reader is gone; nothing retried yet
        memory.close()
        assert left(data, "user") == {}


def test_closing_with_the_reader_still_open_warns_and_the_next_open_scrubs(tmp_path, caplog):
    data = tmp_path / "memory"
    with open_memory(data) as memory:
        plant(memory)
    with idle_connection(data):
        with other_process_reader(data), caplog.at_level(logging.WARNING, logger="langchain_tiered_memory"):
            memory = open_memory(data)
            start = time.monotonic()
            assert memory.admin.forget(user_id=VICTIM)["wal_scrubbed"] is False
            memory.close()
            assert time.monotonic() - start < 2 * BOUND  # the close waited as boundedly
        assert "closing:" in caplog.text and "the next open of this memory truncates it" in caplog.text
        assert left(data, "user")  # the reader ended, and no memory was open to retry
        with open_memory(data, mode="external"):
            assert left(data, "user") == {}  # opening did it


HOLD_AND_DIE = """
import os, sys
sys.path.insert(0, {tests!r})
from pathlib import Path
from reliability.scrub import open_memory, other_process_reader, VICTIM

data = Path({data!r})
memory = open_memory(data)
with other_process_reader(data):
    print(memory.admin.forget(user_id=VICTIM)["wal_scrubbed"], flush=True)
os._exit(0)  # the reader ended, and this process dies before any retry, without closing
"""


def test_a_scrub_left_by_a_process_that_died_is_done_on_the_next_open(tmp_path, caplog):
    data = tmp_path / "memory"
    with open_memory(data) as memory:
        plant(memory)
    script = HOLD_AND_DIE.format(tests=str(ROOT / "tests"), data=str(data))
    proc = subprocess.run([python(), "-c", script], capture_output=True, text=True, timeout=300, env=child_env())
    assert proc.returncode == 0 and proc.stdout.strip().splitlines()[-1] == "False", proc.stderr[-3000:]
    assert left(data, "user")  # the frames are still in the log, the scrub journaled
    with idle_connection(data), caplog.at_level(logging.INFO, logger="langchain_tiered_memory"):
        with open_memory(data, mode="external") as memory:
            assert left(data, "user") == {}  # opening did it
            assert memory.admin.scrub() is True  # nothing left to do
    assert "truncated now that its readers closed" in caplog.text


def test_the_cli_says_when_the_log_is_still_held(tmp_path):
    data = tmp_path / "memory"
    with open_memory(data) as memory:
        plant(memory)
    cli = [python(), "-m", "langchain_tiered_memory.cli", "--data-dir", str(data), "forget", "--user", VICTIM, "--yes"]
    with other_process_reader(data):
        shown = subprocess.run(cli, capture_output=True, text=True, timeout=300, env=child_env(), cwd=ROOT)
    assert shown.returncode == 0, shown.stderr[-3000:]
    assert shown.stdout.startswith("forgot ") and "wal scrubbed" not in shown.stdout
    assert "memory.db-wal still holds frames of the forgotten rows" in shown.stderr


def test_a_second_memory_on_the_directory_keeps_the_first_ones_hold_on_the_log(tmp_path):
    """Opening checked the file's header with open() and close(), which drops every POSIX lock
    the process holds on it: another process closing last then deleted memory.db-wal under
    the open memory (it failed with 'disk I/O error' at its next checkpoint)."""
    data = tmp_path / "memory"
    with open_memory(data) as memory:
        plant(memory)
        with open_memory(data, mode="manual") as look:
            assert look.admin.stats()["memories"] >= 1
        with other_process_reader(data, seconds=0.1):
            pass  # opened, read and closed elsewhere
        assert (data / "memory.db-wal").exists()
        assert memory.admin.forget(user_id=VICTIM)["wal_scrubbed"] is True
    assert left(data, "user") == {}
