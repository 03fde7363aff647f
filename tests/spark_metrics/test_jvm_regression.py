"""Regression on the JVM path (issue 26, round 5): ``metric_columns(..., task="regression")`` folds the
regression moments in the JVM (the bytes of core's Python fold in any partitioning) and finishes ``r2``,
``mse``, ``rmse``, ``mae``, ... in Java (``mergeablemetrics.RegressionFinish``: core's exact rationals, rounded
once), bit for bit the local engine's values; scikit-learn's values per group with ``sample_weight``;
``evaluate`` takes the JVM path for regression plans."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.metrics import explained_variance_score, max_error, mean_absolute_error, mean_absolute_percentage_error, mean_squared_error, r2_score

from mergeable_metrics import Evaluation
from mergeable_metrics.spark.jvm_finish import metric_finish
from tests.spark_metrics import jvm_fold

pytestmark = pytest.mark.filterwarnings("ignore::mergeable_metrics.metrics.base.UndefinedMetricWarning")

#: every metric of the regression moments state, the force_finite variants included
METRICS = [
    "r2",
    "mse",
    "rmse",
    "mae",
    "mape",
    "explained_variance",
    "r2@force_finite=false",
    "explained_variance@force_finite=false",
    "mean_error",
    "max_error",
    "pearson",
    "mean_label",
    "mean_prediction",
]


def _bits(x: float) -> int:
    return int(np.float64(x).view(np.uint64))


def _packed(states) -> bytes:
    return b"".join(len(b).to_bytes(4, "little") + b for b in (s.encode() for s in states))


def _values(rng, n: int, scale: str) -> tuple[np.ndarray, np.ndarray]:
    """Targets and predictions of one kind of data (``scale``)."""
    if scale == "unit":
        y = rng.normal(size=n)
        p = y + rng.normal(scale=0.3, size=n)
    elif scale == "offset":  # targets around 1e8 with unit spread: a float sum of squares loses every digit
        y = 1e8 + rng.normal(size=n)
        p = y + rng.normal(scale=0.5, size=n)
    elif scale == "huge":
        y = rng.normal(size=n) * 1e150
        p = y * (1 + rng.normal(scale=0.1, size=n))
    elif scale == "tiny":
        y = rng.normal(size=n) * 1e-300
        p = rng.choice([5e-324, -5e-324, 0.0, -0.0, 1e-310], n) + y
    elif scale == "constant":  # constant targets: r2 / explained variance follow force_finite
        y = np.full(n, 2.5)
        p = np.where(rng.random(n) < 0.5, 2.5, rng.normal(size=n))
    elif scale == "perfect":
        y = rng.normal(size=n)
        p = y.copy()
    else:  # signed zeros, integers and ties
        y = rng.choice([0.0, -0.0, 1.0, -1.0, 3.0], n)
        p = rng.choice([0.0, -0.0, 1.0, 2.0], n)
    return y.astype(np.float64), p.astype(np.float64)


def _data(rng, n: int, scale: str, weights: str) -> dict:
    y, p = _values(rng, n, scale)
    data = {"y": y, "p": p}
    if weights == "int":
        data["w"] = rng.integers(0, 4, n).astype(float)
    elif weights == "frac":
        data["w"] = rng.choice([0.0, 0.1, 1 / 3, 2.5, 1e-3, 7.0, 1e-300, 1e10, 5e-324], n)
    elif weights == "zero":
        data["w"] = np.zeros(n)
    return data


def _java_and_core(ev: Evaluation, data: dict) -> tuple[dict, dict]:
    states = ev.fold(ev.zero(), data).states(())
    want = ev.finish({(): states}, add_overall=False)[()].metrics
    descs = {m.key: metric_finish(ev, m) for m in ev.plan.metrics}
    assert all(d is not None for d in descs.values()), descs
    got = jvm_fold.finish([(d, _packed(states)) for d in descs.values()] + [(d, None) for d in descs.values()])
    k = len(descs)
    zero = ev.finish({(): tuple(cls.zero(layout) for cls, layout in ev.plan.state_types)}, add_overall=False)[()].metrics
    for key, value in zip(descs, got[k:]):  # a group without rows (packed None): core's value of the zero states
        assert _bits(value) == _bits(zero[key]), (key, value, zero[key])
    return dict(zip(descs, got[:k])), want


@settings(max_examples=40, deadline=None)
@given(
    n=st.sampled_from([0, 1, 2, 3, 7, 50, 300]),
    scale=st.sampled_from(["unit", "offset", "huge", "tiny", "constant", "perfect", "zeros"]),
    weights=st.sampled_from(["none", "int", "frac", "zero"]),
    seed=st.integers(0, 2**32 - 1),
)
def test_regression_finish_in_java_is_core_bit_for_bit(n, scale, weights, seed):
    rng = np.random.default_rng(seed)
    data = _data(rng, n, scale, weights)
    ev = Evaluation(label_col="y", score_col="p", metrics=METRICS, task="regression", weight_col="w" if "w" in data else None)
    got, want = _java_and_core(ev, data)
    for key, value in got.items():
        assert _bits(value) == _bits(want[key]), (key, value, want[key], scale, weights, n)


def test_regression_finish_of_hand_made_cases():
    """Hand-computed values: r2 of a perfect fit 1.0, of a constant target 0.0 / 1.0 (force_finite) or -inf / NaN;
    fewer than 2 rows NaN; zero weight NaN; a negative mean error that underflows is -0.0 in core (Python's
    int / int), as in Java."""
    cases = [
        ({"y": np.array([1.0, 2.0, 3.0]), "p": np.array([1.0, 2.0, 3.0])}, {"r2": 1.0, "mse": 0.0, "max_error": 0.0, "pearson": 1.0}),
        ({"y": np.array([2.0, 2.0]), "p": np.array([2.0, 3.0])}, {"r2": 0.0, "r2@force_finite=false": -math.inf, "mse": 0.5, "mae": 0.5}),
        ({"y": np.array([2.0, 2.0]), "p": np.array([2.0, 2.0])}, {"r2": 1.0, "r2@force_finite=false": math.nan}),
        ({"y": np.array([2.0]), "p": np.array([3.0])}, {"r2": math.nan, "mse": 1.0, "mean_error": 1.0}),
        ({"y": np.array([1.0, 3.0]), "p": np.array([2.0, 2.0]), "w": np.array([0.0, 0.0])}, {"r2": math.nan, "mse": math.nan, "max_error": math.nan}),
        ({"y": np.array([5e-324, 0.0]), "p": np.array([0.0, 0.0]), "w": np.array([1e300, 1e300])}, {"mean_error": -0.0, "mean_label": 0.0}),
    ]
    for data, expected in cases:
        ev = Evaluation(label_col="y", score_col="p", metrics=METRICS, task="regression", weight_col="w" if "w" in data else None)
        got, want = _java_and_core(ev, data)
        for key, ref in expected.items():
            assert _bits(got[key]) == _bits(ref), (key, got[key], ref, data)
            assert _bits(want[key]) == _bits(ref), (key, want[key], ref, data)


def test_regression_variants_not_ported_keep_the_python_finish():
    metrics = ["mse@multioutput=0.3", "r2", "median_absolute_error", "d2_tweedie_score@power=1", "msle@multioutput=0.3"]
    ev = Evaluation(label_col="y", score_col="p", metrics=metrics, task="regression")
    descs = {m.key: metric_finish(ev, m) for m in ev.plan.metrics}
    assert descs["r2"] is not None and descs["mse@multioutput=0.3"] is None and descs["median_absolute_error"] is None
    assert descs["d2_tweedie_score@1"] is None and descs["msle@multioutput=0.3"] is None
    multi = Evaluation(label_col="y", score_col="p", metrics=["r2"], task="regression", num_outputs=2)
    assert metric_finish(multi, multi.plan.metrics[0]) is None


# -- through Spark -------------------------------------------------------------------------------------------
GROUPS = ["a", "b", "c", "one", "const", "zero_w", "huge", "tiny"]


def _frame(seed: int = 5, n: int = 4000) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    g = rng.choice(["a", "b", "c"], n)
    y = rng.normal(size=n) * 10 + np.where(g == "b", 1e8, 0.0)  # group b: targets around 1e8, unit-ish spread
    p = y + rng.normal(size=n) * 3
    w = rng.choice([0.5, 1.0, 1.0, 2.0, 1 / 3, 0.0, 7.25], n)
    extra = pd.DataFrame(
        {
            "g": ["one", "const", "const", "const", "zero_w", "zero_w", "huge", "huge", "huge", "tiny", "tiny", "tiny"],
            "y": [3.0, 2.0, 2.0, 2.0, 1.0, 4.0, 1e150, -3e150, 2e150, 1e-300, -0.0, 5e-324],
            "p": [4.0, 2.0, 2.5, 1.0, 0.0, 0.0, 2e150, -1e150, 2e150, -0.0, 1e-310, 0.0],
            "w": [1.0, 1.0, 2.0, 0.5, 0.0, 0.0, 1.0, 0.25, 3.0, 1e300, 2.0, 1.0],
        }
    )
    return pd.concat([pd.DataFrame({"g": g, "y": y, "p": p, "w": w}), extra], ignore_index=True)


def _no_python(q) -> None:
    plan = q._jdf.queryExecution().executedPlan().toString()
    assert "EvalPython" not in plan, plan


@pytest.mark.parametrize("weighted", [False, True])
def test_metric_columns_regression_per_group_equal_sklearn_and_the_local_engine(jvm_spark, weighted):
    from mergeable_metrics.spark import metric_columns

    pdf = _frame()
    df = jvm_spark.createDataFrame(pdf).repartition(3)
    wc = "w" if weighted else None
    names = ["r2", "mean_squared_error", "mean_absolute_error", "rmse", "mape", "explained_variance", "max_error", "pearson", "mean_error", "example_count"]
    q = df.groupBy("g").agg(*metric_columns(names, label_col="y", score_col="p", weight_col=wc, task="regression", engine="jvm"))
    _no_python(q)  # folded and finished in the JVM
    rows = {r["g"]: r.asDict() for r in q.collect()}
    assert sorted(rows) == sorted(GROUPS)
    ev = Evaluation(label_col="y", score_col="p", metrics=names, task="regression", slices=["g"], weight_col=wc)
    keys = [m.key for m in ev.plan.metrics]  # columns are named by the canonical keys (mean_squared_error -> mse)
    assert keys[1:3] == ["mse", "mae"]
    want = ev.evaluate([pdf])
    for g, row in rows.items():
        ref = want[(("g", g),)].metrics
        for k in keys:
            assert _bits(row[k]) == _bits(ref[k]), (g, k, row[k], ref[k])
        part = pdf[pdf.g == g]
        sw = part.w.to_numpy() if weighted else None
        if g in ("a", "b", "c"):
            assert row["r2"] == pytest.approx(r2_score(part.y, part.p, sample_weight=sw), rel=1e-10)
            assert row["mse"] == pytest.approx(mean_squared_error(part.y, part.p, sample_weight=sw), rel=1e-12)
            assert row["mae"] == pytest.approx(mean_absolute_error(part.y, part.p, sample_weight=sw), rel=1e-12)
            assert row["mape"] == pytest.approx(mean_absolute_percentage_error(part.y, part.p, sample_weight=sw), rel=1e-12)
            assert row["explained_variance"] == pytest.approx(explained_variance_score(part.y, part.p, sample_weight=sw), rel=1e-8)
            assert row["rmse"] == pytest.approx(math.sqrt(mean_squared_error(part.y, part.p, sample_weight=sw)), rel=1e-12)
            keep = part if not weighted else part[part.w > 0]
            assert row["max_error"] == max_error(keep.y, keep.p)
        assert row["example_count"] == len(part)
    assert math.isnan(rows["one"]["r2"]) and rows["one"]["mse"] == 1.0  # one row: r2 undefined, as sklearn
    assert rows["const"]["r2"] == 0.0  # constant targets, imperfect predictions: force_finite's 0.0, as sklearn
    assert r2_score([2.0, 2.0, 2.0], [2.0, 2.5, 1.0], sample_weight=[1.0, 2.0, 0.5] if weighted else None) == 0.0
    if weighted:
        assert math.isnan(rows["zero_w"]["mse"]) and math.isnan(rows["zero_w"]["r2"])


def _group_bytes(pdf: pd.DataFrame, ev: Evaluation) -> dict:
    out = {}
    for g, part in pdf.groupby("g"):
        acc = ev.fold(ev.zero(), {c: part[c].to_numpy() for c in ("y", "p", "w")})
        out[g] = [s.encode() for s in acc.states(())]
    return out


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(partitions=st.integers(1, 6), weighted=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_regression_state_bytes_equal_the_python_fold_in_any_partitioning(jvm_spark, partitions, weighted, seed):
    from mergeable_metrics.spark import jvm, metric_state_column

    pdf = _frame(seed=seed % 1000, n=600).sample(frac=1.0, random_state=seed % 1000).reset_index(drop=True)
    wc = "w" if weighted else None
    metrics = ["r2", "mse", "mae"]
    ev = Evaluation(label_col="y", score_col="p", metrics=metrics, task="regression", weight_col=wc)
    df = jvm_spark.createDataFrame(pdf).repartition(partitions)
    rows = df.groupBy("g").agg(metric_state_column(metrics, label_col="y", score_col="p", weight_col=wc, task="regression")).collect()
    want = _group_bytes(pdf, ev)
    assert sorted(r["g"] for r in rows) == sorted(want)
    for r in rows:
        assert jvm.unpack(r["mm_states"], 2) == want[r["g"]], r["g"]


def test_regression_state_of_an_empty_frame_is_the_zero_state(jvm_spark):
    from mergeable_metrics.spark import jvm, metric_columns, metric_state_column

    ev = Evaluation(label_col="y", score_col="p", metrics=["r2", "mse"], task="regression", weight_col="w")
    empty = jvm_spark.createDataFrame(_frame(n=10).iloc[:0], "g string, y double, p double, w double")
    data = empty.agg(metric_state_column(["r2", "mse"], label_col="y", score_col="p", weight_col="w", task="regression")).collect()[0]["mm_states"]
    zero = [cls.zero(layout).encode() for cls, layout in ev.plan.state_types]
    assert data is None or jvm.unpack(data, 2) == zero
    row = empty.agg(*metric_columns(["r2", "mse"], label_col="y", score_col="p", weight_col="w", task="regression")).collect()[0]
    assert math.isnan(row["r2"]) and math.isnan(row["mse"])


def test_invalid_regression_values_raise_naming_the_column(jvm_spark):
    from mergeable_metrics.spark import metric_columns

    bad = jvm_spark.createDataFrame(pd.DataFrame({"g": ["a", "a"], "y": [1.0, float("nan")], "p": [1.0, 2.0]}))
    with pytest.raises(Exception, match=r"column 'y'.*targets must be finite"):
        bad.groupBy("g").agg(*metric_columns(["r2"], label_col="y", score_col="p", task="regression")).collect()
    bad = jvm_spark.createDataFrame(pd.DataFrame({"g": ["a", "a"], "y": [1.0, 2.0], "q": [1.0, float("inf")]}))
    with pytest.raises(Exception, match=r"column 'q'.*values must be finite"):
        bad.groupBy("g").agg(*metric_columns(["mse"], label_col="y", prediction_col="q", task="regression")).collect()


def test_unported_regression_metrics_keep_a_python_finish_or_say_why(jvm_spark):
    from mergeable_metrics.spark import jvm, metric_columns

    pdf = _frame(n=300)
    df = jvm_spark.createDataFrame(pdf)
    q = df.groupBy("g").agg(*metric_columns(["r2", "mse@multioutput=0.3"], label_col="y", score_col="p", task="regression"))
    analyzed = q._jdf.queryExecution().analyzed().toString()
    assert analyzed.count("mm_metric(") == 1, analyzed  # r2 in Java, the weighted output average in Python
    want = Evaluation(label_col="y", score_col="p", metrics=["r2", "mse@multioutput=0.3"], task="regression", slices=["g"]).evaluate([pdf])
    for r in q.collect():
        ref = want[(("g", r["g"]),)].metrics
        assert _bits(r["r2"]) == _bits(ref["r2"]) and _bits(r["mse@multioutput=0.3"]) == _bits(ref["mse@multioutput=0.3"])
    spec, why = jvm.evaluation_spec(Evaluation(label_col="y", score_col="p", metrics=["mean_tweedie_deviance@power=1.5"], task="regression"))
    assert spec is not None, why  # every Tweedie power folds in the JVM (fdlibm's pow on both sides)
    spec, why = jvm.evaluation_spec(Evaluation(label_col="y", score_col="p", metrics=["mse"], task="regression", num_outputs=2))
    assert spec is not None, why  # multioutput regression moments fold in the JVM (test_jvm_multioutput.py)
    spec, why = jvm.evaluation_spec(Evaluation(label_col="y", score_col="p", metrics=["median_absolute_error"], task="regression", num_outputs=2))
    assert spec is None and "multioutput" in why and "output_absolute_error_distribution" in why


@pytest.mark.parametrize("weight_col", [None, "w"])
def test_evaluate_regression_takes_the_jvm_path_and_equals_the_local_engine(jvm_spark, monkeypatch, weight_col):
    from mergeable_metrics.spark import evaluate, jvm_path

    pdf = _frame(n=3000)
    pdf["h"] = np.arange(len(pdf)) % 3
    metrics = ["r2", "mse", "rmse", "mae", "mape", "max_error", "pearson", "example_count"]
    ev = Evaluation(label_col="y", prediction_col="p", task="regression", weight_col=weight_col, metrics=metrics, slices=["g", "h", "g,h"])
    taken = []
    real = jvm_path.evaluate_jvm
    monkeypatch.setattr(jvm_path, "evaluate_jvm", lambda *a: taken.append(1) or real(*a))
    got = evaluate(jvm_spark.createDataFrame(pdf).repartition(4), evaluation=ev)
    assert taken == [1]
    want = ev.evaluate([pdf])
    assert [s.key for s in got] == [s.key for s in want]
    for a, b in zip(got, want):
        assert a.n == b.n and a.weight == b.weight
        for k in metrics:
            assert _bits(a.metrics[k]) == _bits(b.metrics[k]), (a.key, k)
    part = pdf[pdf.g == "a"]
    sw = None if weight_col is None else part.w
    assert got[(("g", "a"),)].metrics["r2"] == pytest.approx(r2_score(part.y, part.p, sample_weight=sw), rel=1e-10)


def test_evaluate_regression_with_an_invalid_target_names_its_row(jvm_spark):
    from mergeable_metrics.spark import evaluate

    pdf = _frame(n=200)
    pdf.loc[17, "y"] = float("inf")
    ev = Evaluation(label_col="y", score_col="p", task="regression", metrics=["r2"], slices=["g"])
    with pytest.raises(Exception, match="inf") as info:
        evaluate(jvm_spark.createDataFrame(pdf).coalesce(1), evaluation=ev)
    assert "17" in str(info.value)


def test_evaluate_regression_with_an_error_past_float64_names_its_row(jvm_spark):
    """``y = 1e308``, ``p = -1e308``: ``|p - y|`` overflows; the JVM says so without a row, then the Arrow path
    raises core's message naming the row and its values."""
    from mergeable_metrics.spark import evaluate

    pdf = _frame(n=100)
    pdf.loc[23, ["y", "p"]] = [1e308, -1e308]
    ev = Evaluation(label_col="y", score_col="p", task="regression", metrics=["mse"], slices=["g"])
    with pytest.raises(Exception, match=r"row 23 .*overflows float64"):
        evaluate(jvm_spark.createDataFrame(pdf).coalesce(1), evaluation=ev)


