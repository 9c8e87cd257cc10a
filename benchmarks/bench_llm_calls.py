"""LLM calls per turn: our manager against the seed design, over one scripted conversation.

The seed's ``process_turn`` makes up to three calls a turn: compress the evicted messages
into the summary (when the window evicted), extract entities, and rate importance. Ours
makes one structured extraction call that returns entities, memories with their
importance and, when messages were evicted, the new summary (plus a compression call only
when the model's summary overshoots ``summary_max_tokens``).

Both run the same 300 turns through the same call-counting chat model, with the same
window budget (the seed's ConversationWindow is reproduced with our token counts).

    python benchmarks/bench_llm_calls.py [--turns 300]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from scripted_model import ScriptedChatModel, entity, memory, turn_tool_call  # noqa: E402

from langchain_tiered_memory import MemoryConfig, TieredMemory  # noqa: E402
from langchain_tiered_memory.tokens import TiktokenCounter  # noqa: E402

TOPICS = ["my trip to Kyoto", "the budget", "green tea", "my sister Emma", "the new job at Acme",
          "vegetarian food", "the flight on May 3", "Python code reviews", "my cat Miso"]


def conversation(turns: int, seed: int = 3) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    out = []
    for i in range(turns):
        topic = rng.choice(TOPICS)
        q = f"Turn {i}: tell me more about {topic}; " + " ".join(rng.choice(TOPICS).split()[-1] for _ in range(rng.randint(5, 30)))
        a = f"Here is what I know about {topic}. " + "Details follow. " * rng.randint(2, 12)
        out.append((q, a))
    return out


def answer(messages) -> object:
    """What a real model answers to each kind of request, so both designs run their full path."""
    text = " ".join(m.text for m in messages)
    if text.startswith("[seed:importance]"):
        return "0.7"
    if text.startswith("[seed:entities]"):
        return '[{"name": "Emma", "type": "person", "attributes": {"relation": "sister"}}]'
    if text.startswith("[seed:summary]"):
        return "The user talked about travel, tea and family."
    if "You compress the running summary" in text:
        return "The user talked about travel, tea and family."
    return turn_tool_call(
        entities=[entity("Emma", "person", relation_to_user="sister")],
        memories=[memory("The user likes green tea.", "preference", 0.7)],
        summary="The user talked about travel, tea and family.",
    )


def ours(turns: list[tuple[str, str]], config: MemoryConfig) -> int:
    model = ScriptedChatModel(script=[], default=answer)
    with tempfile.TemporaryDirectory() as tmp, TieredMemory(tmp, config, model=model) as memory_:
        for q, a in turns:
            memory_.before_turn("u", "t")
            memory_.after_turn("u", "t", [HumanMessage(q), AIMessage(a)])
        memory_.flush()
        assert memory_.admin.stats()["jobs"]["failed"] == 0
    return model.calls


def seed(turns: list[tuple[str, str]], config: MemoryConfig) -> int:
    """The seed's process_turn: window eviction → summary call; entity call; importance call."""
    model = ScriptedChatModel(script=[], default=answer)
    counter = TiktokenCounter()
    window: list[int] = []
    budget = config.max_tokens - config.output_reserve - config.system_reserve
    for q, a in turns:
        evicted = []
        for text in (q, a):
            window.append(counter.count_message(HumanMessage(text)))
            while sum(window) > budget and len(window) > 2:
                evicted.append(window.pop(0))
        if evicted:
            model.invoke([HumanMessage("[seed:summary] Progressively summarize the conversation ...")])
        model.invoke([HumanMessage("[seed:entities] Extract key entities from this conversation ...")])
        model.invoke([HumanMessage("[seed:importance] Rate the importance of this conversation turn ...")])
    return model.calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=300)
    args = parser.parse_args()
    turns = conversation(args.turns)
    # A window small enough that most turns evict, as in a long agent session.
    config = MemoryConfig(max_tokens=2_000, system_reserve=200, output_reserve=300,
                          summary_max_tokens=300, job_mode="inline")
    ours_calls, seed_calls = ours(turns, config), seed(turns, config)
    print(f"{args.turns} turns, window budget {config.max_tokens - config.output_reserve - config.system_reserve} tokens")
    print(f"{'design':<34}{'LLM calls':>10}{'per turn':>10}")
    print(f"{'seed (summary+entities+importance)':<34}{seed_calls:>10}{seed_calls / args.turns:>10.2f}")
    print(f"{'langchain-tiered-memory':<34}{ours_calls:>10}{ours_calls / args.turns:>10.2f}")


if __name__ == "__main__":
    main()
