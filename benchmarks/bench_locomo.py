"""Recall on real conversations: LoCoMo, the product path beside plain retrievers, in one process.

Each conversation is fed the way an application feeds it: ``after_turn`` once per exchange
(two consecutive turns; each speaker named on the message, ``at=`` its session's date), one
thread per session, ``end_session`` after each, defaults (offline extraction), ``flush``.
Then one question at a time, asked the day after the conversation's last session:

* ``ours``: ``recall(user, question, k=10)``, counting the first k **distinct message ids**
  its hits name (a fact names its sources, a window all its messages);
* ``ours-facts``: ``search(user, question, k=10)``, the long-term memories' source messages;
* ``bm25``, ``dense`` (the package's own MiniLM), ``hybrid`` (their RRF) and LangGraph's
  ``InMemoryStore``: over single turns written ``speaker: text`` (``longchat/systems.py``).

Measures: R@1/5/10 per category (the share of a question's evidence turns among the first
k message ids); the evidence turns and the answer in what ``before_turn`` sends for the
question (a fresh thread, the default budget), and in each baseline's top ten cut to the
same number of words; the offline extractor against LoCoMo's observations (the share of
observed facts whose evidence turn is a source of some memory); latency.

``--queries observations`` asks LoCoMo's observations instead of its questions: statements
written by the annotators ("Caroline attended an LGBTQ support group and found the
transgender stories inspiring"), each with the turns it was drawn from. A query that is not
a question, in words no rule here was tuned on: a check that recall is not fitted to how
LoCoMo's questions are put.

``--speakers`` says how ours is fed who said each message: ``name`` (the default) on the
message (``name=``), ``text`` in its text (``Caroline: …``, as many apps write a chat of
several people), ``none`` not at all (the baselines keep ``speaker: text``).

    python benchmarks/bench_locomo.py --data ../shared/data/locomo10.json
    python benchmarks/bench_locomo.py --data ../shared/data/locomo10.json --queries observations --out /tmp/obs
    python benchmarks/bench_locomo.py --data locomo10.json --conversations 2 --out /tmp/lc

Writes ``locomo.md``, ``locomo.json`` and ``locomo.png`` to ``--out`` (default
``benchmarks/results``). The data (CC BY-NC 4.0) is not in this repository: get
``data/locomo10.json`` from the public ``snap-research/LoCoMo`` repository.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shlex
import sys
import tempfile
import time
from collections import defaultdict
from datetime import timedelta
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))


from langchain_tiered_memory import TieredMemory  # noqa: E402
from langchain_tiered_memory.backends.bm25 import content_words  # noqa: E402
from locomo import CATEGORIES, SPEAKER_FORMS, Conversation, Question, ingest, load, message_id  # noqa: E402
from longchat.metrics import mean, percentile  # noqa: E402
from longchat.systems import BASELINES, SharedVectors, build  # noqa: E402

HERE = Path(__file__).resolve().parent
KS = (1, 5, 10)
SYSTEMS = ("ours", "ours-facts", *BASELINES)
#: The paper's Table 3 (as quoted by a secondary source): DRAGON over turns written
#: ``(date) speaker said, "text"``, recall@10 per category (share of evidence turns).
PUBLISHED = {"system": "DRAGON (paper)", "r@10": {1: 0.466, 2: 0.773, 3: 0.408, 4: 0.777}}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", type=Path, required=True, help="locomo10.json")
    p.add_argument("--conversations", type=int, help="the first N conversations only")
    p.add_argument("--questions", type=int, help="the first N questions of each conversation only")
    p.add_argument("--systems", default=",".join(SYSTEMS), help=f"a subset of {','.join(SYSTEMS)}")
    p.add_argument("--out", type=Path, default=HERE / "results")
    p.add_argument("--memory-dir", type=Path,
                   help="keep ours' memory here; a directory that holds one already is queried without ingesting again")
    p.add_argument("--grains", help="diagnostic: recall() over these grains (comma-separated) instead of its default")
    p.add_argument("--queries", choices=("questions", "observations"), default="questions",
                   help="ask LoCoMo's questions (categories 1-4), or its observations as statements")
    p.add_argument("--speakers", choices=SPEAKER_FORMS, default="name",
                   help="how ours is fed each message's speaker: name= on the message, 'Name: text', or not at all")
    args = p.parse_args(argv)
    args.system_list = [s for s in SYSTEMS if s in {x.strip() for x in args.systems.split(",")}]
    if not args.system_list:
        p.error(f"choose systems among {', '.join(SYSTEMS)}")
    return args


# --- the product path ------------------------------------------------------------------


#: The one category of ``--queries observations``.
STATEMENTS = {0: "statement"}


def statements(conv: Conversation) -> list[Question]:
    """The conversation's observations as queries, each with the turns it was drawn from."""
    sources: dict[str, list[str]] = {}
    for fact, dia in conv.observations:
        sources.setdefault(fact, [])
        if dia not in sources[fact]:
            sources[fact].append(dia)
    return [Question(fact, "", tuple(ids), 0) for fact, ids in sources.items()]


