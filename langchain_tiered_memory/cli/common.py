"""What the commands share: options, opening the memory, and printing.

Imported when the parser is built, so it imports nothing beyond the standard library at
module level: the memory, LangChain and pydantic load inside the command that runs.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from ..errors import DataDirError

if TYPE_CHECKING:
    from datetime import datetime

    from ..config import MemoryConfig
    from ..memory import TieredMemory

DEFAULT_DATA_DIR = "./memory"
PROG = "tiered-memory"
#: ``MemoryConfig``'s budget defaults, shown in ``--help`` without importing pydantic
#: (``tests/test_cli_startup.py`` checks that they stay equal).
BUDGET_DEFAULTS = {"max_tokens": 100_000, "output_reserve": 4_000, "system_reserve": 5_000}

#: ``command(name, run, help, json_output=False)``: adds a command's parser (see ``cli/__init__``).
AddCommand = Callable[..., argparse.ArgumentParser]


def error(message: str) -> None:
    """Print ``message`` as the command's one error line."""
    print(f"{PROG}: error: {' '.join(message.split())}", file=sys.stderr)


def quiet_logs(verbose: bool) -> None:
    """The package's log as one line per record on stderr; notes (offline mode, job retries)
    only with ``--verbose``, since the commands say what matters themselves."""
    import logging

    class OneLine(logging.Formatter):
        def format(self, record: logging.LogRecord) -> str:
            text = " ".join(record.getMessage().split())
            return f"{PROG}: {record.levelname.lower()}: {text}"

    logger = logging.getLogger("langchain_tiered_memory")
    if not any(type(h.formatter).__name__ == "OneLine" for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(OneLine())
        logger.addHandler(handler)
    logger.propagate = False
    logger.setLevel(logging.INFO if verbose else logging.ERROR)


# --- options ----------------------------------------------------------------------------


def int_at_least(minimum: int) -> Callable[[str], int]:
    """An argparse type: a whole number, at least ``minimum``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} is not a whole number of at least {minimum}")
        return value

    return parse


whole = int_at_least(0)
positive = int_at_least(1)


def iso_datetime(text: str) -> datetime:
    """An argparse type: an ISO date or time; without a zone, the user's local time."""
    from datetime import datetime

    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an ISO date or time (e.g. 2026-04-01 or 2026-04-01T09:30)") from None
    return value if value.tzinfo else value.astimezone()


def add_user(p: argparse.ArgumentParser) -> None:
    """A required ``--user``."""
    p.add_argument("--user", required=True, metavar="USER", help="the user id")


def add_budget(p: argparse.ArgumentParser, defaults: Mapping[str, int] | None = None) -> None:
    """``--max-tokens``, ``--output-reserve`` and ``--system-reserve``."""
    shown = {**BUDGET_DEFAULTS, **(defaults or {})}
    for name, help in (("max_tokens", "the model's context window"),
                       ("output_reserve", "tokens kept for the answer"),
                       ("system_reserve", "tokens kept for the system prompt")):
        p.add_argument(f"--{name.replace('_', '-')}", dest=name, type=whole, default=None, metavar="N",
                       help=f"{help} (default: {shown[name]})")


# --- the memory -------------------------------------------------------------------------


def open_memory(
    args: argparse.Namespace, *, create: bool = False, look: bool = False, **kwargs: Any
) -> TieredMemory:
    """The memory of ``--data-dir``; a command that only reads never creates one.

    ``look``: open it to look (``job_mode="manual"``): no job runs, nothing is written, so
    ``stats`` or ``search`` never does a pending job's work -- least of all with another
    extractor than the one it was journaled for.
    """
    from pathlib import Path

    from ..config import MemoryConfig
    from ..memory import TieredMemory
    from ..storage import DB_FILENAME

    if not create and not (Path(args.data_dir) / DB_FILENAME).is_file():
        raise DataDirError(f"no memory at {args.data_dir}; run `{PROG} demo` or pass --data-dir")
    if look:
        config = kwargs.pop("config", None) or MemoryConfig()
        kwargs["config"] = config.model_copy(update={"job_mode": "manual"})
    return TieredMemory(args.data_dir, **kwargs)


def config(args: argparse.Namespace, **fields: Any) -> MemoryConfig:
    """A config of ``fields``, with the budget options given on the command line."""
    from ..config import MemoryConfig

    for name in ("max_tokens", "output_reserve", "system_reserve"):
        if getattr(args, name, None) is not None:
            fields[name] = getattr(args, name)
    return MemoryConfig(**fields)


# --- printing ---------------------------------------------------------------------------

#: Work shorter than this many items shows no progress bar.
PROGRESS_MIN = 100


@contextlib.contextmanager
def progress_bar(desc: str, *, unit: str = "it") -> Iterator[Callable[[int, int], None]]:
    """A ``progress(done, total)`` callback drawing a tqdm bar on stderr once the work is
    long (``total >= PROGRESS_MIN``); closed on exit."""
    bar: Any = None

    def progress(done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            if total < PROGRESS_MIN:
                return
            from tqdm import tqdm  # type: ignore[import-untyped,unused-ignore]

            bar = tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, mininterval=0.2)
        bar.total = max(bar.total or 0, total)
        bar.update(done - bar.n)

    try:
        yield progress
    finally:
        if bar is not None:
            bar.close()



def print_json(value: Any) -> None:
    """``value`` as indented JSON on stdout (dataclasses, pydantic models and dates too)."""
    import json

    print(json.dumps(value, ensure_ascii=False, indent=2, default=jsonable))


def jsonable(value: Any) -> Any:
    """What :func:`json.dumps` cannot write by itself, as something it can."""
    import dataclasses
    from datetime import datetime

    if isinstance(value, datetime):
        return value.isoformat()
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, Mapping):
        return dict(value)
    return str(value)


def asdict(value: Any) -> dict[str, Any]:
    """A dataclass instance as a dict (``dataclasses`` loads on first use: it is slow to import)."""
    import dataclasses

    return dataclasses.asdict(value)


def indent(text: str, prefix: str = "    ") -> str:
    """``text`` indented by ``prefix`` on every line (``(empty)`` for no text)."""
    import textwrap

    return textwrap.indent(text.rstrip("\n") or "(empty)", prefix, lambda line: True)


def when(text: str | datetime) -> str:
    """A stored time as local ``YYYY-MM-DD HH:MM``."""
    from datetime import datetime

    value = datetime.fromisoformat(text) if isinstance(text, str) else text
    return value.astimezone().strftime("%Y-%m-%d %H:%M")


def counts(values: Mapping[str, int]) -> str:
    """``{"memories": 2, "threads": 1}`` as ``2 memories, 1 threads`` (``nothing`` if all 0)."""
    shown = [f"{n} {k.replace('_', ' ')}" for k, n in values.items() if n]
    return ", ".join(shown) or "nothing"


def size(n: float) -> str:
    """Bytes, readably."""
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"


def dir_size(path: os.PathLike[str] | str) -> int:
    """Bytes the directory takes on disk. Qdrant's files are sparse (32 MB apparent, a few
    KB used), so their allocated blocks count, not their length."""
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                st = os.stat(os.path.join(root, name))
            except OSError:  # a file removed while we walk
                continue
            blocks = getattr(st, "st_blocks", None)
            total += st.st_size if blocks is None else min(st.st_size, blocks * 512)
    return total
