"""Hostile input corpus: every input a careless or hostile caller can pass, through the
public API, each answered with our error (a ``TieredMemoryError`` saying what to do) or a
documented degradation — never another exception, nothing already stored lost, and nothing
stored able to close the memory fence.

The documented degradations it holds the package to (docs/bad-input.md):

- a message of any size is stored whole and sent truncated (with a marker) to fit the
  window; NUL characters in message content are kept as sent;
- a query is searched by its first 32,000 characters (the entity search by its first 64
  words); an empty or blank query finds nothing;
- ids are opaque strings: path-like ones name no file, SQL and FTS5 syntax in a query or
  an entity name is searched for as text;
- stored text that forges a fence marker (look-alike letters included) is quoted so that it
  closes nothing, and a chat-template marker (``<|im_start|>``, ``[INST]``) so that it is none.

Each case is one call; ``expect`` is ``"ours"`` (it must raise our error and store
nothing), ``"ok"`` (it must succeed; its check, if any, verifies the degradation), or
``"either"`` (our error or success, both documented).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from .common import Figures, integrity

Case = tuple[str, str, Callable[[Any], Any], str]

SQL_FTS = ["'; DROP TABLE memories; --", '" OR 1=1 --', "NEAR(apple banana)", '"unterminated', "*", "AND OR NOT",
           "content:apple", "^apple", "%", "_", "apple*", "(apple", "apple)", "-apple", "a AND (b OR", "\\"]
PATHS = ["../../etc/passwd", "/tmp/evil", "C:\\Windows\\x", "~/.ssh/id_rsa", "..", ".", "a/../../b", "memory.db",
         "qdrant", "con", "nul\\x"]
SURROGATES = ["\ud800", "a\udfffb", "\udbff\udc00\ud800"]
BIG = "word " * 2_000_000  # 10 MB


def _deep(levels: int) -> dict:
    value: dict = {}
    for _ in range(levels):
        value = {"a": value}
    return value


def _construct(**fields: Any) -> Any:
    """A message built around pydantic's validation, as a caller with model_construct can."""
    from langchain_core.messages import HumanMessage

    base = {"content": "x", "type": "human", "additional_kwargs": {}, "response_metadata": {}, "id": None}
    return HumanMessage.model_construct(**{**base, **fields})


