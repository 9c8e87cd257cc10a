"""Fault models (see faults.py): every failing model leaves the turn kept, the failure
visible with its reason, and the process free to exit."""

from __future__ import annotations

import json
import subprocess
import time

from .common import ROOT, child_env, python


def test_every_fault_model_keeps_the_turn_shows_its_reason_and_lets_the_process_exit(tmp_path):
    proc = subprocess.Popen(
        [python(), "-m", "tests.reliability.faults", str(tmp_path)],
        cwd=ROOT, env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        line = proc.stdout.readline()  # printed when the probe's code is done
        done = time.monotonic()
        code = proc.wait(timeout=60)
        exited_after = time.monotonic() - done
    finally:
        proc.kill()
    assert code == 0 and line, proc.stderr.read()[-3000:]
    figures = json.loads(line)
    assert figures["losses"] == 0, figures["notes"]
    assert figures["faults"] == 11 and figures["kills"] == 3
    # Calls hung for 20 s are still running: they are daemon threads, so the process does
    # not wait for them (a ThreadPoolExecutor kept it alive for minutes).
    assert exited_after < 5, exited_after
