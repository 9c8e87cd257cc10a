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


def test_a_job_whose_every_attempt_died_is_failed_at_the_next_claim(tmp_path):
    """The poison job, at the journal: attempts are counted when claimed, so three claims
    whose workers never came back use the attempts up, and the fourth claim fails the job
    with its reason instead of running it again (6 restarts crash-looped before)."""
    import time as clock

    from langchain_tiered_memory.storage import Storage

    storage = Storage.open(tmp_path)
    try:
        storage.jobs.enqueue("extract", "u", 1, {"through_seq": 0}, "2026-01-01")
        for n in range(3):
            job = storage.jobs.claim(f"host:{n}:dead", 0.01, max_attempts=3)
            assert job is not None and job.attempts == n + 1
            clock.sleep(0.02)  # its lease runs out: the worker died
        assert storage.jobs.claim("host:9:alive", 60, max_attempts=3) is None
        (failed,) = storage.jobs.rows("failed")
        assert failed.attempts == 3 and "stopped during each of its 3 attempts" in failed.last_error
    finally:
        storage.close()
