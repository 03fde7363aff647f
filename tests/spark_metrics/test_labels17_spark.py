"""``labels=`` by class value and ``top_k_accuracy`` on binary scores through
``mergeable_metrics.spark.compute_metrics`` equal ``mergeable_metrics.Evaluation`` in process (issue 17)."""

from __future__ import annotations

import pytest

import mergeable_metrics
from tests._helpers.labels17 import BINARY, MULTICLASS, NATIVE, assert_same_as_in_process, frame

pytestmark = pytest.mark.filterwarnings("ignore::mergeable_metrics.metrics.base.UndefinedMetricWarning")


@pytest.mark.parametrize("config", [MULTICLASS, NATIVE, BINARY], ids=["labels", "labels_native", "binary_top_k"])
def test_labels_and_binary_top_k_on_spark(spark, config):
    from mergeable_metrics.spark import collect_results, compute_metrics
    from mergeable_metrics.spark.sql_path import lowering_blocker

    pdf = frame()
    ev = mergeable_metrics.Evaluation(**config)
    df = spark.createDataFrame(pdf)
    if config is NATIVE:  # the native SQL aggregates (cells), not the Arrow path
        assert lowering_blocker(df, ev) is None
    got = collect_results(compute_metrics(df.repartition(3), evaluation=ev), ev)
    assert_same_as_in_process(got, ev, pdf)
