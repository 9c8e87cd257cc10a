"""Forgetting leaves no byte anywhere, also with a reader open: the probe and its helpers.

A memory (real SQLite file, real Qdrant Edge shard, real MiniLM embeddings; only the chat
model is scripted) learns a victim's canaries in every layer — messages, a LangGraph
checkpoint, an extracted memory, an entity with an attribute, a dropped item's reason
naming the entity, an episode — and a job left waiting for a retry, holding a saved
answer and an error that quote them. Then it forgets the victim's user, thread, memory or
entity, and every file of the data directory (``memory.db``, ``-wal``, ``-shm``, the
``qdrant/`` folder) is scanned for the canaries, ignoring case.

With a reader open — a checkpointer ``list()`` iterator left mid-way in the same process,
or a read transaction in a second process — the forget must come back within its bounded
wait (not SQLite's 30 s busy timeout), say ``wal_scrubbed: False`` and log a WARNING; once
the reader ends, the retry (``memory.admin.scrub()``, the upkeep, close, or the next open) must
leave no canary. Figures: ``faults`` forgets with a reader, ``losses`` canaries found after
the scrub said it was done, ``escapes`` forgets that blocked past the bound or said nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    __package__ = "tests.reliability"

from . import _TESTS  # noqa: F401 - puts the scripted models on the path
from .common import Figures, child_env, python

VICTIM, KEEPER = "victim", "keeper"
THREAD = f"{VICTIM}-t"
#: Each canary as stored (mixed case, so a case-sensitive scan would miss a lowered copy).
CANARIES = {
    "message": "FlumpWhistle",
    "memory": "QuibbleFlax",
    "entity": "ZorgQuux",
    "attribute": "BlorpTech",
    "episode": "SnorkelMoth",
}
#: The keeper's canary: must survive every forget of the victim (the scan can see it).
KEPT = "PlumCorvid"
ENTITY = f"{CANARIES['entity']} Industries"
MEMORY = f"The user's badge code is {CANARIES['memory']}."
#: What each kind of forget must leave nowhere.
GONE = {
    "user": list(CANARIES),
    "thread": list(CANARIES),
    "memory": ["memory"],
    "entity": ["entity", "attribute"],
}
KINDS = tuple(GONE)
#: The scrub's wait for readers in the probe (the default is 2 s).
WAIT = 0.5
#: How long a forget with a reader may take at most: the wait, and the forget's own work.
BOUND = WAIT + 5.0

READER = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN")
conn.execute("SELECT COUNT(*) FROM messages").fetchone()  # a read transaction holds the log
print("reading", flush=True)
if len(sys.argv) > 2:
    time.sleep(float(sys.argv[2]))
else:
    sys.stdin.readline()  # until told
conn.execute("COMMIT")
conn.close()
"""


SCAN = """
import json, sys
from pathlib import Path
root, needles = Path(sys.argv[1]), json.loads(sys.argv[2])
files = {str(p.relative_to(root)): p.read_bytes().lower() for p in root.rglob("*") if p.is_file()}
print(json.dumps({n: sorted(f for f, data in files.items() if n.lower().encode() in data) for n in needles}))
"""


def scan(root: Path, needles: list[str]) -> dict[str, list[str]]:
    """Of each needle, the files under ``root`` holding it, ignoring ASCII case.

    Read in a process of its own: closing a file descriptor of ``memory.db`` drops every
    POSIX lock this process holds on it, SQLite's included, and a reader elsewhere could
    then take the file for the last connection's and delete the log under an open memory.
    """
    proc = subprocess.run([python(), "-c", SCAN, str(root), json.dumps(needles)], capture_output=True,
                          text=True, timeout=120, check=True)
    found: dict[str, list[str]] = json.loads(proc.stdout)
    return found


def left(root: Path, kind: str, *, kept: bool = False) -> dict[str, list[str]]:
    """The canaries a forget of ``kind`` must have removed that some file still holds;
    with ``kept``, ``"kept": []`` too if the keeper's canary is gone (it must not be)."""
    found = scan(root, [CANARIES[name] for name in GONE[kind]] + [KEPT])
    out = {name: found[CANARIES[name]] for name in GONE[kind] if found[CANARIES[name]]}
    if kept and not found[KEPT]:
        out["kept"] = []
    return out


