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


# --- places typed consistently; no entity of grammar, a pronoun or a role word -------------


def _entities(memory: TieredMemory, *turns: tuple[str, str]) -> dict[str, str]:
    for question, answer in turns:
        memory.after_turn("alice", "t1", [HumanMessage(question), AIMessage(answer)])
    memory.flush()
    return {e.name: e.type for e in memory.entities.list("alice")}


def test_names_listed_beside_a_place_and_after_a_travel_cue_are_places(memory):
    types = _entities(
        memory,
        # The reply says where Tokyo and Kyoto are ("in Tokyo"); Osaka is listed with them.
        ("Tokyo and Kyoto for sure, maybe Osaka.", "Then stay in Yanaka in Tokyo, and Higashiyama in Kyoto."),
        # "from Kyoto Station to Uji": the other end of a way from a place is a place.
        ("I love green tea, so Uji it is!", "Take the JR Nara line from Kyoto Station to Uji."),
        ("What's the fastest way to get to Kobe?", "The shinkansen, about 30 minutes."),
        # Lisbon is a place by another sentence of the turn; the list shares it.
        ("Lisbon, Sintra or perhaps Evora? We land in Lisbon on Monday.", "All three are lovely."),
    )
    for place in ("Tokyo", "Kyoto", "Osaka", "Uji", "Kobe", "Lisbon", "Sintra", "Evora"):
        assert types.get(place) == "place", (place, types)
    # The reply types the user's names and makes none of its own.
    assert not {"Yanaka", "Higashiyama", "Kyoto Station"} & set(types), types


def test_a_name_addressed_beside_a_place_stays_a_person_or_other(memory):
    types = _entities(memory, ("Wow, Calvin, Tokyo looks incredible!", "Thanks! It was taken in Tokyo."),
                      ("We did one good thing on the way to Mark and Josh.", "What was it?"))
    assert types["Tokyo"] == "place"
    assert types.get("Calvin") != "place" and types.get("Mark") != "place" and types.get("Josh") != "place", types


def test_no_entity_of_grammar_a_pronoun_or_a_role_word(memory):
    types = _entities(
        memory,
        ("Bye Joanna! Take care!", "Bye!"),
        ("Sounds great, See you soon?", "Sure."),
        ("Thankfully, my son is ok. Last Friday, my partner drove him home.", "Glad to hear it."),
        ("Definitely Star Wars. Learning German is fun, I Bet you'd like it.", "Maybe!"),
        ("Her sister said Us too. Let's ask the User and the Assistant.", "Okay."),
        ("Oof, Hang in there. Yo Tim, During Thanksgiving we went to California- it was great.", "Nice."),
    )
    names = set(types)
    assert {"Joanna", "Star Wars", "German", "Tim", "Thanksgiving", "California"} <= names, names
    grammar = {"Bye Joanna", "See", "Thankfully", "Last", "Definitely Star Wars", "Learning German", "Bet",
               "Her", "Us", "Let", "User", "Assistant", "Hang", "Yo Tim", "During Thanksgiving", "California-"}
    assert not grammar & names, grammar & names
    assert not any(n.casefold() in ("user", "assistant") and t != "person" for n, t in types.items())


def test_a_title_is_one_entity_and_initials_stay_with_their_name(memory):
    names = set(_entities(
        memory,
        ('I watched "The Lord of the Rings" last night, and "The Name of the Wind" is great.', "Nice."),
        ("My favourite authors are J.K. Rowling and George R. R. Martin.", "Good taste."),
        ("Here is a pic of my favorite, Lord of the Rings!", "Cool."),
    ))
    assert {"The Lord of the Rings", "The Name of the Wind", "J.K. Rowling", "George R. R. Martin",
            "Lord of the Rings"} <= names, names
    assert not {"Lord", "Rings", "Name", "Wind", "George R", "R", "Martin", "J.K"} & names, names


def test_the_demo_profile_types_every_place_and_keeps_what_alice_said(tmp_path):
    from langchain_tiered_memory.cli.demo import DEMO_TURNS

    with TieredMemory(tmp_path / "demo", config=MemoryConfig(job_mode="inline")) as memory:
        for question, answer in DEMO_TURNS:
            memory.after_turn("alice", "demo-1", [HumanMessage(question), AIMessage(answer)])
        memory.flush()
        entities = {e.name: e for e in memory.entities.list("alice")}
    assert {n: e.type for n, e in entities.items() if n != "Alice"} == dict.fromkeys(
        ("Japan", "Tokyo", "Kyoto", "Osaka", "Uji", "Hakone"), "place"
    ), {n: e.type for n, e in entities.items()}
    alice = entities["Alice"].attributes
    assert alice["dislikes"] == "crowded trains in the morning"
    assert alice["prefers"] == "quiet neighbourhoods over nightlife" and alice["likes"] == "green tea"
    assert alice["diet"] == "vegetarian"
