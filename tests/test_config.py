import math

import pytest

from langchain_tiered_memory import ConfigError, MemoryConfig, TieredMemory, TieredMemoryError


def test_defaults_are_the_seed_numbers():
    c = MemoryConfig()
    assert (c.max_tokens, c.system_reserve, c.output_reserve) == (100_000, 5_000, 4_000)
    assert c.summary_max_tokens == 2_000
    assert (c.importance_threshold, c.decay, c.access_boost) == (0.6, 0.95, 0.1)
    assert (c.max_memories_per_user, c.merge_threshold, c.score_threshold) == (10_000, 0.95, 0.25)
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
