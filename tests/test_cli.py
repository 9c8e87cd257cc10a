"""``tiered-memory``: every command run as a user runs it, in a subprocess, on a real data dir.

Data directories are prepared in-process with :class:`TieredMemory` (faster than driving
them through the CLI); the commands are then checked from their output and, where they
write, from what the memory holds afterwards.
"""

import io
import json
import os
import pty
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from langchain_tiered_memory import InvalidInputError, MemoryConfig, TieredMemory
from langchain_tiered_memory.embeddings import HashingEmbeddings
from langchain_tiered_memory.ops.portability import FORMAT, FORMAT_VERSION, export_jsonl, read_jsonl

sys.path.insert(0, str(Path(__file__).parent))
from scripted_model import ScriptedChatModel, wrong_types_tool_call  # noqa: E402

CLI = [sys.executable, "-m", "langchain_tiered_memory.cli"]
# The small window of the prepared memory: a short conversation evicts into a summary.
SMALL = {"max_tokens": 400, "system_reserve": 50, "output_reserve": 50, "summary_max_tokens": 80}
TURNS = [
    ("My name is Alice, I live in Paris and I prefer green tea.",
     "Nice to meet you, Alice. Paris has lovely tea rooms; Mariage Frères in the Marais is a classic."),
    ("I am allergic to peanuts.",
     "Noted: no peanuts. I will flag dishes with peanut oil or satay sauce whenever we talk about food."),
    ("I'm planning a trip to Japan in April with a budget of 3000 euros.",
     "April is cherry-blossom season: book early, hotels fill up fast and prices rise around Golden Week."),
    ("I would like to see Kyoto temples and Tokyo museums, quiet places mostly.",
     "Stay in Higashiyama in Kyoto and Yanaka in Tokyo: old streets, small shrines and early nights."),
    ("Book trains after 10 am, I hate crowded morning trains.",
     "Transfers after 10 am it is; the commuter rush is over by then and reserved seats are easy to get."),
    ("What should I pack for the weather there in spring?",
     "Layers for 10 to 20 degrees, a light rain jacket, and comfortable shoes for long walks between temples."),
]


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env["HF_HUB_OFFLINE"] = "1"
    env.update(extra)
    return env


def _run(*args, input=None, env=None):
    return subprocess.run(
        [*CLI, *map(str, args)], capture_output=True, text=True, timeout=180,
        input=input if input is not None else "", env=env or _env(),
    )


def _run_all(commands):
    """Run several cheap commands at once (no model load); results in order."""
    procs = [
        subprocess.Popen([*CLI, *map(str, c)], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=_env())
        for c in commands
    ]
    out = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=180)
        out.append(subprocess.CompletedProcess(p.args, p.returncode, stdout, stderr))
    return out


def _one_error_line(result, code=1):
    assert result.returncode == code, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tiered-memory: error: "), result.stderr
    return lines[0]


def _prepare(path: Path) -> Path:
    """Alice: an evicting thread with summary, entities, memories, an episode, a store item
    and a second thread; Carol: one turn whose extraction failed for good."""
    with TieredMemory(path, MemoryConfig(**SMALL, job_mode="inline")) as m:
        m.after_turn("alice", "t1", [SystemMessage("You are a helpful travel assistant.")])
        for question, answer in TURNS:
            m.before_turn("alice", "t1")
            m.after_turn("alice", "t1", [HumanMessage(question), AIMessage(answer)])
        m.end_session("alice", "t1")
        m.memories.remember("alice", "Alice's favourite museum is the Louvre.", "preference", 0.9, {"source": "test"})
        m.after_turn("alice", "t2", [HumanMessage("I moved to Lyon last month."), AIMessage("Lyon it is.")])
        m.store.put(("prefs", "alice"), "theme", {"color": "dark"})
        assert m.threads.summary("alice", "t1")  # the fixture evicts, as the inspect test needs
    model = ScriptedChatModel(script=[], default=wrong_types_tool_call())
    with TieredMemory(path, MemoryConfig(job_mode="inline", job_max_attempts=1), model=model) as m:
        m.after_turn("carol", "c1", [HumanMessage("hello"), AIMessage("hi")])
    return path


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    """A shared memory for the commands that only read."""
    return _prepare(tmp_path_factory.mktemp("cli") / "memory")


