"""Episodes: one per finished session, written through the extraction path, searchable by time."""

import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langchain_tiered_memory import InvalidInputError, MemoryConfig, TieredMemory
from langchain_tiered_memory.embeddings import HashingEmbeddings

sys.path.insert(0, str(Path(__file__).parent))
from scripted_model import ScriptedChatModel, episode_tool_call, turn_tool_call  # noqa: E402


def _config(**kw):
    return MemoryConfig(job_mode="inline", job_backoff_seconds=0, **kw)


def test_end_session_writes_one_episode_offline(make_memory, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with make_memory(_config(), embeddings=HashingEmbeddings()) as m:
        m.after_turn("u", "t", [HumanMessage("Let's plan the Kyoto trip."),
                                AIMessage("We decided to book the ryokan in Hakone.")])
        eid = m.end_session("u", "t")
        assert eid is not None
        assert m.end_session("u", "t") is None  # nothing new since
        hits = m.episodes.search("u")
        assert [h.episode.id for h in hits] == [eid]
        ep = hits[0].episode
        assert ep.thread_id == "t" and ep.started_at <= ep.ended_at
        assert any("ryokan" in d for d in ep.decisions)
        # A later session of the same thread gets its own episode.
        m.after_turn("u", "t", [HumanMessage("Now the budget: 3000 euros.")])
        assert m.end_session("u", "t") not in (None, eid)
        assert len(m.episodes.search("u")) == 2


def test_episode_through_the_model_and_into_the_context(make_memory):
    model = ScriptedChatModel(script=[], default=lambda msgs: (
        episode_tool_call("Planned a Kyoto trip.", ["Book the ryokan"], "Itinerary sent", ["Kyoto"])
        if "EpisodeExtraction" in str(model.call_kwargs[-1] if model.call_kwargs else "") or "episode" in msgs[0].text.lower()
        else turn_tool_call()))
    with make_memory(_config(), model=model, embeddings=HashingEmbeddings()) as m:
        m.after_turn("u", "t1", [HumanMessage("Let's plan the Kyoto trip.")])
        m.end_session("u", "t1")
        ep = m.episodes.search("u")[0].episode
        assert (ep.summary, ep.decisions, ep.outcome, ep.topics) == ("Planned a Kyoto trip.", ["Book the ryokan"], "Itinerary sent", ["Kyoto"])
        ctx = m.before_turn("u", "t2", query="Kyoto")
        assert "Planned a Kyoto trip." in ctx.memory_block
        assert ctx.token_usage["episodes"] > 0


def test_time_range_and_bad_arguments(make_memory):
    with make_memory(_config(), embeddings=HashingEmbeddings()) as m:
        m.after_turn("u", "t", [HumanMessage("hello")])
        m.end_session("u", "t")
        now = datetime.now(timezone.utc)
        assert len(m.episodes.search("u", since=now - timedelta(hours=1))) == 1
        assert m.episodes.search("u", since=now + timedelta(hours=1)) == []
        assert m.episodes.search("u", until=now - timedelta(hours=1)) == []
        assert m.episodes.search("other") == []
        with pytest.raises(InvalidInputError):
            m.episodes.search("u", since=datetime(2026, 1, 1))  # naive
        with pytest.raises(InvalidInputError):
            m.episodes.search("u", k=0)


def test_a_query_ranks_episodes_best_first_past_the_ones_a_time_range_drops(make_memory):
    from langchain_tiered_memory.embeddings import MiniLMEmbeddings

    start = datetime(2025, 3, 1, 9, tzinfo=timezone.utc)
    said = ["We booked the ryokan in Hakone for the Kyoto trip.", "The Kyoto trip: train tickets bought.",
            "Fixed the leaking kitchen tap.", "Chose a birthday cake for Mia.", "Repotted the basil."]
    with make_memory(_config(), embeddings=MiniLMEmbeddings()) as m:
        ids = []
        for i, text in enumerate(said):
            thread = f"s{i}"
            m.after_turn("u", thread, [HumanMessage(text), AIMessage("Noted.")], at=start + timedelta(days=7 * i))
            ids.append(m.end_session("u", thread))
        best = m.episodes.search("u", "the Kyoto trip", k=2)
        assert {h.episode.id for h in best} == {ids[0], ids[1]}
        assert best[0].score >= best[1].score
        assert m.episodes.search("u", "the Kyoto trip", k=1)[0].episode.id == best[0].episode.id
        # Past the first week, the trip's first session is out of range: the next best comes.
        later = m.episodes.search("u", "the Kyoto trip", since=start + timedelta(days=3), k=1)
        assert [h.episode.id for h in later] == [ids[1]]
        assert ids[0] not in {h.episode.id for h in m.episodes.search("u", "the Kyoto trip", since=start + timedelta(days=3))}


def test_idle_threads_get_their_episode_on_open(make_memory):
    with make_memory(_config(), embeddings=HashingEmbeddings()) as m:
        m.after_turn("u", "t", [HumanMessage("an old conversation")])
        m._parts.clock = lambda: datetime.now(timezone.utc)  # noqa: E731
    with make_memory(_config(idle_timeout_minutes=60), embeddings=HashingEmbeddings()) as m:
        m._parts.clock = lambda: datetime.now(timezone.utc) + timedelta(hours=2)  # noqa: E731
        m._parts._end_idle_sessions()
        m.flush()
        assert len(m.episodes.search("u")) == 1
        m._parts._end_idle_sessions()
        m.flush()
        assert len(m.episodes.search("u")) == 1  # once per session


def test_forget_thread_removes_its_episodes(make_memory):
    with make_memory(_config(), embeddings=HashingEmbeddings()) as m:
        m.after_turn("u", "t", [HumanMessage("hello")])
        m.end_session("u", "t")
        assert m.admin.forget(thread_id="t")["episodes"] == 1
        assert m.episodes.search("u") == []


def _trips(monkeypatch, fail: Exception | None = None) -> list[int]:
    """Counts the batches sent to the engine (each one trip), of either backend."""
    from langchain_tiered_memory.backends.edge import EdgeBackend
    from langchain_tiered_memory.backends.server import QdrantServerBackend

    trips: list[int] = []
    for cls in (EdgeBackend, QdrantServerBackend):
        original = cls._query_many

        def spy(self, searches, _original=original):
            trips.append(len(searches))
            if fail is not None:
                raise fail
            return _original(self, searches)

        monkeypatch.setattr(cls, "_query_many", spy)
    return trips


def _a_past_session_and_a_memory(m) -> None:
    m.after_turn("u", "t1", [HumanMessage("Let's plan the Kyoto trip: I booked the ryokan in Hakone."),
                             AIMessage("Lovely, Hakone it is, and the ryokan is booked.")])
    m.end_session("u", "t1")
    m.memories.remember("u", "The user is allergic to peanuts.")


def test_a_turn_searches_recall_and_episodes_in_one_trip(make_memory, monkeypatch):
    with make_memory(_config()) as m:
        _a_past_session_and_a_memory(m)
        trips = _trips(monkeypatch)
        ctx = m.before_turn("u", "t2", query="Which ryokan did I book for the Kyoto trip?")
        # Both sections answered from one batch: recall's two legs and BM25 cosines, and
        # the episodes' own three.
        assert ctx.token_usage["memories"] > 0 and ctx.token_usage["episodes"] > 0
        assert "Hakone" in ctx.memory_block
        assert len(trips) == 1 and trips[0] >= 6
        # Searching episodes alone still works on its own trip.
        assert m.episodes.search("u", "Hakone ryokan")[0].episode.thread_id == "t1"
        assert len(trips) == 2


def test_a_failed_trip_degrades_both_sections_that_searched(make_memory, monkeypatch):
    from langchain_tiered_memory import VectorStoreError

    with make_memory(_config()) as m:
        _a_past_session_and_a_memory(m)
        _trips(monkeypatch, fail=VectorStoreError("the engine is gone; reopen the memory"))
        ctx = m.before_turn("u", "t2", query="Which ryokan did I book?")
        assert sorted(d.split(":")[0] for d in ctx.degraded) == ["episodes", "memories"]
        assert all("the engine is gone" in d for d in ctx.degraded)
        assert ctx.token_usage.get("memories", 0) == 0 and ctx.token_usage.get("episodes", 0) == 0
