"""The offline extractor against LoCoMo's observations: what it stores, per speaker.

Each conversation is fed twice through the product path, once with each speaker as the user
(the rules read the user's messages only): ``after_turn`` once per exchange (two
consecutive turns, each speaker named on the message, ``at=`` the session's date), one
thread per session, ``end_session`` after each, defaults (no model: the offline rules run
in the turn's background job), then ``flush``. What the user's memory then holds is that
speaker's stored facts:

* every long-term memory (its source turns: the human messages of its exchange);
* every attribute value of the user's own profile (``relation_to_user: self``), a
  many-valued attribute (``likes``, ``dislikes``…) one fact per item, its source the turn
  that added the item (the attribute's history).

They are compared with LoCoMo's ``observation`` lists (per session, per speaker: facts an
annotator wrote, each with the turns it was drawn from). A stored fact **matches** an
observation of the same speaker by:

* ``turn``: one of the fact's source turns is one of the observation's evidence turns;
* ``words``: at least half of the fact's content words (BM25's terms: stopwords out, stems
  merged; the words "user" and the speaker's name left out) are in the observation, and at
  least two;
* ``both``: ``turn`` and ``words`` together (the headline: said there, and saying it).

Precision: the share of stored facts that match some observation of their speaker.
Coverage: the share of observations matched by some stored fact of their speaker.

    python benchmarks/bench_offline_extractor.py --locomo ../shared/data/locomo10.json
    python benchmarks/bench_offline_extractor.py --locomo ../shared/data/locomo10.json --conversations 2 --out /tmp/oe

Writes ``offline_extractor.md`` and ``offline_extractor.json`` to ``--out`` (default
``benchmarks/results``). The data (CC BY-NC 4.0) is not in this repository: get
``data/locomo10.json`` from the public ``snap-research/LoCoMo`` repository.
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
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from langchain_tiered_memory import TieredMemory  # noqa: E402
from langchain_tiered_memory.backends.bm25 import content_words  # noqa: E402
from langchain_tiered_memory.vocabulary import MANY_VALUED_ATTRIBUTES, RELATION_ATTRIBUTE, SELF, VALUE_SEPARATOR  # noqa: E402
from locomo import Conversation, evidence_ids, load  # noqa: E402

HERE = Path(__file__).resolve().parent
#: The share of a fact's content words an observation must hold for ``words``, and the least.
WORD_SHARE, MIN_WORDS = 0.5, 2
MATCHES = ("turn", "words", "both")


@dataclass
class Fact:
    speaker: str
    kind: str  # "memory" or "attribute"
    text: str
    turns: frozenset[str]  # dia_ids


@dataclass
class Observation:
    speaker: str
    text: str
    turns: frozenset[str]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--locomo", type=Path, required=True, help="locomo10.json")
    p.add_argument("--conversations", type=int, help="the first N conversations only")
    p.add_argument("--out", type=Path, default=HERE / "results")
    return p.parse_args(argv)


def observations(path: Path, conversations: list[Conversation]) -> dict[str, list[Observation]]:
    """Each conversation's observations, with their speaker (``load`` keeps none)."""
    raw = {r["sample_id"]: r for r in json.loads(path.read_text())}
    out: dict[str, list[Observation]] = {}
    for conv in conversations:
        known = {t.id for t in conv.turns}
        found = []
        for per_session in (raw[conv.id].get("observation") or {}).values():
            for speaker, facts in per_session.items():
                for text, *ids in facts:
                    turns = frozenset(d for item in ids for d in evidence_ids(item) if d in known)
                    found.append(Observation(speaker, text, turns))
        out[conv.id] = found
    return out


def feed(memory: TieredMemory, conv: Conversation, user: str, as_user: str) -> None:
    """The conversation through ``after_turn`` with ``as_user`` as the user (a human message),
    the other speaker as the assistant."""
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

    for n, session in enumerate(conv.sessions, 1):
        thread = f"{user}-s{n}"
        for i in range(0, len(session), 2):
            pair = session[i : i + 2]
            messages: list[BaseMessage] = [
                (HumanMessage if t.speaker == as_user else AIMessage)(t.text, name=t.speaker, id=f"{user}:{t.id}")
                for t in pair
            ]
            memory.after_turn(user, thread, messages, at=pair[0].at)
        memory.end_session(user, thread)