def first_ids(hits: list[tuple[str, ...]], k: int) -> list[str]:
    """The first ``k`` distinct message ids the hits name, in order."""
    out: list[str] = []
    for ids in hits:
        for i in ids:
            if i not in out:
                out.append(i)
                if len(out) == k:
                    return out
    return out


def recall_at(ids: list[str], evidence: tuple[str, ...], k: int) -> float:
    return len(set(ids[:k]) & set(evidence)) / len(evidence)


_SPACE = re.compile(r"\s+")


def _norm(text: str) -> str:
    return _SPACE.sub(" ", text).strip().casefold()


def quoted(turn_text: str, text: str) -> bool:
    """Whether a turn is quoted in ``text`` (its first 80 characters: a neighbour may be
    shortened after them)."""
    return _norm(turn_text)[:80] in _norm(text)


def answered(answer: str, text: str) -> bool:
    """Every content word of the answer (stemmed, as BM25 reads them) is in ``text``."""
    wanted = content_words(answer)
    return bool(wanted) and wanted <= content_words(text)


def cut(text: str, words: int) -> str:
    return " ".join(text.split()[:words])


# --- the run ---------------------------------------------------------------------------


def evaluate(args: argparse.Namespace, conversations: list[Conversation]) -> dict[str, Any]:
    systems = args.system_list
    baselines = [s for s in systems if s in BASELINES]
    records: list[dict[str, Any]] = []
    latency: dict[str, list[float]] = defaultdict(list)
    turns = sum(len(c.turns) for c in conversations)
    out: dict[str, Any] = {"turns": turns, "ingest_ms_per_turn": {}}

    retrievers: dict[str, Any] = {}
    if baselines:
        from langchain_tiered_memory.embeddings import default_embeddings

        vectors = SharedVectors(default_embeddings())
        if any(b != "bm25" for b in baselines):
            vectors.precompute([t.indexed_text for c in conversations for t in c.turns])
        retrievers = build(baselines, vectors)
        for name, r in retrievers.items():
            for c in conversations:
                r.index(c.id, c.turns)
            out["ingest_ms_per_turn"][name] = (r.index_s + (vectors.embed_s if r.uses_embeddings else 0)) * 1000 / turns

    ours = "ours" in systems or "ours-facts" in systems
    tmp = tempfile.TemporaryDirectory(prefix="locomo-ours-")
    where = args.memory_dir or Path(tmp.name)
    fed = (where / "memory.db").exists()
    memory = TieredMemory(where) if ours else None
    grains = args.grains.split(",") if args.grains else None
    try:
        if memory is not None:
            if not fed:
                out["ingest_ms_per_turn"]["ours"] = ingest(memory, conversations, args.speakers) * 1000 / turns
            out["extraction"] = extraction(memory, conversations)
        asked_n = 0
        for conv in conversations:
            texts = {t.id: t.text for t in conv.turns}
            asked = conv.last_at + timedelta(days=1)
            for q in conv.questions[: args.questions]:
                asked_n += 1
                base = {"conversation": conv.id, "category": q.category, "question": asked_n}
                words = None
                if memory is not None and "ours" in systems:
                    start = time.perf_counter()
                    hits = memory.recall(conv.id, q.text, k=10, at=asked, peek=True, grains=grains)
                    latency["recall"].append((time.perf_counter() - start) * 1000)
                    ids = [i.split(":", 1)[1] for i in first_ids([h.message_ids for h in hits], 10)]
                    start = time.perf_counter()
                    ctx = memory.before_turn(conv.id, f"{conv.id}-ask-{asked_n}", q.text, at=asked, peek=True)
                    latency["before_turn"].append((time.perf_counter() - start) * 1000)
                    text = "\n".join(m.text for m in ctx.messages)
                    words = len(text.split())
                    records.append({**base, "system": "ours", **_scores(ids, q),
                                    "evidence_in_context": mean(quoted(texts[e], text) for e in q.evidence),
                                    **({"answer_in_context": answered(q.answer, text)} if q.answer else {}),
                                    "context_words": words})
                if memory is not None and "ours-facts" in systems:
                    found = memory.memories.search(conv.id, q.text, k=10, peek=True)
                    ids = [i.split(":", 1)[1] for i in first_ids([tuple(h.entry.source_message_ids) for h in found], 10)]
                    records.append({**base, "system": "ours-facts", **_scores(ids, q)})
                for name in baselines:
                    ids = retrievers[name].search(conv.id, q.text, 10)
                    rec = {**base, "system": name, **_scores(ids, q)}
                    if words is not None:
                        top = cut("\n".join(f"{t.speaker}: {t.text}" for t in _turns(conv, ids)), words)
                        rec["evidence_in_context"] = mean(quoted(texts[e], top) for e in q.evidence)
                        if q.answer:  # a statement has none
                            rec["answer_in_context"] = answered(q.answer, top)
                    records.append(rec)
    finally:
        if memory is not None:
            memory.close()
        tmp.cleanup()
    out["records"] = records
    out["latency_ms"] = {k: {"p50": percentile(v, 50), "p99": percentile(v, 99), "n": len(v)} for k, v in latency.items()}
    return out


