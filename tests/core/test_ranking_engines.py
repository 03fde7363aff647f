"""ROC AUC / average precision / curves through every engine: the CLI's local engine, Beam
(DirectRunner) and Spark (local[2]); exact values equal scikit-learn, compressed values carry the
same certified intervals everywhere, curves come back as arrays."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sklearn.metrics import average_precision_score, roc_auc_score, roc_curve

from mergeable_metrics import Evaluation
from mergeable_metrics.pipelines.evaluate import main

pytestmark = pytest.mark.filterwarnings("ignore::mergeable_metrics.metrics.base.UndefinedMetricWarning")

METRICS = ["roc_auc", "average_precision", "roc_curve"]
# one score distribution serves all metrics of a plan, with the largest capacity asked for: the
# compressed variants run as their own evaluation
COMPRESSED = ["roc_auc@capacity=16", "average_precision@capacity=16"]


def _table(n: int = 3000, seed: int = 5) -> pa.Table:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    p = np.round(np.clip(0.3 * y + 0.7 * rng.random(n), 0, 1), 3)
    region = rng.choice(["north", "south", "east"], n)
    w = rng.integers(0, 4, n).astype(float)
    return pa.table({"y": y, "p": p, "region": region, "w": w})


def _sk(t: pa.Table, mask=None) -> dict:
    y, p, w = (t[c].to_numpy() for c in ("y", "p", "w"))
    if mask is not None:
        y, p, w = y[mask], p[mask], w[mask]
    f, tp, th = roc_curve(y, p, sample_weight=w)
    return {"roc_auc": roc_auc_score(y, p, sample_weight=w), "average_precision": average_precision_score(y, p, sample_weight=w), "roc_curve": np.c_[f, tp, th]}


def _slices(t: pa.Table):
    region = t["region"].to_numpy(zero_copy_only=False)
    return [((), None)] + [((("region", r),), region == r) for r in ("north", "south", "east")]


def _check(results, t: pa.Table) -> None:
    for key, mask in _slices(t):
        s = results[key]
        want = _sk(t, mask)
        assert s.metrics["roc_auc"] == want["roc_auc"] and s.metrics["average_precision"] == want["average_precision"]
        curve = np.asarray(s.metrics["roc_curve"], dtype=float)
        curve[0, 2] = np.inf if np.isnan(curve[0, 2]) else curve[0, 2]  # JSON null -> inf threshold
        np.testing.assert_array_equal(curve, want["roc_curve"])
        assert s.bounds == {}


def _check_compressed(results, t: pa.Table) -> None:
    for key, mask in _slices(t):
        s = results[key]
        want = _sk(t, mask)
        for m, exact in (("roc_auc@capacity=16", want["roc_auc"]), ("average_precision@capacity=16", want["average_precision"])):
            lo, hi = s.bounds[m]
            assert lo <= exact <= hi and lo <= s.metrics[m] <= hi and hi - lo > 0


def test_cli_local_engine_matches_sklearn(tmp_path):
    t = _table()
    pq.write_table(t, tmp_path / "preds.parquet")
    out = tmp_path / "out"
    code = main(["--input", str(tmp_path / "preds.parquet"), "--label", "y", "--score", "p", "--weight", "w", "--slice", "region",
                 "--metrics", ",".join(METRICS), "--engine", "local", "--output", str(out), "--quiet", "--batch-size", "700"])  # fmt: skip
    assert code == 0
    doc = json.loads((out / "metrics.json").read_text())
    slices = {tuple(sorted(s["slice"].items())): s for s in doc["slices"]}
    overall = slices[()]
    want = _sk(t)
    assert overall["metrics"]["roc_auc"] == want["roc_auc"]
    assert overall["metrics"]["average_precision"] == want["average_precision"]
    curve = overall["metrics"]["roc_curve"]
    assert isinstance(curve, list) and curve[0][2] is None and len(curve) == len(want["roc_curve"])  # inf -> null
    np.testing.assert_array_equal(np.array(curve, dtype=float)[1:], want["roc_curve"][1:])
    assert "bounds" not in overall
    for r in ("north", "south", "east"):
        mask = t["region"].to_numpy(zero_copy_only=False) == r
        assert slices[(("region", r),)]["metrics"]["roc_auc"] == _sk(t, mask)["roc_auc"]
    # compressed: certified bounds in metrics.json and in the long-format Parquet
    out = tmp_path / "out2"
    code = main(["--input", str(tmp_path / "preds.parquet"), "--label", "y", "--score", "p", "--weight", "w", "--slice", "region",
                 "--metrics", ",".join(COMPRESSED), "--engine", "local", "--output", str(out), "--quiet"])  # fmt: skip
    assert code == 0
    overall = json.loads((out / "metrics.json").read_text())["slices"][0]
    lo, hi = overall["bounds"]["roc_auc@capacity=16"]
    assert lo <= want["roc_auc"] <= hi
    rows = pq.read_table(out / "metrics.parquet").to_pylist()
    auc_rows = [x for x in rows if x["metric"] == "roc_auc@capacity=16"]
    assert auc_rows and all(x["lower"] <= x["value"] <= x["upper"] for x in auc_rows)


# Reference cases ho12 / ho13 (../shared/cases/reference_cases.json), one slice each: workers'
# batches concatenated (every engine merges them its own way)
CASES = {
    "ho12_auc_only_positive_labels": ([1, 1, 1, 1, 1], [0.9, 0.35, 0.6, 0.2, 0.75], {"roc_auc": "nan", "average_precision": 1.0}),
    "ho13_auc_ap_only_negative_labels": ([0, 0, 0, 0, 0], [0.4, 0.8, 0.1, 0.65, 0.3], {"roc_auc": "nan", "average_precision": 0.0}),
}
# ho16_auc_nan_score_rejected: one NaN score among the workers' batches must raise ValueError
HO16 = ([0, 1, 1, 1, 0, 0, 1], [0.2, 0.7, 0.9, 0.6, 0.1, float("nan"), 0.8])


def _cases_table() -> pa.Table:
    case = [c for c, (y, _, _) in CASES.items() for _ in y]
    y = [v for yy, _, _ in CASES.values() for v in yy]
    p = [v for _, pp, _ in CASES.values() for v in pp]
    return pa.table({"case": case, "y": y, "p": p, "w": [1.0] * len(y), "region": ["north"] * len(y)})


def _check_cases(results) -> None:
    for case, (_, _, expected) in CASES.items():
        m = results[(("case", case),)].metrics
        assert np.isnan(m["roc_auc"]) and m["average_precision"] == expected["average_precision"], case


def _case_evaluation() -> Evaluation:
    return Evaluation(label_col="y", score_col="p", slices=["case"], metrics=["roc_auc", "average_precision"])


def test_reference_cases_ho12_ho13_ho16_cli(tmp_path):
    pq.write_table(_cases_table(), tmp_path / "cases.parquet")
    out = tmp_path / "o"
    code = main(["--input", str(tmp_path / "cases.parquet"), "--label", "y", "--score", "p", "--slice", "case",
                 "--metrics", "roc_auc,average_precision", "--engine", "local", "--output", str(out), "--quiet", "--batch-size", "2"])  # fmt: skip
    assert code == 0
    doc = json.loads((out / "metrics.json").read_text())
    got = {s["slice"].get("case"): s["metrics"] for s in doc["slices"]}
    for case, (_, _, expected) in CASES.items():
        assert got[case]["roc_auc"] is None and got[case]["average_precision"] == expected["average_precision"]  # NaN -> null
    pq.write_table(pa.table({"y": HO16[0], "p": HO16[1]}), tmp_path / "bad.parquet")
    code = main(["--input", str(tmp_path / "bad.parquet"), "--label", "y", "--score", "p", "--metrics", "roc_auc,average_precision",
                 "--engine", "local", "--output", str(tmp_path / "o2"), "--quiet"])  # fmt: skip
    assert code == 1


def _evaluation(metrics=METRICS) -> Evaluation:
    return Evaluation(label_col="y", score_col="p", weight_col="w", slices=["region"], metrics=metrics)


def test_beam_compute_metrics(tmp_path):
    beam = pytest.importorskip("apache_beam")
    from mergeable_metrics.beam import ComputeMetrics, slice_result_from_json, slice_result_to_json
    from tests._helpers.beam_run import beam_parquet_results

    t = _table()
    exact, compressed = _evaluation(), _evaluation(COMPRESSED)
    got = beam_parquet_results(tmp_path, t, {"exact": exact, "compressed": compressed}, row_group_size=500)
    _check(got["exact"], t)
    cases = _case_evaluation()
    with beam.Pipeline(runner="DirectRunner") as p:
        (
            p
            | beam.Create(_cases_table().to_pylist())
            | ComputeMetrics(cases, batch_size=2)
            | beam.Map(slice_result_to_json)
            | beam.io.WriteToText(str(tmp_path / "cases"), file_name_suffix=".jsonl")
        )
    lines = [ln for f in sorted(tmp_path.glob("cases*.jsonl")) for ln in f.read_text().splitlines() if ln.strip()]
    _check_cases(cases.collect(slices=[slice_result_from_json(ln) for ln in lines]))
    with pytest.raises(Exception, match="(?i)nan"):
        with beam.Pipeline(runner="DirectRunner") as p:
            _ = p | beam.Create([{"y": y, "p": v} for y, v in zip(*HO16)]) | ComputeMetrics(label_col="y", score_col="p", metrics=["roc_auc"])
    results = got["compressed"]
    _check_compressed(results, t)
    local = compressed.evaluate([t])
    assert results.overall.bounds == local.overall.bounds and results.overall.metrics == local.overall.metrics


@pytest.mark.spark
def test_spark_compute_metrics():
    pytest.importorskip("pyspark")
    from mergeable_metrics.spark import collect_results, compute_metrics, get_spark

    t = _table()
    spark = get_spark()
    df = spark.createDataFrame(t.to_pandas()).repartition(3)
    ev = _evaluation()
    _check(collect_results(compute_metrics(df, evaluation=ev), ev), t)
    ev = _case_evaluation()
    cases = spark.createDataFrame(_cases_table().to_pandas()).repartition(3)
    _check_cases(collect_results(compute_metrics(cases, evaluation=ev), ev))
    bad = spark.createDataFrame([(y, v) for y, v in zip(*HO16)], "y long, p double").repartition(2)
    with pytest.raises(Exception, match="(?i)nan"):
        collect_results(compute_metrics(bad, evaluation=Evaluation(label_col="y", score_col="p", metrics=["roc_auc"])), ev)
    ev = _evaluation(COMPRESSED)
    results = collect_results(compute_metrics(df, evaluation=ev), ev)
    _check_compressed(results, t)
    local = ev.evaluate([t])
    assert results.overall.bounds == local.overall.bounds and results.overall.metrics == local.overall.metrics


# -- pos_label with a binary score given as two probability columns (issue 4) ---------------------
POS0 = ["roc_auc@pos_label=0", "average_precision@pos_label=0", "roc_auc"]


def _two_column_table(n: int = 2000, seed: int = 6) -> pa.Table:
    """p0 = 1 - p1 with a +-1e-7 jitter: ranking by p0 differs from ranking by p1 reversed."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    p1 = np.round(np.clip(0.3 * y + 0.7 * rng.random(n), 0, 1), 2)
    p0 = np.clip(1 - p1 + rng.choice([-1e-7, 0.0, 1e-7], n), 0, 1)
    return pa.table({"y": y, "p0": p0, "p1": p1, "region": rng.choice(["north", "south"], n)})


