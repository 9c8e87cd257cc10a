"""``migrate``: copy a memory directory to PostgreSQL and a Qdrant server (resumable)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from . import common


def add_commands(command: common.AddCommand) -> None:
    """Register ``migrate``."""
    p = command("migrate", migrate, "copy the memory directory to PostgreSQL and a Qdrant server (resumable)",
                json_output=True)
    p.add_argument("--to", required=True, metavar="URL",
                   help="the PostgreSQL database: postgresql://user:password@host:5432/dbname")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--qdrant-url", metavar="URL", help="the Qdrant server, e.g. http://localhost:6333")
    where.add_argument("--qdrant-path", metavar="DIR",
                       help="qdrant-client's local mode in DIR instead of a server (trials and tests)")
    p.add_argument("--qdrant-api-key", metavar="KEY", default=os.environ.get("QDRANT_API_KEY"),
                   help="the Qdrant server's API key (default: $QDRANT_API_KEY)")


def migrate(args: argparse.Namespace) -> int:
    from tqdm import tqdm  # type: ignore[import-untyped]

    from ..ops.migrate import migrate as copy

    bars: dict[str, Any] = {}

    def progress(step: str, total: int, done: int) -> None:
        if step not in bars:
            for bar in bars.values():  # one step at a time: the last one is over
                bar.close()
            bars[step] = tqdm(total=total, desc=f"{step:<11}", unit=" rows" if step == "records" else "", file=sys.stderr)
        bars[step].update(done)

    client = None
    if args.qdrant_path is not None:
        from qdrant_client import QdrantClient

        client = QdrantClient(path=args.qdrant_path)
    try:
        report = copy(args.data_dir, args.to, qdrant_url=args.qdrant_url, qdrant_api_key=args.qdrant_api_key,
                      qdrant_client=client, progress=progress)
    finally:
        for bar in bars.values():
            bar.close()
        if client is not None:
            client.close()
    if args.json:
        common.print_json({"ok": report.ok, "counts": {k: {"source": s, "target": t} for k, (s, t) in report.counts.items()}})
    else:
        width = max(len(k) for k in report.counts)
        print(f"{'':<{width}}  {'source':>9}  {'target':>9}")
        for name, (source, target) in report.counts.items():
            print(f"{name:<{width}}  {source:>9}  {target:>9}  {'ok' if source == target else 'MISMATCH'}")
    if not report.ok:
        common.error(f"the copy does not match the directory in: {', '.join(report.mismatches)}; run the same "
                     "command again to continue it (it never copies a row twice)")
        return 1
    if not args.json:
        print(f"migrated {args.data_dir}: every count matches")
    return 0
