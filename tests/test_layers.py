"""The package's layers as a contract: every import read from the source, checked against the
tiers that ``docs/architecture.md`` writes down.

Every ``import`` and ``from … import`` of every module counts -- at module level, inside a
function, under ``TYPE_CHECKING`` -- because each is a dependency a reader has to follow. A
``from pkg import name`` is an edge to ``pkg.name`` when that is a module, else to ``pkg``.

The contract (see the architecture document for the why):

- no import cycles among the package's modules;
- no module imports a module of a higher tier (a module imports its own tier or lower);
- no module over 500 lines; the root package holds at most 15 modules;
- no ``importlib.import_module`` anywhere in the package: a dependency is an import statement.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE_DIR = ROOT / "langchain_tiered_memory"
PACKAGE = PACKAGE_DIR.name
ARCHITECTURE = ROOT / "docs" / "architecture.md"
MAX_LINES = 500
MAX_ROOT_MODULES = 15


@dataclass(frozen=True)
class Import:
    """One import statement's edge: the importing module, the imported one, and where."""

    source: str
    target: str
    line: int


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def modules() -> dict[str, Path]:
    """Every module of the package by its dotted name."""
    return {module_name(path): path for path in sorted(PACKAGE_DIR.rglob("*.py"))}


def is_package(name: str) -> bool:
    return modules()[name].name == "__init__.py"


def resolve(source: str, level: int, module: str | None) -> str:
    """The absolute name a (possibly relative) ``from`` import names."""
    if level == 0:
        return module or ""
    base = source.split(".")
    # A package's own ``__init__`` is level 1 of itself; a plain module's level 1 is its parent.
    drop = level - 1 if is_package(source) else level
    base = base[: len(base) - drop]
    return ".".join(base + ([module] if module else []))


def owning_module(name: str) -> str | None:
    """The package module ``name`` is, or the nearest package module it sits in."""
    while name:
        if name in modules():
            return name
        name = name.rpartition(".")[0]
    return None


