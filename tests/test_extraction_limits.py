"""Issue 14 and 16: extraction stays bounded — in parsing time, in what one answer may add,
in threads left by hung calls — keeps the good items of a partly bad answer, and picks the
structured-output method each server supports."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import openai
import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.output_parsers import JsonOutputParser
from scripted_model import ScriptedChatModel, entity, memory, tool_call, turn_json, turn_payload, turn_tool_call

from langchain_tiered_memory import MemoryConfig, TieredMemory
from langchain_tiered_memory.embeddings import HashingEmbeddings
from langchain_tiered_memory.errors import ExtractionError, ExtractionTimeoutError
from langchain_tiered_memory.extraction import (
    MAX_ANSWER_CHARS,
    MAX_ATTRIBUTES,
    MAX_CONTENT_CHARS,
    MAX_ENTITIES,
    MAX_MEMORIES,
    LLMExtractor,
    TurnExtraction,
    parse_json_object,
)
from langchain_tiered_memory.extraction.calls import MAX_HUNG_CALLS, hung_calls

TESTS = Path(__file__).parent
ROOT = TESTS.parent
TURN = [HumanMessage("My name is Alice and I live in Paris."), AIMessage("Hello Alice!")]


def inline(**overrides):
    base = dict(max_tokens=2_000, system_reserve=100, output_reserve=100, job_mode="inline",
                job_backoff_seconds=0.0, job_max_attempts=2, llm_timeout_seconds=5.0)
    base.update(overrides)
    return MemoryConfig(**base)


# --------------------------------------------------------------------------- parsing time

N = 200_000
HOSTILE = {
    "braces": "{" * N,
    "closing": "}" * N,
    "nested-objects": '{"a":' * (N // 5),
    "nested-lists": "[" * N + "]" * 10,
    "unterminated-string": '{"memories": [{"content": "' + "x" * N,
    "many-unterminated": '{"a": "b, ' * (N // 10),
    "quotes": '"' * N,
    "single-quotes": "{'a': " * (N // 6),
    "think-openers": "<think>" * (N // 7) + '{"memories": []}',
    "fence-openers": "```json\n{" * (N // 9),
    "prose-braces": "Sure, here {you} go: " * (N // 21),
    "trailing-commas": '{"memories": [' + "1, " * (N // 3) + "],}",
    "deep-valid-prefix": '{"memories": [' + '{"content": "m", "importance": 0.5},' * (N // 40) + "oops",
}


def _attempt(text):
    start = time.perf_counter()
    try:
        parse_json_object(text, {"entities", "memories", "summary"})
        outcome = "parsed"
    except ExtractionError:
        outcome = "refused"
    return outcome, time.perf_counter() - start


@pytest.mark.parametrize("text", list(HOSTILE.values()), ids=list(HOSTILE))
def test_a_200_kB_hostile_answer_returns_or_fails_within_a_second(text):
    assert len(text) <= MAX_ANSWER_CHARS
    outcome, seconds = _attempt(text)
    assert seconds < 1.0, (outcome, seconds)


@pytest.mark.parametrize("name", ["braces", "nested-objects", "unterminated-string", "many-unterminated"])
def test_a_10_MB_answer_is_refused_at_once_with_the_reason(name):
    text = (HOSTILE[name] * 60)[:10_000_000]
    start = time.perf_counter()
    with pytest.raises(ExtractionError, match=r"10,000,000 characters long; the limit is 262,144"):
        parse_json_object(text)
    assert time.perf_counter() - start < 1.0


def test_a_10_MB_answer_through_the_extractor_fails_the_attempt_quickly():
    model = ScriptedChatModel(default='{"memories": [' + '{"content": "' * 2_000_000, tool_calling=False)
    start = time.perf_counter()
    with pytest.raises(ExtractionError, match="MAX_ANSWER_CHARS"):
        LLMExtractor(model).extract_turn(TURN)
    assert time.perf_counter() - start < 2.0


# --------------------------------------------------------------------------- what one answer may add


def test_2000_memories_are_applied_as_the_cap_and_the_rest_recorded(tmp_path):
    memories = [memory(f"The user owns record number {i}.", "fact", 0.9) for i in range(2_000)]
    many_attrs = {f"k{i}": f"v{i}" for i in range(MAX_ATTRIBUTES + 30)}
    entities = [entity(f"Person {i}", "person", **(many_attrs if i == 0 else {})) for i in range(80)]
    model = ScriptedChatModel(default=turn_tool_call(entities=entities, memories=memories))
    start = time.perf_counter()
    # merge_threshold=1.0: these near-identical sentences would otherwise merge on storing.
    with TieredMemory(tmp_path / "m", inline(merge_threshold=1.0), model=model) as m:
        m.after_turn("u", "t", TURN)
        assert m.flush(timeout=60)
        assert m.admin.stats()["jobs"]["done"] == 1
        stored = m.memories.list("u", limit=1_000)
        assert len(stored) == MAX_MEMORIES
        assert len(m.entities.list("u")) == MAX_ENTITIES
        assert len(m.entities.get("u", "Person 0").attributes) == MAX_ATTRIBUTES
    assert time.perf_counter() - start < 30
    result = LLMExtractor(ScriptedChatModel(default=turn_tool_call(entities=entities, memories=memories))).extract_turn(TURN)
    by_kind = {(d.kind, d.index): d for d in result.dropped}
    assert by_kind[("memory", MAX_MEMORIES)].count == 2_000 - MAX_MEMORIES
    assert "1,950 memories past the limit of 50" in by_kind[("memory", MAX_MEMORIES)].reason
    assert by_kind[("entity", MAX_ENTITIES)].count == 80 - MAX_ENTITIES
    assert by_kind[("attribute", 0)].count == 30


def test_one_huge_memory_is_dropped_and_the_rest_of_the_answer_kept(tmp_path):
    huge = "The user said " + "blah " * 40_000  # 200k characters
    answer = turn_tool_call(
        entities=[entity("Alice", "person", location="Paris")],
        memories=[memory(huge, "fact", 0.9), memory("The user lives in Paris.", "fact", 0.9)],
    )
    model = ScriptedChatModel(default=answer)
    with TieredMemory(tmp_path / "m", inline(), model=model) as m:
        m.after_turn("u", "t", TURN)
        assert m.flush(timeout=60)
        stats = m.admin.stats()
        assert stats["jobs"]["done"] == 1 and stats["jobs"]["failed"] == 0
        assert [e.content for e in m.memories.list("u")] == ["The user lives in Paris."]
        assert m.entities.get("u", "alice").attributes == {"location": "Paris"}
    result = LLMExtractor(ScriptedChatModel(default=answer)).extract_turn(TURN)
    [dropped] = result.dropped
    assert (dropped.kind, dropped.index) == ("memory", 0)
    assert f"the long-term limit is {MAX_CONTENT_CHARS:,}" in dropped.reason


def test_the_dropped_item_is_recorded_on_the_job_and_counted_in_stats(tmp_path):
    huge = "The user said " + "blah " * 40_000  # 200k characters
    answer = turn_tool_call(
        entities=[entity("Alice", "person", location="Paris")],
        memories=[memory("The user lives in Paris.", "fact", 0.9), memory(huge, "fact", 0.9)],
    )
    data = tmp_path / "m"
    clean = turn_tool_call(memories=[memory("The user drinks green tea.", "fact", 0.9)])
    with TieredMemory(data, inline(), model=ScriptedChatModel(script=[answer], default=clean)) as m:
        m.after_turn("u", "t", TURN)
        assert m.flush(timeout=60)
        # The done job keeps what was left out of the answer and why, and none of the
        # answer's text (no copy of it outlives a forget: storage/job_answers.py).
        [job] = m._parts.storage.jobs.rows("done")
        saved = json.loads(job.result)["extraction"]
        assert set(saved) <= {"dropped", "method"} and "Paris" not in job.result
        [dropped] = saved["dropped"]
        assert (dropped["kind"], dropped["index"], dropped["count"]) == ("memory", 1, 1)
        assert f"the long-term limit is {MAX_CONTENT_CHARS:,}" in dropped["reason"]
        assert m._parts.storage.jobs.rows("failed") == []
        counted = m._parts.storage.jobs.dropped_items()
        assert (counted["items"], counted["jobs"]) == (1, 1)
        [recent] = counted["recent"]
        assert recent["key"] == job.key and recent["reason"] == dropped["reason"]
        assert (recent["kind"], recent["index"]) == ("memory", 1)
        # A clean answer adds nothing to the count.
        m.after_turn("u", "t2", TURN)
        assert m.flush(timeout=60)
        assert len(m._parts.storage.jobs.rows("done")) == 2
        assert m._parts.storage.jobs.dropped_items()["items"] == 1
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env["HF_HUB_OFFLINE"] = "1"
    cli = [sys.executable, "-m", "langchain_tiered_memory.cli", "--data-dir", str(data), "stats"]
    shown = subprocess.run([*cli, "--json"], check=False, capture_output=True, text=True, timeout=120, env=env)
    assert shown.returncode == 0, shown.stderr
    stats = json.loads(shown.stdout)
    assert stats["dropped_items"] == 1 and stats["dropped"][0]["reason"] == dropped["reason"]
    text = subprocess.run(cli, check=False, capture_output=True, text=True, timeout=120, env=env)
    assert text.returncode == 0, text.stderr
    assert "dropped items: 1 (" in text.stdout
    assert f"{job.key}  memory #1" in text.stdout and "the long-term limit is" in text.stdout


def test_dropped_items_are_counted_on_either_database(make_memory):
    huge = "The user said " + "blah " * 40_000
    answer = turn_tool_call(memories=[memory(huge, "fact", 0.9), memory("The user lives in Paris.", "fact", 0.9)])
    with make_memory(inline(), model=ScriptedChatModel(default=answer), embeddings=HashingEmbeddings()) as m:
        assert m._parts.storage.jobs.dropped_items() == {"items": 0, "jobs": 0, "recent": []}
        m.after_turn("u", "t", TURN)
        assert m.flush(timeout=60)
        counted = m._parts.storage.jobs.dropped_items()
        assert (counted["items"], counted["jobs"]) == (1, 1)
        assert [(d["kind"], d["index"]) for d in counted["recent"]] == [("memory", 0)]
        assert [e.content for e in m.memories.list("u")] == ["The user lives in Paris."]


def test_memory_content_over_the_token_limit_is_dropped():
    dense = "".join(chr(0x4E00 + (i * 7919) % 20_000) for i in range(12_000))  # 12k chars, ~28k tokens
    assert len(dense) < MAX_CONTENT_CHARS
    answer = turn_tool_call(memories=[memory(dense), memory("The user likes tea.")])
    result = LLMExtractor(ScriptedChatModel(default=answer)).extract_turn(TURN)
    assert [m.content for m in result.memories] == ["The user likes tea."]
    assert "tokens long; the long-term limit is 8,000" in result.dropped[0].reason


def test_an_empty_compression_answer_keeps_the_job_and_bounds_the_summary(tmp_path):
    long = "Alice said many things about her trip. " * 300
    model = ScriptedChatModel(default=lambda msgs: (
        "" if "You compress the running summary" in msgs[0].text else turn_tool_call(summary=long)))
    config = inline(max_tokens=400, system_reserve=20, output_reserve=20, summary_max_tokens=60)
    with TieredMemory(tmp_path / "m", config, model=model) as m:
        for i in range(25):
            m.after_turn("u", "t", [HumanMessage(f"message {i} " + "blah " * 12)])
        assert m.flush(timeout=60)
        assert m.admin.stats()["jobs"]["failed"] == 0
        summary = m.threads.summary("u", "t")
        assert summary and "Alice" in summary
        assert m.admin.counter.count_text(summary) <= 60


# --------------------------------------------------------------------------- hung calls


HUNG_SCRIPT = """
import json, sys, threading, time
sys.path.insert(0, {tests!r})
from langchain_core.messages import AIMessage, HumanMessage
from scripted_model import Hang, ScriptedChatModel
from langchain_tiered_memory import MemoryConfig, TieredMemory
from langchain_tiered_memory.errors import ExtractionTimeoutError
from langchain_tiered_memory.extraction import LLMExtractor

