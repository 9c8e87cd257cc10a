"""A small OpenAI-compatible chat-completions server on 127.0.0.1, for tests over real HTTP.

``FakeOpenAIServer(mode)`` runs ``http.server`` in a thread and answers
``POST /v1/chat/completions`` as a given kind of server would:

- ``"llama.cpp"`` — like llama.cpp's ``llama-server``: an object ``tool_choice`` is refused
  with HTTP 400 ``[json.exception.type_error.302] type must be string, but is object``; a
  ``response_format`` JSON schema is honoured (the answer is JSON of that schema);
- ``"openai"`` — like OpenAI: JSON schemas and forced tool calls are both honoured;
- ``"tools-only"`` — a server without structured outputs (some vLLM/LM Studio setups): a
  JSON-schema ``response_format`` is refused with HTTP 400, tool calls are honoured.

Every mode honours the output cap (``max_completion_tokens``, as ``ChatOpenAI`` sends it, or
``max_tokens``): an answer longer than the cap is cut there and reported with
``finish_reason: "length"``. ``runaway=True`` makes the model loop under a JSON schema, as
SmolLM2-135M does under llama.cpp's grammar: it writes memory after memory until the cap
(or, without one, its 4,096-token context) stops it. A request that asks for JSON in text
(the extractor's last method) is answered with the JSON object in the message text.

Its "model" is a deterministic reader of the prompt, so answers are what a small model would
write about the conversation it was sent: a ``TurnExtraction`` keeps each user sentence as a
memory ("User: …", importance 0.8), "my name is X" as an entity, and (when messages were
evicted) a summary quoting them; an ``EpisodeExtraction`` sums up the user's lines; a plain
chat request gets ``Noted: <the user's text>`` plus what its system prompt recalled. Every
answer reports ``usage`` (prompt tokens = characters / 4 of the request's messages,
completion tokens = characters / 4 of the answer), and :attr:`FakeOpenAIServer.reported`
adds up what was reported, so a test can compare the memory's ledger with the server's.
:attr:`requests` keeps every request body, :attr:`refused` the refused ones, :attr:`answers`
the answered ones' replies.
"""

from __future__ import annotations

import http.server
import json
import re
import threading
from collections.abc import Callable
from typing import Any

TURN = "TurnExtraction"
EPISODE = "EpisodeExtraction"
LLAMA_TOOL_CHOICE_ERROR = "[json.exception.type_error.302] type must be string, but is object"
#: The model's context: without a cap, a looping answer runs until it is full.
CONTEXT_TOKENS = 4096


def _block(text: str, name: str) -> str:
    # The block's own lines (the prompt's prose also names the blocks).
    found = re.search(rf"^<{name}>\n(.*?)\n?^</{name}>$", text, re.S | re.M)
    return found.group(1) if found else ""


def _user_lines(conversation: str) -> list[str]:
    return [line.split(":", 1)[1].strip() for line in conversation.splitlines() if line.startswith("user") and ":" in line]


def turn_answer(prompt: str) -> dict[str, Any]:
    """The ``TurnExtraction`` this server's model writes for an extraction prompt."""
    said = _user_lines(_block(prompt, "conversation"))
    entities = []
    for line in said:
        name = re.search(r"\bmy name is (\w+)", line, re.I)
        if name:
            entities.append({"name": name.group(1), "type": "person",
                             "attributes": [{"key": "relation_to_user", "value": "self"}]})
    memories = [{"content": f"User: {line}", "memory_type": "fact", "importance": 0.8} for line in said]
    evicted = _block(prompt, "evicted_messages")
    summary = None
    if evicted:
        previous = _block(prompt, "current_summary").strip()
        lines = [line.split(":", 1)[1].strip() for line in evicted.splitlines() if ":" in line]
        kept = "" if previous in ("", "(empty)") else previous + " "
        summary = (kept + "Earlier: " + " / ".join(lines))[:600]
    return {"entities": entities, "memories": memories, "summary": summary}


def episode_answer(prompt: str) -> dict[str, Any]:
    """The ``EpisodeExtraction`` this server's model writes for a finished conversation."""
    said = _user_lines(_block(prompt, "conversation"))
    return {
        "summary": "The user talked about: " + "; ".join(said)[:400],
        "decisions": [],
        "outcome": "The conversation ended.",
        "topics": sorted({w.lower() for line in said for w in re.findall(r"[A-Za-z]{5,}", line)})[:8],
    }


def _asks_json_text(messages: list[dict[str, Any]]) -> str | None:
    """The schema a request asks for as JSON in text (the extractor's ``text`` method), if any."""
    system = " ".join(m["content"] for m in messages if m["role"] == "system" and isinstance(m["content"], str))
    if "Answer with ONE JSON object" not in system:
        return None
    return EPISODE if '"decisions"' in system else TURN


