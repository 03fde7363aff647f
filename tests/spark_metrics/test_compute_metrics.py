"""compute_metrics on a local[2] Spark: partition invariance, parity with core and scikit-learn,
empty input, invalid values, missing columns."""

from __future__ import annotations

import re

import datetime
import json
import decimal
import math

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("pyspark")
skm = pytest.importorskip("sklearn.metrics")

import mergeable_metrics  # noqa: E402
from mergeable_metrics.results.results import ROW_COLUMNS  # noqa: E402
from mergeable_metrics.spark import RESULT_COLUMNS, collect_results, compute_metrics, evaluate, result_schema  # noqa: E402
from mergeable_metrics.spark._frames import ResultLayout  # noqa: E402

N = 5000
BINARY_METRICS = ["accuracy", "precision", "recall", "f1", "tp", "fp", "tn", "fn"]


def _canon(rows):
    """Rows with NaN -> None, sorted: for exact comparison of unordered long-format tables."""
    out = []
    for r in rows:
        r = {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}
        out.append(r)
    return sorted(out, key=lambda r: (r["slice"], r["metric"], r["index"] or ""))


def _rows_equal(a, b):
    return _canon(a) == _canon(b)


@pytest.fixture(scope="module")
def pdf():
    """Seeded data: binary label/score, multiclass label/prediction, integer-valued weights (some
    zero), a string slice with None values and a second string slice."""
    rng = np.random.default_rng(20240601)
    y = rng.integers(0, 2, N)
    score = np.clip(0.35 * y + rng.random(N) * 0.75, 0, 1)
    k = rng.integers(0, 4, N)
    kp = np.where(rng.random(N) < 0.6, k, rng.integers(0, 4, N))
    carrier = rng.choice(np.array(["AA", "B6", "DL", "UA", None], dtype=object), N, p=[0.3, 0.25, 0.2, 0.15, 0.1])
    origin = rng.choice(np.array(["EWR", "JFK", "LGA"]), N)
    weight = rng.integers(0, 4, N).astype(np.float64)
    return pd.DataFrame({"y": y, "score": score, "k": k, "kp": kp, "carrier": carrier, "origin": origin, "w": weight})


@pytest.fixture(scope="module")
def sdf(spark, pdf):
    return spark.createDataFrame(pdf).cache()


@pytest.fixture(scope="module")
def binary_eval():
    return mergeable_metrics.Evaluation(
        label_col="y",
        score_col="score",
        weight_col="w",
        slices=["carrier", "origin", "carrier,origin"],
        metrics=BINARY_METRICS,
    )


@pytest.fixture(scope="module", params=[False, True], ids=["arrow-path", "native-path"])
def binary_runs(request, sdf, binary_eval):
    """Raw (long-layout) result rows and collected Results for 1, 3 and 17 partitions, through
    the Arrow path and the native Spark SQL aggregation (mergeable_metrics.spark.sql_path)."""
    out = {"native": request.param}
    long = ResultLayout(binary_eval, layout="long")
    for p in (1, 3, 17):
        result_df = compute_metrics(sdf.repartition(p), evaluation=binary_eval, native=request.param, layout="long")
        raw = [r.asDict() for r in result_df.collect()]
        out[p] = (result_df, raw, binary_eval.collect(rows=long.core_rows(raw)))
    return out


def test_result_schema(binary_runs):
    result_df = binary_runs[3][0]
    assert tuple(result_df.columns) == RESULT_COLUMNS == tuple(ROW_COLUMNS)  # core's long rows; the slice is one column
    types = {f.name: f.dataType.simpleString() for f in result_df.schema.fields}
    assert types == {
        "slice": "string", "n": "bigint", "weight": "double", "skipped": "bigint",
        "metric": "string", "index": "string", "value": "double", "lower": "double", "upper": "double",
        "ci_lower": "double", "ci_upper": "double",
        "baseline_value": "double", "delta": "double", "delta_lower": "double", "delta_upper": "double", "verdict": "string",
        "comparison_reason": "string",
    }  # fmt: skip
    assert set(binary_runs[3][1][0]) == set(RESULT_COLUMNS)
    assert result_df.schema == result_schema()


