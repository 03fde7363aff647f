"""mergeable_metrics.spark.prequential_metrics: windowed and cumulative metrics equal the local engine's."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mergeable_metrics import PrequentialEvaluation

pytest.importorskip("pyspark")


def test_equal_to_the_local_stream_whatever_the_partitioning(spark):
    from mergeable_metrics.spark.prequential import prequential_metrics

    rng = np.random.default_rng(9)
    n = 2500
    y = rng.integers(0, 2, n)
    s = np.clip(0.4 * y + 0.6 * rng.random(n), 0, 1)
    opts = dict(label_col="y", score_col="s", metrics=["accuracy", "roc_auc", "f1"])
    want = PrequentialEvaluation(300, **opts).evaluate({"y": y, "s": s})
    df = spark.createDataFrame(pd.DataFrame({"y": y, "s": s, "pos": np.arange(n)}).sample(frac=1, random_state=1)).repartition(5)
    got = prequential_metrics(df, 300, "pos", **opts)
    assert got.windows == want.windows and got.instances == want.instances and got.n == want.n
    np.testing.assert_equal(got.windowed, want.windowed)
    np.testing.assert_equal(got.cumulative, want.cumulative)
    bad = spark.createDataFrame(pd.DataFrame({"y": [0, 1], "s": [0.1, 0.2], "pos": [0, -3]}))
    with pytest.raises(ValueError, match="column 'pos': invalid value -3"):
        prequential_metrics(bad, 300, "pos", **opts)


def test_a_position_column_that_is_not_integral_is_refused(spark):
    # before: a double position 1.5 was floored into window 0 on Spark while the local engine refuses it
    from mergeable_metrics.spark.prequential import prequential_metrics

    opts = dict(label_col="y", score_col="s", metrics=["accuracy"])
    df = spark.createDataFrame(pd.DataFrame({"y": [0, 1], "s": [0.1, 0.9], "pos": [0.0, 1.5]}))
    with pytest.raises(ValueError, match=r"column 'pos': positions must be integers in \[0, 2\*\*63\), got a double column"):
        prequential_metrics(df, 2, "pos", **opts)
    with pytest.raises(ValueError, match="positions must be integers"):
        PrequentialEvaluation(2, position_col="pos", **opts).evaluate({"y": [0, 1], "s": [0.1, 0.9], "pos": [0.0, 1.5]})
