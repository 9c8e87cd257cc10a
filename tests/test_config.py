import math

import pytest

from langchain_tiered_memory import ConfigError, MemoryConfig, TieredMemory, TieredMemoryError


def test_defaults_are_the_seed_numbers():
    c = MemoryConfig()
    assert (c.max_tokens, c.system_reserve, c.output_reserve) == (100_000, 5_000, 4_000)
    assert c.summary_max_tokens == 2_000
    assert (c.importance_threshold, c.decay, c.access_boost) == (0.6, 0.95, 0.1)
    assert (c.max_memories_per_user, c.merge_threshold, c.score_threshold) == (10_000, 0.95, 0.15)
    assert c.context_budget == 96_000


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"max_tokens": -1}, "max_tokens"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"system_reserve": -5}, "system_reserve"),
        ({"output_reserve": 100_000}, "output_reserve"),
        ({"system_reserve": 60_000, "output_reserve": 40_000}, "system_reserve"),
        ({"decay": 1.5}, "decay"),
        ({"importance_threshold": -0.1}, "importance_threshold"),
        ({"merge_threshold": math.nan}, "merge_threshold"),
        ({"score_threshold": 2}, "score_threshold"),
        ({"access_boost": -1}, "access_boost"),
        ({"max_memories_per_user": 0}, "max_memories_per_user"),
        ({"max_tokens": "lots"}, "max_tokens"),
        ({"max_token": 10}, "max_token"),
    ],
)
def test_invalid_values_fail_at_construction_naming_the_field(kwargs, field):
    with pytest.raises(ConfigError) as err:
        MemoryConfig(**kwargs)
    assert field in str(err.value)
    assert isinstance(err.value, TieredMemoryError)


def test_config_is_immutable():
    c = MemoryConfig()
    with pytest.raises(Exception):
        c.max_tokens = 5  # type: ignore[misc]
    assert c.max_tokens == 100_000


def test_memory_accepts_a_dict_and_rejects_other_types(tmp_path):
    with TieredMemory(tmp_path / "a", {"max_tokens": 2_000, "system_reserve": 100, "output_reserve": 100}) as m:
        assert m.config.context_budget == 1_900
    with pytest.raises(ConfigError):
        TieredMemory(tmp_path / "b", {"max_tokens": -3})
    with pytest.raises(ConfigError):
        TieredMemory(tmp_path / "c", 42)  # type: ignore[arg-type]


# --- configs that validate field by field but could not work (issue 14) ---------------------


@pytest.mark.parametrize(
    ("kwargs", "fields"),
    [
        # An infinite timeout failed every job and made stats() raise; NaN is no number.
        ({"llm_timeout_seconds": math.inf}, ["llm_timeout_seconds", "finite"]),
        ({"llm_timeout_seconds": math.nan}, ["llm_timeout_seconds", "finite"]),
        ({"job_lease_seconds": math.inf}, ["job_lease_seconds", "finite"]),
        ({"job_backoff_seconds": math.nan}, ["job_backoff_seconds", "finite"]),
        ({"idle_timeout_minutes": math.inf}, ["idle_timeout_minutes", "finite"]),
        # Huge but finite values overflowed later: dates, Python's waits, SQLite integers.
        ({"llm_timeout_seconds": 1e300}, ["llm_timeout_seconds", "86400"]),
        ({"job_backoff_seconds": 1e308}, ["job_backoff_seconds", "86400"]),
        ({"idle_timeout_minutes": 1e300}, ["idle_timeout_minutes", "dates"]),
        ({"job_max_attempts": 10**9}, ["job_max_attempts", "100"]),
        ({"max_tokens": 10**30}, ["max_tokens", "1000000000"]),
        ({"summary_max_tokens": 2**63}, ["summary_max_tokens"]),
        ({"max_memories_per_user": 10**30}, ["max_memories_per_user"]),
        # memories_k = 10**9 made every before_turn raise: a search returns at most 100.
        ({"memories_k": 10**9}, ["memories_k", "at most 100 memories"]),
        ({"episodes_k": 101}, ["episodes_k", "at most 100 episodes"]),
        # The retry horizon: a number of seconds, up to a day (then jobs.retry() re-runs).
        ({"job_retry_horizon_seconds": math.inf}, ["job_retry_horizon_seconds", "finite"]),
        ({"job_retry_horizon_seconds": -1}, ["job_retry_horizon_seconds"]),
        ({"job_retry_horizon_seconds": 2 * 86_400}, ["job_retry_horizon_seconds", "jobs retry --failed"]),
    ],
)
def test_configs_that_cannot_work_fail_at_construction_naming_the_fields(kwargs, fields):
    with pytest.raises(ConfigError) as err:
        MemoryConfig(**kwargs)
    for text in fields:
        assert text in str(err.value)


def test_the_recall_bound_is_the_one_search_enforces():
    from langchain_tiered_memory.config import MAX_RECALL_K
    from langchain_tiered_memory.entries import MAX_K

    assert MAX_RECALL_K == MAX_K


def test_every_value_at_its_bound_works_in_a_real_memory(tmp_path):
    """The bounds are not only refusals: a config at every upper bound opens, stores, recalls,
    runs its jobs and reports, so no accepted value overflows later."""
    from langchain_core.messages import AIMessage, HumanMessage

    from langchain_tiered_memory.config import (
        MAX_ATTEMPTS,
        MAX_IDLE_MINUTES,
        MAX_MEMORIES_LIMIT,
        MAX_RECALL_K,
        MAX_SECONDS,
        MAX_TOKENS_LIMIT,
    )
    from langchain_tiered_memory.embeddings import HashingEmbeddings

    config = MemoryConfig(
        max_tokens=MAX_TOKENS_LIMIT, system_reserve=MAX_TOKENS_LIMIT // 4, output_reserve=MAX_TOKENS_LIMIT // 4,
        summary_max_tokens=MAX_TOKENS_LIMIT, entities_max_tokens=MAX_TOKENS_LIMIT,
        memories_max_tokens=MAX_TOKENS_LIMIT, episodes_max_tokens=MAX_TOKENS_LIMIT,
        memories_k=MAX_RECALL_K, episodes_k=MAX_RECALL_K, max_memories_per_user=MAX_MEMORIES_LIMIT,
        job_mode="inline", job_max_attempts=MAX_ATTEMPTS, job_backoff_seconds=MAX_SECONDS,
        job_lease_seconds=MAX_SECONDS, llm_timeout_seconds=MAX_SECONDS, job_retry_horizon_seconds=MAX_SECONDS,
        idle_timeout_minutes=MAX_IDLE_MINUTES,
    )
    with TieredMemory(tmp_path / "m", config, embeddings=HashingEmbeddings()) as m:
        m.memories.remember("u", "user: I prefer green tea", importance=0.9)
        m.after_turn("u", "t", [HumanMessage("My name is Alice and I prefer green tea."), AIMessage("Noted.")])
        assert m.end_session("u", "t") is not None
        assert m.flush(timeout=30)
        context = m.before_turn("u", "t", query="green tea")
        assert {"memories", "episodes"} <= {s.name for s in context.sections}
        assert len(context.window) == 2
        stats = m.admin.stats()
        assert stats["jobs"]["done"] == 2 and stats["failed_jobs"] == []
    # Reopening runs the idle-session check with the longest idle time.
    with TieredMemory(tmp_path / "m", config, embeddings=HashingEmbeddings()) as m:
        assert m.admin.stats()["jobs"]["pending"] == 0