base = threading.active_count()
peak = base
model = ScriptedChatModel(default=Hang(3600))
extractor = LLMExtractor(model, timeout=0.2)
outcomes = []
for i in range(20):
    start = time.monotonic()
    try:
        extractor.extract_turn([HumanMessage("hi")])
        outcomes.append("answered")
    except ExtractionTimeoutError as exc:
        outcomes.append(["timeout" if "did not answer" in str(exc) else "fail-fast", round(time.monotonic() - start, 2)])
    peak = max(peak, threading.active_count())
# The same through TieredMemory: 20 turns whose jobs hit the hung model.
config = MemoryConfig(job_mode="inline", llm_timeout_seconds=0.2, job_backoff_seconds=0.0, job_max_attempts=2,
                      job_retry_horizon_seconds=0)  # timeouts fail as attempts, not waited out
with TieredMemory({data!r}, config, model=ScriptedChatModel(default=Hang(3600))) as memory:
    for i in range(20):
        memory.after_turn("u", "t", [HumanMessage(f"turn {{i}}"), AIMessage("ok")])
        peak = max(peak, threading.active_count())
    failed = memory.admin.stats()["jobs"]["failed"]
print(json.dumps({{"base": base, "peak": peak, "outcomes": outcomes, "failed": failed, "done_at": time.time()}}), flush=True)
"""


def test_hung_calls_neither_pile_up_threads_nor_keep_the_process_alive(tmp_path):
    script = HUNG_SCRIPT.format(tests=str(TESTS), data=str(tmp_path / "m"))
    start = time.time()
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
        cwd=ROOT, env={**__import__("os").environ, "PYTHONPATH": str(ROOT)},
    )
    exited = time.time()
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert exited - report["done_at"] < 3.0  # exits right after its code, hung threads or not
    outcomes = report["outcomes"]
    assert [o[0] for o in outcomes[:MAX_HUNG_CALLS]] == ["timeout"] * MAX_HUNG_CALLS
    assert all(o[0] == "fail-fast" and o[1] < 0.1 for o in outcomes[MAX_HUNG_CALLS:])
    # One extractor's model and one memory's model: at most MAX_HUNG_CALLS hung threads each.
    assert report["peak"] - report["base"] <= 2 * MAX_HUNG_CALLS + 2, report
    assert report["failed"] == 20
    assert exited - start < 60


def test_the_provider_request_timeout_ends_an_abandoned_openai_call(tmp_path):
    """A real ChatOpenAI against a server that accepts and never answers."""
    import socket
    import threading

    from langchain_openai import ChatOpenAI

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held = []

    def accept():
        while True:
            try:
                held.append(server.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    port = server.getsockname()[1]
    model = ChatOpenAI(model="hangs", base_url=f"http://127.0.0.1:{port}/v1", api_key="k", max_retries=0)
    extractor = LLMExtractor(model, timeout=0.5, method="text")
    try:
        with pytest.raises(ExtractionTimeoutError):
            extractor.extract_turn(TURN)
        key = extractor._key
        assert hung_calls(key) == 1
        deadline = time.monotonic() + 5
        while hung_calls(key) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert hung_calls(key) == 0  # the SDK's own timeout ended the abandoned request
    finally:
        server.close()
        for conn in held:
            conn.close()


# --------------------------------------------------------------------------- structured-output methods


def bad_request(message: str) -> openai.BadRequestError:
    """What the OpenAI SDK raises for an HTTP 400 from the server."""
    request = httpx.Request("POST", "http://127.0.0.1:8080/v1/chat/completions")
    return openai.BadRequestError(message, response=httpx.Response(400, request=request), body={"error": {"message": message}})


class ServedModel(ScriptedChatModel):
    """A chat model shaped like ChatOpenAI on an OpenAI-compatible server.

    ``with_structured_output`` sends a ``response_format`` (json_schema) or binds the tool
    with an object ``tool_choice`` (function_calling), as langchain-openai does; ``refuses``
    lists what the server answers with HTTP 400.
    """

    model_name: str = "served"
    openai_api_base: str = "http://127.0.0.1:8080/v1"
    refuses: tuple[str, ...] = ()
    sent: list[dict] = []

    def with_structured_output(self, schema, *, include_raw=False, method="function_calling", strict=None, **kwargs):
        name = schema["name"]
        if method == "json_schema":
            fmt = {"type": "json_schema", "json_schema": {"name": name, "schema": schema["parameters"], "strict": strict}}
            llm = self.bind(response_format=fmt)
        elif method == "function_calling":
            llm = self.bind_tools([schema], tool_choice={"type": "function", "function": {"name": name}})
        else:
            raise ValueError(f"Unrecognized method argument: {method}")
        return llm | JsonOutputParser()

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self.sent.append(kwargs)
        if "response_format" in kwargs and "json_schema" in self.refuses:
            with self._lock:
                self.calls += 1
            raise bad_request("'response_format' of type 'json_schema' is not supported")
        if isinstance(kwargs.get("tool_choice"), dict) and "tool_choice" in self.refuses:
            with self._lock:
                self.calls += 1
            raise bad_request("tool_choice must be one of 'none', 'auto', 'required'")
        return super()._generate(messages, stop, run_manager, **kwargs)


PAYLOAD = turn_payload(
    entities=[{"name": "Alice", "type": "person", "attributes": [{"key": "location", "value": "Paris"}]}],
    memories=[memory("The user lives in Paris.", "fact", 0.8)],
)


def test_an_openai_like_server_gets_strict_json_schema_in_one_call():
    model = ServedModel(model_name="openai-like", default=json.dumps(PAYLOAD), sent=[])
    extractor = LLMExtractor(model)
    result = extractor.extract_turn(TURN)
    assert result.method == "json_schema" and model.calls == 1
    assert result.entities[0].attributes == {"location": "Paris"}
    fmt = model.sent[0]["response_format"]["json_schema"]
    assert fmt["name"] == "TurnExtraction" and fmt["strict"] is True
    assert fmt["schema"]["additionalProperties"] is False
    assert "tools" not in model.sent[0]


def test_a_llama_cpp_like_server_that_refuses_falls_back_and_remembers():
    text_answer = json.dumps(PAYLOAD)
    model = ServedModel(model_name="llama-refuses", refuses=("json_schema", "tool_choice"), default=text_answer, sent=[])
    extractor = LLMExtractor(model)
    result = extractor.extract_turn(TURN)
    assert result.method == "text" and model.calls == 3
    assert [m.content for m in result.memories] == ["The user lives in Paris."]
    assert "Answer with ONE JSON object" in model.inputs[-1][0].content
    # Remembered per model: the next call, and a new extractor over the same server and
    # model, go straight to text.
    extractor.extract_turn(TURN)
    assert model.calls == 4
    twin = ServedModel(model_name="llama-refuses", refuses=("json_schema", "tool_choice"), default=text_answer, sent=[])
    assert LLMExtractor(twin).method == "text"
    LLMExtractor(twin).extract_turn(TURN)
    assert twin.calls == 1
    # The episode call uses what the turn learned.
    episode = json.dumps({"summary": "Alice said where she lives.", "decisions": [], "outcome": "", "topics": []})
    model.default = episode
    assert extractor.extract_episode(TURN).method == "text"
    assert model.calls == 5


def test_a_llama_cpp_like_server_writing_the_tool_call_as_text():
    as_text = "<tool_call>\n" + json.dumps({"name": "TurnExtraction", "arguments": PAYLOAD}) + "\n</tool_call>"
    model = ServedModel(model_name="llama-writes", refuses=("json_schema",), default=as_text, sent=[])
    extractor = LLMExtractor(model)
    result = extractor.extract_turn(TURN)
    assert result.method == "text" and model.calls == 2  # json_schema refused, tool call read from the text
    assert isinstance(model.sent[1]["tool_choice"], dict)
    assert [m.content for m in result.memories] == ["The user lives in Paris."]
    extractor.extract_turn(TURN)
    assert model.calls == 3 and "tools" not in model.sent[2]


def test_a_tool_calling_model_without_response_formats_uses_function_calling():
    model = ScriptedChatModel(default=turn_tool_call(memories=[memory("m")]))
    extractor = LLMExtractor(model)
    assert extractor.method == "function_calling"
    assert extractor.extract_turn(TURN).method == "function_calling" and model.calls == 1


def test_errors_that_are_not_about_the_method_do_not_fall_back():
    model = ServedModel(model_name="flaky", script=[ConnectionError("reset"), json.dumps(PAYLOAD)], sent=[])
    extractor = LLMExtractor(model)
    with pytest.raises(ExtractionError, match="ConnectionError"):
        extractor.extract_turn(TURN)
    assert model.calls == 1
    assert extractor.extract_turn(TURN).method == "json_schema"
    # A malformed tool call is the model's slip: an error, not a switch to text.
    slip = ServedModel(model_name="slips", refuses=("json_schema",), default=tool_call({"entities": "Alice"}), sent=[])
    with pytest.raises(ExtractionError, match="entities must be a list"):
        LLMExtractor(slip).extract_turn(TURN)
    assert slip.calls == 2 and LLMExtractor(slip).method == "json_schema"


def test_results_round_trip_through_the_journal():
    answer = turn_json(memories=[memory("ok"), memory("", "fact")], summary=None)
    result = LLMExtractor(ScriptedChatModel(default=answer, tool_calling=False)).extract_turn(TURN)
    saved = json.loads(json.dumps(result.model_dump(mode="json")))
    assert saved["method"] == "text" and saved["dropped"][0]["kind"] == "memory"
    assert TurnExtraction.model_validate(saved) == result


# --------------------------------------------------------------------------- import structure


def _module_imports(path: Path, package: str) -> set[str]:
    """Modules of the package imported at module level (not in functions or TYPE_CHECKING)."""
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    here = package.rsplit(".", 1)[0] if path.name != "__init__.py" else package
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        if isinstance(node, ast.ImportFrom):
            base = here
            for _ in range(node.level - 1):
                base = base.rsplit(".", 1)[0]
            module = (f"{base}.{node.module}" if node.module else base) if node.level else node.module or ""
            if module.startswith("langchain_tiered_memory"):
                found.add(module)
                found.update(f"{module}.{a.name}" for a in node.names)
    return found


def test_extraction_and_offline_import_no_module_that_imports_them_back():
    pkg = ROOT / "langchain_tiered_memory"
    graph: dict[str, set[str]] = {}
    for folder in ("extraction", "offline"):
        for path in sorted((pkg / folder).glob("*.py")):
            name = f"langchain_tiered_memory.{folder}" + ("" if path.name == "__init__.py" else f".{path.stem}")
            graph[name] = _module_imports(path, name)
            assert len(path.read_text().splitlines()) <= 520, f"{path.name} is over ~500 lines"
    # Importing another package's submodule runs that package's __init__ first: an edge too.
    for name, targets in graph.items():
        parents = {t.rsplit(".", 1)[0] for t in targets}
        ancestors = {name.rsplit(".", k)[0] for k in range(1, name.count("."))}
        graph[name] = {t for t in targets | parents if t in graph and t != name and t not in ancestors}

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for nxt in graph.get(start, ()):
            if nxt == goal or (nxt not in seen and (seen.add(nxt) or reaches(nxt, goal, seen))):
                return True
        return False

    cycles = [name for name in graph if reaches(name, name, set())]
    assert cycles == [], cycles
    offline_deps = {t for n, ts in graph.items() if n.startswith("langchain_tiered_memory.extraction.offline") for t in ts}
    assert {t for t in offline_deps if t.startswith("langchain_tiered_memory.extraction")} <= {
        "langchain_tiered_memory.extraction",
        "langchain_tiered_memory.extraction.schema",
        "langchain_tiered_memory.extraction.arguments",
        "langchain_tiered_memory.extraction.messages",
    }


# --------------------------------------------------------------------------- a real ChatOpenAI


class _StubServer:
    """An OpenAI-compatible chat-completions endpoint that behaves like a given server.

    ``openai`` honours ``response_format``; ``llama-refuses`` answers HTTP 400 to a JSON
    schema and to an object ``tool_choice``; ``llama-writes`` refuses the schema and writes
    a requested tool call as text. Plain requests get the JSON answer as text.
    """

    def __init__(self, behaviour: str, answer: dict) -> None:
        from openai_server import JSONEndpoint

        self.behaviour, self.answer, self.requests = behaviour, answer, []
        self._endpoint = JSONEndpoint(self._answer)
        self.url = self._endpoint.url

    def _answer(self, body: dict) -> tuple[int, dict]:
        self.requests.append(body)
        return self.reply(body)

    def reply(self, body: dict) -> tuple[int, dict]:
        schema = body.get("response_format", {}).get("type") == "json_schema"
        forced_tool = isinstance(body.get("tool_choice"), dict)
        if self.behaviour != "openai" and (schema or (forced_tool and self.behaviour == "llama-refuses")):
            return 400, {"error": {"message": "unsupported request parameter", "type": "invalid_request_error"}}
        content = json.dumps(self.answer)
        if forced_tool:  # llama-writes: the model writes the call instead of making it
            content = "<tool_call>\n" + json.dumps({"name": "TurnExtraction", "arguments": self.answer}) + "\n</tool_call>"
        message = {"role": "assistant", "content": content}
        return 200, {
            "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }

    def close(self) -> None:
        self._endpoint.close()


@pytest.mark.parametrize(
    "behaviour, method, requests",
    [("openai", "json_schema", 1), ("llama-refuses", "text", 3), ("llama-writes", "text", 2)],
)
def test_a_real_chat_openai_gets_the_method_its_server_supports(behaviour, method, requests):
    from langchain_openai import ChatOpenAI

    stub = _StubServer(behaviour, PAYLOAD)
    try:
        model = ChatOpenAI(model=f"stub-{behaviour}", base_url=stub.url, api_key="k", max_retries=0)
        extractor = LLMExtractor(model, timeout=10)
        result = extractor.extract_turn(TURN)
        assert result.method == method and len(stub.requests) == requests
        assert [m.content for m in result.memories] == ["The user lives in Paris."]
        assert result.entities[0].attributes == {"location": "Paris"}
        first = stub.requests[0]["response_format"]["json_schema"]
        assert first["strict"] is True and first["name"] == "TurnExtraction"
        # Remembered for this server and model: one request next time, straight to it.
        LLMExtractor(ChatOpenAI(model=f"stub-{behaviour}", base_url=stub.url, api_key="k", max_retries=0)).extract_turn(TURN)
        assert len(stub.requests) == requests + 1
        last = stub.requests[-1]
        assert ("response_format" in last) == (method == "json_schema") and "tools" not in last
    finally:
        stub.close()