def stored(memory: TieredMemory, user: str, speaker: str) -> list[Fact]:
    """The facts ``user``'s memory holds: memories, and the own profile's attribute values."""
    dia = lambda mid: mid.split(":", 1)[1] if mid and ":" in mid else None  # noqa: E731
    facts: list[Fact] = []
    offset = 0
    while page := memory.memories.list(user, limit=1000, offset=offset):
        offset += len(page)
        for entry in page:
            turns = frozenset(d for d in map(dia, entry.source_message_ids) if d)
            facts.append(Fact(speaker, "memory", entry.content, turns))
    for entity in memory.entities.list(user):
        if entity.attributes.get(RELATION_ATTRIBUTE) != SELF:
            continue
        full = memory.entities.get(user, entity.name)
        for key, value in entity.attributes.items():
            if key == RELATION_ATTRIBUTE:
                continue
            history = full.history.get(key, []) if full else []
            items = value.split(VALUE_SEPARATOR) if key in MANY_VALUED_ATTRIBUTES else [value]
            for item in items:
                # The turn that added the item: the first step of the history that holds it.
                source = next((h.source_message for h in history if item in h.value.split(VALUE_SEPARATOR)), None)
                facts.append(Fact(speaker, "attribute", f"{key.replace('_', ' ')}: {item}",
                                  frozenset(d for d in [dia(source)] if d)))
    return facts


def _words(text: str, drop: set[int]) -> set[int]:
    return content_words(text) - drop


def evaluate(facts: list[Fact], observed: list[Observation], speakers: tuple[str, str]) -> dict[str, Any]:
    """Which facts match an observation of their speaker, and which observations a fact."""
    drop = content_words(" ".join(["user", "users", *speakers]))
    obs_words = [_words(o.text, drop) for o in observed]
    fact_hit = [dict.fromkeys(MATCHES, False) for _ in facts]
    obs_hit = [dict.fromkeys(MATCHES, False) for _ in observed]
    for i, f in enumerate(facts):
        fw = _words(f.text, drop)
        for j, o in enumerate(observed):
            if o.speaker != f.speaker:
                continue
            shared = len(fw & obs_words[j])
            by = {"turn": bool(f.turns & o.turns),
                  "words": bool(fw) and shared >= MIN_WORDS and shared >= WORD_SHARE * len(fw)}
            by["both"] = by["turn"] and by["words"]
            for m in MATCHES:
                if by[m]:
                    fact_hit[i][m] = obs_hit[j][m] = True
    return {"fact_hit": fact_hit, "obs_hit": obs_hit}


