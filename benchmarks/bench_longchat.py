"""Does memory put the right past facts in front of the model? Every system on the same
long multi-session conversations (``benchmarks/longchat``), in one process.

Systems (each per user, each over the turns as ``"<speaker>: <text>"``, one embedder —
the package's offline default, all-MiniLM-L6-v2 int8 ONNX):

* ``bm25``, ``dense``, ``inmemorystore`` (LangGraph ``InMemoryStore`` with an index),
  ``hybrid`` (BM25 + dense, RRF k=60): turn retrievers, see ``longchat/systems.py``;
* ``ours``: the product path through the public API — ``after_turn`` per exchange (with
  the turn's date when the API takes one), ``end_session``, ``flush``; then per question
  the ranked evidence (``recall``, else ``search``) and the context ``before_turn`` builds
  at an 8k budget. See ``longchat/ours.py`` for what it does when the API lacks a piece.

Measures: evidence recall@1/5/10 per question kind; answer-in-context (the answer string
in what the model would be sent; baselines: their top-10 turns, and the same cut to the
number of words ours sent); latest-value rate on updates; prompt tokens and LLM calls per
turn over one 300+-turn conversation beside LangChain's memories; latency.

    python benchmarks/bench_longchat.py                 # default size, a few minutes
    python benchmarks/bench_longchat.py --quick         # a smoke test, seconds
    python benchmarks/bench_longchat.py --systems bm25,ours --seed 3 --out /tmp/lc

Writes ``longchat.md``, ``longchat.json``, ``longchat_recall.png`` and
``longchat_tokens.png`` to ``--out`` (default ``benchmarks/results``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from longchat import KINDS, Conversation, generate  # noqa: E402
from longchat import cost as cost_series  # noqa: E402
from longchat import dump  # noqa: E402
from longchat.metrics import (  # noqa: E402
    answered,
    first_words,
    keyword_overlap,
    latest_value,
    mean,
    percentile,
    recall_at,
    word_count,
)
from longchat.ours import CONTEXT_CONFIG, SMALL_CONFIG, Ours, context_text  # noqa: E402
from longchat.systems import BASELINES, SharedVectors, build  # noqa: E402

SYSTEMS = (*BASELINES, "ours")
KS = (1, 5, 10)
HERE = Path(__file__).resolve().parent
QUICK = dict(personas=2, sessions=4, turns_per_session=12, questions=8, long_turns=60)
DEFAULT = dict(personas=8, sessions=12, turns_per_session=24, questions=25, long_turns=320)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--personas", type=int)
    p.add_argument("--sessions", type=int)
    p.add_argument("--turns-per-session", type=int)
    p.add_argument("--questions", type=int, help="questions per persona (at most)")
    p.add_argument("--quick", action="store_true", help="a tiny run for smoke tests")
    p.add_argument("--systems", default=",".join(SYSTEMS), help=f"comma-separated subset of {','.join(SYSTEMS)}")
    p.add_argument("--out", type=Path, default=HERE / "results")
    p.add_argument("--no-cost", action="store_true", help="skip the prompt-token series")
    p.add_argument("--dump-data", type=Path, help="also write the generated conversations as JSON")
    args = p.parse_args(argv)
    sizes = dict(QUICK if args.quick else DEFAULT)
    for key in ("personas", "sessions", "turns_per_session", "questions"):
        if getattr(args, key) is not None:
            sizes[key] = getattr(args, key)
    args.sizes = sizes
    args.system_list = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = [s for s in args.system_list if s not in SYSTEMS]
    if unknown or not args.system_list:
        p.error(f"unknown systems {unknown}; choose from {', '.join(SYSTEMS)}")
    args.system_list = [s for s in SYSTEMS if s in args.system_list]
    return args


# --- the run ---------------------------------------------------------------------------


def evaluate(args: argparse.Namespace, conversations: list[Conversation]) -> dict[str, Any]:
    systems = args.system_list
    baselines = [s for s in systems if s in BASELINES]
    records: list[dict[str, Any]] = []
    latency: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    ingest_ms: dict[str, float] = {}
    notes: list[str] = []
    capabilities: dict[str, Any] = {}
    total_turns = sum(len(c.turns) for c in conversations)

    embedder = None
    vectors = None
    if any(s in ("dense", "inmemorystore", "hybrid") for s in baselines):
        from langchain_tiered_memory.embeddings import default_embeddings

        embedder = default_embeddings()
        vectors = SharedVectors(embedder)
        vectors.precompute([t.indexed_text for c in conversations for t in c.turns])
    retrievers = build(baselines, vectors) if baselines else {}
    for name in baselines:
        r = retrievers[name]
        for c in conversations:
            r.index(c.user_id, c.turns)
    for name, r in retrievers.items():
        own = r.index_s
        if name == "hybrid":
            own = r.bm25.index_s + r.dense.index_s  # type: ignore[attr-defined]
        embed = vectors.embed_s if (vectors is not None and r.uses_embeddings) else 0.0
        ingest_ms[name] = (own + embed) * 1000 / total_turns

    ours = small = None
    tmp = tempfile.TemporaryDirectory(prefix="longchat-ours-")
    if "ours" in systems:
        ours = Ours(tmp.name)
        ours.ingest(conversations)
        ingest_ms["ours"] = ours.ingest_s * 1000 / max(1, ours.turns)
        # The same memory at the lean budget of the cost series (a second object on the
        # same directory: it shares the index).
        small = Ours(tmp.name, **SMALL_CONFIG)

    try:
        for c in conversations:
            tm = c.turn_map()
            for q in c.questions:
                base = {"question": q.id, "kind": q.kind, "relative": q.relative}
                ours_words = None
                if ours is not None:
                    ranked = ours.ranked(q)
                    ctx, _ = ours.context(q, f"{q.id}-ask")
                    text = context_text(ctx)
                    ours_words = word_count(text)
                    ids = [i for hit in ranked.hits for i in hit]
                    evidence_text = "\n".join(tm[i].indexed_text for i in dict.fromkeys(ids) if i in tm)
                    lean, _ = small.context(q, f"{q.id}-lean") if small is not None else (None, 0.0)
                    rec = {**base, "system": "ours",
                           **{f"r@{k}": recall_at(ranked.hits, q.evidence_ids, k) for k in KS},
                           "answer_evidence": answered(q, evidence_text),
                           "answer_context": answered(q, text),
                           **({"answer_lean": answered(q, context_text(lean)),
                               "lean_tokens": lean.token_usage.total} if lean is not None else {}),
                           "context_tokens": ctx.token_usage.total, "context_words": ours_words,
                           "ids_in_top10": len({i for hit in ranked.hits[:10] for i in hit})}
                    if q.kind == "update":
                        rec["latest_evidence"] = latest_value(q, evidence_text)
                        rec["latest_context"] = latest_value(q, text)
                    records.append(rec)
                for name in baselines:
                    start = time.perf_counter()
                    ids = retrievers[name].search(q.user_id, q.text, 10)
                    latency[name]["search"].append((time.perf_counter() - start) * 1000)
                    top = "\n".join(tm[i].indexed_text for i in ids)
                    rec = {**base, "system": name,
                           **{f"r@{k}": recall_at([[i] for i in ids], q.evidence_ids, k) for k in KS},
                           "answer_evidence": answered(q, top)}
                    if ours_words is not None:
                        rec["answer_cut"] = answered(q, first_words(top, ours_words))
                    if q.kind == "update":
                        rec["latest_evidence"] = latest_value(q, top)
                    records.append(rec)
        if ours is not None:
            # Latency with the query embedding included: fresh texts (the memory caches
            # query vectors, and the pass above already embedded each question once).
            n = 0
            for c in conversations:
                for q in c.questions:
                    n += 1
                    ctx, ms = ours.context(q, f"{q.id}-lat", query=f"Remind me, {q.text} ({n})")
                    latency["ours"]["before_turn"].append(ms)
                    ranked = ours.ranked(q, query=f"Quick question: {q.text} ({n})")
                    latency["ours"]["search"].append(ranked.ms)
            capabilities = ours.caps.as_dict()
            notes += ours.caps.notes()
            capabilities["search_method"] = "recall" if ours.caps.recall else "search"
    finally:
        for memory in (small, ours):
            if memory is not None:
                memory.close()
        tmp.cleanup()

    return {
        "records": records,
        "latency": {s: {k: {"p50": percentile(v, 50), "p99": percentile(v, 99), "n": len(v)} for k, v in d.items()}
                    for s, d in latency.items()},
        "ingest_ms_per_turn": ingest_ms,
        "embed_ms_per_turn": (vectors.embed_s * 1000 / total_turns) if vectors is not None else None,
        "capabilities": capabilities,
        "notes": notes,
    }


def aggregate(records: list[dict[str, Any]], systems: list[str]) -> dict[str, Any]:
    by: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        by[(r["system"], r["kind"])].append(r)
        by[(r["system"], "overall")].append(r)
    recall: dict[str, dict[str, dict[str, Any]]] = {}
    answer: dict[str, dict[str, Any]] = {}
    for s in systems:
        recall[s] = {}
        for kind in (*KINDS, "overall"):
            rows = by.get((s, kind), [])
            recall[s][kind] = {"n": len(rows), **{f"r@{k}": mean(r[f"r@{k}"] for r in rows) for k in KS}}
        rows = by.get((s, "overall"), [])
        updates = [r for r in rows if r["kind"] == "update"]
        answer[s] = {
            "n": len(rows),
            "answer_evidence": mean(r["answer_evidence"] for r in rows),
            "answer_cut": mean(r["answer_cut"] for r in rows if "answer_cut" in r),
            "answer_context": mean(r["answer_context"] for r in rows if "answer_context" in r),
            "answer_lean": mean(r["answer_lean"] for r in rows if "answer_lean" in r),
            "lean_tokens": mean(r["lean_tokens"] for r in rows if "lean_tokens" in r),
            "latest_evidence": mean(r["latest_evidence"] for r in updates),
            "latest_context": mean(r["latest_context"] for r in updates if "latest_context" in r),
            "updates": len(updates),
            "context_tokens": mean(r["context_tokens"] for r in rows if "context_tokens" in r),
            "context_words": mean(r["context_words"] for r in rows if "context_words" in r),
            "ids_in_top10": mean(r["ids_in_top10"] for r in rows if "ids_in_top10" in r),
            "answer_context_by_kind": {
                k: mean(r["answer_context"] for r in by.get((s, k), []) if "answer_context" in r) for k in KINDS
            },
            "answer_evidence_by_kind": {k: mean(r["answer_evidence"] for r in by.get((s, k), [])) for k in KINDS},
        }
    return {"recall": recall, "answer": answer}


def dataset_stats(conversations: list[Conversation]) -> dict[str, Any]:
    questions = [q for c in conversations for q in c.questions]
    turns = [t for c in conversations for t in c.turns]
    last = {c.user_id: c.turns[-1].at for c in conversations}
    spans = [(c.sessions[-1].date - c.sessions[0].date).days for c in conversations]
    overlap = []
    for c in conversations:
        tm = c.turn_map()
        for q in c.questions:
            text = " ".join(tm[i].text for i in q.evidence_ids)
            overlap.append(keyword_overlap(q.text, text, q.stale_answer or ""))
    by_kind: dict[str, int] = defaultdict(int)
    for q in questions:
        by_kind[q.kind] += 1
    return {
        "personas": len(conversations),
        "sessions": sum(len(c.sessions) for c in conversations),
        "turns": len(turns),
        "longest_persona_turns": max(len(c.turns) for c in conversations),
        "questions": len(questions),
        "questions_by_kind": {k: by_kind.get(k, 0) for k in KINDS},
        "asked_mid_way": sum(q.asked_at < last[q.user_id] for q in questions),
        "span_days_mean": mean(spans),
        "question_keyword_overlap": mean(overlap),
    }


# --- report ----------------------------------------------------------------------------


def _f(value: Any, digits: int = 2) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def markdown(report: dict[str, Any]) -> str:
    systems = report["systems"]
    agg = report["aggregate"]
    st = report["dataset"]
    lines = [
        "# LongChat: does memory put the right past facts in front of the model?",
        "",
        f"Command: `{report['command']}`  ",
        f"Seed {report['seed']}; {st['personas']} personas, {st['sessions']} sessions, {st['turns']:,} turns "
        f"(longest persona {st['longest_persona_turns']}), {st['questions']} questions "
        f"({st['asked_mid_way']} asked mid-way, before the persona's last turn); sessions span "
        f"{_f(st['span_days_mean'], 0)} days on average. Question/evidence keyword overlap "
        f"{_f(st['question_keyword_overlap'])} (share of a question's content words found in its evidence).  ",
        "Sizes: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in report["sizes"].items())
        + " (long turns: the minimum length of the first persona, for the cost series).  ",
        f"Run time {report['seconds']:.0f} s on {report['machine']}.",
        "",
        "## Evidence recall per question kind",
        "",
        "Each cell is recall@1 / @5 / @10: the share of a question's evidence turns among the message "
        "ids of the system's first k hits (a turn retriever's hit is one turn).",
        "",
    ]
    header = ["kind", "n", *systems]
    rows = []
    for kind in (*KINDS, "overall"):
        cells = []
        n = None
        for s in systems:
            r = agg["recall"][s][kind]
            n = r["n"]
            cells.append(" / ".join(_f(r[f"r@{k}"]) for k in KS))
        label = f"**{kind}**" if kind == "overall" else kind
        rows.append([label, str(n), *cells])
    lines += _table(header, rows)
    lines += [
        "",
        "## Answer in context and latest value",
        "",
        "Answer: the answer string (whole words, case-insensitive; a date in any usual spelling) is in the "
        "text. *Top-10*: the system's ten best turns (ours: the turns of its ranked evidence). *Cut*: "
        "those turns cut to the number of words ours' context had for the same question. *Context*: "
        "everything `before_turn` sends at an 8k budget. Latest value (updates): the new value is there "
        "and comes before the stale one (or the stale one is absent).",
        "",
    ]
    header = ["system", "answer, top-10", "answer, cut to ours' words", "answer, 8k context",
              "latest value, top-10", "latest value, context", "context tokens (mean)"]
    rows = []
    for s in systems:
        a = agg["answer"][s]
        rows.append([s, _f(a["answer_evidence"]), _f(a["answer_cut"]), _f(a["answer_context"]),
                     _f(a["latest_evidence"]), _f(a["latest_context"]), _f(a["context_tokens"], 0)])
    lines += _table(header, rows)
    if "ours" in systems:
        a = agg["answer"]["ours"]
        lines += ["", "Answer in ours' context by kind: " + ", ".join(
            f"{k} {_f(v)}" for k, v in a["answer_context_by_kind"].items()) + "."]
        if a.get("answer_lean") is not None:
            lines += ["", f"At the lean budget of the cost series (1,536 tokens of context), the answer is in "
                          f"ours' context for {_f(a['answer_lean'])} of the questions "
                          f"({_f(a['lean_tokens'], 0)} tokens on average)."]
    cost = report.get("cost")
    if cost:
        lines += [
            "",
            "## Cost over one long conversation",
            "",
            f"Persona `{cost['persona']}` ({cost['turns']} turns), one thread. Prompt tokens (tiktoken "
            "cl100k_base, OpenAI chat format) of what is sent to answer turn N: the memory's context plus "
            "the new user message. LLM calls per turn: calls the memory itself makes (summaries, "
            "extraction), per exchange.",
            "",
        ]
        header = ["memory", *[f"tokens at turn {p}" for p in cost["checkpoints"]], "LLM calls / turn", "setup"]
        rows = []
        for s in cost["series"]:
            calls = _f(s["calls_per_turn"])
            if s["jobs"] is not None:
                calls += f" ({s['jobs']} jobs for {s['exchanges']} exchanges)"
            rows.append([s["system"], *[_f(s["tokens"].get(str(p))) for p in cost["checkpoints"]], calls, s["note"]])
        lines += _table(header, rows)
        missing = [p for p in (50, 150, 300) if p not in cost["checkpoints"]]
        if missing:
            lines += ["", f"Not reached by this conversation: turns {', '.join(map(str, missing))}."]
    lines += [
        "",
        "## Latency",
        "",
        "Per call, ms, the query embedding included (fresh query text every time). Ingest: ms per turn "
        "amortised over the whole corpus (ours: `after_turn` for every exchange in background mode plus the "
        "final `flush()`; embedding baselines: the shared turn embedding plus their own indexing).",
        "",
    ]
    header = ["system", "search p50", "search p99", "before_turn p50", "before_turn p99", "ingest ms / turn"]
    rows = []
    for s in systems:
        lat = report["latency"].get(s, {})
        sr, bt = lat.get("search", {}), lat.get("before_turn", {})
        rows.append([s, _f(sr.get("p50")), _f(sr.get("p99")), _f(bt.get("p50")), _f(bt.get("p99")),
                     _f(report["ingest_ms_per_turn"].get(s))])
    lines += _table(header, rows)
    lines += ["", "## Notes", ""]
    lines += [f"- {n}" for n in report["notes"]]
    return "\n".join(lines) + "\n"


def plots(report: dict[str, Any], out: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    systems = report["systems"]
    recall = report["aggregate"]["recall"]
    kinds = [*KINDS, "overall"]
    fig, ax = plt.subplots(figsize=(11, 4.2))
    width = 0.8 / len(systems)
    for j, s in enumerate(systems):
        values = [recall[s][k]["r@10"] or 0.0 for k in kinds]
        ax.bar([i + j * width for i in range(len(kinds))], values, width, label=s)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(kinds))], kinds, rotation=20)
    ax.set_ylim(0, 1)
    ax.set_ylabel("evidence recall@10")
    ax.set_title(f"LongChat (seed {report['seed']}): evidence recall@10 by question kind")
    ax.legend(ncol=len(systems), fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.18))
    fig.tight_layout()
    fig.savefig(out / "longchat_recall.png", dpi=110)
    plt.close(fig)
    written.append("longchat_recall.png")

    cost = report.get("cost")
    if cost:
        fig, ax = plt.subplots(figsize=(8, 4.2))
        for s in cost["series"]:
            xs = sorted(int(k) for k in s["tokens"])
            ax.plot(xs, [s["tokens"][str(x)] for x in xs], label=s["system"])
        ax.axhline(cost_series.BUDGET, color="grey", linestyle=":", linewidth=1)
        ax.set_xlabel("turn")
        ax.set_ylabel("prompt tokens")
        ax.set_title(f"Prompt tokens per turn, persona {cost['persona']}")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(out / "longchat_tokens.png", dpi=110)
        plt.close(fig)
        written.append("longchat_tokens.png")
    return written


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    started = time.perf_counter()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    sz = args.sizes
    conversations = generate(
        args.seed, personas=sz["personas"], sessions=sz["sessions"], turns_per_session=sz["turns_per_session"],
        questions_per_persona=sz["questions"], long_persona_turns=sz["long_turns"],
    )
    if args.dump_data:
        dump(conversations, args.dump_data, meta={"seed": args.seed, **sz})
    result = evaluate(args, conversations)
    report: dict[str, Any] = {
        "command": " ".join(["python benchmarks/bench_longchat.py", shlex.join(sys.argv[1:] if argv is None else argv)]).strip(),
        "seed": args.seed,
        "sizes": sz,
        "systems": args.system_list,
        "dataset": dataset_stats(conversations),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
                   + (f", load average {load:.1f} at the start" if load is not None else ""),
        "context_config": CONTEXT_CONFIG,
        "latency": result["latency"],
        "ingest_ms_per_turn": result["ingest_ms_per_turn"],
        "embed_ms_per_turn": result["embed_ms_per_turn"],
        "capabilities": result["capabilities"],
    }
    report["aggregate"] = aggregate(result["records"], args.system_list)
    notes = list(result["notes"])
    if not args.no_cost:
        longest = max(conversations, key=lambda c: len(c.turns))
        points, series = cost_series.run(longest)
        report["cost"] = {
            "persona": longest.user_id, "turns": len(longest.turns), "checkpoints": points,
            "series": [{"system": s.system, "tokens": {str(k): v for k, v in s.tokens.items()},
                        "calls_per_turn": s.calls_per_turn, "llm_calls": s.llm_calls, "exchanges": s.exchanges,
                        "jobs": s.jobs, "note": s.note} for s in series],
        }
    if result["embed_ms_per_turn"] is not None:
        notes.append(f"Turn embeddings are computed once ({result['embed_ms_per_turn']:.1f} ms/turn) and shared by "
                     "dense, inmemorystore and hybrid; that time is included in each one's ingest figure.")
    if "ours" in args.system_list:
        notes.append("ours: recall@k counts the message ids of the first k hits; a hit may be a window or a session "
                     f"(mean distinct message ids in the top 10 hits: "
                     f"{_f(report['aggregate']['answer']['ours']['ids_in_top10'], 1)}).")
        notes.append("ours: each question is asked in a fresh thread, so the context holds memory sections only (no "
                     "window); questions count as recalls (access boost), as in use.")
    notes.append("Baselines see every turn, including turns after a mid-way question's date; so does ours unless "
                 "it filters by the question's date.")
    notes.append("Top-10 turns of every baseline fit the 8k budget, so their 'answer, top-10' is their answer in an "
                 "8k context.")
    report["notes"] = notes
    report["seconds"] = time.perf_counter() - started
    report["records"] = result["records"]

    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "longchat.json").write_text(json.dumps(report, indent=1, default=str) + "\n", encoding="utf-8")
    md = markdown(report)
    (args.out / "longchat.md").write_text(md, encoding="utf-8")
    written = ["longchat.md", "longchat.json", *plots(report, args.out)]
    print(md)
    print(f"wrote {', '.join(str(args.out / w) for w in written)} in {report['seconds']:.1f} s")
    return report


if __name__ == "__main__":
    main()
