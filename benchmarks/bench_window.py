"""before_turn on a 10,000-message thread, beside langchain-core's trim_messages.

Both build the same window: the newest messages of the thread that fit the default budget
(100,000 tokens - 4,000 output reserve - 5,000 system reserve), counted with tiktoken
cl100k_base in OpenAI's chat format. trim_messages recounts every message on every call;
before_turn reads counts stored when each message was written. trim_messages is the
anchor: every row shows how many times faster than it before_turn is (p50 / p50).

Series, all after ``flush()`` (no extraction job queued or running while timing):

* window only: user ``u``, the 10k-message thread, no memory layers but its summary, in a
  directory of its own; ``before_turn`` repeated, and after each new turn (``after_turn``
  + ``flush``, untimed);
* all sections: user ``m`` with the same 10k-message thread, a LongChat persona's 12
  sessions (each ended, so episodes exist) and ``--memories`` (10,000) long-term memories
  stored with ``remember_many``: summary, entities, recall over memories and past turns,
  and episodes are all built; each call has a fresh query, so the query embedding is timed
  (and shown apart: the embedder alone on the same queries);
* bulk load: the 10,000 memories of user ``m`` (``merge=False``: they are the data above),
  after the thread is indexed, so nothing else is; then ``--bulk`` others with merge checks
  on, beside the embedding alone of the same texts and ``remember()`` one at a time;
* idle: the same call with a fresh query, each one after a second of idle (``--idle``), as
  an agent calls it after waiting for its model; the back-to-back series above finds the
  CPU's caches warm, this one does not;
* cold: a new Python process opens the directory and times its first ``before_turn``
  (window only, and all sections with a query: loading the embedding model and opening
  the Qdrant shard are part of that first call); import and open times are shown apart.

    python benchmarks/bench_window.py [--messages 10000] [--memories 10000] [--calls 300] [--cold-runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, trim_messages
from langchain_openai import ChatOpenAI

from langchain_tiered_memory import MemoryConfig, TieredMemory
from langchain_tiered_memory.tokens import ensure_offline_encoding

sys.path.insert(0, str(Path(__file__).resolve().parent))
from longchat import generate  # noqa: E402

WORDS = (
    "the user asked about travel plans budget hotel train Kyoto tea green quiet morning "
    "schedule meeting code review deploy database index query latency memory window"
).split()

COLD = r"""
import json, sys, time
start = time.perf_counter()
from langchain_tiered_memory import MemoryConfig, TieredMemory
imported = time.perf_counter()
memory = TieredMemory(sys.argv[1], MemoryConfig(**json.loads(sys.argv[2])))
opened = time.perf_counter()
ctx = memory.before_turn(**json.loads(sys.argv[3]))
first = time.perf_counter()
memory.close()
print(json.dumps({"import_ms": (imported - start) * 1000, "open_ms": (opened - imported) * 1000,
                  "first_ms": (first - opened) * 1000, "sections": [s.name for s in ctx.sections]}))