@pytest.fixture
def fresh(prepared, tmp_path):
    """A memory of its own, for a command that writes: a copy of the prepared one (closed
    files, so a plain copy is a consistent one)."""
    return Path(shutil.copytree(prepared, tmp_path / "memory"))


# --- demo, help, argument and data-dir errors -----------------------------------------


def test_demo_runs_offline_and_shows_the_accounting(tmp_path):
    env = _env(XDG_CACHE_HOME=str(tmp_path / "cache"), HTTPS_PROXY="http://127.0.0.1:9", HTTP_PROXY="http://127.0.0.1:9")
    env.pop("TIKTOKEN_CACHE_DIR", None)
    out = _run("demo", "--data-dir", tmp_path / "m", env=env)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "what the model would be sent now" in text and "token accounting" in text
    evicted = int(text.split("older messages left the window")[0].split()[-1])
    assert evicted > 0
    total_line = next(line for line in text.splitlines() if line.strip().startswith("total"))
    total, budget = int(total_line.split()[1]), int(total_line.split()[3])
    assert total <= budget
    assert (tmp_path / "m" / "memory.db").exists()
    # A second run in the same directory starts a new thread and keeps the old one.
    again = _run("--data-dir", tmp_path / "m", "demo", env=env)
    assert "demo-2" in again.stdout
    with TieredMemory(tmp_path / "m") as m:
        assert [t.thread_id for t in m.threads.list("alice")] == ["demo-2", "demo-1"]


def test_no_command_prints_help():
    out = _run()
    assert out.returncode == 2
    for command in ("demo", "chat", "inspect", "search", "entities", "episodes", "forget", "export",
                    "import", "stats", "reindex"):
        assert command in out.stdout


def test_bad_arguments_are_usage_errors_without_traceback(tmp_path):
    results = _run_all([
        ["search", "--user", "alice"],                      # no query
        ["search", "tea", "--user", "alice", "-k", "0"],
        ["episodes", "--user", "alice", "--since", "last tuesday"],
        ["forget", "--memory", "0b5f2e6e-3c4b-4a8e-9f59-1d2f3a4b5c6d"],  # a memory needs its user
        ["forget"],
    ])
    for result in results:
        assert result.returncode == 2, result
        assert "Traceback" not in result.stderr and "usage:" in result.stderr
    assert "whole number" in results[1].stderr or "positive" in results[1].stderr
    assert "ISO date" in results[2].stderr
    assert "--memory and --entity take --user" in results[3].stderr
    assert "say what to forget" in results[4].stderr


def test_commands_that_read_refuse_a_missing_data_dir_and_create_nothing(tmp_path):
    missing = tmp_path / "nowhere"
    commands = [
        ["inspect", "--user", "a", "--thread", "t"], ["search", "tea", "--user", "a"],
        ["entities", "--user", "a"], ["episodes", "--user", "a"], ["stats"], ["export", "--user", "a"],
        ["forget", "--user", "a", "--yes"],
    ]
    for command, result in zip(commands, _run_all([["--data-dir", missing, *c] for c in commands])):
        line = _one_error_line(result)
        assert f"no memory at {missing}; run `tiered-memory demo` or pass --data-dir" in line, command
    assert not missing.exists()


def test_a_corrupt_database_is_one_line_and_left_untouched(tmp_path):
    (tmp_path / "m").mkdir()
    garbage = b"garbage" * 10
    (tmp_path / "m" / "memory.db").write_bytes(garbage)
    for result in _run_all([["demo", "--data-dir", tmp_path / "m"], ["stats", "--data-dir", tmp_path / "m"]]):
        line = _one_error_line(result)
        assert "is not a SQLite database" in line and "left untouched" in line
    assert (tmp_path / "m" / "memory.db").read_bytes() == garbage


# --- reading ----------------------------------------------------------------------------