def _check_pos0(results, t: pa.Table) -> None:
    y, p0, p1 = (t[c].to_numpy() for c in ("y", "p0", "p1"))
    region = t["region"].to_numpy(zero_copy_only=False)
    for key, mask in [((), np.ones(len(y), bool))] + [((("region", r),), region == r) for r in ("north", "south")]:
        m = results[key].metrics
        assert m["roc_auc@pos_label=0"] == roc_auc_score(y[mask] == 0, p0[mask]), key
        assert m["average_precision@pos_label=0"] == average_precision_score(y[mask], p0[mask], pos_label=0), key
        assert m["roc_auc"] == roc_auc_score(y[mask], p1[mask]), key
    assert results.overall.metrics["roc_auc@pos_label=0"] != roc_auc_score(y == 0, -p1)  # column 0 is what ranks


def _pos0_evaluation() -> Evaluation:
    return Evaluation(label_col="y", score_col=["p0", "p1"], slices=["region"], metrics=POS0)


def test_pos_label_two_columns_local_and_cli(tmp_path):
    t = _two_column_table()
    _check_pos0(_pos0_evaluation().evaluate([t]), t)
    pq.write_table(t, tmp_path / "two.parquet")
    out = tmp_path / "o"
    code = main(["--input", str(tmp_path / "two.parquet"), "--label", "y", "--score", "p0,p1", "--slice", "region",
                 "--metrics", ",".join(POS0), "--engine", "local", "--output", str(out), "--quiet", "--batch-size", "300"])  # fmt: skip
    assert code == 0
    doc = json.loads((out / "metrics.json").read_text())
    overall = next(s for s in doc["slices"] if not s["slice"])
    y, p0 = t["y"].to_numpy(), t["p0"].to_numpy()
    assert overall["metrics"]["roc_auc@pos_label=0"] == roc_auc_score(y == 0, p0)


