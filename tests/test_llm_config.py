"""Issue 16, item 3: the model a user configures with the variables they already use, passed
to ``ChatOpenAI`` with its timeout and retries; and what is wrong said in one line."""

from __future__ import annotations

import socket

import pytest

from langchain_tiered_memory import ConfigError, ModelSettings, ModelUnavailableError
from langchain_tiered_memory.extraction import default_model, make_extractor
from langchain_tiered_memory.llm.settings import is_connection_error


def test_no_server_configured_means_offline():
    assert ModelSettings.from_env(environ={}) is None
    assert ModelSettings.from_env(environ={"TIERED_MEMORY_MODEL": "llama3"}) is None


def test_a_local_server_needs_no_key_and_names_its_model():
    env = {"OPENAI_BASE_URL": "http://localhost:8080/v1", "TIERED_MEMORY_MODEL": "qwen2.5-1.5b-instruct"}
    settings = ModelSettings.from_env(environ=env, timeout=12, max_retries=3)
    assert settings == ModelSettings("qwen2.5-1.5b-instruct", "http://localhost:8080/v1", None, 12, 3)
    model = settings.chat_model()
    assert model.model_name == "qwen2.5-1.5b-instruct" and model.openai_api_base == "http://localhost:8080/v1"
    assert model.request_timeout == 12 and model.max_retries == 3
    assert str(model.root_client.base_url).startswith("http://localhost:8080/v1")
    # --model wins over TIERED_MEMORY_MODEL.
    assert ModelSettings.from_env(model="llama3.2", environ=env).model == "llama3.2"


def test_openai_with_a_key_and_the_default_model():
    settings = ModelSettings.from_env(environ={"OPENAI_API_KEY": "sk-test"})
    assert settings is not None and settings.model == "gpt-4o-mini" and settings.url == "https://api.openai.com/v1"


def test_the_memory_default_model_follows_the_environment(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1")
    monkeypatch.setenv("TIERED_MEMORY_MODEL", "llama3.2")
    model = default_model(timeout=7)
    assert model is not None and model.model_name == "llama3.2" and model.request_timeout == 7
    assert model.max_retries == 0  # jobs retry with backoff themselves
    assert make_extractor(None).name == "llm:ChatOpenAI:llama3.2"


def test_bad_settings_are_config_errors_saying_what_to_set():
    with pytest.raises(ConfigError, match="OPENAI_BASE_URL"):
        ModelSettings.from_env(model="llama3", environ={})
    with pytest.raises(ConfigError, match="http"):
        ModelSettings.from_env(environ={"OPENAI_BASE_URL": "localhost:8080"})
    with pytest.raises(ConfigError, match="timeout"):
        ModelSettings(timeout=0)
    with pytest.raises(ConfigError, match="max_retries"):
        ModelSettings(max_retries=-1)


def test_an_unreachable_server_is_one_error_naming_the_address():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    settings = ModelSettings(base_url=f"http://127.0.0.1:{port}/v1")
    with pytest.raises(ModelUnavailableError, match=f"cannot reach the model server http://127.0.0.1:{port}/v1") as err:
        settings.check_reachable()
    assert "OPENAI_BASE_URL" in str(err.value) and "\n" not in str(err.value)


def test_connection_errors_are_told_from_slow_answers():
    import httpx
    import openai

    request = httpx.Request("POST", "http://127.0.0.1:1/v1/chat/completions")
    assert is_connection_error(openai.APIConnectionError(request=request))
    assert not is_connection_error(openai.APITimeoutError(request=request))
    assert not is_connection_error(ValueError("bad answer"))


def test_a_job_against_a_dead_server_records_what_to_do(tmp_path):
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_openai import ChatOpenAI

    from langchain_tiered_memory import MemoryConfig, TieredMemory

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    llm = ChatOpenAI(model="m", base_url=f"http://127.0.0.1:{port}/v1", api_key="x", max_retries=0)
    # Horizon 0: the refused connection fails the job at once (not waited out for 15 min).
    config = MemoryConfig(job_mode="inline", job_max_attempts=1, job_retry_horizon_seconds=0)
    with TieredMemory(tmp_path / "m", config, model=llm) as memory:
        memory.after_turn("alice", "t1", [HumanMessage("I live in Lisbon."), AIMessage("Noted.")])
        stats = memory.admin.stats()
        assert len(memory.threads.messages("alice", "t1")) == 2  # the turn itself is kept
    reason = stats["failed_jobs"][0]["reason"]
    assert "ConnectionError" in reason and "start it, or point OPENAI_BASE_URL" in reason
