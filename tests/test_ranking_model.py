"""The fitted ranking model (``scoring.RankingModel``): the shipped one loads and keeps its
promises (more similarity never ranks lower), trees exported from LightGBM score as LightGBM
does, and a broken model file is our error with what to do."""

from __future__ import annotations

import json

import numpy as np
import pytest

from langchain_tiered_memory import ConfigError, MemoryConfig
from langchain_tiered_memory.recall.features import FEATURES
from langchain_tiered_memory.scoring import MODEL_PATH, RankingModel, Trees, ranking_model


def _rows(n: int, seed: int = 0) -> np.ndarray:
    # Features are shares, flags and log-scaled values in 0..1 (dense_gap: ≤ 0).
    rng = np.random.default_rng(seed)
    rows = rng.random((n, len(FEATURES)))
    flags = rng.random((n, len(FEATURES))) < 0.5
    rows[flags] = np.round(rows[flags])
    rows[:, FEATURES.index("dense_gap")] *= -1
    return rows


def test_the_shipped_model_loads_names_known_features_and_says_how_it_was_fitted():
    model = ranking_model()
    model.check(FEATURES)
    assert model.trees is not None and model.trees.count > 0
    about = model.about
    assert "cross_validated" in about and about["command"].startswith("python benchmarks/fit_ranking.py")
    p = model.probability(_rows(200), FEATURES)
    assert p.shape == (200,) and np.all((p > 0) & (p < 1))


@pytest.mark.parametrize("feature, direction", [
    ("dense", 1), ("sentence", 1), ("bm25", 1), ("bm25_share", 1), ("dense_gap", 1),
    ("dense_rank", -1), ("bm25_rank", -1), ("in_time", 1), ("off_time", -1),
    ("named", 1), ("asker", 1), ("other_side", -1), ("asks", -1), ("news", 1), ("tells_when", 1),
    ("stale_age", -1),
])
def test_more_similarity_or_a_fit_to_the_time_asked_never_ranks_a_unit_lower(feature, direction):
    model = ranking_model()
    rows = _rows(2000, seed=FEATURES.index(feature))
    column = FEATURES.index(feature)
    before = model.probability(rows, FEATURES)
    raised = rows.copy()
    raised[:, column] = np.clip(raised[:, column] + 0.2 * direction, -1.0, 1.0)
    after = model.probability(raised, FEATURES)
    assert np.all(after >= before - 1e-12), f"{feature}: {int((after < before - 1e-12).sum())} rows ranked lower"


def test_a_model_survives_its_json_and_a_missing_feature_weighs_nothing():
    model = ranking_model()
    again = RankingModel.from_json(json.loads(json.dumps(model.to_json())))
    rows = _rows(300, seed=3)
    assert np.array_equal(model.probability(rows, FEATURES), again.probability(rows, FEATURES))
    linear = RankingModel(("dense", "bm25"), (2.0, 1.0), bias=-1.0)
    scored = linear.probability(rows, FEATURES)
    expected = 1 / (1 + np.exp(-(2.0 * rows[:, FEATURES.index("dense")] + rows[:, FEATURES.index("bm25")] - 1.0)))
    assert np.allclose(scored, expected)


def test_trees_exported_from_lightgbm_score_as_lightgbm_does():
    lgb = pytest.importorskip("lightgbm")
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import fit_ranking as fit

    rows = _rows(3000, seed=5)
    labels = ((rows[:, 0] + 0.5 * rows[:, 4] - 0.3 * rows[:, 24] + 0.1 * np.random.default_rng(1).random(3000)) > 0.8)
    data = lgb.Dataset(rows, labels.astype(int), group=[30] * 100, feature_name=list(FEATURES))
    booster = lgb.train({**fit.tree_params(), "min_data_in_leaf": 5}, data, 40)
    model = RankingModel(FEATURES, trees=fit.export_trees(booster))
    probe = _rows(500, seed=6)
    assert np.allclose(model.raw(probe, FEATURES), booster.predict(probe), atol=1e-9)


def test_a_broken_model_file_is_a_config_error_that_says_how_to_make_one(tmp_path):
    missing = tmp_path / "nope.json"
    with pytest.raises(ConfigError, match="cannot read the ranking model"):
        ranking_model(str(missing))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"weights": [1.0]}))
    with pytest.raises(ConfigError, match="fit_ranking.py"):
        ranking_model(str(bad))
    shapes = tmp_path / "shapes.json"
    shapes.write_text(json.dumps({"features": ["dense"], "trees": {"depth": 2, "feature": [[0]], "threshold": [[0.5]],
                                                                 "leaf": [[0.0, 1.0]]}}))
    with pytest.raises(ConfigError, match="nodes"):
        ranking_model(str(shapes))
    unknown = tmp_path / "unknown.json"
    unknown.write_text(json.dumps({"features": ["dense", "moon_phase"], "weights": [1.0, 2.0]}))
    with pytest.raises(ConfigError, match="moon_phase"):
        ranking_model(str(unknown)).check(FEATURES)


def test_a_memory_opened_with_a_model_file_ranks_with_it(tmp_path):
    from langchain_core.messages import AIMessage, HumanMessage

    from langchain_tiered_memory import TieredMemory

    # A model that reads nothing but BM25: the turn sharing the query's words comes first.
    path = tmp_path / "bm25_only.json"
    path.write_text(json.dumps({"features": ["bm25"], "weights": [5.0], "bias": -2.0}))
    config = MemoryConfig(job_mode="inline", ranking_model=str(path))
    with TieredMemory(tmp_path / "m", config) as memory:
        memory.after_turn("u", "t", [HumanMessage("The plumber comes on Thursday to fix the boiler."),
                                     AIMessage("Good, the heating has been off for days.")])
        hits = memory.recall("u", "when does the plumber come for the boiler", k=2, explain=True)
        assert "plumber" in hits[0].text
        assert hits[0].parts is not None and hits[0].parts.probability is not None
    assert MODEL_PATH.exists()


def test_trees_refuse_shapes_they_cannot_walk():
    with pytest.raises(ConfigError):
        Trees(1, ((0,),), ((float("nan"),),), ((0.0, 1.0),))
    with pytest.raises(ConfigError, match="split on features"):
        RankingModel(("dense",), trees=Trees(1, ((3,),), ((0.5,),), ((0.0, 1.0),)))
