"""Long-term recall latency: ``VectorMemory.search`` beside LangGraph stores, qdrant-client's
local mode and a numpy brute-force floor, on the same memories, vectors and queries.

Data: ``--users`` users (100) share ``size`` memories (default sizes 1k, 10k and 100k, so
10, 100 and 1,000 a user; ``--sizes 1000000`` adds 10,000 a user). Each memory is a
synthetic statement with a speaker prefix ("user: ..."/"assistant: ...") over a
5,000-word vocabulary; each query takes 3-5 words of one of the user's memories plus an
unrelated word. Vectors are 384-d from ``HashingEmbeddings`` (lexical feature hashing):
embedding 100k texts with MiniLM takes too long here, and recall latency does not depend
on what the numbers mean. Every vector, query ones included, is computed once before
timing and served to every system by a lookup ``Embeddings``, so query embedding is
excluded everywhere.

Systems, each asked for the user's top 5 for the same query sequence:

* ``ours``: ``VectorMemory.search`` on the default Qdrant Edge backend, the full path:
  dense + BM25 candidates fused by RRF, decay-weighted scoring in the engine, and the
  batched access update (a payload write per search). Loaded through the backend in
  bulk (no merge check), then optimised as the background optimizer would.
* ``edge-raw``: the same backend's hybrid query alone (no entries, no access update).
* ``InMemoryStore``: ``langgraph.store.memory.InMemoryStore`` with an index over the
  ``content`` field, one namespace per user.
* ``SqliteStore``: ``langgraph.store.sqlite.SqliteStore`` with an index; it needs the
  sqlite-vec extension, which this Python's sqlite3 cannot load: the error is printed.
* ``qdrant-local``: the same ``VectorMemory.search`` on ``QdrantServerBackend`` over
  qdrant-client's local mode (``QdrantClient(":memory:")``), which evaluates filters in
  Python: a few queries only.
* ``numpy``: per-user brute-force cosine top 5 over a prepared float32 matrix (dense only,
  no BM25, no update): the floor.

Latencies are per call, p50 and p99 in milliseconds; ratios are against ``ours`` in the
same run.

    python benchmarks/bench_recall.py [--sizes 1000,10000,100000] [--users 100]
        [--queries 300] [--slow-queries 60] [--local-queries 3] [--skip qdrant-local]
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from datetime import datetime, timedelta, timezone
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
from langchain_core.embeddings import Embeddings

from langchain_tiered_memory.backends import EdgeBackend, PointData, QdrantServerBackend
from langchain_tiered_memory.config import MemoryConfig
from langchain_tiered_memory.embeddings import HashingEmbeddings, embedding_model_id
from langchain_tiered_memory.vectors import MemoryEntry, VectorMemory

DIM = 384
K = 5
NOW = datetime(2025, 6, 1, tzinfo=timezone.utc)


class LookupEmbeddings(Embeddings):
    """Serves precomputed vectors by text: embedding costs a dict lookup."""

    model_id = "bench-hashing-384"
    dimension = DIM

    def __init__(self, table: dict[str, np.ndarray]) -> None:
        self.table = table

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.table[t].tolist() for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.table[text].tolist()


def make_data(size: int, users: int, queries: int, seed: int = 7) -> dict[str, Any]:
    rng = random.Random(seed)
    vocab = [f"{rng.choice('bcdfghklmnprstvz')}{rng.choice('aeiou')}{rng.choice('bcdfghklmnprstvz')}{i}" for i in range(5_000)]
    texts, owners = [], []
    seen: set[str] = set()
    for i in range(size):
        while True:
            speaker = "user" if rng.random() < 0.7 else "assistant"
            text = f"{speaker}: " + " ".join(rng.choices(vocab, k=rng.randint(8, 14)))
            if text not in seen:
                break
        seen.add(text)
        texts.append(text)
        owners.append(f"user-{i % users}")
    qtexts, qusers = [], []
    for _ in range(queries):
        j = rng.randrange(size)
        words = texts[j].split(": ", 1)[1].split()
        pick = rng.sample(words, k=min(len(words), rng.randint(3, 5))) + [rng.choice(vocab)]
        qtexts.append(" ".join(pick))
        qusers.append(owners[j])
    return {"texts": texts, "owners": owners, "qtexts": qtexts, "qusers": qusers}


def embed_all(texts: list[str]) -> np.ndarray:
    emb = HashingEmbeddings(DIM)
    out = np.empty((len(texts), DIM), dtype=np.float32)
    step = 10_000
    for start in range(0, len(texts), step):
        out[start : start + step] = np.asarray(emb.embed_documents(texts[start : start + step]), dtype=np.float32)
    return out


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(round(0.99 * (len(ordered) - 1))))]
    return statistics.median(ordered), p99


def timed(fn: Any, args: list[tuple[Any, ...]], warmup: int = 10) -> list[float]:
    for a in args[:warmup]:
        fn(*a)
    out = []
    for a in args:
        t = time.perf_counter()
        fn(*a)
        out.append((time.perf_counter() - t) * 1000)
    return out


def entries_payloads(data: dict[str, Any]) -> list[dict[str, Any]]:
    rng = random.Random(11)
    payloads = []
    for text, owner in zip(data["texts"], data["owners"]):
        when = NOW - timedelta(days=rng.uniform(0, 120))
        payloads.append(
            MemoryEntry(
                id=str(uuid.uuid4()), content=text, memory_type=rng.choice(["fact", "preference", "experience", "instruction"]),
                user_id=owner, importance=round(rng.uniform(0.3, 1.0), 2),
                created_at=when, last_accessed=when,
            )
        )
    return payloads


def load_backend(backend: Any, entries: list[MemoryEntry], vectors: np.ndarray, batch: int = 1_000) -> None:
    for start in range(0, len(entries), batch):
        chunk = entries[start : start + batch]
        backend.upsert(
            [PointData(e.id, vectors[start + i].tolist(), e.content, e.to_payload()) for i, e in enumerate(chunk)]
        )


def run_size(size: int, args: argparse.Namespace) -> dict[str, tuple[float, float, int]]:
    print(f"\n=== {size:,} memories, {args.users} users ({size // args.users:,} per user) ===", flush=True)
    t0 = time.perf_counter()
    data = make_data(size, args.users, args.queries)
    vectors = embed_all(data["texts"])
    qvectors = embed_all(data["qtexts"])
    table = {t: vectors[i] for i, t in enumerate(data["texts"])}
    table.update({t: qvectors[i] for i, t in enumerate(data["qtexts"])})
    emb = LookupEmbeddings(table)
    entries = entries_payloads(data)
    print(f"data and vectors: {time.perf_counter() - t0:.1f} s", flush=True)
    queries = list(zip(data["qusers"], data["qtexts"]))
    results: dict[str, tuple[float, float, int]] = {}
    workdir = tempfile.mkdtemp(prefix="bench-recall-")
    config = MemoryConfig()
    try:
        # --- ours on Qdrant Edge ---------------------------------------------------------
        t = time.perf_counter()
        backend = EdgeBackend(os.path.join(workdir, "edge"), DIM, embedding_model_id(emb), optimize_after=0,
                              max_tenant_points=config.max_memories_per_user)
        load_backend(backend, entries, vectors)
        load_s = time.perf_counter() - t
        t = time.perf_counter()
        backend.optimize()
        print(f"ours: loaded in {load_s:.1f} s, optimized in {time.perf_counter() - t:.1f} s "
              f"(tenant graphs: {backend.tenant_graphs})", flush=True)
        memory = VectorMemory(backend, emb, config, clock=lambda: NOW)
        hits = [len(memory.search(u, q, k=K)) for u, q in queries[:50]]
        lat = timed(lambda u, q: memory.search(u, q, k=K), queries)
        results["ours"] = (*percentiles(lat), len(lat))
        from langchain_tiered_memory.backends import Decay, HybridQuery, Where

        def raw(u: str, q: str) -> None:
            backend.hybrid(HybridQuery(
                vector=emb.embed_query(q), text=q, where=Where(equals={"user_id": u}), limit=K,
                candidates=50, min_relevance=config.score_threshold, decay=Decay(NOW, config.decay),
            ))

        lat = timed(raw, queries)
        results["edge-raw"] = (*percentiles(lat), len(lat))
        print(f"ours: mean hits per query {sum(hits) / len(hits):.2f} (score_threshold {config.score_threshold})", flush=True)
        memory.close()

        # --- numpy floor -----------------------------------------------------------------
        by_user: dict[str, list[int]] = {}
        for i, owner in enumerate(data["owners"]):
            by_user.setdefault(owner, []).append(i)
        mats = {u: (np.asarray(ix), vectors[ix]) for u, ix in by_user.items()}

        def brute(u: str, q: str) -> None:
            ix, mat = mats[u]
            scores = mat @ table[q]
            top = np.argpartition(-scores, min(K, len(scores) - 1))[:K]
            ix[top[np.argsort(-scores[top])]]

        lat = timed(brute, queries)
        results["numpy"] = (*percentiles(lat), len(lat))

        # --- LangGraph InMemoryStore -----------------------------------------------------
        if "inmemory" not in args.skip:
            from langgraph.store.base import PutOp
            from langgraph.store.memory import InMemoryStore

            store = InMemoryStore(index={"dims": DIM, "embed": emb.embed_documents, "fields": ["content"]})
            t = time.perf_counter()
            ops = [PutOp(("memories", e.user_id), e.id, {"content": e.content}) for e in entries]
            for start in range(0, len(ops), 5_000):
                store.batch(ops[start : start + 5_000])
            print(f"InMemoryStore: loaded in {time.perf_counter() - t:.1f} s", flush=True)
            slow = queries[: args.slow_queries]
            lat = timed(lambda u, q: store.search(("memories", u), query=q, limit=K), slow, warmup=3)
            results["InMemoryStore"] = (*percentiles(lat), len(lat))
            del store, ops
            gc.collect()

        # --- LangGraph SqliteStore -------------------------------------------------------
        if "sqlite" not in args.skip:
            try:
                import sqlite3

                from langgraph.store.sqlite import SqliteStore

                conn = sqlite3.connect(os.path.join(workdir, "store.db"), check_same_thread=False)
                store = SqliteStore(conn, index={"dims": DIM, "embed": emb.embed_documents, "fields": ["content"]})
                store.setup()
                print("SqliteStore: set up (unexpected on this Python); not timed", flush=True)
            except Exception as exc:  # the point: report why it cannot run here
                print(f"SqliteStore with an index: cannot run: {type(exc).__name__}: {exc}", flush=True)

        # --- qdrant-client local mode ----------------------------------------------------
        if "qdrant-local" not in args.skip and args.local_queries > 0:
            from qdrant_client import QdrantClient

            client = QdrantClient(":memory:")
            local = QdrantServerBackend(client=client, collection="memories", dimension=DIM, model_id=embedding_model_id(emb))
            t = time.perf_counter()
            load_backend(local, entries, vectors, batch=2_000)
            print(f"qdrant-local: loaded in {time.perf_counter() - t:.1f} s", flush=True)
            memory = VectorMemory(local, emb, config, clock=lambda: NOW)
            few = queries[: args.local_queries]
            lat = timed(lambda u, q: memory.search(u, q, k=K), few, warmup=0)
            results["qdrant-local"] = (*percentiles(lat), len(lat))
            memory.close()
            client.close()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    report(results)
    return results


def report(results: dict[str, tuple[float, float, int]]) -> None:
    ours = results["ours"][0]
    print(f"{'system':<15} {'p50 ms':>10} {'p99 ms':>10} {'calls':>6} {'p50 / ours':>11}")
    for name, (p50, p99, n) in results.items():
        print(f"{name:<15} {p50:>10.3f} {p99:>10.3f} {n:>6} {p50 / ours:>10.1f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000", help="total memories, comma-separated")
    parser.add_argument("--users", type=int, default=100)
    parser.add_argument("--queries", type=int, default=300, help="calls for ours, edge-raw and numpy")
    parser.add_argument("--slow-queries", type=int, default=60, help="calls for InMemoryStore")
    parser.add_argument("--local-queries", type=int, default=3, help="calls for qdrant-client local mode")
    parser.add_argument("--skip", default="", help="comma-separated: inmemory,sqlite,qdrant-local")
    args = parser.parse_args()
    args.skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, k={K}, dim={DIM}")
    summary = {size: run_size(size, args) for size in sizes}
    print("\n=== summary: ours ===")
    base = summary[sizes[0]]["ours"][0]
    for size, res in summary.items():
        p50, p99, _ = res["ours"]
        extra = ""
        for other in ("InMemoryStore", "qdrant-local"):
            if other in res:
                extra += f"  {other} {res[other][0] / p50:,.0f}x slower"
        print(f"{size:>9,}: p50 {p50:.3f} ms  p99 {p99:.3f} ms  ({p50 / base:.2f}x the {sizes[0]:,} p50){extra}")


if __name__ == "__main__":
    main()