def cases(forgeries: list[str]) -> list[Case]:
    from langchain_core.messages import AIMessage, HumanMessage

    H = HumanMessage
    out: list[Case] = []

    def add(category: str, name: str, call: Callable[[Any], Any], expect: str) -> None:
        out.append((category, name, call, expect))

    # --- oversize
    add("oversize", "10 MB message", lambda m: _big_message(m), "ok")
    add("oversize", "5,000 messages in one turn", lambda m: m.after_turn("u", "many", [H(f"m{i}") for i in range(5_000)]), "ok")
    add("oversize", "memory of 32,001 characters", lambda m: m.memories.remember("u", "x" * 32_001), "ours")
    add("oversize", "memory of 9,000 tokens", lambda m: m.memories.remember("u", "word " * 6_500 + "\u4e00" * 3_000), "ours")
    add("oversize", "metadata of 70,000 characters", lambda m: m.memories.remember("u", "fine", metadata={"k": "v" * 70_000}), "ours")
    add("oversize", "10 MB query", lambda m: _timed(lambda: m.memories.search("u", BIG), 5), "ok")
    add("oversize", "10 MB before_turn query", lambda m: _timed(lambda: m.before_turn("u", "base", query=BIG), 5), "ok")
    add("oversize", "10 MB recall query", lambda m: _timed(lambda: m.recall("u", BIG), 5), "ok")
    add("oversize", "10 MB store query", lambda m: _timed(lambda: m.store.search(("docs",), query=BIG), 5), "ok")
    add("oversize", "user id of 513 characters", lambda m: m.after_turn("u" * 513, "t", [H("x")]), "ours")
    add("oversize", "message id of 513 characters", lambda m: m.after_turn("u", "t", [H("x", id="i" * 513)]), "ours")
    add("oversize", "k of 10**9", lambda m: m.memories.search("u", "apple", k=10**9), "ours")
    add("oversize", "episodes k of 10**9", lambda m: m.episodes.search("u", "apple", k=10**9), "ok")
    add("oversize", "list limit of 10**12", lambda m: m.memories.list("u", limit=10**12), "either")
    # --- empty
    add("empty", "no messages", lambda m: _equal(m.after_turn("u", "t-empty", []).stored, 0), "ok")
    add("empty", "empty message", lambda m: m.after_turn("u", "t-empty", [H("")]), "ok")
    add("empty", "blank memory", lambda m: m.memories.remember("u", "   "), "ours")
    add("empty", "empty query", lambda m: _equal(m.memories.search("u", ""), []), "ok")
    add("empty", "blank entity name", lambda m: m.entities.get("u", " "), "ours")
    add("empty", "empty ids", lambda m: m.after_turn("", "", [H("x")]), "ours")
    add("empty", "empty memory types", lambda m: m.memories.search("u", "apple", memory_types=[]), "ours")
    add("empty", "empty import", lambda m: m.admin.import_user("newcomer", {}), "either")
    # --- NUL
    add("nul", "NUL in message content", lambda m: _nul_message(m), "ok")
    add("nul", "NUL in memory", lambda m: m.memories.remember("u", "a\x00b"), "ours")
    add("nul", "NUL in user id", lambda m: m.after_turn("a\x00b", "t", [H("x")]), "ours")
    add("nul", "NUL in thread id", lambda m: m.before_turn("u", "a\x00b"), "ours")
    add("nul", "NUL in message id", lambda m: m.after_turn("u", "t", [H("x", id="a\x00b")]), "ours")
    add("nul", "NUL in query", lambda m: m.memories.search("u", "apple\x00banana"), "ok")
    add("nul", "NUL in entity name", lambda m: m.entities.get("u", "a\x00b"), "either")
    add("nul", "NUL in store key", lambda m: m.store.put(("docs",), "a\x00b", {"v": 1}), "either")
    # --- lone surrogates
    for s in SURROGATES:
        add("surrogate", f"{s!r} in content", lambda m, s=s: m.after_turn("u", "t", [H(s)]), "ours")
        add("surrogate", f"{s!r} in user id", lambda m, s=s: m.after_turn(s, "t", [H("x")]), "ours")
        add("surrogate", f"{s!r} in thread id", lambda m, s=s: m.before_turn("u", s), "ours")
        add("surrogate", f"{s!r} in memory", lambda m, s=s: m.memories.remember("u", s), "ours")
        add("surrogate", f"{s!r} in metadata", lambda m, s=s: m.memories.remember("u", "fine", metadata={s: 1}), "ours")
        add("surrogate", f"{s!r} in query", lambda m, s=s: m.memories.search("u", s), "ours")
        add("surrogate", f"{s!r} in before_turn query", lambda m, s=s: m.before_turn("u", "base", query=s), "ours")
        add("surrogate", f"{s!r} in episode query", lambda m, s=s: m.episodes.search("u", s), "ours")
        add("surrogate", f"{s!r} in entity name", lambda m, s=s: m.entities.get("u", s), "ours")
        add("surrogate", f"{s!r} in store key", lambda m, s=s: m.store.put(("docs",), s, {"v": 1}), "ours")
        add("surrogate", f"{s!r} in store namespace", lambda m, s=s: m.store.search(("memories", s)), "ours")
        add("surrogate", f"{s!r} in store value", lambda m, s=s: m.store.put(("x", "u"), "k", {"v": s}), "ours")
        add("surrogate", f"{s!r} in store value key", lambda m, s=s: m.store.put(("x", "u"), "k", {s: "v"}), "ours")
        add("surrogate", f"{s!r} in store memory", lambda m, s=s: m.store.put(("memories", "u"), "k", {"content": "ok", "note": s}), "ours")
        add("surrogate", f"{s!r} in recall query", lambda m, s=s: m.recall("u", s), "ours")
        add("surrogate", f"{s!r} in tool call args", lambda m, s=s: m.after_turn("u", "t", [AIMessage("", tool_calls=[{"name": "f", "args": {"a": s}, "id": "c"}])]), "ours")
    # --- wrong types
    for bad in (None, 42, 1.5, b"bytes", [], {}, object(), True, math.nan):
        add("types", f"user id {bad!r}", lambda m, b=bad: m.after_turn(b, "t", [H("x")]), "ours")
        add("types", f"query {bad!r}", lambda m, b=bad: m.memories.search("u", b), "ours" if bad != "" else "ok")
        add("types", f"importance {bad!r}", lambda m, b=bad: m.memories.remember("u", "fine", importance=b), "ours" if bad is not None else "either")
        add("types", f"messages {bad!r}", lambda m, b=bad: m.after_turn("u", "t", b), "ours" if bad != [] else "ok")
        add("types", f"message {bad!r} in list", lambda m, b=bad: m.after_turn("u", "t", [H("ok"), b]), "ours")
        add("types", f"content {bad!r} (model_construct)", lambda m, b=bad: m.after_turn("u", "t", [_construct(content=b)]), "ours" if bad not in ([],) else "either")
        add("types", f"id {bad!r} (model_construct)", lambda m, b=bad: m.after_turn("u", "t", [_construct(id=b)]), "ours" if bad is not None else "ok")
        add("types", f"memory_types {bad!r}", lambda m, b=bad: m.memories.search("u", "apple", memory_types=b), "ours" if bad is not None else "ok")
        add("types", f"k {bad!r}", lambda m, b=bad: m.memories.search("u", "apple", k=b), "ours" if bad != 42 else "ok")
        add("types", f"import data {bad!r}", lambda m, b=bad: m.admin.import_user("newcomer", b), "ours" if bad != {} else "either")
    add("types", "content dict (model_construct)", lambda m: m.after_turn("u", "t", [_construct(content={"text": "hi"})]), "ours")
    add("types", "tool_calls not a list (model_construct)", lambda m: m.after_turn("u", "t", [AIMessage.model_construct(content="", type="ai", tool_calls="f()", additional_kwargs={}, response_metadata={}, invalid_tool_calls=[], id=None)]), "ours")
    add("types", "object in additional_kwargs", lambda m: m.after_turn("u", "t", [H("x", additional_kwargs={"o": object()})]), "ours")
    add("types", "NaN in additional_kwargs", lambda m: m.after_turn("u", "t", [H("x", additional_kwargs={"n": math.nan})]), "ours")
    add("types", "naive datetime", lambda m: m.after_turn("u", "t", [H("x")], at=datetime(2026, 1, 1)), "ours")
    add("types", "metadata list", lambda m: m.memories.remember("u", "fine", metadata=[1, 2]), "ours")
    add("types", "metadata int keys", lambda m: m.memories.remember("u", "fine", metadata={1: 2}), "ours")
    add("types", "store value not a dict", lambda m: m.store.put(("docs",), "k", [1, 2]), "ours")
    add("types", "unknown memory type", lambda m: m.memories.remember("u", "fine", "gossip"), "ours")
    add("types", "importance 7", lambda m: m.memories.remember("u", "fine", importance=7), "ours")
    add("types", "memory id not a uuid", lambda m: m.memories.get("u", "../../etc/passwd"), "ours")
    add("types", "role nonsense", lambda m: m.after_turn("u", "t", [{"role": "wizard", "content": "x"}]), "ours")
    # --- deep and huge metadata
    add("deep", "metadata 2,000 deep", lambda m: m.memories.remember("u", "fine", metadata=_deep(2_000)), "ours")
    add("deep", "metadata 33 deep", lambda m: m.memories.remember("u", "fine", metadata=_deep(33)), "ours")
    add("deep", "metadata 30 deep", lambda m: m.memories.remember("u", "fine deep", metadata=_deep(30)), "ok")
    add("deep", "additional_kwargs 2,000 deep", lambda m: m.after_turn("u", "t", [H("x", additional_kwargs=_deep(2_000))]), "ours")
    add("deep", "store value 2,000 deep", lambda m: m.store.put(("docs",), "k", _deep(2_000)), "ours")
    add("deep", "store memory metadata 2,000 deep", lambda m: m.store.put(("memories", "u"), "k", {"content": "x", "metadata": _deep(2_000)}), "ours")
    add("deep", "import 2,000 deep", lambda m: m.admin.import_user("newcomer", {"memories": [_deep(2_000)]}), "ours")
    add("deep", "metadata with 2,000 keys", lambda m: m.memories.remember("u", "many keys", metadata={f"k{i}": i for i in range(2_000)}), "ok")
    # --- path-like ids
    for p in PATHS:
        add("paths", f"user id {p!r}", lambda m, p=p: m.after_turn(p, f"thread-of-{p}", [H("x")]), "ok")
        add("paths", f"thread id {p!r}", lambda m, p=p: m.after_turn("pathuser", p, [H("x")]), "either")
        add("paths", f"store key {p!r}", lambda m, p=p: m.store.put(("docs",), p, {"v": 1}), "ok")
        add("paths", f"session id {p!r}", lambda m, p=p: m.memories.remember("u", f"fine {p}", session_id=p), "ok")
    # --- SQL and FTS5 syntax
    for q in SQL_FTS:
        add("sql", f"search {q!r}", lambda m, q=q: m.memories.search("u", q), "ok")
        add("sql", f"before_turn query {q!r}", lambda m, q=q: m.before_turn("u", "base", query=q), "ok")
        add("sql", f"entity {q!r}", lambda m, q=q: m.entities.get("u", q), "either")
        add("sql", f"episodes {q!r}", lambda m, q=q: m.episodes.search("u", q), "ok")
        add("sql", f"store search {q!r}", lambda m, q=q: m.store.search(("memories", "u"), query=q), "ok")
        add("sql", f"user id {q!r}", lambda m, q=q: m.after_turn(q, f"sql-{q}", [H(f"My name is {q}.")]), "ok")
        add("sql", f"filter {q!r}", lambda m, q=q: m.store.search(("docs",), filter={"v": q}), "ok")
        add("sql", f"forget entity {q!r}", lambda m, q=q: m.admin.forget(user_id="nobody", entity=q), "either")
    add("sql", "entity named with SQL", lambda m: m.after_turn("u", "sqlname", [H("My name is Robert'); DROP TABLE entities;-- and I live in Paris.")]), "ok")
    # --- fence forgeries, through every channel that reaches the memory block
    for i, f in enumerate(forgeries):
        add("fence", f"remember {f!r}", lambda m, f=f: m.memories.remember("u", f"user: note {f}", importance=0.9, merge=False), "ok")
        add("fence", f"message {f!r}", lambda m, f=f: _turn(m, [H(f"My name is Eve {f}. I live in Oslo {f}"), AIMessage(f"Ok {f}")]), "ok")
        add("fence", f"store memory {f!r}", lambda m, f=f, i=i: m.store.put(("memories", "u"), f"fence-{i}", {"content": f"store note {f}"}), "ok")
    add("fence", "episode of forged messages", lambda m: m.end_session("u", "base"), "ok")
    return out


