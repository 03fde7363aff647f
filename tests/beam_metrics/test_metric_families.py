"""New metric families by name through ``mergeable_metrics.beam.ComputeMetrics`` (issue 3).

Binary extras, multiclass scores as list-valued row fields, multilabel rows and regression with a
measure column: the DirectRunner's per-slice results equal ``mergeable_metrics.Evaluation`` in process.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

beam = pytest.importorskip("apache_beam")

import mergeable_metrics  # noqa: E402
from mergeable_metrics.beam import ComputeMetrics, slice_result_from_json, slice_result_to_json  # noqa: E402
from tests._helpers import close  # noqa: E402
from tests._helpers.compare import assert_same_as_in_process  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::mergeable_metrics.metrics.base.UndefinedMetricWarning")


def _rows(kind: str, n: int = 90) -> list[dict]:
    rng = np.random.default_rng(7)
    g = rng.choice(["a", "b"], n)
    if kind == "binary":
        y = rng.integers(0, 2, n)
        s = np.round(np.clip(0.3 * y + 0.7 * rng.random(n), 0, 1), 3)
        return [{"y": int(y[i]), "s": float(s[i]), "g": g[i]} for i in range(n)]
    if kind == "multiclass":
        y = rng.integers(0, 3, n)
        p = rng.dirichlet(np.ones(3), n)
        return [{"y": int(y[i]), "p": p[i].tolist(), "g": g[i]} for i in range(n)]
    if kind == "multilabel":  # a scalar field too: see the report on all-list rows
        Y, S = rng.integers(0, 2, (n, 3)), np.round(rng.random((n, 3)), 2)
        return [{"y": Y[i].tolist(), "s": S[i].tolist(), "g": g[i]} for i in range(n)]
    t = 1e6 + rng.normal(0, 2, n)
    return [{"t": float(t[i]), "q": float(t[i] + rng.normal(0, 0.5)), "loss": float(rng.random()), "g": g[i]} for i in range(n)]


EVALUATIONS = {
    "binary": dict(
        label_col="y",
        score_col="s",
        metrics=["specificity", "mcc", "cohen_kappa", "log_loss", "brier_score", "ece", "reliability_diagram@n_bins=5", "confusion_matrix@normalize=all"],
    ),
    "multiclass": dict(
        label_col="y",
        score_col="p",
        num_classes=3,
        metrics=[
            "top_k_accuracy@k=2",
            "log_loss",
            "miou",
            "iou@none",
            "cohen_kappa@quadratic",
            "balanced_accuracy",
            "confusion_matrix@normalize=true",
            "hamming_loss",
            "ece",
            "mce@none",
            "ece@macro",
            "reliability_diagram@n_bins=4",
        ],
    ),
    "multilabel": dict(
        label_col="y",
        score_col="s",
        task="multilabel",
        num_classes=3,
        metrics=[
            "f1@samples",
            "hamming_loss",
            "subset_accuracy",
            "precision@micro",
            "roc_auc",
            "roc_auc@micro",
            "roc_auc@weighted",
            "roc_auc@none",
            "roc_auc@samples",
            "average_precision",
            "average_precision@micro",
            "average_precision@none",
            "average_precision@samples",
            "log_loss",
            "brier_score",
            "iou@samples",
        ],
    ),
    "regression": dict(
        label_col="t",
        prediction_col="q",
        measure_col="loss",
        task="regression",
        metrics=["r2", "rmse", "mape", "pearson", "mean_measure", "msle", "mean_pinball_loss@alpha=0.9", "mean_poisson_deviance", "d2_tweedie_score@power=1.5"],
    ),
}


# several named measures in one evaluation (issue 18): each the mean of its column
EVALUATIONS["named_measures"] = dict(label_col="t", prediction_col="q", task="regression", metrics=["mae"], measure_cols={"loss": "loss", "pred": "q"})


@pytest.mark.parametrize("kind", list(EVALUATIONS))
def test_metric_families_by_name_on_the_direct_runner(tmp_path: Path, kind: str):
    ev = mergeable_metrics.Evaluation(slices=["g"], **EVALUATIONS[kind])
    rows = _rows(kind)
    prefix = str(tmp_path / "slices")
    with beam.Pipeline(runner="DirectRunner") as p:
        _ = p | beam.Create(rows) | ComputeMetrics(ev, batch_size=16) | beam.Map(slice_result_to_json) | beam.io.WriteToText(prefix)
    lines = [ln for f in sorted(tmp_path.glob("slices*")) for ln in f.read_text().splitlines() if ln]
    got = ev.collect(slices=[slice_result_from_json(ln) for ln in lines])
    want = assert_same_as_in_process(got, ev, rows, kind, n_slices=3)
    assert got.to_dict()["slices"][0].get("undefined") == want.to_dict()["slices"][0].get("undefined")
    if kind == "named_measures":  # against a direct numpy computation
        assert close(got.overall.metrics["loss"], np.mean([r["loss"] for r in rows]))
        assert close(got.overall.metrics["pred"], np.mean([r["q"] for r in rows]))
        a = [r["loss"] for r in rows if r["g"] == "a"]
        assert close(got[(("g", "a"),)].metrics["loss"], np.mean(a))
