"""Concurrency: two processes × four threads on one directory, mixing appends, reads,
recalls and forgets.

The first process opens the directory and holds the Qdrant Edge shard; the second shares
the SQLite layers and works degraded (its searches raise ``ShardLockedError``, its contexts
are marked degraded, its records wait for the holder to index them — see
tests/test_ownership.py). Each thread owns a user and three threads of its own, so what it
acknowledged is exactly what the log must hold after: every acknowledged message once, in
order, minus what it forgot. Any error that is not ours, or ours where none is documented,
is a problem. After both processes exit, one memory flushes and checks the directory.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    __package__ = "tests.reliability"

from .common import ROOT, Figures, applied_twice, child_env, index_problems, integrity, python

THREADS = 4


def worker(path: str, proc: int, ops: int, seed: int) -> None:
    """One process: open, say ready, wait for go, run the threads, print what happened."""
    from langchain_core.messages import AIMessage, HumanMessage

    from langchain_tiered_memory import MemoryConfig, ShardLockedError, TieredMemory, TieredMemoryError
    from langchain_tiered_memory.embeddings import HashingEmbeddings

    memory = TieredMemory(path, MemoryConfig(job_mode="background"), embeddings=HashingEmbeddings())
    holder = memory.admin.stats()["index"]["held_elsewhere"] is None
    print(json.dumps({"ready": True, "holder": holder}), flush=True)
    sys.stdin.readline()  # go
    acked: dict[str, list[str]] = {}
    problems: list[str] = []
    counts: dict[str, int] = {}
    spent: dict[str, float] = {}
    locked = 0

    def run(t: int) -> None:
        nonlocal locked
        rnd = random.Random(f"{seed}:{proc}:{t}")
        user = f"p{proc}t{t}"
        mine = [f"{user}-{k}" for k in range(3)]
        memories: list[str] = []
        for n in range(ops):
            thread = rnd.choice(mine)
            op = rnd.choices(
                ["append", "before", "get", "remember", "search", "forget_thread", "forget_memory"],
                [50, 15, 10, 10, 8, 4, 3],
            )[0]
            counts[op] = counts.get(op, 0) + 1
            began = time.monotonic()
            try:
                if op == "append":
                    ids = [f"{thread}-h{n}", f"{thread}-a{n}"]
                    memory.after_turn(user, thread, [
                        HumanMessage(f"My name is {user.title()} and I like item {n}.", id=ids[0]),
                        AIMessage(f"Noted {n}.", id=ids[1]),
                    ])
                    acked.setdefault(thread, []).extend(ids)
                elif op == "before":
                    context = memory.before_turn(user, thread, peek=rnd.random() < 0.5)
                    if not set(m.id for m in context.window) <= set(acked.get(thread, [])):
                        problems.append(f"{thread}: the window holds messages never acknowledged")
                    if holder and context.degraded:
                        problems.append(f"{thread}: the holder's context is degraded: {context.degraded}")
                elif op == "get":
                    log = [m.id for m in memory.threads.messages(user, thread)]
                    if log != acked.get(thread, []):
                        problems.append(f"{thread}: the log is not what was acknowledged")
                elif op == "remember":
                    memories.append(memory.memories.remember(user, f"user: {user} fact {n} about item {rnd.randint(0, 9)}"))
                elif op == "search":
                    for hit in memory.memories.search(user, f"fact about item {rnd.randint(0, 9)}", peek=rnd.random() < 0.5):
                        if hit.entry.user_id != user:
                            problems.append(f"{user}: search returned another user's memory")
                elif op == "forget_thread":
                    memory.admin.forget(user_id=user, thread_id=thread)
                    acked[thread] = []
                elif op == "forget_memory" and memories:
                    memory.memories.forget(user_id=user, memory_id=memories.pop(rnd.randrange(len(memories))))
            except ShardLockedError:
                if holder or op != "search":
                    problems.append(f"{op}: ShardLockedError where none is documented")
                locked += 1
            except TieredMemoryError as exc:
                problems.append(f"{op}: {type(exc).__name__}: {exc}")
            except Exception as exc:  # noqa: BLE001 - not ours: the finding
                problems.append(f"{op}: not our error: {type(exc).__name__}: {exc}\n{traceback.format_exc()[-800:]}")
            spent[op] = spent.get(op, 0.0) + time.monotonic() - began

    threads = [threading.Thread(target=run, args=(t,)) for t in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    flushed = memory.flush(timeout=120)
    memory.close()
    print(json.dumps({"acked": acked, "problems": problems, "counts": counts, "locked": locked,
                      "holder": holder, "flushed": flushed, "spent": spent}), flush=True)


def run(path: Path, *, ops: int, seed: int) -> Figures:
    from langchain_tiered_memory import MemoryConfig, TieredMemory
    from langchain_tiered_memory.embeddings import HashingEmbeddings

    figures = Figures("concurrency")
    start = time.monotonic()
    with TieredMemory(path, MemoryConfig(job_mode="inline"), embeddings=HashingEmbeddings()) as memory:
        memory.memories.remember("setup", "user: the index exists before the workers open it")
    procs = []
    for p in range(2):  # one after the other: the first holds the shard
        proc = subprocess.Popen(
            [python(), "-m", "tests.reliability.concurrency", "--worker", str(path), str(p), str(ops), str(seed)],
            cwd=ROOT, env=child_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        ready = json.loads(proc.stdout.readline())
        procs.append((proc, ready))
    problems = []
    if [r["holder"] for _, r in procs] != [True, False]:
        problems.append(f"expected the first process to hold the shard: {[r for _, r in procs]}")
    for proc, _ in procs:
        proc.stdin.write("go\n")
        proc.stdin.flush()
    results = []
    for proc, _ in procs:
        out, _ = proc.communicate(timeout=600)
        if proc.returncode != 0:
            problems.append(f"a worker exited with {proc.returncode}")
            continue
        results.append(json.loads(out.strip().splitlines()[-1]))
    acked: dict[str, list[str]] = {}
    locked = 0
    for r in results:
        problems += r["problems"]
        if not r["flushed"]:
            problems.append(f"a worker's flush timed out (holder: {r['holder']})")
        per_op = {op: r["spent"][op] / n for op, n in r["counts"].items() if n}
        slowest = max(per_op, key=per_op.get)
        figures.notes.append(f"{'holder' if r['holder'] else 'other'}: slowest op {slowest} "
                             f"{per_op[slowest] * 1000:.0f} ms on average (4 threads, 2 processes)")
        acked.update(r["acked"])
        figures.turns += r["counts"].get("append", 0)
        figures.inputs += sum(r["counts"].values())
        locked += r["locked"]
    with TieredMemory(path, MemoryConfig(job_mode="inline"), embeddings=HashingEmbeddings()) as memory:
        if not memory.flush(timeout=120):
            problems.append("the final flush did not finish")
        for thread, ids in acked.items():
            user = thread.rsplit("-", 1)[0]
            log = [m.id for m in memory.threads.messages(user, thread)]
            if log != ids:
                lost = len(set(ids) - set(log))
                problems.append(f"{thread}: {lost} acknowledged lost, {len(log) - len(set(log))} doubled, "
                                f"{len(set(log) - set(ids))} unexpected")
        jobs = memory.admin.stats()["jobs"]
        if jobs["pending"] or jobs["running"] or jobs["stale"] or jobs["failed"]:
            problems.append(f"jobs not all done: {jobs} {memory.admin.stats()['failed_jobs'][:2]}")
        problems += applied_twice(memory)
        problems += index_problems(memory)
    problems += integrity(path / "memory.db")
    figures.losses = len(problems)
    figures.notes += problems[:20]
    figures.notes.append(f"{locked} searches refused by ShardLockedError in the process without the shard")
    figures.seconds = time.monotonic() - start
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", nargs=4, metavar=("DIR", "PROC", "OPS", "SEED"))
    parser.add_argument("path", nargs="?")
    parser.add_argument("--ops", type=int, default=60)
    parser.add_argument("--seed", type=int, default=14)
    args = parser.parse_args(argv)
    if args.worker:
        d, p, o, s = args.worker
        worker(d, int(p), int(o), int(s))
        return 0
    figures = run(Path(args.path), ops=args.ops, seed=args.seed)
    print(json.dumps(figures.__dict__), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
