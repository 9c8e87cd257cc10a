"""Issue 42, item 4: a cold start. Opening a memory starts loading the local embedding model
in the background, so that its first turn does not wait for the load; a manual memory (a
look) loads nothing; a process that exits while the load runs exits cleanly. Each case runs
in a new process: the loaded session is shared by the whole process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parent.parent

PROBE = """
import sys, time
from langchain_tiered_memory import MemoryConfig, TieredMemory
from langchain_tiered_memory.embeddings import minilm

memory = TieredMemory(sys.argv[1], MemoryConfig(job_mode=sys.argv[2]))
inner = memory._parts.query_cached().inner
if sys.argv[3] == "wait":
    deadline = time.monotonic() + float(sys.argv[4])
    while inner._session is None and time.monotonic() < deadline:
        time.sleep(0.05)
    print("LOADED" if inner._session is not None else "NOT LOADED", flush=True)
    memory.close()
else:
    print("EXITING", flush=True)  # unclosed, the load still running: exit must not abort
"""


def _run(tmp_path: Path, mode: str, how: str, wait_s: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-c", PROBE, str(tmp_path / "m"), mode, how, str(wait_s)],
                          capture_output=True, text=True, env=env, timeout=180)


def test_opening_a_memory_loads_the_local_model_before_any_embedding(tmp_path):
    proc = _run(tmp_path, "inline", "wait")
    assert proc.returncode == 0, proc.stderr
    assert "LOADED" in proc.stdout.split()


def test_a_manual_memory_loads_no_model_on_its_own(tmp_path):
    # Manual mode is a look (the inspector, a script reading): it starts nothing.
    proc = _run(tmp_path, "manual", "wait", wait_s=2)
    assert proc.returncode == 0, proc.stderr
    assert "NOT LOADED" in proc.stdout


def test_a_process_exiting_while_the_model_loads_exits_cleanly(tmp_path):
    for _ in range(2):  # the abort this guards against came in 2 runs of 3
        proc = _run(tmp_path, "background", "exit")
        assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
        assert "EXITING" in proc.stdout
        assert "terminate called" not in proc.stderr
