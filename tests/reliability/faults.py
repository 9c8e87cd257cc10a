"""Fault models: scripted chat models that fail the way real ones do, behind a real memory.

Each fault is a :class:`ScriptedChatModel` answering every call the same bad way (or failing
twice, then answering): it raises, hangs past the timeout, answers invalid JSON, the wrong
schema, nothing, 10 MB, succeeds on the third try — or kills its process. For each the probe
checks that ``after_turn`` returns promptly, that the turn's messages are kept, and that the
failure is visible in ``stats()`` with a reason (or that the job is done, for the fault that
recovers). The whole probe runs in a process of its own, which must then exit promptly:
hung calls run in daemon threads and must not keep it alive.

The fault that kills the process runs first, in forked children (no thread exists yet): a
child appends a turn and dies in the job's model call; the next child opens the directory
and dies the same way; after ``job_max_attempts`` such deaths the job is marked failed at
the next claim, so the crash loop ends.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    __package__ = "tests.reliability"

from . import _TESTS  # noqa: F401 - puts the scripted models on the path
from .common import Figures

TIMEOUT = 0.3
ATTEMPTS = 3


def config(mode: str = "background"):
    from langchain_tiered_memory import MemoryConfig

    # Horizon 0: a model that hangs fails its attempts like any fault here (an outage that
    # is waited out is outage.py's probe).
    return MemoryConfig(job_mode=mode, job_max_attempts=ATTEMPTS, job_backoff_seconds=0.0,
                        llm_timeout_seconds=TIMEOUT, job_lease_seconds=30, job_retry_horizon_seconds=0)


def turn(i: int) -> list:
    from langchain_core.messages import AIMessage, HumanMessage

    return [HumanMessage(f"My name is Alice and I live in Paris ({i}).", id=f"h{i}"), AIMessage("Hello!", id=f"a{i}")]


def good():
    from scripted_model import entity, turn_tool_call

    return turn_tool_call(entities=[entity("Alice", "person", location="Paris")])


def faults() -> dict[str, tuple[dict, str]]:
    """Each fault: the scripted model's arguments, and what the failure's reason must say
    (``done``: the job must succeed)."""
    from scripted_model import Hang, invalid_json_text, invalid_json_tool_call, wrong_types_tool_call

    return {
        "raises": ({"default": RuntimeError("503 upstream overloaded")}, r"503 upstream overloaded"),
        "hangs": ({"default": Hang(20)}, r"did not answer within 0\.3 s"),
        "invalid-json": ({"default": invalid_json_tool_call()}, r"(?i)json|parse|invalid"),
        "invalid-json-text": ({"default": invalid_json_text(), "tool_calling": False}, r"(?i)json|parse|object"),
        "wrong-schema": ({"default": wrong_types_tool_call()}, r"(?i)entities|memories|valid"),
        "empty": ({"default": ""}, r"(?i)empty|no (json|answer|structured)|nothing"),
        "huge": ({"default": "{" + " " * 10_000_000 + "}", "tool_calling": False}, r"(?i)too (large|long)|limit|characters"),
        "third-try": ({"script": [RuntimeError("flaky 1"), RuntimeError("flaky 2")], "default": good()}, "done"),
    }


def run_fault(path: Path, name: str, kwargs: dict, expect: str, mode: str) -> list[str]:
    """One fault behind a memory in ``mode``; returns the problems found."""
    from scripted_model import ScriptedChatModel

    from langchain_tiered_memory import TieredMemory
    from langchain_tiered_memory.embeddings import HashingEmbeddings

    problems = []
    model = ScriptedChatModel(**kwargs)
    with TieredMemory(path, config(mode), model=model, embeddings=HashingEmbeddings()) as memory:
        start = time.monotonic()
        memory.after_turn("u", "t", turn(0))
        took = time.monotonic() - start
        # Background: the turn is stored and the job left to the worker. Inline: the job
        # runs its attempts in the call, each bounded by the timeout.
        bound = 1.0 if mode == "background" else ATTEMPTS * (TIMEOUT + 0.5) + 1.0
        if took > bound:
            problems.append(f"{name}/{mode}: after_turn took {took:.1f} s (bound {bound:.1f} s)")
        if [m.id for m in memory.threads.messages("u", "t")] != ["h0", "a0"]:
            problems.append(f"{name}/{mode}: the turn's messages were not kept")
        if not memory.flush(timeout=60):
            problems.append(f"{name}/{mode}: flush timed out")
        stats = memory.admin.stats()
        if expect == "done":
            if stats["jobs"]["done"] != 1 or memory.entities.get("u", "Alice") is None:
                problems.append(f"{name}/{mode}: the job did not recover: {stats['jobs']} {stats['failed_jobs']}")
            if model.calls != 3:
                problems.append(f"{name}/{mode}: {model.calls} calls, expected 3")
        else:
            failed = stats["failed_jobs"]
            if stats["jobs"]["failed"] != 1 or not failed:
                problems.append(f"{name}/{mode}: no failed job in stats: {stats['jobs']}")
            elif not re.search(expect, failed[0]["reason"] or ""):
                problems.append(f"{name}/{mode}: the reason does not say what failed: {failed[0]['reason']!r}")
            elif failed[0]["attempts"] != ATTEMPTS:
                problems.append(f"{name}/{mode}: {failed[0]['attempts']} attempts, expected {ATTEMPTS}")
        # Messages never go with a failed job; the next turn is stored as ever.
        memory.after_turn("u", "t", turn(1))
        if len(memory.threads.messages("u", "t")) != 4:
            problems.append(f"{name}/{mode}: a later turn was not stored")
    return problems


def killer(messages):
    """A model call that kills its process: an OOM kill or a segfault, as the model saw it."""
    os.kill(os.getpid(), signal.SIGKILL)


def run_poison(path: Path, figures: Figures) -> list[str]:
    """The fault that kills its process, in forked children (module doc)."""
    problems = []
    for attempt in range(ATTEMPTS + 1):
        pid = os.fork()
        if pid == 0:
            try:
                from scripted_model import ScriptedChatModel

                from langchain_tiered_memory import TieredMemory
                from langchain_tiered_memory.embeddings import HashingEmbeddings

                model = ScriptedChatModel(default=killer)
                memory = TieredMemory(path, config("inline"), model=model, embeddings=HashingEmbeddings())
                if attempt == 0:
                    memory.after_turn("u", "t", turn(0))  # stored, then the job kills us
                memory.flush(timeout=30)
                memory.close()
                os._exit(0)
            except BaseException:  # noqa: BLE001
                os._exit(3)
        _, status = os.waitpid(pid, 0)
        killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        figures.kills += killed
        if attempt < ATTEMPTS and not killed:
            problems.append(f"kills-process: open {attempt + 1} was not killed by the job (status {status})")
        if attempt == ATTEMPTS and not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0):
            problems.append(f"kills-process: the job still ran after {ATTEMPTS} deaths (status {status})")
    from langchain_tiered_memory import MemoryConfig, TieredMemory
    from langchain_tiered_memory.embeddings import HashingEmbeddings

    with TieredMemory(path, MemoryConfig(job_mode="manual"), embeddings=HashingEmbeddings()) as memory:
        stats = memory.admin.stats()
        failed = stats["failed_jobs"]
        if [m.id for m in memory.threads.messages("u", "t")] != ["h0", "a0"]:
            problems.append("kills-process: the turn's messages were not kept")
        if stats["jobs"]["failed"] != 1 or not failed or "stopped during each" not in (failed[0]["reason"] or ""):
            problems.append(f"kills-process: the job is not failed with its reason: {stats['jobs']} {failed}")
    return problems


def run(root: Path, *, rounds: int = 1) -> Figures:
    figures = Figures("fault models")
    start = time.monotonic()
    problems = run_poison(root / "poison", figures)
    figures.faults += 1
    for r in range(rounds):
        for name, (kwargs, expect) in faults().items():
            modes = ["background", "inline"] if name in ("hangs", "raises") else ["background"]
            for mode in modes:
                problems += run_fault(root / f"{name}-{mode}-{r}", name, kwargs, expect, mode)
                figures.faults += 1
                figures.turns += 2
    figures.losses = len(problems)
    figures.notes += problems
    figures.seconds = time.monotonic() - start
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args(argv)
    figures = run(Path(args.root), rounds=args.rounds)
    print(json.dumps(figures.__dict__), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