def test_inspect_shows_each_section_and_message_with_token_counts(prepared):
    args = ["--data-dir", prepared, "inspect", "--user", "alice", "--thread", "t1", "--max-tokens",
            SMALL["max_tokens"], "--system-reserve", SMALL["system_reserve"], "--output-reserve", SMALL["output_reserve"]]
    text, data = _run(*args), _run(*args, "--json")
    assert text.returncode == 0 and data.returncode == 0, text.stderr + data.stderr
    view = json.loads(data.stdout)
    usage = view["token_usage"]
    assert view["total"] == sum(usage.values()) <= view["budget"] == SMALL["max_tokens"] - SMALL["output_reserve"]
    assert view["evicted"] > 0 and "summary" in usage
    assert view["system"]["text"] == "You are a helpful travel assistant."
    for section in view["sections"]:
        assert usage[section["name"]] == section["tokens"] > 0 and section["text"]
    # The window is the newest messages of the log, each with its tokens.
    with TieredMemory(prepared) as m:
        log = [msg.text for msg in m.threads.messages("alice", "t1")]
    assert [w["text"] for w in view["window"]] == log[-len(view["window"]):]
    assert sum(w["tokens"] for w in view["window"]) == usage["window"]
    assert len(view["messages"]) == 1 + 1 + len(view["window"])  # system, memory block, window
    out = text.stdout
    assert f"[system] {usage['system']} tokens" in out
    for section in view["sections"]:
        assert f"  {section['name']}: {section['tokens']} tokens" in out
    assert f"[window] {len(view['window'])} messages, {usage['window']} tokens; {view['evicted']} older" in out
    assert f"ai     {view['window'][-1]['tokens']:>6}  {view['window'][-1]['text']}" in out
    assert "\ntotal " in out and f"of {view['budget']}" in out


def test_search_ranks_memories_and_explains_scores(prepared):
    text = _run("--data-dir", prepared, "search", "which museum does Alice like", "--user", "alice", "--explain")
    data = _run("--data-dir", prepared, "search", "which museum does Alice like", "--user", "alice", "--json", "-k", 2)
    assert text.returncode == 0 and data.returncode == 0, text.stderr + data.stderr
    first = text.stdout.splitlines()[0]
    assert first.startswith("1. ") and "[preference, importance" in first and "Louvre" in first
    assert "score = relevance" in text.stdout and "decay" in text.stdout and "cosine" in text.stdout
    hits = json.loads(data.stdout)
    assert 1 <= len(hits) <= 2 and "Louvre" in hits[0]["entry"]["content"]
    assert hits[0]["entry"]["metadata"] == {"source": "test"} and hits[0]["parts"] is None


def test_entities_episodes_and_threads(prepared):
    entities, one, episodes, threads = (
        _run("--data-dir", prepared, "entities", "--user", "alice"),
        _run("--data-dir", prepared, "entities", "--user", "alice", "--name", "ALICE", "--json"),
        _run("--data-dir", prepared, "episodes", "--user", "alice", "--json"),
        _run("--data-dir", prepared, "threads", "--user", "alice"),
    )
    for result in (entities, one, episodes, threads):
        assert result.returncode == 0, result.stderr
    assert "Alice (person)" in entities.stdout and "    allergies: peanuts" in entities.stdout
    alice = json.loads(one.stdout)
    assert alice["name"] == "Alice" and alice["attributes"]["location"] == "Lyon"
    # The history keeps the superseded value and when it was superseded.
    paris = [v for v in alice["history"]["location"] if v["value"] == "Paris"]
    assert paris and paris[0]["superseded_at"] and paris[0]["source_thread"] == "t1"
    eps = json.loads(episodes.stdout)
    assert len(eps) == 1 and eps[0]["thread_id"] == "t1" and "Alice" in eps[0]["summary"]
    assert [line.split()[0] for line in threads.stdout.splitlines()] == ["t2", "t1"]
    missing = _run("--data-dir", prepared, "entities", "--user", "alice", "--name", "Zed")
    assert "no entity named 'Zed'" in _one_error_line(missing)