def _turns(conv: Conversation, ids: list[str]) -> list[Any]:
    by_id = {t.id: t for t in conv.turns}
    return [by_id[i] for i in ids if i in by_id]


def _scores(ids: list[str], q: Question) -> dict[str, float]:
    return {f"r@{k}": recall_at(ids, q.evidence, k) for k in KS}


def extraction(memory: TieredMemory, conversations: list[Conversation]) -> dict[str, Any]:
    """The offline extractor against LoCoMo's observations: the share of observed facts
    whose evidence turn is a source of some memory, and how many memories it made."""
    sources: set[str] = set()
    made = 0
    for conv in conversations:
        offset = 0
        while page := memory.memories.list(conv.id, limit=1000, offset=offset):
            offset += len(page)
            made += len(page)
            sources.update(i for entry in page for i in entry.source_message_ids)
    observed = [(conv, dia) for conv in conversations for _, dia in conv.observations]
    covered = sum(message_id(conv, dia) in sources for conv, dia in observed)
    # The rules read the user's messages only (the first speaker is fed as the user, the
    # other as the assistant): the facts they can distil are those the user said.
    said = {(conv.id, t.id): t.speaker == conv.speakers[0] for conv in conversations for t in conv.turns}
    own = [(conv, dia) for conv, dia in observed if said.get((conv.id, dia))]
    own_covered = sum(message_id(conv, dia) in sources for conv, dia in own)
    return {"observations": len(observed), "covered": covered,
            "share": covered / len(observed) if observed else None, "memories": made,
            "user_observations": len(own), "user_covered": own_covered,
            "user_share": own_covered / len(own) if own else None}


