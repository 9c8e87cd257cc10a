"""The LongChat benchmark: its generator's guarantees, its measures, the ``ours`` adapter,
and ``bench_longchat.py --quick`` end to end (real tiktoken, the local MiniLM model,
SQLite and Qdrant Edge through the package)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from longchat import KINDS, contains, date_forms, dumps, find, generate, loads  # noqa: E402
from longchat import templates  # noqa: E402
from longchat.metrics import answered, first_words, latest_value, recall_at  # noqa: E402
from longchat.ours import Ours  # noqa: E402
from longchat.vocab import CATEGORIES  # noqa: E402

SMALL = dict(personas=3, sessions=6, turns_per_session=20, questions_per_persona=16, long_persona_turns=0)


@pytest.fixture(scope="module")
def default_data():
    return generate(0)


@pytest.fixture(scope="module")
def many():
    """Several seeds and shapes, so that rare template combinations are covered."""
    out = [c for seed in range(5) for c in generate(seed)]
    for seed in range(1, 6):
        out += generate(seed, **SMALL)
    out += generate(11, personas=2, sessions=3, turns_per_session=12, questions_per_persona=8)
    return out


# --- the generator -----------------------------------------------------------------------


def test_same_seed_same_bytes_even_in_another_process():
    here = hashlib.sha256(dumps(generate(7, **SMALL)).encode()).hexdigest()
    code = (
        "import hashlib, sys; sys.path.insert(0, sys.argv[1]); from longchat import dumps, generate; "
        f"print(hashlib.sha256(dumps(generate(7, **{SMALL!r})).encode()).hexdigest())"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    there = subprocess.run([sys.executable, "-c", code, str(ROOT / "benchmarks")], env=env,
                           capture_output=True, text=True, check=True).stdout.strip()
    assert here == there
    assert dumps(generate(7, **SMALL)) == dumps(generate(7, **SMALL))


def test_different_seeds_differ():
    a, b = generate(1, **SMALL), generate(2, **SMALL)
    assert dumps(a) != dumps(b)
    assert [t.text for t in a[0].turns] != [t.text for t in b[0].turns]
    assert [q.answer for q in a[0].questions] != [q.answer for q in b[0].questions]


def test_default_size_and_mix(default_data):
    turns = sum(len(c.turns) for c in default_data)
    assert len(default_data) == 8
    assert all(len(c.sessions) == 12 for c in default_data)
    assert 2_000 <= turns <= 2_700
    assert max(len(c.turns) for c in default_data) >= 300
    assert all(len(c.questions) == 25 for c in default_data)
    kinds = {q.kind for c in default_data for q in c.questions}
    assert kinds == set(KINDS)
    for c in default_data:
        # sessions days to weeks apart, spanning months, turns in order, speakers alternating
        dates = [s.date for s in c.sessions]
        assert dates == sorted(dates) and (dates[-1] - dates[0]).days >= 60
        turns = c.turns
        assert [t.at for t in turns] == sorted(t.at for t in turns)
        assert all(t.speaker == ("user" if i % 2 == 0 else "assistant") for s in c.sessions for i, t in enumerate(s.turns))
        assert len({t.id for t in turns}) == len(turns)


def test_json_round_trip(default_data):
    text = dumps(default_data[:2], meta={"seed": 0})
    back = loads(text)
    assert back == default_data[:2]
    assert dumps(back, meta={"seed": 0}) == text


def test_evidence_exists_and_holds_the_answer(many):
    for c in many:
        by_id = c.turn_map()
        for q in c.questions:
            assert q.evidence_ids and all(i in by_id for i in q.evidence_ids), q.id
            evidence = [by_id[i] for i in q.evidence_ids]
            assert all(t.speaker == "user" for t in evidence)
            if q.relative == "when":
                # The statement says "today": the answer is the date it was said.
                assert evidence[0].at.date().isoformat() == q.answer
                assert q.aliases == date_forms(evidence[0].at.date())[1:]
                continue
            if q.kind == "multi_hop":
                first, second = evidence
                assert first.session_id != second.session_id and first.at < second.at
                assert not contains(q.answer, first.text) and contains(q.answer, second.text)
                relation = next(r for r, _ in templates.RELATIONS if contains(r, q.text))
                assert contains(relation, first.text) and not contains(relation, second.text)
                continue
            assert any(contains(q.answer, t.text) for t in evidence), (q.id, q.answer)


def test_answers_occur_only_where_planted(many):
    """A value names one thing: outside its evidence turns (and the assistant's reply to
    them) no turn contains a question's answer, so answer-in-context cannot be luck."""
    for c in many:
        turns = c.turns
        position = {t.id: i for i, t in enumerate(turns)}
        for q in c.questions:
            if q.relative == "when":
                continue
            allowed = set(q.evidence_ids) | {turns[position[i] + 1].id for i in q.evidence_ids}
            leaks = [t.text for t in turns if t.id not in allowed and contains(q.answer, t.text)]
            assert not leaks, (q.id, q.answer, leaks[:2])


