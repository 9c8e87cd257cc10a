"""``tiered-memory mcp``: one user's memory as an MCP server (``pip install
'langchain-tiered-memory[mcp]'``), over stdio, or streamable HTTP with ``--http``."""

from __future__ import annotations

import argparse
import os

from . import common
from .common import DEFAULT_DATA_DIR

#: ``integrations.mcp_transport.DEFAULT_PORT`` and ``TOKEN_ENV``, not imported here: the
#: parser is built without loading the SDK.
PORT = 8766
TOKEN_ENV = "TIERED_MEMORY_MCP_TOKEN"


def add_commands(command: common.AddCommand) -> None:
    """Register ``mcp``."""
    p = command("mcp", run, "serve one user's memory to MCP clients (stdio; --http for streamable HTTP)")
    common.add_user(p)
    p.add_argument("--http", action="store_true", help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio")
    p.add_argument("--host", default=None,
                   help="with --http: the address to bind (default 127.0.0.1; another needs --token)")
    p.add_argument("--port", type=common.int_at_least(0), default=None, metavar="N",
                   help=f"with --http: the port (default {PORT}; 0: a free one)")
    p.add_argument("--token", default=None, metavar="TOKEN",
                   help=f"with --http: a secret every request must carry as 'Authorization: Bearer TOKEN' "
                        f"(or set {TOKEN_ENV}); needed for a non-local --host")
    p.add_argument("--database-url", metavar="URL", help="a memory in PostgreSQL instead of --data-dir (with --qdrant-url)")
    p.add_argument("--qdrant-url", metavar="URL", help="the Qdrant server of a --database-url memory")
    common.add_budget(p)


def run(args: argparse.Namespace) -> int:
    if not args.http:
        given = [f"--{name}" for name in ("host", "port", "token") if getattr(args, name) is not None]
        if given:
            args.parser.error(f"{', '.join(given)} go with --http")
    if args.database_url is None and args.qdrant_url is not None:
        args.parser.error("--qdrant-url goes with --database-url")
    if args.database_url is not None and args.data_dir != DEFAULT_DATA_DIR:
        args.parser.error("pass --data-dir or --database-url, not both")
    host = args.host or "127.0.0.1"
    token = args.token or os.environ.get(TOKEN_ENV) or None
    # Fail before opening the memory: a refused address, or no SDK, should not wait for the index.
    from ..integrations.mcp_transport import check_address, serve_mcp

    if args.http:
        check_address(host, token)
    config = common.config(args)
    if args.database_url is not None:
        from ..memory import TieredMemory

        memory = TieredMemory(database_url=args.database_url, qdrant_url=args.qdrant_url, config=config)
    else:
        memory = common.open_memory(args, create=True, config=config)
    with memory:
        if not args.http:
            serve_mcp(memory, args.user)
            return 0

        def ready(url: str) -> None:
            print(f"MCP server of user {args.user!r} at {url}"
                  f"{' (Bearer token required)' if token else ''}; Ctrl-C stops it", flush=True)

        serve_mcp(memory, args.user, transport="http", host=host, port=PORT if args.port is None else args.port,
                  token=token, on_ready=ready)
    return 0