def test_pos_label_two_columns_beam(tmp_path):
    beam = pytest.importorskip("apache_beam")
    from mergeable_metrics.beam import ComputeMetrics, slice_result_from_json, slice_result_to_json

    t = _two_column_table()
    ev = _pos0_evaluation()
    with beam.Pipeline(runner="DirectRunner") as p:
        (
            p
            | beam.Create(t.to_pylist())
            | ComputeMetrics(ev, batch_size=300)
            | beam.Map(slice_result_to_json)
            | beam.io.WriteToText(str(tmp_path / "pos0"), file_name_suffix=".jsonl")
        )
    lines = [ln for f in sorted(tmp_path.glob("pos0*.jsonl")) for ln in f.read_text().splitlines() if ln.strip()]
    _check_pos0(ev.collect(slices=[slice_result_from_json(ln) for ln in lines]), t)
    # the same two probabilities as one list column per row (predict_proba stored as a list)
    ev = Evaluation(label_col="y", score_col="proba", slices=["region"], metrics=POS0)
    rows = [{"y": r["y"], "proba": [r["p0"], r["p1"]], "region": r["region"]} for r in t.to_pylist()]
    with beam.Pipeline(runner="DirectRunner") as p:
        (
            p
            | beam.Create(rows)
            | ComputeMetrics(ev, batch_size=300)
            | beam.Map(slice_result_to_json)
            | beam.io.WriteToText(str(tmp_path / "list"), file_name_suffix=".jsonl")
        )
    lines = [ln for f in sorted(tmp_path.glob("list*.jsonl")) for ln in f.read_text().splitlines() if ln.strip()]
    _check_pos0(ev.collect(slices=[slice_result_from_json(ln) for ln in lines]), t)