def test_the_default_layout_is_one_row_per_slice_with_a_column_per_metric(sdf, binary_eval, binary_runs):
    wide = compute_metrics(sdf.repartition(3), evaluation=binary_eval, native=binary_runs["native"])
    assert wide.columns == ["slice", "n", "weight", "skipped", *BINARY_METRICS]
    assert wide.schema == result_schema(binary_eval, layout="wide")
    rows = {r["slice"]: r.asDict() for r in wide.collect()}
    results = binary_runs[3][2]
    assert len(rows) == len(results.slices)  # one row per slice
    for s in results.slices:
        row = rows[json.dumps(dict(s.slice), separators=(",", ":"))]  # the slice as metrics.json writes it
        assert (row["n"], row["weight"], row["skipped"]) == (s.n, s.weight, s.skipped)
        assert {m: row[m] for m in BINARY_METRICS} == pytest.approx(dict(s.metrics), nan_ok=True)
    assert collect_results(wide, binary_eval).to_json() == results.to_json()


def test_plan_aggregates_per_partition_before_the_shuffle(binary_runs):
    plan = binary_runs[3][0]._jdf.queryExecution().executedPlan().toString()
    if not binary_runs["native"]:
        # rows -> MapInArrow (partial states) -> Exchange on slice_key -> grouped Arrow merge
        assert "MapInArrow" in plan and "FlatMapGroupsInArrow" in plan, plan
        exchange = plan.index("Exchange hashpartitioning(slice_key")
        assert plan.index("FlatMapGroupsInArrow") < exchange < plan.index("MapInArrow"), plan
        return
    # rows -> partial HashAggregate by (every slice column, cell) -> Exchange -> final aggregate
    # -> Expand (grouping sets over those few rows) -> aggregate -> grouped Arrow merge of the few
    # cells per slice: no Python on the row path, the rows are read and shuffled once
    plan = plan.split("== Initial Plan ==")[0]  # the final (adaptive) plan only
    assert "MapInArrow" not in plan and "ArrowEvalPython" not in plan and "BatchEvalPython" not in plan, plan
    assert "HashAggregate" in plan and "FlatMapGroupsInArrow" in plan and "Expand" in plan, plan
    assert plan.count("partial_count(1)") == 1 and plan.count("InMemoryTableScan") == 1, plan
    assert plan.index("FlatMapGroupsInArrow") < plan.index("Expand") < plan.index("partial_count(1)"), plan


def test_native_and_arrow_paths_agree_and_say_why_not(spark, sdf, binary_eval):
    from pyspark.sql import functions as F

    multi = mergeable_metrics.Evaluation(label_col="k", prediction_col="kp", num_classes=4, slices=["carrier", "origin,carrier"],
                            metrics=["accuracy", "f1@macro", "f1@none", "confusion_matrix", "cohen_kappa", "mcc"])  # fmt: skip
    strict = mergeable_metrics.Evaluation(label_col="y", score_col="score", slices=["origin"], threshold_rule=">",
                             metrics=["precision@threshold=0.4", "recall", "f1@threshold=0.9", "example_count"])  # fmt: skip
    hard = mergeable_metrics.Evaluation(label_col="y", prediction_col="kp", slices=["origin"], metrics=["accuracy"])
    flags = sdf.withColumn("flag", sdf.y == 1).withColumn("day", F.to_date(F.when(sdf.y == 1, "2024-01-01").otherwise("2024-02-29")))
    flagged = mergeable_metrics.Evaluation(label_col="y", score_col="score", slices=["flag", "day"], metrics=["f1"])
    for frame, ev in ((sdf, multi), (sdf.repartition(5), strict), (flags, flagged)):
        a = collect_results(compute_metrics(frame, evaluation=ev, native=True), ev)
        b = collect_results(compute_metrics(frame, evaluation=ev, native=False), ev)
        assert a.to_json() == b.to_json()
    bad = sdf.withColumn("kp", (sdf.kp % 2) + 2)  # predictions 2 and 3 are not 0/1
    with pytest.raises(Exception, match=r"column 'kp': invalid value [23]\.0 at row \d+: predictions must be 0 or 1"):
        compute_metrics(bad, evaluation=hard).collect()
    with pytest.raises(ValueError, match=r"native=True, but .*score_distribution"):
        compute_metrics(sdf, evaluation=mergeable_metrics.Evaluation(label_col="y", score_col="score", metrics=["roc_auc"]), native=True)
    with pytest.raises(ValueError, match=r"native=True, but .*on_invalid"):
        compute_metrics(sdf, evaluation=mergeable_metrics.Evaluation(label_col="y", score_col="score", on_invalid="skip"), native=True)
    with pytest.raises(ValueError, match=r"native=True, but .*max_slices"):
        compute_metrics(sdf, evaluation=mergeable_metrics.Evaluation(label_col="y", score_col="score", slices=["carrier;max_slices=2"]), native=True)
    empty = spark.createDataFrame([], sdf.schema)
    unsliced = mergeable_metrics.Evaluation(label_col="y", score_col="score", weight_col="w", metrics=["f1", "example_count"])
    for native in (True, False):
        for ev in (binary_eval, unsliced):
            res = collect_results(compute_metrics(empty, evaluation=ev, native=native), ev)
            assert [s.slice for s in res.slices] == [()] and res.overall.n == 0 and math.isnan(res.overall.metrics["f1"])
    a = collect_results(compute_metrics(sdf, evaluation=unsliced, native=True), unsliced)
    assert a.to_json() == collect_results(compute_metrics(sdf, evaluation=unsliced, native=False), unsliced).to_json()


