"""Regression terms and error quantiles on the JVM path: ``msle``, ``rmsle``, ``mean_pinball_loss``,
``mean_poisson_deviance``, ``mean_gamma_deviance``, ``mean_tweedie_deviance`` and ``d2_tweedie_score`` of every power
(``regression_terms``, per-row logs and powers fdlibm's on both sides) and ``median_absolute_error`` /
``quantile_absolute_error`` (``absolute_error_distribution``) folded in Java into core's bytes; the values equal
the local engine's bit for bit and scikit-learn's."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.metrics import (
    d2_tweedie_score,
    mean_gamma_deviance,
    mean_pinball_loss,
    mean_poisson_deviance,
    mean_squared_log_error,
    mean_tweedie_deviance,
    median_absolute_error,
)

from mergeable_metrics import Evaluation

pytestmark = pytest.mark.filterwarnings("ignore::mergeable_metrics.metrics.base.UndefinedMetricWarning")

METRICS = [
    "msle",
    "rmsle",
    "mean_pinball_loss@alpha=0.9",
    "mean_poisson_deviance",
    "mean_gamma_deviance",
    "mean_tweedie_deviance@power=0",
    "d2_tweedie_score@power=1",
    "d2_tweedie_score@power=2",
    "median_absolute_error",
    "quantile_absolute_error@q=0.9",
    "r2",
    "example_count",
]


def _bits(x: float) -> int:
    return int(np.float64(x).view(np.uint64))


def _frame(seed: int = 0, n: int = 1200) -> pd.DataFrame:
    """Groups a, b, c of positive targets and predictions (every term's domain; rounded: tied errors); group
    ``neg`` has a target <= -1 and a prediction <= 0 (msle and the deviances undefined, the others defined)."""
    rng = np.random.default_rng(seed)
    y = np.round(rng.gamma(2.0, 3.0, n), 2) + 0.01
    p = np.round(np.abs(y + rng.normal(size=n)), 2) + 0.01
    w = np.where(rng.random(n) < 0.1, 0.0, rng.random(n) * 3)
    neg = pd.DataFrame({"g": "neg", "y": [-2.0, 1.0, 3.0], "p": [1.0, -0.5, 2.0], "w": [1.0, 2.0, 0.5]})
    return pd.concat([pd.DataFrame({"g": rng.choice(["a", "b", "c"], n), "y": y, "p": p, "w": w}), neg], ignore_index=True)


@pytest.mark.parametrize("weighted", [False, True])
def test_metric_columns_terms_and_quantiles_equal_the_local_engine_and_sklearn(jvm_spark, weighted):
    from mergeable_metrics.spark import metric_columns

    pdf = _frame()
    wc = "w" if weighted else None
    q = (
        jvm_spark.createDataFrame(pdf)
        .repartition(3)
        .groupBy("g")
        .agg(*metric_columns(METRICS, label_col="y", score_col="p", weight_col=wc, task="regression", engine="jvm"))
    )
    assert "mm_state_" in q._jdf.queryExecution().executedPlan().toString()  # the JVM fold
    rows = {r["g"]: r.asDict() for r in q.collect()}
    ev = Evaluation(label_col="y", score_col="p", weight_col=wc, metrics=METRICS, task="regression", slices=["g"])
    want = ev.evaluate([pdf])
    keys = [m.key for m in ev.plan.metrics]
    assert sorted(rows) == ["a", "b", "c", "neg"]
    for g, row in rows.items():
        ref = want[(("g", g),)].metrics
        for key in keys:
            assert _bits(row[key]) == _bits(ref[key]), (g, key, row[key], ref[key])
    key = dict(zip(METRICS, keys))  # the canonical keys of the metric strings
    for g in ("a", "b", "c"):
        part, r = pdf[pdf.g == g], rows[g]
        row = {m: r[key[m]] for m in METRICS}
        sw = part.w.to_numpy() if weighted else None
        y, p = part.y.to_numpy(), part.p.to_numpy()
        assert row["msle"] == pytest.approx(mean_squared_log_error(y, p, sample_weight=sw), rel=1e-12)
        assert row["mean_pinball_loss@alpha=0.9"] == pytest.approx(mean_pinball_loss(y, p, alpha=0.9, sample_weight=sw), rel=1e-12)
        assert row["mean_poisson_deviance"] == pytest.approx(mean_poisson_deviance(y, p, sample_weight=sw), rel=1e-12)
        assert row["mean_gamma_deviance"] == pytest.approx(mean_gamma_deviance(y, p, sample_weight=sw), rel=1e-12)
        assert row["mean_tweedie_deviance@power=0"] == pytest.approx(mean_tweedie_deviance(y, p, power=0, sample_weight=sw), rel=1e-12)
        assert row["d2_tweedie_score@power=1"] == pytest.approx(d2_tweedie_score(y, p, power=1, sample_weight=sw), rel=1e-9)
        assert row["d2_tweedie_score@power=2"] == pytest.approx(d2_tweedie_score(y, p, power=2, sample_weight=sw), rel=1e-9)
        assert row["median_absolute_error"] == pytest.approx(median_absolute_error(y, p, sample_weight=sw), rel=1e-12)
    neg = rows["neg"]
    assert np.isnan(neg[key["msle"]]) and np.isnan(neg[key["mean_poisson_deviance"]]) and neg[key["median_absolute_error"]] == 1.5


def _group_bytes(pdf: pd.DataFrame, ev: Evaluation) -> dict:
    out = {}
    for g, part in pdf.groupby("g"):
        acc = ev.fold(ev.zero(), {c: part[c].to_numpy() for c in ("y", "p", "w")})
        out[g] = [s.encode() for s in acc.states(())]
    return out


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(partitions=st.integers(1, 6), weighted=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_terms_and_quantile_state_bytes_equal_the_python_fold_in_any_partitioning(jvm_spark, partitions, weighted, seed):
    from mergeable_metrics.spark import jvm, metric_state_column

    pdf = _frame(seed=seed % 1000, n=500).sample(frac=1.0, random_state=seed % 1000).reset_index(drop=True)
    wc = "w" if weighted else None
    metrics = ["msle", "mean_pinball_loss@alpha=0.25", "mean_gamma_deviance", "median_absolute_error@capacity=16"]
    ev = Evaluation(label_col="y", score_col="p", weight_col=wc, metrics=metrics, task="regression")
    kinds = [cls.kind for cls, _ in ev.plan.state_types]
    assert {"regression_terms", "absolute_error_distribution"} <= set(kinds)
    df = jvm_spark.createDataFrame(pdf).repartition(partitions)
    rows = df.groupBy("g").agg(metric_state_column(metrics, label_col="y", score_col="p", weight_col=wc, task="regression")).collect()
    want = _group_bytes(pdf, ev)
    assert sorted(r["g"] for r in rows) == sorted(want)
    for r in rows:
        assert jvm.unpack(r["mm_states"], len(kinds)) == want[r["g"]], r["g"]


@pytest.mark.parametrize("weight_col", [None, "w"])
def test_evaluate_and_compute_metrics_take_the_jvm_path_and_equal_the_local_engine(jvm_spark, monkeypatch, weight_col):
    from mergeable_metrics.spark import collect_results, compute_metrics, evaluate, jvm_path

    pdf = _frame(n=1500)
    ev = Evaluation(label_col="y", score_col="p", weight_col=weight_col, metrics=METRICS, task="regression", slices=["g"])
    taken = []
    real_e, real_c = jvm_path.evaluate_jvm, jvm_path.compute_jvm
    monkeypatch.setattr(jvm_path, "evaluate_jvm", lambda *a: taken.append("evaluate") or real_e(*a))
    monkeypatch.setattr(jvm_path, "compute_jvm", lambda *a: taken.append("compute") or real_c(*a))
    df = jvm_spark.createDataFrame(pdf).repartition(4)
    got = evaluate(df, evaluation=ev)
    lazy = collect_results(compute_metrics(df, evaluation=ev), ev)
    assert taken == ["evaluate", "compute"]
    want = ev.evaluate([pdf])
    for results in (got, lazy):
        assert [s.key for s in results] == [s.key for s in want]
        for a, b in zip(results, want):
            assert a.n == b.n
            for key in a.metrics:
                assert _bits(a.metrics[key]) == _bits(b.metrics[key]), (a.key, key)


#: Tweedie powers other than 0, 1 and 2: (1, 2) compound Poisson-Gamma, > 2, < 0 (fdlibm's pow on both sides)
POWERS = [1.5, 1.2345, 3.0, 2.5, -1.0, -0.37]
TWEEDIE = [f"mean_tweedie_deviance@power={q}" for q in POWERS] + [f"d2_tweedie_score@power={q}" for q in POWERS] + ["msle"]


@pytest.mark.parametrize("weight_col", [None, "w"])
def test_tweedie_powers_fold_in_the_jvm_and_equal_the_local_engine_and_sklearn(jvm_spark, monkeypatch, weight_col):
    """Every Tweedie power takes the JVM path in ``evaluate``, ``compute_metrics`` and ``metric_columns`` (its
    ``np.power`` replaced by fdlibm's pow in core and ``StrictMath.pow`` in Java): the values equal the local
    engine's bit for bit, per group, and scikit-learn's ``mean_tweedie_deviance`` / ``d2_tweedie_score``."""
    from mergeable_metrics.spark import collect_results, compute_metrics, evaluate, jvm, jvm_path, metric_columns

    pdf = _frame(n=1500)
    ev = Evaluation(label_col="y", score_col="p", weight_col=weight_col, metrics=TWEEDIE, task="regression", slices=["g"])
    spec, why = jvm.evaluation_spec(ev, sliced=True)
    assert spec is not None, why
    taken = []
    real_e, real_c = jvm_path.evaluate_jvm, jvm_path.compute_jvm
    monkeypatch.setattr(jvm_path, "evaluate_jvm", lambda *a: taken.append("evaluate") or real_e(*a))
    monkeypatch.setattr(jvm_path, "compute_jvm", lambda *a: taken.append("compute") or real_c(*a))
    df = jvm_spark.createDataFrame(pdf).repartition(3)
    got = evaluate(df, evaluation=ev)
    lazy = collect_results(compute_metrics(df, evaluation=ev), ev)
    assert taken == ["evaluate", "compute"]
    want = ev.evaluate([pdf])
    keys = [m.key for m in ev.plan.metrics]
    for results in (got, lazy):
        assert [s.key for s in results] == [s.key for s in want]
        for a, b in zip(results, want):
            assert [_bits(a.metrics[k]) for k in keys] == [_bits(b.metrics[k]) for k in keys], a.key
    q = df.groupBy("g").agg(*metric_columns(TWEEDIE, label_col="y", score_col="p", weight_col=weight_col, task="regression", engine="jvm"))
    assert "mm_state_" in q._jdf.queryExecution().executedPlan().toString()  # the JVM fold
    rows = {r["g"]: r.asDict() for r in q.collect()}
    assert sorted(rows) == ["a", "b", "c", "neg"]
    for g, row in rows.items():
        ref = want[(("g", g),)].metrics
        assert [_bits(row[k]) for k in keys] == [_bits(ref[k]) for k in keys], g
    key = dict(zip(TWEEDIE, keys))
    for g in ("a", "b", "c"):
        part = pdf[pdf.g == g]
        y, p, sw = part.y.to_numpy(), part.p.to_numpy(), part.w.to_numpy() if weight_col else None
        for q in POWERS:
            mean, d2 = rows[g][key[f"mean_tweedie_deviance@power={q}"]], rows[g][key[f"d2_tweedie_score@power={q}"]]
            assert mean == pytest.approx(mean_tweedie_deviance(y, p, power=q, sample_weight=sw), rel=1e-12), (g, q)
            assert d2 == pytest.approx(d2_tweedie_score(y, p, power=q, sample_weight=sw), rel=1e-9), (g, q)
    assert np.isnan(rows["neg"][key["mean_tweedie_deviance@power=1.5"]])  # a prediction <= 0: outside the domain


#: the term metrics finished in Java (mergeablemetrics.TermsFinish)
FINISHED = [
    "msle",
    "rmsle",
    "mean_pinball_loss@alpha=0.9",
    "mean_pinball_loss@alpha=0.1",
    "mean_poisson_deviance",
    "mean_gamma_deviance",
    "mean_tweedie_deviance@power=0",
    "mean_tweedie_deviance@power=1.5",
    "mean_tweedie_deviance@power=3",
    "mean_tweedie_deviance@power=-1",
]


def _packed(states) -> bytes:
    return b"".join(len(b).to_bytes(4, "little") + b for b in (s.encode() for s in states))


@settings(max_examples=30, deadline=None)
@given(
    n=st.sampled_from([0, 1, 2, 5, 40, 300]),
    kind=st.sampled_from(["positive", "signed", "huge", "tiny", "ties"]),
    weights=st.sampled_from(["none", "frac", "zero"]),
    seed=st.integers(0, 2**32 - 1),
)
def test_term_finish_in_java_is_core_bit_for_bit(n, kind, weights, seed):
    """``Finish.value`` of the term metrics (through ``jvm_fold``, no Spark) equals core's value of the same state,
    bit for bit: rows outside the domains (NaN), overflowing deviances (inf), zero weights, empty states."""
    from mergeable_metrics.spark.jvm_finish import metric_finish
    from tests.spark_metrics import jvm_fold

    rng = np.random.default_rng(seed)
    if kind == "positive":
        y, p = rng.gamma(2.0, 3.0, n), rng.gamma(2.0, 3.0, n)
    elif kind == "signed":
        y, p = rng.normal(size=n) * 2, rng.normal(size=n) * 2
    elif kind == "huge":
        y, p = rng.choice([1e300, 1e-300, 1.0, 5e-324], n), rng.choice([1e300, 1e-300, 2.0], n)
    elif kind == "tiny":
        y, p = rng.random(n) * 1e-300, rng.random(n) * 1e-300 + 5e-324
    else:
        y, p = rng.choice([0.0, 1.0, 2.0, 3.0], n), rng.choice([0.5, 1.0, 2.0], n)
    data = {"y": y.astype(np.float64), "p": p.astype(np.float64)}
    if weights == "frac":
        data["w"] = rng.choice([0.0, 0.1, 1 / 3, 2.5, 1e-300, 1e10], n)
    elif weights == "zero":
        data["w"] = np.zeros(n)
    ev = Evaluation(label_col="y", score_col="p", weight_col="w" if "w" in data else None, metrics=FINISHED, task="regression")
    states = ev.fold(ev.zero(), data).states(())
    want = ev.finish({(): states}, add_overall=False)[()].metrics
    descs = {m.key: metric_finish(ev, m) for m in ev.plan.metrics}
    assert all(d is not None and d.startswith("term,") for d in descs.values()), descs
    got = jvm_fold.finish([(d, _packed(states)) for d in descs.values()] + [(d, None) for d in descs.values()])
    zero = ev.finish({(): tuple(cls.zero(layout) for cls, layout in ev.plan.state_types)}, add_overall=False)[()].metrics
    k = len(descs)
    for (key, value), empty in zip(zip(descs, got[:k]), got[k:]):
        assert _bits(value) == _bits(want[key]), (key, value, want[key])
        assert _bits(empty) == _bits(zero[key]), (key, empty, zero[key])


@pytest.mark.parametrize("weighted", [False, True])
def test_term_metrics_finish_in_the_jvm_without_python_and_their_sql_names(jvm_spark, weighted):
    """``metric_columns`` of the term metrics has no Python UDF in its plan (folded and finished in the JVM), and the
    SQL names ``mm_msle``, ``mm_rmsle``, ``mm_mean_poisson_deviance``, ``mm_mean_gamma_deviance`` give, per group, the
    local engine's values bit for bit and scikit-learn's."""
    from sklearn.metrics import root_mean_squared_log_error

    from mergeable_metrics.spark import metric_columns, register_sql_functions

    pdf = _frame()
    wc = "w" if weighted else None
    df = jvm_spark.createDataFrame(pdf).repartition(3)
    q = df.groupBy("g").agg(*metric_columns(FINISHED, label_col="y", score_col="p", weight_col=wc, task="regression", engine="jvm"))
    plan = q._jdf.queryExecution().executedPlan().toString()
    assert "EvalPython" not in plan and "ArrowEvalPython" not in plan, plan
    ev = Evaluation(label_col="y", score_col="p", weight_col=wc, metrics=FINISHED, task="regression", slices=["g"])
    keys = [m.key for m in ev.plan.metrics]
    want = ev.evaluate([pdf])
    for r in q.collect():
        ref = want[(("g", r["g"]),)].metrics
        assert [_bits(r[k]) for k in keys] == [_bits(ref[k]) for k in keys], r["g"]
    names = register_sql_functions(jvm_spark)
    assert {"mm_msle", "mm_rmsle", "mm_mean_poisson_deviance", "mm_mean_gamma_deviance"} <= set(names)
    df.createOrReplaceTempView("terms_t")
    w = ", w" if weighted else ""
    query = f"SELECT g, mm_msle(y, p{w}) AS a, mm_rmsle(y, p{w}) AS b, mm_mean_poisson_deviance(y, p{w}) AS c, mm_mean_gamma_deviance(y, p{w}) AS d FROM terms_t GROUP BY g"
    sql_keys = dict(zip("abcd", ["msle", "rmsle", "mean_poisson_deviance", "mean_gamma_deviance"]))
    for r in jvm_spark.sql(query).collect():
        ref = want[(("g", r["g"]),)].metrics
        for col, metric in sql_keys.items():
            assert _bits(r[col]) == _bits(ref[metric]), (r["g"], metric, r[col], ref[metric])
        if r["g"] == "neg":
            assert np.isnan(r["a"]) and np.isnan(r["c"])  # a target <= -1, a prediction <= 0: outside the domains
            continue
        part = pdf[pdf.g == r["g"]]
        sw = part.w if weighted else None
        assert r["b"] == pytest.approx(root_mean_squared_log_error(part.y, part.p, sample_weight=sw), rel=1e-12)
        assert r["c"] == pytest.approx(mean_poisson_deviance(part.y, part.p, sample_weight=sw), rel=1e-12)


@pytest.mark.parametrize("power", [1.5, 3, -0.5])
def test_the_sql_name_of_a_tweedie_deviance_of_any_power(jvm_spark, power):
    """``register_sql_functions(spark, tweedie_power=P)`` adds ``mm_mean_tweedie_deviance(target, prediction[,
    weight])``: per group the local engine's value bit for bit and scikit-learn's; a power in (0, 1) is refused."""
    from sklearn.metrics import mean_tweedie_deviance

    from mergeable_metrics.spark import register_sql_functions

    rng = np.random.default_rng(11)
    n = 600
    pdf = pd.DataFrame({"g": rng.choice(["a", "b"], n), "y": rng.gamma(2.0, 1.5, n), "p": rng.gamma(2.0, 1.5, n) + 0.1, "w": rng.random(n)})
    assert "mm_mean_tweedie_deviance" in register_sql_functions(jvm_spark, tweedie_power=power)
    jvm_spark.createDataFrame(pdf).repartition(3).createOrReplaceTempView("tweedie_t")
    rows = jvm_spark.sql("SELECT g, mm_mean_tweedie_deviance(y, p) AS d, mm_mean_tweedie_deviance(y, p, w) AS dw FROM tweedie_t GROUP BY g").collect()
    metric = f"mean_tweedie_deviance@power={power}"
    ev = Evaluation(label_col="y", score_col="p", metrics=[metric], task="regression", slices=["g"])
    evw = Evaluation(label_col="y", score_col="p", weight_col="w", metrics=[metric], task="regression", slices=["g"])
    want, wantw = ev.evaluate([pdf]), evw.evaluate([pdf])
    key = ev.plan.metrics[0].key
    assert sorted(r["g"] for r in rows) == ["a", "b"]
    for r in rows:
        part = pdf[pdf.g == r["g"]]
        assert _bits(r["d"]) == _bits(want[(("g", r["g"]),)].metrics[key])
        assert _bits(r["dw"]) == _bits(wantw[(("g", r["g"]),)].metrics[key])
        assert r["d"] == pytest.approx(mean_tweedie_deviance(part.y, part.p, power=power), rel=1e-12)
        assert r["dw"] == pytest.approx(mean_tweedie_deviance(part.y, part.p, sample_weight=part.w, power=power), rel=1e-12)
    with pytest.raises(ValueError, match=r"tweedie_power must be a number <= 0 or >= 1"):
        register_sql_functions(jvm_spark, tweedie_power=0.5)
