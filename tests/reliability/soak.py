"""Crash soak: a child process appends turns in background job mode while the parent
SIGKILLs it at random moments, then a new child reopens the directory and goes on.

The parent imports the package once and forks each child (an import costs ~2 s; a fork, a
few ms), so ~30 kills fit in ~30 s. It runs in a process of its own (``python -m
tests.reliability.soak``): forking the multi-threaded pytest process could copy a held lock.
A child acknowledges a turn (one byte line on a pipe) only after ``after_turn`` returned,
and starts from the first turn not acknowledged, resending it with the same message ids —
what a client does after a crash. At the end the parent checks:

- every acknowledged message is in the log exactly once, and nothing else is;
- every job is done, or failed with a reason (a job whose attempts were all killed ends
  failed), and no job's result was applied twice;
- ``PRAGMA integrity_check`` is ok;
- after the upkeep, the recall index matches its owner (every indexed record has its
  point, no point without a record).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import select
import signal
import sys
import time
import uuid
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    __package__ = "tests.reliability"

from .common import Figures, applied_twice, index_problems, integrity

NAMES = ["Alice", "Bruno", "Chen", "Dara", "Emeka", "Farah", "Goran", "Hana"]
CITIES = ["Paris", "Lisbon", "Osaka", "Lima", "Accra", "Oslo", "Quito", "Hanoi"]
DRINKS = ["green tea", "black coffee", "mint tea", "oat milk", "sparkling water"]
_NS = uuid.UUID("5d8e0e4a-3c1b-4f4e-9a51-0c4c2f7d9b14")


def turn(i: int, seed: int) -> tuple[str, str, list]:
    """Turn ``i``: its user, thread and messages, the same on every (re)send."""
    from langchain_core.messages import AIMessage, HumanMessage

    rnd = random.Random(seed * 1_000_003 + i)
    user = f"u{i % 3}"
    thread = f"{user}-s{(i // 3) % 2}"
    text = rnd.choice([
        f"My name is {rnd.choice(NAMES)} and I live in {rnd.choice(CITIES)}.",
        f"I prefer {rnd.choice(DRINKS)} in the morning.",
        f"Remember that my flight number is QX{rnd.randint(100, 999)}.",
        "Tell me more about that, please. " * rnd.randint(1, 6),
    ])
    return user, thread, [HumanMessage(text, id=f"h{i}"), AIMessage(f"Noted ({i}).", id=f"a{i}")]


def config():
    from langchain_tiered_memory import MemoryConfig

    # A small window: threads evict, so summary work is journaled too. Three attempts, no
    # backoff: a job killed three times ends failed within the run.
    return MemoryConfig(
        max_tokens=500, system_reserve=50, output_reserve=50, job_mode="background",
        job_max_attempts=3, job_backoff_seconds=0.0,
    )


def child(data_dir: str, start: int, stop: int, seed: int, fd: int) -> None:
    """Append turns ``start..stop-1``, acknowledging each on ``fd``; never returns."""
    from langchain_tiered_memory import TieredMemory
    from langchain_tiered_memory.embeddings import HashingEmbeddings

    try:
        memory = TieredMemory(data_dir, config(), embeddings=HashingEmbeddings())
        os.write(fd, b"open\n")
        for i in range(start, stop):
            user, thread, messages = turn(i, seed)
            memory.after_turn(user, thread, messages)
            if i % 7 == 3:
                # Same id on every resend: storing it again changes nothing.
                memory.memories.remember(user, f"user: fact {i} about {thread}", memory_id=str(uuid.uuid5(_NS, str(i))))
            if i % 13 == 5:
                memory.end_session(user, thread)
            os.write(fd, f"{i}\n".encode())
        memory.flush(timeout=60)
        memory.close()
        os.write(fd, b"done\n")
        os._exit(0)
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, never raised past the fork
        os.write(fd, f"error {type(exc).__name__}: {exc}\n".encode(errors="replace"))
        os._exit(3)


def _read_lines(fd: int, buffer: bytearray) -> list[str]:
    lines = []
    while b"\n" in buffer:
        line, _, rest = bytes(buffer).partition(b"\n")
        buffer[:] = rest
        lines.append(line.decode(errors="replace"))
    return lines


def _warm_up(seed: int) -> None:
    """Open a memory once in a throwaway directory and go through a turn, so the children
    forked later find every module imported (the package imports its parts on first use;
    a child that imports them itself is killed before its first turn on a loaded machine)."""
    import tempfile

    from langchain_tiered_memory import TieredMemory
    from langchain_tiered_memory.embeddings import HashingEmbeddings

    inline = config().model_copy(update={"job_mode": "inline"})  # no thread left to fork
    with tempfile.TemporaryDirectory() as warm, TieredMemory(warm, inline, embeddings=HashingEmbeddings()) as m:
        user, thread, messages = turn(0, seed)
        m.after_turn(user, thread, messages)
        m.memories.remember(user, "user: warming up")
        m.before_turn(user, thread, query="warming up")


def run(data_dir: Path, *, kills: int, turns: int, seed: int, max_kill_after: float = 1.0) -> Figures:
    """Kill ``kills`` children at random moments (or go on until ``turns`` are acknowledged),
    then let one finish, and check the directory (module doc)."""
    _warm_up(seed)

    rnd = random.Random(seed)
    figures = Figures("crash soak")
    started = time.monotonic()
    acked = -1
    errors: list[str] = []
    while True:
        final = figures.kills >= kills and acked + 1 >= turns
        stop = max(turns, acked + 2) if final else 10**9
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child
            os.close(read_fd)
            child(str(data_dir), acked + 1, stop, seed, write_fd)
        os.close(write_fd)
        # Some kills land while the child opens the directory, most while it appends and
        # its worker runs jobs.
        deadline = None if final else time.monotonic() + rnd.uniform(0.0, max_kill_after)
        buffer, status = bytearray(), None
        while True:
            timeout = 5.0 if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([read_fd], [], [], timeout)
            if ready:
                chunk = os.read(read_fd, 65536)
                if not chunk:
                    break  # the child exited
                buffer += chunk
                for line in _read_lines(read_fd, buffer):
                    if line.isdigit():
                        acked = max(acked, int(line))
                    elif line.startswith("error"):
                        errors.append(line)
            elif deadline is not None:
                os.kill(pid, signal.SIGKILL)
                figures.kills += 1
                break
            elif time.monotonic() - started > 600:
                os.kill(pid, signal.SIGKILL)
                errors.append("the last child did not finish in time")
                break
        _, status = os.waitpid(pid, 0)
        # Acknowledgements written before the kill are still in the pipe.
        while True:
            chunk = os.read(read_fd, 65536)
            if not chunk:
                break
            buffer += chunk
        for line in _read_lines(read_fd, buffer):
            if line.isdigit():
                acked = max(acked, int(line))
            elif line.startswith("error"):
                errors.append(line)
        os.close(read_fd)
        if final:
            if os.WIFEXITED(status) and os.WEXITSTATUS(status) != 0:
                errors.append(f"the last child exited with {os.WEXITSTATUS(status)}")
            break
    figures.turns = acked + 1
    figures.notes += errors
    figures.losses += len(errors)
    figures.losses += verify(data_dir, acked + 1, seed, figures)
    figures.seconds = time.monotonic() - started
    return figures


def verify(data_dir: Path, count: int, seed: int, figures: Figures) -> int:
    """The checks of the module doc; returns how many failed (each noted in ``figures``)."""
    from langchain_tiered_memory import MemoryConfig, TieredMemory
    from langchain_tiered_memory.embeddings import HashingEmbeddings

    problems: list[str] = []
    expected: dict[str, list[str]] = {}
    for i in range(count):
        _, thread, messages = turn(i, seed)
        expected.setdefault(thread, []).extend(m.id for m in messages)
    inline = config().model_copy(update={"job_mode": "inline"})
    with TieredMemory(data_dir, inline, embeddings=HashingEmbeddings()) as memory:
        if not memory.flush(timeout=120):
            problems.append("flush did not finish")
        for thread, ids in expected.items():
            log = [m.id for m in memory.threads.messages(f"u{thread[1]}", thread)]
            if len(log) != len(set(log)):
                problems.append(f"{thread}: {len(log) - len(set(log))} messages stored twice")
            missing = [i for i in ids if i not in set(log)]
            if missing:
                problems.append(f"{thread}: {len(missing)} acknowledged messages lost, e.g. {missing[:3]}")
            # Sent but not acknowledged (killed before the ack): resent, so the log is a
            # prefix of the turns in order, extended by at most the one unacknowledged turn.
            if log[: len(ids)] != ids:
                problems.append(f"{thread}: the log is not the acknowledged turns in order")
        jobs = memory.admin.stats()["jobs"]
        if jobs["pending"] or jobs["running"] or jobs["waiting"] or jobs["stale"]:
            problems.append(f"jobs left unfinished: {jobs}")
        failed = memory.admin.stats()["failed_jobs"]
        problems += [f"failed job without a reason: {j}" for j in failed if not j["reason"]]
        if jobs["failed"]:
            figures.notes.append(f"{jobs['failed']} jobs failed visibly (all attempts killed), {jobs['done']} done")
        problems += applied_twice(memory)
        problems += index_problems(memory)
    problems += integrity(data_dir / "memory.db")
    figures.notes += problems
    return len(problems)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data_dir")
    parser.add_argument("--kills", type=int, default=30)
    parser.add_argument("--turns", type=int, default=0, help="go on until this many turns are acknowledged")
    parser.add_argument("--seed", type=int, default=14)
    args = parser.parse_args(argv)
    figures = run(Path(args.data_dir), kills=args.kills, turns=args.turns, seed=args.seed)
    print(json.dumps(figures.__dict__))
    return 0


if __name__ == "__main__":
    sys.exit(main())