@pytest.mark.spark
def test_pos_label_two_columns_spark():
    pytest.importorskip("pyspark")
    from mergeable_metrics.spark import collect_results, compute_metrics, evaluate, get_spark

    t = _two_column_table()
    df = get_spark().createDataFrame(t.to_pandas()).repartition(3)
    ev = _pos0_evaluation()
    _check_pos0(collect_results(compute_metrics(df, evaluation=ev), ev), t)
    # the same two probabilities as one array<double> column (predict_proba stored as a list)
    arr = df.selectExpr("y", "array(p0, p1) AS proba", "region")
    ev = Evaluation(label_col="y", score_col="proba", slices=["region"], metrics=POS0)
    _check_pos0(collect_results(compute_metrics(arr, evaluation=ev), ev), t)  # (the JVM path reads one score a row:
    _check_pos0(evaluate(arr, evaluation=ev), t)  # an array column of a binary task is read on the Arrow path)


# -- multiclass curves (one-vs-rest per class, (K, n, 3) NaN-padded) on every engine --------------
def _multiclass_curve_rows(n: int = 600, seed: int = 9) -> list[dict]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    s = np.round(rng.dirichlet([1, 1, 1], n) * 0.7 + np.eye(3)[y] * 0.3, 3)
    g = rng.choice(["a", "b"], n)
    return [{"y": int(a), "s": [float(v) for v in row], "g": str(c)} for a, row, c in zip(y, s, g)]


