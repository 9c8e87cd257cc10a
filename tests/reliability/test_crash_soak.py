"""Crash soak (see soak.py), and the two ways it found to leave a point without a record."""

from __future__ import annotations

import json
import subprocess

import pytest
from langchain_core.messages import HumanMessage

from langchain_tiered_memory import MemoryConfig, TieredMemory
from langchain_tiered_memory.embeddings import HashingEmbeddings
from langchain_tiered_memory.index.recall_index import RecallIndex

from .common import ROOT, child_env, index_problems, integrity, python


def test_30_random_sigkills_lose_nothing_and_leave_a_consistent_directory(tmp_path):
    proc = subprocess.run(
        [python(), "-m", "tests.reliability.soak", str(tmp_path / "memory"), "--kills", "30", "--seed", "14"],
        cwd=ROOT, env=child_env(), capture_output=True, text=True, timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    figures = json.loads(proc.stdout.strip().splitlines()[-1])
    assert figures["kills"] == 30
    assert figures["turns"] > 30  # each child got some turns in before its kill
    assert figures["losses"] == 0, figures["notes"]


class _Crash(BaseException):
    """Stands in for a SIGKILL at one point of the code (not an Exception: nothing catches it)."""


def test_a_crash_between_a_merge_and_its_point_deletion_leaves_no_orphan_point(tmp_path, monkeypatch):
    config = MemoryConfig(job_mode="inline")
    memory = TieredMemory(tmp_path / "m", config, embeddings=HashingEmbeddings())
    memory.memories.remember("u", "user: I like green tea very much")

    def crash(*args, **kwargs):
        raise _Crash

    # The merge commits, then the process "dies" before the index drops the merged point.
    monkeypatch.setattr(RecallIndex, "resume_forgets", crash)
    monkeypatch.setattr(RecallIndex, "delete", crash)
    with pytest.raises(_Crash):
        memory.memories.remember("u", "user: I like green tea very much!")
    monkeypatch.undo()
    memory.close()
    with TieredMemory(tmp_path / "m", config, embeddings=HashingEmbeddings()) as memory:
        assert memory.flush(timeout=30)
        assert len(memory.memories.list("u")) == 1  # merged
        assert index_problems(memory) == []
    assert integrity(tmp_path / "m" / "memory.db") == []


def test_a_memory_forgotten_while_it_is_embedded_leaves_no_point(tmp_path):
    forget: list = []

    class Slow(HashingEmbeddings):
        def embed_documents(self, texts):
            # The index embeds the new memory; meanwhile (here: right now) it is forgotten.
            while forget:
                forget.pop()()
            return super().embed_documents(texts)

    config = MemoryConfig(job_mode="inline")
    with TieredMemory(tmp_path / "m", config, embeddings=Slow()) as memory:
        memory.after_turn("u", "t", [HumanMessage("hi")])
        keep = memory.memories.remember("u", "user: I keep this one")
        gone = "0b7d3c1e-58a4-4d4e-9a9b-6f1c2d3e4f50"
        forget.append(lambda: memory.memories.forget(user_id="u", memory_id=gone))
        memory.memories.remember("u", "user: I forget this one", memory_id=gone)
        assert [m.id for m in memory.memories.list("u")] == [keep]
        assert memory.flush(timeout=30)
        assert index_problems(memory) == []
