"""Entity full-text search ranks the same on SQLite (FTS5) and PostgreSQL (tsvector + GIN)."""

from datetime import datetime, timedelta, timezone

import pytest

from langchain_tiered_memory.layers.entities import name_key, query_terms
from langchain_tiered_memory.storage.entities import upsert_entity
from langchain_tiered_memory.storage.rows import EntityUpdate

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


@pytest.fixture
def put(memory):
    clock = iter(range(1_000))

    def put(user: str, name: str, kind: str = "person", **attrs: str) -> None:
        now = (T0 + timedelta(minutes=next(clock))).isoformat()
        with memory._parts.storage.db.write() as tx:
            tx.serialize(user)
            upsert_entity(tx, user, "t", EntityUpdate(name, name_key(name), kind, attrs), now)

    return put


def _search(memory, user: str, query: str, limit: int = 10) -> list[str]:
    return [r.name for r in memory._parts.storage.entities.search(user, query_terms(query), limit)]


def test_more_of_the_query_matched_ranks_first(memory, put):
    put("u", "Alice", city="Lisbon", drink="green tea")
    put("u", "Bob", city="Lisbon")
    put("u", "Carol", city="Porto")
    assert _search(memory, "u", "green tea in Lisbon") == ["Alice", "Bob"]
    assert _search(memory, "u", "anything about Porto?") == ["Carol"]
    assert _search(memory, "u", "nothing matches this") == []


def test_a_short_profile_ranks_before_the_same_word_in_a_long_one(memory, put):
    put("u", "Alice", city="Lisbon", job="nurse", drink="green tea", sport="climbing",
        pet="a cat named Miso", music="fado and jazz", food="vegetarian")
    put("u", "Lisbon", "place")
    assert _search(memory, "u", "Lisbon") == ["Lisbon", "Alice"]


def test_equal_matches_newest_first_and_the_limit(memory, put):
    for name in ("Ann", "Ben", "Cid"):
        put("u", name, city="Lisbon")
    assert _search(memory, "u", "Lisbon") == ["Cid", "Ben", "Ann"]
    assert _search(memory, "u", "Lisbon", limit=2) == ["Cid", "Ben"]
    put("u", "Ann", city="Lisbon")  # said again: the newest now, with the same profile
    assert _search(memory, "u", "Lisbon")[0] == "Ann"


def test_case_and_accents_do_not_matter(memory, put):
    put("u", "Zoë", city="São Paulo")
    assert _search(memory, "u", "zoe") == ["Zoë"]
    assert _search(memory, "u", "ZOË") == ["Zoë"]
    assert _search(memory, "u", "sao paulo") == ["Zoë"]


def test_query_words_are_words_never_operators(memory, put):
    put("u", "Near Field", "project", status="AND gate *done*")
    for terms in (["near"], ["and"], ["gate*"], ['"done'], ["NOT"], ["near", "or", "field"]):
        found = [r.name for r in memory._parts.storage.entities.search("u", terms, 10)]
        assert found in (["Near Field"], []), terms  # never an error
    assert [r.name for r in memory._parts.storage.entities.search("u", ["near"], 10)] == ["Near Field"]
    assert [r.name for r in memory._parts.storage.entities.search("u", ["done"], 10)] == ["Near Field"]
    assert memory._parts.storage.entities.search("u", ["***", "''"], 10) == []


def test_only_current_values_of_the_users_own_entities(memory, put):
    put("u", "Alice", city="Paris")
    put("other", "Alicia", city="Paris")
    assert _search(memory, "u", "Paris") == ["Alice"]
    put("u", "Alice", city="Berlin")  # supersedes Paris (kept as history, not searched)
    assert _search(memory, "u", "Paris") == []
    assert _search(memory, "u", "Berlin") == ["Alice"]
    assert [v.value for v in memory.entities.get("u", "alice").history["city"]] == ["Paris", "Berlin"]
    memory.admin.forget(user_id="u", entity="Alice")
    assert _search(memory, "u", "Berlin") == []
    assert _search(memory, "other", "Paris") == ["Alicia"]


def test_the_context_section_puts_matches_first(memory, put):
    put("u", "Bob", city="Porto")
    put("u", "Alice", drink="green tea")
    put("u", "Carol", city="Faro")
    names = [e.name for e in memory._parts.entities.relevant("u", "who drinks green tea?", limit=3)]
    assert names == ["Alice", "Carol", "Bob"]  # the match, then the most recent
