"""Reliability probes of issue 14, kept as a suite: crash soak, fault models, concurrency,
isolation and a hostile-input corpus — each bounded in time and seeded.

``pytest tests/reliability`` runs the CI sizes (about a minute in all);
``python -m tests.reliability --long`` runs the long sizes and prints the figures (turns,
kills, faults, inputs tried, losses, escapes).
"""

from __future__ import annotations

import sys
from pathlib import Path

# The scripted chat models live beside the other tests; the probes run both under pytest
# (as package ``reliability``) and as ``python -m tests.reliability`` (``tests.reliability``).
_TESTS = str(Path(__file__).resolve().parent.parent)
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)
