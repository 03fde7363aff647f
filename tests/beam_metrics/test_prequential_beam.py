"""mergeable_metrics.beam.ComputePrequentialMetrics: windowed and cumulative metrics equal the local engine's."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from mergeable_metrics import PrequentialEvaluation

beam = pytest.importorskip("apache_beam")
from apache_beam.testing.util import assert_that  # noqa: E402

from mergeable_metrics.beam.prequential import ComputePrequentialMetrics  # noqa: E402


def test_rows_and_batches_in_any_order_equal_the_local_stream():
    rng = np.random.default_rng(5)
    n = 3000
    y = rng.integers(0, 3, n)
    p = np.where(rng.random(n) < np.linspace(0.9, 0.5, n), y, rng.integers(0, 3, n))
    opts = dict(label_col="y", prediction_col="p", num_classes=3, metrics=["accuracy", "f1@macro"])
    want = PrequentialEvaluation(400, **opts).evaluate({"y": y, "p": p})
    perm = rng.permutation(n)
    rows = [{"y": int(y[i]), "p": int(p[i]), "pos": int(i)} for i in perm[:1000]]
    rest = perm[1000:]
    batches = pa.table({"y": y[rest], "p": p[rest], "pos": rest}).to_batches(max_chunksize=450)

    def check(got):
        assert len(got) == 1
        r = got[0]
        assert r.windows == want.windows and r.instances == want.instances and r.n == want.n
        np.testing.assert_equal(r.windowed, want.windowed)
        np.testing.assert_equal(r.cumulative, want.cumulative)

    with beam.Pipeline() as pipeline:
        got = (
            pipeline
            | beam.Create(rows + batches + [pa.table({"y": y[:0], "p": p[:0], "pos": rest[:0]})], reshuffle=True)
            | ComputePrequentialMetrics(400, "pos", **opts)
        )
        assert_that(got, check)


def test_needs_a_position_column():
    with pytest.raises(ValueError, match="needs position_col"):
        ComputePrequentialMetrics(10, None, label_col="y", prediction_col="p")
