"""Two processes × four threads on one directory (see concurrency.py)."""

from __future__ import annotations

import json
import re
import subprocess

from .common import ROOT, child_env, python


def test_two_processes_of_four_threads_lose_nothing_and_share_the_directory(tmp_path):
    proc = subprocess.run(
        [python(), "-m", "tests.reliability.concurrency", str(tmp_path / "memory"), "--ops", "40", "--seed", "14"],
        cwd=ROOT, env=child_env(), capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    figures = json.loads(proc.stdout.strip().splitlines()[-1])
    assert figures["losses"] == 0, figures["notes"]
    assert figures["inputs"] == 2 * 4 * 40 and figures["turns"] > 100
    # The process without the shard searched too, and was told why it could not.
    (refused,) = [int(m.group(1)) for n in figures["notes"] if (m := re.match(r"(\d+) searches refused", n))]
    assert refused > 0
