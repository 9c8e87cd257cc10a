"""``tiered-memory serve``: the memory inspector in the browser (``pip install
'langchain-tiered-memory[inspector]'``)."""

from __future__ import annotations

import argparse
import os

from . import common
from .common import DEFAULT_DATA_DIR

#: The inspector's default port (``inspector.server.DEFAULT_PORT``, not imported here: the
#: parser is built without loading the web packages).
PORT = 8765
#: Where the token may be given instead of --token (kept out of the process list).
TOKEN_ENV = "TIERED_MEMORY_INSPECTOR_TOKEN"


def add_commands(command: common.AddCommand) -> None:
    """Register ``serve``."""
    p = command("serve", run, "browse the memory and replay a turn in a local web app (the inspector)")
    p.add_argument("--database-url", metavar="URL", help="a memory in PostgreSQL instead of --data-dir (with --qdrant-url)")
    p.add_argument("--qdrant-url", metavar="URL", help="the Qdrant server of a --database-url memory")
    p.add_argument("--host", default="127.0.0.1", help="the address to bind (default 127.0.0.1; another needs --token)")
    p.add_argument("--port", type=common.int_at_least(0), default=PORT, metavar="N", help=f"the port (default {PORT}; 0: a free one)")
    p.add_argument("--allow-writes", action="store_true",
                   help="allow forgetting, exporting and re-running jobs from the pages (read-only without it)")
    p.add_argument("--token", default=os.environ.get(TOKEN_ENV), metavar="TOKEN",
                   help=f"a secret every request must carry; needed for a non-local --host (or set {TOKEN_ENV})")
    common.add_budget(p)


def run(args: argparse.Namespace) -> int:
    from ..errors import ConfigError

    if args.database_url is None and args.qdrant_url is not None:
        args.parser.error("--qdrant-url goes with --database-url")
    # Fail before opening the memory: a refused bind should not wait for the index.
    from ..inspector.server import is_local

    if not is_local(args.host) and not args.token:
        raise ConfigError(
            f"refusing to serve the memory on {args.host}, which other machines can reach, without a token: "
            f"pass --token (or set {TOKEN_ENV}), or bind to 127.0.0.1"
        )
    from ..inspector import serve

    config = common.config(args, job_mode="manual")
    if args.database_url is not None:
        if args.data_dir != DEFAULT_DATA_DIR:
            args.parser.error("pass --data-dir or --database-url, not both")
        from ..memory import TieredMemory

        memory = TieredMemory(database_url=args.database_url, qdrant_url=args.qdrant_url, config=config)
    else:
        # job_mode manual: the pages look and no job runs behind them (a re-run of failed
        # jobs runs them, when asked for).
        memory = common.open_memory(args, config=config)
    with memory:
        serve(memory, host=args.host, port=args.port, allow_writes=args.allow_writes, token=args.token, block=True)
    return 0
