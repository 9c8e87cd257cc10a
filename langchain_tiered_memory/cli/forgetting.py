"""``tiered-memory forget``: a user, a thread, a memory or an entity, in every layer."""

from __future__ import annotations

import argparse
import sys

from ..errors import InvalidInputError
from . import common


def add_commands(command: common.AddCommand) -> None:
    """Register ``forget``."""
    p = command("forget", run, "delete a user, a thread, a memory or an entity, in every layer", json_output=True)
    p.add_argument("--user", help="the user (alone: everything of the user)")
    p.add_argument("--thread", help="a thread, and what was learned in it")
    p.add_argument("--memory", metavar="ID", help="one long-term memory (with --user)")
    p.add_argument("--entity", metavar="NAME", help="one entity profile (with --user)")
    p.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")


def run(args: argparse.Namespace) -> int:
    parser: argparse.ArgumentParser = args.parser
    if (args.memory is not None or args.entity is not None) and (args.user is None or args.thread is not None):
        parser.error("--memory and --entity take --user (what they name belongs to a user) and no --thread")
    if args.user is None and args.thread is None:
        parser.error("say what to forget: --user U, --thread T, or --user U with --memory ID or --entity NAME")
    if args.memory is not None and args.entity is not None:
        parser.error("forget one thing at a time: --memory or --entity")
    if args.memory is not None:
        what = f"memory {args.memory} of user {args.user!r}"
    elif args.entity is not None:
        what = f"the entity {args.entity!r} of user {args.user!r}"
    elif args.thread is not None:
        what = f"thread {args.thread!r} and everything learned in it"
    else:
        what = f"everything of user {args.user!r} (messages, summaries, entities, memories, episodes, store items)"
    with common.open_memory(args) as memory:
        if not args.yes:
            if not sys.stdin.isatty():
                raise InvalidInputError(f"forget asks for confirmation, but stdin is not a terminal; pass --yes to forget {what}")
            sys.stderr.write(f"Forget {what}? This cannot be undone. [y/N] ")
            sys.stderr.flush()
            if sys.stdin.readline().strip().lower() not in ("y", "yes"):
                print("nothing was forgotten", file=sys.stderr)
                return 1
        if args.memory is not None:
            counts = memory.memories.forget(args.user, args.memory)
        else:
            counts = memory.admin.forget(user_id=args.user, thread_id=args.thread, entity=args.entity)
    if args.json:
        common.print_json(counts)
        return 0
    # What was deleted, apart from what the result says of the scrub that followed.
    deleted = {k: n for k, n in counts.items() if k not in _SCRUB_KEYS}
    if any(deleted.values()):
        print(f"forgot {common.counts(deleted)}")
    else:
        print(f"nothing matched {what}; nothing was forgotten")
    if counts.get("job_answers_scrubbed"):
        print(f"scrubbed the forgotten text from {counts['job_answers_scrubbed']} job rows")
    if counts.get("wal_scrubbed") is False:
        print(
            "memory.db-wal still holds frames of the forgotten rows: another process has a read "
            "open; they go once it ends, when a process using this memory runs its upkeep, "
            "closes or opens it",
            file=sys.stderr,
        )
    return 0


#: Keys of forget's result about the scrub, not counts of deleted records.
_SCRUB_KEYS = ("job_answers_scrubbed", "wal_scrubbed")
