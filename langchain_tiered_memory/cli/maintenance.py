"""Maintenance: ``stats`` (counts, disk, jobs, spend) and ``reindex``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from typing import Any

from . import common


def add_commands(command: common.AddCommand) -> None:
    """Register ``stats`` and ``reindex``."""
    command("stats", stats, "counts, disk size, the job queue, failed jobs and LLM spend", json_output=True)
    command("reindex", reindex, "rebuild every vector from its text (after changing the embedding model)", json_output=True)


def stats(args: argparse.Namespace) -> int:
    with common.open_memory(args, look=True) as memory:
        stats = dict(memory.admin.stats())
        stats.setdefault("disk_bytes", common.dir_size(memory.data_dir or args.data_dir))
    if args.json:
        common.print_json(stats)
        return 0
    print(f"memory at {stats.pop('data_dir', args.data_dir)}")
    sizes = {k: stats.pop(k) for k in list(stats) if k.endswith("_bytes") and isinstance(stats[k], int)}
    total = sizes.pop("disk_bytes")
    parts = "".join(f", {'memory.db' if k == 'db_bytes' else k.removesuffix('_bytes')} {common.size(v)}" for k, v in sizes.items())
    print(f"disk: {common.size(total)} in all{parts}")
    jobs = stats.pop("jobs", {})
    failed = stats.pop("failed_jobs", [])
    dropped_items, dropped = stats.pop("dropped_items", 0), stats.pop("dropped", [])
    usage = stats.pop("usage", None)
    budget = stats.pop("budget", None)
    counts = {k: v for k, v in stats.items() if isinstance(v, int) and not isinstance(v, bool)}
    print(" · ".join(f"{v} {k}" for k, v in counts.items()))
    for key, value in stats.items():
        if key not in counts:
            # An empty mapping ("degraded": nothing was) and a missing value read as "none".
            shown = " · ".join(f"{k} {_word(v)}" for k, v in value.items()) if isinstance(value, Mapping) else _word(value)
            print(f"{key}: {shown or 'none'}")
    if jobs:
        print("jobs: " + " · ".join(f"{v} {k}" for k, v in jobs.items()))
    if jobs.get("waiting"):
        print(f"  {jobs['waiting']} waiting: journaled by a memory with a chat model, they run only where one is "
              "configured (set OPENAI_API_KEY, or open the directory with model=), or with the offline rules "
              f"after `{common.PROG} jobs retry --offline`")
    if jobs.get("stale"):
        print(f"  {jobs['stale']} stale: leased by a process that no longer runs; the next memory that runs jobs "
              "takes them over")
    if failed:
        print(f"failed jobs ({len(failed)}, newest first):")
        for job in failed:
            print(f"  {job.get('key')}  {job.get('attempts')} attempts, last {job.get('at')}")
            print(f"      {' '.join(str(job.get('reason')).split())}")
        print(f"  run them again: {common.PROG} jobs retry --failed")
    if dropped_items:
        _print_dropped(dropped_items, dropped)
    if usage is not None:
        _print_usage(usage)
    if budget is not None and (budget.get("limits") or budget.get("waiting_jobs")):
        _print_budget(budget)
    return 0


def _word(value: Any) -> str:
    """A stats value for a reader: ``none`` for a missing one (``index.held_elsewhere`` while
    no other process holds the index), not Python's ``None``."""
    return "none" if value is None else str(value)


def _print_dropped(items: int, recent: list[Mapping[str, Any]]) -> None:
    """The items validation left out of the models' answers, newest first."""
    print(f"dropped items: {items} (the rest of each answer was kept; every job keeps its record)")
    for item in recent:
        times = f" ×{item['count']}" if item["count"] > 1 else ""
        print(f"  {item['key']}  {item['kind']} #{item['index']}{times}, {item['at']}")
        print(f"      {' '.join(str(item['reason']).split())}")
    if sum(i["count"] for i in recent) < items:
        print(f"  … (the {len(recent)} newest shown)")


def _spend(t: Mapping[str, Any]) -> str:
    return (f"{t['calls']} calls, {t['input_tokens']:,} prompt + {t['output_tokens']:,} completion tokens, "
            f"{t['duration_s']:.1f} s in {t['jobs']} jobs")


def _print_usage(usage: Mapping[str, Any]) -> None:
    """The jobs' LLM spend: in all, per day (newest last) and per user (most tokens first)."""
    total = usage["total"]
    if not total["calls"]:
        print("LLM spend: none (no job called a model)")
        return
    methods = " · ".join(f"{n} {m}" for m, n in usage.get("methods", {}).items())
    print(f"LLM spend: {_spend(total)}" + (f" (method: {methods})" if methods else ""))
    print("  per day:")
    for day, t in usage["by_day"].items():
        print(f"    {day}  {_spend(t)}")
    shown = usage["by_user"]
    more = usage.get("users", len(shown)) - len(shown)
    print("  per user" + (f" (the {len(shown)} who spent most; {more} more)" if more > 0 else "") + ":")
    for user, t in shown.items():
        print(f"    {user}  {_spend(t)}")


def _print_budget(budget: Mapping[str, Any]) -> None:
    limits = " · ".join(f"{k.replace('_', ' ')} {v:,}" for k, v in budget["limits"].items()) or "none"
    hour = budget["last_hour"]
    print(f"spend budget: {limits}; last hour {hour['calls']} calls, {hour['tokens']:,} tokens")
    if budget["waiting_jobs"]:
        print(f"  {budget['waiting_jobs']} jobs wait for the budget; it frees at {budget['frees_at']}")


def reindex(args: argparse.Namespace) -> int:
    state = {"total": -1, "done": -1}

    def bar(done: int, total: int) -> None:
        if total != state["total"] or done < state["done"]:
            if state["total"] >= 0:
                sys.stderr.write("\n")
            state["total"] = total
        state["done"] = done
        width = 30
        filled = width if total == 0 else width * done // total
        sys.stderr.write(f"\r  [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
        sys.stderr.flush()

    with common.open_memory(args) as memory:
        counts = memory.admin.reindex(progress=bar)
    if state["total"] >= 0:
        sys.stderr.write("\n")
    if args.json:
        common.print_json(counts)
    else:
        print("reindexed " + " and ".join(f"{n} {kind}" for kind, n in counts.items()) + " from memory.db")
    return 0

