"""The time a query asks about: relative and explicit dates, read against when it is asked."""

from __future__ import annotations

from datetime import date, datetime, timezone

import pytest

from langchain_tiered_memory.recall.dates import asked_part, asks_when, resolve, tells_current, told_of

THURSDAY = datetime(2025, 3, 13, 9, tzinfo=timezone.utc)


@pytest.mark.parametrize("query, start", [
    ("What was I up to last weekend?", date(2025, 3, 8)),
    ("What did I cook on Sunday?", date(2025, 3, 9)),
    ("Remind me what I did on Sunday.", date(2025, 3, 9)),
    ("coffee with Anna on Sunday", date(2025, 3, 9)),  # a search, not a sentence
    ("Can you tell me about yesterday?", date(2025, 3, 12)),
    ("What did I plan for tonight?", date(2025, 3, 13)),  # looks ahead, and back
    ("What did I say about the garden two weeks ago?", date(2025, 2, 23)),
    ("What did I do in May 2024?", date(2024, 5, 1)),
    ("Where did we eat on 2 May, 2024?", date(2024, 5, 2)),  # a day before the month: the month
    ("What did I fix during the last week of February 2025?", date(2025, 2, 1)),  # a part of that month
    ("What did I say last week in the meeting?", date(2025, 3, 3)),  # "in the meeting": no date
    # How people put a time in a chat over days and weeks.
    ("What happened the day before yesterday?", date(2025, 3, 11)),  # not yesterday
    ("What did I tell you last night?", date(2025, 3, 12)),
    ("Where did we go over the weekend?", date(2025, 3, 8)),
    ("What did I say on the 5th?", date(2025, 3, 5)),
    ("Who came over on the 31st?", date(2025, 1, 31)),  # the last 31st: February has none
    ("What did I mention the other day?", date(2025, 3, 3)),
    ("What did I cook a couple days ago?", date(2025, 3, 10)),
    ("What have I been reading the past few days?", date(2025, 3, 10)),
    ("What did I fix during the last two weeks of February 2025?", date(2025, 2, 1)),  # of that month
])
def test_a_time_asked_about_is_resolved(query, start):
    found = resolve(query, THURSDAY)
    assert found is not None and found.start.date() == start


@pytest.mark.parametrize("query", [
    "My cousin is coming over on Sunday. What should I cook?",  # the time is in what it tells
    "We went hiking last weekend. Can you recommend boots?",
    "What should I cook tonight?",  # looks ahead: memory holds no answer said then
    "What's on next week?",
    "What does the user do with the club on Thursday evenings?",  # a habit, not a day
    "Which phone do I use these days?",
    "What did I win the 2nd time?",  # an ordinal, not a day of the month
    "What did I do on the 3rd floor?",
])
def test_a_time_that_is_not_asked_about_names_no_span(query):
    assert resolve(query, THURSDAY) is None


@pytest.mark.parametrize("text", [
    "I've switched to oat milk.",
    "We moved to Ghent in the spring.",
    "I quit the choir last month.",
    "I finally upgraded to a ThinkPad X1.",
    "I took up bouldering.",
    "Picked up the ukulele over the winter.",
    "I've gotten into birdwatching.",
    "Ditched the gym membership, I run outside instead.",
    "I no longer drink coffee.",
    "These days it's mostly podcasts on the commute.",
    "I started a pottery class.",
    "Dropped the night shifts at the bakery.",
])
def test_a_statement_of_a_change_or_of_the_present_is_news(text):
    assert tells_current(text)


@pytest.mark.parametrize("text", [
    "My sister lives in Ghent.",
    "We went to the lake on Saturday.",
    "The pottery class was fun.",
    "I like oat milk in my tea.",
    "The train was late again.",
    "Starters were better than the mains.",  # a word that begins like a verb of change is not one
])
def test_a_plain_statement_is_not_news(text):
    assert not tells_current(text)


@pytest.mark.parametrize("text, start, days", [
    ("Yesterday my cousin and I ran a free bike repair stall at the market!", date(2025, 3, 12), 1),
    ("Sorry for the silence. Two days ago my laptop died and took my notes with it.", date(2025, 3, 10), 3),
    ("Guess what? Last weekend we finally hiked the ridge trail.", date(2025, 3, 8), 2),
    ("I read that novel last month, in one sitting.", date(2025, 2, 1), 28),
    ("Last night we finally saw the band live!", date(2025, 3, 12), 1),
    ("The day before yesterday I ran my first 10k.", date(2025, 3, 11), 1),
])
def test_a_message_tells_of_the_time_it_names_read_from_when_it_was_said(text, start, days):
    told = told_of(text, THURSDAY)
    assert told is not None and told.start.date() == start and (told.end - told.start).days == days


@pytest.mark.parametrize("text", [
    "What did you do yesterday?",  # asks: the time is the other person's to tell
    "Next weekend we'll hike the ridge trail.",  # a plan is not what happened
    "I love hiking with my cousin.",  # names no time
])
def test_a_message_that_asks_plans_or_names_no_time_tells_of_none(text):
    assert told_of(text, THURSDAY) is None


@pytest.mark.parametrize("query, when", [
    ("When did I start painting?", True),
    ("What day was the move?", True),
    ("How long ago did we meet?", True),
    ("What do I paint?", False),
    ("Where did the move take us?", False),
])
def test_a_question_asking_when_is_told_apart(query, when):
    assert asks_when(query) is when


@pytest.mark.parametrize("query, telling", [
    ("Yesterday I finally ran the marathon!", True),  # when it happened, not what it wants
    ("Mel ran a charity race last Saturday.", True),
    ("What did I do yesterday?", False),
    ("Remind me what I did on Sunday.", False),  # a request asks
    ("coffee with Anna on Sunday", False),  # a search: no one did anything
    ("We went hiking last weekend. Can you recommend boots?", False),  # it asks too
])
def test_a_statement_of_what_was_done_is_told_apart_from_what_asks(query, telling):
    # A statement of what was done asks about no time (the one it names is when it happened).
    assert (asked_part(query) is None) is telling
