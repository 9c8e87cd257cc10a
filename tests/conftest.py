import os
import sys
from pathlib import Path

# No model hub here or in CI: everything loads from installed packages.
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest

from langchain_tiered_memory import MemoryConfig, TieredMemory

sys.path.insert(0, str(Path(__file__).parent))
import browser
import pg_server

#: The relational backends the behavioural tests run on.
BACKENDS = ["sqlite", "postgresql"]
_PG_UNAVAILABLE: list[str] = []


@pytest.fixture
def data_dir(tmp_path):
    return tmp_path / "memory"


@pytest.fixture
def small_config():
    """A window small enough that a short conversation evicts."""
    return MemoryConfig(max_tokens=400, system_reserve=50, output_reserve=50)


@pytest.fixture(scope="session")
def pg():
    """A throwaway PostgreSQL cluster for the session; the tests that need it are skipped,
    with the reason in the report and a banner at the end, when none can run here."""
    if _PG_UNAVAILABLE:
        pytest.skip(f"PostgreSQL tests skipped: {_PG_UNAVAILABLE[0]}")
    try:
        server = pg_server.start()
    except pg_server.Unavailable as exc:
        _PG_UNAVAILABLE.append(str(exc))
        pytest.skip(f"PostgreSQL tests skipped: {exc}")
    yield server
    server.stop()


@pytest.fixture
def pg_url(pg):
    """An empty database with the memory's schema; emptied for the next test after this one."""
    url = pg.new_database()
    yield url
    pg.recycle(url)


@pytest.fixture(params=BACKENDS)
def backend(request):
    """Which relational store the test's memories use."""
    return request.param


@pytest.fixture
def make_memory(backend, data_dir, request):
    """Opens a :class:`TieredMemory` on the test's backend: ``make_memory(config, **kwargs)``.

    Every memory of one test shares one store — the directory, or a fresh PostgreSQL database
    with one qdrant-client (local mode, standing in for the Qdrant server) — so closing and
    opening again sees the same data.
    """
    if backend == "sqlite":
        yield lambda config=None, **kwargs: TieredMemory(data_dir, config, **kwargs)
        return
    from qdrant_client import QdrantClient

    url = request.getfixturevalue("pg_url")
    client = QdrantClient(":memory:")
    try:
        yield lambda config=None, **kwargs: TieredMemory(
            config=config, database_url=url, qdrant_client=client, **kwargs
        )
    finally:
        client.close()


@pytest.fixture
def memory(make_memory, small_config):
    with make_memory(small_config) as m:
        yield m


def pytest_terminal_summary(terminalreporter):
    if _PG_UNAVAILABLE:
        terminalreporter.section("PostgreSQL", sep="!", red=True, bold=True)
        terminalreporter.write_line(
            f"NO POSTGRESQL: every PostgreSQL test was SKIPPED ({_PG_UNAVAILABLE[0]})", red=True, bold=True
        )
    if browser.UNAVAILABLE:
        terminalreporter.section("Chromium", sep="!", red=True, bold=True)
        terminalreporter.write_line(
            f"NO BROWSER: the inspector's browser tests were SKIPPED ({browser.UNAVAILABLE[0]})", red=True, bold=True
        )
