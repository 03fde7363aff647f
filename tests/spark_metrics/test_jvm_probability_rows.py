"""Multiclass ``log_loss``, ``brier_score`` and calibration from an ``array<double>`` column of class probabilities on
the JVM path (issue 26): the Java fold checks each row as core does (finite entries, each in [0, 1], the row's numpy
sum within ``PROBABILITY_SUM_TOL * K`` of 1: ``mergeablemetrics.Spec.checkProbabilities``), the same decisions bit for
bit, naming the column and the value as core's message does; the states are the bytes of core's fold of the same rows
(Arrow arrays, as the Arrow path reads them) in any partitioning, and the values core's and scikit-learn's."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from sklearn.metrics import log_loss

from mergeable_metrics import Evaluation
from tests.spark_metrics import jvm_fold

pytestmark = pytest.mark.filterwarnings("ignore::mergeable_metrics.metrics.base.UndefinedMetricWarning")

METRICS = ["log_loss", "brier_score", "ece", "example_count"]


def _bits(x: float) -> int:
    return int(np.float64(x).view(np.uint64))


def _ev(k: int, weighted: bool, metrics: list[str] = METRICS) -> Evaluation:
    return Evaluation(label_col="y", score_col="p", weight_col="w" if weighted else None, metrics=metrics, task="multiclass", num_classes=k)


def _pack(states: list[bytes]) -> str:
    return b"".join(len(b).to_bytes(4, "little") + b for b in states).hex()


def _python_fold(ev: Evaluation, rows: list) -> tuple[str | None, str | None]:
    """``(packed states hex, None)`` of core's fold of ``rows`` ``[(partition, label, weight, score row)]`` read as
    the Arrow path reads a Spark batch (pyarrow double and list<double> arrays, nulls included), or ``(None, message)``."""
    batch = {
        "y": pa.array([r[1] for r in rows], pa.float64()),
        "p": pa.array([r[3] for r in rows], pa.list_(pa.float64())),
    }
    if ev.weight_col is not None:
        batch["w"] = pa.array([r[2] for r in rows], pa.float64())
    try:
        acc = ev.fold(ev.zero(), batch)
    except (ValueError, TypeError) as e:
        return None, str(e)
    return _pack([s.encode() for s in acc.states(())]), None


def _boundary_rows(rng: np.random.Generator, k: int, count: int) -> list[list[float]]:
    """Rows whose numpy sum lies within a few ulps of ``1 +- PROBABILITY_SUM_TOL * K`` (both sides): one entry moved
    by about the tolerance, then ulp by ulp."""
    out = []
    tol = 1e-6 * k
    for _ in range(count):
        p = rng.dirichlet(np.ones(k))
        j = int(np.argmax(p))
        p[j] += tol * (1 if rng.random() < 0.5 else -1) + rng.normal(0, 1e-15)
        for step in range(-3, 4):
            q = p.copy()
            q[j] = p[j] + step * np.spacing(p[j])
            out.append(q.tolist())
    return out


def _split_rows(rng: np.random.Generator, ks: range) -> list[list[float]]:
    """Rows whose numpy sum (pairwise) and a left-to-right sum fall on different sides of the tolerance: a JVM
    check with another summation order than core's would decide them otherwise."""
    out = []
    for _ in range(4000):
        k = int(rng.choice(ks))
        p = rng.dirichlet(np.full(k, 0.5)) * (1 + 1e-6 * k * rng.choice([-1.0, 1.0]))
        j = int(np.argmax(p))
        for step in range(-40, 41):
            q = p.copy()
            q[j] = p[j] + step * np.spacing(p[j])
            seq = 0.0
            for x in q:
                seq += x
            tol = 1e-6 * k
            if (abs(float(q.sum()) - 1) > tol) != (abs(seq - 1) > tol):
                out.append(q.tolist())
                break
        if len(out) >= 12:
            break
    return out


