"""The inspector's pages on a user with 10,000 memories: p50 of a page load over HTTP.

    python benchmarks/bench_inspector.py [--memories 10000] [--loads 41] [--check]

One user with ``--memories`` long-term memories (stored with ``remember_many``, embedded with
``HashingEmbeddings`` to fill fast: no page timed here embeds anything) and a thread of 40
messages. The inspector is served from a thread (``memory.admin.serve(block=False)``, as a
notebook runs it) and each page is fetched ``--loads`` times over real HTTP after one
warm-up load; the p50 and p90 of each are printed:

- the memories list (the lists page: 50 memories, newest first, with their history), first
  and last page;
- the users page (counts per layer of every user; the memories by one ``COUNT``);
- the user's page (threads and counts).

The target (issue 31): the lists page answers in at most 300 ms at p50. ``--check`` exits 1
when a page is over it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.pop("OPENAI_API_KEY", None)

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TARGET_MS = 300.0
USER = "heavy"


def fill(path: Path, memories: int) -> None:
    """A user with ``memories`` memories and a 40-message thread, written in batches."""
    from langchain_core.messages import AIMessage, HumanMessage

    from langchain_tiered_memory import MemoryConfig, TieredMemory
    from langchain_tiered_memory.embeddings import HashingEmbeddings

    with TieredMemory(path, MemoryConfig(job_mode="manual"), embeddings=HashingEmbeddings()) as m:
        batch = 1000
        for start in range(0, memories, batch):
            items = [
                {"content": f"Fact {i}: the user mentioned topic {i % 97} on day {i % 365}.",
                 "importance": (i % 10) / 10}
                for i in range(start, min(start + batch, memories))
            ]
            m.memories.remember_many(USER, items, merge=False)
        for n in range(20):
            m.after_turn(USER, "t1", [HumanMessage(f"question {n}"), AIMessage(f"answer {n}")], extract=False)


def measure(path: Path, loads: int) -> dict[str, dict[str, float]]:
    """p50 and p90 (ms) of each page over HTTP."""
    import httpx

    from langchain_tiered_memory import MemoryConfig, TieredMemory
    from langchain_tiered_memory.embeddings import HashingEmbeddings

    with TieredMemory(path, MemoryConfig(job_mode="manual"), embeddings=HashingEmbeddings()) as m:
        total = m.memories.count(USER)
        assert total, "the user has no memories"
        last = ((total - 1) // 50) * 50
        pages = {
            "memories list (first page)": f"users/{USER}/memories",
            f"memories list (offset {last})": f"users/{USER}/memories?offset={last}",
            "users page": "users",
            "user page": f"users/{USER}",
        }
        out: dict[str, dict[str, float]] = {}
        with m.admin.serve(port=0, block=False) as inspector, httpx.Client() as client:
            for name, page in pages.items():
                url = inspector.url + page
                assert client.get(url).status_code == 200  # warm-up
                times = []
                for _ in range(loads):
                    t0 = time.perf_counter()
                    response = client.get(url)
                    times.append((time.perf_counter() - t0) * 1000)
                    assert response.status_code == 200
                times.sort()
                out[name] = {"p50_ms": statistics.median(times), "p90_ms": times[int(0.9 * (len(times) - 1))]}
        return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--loads", type=int, default=41)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--check", action="store_true", help=f"exit 1 if the lists page's p50 is over {TARGET_MS:.0f} ms")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "memory"
        t0 = time.perf_counter()
        fill(path, args.memories)
        filled = time.perf_counter() - t0
        figures = measure(path, args.loads)
    if args.json:
        print(json.dumps({"memories": args.memories, "loads": args.loads, "pages": figures}))
    else:
        print(f"a user with {args.memories:,} memories (filled in {filled:.0f} s); {args.loads} loads per page, "
              f"{os.cpu_count()} cores")
        for name, f in figures.items():
            print(f"  {name:<32} p50 {f['p50_ms']:7.1f} ms   p90 {f['p90_ms']:7.1f} ms")
        print(f"target: the lists page at most {TARGET_MS:.0f} ms at p50")
    lists = [f["p50_ms"] for name, f in figures.items() if name.startswith("memories list")]
    return 1 if args.check and max(lists) > TARGET_MS else 0


if __name__ == "__main__":
    sys.exit(main())
