"""A process that leaves its memories open exits cleanly, whatever they were doing.

Two ``TieredMemory`` objects on one directory, one with a job still running, neither closed
(re-running a notebook cell is enough): the interpreter exited with ``terminate called
without an active exception`` (exit 134) in 2 of 3 runs, a background worker still inside
the embedding runtime as it was torn down; or logged "'Parts' object has no attribute
'jobs'", the worker started before its memory was whole.
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = """
import sys, time
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_tiered_memory import TieredMemory


class SlowModel(GenericFakeChatModel):  # a model call still running at exit
    def _generate(self, *args, **kwargs):
        time.sleep(0.3)
        return super()._generate(*args, **kwargs)


answer = '{"entities": [], "memories": [{"content": "The user lives in Paris.", "importance": 0.6}]}'
first = TieredMemory(sys.argv[1], model=SlowModel(messages=iter([answer] * 4)))
second = TieredMemory(sys.argv[1])
first.after_turn("alice", "t1", [HumanMessage("I live in Paris."), AIMessage("Noted.")])
second.after_turn("bob", "t2", [HumanMessage("My sister Lena is vegetarian."), AIMessage("Okay.")])
second.recall("bob", "who is vegetarian?")
first = TieredMemory(sys.argv[1])  # the cell run again: the first object dropped, unclosed
print("exiting", flush=True)
"""


def _run(directory: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", SCRIPT, str(directory)], capture_output=True, text=True,
                          timeout=180, env=env, cwd=ROOT)


def test_twenty_processes_with_two_unclosed_memories_all_exit_cleanly(tmp_path):
    with ThreadPoolExecutor(2) as pool:  # two at a time: the machines have two cores
        results = list(pool.map(_run, [tmp_path / f"run{i}" for i in range(20)]))
    failed = [(r.returncode, r.stderr[-800:]) for r in results if r.returncode != 0]
    assert not failed, f"{len(failed)} of 20 exited uncleanly: {failed[:2]}"
    for r in results:
        assert "exiting" in r.stdout
        assert "terminate called" not in r.stderr and "has no attribute" not in r.stderr, r.stderr[-800:]
        assert "Traceback" not in r.stderr, r.stderr[-800:]
