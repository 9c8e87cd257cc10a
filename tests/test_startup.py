"""Issue 16, item 6: a fast start. What importing the package and starting the CLI load (the
cause of slow starts, checked exactly here; ``benchmarks/bench_startup.py`` times it), the
CLI's defaults against ``MemoryConfig``, and the lazy root API typed for a user's ``mypy
--strict``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from langchain_tiered_memory import MemoryConfig, __version__

ROOT = Path(__file__).parent.parent
#: Heavy libraries the root import must not load (each costs tens to hundreds of ms).
HEAVY = ("numpy", "sqlite_utils", "regex", "tiktoken", "onnxruntime", "tokenizers", "qdrant_edge",
         "qdrant_client", "langgraph", "dateparser", "pandas", "langchain_openai", "openai")


def _loaded(code: str, *args: str) -> tuple[set[str], subprocess.CompletedProcess[str]]:
    probe = (
        "import sys, json, atexit\n"
        "atexit.register(lambda: print('\\nMODULES=' + json.dumps(sorted(sys.modules)), file=sys.stderr))\n"
        + code
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=120)
    line = [x for x in proc.stderr.splitlines() if x.startswith("MODULES=")][-1]
    return {m.split(".")[0] for m in json.loads(line.removeprefix("MODULES="))}, proc


def test_importing_tiered_memory_loads_no_heavy_library():
    loaded, proc = _loaded("from langchain_tiered_memory import TieredMemory")
    assert proc.returncode == 0, proc.stderr
    assert loaded.isdisjoint(HEAVY), sorted(loaded & set(HEAVY))


@pytest.mark.parametrize("flag", ["--help", "--version"])
def test_the_cli_starts_without_langchain_or_pydantic(flag):
    code = "import sys\nfrom langchain_tiered_memory.cli import main\nsys.exit(main())"
    loaded, proc = _loaded(code, flag)
    assert proc.returncode == 0, proc.stderr
    assert loaded.isdisjoint({"langchain_core", "pydantic", "langgraph", *HEAVY}), sorted(loaded)
    if flag == "--version":
        assert proc.stdout.strip() == f"tiered-memory {__version__}"
    else:
        assert "chat" in proc.stdout and "--version" in proc.stdout


def test_the_cli_shows_memory_config_defaults():
    from langchain_tiered_memory.cli.common import BUDGET_DEFAULTS

    assert BUDGET_DEFAULTS == {k: MemoryConfig.model_fields[k].default for k in BUDGET_DEFAULTS}


def test_every_lazy_name_is_in_all_and_resolves():
    import langchain_tiered_memory as pkg

    assert sorted(pkg.__all__) == sorted([*pkg._LAZY, "__version__"])
    assert set(dir(pkg)) >= set(pkg.__all__)


USER_SCRIPT = """\
from langchain_tiered_memory import MemoryConfig, SpendBudget, TieredMemory, TieredMemoryMiddleware, create_memory_tools


def run() -> int:
    with TieredMemory("./m", MemoryConfig(budget=SpendBudget(tokens_per_hour=1000))) as memory:
        ids: list[str] = memory.memories.remember_many("alice", [{"content": "x"}])
        middleware = TieredMemoryMiddleware(memory)
        tools = create_memory_tools(memory)
        return len(ids) + len(tools) + (1 if middleware else 0)
"""


def test_a_user_script_type_checks_with_mypy_strict_and_wrong_types_are_caught(tmp_path):
    pytest.importorskip("mypy")
    good = tmp_path / "good.py"
    good.write_text(USER_SCRIPT)
    bad = tmp_path / "bad.py"
    bad.write_text(USER_SCRIPT.replace("ids: list[str] =", "ids: list[int] ="))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "cache")]
    ok = subprocess.run([*cmd, str(good)], capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert ok.returncode == 0, ok.stdout
    wrong = subprocess.run([*cmd, str(bad)], capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert wrong.returncode == 1 and "list[int]" in wrong.stdout  # the lazy names are typed, not Any
