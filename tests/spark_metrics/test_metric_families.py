"""New metric families by name through ``mergeable_metrics.spark.compute_metrics`` (issue 3).

Binary extras, multiclass class scores as K numeric columns, multilabel indicator and score lists
(ranking metrics per label, micro and per row), regression with a measure column:
Spark's per-slice results equal ``mergeable_metrics.Evaluation`` in process.
"""

from __future__ import annotations


import numpy as np
import pandas as pd
import pytest

import mergeable_metrics
from tests._helpers import close
from tests._helpers.compare import assert_same_as_in_process

pytestmark = pytest.mark.filterwarnings("ignore::mergeable_metrics.metrics.base.UndefinedMetricWarning")


def _frame(n: int = 120) -> pd.DataFrame:
    rng = np.random.default_rng(11)
    y = rng.integers(0, 3, n)
    p = rng.dirichlet(np.ones(3), n)
    t = 1e6 + rng.normal(0, 2, n)
    return pd.DataFrame({
        "y3": y, "p0": p[:, 0], "p1": p[:, 1], "p2": p[:, 2], "yb": (y == 1).astype(int), "s": p[:, 1],
        "t": t, "q": t + rng.normal(0, 0.5, n), "loss": rng.random(n), "w": rng.integers(0, 3, n).astype(float),
        "g": rng.choice(["a", "b", "c"], n),
        "yl": list(rng.integers(0, 2, (n, 3))), "sl": list(np.round(rng.random((n, 3)), 2)),
    })  # fmt: skip


EVALUATIONS = {
    "binary": dict(label_col="yb", score_col="s", metrics=["npv", "fpr", "mcc", "log_loss", "ece@n_bins=5", "mean_prediction", "dice", "confusion_matrix@normalize=true", "hamming_loss"]),
    "multiclass": dict(label_col="y3", score_col=["p0", "p1", "p2"], num_classes=3,
                       metrics=["top_k_accuracy@k=2", "log_loss", "brier_score", "miou", "classification_report", "mcc", "confusion_matrix@normalize=pred",
                                "ece", "mce@none", "ece@macro", "reliability_diagram@n_bins=4"]),
    "multilabel": dict(label_col="yl", score_col="sl", task="multilabel", num_classes=3,
                       metrics=["f1@samples", "hamming_loss", "roc_auc", "roc_auc@micro", "roc_auc@weighted", "roc_auc@none", "roc_auc@samples",
                                "average_precision", "average_precision@micro", "average_precision@none", "average_precision@samples", "log_loss", "brier_score", "iou@samples"]),
    "regression": dict(label_col="t", prediction_col="q", measure_col="loss", task="regression",
                       metrics=["r2", "explained_variance", "mae", "max_error", "mean_error", "mean_measure", "msle", "mean_pinball_loss@alpha=0.9", "mean_poisson_deviance", "d2_tweedie_score@power=1.5"]),
    # several named measures in one evaluation (issue 18), weighted by w
    "named_measures": dict(label_col="t", prediction_col="q", task="regression", metrics=["mae"], measure_cols={"loss": "loss", "pred": "q"}),
}  # fmt: skip


@pytest.mark.parametrize("kind", list(EVALUATIONS))
def test_metric_families_by_name_on_spark(spark, kind):
    from mergeable_metrics.spark import collect_results, compute_metrics

    pdf = _frame()
    ev = mergeable_metrics.Evaluation(slices=["g"], weight_col="w", **EVALUATIONS[kind])
    df = spark.createDataFrame(pdf).repartition(3)
    got = collect_results(compute_metrics(df, evaluation=ev), ev)
    want = assert_same_as_in_process(got, ev, pdf, kind, n_slices=4)
    # the undefined lists are rebuilt from Spark's long-format rows and agree with core's
    assert [s.get("undefined") for s in got.to_dict()["slices"]] == [s.get("undefined") for s in want.to_dict()["slices"]]
    if kind == "named_measures":  # against a direct numpy computation
        assert close(got.overall.metrics["loss"], np.average(pdf["loss"], weights=pdf["w"]))
        assert close(got.overall.metrics["pred"], np.average(pdf["q"], weights=pdf["w"]))
        b = pdf[pdf["g"] == "b"]
        assert close(got[(("g", "b"),)].metrics["loss"], np.average(b["loss"], weights=b["w"]))
