import os
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_openai import ChatOpenAI

from langchain_tiered_memory import TieredMemory, TokenCounterError
from langchain_tiered_memory.tokens import TiktokenCounter, make_counter


@pytest.fixture(scope="module")
def openai():
    return ChatOpenAI(model="gpt-4", api_key="sk-test-not-used")


@pytest.fixture(scope="module")
def counter():
    return TiktokenCounter()


def _samples():
    return [
        SystemMessage("You are a helpful assistant."),
        HumanMessage("Hello there, what's the weather in Paris?"),
        HumanMessage("Bob here", name="bob"),
        AIMessage("It is sunny, 21 °C. ☀️"),
        AIMessage(
            "",
            tool_calls=[
                {"name": "search", "args": {"q": "weather Paris", "units": "metric"}, "id": "call_1"},
                {"name": "clock", "args": {}, "id": "call_2"},
            ],
        ),
        ToolMessage('{"temp": 21, "sky": "clear"}', tool_call_id="call_1"),
        HumanMessage([{"type": "text", "text": "part one"}, {"type": "text", "text": "part two"}]),
        HumanMessage("日本語のテキストと emoji 🎌 mixed"),
        AIMessage(""),
    ]


def test_counts_agree_with_chat_openai_per_message(openai, counter):
    for m in _samples():
        ours = counter.count_message(m) + counter.overhead
        theirs = openai.get_num_tokens_from_messages([m])
        assert abs(ours - theirs) <= 1, (m, ours, theirs)


def test_whole_request_agrees_with_chat_openai(openai, counter):
    msgs = _samples()
    assert abs(counter.count_messages(msgs) - openai.get_num_tokens_from_messages(msgs)) <= len(msgs)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=300), kind=st.sampled_from(["human", "ai", "system"]))
def test_counts_agree_on_arbitrary_text(openai, counter, text, kind):
    m = {"human": HumanMessage, "ai": AIMessage, "system": SystemMessage}[kind](text)
    assert abs(counter.count_message(m) + 3 - openai.get_num_tokens_from_messages([m])) <= 1


_PIECES = list("ab Z9.,!?'#-*()\t\r\xa0\u2028é日🎌") + ["'s", " \n", ".\n", "<|endoftext|>", "word", "  "]
_LINES = st.lists(st.lists(st.sampled_from(_PIECES), max_size=40).map("".join), min_size=2, max_size=60)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=_LINES, joint=st.sampled_from(["\n", "\n\n", " \n", ".\n\n", "\r\n"]))
@example(lines=["x" * 600, "- a line.", "", "  indented", "y" * 600], joint="\n\n")
@example(lines=["word " * 300 + "end.", "next line", "\ud800 lone" * 200], joint="\n")  # long lines: by digest
def test_a_long_text_counted_line_by_line_counts_exactly_what_tiktoken_counts(counter, lines, joint):
    text = joint.join(lines)
    if len(text) <= 1_000:
        text = (text + "\n") * (1_001 // (len(text) + 1) + 1)  # long: counted by its lines
    truth = len(counter._enc.encode(text, disallowed_special=()))
    assert counter.count_text(text) == truth
    assert counter.count_text(text) == truth  # again, from the cached lines


def test_offline_without_any_user_setting(tmp_path):
    """A fresh process with no TIKTOKEN_CACHE_DIR and an empty home still counts tokens."""
    env = {k: v for k, v in os.environ.items() if k not in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR")}
    env["HOME"] = str(tmp_path)
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    # Any attempt to reach the network fails fast instead of hanging.
    env["HTTPS_PROXY"] = env["HTTP_PROXY"] = "http://127.0.0.1:9"
    code = (
        "import tiktoken\n"
        "from langchain_tiered_memory.tokens import TiktokenCounter\n"
        "print(TiktokenCounter().count_text('hello world'))\n"
        "print(len(tiktoken.get_encoding('cl100k_base').encode('hello world')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["2", "2"]
    assert list((tmp_path / "cache" / "langchain-tiered-memory" / "tiktoken").iterdir())


def test_truncate_middle_keeps_both_ends(counter):
    text = "BEGIN " + "filler words here " * 500 + " END"
    cut = counter.truncate_middle(text, 40, "[cut]")
    assert cut.startswith("BEGIN") and cut.endswith("END") and "[cut]" in cut
    assert counter.count_text(cut.replace("[cut]", "")) <= 40


@given(st.text(st.characters(blacklist_characters="|"), min_size=1, max_size=200), st.integers(0, 50))
@example("\ud8000", 1)  # a lone surrogate: the tokenizer reads it as U+FFFD
@example("ab\udfff cd efg hij", 2)
@settings(max_examples=80, deadline=None)
def test_truncate_text_never_exceeds(text, n):
    c = TiktokenCounter()
    cut = c.truncate_text(text, n)
    assert c.count_text(cut) <= n
    assert text.startswith(cut)
    middle = c.truncate_middle(text, n, "|")
    head, _, tail = middle.partition("|") if c.count_text(text) > n else (text, "", "")
    assert text.startswith(head) and text.endswith(tail)
    assert c.count_text(head) + c.count_text(tail) <= n + 1


def test_a_callable_or_a_model_can_count(tmp_path):
    words = lambda msgs: sum(len(m.text.split()) for m in msgs)  # noqa: E731
    c = make_counter(words)
    assert c.count_message(HumanMessage("one two three")) == 3 and c.overhead == 0
    model = ChatOpenAI(model="gpt-4", api_key="sk-test-not-used")
    mc = make_counter(model)
    assert mc.overhead == 3
    assert mc.count_message(HumanMessage("hello world")) == TiktokenCounter().count_message(HumanMessage("hello world"))
    with TieredMemory(tmp_path / "m", token_counter=words) as m:
        m.after_turn("u", "t", [HumanMessage("one two three four")])
        assert m.before_turn("u", "t").token_usage["window"] == 4


@pytest.mark.parametrize("bad", [lambda msgs: -1, lambda msgs: "3", lambda msgs: 1.5, lambda msgs: 1 / 0])
def test_a_broken_counter_is_our_error(bad):
    with pytest.raises(TokenCounterError):
        make_counter(bad)


def test_not_a_counter():
    with pytest.raises(TokenCounterError):
        make_counter(42)  # type: ignore[arg-type]
