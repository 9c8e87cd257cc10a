"""before_turn on a 10,000-message thread, beside langchain-core's trim_messages.

Both build the same thing: the newest messages of the thread that fit the default budget
(100,000 tokens - 4,000 output reserve - 5,000 system reserve), counted with tiktoken
cl100k_base in OpenAI's chat format. trim_messages recounts every message on every call;
before_turn reads counts stored when each message was written.

    python benchmarks/bench_window.py [--messages 10000] [--calls 300]
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, trim_messages
from langchain_openai import ChatOpenAI

from langchain_tiered_memory import MemoryConfig, TieredMemory
from langchain_tiered_memory.tokens import ensure_offline_encoding

WORDS = (
    "the user asked about travel plans budget hotel train Kyoto tea green quiet morning "
    "schedule meeting code review deploy database index query latency memory window"
).split()


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--trim-calls", type=int, default=5)
    args = parser.parse_args()
    ensure_offline_encoding()

    config = MemoryConfig()
    system = SystemMessage("You are a helpful assistant with a long memory.")
    messages = conversation(args.messages)
    with tempfile.TemporaryDirectory() as tmp:
        with TieredMemory(tmp, config) as memory:
            t = time.perf_counter()
            memory.after_turn("u", "t", [system])
            for i in range(0, len(messages), 500):
                memory.after_turn("u", "t", messages[i : i + 500])
            write_s = time.perf_counter() - t
        cold = []
        for _ in range(3):
            with TieredMemory(tmp, config) as memory:
                cold += timed(lambda: memory.before_turn("u", "t"), 1)
        with TieredMemory(tmp, config) as memory:
            ctx = memory.before_turn("u", "t")
            warm = timed(lambda: memory.before_turn("u", "t"), args.calls)
            turn_texts = conversation(2 * args.calls, seed=11)

            def turn_loop() -> None:
                pair = [turn_texts.pop(), turn_texts.pop()]
                memory.after_turn("u", "t", [HumanMessage(pair[0].text), AIMessage(pair[1].text)])

            after = []
            loop = []
            for _ in range(args.calls):
                after += timed(turn_loop, 1)
                loop += timed(lambda: memory.before_turn("u", "t"), 1)

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

    w50, w99 = percentiles(warm)
    l50, l99 = percentiles(loop)
    a50, a99 = percentiles(after)
    t50, t99 = percentiles(trim_ms)
    print(f"thread: {args.messages:,} messages, written in {write_s:.2f} s; "
          f"window {len(ctx.window):,} messages, {ctx.token_usage.total:,} of {config.context_budget:,} tokens")
    print(f"trim_messages keeps {len(trimmed) - 1:,} messages (same budget, tiktoken via ChatOpenAI)")
    print(f"{'':34}{'p50 ms':>10}{'p99 ms':>10}")
    print(f"{'before_turn, repeated':34}{w50:>10.3f}{w99:>10.3f}")
    print(f"{'before_turn, after each new turn':34}{l50:>10.3f}{l99:>10.3f}")
    print(f"{'before_turn, cold (new process)':34}{statistics.median(cold):>10.1f}{max(cold):>10.1f}")
    print(f"{'after_turn (2 messages, fsync)':34}{a50:>10.3f}{a99:>10.3f}")
    print(f"{'trim_messages':34}{t50:>10.1f}{t99:>10.1f}")
    print(f"ratio trim_messages / before_turn p50: {t50 / w50:,.0f}x repeated, {t50 / l50:,.0f}x after a new turn")


if __name__ == "__main__":
    main()