def test_native_path_edge_cases_match_the_arrow_path(spark):
    """Found by trying to break the native path: a user column named like an internal one, a
    labels-only plan, invalid rows in several slices, nulls in an integer label column, and a
    backtick in a column name (which PySpark's mapInArrow could not resolve)."""

    def both(frame, ev):
        a = collect_results(compute_metrics(frame, evaluation=ev, native=True), ev).to_json()
        assert a == collect_results(compute_metrics(frame, evaluation=ev, native=False), ev).to_json()

    d = spark.createDataFrame([(0, 0.9, "a"), (1, 0.2, "b"), (1, 0.8, "a")], "y long, __rid double, __cell string")
    both(d, mergeable_metrics.Evaluation(label_col="y", score_col="__rid", slices=["__cell"], metrics=["precision", "recall"]))
    both(d, mergeable_metrics.Evaluation(label_col="y", slices=["__cell"], metrics=["example_count"]))
    ticks = d.withColumnRenamed("__cell", "g`x")  # PySpark's mapInArrow alone cannot resolve this name
    both(ticks, mergeable_metrics.Evaluation(label_col="y", score_col="__rid", slices=["g`x"], metrics=["f1"]))
    ev = mergeable_metrics.Evaluation(label_col="y", score_col="__rid", slices=["g`x;max_slices=1"], metrics=["f1"])  # + the counting job
    res = collect_results(compute_metrics(ticks, evaluation=ev), ev)
    assert {s.slice: s.n for s in res.slices} == {(): 3, (("g`x", "a"),): 2, (("g`x", "__other__"),): 1}
    rows = [(0, 0.1, "a"), (1, 0.2, "a"), (0, float("nan"), "c"), (1, 0.4, "a"), (0, 0.5, "a"), (1, 0.6, "a"), (0, float("nan"), "b")]
    bad = spark.createDataFrame(rows, "y long, s double, g string").coalesce(1)
    ev = mergeable_metrics.Evaluation(label_col="y", score_col="s", slices=["g"], metrics=["f1"])
    for native in (True, False):  # the first invalid row of the input, whatever slice it is in
        with pytest.raises(Exception, match=r"column 's': invalid value nan at row 2: scores must be finite"):
            compute_metrics(bad, evaluation=ev, native=native).collect()
    nulls = spark.createDataFrame([(0, 0.1), (None, 0.2), (1, 0.3)], "y long, s double").coalesce(1)
    for native in (True, False):
        with pytest.raises(Exception, match=r"column 'y': invalid value null at row 1: labels must be 0 or 1"):  # a SQL null is named null
            compute_metrics(nulls, evaluation=mergeable_metrics.Evaluation(label_col="y", score_col="s"), native=native).collect()
    nulls = spark.createDataFrame([(0, 0.1), (1, None), (1, 0.3)], "y long, s double").coalesce(1)
    nans = spark.createDataFrame([(0, 0.1), (1, 0.2), (1, float("nan"))], "y long, s double").coalesce(1)
    for native in (True, False):  # a null score is null, a NaN score nan, on both paths
        with pytest.raises(Exception, match=r"column 's': invalid value null at row 1: scores must be finite"):
            compute_metrics(nulls, evaluation=mergeable_metrics.Evaluation(label_col="y", score_col="s"), native=native).collect()
        with pytest.raises(Exception, match=r"column 's': invalid value nan at row 2: scores must be finite"):
            compute_metrics(nans, evaluation=mergeable_metrics.Evaluation(label_col="y", score_col="s"), native=native).collect()


