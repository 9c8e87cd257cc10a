"""Through the memory, across turns (issue 41): one profile of the user, named once they
say their name, and places typed by what earlier turns typed."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langchain_tiered_memory import MemoryConfig, TieredMemory
from langchain_tiered_memory.extraction import USER_ENTITY


@pytest.fixture
def memory(tmp_path):
    with TieredMemory(tmp_path / "m", config=MemoryConfig(job_mode="inline")) as memory:
        yield memory


def _say(memory: TieredMemory, *texts: str, name: str | None = None) -> None:
    for text in texts:
        memory.after_turn("alice", "t1", [HumanMessage(text, name=name), AIMessage("Noted!")])
    memory.flush()


def _selves(memory: TieredMemory) -> list:
    return [e for e in memory.entities.list("alice") if e.attributes.get("relation_to_user") == "self"]


def test_the_unnamed_profile_becomes_the_users_once_they_say_their_name(memory):
    _say(memory, "I live in Lisbon and I hate mushrooms")
    (me,) = _selves(memory)
    assert me.name == USER_ENTITY and me.attributes["location"] == "Lisbon"
    block = memory.before_turn("alice", "t2", "where do I live?").memory_block
    # Shown as the user's own profile, not as a person named "user".
    assert "- the user (no name given yet): location: Lisbon" in block and "- user (person)" not in block
    _say(memory, "I'm Alice, by the way.", "I also hate flying.")
    (me,) = _selves(memory)  # one profile: the placeholder's became Alice's
    assert me.name == "Alice"
    assert me.attributes["location"] == "Lisbon" and me.attributes["dislikes"] == "mushrooms, flying"
    assert memory.entities.get("alice", USER_ENTITY) is None
    history = memory.entities.get("alice", "Alice").history["dislikes"]
    assert [v.value for v in history] == ["mushrooms", "mushrooms, flying"]  # kept from before the name
    block = memory.before_turn("alice", "t2", "what do I dislike?").memory_block
    assert "- Alice (person)" in block and "- user (person)" not in block


def test_a_named_speaker_never_has_a_placeholder_profile(memory):
    _say(memory, "I live in Lisbon.", "I hate mushrooms.", name="Caroline")
    assert [e.name for e in _selves(memory)] == ["Caroline"]


def test_names_listed_with_a_place_typed_in_an_earlier_turn_are_places(memory):
    _say(memory, "I'm flying to Kyoto next week.")
    _say(memory, "Back to Kyoto, then Uji and maybe Osaka.")
    kinds = {e.name: e.type for e in memory.entities.list("alice")}
    assert kinds["Kyoto"] == kinds["Uji"] == kinds["Osaka"] == "place", kinds
    _say(memory, "Kyoto was the best part.")  # a later turn says nothing telling: still a place
    assert memory.entities.get("alice", "Kyoto").type == "place"
