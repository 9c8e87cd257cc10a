"""Fit recall's ranking model on real conversations, and report it by cross-validation across
conversations.

The ranking (``langchain_tiered_memory/recall/ranking.py``) scores every candidate of a
search with a fitted model over its features (``recall/features.py``): boosted trees
(LightGBM's LambdaRank, ``pip install '.[fit]'``, exported as plain numbers numpy walks), or
with ``--kind linear`` a logistic regression. This script:

1. feeds each data set through the product path (``after_turn`` per exchange, offline
   defaults, as ``bench_locomo.py`` and ``bench_implicit.py`` do) and asks every query
   through ``recall()``, recording each search's whole pool of candidates as the model sees
   it (features, relevance) and which candidates name an evidence turn;
2. fits the model: the trees with LambdaRank (or the weights with a pairwise logistic loss
   and an L2 penalty), each query weighing the same and each data set in the share
   ``--balance`` gives it, some directions fixed (:data:`MONOTONE`); then a probability
   scale (a logistic fit of the scores, so that the output reads as the chance a candidate
   is evidence);
3. scores the held-out folds: the conversations are split into groups, each group ranked by
   the model fitted on the others (a data set's items placed in a conversation go with it),
   and recall@k / hit@k computed as the benchmarks do (the first k distinct message ids, a
   candidate whose messages the ones above cover skipped) — the **cross-validated** figure,
   beside the **fitted** one (ranked by the model fitted on everything);
4. writes the model (``--model``, default the package's ``data/ranking.json``) with what it
   was fitted on and its figures, and a report (``--report``).

    python benchmarks/fit_ranking.py --locomo ../shared/data/locomo10.json \
        --plus ../shared/data/locomo_plus_dev.json --longchat 1 --work /tmp/fit

To fit on your own conversations, write them as LoCoMo's JSON (``locomo.py`` reads it: the
sessions with their dates, questions with their evidence turns) and pass ``--locomo`` and
``--model my-ranking.json``; then ``MemoryConfig(ranking_model="my-ranking.json")``.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

from langchain_tiered_memory.recall.features import FEATURES  # noqa: E402
from langchain_tiered_memory.scoring import MODEL_PATH, TIE_BREAK, RankingModel, Trees, said_prior  # noqa: E402
from ranking_pools import Query, pools  # noqa: E402

HERE = Path(__file__).resolve().parent
KS = (1, 5, 10)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--locomo", type=Path, required=True, help="locomo10.json (or your conversations in its form)")
    p.add_argument("--plus", type=Path, help="LoCoMo-Plus items (locomo_plus_dev.json), placed in the LoCoMo conversations")
    p.add_argument("--seed", type=int, default=0, help="places the LoCoMo-Plus cues (as bench_implicit.py)")
    p.add_argument("--longchat", type=int, metavar="SEED",
                   help="add benchmarks/longchat's user–assistant chats generated with this seed (bench_longchat.py "
                        "checks seed 0: fit on another)")
    p.add_argument("--work", type=Path, help="keep the fed memories and the pools here (reused when present)")
    p.add_argument("--model", type=Path, default=MODEL_PATH, help="where to write the fitted model")
    p.add_argument("--report", type=Path, default=HERE / "results" / "ranking.md")
    p.add_argument("--kind", choices=("trees", "linear"), default="trees",
                   help="boosted trees (LightGBM, needed only here: pip install lightgbm) or a logistic regression")
    p.add_argument("--rounds", type=int, default=TREE_ROUNDS, help="boosting rounds (trees)")
    p.add_argument("--l2", type=float, default=1.0, help="the L2 penalty of the pairwise fit (linear)")
    p.add_argument("--balance", default="locomo=1,plus=1,longchat=1",
                   help="each data set's share of the fit (queries weigh alike within a set)")
    p.add_argument("--without", default="", help="features to leave out (comma-separated): an ablation, "
                   "each read as 0 by the fit and the cross-validation")
    p.add_argument("--no-write", action="store_true", help="report only; leave the model as it is")
    return p.parse_args(argv)


# --- fitting -----------------------------------------------------------------------------


def _pairs(queries: list[Query], balance: dict[str, float]) -> tuple[np.ndarray, np.ndarray]:
    """Differences ``x_evidence − x_other`` of every pair in each query, with weights that
    make each query weigh the same within its data set, and each set its share."""
    per_set = defaultdict(int)
    for q in queries:
        if q.labels[q.kept].any() and (~q.labels[q.kept]).any():
            per_set[q.dataset] += 1
    diffs, weights = [], []
    for q in queries:
        rows, labels = q.rows[q.kept], q.labels[q.kept]
        pos, neg = rows[labels], rows[~labels]
        if not len(pos) or not len(neg):
            continue
        d = (pos[:, None, :] - neg[None, :, :]).reshape(-1, rows.shape[1])
        diffs.append(d)
        weights.append(np.full(len(d), balance.get(q.dataset, 1.0) / per_set[q.dataset] / len(d)))
    return np.concatenate(diffs), np.concatenate(weights)


def _logistic(x: np.ndarray, y: np.ndarray, w: np.ndarray, l2: float, intercept: bool, iters: int = 50) -> np.ndarray:
    """Weighted L2-penalised logistic regression by Newton's method (``y`` in {0, 1})."""
    if intercept:
        x = np.hstack([x, np.ones((len(x), 1))])
    beta = np.zeros(x.shape[1])
    penalty = np.full(x.shape[1], l2)
    if intercept:
        penalty[-1] = 0.0
    total = w.sum()
    for _ in range(iters):
        z = np.clip(x @ beta, -40, 40)
        p = 1.0 / (1.0 + np.exp(-z))
        grad = x.T @ (w * (p - y)) / total + penalty * beta
        hess = (x * (w * p * (1 - p))[:, None]).T @ x / total + np.diag(penalty + 1e-9)
        step = np.linalg.solve(hess, grad)
        beta -= step
        if np.abs(step).max() < 1e-8:
            break
    return beta


