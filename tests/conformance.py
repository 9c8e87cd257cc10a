"""The checkpointer conformance matrix, and docs/conformance.md rendered from a run of it.

Every saver the package has -- ``memory.checkpointer`` and the async saver, on SQLite and on
PostgreSQL -- is run through langgraph-checkpoint-conformance twice: through its async
methods (``aput``, ``alist``, … what the suite calls) and through its sync methods (``put``,
``list``, … called from a worker thread, as a sync graph or a thread pool does; for an async
saver that is its bridge to the event loop it lives in). Each capability suite gets a fresh
deployment (a directory, or a database).

``tests/test_checkpointer.py`` runs each combination and checks that its row of
docs/conformance.md is what the run gave; ``scripts/conformance_report.py`` runs them all
and writes the page.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import (
    BASE_CAPABILITIES,
    EXTENDED_CAPABILITIES,
)
from langgraph.checkpoint.conformance.report import CapabilityReport

from langchain_tiered_memory import MemoryConfig, TieredMemory
from langchain_tiered_memory.embeddings import HashingEmbeddings

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "conformance.md"
CONFIG = MemoryConfig(job_mode="inline")
#: The capabilities in the page's column order: LangGraph's base ones, then the optional ones.
CAPABILITIES = ["put", "put_writes", "get_tuple", "list", "delete_thread", "copy_thread", "delete_for_runs", "prune"]
assert set(CAPABILITIES) == {c.value for c in BASE_CAPABILITIES | EXTENDED_CAPABILITIES}
PACKAGES = (
    "langgraph-checkpoint-conformance", "langgraph-checkpoint", "langgraph-checkpoint-sqlite",
    "langgraph-checkpoint-postgres",
)
SAVER_NAMES = {
    ("sqlite", "sync"): "`TieredCheckpointSaver` (`memory.checkpointer`)",
    ("sqlite", "async"): "`AsyncTieredCheckpointSaver`",
    ("postgresql", "sync"): "`PostgresTieredCheckpointSaver` (`memory.checkpointer`)",
    ("postgresql", "async"): "`AsyncPostgresTieredCheckpointSaver`",
}


@dataclass(frozen=True)
class Combo:
    """One row of the matrix: a database, a saver of it, and which of its APIs drives it."""

    backend: str  # "sqlite" | "postgresql"
    saver: str  # "sync" (memory.checkpointer) | "async" (the async saver)
    api: str  # "async" (aput, …) | "sync" (put, … from a worker thread)

    @property
    def id(self) -> str:
        return f"{self.backend}-{self.saver}_saver-{self.api}_api"

    @property
    def cells(self) -> list[str]:
        return [
            "SQLite" if self.backend == "sqlite" else "PostgreSQL",
            SAVER_NAMES[(self.backend, self.saver)],
            "async methods" if self.api == "async" else "sync methods, from a worker thread",
        ]


COMBOS = [Combo(b, s, a) for b in ("sqlite", "postgresql") for s in ("sync", "async") for a in ("async", "sync")]

_SYNC_OF = {
    "aget_tuple": "get_tuple", "alist": "list", "aput": "put", "aput_writes": "put_writes",
    "adelete_thread": "delete_thread", "adelete_for_runs": "delete_for_runs",
    "acopy_thread": "copy_thread", "aprune": "prune",
}


class _SyncDriven(BaseCheckpointSaver[str]):
    """A saver whose async methods call another saver's sync ones in a worker thread, so the
    suite (which calls the async API) checks the sync API."""

    def __init__(self, inner: BaseCheckpointSaver[str]) -> None:
        super().__init__(serde=inner.serde)
        self.inner = inner

    def get_next_version(self, current: Any, channel: None) -> Any:
        return self.inner.get_next_version(current, channel)


def _bridge(name: str) -> Callable[..., Any]:
    sync = _SYNC_OF[name]
    if name == "alist":
        async def alist(self: _SyncDriven, config: Any, **kwargs: Any) -> AsyncIterator[Any]:
            for item in await asyncio.to_thread(lambda: list(self.inner.list(config, **kwargs))):
                yield item

        return alist

    async def method(self: _SyncDriven, *args: Any, **kwargs: Any) -> Any:
        return await asyncio.to_thread(lambda: getattr(self.inner, sync)(*args, **kwargs))

    method.__name__ = name
    return method


def sync_driven(saver: BaseCheckpointSaver[str]) -> BaseCheckpointSaver[str]:
    """``saver`` driven through its sync methods: only those it implements (the suite detects a
    capability by the method being overridden) are bridged."""
    methods = {
        name: _bridge(name)
        for name, sync in _SYNC_OF.items()
        if getattr(type(saver), sync) is not getattr(BaseCheckpointSaver, sync)
    }
    return type("SyncDriven", (_SyncDriven,), methods)(saver)


def _saver(combo: Combo, memory: TieredMemory) -> BaseCheckpointSaver[str]:
    if combo.saver == "sync":
        return memory.checkpointer
    if combo.backend == "sqlite":
        from langchain_tiered_memory import AsyncTieredCheckpointSaver

        return AsyncTieredCheckpointSaver(memory)
    from langchain_tiered_memory import AsyncPostgresTieredCheckpointSaver

    return AsyncPostgresTieredCheckpointSaver(memory)


async def run(combo: Combo, open_memory: Callable[[], TieredMemory]) -> CapabilityReport:
    """The conformance report of ``combo``; ``open_memory()`` opens a fresh deployment."""

    @checkpointer_test(name=combo.id)
    async def factory() -> AsyncIterator[BaseCheckpointSaver[str]]:
        memory = open_memory()
        try:
            saver = _saver(combo, memory)
            if combo.api == "sync":
                if combo.saver == "async":
                    # Its sync methods hand work to the loop it lives in: the suite's.
                    await saver.setup()  # type: ignore[attr-defined]
                saver = sync_driven(saver)
            yield saver
        finally:
            memory.close()

    return await validate(factory)


def sqlite_opener(root: Path) -> Callable[[], TieredMemory]:
    """``open_memory`` for SQLite: a new directory in ``root`` each time."""
    count = iter(range(1_000_000))
    return lambda: TieredMemory(root / f"run{next(count)}", CONFIG, embeddings=HashingEmbeddings())


def postgres_memory(url: str) -> TieredMemory:
    """A memory on the PostgreSQL database ``url`` (qdrant-client's local mode for vectors)."""
    from qdrant_client import QdrantClient

    return TieredMemory(config=CONFIG, embeddings=HashingEmbeddings(), database_url=url,
                        qdrant_client=QdrantClient(":memory:"))


def printed(report: CapabilityReport) -> str:
    """The report as langgraph-checkpoint-conformance prints it."""
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        report.print_report()
    return text.getvalue()


def _cell(report: CapabilityReport, capability: str) -> str:
    result = report.results.get(capability)
    if result is None or not result.detected:
        return "⊘ not implemented"
    total = result.tests_passed + result.tests_failed
    return f"{'✅' if result.passed else '❌'} {result.tests_passed}/{total}"


def row(combo: Combo, report: CapabilityReport) -> str:
    """``combo``'s row of the page's table."""
    cells = [*combo.cells, *(_cell(report, c) for c in CAPABILITIES), report.conformance_level()]
    return "| " + " | ".join(cells) + " |"


def versions() -> str:
    """The line naming the versions a run used."""
    return "Run with " + ", ".join(f"{name} {metadata.version(name)}" for name in PACKAGES) + "."


def render(reports: dict[Combo, CapabilityReport]) -> str:
    """docs/conformance.md for a run of the whole matrix."""
    header = ["database", "saver", "driven through", *(f"`{c}`" for c in CAPABILITIES), "level"]
    table = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
        *(row(combo, reports[combo]) for combo in COMBOS),
    ]
    passed = sum(r.conformance_level() == "FULL" for r in reports.values())
    return "\n".join([
        "# Checkpointer conformance",
        "",
        "[langgraph-checkpoint-conformance](https://pypi.org/project/langgraph-checkpoint-conformance/)",
        "is LangGraph's test suite for checkpointers (what a LangGraph server expects of a custom",
        "`checkpointer`). It runs here against every saver of the package, on SQLite (a directory's",
        "`memory.db`) and on PostgreSQL, each driven through its async methods (`aput`, `alist`, …:",
        "what the suite calls) and through its sync methods (`put`, `list`, …, called from a worker",
        "thread; an async saver hands them to the event loop it lives in). Each capability runs on a",
        "fresh deployment. A cell is the suite's tests passed out of those run.",
        "",
        "<!-- generated by scripts/conformance_report.py: do not edit by hand -->",
        "",
        f"**{passed} of {len(reports)} combinations conform fully** (every capability, base and",
        "extended, detected and passing).",
        "",
        *table,
        "",
        versions(),
        "",
        "- Base capabilities (`put`, `put_writes`, `get_tuple`, `list`, `delete_thread`) are",
        "  langgraph-checkpoint-sqlite's and langgraph-checkpoint-postgres's own savers, on the",
        "  memory's database.",
        "- `copy_thread`, `delete_for_runs` and SQLite's `prune` are the package's",
        "  (`langchain_tiered_memory/integrations/checkpoint_ops.py`); PostgreSQL's `prune` is",
        "  `PostgresSaver`'s. `prune(strategy=\"keep_latest\")` refuses threads whose graph uses a",
        "  `DeltaChannel` (an `InvalidInputError`), and `copy_thread` refuses a target thread that",
        "  already has checkpoints.",
        "",
        "## Regenerating this page",
        "",
        "```bash",
        ".venv/bin/python scripts/conformance_report.py",
        "```",
        "",
        "It runs the whole matrix (PostgreSQL in a throwaway cluster, as the tests do: it needs",
        "`initdb`/`pg_ctl`) and rewrites this file. `tests/test_checkpointer.py` runs the same",
        "combinations, fails unless each conforms fully, and fails when a row here differs from",
        "what its run gave (when the versions above are the installed ones).",
        "",
    ])


def documented_rows() -> dict[str, str]:
    """The rows of the page's table, by their first three cells."""
    rows = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if line.startswith("| ") and not line.startswith("| database"):
            rows[" | ".join(c.strip() for c in line.strip("|").split("|")[:3])] = line
    return rows


def key(combo: Combo) -> str:
    return " | ".join(combo.cells)


def documented_versions() -> str | None:
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if line.startswith("Run with "):
            return line
    return None
