"""``labels=`` by class value and ``top_k_accuracy`` on binary scores through
``spark_metrics.compute_metrics`` equal ``core.Evaluation`` in process (issue 17)."""

from __future__ import annotations

import pytest

import core
from tests._helpers.labels17 import BINARY, MULTICLASS, assert_same_as_in_process, frame

pytestmark = pytest.mark.filterwarnings("ignore::core.metrics.UndefinedMetricWarning")


@pytest.mark.parametrize("config", [MULTICLASS, BINARY], ids=["labels", "binary_top_k"])
def test_labels_and_binary_top_k_on_spark(spark, config):
    from spark_metrics import collect_results, compute_metrics

    pdf = frame()
    ev = core.Evaluation(**config)
    got = collect_results(compute_metrics(spark.createDataFrame(pdf).repartition(3), evaluation=ev), ev)
    assert_same_as_in_process(got, ev, pdf)
