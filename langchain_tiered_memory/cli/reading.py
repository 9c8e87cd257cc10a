"""Reading the layers: ``search``, ``entities``, ``episodes`` and ``threads``."""

from __future__ import annotations

import argparse

from ..errors import NotFoundError
from ..vocabulary import MEMORY_TYPES
from . import common
from .common import PROG


def add_commands(command: common.AddCommand) -> None:
    """Register ``search``, ``entities``, ``episodes`` and ``threads``."""
    p = command("search", search, "search a user's long-term memories", json_output=True)
    p.add_argument("query", help="what to search for")
    common.add_user(p)
    p.add_argument("-k", type=common.positive, default=5, help="how many memories (default: 5)")
    p.add_argument("--type", action="append", choices=MEMORY_TYPES,
                   help="only memories of this type (repeatable)")
    p.add_argument("--explain", action="store_true", help="show how each score was made")
    p = command("entities", entities, "list a user's entity profiles", json_output=True)
    common.add_user(p)
    p.add_argument("--name", help="one entity, with the history of its attributes")
    p = command("episodes", episodes, "list a user's past sessions (episodes)", json_output=True)
    common.add_user(p)
    p.add_argument("--query", help="most relevant to this first (default: newest first)")
    p.add_argument("--since", type=common.iso_datetime, help="ended at or after this ISO date/time")
    p.add_argument("--until", type=common.iso_datetime, help="started at or before this ISO date/time")
    p.add_argument("-k", type=common.positive, default=10, help="how many episodes (default: 10)")
    p = command("threads", threads, "list a user's threads", json_output=True)
    common.add_user(p)


def search(args: argparse.Namespace) -> int:
    from ..scoring import TIE_BREAK

    with common.open_memory(args, look=True) as memory:
        # A look: the recall is not counted (no access boost from the command line).
        hits = memory.memories.search(args.user, args.query, k=args.k, memory_types=args.type, explain=args.explain, peek=True)
    if args.json:
        common.print_json([h.model_dump(mode="json") for h in hits])
        return 0
    if not hits:
        print(f"no memory of user {args.user!r} matches {args.query!r}")
    for rank, hit in enumerate(hits, 1):
        e = hit.entry
        print(f"{rank}. {hit.score:.3f}  [{e.memory_type}, importance {e.importance:.2f}, boost {e.boost:.2f}] "
              f"{' '.join(e.content.split())}")
        print(f"   id {e.id} · created {common.when(e.created_at)} · recalled {e.access_count}×"
              + (f" · thread {e.session_id}" if e.session_id else ""))
        if hit.parts is not None:
            p = hit.parts
            dense = "–" if p.dense is None else f"{p.dense:.3f}"
            sparse = "–" if p.sparse is None else f"{p.sparse:.2f}"
            print(f"   relevance {p.relevance:.3f} (cosine {dense}, BM25 {sparse}); prior "
                  f"{p.effective_importance:.3f} = min(1, importance {p.importance:.2f} + boost {p.boost:.2f}) × "
                  f"decay {p.decay:.3f} after {p.days_since_access:.1f} days; score = relevance + "
                  f"{TIE_BREAK:g} × (prior − 0.5) = {p.score:.3f}")
    return 0


def entities(args: argparse.Namespace) -> int:
    with common.open_memory(args, look=True) as memory:
        if args.name is not None:
            entity = memory.entities.get(args.user, args.name)
            if entity is None:
                raise NotFoundError(f"user {args.user!r} has no entity named {args.name!r} ({PROG} entities --user {args.user} lists them)")
            entities = [entity]
        else:
            entities = memory.entities.list(args.user)
    if args.json:
        common.print_json([common.asdict(e) for e in entities] if args.name is None else common.asdict(entities[0]))
        return 0
    if not entities:
        print(f"user {args.user!r} has no entity profiles")
    for e in entities:
        print(f"{e.name} ({e.type})  updated {common.when(e.updated_at)}")
        for key, value in e.attributes.items():
            print(f"    {key}: {value}")
        if args.name is not None:
            print("  history:")
            for key, values in e.history.items():
                for v in values:
                    until = f" until {common.when(v.superseded_at)}" if v.superseded_at else " (current)"
                    source = f" in thread {v.source_thread}" if v.source_thread else ""
                    print(f"    {key}: {v.value}  learned {common.when(v.learned_at)}{source}{until}")
    return 0


def episodes(args: argparse.Namespace) -> int:
    with common.open_memory(args, look=True) as memory:
        hits = memory.episodes.search(args.user, query=args.query, since=args.since, until=args.until, k=args.k)
        # A query finds only episodes close enough to it: none found is not none there.
        unmatched = not hits and bool(args.query) and bool(
            memory.episodes.search(args.user, since=args.since, until=args.until, k=1))
    if args.json:
        common.print_json([{"score": h.score, **common.asdict(h.episode)} for h in hits])
        return 0
    span = " in that time range" if args.since or args.until else ""
    if unmatched:
        print(f"no episode of user {args.user!r}{span} matches {args.query!r} "
              f"(without --query, {PROG} episodes lists the newest)")
    elif not hits:
        print(f"user {args.user!r} has no episodes{span}")
    for hit in hits:
        ep = hit.episode
        score = f"  score {hit.score:.3f}" if hit.score is not None else ""
        print(f"[{common.when(ep.started_at)} → {common.when(ep.ended_at)}] thread {ep.thread_id}{score}")
        print(common.indent(ep.summary))
        if ep.decisions:
            print("    decisions: " + "; ".join(ep.decisions))
        if ep.outcome:
            print("    outcome: " + ep.outcome)
        if ep.topics:
            print("    topics: " + ", ".join(ep.topics))
    return 0


def threads(args: argparse.Namespace) -> int:
    with common.open_memory(args, look=True) as memory:
        threads = memory.threads.list(args.user)
    if args.json:
        common.print_json([common.asdict(t) for t in threads])
        return 0
    if not threads:
        print(f"user {args.user!r} has no threads")
    for t in threads:
        print(f"{t.thread_id}  {t.messages} messages  updated {common.when(t.updated_at)}")
    return 0
