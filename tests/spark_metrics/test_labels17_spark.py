"""``labels=`` by class value and ``top_k_accuracy`` on binary scores through
``spark_metrics.compute_metrics`` equal ``core.Evaluation`` in process (issue 17)."""

from __future__ import annotations

import warnings

import pytest

import core
from tests._helpers import close
from tests._helpers.labels17 import BINARY, MULTICLASS, frame

pytestmark = pytest.mark.filterwarnings("ignore::core.metrics.UndefinedMetricWarning")


@pytest.mark.parametrize("config", [MULTICLASS, BINARY], ids=["labels", "binary_top_k"])
def test_labels_and_binary_top_k_on_spark(spark, config):
    from spark_metrics import collect_results, compute_metrics

    pdf = frame()
    ev = core.Evaluation(**config)
    df = spark.createDataFrame(pdf).repartition(3)
    got = collect_results(compute_metrics(df, evaluation=ev), ev)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = ev.evaluate([pdf])
    assert [s.slice for s in got.slices] == [s.slice for s in want.slices] and len(got.slices) == 4
    for g, w in zip(got.slices, want.slices):
        assert g.n == w.n
        for key, value in w.metrics.items():
            assert close(g.metrics[key], value), (g.slice, key)
    assert got.to_dict()["slices"] == want.to_dict()["slices"]