"""


def conversation(n: int, seed: int = 7) -> list:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 60)))
        out.append(HumanMessage(f"[{i}] {text}") if i % 2 == 0 else AIMessage(f"[{i}] {text}"))
    return out


def percentiles(samples: list[float]) -> tuple[float, float]:
    samples = sorted(samples)
    p99 = samples[min(len(samples) - 1, int(round(0.99 * (len(samples) - 1))))]
    return statistics.median(samples), p99


def timed(fn, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return out


#: The parts of a ``before_turn`` with a query, by the internal call that does each (the
#: benchmark looks inside; the package's API does not expose these).
PARTS = (
    ("the query embedding", "langchain_tiered_memory.index.recall_index", "RecallIndex", "embed_query"),
    ("planning the searches (the embedding in it)", "langchain_tiered_memory.turn", "Turns", "_plan"),
    ("index queries (one batch: recall and episodes)", "langchain_tiered_memory.index.recall_index", "RecallIndex", "candidates_many"),
    ("ranking (scores, records read)", "langchain_tiered_memory.recall.ranking", "Ranker", "rank"),
    ("memories section (recall but the embedding)", "langchain_tiered_memory.recall.layer", "RecallLayer", "section"),
    ("episodes section", "langchain_tiered_memory.layers.episodes", "EpisodeLayer", "section"),
    ("entities section", "langchain_tiered_memory.layers.entities", "EntityLayer", "section"),
    ("summary section", "langchain_tiered_memory.layers.summary", "SummaryLayer", "section"),
    ("window", "langchain_tiered_memory.layers.window.layer", "Window", "fit"),
)


class PartTimer:
    """Time spent in each of :data:`PARTS` while active (nested parts count in both)."""

    def __init__(self) -> None:
        self.ms: dict[str, float] = {label: 0.0 for label, *_ in PARTS}
        self._saved: list[tuple[type, str, object]] = []

    def __enter__(self) -> PartTimer:
        import importlib

        for label, module, cls_name, method in PARTS:
            cls = getattr(importlib.import_module(module), cls_name)
            original = getattr(cls, method)
            self._saved.append((cls, method, original))

            def wrapper(*args, _original=original, _label=label, **kwargs):
                t = time.perf_counter()
                try:
                    return _original(*args, **kwargs)
                finally:
                    self.ms[_label] += (time.perf_counter() - t) * 1000

            setattr(cls, method, wrapper)
        return self

    def __exit__(self, *exc: object) -> None:
        for cls, method, original in reversed(self._saved):
            setattr(cls, method, original)


def write_thread(memory: TieredMemory, user: str, thread: str, system: SystemMessage, messages: list) -> None:
    memory.after_turn(user, thread, [system.model_copy(update={"id": None})])
    for i in range(0, len(messages), 500):
        memory.after_turn(user, thread, [m.model_copy(update={"id": None}) for m in messages[i : i + 500]])


def write_persona(memory: TieredMemory, user: str) -> list[str]:
    """A LongChat persona's sessions, each ended (episodes); returns its questions."""
    conversation_ = generate(0, personas=1)[0]
    for s in conversation_.sessions:
        for i in range(0, len(s.turns) - 1, 2):
            u, a = s.turns[i], s.turns[i + 1]
            memory.after_turn(user, f"{user}-{s.id}", [HumanMessage(u.text, id=u.id), AIMessage(a.text, id=a.id)])
        memory.end_session(user, f"{user}-{s.id}")
    return [q.text for q in conversation_.questions]


def long_messages(questions: list[str], words: int = 80) -> list[str]:
    """User messages of about ``words`` words ending in a question: what a chat app sends
    more often than a bare question. Each is the persona's own sentences (from a second
    LongChat seed: same kind of text, not the stored one), then the question."""
    said = [t.text for s in generate(1, personas=1)[0].sessions for t in s.turns if t.speaker == "user"]
    out = []
    for n, question in enumerate(questions):
        parts: list[str] = []
        i = n * 7
        while sum(len(p.split()) for p in parts) < words - len(question.split()):
            parts.append(said[i % len(said)])
            i += 1
        out.append(" ".join([*parts, question]))
    return out


FACT_TEMPLATES = (
    "The user's {rel} {name} lives in {place} and works as a {job}.",
    "The user visited {place} in {month} and loved the {thing}.",
    "The user prefers {thing} over {other} when in {place}.",
    "{name} recommended a {thing} shop near {place} to the user.",
    "The user plans to learn {skill} with {name} before {month}.",
)
FILL = {
    "rel": "sister brother cousin friend colleague neighbour aunt uncle".split(),
    "name": "Ada Bruno Chloe Dmitri Elif Farid Greta Hugo Ines Jonas Kaori Luca Mira Nils Omar Priya".split(),
    "place": "Lisbon Porto Kyoto Oslo Tallinn Quito Accra Hanoi Perth Bergen Lyon Graz Cork Split Bari".split(),
    "job": "nurse architect baker pilot teacher chemist plumber editor".split(),
    "month": "January March May July September November".split(),
    "thing": "ramen espresso jazz pottery cycling sourdough kayaking chess".split(),
    "other": "tea wine rock painting running rye sailing go".split(),
    "skill": "Spanish guitar welding sailing calligraphy Python".split(),
}


