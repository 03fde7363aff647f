"""Issue 17 on every engine: median absolute error and the error quantiles through the CLI on
local, Beam and Spark (byte-identical metrics.json for exact and compressed states, fractional
weights, slices, several files and partitions; exact values equal scikit-learn's, compressed ones
carry bounds around them), and ``multilabel_confusion_matrix@samplewise=true`` keyed by ``id_col``
on core, Beam and Spark (examples spread over bundles and partitions; scikit-learn's matrices of
the rows sorted by id)."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sklearn.metrics import median_absolute_error, multilabel_confusion_matrix

from mergeable_metrics import Evaluation
from tests._helpers.cli_engines import metrics_json_per_engine

pytest.importorskip("apache_beam")
pytest.importorskip("pyspark")

# capped at 64 bins: the large slices are compressed (bounds), the small slice "d" (40 rows) exact
METRICS = "median_absolute_error@capacity=64,quantile_absolute_error@q=0.9@capacity=64,mean_poisson_deviance"


@pytest.mark.spark
def test_local_beam_and_spark_write_the_same_metrics(tmp_path):
    rng = np.random.default_rng(17)
    n = 3000
    y = rng.gamma(2.0, 2.0, n)
    p = np.maximum(y + rng.normal(0, 1, n), 0.01)
    p[::50] = np.round(p[::50])  # some ties
    w = rng.random(n) * 10.0 ** rng.integers(-2, 3, n)
    g = rng.choice(np.array(["a", "b", "c"]), n)
    g[rng.choice(n, 40, replace=False)] = "d"
    table = pa.table({"y": y, "p": p, "w": w, "g": g})
    args = ["--label", "y", "--prediction", "p", "--task", "regression", "--weight", "w", "--slice", "g", "--metrics", METRICS]
    docs = metrics_json_per_engine(tmp_path, table, args, (("local", 257), ("beam", 700), ("spark", 400)))
    assert docs["local"] == docs["beam"] == docs["spark"]
    doc = json.loads(docs["local"])
    key = "median_absolute_error@capacity=64"
    regimes = set()
    for s in doc["slices"]:
        mask = np.ones(n, bool) if not s["slice"] else g == s["slice"]["g"]
        want = median_absolute_error(y[mask], p[mask], sample_weight=w[mask])
        if key in s.get("bounds", {}):
            lo, hi = s["bounds"][key]
            assert lo <= want <= hi and lo < hi
            regimes.add("bounds")
        else:
            assert s["metrics"][key] == want
            regimes.add("exact")
    assert regimes == {"bounds", "exact"}


@pytest.mark.spark
def test_samplewise_matrices_are_the_same_on_core_beam_and_spark(tmp_path):
    import apache_beam as beam
    import pandas as pd

    from mergeable_metrics.beam import ComputeMetrics, slice_result_from_json, slice_result_to_json
    from tests.pipelines.test_cross_engine import _core, _spark

    rng = np.random.default_rng(3)
    n, L = 600, 3
    Y = rng.integers(0, 2, (n, L))
    S = np.round(rng.random((n, L)), 2)
    w = rng.random(n) * 4
    ids = rng.permutation(5 * n)[:n]
    g = rng.choice(np.array(["a", "b"]), n)
    df = pd.DataFrame({"y": list(Y), "s": list(S), "w": w, "id": ids, "g": g})
    ev = Evaluation(label_col="y", score_col="s", task="multilabel", num_classes=L, id_col="id", weight_col="w", slices=["g"],
                    metrics=["multilabel_confusion_matrix@samplewise=true", "f1@samples"])  # fmt: skip
    want = _core(df, ev)
    o = np.argsort(ids)
    m = want.overall.metrics["multilabel_confusion_matrix@samplewise=true"]
    assert np.array_equal(m, multilabel_confusion_matrix(Y[o], (S[o] >= 0.5).astype(int), samplewise=True, sample_weight=w[o]))
    assert _spark(df, ev).to_json() == want.to_json()
    table = pa.Table.from_pandas(df, preserve_index=False)
    pq.write_table(table.slice(0, 350), tmp_path / "part-0.parquet", row_group_size=70)  # several bundles
    pq.write_table(table.slice(350), tmp_path / "part-1.parquet", row_group_size=90)
    with beam.Pipeline(runner="DirectRunner") as p:
        (
            p
            | beam.io.ReadFromParquetBatched(str(tmp_path / "part-*.parquet"))
            | ComputeMetrics(ev)
            | beam.Map(slice_result_to_json)
            | beam.io.WriteToText(str(tmp_path / "out"), file_name_suffix=".jsonl")
        )
    lines = [ln for f in sorted(tmp_path.glob("out*.jsonl")) for ln in f.read_text().splitlines() if ln.strip()]
    assert ev.collect(slices=[slice_result_from_json(ln) for ln in lines]).to_json() == want.to_json()