def test_updates_replace_an_earlier_value(many):
    seen = 0
    for c in many:
        by_id = c.turn_map()
        session_of = {s.id: s.index for s in c.sessions}
        for q in (q for q in c.questions if q.kind == "update"):
            seen += 1
            new = by_id[q.evidence_ids[0]]
            assert q.stale_answer and q.stale_answer != q.answer
            stale_turns = [t for t in c.turns if t.speaker == "user" and contains(q.stale_answer, t.text) and t is not new]
            assert stale_turns, q.id
            assert max(session_of[t.session_id] for t in stale_turns) < session_of[new.session_id]
            # The update turn may name the old value, but after the new one.
            old_at = find(q.stale_answer, new.text)
            assert old_at < 0 or old_at > find(q.answer, new.text)
            assert latest_value(q, new.text)
            assert q.asked_at > new.at
    assert seen >= 20


def _category_of(template: str) -> str:
    if template == "weekend.activity":
        return "activity"
    return next(t.category for t in templates.TOPICS if t.key == template)


def test_temporal_dates_match_their_relative_expression(many):
    counts: dict[str, int] = {}
    for c in many:
        by_id = c.turn_map()
        for q in (q for q in c.questions if q.kind == "temporal"):
            counts[q.relative] = counts.get(q.relative, 0) + 1
            said = by_id[q.evidence_ids[0]].at.date()
            asked = q.asked_at.date()
            if q.relative == "when":
                assert q.asked_at > c.turns[-1].at
                continue
            if q.relative == "last_weekend":
                saturday = asked - timedelta(days=asked.weekday() + 2)
                window = {saturday, saturday + timedelta(days=1)}
            elif q.relative == "yesterday":
                window = {asked - timedelta(days=1)}
            else:
                weeks = {"2_weeks_ago": 2, "3_weeks_ago": 3}[q.relative]
                window = {asked - timedelta(days=d) for d in range(7 * weeks - 2, 7 * weeks + 3)}
            assert said in window, (q.id, q.relative, said, asked)
            # No other value of the same topic was said within the window: one answer.
            others = [v for v in CATEGORIES[_category_of(q.template)] if v != q.answer]
            for t in c.turns:
                if t.speaker == "user" and t.at.date() in window and t.id not in q.evidence_ids:
                    assert not any(contains(v, t.text) for v in others), (q.id, t.text)
    assert set(counts) == {"when", "last_weekend", "yesterday", "2_weeks_ago", "3_weeks_ago"}


def test_questions_paraphrase_their_statements(default_data):
    """Most questions share no distinctive word with their evidence (keyword search is not enough)."""
    from longchat.metrics import keyword_overlap

    overlaps = []
    for c in default_data:
        by_id = c.turn_map()
        for q in c.questions:
            text = " ".join(by_id[i].text for i in q.evidence_ids)
            assert not contains(q.answer, q.text), q.text
            overlaps.append(keyword_overlap(q.text, text, ""))
    share_without = sum(o == 0 for o in overlaps) / len(overlaps)
    assert 0.3 <= share_without <= 0.65, share_without


# --- measures --------------------------------------------------------------------------


def test_measures():
    q = SimpleNamespace(accepted=["Lisbon"], stale_answer="Paris")
    assert recall_at([["a"], ["b", "c"], ["d"]], ["c", "d"], 1) == 0.0
    assert recall_at([["a"], ["b", "c"], ["d"]], ["c", "d"], 2) == 0.5
    assert recall_at([["a"], ["b", "c"], ["d"]], ["c", "d"], 3) == 1.0
    assert latest_value(q, "moved to Lisbon, leaving Paris")
    assert not latest_value(q, "Paris then Lisbon")
    assert latest_value(q, "only lisbon here")
    assert not latest_value(q, "only Paris here")
    ana = SimpleNamespace(accepted=["Ana"])
    assert answered(ana, "my sister Ana.") and not answered(ana, "a banana")
    assert answered(SimpleNamespace(accepted=["Fontaines D.C."]), "saw Fontaines D.C. live")
    assert first_words("a b  c\nd", 3) == "a b c"


# --- the adapter -----------------------------------------------------------------------