#: The boosted trees' settings: LightGBM's LambdaRank (a pairwise loss weighted by what each
#: swap does to the ranking), shallow trees. On the development sets, deeper or more trees
#: ranked alike under cross-validation (R@10 within 0.005), and a logistic regression over
#: the same features lower (LoCoMo R@10 0.715 against 0.79).
TREE_PARAMS: dict[str, Any] = {
    "objective": "lambdarank", "learning_rate": 0.05, "num_leaves": 8, "max_depth": 3, "min_data_in_leaf": 50,
    "lambdarank_truncation_level": 20, "feature_fraction": 0.8, "bagging_fraction": 0.8, "bagging_freq": 1,
    "seed": 1, "deterministic": True, "num_threads": 2, "verbose": -1,
}
TREE_ROUNDS = 300
#: The direction each similarity feature may move the score: more of the query's meaning
#: or words in a unit (or beside it) never ranks it lower, a worse rank in a leg never
#: higher; said at the time a question names never lower, off it never higher; said by the
#: speaker a question names or by its asker never lower, by the other side of a first-person
#: question never higher; a line that only asks, to a question, never higher; telling of a
#: change, to a question about now, or telling a time, to a question asking when, never
#: lower; to a question about now, being older never higher (a question: a message that
#: says how things are now — "now I'm overwhelmed again" — leans on what came before). Each is what a user expects of any conversation; under cross-validation the
#: constraints cost nothing measurable (LoCoMo R@10 0.790 → 0.787, LoCoMo-Plus hit@10 0.697
#: → 0.697). A data set's quirks can still shape the rest, but not turn these upside down
#: where its pools were thin (a chat of a few turns, a user and an assistant).
MONOTONE: dict[str, int] = {
    "dense": 1, "dense_gap": 1, "sentence": 1, "dense_rank": -1, "bm25": 1, "bm25_share": 1, "bm25_rank": -1,
    "near_dense_content": 1, "in_time": 1, "off_time": -1, "named": 1, "asker": 1, "other_side": -1, "asks": -1,
    "news": 1, "tells_when": 1, "stale_age": -1, "age": -1,
}