def test_partitioning_does_not_change_results(binary_runs):
    raw1 = binary_runs[1][1]
    for p in (3, 17):
        assert _rows_equal(binary_runs[p][1], raw1), f"{p} partitions differ from 1 partition"
        assert binary_runs[p][2].to_json() == binary_runs[1][2].to_json()


def test_equals_core_direct_fold_exactly(binary_runs, binary_eval, pdf):
    direct = binary_eval.finish(binary_eval.fold(binary_eval.zero(), pdf))
    for p, (_, raw, results) in ((p, binary_runs[p]) for p in (1, 3, 17)):
        assert _rows_equal(raw, ResultLayout(binary_eval, layout="long").rows(direct.to_rows())), f"{p} partitions: raw Spark rows differ from core"
        assert [s.slice for s in results.slices] == [s.slice for s in direct.slices]  # canonical order
        assert results.to_json() == direct.to_json()
    # every slice value appears, including the missing carrier, crossed with origin
    keys = {s.slice for s in direct.slices}
    assert (("carrier", None),) in keys
    assert (("carrier", None), ("origin", "JFK")) in keys
    assert len(keys) == 1 + 5 + 3 + 15


@pytest.mark.parametrize("limit", [None, 1, 0], ids=["driver-merge", "over-the-limit", "off"])
def test_collect_results_merges_small_partial_states_on_the_driver(sdf, pdf, monkeypatch, limit):
    """evaluate() on the Arrow path merges the partial states on the driver (default), or on
    the executors over ``driver_merge_bytes`` (1 byte here) or with 0: core's direct fold either way."""
    import mergeable_metrics.spark.arrow_path as compute

    ev = mergeable_metrics.Evaluation(label_col="y", score_col="score", weight_col="w", slices=["carrier", "carrier,origin"],
                         metrics=["accuracy", "f1", "roc_auc", "average_precision"])  # fmt: skip
    direct = ev.finish(ev.fold(ev.zero(), pdf))
    on_driver = []
    real = compute.slice_rows
    monkeypatch.setattr(compute, "slice_rows", lambda *a: on_driver.append(a[1]) or real(*a))  # this process's calls only
    kw = {} if limit is None else {"driver_merge_bytes": limit}
    got = evaluate(sdf.repartition(3), evaluation=ev, native=False, **kw)
    assert got.to_json() == direct.to_json()
    assert len(on_driver) == (len(direct.slices) if limit is None else 0)


@pytest.mark.parametrize("bad", [-1, 1.5, "64MiB", True, None])
def test_evaluate_refuses_a_driver_merge_bytes_that_is_not_a_size(sdf, bad):
    ev = mergeable_metrics.Evaluation(label_col="y", score_col="score", metrics=["accuracy"])
    with pytest.raises(ValueError, match=rf"driver_merge_bytes must be an integer >= 0 .*got {re.escape(repr(bad))}"):
        evaluate(sdf, evaluation=ev, native=False, driver_merge_bytes=bad)


def _sk_binary(y, score, w):
    pred = (score >= 0.5).astype(int)
    return {
        "precision": skm.precision_score(y, pred, sample_weight=w),
        "recall": skm.recall_score(y, pred, sample_weight=w),
        "f1": skm.f1_score(y, pred, sample_weight=w),
        "accuracy": skm.accuracy_score(y, pred, sample_weight=w),
    }


def test_matches_sklearn(binary_runs, pdf):
    results = binary_runs[3][2]
    cases = {(): pdf, (("origin", "LGA"),): pdf[pdf.origin == "LGA"], (("carrier", "B6"),): pdf[pdf.carrier == "B6"]}
    for key, part in cases.items():
        got = results[key]
        assert got.n == len(part)
        assert got.weight == part.w.sum()
        assert got.skipped == 0
        for name, want in _sk_binary(part.y.to_numpy(), part.score.to_numpy(), part.w.to_numpy()).items():
            assert got.metrics[name] == pytest.approx(want, abs=1e-12, rel=0), (key, name)
        tn, fp, fn, tp = skm.confusion_matrix(part.y, (part.score >= 0.5).astype(int), labels=[0, 1], sample_weight=part.w).ravel()
        assert (got.metrics["tp"], got.metrics["fp"], got.metrics["tn"], got.metrics["fn"]) == (tp, fp, tn, fn)


