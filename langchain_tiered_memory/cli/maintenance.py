"""Maintenance: ``stats`` (counts, disk, jobs, spend) and ``reindex``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping

from . import common


def add_commands(command: common.AddCommand) -> None:
    """Register ``stats`` and ``reindex``."""
    command("stats", stats, "counts, disk size, the job queue, failed jobs and LLM spend", json_output=True)
    command("reindex", reindex, "rebuild every vector from its text (after changing the embedding model)", json_output=True)


def stats(args: argparse.Namespace) -> int:
    with common.open_memory(args) as memory:
        stats = dict(memory.stats())
        stats.setdefault("disk_bytes", common.dir_size(memory.data_dir))
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
    counts = {k: v for k, v in stats.items() if isinstance(v, int) and not isinstance(v, bool)}
    print(" · ".join(f"{v} {k}" for k, v in counts.items()))
    for key, value in stats.items():
        if key not in counts:
            print(f"{key}: {value if not isinstance(value, Mapping) else ' · '.join(f'{k} {v}' for k, v in value.items())}")
    if jobs:
        print("jobs: " + " · ".join(f"{v} {k}" for k, v in jobs.items()))
    if failed:
        print(f"failed jobs ({len(failed)}, newest first):")
        for job in failed:
            print(f"  {job.get('key')}  {job.get('attempts')} attempts, last {job.get('at')}")
            print(f"      {' '.join(str(job.get('reason')).split())}")
    return 0


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
        counts = memory.reindex(progress=bar)
    if state["total"] >= 0:
        sys.stderr.write("\n")
    if args.json:
        common.print_json(counts)
    else:
        print("reindexed " + " and ".join(f"{n} {kind}" for kind, n in counts.items()) + " from memory.db")
    return 0