def facts(n: int, seed: int = 3) -> list[dict[str, str]]:
    """``n`` distinct long-term memories from templates (numbered, so none merge)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        template = rng.choice(FACT_TEMPLATES)
        out.append({"content": template.format(**{k: rng.choice(v) for k, v in FILL.items()}) + f" (note {i})",
                    "memory_type": rng.choice(("fact", "preference", "experience"))})
    return out


def cold_start(path: str, config: MemoryConfig, call: dict, runs: int) -> list[dict]:
    out = []
    for _ in range(runs):
        run = subprocess.run(
            [sys.executable, "-c", COLD, path, json.dumps(config.model_dump()), json.dumps(call)],
            capture_output=True, text=True, check=True, env={**os.environ},
        )
        out.append(json.loads(run.stdout.strip().splitlines()[-1]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--bulk", type=int, default=2_000, help="items of the bulk load with merge checks on")
    parser.add_argument("--trim-calls", type=int, default=5)
    parser.add_argument("--cold-runs", type=int, default=3)
    parser.add_argument("--idle-calls", type=int, default=30,
                        help="calls timed after --idle seconds of idle each (as between an agent's turns)")
    parser.add_argument("--idle", type=float, default=1.0)
    args = parser.parse_args()
    ensure_offline_encoding()

    config = MemoryConfig()
    system = SystemMessage("You are a helpful assistant with a long memory.")
    messages = conversation(args.messages)
    rows: list[tuple[str, float, float]] = []
    # Two directories: in one that holds long-term memories, before_turn searches them for
    # any user (embedding the query), so the window-only user gets a directory of its own.
    with tempfile.TemporaryDirectory() as window_dir, tempfile.TemporaryDirectory() as full_dir:
        with TieredMemory(window_dir, config) as memory:
            t = time.perf_counter()
            write_thread(memory, "u", "t", system, messages)
            write_s = time.perf_counter() - t
            t = time.perf_counter()
            memory.flush()
            flush_s = time.perf_counter() - t
        with TieredMemory(full_dir, config) as memory:
            write_thread(memory, "m", "mt", system, messages)
            questions = write_persona(memory, "m")
            t = time.perf_counter()
            memory.flush()  # the thread indexed first: the bulk load below is timed alone
            flush_s += time.perf_counter() - t
            t = time.perf_counter()
            items = facts(args.memories)
            for i in range(0, len(items), 1000):
                memory.memories.remember_many("m", items[i : i + 1000], merge=False)
            remember_s = time.perf_counter() - t
            # With merge checks on (each item against the batch and the index), beside the
            # embedding alone of the same texts and remember() one item at a time.
            bulk = facts(args.bulk, seed=5)
            t = time.perf_counter()
            memory.memories.remember_many("bulk", bulk)
            bulk_ms = (time.perf_counter() - t) * 1000 / max(1, len(bulk))
            embedder = memory.admin.embeddings
            t = time.perf_counter()
            embedder.embed_documents([f"{b['content']} [again]" for b in bulk])
            bulk_embed_ms = (time.perf_counter() - t) * 1000 / max(1, len(bulk))
            singles = facts(50, seed=6)
            t = time.perf_counter()
            for item in singles:
                memory.memories.remember("single", item["content"])
            single_ms = (time.perf_counter() - t) * 1000 / len(singles)
            t = time.perf_counter()
            memory.flush()
            flush_s += time.perf_counter() - t
            stats = memory.admin.stats()

        # Cold: a new process, after this one has let go of the directory (and the shard).
        query = {"user_id": "m", "thread_id": "mt", "query": "Remind me where my parents live now?"}
        cold_window = cold_start(window_dir, config, {"user_id": "u", "thread_id": "t"}, args.cold_runs)
        cold_sections = cold_start(full_dir, config, query, args.cold_runs)

        with TieredMemory(window_dir, config) as memory:
            ctx = memory.before_turn("u", "t")
            warm = timed(lambda: memory.before_turn("u", "t"), args.calls)
            turn_texts = conversation(2 * args.calls, seed=11)
            after, loop = [], []
            for _ in range(args.calls):
                pair = [turn_texts.pop(), turn_texts.pop()]
                after += timed(lambda: memory.after_turn("u", "t", [HumanMessage(pair[0].text), AIMessage(pair[1].text)]), 1)
                memory.flush()  # the turn's extraction job finishes, as it would between turns
                loop += timed(lambda: memory.before_turn("u", "t"), 1)

        with TieredMemory(full_dir, config) as memory:
            n = 0

            def with_sections() -> None:
                nonlocal n
                n += 1
                memory.before_turn("m", "mt", query=f"{questions[n % len(questions)]} ({n})")

            memory.before_turn("m", "mt", query="warm-up: load the embedding model and the shard")
            sections = timed(with_sections, args.calls)
            longs = long_messages(questions)
            long_words = statistics.mean(len(t.split()) for t in longs)

            def with_long_message() -> None:
                nonlocal n
                n += 1
                memory.before_turn("m", "mt", query=f"{longs[n % len(longs)]} ({n})")

            long_sections = timed(with_long_message, args.calls)
            # An agent calls before_turn after waiting seconds for its model: by then the
            # CPU's caches hold other things (or nothing: an idle core may power its down).
            idle_sections: list[float] = []
            for _ in range(args.idle_calls):
                time.sleep(args.idle)
                idle_sections += timed(with_sections, 1)
            ctx_m = memory.before_turn("m", "mt", query=questions[0])
            with PartTimer() as parts:
                timed(with_sections, min(args.calls, 100))
            parts_calls = min(args.calls, 100)
            # The query embedding alone, on queries of the same kind (new strings: no cache).
            embedder = memory.admin.embeddings
            embed = timed(lambda: embedder.embed_query(f"{questions[n % len(questions)]} [{time.perf_counter()}]"),
                          min(args.calls, 100))

        openai = ChatOpenAI(model="gpt-4", api_key="sk-benchmark-not-used")
        budget = config.context_budget - config.system_reserve + ctx.token_usage["system"]
        full = [system, *messages]
        trimmed = None

        def trim() -> None:
            nonlocal trimmed
            trimmed = trim_messages(
                full, max_tokens=budget, token_counter=openai, strategy="last",
                include_system=True, start_on="human",
            )

        trim_ms = timed(trim, args.trim_calls)

    t50, t99 = percentiles(trim_ms)
    rows.append(("trim_messages (anchor)", t50, t99))
    rows.append(("before_turn, window only, repeated", *percentiles(warm)))
    rows.append(("before_turn, window only, after a new turn", *percentiles(loop)))
    rows.append(("before_turn, all sections, fresh query", *percentiles(sections)))
    if idle_sections:
        rows.append((f"  the same, each after {args.idle:g} s idle", *percentiles(idle_sections)))
    rows.append((f"  the same, a {long_words:.0f}-word message", *percentiles(long_sections)))
    rows.append(("  the query embedding alone", *percentiles(embed)))
    for label, runs in (("window only", cold_window), ("all sections", cold_sections)):
        first = [r["first_ms"] for r in runs]
        rows.append((f"before_turn, cold (new process), {label}", statistics.median(first), max(first)))
    a50, a99 = percentiles(after)

    print(f"thread: {args.messages:,} messages, written in {write_s:.2f} s; extraction, summaries and "
          f"episodes of both directories flushed in {flush_s:.1f} s")
    print(f"window: {len(ctx.window):,} messages, {ctx.token_usage.total:,} of {config.context_budget:,} tokens; "
          f"trim_messages keeps {len(trimmed) - 1:,} (same budget, tiktoken via ChatOpenAI)")
    print(f"{args.memories:,} long-term memories stored with remember_many in {remember_s:.1f} s "
          f"({remember_s * 1000 / max(1, args.memories):.2f} ms each, merge=False)")
    print(f"bulk load, merge checks on: remember_many {bulk_ms:.2f} ms per memory ({args.bulk:,} items), the "
          f"embedding alone {bulk_embed_ms:.2f} ms per text, remember() {single_ms:.2f} ms per item "
          f"({single_ms / bulk_ms:.1f}x remember_many)")
    print(f"user m: {stats['memories']} memories, {stats['entities']} entities, {stats['episodes']} episodes; "
          "sections: " + ", ".join(f"{s.name} {s.tokens}" for s in ctx_m.sections) + " tokens")
    imports = statistics.median(r["import_ms"] for r in cold_window + cold_sections)
    opens = statistics.median(r["open_ms"] for r in cold_window + cold_sections)
    print(f"cold process: import {imports:.0f} ms and TieredMemory() {opens:.0f} ms before the first call "
          f"(median of {len(cold_window) + len(cold_sections)}); p99 column = slowest of {args.cold_runs}")
    print(f"{'':46}{'p50 ms':>10}{'p99 ms':>10}{'trim / this':>13}")
    for label, p50, p99 in rows:
        ratio = t50 / p50
        print(f"{label:46}{p50:>10.3f}{p99:>10.3f}{(f'{ratio:,.0f}x' if ratio >= 10 else f'{ratio:.2f}x'):>13}")
    print(f"{'after_turn (2 messages, fsync)':46}{a50:>10.3f}{a99:>10.3f}")
    print(f"\nparts of 'before_turn, all sections, fresh query' (mean ms per call over {parts_calls} more calls, "
          "timed from inside; planning embeds the query for every section, and the memories section "
          "runs the index batch and ranks):")
    for label, ms in parts.ms.items():
        print(f"  {label:48}{ms / parts_calls:>10.3f}")


if __name__ == "__main__":
    main()