def test_multiclass_matches_sklearn(sdf, pdf):
    ev = mergeable_metrics.Evaluation(
        label_col="k",
        prediction_col="kp",
        weight_col="w",
        num_classes=4,
        metrics=["f1@macro", "f1@none", "confusion_matrix"],
        slices=["origin"],
    )
    result_df = compute_metrics(sdf.repartition(5), evaluation=ev, layout="long")
    raw = [r.asDict() for r in result_df.collect()]
    overall_cm = [r for r in raw if r["slice"] == "{}" and r["metric"] == "confusion_matrix"]
    assert sorted(r["index"] for r in overall_cm) == sorted(f"{i},{j}" for i in range(4) for j in range(4))
    assert {r["index"] for r in raw if r["metric"] == "f1@macro"} == {None}
    wide = compute_metrics(sdf.repartition(5), evaluation=ev)  # arrays nested in one column per metric
    assert dict(wide.dtypes)["confusion_matrix"] == "array<array<double>>" and dict(wide.dtypes)["f1@none"] == "array<double>"

    results = collect_results(result_df, ev)
    assert collect_results(wide, ev).to_json() == results.to_json()
    direct = ev.finish(ev.fold(ev.zero(), pdf))
    assert results.to_json() == direct.to_json()
    for key, part in {(): pdf, (("origin", "EWR"),): pdf[pdf.origin == "EWR"]}.items():
        m = results[key].metrics
        y, p, w = part.k.to_numpy(), part.kp.to_numpy(), part.w.to_numpy()
        assert m["f1@macro"] == pytest.approx(skm.f1_score(y, p, average="macro", sample_weight=w), abs=1e-12, rel=0)
        assert isinstance(m["f1@none"], np.ndarray) and m["f1@none"].shape == (4,)
        np.testing.assert_allclose(m["f1@none"], skm.f1_score(y, p, average=None, sample_weight=w), rtol=0, atol=1e-12)
        assert isinstance(m["confusion_matrix"], np.ndarray) and m["confusion_matrix"].shape == (4, 4)
        np.testing.assert_array_equal(m["confusion_matrix"], skm.confusion_matrix(y, p, labels=range(4), sample_weight=w))


def test_empty_dataframe_gives_overall_slice_with_nan_metrics(spark, sdf, binary_eval):
    for empty in (sdf.limit(0), spark.createDataFrame([], sdf.schema)):
        raw = [r.asDict() for r in compute_metrics(empty, evaluation=binary_eval).collect()]
        assert [r["slice"] for r in raw] == ["{}"]  # one row: the overall slice
        results = collect_results(compute_metrics(empty, evaluation=binary_eval), binary_eval)
        assert [s.slice for s in results.slices] == [()]
        ov = results.overall
        assert (ov.n, ov.weight, ov.skipped) == (0, 0.0, 0)
        for name in ("accuracy", "precision", "recall", "f1"):
            assert math.isnan(ov.metrics[name]), name
        assert ov.metrics["tp"] == 0.0


@pytest.fixture(scope="module")
def dirty_pdf(pdf):
    """The seeded data with invalid rows: NaN scores, a label 2 and negative weights."""
    d = pdf[["y", "score", "w", "carrier", "origin"]].copy()
    d["y"] = d["y"].astype(np.float64)
    d.loc[[3, 10, 250, 4000], "score"] = np.nan
    d.loc[[7, 1234], "y"] = 2.0
    d.loc[[42, 43, 4999], "w"] = -1.0
    return d


def test_on_invalid_skip_counts_skipped_rows_per_slice(spark, dirty_pdf):
    ev = mergeable_metrics.Evaluation(label_col="y", score_col="score", weight_col="w", slices=["carrier", "carrier,origin"], on_invalid="skip")
    sdf = spark.createDataFrame(dirty_pdf)
    results = collect_results(compute_metrics(sdf.repartition(7), evaluation=ev), ev)
    direct = ev.finish(ev.fold(ev.zero(), dirty_pdf))
    assert results.to_json() == direct.to_json()

    bad = dirty_pdf.score.isna() | (dirty_pdf.y == 2) | (dirty_pdf.w < 0)
    assert results.overall.skipped == int(bad.sum()) == 9
    assert results.overall.n == N - 9
    carrier = dirty_pdf.carrier.where(dirty_pdf.carrier.notna(), None)
    for s in results.slices:
        if len(s.slice) != 1:
            continue
        value = s.slice[0][1]
        in_slice = carrier.isna() if value is None else carrier == value
        assert s.skipped == int((bad & in_slice).sum()), s.slice
        assert s.n == int((~bad & in_slice).sum()), s.slice
    assert sum(s.skipped for s in results.slices if len(s.slice) == 2) == 9


