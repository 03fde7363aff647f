"""``labels=`` by class value and ``top_k_accuracy`` on binary scores through
``mergeable_metrics.beam.ComputeMetrics`` (DirectRunner, Arrow record batches of a Parquet file) equal
``mergeable_metrics.Evaluation`` in process (issue 17)."""

from __future__ import annotations

import pytest

pytest.importorskip("apache_beam")

import pyarrow as pa  # noqa: E402

import mergeable_metrics  # noqa: E402
from tests._helpers.beam_run import beam_parquet_results  # noqa: E402
from tests._helpers.labels17 import BINARY, MULTICLASS, assert_same_as_in_process, frame  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::mergeable_metrics.metrics.base.UndefinedMetricWarning")


def test_labels_and_binary_top_k_on_the_direct_runner(tmp_path):
    pdf = frame()
    evs = {"labels": mergeable_metrics.Evaluation(**MULTICLASS), "binary_top_k": mergeable_metrics.Evaluation(**BINARY)}
    got = beam_parquet_results(tmp_path, pa.Table.from_pandas(pdf, preserve_index=False), evs, row_group_size=25)
    for name, ev in evs.items():
        assert_same_as_in_process(got[name], ev, pdf, name)
