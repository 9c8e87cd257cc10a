"""Long-term recall at scale: one user holding 1k, 10k and 100k memories.

The memories are loaded the way an application stores them — ``memory.remember_many`` in
batches of 1,000, with the near-duplicate merge check and the capacity check of every write
(the cap is set above the size) — into the default embedded index (a Qdrant Edge shard). Each
memory is a synthetic statement ("user: ..."/"assistant: ...") over a 5,000-word vocabulary;
each query takes 3–5 words of one memory plus an unrelated word. Vectors come from
``HashingEmbeddings`` (lexical feature hashing, 384-d): embedding 100k texts with MiniLM takes
too long here, and search latency does not depend on what the numbers mean. The query
embedding is timed as a column of its own (hashing here; MiniLM's is printed once beside it).

Per size, every system answers the same ``--queries`` queries (top 5):

* ``ours``: ``memory.search`` — the index's dense and BM25 legs, the records read from the
  database, ranked by ``scoring.py``, the recall counted (a database write);
* ``InMemoryStore``: LangGraph's ``InMemoryStore`` with an index over ``content``;
* ``numpy``: brute-force cosine over a float32 matrix (dense only): the floor.

``InMemoryStore`` gets every query at 100k too. It scans every item on each query (11–24 ms
per 1,000 items here, measured at 1k and 3k), so at 100k its 200 queries alone take some
4–8 minutes: the longest part of the run.

Besides, ``memory.store.put`` into ``("memories", user)`` is timed with 100 memories and
with 10,000 (each put is one exact memory: no merge).

The run ends with issue 12's targets, each ok or MISSED: search p50 at the largest size ≤ 2×
that at the smallest (same run); ≥ 100× ``InMemoryStore`` at the largest size (p50 ratio);
``store.put`` with 10,000 memories within 2× of the put with 100.

    python benchmarks/bench_recall.py [--sizes 1000,10000,100000] [--queries 200]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import tempfile
import time
import uuid

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

from langchain_tiered_memory import MemoryConfig, TieredMemory
from langchain_tiered_memory.embeddings import HashingEmbeddings

K = 5
USER = "alice"
_WORDS = [f"w{i:04d}" for i in range(5_000)]


def statements(n: int, rng: random.Random) -> list[str]:
    return [
        f"{rng.choice(['user', 'assistant'])}: " + " ".join(rng.choice(_WORDS) for _ in range(rng.randint(8, 14)))
        for _ in range(n)
    ]


def queries(texts: list[str], n: int, rng: random.Random) -> list[str]:
    out = []
    for _ in range(n):
        words = rng.choice(texts).split()[1:]
        out.append(" ".join(rng.sample(words, min(len(words), rng.randint(3, 5))) + [rng.choice(_WORDS)]))
    return out


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def timed(fn, items) -> list[float]:
    out = []
    for item in items:
        start = time.perf_counter()
        fn(item)
        out.append((time.perf_counter() - start) * 1000)
    return out


def run_size(size: int, n_queries: int, rng: random.Random, emb: HashingEmbeddings) -> dict[str, float]:
    texts = statements(size, rng)
    asked = queries(texts, n_queries, rng)
    root = tempfile.mkdtemp(prefix="bench-recall-")
    config = MemoryConfig(job_mode="inline", max_memories_per_user=size * 2)
    row: dict[str, float] = {"size": size}
    try:
        with TieredMemory(root, config, embeddings=emb) as memory:
            start = time.perf_counter()
            for i in range(0, size, 1_000):
                memory.memories.remember_many(USER, [{"content": t} for t in texts[i : i + 1_000]])
            row["load_ms_per_memory"] = (time.perf_counter() - start) * 1000 / size
            memory.flush()
            start = time.perf_counter()
            memory.admin.optimize()  # what the background optimizer would have done by now
            row["optimize_s"] = time.perf_counter() - start
            memory.memories.search(USER, asked[0], k=K)  # warm
            row["embed_p50"] = statistics.median(timed(emb.embed_query, asked))
            ours = timed(lambda q: memory.memories.search(USER, q, k=K), asked)
            row["ours_p50"], row["ours_p99"] = statistics.median(ours), pct(ours, 0.99)
        matrix = np.asarray(emb.embed_documents(texts), dtype=np.float32)
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)

        def brute(q: str) -> None:
            v = np.asarray(emb.embed_query(q), dtype=np.float32)
            np.argpartition(-(matrix @ v), K)[:K]

        row["numpy_p50"] = statistics.median(timed(brute, asked))
        from langgraph.store.memory import InMemoryStore

        store = InMemoryStore(index={"dims": emb.dimension, "embed": emb, "fields": ["content"]})
        for i in range(0, size, 1_000):
            store.batch([_put(("memories", USER), str(uuid.uuid4()), {"content": t}) for t in texts[i : i + 1_000]])
        ims = timed(lambda q: store.search(("memories", USER), query=q, limit=K), asked)
        row["inmemorystore_p50"] = statistics.median(ims)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return row


def _put(namespace, key, value):
    from langgraph.store.base import PutOp

    return PutOp(namespace, key, value)


def store_puts(counts: list[int], n_puts: int, rng: random.Random, emb: HashingEmbeddings) -> dict[int, float]:
    """p50 of one ``store.put`` into ``("memories", user)`` with ``count`` memories already."""
    out = {}
    for count in counts:
        root = tempfile.mkdtemp(prefix="bench-put-")
        try:
            with TieredMemory(root, MemoryConfig(job_mode="inline", max_memories_per_user=count * 2), embeddings=emb) as m:
                texts = statements(count + n_puts, rng)
                for i in range(0, count, 1_000):
                    m.memories.remember_many(USER, [{"content": t} for t in texts[i : min(count, i + 1_000)]])
                puts = texts[count:]
                out[count] = statistics.median(
                    timed(lambda t: m.store.put(("memories", USER), str(uuid.uuid4()), {"content": t}), puts)
                )
        finally:
            shutil.rmtree(root, ignore_errors=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--puts", type=int, default=50)
    args = parser.parse_args()
    rng = random.Random(7)
    emb = HashingEmbeddings(384)
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = [run_size(size, args.queries, rng, emb) for size in sizes]
    from langchain_tiered_memory.embeddings import MiniLMEmbeddings

    minilm = MiniLMEmbeddings()
    minilm.embed_query("warm up")
    mini = statistics.median(timed(minilm.embed_query, [f"which colour is item {i}?" for i in range(50)]))
    print(f"one user; top {K}; {args.queries} queries per size; ms per call "
          f"(MiniLM query embedding, for scale: {mini:.2f} ms p50)\n")
    print("| memories | load ms/memory | optimize s | query embedding p50 | ours p50 | ours p99 | InMemoryStore p50 | numpy p50 | InMemoryStore / ours |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['size']:,} | {r['load_ms_per_memory']:.2f} | {r['optimize_s']:.1f} | {r['embed_p50']:.3f} | {r['ours_p50']:.3f} | "
              f"{r['ours_p99']:.3f} | {r['inmemorystore_p50']:.3f} | {r['numpy_p50']:.3f} | "
              f"{r['inmemorystore_p50'] / r['ours_p50']:.1f}× |")
    if len(rows) > 1:
        print(f"\nours at {rows[-1]['size']:,} / ours at {rows[0]['size']:,}: "
              f"{rows[-1]['ours_p50'] / rows[0]['ours_p50']:.2f}× (target ≤ 2×)")
    puts = store_puts([100, 10_000], args.puts, rng, emb)
    print(f"\nstore.put into ('memories', user): p50 {puts[100]:.2f} ms with 100 memories, "
          f"{puts[10_000]:.2f} ms with 10,000: {puts[10_000] / puts[100]:.2f}× (target ≤ 2×)")
    print("\ntargets:")
    for line in targets(rows, puts):
        print(f"- {line}")


def _verdict(met: bool) -> str:
    return "ok" if met else "MISSED"


def targets(rows: list[dict[str, float]], puts: dict[int, float]) -> list[str]:
    """Issue 12's three targets, each with its measured value and ok / MISSED."""
    first, last = min(rows, key=lambda r: r["size"]), max(rows, key=lambda r: r["size"])
    out = []
    if len(rows) > 1:
        growth = last["ours_p50"] / first["ours_p50"]
        out.append(f"search p50 at {last['size']:,} ≤ 2× that at {first['size']:,}: {growth:.2f}× — "
                   f"{_verdict(growth <= 2)}")
    else:
        out.append(f"search p50 at the largest size ≤ 2× that at the smallest: n/a (one size, {first['size']:,})")
    speedup = last["inmemorystore_p50"] / last["ours_p50"]
    out.append(f"≥ 100× InMemoryStore at {last['size']:,} (p50 ratio): {speedup:.1f}× — {_verdict(speedup >= 100)}")
    put_growth = puts[10_000] / puts[100]
    out.append(f"store.put with 10,000 memories ≤ 2× the put with 100: {put_growth:.2f}× — "
               f"{_verdict(put_growth <= 2)}")
    return out


if __name__ == "__main__":
    main()
