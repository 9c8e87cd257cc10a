"""The offline rules name the user's own profile and type places across turns (issue 41).

The user's profile is named by the name the turn states ("I'm Alice"), else by the one the
user's messages carry (a named speaker, as the LLM prompt shows it: "user [Caroline]: …"),
else it is the placeholder ``USER_ENTITY`` that the entity layer files under the name given
earlier. A name keeps the type an earlier turn gave it (``known_types``), and a name listed
by a word with a known place is a place.
"""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langchain_tiered_memory.errors import InvalidInputError
from langchain_tiered_memory.extraction import USER_ENTITY, TurnExtraction
from langchain_tiered_memory.extraction.offline import OfflineExtractor, extract_rules
from langchain_tiered_memory.extraction.prompts import Prompts


def _kinds(result: TurnExtraction) -> dict[str, str]:
    return {e.name: e.type for e in result.entities}


def _me(result: TurnExtraction) -> str:
    (me,) = [e.name for e in result.entities if e.attributes.get("relation_to_user") == "self"]
    return me


KYOTO = {"Kyoto": "place"}


# --- a place typed in an earlier turn ---------------------------------------------------


@pytest.mark.parametrize("said, places", [
    ("Kyoto and Osaka were both great.", ["Kyoto", "Osaka"]),
    ("We'll also see Kyoto, Uji and Osaka.", ["Kyoto", "Uji", "Osaka"]),
    ("Kyoto or Nara first, what do you think?", ["Kyoto", "Nara"]),
    ("We'll do Kyoto and maybe Nara.", ["Kyoto", "Nara"]),
    ("Kyoto, then Nara and Uji.", ["Kyoto", "Nara", "Uji"]),
])
def test_a_name_listed_with_a_place_known_from_an_earlier_turn_is_a_place(said, places):
    told = [HumanMessage(said), AIMessage("Good plan.")]
    assert {n: _kinds(extract_rules(told, known_types=KYOTO))[n] for n in places} == dict.fromkeys(places, "place")
    # Without what the earlier turn typed, the turn alone says nothing of them.
    assert {n: _kinds(extract_rules(told, ["Kyoto"]))[n] for n in places} != dict.fromkeys(places, "place")


def test_a_known_name_keeps_its_type_where_the_turn_says_nothing_telling():
    told = [HumanMessage("The temples in the north were lovely. Kyoto was the best part.")]
    assert _kinds(extract_rules(told, known_types=KYOTO))["Kyoto"] == "place"
    assert _kinds(extract_rules(told, ["Kyoto"]))["Kyoto"] == "other"
    # The known spelling is reused, as with known_entities.
    assert _kinds(extract_rules([HumanMessage("I loved KYOTO and Nara")], known_types=KYOTO)) == {
        "Kyoto": "place", "Nara": "place"}


def test_what_the_turn_says_wins_and_a_comma_alone_joins_no_list():
    # A telling context of this turn types the name, whatever was stored.
    assert _kinds(extract_rules([HumanMessage("I work at Kyoto Labs.")], known_types={"Kyoto Labs": "place"}))[
        "Kyoto Labs"] == "organization"
    # "Wow, Calvin, Kyoto looks incredible!": a comma alone may address someone.
    kinds = _kinds(extract_rules([HumanMessage("Wow, Calvin, Kyoto looks incredible!")], known_types=KYOTO))
    assert kinds == {"Calvin": "other", "Kyoto": "place"}
    # Only places spread to a list: people and companies are listed together with anything.
    kinds = _kinds(extract_rules([HumanMessage("Ana and Google both called me back.")], known_types={"Ana": "person"}))
    assert kinds == {"Ana": "person", "Google": "other"}


def test_the_offline_extractor_takes_known_types_and_checks_them():
    ex = OfflineExtractor()
    told = [HumanMessage("Kyoto and Uji, then home.")]
    assert _kinds(ex.extract_turn(told, known_entities=["Kyoto"], known_types={"Kyoto": "city"}))["Uji"] == "place"
    assert _kinds(ex.extract_turn(told, known_types={"Kyoto": "no such type"}))["Uji"] == "other"  # ignored
    with pytest.raises(InvalidInputError, match="known_types"):
        ex.extract_turn(told, known_types=["Kyoto"])  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="known_types"):
        ex.extract_turn(told, known_types={"Kyoto": 3})  # type: ignore[dict-item]


# --- the user's own profile -------------------------------------------------------------


def test_the_user_profile_is_the_placeholder_until_a_name_is_known_as_in_the_llm_prompt():
    result = extract_rules([HumanMessage("I live in Lisbon and I hate mushrooms"), AIMessage("Noted!")])
    assert _me(result) == USER_ENTITY
    assert {e.name for e in result.entities} == {USER_ENTITY, "Lisbon"}  # no entity of a word of the text
    # The LLM extractor is asked for the same: the stated name, else "user", relation self.
    assert f'or "{USER_ENTITY}" when' in Prompts().turn_system and '"relation_to_user": "self"' in Prompts().turn_system
    named = extract_rules([HumanMessage("I'm Alice, by the way. I moved to Porto.")], [USER_ENTITY, "Lisbon"])
    assert _me(named) == "Alice" and "The user's name is Alice." in [m.content for m in named.memories]
    assert USER_ENTITY not in {e.name for e in named.entities}


@pytest.mark.parametrize("message", [
    HumanMessage("I live in Lisbon and I hate mushrooms", name="Caroline"),
    HumanMessage("Caroline: I live in Lisbon and I hate mushrooms"),
])
def test_a_named_speaker_names_the_profile(message):
    result = extract_rules([message, AIMessage("Noted!", name="Melanie")])
    assert _me(result) == "Caroline"
    me = next(e for e in result.entities if e.name == "Caroline")
    assert me.type == "person" and me.attributes["location"] == "Lisbon" and me.attributes["dislikes"] == "mushrooms"
    assert "Melanie" not in _kinds(result)  # the other side's name makes no entity
    # The name stated in the turn wins over the message's.
    assert _me(extract_rules([HumanMessage("Call me Caro. I live in Lisbon.", name="Caroline")])) == "Caro"
    # The known spelling is reused.
    assert _me(extract_rules([HumanMessage("I live in Lisbon", name="Caroline")], ["CAROLINE"])) == "CAROLINE"


@pytest.mark.parametrize("name", ["user", "User", "human", "assistant", "alice_w", "u42", "jdoe", "me", "Thankfully",
                                  "A B C D", "bob@example.com", " "])
def test_a_handle_or_a_role_names_no_one(name):
    assert _me(extract_rules([HumanMessage("I live in Lisbon", name=name)])) == USER_ENTITY


def test_two_speakers_in_one_turn_name_no_one():
    chat = [HumanMessage("I live in Lisbon.", name="Mel"), HumanMessage("I hate mushrooms.", name="Caro")]
    assert _me(extract_rules(chat)) == USER_ENTITY
    assert _me(extract_rules([HumanMessage("I live in Lisbon.", name="Mary Ann"),
                              HumanMessage("I hate mushrooms.", name="Mary Ann")])) == "Mary Ann"
