"""One app process of the many-process tests: threads append turns to one PostgreSQL database
while the memory's background worker runs jobs from the shared journal.

    python pg_worker.py URL INDEX THREADS SECONDS TURNS START_AT OUT_JSON

Each thread appends two-message turns (ids unique across every process) until SECONDS have
passed from START_AT or it has appended TURNS turns (0: no limit) (an epoch time, so that every process starts together), alternating
between a thread of its own and two threads that every process shares; then the process
waits for the journal to drain and writes what it appended and how many job results its
worker committed to OUT_JSON. The vector index is a qdrant-client in memory per process
(no Qdrant server can run here; these tests are about the relational store).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
os.environ.pop("OPENAI_API_KEY", None)  # the offline extractor: deterministic, no network

from langchain_core.messages import AIMessage, HumanMessage
from qdrant_client import QdrantClient

from langchain_tiered_memory import MemoryConfig, TieredMemory
from langchain_tiered_memory.embeddings import HashingEmbeddings


def open_memory(url: str, model: object = None, **config: object) -> TieredMemory:
    """A memory on the shared database with a background job worker.

    Near-duplicate merging is left to identical texts (``merge_threshold=1.0``), and the
    turns say different things: a merge asks the vector index, and each process here has an
    index of its own, which a shared Qdrant server would not."""
    return TieredMemory(
        config=MemoryConfig(job_mode="background", job_backoff_seconds=0.0, merge_threshold=1.0, **config),  # type: ignore[arg-type]
        model=model, embeddings=HashingEmbeddings(), database_url=url,  # type: ignore[arg-type]
        qdrant_client=QdrantClient(":memory:"), pool_max=8,
    )


def count_commits() -> list[int]:
    """Count the job results this process commits (a result committed twice would show).

    Patched on the classes, before the memory opens: its background worker may claim a job
    that another process journaled the moment it starts."""
    from langchain_tiered_memory.storage.episodes import Episodes
    from langchain_tiered_memory.storage.results import Results

    committed = [0]
    lock = threading.Lock()
    for cls, name in ((Results, "complete_extraction"), (Episodes, "insert")):
        original = getattr(cls, name)

        def wrapped(self: object, *args: object, _original=original, **kwargs: object) -> bool:
            done = _original(self, *args, **kwargs)
            if done:
                with lock:
                    committed[0] += 1
            return done

        setattr(cls, name, wrapped)
    return committed


def main() -> None:
    url, index, threads, seconds, turns, start_at, out = sys.argv[1:8]
    p, n_threads, duration, most = int(index), int(threads), float(seconds), int(turns) or 10**9
    committed = count_commits()
    memory = open_memory(url)
    appended: list[list[str]] = [[] for _ in range(n_threads)]
    errors: list[str] = []
    time.sleep(max(0.0, float(start_at) - time.time()))
    deadline = time.time() + duration

    def append(t: int) -> None:
        n = 0
        try:
            while time.time() < deadline and n < most:
                shared = n % 2 == 1
                user, thread = ("shared", f"shared-{n % 4 // 2}") if shared else (f"user{p}", f"p{p}-t{t}")
                ids = [f"p{p}-t{t}-n{n}-h", f"p{p}-t{t}-n{n}-a"]
                memory.after_turn(user, thread, [
                    HumanMessage(f"I like tea number {p}{t}{n} from Lisbon.", id=ids[0]),
                    AIMessage(f"Noted, turn {n}.", id=ids[1]),
                ])
                appended[t] += ids
                n += 1
        except Exception as exc:  # reported to the test, which fails on it
            errors.append(f"{type(exc).__name__}: {exc}")

    workers = [threading.Thread(target=append, args=(t,)) for t in range(n_threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    drained = memory.flush(timeout=120)
    Path(out).write_text(json.dumps({
        "appended": [i for ids in appended for i in ids], "committed": committed[0],
        "errors": errors, "drained": drained, "worker": memory._parts.jobs.worker_id,
    }))
    memory.close()


if __name__ == "__main__":
    main()
