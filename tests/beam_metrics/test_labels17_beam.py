"""``labels=`` by class value and ``top_k_accuracy`` on binary scores through
``beam_metrics.ComputeMetrics`` (DirectRunner, Arrow record batches of a Parquet file) equal
``core.Evaluation`` in process (issue 17)."""

from __future__ import annotations

import warnings

import pytest

pytest.importorskip("apache_beam")

import pyarrow as pa  # noqa: E402

import core  # noqa: E402
from tests._helpers import close  # noqa: E402
from tests._helpers.beam_run import beam_parquet_results  # noqa: E402
from tests._helpers.labels17 import BINARY, MULTICLASS, frame  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::core.metrics.UndefinedMetricWarning")


def test_labels_and_binary_top_k_on_the_direct_runner(tmp_path):
    pdf = frame()
    evs = {"labels": core.Evaluation(**MULTICLASS), "binary_top_k": core.Evaluation(**BINARY)}
    got_all = beam_parquet_results(tmp_path, pa.Table.from_pandas(pdf, preserve_index=False), evs, row_group_size=25)
    for name, ev in evs.items():
        got = got_all[name]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = ev.evaluate([pdf])
        assert [s.slice for s in got.slices] == [s.slice for s in want.slices] and len(got.slices) == 4
        for g, w in zip(got.slices, want.slices):
            assert g.n == w.n
            for key, value in w.metrics.items():
                assert close(g.metrics[key], value), (name, g.slice, key)
        assert got.to_dict()["slices"] == want.to_dict()["slices"]
