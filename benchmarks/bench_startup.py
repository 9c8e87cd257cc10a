"""Start-up time: the package import and the CLI's ``--help`` / ``--version``, as ratios.

    python benchmarks/bench_startup.py            # best of 9 runs of each, interleaved
    python benchmarks/bench_startup.py -n 21 --json

Each case is a new ``python -c`` process (what a user pays once per process), timed from
spawn to exit; the best of ``-n`` runs is kept, the runs of all cases interleaved so that a
burst of load on a shared machine hits them alike. Two ratios are printed, with their targets
(issue 16):

- ``from langchain_tiered_memory import TieredMemory`` over ``from
  langchain_core.language_models import BaseChatModel`` (what every LangChain user has already
  paid): at most 1.5×;
- ``tiered-memory --help`` and ``tiered-memory --version`` over a bare ``python -c "import
  argparse"``: at most 3×.

The package is imported from this checkout (the repository root is the working directory
and on ``PYTHONPATH``), whichever copy the interpreter has installed. ``--check`` exits 1
when a ratio is over its target.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLI = "import sys; from langchain_tiered_memory.cli import main; sys.exit(main())"
CASES: dict[str, tuple[str, ...]] = {
    "langchain_core BaseChatModel": ("-c", "from langchain_core.language_models import BaseChatModel"),
    "TieredMemory": ("-c", "from langchain_tiered_memory import TieredMemory"),
    "import argparse": ("-c", "import argparse"),
    "tiered-memory --help": ("-c", CLI, "--help"),
    "tiered-memory --version": ("-c", CLI, "--version"),
}
#: (case, baseline, target ratio)
RATIOS = [
    ("TieredMemory", "langchain_core BaseChatModel", 1.5),
    ("tiered-memory --help", "import argparse", 3.0),
    ("tiered-memory --version", "import argparse", 3.0),
]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    env.pop("PYTHONPROFILEIMPORTTIME", None)
    return env


def time_once(args: tuple[str, ...], env: dict[str, str]) -> float:
    """Seconds from spawning ``python *args`` to its exit (it must succeed)."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed ({proc.returncode}): {proc.stderr.decode()[-500:]}")
    return elapsed


def measure(runs: int) -> dict[str, float]:
    """Best-of-``runs`` seconds of each case, the runs interleaved."""
    env = _env()
    for args in CASES.values():  # warm the OS file cache and the .pyc files
        time_once(args, env)
    best = {name: float("inf") for name in CASES}
    for _ in range(runs):
        for name, args in CASES.items():
            best[name] = min(best[name], time_once(args, env))
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--runs", type=int, default=9, help="runs of each case; the best is kept")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--check", action="store_true", help="exit 1 when a ratio is over its target")
    args = parser.parse_args(argv)
    best = measure(args.runs)
    ratios = [
        {"case": case, "baseline": base, "ratio": best[case] / best[base], "target": target}
        for case, base, target in RATIOS
    ]
    over = [r for r in ratios if r["ratio"] > r["target"]]
    if args.json:
        print(json.dumps({"seconds": best, "ratios": ratios, "runs": args.runs}, indent=2))
    else:
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        print(f"python {platform.python_version()} · {os.cpu_count()} cores · load {load:.2f} · best of {args.runs}")
        for name, seconds in best.items():
            print(f"  {name:<30} {seconds * 1000:8.1f} ms")
        for r in ratios:
            verdict = "ok" if r["ratio"] <= r["target"] else "OVER"
            print(f"{r['case']} / {r['baseline']}: {r['ratio']:.2f}x (target <= {r['target']:g}x) {verdict}")
    return 1 if args.check and over else 0


if __name__ == "__main__":
    sys.exit(main())
