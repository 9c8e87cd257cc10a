"""Every ```python block of README.md and docs/*.md runs as written, offline, in an empty
directory; the README's configuration table is MemoryConfig's fields; the integration table
quotes blocks that run.

A block that cannot run as written (one side of a comparison, a deployment that needs a
PostgreSQL or Qdrant server) says so in the document itself, on the line right above its
fence::

    <!-- not-run: why it cannot run here -->
    ```python

Such a block is an expected failure, strictly: once it starts to run, the marker must go, so a
marker never hides a block that works. Shell blocks (```bash) are not run here; the README's
two commands are run by .ci/run (the test command) and tests/test_cli.py (the demo).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
BLOCK = re.compile(r"^(?:<!-- not-run: (?P<why>.*?) -->\n)?```python\n(?P<code>.*?)^```", re.S | re.M)
#: The grouped sub-APIs of the facade (issue 30, item 3), written in the docs before they land.
SUB_API = re.compile(r"\bmemory\.(memories|episodes|entities|threads|admin)\.")


def blocks(path: Path) -> list[tuple[str, str | None]]:
    """``(code, why-not-run)`` of each python block of ``path``, in order."""
    return [(m["code"], m["why"]) for m in BLOCK.finditer(path.read_text(encoding="utf-8"))]


def _params() -> list:
    out = []
    for path in [README, *DOCS]:
        for i, (code, why) in enumerate(blocks(path)):
            marks = [pytest.mark.xfail(reason=f"cannot run as written: {why}", strict=True)] if why else []
            out.append(pytest.param(code, id=f"{path.relative_to(ROOT)}:block{i}", marks=marks))
    return out


def run_block(block: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    env["HF_HUB_OFFLINE"] = "1"
    # This checkout's package, whichever copy the interpreter has installed.
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return subprocess.run(
        [sys.executable, "-c", block], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def _facade_landed() -> bool:
    from langchain_tiered_memory import TieredMemory

    return hasattr(TieredMemory, "memories")


@pytest.mark.parametrize("block", _params())
def test_block_runs(block, tmp_path):
    result = run_block(block, tmp_path)
    if result.returncode and SUB_API.search(block) and not _facade_landed() and "AttributeError" in result.stderr:
        # Only until the grouped facade is merged: then every block runs for real.
        pytest.xfail("uses the grouped facade (memory.memories, ...), not on this branch yet")
    assert result.returncode == 0, result.stderr[-3000:]


def _section(title: str) -> str:
    text = README.read_text(encoding="utf-8")
    assert f"\n## {title}\n" in text, f"README has no '## {title}' section"
    return text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_quickstart(tmp_path):
    # The quickstart is the recommended API (create_agent + TieredMemoryMiddleware), in 15 lines.
    block = blocks_of(_section("Quickstart"))[0]
    assert "create_agent" in block and "TieredMemoryMiddleware" in block
    assert len(block.splitlines()) <= 15
    result = run_block(block, tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    # What it prints is the memory block of the second thread: the first thread's facts,
    # extracted into the user's profile, and the turn that said them (the memory distilled
    # from that turn is not quoted twice beside it).
    assert "<memory>" in result.stdout
    assert "prefers: green tea" in result.stdout and "location: Lisbon" in result.stdout
    assert "I live in Lisbon and I prefer green tea." in result.stdout
    assert (tmp_path / "memory" / "memory.db").exists()


def blocks_of(text: str) -> list[str]:
    return [m["code"] for m in BLOCK.finditer(text)]


def _squash(code: str) -> str:
    return re.sub(r"\s+", "", code)


def test_the_integration_table_quotes_blocks_that_run():
    # Each row's snippet is a line of a runnable block of docs/integrations.md.
    rows = [line for line in _section("Pick your integration").splitlines() if line.startswith("| ")][1:]
    assert len(rows) >= 7
    runnable = [_squash(code) for code, why in blocks(ROOT / "docs" / "integrations.md") if not why]
    for row in rows:
        snippets = re.findall(r"`([^`]+)`", row.split("|")[2])
        assert snippets, row
        for snippet in snippets:
            assert any(_squash(snippet) in code for code in runnable), f"not in a runnable block: {snippet}"


def test_the_configuration_table_is_memory_configs_fields():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import readme_tables
    finally:
        sys.path.pop(0)
    text = README.read_text(encoding="utf-8")
    assert readme_tables.current(text) == readme_tables.config_table(), (
        "README's configuration table differs from MemoryConfig: run "
        "`.venv/bin/python scripts/readme_tables.py` to regenerate it"
    )


def _anchors(path: Path) -> set[str]:
    """GitHub's anchors for the headings of ``path``."""
    text = re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.S | re.M)
    heads = re.findall(r"^#+ (.*)$", text, re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in heads}


def test_the_readme_stays_short_and_links_what_exists():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300
    for path in [README, *DOCS]:
        for link, anchor in re.findall(r"\]\(([^)#\s]*)(?:#([^)]*))?\)", path.read_text(encoding="utf-8")):
            if "://" in link:
                continue
            if anchor:
                target = (path.parent / link) if link else path
                if target.exists():
                    assert anchor in _anchors(target), f"{path.name} links to a missing #{anchor} of {target.name}"
            if not link:
                continue
            if Path(link).name == "architecture.md" and not (ROOT / "docs" / "architecture.md").exists():
                continue  # written on the layers' branch (issue 30, items 1-2), merged beside this one
            assert (path.parent / link).exists(), f"{path.name} links to a missing {link}"