def responder(messages: list[Any]) -> Any:
    """The scripted model: the victim's first turn names the canaries; the episode of the
    victim's session too; the other turns teach nothing."""
    from scripted_model import entity, episode_tool_call, memory, turn_tool_call

    system = str(messages[0].content)
    said = " ".join(str(m.content) for m in messages[1:])
    if "episodic memory" in system:
        return episode_tool_call(f"The user talked about the {CANARIES['episode']} parrot.")
    if CANARIES["message"] in said and "turn 0" in said:
        return turn_tool_call(
            # An attribute key over the limit: dropped, with a reason naming the entity.
            entities=[entity(ENTITY, "organization", sector=f"{CANARIES['attribute']} widgets", **{"k" * 120: "x"})],
            memories=[memory(MEMORY, "fact", 0.9)],
        )
    return turn_tool_call()


def config(mode: str = "inline", wait: float = WAIT) -> Any:
    from langchain_tiered_memory import MemoryConfig

    return MemoryConfig(job_mode=mode, scrub_wait_seconds=wait)


def open_memory(data: Path, mode: str = "inline", wait: float = WAIT) -> Any:
    from scripted_model import ScriptedChatModel

    from langchain_tiered_memory import TieredMemory

    return TieredMemory(data, config(mode, wait), model=ScriptedChatModel(default=responder))


class Chat(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def _checkpoint(memory: Any, user: str, thread: str, text: str) -> None:
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.graph import END, START, StateGraph

    builder = StateGraph(Chat)
    builder.add_node("reply", lambda state: {"messages": [AIMessage(f"noted: {state['messages'][-1].content}")]})
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    graph = builder.compile(checkpointer=memory.checkpointer)
    graph.invoke({"messages": [HumanMessage(text)]}, {"configurable": {"thread_id": thread, "user_id": user}})


def plant(memory: Any) -> dict[str, str]:
    """The canaries in every layer of the victim, the keeper's beside them; returns the ids
    a forget names (``memory``: the extracted memory's id, ``entity``: its name)."""
    from langchain_core.messages import AIMessage, HumanMessage

    flump = CANARIES["message"]
    for i in range(2):
        memory.after_turn(VICTIM, THREAD, [
            HumanMessage(f"My neighbour's parrot is called {flump}, turn {i}. Where I work we make widgets."),
            AIMessage("What a name!"),
        ])
    memory.after_turn(KEEPER, f"{KEEPER}-t", [HumanMessage(f"My cat is called {KEPT}."), AIMessage("Nice.")])
    memory.end_session(VICTIM, THREAD)
    _checkpoint(memory, VICTIM, THREAD, f"remember {flump}")
    _checkpoint(memory, KEEPER, f"{KEEPER}-graph", f"remember {KEPT}")  # a run: several checkpoints
    assert memory.flush(timeout=120)
    [learned] = [m for m in memory.memories.list(VICTIM) if CANARIES["memory"] in m.content]
    assert memory.entities.get(VICTIM, ENTITY).attributes["sector"].startswith(CANARIES["attribute"])
    _waiting_job(memory)
    return {"memory": learned.id, "entity": ENTITY}


def _waiting_job(memory: Any) -> None:
    """A job of the victim waiting for its retry in an hour: its saved answer restates the
    memory and the entity, its error quotes the entity (as a parse error quotes an answer)."""
    from datetime import datetime, timezone

    jobs = memory._parts.storage.jobs
    key = memory._parts.storage.threads.get(THREAD).key
    assert jobs.enqueue("extract", VICTIM, key, {"through_seq": 10_000}, datetime.now(timezone.utc).isoformat())
    job = jobs.claim("probe:1:waiting", 60, max_attempts=5)
    assert job is not None and job.user_id == VICTIM
    answer = {"entities": [{"name": ENTITY, "type": "organization",
                            "attributes": {"sector": f"{CANARIES['attribute']} widgets"}}],
              "memories": [{"content": MEMORY, "memory_type": "fact", "importance": 0.9}]}
    jobs.save_result(job.id, "probe:1:waiting", {"extraction": answer})
    error = f"ExtractionError: no JSON object in the model's answer 'It is {ENTITY} again'"
    jobs.fail(job.id, "probe:1:waiting", error, time.time() + 3600)


def forget(memory: Any, kind: str, ids: dict[str, str]) -> dict[str, int]:
    if kind == "user":
        return memory.admin.forget(user_id=VICTIM)
    if kind == "thread":
        return memory.admin.forget(thread_id=THREAD)
    if kind == "memory":
        return memory.memories.forget(user_id=VICTIM, memory_id=ids["memory"])
    return memory.admin.forget(user_id=VICTIM, entity=ids["entity"].upper())  # names match in any case


@contextlib.contextmanager
def same_process_reader(memory: Any) -> Iterator[None]:
    """A checkpointer ``list()`` iterator left after its first item: its cursor holds a read
    transaction on the checkpointer's connection until it is closed."""
    listing = memory.checkpointer.list({"configurable": {"thread_id": f"{KEEPER}-graph"}})
    next(listing)
    try:
        yield
    finally:
        listing.close()


@contextlib.contextmanager
def other_process_reader(data: Path, seconds: float | None = None) -> Iterator[subprocess.Popen[str]]:
    """A read transaction on ``memory.db`` in a second process, until the block ends (or
    for ``seconds``)."""
    args = [python(), "-c", READER, str(data / "memory.db"), *([] if seconds is None else [str(seconds)])]
    proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=child_env())
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "reading"
        yield proc
    finally:
        if proc.poll() is None and seconds is None:
            assert proc.stdin is not None
            proc.stdin.write("done\n")
            proc.stdin.flush()
        proc.wait(timeout=30)