@pytest.mark.parametrize("weight_col,layout", [(None, "wide"), ("w", "long")])
def test_compute_metrics_regression_folds_in_the_jvm_and_equals_the_local_engine(jvm_spark, monkeypatch, weight_col, layout):
    from mergeable_metrics.spark import collect_results, compute_metrics, jvm_path

    pdf = _frame(n=2000)
    metrics = ["r2", "mse", "mae", "pearson", "explained_variance", "example_count"]
    ev = Evaluation(label_col="y", score_col="p", task="regression", weight_col=weight_col, metrics=metrics, slices=["g"], min_slice_size=2)
    taken = []
    real = jvm_path.compute_jvm
    monkeypatch.setattr(jvm_path, "compute_jvm", lambda *a: taken.append(1) or real(*a))
    df = jvm_spark.createDataFrame(pdf).repartition(3)
    result = compute_metrics(df, evaluation=ev, layout=layout)
    assert taken == [1]
    got = collect_results(result, ev)
    want = ev.evaluate([pdf])
    arrow = collect_results(compute_metrics(df, evaluation=ev, native=False, layout=layout), ev)
    assert taken == [1]  # native=False: the Arrow path
    for other in (want, arrow):
        assert [s.key for s in got] == [s.key for s in other]
        for a, b in zip(got, other):
            assert a.n == b.n and a.weight == b.weight and sorted(a.metrics) == sorted(b.metrics)  # suppressed: none
            for k in a.metrics:
                assert _bits(a.metrics[k]) == _bits(b.metrics[k]), (a.key, k)
    assert (("g", "one"),) not in [s.key for s in got]  # one row, below min_slice_size
    part = pdf[pdf.g == "c"]
    sw = None if weight_col is None else part.w
    assert got[(("g", "c"),)].metrics["mse"] == pytest.approx(mean_squared_error(part.y, part.p, sample_weight=sw), rel=1e-12)
    empty = jvm_spark.createDataFrame(pdf.iloc[:0], "g string, y double, p double, w double")
    ev0 = Evaluation(label_col="y", score_col="p", task="regression", weight_col=weight_col, metrics=metrics, slices=["g"])
    none = collect_results(compute_metrics(empty, evaluation=ev0), ev0)
    assert len(none) == 1 and none[()].n == 0 and math.isnan(none[()].metrics["r2"]) and none[()].metrics["example_count"] == 0