def test_on_invalid_raise_reports_column_value_row_and_partition(spark, pdf):
    ev = mergeable_metrics.Evaluation(label_col="y", score_col="score", weight_col="w")
    clean = pdf[["y", "score", "w"]].iloc[100:300].reset_index(drop=True)
    clean.loc[123, "score"] = np.nan
    sdf = spark.createDataFrame(clean).coalesce(1)  # one partition, rows in order: the NaN is row 123
    for native in (False, True):  # the same message from the Arrow path and the native aggregation
        with pytest.raises(Exception) as info:
            compute_metrics(sdf, evaluation=ev, native=native).collect()
        text = str(info.value)
        assert "'score'" in text
        assert "invalid value null at row 123" in text  # pandas' NaN is a null in Spark (createDataFrame), named as Spark holds it
        assert "scores must be finite" in text
        assert "Spark partition 0" in text


def test_missing_column_raises_before_any_job(spark, sdf, binary_eval):
    sc = spark.sparkContext
    group = "mm-missing-column"
    sc.setJobGroup(group, "compute_metrics must not run a job for a missing column")
    try:
        with pytest.raises(ValueError) as info:
            compute_metrics(sdf.drop("origin"), evaluation=binary_eval)
        assert sc.statusTracker().getJobIdsForGroup(group) == []
        text = str(info.value)
        assert "'origin'" in text and "available columns" in text and "'carrier'" in text
        with pytest.raises(TypeError, match="'score' must be numeric"):
            compute_metrics(sdf.withColumn("score", sdf.score.cast("string")), evaluation=binary_eval)
        assert sc.statusTracker().getJobIdsForGroup(group) == []
        sdf.limit(1).collect()  # the detector does see jobs of this group
        assert sc.statusTracker().getJobIdsForGroup(group) != []
    finally:
        sc.setJobGroup(None, None)


def test_keyword_arguments_and_configuration_errors(sdf, binary_eval):
    with pytest.raises(TypeError, match="not both"):
        compute_metrics(sdf, evaluation=binary_eval, label_col="y")
    with pytest.raises(ValueError, match="exactly one"):
        compute_metrics(sdf, label_col="y")
    with pytest.raises(TypeError, match="mergeable_metrics.Evaluation"):
        compute_metrics(sdf, evaluation={"label_col": "y"})
    result_df = compute_metrics(sdf.repartition(2), label_col="y", score_col="score", metrics=["accuracy"])
    ev = mergeable_metrics.Evaluation(label_col="y", score_col="score", metrics=["accuracy"])
    assert collect_results(result_df, ev).overall.n == N


def test_nullable_integer_slice_keeps_integer_values_across_partitionings(spark):
    rng = np.random.default_rng(7)
    rows = [{"y": int(rng.integers(0, 2)), "s": float(rng.random()), "g": None if i % 97 == 0 else int(rng.integers(0, 4))} for i in range(600)]
    df = spark.createDataFrame(rows, "y long, s double, g long")
    ev = mergeable_metrics.Evaluation(label_col="y", score_col="s", slices=["g"], metrics=["accuracy", "f1"])
    one = collect_results(compute_metrics(df.coalesce(1), evaluation=ev), ev)
    many = collect_results(compute_metrics(df.repartition(9), evaluation=ev), ev)
    assert many.to_json() == one.to_json()
    assert [s.slice for s in one.slices] == [(), (("g", 0),), (("g", 1),), (("g", 2),), (("g", 3),), (("g", None),)]
    assert all(type(s.slice[0][1]) is int for s in one.slices[1:-1])
    assert one.to_json() == ev.evaluate([rows]).to_json()


