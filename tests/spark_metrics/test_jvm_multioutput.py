"""Multioutput regression on the JVM path (issue 26): ``task="regression", num_outputs=D`` with ``array<double>``
target and prediction columns folds ``regression_moments`` in Java (``mergeablemetrics.Spec.OUTPUT_ROWS``: (D,)
exact sums per field), bit for bit the Python fold's bytes in any partitioning; ``evaluate``, ``compute_metrics`` and
``metric_columns`` take that path and finish with core, so the values are the local engine's bit for bit and
scikit-learn's ``r2_score`` / ``mean_squared_error`` / ``mean_absolute_error`` / ``explained_variance_score`` with
``multioutput="raw_values"``, ``"uniform_average"`` and ``"variance_weighted"``; an invalid row is refused by both
folds (Java names the column and the value)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.metrics import explained_variance_score, mean_absolute_error, mean_absolute_percentage_error, mean_squared_error, r2_score

from mergeable_metrics import Evaluation

pytestmark = pytest.mark.filterwarnings("ignore::mergeable_metrics.metrics.base.UndefinedMetricWarning")

SCHEMA = "g string, y array<double>, p array<double>, w double"
#: the invalid rows the property test may put in (target, prediction): both folds refuse each
BAD = {
    "null target row": (None, "ok"),
    "null prediction row": ("ok", None),
    "short target row": ("short", "ok"),
    "long prediction row": ("ok", "long"),
    "nan target": ("nan", "ok"),
    "inf prediction": ("ok", "inf"),
    "null entry": ("ok", "null entry"),
    "error past float64": ("huge", "-huge"),
}


def _bits(x: float) -> int:
    return int(np.float64(x).view(np.uint64))


def _row(kind: str | None, good: list, d: int) -> list | None:
    if kind is None:
        return None
    return {
        "ok": good,
        "short": good[:-1],
        "long": good + [1.0],
        "nan": [math.nan] + good[1:],
        "inf": good[:-1] + [math.inf],
        "null entry": [None] + good[1:],
        "huge": [1e308] * d,
        "-huge": [-1e308] * d,
    }[kind]


def _frame(rng, n: int, d: int, weighted: bool) -> pd.DataFrame:
    scale = rng.choice([1.0, 1e-300, 1e150, 1e8], size=(n, 1))  # tiny, huge (finite errors) and offset rows
    y = rng.normal(size=(n, d)) * scale
    p = y + rng.normal(size=(n, d)) * scale
    y[rng.random((n, d)) < 0.1] = -0.0
    p[rng.random((n, d)) < 0.1] = -0.0
    y[rng.random((n, d)) < 0.05] = 5e-324
    y[rng.random((n, d)) < 0.05] = -2.5  # outside msle's domain
    w = rng.choice([1.0, 0.0, 0.5, 1 / 3, 7.25, 1e300, 5e-324], n) if weighted else np.ones(n)
    return pd.DataFrame({"g": rng.choice(["a", "b", "c"], n), "y": [list(r) for r in y], "p": [list(r) for r in p], "w": w})


def _python_bytes(pdf: pd.DataFrame, ev: Evaluation) -> dict:
    out = {}
    for g, part in pdf.groupby("g"):
        acc = ev.fold(ev.zero(), {c: part[c].to_numpy() for c in ("y", "p", "w")})
        out[g] = [s.encode() for s in acc.states(())]
    return out


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    d=st.integers(1, 5),
    n=st.integers(1, 80),
    partitions=st.integers(1, 7),
    weighted=st.booleans(),
    bad=st.sampled_from([None, None, None, *BAD]),
    seed=st.integers(0, 2**32 - 1),
)
def test_multioutput_state_bytes_equal_the_python_fold_in_any_partitioning(jvm_spark, d, n, partitions, weighted, bad, seed):
    from mergeable_metrics.spark import jvm, metric_state_column

    rng = np.random.default_rng(seed)
    pdf = _frame(rng, n, d, weighted)
    if bad is not None:
        at = int(rng.integers(0, n))
        ty, tp = BAD[bad]
        pdf.at[at, "y"] = _row(ty, pdf.at[at, "y"], d)
        pdf.at[at, "p"] = _row(tp, pdf.at[at, "p"], d)
    wc = "w" if weighted else None
    metrics = ["r2", "mse", "mae", "msle", "mean_pinball_loss@alpha=0.2"]  # regression_moments and regression_terms
    ev = Evaluation(label_col="y", score_col="p", metrics=metrics, task="regression", num_outputs=d, weight_col=wc)
    spec, why = jvm.evaluation_spec(ev)
    assert spec is not None, why
    df = jvm_spark.createDataFrame(pdf, SCHEMA).repartition(partitions)
    q = df.groupBy("g").agg(metric_state_column(metrics, label_col="y", score_col="p", weight_col=wc, task="regression", num_outputs=d))
    if bad is not None:  # both folds refuse the row
        with pytest.raises(ValueError, match=r"multioutput|finite|overflows|None|null|entries"):
            _python_bytes(pdf, ev)
        with pytest.raises(Exception, match=r"multioutput|finite|overflows"):
            q.collect()
        return
    want = _python_bytes(pdf, ev)
    rows = q.collect()
    assert sorted(r["g"] for r in rows) == sorted(want)
    for r in rows:
        assert jvm.unpack(r["mm_states"], 3) == want[r["g"]], (r["g"], d, weighted)


def _sk(name: str, how: str, y: np.ndarray, p: np.ndarray, w: np.ndarray | None):
    fn = {
        "r2": r2_score,
        "mse": mean_squared_error,
        "mae": mean_absolute_error,
        "explained_variance": explained_variance_score,
        "mape": mean_absolute_percentage_error,
    }[name]
    return fn(y, p, sample_weight=w, multioutput=how)


#: metric -> scikit-learn's multioutput options it has in core
OPTIONS = {
    "r2": ("raw_values", "uniform_average", "variance_weighted"),
    "explained_variance": ("raw_values", "uniform_average", "variance_weighted"),
    "mse": ("raw_values", "uniform_average"),
    "mae": ("raw_values", "uniform_average"),
    "mape": ("raw_values", "uniform_average"),
}


def _values_frame(seed: int = 7, n: int = 3000, d: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    g = rng.choice(["a", "b"], n)
    y = rng.normal(size=(n, d)) * np.array([1.0, 10.0, 1e-3])[:d] + np.where(g == "b", 1e6, 0.0)[:, None]
    p = y + rng.normal(size=(n, d)) * np.array([0.5, 2.0, 1e-3])[:d]
    return pd.DataFrame({"g": g, "y": [list(r) for r in y], "p": [list(r) for r in p], "w": rng.choice([0.5, 1.0, 2.0, 1 / 3, 0.0], n)})


@pytest.mark.parametrize("weight_col", [None, "w"])
def test_evaluate_and_compute_metrics_fold_in_the_jvm_and_equal_the_local_engine_and_sklearn(jvm_spark, monkeypatch, weight_col):
    from mergeable_metrics.spark import collect_results, compute_metrics, evaluate, jvm_path

    pdf = _values_frame()
    metrics = [f"{m}@multioutput={how}" for m, hows in OPTIONS.items() for how in hows] + ["r2", "example_count"]
    ev = Evaluation(label_col="y", prediction_col="p", task="regression", num_outputs=3, weight_col=weight_col, metrics=metrics, slices=["g"])
    taken = []
    real_eval, real_compute = jvm_path.evaluate_jvm, jvm_path.compute_jvm
    monkeypatch.setattr(jvm_path, "evaluate_jvm", lambda *a: taken.append("evaluate") or real_eval(*a))
    monkeypatch.setattr(jvm_path, "compute_jvm", lambda *a: taken.append("compute") or real_compute(*a))
    df = jvm_spark.createDataFrame(pdf, SCHEMA).repartition(4)
    got = evaluate(df, evaluation=ev)
    computed = collect_results(compute_metrics(df, evaluation=ev), ev)
    assert taken == ["evaluate", "compute"]
    want = ev.evaluate([pdf])
    for other in (got, computed):
        assert [s.key for s in other] == [s.key for s in want]
        for a, b in zip(other, want):
            assert a.n == b.n and a.weight == b.weight
            for k in ev.plan.metrics:
                va, vb = np.atleast_1d(a.metrics[k.key]), np.atleast_1d(b.metrics[k.key])
                assert [_bits(x) for x in va] == [_bits(x) for x in vb], (a.key, k.key)
    for key, part in [((), pdf), ((("g", "a"),), pdf[pdf.g == "a"]), ((("g", "b"),), pdf[pdf.g == "b"])]:
        y, p = np.array(part.y.tolist()), np.array(part.p.tolist())
        w = None if weight_col is None else part.w.to_numpy()
        for m, hows in OPTIONS.items():
            for how in hows:
                value = got[key].metrics[f"{m}@multioutput={how}"]
                np.testing.assert_allclose(value, _sk(m, how, y, p, w), rtol=1e-9, err_msg=f"{key} {m} {how}")
        assert got[key].metrics["r2"] == got[key].metrics["r2@multioutput=uniform_average"]
        assert got[key].metrics["example_count"] == len(part)


@pytest.mark.parametrize("weight_col", [None, "w"])
def test_metric_columns_multioutput_per_group_equal_the_local_engine_and_sklearn(jvm_spark, weight_col):
    from mergeable_metrics.spark import jvm, metric_columns

    pdf = _values_frame(seed=11, n=1500, d=2)
    names = ["r2", "mse", "mae", "explained_variance@multioutput=variance_weighted", "r2@multioutput=variance_weighted", "mape", "example_count"]
    df = jvm_spark.createDataFrame(pdf, SCHEMA).repartition(3)
    q = df.groupBy("g").agg(*metric_columns(names, label_col="y", score_col="p", weight_col=weight_col, task="regression", num_outputs=2, engine="jvm"))
    assert "mm_state_" in q._jdf.queryExecution().analyzed().toString()  # the JVM aggregate folds the rows
    ev = Evaluation(label_col="y", score_col="p", metrics=names, task="regression", num_outputs=2, slices=["g"], weight_col=weight_col)
    want = ev.evaluate([pdf])
    rows = {r["g"]: r.asDict() for r in q.collect()}
    assert sorted(rows) == ["a", "b"]
    for g, row in rows.items():
        ref = want[(("g", g),)].metrics
        for m in ev.plan.metrics:
            assert _bits(row[m.key]) == _bits(ref[m.key]), (g, m.key)
        part = pdf[pdf.g == g]
        y, p = np.array(part.y.tolist()), np.array(part.p.tolist())
        w = None if weight_col is None else part.w.to_numpy()
        assert row["r2"] == pytest.approx(r2_score(y, p, sample_weight=w), rel=1e-9)
        assert row["r2@multioutput=variance_weighted"] == pytest.approx(r2_score(y, p, sample_weight=w, multioutput="variance_weighted"), rel=1e-9)
        assert row["mse"] == pytest.approx(mean_squared_error(y, p, sample_weight=w), rel=1e-12)
        assert row["mae"] == pytest.approx(mean_absolute_error(y, p, sample_weight=w), rel=1e-12)
    empty = jvm_spark.createDataFrame(pdf.iloc[:0], SCHEMA)
    row = empty.agg(*metric_columns(["r2", "r2@multioutput=variance_weighted"], label_col="y", score_col="p", task="regression", num_outputs=2)).collect()[0]
    assert math.isnan(row["r2"]) and math.isnan(row["r2@multioutput=variance_weighted"])
    with pytest.raises(ValueError, match="arrays"):  # raw_values is one value per output: compute_metrics / evaluate
        metric_columns(["mse@multioutput=raw_values"], label_col="y", score_col="p", task="regression", num_outputs=2)
    spec, why = jvm.evaluation_spec(Evaluation(label_col="y", score_col="p", metrics=["median_absolute_error"], task="regression", num_outputs=2))
    assert spec is None and "not folded in the JVM" in why  # the error quantiles of D outputs keep the Arrow path


@pytest.mark.parametrize(
    "y,p,match",
    [
        (
            [1.0, 2.0],
            [1.0],
            r"column 'p': invalid value a row of 1 entries in a row of this group: multioutput prediction rows are lists of 2 values \(num_outputs=2\)",
        ),
        ([1.0, 2.0, 3.0], [1.0, 2.0], r"column 'y': invalid value a row of 3 entries in a row of this group: multioutput target rows are lists of 2 values"),
        (None, [1.0, 2.0], r"column 'y': invalid value null in a row of this group: multioutput target rows are lists of 2 values"),
        ([1.0, 2.0], None, r"column 'p': invalid value null in a row of this group: multioutput prediction rows"),
        ([1.0, math.nan], [1.0, 2.0], r"column 'y': invalid value nan \(entry 1\) in a row of this group: targets must be finite"),
        ([1.0, 2.0], [-math.inf, 2.0], r"column 'p': invalid value -inf \(entry 0\) in a row of this group: values must be finite"),
        ([1e308, 0.0], [-1e308, 0.0], r"overflows float64"),
    ],
)
def test_an_invalid_row_raises_naming_the_column_and_value(jvm_spark, y, p, match):
    from mergeable_metrics.spark import metric_columns

    df = jvm_spark.createDataFrame([("a", [0.0, 1.0], [0.5, 1.0], 1.0), ("a", y, p, 1.0)], SCHEMA)  # rows, not pandas: NaN stays NaN
    with pytest.raises(Exception, match=match):
        df.groupBy("g").agg(*metric_columns(["mse"], label_col="y", score_col="p", task="regression", num_outputs=2, engine="jvm")).collect()


def test_evaluate_with_an_invalid_row_names_it_through_the_arrow_path(jvm_spark):
    from mergeable_metrics.spark import evaluate

    pdf = _values_frame(n=100, d=2)
    pdf.at[37, "p"] = [1.0]
    ev = Evaluation(label_col="y", score_col="p", task="regression", num_outputs=2, metrics=["mse"], slices=["g"])
    with pytest.raises(Exception, match=r"column 'p': row 37 holds 1 entries \[1.0\]: multioutput score rows are lists of 2 values"):
        evaluate(jvm_spark.createDataFrame(pdf, SCHEMA).coalesce(1), evaluation=ev)


@pytest.mark.parametrize("weight_col", [None, "w"])
def test_multioutput_terms_fold_in_the_jvm_and_equal_the_local_engine_and_sklearn(jvm_spark, monkeypatch, weight_col):
    """``msle``, ``rmsle`` and ``mean_pinball_loss`` of D outputs: the (D, T) ``regression_terms`` fold in the JVM;
    evaluate and metric_columns equal the local engine bit for bit and scikit-learn per output and averaged."""
    from sklearn.metrics import mean_pinball_loss, mean_squared_log_error

    from mergeable_metrics.spark import evaluate, jvm_path, metric_columns

    rng = np.random.default_rng(3)
    n, d = 2000, 3
    y = np.abs(rng.normal(size=(n, d))) * np.array([1.0, 50.0, 1e-3])
    p = np.abs(y + rng.normal(size=(n, d)) * np.array([0.3, 5.0, 1e-3]))
    pdf = pd.DataFrame({"g": rng.choice(["a", "b"], n), "y": [list(r) for r in y], "p": [list(r) for r in p], "w": rng.choice([0.5, 1.0, 2.0, 0.0], n)})
    metrics = ["msle", "msle@multioutput=raw_values", "rmsle", "mean_pinball_loss@alpha=0.2", "mean_pinball_loss@multioutput=raw_values"]
    ev = Evaluation(label_col="y", score_col="p", task="regression", num_outputs=d, weight_col=weight_col, metrics=metrics, slices=["g"])
    taken = []
    real = jvm_path.evaluate_jvm
    monkeypatch.setattr(jvm_path, "evaluate_jvm", lambda *a: taken.append(1) or real(*a))
    df = jvm_spark.createDataFrame(pdf, SCHEMA).repartition(3)
    got = evaluate(df, evaluation=ev)
    assert taken == [1]
    want = ev.evaluate([pdf])
    for a, b in zip(got, want):
        assert a.key == b.key and a.n == b.n
        for k in metrics:
            assert [_bits(x) for x in np.atleast_1d(a.metrics[k])] == [_bits(x) for x in np.atleast_1d(b.metrics[k])], (a.key, k)
    scalar = [m for m in metrics if "raw_values" not in m]
    cols = metric_columns(scalar, label_col="y", score_col="p", weight_col=weight_col, task="regression", num_outputs=d, engine="jvm")
    rows = {r["g"]: r.asDict() for r in df.groupBy("g").agg(*cols).collect()}
    for key, part in [((), pdf), ((("g", "a"),), pdf[pdf.g == "a"]), ((("g", "b"),), pdf[pdf.g == "b"])]:
        yy, pp = np.array(part.y.tolist()), np.array(part.p.tolist())
        w = None if weight_col is None else part.w.to_numpy()
        m = got[key].metrics
        np.testing.assert_allclose(m["msle@multioutput=raw_values"], mean_squared_log_error(yy, pp, sample_weight=w, multioutput="raw_values"), rtol=1e-10)
        assert m["msle"] == pytest.approx(mean_squared_log_error(yy, pp, sample_weight=w), rel=1e-10)
        assert m["rmsle"] == pytest.approx(np.mean(np.sqrt(mean_squared_log_error(yy, pp, sample_weight=w, multioutput="raw_values"))), rel=1e-10)
        assert m["mean_pinball_loss@alpha=0.2"] == pytest.approx(mean_pinball_loss(yy, pp, alpha=0.2, sample_weight=w), rel=1e-10)
        np.testing.assert_allclose(
            m["mean_pinball_loss@multioutput=raw_values"], mean_pinball_loss(yy, pp, sample_weight=w, multioutput="raw_values"), rtol=1e-10
        )
        if key:
            for k in [mm.key for mm in ev.plan.metrics if "raw_values" not in mm.key]:  # columns are named by the canonical keys
                assert _bits(rows[key[0][1]][k]) == _bits(want[key].metrics[k]), (key, k)
