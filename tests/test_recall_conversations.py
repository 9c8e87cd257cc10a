"""Recall over two-person conversations as they are really said: names and pleasantries,
answers that follow the question in other words, updates said as changes — the real MiniLM
model on a real Qdrant Edge shard."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_tiered_memory import MemoryConfig, TieredMemory
from langchain_tiered_memory.embeddings import MiniLMEmbeddings

T0 = datetime(2023, 3, 1, 18, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def minilm():
    return MiniLMEmbeddings()


@pytest.fixture
def memory(tmp_path, minilm):
    with TieredMemory(tmp_path / "memory", MemoryConfig(job_mode="inline"), embeddings=minilm) as m:
        yield m


def chat(memory: TieredMemory, user: str, sessions: list[list[tuple[str, str]]], first: str) -> dict[str, str]:
    """Feeds ``(speaker, text)`` sessions an exchange at a time, each speaker named on the
    message; returns the text of each message id."""
    texts = {}
    for n, session in enumerate(sessions):
        at = T0 + timedelta(days=7 * n)
        for i in range(0, len(session), 2):
            messages: list[BaseMessage] = []
            for j, (who, text) in enumerate(session[i : i + 2], i):
                mid = f"s{n}-{j}"
                texts[mid] = text
                messages.append((HumanMessage if who == first else AIMessage)(text, name=who, id=mid))
            memory.after_turn(user, f"{user}-s{n}", messages, at=at + timedelta(minutes=i))
    memory.flush()
    return texts


PLEASANTRIES = [
    [("Jon", "Hey Gina! How's it going?"), ("Gina", "Hey Jon! Busy week, how about you?"),
     ("Jon", "Dance studio is keeping me on my toes."), ("Gina", "That's the spirit! Bye!")],
    [("Jon", "Gina, long time! What's new?"),
     ("Gina", "I lost my job at Door Dash this month, so money is tight right now."),
     ("Jon", "Oh no, sorry to hear that."), ("Gina", "Remember Jon, Just do it!")],
    [("Jon", "I'm nervous about the investor pitch."), ("Gina", "Go get 'em, Jon!"),
     ("Jon", "Thanks Gina!"), ("Gina", "Good luck, Jon! Bye!")],
]


def test_turns_of_names_and_pleasantries_never_outrank_the_turn_that_says_it(memory):
    texts = chat(memory, "gj", PLEASANTRIES, first="Jon")
    hits = memory.recall("gj", "When has Gina lost her job at Door Dash?", k=5, at=T0 + timedelta(days=30))
    named = [texts[i] for h in hits for i in h.message_ids]
    answer = "I lost my job at Door Dash this month, so money is tight right now."
    assert named[0] == answer
    pleasantries = {"That's the spirit! Bye!", "Remember Jon, Just do it!", "Go get 'em, Jon!", "Good luck, Jon! Bye!"}
    # Every pleasantry that is named at all comes after the answer, and none of them beat it.
    assert all(named.index(p) > 0 for p in pleasantries if p in named)
    first = hits[0]
    assert all(h.score < first.score for h in hits[1:])


def test_the_answer_that_follows_a_question_in_other_words_is_found(memory):
    sessions = [
        [("Maria", "I volunteered at the shelter again, it was lovely."),
         ("John", "Yeah Maria, keep it up! I just joined a marching event for veterans' rights."),
         ("Maria", "Wow, John! What inspired you to join it?"),
         ("John", "I've always had great respect for our military and wanted to show my support."),
         ("Maria", "That's amazing."), ("John", "Thanks!")],
        [("Maria", "How was your weekend?"), ("John", "Relaxing, we went hiking up the hills."),
         ("Maria", "Sounds fun, I spent mine baking bread."), ("John", "Nice, send me some!")],
    ]
    texts = chat(memory, "mj", sessions, first="Maria")
    hits = memory.recall("mj", "What inspired John to join the marching event for veterans?", k=3,
                         at=T0 + timedelta(days=20))
    named = [texts[i] for h in hits for i in h.message_ids]
    # The reply shares no word with the question but "join"'s neighbour: it is read with it.
    assert "I've always had great respect for our military and wanted to show my support." in named[:3]


@pytest.mark.xfail(strict=True, reason=(
    "the fitted ranking (issue 44) gives a session's other matches little weight: on LoCoMo, "
    "LongChat and LoCoMo-Plus, cross-validated, a turn's thread match (thread_dense, constrained "
    "or not) does not lift recall, so this hand-set preference of the old ranking is not kept; "
    "constraining it to lift cost CV hit@10 on LoCoMo-Plus (0.622 -> 0.617) and broke the "
    "question-about-now order. strict: it fails the suite the day a refit agrees again"))
def test_the_session_where_the_subject_came_up_lends_its_turns_weight(memory):
    sessions = [
        [("Ana", "Back from two weeks in Japan with my sister!"), ("Ben", "Welcome back! How was it?"),
         ("Ana", "Exhausting but wonderful, we walked everywhere."), ("Ben", "Did anything stand out?"),
         ("Ana", "Honestly the ramen stalls in Osaka, we ate there every single night."), ("Ben", "Ha, classic.")],
        [("Ben", "What are you up to this weekend?"), ("Ana", "Cleaning the flat, then a long bike ride to the lake."),
         ("Ben", "Nice, I love that route."), ("Ana", "The best part is the coffee stand at the top of the hill.")],
    ]
    texts = chat(memory, "ab", sessions, first="Ana")
    hits = memory.recall("ab", "What stood out for Ana on her trip?", k=5, at=T0 + timedelta(days=20))
    named = [texts[h.message_ids[0]] for h in hits]
    # The answer is two turns from the words that match and shares none of the question's:
    # the trip's session lends it weight that the weekend's loose match does not get.
    answer = "Honestly the ramen stalls in Osaka, we ate there every single night."
    distractor = "The best part is the coffee stand at the top of the hill."
    assert answer in named
    assert distractor not in named or named.index(answer) < named.index(distractor)


def test_a_message_of_many_subjects_is_found_by_the_sentence_that_answers(memory):
    news = ("Morning Priya! Sorry I've been so quiet, the move took forever and the new flat still smells of "
            "paint. The cat hid under the bed for two days. Oh, and I finally passed my driving test on the "
            "third try!")
    sessions = [
        [("Sam", news), ("Priya", "Congrats Sam, that's huge!")],
        [("Priya", "How was your weekend?"), ("Sam", "I drove my mum to the airport on Saturday, the traffic was awful."),
         ("Priya", "Ugh, sorry."), ("Sam", "It's fine, we had a nice lunch after.")],
    ]
    texts = chat(memory, "sp", sessions, first="Sam")
    hits = memory.recall("sp", "How did Sam do on the road test?", k=3, at=T0 + timedelta(days=20))
    # Read whole, the long message is an average of a move, a cat and a test, and the short
    # one about driving is nearer; its last sentence is the answer.
    assert texts[hits[0].message_ids[0]] == news


def test_sentence_spans_point_at_each_sentence_of_the_rendered_line():
    from langchain_tiered_memory.recall.dialogue import MAX_SENTENCES, Line, sentence_spans

    line = Line("m1", 3, T0, "Sam", "Morning!\n\nThe move   took forever.  Oh, and I passed my test! :)")
    text = line.render()
    assert [text[a:b] for a, b in sentence_spans(line, text)] == [
        "Morning!", "The move took forever.", "Oh, and I passed my test!"]
    assert sentence_spans(Line("m2", 4, T0, "Sam", "Just one sentence here."), "") == []
    many = Line("m3", 5, T0, "Sam", " ".join(f"Point {n} is made." for n in range(MAX_SENTENCES + 5)))
    assert len(sentence_spans(many, many.render())) == MAX_SENTENCES


def test_a_day_named_in_the_question_finds_what_was_told_of_it_later(make_memory, minilm):
    # On both backends: the units that tell of a day are found by a filter on the points.
    with make_memory(MemoryConfig(job_mode="inline"), embeddings=minilm) as memory:
        _told_of_a_day(memory)


def _told_of_a_day(memory: TieredMemory) -> None:
    # Sessions a week apart from Wednesday 1 March; the last one is said on 2 March.
    sessions = [
        [("Lena", "Spent the whole morning repotting ferns, the balcony is a jungle now."),
         ("Omar", "Nice, green fingers!"),
         ("Lena", "Then I baked bread for the week and did the laundry."), ("Omar", "Ha, lovely.")],
        [("Lena", "My brother and I went bowling, he won both games."), ("Omar", "Rematch soon then!")],
    ]
    texts = chat(memory, "lo", sessions, first="Lena")
    told = "Yesterday my brother and I taught a free pottery workshop for the kids at the library!"
    reply = "That sounds like a great day."
    texts.update({"d2-0": told, "d2-1": reply})
    memory.after_turn("lo", "lo-d2", [HumanMessage(told, name="Lena", id="d2-0"), AIMessage(reply, name="Omar", id="d2-1")],
                      at=T0 + timedelta(days=1, hours=2))
    memory.flush()
    hits = memory.recall("lo", "What did Lena and her brother do on 1 March 2023?", k=3, at=T0 + timedelta(days=20))
    named = [texts[h.message_ids[0]] for h in hits]
    # Said on the 2nd, it tells of the 1st: the day named is matched by either, and what the
    # brother did on another day (bowling) counts for less.
    assert told in named, named
    bowling = "My brother and I went bowling, he won both games."
    assert bowling not in named or named.index(told) < named.index(bowling), named


def test_a_question_asking_when_prefers_the_message_that_tells_a_time(memory):
    sessions = [
        [("Ava", "Painting is my favourite way to relax, I paint landscapes most evenings."),
         ("Ben", "Love that, any favourites?"), ("Ava", "The coast near my parents' place, always."), ("Ben", "Nice.")],
        [("Ben", "How did you get into art anyway?"),
         ("Ava", "Three years ago a friend gave me a box of brushes and I was hooked."),
         ("Ben", "What a gift!"), ("Ava", "Best present ever.")],
    ]
    texts = chat(memory, "ab", sessions, first="Ava")
    hits = memory.recall("ab", "When did Ava get hooked on painting?", k=3, at=T0 + timedelta(days=30))
    # Both match; the answer to "when" is the one said with a time.
    assert texts[hits[0].message_ids[0]] == "Three years ago a friend gave me a box of brushes and I was hooked."


def test_a_window_hit_names_its_messages_best_first(memory):
    texts = chat(memory, "w", [[
        ("Ana", "Morning! Did you sleep well?"), ("Ben", "Not really, the neighbours were loud."),
        ("Ana", "My sister Clara is moving to Porto next month for a job at the aquarium."),
        ("Ben", "Oh nice, tell her congrats."),
    ]], first="Ana")
    hits = memory.recall("w", "Where is Clara moving for her new job?", k=3, grains=["window"])
    assert hits and hits[0].grain == "window"
    window = hits[0]
    assert len(window.message_ids) > 1
    assert texts[window.message_ids[0]].startswith("My sister Clara is moving to Porto")


@pytest.mark.parametrize("before, after, question, new, old, attribute", [
    ("I live in Paris with my wife.", "Big news: we moved from Paris to Lisbon last week.",
     "where does the user live now?", "Lisbon", "Paris", "location"),
    ("I live in Berlin.", "Now I live in Munich, closer to my parents.",
     "where does the user live?", "Munich", "Berlin", "location"),
    ("I work at Globex as an engineer.", "I no longer work at Globex.",
     "where does the user work?", "no longer", "works at Globex", "employer"),
])
def test_update_phrasings_supersede_in_search_and_in_the_profile(memory, before, after, question, new, old, attribute):
    memory.after_turn("u", "t1", [HumanMessage(before), AIMessage("Noted.")], at=T0)
    memory.after_turn("u", "t2", [HumanMessage(after), AIMessage("Noted.")], at=T0 + timedelta(days=40))
    memory.flush()
    found = [h.entry.content for h in memory.memories.search("u", question, k=5)]
    assert new in found[0]
    assert not any(old in f and new not in f for f in found)  # the old value is kept for history only
    history = [m.content for m in memory.memories.list("u") if m.valid_to is not None]
    assert any(old in h for h in history)
    profile = memory.entities.get("u", "user")
    assert profile is not None
    values = [v.value for v in profile.history[attribute]]
    assert len(values) == 2 and profile.history[attribute][0].superseded_at is not None
    assert (new if attribute == "location" else "formerly") in profile.attributes[attribute]


@pytest.mark.parametrize("before, after, question, new, old", [
    ("My favourite drink is coffee.", "I've switched from coffee to green tea.",
     "what does the user drink?", "green tea", "favourite drink is coffee"),
    ("My favourite café is Brûlerie Émile.", "I switched from Brûlerie Émile to the bakery downstairs.",
     "which café does the user go to?", "bakery", "favourite café is Brûlerie Émile"),
])
def test_switching_closes_the_memories_that_name_the_old_thing(memory, before, after, question, new, old):
    memory.after_turn("u", "t1", [HumanMessage(before), AIMessage("Noted.")], at=T0)
    memory.after_turn("u", "t2", [HumanMessage(after), AIMessage("Noted.")], at=T0 + timedelta(days=40))
    memory.flush()
    found = [h.entry.content for h in memory.memories.search("u", question, k=5)]
    assert found and new in found[0]
    assert not any(old in f for f in found)  # closed: kept for history, out of default search
    closed = [m for m in memory.memories.list("u") if m.valid_to is not None]
    assert [m.content for m in closed if old in m.content] and all(m.superseded_by for m in closed)
    thing = old.split(" is ")[1]
    profile = memory.entities.get("u", "user")  # the profile says it is past, as "no longer" does
    assert profile is not None
    [(key, value)] = [(k, v) for k, v in profile.attributes.items() if thing in v]
    assert value == f"formerly {thing}" and profile.history[key][0].superseded_at is not None


def test_switching_closes_only_whole_word_mentions(memory):
    memory.memories.remember("u", "The user roasts coffeeberries at home.")
    memory.memories.remember("u", "The user's favourite drink is coffee.")
    memory.after_turn("u", "t1", [HumanMessage("I switched from coffee to tea."), AIMessage("Noted.")],
                      at=datetime.now(timezone.utc) + timedelta(days=1))
    memory.flush()
    current = {m.content for m in memory.memories.list("u") if m.valid_to is None}
    assert "The user roasts coffeeberries at home." in current
    assert "The user's favourite drink is coffee." not in current


def test_remember_many_takes_what_a_memory_replaces(memory):
    memory.memories.remember("u", "The user's phone is an Android.")
    with pytest.raises(Exception, match="replaces must be"):
        memory.memories.remember_many("u", [{"content": "The user has an iPhone.", "replaces": 3}])
    later = (datetime.now(timezone.utc) + timedelta(days=1))
    memory.memories.remember_many("u", [{"content": "The user has an iPhone.", "replaces": "android",
                                         "valid_from": later}])
    current = {m.content for m in memory.memories.list("u") if m.valid_to is None}
    assert current == {"The user has an iPhone."}


def test_a_turns_query_naming_a_speaker_is_embedded_once_for_recall_and_episodes(tmp_path, minilm):
    """before_turn's memories and episodes sections search with one embedding of the query
    (the speakers' names left out for both), not one each: the embedding is most of a
    turn's read."""
    from langchain_core.embeddings import Embeddings

    class Counting(Embeddings):
        def __init__(self) -> None:
            self.queries: list[str] = []

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return minilm.embed_documents(texts)

        def embed_query(self, text: str) -> list[float]:
            self.queries.append(text)
            return minilm.embed_query(text)

    counting = Counting()
    with TieredMemory(tmp_path / "m", MemoryConfig(job_mode="inline"), embeddings=counting) as memory:
        chat(memory, "gj", PLEASANTRIES, first="Jon")
        for n in range(len(PLEASANTRIES)):
            memory.end_session("gj", f"gj-s{n}")
        memory.flush()
        counting.queries.clear()
        ctx = memory.before_turn("gj", "gj-new", "When has Gina lost her job at Door Dash?", at=T0 + timedelta(days=30))
        assert {s.name for s in ctx.sections} >= {"memories", "episodes"}
        assert counting.queries == ["When has lost her job at Door Dash?"]


def test_the_name_a_listener_is_called_by_matches_no_question_about_them(memory):
    # An app that names no speaker on its messages: "Gina" is in the lines that call her,
    # not in what she said. The index leaves the listener's name out of what it reads, so
    # "She's great, thanks Gina!" no longer matches a question about Gina by her name.
    for human, ai in [("How was your week?", "Busy! How about you?"),
                      ("I'm taking my sister hiking in the Alps on Saturday.", "Say hi to your sister, Gina!"),
                      ("Will do, thanks Jon!", "Have fun, Gina!"),
                      ("How is your sister doing?", "She's great, thanks Gina!")]:
        memory.after_turn("g", "s", [HumanMessage(human), AIMessage(ai)], at=T0)
    memory.flush()
    hits = memory.recall("g", "What is Gina doing with her sister?", k=5, at=T0 + timedelta(days=1))
    said = [h.text for h in hits]
    answer = next(i for i, t in enumerate(said) if "hiking in the Alps" in t)
    for only_calls in ("She's great, thanks Gina!", "Have fun, Gina!"):
        assert all(i > answer for i, t in enumerate(said) if only_calls in t), said


def test_the_index_reads_a_line_without_the_names_it_calls_its_listener_by():
    from langchain_tiered_memory.recall.dialogue import Line, indexed_text
    from langchain_tiered_memory.text.vocatives import unaddressed

    assert unaddressed("Hey Caroline! Thanks, Mel! That's the spirit, Jon! How are you, Jon?") == (
        "Hey! Thanks! That's the spirit! How are you?"
    )
    # What it is about, and names that are no call, stay.
    for kept in ("I met Caroline at the museum.", "I love France, especially Paris.", "Caroline, Mel and I went."):
        assert unaddressed(kept) == kept
    line = Line("m1", 3, T0, "assistant", "Go get 'em, Jon! The pitch is Friday.", 12)
    assert indexed_text([line]) == "assistant (2023-03-01): Go get 'em! The pitch is Friday."
    assert line.render() == "assistant (2023-03-01): Go get 'em, Jon! The pitch is Friday."  # as quoted: whole