@cache
def imports() -> tuple[Import, ...]:
    """Every edge between two modules of the package."""
    edges: list[Import] = []
    for source, path in modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        found: list[tuple[str, int]] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found.extend((alias.name, node.lineno) for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = resolve(source, node.level, node.module)
                for alias in node.names:
                    candidate = f"{base}.{alias.name}"
                    found.append((candidate if candidate in modules() else base, node.lineno))
        for name, line in found:
            target = owning_module(name) if name.split(".")[0] == PACKAGE else None
            if target is not None and target != source:
                edges.append(Import(source, target, line))
    return tuple(edges)


@cache
def tiers() -> list[tuple[str, list[str]]]:
    """The tiers, top first, from the machine-readable block in the architecture document."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    block = re.search(r"```json layers\n(.*?)```", text, re.DOTALL)
    assert block, f"{ARCHITECTURE} has no ```json layers block"
    data = json.loads(block.group(1))
    return [(tier["name"], tier["modules"]) for tier in data["tiers"]]


def tier_of(module: str) -> int:
    """The index of the tier a module belongs to (0 is the top), by its longest listed prefix."""
    relative = module.removeprefix(PACKAGE).lstrip(".")
    best: tuple[int, int] | None = None  # (length of the matched pattern, tier)
    for index, (_, patterns) in enumerate(tiers()):
        for pattern in patterns:
            if relative == pattern or (pattern and relative.startswith(pattern + ".")):
                if best is None or len(pattern) > best[0]:
                    best = (len(pattern), index)
    assert best is not None, f"{module} is in no tier of {ARCHITECTURE}"
    return best[1]


def cycles() -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm)."""
    graph: dict[str, set[str]] = {name: set() for name in modules()}
    for edge in imports():
        graph[edge.source].add(edge.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(graph[node]):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_every_module_is_in_a_tier() -> None:
    missing = []
    for name in modules():
        try:
            tier_of(name)
        except AssertionError as error:
            missing.append(str(error))
    assert not missing, "\n".join(missing)


def test_no_import_cycles() -> None:
    found = cycles()
    report = []
    for component in found:
        inside = set(component)
        arrows = sorted(
            f"    {e.source} -> {e.target} (line {e.line})"
            for e in imports()
            if e.source in inside and e.target in inside
        )
        report.append(" <-> ".join(component) + "\n" + "\n".join(dict.fromkeys(arrows)))
    assert not found, f"{len(found)} import cycle(s):\n" + "\n".join(report)


def test_no_import_against_the_tiers() -> None:
    names = [name for name, _ in tiers()]
    upward = sorted(
        {
            f"{e.source} ({names[tier_of(e.source)]}) -> {e.target} ({names[tier_of(e.target)]})"
            f" line {e.line}"
            for e in imports()
            if tier_of(e.target) < tier_of(e.source)
        }
    )
    assert not upward, f"{len(upward)} import(s) against the tiers:\n" + "\n".join(upward)


def test_no_module_over_500_lines() -> None:
    long = sorted(
        f"{name}: {lines} lines"
        for name, path in modules().items()
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    )
    assert not long, "\n".join(long)


def test_the_root_package_is_small() -> None:
    root = sorted(path.name for path in PACKAGE_DIR.glob("*.py"))
    assert len(root) <= MAX_ROOT_MODULES, f"{len(root)} root modules: {root}"


def test_no_importlib_import_module() -> None:
    found = []
    for name, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr == "import_module":
                found.append(f"{name} line {node.lineno}")
            elif isinstance(node, ast.ImportFrom) and node.module == "importlib":
                if any(alias.name == "import_module" for alias in node.names):
                    found.append(f"{name} line {node.lineno}")
            elif isinstance(node, ast.Name) and node.id == "__import__":
                found.append(f"{name} line {node.lineno} (__import__)")
    assert not found, "dynamic imports hide dependencies:\n" + "\n".join(found)


@pytest.mark.parametrize(
    ("source", "level", "module", "expected"),
    [
        (f"{PACKAGE}.recall.layer", 1, "quotes", f"{PACKAGE}.recall.quotes"),
        (f"{PACKAGE}.recall.layer", 2, "entries", f"{PACKAGE}.entries"),
        (f"{PACKAGE}.recall", 1, "layer", f"{PACKAGE}.recall.layer"),
        (PACKAGE, 1, "memory", f"{PACKAGE}.memory"),
    ],
)
def test_relative_imports_resolve(source: str, level: int, module: str, expected: str) -> None:
    """The reader itself: relative imports land on the module Python would load."""
    assert resolve(source, level, module) == expected


def reachable(start: str) -> set[str]:
    """Every module ``start`` imports, directly or through others."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        current = todo.pop()
        for edge in imports():
            if edge.source == current and edge.target not in seen:
                seen.add(edge.target)
                todo.append(edge.target)
    return seen


def test_the_llm_extractor_is_handed_its_offline_fallback() -> None:
    """The model path and the offline rules are two boxes: ``extraction.llm`` is handed the
    extractive fallback (by ``extraction.factory``) and reaches nothing of ``extraction.offline``,
    not even through another module; the offline rules reach nothing of the LLM extractor."""
    llm, offline = f"{PACKAGE}.extraction.llm", f"{PACKAGE}.extraction.offline"
    assert llm in modules() and offline in modules()
    to_offline = sorted(m for m in reachable(llm) if m == offline or m.startswith(offline + "."))
    assert not to_offline, f"{llm} reaches {to_offline}"
    from_offline = {m for name in modules() if name.startswith(offline) for m in reachable(name)}
    assert llm not in from_offline
    factory = {e.target for e in imports() if e.source == f"{PACKAGE}.extraction.factory"}
    assert {llm, offline} <= factory, "the factory hands the offline fallback to the LLM extractor"