def _looping_json(limit: int) -> str:
    """A model stuck in a loop: the same memory again and again, past ``limit`` tokens."""
    item = json.dumps({"content": "The user lives in Lisbon.", "memory_type": "fact", "importance": 0.8})
    return '{"entities": [], "memories": [' + ", ".join([item] * (4 * limit // len(item) + 2))


def chat_answer(messages: list[dict[str, Any]]) -> str:
    """A chat reply: what the user said, and whether memory reached the system prompt."""
    user = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
    system = " ".join(m["content"] for m in messages if m["role"] == "system" and isinstance(m["content"], str))
    recalled = "<memory>" in system
    return f"Noted: {user}" + (" (memory was in my prompt)" if recalled else "")


class JSONEndpoint:
    """``answer(body) -> (status, payload)`` behind ``http.server`` on 127.0.0.1: the JSON
    body of every POST goes to it; a GET lists one model (``/v1/models``). The servers of
    the HTTP tests (this module's, the stubs in ``test_extraction_limits.py``, the xllamacpp
    bridge) differ only in ``answer``."""

    def __init__(self, answer: Callable[[dict[str, Any]], tuple[int, dict[str, Any]]]) -> None:
        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # /v1/models
                self._send(200, {"object": "list", "data": [{"id": "served", "object": "model"}]})

            def do_POST(self) -> None:
                self._send(*answer(json.loads(self.rfile.read(int(self.headers["Content-Length"])))))

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        #: The OpenAI-compatible root (``.../v1``).
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class FakeOpenAIServer:
    """See the module doc. Use as a context manager, or call :meth:`close`."""

    def __init__(self, mode: str = "llama.cpp", *, runaway: bool = False) -> None:
        if mode not in ("llama.cpp", "openai", "tools-only"):
            raise ValueError(f"unknown mode {mode!r}")
        self.mode = mode
        self.runaway = runaway
        self.requests: list[dict[str, Any]] = []
        self.refused: list[dict[str, Any]] = []
        self.answers: list[dict[str, Any]] = []
        self.reported = {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0}
        self._lock = threading.Lock()
        self._endpoint = JSONEndpoint(self.answer)
        #: The OpenAI-compatible root, for ``ChatOpenAI(base_url=...)`` / ``OPENAI_BASE_URL``.
        self.url = self._endpoint.url

    # --- what the server answers -----------------------------------------------------------

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.requests.append(body)
        fmt = body.get("response_format") or {}
        choice = body.get("tool_choice")
        refusal = None
        if isinstance(choice, dict) and self.mode == "llama.cpp":
            refusal = LLAMA_TOOL_CHOICE_ERROR
        elif fmt.get("type") == "json_schema" and self.mode == "tools-only":
            refusal = "response_format of type json_schema is not supported by this server"
        if refusal is not None:
            with self._lock:
                self.refused.append(body)
            return 400, {"error": {"code": 400, "message": refusal, "type": "invalid_request_error"}}
        messages = body["messages"]
        everything = "\n".join(m["content"] for m in messages if isinstance(m.get("content"), str))
        # The model reads the task from the last user message (the system prompt only
        # names the blocks).
        prompt = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
        message: dict[str, Any] = {"role": "assistant", "content": None}
        limit = body.get("max_completion_tokens") or body.get("max_tokens") or CONTEXT_TOKENS
        if fmt.get("type") == "json_schema" and self.runaway:
            message["content"] = _looping_json(limit)
        elif fmt.get("type") == "json_schema":
            name = fmt["json_schema"]["name"]
            message["content"] = json.dumps(self._payload(name, prompt))
        elif _asks_json_text(messages):
            message["content"] = json.dumps(self._payload(_asks_json_text(messages), prompt))
        elif body.get("tools") and choice not in (None, "none"):
            tool = body["tools"][0]["function"]["name"]
            if isinstance(choice, dict):
                tool = choice["function"]["name"]
            message["tool_calls"] = [{
                "id": f"call_{len(self.requests)}", "type": "function",
                "function": {"name": tool, "arguments": json.dumps(self._payload(tool, prompt))},
            }]
        elif "<current_summary>" in prompt and "<conversation>" not in prompt:
            message["content"] = _block(prompt, "current_summary")[:200]  # a compression
        else:
            message["content"] = chat_answer(messages)
        finish = "tool_calls" if "tool_calls" in message else "stop"
        if message["content"] and len(message["content"]) // 4 + 1 > limit:
            message["content"], finish = message["content"][: 4 * (limit - 1)], "length"  # the cap stops it
        produced = message["content"] or json.dumps(message.get("tool_calls"))
        usage = {"prompt_tokens": len(everything) // 4 + 1, "completion_tokens": len(produced) // 4 + 1}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        with self._lock:
            self.reported["calls"] += 1
            self.reported["prompt_tokens"] += usage["prompt_tokens"]
            self.reported["completion_tokens"] += usage["completion_tokens"]
        reply = {
            "id": f"chatcmpl-{len(self.requests)}", "object": "chat.completion", "created": 0,
            "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage,
        }
        with self._lock:
            self.answers.append(reply)
        return 200, reply

    @staticmethod
    def _payload(name: str, prompt: str) -> dict[str, Any]:
        return episode_answer(prompt) if name == EPISODE else turn_answer(prompt)

    # --- what a test reads -----------------------------------------------------------------

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        """Requests for ``"turn"`` or ``"episode"`` extraction, or ``"chat"``."""
        def kind_of(body: dict[str, Any]) -> str:
            in_text = _asks_json_text(body["messages"])
            if in_text:
                return "episode" if in_text == EPISODE else "turn"
            text = json.dumps(body.get("response_format") or body.get("tools") or "")
            if EPISODE in text:
                return "episode"
            if TURN in text:
                return "turn"
            return "chat"

        return [b for b in self.requests if kind_of(b) == kind]

    def close(self) -> None:
        self._endpoint.close()

    def __enter__(self) -> FakeOpenAIServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
