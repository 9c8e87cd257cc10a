"""``tiered-memory jobs list|retry``: the job journal, and running jobs again.

``retry`` makes due now the jobs waiting for their next try; ``--failed`` also runs again
the jobs that failed for good (a model down past the retry horizon), ``--offline`` hands
the jobs waiting for a chat model to the offline rules. The jobs then run in this process,
with the model the environment configures (``OPENAI_API_KEY``...) or the offline rules, and
the command says how they ended.

``list`` names each job in words, as the inspector's jobs page does (``extraction · thread
t1 · through message 27``: its kind, the thread's id, the last message it covers);
``--json`` gives the journal's own records, raw keys included.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from . import common

if TYPE_CHECKING:
    from ..memory import TieredMemory

#: ``flush``'s wait for the retried jobs: a model that is down again is retried within it.
_FLUSH_SECONDS = 600.0


def add_commands(command: common.AddCommand) -> None:
    """Register ``jobs``."""
    p = command("jobs", run, "the job journal: list jobs, or run failed and waiting jobs again", json_output=True)
    p.add_argument("action", choices=["list", "retry"], help="list: the newest jobs; retry: run jobs again now")
    p.add_argument("--user", metavar="USER", help="only this user's jobs")
    p.add_argument("--failed", action="store_true",
                   help="retry: also the jobs that failed for good; list: only those")
    p.add_argument("--offline", action="store_true",
                   help="retry: hand the jobs that wait for a chat model to the offline rules")
    p.add_argument("--limit", type=common.positive, default=20, metavar="N", help="list: at most N jobs (default 20)")


def run(args: argparse.Namespace) -> int:
    if args.action == "list":
        if args.offline:
            args.parser.error("--offline goes with retry")
        return _list(args)
    return _retry(args)


def _list(args: argparse.Namespace) -> int:
    # The inspector's jobs page names a job in the same words (one helper, no web extra needed).
    from ..inspector.source import job_label

    with common.open_memory(args, look=True) as memory:
        jobs = memory.admin.jobs.list(status="failed" if args.failed else None, user_id=args.user, limit=args.limit)
    if args.json:
        common.print_json(jobs)  # the raw keys: what scripts match on
        return 0
    if not jobs:
        print("no jobs")
    for job in jobs:
        # "extraction · thread t1 · through message 27", not the key `extract:2:{"through_seq": 27}`
        # (the thread's internal number and a JSON payload): --json keeps the key.
        tries = f"{job.attempts} attempt{'' if job.attempts == 1 else 's'}"
        print(f"{job_label(job)}  {job.status}  user {job.user_id}  {tries}, {common.when(job.updated_at)}")
        if job.waits_for:
            print(f"      waits for {job.waits_for}")
        if job.reason and job.status != "done":
            print(f"      {' '.join(job.reason.split())}")
    return 0


def _retry(args: argparse.Namespace) -> int:
    from ..config import MemoryConfig

    # Manual: opening runs nothing; the jobs asked for run in the flush below.
    with common.open_memory(args, config=MemoryConfig(job_mode="manual")) as memory:
        before = _failed(memory, args.user)
        done = memory.admin.stats()["jobs"]["done"]
        changed = memory.admin.jobs.retry(user_id=args.user, failed=args.failed, offline=args.offline)
        finished = memory.flush(timeout=_FLUSH_SECONDS) if changed else True
        jobs = memory.admin.stats()["jobs"]
        # Of the jobs asked for: those that failed again (all failed ones were retried with
        # --failed; without it, the ones that failed now).
        failed = _failed(memory, args.user) - (0 if args.failed else before)
    result = {"retried": changed, "done": max(0, jobs["done"] - done), "failed": max(0, failed),
              "waiting": jobs["waiting"], "pending": jobs["pending"]}
    if args.json:
        common.print_json(result)
    elif not changed:
        print("no job to run again" + ("" if args.failed else " (--failed runs the failed ones again)"))
    else:
        print(f"ran {changed} job(s) again: {result['done']} done, {result['failed']} failed")
        if result["waiting"]:
            print(f"  {result['waiting']} wait for a chat model: set OPENAI_API_KEY (and OPENAI_BASE_URL), "
                  "or pass --offline to run them with the offline rules")
        if result["pending"] and not finished:
            print(f"  {result['pending']} still retrying (the model cannot be reached); "
                  "they run when a memory with a worker opens")
    return 0 if finished and not result["failed"] else 1


def _failed(memory: TieredMemory, user: str | None) -> int:
    return len(memory.admin.jobs.list(status="failed", user_id=user, limit=1_000_000))
