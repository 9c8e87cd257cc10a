import os
import subprocess
import sys


def _run(*args, env=None):
    return subprocess.run(
        [sys.executable, "-m", "langchain_tiered_memory.cli", *args],
        capture_output=True, text=True, timeout=180, env=env,
    )


def test_demo_runs_offline_and_shows_the_accounting(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "TIKTOKEN_CACHE_DIR")}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    env["HTTPS_PROXY"] = env["HTTP_PROXY"] = "http://127.0.0.1:9"
    out = _run("demo", "--data-dir", str(tmp_path / "m"), env=env)
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
    again = _run("demo", "--data-dir", str(tmp_path / "m"), env=env)
    assert "demo-2" in again.stdout


def test_errors_are_one_line_without_traceback(tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "memory.db").write_bytes(b"garbage" * 10)
    out = _run("demo", "--data-dir", str(tmp_path / "m"))
    assert out.returncode == 1
    assert "Traceback" not in out.stderr
    assert out.stderr.startswith("tiered-memory: error:") and len(out.stderr.strip().splitlines()) == 1


def test_no_command_prints_help():
    out = _run()
    assert out.returncode == 2 and "demo" in out.stdout
