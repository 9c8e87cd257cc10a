"""The README's configuration table, generated from ``MemoryConfig``'s field descriptions.

    .venv/bin/python scripts/readme_tables.py          # rewrite the table in README.md
    .venv/bin/python scripts/readme_tables.py --check  # exit 1 if it differs (tests/test_readme.py)

The table sits between ``<!-- config-table -->`` and ``<!-- /config-table -->``; edit a
field's ``description=`` in ``langchain_tiered_memory/config.py``, never the table.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
START, END = "<!-- config-table -->", "<!-- /config-table -->"


def _value(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return repr(value)
    return f"{value:_}"


def _default(field: Any) -> str:
    if field.default_factory is not None:
        value = field.default_factory()
        return f"`{type(value).__name__}()`"
    return f"`{_value(field.default)}`"


def _allowed(field: Any) -> str:
    """The values a field accepts, from its type and its bounds (``ge``, ``gt``, ``le``, ``lt``)."""
    choices = get_args(field.annotation) if get_origin(field.annotation) is Literal else ()
    if choices:
        return ", ".join(f"`{c!r}`" for c in choices)
    low = high = ""
    for bound in field.metadata:
        for attr, sign in (("ge", "≤"), ("gt", "<")):
            if getattr(bound, attr, None) is not None:
                low = f"{_value(getattr(bound, attr))} {sign} "
        for attr, sign in (("le", "≤"), ("lt", "<")):
            if getattr(bound, attr, None) is not None:
                high = f" {sign} {_value(getattr(bound, attr))}"
    if not (low or high) and isinstance(field.annotation, type):
        return f"a `{field.annotation.__name__}`"
    optional = type(None) in get_args(field.annotation)
    text = f"{low}x{high}" if low or high else ""
    return f"{text} or `None`" if optional and text else ("`None` or a value" if optional else text)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def config_table() -> str:
    """The markdown table of ``MemoryConfig``: each field, its default, what it accepts and its description."""
    sys.path.insert(0, str(ROOT))
    try:
        from langchain_tiered_memory.config import MemoryConfig
    finally:
        sys.path.pop(0)
    lines = ["| field | default | accepts | what it sets |", "|---|---|---|---|"]
    for name, field in MemoryConfig.model_fields.items():
        if not field.description:
            raise ValueError(f"MemoryConfig.{name} has no description: add description= to its Field")
        lines.append(f"| `{name}` | {_default(field)} | {_allowed(field)} | {_cell(field.description)} |")
    return "\n".join(lines)


def current(text: str) -> str:
    """The table as the README holds it now."""
    if START not in text or END not in text:
        raise ValueError(f"README.md has no {START} ... {END} markers")
    return text.split(START, 1)[1].split(END, 1)[0].strip("\n")


def main(argv: list[str]) -> int:
    text = README.read_text(encoding="utf-8")
    table = config_table()
    if current(text) == table:
        return 0
    if "--check" in argv:
        print("README.md's configuration table differs from MemoryConfig; run scripts/readme_tables.py")
        return 1
    head, rest = text.split(START, 1)
    README.write_text(f"{head}{START}\n{table}\n{END}{rest.split(END, 1)[1]}", encoding="utf-8")
    print("README.md: configuration table rewritten")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
