"""Ranking and retrieval metrics (``query_col``) on Beam's DirectRunner: each query's rows are
spread over bundles and batches of 3 rows, and the per-slice results equal ``mergeable_metrics.Evaluation`` in
process and scikit-learn's ``ndcg_score`` per query."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

beam = pytest.importorskip("apache_beam")

import mergeable_metrics  # noqa: E402
from mergeable_metrics.beam import ComputeMetrics, slice_result_from_json, slice_result_to_json  # noqa: E402
from tests._helpers.retrieval import retrieval_data, sk_ndcg_mean  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::mergeable_metrics.metrics.base.UndefinedMetricWarning")

METRICS = ["ndcg@k=10", "map@k=10", "mrr", "retrieval_precision@k=10", "retrieval_recall@k=10", "hit_rate@k=10", "r_precision", "dcg@k=10"]


def test_queries_split_across_bundles_give_the_local_results(tmp_path: Path):
    data = retrieval_data(11, n_queries=15)
    rows = [{"q": data["q"][i], "rel": float(data["rel"][i]), "s": float(data["s"][i]), "g": data["g"][i]} for i in range(len(data["q"]))]
    ev = mergeable_metrics.Evaluation(label_col="rel", score_col="s", query_col="q", slices=["g"], metrics=METRICS)
    prefix = str(tmp_path / "slices")
    with beam.Pipeline(runner="DirectRunner") as p:
        _ = (
            p
            | beam.Create(rows, reshuffle=True)
            | beam.Reshuffle()  # rows of one query land in different bundles
            | ComputeMetrics(ev, batch_size=3)
            | beam.Map(slice_result_to_json)
            | beam.io.WriteToText(prefix)
        )
    lines = [ln for f in sorted(tmp_path.glob("slices*")) for ln in f.read_text().splitlines() if ln]
    got = ev.collect(slices=[slice_result_from_json(ln) for ln in lines])
    want = ev.evaluate(data)
    assert got.to_json() == want.to_json()
    assert len(got.slices) == 3
    np.testing.assert_allclose(got.overall.metrics["ndcg@10"], sk_ndcg_mean(data, 10), rtol=1e-13)


def test_query_weights_split_across_bundles_give_the_local_results(tmp_path: Path):
    """weight_col with query_col (one weight per query, scikit-learn's ndcg_score sample_weight):
    a query's rows in different bundles keep the local, one-pass value."""
    data = retrieval_data(12, n_queries=15)
    qw = {q: float(1 + i % 4) for i, q in enumerate(sorted(set(data["q"]), key=str))}
    data["w"] = np.array([qw[q] for q in data["q"]])
    rows = [
        {"q": data["q"][i], "rel": float(data["rel"][i]), "s": float(data["s"][i]), "g": data["g"][i], "w": float(data["w"][i])} for i in range(len(data["q"]))
    ]
    ev = mergeable_metrics.Evaluation(label_col="rel", score_col="s", query_col="q", weight_col="w", slices=["g"], metrics=["ndcg@k=10", "dcg", "mrr"])
    prefix = str(tmp_path / "slices")
    with beam.Pipeline(runner="DirectRunner") as p:
        _ = (
            p
            | beam.Create(rows, reshuffle=True)
            | beam.Reshuffle()
            | ComputeMetrics(ev, batch_size=3)
            | beam.Map(slice_result_to_json)
            | beam.io.WriteToText(prefix)
        )
    lines = [ln for f in sorted(tmp_path.glob("slices*")) for ln in f.read_text().splitlines() if ln]
    got = ev.collect(slices=[slice_result_from_json(ln) for ln in lines])
    assert got.to_json() == ev.evaluate(data).to_json()
