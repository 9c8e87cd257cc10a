"""What a new user sees of their profile with the offline rules (issue 41, point 4).

A new dislike closed the old ones as superseded, so "flying" and "crowded places" left the
profile when "mushrooms" came; a value ran past its clause ("favorite_cuisine: Japanese,
any idea for Saturday"); a question's capital made an entity "Is Sintra".
"""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langchain_tiered_memory import MemoryConfig, TieredMemory
from langchain_tiered_memory.extraction.offline.entities import proper_spans


@pytest.fixture
def memory(tmp_path):
    with TieredMemory(tmp_path / "m", config=MemoryConfig(job_mode="inline")) as memory:
        yield memory


def _say(memory: TieredMemory, *texts: str) -> dict[str, str]:
    for text in texts:
        memory.after_turn("alice", "t1", [HumanMessage(text), AIMessage("Okay.")])
    memory.flush()
    (me,) = [e for e in memory.entities.list("alice") if e.attributes.get("relation_to_user") == "self"]
    return me.attributes


def test_many_valued_attributes_add_up_across_turns_with_history(memory):
    attrs = _say(memory, "I hate flying.", "I don't like crowded places.", "I dislike mushrooms.",
                 "I speak French.", "I also speak German.")
    assert attrs["dislikes"].split(", ") == ["flying", "crowded places", "mushrooms"]
    assert attrs["languages"].split(", ") == ["French", "German"]
    # Said again, nothing changes and nothing doubles.
    assert _say(memory, "I hate flying.")["dislikes"].split(", ") == ["flying", "crowded places", "mushrooms"]
    # The history shows the set growing, each step kept.
    (me,) = [e for e in memory.entities.list("alice") if e.attributes.get("relation_to_user") == "self"]
    steps = [v.value for v in memory.entities.get("alice", me.name).history["dislikes"]]
    assert steps == ["flying", "flying, crowded places", "flying, crowded places, mushrooms"]


def test_single_valued_attributes_are_replaced(memory):
    assert _say(memory, "I live in Paris.")["location"] == "Paris"
    assert _say(memory, "I moved to Lisbon.", "I live in Lisbon now.")["location"] == "Lisbon"


def test_a_value_ends_at_its_clause(memory):
    attrs = _say(memory, "My favorite cuisine is Japanese, any idea for Saturday?")
    assert attrs["favorite_cuisine"] == "Japanese"
    attrs = _say(memory, "I love hiking, I do it every weekend.")
    assert "hiking" in attrs["loves" if "loves" in attrs else "likes"].split(", ")
    assert not any("every weekend" in v for v in attrs.values())


@pytest.mark.parametrize("sentence, names", [
    ("Is Sintra worth a visit?", ["Sintra"]),
    ("Can Lena come too?", ["Lena"]),
    ("What about Porto and Braga?", ["Porto", "Braga"]),
])
def test_a_capital_of_grammar_opens_no_name(sentence, names):
    assert [s.text for s in proper_spans(sentence)] == names


def test_no_fragment_or_pronoun_entity_from_questions(memory):
    for text in ("Is Sintra worth a visit?", "Could you book it?", "Do I need a visa?"):
        memory.after_turn("alice", "t1", [HumanMessage(text), AIMessage("Okay.")])
    memory.flush()
    names = {e.name for e in memory.entities.list("alice")}
    assert not {n for n in names if n.split()[0] in ("Is", "Could", "Do", "I", "You", "It")}
