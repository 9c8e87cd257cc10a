"""``python -m tests.reliability [--long] [--seed N]``: every probe, and their figures.

The CI sizes (what ``pytest tests/reliability`` runs) by default; ``--long``: a crash soak
of 1,000 acknowledged turns, three rounds of every fault model, 300 operations per thread
in the concurrency probe and 150 hypothesis examples of isolation (the model-outage probe
is the same at both sizes: 60 s, then 20 minutes, on a simulated clock; so is the probe of
forgets with a reader open: each kind, the reader in this process and in another). Prints one line per
probe and the totals — turns, kills, faults, inputs tried, losses, escapes — and exits 1 if
anything was lost or escaped.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    __package__ = "tests.reliability"

from .common import ROOT, Figures, child_env, python


def _child(module: str, *args: str) -> Figures:
    # Probes that fork or start processes run in a process of their own.
    proc = subprocess.run([python(), "-m", f"tests.reliability.{module}", *args], cwd=ROOT, env=child_env(),
                          capture_output=True, text=True)
    if proc.returncode != 0:
        return Figures(module, losses=1, notes=[proc.stderr.strip()[-2000:]])
    return Figures(**json.loads(proc.stdout.strip().splitlines()[-1]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.reliability", description=__doc__.splitlines()[0])
    parser.add_argument("--long", action="store_true", help="the long sizes")
    parser.add_argument("--seed", type=int, default=14)
    args = parser.parse_args(argv)
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="tiered-memory-reliability-") as tmp:
        root = Path(tmp)
        seed = str(args.seed)
        soak = ["--kills", "30", "--turns", "1000"] if args.long else ["--kills", "30"]
        results = [
            _child("soak", str(root / "soak"), *soak, "--seed", seed),
            _child("faults", str(root / "faults"), "--rounds", "3" if args.long else "1"),
            _child("concurrency", str(root / "concurrency"), "--ops", "300" if args.long else "40", "--seed", seed),
            # Every kind of forget with a reader open, in this process and another (scrub.py).
            _child("scrub", str(root / "scrub")),
        ]
        from .corpus import run as corpus
        from .isolation import run as isolation
        from .outage import run as outage

        results.append(isolation(root / "isolation", examples=150 if args.long else 12,
                                 seed=args.seed if args.long else None))
        results.append(corpus(root / "hostile"))
        # A 60-second model outage on a simulated clock, then one past the retry horizon.
        results += outage(root / "outage")
    print(f"reliability probes ({'long' if args.long else 'CI'} sizes, seed {args.seed})")
    for figures in results:
        print(figures.line())
    total = Figures("total", seconds=time.monotonic() - start)
    for figures in results:
        for key in ("turns", "kills", "faults", "inputs", "losses", "escapes"):
            setattr(total, key, getattr(total, key) + getattr(figures, key))
    print(total.line())
    return 1 if total.losses or total.escapes else 0


if __name__ == "__main__":
    sys.exit(main())