def _random_row(rng: np.random.Generator, k: int, boundary: list) -> tuple[float | None, float | None, list | None]:
    """One row ``(label, weight, score row)``: mostly valid, else one of the ways a row is invalid."""
    p = rng.dirichlet(np.ones(k)).tolist()
    y: float | None = float(rng.integers(0, k))
    w: float | None = float(rng.choice([1.0, 0.0, 2.5, 0.1, 1e-300, 3.0]))
    kind = rng.choice(
        ["ok"] * 10
        + ["boundary"] * 6
        + ["nan", "inf", "neg", "big", "len", "nullrow", "nullentry", "label", "nulllabel", "weight", "nullweight", "negzero", "one", "round"]
    )
    if kind == "boundary":
        p = list(boundary[int(rng.integers(0, len(boundary)))])
        if len(p) != k:
            p = rng.dirichlet(np.ones(k)).tolist()
    elif kind == "nan":
        p[int(rng.integers(0, k))] = math.nan
    elif kind == "inf":
        p[int(rng.integers(0, k))] = math.inf
    elif kind == "neg":
        i = int(rng.integers(0, k))
        p[i] = -p[i] - 1e-9
    elif kind == "big":
        p[int(rng.integers(0, k))] = 1.0 + float(rng.choice([1e-16, 2.3e-16, 0.5]))
    elif kind == "len":
        p = p + [0.0] if rng.random() < 0.5 else p[:-1]
    elif kind == "nullrow":
        p = None
    elif kind == "nullentry":
        p[int(rng.integers(0, k))] = None
    elif kind == "label":
        y = float(rng.choice([k, -1, 0.5, math.nan]))
    elif kind == "nulllabel":
        y = None
    elif kind == "weight":
        w = float(rng.choice([-1.0, math.nan, math.inf]))
    elif kind == "nullweight":
        w = None
    elif kind == "negzero":
        p = [0.0] * k
        p[int(y)] = 1.0
        p[(int(y) + 1) % k] = -0.0
    elif kind == "one":
        p = [0.0] * k
        p[int(rng.integers(0, k))] = 1.0
    elif kind == "round":
        p = np.round(np.asarray(p), 2).tolist()  # off 1 by up to K * 0.005: most refused
    return y, w, p


@pytest.mark.parametrize("seed", range(3))
def test_probability_row_checks_and_bytes_equal_core_bit_for_bit(seed):
    """Random groups of rows (valid ones, sums at 1 +- the tolerance within a few ulps, NaN, inf, negative, > 1,
    wrong length, null rows, entries, labels and weights, bad weights) in 1-3 partitions: the JVM fold refuses a
    group exactly when core's fold of the same Arrow rows does, and otherwise writes core's bytes."""
    rng = np.random.default_rng(seed)
    ks = [2, 3, 5, 9, 17]
    boundary = {k: _boundary_rows(rng, k, 6) for k in ks}
    cases, evs = [], []
    for _ in range(160):
        k = int(rng.choice(ks))
        weighted = bool(rng.random() < 0.5)
        ev = _ev(k, weighted)
        spec, why = jvm_spec(ev)
        nparts = int(rng.integers(1, 4))
        rows = []
        for _ in range(int(rng.integers(1, 7))):
            y, w, p = _random_row(rng, k, boundary[k])
            rows.append((int(rng.integers(0, nparts)), y, w if weighted else None, p))
        cases.append((spec, nparts, list(rng.permutation(nparts)), rows))
        evs.append(ev)
    got = jvm_fold.fold_rows(cases)
    refused = 0
    for (_, _, _, rows), ev, line in zip(cases, evs, got):
        want, message = _python_fold(ev, rows)
        if want is None:
            refused += 1
            assert line.startswith("ERR "), (rows, message, line)
            assert "column '" in line, line
        else:
            assert line == want, (rows, line)
    assert 30 < refused < 130  # both kinds of groups are tested


def jvm_spec(ev: Evaluation) -> tuple[str, str]:
    from mergeable_metrics.spark import jvm

    spec, why = jvm.evaluation_spec(ev)
    assert spec is not None, why
    assert spec.split("\x1f")[1] == str(jvm.PROBABILITY_ROW_MODE)
    return spec, why


def _core_message(ev: Evaluation, row: list) -> str | None:
    return _python_fold(ev, [(0, 0.0, 1.0, row)])[1]


