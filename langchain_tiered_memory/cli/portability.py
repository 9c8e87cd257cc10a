"""``tiered-memory export`` and ``import``: a user as JSON Lines, out and in."""

from __future__ import annotations

import argparse
import os
import sys

from ..errors import DataDirError
from . import common


def add_commands(command: common.AddCommand) -> None:
    """Register ``export`` and ``import``."""
    p = command("export", export, "write everything of a user as JSON Lines")
    common.add_user(p)
    p.add_argument("--output", "-o", metavar="FILE", help="write to FILE instead of stdout")
    p = command("import", import_, "restore a file written by export into the memory", json_output=True)
    p.add_argument("file", metavar="FILE", help="the export file ('-' for stdin)")


def export(args: argparse.Namespace) -> int:
    from ..ops.portability import export_jsonl

    with common.open_memory(args, look=True) as memory:
        if args.output is None:
            counts = export_jsonl(memory.admin, args.user, sys.stdout)
            sys.stdout.flush()
            where = "stdout"
        else:
            from pathlib import Path

            path = Path(args.output)
            # Written aside and renamed: a failed export never leaves a file that looks whole.
            part = path.with_name(path.name + ".part")
            try:
                with open(part, "w", encoding="utf-8") as f:
                    counts = export_jsonl(memory.admin, args.user, f)
                os.replace(part, path)
            except OSError as exc:
                part.unlink(missing_ok=True)
                raise DataDirError(f"cannot write {path}: {exc.strerror or exc}") from None
            except BaseException:
                part.unlink(missing_ok=True)
                raise
            where = str(path)
    print(f"exported user {args.user!r} to {where}: {common.counts(counts)}", file=sys.stderr)
    return 0


def import_(args: argparse.Namespace) -> int:
    from ..ops.portability import load_jsonl

    # The whole file is checked before the memory is opened, let alone created.
    user_id, data = load_jsonl(sys.stdin if args.file == "-" else args.file)
    # Inline jobs: no background worker indexes beside the import (its progress is ours).
    with common.open_memory(args, create=True, config=common.config(args, job_mode="inline")) as memory:
        with common.progress_bar("embedding", unit="record") as progress:
            counts = memory.admin.import_user(user_id, data, progress=progress)
        where = memory.data_dir
    if args.json:
        common.print_json({"user_id": user_id, "counts": counts})
    else:
        print(f"imported user {user_id!r} into {where}: {common.counts(counts)}")
    return 0