def _multiclass_curve_evaluation() -> Evaluation:
    return Evaluation(label_col="y", score_col="s", task="multiclass", num_classes=3, slices=["g"], metrics=["roc_curve", "precision_recall_curve", "roc_auc"])


def _same_curves(a, b) -> None:
    for s in a.slices:
        for k in ("roc_curve", "precision_recall_curve"):
            x, y = np.asarray(s.metrics[k], dtype=np.float64), np.asarray(b[s.slice].metrics[k], dtype=np.float64)
            assert x.shape == y.shape and x.ndim == 3, (s.name, k, x.shape, y.shape)
            np.testing.assert_array_equal(np.where(np.isinf(x), np.nan, x), np.where(np.isinf(y), np.nan, y))  # JSON: inf -> null
            assert (~np.isnan(y).all(axis=2)).sum(axis=1).tolist() == (~np.isnan(x).all(axis=2)).sum(axis=1).tolist()  # padding rows told apart after JSON


def test_multiclass_curves_beam_and_spark_equal_local_and_sklearn(tmp_path):
    rows = _multiclass_curve_rows()
    ev = _multiclass_curve_evaluation()
    local = ev.evaluate([{"y": np.array([r["y"] for r in rows]), "s": np.array([r["s"] for r in rows]), "g": np.array([r["g"] for r in rows])}])
    y, s = np.array([r["y"] for r in rows]), np.array([r["s"] for r in rows])
    for c in range(3):
        fpr, tpr, _ = roc_curve(y == c, s[:, c])
        got = local.overall.metrics["roc_curve"][c]
        got = got[~np.isnan(got).all(axis=1)]
        np.testing.assert_allclose(got[:, 0], fpr, rtol=1e-12)
        np.testing.assert_allclose(got[:, 1], tpr, rtol=1e-12)
    beam = pytest.importorskip("apache_beam")
    from mergeable_metrics.beam import ComputeMetrics, slice_result_from_json, slice_result_to_json

    with beam.Pipeline(runner="DirectRunner") as p:
        _ = (
            p | beam.Create(rows) | ComputeMetrics(ev, batch_size=64) | beam.Map(slice_result_to_json)
            | beam.io.WriteToText(str(tmp_path / "mc"), file_name_suffix=".jsonl")
        )  # fmt: skip
    lines = [ln for f in sorted(tmp_path.glob("mc*.jsonl")) for ln in f.read_text().splitlines() if ln.strip()]
    _same_curves(local, ev.collect(slices=[slice_result_from_json(ln) for ln in lines]))
    pytest.importorskip("pyspark")
    from mergeable_metrics.spark import collect_results, compute_metrics, get_spark

    import pandas as pd

    df = get_spark().createDataFrame(pd.DataFrame(rows)).repartition(3)
    _same_curves(local, collect_results(compute_metrics(df, evaluation=ev), ev))
