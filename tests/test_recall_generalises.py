"""Recall that generalises (issue 44): a paraphrase that shares no word with the query is
found among turns that do share words, a speaker written in the text ranks as one given
with ``name=``, nothing said after the question is asked is recalled, and what a person
discloses about themselves is read as such — with the real MiniLM model on a real shard."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_tiered_memory import MemoryConfig, TieredMemory
from langchain_tiered_memory.embeddings import MiniLMEmbeddings
from langchain_tiered_memory.text.disclosure import disclosed
from langchain_tiered_memory.text.speakers import written_speaker

INLINE = MemoryConfig(job_mode="inline")
T0 = datetime(2025, 3, 1, 18, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def minilm():
    return MiniLMEmbeddings()


#: A chat of two friends: the answer to the query shares no word with it, a dozen turns do.
TARGET = "My sister gave birth to twins on Monday, a boy and a girl!"
QUERY = "Has anyone in her family had babies lately?"
CHAT = [
    ("Maya", "Hey Leo! Lately work has been a lot, but the weekend was lovely."),
    ("Leo", "Anyone in the office feel the same? Lately everyone seems tired."),
    ("Maya", "Her manager finally said yes to the family leave policy."),
    ("Leo", "The family reunion is in June, has anyone booked a hotel?"),
    ("Maya", TARGET),
    ("Leo", "Wow, congratulations, that is wonderful news!"),
    ("Maya", "Has anyone seen the new Italian place on the corner lately?"),
    ("Leo", "I had pasta there last week, her cooking is great."),
    ("Maya", "My family had a barbecue lately, anyone in the street came."),
    ("Leo", "Has her car been fixed? Anyone could give her a lift."),
    ("Maya", "I painted the kitchen green over the holidays."),
    ("Leo", "Babies on planes are loud, anyone who had a long flight knows."),
    ("Maya", "Her cat had kittens in the family garage lately."),
    ("Leo", "I am training for a half marathon in April."),
]


def _feed(memory: TieredMemory, speakers: str, chat=CHAT, at: datetime = T0) -> None:
    first = chat[0][0]
    for i in range(0, len(chat), 2):
        messages: list[BaseMessage] = []
        for j, (who, text) in enumerate(chat[i : i + 2]):
            kind = HumanMessage if who == first else AIMessage
            body = f"{who}: {text}" if speakers == "text" else text
            messages.append(kind(body, name=who if speakers == "name" else None, id=f"m{i + j}"))
        memory.after_turn("u", "chat", messages, at=at + timedelta(minutes=i))
    memory.flush()


def test_a_paraphrase_without_a_shared_word_is_found_among_turns_that_share_words(tmp_path, minilm):
    target_id = f"m{[t for _, t in CHAT].index(TARGET)}"
    with TieredMemory(tmp_path / "m", INLINE, embeddings=minilm) as memory:
        _feed(memory, "name")
        found = memory.recall("u", QUERY, k=10, at=T0 + timedelta(days=2), peek=True)
        ids = [i for e in found for i in e.message_ids]
        assert target_id in ids[:10], [e.text for e in found]


def test_a_speaker_written_in_the_text_ranks_as_one_given_with_name(tmp_path, minilm):
    queries = [QUERY, "Who is training for a race?", "Maya: what colour did I paint the kitchen?",
               "Where did Leo eat pasta?"]
    ranked: dict[str, list[list[str]]] = {}
    for form in ("name", "text"):
        with TieredMemory(tmp_path / form, INLINE, embeddings=minilm) as memory:
            _feed(memory, form)
            ranked[form] = [
                [i for e in memory.recall("u", q, k=5, at=T0 + timedelta(days=2), peek=True) for i in e.message_ids][:5]
                for q in queries
            ]
    assert ranked["name"] == ranked["text"]
    assert all(r for r in ranked["name"])


def test_nothing_said_after_the_question_is_asked_is_recalled(tmp_path, minilm):
    with TieredMemory(tmp_path / "m", INLINE, embeddings=minilm) as memory:
        memory.after_turn("u", "s1", [HumanMessage("I adopted a grey cat called Pixel.", id="early")], at=T0)
        memory.after_turn("u", "s2", [HumanMessage("Pixel the cat ran away and never came back.", id="late")],
                          at=T0 + timedelta(days=30))
        memory.flush()
        asked_then = memory.recall("u", "what about my cat Pixel?", k=10, at=T0 + timedelta(days=1), peek=True)
        ids = {i for e in asked_then for i in e.message_ids}
        assert "early" in ids and "late" not in ids
        asked_now = memory.recall("u", "what about my cat Pixel?", k=10, peek=True)
        assert {"early", "late"} <= {i for e in asked_now for i in e.message_ids}


@pytest.mark.parametrize("text, expected", [
    ("Caroline: I painted a lake sunrise", ("Caroline", "I painted a lake sunrise")),
    ("Mary Ann Smith: back home now", ("Mary Ann Smith", "back home now")),
    ("Note: the meeting moved", None),
    ("User: hello", None),
    ("Step 2: preheat the oven", None),
    ("Q: why?", None),
    ("just text, no colon", None),
    ("the ratio is 3:1 here", None),
])
def test_a_written_speaker_is_a_name_never_a_label(text, expected):
    assert written_speaker(text) == expected


@pytest.mark.parametrize("text, kinds", [
    ("Since I started running in the mornings I've felt a lot less anxious.", {"cause"}),
    ("I'm saving up to buy a camper van next year.", {"goal"}),
    ("Honesty really matters to me, more than being liked.", {"value"}),
    ("I've been feeling really lonely since the move.", {"cause", "state"}),  # either reading holds
    ("The train leaves at nine from platform four.", {None}),
    ("Do you want to grab lunch?", {None}),
    ("She has been feeling stressed since the move.", {None}),  # of someone else: not a disclosure
])
def test_what_a_person_discloses_about_themselves_is_read_as_such(text, kinds):
    assert disclosed(text) in kinds


def test_a_disclosure_becomes_a_memory_that_a_later_message_reaches(tmp_path, minilm):
    with TieredMemory(tmp_path / "m", INLINE, embeddings=minilm) as memory:
        memory.after_turn("u", "s1", [HumanMessage("Since I learned to say no at work, I've felt a lot less stressed."),
                                      AIMessage("That sounds like a real change.")], at=T0)
        for n, food in enumerate(["lentils", "rice", "tofu", "leeks", "eggs", "beans"]):
            memory.after_turn("u", "s1", [HumanMessage(f"Can you suggest a recipe with {food}?"),
                                          AIMessage("Sure, try a simple stir-fry.")], at=T0 + timedelta(minutes=n + 1))
        memory.flush()
        stored = [m.content for m in memory.memories.list("u")]
        assert any("less stressed" in s for s in stored), stored
        found = memory.recall("u", "I agreed to lead another project and now I'm completely overwhelmed again.",
                              k=5, at=T0 + timedelta(days=40), peek=True)
        assert any("say no" in e.text for e in found), [e.text for e in found]
