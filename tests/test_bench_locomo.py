"""benchmarks/bench_locomo.py end to end on a tiny conversation in LoCoMo's format (the real
data is CC BY-NC and never in this repository): it reads the format, malformed evidence
ids included, runs the product path and a baseline, and writes its report."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_locomo  # noqa: E402
from locomo import evidence_ids, load  # noqa: E402

SESSIONS = {
    "session_1_date_time": "1:56 pm on 8 May, 2023",
    "session_1": [
        {"speaker": "Ana", "dia_id": "D1:1", "text": "Hey Ben! Good to see you!"},
        {"speaker": "Ben", "dia_id": "D1:2", "text": "Hey Ana! I adopted a grey kitten called Pixel last week."},
        {"speaker": "Ana", "dia_id": "D1:3", "text": "So cute! I started pottery classes on Tuesdays."},
        {"speaker": "Ben", "dia_id": "D1:4", "text": "Nice, bye for now!"},
    ],
    "session_2_date_time": "10:00 am on 20 May, 2023",
    "session_2": [
        {"speaker": "Ana", "dia_id": "D2:1", "text": "How is Pixel doing?"},
        {"speaker": "Ben", "dia_id": "D2:2", "text": "Pixel knocked my coffee over this morning, cheeky cat."},
        {"speaker": "Ana", "dia_id": "D2:3", "text": "My pottery teacher says my bowls are improving."},
    ],
}
DATA = [{
    "sample_id": "tiny",
    "conversation": {"speaker_a": "Ana", "speaker_b": "Ben", **SESSIONS},
    "qa": [
        {"question": "What is the name of Ben's kitten?", "answer": "Pixel", "evidence": ["D1:2"], "category": 4},
        {"question": "What classes did Ana start?", "answer": "pottery", "evidence": ["D1:3; D2:03"], "category": 1},
        {"question": "Who is adversarial?", "answer": "", "evidence": ["D1:1"], "category": 5},
        {"question": "When did Ben adopt his kitten?", "answer": "May 2023", "evidence": ["D:1:2"], "category": 2},
    ],
    "observation": {"session_1_observation": {"Ben": [["Ben adopted a kitten named Pixel.", "D1:2"]]}},
}]


def test_malformed_evidence_ids_are_read():
    assert evidence_ids("D8:6; D9:17") == ["D8:6", "D9:17"]
    assert evidence_ids("D:11:26") == ["D11:26"]
    assert evidence_ids("D30:05") == ["D30:5"]


def test_the_benchmark_runs_on_the_format_and_writes_its_report(tmp_path):
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(DATA))
    conversations = load(path)
    assert [q.category for q in conversations[0].questions] == [4, 1, 2]  # category 5 left out
    assert conversations[0].questions[1].evidence == ("D1:3", "D2:3")
    out = tmp_path / "out"
    assert bench_locomo.main(["--data", str(path), "--systems", "ours,bm25", "--out", str(out)]) == 0
    report = json.loads((out / "locomo.json").read_text())
    assert {r["system"] for r in report["records"]} == {"ours", "bm25"}
    ours = [r for r in report["records"] if r["system"] == "ours"]
    assert len(ours) == 3
    kitten = ours[0]
    assert kitten["r@1"] == 1.0  # "Pixel" names the kitten's turn first
    assert kitten["evidence_in_context"] == 1.0
    assert (out / "locomo.md").read_text().startswith("# LoCoMo")
    assert (out / "locomo.png").stat().st_size > 0
    assert report["extraction"]["observations"] == 1
    assert report["unmatched"]["n"] == sum(1 for r in report["records"] if r["system"] == "bm25" and r["r@10"] == 0)


def test_where_bm25_finds_nothing_each_system_is_scored_on_those_queries_only():
    records = [
        {"system": "ours", "question": 1, "r@10": 1.0}, {"system": "bm25", "question": 1, "r@10": 0.0},
        {"system": "ours", "question": 2, "r@10": 0.0}, {"system": "bm25", "question": 2, "r@10": 1.0},
        {"system": "ours", "question": 3, "r@10": 0.5}, {"system": "bm25", "question": 3, "r@10": 0.0},
    ]
    assert bench_locomo.unmatched(records, ["ours", "bm25"]) == {"n": 2, "ours": 0.75, "bm25": 0.0}
    assert bench_locomo.unmatched(records, ["ours"]) is None  # no BM25 run to tell


def test_observations_are_asked_as_statements_with_their_sources(tmp_path):
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(DATA))
    out = tmp_path / "out"
    assert bench_locomo.main(["--data", str(path), "--systems", "ours,bm25", "--queries", "observations",
                              "--out", str(out)]) == 0
    report = json.loads((out / "locomo.json").read_text())
    # One statement (the observation), asked of each system, its source turn the evidence.
    assert [r["system"] for r in report["records"]] == ["ours", "bm25"]
    assert report["table"]["bm25"]["0"]["r@1"] == 1.0  # "Ben adopted a kitten named Pixel." finds D1:2
    assert report["table"]["ours"]["0"]["r@10"] == 1.0
    assert "answer_in_context" not in report["records"][0]
    text = (out / "locomo.md").read_text()
    assert "1 observations asked as statements" in text and "| statement R@1/5/10 |" in text
    assert "DRAGON" not in text  # the paper's figures are for its questions


def test_speakers_none_feeds_the_messages_without_their_speakers_names(tmp_path):
    from langchain_tiered_memory import TieredMemory

    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(DATA))
    kept = tmp_path / "memory"
    assert bench_locomo.main(["--data", str(path), "--systems", "ours", "--speakers", "none", "--memory-dir", str(kept),
                              "--out", str(tmp_path / "out")]) == 0
    with TieredMemory(kept) as memory:
        said = memory.threads.messages("tiny", "tiny-s1")
    assert [m.text for m in said][:2] == ["Hey Ben! Good to see you!", "Hey Ana! I adopted a grey kitten called Pixel last week."]
    assert all(m.name is None for m in said)


def test_speakers_text_writes_the_name_in_front_as_many_apps_do(tmp_path):
    from langchain_tiered_memory import TieredMemory

    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(DATA))
    kept = tmp_path / "memory"
    assert bench_locomo.main(["--data", str(path), "--systems", "ours", "--speakers", "text", "--memory-dir", str(kept),
                              "--out", str(tmp_path / "out")]) == 0
    with TieredMemory(kept) as memory:
        said = memory.threads.messages("tiny", "tiny-s1")
    assert [m.text for m in said][:2] == ["Ana: Hey Ben! Good to see you!",
                                         "Ben: Hey Ana! I adopted a grey kitten called Pixel last week."]
    assert all(m.name is None for m in said)
