"""Packaging (issue 30, item 6): pyproject's required dependencies are exactly what the package
imports, and what only some deployments need is an extra whose modules say how to install it.

Every import of the package is read (module level, in functions, under TYPE_CHECKING) and
resolved to the installed distribution that provides it, by the files each distribution
installs (``langgraph.checkpoint.sqlite`` is langgraph-checkpoint-sqlite's, not langgraph's).
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections import defaultdict
from importlib import metadata
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "langchain_tiered_memory"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _dist_name(requirement: str) -> str:
    """``psycopg[binary]>=3.2`` -> ``psycopg`` (normalised as PEP 503 does)."""
    name = re.match(r"[A-Za-z0-9._-]+", requirement)
    assert name, requirement
    return re.sub(r"[-_.]+", "-", name.group(0)).lower()


REQUIRED = {_dist_name(r) for r in PYPROJECT["project"]["dependencies"]}
EXTRAS = {
    extra: {_dist_name(r) for r in reqs}
    for extra, reqs in PYPROJECT["project"]["optional-dependencies"].items()
    if extra != "test"
}
IN_EXTRA = {dist: extra for extra, dists in EXTRAS.items() for dist in dists}


def _owners() -> dict[str, set[str]]:
    """Dotted module or package name -> the distributions that install it."""
    owners: dict[str, set[str]] = defaultdict(set)
    for dist in metadata.distributions():
        name = _dist_name(dist.metadata["Name"])
        for file in dist.files or ():
            parts = file.parts
            if not parts or parts[0].endswith((".dist-info", ".egg-info", ".data")) or parts[0] == "..":
                continue
            if file.suffix not in (".py", ".pyi", ".so", ".pyd"):
                continue
            module = [*parts[:-1], parts[-1].split(".")[0]]
            if module[-1] == "__init__":
                module.pop()
            for i in range(1, len(module) + 1):
                owners[".".join(module[:i])].add(name)
    return owners


def _dist_of(module: str, owners: dict[str, set[str]]) -> set[str]:
    """The distributions of the longest prefix of ``module`` that any of them installs alone
    (namespace packages such as ``langgraph`` are shared: a deeper name decides)."""
    parts = module.split(".")
    found: set[str] = set()
    for i in range(1, len(parts) + 1):
        dists = owners.get(".".join(parts[:i]))
        if not dists:
            break
        found = dists
    return found


class _Imports(ast.NodeVisitor):
    """Absolute imports of a module, each with whether it sits under ``TYPE_CHECKING`` and
    whether a ``try`` that catches ImportError guards it."""

    def __init__(self) -> None:
        self.found: list[tuple[str, bool, bool]] = []
        self._type_checking = 0
        self._guarded = 0

    def visit_If(self, node: ast.If) -> None:
        test = ast.unparse(node.test)
        inside = test in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
        self._type_checking += inside
        for child in node.body:
            self.visit(child)
        self._type_checking -= inside
        for child in node.orelse:
            self.visit(child)

    def visit_Try(self, node: ast.Try) -> None:
        names = {ast.unparse(h.type) for h in node.handlers if h.type is not None}
        catches = any(n in s for s in names for n in ("ImportError", "ModuleNotFoundError"))
        self._guarded += catches
        for child in node.body:
            self.visit(child)
        self._guarded -= catches
        for child in [*node.handlers, *node.orelse, *node.finalbody]:
            self.visit(child)

    def _add(self, module: str) -> None:
        self.found.append((module, bool(self._type_checking), bool(self._guarded)))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level == 0 and node.module:
            self._add(node.module)


def _third_party_imports() -> list[tuple[Path, str, bool, bool]]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        visitor = _Imports()
        visitor.visit(ast.parse(path.read_text(encoding="utf-8"), str(path)))
        for module, type_checking, guarded in visitor.found:
            top = module.split(".")[0]
            if top in sys.stdlib_module_names or top in ("langchain_tiered_memory", "__future__"):
                continue
            out.append((path.relative_to(ROOT), module, type_checking, guarded))
    return out


def test_required_dependencies_are_what_the_package_imports():
    owners = _owners()
    used: set[str] = set()
    problems = []
    guards: dict[tuple[Path, str], bool] = {}
    imports = _third_party_imports()
    for path, module, type_checking, guarded in imports:
        dists = _dist_of(module, owners)
        for dist in dists & set(IN_EXTRA):
            guards[(path, dist)] = guards.get((path, dist), False) or guarded
    for path, module, type_checking, guarded in imports:
        dists = _dist_of(module, owners)
        if not dists:
            # Not installed here: only an extra's module may be missing, and only behind a guard.
            candidates = {_dist_name(module.split(".")[0])} & set(IN_EXTRA)
            if not (candidates and (guarded or type_checking)):
                problems.append(f"{path}: imports {module}, which no installed distribution provides")
            continue
        if dists & REQUIRED:
            used |= dists & REQUIRED
            continue
        extra = dists & set(IN_EXTRA)
        if extra:
            # An extra's module is imported where the module also guards it (a ConfigError or
            # EmbeddingError naming the extra), or only for the type checker.
            if not (type_checking or any(guards.get((path, d)) for d in extra)):
                problems.append(
                    f"{path}: imports {module} (extra [{IN_EXTRA[sorted(extra)[0]]}]) with no "
                    "ImportError guard in that module"
                )
            continue
        problems.append(
            f"{path}: imports {module} from {sorted(dists)}, which is neither a required "
            "dependency nor in an extra: add it to pyproject's dependencies"
        )
    unused = REQUIRED - used
    if unused:
        problems.append(f"required dependencies the package never imports: {sorted(unused)} "
                        "(drop them, or move them to an extra with a reason)")
    assert not problems, "\n".join(problems)


def test_no_dependency_is_listed_twice():
    for group, reqs in [("dependencies", PYPROJECT["project"]["dependencies"]),
                        *PYPROJECT["project"]["optional-dependencies"].items()]:
        names = [_dist_name(r) for r in reqs]
        assert len(names) == len(set(names)), f"{group} lists {sorted(n for n in names if names.count(n) > 1)} twice"


def test_extras_are_not_required_too():
    for extra, dists in EXTRAS.items():
        assert not dists & REQUIRED, f"[{extra}] repeats required dependencies {sorted(dists & REQUIRED)}"
    assert {"psycopg", "psycopg-pool", "langgraph-checkpoint-postgres"} <= EXTRAS["postgres"]
    assert "langchain-qdrant" not in REQUIRED


def test_the_test_extra_pulls_in_the_extras_the_tests_use():
    test = PYPROJECT["project"]["optional-dependencies"]["test"]
    own = [r for r in test if _dist_name(r) == "langchain-tiered-memory"]
    assert own, "the test extra must pull in the package's own extras"
    chosen = set(re.search(r"\[(.*)\]", own[0]).group(1).replace(" ", "").split(","))
    assert {"postgres", "agents"} <= chosen


# Each missing driver, simulated in a new process (``sys.modules[name] = None`` makes its
# import fail), must surface as the package's ConfigError naming the extra.
MISSING = """\
import sys
sys.modules[{module!r}] = None
from langchain_tiered_memory import ConfigError
try:
{body}
except ConfigError as exc:
    print("CONFIG-ERROR:", exc)