def summarise(rows: list[tuple[Fact, dict[str, bool]]], obs: list[tuple[Observation, dict[str, bool]]]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "facts": len(rows),
        "memories": sum(f.kind == "memory" for f, _ in rows),
        "attributes": sum(f.kind == "attribute" for f, _ in rows),
        "observations": len(obs),
    }
    for m in MATCHES:
        out[f"precision_{m}"] = sum(h[m] for _, h in rows) / len(rows) if rows else None
        out[f"coverage_{m}"] = sum(h[m] for _, h in obs) / len(obs) if obs else None
    for kind in ("memory", "attribute"):
        part = [h for f, h in rows if f.kind == kind]
        out[f"precision_both_{kind}"] = sum(h["both"] for h in part) / len(part) if part else None
        out[f"precision_turn_{kind}"] = sum(h["turn"] for h in part) / len(part) if part else None
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    conversations = load(args.locomo, args.conversations)
    observed = observations(args.locomo, conversations)
    all_rows: list[tuple[Fact, dict[str, bool]]] = []
    all_obs: list[tuple[Observation, dict[str, bool]]] = []
    sides: dict[str, tuple[list, list]] = {"first speaker": ([], []), "second speaker": ([], [])}
    samples: list[dict[str, Any]] = []
    turns = 0
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp, TieredMemory(Path(tmp) / "memory") as memory:
        for conv in conversations:
            for side, speaker in zip(sides, conv.speakers):
                user = f"{conv.id}-{'ab'[conv.speakers.index(speaker)]}"
                feed(memory, conv, user, speaker)
                turns += len(conv.turns)
            memory.flush()
            facts = [f for side, speaker in zip(sides, conv.speakers)
                     for f in stored(memory, f"{conv.id}-{'ab'[conv.speakers.index(speaker)]}", speaker)]
            result = evaluate(facts, observed[conv.id], conv.speakers)
            rows = list(zip(facts, result["fact_hit"]))
            obs = list(zip(observed[conv.id], result["obs_hit"]))
            all_rows += rows
            all_obs += obs
            for side, speaker in zip(sides, conv.speakers):
                sides[side][0].extend(r for r in rows if r[0].speaker == speaker)
                sides[side][1].extend(o for o in obs if o[0].speaker == speaker)
            samples += [{"conversation": conv.id, "speaker": f.speaker, "kind": f.kind, "fact": f.text,
                         "turns": sorted(f.turns), **h} for f, h in rows[:12]]
            print(f"{conv.id}: {len(facts)} facts, {len(observed[conv.id])} observations "
                  f"({time.perf_counter() - start:.0f} s)", file=sys.stderr)
    seconds = time.perf_counter() - start
    kinds = Counter(f.text.split(":")[0] for f, _ in all_rows if f.kind == "attribute")
    return {
        "command": "python benchmarks/bench_offline_extractor.py " + " ".join(shlex.quote(a) for a in sys.argv[1:]),
        "conversations": [c.id for c in conversations],
        "turns_fed": turns,
        "seconds": round(seconds, 1),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "match": {"word_share": WORD_SHARE, "min_words": MIN_WORDS},
        "all": summarise(all_rows, all_obs),
        "by_side": {side: summarise(*sides[side]) for side in sides},
        "attribute_keys": dict(kinds.most_common()),
        "samples": samples,
    }


def _f(x: float | None) -> str:
    return "–" if x is None else f"{x:.3f}"


def table(report: dict[str, Any]) -> str:
    lines = ["| speakers | facts stored (memories + attributes) | observations | precision turn / words / both "
             "| coverage turn / words / both |", "|---|---|---|---|---|"]
    for name, s in [("all", report["all"]), *report["by_side"].items()]:
        lines.append(
            f"| {name} | {s['facts']:,} ({s['memories']:,} + {s['attributes']:,}) | {s['observations']:,} | "
            + " / ".join(_f(s[f"precision_{m}"]) for m in MATCHES) + " | "
            + " / ".join(_f(s[f"coverage_{m}"]) for m in MATCHES) + " |"
        )
    return "\n".join(lines)


def markdown(report: dict[str, Any]) -> str:
    a = report["all"]
    keys = ", ".join(f"{k} {n}" for k, n in list(report["attribute_keys"].items())[:12])
    return "\n".join([
        "# Offline extractor against LoCoMo's observations",
        "",
        f"`{report['command']}`: {len(report['conversations'])} conversations, each fed twice (each speaker "
        f"once as the user), {report['turns_fed']:,} turns through `after_turn`, {report['seconds']:.0f} s "
        f"({report['machine']}).",
        "",
        "A stored fact matches an observation of its speaker by `turn` (a source turn of the fact is an "
        f"evidence turn of the observation), `words` (≥ {report['match']['word_share']:.0%} of the fact's "
        f"content words, and ≥ {report['match']['min_words']}, are in the observation) or `both`. "
        "Precision: stored facts matching some observation; coverage: observations matched by some fact.",
        "",
        table(report),
        "",
        f"By kind (match `both`): memories {_f(a['precision_both_memory'])}, attributes "
        f"{_f(a['precision_both_attribute'])}; by `turn`: memories {_f(a['precision_turn_memory'])}, "
        f"attributes {_f(a['precision_turn_attribute'])}.",
        "",
        f"Attribute values stored, by key: {keys}.",
        "",
    ])


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    report = run(args)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "offline_extractor.json").write_text(json.dumps(report, indent=1) + "\n")
    (args.out / "offline_extractor.md").write_text(markdown(report))
    print(table(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