def test_rows_at_the_tolerance_are_decided_with_numpy_s_pairwise_sum():
    """Rows whose pairwise (numpy) and left-to-right sums fall on different sides of ``1e-6 * K``, and rows within
    a few ulps of the bound on both sides: each decided as core decides it, one row per group."""
    rng = np.random.default_rng(7)
    split = _split_rows(rng, range(9, 40))
    assert len(split) >= 4  # such rows exist: a left-to-right sum in Java would fail this test
    rows = split + [r for k in (2, 3, 9, 17, 130) for r in _boundary_rows(rng, k, 8)]
    cases, evs = [], []
    for r in rows:
        ev = _ev(len(r), False, ["log_loss"])
        cases.append((jvm_spec(ev)[0], 1, [0], [(0, 0.0, None, r)]))
        evs.append(ev)
    got = jvm_fold.fold_rows(cases)
    decided = {True: 0, False: 0}
    for r, ev, line in zip(rows, evs, got):
        message = _core_message(ev, r)
        decided[message is None] += 1
        assert line.startswith("ERR ") == (message is not None), (r, message, line)
        if message is not None:
            _same_message(message, line)
    assert decided[True] > 10 and decided[False] > 10


def _same_message(core: str, java: str) -> None:
    """The JVM message names the column, the value (as core shows it: the rounded row, or the entry) and core's rule."""
    m = re.match(r"column '(\w+)': invalid value (.*) at row 0(?:, entry (\d+))?: (.*)$", core)
    assert m, core
    column, value, entry, rule = m.groups()
    shown = value if entry is None else f"{value} (entry {entry})"
    assert java.startswith(f"ERR column '{column}': invalid value {shown} in a row of this group: {rule} ("), (core, java)


@pytest.mark.parametrize(
    "row",
    [
        [0.2, 0.3, 0.6],
        [0.1, 0.2, 0.3],
        [0.2, -0.1, 0.9],
        [1.5, 0.0, -0.5],
        [0.2, 1.0000000000000002, -0.2],
        [1e-7, 0.5, 0.4999],
        [0.123456789, 0.2, 0.7],
        [1 / 3, 1 / 3, 1 / 3 + 2e-5],
        [0.0, 0.0, 0.0],
        [5e-324, 0.5, 0.6],
    ],
)
def test_messages_name_the_value_as_core_does(row):
    ev = _ev(3, False, ["log_loss"])
    message = _core_message(ev, row)
    (line,) = jvm_fold.fold_rows([(jvm_spec(ev)[0], 1, [0], [(0, 0.0, None, row)])])
    if message is None:
        assert not line.startswith("ERR"), line
    else:
        _same_message(message, line)


def test_wide_rows_are_named_by_their_first_entries():
    """Core names a row of more than 8 entries by its first 7 (rounded) and its length."""
    rng = np.random.default_rng(1)
    k = 12
    p = rng.dirichlet(np.ones(k)) * 1.01
    ev = _ev(k, False, ["log_loss"])
    message = _core_message(ev, p.tolist())
    assert message is not None and "... (12 entries)" in message
    (line,) = jvm_fold.fold_rows([(jvm_spec(ev)[0], 1, [0], [(0, 0.0, None, p.tolist())])])
    _same_message(message, line)


@pytest.mark.parametrize("metrics", [["roc_auc"], ["log_loss", "roc_auc"]])
def test_the_probabilities_format_is_checked_as_core_checks_it(metrics):
    """``score_format="probabilities"``: core checks the rows even for ``roc_auc`` alone, and names a non-finite
    entry by the format's rule; the JVM spec does the same."""
    ev = Evaluation(label_col="y", score_col="p", metrics=metrics, task="multiclass", num_classes=3, score_format="probabilities")
    spec, _ = jvm_spec(ev)
    rows = [[0.2, 0.3, 0.5], [0.1, 0.2, 0.8], [0.1, math.nan, 0.9], [0.2, -0.3, 1.1]]
    got = jvm_fold.fold_rows([(spec, 1, [0], [(0, 0.0, None, r)]) for r in rows])
    assert not got[0].startswith("ERR")
    assert got[0] == _python_fold(ev, [(0, 0.0, None, rows[0])])[0]
    for r, line in zip(rows[1:], got[1:]):
        message = _core_message(ev, r)
        assert message is not None
        _same_message(message, line)
    assert "probabilities must be finite" in got[2]


def test_the_java_tolerance_is_core_s():
    from mergeable_metrics.inputs.formats import PROBABILITY_SUM_TOL

    source = (jvm_fold.ROOT / "spark_metrics" / "java" / "mergeablemetrics" / "Spec.java").read_text()
    (java,) = re.findall(r"PROBABILITY_SUM_TOL = ([0-9.eE+-]+);", source)
    assert float(java) == PROBABILITY_SUM_TOL


