import os

# No model hub here or in CI: everything loads from installed packages.
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest

from langchain_tiered_memory import MemoryConfig, TieredMemory


@pytest.fixture
def data_dir(tmp_path):
    return tmp_path / "memory"


@pytest.fixture
def small_config():
    """A window small enough that a short conversation evicts."""
    return MemoryConfig(max_tokens=400, system_reserve=50, output_reserve=50)


@pytest.fixture
def memory(data_dir, small_config):
    with TieredMemory(data_dir, small_config) as m:
        yield m