def tree_params() -> dict[str, Any]:
    """LightGBM's parameters for the fit: :data:`TREE_PARAMS` with :data:`MONOTONE`."""
    return {**TREE_PARAMS, "monotone_constraints": [MONOTONE.get(f, 0) for f in FEATURES],
            "monotone_constraints_method": "advanced"}


def _query_weights(queries: list[Query], balance: dict[str, float]) -> list[float]:
    per_set: dict[str, int] = defaultdict(int)
    for q in queries:
        per_set[q.dataset] += 1
    return [balance.get(q.dataset, 1.0) / per_set[q.dataset] for q in queries]


def fit_trees(queries: list[Query], balance: dict[str, float], rounds: int = TREE_ROUNDS) -> RankingModel:
    """Boosted trees (LambdaRank) over the kept candidates of each query, exported as
    :class:`~langchain_tiered_memory.scoring.Trees`, then the probability scale."""
    import lightgbm as lgb

    used = [q for q in queries if q.kept.any()]
    weights = _query_weights(used, balance)
    rows = np.vstack([q.rows[q.kept] for q in used])
    labels = np.concatenate([q.labels[q.kept] for q in used]).astype(int)
    sizes = [int(q.kept.sum()) for q in used]
    # Every row of a query carries its query's weight (LightGBM reads a group's from its rows).
    row_weights = np.concatenate([np.full(n, w * len(used)) for n, w in zip(sizes, weights)])
    data = lgb.Dataset(rows, labels, group=sizes, weight=row_weights, feature_name=list(FEATURES))
    booster = lgb.train(tree_params(), data, rounds)
    trees = export_trees(booster)
    raw = RankingModel(FEATURES, trees=trees)
    return _calibrated(raw, used)


def export_trees(booster: Any) -> Trees:
    """A LightGBM booster's trees, padded to one depth (see :class:`Trees`)."""
    dump = booster.dump_model()
    names = dump["feature_names"]
    index = {n: FEATURES.index(n) for n in names}

    def depth(node: dict[str, Any]) -> int:
        return 0 if "leaf_value" in node else 1 + max(depth(node["left_child"]), depth(node["right_child"]))

    infos = [t["tree_structure"] for t in dump["tree_info"]]
    levels = max(1, max(depth(t) for t in infos))
    features, thresholds, leaves = [], [], []
    for tree in infos:
        feature, threshold, leaf = [0] * (2**levels - 1), [0.0] * (2**levels - 1), [0.0] * 2**levels

        def fill(node: dict[str, Any], at: int, level: int) -> None:
            if level == levels:
                leaf[at - (2**levels - 1)] = float(node["leaf_value"])
                return
            if "leaf_value" in node:  # a leaf above the last level: a split that always goes left
                feature[at], threshold[at] = 0, 1e300
                fill(node, 2 * at + 1, level + 1)
                fill(node, 2 * at + 2, level + 1)
                return
            if node.get("decision_type", "<=") != "<=":
                raise ValueError(f"unsupported split {node.get('decision_type')!r}")
            feature[at], threshold[at] = index[names[node["split_feature"]]], float(node["threshold"])
            fill(node["left_child"], 2 * at + 1, level + 1)
            fill(node["right_child"], 2 * at + 2, level + 1)

        fill(tree, 0, 0)
        features.append(tuple(feature))
        thresholds.append(tuple(threshold))
        leaves.append(tuple(leaf))
    return Trees(levels, tuple(features), tuple(thresholds), tuple(leaves))