def test_adapter_degrades_on_todays_api(tmp_path):
    ours = Ours(tmp_path / "m")
    try:
        c = generate(3, personas=1, sessions=2, turns_per_session=8, questions_per_persona=2, long_persona_turns=0)[0]
        ours.ingest([c])
        q = c.questions[0]
        ranked = ours.ranked(q)
        ctx, ms = ours.context(q, "ask-1")
        assert ctx.token_usage.budget == 8192 and ms > 0
        if not ours.caps.recall:
            assert any("recall" in n for n in ours.caps.notes())
            assert all(isinstance(h, list) for h in ranked.hits)
    finally:
        ours.close()


def test_adapter_uses_recall_and_dates_when_the_api_has_them(tmp_path):
    """A memory with the API being built (``recall``, ``at=``): the adapter passes the
    dates and maps hits by their message ids."""
    from langchain_tiered_memory import MemoryConfig, TieredMemory

    class Future(TieredMemory):
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            self.stored_at = []
            self.asked_at = []

        def after_turn(self, user_id, thread_id, messages, *, extract=True, at=None):
            self.stored_at.append(at)
            return super().after_turn(user_id, thread_id, messages, extract=extract)

        def before_turn(self, user_id, thread_id, query=None, *, peek=False, at=None):
            self.asked_at.append(at)
            return super().before_turn(user_id, thread_id, query, peek=peek)

        def recall(self, user_id, query, k=10, at=None):
            self.asked_at.append(at)
            ids = [m.id for t in self.threads.list(user_id) for m in self.threads.messages(user_id, t.thread_id)]
            return [SimpleNamespace(message_ids=[i]) for i in sorted(ids, reverse=True)[:k]]

    c = generate(4, personas=1, sessions=2, turns_per_session=6, questions_per_persona=2, long_persona_turns=0)[0]
    memory = Future(tmp_path / "m", MemoryConfig(job_mode="inline", max_tokens=9216, output_reserve=1024, system_reserve=0))
    ours = Ours(memory=memory)
    try:
        assert ours.caps.after_turn_at and ours.caps.recall and ours.caps.recall_at and ours.caps.before_turn_at
        ours.ingest([c])
        assert memory.stored_at == [t.at for t in c.turns if t.speaker == "user"]
        q = c.questions[0]
        ranked = ours.ranked(q)
        ours.context(q, "ask")
        assert memory.asked_at == [q.asked_at, q.asked_at]
        newest = sorted((t.id for t in c.turns), reverse=True)
        assert ranked.hits == [[i] for i in newest[:10]]
        assert not ours.caps.notes()
    finally:
        ours.close()


# --- the benchmark, end to end -----------------------------------------------------------


def test_quick_run_end_to_end(tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_longchat.py"), "--quick", "--out", str(tmp_path)],
        env=env, capture_output=True, text=True, timeout=120,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    md = (tmp_path / "longchat.md").read_text()
    report = json.loads((tmp_path / "longchat.json").read_text())
    for heading in ("## Evidence recall per question kind", "## Answer in context and latest value",
                    "## Cost over one long conversation", "## Latency", "## Notes"):
        assert heading in md
    systems = ["bm25", "dense", "inmemorystore", "hybrid", "ours"]
    assert "| kind | n | " + " | ".join(systems) + " |" in md
    assert report["systems"] == systems
    for s in systems:
        overall = report["aggregate"]["recall"][s]["overall"]
        assert overall["n"] == report["dataset"]["questions"] > 0
        assert all(isinstance(overall[f"r@{k}"], float) for k in (1, 5, 10))
        assert isinstance(report["aggregate"]["answer"][s]["answer_evidence"], float)
        assert report["latency"][s]["search"]["p50"] > 0
        assert report["ingest_ms_per_turn"][s] > 0
    assert isinstance(report["aggregate"]["answer"]["ours"]["answer_context"], float)
    assert report["latency"]["ours"]["before_turn"]["n"] == report["dataset"]["questions"]
    # dense retrieval over the same turns finds most evidence: the harness measures something
    assert report["aggregate"]["recall"]["dense"]["overall"]["r@10"] >= 0.5
    cost = report["cost"]
    assert cost["checkpoints"] == [50]
    assert {s["system"] for s in cost["series"]} == {
        "ours", "ours @1.5k", "ConversationBufferMemory", "ConversationSummaryBufferMemory",
        "SummarizationMiddleware"}
    assert all(s["tokens"]["50"] > 0 for s in cost["series"])
    lean = next(s for s in cost["series"] if s["system"] == "ours @1.5k")
    assert lean["tokens"]["50"] <= 1536 + 200  # the context budget plus the new user message
    assert isinstance(report["aggregate"]["answer"]["ours"]["answer_lean"], float)
    assert (tmp_path / "longchat_recall.png").stat().st_size > 10_000
    assert (tmp_path / "longchat_tokens.png").stat().st_size > 10_000