def test_plans_reading_probability_rows_take_the_jvm_path():
    from mergeable_metrics.spark import jvm, jvm_finish

    ev = _ev(4, True, ["log_loss", "brier_score", "brier_score@scale_by_half=true", "ece@macro", "roc_auc", "log_loss@eps=0.01"])
    spec, why = jvm.evaluation_spec(ev)
    assert spec is not None, why
    assert sorted(jvm.spec_kinds(spec)) == ["calibration_bins", "class_score_distribution", "example_count", "probability_sums"]
    finished = {m.key: jvm_finish.metric_finish(ev, m) for m in ev.plan.metrics}
    assert finished["log_loss"] and finished["brier_score"] and finished["log_loss@eps=0.01"] and finished["brier_score@scale_by_half=true"]
    assert finished["ece@macro"] is None and finished["roc_auc"] is None  # core's finish (a Python UDF in metric_columns)
    # another input format keeps the Arrow path
    other = Evaluation(label_col="y", score_col="p", metrics=["log_loss"], task="multiclass", num_classes=3, score_format="logits")
    assert jvm.evaluation_spec(other)[0] is None
    # class scores without probabilities: no probability checks
    scores = Evaluation(label_col="y", score_col="p", metrics=["roc_auc"], task="multiclass", num_classes=3)
    assert jvm.evaluation_spec(scores)[0].split("\x1f")[1] == str(jvm.SCORE_ROW_MODE)


# -- on Spark ---------------------------------------------------------------------------------------------------------
K = 4