@pytest.mark.parametrize("column,value,shown", [("y", float("nan"), "nan"), ("p", float("-inf"), "-inf"), ("w", -2.0, "-2.0"), ("y", None, "null")])
def test_compute_metrics_regression_names_the_row_of_an_invalid_value(jvm_spark, column, value, shown):
    """An invalid value found by the JVM job's checks sends compute_metrics to the Arrow path, whose action names the
    row within its partition and the partition: the same message as native=False's."""
    from mergeable_metrics.spark import collect_results, compute_metrics

    pdf = _frame(n=300)
    rows = [list(r) for r in pdf[["g", "y", "p", "w"]].itertuples(index=False)]
    rows[41][["g", "y", "p", "w"].index(column)] = value  # a real NaN (pandas through Arrow would make it a null)
    df = jvm_spark.createDataFrame(rows, "g string, y double, p double, w double").coalesce(1)
    ev = Evaluation(label_col="y", score_col="p", task="regression", metrics=["r2"], slices=["g"], weight_col="w")
    rule = {"y": "targets must be finite", "p": "values must be finite", "w": r"weights must be finite and >= 0"}[column]
    for native in (None, False):  # the JVM path, and the Arrow path: the same row named
        with pytest.raises(Exception, match=rf"column '{column}': invalid value {shown} at row 41: {rule}.*\[Spark partition 0; rows are counted"):
            collect_results(compute_metrics(df, evaluation=ev, native=native), ev)