def test_stats_shows_counts_disk_size_queue_and_failed_jobs(prepared):
    text, data = _run("--data-dir", prepared, "stats"), _run("--data-dir", prepared, "stats", "--json")
    assert text.returncode == 0 and data.returncode == 0, text.stderr + data.stderr
    stats = json.loads(data.stdout)
    assert stats["users"] == 2 and stats["threads"] == 3
    assert stats["jobs"]["failed"] == 1 and stats["jobs"]["pending"] == 0
    assert 0 < stats["db_bytes"] <= stats["disk_bytes"]
    assert "ExtractionError" in stats["failed_jobs"][0]["reason"]
    out = text.stdout
    assert f"{stats['messages']} messages" in out and "disk: " in out and "memory.db" in out
    assert "1 failed" in out and "failed jobs (1" in out and "ExtractionError" in out


def test_jobs_list_names_each_job_in_words_and_json_keeps_the_raw_key(prepared):
    text, data = _run_all([("--data-dir", prepared, "jobs", "list", "--limit", "100"),
                           ("--data-dir", prepared, "jobs", "list", "--limit", "100", "--json")])
    assert text.returncode == 0 and data.returncode == 0, text.stderr + data.stderr
    jobs = json.loads(data.stdout)
    lines = text.stdout.splitlines()
    assert len(jobs) == len(lines) - sum(line.startswith("      ") for line in lines) > 0
    kinds = {"extract": "extraction", "episode": "episode"}
    for job in jobs:
        key = job["key"]  # the journal's own key, e.g. extract:2:{"through_seq": 27}
        kind, thread_key, payload = key.split(":", 2)
        assert kind == job["kind"] and thread_key.isdigit()
        through = json.loads(payload)["through_seq" if kind == "extract" else "last_seq"]
        label = f"{kinds[kind]} · thread {job['thread_id']} · through message {through}"
        assert any(line.startswith(f"{label}  {job['status']}  user {job['user_id']}  ") for line in lines), (
            label, text.stdout)
        assert key not in text.stdout and payload not in text.stdout
    assert not any("{" in line or "through_seq" in line for line in lines if not line.startswith(" "))
    # Carol's extraction failed for good: shown in words, its reason under it.
    assert any(line.startswith("extraction · thread c1 · through message 1  failed  user carol  1 attempt, ")
               for line in lines), text.stdout


# --- forgetting -------------------------------------------------------------------------


def test_forget_without_a_terminal_needs_yes_and_deletes_nothing(fresh):
    line = _one_error_line(_run("--data-dir", fresh, "forget", "--user", "alice"))
    assert "pass --yes" in line
    with TieredMemory(fresh) as m:
        assert len(m.threads.list("alice")) == 2


