"""Implicit cues: does recall bring back the earlier exchange a later message depends on, when
they share few words? LoCoMo-Plus's "Cognitive" pairs in LoCoMo's conversations.

The protocol of ``../shared/data/README.md`` (:mod:`plus`): each item's cue, two turns, is a
session of its own in LoCoMo conversation ``index % 10``, a day after a session drawn with a
fixed seed; every conversation, cues included, goes through ``after_turn`` an exchange at a
time (offline defaults, ``--speakers`` as in ``bench_locomo.py``), ``end_session`` after each
session, ``flush``. Then each trigger, written ``"<first speaker>: <text>"``, is the query,
asked ``time_gap`` after its cue:

* ``ours``: ``recall(user, trigger, k=10, at=asked)``; hit@k: a cue turn is among the first
  k distinct message ids it names; and whether a cue turn is quoted in what ``before_turn``
  sends for the trigger (a fresh thread, the default budget);
* ``bm25``, ``dense`` (the package's embedder, brute-force cosine) and ``hybrid`` (their
  RRF) over single turns written ``speaker: text``, in the same run.

    python benchmarks/bench_implicit.py --plus ../shared/data/locomo_plus_dev.json --locomo ../shared/data/locomo10.json

Writes ``implicit.md``, ``implicit.json`` and ``implicit.png`` to ``--out`` (default
``benchmarks/results``). Neither data set is in this repository (``plus.py``, ``locomo.py``).
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

from langchain_tiered_memory import TieredMemory  # noqa: E402
from locomo import SPEAKER_FORMS, ingest, load  # noqa: E402
from longchat.metrics import mean, percentile  # noqa: E402
from longchat.systems import SharedVectors, build  # noqa: E402
from plus import Cue, load_items, place  # noqa: E402

HERE = Path(__file__).resolve().parent
KS = (1, 5, 10)
BASELINES = ("bm25", "dense", "hybrid")
SYSTEMS = ("ours", *BASELINES)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--plus", type=Path, required=True, help="LoCoMo-Plus items (locomo_plus_dev.json)")
    p.add_argument("--locomo", type=Path, required=True, help="locomo10.json")
    p.add_argument("--seed", type=int, default=0, help="draws the session each cue follows")
    p.add_argument("--speakers", choices=SPEAKER_FORMS, default="name", help="how ours is fed each message's speaker")
    p.add_argument("--systems", default=",".join(SYSTEMS), help=f"a subset of {','.join(SYSTEMS)}")
    p.add_argument("--items", type=int, help="the first N items only")
    p.add_argument("--out", type=Path, default=HERE / "results")
    p.add_argument("--memory-dir", type=Path,
                   help="keep ours' memory here; a directory that holds one already is queried without ingesting again")
    args = p.parse_args(argv)
    args.system_list = [s for s in SYSTEMS if s in {x.strip() for x in args.systems.split(",")}]
    if not args.system_list:
        p.error(f"choose systems among {', '.join(SYSTEMS)}")
    return args


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


def _hits(ids: list[str], cue: Cue) -> dict[str, bool]:
    return {f"hit@{k}": bool(set(ids[:k]) & set(cue.ids)) for k in KS}


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def evaluate(args: argparse.Namespace) -> dict[str, Any]:
    conversations = load(args.locomo)
    items = load_items(args.plus)[: args.items]
    cues = place(items, conversations, args.seed)
    by_id = {c.id: c for c in conversations}
    systems = args.system_list
    baselines = [s for s in systems if s in BASELINES]
    records: list[dict[str, Any]] = []
    latency: dict[str, list[float]] = defaultdict(list)
    turns = sum(len(c.turns) for c in conversations)
    out: dict[str, Any] = {"turns": turns, "items": len(cues), "ingest_ms_per_turn": {}}

    retrievers: dict[str, Any] = {}
    if baselines:
        from langchain_tiered_memory.embeddings import default_embeddings

        vectors = SharedVectors(default_embeddings())
        if any(b != "bm25" for b in baselines):
            vectors.precompute([t.indexed_text for c in conversations for t in c.turns])
        retrievers = build(baselines, vectors)
        for r in retrievers.values():
            for c in conversations:
                r.index(c.id, c.turns)

    tmp = tempfile.TemporaryDirectory(prefix="implicit-ours-")
    where = args.memory_dir or Path(tmp.name)
    fed = (where / "memory.db").exists()
    memory = TieredMemory(where) if "ours" in systems else None
    try:
        if memory is not None and not fed:
            out["ingest_ms_per_turn"]["ours"] = ingest(memory, conversations, args.speakers) * 1000 / turns
        for n, cue in enumerate(cues, 1):
            conv = by_id[cue.conversation]
            base = {"item": cue.index, "relation": cue.relation, "conversation": conv.id}
            if memory is not None:
                start = time.perf_counter()
                hits = memory.recall(conv.id, cue.trigger, k=10, at=cue.asked, peek=True)
                latency["recall"].append((time.perf_counter() - start) * 1000)
                ids = [i.split(":", 1)[1] for i in first_ids([h.message_ids for h in hits], 10)]
                start = time.perf_counter()
                ctx = memory.before_turn(conv.id, f"{conv.id}-trigger-{n}", cue.trigger, at=cue.asked, peek=True)
                latency["before_turn"].append((time.perf_counter() - start) * 1000)
                text = _norm("\n".join(m.text for m in ctx.messages))
                quoted = any(_norm(t.text)[:80] in text for t in cue.turns)
                records.append({**base, "system": "ours", **_hits(ids, cue), "cue_in_context": quoted,
                                "ids": ids})
            for name in baselines:
                ids = retrievers[name].search(conv.id, cue.trigger, 10)
                records.append({**base, "system": name, **_hits(ids, cue), "ids": ids})
    finally:
        if memory is not None:
            memory.close()
        tmp.cleanup()
    out["records"] = records
    out["latency_ms"] = {k: {"p50": percentile(v, 50), "p99": percentile(v, 99), "n": len(v)} for k, v in latency.items()}
    return out


def aggregate(records: list[dict[str, Any]], systems: list[str]) -> dict[str, Any]:
    by: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        by[(r["system"], r["relation"])].append(r)
        by[(r["system"], "all")].append(r)
    relations = sorted({r["relation"] for r in records})
    table: dict[str, dict[str, dict[str, Any]]] = {}
    for s in systems:
        table[s] = {}
        for rel in (*relations, "all"):
            rows = by.get((s, rel), [])
            table[s][rel] = {"n": len(rows), **{f"hit@{k}": mean(float(r[f"hit@{k}"]) for r in rows) for k in KS},
                             "cue_in_context": mean(float(r["cue_in_context"]) for r in rows if "cue_in_context" in r)}
    return table


def _f(v: Any) -> str:
    return "—" if v is None else (f"{v:.3f}" if isinstance(v, float) else str(v))


def markdown(report: dict[str, Any]) -> str:
    systems, table = report["systems"], report["table"]
    relations = [r for r in table[systems[0]] if r != "all"]
    lines = [
        "# Implicit cues: does recall find the exchange a later message depends on?",
        "",
        f"Command: `{report['command']}`  ",
        f"{report['items']} LoCoMo-Plus items placed in {report['conversations']} LoCoMo conversations "
        f"({report['turns']:,} turns, cues included), speakers fed as `{report['speakers']}`. "
        f"Run time {report['seconds']:.0f} s on {report['machine']}.",
        "",
        "hit@k: a cue turn is among the first k distinct message ids a system names for the trigger, asked "
        "`time_gap` after the cue. Ours: `recall()`; baselines: single turns `speaker: text`, every turn of the "
        "conversation.",
        "",
        "| system | " + " | ".join(f"{r} hit@1/5/10" for r in relations) + " | **all hit@1** | **all hit@5** | **all hit@10** | cue in context |",
        "|---|" + "---|" * (len(relations) + 4),
    ]
    for s in systems:
        cells = ["/".join(_f(table[s][r][f"hit@{k}"]) for k in KS) for r in relations]
        total = [f"**{_f(table[s]['all'][f'hit@{k}'])}**" for k in KS]
        lines.append(f"| {s} | " + " | ".join(cells) + " | " + " | ".join(total)
                     + f" | {_f(table[s]['all']['cue_in_context'])} |")
    lines += ["", "| measure | value |", "|---|---|"]
    for name, ms in report["ingest_ms_per_turn"].items():
        lines.append(f"| ingest {name}, ms per turn | {ms:.1f} |")
    for name, d in report["latency_ms"].items():
        lines.append(f"| {name} p50 / p99, ms | {_f(d['p50'])} / {_f(d['p99'])} |")
    return "\n".join(lines) + "\n"


def plot(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    systems, table = report["systems"], report["table"]
    groups = list(table[systems[0]])
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.8 / len(systems)
    for i, s in enumerate(systems):
        ax.bar([g + i * width for g in range(len(groups))], [table[s][r]["hit@10"] or 0 for r in groups], width, label=s)
    ax.set_xticks([g + 0.4 - width / 2 for g in range(len(groups))])
    ax.set_xticklabels(groups)
    ax.set_ylabel("hit@10")
    ax.set_ylim(0, 1)
    ax.set_title("LoCoMo-Plus: a cue turn among the first 10 message ids")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    result = evaluate(args)
    report = {
        "command": "python benchmarks/bench_implicit.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:])),
        "conversations": len({r["conversation"] for r in result["records"]}),
        "turns": result["turns"],
        "items": result["items"],
        "speakers": args.speakers,
        "systems": args.system_list,
        "table": aggregate(result["records"], args.system_list),
        "ingest_ms_per_turn": result["ingest_ms_per_turn"],
        "latency_ms": result["latency_ms"],
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "seconds": time.perf_counter() - started,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "implicit.json").write_text(
        json.dumps({**report, "records": result["records"]}, separators=(",", ":"), default=str)
    )
    (args.out / "implicit.md").write_text(markdown(report))
    plot(report, args.out / "implicit.png")
    print(markdown(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
