"""Recall that finds what matters: relevance from similarity, the whole conversation indexed,
time and updates understood — with the real MiniLM model on a real Qdrant Edge shard."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langchain_tiered_memory import MemoryConfig, TieredMemory
from langchain_tiered_memory.cli import DEMO_TURNS
from langchain_tiered_memory.embeddings import MiniLMEmbeddings
from langchain_tiered_memory.index.points import GRAINS

INLINE = MemoryConfig(job_mode="inline")


@pytest.fixture(scope="module")
def minilm():
    return MiniLMEmbeddings()


@pytest.fixture
def memory(tmp_path, minilm):
    with TieredMemory(tmp_path / "memory", INLINE, embeddings=minilm) as m:
        yield m


def test_the_drink_question_finds_the_tea_and_recalls_cannot_snowball(memory):
    memory.after_turn("u1", "t1", [HumanMessage("My name is Alice, I live in Paris and I prefer green tea.")])
    memory.flush()
    assert len(memory.memories.list("u1")) == 3  # name, home, drink: the offline rules

    def first(query: str) -> str:
        return memory.memories.search("u1", query, k=3)[0].entry.content

    assert "tea" in first("what does the user like to drink")
    for _ in range(10):  # each search boosts what it returns: the home memory, ten times
        assert "Paris" in first("where does the user live")
    assert "tea" in first("what does the user like to drink")


def test_an_unrelated_query_returns_nothing_at_the_default_threshold(memory):
    memory.after_turn("u1", "t1", [HumanMessage("My name is Alice, I live in Paris and I prefer green tea."),
                                   AIMessage("Noted, Alice.")])
    memory.flush()
    assert memory.memories.search("u1", "how do I change a bicycle tyre", k=5) == []
    assert memory.recall("u1", "how do I change a bicycle tyre", k=5) == []
    hits = memory.memories.search("u1", "what does the user like to drink", k=5, explain=True)
    assert hits and all(h.parts.relevance >= memory.config.score_threshold for h in hits)


def test_the_demo_budget_said_at_turn_three_is_in_the_context_at_the_end(tmp_path, minilm):
    config = MemoryConfig(max_tokens=600, system_reserve=60, output_reserve=100, summary_max_tokens=120,
                          job_mode="inline")
    with TieredMemory(tmp_path / "demo", config, embeddings=minilm) as memory:
        for question, answer in DEMO_TURNS:
            memory.after_turn("alice", "demo", [HumanMessage(question), AIMessage(answer)])
        context = memory.before_turn("alice", "demo", query="How much money do I have for the trip?")
        # Long gone from the window; the conversation itself is recalled.
        assert "3,000 euros" not in "".join(m.text for m in context.window)
        assert "3,000 euros" in context.memory_block
        assert context.token_usage.total <= context.token_usage.budget


def test_an_update_comes_first_and_the_old_value_stays_in_history(memory):
    t0 = datetime(2025, 1, 10, 9, tzinfo=timezone.utc)
    memory.after_turn("u", "s1", [HumanMessage("I live in Paris."), AIMessage("Lovely city.")], at=t0)
    memory.after_turn("u", "s2", [HumanMessage("Big news: we moved to Lisbon!"), AIMessage("Congratulations!")],
                      at=t0 + timedelta(days=90))
    memory.flush()
    hits = memory.memories.search("u", "which city does the user live in", k=5)
    assert "Lisbon" in hits[0].entry.content
    assert all("Paris" not in h.entry.content for h in hits)  # superseded: out of default recall
    history = {e.content: e for e in memory.memories.list("u")}
    old, new = history["The user lives in Paris."], history["The user lives in Lisbon."]
    assert old.valid_to == new.valid_from == t0 + timedelta(days=90) and old.superseded_by == new.id
    assert new.current and not old.current
    # The whole conversation still holds both; the newer statement comes first.
    evidence = memory.recall("u", "where does the user live now?", k=5)
    texts = [e.text for e in evidence]
    lisbon = next(i for i, t in enumerate(texts) if "Lisbon" in t)
    paris = next((i for i, t in enumerate(texts) if "Paris" in t), len(texts))
    assert lisbon < paris


@pytest.mark.parametrize("question, said, new", [
    pytest.param(
        "Which phone do I use these days?",
        ["My Pixel 8 battery dies by lunchtime.", "Dropped my Pixel 8 again, the screen is cracked.",
         "Setting up my new OnePlus 12, transferring photos takes forever."], "OnePlus 12",
        marks=pytest.mark.xfail(strict=True, reason=(
            "the fitted ranking (issue 44) gives the old value's closer words (cosine 0.27 against "
            "0.19) more than the statement of the change's recency and news: probability 0.092 "
            "against 0.070, more than the latest's tie-break (0.05 x recency) closes; the model "
            "fitted on the feed before the last offline-rule changes kept this order. strict: it "
            "fails the suite when a refit puts the change first again"))),
    ("What's my morning drink these days?",
     ["I can't function before my morning espresso.", "Out of espresso again, need to go shopping.",
      "Gave up my old habit; rooibos it is, every single day."], "rooibos"),
])
def test_a_question_about_now_puts_the_statement_of_the_change_before_the_old_value(memory, question, said, new):
    # The statement of the change shares few words with the question; the old value's do.
    t0 = datetime(2025, 1, 10, 9, tzinfo=timezone.utc)
    for i, (day, text) in enumerate(zip((0, 20, 60), said)):
        memory.after_turn("u", f"s{i}", [HumanMessage(text), AIMessage("Noted.")], at=t0 + timedelta(days=day))
    memory.after_turn("u", "s3", [HumanMessage("Any tips for a phone call with my landlord? And drinks for a party?"),
                                  AIMessage("Sure.")], at=t0 + timedelta(days=65))
    memory.flush()
    texts = [e.text for e in memory.recall("u", question, k=4, grains=["turn"], at=t0 + timedelta(days=75))]
    first_new = next(i for i, t in enumerate(texts) if new in t)
    assert all(first_new < i for i, t in enumerate(texts) if any(s in t for s in said[:2]))


def test_a_question_about_now_finds_the_statement_of_the_change_among_many_closer_words(memory):
    # Sixty questions about phone calls match "which phone" better than the statement does,
    # by either leg: only a search among what tells of a change finds it.
    t0 = datetime(2025, 1, 10, 9, tzinfo=timezone.utc)
    memory.after_turn("u", "s0", [HumanMessage("Setting up my new OnePlus 12, transferring photos takes forever."),
                                  AIMessage("Enjoy it!")], at=t0)
    people = ["landlord", "bank", "dentist", "boss", "plumber", "doctor", "school", "insurer", "gym", "mechanic",
              "vet", "neighbour"]
    asks = ["a phone call with my {}", "calling my {} on the phone", "a phone conversation with my {}",
            "phoning my {} about the bill", "a phone chat with my {}"]
    chatter = [m for a in asks for p in people
               for m in (HumanMessage(f"Any tips for {a.format(p)}?"), AIMessage("Keep it short and friendly."))]
    memory.after_turn("u", "s1", chatter, at=t0 + timedelta(days=5))
    memory.flush()
    found = memory.recall("u", "Which phone do I use these days?", k=3, at=t0 + timedelta(days=10))
    # Without the search among news it is in no top 30 (sixty closer turns by both legs);
    # with it, it ties the closest of them (within 0.01: which of the two is first is the
    # embedder's rounding).
    assert any("OnePlus 12" in e.text for e in found)


def test_a_relative_date_finds_the_turn_of_that_session(memory):
    days = {
        "mon": datetime(2025, 3, 3, 18, tzinfo=timezone.utc),   # a Monday
        "sat": datetime(2025, 3, 8, 11, tzinfo=timezone.utc),   # the Saturday after
        "wed": datetime(2025, 3, 12, 20, tzinfo=timezone.utc),
    }
    said = {
        "mon": "Work was long today, lots of spreadsheets.",
        "sat": "Today was all about axe throwing with my cousins.",
        "wed": "Cooked a big pot of lentil soup tonight.",
    }
    ids = {}
    for day, when in days.items():
        message = HumanMessage(said[day])
        memory.after_turn("u", f"session-{day}", [message, AIMessage("Sounds good.")], at=when)
        ids[day] = memory.threads.messages("u", f"session-{day}")[0].id
    asked = datetime(2025, 3, 13, 9, tzinfo=timezone.utc)  # the Thursday after
    [first, *_] = memory.recall("u", "What was I up to last weekend?", k=3, at=asked)
    assert ids["sat"] in first.message_ids and first.at.date() == days["sat"].date()
    assert "axe throwing" in first.text and "(2025-03-08)" in first.text  # dated
    # The same question asked a week later is about another weekend.
    later = memory.recall("u", "What was I up to last weekend?", k=3, at=asked + timedelta(days=7))
    assert all(ids["sat"] not in e.message_ids for e in later[:1]) or later == []
    context = memory.before_turn("u", "q", query="What was I up to last weekend?", at=asked)
    assert "axe throwing" in context.memory_block and "2025-03-08" in context.memory_block


def test_a_time_when_nothing_was_said_weighs_nothing(memory):
    # Asked years after the conversation (or against another clock), "last night" holds
    # nothing: the answer keeps its whole relevance instead of every unit losing a share.
    said = datetime(2023, 5, 1, 20, tzinfo=timezone.utc)
    memory.after_turn("u", "s1", [HumanMessage("I cooked a mushroom risotto for my parents."),
                                  AIMessage("That sounds delicious!")], at=said)
    memory.flush()
    plain = memory.recall("u", "What did I cook for my parents?", k=3, at=said + timedelta(days=1), explain=True)
    years = memory.recall("u", "What did I cook for my parents last night?", k=3, at=datetime(2026, 1, 5, tzinfo=timezone.utc),
                          explain=True)
    assert "risotto" in years[0].text and "risotto" in plain[0].text
    assert years[0].parts is not None and plain[0].parts is not None
    assert years[0].parts.relevance >= 0.9 * plain[0].parts.relevance
    # Said then, the same question is about that night: the risotto, lifted by its time.
    then = memory.recall("u", "What did I cook for my parents last night?", k=3, at=said + timedelta(hours=15),
                         explain=True)
    assert "risotto" in then[0].text and then[0].parts is not None
    assert then[0].parts.relevance > years[0].parts.relevance


def test_a_statement_recalls_what_it_calls_back_not_what_was_said_on_its_day(memory):
    # before_turn reads the user's message as its query. "Yesterday I finally ran the
    # marathon!" tells when it happened; what it calls back, the training, was said weeks
    # before, and yesterday's other chatter is not lifted over it.
    race = datetime(2025, 4, 6, 10, tzinfo=timezone.utc)
    memory.after_turn("u", "s1", [HumanMessage("My marathon training plan has me running 50 miles a week now."),
                                  AIMessage("That's a serious plan!")], at=race - timedelta(days=30))
    memory.after_turn("u", "s2", [HumanMessage("I finally fixed the leaky kitchen tap."), AIMessage("Nice work!")],
                      at=race)
    memory.flush()
    said = "Yesterday I finally ran the marathon!"
    first = memory.recall("u", said, k=3, at=race + timedelta(days=1))[0]
    assert "training plan" in first.text
    # Asked, the same day is the point: what was said then comes first.
    asked = memory.recall("u", "What did I finally do yesterday?", k=3, at=race + timedelta(days=1))[0]
    assert "tap" in asked.text


def test_a_day_the_message_tells_of_is_not_a_day_it_asks_about(memory):
    # "Coming over on Sunday" is next Sunday: last Sunday's chatter must not be lifted over
    # what answers the question, nor the answer pushed behind it.
    sunday = datetime(2025, 3, 9, 15, tzinfo=timezone.utc)
    memory.after_turn("u", "a", [HumanMessage("My cousin Lena is vegetarian and can't stand mushrooms."),
                                 AIMessage("Noted!")], at=sunday - timedelta(days=40))
    memory.after_turn("u", "b", [HumanMessage("Spent the whole day cleaning the garage."), AIMessage("Satisfying!")],
                      at=sunday)
    memory.after_turn("u", "b", [HumanMessage("Made a big roast for lunch, the kids loved it."), AIMessage("Yum!")],
                      at=sunday + timedelta(hours=1))
    memory.flush()
    evidence = memory.recall("u", "My cousin Lena is coming over on Sunday. What should I cook for her?", k=3,
                             at=sunday + timedelta(days=4))
    # What was said of Lena comes first (her long-term memory, drawn from the same message,
    # may stand beside it), and the garage does not come before it.
    said = [e for e in evidence if e.grain != "fact"]
    assert "vegetarian" in said[0].text
    assert all("garage" not in e.text for e in evidence[: evidence.index(said[0])])


def test_a_pastime_taken_up_is_a_dated_hobby_and_the_newest_comes_first(memory):
    # "Signed up for a pottery club" never says "hobby", the word the question asks with:
    # the offline rules' memory does, and names the message it came from.
    t0 = datetime(2025, 1, 10, 9, tzinfo=timezone.utc)
    said = [(0, "Joined an archery group, they meet on Wednesdays."), (20, "The archery range was packed today."),
            (30, "Any tips for a rainy weekend?"), (60, "Signed up for a pottery club, it's my main thing now.")]
    for i, (day, text) in enumerate(said):
        memory.after_turn("u", f"s{i}", [HumanMessage(text), AIMessage("Noted.")], at=t0 + timedelta(days=day))
    memory.flush()
    asked, question = t0 + timedelta(days=70), "What's my main hobby these days?"
    [first, *rest] = memory.recall("u", question, k=3, grains=["fact"], at=asked)
    assert first.text.startswith("The user's hobby is pottery") and first.at.date() == (t0 + timedelta(days=60)).date()
    assert memory.threads.messages("u", "s3")[0].id in first.message_ids
    assert any("archery" in e.text for e in rest)  # kept, behind the newer one
    block = memory.before_turn("u", "q", query=question, at=asked).memory_block
    quoted = block[block.index("## memories"):]
    assert "pottery" in quoted and quoted.index("pottery") < quoted.index("archery")


def test_the_memory_block_reads_newest_first_so_an_update_is_met_first(memory):
    t0 = datetime(2025, 1, 10, 9, tzinfo=timezone.utc)
    memory.after_turn("u", "s1", [HumanMessage("My phone is a Fairphone 5, the camera is great."), AIMessage("Nice!")],
                      at=t0)
    memory.after_turn("u", "s2", [HumanMessage("Setting up my new Pixel 8, transferring photos takes forever."),
                                  AIMessage("Worth it!")], at=t0 + timedelta(days=60))
    memory.flush()
    block = memory.before_turn("u", "q", query="Which phone do I have?", at=t0 + timedelta(days=61)).memory_block
    quoted = block[block.index("## memories"):]
    assert "Pixel 8" in quoted and "Fairphone 5" in quoted
    assert quoted.index("Pixel 8") < quoted.index("Fairphone 5")


def test_every_hit_names_its_messages_and_forgetting_them_removes_the_hits(memory):
    memory.after_turn("u", "t", [HumanMessage("My locker code is 4471.", id="m1"), AIMessage("Noted.", id="m2")])
    memory.after_turn("u", "other", [HumanMessage("I like jazz.", id="m3")])
    hits = memory.recall("u", "what is my locker code", k=5)
    assert hits and "m1" in hits[0].message_ids
    assert {e.grain for e in hits} <= {"fact", "turn", "window"}
    memory.admin.forget(thread_id="t")
    assert all("4471" not in e.text for e in memory.recall("u", "what is my locker code", k=5))
    assert memory.recall("u", "which music do I like", k=1)[0].message_ids == ("m3",)


@pytest.fixture
def either(make_memory, minilm):
    """A memory on each relational backend (SQLite, and PostgreSQL with qdrant-client)."""
    with make_memory(INLINE, embeddings=minilm) as m:
        yield m


def test_a_matching_turn_is_quoted_with_its_neighbours(either):
    memory = either
    when = datetime(2025, 5, 1, 10, tzinfo=timezone.utc)
    memory.after_turn("u", "old", [
        HumanMessage("Can you recommend a novel?"),
        AIMessage("Try 'The Remains of the Day' by Kazuo Ishiguro."),
        HumanMessage("I finished the Ishiguro book, it made me cry."),
        AIMessage("It does that. Want another one of his?"),
    ], at=when)
    context = memory.before_turn("u", "new", query="Which book made me cry?")
    block = context.memory_block
    assert "made me cry" in block
    # The turn before it (the recommendation) and after it come along, dated.
    assert "Remains of the Day" in block and "Want another one" in block
    assert block.index("Remains of the Day") < block.index("made me cry") < block.index("Want another one")
    # The neighbours of matches in several threads are read in one query, each thread's own.
    memory.after_turn("u", "other", [HumanMessage(f"line {i}") for i in range(4)], at=when)
    units = memory._parts.storage.units
    keys = [memory._parts.storage.threads.get(t).key for t in ("old", "other")]
    found = units.spoken_many([(keys[0], [0, 3, 99]), (keys[1], [2, 1]), (keys[0], [1])])
    assert {k: [r[0] for r in rows] for k, rows in found.items()} == {keys[0]: [0, 1, 3], keys[1]: [1, 2]}
    assert json.loads(found[keys[1]][0][3])["data"]["content"] == "line 1"


def test_a_question_about_my_brother_reaches_what_was_said_of_him_by_name(memory):
    memory.after_turn("u", "s1", [HumanMessage("Zeno, my brother, just turned thirty."), AIMessage("Happy birthday to him!")])
    memory.after_turn("u", "s2", [HumanMessage("Zeno adopted a guinea pig called Biscuit."), AIMessage("Cute!")])
    memory.after_turn("u", "s3", [HumanMessage("My neighbour keeps chickens."), AIMessage("Fresh eggs!")])
    memory.flush()
    assert memory.entities.get("u", "Zeno").attributes["relation_to_user"] == "brother"
    evidence = memory.recall("u", "What pet does my brother have?", k=3)
    assert any("guinea pig" in e.text for e in evidence)


def _godmother_said(memory):
    """Helga is named as the godmother once, her job said by name only, among chatter."""
    memory.after_turn("u", "s1", [HumanMessage("My godmother Helga is coming over for dinner."), AIMessage("Lovely!")])
    memory.after_turn("u", "s2", [HumanMessage("Helga just qualified as a radiographer after years of study."),
                                  AIMessage("Congratulations to her!")])
    for i, chat in enumerate(["The heating broke again.", "What's a good book for a long flight?",
                              "My coworker changed jobs last week.", "Any tips for a job interview?"]):
        memory.after_turn("u", f"x{i}", [HumanMessage(chat), AIMessage("Good question, let me think.")])
    memory.flush()


def test_a_possessive_relation_is_asked_about_the_person_by_name(memory):
    _godmother_said(memory)
    evidence = memory.recall("u", "What's my godmother's line of work?", k=3)
    assert any("radiographer" in e.text for e in evidence)


def test_in_a_long_message_the_second_hop_asks_the_sentence_that_names_the_relation(memory, monkeypatch):
    from langchain_tiered_memory.index.recall_index import RecallIndex

    _godmother_said(memory)
    embedded: list[str] = []
    original = RecallIndex.embed_query
    monkeypatch.setattr(RecallIndex, "embed_query", lambda self, text: embedded.append(text) or original(self, text))
    message = ("The heating broke again and the landlord is away until next month. I spent the evening "
               "with blankets and tea. What's my godmother's line of work?")
    evidence = memory.recall("u", message, k=3)
    assert any("radiographer" in e.text for e in evidence)
    # The message, then its last sentence about Helga by name: not the whole message again.
    assert embedded == [message, "What's Helga's line of work?"]


def test_a_question_is_answered_by_what_was_said_not_by_what_was_asked(memory):
    memory.after_turn("u", "s1", [HumanMessage("What's the best way to learn the cello as an adult?"),
                                  AIMessage("A teacher, short daily practice, and patience.")])
    memory.after_turn("u", "s2", [HumanMessage("Three years of cello lessons now, I love it."),
                                  AIMessage("That's dedication!")])
    memory.flush()
    [first, *_] = memory.recall("u", "Which instrument do I play?", k=3, grains=["turn"], explain=True)
    assert "Three years of cello" in first.text
    # A line that says something and then asks still says it: it is not trusted less.
    memory.after_turn("u", "s3", [HumanMessage("My budget is 3,000 euros. Is that enough for Japan?")])
    memory.flush()
    budget = memory.recall("u", "How much money do I have for the trip?", k=1, grains=["turn"])
    assert "3,000 euros" in budget[0].text


def test_the_speaker_of_a_first_person_question_is_the_user(memory):
    memory.after_turn("u", "t", [
        HumanMessage("I bought a red kayak last summer."),
        AIMessage("A red kayak is a great choice; many people buy one for summer lakes."),
    ])
    [first, *_] = memory.recall("u", "What colour is the kayak I bought?", k=2, grains=["turn"])
    assert first.text.startswith("user (")


def test_overlapping_evidence_is_quoted_once_in_the_order_it_was_said(memory):
    memory.after_turn("u", "trip", [
        HumanMessage("We are planning a hiking trip to the Dolomites in July."),
        AIMessage("The Dolomites in July are beautiful; book the huts early."),
        HumanMessage("The hike to Rifugio Lagazuoi is the one I want to do on the Dolomites trip."),
        AIMessage("Lagazuoi has a cable car if the legs give out."),
        HumanMessage("My partner would rather stay in Cortina for the Dolomites trip."),
        AIMessage("Cortina makes a good base."),
    ], at=datetime(2025, 6, 1, 9, tzinfo=timezone.utc))
    memory.flush()
    context = memory.before_turn("u", "new", query="What did I say about the Dolomites trip?")
    (section,) = [s for s in context.sections if s.name == "memories"]
    # Turns and windows over the same messages: each message is quoted once, in order, and
    # the section's token count is what it holds.
    for text in ("planning a hiking trip", "Rifugio Lagazuoi", "stay in Cortina"):
        assert section.text.count(text) == 1, section.text
    assert (section.text.index("planning a hiking trip") < section.text.index("Rifugio Lagazuoi")
            < section.text.index("stay in Cortina"))
    assert section.tokens == memory.admin.counter.count_text(section.text)


def test_quoting_joins_touching_evidence_shortens_neighbours_and_keeps_the_budget():
    from langchain_tiered_memory.recall.dialogue import Line
    from langchain_tiered_memory.recall.quotes import NEIGHBOUR_CHARS, quote_evidence
    from langchain_tiered_memory.recall.layer import Evidence
    from langchain_tiered_memory.tokens import TiktokenCounter

    at = datetime(2025, 3, 1, 12, tzinfo=timezone.utc)
    lines = {s: Line(f"m{s}", s, at + timedelta(minutes=s), "user" if s % 2 == 0 else "assistant", f"message {s}")
             for s in range(10)}
    lines[5] = Line("m5", 5, at, "assistant", "long " * 300)

    def turn(s: int) -> Evidence:
        return Evidence("turn", f"u{s}", lines[s].text, at, (f"m{s}",), 0.9, 0.9, "t", None, (lines[s],))

    def window(a: int, b: int) -> Evidence:
        own = tuple(lines[s] for s in range(a, b + 1))
        return Evidence("window", f"w{a}", "", at, tuple(x.message_id for x in own), 0.8, 0.8, "t", None, own)

    counter = TiktokenCounter()
    asked: list[list[int]] = []

    def neighbours(requests):
        asked.append([s for _, seqs in requests for s in seqs])
        return {(thread_id, s): lines[s] for thread_id, seqs in requests for s in seqs if s in lines}

    # turn 4, then a window 2..5 over it, then turn 8 (apart): two passages, no message twice.
    quoted = quote_evidence([turn(4), window(2, 5), turn(8)], 10_000, counter, neighbours)
    text = quoted.text
    assert [line.startswith("- ") for line in text.splitlines()].count(True) == 2
    assert all(text.count(f"message {s}") == 1 for s in (2, 3, 4, 8))
    # m5 is evidence (in the window): quoted whole; m7/m9 are turn 8's neighbours: shortened.
    assert text.count("long") == 300
    assert "message 7" in text and "message 9" in text
    assert len(asked) == 1  # every passage's neighbours in one read
    lines[9] = Line("m9", 9, at, "assistant", "tail " * 300)
    quoted = quote_evidence([turn(8)], 10_000, counter, neighbours)
    assert quoted.text.count("tail") < 300 and len(quoted.text.splitlines()[-1]) < NEIGHBOUR_CHARS + 40
    # The budget holds, counted with the same counter.
    small = quote_evidence([turn(4), window(2, 5), turn(8)], 60, counter, neighbours)
    assert small is not None and small.tokens <= 60 and small.tokens == counter.count_text(small.text)


def test_a_passage_dates_its_first_line_and_each_resumption_only():
    """Within one exchange a date on every line says nothing new and costs a dozen tokens a
    line: the passage dates its first line, and a line said on another day or an hour
    after the one above it; the budget still holds, and buys more evidence."""
    from langchain_tiered_memory.recall.dialogue import Line
    from langchain_tiered_memory.recall.layer import Evidence
    from langchain_tiered_memory.recall.quotes import quote_evidence
    from langchain_tiered_memory.tokens import TiktokenCounter

    at = datetime(2025, 3, 1, 12, tzinfo=timezone.utc)
    when = [at, at + timedelta(minutes=1), at + timedelta(minutes=3), at + timedelta(hours=2),
            at + timedelta(hours=2, minutes=1), at + timedelta(days=1)]
    counter = TiktokenCounter()
    lines = [Line(f"m{s}", s, t, "Ana" if s % 2 else "Ben", f"line {s} about the garden shed",
                  counter.count_message(HumanMessage(f"line {s} about the garden shed")))
             for s, t in enumerate(when)]
    window = Evidence("window", "w", "", at, tuple(x.message_id for x in lines), 0.9, 0.9, "t", None, tuple(lines))
    quoted = quote_evidence([window], 10_000, counter)
    assert quoted is not None
    rows = quoted.text.splitlines()
    assert rows == [
        "- Ben (2025-03-01 12:00): line 0 about the garden shed",
        "  Ana: line 1 about the garden shed",
        "  Ben: line 2 about the garden shed",
        "  Ana (2025-03-01 14:00): line 3 about the garden shed",  # two hours on: resumed
        "  Ben: line 4 about the garden shed",
        "  Ana (2025-03-02 12:00): line 5 about the garden shed",  # the next day
    ]
    assert quoted.tokens == counter.count_text(quoted.text)

    # Many one-line pieces of evidence from one exchange, in a budget that fits few: the
    # pieces that fit are within it, and undated lines fit more of them than dated ones.
    chat = [Line(f"c{s}", s, at + timedelta(minutes=s), "Ana" if s % 2 else "Ben", f"we talked about tomatoes {s}",
                 counter.count_message(HumanMessage(f"we talked about tomatoes {s}"))) for s in range(40)]
    pieces = [Evidence("turn", f"u{s}", x.text, x.at, (x.message_id,), 0.9, 0.9, "t", None, (x,))
              for s, x in enumerate(chat)]
    small = quote_evidence(pieces, 150, counter)
    assert small is not None and small.tokens <= 150 and small.tokens == counter.count_text(small.text)
    dated_each = sum(counter.count_text("  " + x.render(time=True) + "\n") for x in chat[: len(small.shown)])
    assert dated_each > 150  # with a date on every line, as many would not have fitted
    assert small.text.count("(2025-") == 1


def test_reading_records_lazily_ranks_exactly_as_reading_them_all(memory, monkeypatch):
    from langchain_tiered_memory.recall import ranking
    t0 = datetime(2025, 2, 1, 9, tzinfo=timezone.utc)
    said = [
        "I live in Paris.", "My sister Ines is a nurse.", "I prefer green tea in the morning.",
        "We adopted a cat called Miso.", "Work at Acme is stressful lately.", "I moved to Lisbon last week.",
        "My brother Tom plays the cello.", "I started learning Portuguese.", "The cat knocked over my tea.",
        "Ines is visiting us in Lisbon next month.", "I switched from tea to coffee.", "Tom got a new job at Acme.",
    ]
    for i, text in enumerate(said):
        memory.after_turn("u", f"s{i % 3}", [HumanMessage(text), AIMessage("Noted, thanks for telling me.")],
                          at=t0 + timedelta(days=3 * i))
    memory.memories.remember("u", "The user is allergic to peanuts.", "fact", 0.9)
    for i, text in enumerate(["The user lives in Lisbon.", "The user's sister Ines is a nurse.",
                              "The user drinks coffee now.", "The user's cat is called Miso."]):
        memory.memories.remember("u", text, "fact", 0.1 + 0.25 * i)  # low priors: bounds well above scores
    for thread in ("s0", "s1", "s2"):
        memory.end_session("u", thread)  # episodes: the session grain too
    memory.flush()
    queries = ["where do I live now?", "what does my sister do", "what do I drink", "tell me about the cat",
               "who works at Acme?", "what happened last week?", "languages"]
    # One instant for every call: a memory's prior decays with the clock, and on a busy
    # machine the seconds between the two readings moved a fact's rounded score.
    instant = datetime.now(timezone.utc)
    monkeypatch.setattr(memory._parts, "clock", lambda: instant)

    def ranked(k: int) -> list[list[tuple[str, str, float]]]:
        return [[(e.grain, e.id, round(e.score, 6)) for e in memory.recall("u", q, k=k, peek=True, grains=grains,
                                                                           at=t0 + timedelta(days=40))]
                for q in queries for grains in (None, GRAINS, ["session"])]

    for k in (1, 3, 8):
        monkeypatch.setattr(ranking, "_BATCH_MARGIN", 0)  # batches as small as they go (k)
        lazy = ranked(k)
        monkeypatch.setattr(ranking, "_BATCH_MARGIN", 10_000)  # one batch: every record read
        assert ranked(k) == lazy
    monkeypatch.undo()
    assert any(len(r) == 8 for r in ranked(8))  # the case where batches matter was exercised
    for result in ranked(3):  # best first, whatever the grains
        assert [score for *_, score in result] == sorted((score for *_, score in result), reverse=True)
    assert any(len(r) > 1 and r[0][0] == "session" for r in ranked(3))  # sessions ranked too


def test_recall_returns_the_grains_asked_for_and_no_others(memory):
    from itertools import combinations

    memory.after_turn("u", "s", [HumanMessage("I keep bees on the roof of our flat in Lyon."),
                                 AIMessage("Bees on a roof in Lyon, lovely.")])
    memory.after_turn("u", "s", [HumanMessage("The roof bees made honey this week."), AIMessage("Sweet!")])
    memory.memories.remember("u", "The user keeps bees on the roof.", "fact", 0.7)
    memory.end_session("u", "s")
    memory.flush()
    seen: set[str] = set()
    for n in range(1, len(GRAINS) + 1):
        for grains in combinations(GRAINS, n):  # each subset: "any of" or "none of the rest"
            found = {e.grain for e in memory.recall("u", "bees on the roof", k=20, grains=grains, peek=True)}
            assert found and found <= set(grains), (grains, found)
            seen |= found
    assert seen == set(GRAINS)