@pytest.mark.parametrize("weighted", [False, True])
def test_sql_regression_functions_per_group_equal_sklearn_and_the_local_engine(jvm_spark, weighted):
    from mergeable_metrics.spark import register_sql_functions

    names = register_sql_functions(jvm_spark)
    sql = {"mm_r2": "r2", "mm_mse": "mse", "mm_rmse": "rmse", "mm_mae": "mae", "mm_mape": "mape", "mm_explained_variance": "explained_variance"}
    sql.update({"mm_max_error": "max_error", "mm_pearson": "pearson"})
    assert set(sql) <= set(names)
    pdf = _frame(seed=11, n=3000)
    jvm_spark.createDataFrame(pdf).repartition(3).createOrReplaceTempView("mm_reg_t")
    w = ", w" if weighted else ""
    rows = jvm_spark.sql(f"SELECT g, {', '.join(f'{f}(y, p{w}) AS {m}' for f, m in sql.items())} FROM mm_reg_t GROUP BY g").collect()
    got = {r["g"]: r.asDict() for r in rows}
    assert sorted(got) == sorted(GROUPS)
    ev = Evaluation(label_col="y", score_col="p", metrics=list(sql.values()), task="regression", slices=["g"], weight_col="w" if weighted else None)
    want = ev.evaluate([pdf])
    for g, row in got.items():
        ref = want[(("g", g),)].metrics
        for m in sql.values():
            assert _bits(row[m]) == _bits(ref[m]), (g, m, row[m], ref[m])
        if g in ("a", "b", "c"):
            part = pdf[pdf.g == g]
            sw = part.w if weighted else None
            assert row["r2"] == pytest.approx(r2_score(part.y, part.p, sample_weight=sw), rel=1e-10)
            assert row["mse"] == pytest.approx(mean_squared_error(part.y, part.p, sample_weight=sw), rel=1e-12)
            assert row["mae"] == pytest.approx(mean_absolute_error(part.y, part.p, sample_weight=sw), rel=1e-12)
    with pytest.raises(Exception, match=r"column 'label'.*targets must be finite"):
        jvm_spark.sql("SELECT mm_r2(y, p) FROM VALUES (1.0D, 2.0D), (CAST('NaN' AS DOUBLE), 1.0D) AS t(y, p)").collect()