def _calibrated(model: RankingModel, queries: list[Query]) -> RankingModel:
    """``model`` with its probability scale: a logistic fit of its scores to the labels."""
    scores = np.concatenate([model.raw(q.rows[q.kept], FEATURES) for q in queries])
    labels = np.concatenate([q.labels[q.kept] for q in queries]).astype(float)
    a, b = _logistic(scores[:, None], labels, np.ones(len(scores)), 0.0, intercept=True)
    return RankingModel(model.features, model.weights, float(b), float(a), model.trees)


def fit_linear(queries: list[Query], l2: float, balance: dict[str, float]) -> RankingModel:
    """A logistic regression fitted on every pair of each query (see the module docs)."""
    diffs, weights = _pairs(queries, balance)
    scale = np.abs(diffs).max(axis=0)
    scale[scale == 0] = 1.0
    # Pairs are symmetric: each difference once as "evidence first" (1), once reversed (0).
    x = np.vstack([diffs / scale, -diffs / scale])
    y = np.concatenate([np.ones(len(diffs)), np.zeros(len(diffs))])
    beta = _logistic(x, y, np.concatenate([weights, weights]), l2 * 1e-3, intercept=False) / scale
    return _calibrated(RankingModel(FEATURES, tuple(float(v) for v in beta)), queries)


def fit(queries: list[Query], args: argparse.Namespace, balance: dict[str, float]) -> RankingModel:
    if args.kind == "linear":
        return fit_linear(queries, args.l2, balance)
    return fit_trees(queries, balance, args.rounds)


# --- scoring -------------------------------------------------------------------------------


def ranked_ids(model: RankingModel, q: Query, k: int = 10) -> list[str]:
    """The first ``k`` distinct message ids the ranking names for ``q`` (as recall does)."""
    p = model.probability(q.rows, FEATURES)
    stale = q.rows[:, FEATURES.index("stale_age")]

    def prior(i: int) -> float | None:
        if q.priors[i] is not None:
            return q.priors[i]  # a long-term memory's
        return said_prior(float(stale[i])) if stale[i] > 0 else None  # said, to a question about now

    priors = [prior(i) for i in range(len(p))]
    score = [p[i] + (TIE_BREAK * (priors[i] - 0.5) if priors[i] is not None else 0.0) for i in range(len(p))]
    order = sorted((i for i in range(len(p)) if q.kept[i] and q.names[i]), key=lambda i: -score[i])
    covered: set[str] = set()
    out: list[str] = []
    for i in order:
        ids = set(q.names[i])
        if q.priors[i] is None and ids <= covered:
            continue
        if q.priors[i] is None:
            covered |= ids  # a long-term memory covers nothing (as recall's _diverse)
        for m in q.names[i]:
            if m not in out:
                out.append(m)
        if len(out) >= k:
            break
    return out[:k]


def measure(model_of: Any, queries: list[Query]) -> dict[str, dict[str, float]]:
    """R@k (LoCoMo: the share of evidence found) and hit@k (LoCoMo-Plus: any cue turn) per
    data set and category; ``model_of(query)`` is the model that ranks it."""
    cells: dict[tuple[str, str], list[dict[str, float]]] = defaultdict(list)
    for q in queries:
        ids = ranked_ids(model_of(q), q)
        scores = {}
        for k in KS:
            found = len(set(ids[:k]) & q.evidence)
            scores[f"r@{k}"] = found / len(q.evidence) if q.dataset != "plus" else float(found > 0)
        cells[(q.dataset, q.category)].append(scores)
        cells[(q.dataset, "all")].append(scores)
    return {f"{d}/{c}": {m: float(np.mean([s[m] for s in v])) for m in v[0]} | {"n": len(v)} for (d, c), v in sorted(cells.items())}


def groups(queries: list[Query]) -> list[list[str]]:
    """The folds: one conversation each."""
    return [[g] for g in sorted({q.group for q in queries})]


def cross_validated(queries: list[Query], args: argparse.Namespace, balance: dict[str, float]) -> dict[str, dict[str, float]]:
    models: dict[str, RankingModel] = {}
    for fold in groups(queries):
        model = fit([q for q in queries if q.group not in fold], args, balance)
        for g in fold:
            models[g] = model
    return measure(lambda q: models[q.group], queries)


