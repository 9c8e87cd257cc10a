"""``tiered-memory``: the command line over one memory directory (``--data-dir``, default ``./memory``).

Commands: ``demo``, ``chat``, ``inspect``, ``search``, ``entities``, ``episodes``, ``threads``,
``forget``, ``export``, ``import``, ``stats``, ``jobs``, ``reindex``, ``migrate`` (to
PostgreSQL and a Qdrant server), ``serve`` (the inspector) and ``mcp`` (an MCP server).
Each is a thin adapter over one :class:`~langchain_tiered_memory.TieredMemory`
call (``migrate``: over :func:`langchain_tiered_memory.migrate.migrate`). Errors are one readable line on
stderr and exit code 1 (2 for bad arguments, 130 for Ctrl-C), never a traceback; ``--json``
prints machine-readable output where a command has results.

One module per command group (:mod:`.demo`, :mod:`.chat`, :mod:`.inspecting`,
:mod:`.reading`, :mod:`.forgetting`, :mod:`.portability`, :mod:`.maintenance`,
:mod:`.jobs`, :mod:`.migrating`, :mod:`.serving`, :mod:`.mcp`); each
registers its commands here and imports LangChain and the memory only inside the command
that runs, so ``--help`` and ``--version`` start in a few tens of milliseconds
(``benchmarks/bench_startup.py``).
"""

from __future__ import annotations

import argparse
from importlib import metadata
import os
import sys
from collections.abc import Sequence

from ..errors import TieredMemoryError
from . import chat, demo, forgetting, inspecting, jobs, maintenance, mcp, migrating, portability, reading, serving
from .common import DEFAULT_DATA_DIR, PROG, error, quiet_logs

__all__ = ["DEFAULT_DATA_DIR", "DEMO_TURNS", "PROG", "main"]

#: The demo's scripted conversation (kept importable from here for the tests and notebooks).
DEMO_TURNS = demo.DEMO_TURNS
_GROUPS = (demo, chat, inspecting, reading, forgetting, portability, maintenance, jobs, migrating, serving, mcp)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``tiered-memory`` command; returns the exit code."""
    parser = _parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "run"):
        parser.print_help()
        return 2
    quiet_logs(args.verbose)
    try:
        return int(args.run(args) or 0)
    except TieredMemoryError as exc:
        error(str(exc))
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # Output piped into `head` and the like: stop quietly, as Unix tools do.
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - flushed at exit, never read
        return 0
    except Exception as exc:  # a bug of ours: still one line, the traceback on request
        if os.environ.get("TIERED_MEMORY_DEBUG"):
            raise
        error(f"unexpected {type(exc).__name__}: {exc} (set TIERED_MEMORY_DEBUG=1 for the traceback)")
        return 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description="Layered memory for LangChain and LangGraph agents.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {metadata.version('langchain-tiered-memory')}")
    parser.add_argument(
        "--data-dir", default=DEFAULT_DATA_DIR, metavar="DIR",
        help=f"the memory directory (default: {DEFAULT_DATA_DIR})",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="show the package's log notes")
    # Also accepted after the command; SUPPRESS keeps a value given before it.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--data-dir", default=argparse.SUPPRESS, metavar="DIR", help="the memory directory")
    common.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")

    def command(name: str, run: object, help: str, *, json_output: bool = False) -> argparse.ArgumentParser:
        p = sub.add_parser(name, parents=[common], help=help, description=help)
        p.set_defaults(run=run, parser=p)
        if json_output:
            p.add_argument("--json", action="store_true", help="machine-readable JSON output")
        return p

    for group in _GROUPS:
        group.add_commands(command)
    return parser
