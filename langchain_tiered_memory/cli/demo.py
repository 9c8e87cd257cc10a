"""``tiered-memory demo``: a scripted conversation, offline, and what the model would be sent."""

from __future__ import annotations

import argparse

from . import common
from .common import DEFAULT_DATA_DIR, PROG

#: The demo's small window, so that its short conversation evicts.
DEMO_BUDGET = {"max_tokens": 600, "system_reserve": 60, "output_reserve": 100}

# A scripted conversation long enough to leave a small window: the user plans a trip.
DEMO_TURNS: list[tuple[str, str]] = [
    ("Hi! My name is Alice and I'm planning a two-week trip to Japan next April.",
     "Nice to meet you, Alice! April is cherry-blossom season, a lovely time to go. Which cities are you thinking of?"),
    ("Tokyo and Kyoto for sure, maybe Osaka. I prefer quiet neighbourhoods over nightlife.",
     "Then stay in Yanaka or Kagurazaka in Tokyo, and Higashiyama in Kyoto: old streets, small shrines, early nights."),
    ("My budget is about 3,000 euros, flights excluded. Is that enough?",
     "Yes. Mid-range hotels run 100-150 euros a night, a 14-day rail pass about 450 euros, and food 40 euros a day."),
    ("I'm vegetarian, by the way. Will that be hard?",
     "A little: dashi (fish stock) hides in many dishes. Look for shojin ryori, Buddhist temple cuisine, especially in Kyoto."),
    ("Remember that I can't stand crowded trains in the morning.",
     "Noted: I'll plan transfers after 10 am, when the commuter rush is over."),
    ("What should I pack for April weather?",
     "Layers: 10-20 °C days, cool evenings, some rain. A light waterproof jacket and comfortable walking shoes."),
    ("Can you suggest a day trip from Kyoto?",
     "Nara: the deer park and Todai-ji, 45 minutes by train. Or Uji for green tea and the Byodo-in temple."),
    ("I love green tea, so Uji it is! How do I get there?",
     "Take the JR Nara line from Kyoto Station to Uji, about 20 minutes, covered by the rail pass."),
    ("Should I book the ryokan in Hakone now?",
     "Yes, for April weekends book two to three months ahead. Ask for a room with a private onsen if you prefer quiet."),
    ("What's the best way to get from Tokyo to Hakone?",
     "The Odakyu Romancecar from Shinjuku, 85 minutes, then the Hakone loop: railway, cable car, ropeway and boat."),
    ("How much cash should I carry?",
     "Carry 20,000-30,000 yen: many temples, small restaurants and rural buses still take cash only."),
    ("Last question: any etiquette tips?",
     "Shoes off indoors, no tipping, quiet on trains, and bow slightly when thanking someone. Enjoy the trip, Alice!"),
]


def add_commands(command: common.AddCommand) -> None:
    """Register ``demo``."""
    p = command("demo", run, "run a scripted conversation offline and show what the model is sent")
    common.add_budget(p, DEMO_BUDGET)


def run(args: argparse.Namespace) -> int:
    import textwrap

    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

    # Inline jobs: the summary and entities of each turn exist before the next one starts.
    config = common.config(args, **DEMO_BUDGET, summary_max_tokens=120, job_mode="inline")
    with common.open_memory(args, create=True, config=config) as memory:
        user, thread = "alice", f"demo-{len(memory.threads.list('alice')) + 1}"
        print(f"memory in {memory.data_dir}  (thread {thread!r})")
        print(
            f"budget: {config.max_tokens} tokens - {config.output_reserve} output reserve = "
            f"{config.context_budget}; system reserve {config.system_reserve}\n"
        )
        memory.after_turn(user, thread, [SystemMessage("You are a concise travel assistant.")])
        print(f"{'turn':>4}  {'log':>4}  {'sent':>4}  {'evicted':>7}  {'tokens':>13}")
        for n, (question, answer) in enumerate(DEMO_TURNS, 1):
            context = memory.before_turn(user, thread)
            # The model would be called here with context.messages + [the question].
            memory.after_turn(user, thread, [HumanMessage(question), AIMessage(answer)])
            usage = context.token_usage
            print(
                f"{n:>4}  {len(memory.threads.messages(user, thread)):>4}  "
                f"{len(context.window):>4}  {context.evicted:>7}  "
                f"{usage.total:>6}/{usage.budget:<6}"
            )
        context = memory.before_turn(user, thread)
        print("\nwhat the model would be sent now:")
        for message in context.messages:
            if message is not context.system_message and message.type == "system":
                print("  [memory] " + message.text.replace("\n", "\n           "))
                continue
            text = textwrap.shorten(message.text, 90, placeholder=" …")
            print(f"  [{message.type:>6}] {text}")
        print("\ntoken accounting:")
        for section, tokens in context.token_usage.items():
            print(f"  {section:<10} {tokens:>6}")
        usage = context.token_usage
        print(f"  {'total':<10} {usage.total:>6} of {usage.budget} ({usage.remaining} free)")
        print(
            f"\n{context.evicted} older messages left the window (folded into the summary); "
            f"all {len(memory.threads.messages(user, thread))} stay in the log (memory.threads.messages)."
        )
        print("\nentities remembered (memory.entities):")
        for entity in memory.entities.list(user):
            attrs = ", ".join(f"{k}={v}" for k, v in entity.attributes.items())
            print(f"  {entity.name} ({entity.type}) {attrs}")
        print(f"\nextractor: {memory.admin.stats()['extractor']} (pass model= to use an LLM)")
        where = "" if args.data_dir == DEFAULT_DATA_DIR else f" --data-dir {args.data_dir}"
        print(
            f"look closer: {PROG}{where} inspect --user {user} --thread {thread} --max-tokens "
            f"{config.max_tokens} --output-reserve {config.output_reserve} --system-reserve {config.system_reserve}"
        )
    return 0
