"""Scaling out: turns appended and jobs completed per second with 1, 2 and 4 processes on one
PostgreSQL database, beside one process on a SQLite directory; and ``before_turn`` on a
10,000-message thread on both.

A throwaway PostgreSQL cluster is started for the run (``tests/pg_server.py``: a real
server on a Unix socket, fsync on, as SQLite's ``synchronous=FULL``) and stopped after.

* appends: each process appends two-message turns (``after_turn``, one extraction job
  journaled in the same transaction) from 2 threads for ``--seconds``, with
  ``job_mode="external"`` so that no job runs meanwhile: the rate is the log's and the
  journal's alone;
* jobs: then as many processes each run one worker on that journal (the offline
  extractor: rules, no LLM; ``HashingEmbeddings``); the rate is jobs over the time until
  no job is pending or running. The vectors' upkeep that follows is not timed: every
  process here has an index of its own — qdrant-client's local mode in memory, on every
  row, SQLite's too, since no Qdrant server can run here and the point is the relational
  store — and would index everything once per process;
* ``before_turn``: one thread of 10,000 messages, no long-term memories (so no vector
  query: the relational reads, token accounting and context assembly are timed), p50 of
  ``--calls`` calls after a warm-up.

Processes compete for the machine's cores with each other and with the server (this
machine has ``os.cpu_count()`` of them): past that many, more processes add waiting, not
work.

    python benchmarks/bench_scale.py [--seconds 5] [--calls 300] [--processes 1 2 4]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.pop("OPENAI_API_KEY", None)  # the offline extractor: the same work on every run

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

Target = dict[str, str]


def _open(target: Target, mode: str) -> Any:
    from qdrant_client import QdrantClient

    from langchain_tiered_memory import MemoryConfig, TieredMemory
    from langchain_tiered_memory.embeddings import HashingEmbeddings

    # merge_threshold=1.0: the turns differ, and each PostgreSQL process has its own index.
    config = MemoryConfig(job_mode=mode, job_backoff_seconds=0.0, merge_threshold=1.0)  # type: ignore[arg-type]
    if target["kind"] == "sqlite":
        return TieredMemory(target["dir"], config, embeddings=HashingEmbeddings(),
                            qdrant_client=QdrantClient(":memory:"))
    return TieredMemory(config=config, embeddings=HashingEmbeddings(), database_url=target["url"],
                        qdrant_client=QdrantClient(":memory:"))


def _append(target: Target, index: int, seconds: float, start_at: float, results: Any) -> None:
    from langchain_core.messages import AIMessage, HumanMessage

    memory = _open(target, "external")
    counts = [0, 0]

    def run(t: int) -> None:
        n = 0
        while time.time() < start_at + seconds:
            memory.after_turn(f"user{index}", f"p{index}-t{t}", [
                HumanMessage(f"I like tea number {index}-{t}-{n} with my friend from Lisbon."),
                AIMessage(f"Noted, turn {n}."),
            ])
            n += 1
        counts[t] = n

    time.sleep(max(0.0, start_at - time.time()))
    threads = [threading.Thread(target=run, args=(t,)) for t in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    memory.close()
    results.put(sum(counts))


def _work(target: Target, start_at: float, results: Any) -> None:
    # Opened as "external" (no worker yet) so that opening is not timed, and switched to
    # "inline" at the common start: flush() then works the shared journal in one thread
    # (one worker per process, as the background mode's) while this one watches it.
    memory = _open(target, "external")
    time.sleep(max(0.0, start_at - time.time()))
    memory._parts.jobs.mode = "inline"
    threading.Thread(target=memory.flush, daemon=True).start()
    while True:
        counts = memory._parts.storage.jobs.counts()
        if not counts.get("pending") and not counts.get("running"):
            break
        time.sleep(0.01)
    results.put(time.time())
    results.close()
    results.join_thread()
    os._exit(0)  # the upkeep left (indexing into this process's own index) is not measured


def _in_processes(fn: Any, n: int, *args: Any) -> list[Any]:
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    start_at = time.time() + 6.0  # every process imports and opens before the common start
    procs = [ctx.Process(target=fn, args=(*args[:1], *((i,) if fn is _append else ()), *args[1:], start_at, results))
             for i in range(n)]
    for p in procs:
        p.start()
    out = [results.get(timeout=900) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    return [start_at, *out]


def throughput(target: Target, processes: int, seconds: float) -> tuple[float, float, int]:
    """(turns/s appended, jobs/s completed, jobs) with ``processes`` processes."""
    start, *turns = _in_processes(_append, processes, target, seconds)
    appended = sum(turns)
    start, *ends = _in_processes(_work, processes, target)
    return appended / seconds, appended / (max(ends) - start), appended


def before_turn_p50(target: Target, messages: int, calls: int) -> float:
    """Milliseconds, p50 of ``before_turn`` on a thread of ``messages`` messages."""
    from langchain_core.messages import AIMessage, HumanMessage

    memory = _open(target, "external")
    try:
        batch = []
        for i in range(messages):
            text = f"message {i} about the budget, the hotel in Kyoto and the train schedule"
            batch.append(HumanMessage(text) if i % 2 == 0 else AIMessage(text))
            if len(batch) == 100:
                memory.after_turn("reader", "long", batch, extract=False)
                batch = []
        for _ in range(20):
            memory.before_turn("reader", "long", peek=True)
        times = []
        for _ in range(calls):
            t0 = time.perf_counter()
            memory.before_turn("reader", "long", peek=True)
            times.append((time.perf_counter() - t0) * 1000)
        return statistics.median(times)
    finally:
        memory.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="append phase per configuration")
    parser.add_argument("--calls", type=int, default=300, help="timed before_turn calls")
    parser.add_argument("--messages", type=int, default=10_000, help="messages of the before_turn thread")
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2, 4])
    args = parser.parse_args()

    import pg_server

    server = pg_server.start(durable=True)
    rows: list[tuple[str, float, float, int]] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            sqlite = {"kind": "sqlite", "dir": str(Path(tmp) / "memory")}
            rows.append(("SQLite, 1 process", *throughput(sqlite, 1, args.seconds)))
            for n in args.processes:
                pg = {"kind": "postgresql", "url": server.new_database()}
                rows.append((f"PostgreSQL, {n} process{'es' if n > 1 else ''}", *throughput(pg, n, args.seconds)))
            sqlite_bt = before_turn_p50({"kind": "sqlite", "dir": str(Path(tmp) / "reader")}, args.messages, args.calls)
            pg_bt = before_turn_p50({"kind": "postgresql", "url": server.new_database()}, args.messages, args.calls)
    finally:
        server.stop()

    base_turns, base_jobs = rows[0][1], rows[0][2]
    print(f"\nbench_scale: {os.cpu_count()} cores, {args.seconds:g} s of appends per row, "
          "2 appending threads per process, offline extraction\n")
    print(f"| {'configuration':<24} | {'turns/s':>8} | {'× SQLite':>8} | {'jobs/s':>7} | {'× SQLite':>8} | {'jobs':>6} |")
    print(f"|{'-' * 26}|{'-' * 10}|{'-' * 10}|{'-' * 9}|{'-' * 10}|{'-' * 8}|")
    for name, turns, jobs, n in rows:
        print(f"| {name:<24} | {turns:>8.0f} | {turns / base_turns:>8.2f} | {jobs:>7.1f} | {jobs / base_jobs:>8.2f} | {n:>6} |")
    print(f"\nbefore_turn p50, one thread of {args.messages:,} messages ({args.calls} calls): "
          f"SQLite {sqlite_bt:.2f} ms, PostgreSQL {pg_bt:.2f} ms (× {pg_bt / sqlite_bt:.2f})")


if __name__ == "__main__":
    main()
