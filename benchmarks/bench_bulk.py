"""Bulk writes: ``remember_many`` and ``import`` against single ``remember`` calls, per item.

    python benchmarks/bench_bulk.py                  # 100 single calls, 1,000 items in bulk
    python benchmarks/bench_bulk.py --single 50 --bulk 500

All in one process on the default stack (SQLite file, Qdrant Edge shard, the offline MiniLM
embedder), each in a fresh directory after the embedder is warm: ``--single`` calls of
``remember``, then one ``remember_many`` of ``--bulk`` items (other texts of the same shape),
then ``import_user`` of that user's export into a third directory. It prints milliseconds per
item and the ratios of the per-item rates (issue 16's target: bulk ≥ 5× single).
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from langchain_tiered_memory import TieredMemory  # noqa: E402
from langchain_tiered_memory.embeddings import default_embeddings  # noqa: E402

WORDS = ("tea coffee Paris Lisbon sister cat piano chess hiking train budget Japan Kyoto museum temple "
         "rain jacket shoes nurse garden cello Porto market bread cycling").split()


def text(i: int) -> str:
    """A memory of the usual length: a speaker and a dozen words."""
    r = random.Random(i)
    return f"user: note {i}: I " + " ".join(r.choice(WORDS) for _ in range(12))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--single", type=int, default=100, help="remember() calls (default 100)")
    parser.add_argument("--bulk", type=int, default=1000, help="items of remember_many / import (default 1000)")
    args = parser.parse_args(argv)
    embeddings = default_embeddings()
    embeddings.embed_documents([text(-i) for i in range(40)])  # load and warm the model
    with tempfile.TemporaryDirectory() as tmp:
        with TieredMemory(Path(tmp) / "single", embeddings=embeddings) as memory:
            start = time.perf_counter()
            for i in range(args.single):
                memory.memories.remember("alice", text(i))
            single = (time.perf_counter() - start) / args.single
        with TieredMemory(Path(tmp) / "bulk", embeddings=embeddings) as memory:
            items = [{"content": text(100_000 + i)} for i in range(args.bulk)]
            start = time.perf_counter()
            memory.memories.remember_many("bob", items)
            bulk = (time.perf_counter() - start) / args.bulk
            exported = memory.admin.export_user("bob")
        with TieredMemory(Path(tmp) / "imported", embeddings=embeddings) as memory:
            start = time.perf_counter()
            memory.admin.import_user("bob", exported)
            imported = (time.perf_counter() - start) / args.bulk
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"python {platform.python_version()} · {os.cpu_count()} cores · load {load:.2f} · "
          f"embedder {type(embeddings).__name__}")
    print(f"  remember       x{args.single:<6} {single * 1000:7.2f} ms/item")
    print(f"  remember_many  x{args.bulk:<6} {bulk * 1000:7.2f} ms/item  ({single / bulk:.1f}x the single rate)")
    print(f"  import_user    x{args.bulk:<6} {imported * 1000:7.2f} ms/item  ({single / imported:.1f}x the single rate)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
