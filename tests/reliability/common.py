"""What the probes share: the checks of a directory after the fact, and their figures."""

from __future__ import annotations

import os
import sqlite3
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"


def child_env() -> dict[str, str]:
    """The environment of a child process: this checkout first (not an installed copy), the
    scripted models importable, no model hub, no API key."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(TESTS), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["HF_HUB_OFFLINE"] = "1"
    env.pop("OPENAI_API_KEY", None)
    return env


def python() -> str:
    return sys.executable


@dataclass
class Figures:
    """What a probe tried and what went wrong; ``losses`` and ``escapes`` must stay 0."""

    name: str
    turns: int = 0
    kills: int = 0
    faults: int = 0
    inputs: int = 0
    losses: int = 0
    escapes: int = 0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    def line(self) -> str:
        parts = [f"{k} {getattr(self, k)}" for k in ("turns", "kills", "faults", "inputs", "losses", "escapes")]
        text = f"{self.name:<12} " + " · ".join(parts) + f" · {self.seconds:.1f} s"
        return text + "".join(f"\n{'':13}{note}" for note in self.notes)


def integrity(db_path: Path) -> list[str]:
    """Problems SQLite itself finds in the file (``PRAGMA integrity_check`` and foreign keys)."""
    with sqlite3.connect(db_path) as conn:
        problems = [r[0] for r in conn.execute("PRAGMA integrity_check") if r[0] != "ok"]
        problems += [f"foreign key: {r}" for r in conn.execute("PRAGMA foreign_key_check")]
    return problems


def index_problems(memory: Any) -> list[str]:
    """Whether the recall index matches its owner after the upkeep: every record marked
    indexed has its point, no record waits, and no point is left without a record."""
    db = memory._parts.storage.db
    with db.read() as tx:
        memories = tx.column("SELECT id FROM memories WHERE indexed = 1")
        episodes = tx.column("SELECT id FROM episodes WHERE indexed = 1")
        units = tx.column("SELECT id FROM units WHERE indexed = 1")
        waiting = tx.scalar("SELECT (SELECT COUNT(*) FROM memories WHERE indexed != 1) + "
                            "(SELECT COUNT(*) FROM episodes WHERE indexed != 1) + "
                            "(SELECT COUNT(*) FROM units WHERE indexed != 1)")
    backend = memory._parts.index.backend()
    ids = memories + episodes + units
    found = {r.id for r in backend.retrieve(ids)} if ids else set()
    problems = []
    if waiting:
        problems.append(f"{waiting} records still wait for their point")
    if len(found) != len(ids):
        problems.append(f"{len(ids) - len(found)} indexed records have no point")
    if backend.count() != len(ids):
        problems.append(f"{backend.count()} points for {len(ids)} indexed records")
    return problems


def applied_twice(memory: Any) -> list[str]:
    """Signs that a job's result was applied twice: the same attribute value learned twice
    from the same message, or a job's memory stored twice."""
    with memory._parts.storage.db.read() as tx:
        attrs = tx.all(
            "SELECT entity_id, key, value, source_message, COUNT(*) FROM entity_attributes "
            "WHERE source_message IS NOT NULL GROUP BY 1, 2, 3, 4 HAVING COUNT(*) > 1"
        )
        episodes = tx.all("SELECT thread_id, last_seq, COUNT(*) FROM episodes GROUP BY 1, 2 HAVING COUNT(*) > 1")
    return [f"attribute applied twice: {a}" for a in attrs] + [f"episode written twice: {e}" for e in episodes]