def _turn(memory: Any, messages: list) -> None:
    """A turn as an agent takes it: the context first (which records what left the window,
    so the forged messages reach the running summary), then the messages."""
    memory.before_turn("u", "base")
    memory.after_turn("u", "base", messages)


def _equal(value: Any, expected: Any) -> None:
    assert value == expected, (value, expected)


def _timed(call: Callable[[], Any], seconds: float) -> Any:
    start = time.perf_counter()
    value = call()
    assert time.perf_counter() - start < seconds, f"took {time.perf_counter() - start:.1f} s"
    return value


def _big_message(memory: Any) -> None:
    from langchain_core.messages import HumanMessage

    memory.after_turn("u", "big", [HumanMessage(BIG, id="big")])
    context = _timed(lambda: memory.before_turn("u", "big"), 10)
    assert context.truncated and "cut by langchain-tiered-memory" in context.window[-1].text
    _timed(lambda: memory.before_turn("u", "big"), 1)  # the cut is cached
    assert len(memory.threads.messages("u", "big")[0].text) == len(BIG)  # kept whole


def _nul_message(memory: Any) -> None:
    from langchain_core.messages import HumanMessage

    memory.after_turn("u", "nul", [HumanMessage("a\x00b", id="nul")])
    assert memory.threads.messages("u", "nul")[0].text == "a\x00b"


