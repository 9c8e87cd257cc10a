"""The window benchmark's look inside: every part it times still exists (a rename in the
package would otherwise break the benchmark only at its end, after minutes of setup)."""

from __future__ import annotations

import importlib
import runpy
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_window.py"


def test_every_timed_part_names_a_method_that_exists():
    parts = runpy.run_path(str(BENCH), run_name="bench_window")["PARTS"]
    for label, module, cls_name, method in parts:
        cls = getattr(importlib.import_module(module), cls_name)
        assert callable(getattr(cls, method, None)), f"{label}: {module}.{cls_name}.{method} is gone"
