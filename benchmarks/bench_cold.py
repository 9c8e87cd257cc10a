"""A cold start: a new process opens a memory directory and takes its first turn.

Each run is a new ``python -c`` process that imports the package, opens the directory
(``TieredMemory(path)``, the default MiniLM embeddings) and calls ``before_turn`` once with
a query (window, memories, recall: the query embedded). Two cases, their runs interleaved so
that a burst of load on a shared machine hits both alike:

* ``background load``: as shipped — opening starts loading the embedding model in a thread
  (onnxruntime loads with the GIL released) while the tokenizer, database and shard open;
* ``load at first embedding``: the same with that start turned off (the model loads inside
  the first ``before_turn``, as before issue 42).

``--pause`` waits that long between the open and the first turn (what an agent waiting for
its first request, or a notebook's next cell, gives the load). Printed per case: the median import, open and first ``before_turn`` (ms), and open + first
turn together (what a script that opens and asks at once waits); issue 42's target is a first
``before_turn`` ≤ 150 ms. The directory is built once (``--messages`` messages on one thread,
``--memories`` memories of one user) with the same model.

    python benchmarks/bench_cold.py [--runs 5] [--messages 2000] [--memories 2000] [--pause 0]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_window import conversation, facts  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

PROBE = r"""
import json, sys, time
start = time.perf_counter()
from langchain_tiered_memory import MemoryConfig, TieredMemory
if sys.argv[2] == "off":
    from langchain_tiered_memory.embeddings import MiniLMEmbeddings
    MiniLMEmbeddings.load_in_background = lambda self: None
imported = time.perf_counter()
memory = TieredMemory(sys.argv[1], MemoryConfig())
opened = time.perf_counter()
time.sleep(float(sys.argv[3]))  # a user reading, an agent waiting for its first request
asked = time.perf_counter()
memory.before_turn("u", "t", query="Which city did the user visit in May?")
first = time.perf_counter()
memory.close()
print(json.dumps({"import": (imported - start) * 1000, "open": (opened - imported) * 1000,
                  "first": (first - asked) * 1000}))
"""

CASES = {"background load": "on", "load at first embedding": "off"}


def build(path: str, messages: int, memories: int) -> None:
    from langchain_tiered_memory import MemoryConfig, TieredMemory

    with TieredMemory(path, MemoryConfig(job_mode="inline")) as memory:
        said = conversation(messages)
        for i in range(0, len(said), 200):
            memory.after_turn("u", "t", said[i : i + 200])
        items = facts(memories)
        for i in range(0, len(items), 1_000):
            memory.memories.remember_many("u", items[i : i + 1_000], merge=False)
        memory.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--messages", type=int, default=2_000)
    parser.add_argument("--memories", type=int, default=2_000)
    parser.add_argument("--pause", type=float, default=0.0, help="seconds between the open and the first turn")
    args = parser.parse_args()
    root = tempfile.mkdtemp(prefix="bench-cold-")
    try:
        build(root, args.messages, args.memories)
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        found: dict[str, list[dict[str, float]]] = {name: [] for name in CASES}
        for _ in range(args.runs):
            for name, flag in CASES.items():
                run = subprocess.run([sys.executable, "-c", PROBE, root, flag, str(args.pause)], capture_output=True, text=True,
                                     check=True, env=env, cwd=ROOT)
                found[name].append(json.loads(run.stdout.strip().splitlines()[-1]))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"{args.messages:,} messages × {args.memories:,} memories; first turn {args.pause:g} s after the open; "
          f"median of {args.runs} new processes each (ms)\n")
    print("| case | import | TieredMemory() | first before_turn | open + first |")
    print("|---|---|---|---|---|")
    medians = {}
    for name, runs in found.items():
        m = {k: statistics.median(r[k] for r in runs) for k in ("import", "open", "first")}
        both = statistics.median(r["open"] + r["first"] for r in runs)
        medians[name] = (m, both)
        print(f"| {name} | {m['import']:.0f} | {m['open']:.0f} | {m['first']:.0f} | {both:.0f} |")
    shipped, before = medians["background load"], medians["load at first embedding"]
    print(f"\nfirst before_turn: {shipped[0]['first']:.0f} ms against {before[0]['first']:.0f} "
          f"({before[0]['first'] / shipped[0]['first']:.2f}× faster); open + first: "
          f"{before[1] / shipped[1]:.2f}× — target first before_turn ≤ 150 ms: "
          f"{'ok' if shipped[0]['first'] <= 150 else 'MISSED'}")


if __name__ == "__main__":
    main()