def _frame(seed: int = 0, n: int = 1200) -> pd.DataFrame:
    """Groups a, b, c of random probability rows (some rounded to 3 decimals and renormalised in the last entry, so
    rows sum to 1 within the tolerance; some with exact zeros and ones), weights with zeros."""
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(K, 0.7), size=n)
    p[: n // 3, : K - 1] = np.round(p[: n // 3, : K - 1], 3)
    p[: n // 3, K - 1] = np.clip(1.0 - p[: n // 3, : K - 1].sum(axis=1), 0.0, 1.0)
    p[n // 3 : n // 3 + 20] = np.eye(K)[rng.integers(0, K, 20)]
    y = rng.integers(0, K, n)
    w = np.where(rng.random(n) < 0.1, 0.0, rng.random(n) * 3)
    return pd.DataFrame({"g": rng.choice(["a", "b", "c"], n), "y": y, "p": list(p), "w": w})


@pytest.mark.parametrize("weighted", [False, True])
def test_metric_columns_equal_the_local_engine_and_sklearn(jvm_spark, weighted):
    from sklearn.metrics import brier_score_loss

    from mergeable_metrics.spark import metric_columns

    pdf = _frame()
    df = jvm_spark.createDataFrame(pdf).repartition(3)
    wc = "w" if weighted else None
    metrics = METRICS + ["roc_auc", "log_loss@eps=0.001"]
    q = df.groupBy("g").agg(*metric_columns(metrics, label_col="y", score_col="p", weight_col=wc, task="multiclass", num_classes=K, engine="jvm"))
    assert "mm_state_" in q._jdf.queryExecution().executedPlan().toString()
    rows = {r["g"]: r.asDict() for r in q.collect()}
    ev = Evaluation(label_col="y", score_col="p", weight_col=wc, metrics=metrics, task="multiclass", num_classes=K, slices=["g"])
    want = ev.evaluate([pdf])
    assert sorted(rows) == ["a", "b", "c"]
    for g, row in rows.items():
        ref = want[(("g", g),)].metrics
        for key in [m.key for m in ev.plan.metrics]:
            assert _bits(row[key]) == _bits(ref[key]), (g, key, row[key], ref[key])
        part = pdf[pdf.g == g]
        s, sw = np.stack(part.p.to_numpy()), (part.w.to_numpy() if weighted else None)
        assert row["log_loss"] == pytest.approx(log_loss(part.y, s, labels=list(range(K)), sample_weight=sw), rel=1e-12)
        assert row["brier_score"] == pytest.approx(brier_score_loss(part.y, s, labels=list(range(K)), sample_weight=sw), rel=1e-12)


def test_log_loss_and_brier_finish_in_the_jvm(jvm_spark):
    """Multiclass log_loss and brier_score alone: folded and finished in Java (no Python UDF in the plan)."""
    from mergeable_metrics.spark import metric_columns

    pdf = _frame(n=300)
    q = (
        jvm_spark.createDataFrame(pdf)
        .groupBy("g")
        .agg(*metric_columns(["log_loss", "brier_score"], label_col="y", score_col="p", task="multiclass", num_classes=K))
    )
    plan = q._jdf.queryExecution().executedPlan().toString()
    assert "mm_state_" in plan and "BatchEvalPython" not in plan and "ArrowEvalPython" not in plan, plan
    want = Evaluation(label_col="y", score_col="p", metrics=["log_loss", "brier_score"], task="multiclass", num_classes=K, slices=["g"]).evaluate([pdf])
    for r in q.collect():
        for key in ("log_loss", "brier_score"):
            assert _bits(r[key]) == _bits(want[(("g", r["g"]),)].metrics[key])


def test_state_bytes_equal_the_python_fold_in_any_partitioning(jvm_spark):
    from mergeable_metrics.spark import jvm, metric_state_column

    pdf = _frame(seed=3, n=500)
    for partitions, wc in ((1, None), (4, "w"), (7, "w")):
        ev = _ev(K, wc is not None)
        df = jvm_spark.createDataFrame(pdf.sample(frac=1.0, random_state=partitions)).repartition(partitions)
        rows = df.groupBy("g").agg(metric_state_column(METRICS, label_col="y", score_col="p", weight_col=wc, task="multiclass", num_classes=K)).collect()
        for r in rows:
            part = pdf[pdf.g == r["g"]]
            acc = ev.fold(ev.zero(), {"y": part.y.to_numpy(), "p": np.stack(part.p.to_numpy()), "w": part.w.to_numpy()})
            assert jvm.unpack(r["mm_states"], len(ev.plan.state_types)) == [s.encode() for s in acc.states(())], (partitions, r["g"])


@pytest.mark.parametrize(
    "row, match",
    [
        ([0.2, 0.3, 0.4, 0.2], r"column 'p': invalid value \[0\.2, 0\.3, 0\.4, 0\.2\] in a row of this group: probability rows must sum to 1 \(got 1\.1\)"),
        ([0.2, -0.1, 0.4, 0.5], r"column 'p': invalid value -0\.1 \(entry 1\) in a row of this group: probabilities must be in \[0, 1\]"),
        ([0.2, float("nan"), 0.4, 0.4], r"column 'p': invalid value nan \(entry 1\) in a row of this group: scores must be finite"),
    ],
)
def test_invalid_probability_rows_raise_naming_the_column_and_value(jvm_spark, row, match):
    from pyspark.sql import types as T

    from mergeable_metrics.spark import metric_columns

    schema = T.StructType([T.StructField("y", T.LongType()), T.StructField("p", T.ArrayType(T.DoubleType()))])
    bad = jvm_spark.createDataFrame([(0, [0.25, 0.25, 0.25, 0.25]), (1, row)], schema)
    with pytest.raises(Exception, match=match):
        bad.agg(*metric_columns(["log_loss"], label_col="y", score_col="p", task="multiclass", num_classes=K, engine="jvm")).collect()


def test_evaluate_takes_the_jvm_path_and_an_invalid_row_is_named_by_the_arrow_path(jvm_spark, monkeypatch):
    from mergeable_metrics.spark import evaluate, jvm_path

    pdf = _frame(n=900)
    ev = Evaluation(label_col="y", score_col="p", weight_col="w", metrics=METRICS + ["roc_auc"], task="multiclass", num_classes=K, slices=["g"])
    taken = []
    real = jvm_path.evaluate_jvm
    monkeypatch.setattr(jvm_path, "evaluate_jvm", lambda *a: taken.append(1) or real(*a))
    got = evaluate(jvm_spark.createDataFrame(pdf).repartition(3), evaluation=ev)
    assert taken == [1]
    want = ev.evaluate([pdf])
    assert [s.key for s in got] == [s.key for s in want]
    for a, b in zip(got, want):
        for key in [m.key for m in ev.plan.metrics]:
            assert _bits(a.metrics[key]) == _bits(b.metrics[key]), (a.key, key)
    bad = pdf.copy()
    bad.at[5, "p"] = [0.5, 0.5, 0.5, 0.0]
    with pytest.raises(Exception, match=r"column 'p': invalid value \[0\.5, 0\.5, 0\.5, 0\.0\] at row \d+: probability rows must sum to 1 \(got 1\.5\)"):
        evaluate(jvm_spark.createDataFrame(bad).coalesce(1), evaluation=ev)
    assert len(taken) == 2  # the JVM path refused the row; the Arrow path named it


def test_multiclass_sql_names_equal_core_and_sklearn(jvm_spark):
    """``register_sql_functions(spark, num_classes=K)``: the multiclass SQL names, folded and finished in the JVM, equal
    core's values bit for bit per group (weighted too) and scikit-learn's; an invalid probability row raises naming the
    argument."""
    from sklearn.metrics import accuracy_score, balanced_accuracy_score, brier_score_loss, f1_score, precision_score, recall_score

    from mergeable_metrics.spark import register_sql_functions
    from mergeable_metrics.spark.jvm_finish import SQL_MULTICLASS_FUNCTIONS

    names = register_sql_functions(jvm_spark, num_classes=K)
    assert set(SQL_MULTICLASS_FUNCTIONS) <= set(names)
    pdf = _frame(seed=5, n=600)
    rng = np.random.default_rng(5)
    pdf["pred"] = rng.integers(0, K, len(pdf))
    pdf.loc[pdf.index[:200], "pred"] = pdf.y[:200]  # better than chance
    jvm_spark.createDataFrame(pdf).createOrReplaceTempView("mm_mc_t")
    calls = [f"{name}(y, {'p' if reads == 'probabilities' else 'pred'}{{w}}) AS {name}" for name, (_, reads) in SQL_MULTICLASS_FUNCTIONS.items()]
    for wc in (None, "w"):
        query = f"SELECT g, {', '.join(c.format(w=', w' if wc else '') for c in calls)} FROM mm_mc_t GROUP BY g"
        rows = jvm_spark.sql(query).collect()
        assert sorted(r["g"] for r in rows) == ["a", "b", "c"]
        for r in rows:
            part = pdf[pdf.g == r["g"]]
            sw = None if wc is None else part.w.to_numpy()
            for name, (metric, reads) in SQL_MULTICLASS_FUNCTIONS.items():
                column = {"score_col": "p"} if reads == "probabilities" else {"prediction_col": "pred"}
                ev = Evaluation(label_col="y", weight_col=wc, metrics=[metric], task="multiclass", num_classes=K, **column)
                want = ev.evaluate([part]).overall.metrics[ev.plan.metrics[0].key]
                assert _bits(r[name]) == _bits(want), (name, wc, r[name], want)
            s = np.stack(part.p.to_numpy())
            labels = list(range(K))
            assert r["mm_log_loss_multiclass"] == pytest.approx(log_loss(part.y, s, labels=labels, sample_weight=sw), rel=1e-12)
            assert r["mm_brier_score_multiclass"] == pytest.approx(brier_score_loss(part.y, s, labels=labels, sample_weight=sw), rel=1e-12)
            assert r["mm_accuracy_multiclass"] == pytest.approx(accuracy_score(part.y, part.pred, sample_weight=sw), rel=1e-12)
            assert r["mm_balanced_accuracy"] == pytest.approx(balanced_accuracy_score(part.y, part.pred, sample_weight=sw), rel=1e-12)
            for avg in ("macro", "micro", "weighted"):
                assert r[f"mm_f1_{avg}"] == pytest.approx(f1_score(part.y, part.pred, average=avg, sample_weight=sw), rel=1e-12)
            assert r["mm_precision_macro"] == pytest.approx(precision_score(part.y, part.pred, average="macro", sample_weight=sw), rel=1e-12)
            assert r["mm_recall_macro"] == pytest.approx(recall_score(part.y, part.pred, average="macro", sample_weight=sw), rel=1e-12)
    with pytest.raises(
        Exception, match=r"column 'score': invalid value \[0\.5, 0\.5, 0\.5, 0\.5\] in a row of this group: probability rows must sum to 1 \(got 2\)"
    ):
        jvm_spark.sql("SELECT mm_log_loss_multiclass(y, p) FROM VALUES (0, array(0.5D, 0.5D, 0.5D, 0.5D)) AS t(y, p)").collect()
    with pytest.raises(ValueError, match="num_classes must be an integer >= 2"):
        register_sql_functions(jvm_spark, num_classes=1)