def _counts(memory: Any) -> dict[str, int]:
    stats = memory.admin.stats()
    return {k: stats[k] for k in ("users", "threads", "messages", "memories", "entities", "episodes")}


def run(path: Path) -> Figures:
    """Every case against one memory; the figures: inputs tried, losses (a foreign error, a
    refusal that stored something, a stored message or memory gone), escapes (a fence
    marker in the memory block that is not the block's own)."""
    from langchain_core.messages import AIMessage, HumanMessage
    from test_fence import FORGERIES, ROLE_FORGERIES, _fence_markers, _role_markers

    from langchain_tiered_memory import MemoryConfig, TieredMemory, TieredMemoryError
    from langchain_tiered_memory.embeddings import HashingEmbeddings

    figures = Figures("hostile")
    start = time.monotonic()
    slow: list[tuple[float, str]] = []
    outside = sorted(p.name for p in path.parent.iterdir()) if path.parent.exists() else []
    # A small window: forged messages leave it and reach the running summary too; every
    # section has room in the block.
    # (An episode line longer than episodes_max_tokens is left out whole: room for one.)
    config = MemoryConfig(job_mode="inline", max_tokens=2_200, system_reserve=50, output_reserve=50,
                          summary_max_tokens=100, entities_max_tokens=150, memories_max_tokens=150,
                          episodes_max_tokens=600, score_threshold=0.0)
    with TieredMemory(path, config, embeddings=HashingEmbeddings()) as memory:
        memory.after_turn("u", "base", [HumanMessage("I like apple banana.", id="b1"), AIMessage("Noted.", id="b2")])
        for i in range(30):  # enough that the forged turns after push messages out of the window
            memory.after_turn("u", "base", [HumanMessage(f"Tell me more about it, part {i}. " * 4), AIMessage("Sure.")])
        kept = memory.memories.remember("u", "user: I like apple banana", importance=0.9)
        for category, name, call, expect in cases(FORGERIES + ROLE_FORGERIES):
            figures.inputs += 1
            began = time.perf_counter()
            before = _counts(memory)
            outcome = "ok"
            try:
                call(memory)
            except TieredMemoryError as exc:
                outcome = "ours"
                if not str(exc).strip():
                    figures.notes.append(f"{category}/{name}: our error says nothing")
                    figures.losses += 1
            except AssertionError as exc:
                outcome = f"the documented degradation did not hold: {exc}"
            except BaseException as exc:  # noqa: BLE001 - a foreign error is the finding
                outcome = f"not our error: {type(exc).__name__}: {str(exc)[:200]}"
            wrong = outcome not in ("ok", "ours") or (expect != "either" and outcome != expect)
            if outcome == "ours" and _counts(memory) != before:
                wrong, outcome = True, f"refused, yet stored: {before} -> {_counts(memory)}"
            if wrong:
                figures.losses += 1
                figures.notes.append(f"{category}/{name}: expected {expect}, got {outcome}")
            if [m.id for m in memory.threads.messages("u", "base")][:2] != ["b1", "b2"]:
                figures.losses += 1
                figures.notes.append(f"{category}/{name}: the thread's first messages are gone")
            if memory.memories.get("u", kept).content != "user: I like apple banana":
                figures.losses += 1
                figures.notes.append(f"{category}/{name}: a stored memory changed")
            slow.append((time.perf_counter() - began, f"{category}/{name}"))
        memory.flush(timeout=60)
        context = memory.before_turn("u", "base", query="note Eve Oslo store", peek=True)
        block = context.memory_block
        names = {s.name for s in context.sections}
        if not {"summary", "entities", "memories", "episodes"} <= names:
            figures.notes.append(f"not every section reached the block: {sorted(names)} "
                                 f"{dict(context.token_usage)} evicted {context.evicted} {memory.admin.stats()['jobs']}")
            figures.losses += 1
        for fence in ("memory", "conversation"):
            markers = _fence_markers(block, fence)
            expected = 2 if fence == "memory" else 0
            if len(markers) != expected:
                figures.escapes += abs(len(markers) - expected)
                figures.notes.append(f"{len(markers)} {fence} fence markers in the block: {markers[:4]}")
        roles = _role_markers(block)
        if roles:
            figures.escapes += len(roles)
            figures.notes.append(f"chat-template markers in the block: {roles[:4]}")
        if "\u2039/memory" not in block:  # a forged closing tag, quoted: the probe reached the block
            figures.notes.append("no forged tag reached the block (the fence probe saw nothing)")
            figures.losses += 1
    figures.losses += len(integrity(path / "memory.db"))
    now = sorted(p.name for p in path.parent.iterdir())
    if sorted(set(now) - {path.name}) != sorted(set(outside) - {path.name}):
        figures.losses += 1
        figures.notes.append(f"files appeared beside the data dir: {sorted(set(now) - set(outside))}")
    figures.seconds = time.monotonic() - start
    worst = max(slow) if slow else (0.0, "")
    figures.notes.append(f"slowest input: {worst[1]} ({worst[0]:.1f} s); categories: "
                         + ", ".join(sorted({c for c, *_ in cases([])})))
    return figures
