"""The command line's first hour without noise (issue 41, point 5): what a new user meets in
``chat``, ``episodes`` and ``stats`` says what it means, and the offline echo leaves nothing
behind that later turns would recall.

Run as ``tests/test_cli.py`` runs the commands: in a subprocess, on a real data dir prepared
in-process with :class:`TieredMemory`.
"""

import os
import re
import subprocess
import sys

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langchain_tiered_memory import MemoryConfig, TieredMemory

CLI = [sys.executable, "-m", "langchain_tiered_memory.cli"]
ECHO = "offline echo"


def _env():
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    env["HF_HUB_OFFLINE"] = "1"
    return env


def _run(*args, input=""):
    result = subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, timeout=180,
                            input=input, env=_env(), check=False)
    assert result.returncode == 0 and "Traceback" not in result.stderr, (result.stdout, result.stderr)
    return result.stdout


# --- chat: the offline echo is shown, never stored --------------------------------------------


def test_the_offline_echo_is_not_stored_nor_recalled_in_another_thread(tmp_path):
    data = tmp_path / "memory"
    first = _run("--data-dir", data, "chat", "--user", "bob", "--thread", "one",
                 input="My name is Bob and I live in Berlin.\nI like green tea.\n")
    assert first.count("assistant> (offline echo") == 2  # shown to the user as before
    second = _run("--data-dir", data, "chat", "--user", "bob", "--thread", "two", input="Where do I live?\n")
    # What the other thread recalls is what Bob said, not what the echo said back.
    recalled = second.split("I was sent from memory: ")[1].splitlines()[0]
    assert "Berlin" in recalled and ECHO not in recalled
    with TieredMemory(data, MemoryConfig(job_mode="manual")) as m:
        # Every message the user sent is kept; no echo is, in any layer.
        one = [(msg.type, msg.text) for msg in m.threads.messages("bob", "one")]
        assert one == [("system", "You are a helpful assistant."),
                       ("human", "My name is Bob and I live in Berlin."), ("human", "I like green tea.")]
        assert [(msg.type, msg.text) for msg in m.threads.messages("bob", "two")] == [
            ("system", "You are a helpful assistant."), ("human", "Where do I live?")]
        evidence = m.recall("bob", "what did the assistant say? You said offline echo", k=50, peek=True)
        assert evidence and not [e.text for e in evidence if ECHO in e.text or "You said" in e.text]
        assert not [e.content for e in m.memories.list("bob") if ECHO in e.content]
        context = m.before_turn("bob", "two", query="what did you tell me about Berlin?", peek=True)
        assert "Berlin" in context.memory_block and ECHO not in context.memory_block


# --- episodes --query: none matched is not none there ----------------------------------------


@pytest.fixture(scope="module")
def with_an_episode(tmp_path_factory):
    """Erin: one finished session (an episode); Bob: a thread and no episode."""
    path = tmp_path_factory.mktemp("first-hour") / "memory"
    with TieredMemory(path, MemoryConfig(job_mode="inline")) as m:
        m.after_turn("erin", "e1", [HumanMessage("I live in Paris and I am planning a trip to Japan."),
                                    AIMessage("Lovely: April is cherry-blossom season.")])
        assert m.end_session("erin", "e1")
        m.after_turn("bob", "b1", [HumanMessage("Hello there."), AIMessage("Hi Bob.")])
    return path


def test_episodes_with_a_query_that_matches_none_says_so(with_an_episode):
    data = ["--data-dir", with_an_episode, "episodes"]
    none_matched = _run(*data, "--user", "erin", "--query", "quantum chromodynamics on a lattice")
    assert none_matched.splitlines() == [(
        "no episode of user 'erin' matches 'quantum chromodynamics on a lattice' "
        "(without --query, tiered-memory episodes lists the newest)")]
    assert "has no episodes" not in none_matched
    # Still "no episodes" where there are none, with or without a query.
    assert _run(*data, "--user", "bob", "--query", "quantum").strip() == "user 'bob' has no episodes"
    assert _run(*data, "--user", "bob").strip() == "user 'bob' has no episodes"
    assert "thread e1  score" in _run(*data, "--user", "erin", "--query", "trip to Japan")


# --- stats: no empty line, no Python None ----------------------------------------------------


def test_stats_prints_no_empty_value_and_no_none_on_a_fresh_dir_and_after_turns(tmp_path, with_an_episode):
    fresh = tmp_path / "fresh"
    TieredMemory(fresh).close()
    for data in (fresh, with_an_episode):
        out = _run("--data-dir", data, "stats")
        assert "degraded: none" in out, out
        assert not re.search(r"^[\w ]+:[ \t]*$", out, re.MULTILINE), out  # a heading with nothing after it
        assert not re.search(r"\bNone\b", out), out
        assert "held_elsewhere none" in out