def test_boolean_decimal_and_date_columns(spark):
    rows = [(i % 3 == 0, decimal.Decimal(f"0.{(i * 37) % 100:02d}"), datetime.date(2024, 1, 1 + i % 2)) for i in range(60)]
    df = spark.createDataFrame(rows, "y boolean, s decimal(4,2), d date")
    ev = mergeable_metrics.Evaluation(label_col="y", score_col="s", slices=["d"], metrics=["accuracy", "tp"])
    results = collect_results(compute_metrics(df.repartition(3), evaluation=ev), ev)
    assert [s.slice for s in results.slices] == [(), (("d", "2024-01-01"),), (("d", "2024-01-02"),)]
    y = np.array([r[0] for r in rows], dtype=int)
    pred = (np.array([float(r[1]) for r in rows]) >= 0.5).astype(int)
    assert results.overall.metrics["accuracy"] == pytest.approx(skm.accuracy_score(y, pred), abs=1e-12)


@pytest.mark.parametrize(
    "label, spark_type",
    [(float("inf"), "double"), (1e300, "double"), (2**63 - 1, "long")],
    ids=["inf", "1e300", "int64-max"],
)
def test_huge_labels_give_the_arrow_paths_message_on_the_native_path(spark, label, spark_type):
    """+inf, 1e300 and 2**63-1 used to overflow floor()/cast in Spark SQL (ARITHMETIC_OVERFLOW, no
    column or row); both paths now name the column, the value and the row."""
    one, zero = (1, 0) if spark_type == "long" else (1.0, 0.0)
    sdf = spark.createDataFrame([(one, 0.9, "a"), (zero, 0.3, "b"), (label, 0.2, "b"), (one, 0.7, "a")], f"y {spark_type}, s double, g string").coalesce(1)
    shown = repr(float(label))
    for pred_col in (None, "p"):
        frame = sdf if pred_col is None else sdf.selectExpr("y", "y as p", "g")
        ev = mergeable_metrics.Evaluation(
            label_col="y", score_col="s" if pred_col is None else None, prediction_col=pred_col, slices=["g"], metrics=["accuracy"]
        )
        messages = []
        for native in (True, False):
            with pytest.raises(Exception) as info:
                compute_metrics(frame, evaluation=ev, native=native).collect()
            text = str(info.value)
            assert "ARITHMETIC_OVERFLOW" not in text
            assert f"column 'y': invalid value {shown} at row 2: labels must be 0 or 1" in text, text[:500]
            messages.append(text[text.index("column 'y'") :].split("]")[0])
        assert messages[0] == messages[1]


@pytest.mark.parametrize(
    "labels, hint",
    [
        ([0, 1, 2, 1, 2, 0], "; for 3 classes pass task='multiclass', num_classes=3 (--task multiclass --num-classes 3)"),
        ([1, 2, 2, 1, 1, 2], "; for two classes named 1 and 2 pass classes=[1, 2] (--classes 1,2)"),
        ([0, 1, 5, 1, 3, 0], "; for 6 classes pass task='multiclass', num_classes=6 (--task multiclass --num-classes 6)"),
        ([2, 5, 2, 5, 5, 2], "; for two classes named 2 and 5 pass classes=[2, 5] (--classes 2,5)"),
        ([2, 4, 3, 2, 4, 3], "; for 5 classes pass task='multiclass', num_classes=5 (--task multiclass --num-classes 5)"),
        ([-1, 1, 1, -1, 1, 1], "; for two classes named -1 and 1 pass classes=[-1, 1] (--classes -1,1)"),
        ([0, 1, -2, 1, 3, 0], ""),  # a negative label among several: no setting reads them
        ([0, 1, 2.5, 1, 2, 0], ""),  # not a class id
    ],
)
def test_an_invalid_label_on_the_native_path_gets_the_local_engines_hint(spark, labels, hint):
    """Newcomer report: the local engine says which setting reads labels the binary default refuses
    (core's ``two_class_hint``), the native SQL path said only "labels must be 0 or 1"."""
    scores = [0.9, 0.2, 0.4, 0.8, 0.6, 0.1]
    kind = "double" if any(isinstance(y, float) for y in labels) else "long"
    rows = [(float(y) if kind == "double" else y, s, "a" if i % 2 else "b") for i, (y, s) in enumerate(zip(labels, scores))]
    sdf = spark.createDataFrame(rows, f"y {kind}, s double, g string").coalesce(1)
    ev = mergeable_metrics.Evaluation(label_col="y", score_col="s", slices=["g"], metrics=["accuracy", "f1"])
    first = next(i for i, y in enumerate(labels) if y not in (0, 1))
    with pytest.raises(ValueError) as local:
        ev.evaluate([{"y": np.asarray(labels), "s": np.asarray(scores), "g": np.asarray([r[2] for r in rows])}])
    assert f"at row {first}: labels must be 0 or 1{hint}" in str(local.value)  # the hand-written hint is the local engine's
    for native in (True, False):
        with pytest.raises(Exception) as info:
            compute_metrics(sdf, evaluation=ev, native=native).collect()
        text = str(info.value)
        assert f"column 'y': invalid value {labels[first]!r} at row {first}: labels must be 0 or 1{hint}" in text.replace(".0 at", " at") or (
            f"column 'y': invalid value {float(labels[first])!r} at row {first}: labels must be 0 or 1{hint}" in text
        ), (native, text[:600])
        if not hint:
            assert "for two classes" not in text and "num_classes=" not in text, text[:600]