def report(fitted: dict[str, Any], cv: dict[str, Any], model: RankingModel, command: str, seconds: float) -> str:
    lines = ["# The ranking model: fitted and cross-validated", "", f"Command: `{command}`  ",
             f"Run time {seconds:.0f} s. Cross-validated: each conversation ranked by the model fitted on the "
             "other conversations (its LoCoMo-Plus cues with it). R@k for LoCoMo (the share of a question's evidence "
             "turns among the first k message ids), hit@k for LoCoMo-Plus (a cue turn among them).", "",
             "| set | n | fitted R@1 / R@5 / R@10 | **cross-validated R@1 / R@5 / R@10** |", "|---|---|---|---|"]
    for key in fitted:
        f, c = fitted[key], cv[key]
        lines.append(f"| {key} | {f['n']} | {f['r@1']:.3f} / {f['r@5']:.3f} / {f['r@10']:.3f} | "
                     f"**{c['r@1']:.3f} / {c['r@5']:.3f} / {c['r@10']:.3f}** |")
    if model.weights:
        lines += ["", "## Weights (fitted on everything)", "", "| feature | weight |", "|---|---|"]
        for name, w in sorted(zip(model.features, model.weights), key=lambda t: -abs(t[1])):
            lines.append(f"| {name} | {w:+.3f} |")
        lines.append(f"| (bias) | {model.bias:+.3f} |")
    if model.trees is not None:
        used: dict[str, int] = defaultdict(int)
        for features, thresholds in zip(model.trees.feature, model.trees.threshold):
            for f, t in zip(features, thresholds):
                if t < 1e300:  # not a padding split
                    used[model.features[f]] += 1
        lines += ["", f"## Trees (fitted on everything): {model.trees.count} of depth {model.trees.depth}", "",
                  "Splits per feature: " + ", ".join(f"{n} {c}" for n, c in sorted(used.items(), key=lambda t: -t[1]))
                  + "; features no tree splits on: " + (", ".join(f for f in model.features if f not in used) or "none")
                  + "."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    balance = {k: float(v) for k, v in (part.split("=") for part in args.balance.split(","))}
    tmp = tempfile.TemporaryDirectory(prefix="fit-ranking-")
    work = args.work or Path(tmp.name)
    work.mkdir(parents=True, exist_ok=True)
    queries = pools(args, work)
    without = [f for f in args.without.split(",") if f]
    unknown = sorted(set(without) - set(FEATURES))
    if unknown:
        raise SystemExit(f"--without: unknown features {', '.join(unknown)}")
    for q in queries:
        for f in without:
            q.rows[:, FEATURES.index(f)] = 0.0
    model = fit(queries, args, balance)
    fitted = measure(lambda q: model, queries)
    cv = cross_validated(queries, args, balance)
    command = "python benchmarks/fit_ranking.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    about = {
        "fitted_on": sorted({q.dataset for q in queries}), "queries": len(queries), "command": command,
        "kind": args.kind, "balance": balance,
        **({"l2": args.l2, "loss": "pairwise logistic"} if args.kind == "linear" else
           {"rounds": args.rounds, "params": {**TREE_PARAMS, "monotone": MONOTONE}, "loss": "LightGBM lambdarank"}),
        "scale": "a logistic fit of the scores to the labels",
        "fitted": {k: v for k, v in fitted.items() if k.endswith("/all")},
        "cross_validated": {k: v for k, v in cv.items() if k.endswith("/all")},
    }
    model = RankingModel(model.features, model.weights, model.bias, model.scale, model.trees, about)
    text = report(fitted, cv, model, command, time.perf_counter() - started)
    if not args.no_write:
        args.model.write_text(json.dumps(model.to_json(), indent=1) + "\n")
        args.report.parent.mkdir(parents=True, exist_ok=True)
        args.report.write_text(text)
    print(text)
    tmp.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