def test_forget_asks_on_a_terminal_and_no_keeps_everything(fresh):
    main, child = pty.openpty()
    proc = subprocess.Popen([*CLI, "--data-dir", str(fresh), "forget", "--thread", "t1"], stdin=child,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
    os.close(child)
    os.write(main, b"n\n")
    stdout, stderr = proc.communicate(timeout=180)
    os.close(main)
    assert "Forget thread 't1' and everything learned in it? This cannot be undone. [y/N]" in stderr
    assert proc.returncode == 1 and "nothing was forgotten" in stderr and "Traceback" not in stderr
    with TieredMemory(fresh) as m:
        assert m.threads.messages("alice", "t1")


def test_forget_with_yes_deletes_and_prints_counts(fresh):
    with TieredMemory(fresh) as m:
        memory_id = next(e.id for e in m.memories.list("alice") if "Louvre" in e.content)
        n_messages = len(m.threads.messages("alice", "t1"))
        assert m.entities.get("alice", "Paris") is not None
    one = _run("--data-dir", fresh, "forget", "--user", "alice", "--memory", memory_id, "--yes", "--json")
    entity = _run("--data-dir", fresh, "forget", "--user", "alice", "--entity", "paris", "--yes", "--json")
    thread = _run("--data-dir", fresh, "forget", "--thread", "t1", "--yes")
    for result in (one, entity, thread):
        assert result.returncode == 0, result.stderr
    scrubbed = {"job_answers_scrubbed": 0, "wal_scrubbed": True}  # what the forget scrubbed after
    assert json.loads(one.stdout) == {"memories": 1, **scrubbed}
    assert json.loads(entity.stdout) == {"entities": 1, **scrubbed}
    assert thread.stdout.startswith("forgot 1 threads, ") and f"{n_messages} messages" in thread.stdout
    assert "wal scrubbed" not in thread.stdout  # a note of the scrub, not a count of what went
    with TieredMemory(fresh) as m:
        assert m.threads.messages("alice", "t1") == [] and m.episodes.search("alice") == []
        assert not any("Louvre" in e.content for e in m.memories.list("alice"))
        assert m.entities.get("alice", "Paris") is None
        assert m.threads.messages("alice", "t2")  # the other thread stays
    user = _run("--data-dir", fresh, "forget", "--user", "alice", "--yes")
    assert user.returncode == 0 and "store items" in user.stdout, user.stderr
    with TieredMemory(fresh) as m:
        assert m.threads.list("alice") == [] and m.entities.list("alice") == [] and m.memories.list("alice") == []
        assert m.store.get(("prefs", "alice"), "theme") is None
        assert m.threads.list("carol")  # another user is untouched


# --- export and import ------------------------------------------------------------------


def _snapshot(m: TieredMemory, user: str) -> dict:
    """What a user can read back through the public API (recall counters aside)."""
    return {
        "threads": {t.thread_id: [msg.model_dump() for msg in m.threads.messages(user, t.thread_id)] for t in m.threads.list(user)},
        "summaries": {t.thread_id: m.threads.summary(user, t.thread_id) for t in m.threads.list(user)},
        "entities": [m.entities.get(user, e.name) for e in m.entities.list(user)],
        "memories": sorted(
            (e.model_dump(exclude={"last_accessed", "access_count", "importance"}) for e in m.memories.list(user)),
            key=lambda d: d["id"],
        ),
        "episodes": [h.episode for h in m.episodes.search(user)],
        "store": m.store.get(("prefs", user), "theme").value,
    }


def test_export_then_import_restores_every_layer(fresh, tmp_path):
    exported = _run("--data-dir", fresh, "export", "--user", "alice")
    assert exported.returncode == 0, exported.stderr
    assert "exported user 'alice' to stdout: 2 threads" in exported.stderr
    lines = [json.loads(line) for line in exported.stdout.splitlines()]
    assert lines[0]["type"] == "header" and lines[0]["format"] == FORMAT and lines[0]["version"] == FORMAT_VERSION
    kinds = {line["type"] for line in lines}
    assert kinds == {"header", "thread", "message", "summary", "entity", "memory", "episode", "store_item"}
    assert not any("vector" in key for line in lines for key in line if key != "indexed")
    assert not any(line.get("user_id") == "carol" for line in lines)
    backup = tmp_path / "alice.jsonl"
    backup.write_text(exported.stdout, encoding="utf-8")

    target = tmp_path / "restored"
    imported = _run("--data-dir", target, "import", backup, "--json")
    assert imported.returncode == 0, imported.stderr
    result = json.loads(imported.stdout)
    assert result["user_id"] == "alice" and result["counts"]["threads"] == 2 and result["counts"]["memories"] >= 2
    with TieredMemory(fresh) as before, TieredMemory(target) as after:
        original, restored = _snapshot(before, "alice"), _snapshot(after, "alice")
        assert restored == original
        hits = after.memories.search("alice", "which museum does Alice like", k=1)
        assert hits and "Louvre" in hits[0].entry.content
        # Importance and recall counters come back as they were exported.
        exported_memories = {line["id"]: line for line in lines if line["type"] == "memory"}
        louvre = exported_memories[hits[0].entry.id]
        assert hits[0].entry.access_count == louvre["access_count"] + 1
        # The restored thread is live: the next turn continues it.
        after.after_turn("alice", "t2", [HumanMessage("And I work as a nurse.")])
        assert after.before_turn("alice", "t2").window[-1].text == "And I work as a nurse."
        assert after.admin.stats()["jobs"]["failed"] == 0

    again = _run("--data-dir", target, "import", backup)
    assert "already has" in _one_error_line(again) and "import into another data dir" in _one_error_line(again)


def test_import_refuses_another_format_version_and_malformed_lines(tmp_path):
    header = {"type": "header", "format": FORMAT, "version": FORMAT_VERSION + 1, "user_id": "a",
              "exported_at": "2026-01-01T00:00:00+00:00"}
    newer = tmp_path / "newer.jsonl"
    newer.write_text(json.dumps(header) + "\n")
    broken = tmp_path / "broken.jsonl"
    header["version"] = FORMAT_VERSION
    thread = {"type": "thread", "thread_id": "t", "created_at": "2026-01-01T00:00:00+00:00",
              "updated_at": "2026-01-01T00:00:00+00:00", "next_seq": 0, "evicted_through": -1,
              "summarized_through": -1, "extracted_through": -1}
    broken.write_text("\n".join([json.dumps(header), json.dumps(thread), '{"type": "memory", "content": ']) + "\n")
    target = tmp_path / "target"
    results = _run_all([["--data-dir", target, "import", newer], ["--data-dir", target, "import", broken],
                        ["--data-dir", target, "import", tmp_path / "absent.jsonl"]])
    assert f"line 1: export format version {FORMAT_VERSION + 1}; this langchain-tiered-memory reads version" in _one_error_line(results[0])
    assert "upgrade the package" in _one_error_line(results[0])
    assert f"{broken} line 3: not valid JSON" in _one_error_line(results[1])
    assert "nothing was imported" in _one_error_line(results[1])
    assert "cannot read" in _one_error_line(results[2])
    assert not target.exists()  # a file refused creates no memory


def test_export_of_an_unknown_user_is_an_error_and_writes_no_file(prepared, tmp_path):
    out = tmp_path / "nobody.jsonl"
    line = _one_error_line(_run("--data-dir", prepared, "export", "--user", "nobody", "--output", out))
    assert "user 'nobody' has nothing stored" in line
    assert not out.exists() and not list(tmp_path.glob("*.part"))


def _valid_export(tmp_path) -> list[dict]:
    path = tmp_path / "memory"
    with TieredMemory(path, MemoryConfig(job_mode="inline")) as m:
        m.after_turn("a", "t", [HumanMessage("I live in Rome."), AIMessage("Ciao!")])
        buffer = io.StringIO()
        export_jsonl(m.admin, "a", buffer)
    return [json.loads(line) for line in buffer.getvalue().splitlines()]


def test_read_jsonl_names_the_line_of_each_problem(tmp_path):
    lines = _valid_export(tmp_path)
    assert read_jsonl([json.dumps(r) for r in lines])[0] == "a"
    number = {kind: 1 + next(i for i, r in enumerate(lines) if r["type"] == kind) for kind in ("thread", "message", "memory")}

    def problem(change):
        records = [dict(r) for r in lines]
        change(records)
        with pytest.raises(InvalidInputError) as info:
            read_jsonl([json.dumps(r) if isinstance(r, dict) else r for r in records], "f.jsonl")
        return str(info.value)

    def at(kind):
        return next(r for r in lines if r["type"] == kind)

    assert "f.jsonl line 1: not a langchain-tiered-memory export" in problem(lambda rs: rs.pop(0))
    assert f"line {number['memory']}: bad memory" in problem(
        lambda rs: rs[number["memory"] - 1].update(importance=7))
    assert f"line {number['message']}: bad message" in problem(
        lambda rs: rs[number["message"] - 1].update(message={"type": "nonsense", "data": {}}))
    assert f"line {number['thread']}: thread 't' has next_seq 2 but 1 messages" in problem(
        lambda rs: rs.remove(at("message")))
    assert "appears twice" in problem(lambda rs: rs.append(dict(at("memory"))))
    assert f"line {len(lines) + 1}: unknown record type 'checkpoint'" in problem(lambda rs: rs.append({"type": "checkpoint"}))
    assert f"line {len(lines) + 1}: a second header" in problem(lambda rs: rs.append(dict(lines[0])))
    assert f"line {len(lines) + 1}: not a record" in problem(lambda rs: rs.append("[1, 2]"))
    assert "extracted_through is 9, past the thread's last message" in problem(
        lambda rs: rs[number["thread"] - 1].update(extracted_through=9))


# --- chat, reindex, interrupt -----------------------------------------------------------


def test_chat_offline_echoes_and_shows_what_memory_recalls(tmp_path):
    data = tmp_path / "memory"
    out = _run("--data-dir", data, "chat", "--user", "bob",
               input="My name is Bob and I live in Berlin.\n\nWhere do I live?\nexit\nnever read\n")
    assert out.returncode == 0, out.stderr
    replies = [line for line in out.stdout.splitlines() if line.startswith("assistant> ")]
    status = [line for line in out.stdout.splitlines() if line.startswith("[memory] ")]
    assert len(replies) == 2 and len(status) == 2
    assert "offline echo" in out.stdout.splitlines()[0] and "You said: Where do I live?" in replies[1]
    # The second turn is sent what the first one taught the memory.
    recalled = out.stdout.split("I was sent from memory: ")[1].splitlines()[0]
    assert "Berlin" in recalled
    used, budget = status[1].split()[1].split("/")
    assert 0 < int(used) <= int(budget) == MemoryConfig().context_budget
    # The window holds the first message alone: the echo is shown, never stored (docs/cli.md).
    assert "memories" in status[1] and "window 1 msgs" in status[1]
    with TieredMemory(data) as m:
        texts = [msg.text for msg in m.threads.messages("bob", "chat")]
    assert texts == ["You are a helpful assistant.", "My name is Bob and I live in Berlin.", "Where do I live?"]


def test_reindex_rebuilds_vectors_after_a_model_change_with_a_progress_bar(fresh):
    # The vectors move to another model in-process; the CLI brings them back to the default.
    with TieredMemory(fresh, embeddings=HashingEmbeddings(384)) as m:
        moved = m.admin.reindex()
        n = len(m.memories.list("alice"))
    assert moved["memories"] == n and moved["episodes"] == 1 and moved["conversation"] > 0
    out = _run("--data-dir", fresh, "reindex", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == moved
    total = sum(moved.values())
    assert f"] {total}/{total}" in out.stderr and "#" * 30 in out.stderr  # one index: every kind
    assert "Traceback" not in out.stderr
    with TieredMemory(fresh) as m:  # the default model again: no mismatch
        assert "Louvre" in m.memories.search("alice", "which museum does Alice like", k=1)[0].entry.content


#: The number of the ``read`` system call, by machine (``/proc/PID/syscall`` names it so).
_READ_SYSCALL = {"x86_64": "0", "aarch64": "63", "riscv64": "63", "ppc64le": "3", "s390x": "3"}


def _wait_reading_stdin(pid: int, timeout: float = 60.0) -> None:
    """Wait until the main thread of ``pid`` is blocked reading its standard input (fd 0),
    as the kernel reports it: the state in which a user's Ctrl-C meets the chat.

    A fixed sleep after the banner raced the start-up on a loaded machine (the signal came
    while the command was still getting there, in 2 of 2 full runs).
    """
    read = _READ_SYSCALL.get(os.uname().machine)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            fields = Path(f"/proc/{pid}/syscall").read_text().split()
        except OSError:
            fields = []
        # "<syscall number> <first argument: the fd> ...", or "running" while on a CPU.
        if len(fields) > 1 and fields[0] == read and int(fields[1], 16) == 0:
            return
        time.sleep(0.01)
    raise AssertionError(f"the chat never waited on its input within {timeout:g} s: {fields}")


@pytest.mark.skipif(not Path("/proc/self/syscall").exists() or os.uname().machine not in _READ_SYSCALL,
                    reason="needs Linux's /proc/PID/syscall to see the chat wait on its input")
def test_ctrl_c_exits_130_quietly(tmp_path):
    proc = subprocess.Popen([*CLI, "--data-dir", str(tmp_path / "m"), "chat"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(),
                            preexec_fn=_as_from_a_terminal)
    try:
        assert "chatting as" in proc.stdout.readline()
        _wait_reading_stdin(proc.pid)  # waiting for input now
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130 and "Traceback" not in stderr, (proc.returncode, stderr[-2000:])


def _as_from_a_terminal() -> None:
    """Start the child with Ctrl-C as a shell gives it: SIGINT handled by default and not
    blocked. A test process may have either changed by then, and a child inherits both:
    under load the chat then read to EOF and exited 0."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    signal.signal(signal.SIGINT, signal.SIG_DFL)
