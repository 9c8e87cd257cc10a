"""``tiered-memory inspect``: exactly what ``before_turn`` would send now, with token counts."""

from __future__ import annotations

import argparse
import sys

from . import common
from .common import PROG


def add_commands(command: common.AddCommand) -> None:
    """Register ``inspect``."""
    p = command("inspect", run, "show exactly what the model would be sent now, with token counts", json_output=True)
    common.add_user(p)
    p.add_argument("--thread", required=True, help="the thread id")
    p.add_argument("--query", help="what the memory sections search for (default: the last user message)")
    common.add_budget(p)


def run(args: argparse.Namespace) -> int:
    import textwrap

    from langchain_core.messages import message_to_dict

    with common.open_memory(args, look=True, config=common.config(args)) as memory:
        context = memory.before_turn(args.user, args.thread, query=args.query, peek=True)
        if not any(t.thread_id == args.thread for t in memory.threads.list(args.user)):
            print(
                f"note: user {args.user!r} has no thread {args.thread!r} yet; showing what a new "
                f"thread would be sent ({PROG} threads --user {args.user} lists theirs)",
                file=sys.stderr,
            )
        counter = memory.admin.counter
        usage = context.token_usage
        system = context.system_message
        window = [(m, counter.count_message(m)) for m in context.window]
        if args.json:
            common.print_json({
                "user_id": context.user_id, "thread_id": context.thread_id, "query": context.query,
                "budget": usage.budget, "total": usage.total, "remaining": usage.remaining,
                "evicted": context.evicted, "truncated": context.truncated,
                "token_usage": dict(usage),
                "system": None if system is None else {"tokens": usage["system"], "text": system.text},
                "sections": [{"name": s.name, "tokens": s.tokens, "text": s.text} for s in context.sections],
                "window": [{"type": m.type, "id": m.id, "tokens": n, "text": m.text} for m, n in window],
                "messages": [message_to_dict(m) for m in context.messages],
            })
            return 0
        config = memory.config
        print(f"what the model would be sent now: user {args.user!r}, thread {args.thread!r}")
        if context.query:
            print(f"memory searched for: {textwrap.shorten(context.query, 100, placeholder=' …')!r}")
        print(f"budget {usage.budget} tokens = max_tokens {config.max_tokens} - output reserve {config.output_reserve}")
        print(f"\n[system] {usage['system']} tokens")
        print(common.indent(system.text) if system is not None else "    (no system message in the thread)")
        if context.sections:
            frame = usage.get("memory_frame", 0)
            print(f"\n[memory] {sum(s.tokens for s in context.sections) + frame} tokens "
                  f"({frame} for the fence and headings)")
            for section in context.sections:
                print(f"  {section.name}: {section.tokens} tokens")
                print(common.indent(section.text, "      "))
        else:
            print("\n[memory] nothing recalled for this turn")
        evicted = f"; {context.evicted} older messages left it" if context.evicted else ""
        cut = "; one message is truncated to fit" if context.truncated else ""
        print(f"\n[window] {len(window)} messages, {usage['window']} tokens{evicted}{cut}")
        for message, tokens in window:
            print(f"  {message.type:<6} {tokens:>6}  " + common.indent(message.text, " " * 16).lstrip())
        print("\ntokens: " + " · ".join(f"{k} {v}" for k, v in usage.items()))
        print(f"total {usage.total} of {usage.budget} ({usage.remaining} free)")
    return 0
