"""Run LangGraph's checkpointer conformance suite against every saver of the package and write
docs/conformance.md from what the run gave.

    .venv/bin/python scripts/conformance_report.py

The matrix (SQLite and PostgreSQL; the sync and the async saver; each through its async and
its sync methods) is ``tests/conformance.py``'s, the one ``tests/test_checkpointer.py`` runs.
PostgreSQL runs in a throwaway cluster (``tests/pg_server.py``: it needs ``initdb``/``pg_ctl``).
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import conformance
import pg_server


async def run_all(server: pg_server.Server, tmp: Path) -> dict[conformance.Combo, object]:
    reports = {}
    for combo in conformance.COMBOS:
        urls: list[str] = []

        def open_postgres() -> object:
            urls.append(server.new_database())
            return conformance.postgres_memory(urls[-1])

        opener = conformance.sqlite_opener(tmp / combo.id) if combo.backend == "sqlite" else open_postgres
        try:
            reports[combo] = await conformance.run(combo, opener)
        finally:
            for url in urls:
                server.drop_database(url)
        print(conformance.printed(reports[combo]), flush=True)
    return reports


def main() -> int:
    try:
        server = pg_server.start()
    except pg_server.Unavailable as exc:
        print(f"cannot run the PostgreSQL half of the matrix: {exc}", file=sys.stderr)
        return 1
    try:
        with tempfile.TemporaryDirectory() as tmp:
            reports = asyncio.run(run_all(server, Path(tmp)))
    finally:
        server.stop()
    conformance.DOC.write_text(conformance.render(reports), encoding="utf-8")  # type: ignore[arg-type]
    print(f"wrote {conformance.DOC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