def unmatched(records: list[dict[str, Any]], systems: list[str]) -> dict[str, Any] | None:
    """R@10 of each system over the queries whose evidence BM25 misses in its top ten: where
    the words of query and answer do not meet, as in a later message that depends on an
    earlier exchange it shares few words with."""
    if "bm25" not in systems:
        return None
    missed = {r["question"] for r in records if r["system"] == "bm25" and r["r@10"] == 0}
    return {"n": len(missed), **{
        s: mean(r["r@10"] for r in records if r["system"] == s and r["question"] in missed) for s in systems
    }}


def aggregate(records: list[dict[str, Any]], systems: list[str], categories: dict[int, str] = CATEGORIES) -> dict[str, Any]:
    by: dict[tuple[str, Any], list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        by[(r["system"], r["category"])].append(r)
        by[(r["system"], "all")].append(r)
    table: dict[str, dict[str, dict[str, Any]]] = {}
    for s in systems:
        table[s] = {}
        for cat in (*categories, "all"):
            rows = by.get((s, cat), [])
            table[s][str(cat)] = {
                "n": len(rows), **{f"r@{k}": mean(r[f"r@{k}"] for r in rows) for k in KS},
                "evidence_in_context": mean(r["evidence_in_context"] for r in rows if "evidence_in_context" in r),
                "answer_in_context": mean(r["answer_in_context"] for r in rows if "answer_in_context" in r),
                "context_words": mean(r["context_words"] for r in rows if "context_words" in r),
            }
    return table


# --- the report ------------------------------------------------------------------------


def _f(v: Any) -> str:
    return "—" if v is None else (f"{v:.3f}" if isinstance(v, float) else str(v))


def markdown(report: dict[str, Any]) -> str:
    systems, table = report["systems"], report["table"]
    categories = {int(c): name for c, name in report["categories"].items()}
    asked = "questions (categories 1–4)" if categories == CATEGORIES else "observations asked as statements"
    n = table[systems[0]]["all"]["n"]
    lines = [
        "# LoCoMo: does recall find the turns that answer?",
        "",
        f"Command: `{report['command']}`  ",
        f"{report['conversations']} conversations, {report['turns']:,} turns, {n} {asked}. "
        f"Run time {report['seconds']:.0f} s on {report['machine']}.",
        "",
        "R@k: the share of a question's evidence turns among the first k distinct message ids a system "
        "names. Ours: `recall()` (facts name their source messages); ours-facts: `search()` (long-term "
        "memories only). Baselines: single turns `speaker: text`.",
        "",
        "| system | " + " | ".join(f"{categories[c]} R@1/5/10" for c in categories) + " | **all R@1** | **all R@5** | **all R@10** |",
        "|---|" + "---|" * (len(categories) + 3),
    ]
    for s in systems:
        cells = ["/".join(_f(table[s][str(c)][f"r@{k}"]) for k in KS) for c in categories]
        total = [f"**{_f(table[s]['all'][f'r@{k}'])}**" for k in KS]
        lines.append(f"| {s} | " + " | ".join(cells) + " | " + " | ".join(total) + " |")
    if categories == CATEGORIES:
        pub = PUBLISHED["r@10"]
        weighted = sum(pub[c] * table[systems[0]][str(c)]["n"] for c in CATEGORIES) / max(1, n)
        lines.append(f"| {PUBLISHED['system']} | " + " | ".join(f"–/–/{pub[c]:.3f}" for c in CATEGORIES)
                     + f" | – | – | ≈{weighted:.3f} |")
    gap = report.get("unmatched")
    if gap and gap["n"]:
        lines += ["", f"Where the words do not meet: the {gap['n']} queries whose evidence BM25 misses in its top ten, "
                  "R@10 " + ", ".join(f"{s} {_f(gap[s])}" for s in systems if s != "bm25") + "."]
    lines += [
        "",
        "## In what the model is sent",
        "",
        "Evidence: the share of a question's evidence turns quoted in what `before_turn` sends for it (a "
        "fresh thread, the default budget); baselines: their top ten turns cut to the same number of words. "
        "Answer: every content word of the answer is there.",
        "",
        "| system | evidence in context | answer in context | words |",
        "|---|---|---|---|",
    ]
    for s in systems:
        row = table[s]["all"]
        if row["evidence_in_context"] is not None:
            lines.append(f"| {s} | {_f(row['evidence_in_context'])} | {_f(row['answer_in_context'])} | "
                         f"{_f(row['context_words'] or table['ours']['all']['context_words'])} |")
    ex = report.get("extraction")
    if ex:
        lines += ["", "## Extraction", "",
                  f"Offline extractor: {ex['memories']:,} memories; {ex['covered']:,} of {ex['observations']:,} "
                  f"observed facts ({_f(ex['share'])}) have their evidence turn among the memories' sources."]
        if ex.get("user_observations"):
            lines[-1] += (f" The rules read the user's messages only (the first speaker is fed as the user): of the "
                          f"{ex['user_observations']:,} facts the user said, {ex['user_covered']:,} "
                          f"({_f(ex['user_share'])}).")
    lines += ["", "## Speed", "",
              "Ingest: ours is `after_turn` for every exchange and `flush()` (turns, windows and sentences "
              "embedded and indexed, extraction, episodes); dense embeds each turn once, the anchor of the "
              "ratio (the same embedder, in the same run).", "", "| measure | value |", "|---|---|"]
    ingest = report["ingest_ms_per_turn"]
    for name, ms in ingest.items():
        ratio = f" ({ms / ingest['dense']:.2f}× dense)" if ingest.get("dense") and name != "dense" else ""
        lines.append(f"| ingest {name}, ms per turn | {ms:.1f}{ratio} |")
    for name, d in report["latency_ms"].items():
        lines.append(f"| {name} p50 / p99, ms | {_f(d['p50'])} / {_f(d['p99'])} |")
    return "\n".join(lines) + "\n"


def plot(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    systems, table = report["systems"], report["table"]
    categories = {int(c): name for c, name in report["categories"].items()}
    fig, ax = plt.subplots(figsize=(9, 4))
    groups = [*categories, "all"]
    width = 0.8 / len(systems)
    for i, s in enumerate(systems):
        ax.bar([g + i * width for g in range(len(groups))], [table[s][str(c)]["r@10"] or 0 for c in groups], width, label=s)
    ax.set_xticks([g + 0.4 - width / 2 for g in range(len(groups))])
    ax.set_xticklabels([categories.get(c, "all") if isinstance(c, int) else c for c in groups])
    ax.set_ylabel("R@10")
    ax.set_ylim(0, 1)
    ax.set_title("LoCoMo: evidence turns among the first 10 message ids")
    ax.legend(fontsize=8, ncol=3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    conversations = load(args.data, args.conversations)
    categories = CATEGORIES
    if args.queries == "observations":
        categories = STATEMENTS
        for conv in conversations:
            conv.questions = statements(conv)
    result = evaluate(args, conversations)
    report = {
        "command": "python benchmarks/bench_locomo.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:])),
        "conversations": len(conversations),
        "turns": result["turns"],
        "systems": args.system_list,
        "categories": categories,
        "table": aggregate(result["records"], args.system_list, categories),
        "unmatched": unmatched(result["records"], args.system_list),
        "ingest_ms_per_turn": result["ingest_ms_per_turn"],
        "latency_ms": result["latency_ms"],
        "extraction": result.get("extraction"),
        "published": PUBLISHED,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "seconds": time.perf_counter() - started,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    # Compact: 1,536 questions × 6 systems of records are read by programs, not by people
    # (locomo.md is the readable report); indented they made a 1.7 MB file to commit.
    (args.out / "locomo.json").write_text(
        json.dumps({**report, "records": result["records"]}, separators=(",", ":"), default=str)
    )
    (args.out / "locomo.md").write_text(markdown(report))
    plot(report, args.out / "locomo.png")
    print(markdown(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