"""


@pytest.mark.parametrize("module", ["psycopg", "psycopg_pool", "langgraph.checkpoint.postgres"])
def test_a_missing_postgres_driver_names_the_extra_in_the_checkpointer(module):
    body = "    from langchain_tiered_memory import PostgresTieredCheckpointSaver"
    out = _run(MISSING.format(module=module, body=body))
    assert "CONFIG-ERROR:" in out and "pip install 'langchain-tiered-memory[postgres]'" in out, out


@pytest.mark.parametrize("module", ["psycopg", "psycopg_pool"])
def test_a_missing_postgres_driver_names_the_extra_when_a_memory_opens(module):
    # What a user meets: TieredMemory(database_url=...) without the extra (no server is needed
    # to get there: the drivers are looked for before any connection).
    body = ("    from langchain_tiered_memory import TieredMemory\n"
            "    TieredMemory(database_url='postgresql://memory@127.0.0.1:1/memory', qdrant_url='http://127.0.0.1:1')")
    out = _run(MISSING.format(module=module, body=body))
    assert "CONFIG-ERROR:" in out and "pip install 'langchain-tiered-memory[postgres]'" in out, out


def _run(code: str) -> str:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def _quickstart() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert block, "the README's Quickstart has a python block"
    return block.group(1)


def _core_closure() -> set[str]:
    """The distributions ``pip install langchain-tiered-memory`` installs (no extra): the
    required dependencies and theirs, each requirement's marker read as pip reads it."""
    from packaging.requirements import Requirement

    seen: set[str] = set()
    todo = list(PYPROJECT["project"]["dependencies"])
    while todo:
        req = Requirement(todo.pop())
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        name = _dist_name(req.name)
        if name in seen:
            continue
        seen.add(name)
        try:
            todo.extend(metadata.requires(name) or ())
        except metadata.PackageNotFoundError:
            pass
    return seen


def test_the_readme_quickstart_needs_only_the_first_install():
    # The quickstart follows `pip install -e .` in the README: every distribution it imports
    # must come with that command, not with an extra (it failed with "No module named
    # 'langchain'", which only the `agents` extra brought).
    visitor = _Imports()
    visitor.visit(ast.parse(_quickstart()))
    owners = _owners()
    imported = {
        dist
        for module, _, _ in visitor.found
        if module.split(".")[0] not in sys.stdlib_module_names
        for dist in _dist_of(module, owners)
    }
    assert imported, "the quickstart imports the package and LangChain"
    missing = imported - _core_closure() - {"langchain-tiered-memory"}
    assert not missing, f"the README quickstart imports {sorted(missing)}, which `pip install -e .` does not install"


@pytest.mark.soak
def test_the_readme_quickstart_runs_in_a_venv_made_by_the_first_command(tmp_path):
    # The same, as a new user meets it: a venv, the README's first command, the quickstart.
    # Minutes of downloads: outside CI (-m soak); the closure test above is its fast twin.
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    pip = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "-e", str(ROOT)],
                         capture_output=True, text=True, timeout=1800)
    assert pip.returncode == 0, pip.stderr[-3000:]
    script = tmp_path / "quickstart.py"
    script.write_text(_quickstart(), encoding="utf-8")
    run = subprocess.run([str(venv / "bin" / "python"), str(script)], capture_output=True, text=True,
                         cwd=tmp_path, timeout=600, env={"PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"})
    assert run.returncode == 0, run.stderr[-3000:]
    assert "<memory>" in run.stdout and "Lisbon" in run.stdout