class Warnings(logging.Handler):
    """The package's WARNING records, kept."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def __enter__(self) -> Warnings:
        logging.getLogger("langchain_tiered_memory").addHandler(self)
        return self

    def __exit__(self, *exc: object) -> None:
        logging.getLogger("langchain_tiered_memory").removeHandler(self)

    def about_the_log(self) -> list[str]:
        return [r.getMessage() for r in self.records if "memory.db-wal still holds" in r.getMessage()]


def forget_with_reader(root: Path, kind: str, where: str) -> tuple[float, list[str], list[str]]:
    """One forget of ``kind`` with a reader open ``where`` (``same``/``other`` process);
    returns how long the forget took, the escapes and the losses found."""
    data = root / f"{kind}-{where}"
    escapes: list[str] = []
    with open_memory(data) as memory:
        ids = plant(memory)
        reader = same_process_reader(memory) if where == "same" else other_process_reader(data)
        with Warnings() as warned, reader:
            start = time.monotonic()
            result = forget(memory, kind, ids)
            took = time.monotonic() - start
            if took > BOUND:
                escapes.append(f"{kind}/{where}: forget took {took:.1f} s with a reader open (bound {BOUND:.1f} s)")
            if result.get("wal_scrubbed") is not False:
                escapes.append(f"{kind}/{where}: the result does not say the log is still held: {result}")
            if not warned.about_the_log():
                escapes.append(f"{kind}/{where}: no WARNING said the log is still held")
            if not left(data, kind):
                escapes.append(f"{kind}/{where}: no canary while the reader held the log: the scan cannot fail")
        # The reader ended: the retry scrubs. Scanned with the memory still open, so that
        # SQLite's own checkpoint when the last connection closes cannot do it instead.
        if not memory.admin.scrub():
            escapes.append(f"{kind}/{where}: scrub() after the reader ended says the log is still held")
        losses = [f"{kind}/{where}: {name} left in {files}" for name, files in left(data, kind, kept=True).items()]
    return took, escapes, losses


def run(root: Path) -> Figures:
    figures = Figures("forget+reader")
    start = time.monotonic()
    slowest = 0.0
    for kind in KINDS:
        for where in ("same", "other"):
            took, escapes, losses = forget_with_reader(root, kind, where)
            slowest = max(slowest, took)
            figures.faults += 1
            figures.turns += 6
            figures.escapes += len(escapes)
            figures.losses += len(losses)
            figures.notes += escapes + losses
    figures.notes.append(f"slowest forget with a reader open: {slowest:.2f} s (wait {WAIT:g} s, bound {BOUND:g} s)")
    figures.seconds = time.monotonic() - start
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root")
    args = parser.parse_args(argv)
    figures = run(Path(args.root))
    print(json.dumps(figures.__dict__), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
