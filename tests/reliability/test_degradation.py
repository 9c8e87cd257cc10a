"""Degradation that speaks: a second process on one directory, which cannot open the Qdrant
Edge shard that the first holds, says so once — one WARNING per cause and process, not one
per call — and counts every answer it gave without the index in ``stats()["degraded"]``."""

from __future__ import annotations

import json
import subprocess

from langchain_tiered_memory import MemoryConfig, TieredMemory

from .common import ROOT, child_env, python

# The second process: a web worker's life on a directory whose index another process holds.
WORKER = """
import json, logging, sys
from langchain_core.messages import AIMessage, HumanMessage
from langchain_tiered_memory import MemoryConfig, ShardLockedError, TieredMemory

logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="LOG %(levelname)s %(message)s")
config = MemoryConfig(job_mode="inline")
memory = TieredMemory({data!r}, config)
memory.after_turn("alice", "w", [HumanMessage("Where do I live again?"), AIMessage("Let me think.")])
degraded = [memory.before_turn("alice", "w", query="where does Alice live?").degraded for _ in range(5)]
refused = 0
for call in (memory.search, memory.recall) * 2:
    try:
        call("alice", "where does Alice live?")
    except ShardLockedError:
        refused += 1
again = TieredMemory({data!r}, config)  # a second memory object in the same process
again.before_turn("alice", "w", query="Porto")
print(json.dumps({{"degraded": degraded, "refused": refused, "counts": memory.admin.stats()["degraded"],
                  "again": again.admin.stats()["degraded"]}}), flush=True)
again.close()
memory.close()
"""


def test_a_second_process_says_once_that_it_recalls_nothing_and_counts_what_it_left_out(tmp_path):
    data = tmp_path / "memory"
    with TieredMemory(data, MemoryConfig(job_mode="inline")) as holder:
        holder.memories.remember("alice", "user: I live in Porto")  # this process holds the shard now
        assert holder.admin.stats()["degraded"] == {}
        worker = subprocess.run(
            [python(), "-c", WORKER.format(data=str(data))], cwd=ROOT, env=child_env(),
            capture_output=True, text=True, timeout=300,
        )
        assert worker.returncode == 0, worker.stderr[-3000:]
        # The holder is not degraded: it recalls.
        context = holder.before_turn("alice", "h", query="I live in Porto")
        assert "Porto" in context.memory_block and not context.degraded
        assert holder.admin.stats()["degraded"] == {}
    seen = json.loads(worker.stdout.strip().splitlines()[-1])
    assert all(d and "qdrant_url=" in d[0] for d in seen["degraded"]), seen["degraded"]
    assert seen["refused"] == 4
    # Five contexts without their memories section, two searches and two recalls refused.
    assert seen["counts"] == {"index_held_elsewhere": 9}
    assert seen["again"] == {"index_held_elsewhere": 1}
    warnings = [line for line in worker.stderr.splitlines() if line.startswith("LOG WARNING")
                and "without the vector index" in line]
    assert len(warnings) == 1, worker.stderr[-3000:]
    # It names the cause, what this worker sees, and the way out.
    (warning,) = warnings
    assert "index_held_elsewhere" in warning and "search() and recall() raise ShardLockedError" in warning
    assert "qdrant_url=" in warning and str(data) in warning
