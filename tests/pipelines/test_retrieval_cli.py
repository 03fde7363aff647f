"""``python -m mergeable_metrics.pipelines.evaluate --query COL``: ranking and retrieval metrics from a file, on the
local and Beam engines, equal to ``mergeable_metrics.Evaluation`` and scikit-learn's ``ndcg_score``."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

import mergeable_metrics
from mergeable_metrics.pipelines.evaluate import main
from tests._helpers.retrieval import retrieval_data, sk_ndcg_mean

METRICS = "ndcg@k=10,map@k=10,mrr,retrieval_precision@k=10,retrieval_recall@k=10,hit_rate@k=10,r_precision,dcg@k=10,num_queries,queries_without_relevant"


@pytest.mark.parametrize("engine", ["local", "beam"])
def test_cli_query_flag(tmp_path, engine):
    if engine == "beam":
        pytest.importorskip("apache_beam")
    data = retrieval_data(21, n_queries=12)
    pd.DataFrame(data).to_parquet(tmp_path / "in.parquet")
    out = tmp_path / "out"
    args = ["--input", str(tmp_path / "in.parquet"), "--label", "rel", "--score", "s", "--query", "q", "--slice", "g",
            "--metrics", METRICS, "--engine", engine, "--output", str(out), "--quiet", "--batch-size", "7"]  # fmt: skip
    assert main(args) == 0
    doc = json.loads((out / "metrics.json").read_text())
    assert doc["config"]["query_col"] == "q"
    ev = mergeable_metrics.Evaluation(label_col="rel", score_col="s", query_col="q", slices=["g"], metrics=METRICS.split(","))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = json.loads(ev.evaluate(data).to_json())
    assert [s["metrics"] for s in doc["slices"]] == [s["metrics"] for s in want["slices"]]
    np.testing.assert_allclose(doc["slices"][0]["metrics"]["ndcg@10"], sk_ndcg_mean(data, 10), rtol=1e-13)


def test_cli_query_needs_its_column(tmp_path):
    pd.DataFrame({"rel": [1.0, 0.0], "s": [0.2, 0.1]}).to_parquet(tmp_path / "in.parquet")
    code = main(["--input", str(tmp_path / "in.parquet"), "--label", "rel", "--score", "s", "--query", "q", "--metrics", "mrr",
                 "--engine", "local", "--output", str(tmp_path / "o"), "--quiet"])  # fmt: skip
    assert code != 0


def test_config_file_query_key(tmp_path):
    data = retrieval_data(22, n_queries=6)
    pd.DataFrame(data).to_parquet(tmp_path / "in.parquet")
    (tmp_path / "eval.yaml").write_text("input: in.parquet\nlabel: rel\nscore: s\nquery: q\nmetrics: [ndcg@k=5, mrr]\nengine: local\noutput: out\n")
    assert main(["--config", str(tmp_path / "eval.yaml"), "--quiet"]) == 0
    doc = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert doc["config"]["query_col"] == "q"
    np.testing.assert_allclose(doc["slices"][0]["metrics"]["ndcg@5"], sk_ndcg_mean(data, 5), rtol=1e-13)