def test_huge_multiclass_predictions_give_a_clear_message_on_the_native_path(spark):
    sdf = spark.createDataFrame([(0.0, 1.0), (2.0, 1e300), (1.0, 1.0)], "y double, p double").coalesce(1)
    ev = mergeable_metrics.Evaluation(label_col="y", prediction_col="p", num_classes=3, metrics=["accuracy"])
    with pytest.raises(Exception) as info:
        compute_metrics(sdf, evaluation=ev, native=True).collect()
    assert "column 'p': invalid value 1e+300 at row 1" in str(info.value)


def test_decimal_weights_give_the_local_result(spark):
    """Decimal weights: cast to double on Spark, read as numbers by core (rejected before)."""
    rows = [(1, 0.9, decimal.Decimal("1.50")), (0, 0.6, decimal.Decimal("2.25")), (1, 0.2, decimal.Decimal("0.75")), (0, 0.1, decimal.Decimal("1"))]
    sdf = spark.createDataFrame(rows, "y long, s double, w decimal(6,2)").repartition(2)
    ev = mergeable_metrics.Evaluation(label_col="y", score_col="s", weight_col="w", metrics=["accuracy", "precision"])
    local = ev.evaluate([{"y": [r[0] for r in rows], "s": [r[1] for r in rows], "w": [r[2] for r in rows]}])
    assert local.overall.metrics["accuracy"] == (1.5 + 1.0) / 5.5  # rows 0 and 3 are right
    for native in (True, False):
        got = collect_results(compute_metrics(sdf, evaluation=ev, native=native), ev)
        assert got.overall.metrics == local.overall.metrics
        assert got.overall.weight == local.overall.weight == 5.5


def test_multioutput_array_rows_of_another_length_or_null_are_invalid_per_row(spark):
    from pyspark.sql import types as T
    from sklearn.metrics import mean_squared_error

    y = [[1.0, 2.0], [3.0, 4.0], [5.0, 7.0], [0.0, 1.0], [2.0, 2.0], [4.0, 0.5]]
    p = [[1.5, 2.0], [3.0, 4.5], [5.0], [0.5, 1.0], None, [4.0, 0.0]]
    schema = T.StructType(
        [T.StructField("y", T.ArrayType(T.DoubleType())), T.StructField("p", T.ArrayType(T.DoubleType())), T.StructField("g", T.StringType())]
    )
    rows = [(a, b, "ab"[i % 2]) for i, (a, b) in enumerate(zip(y, p))]
    sdf = spark.createDataFrame(rows, schema).repartition(3)
    ev = mergeable_metrics.Evaluation(label_col="y", prediction_col="p", num_outputs=2, slices=["g"], on_invalid="skip", metrics=["mse@multioutput=raw_values"])
    got = collect_results(compute_metrics(sdf, evaluation=ev), ev)
    assert (got.overall.n, got.overall.skipped) == (4, 2) and got[{"g": "a"}].skipped == 2 and got[{"g": "b"}].skipped == 0
    keep = [0, 1, 3, 5]
    want = mean_squared_error(np.array(y)[keep], np.array([p[i] for i in keep]), multioutput="raw_values")
    np.testing.assert_allclose(got.overall.metrics["mse@multioutput=raw_values"], want, rtol=1e-12)
    strict = mergeable_metrics.Evaluation(label_col="y", prediction_col="p", num_outputs=2, metrics=["mse"])
    with pytest.raises(Exception, match=r"column 'p': row 2 holds 1 entries \[5.0\]: multioutput prediction rows are lists of 2 values \(num_outputs=2\)"):
        collect_results(compute_metrics(spark.createDataFrame(rows, schema).coalesce(1), evaluation=strict), strict)
