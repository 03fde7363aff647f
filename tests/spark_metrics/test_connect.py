"""mergeable_metrics.spark.metric_columns over Spark Connect: a Connect DataFrame's own
``groupBy(...).agg(*metric_columns(...))`` gives, per group, the values of compute_metrics run over
the same Connect session (and of scikit-learn); invalid values raise through the Connect client.

One Connect server (a ``local[2]`` subprocess on 127.0.0.1) serves the whole test session: the
``spark_connect`` fixture of tests/spark_metrics/conftest.py, which skips saying why when the
Connect client's packages are missing or the server does not start.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import f1_score, precision_score

from mergeable_metrics import Evaluation
from mergeable_metrics.spark import collect_results, compute_metrics, metric_columns
from tests.spark_metrics.test_metric_columns import METRICS, _frame, _rows, _same

pytestmark = pytest.mark.filterwarnings("ignore::mergeable_metrics.metrics.base.UndefinedMetricWarning")


@pytest.fixture
def connect(spark_connect, monkeypatch):
    """The Connect session, with ``pyspark.sql.functions`` building Connect columns for this test
    (what ``SparkSession.builder.remote(...)`` sets for a Connect application's whole process)."""
    monkeypatch.setenv("SPARK_CONNECT_MODE_ENABLED", "1")
    return spark_connect


def test_group_by_agg_over_connect_equals_compute_metrics(connect):
    pdf = _frame()
    df = connect.createDataFrame(pdf).repartition(3)
    assert type(df).__module__.startswith("pyspark.sql.connect")  # a Connect DataFrame, not a classic one
    cols = metric_columns(METRICS, label_col="y", score_col="p", weight_col="w")
    assert all(type(c).__module__.startswith("pyspark.sql.connect") for c in cols)
    got = _rows(df, cols, ["country", "day"])
    ev = Evaluation(label_col="y", score_col="p", weight_col="w", slices=["country,day"], metrics=METRICS)
    want = collect_results(compute_metrics(df, evaluation=ev), ev)  # the same Connect session
    assert len(got) == 9
    for (country, day), row in got.items():
        ref = want[(("country", country), ("day", int(day)))].metrics
        for k in (m.key for m in ev.plan.metrics):
            assert _same(row[k], ref[k]), (country, day, k, row[k], ref[k])  # integer weights: bit for bit
        part = pdf[(pdf.country == country) & (pdf.day == day)]
        pred = (part.p >= 0.5).astype(int)
        assert row["precision"] == pytest.approx(precision_score(part.y, pred, sample_weight=part.w), rel=1e-12)
        assert row["example_count"] == len(part) and isinstance(row["example_count"], int)


def test_multiclass_and_invalid_values_over_connect(connect):
    from pyspark.sql import functions as F

    pdf = _frame(300)
    df = connect.createDataFrame(pdf)
    cols = metric_columns(["accuracy", "f1@macro"], label_col="k", prediction_col="kp", num_classes=3)
    got = {r["country"]: r.asDict() for r in df.groupBy("country").agg(F.count("*").alias("rows"), *cols).collect()}
    assert sorted(got) == ["DE", "FR", "IT"]
    for country, row in got.items():
        part = pdf[pdf.country == country]
        assert row["rows"] == len(part)
        assert row["accuracy"] == pytest.approx(float(np.mean(part.k == part.kp)), rel=1e-12)
        assert row["f1@macro"] == pytest.approx(f1_score(part.k, part.kp, average="macro"), rel=1e-12)
    pdf.loc[7, "p"] = float("nan")
    with pytest.raises(Exception, match=r"column 'p': invalid value null in (1 row|a row)"):  # pandas' NaN is a null in Spark
        connect.createDataFrame(pdf).groupBy("day").agg(*metric_columns(["precision"], label_col="y", score_col="p")).collect()


def test_jvm_aggregates_over_connect(connect):
    """The UserDefinedAggregateFunction form (jar sent with addArtifacts, registered with registerJavaUDAF):
    the states' bytes equal the Python fold's, and metric_columns' values the local engine's."""
    from mergeable_metrics.spark import finish_metric_states, jvm, metric_state_column

    if jvm.find_javac() is None and jvm.jar_path(build=False) is None:
        pytest.skip(jvm.NO_JDK)
    pdf = _frame(600)
    df = connect.createDataFrame(pdf).repartition(3)
    metrics = ["precision", "recall", "f1", "accuracy", "example_count", "recall@threshold=0.7"]
    ev = Evaluation(label_col="y", score_col="p", metrics=metrics)
    spec, why = jvm.evaluation_spec(ev)
    assert spec is not None, why
    data = df.agg(jvm.evaluation_column(connect, ev, spec).alias("s")).collect()[0]["s"]
    want = ev.fold(ev.zero(), {"y": pdf.y.to_numpy(), "p": pdf.p.to_numpy()}).states(())
    assert jvm.unpack(data, 2) == [s.encode() for s in want]  # byte for byte
    got = {r["country"]: r.asDict() for r in df.groupBy("country").agg(*metric_columns(metrics, label_col="y", score_col="p", engine="jvm")).collect()}
    ref = Evaluation(label_col="y", score_col="p", metrics=metrics, slices=["country"]).evaluate([pdf])
    for country, row in got.items():
        assert all(_same(row[k], ref[(("country", country),)].metrics[k]) for k in metrics), country
    rows = df.groupBy("country").agg(metric_state_column(metrics, label_col="y", score_col="p")).collect()
    for r in finish_metric_states(rows, metrics, label_col="y", score_col="p"):
        part = pdf[pdf.country == r["country"]]
        assert r["f1"] == pytest.approx(f1_score(part.y, part.p >= 0.5), rel=1e-12)


def test_jvm_float_kinds_over_connect(connect):
    """The float kinds (score distributions, probability sums, calibration bins) over Connect: BlockStateUDAF (states Java-serialised
    in the buffer, rows folded in blocks of 8192: 20,000 rows in 2 partitions cross a block) gives the Python
    fold's bytes, and metric_columns the local engine's values (and scikit-learn's)."""
    from sklearn.metrics import average_precision_score, brier_score_loss, log_loss, roc_auc_score

    from mergeable_metrics.spark import jvm

    if jvm.find_javac() is None and jvm.jar_path(build=False) is None:
        pytest.skip(jvm.NO_JDK)
    pdf = _frame(20_000, seed=5)
    pdf["p"] = np.round(pdf.p, 3)  # ties
    df = connect.createDataFrame(pdf).repartition(2)
    metrics = ["roc_auc", "average_precision", "log_loss", "brier_score", "ece"]
    ev = Evaluation(label_col="y", score_col="p", metrics=metrics)
    spec, why = jvm.evaluation_spec(ev)
    assert spec is not None, why
    col = jvm.evaluation_column(connect, ev, spec)
    assert jvm.CONNECT_BLOCK_FUNCTION in str(col)  # not the count kinds' UDAF, not the Arrow path
    data = df.agg(col.alias("s")).collect()[0]["s"]
    want = ev.fold(ev.zero(), {"y": pdf.y.to_numpy(), "p": pdf.p.to_numpy()}).states(())
    assert jvm.unpack(data, len(want)) == [s.encode() for s in want]  # byte for byte
    got = {r["country"]: r.asDict() for r in df.groupBy("country").agg(*metric_columns(metrics, label_col="y", score_col="p", engine="jvm")).collect()}
    ref = Evaluation(label_col="y", score_col="p", metrics=metrics, slices=["country"]).evaluate([pdf])
    assert sorted(got) == ["DE", "FR", "IT"]
    for country, row in got.items():
        assert all(_same(row[k], ref[(("country", country),)].metrics[k]) for k in metrics), (country, row)
        part = pdf[pdf.country == country]
        assert row["roc_auc"] == pytest.approx(roc_auc_score(part.y, part.p), rel=1e-12)
        assert row["average_precision"] == pytest.approx(average_precision_score(part.y, part.p), rel=1e-12)
        assert row["log_loss"] == pytest.approx(log_loss(part.y, part.p), rel=1e-12)
        assert row["brier_score"] == pytest.approx(brier_score_loss(part.y, part.p), rel=1e-12)


@pytest.mark.parametrize("weighted", [False, True])
def test_jvm_regression_over_connect(connect, weighted):
    """Regression over Connect (issue 26, round 5): BlockStateUDAF folds the moments (20,000 rows in 2 partitions
    cross a block) to the Python fold's bytes, weighted too (its example count sums the weights exactly, unlike
    the count-only mm_states); metric_columns finishes r2, mse, mae in Java (mm_metric), equal to the local
    engine bit for bit and to scikit-learn."""
    from sklearn.metrics import mean_absolute_error, mean_squared_error, r2_score

    from mergeable_metrics.spark import jvm

    if jvm.find_javac() is None and jvm.jar_path(build=False) is None:
        pytest.skip(jvm.NO_JDK)
    pdf = _frame(20_000, seed=7)
    pdf["t"] = pdf.p * 10 + np.where(pdf.y == 1, 1e8, 0.0)  # targets around 1e8 for some rows
    pdf["q"] = pdf.t + np.cos(np.arange(len(pdf)))
    pdf["wt"] = np.where(np.arange(len(pdf)) % 3 == 0, 1.0, np.sin(np.arange(len(pdf))) ** 2 * 3)  # 1, fractional, 0
    wc = "wt" if weighted else None
    df = connect.createDataFrame(pdf).repartition(2)
    metrics = ["r2", "mse", "mae", "example_count"]
    ev = Evaluation(label_col="t", score_col="q", metrics=metrics, task="regression", weight_col=wc)
    spec, why = jvm.evaluation_spec(ev)
    assert spec is not None and jvm.connect_refuses(spec) is None, why
    col = jvm.evaluation_column(connect, ev, spec)
    assert jvm.CONNECT_BLOCK_FUNCTION in str(col)
    data = df.agg(col.alias("s")).collect()[0]["s"]
    want = ev.fold(ev.zero(), {c: pdf[c].to_numpy() for c in ("t", "q", "wt")}).states(())
    assert jvm.unpack(data, len(want)) == [s.encode() for s in want]
    cols = metric_columns(metrics, label_col="t", score_col="q", weight_col=wc, task="regression", engine="jvm")
    got = {r["country"]: r.asDict() for r in df.groupBy("country").agg(*cols).collect()}
    ref = Evaluation(label_col="t", score_col="q", metrics=metrics, task="regression", slices=["country"], weight_col=wc).evaluate([pdf])
    for country, row in got.items():
        assert all(_same(row[k], ref[(("country", country),)].metrics[k]) for k in metrics), (country, row)
        part = pdf[pdf.country == country]
        sw = part.wt if weighted else None
        assert row["r2"] == pytest.approx(r2_score(part.t, part.q, sample_weight=sw), rel=1e-9)
        assert row["mse"] == pytest.approx(mean_squared_error(part.t, part.q, sample_weight=sw), rel=1e-12)
        assert row["mae"] == pytest.approx(mean_absolute_error(part.t, part.q, sample_weight=sw), rel=1e-12)


def test_weighted_float_and_count_metrics_over_connect_fold_in_the_jvm(connect):
    """A weight column over Connect: roc_auc, average_precision, log_loss, brier_score and f1 per group from the
    block UDAF (every kind, weights summed exactly), the local engine's values bit for bit on adversarial groups
    (ties, one class, -0.0, zero, subnormal and 1e308 weights). Before, any weighted plan was refused on the JVM
    path over Connect (the count-kinds UDAF counts unit weights only), so weighted roc_auc had no path there."""
    import pandas as pd
    from sklearn.metrics import roc_auc_score

    from mergeable_metrics.spark import jvm
    from tests.spark_metrics.test_jvm_adversarial import _adversarial_frame, _bits

    if jvm.find_javac() is None and jvm.jar_path(build=False) is None:
        pytest.skip(jvm.NO_JDK)
    metrics = ["roc_auc", "average_precision", "log_loss", "brier_score", "f1"]
    huge = pd.DataFrame({"g": "huge", "y": [1, 0, 1, 0], "p": [0.1, 0.2, 0.3, 0.4], "w": [1e308] * 4})
    pdf = pd.concat([_adversarial_frame(), huge], ignore_index=True)
    cols = metric_columns(metrics, label_col="y", score_col="p", weight_col="w", engine="jvm")
    assert jvm.CONNECT_BLOCK_FUNCTION in str(cols[0])
    got = {r["g"]: r.asDict() for r in connect.createDataFrame(pdf).repartition(3).groupBy("g").agg(*cols).collect()}
    local = Evaluation(label_col="y", score_col="p", metrics=metrics, slices=["g"], weight_col="w").evaluate([pdf])
    assert sorted(got) == sorted(pdf.g.unique())
    for g, row in got.items():
        ref = local[(("g", g),)].metrics
        assert [_bits(row[m]) for m in metrics] == [_bits(ref[m]) for m in metrics], (g, row, ref)
    part = pdf[pdf.g == "ties"]
    assert got["ties"]["roc_auc"] == pytest.approx(roc_auc_score(part.y, part.p, sample_weight=part.w), rel=1e-12)


def test_class_scores_over_connect(connect):
    """Multiclass roc_auc / average_precision from an array<double> score column over Connect: RowBlockUDAF
    (pending score rows folded in blocks of 8192: 20,000 rows in 2 partitions cross a block) gives the Python
    fold's bytes, and metric_columns the local engine's values bit for bit (and scikit-learn's)."""
    import pandas as pd
    from sklearn.metrics import roc_auc_score

    from mergeable_metrics.spark import jvm

    if jvm.find_javac() is None and jvm.jar_path(build=False) is None:
        pytest.skip(jvm.NO_JDK)
    rng = np.random.default_rng(3)
    n, k = 20_000, 3
    p = rng.dirichlet(np.ones(k), size=n)
    p[:, :2] = np.round(p[:, :2], 3)  # ties
    p[:, 2] = 1.0 - p[:, 0] - p[:, 1]  # rows summing to 1 within scikit-learn's check
    pdf = pd.DataFrame({"g": rng.choice(["a", "b"], n), "y": rng.integers(0, k, n), "p": list(p), "w": rng.random(n) * 2})
    metrics = ["roc_auc", "average_precision", "roc_auc@multi_class=ovo"]
    df = connect.createDataFrame(pdf).repartition(2)
    for wc in (None, "w"):
        ev = Evaluation(label_col="y", score_col="p", weight_col=wc, metrics=metrics, task="multiclass", num_classes=k)
        spec, why = jvm.evaluation_spec(ev)
        assert spec is not None, why
        col = jvm.evaluation_column(connect, ev, spec)
        assert jvm.CONNECT_ROW_FUNCTION in str(col)
        data = df.agg(col.alias("s")).collect()[0]["s"]
        want = ev.fold(ev.zero(), {"y": pdf.y.to_numpy(), "p": p, "w": pdf.w.to_numpy()}).states(())
        assert jvm.unpack(data, len(want)) == [s.encode() for s in want]  # byte for byte
        cols = metric_columns(metrics, label_col="y", score_col="p", weight_col=wc, task="multiclass", num_classes=k, engine="jvm")
        got = {r["g"]: r.asDict() for r in df.groupBy("g").agg(*cols).collect()}
        ref = Evaluation(label_col="y", score_col="p", weight_col=wc, metrics=metrics, task="multiclass", num_classes=k, slices=["g"]).evaluate([pdf])
        assert sorted(got) == ["a", "b"]
        for g, row in got.items():
            keys = [m.key for m in ev.plan.metrics]
            assert all(_same(row[key], ref[(("g", g),)].metrics[key]) for key in keys), (g, row)
            part = pdf[pdf.g == g]
            want_auc = roc_auc_score(part.y, np.stack(part.p.to_numpy()), multi_class="ovr", sample_weight=None if wc is None else part.w)
            assert row["roc_auc"] == pytest.approx(want_auc, abs=1e-12)


def test_probability_rows_over_connect(connect):
    """Multiclass log_loss, brier_score and calibration from an array<double> of probabilities over Connect:
    RowBlockUDAF checks each row as core does (20,000 rows in 2 partitions cross a block of 8192) and gives the
    Python fold's bytes; metric_columns the local engine's values bit for bit and scikit-learn's log_loss; a row
    that does not sum to 1 raises naming the column and the row's value."""
    import pandas as pd
    from sklearn.metrics import log_loss

    from mergeable_metrics.spark import jvm

    if jvm.find_javac() is None and jvm.jar_path(build=False) is None:
        pytest.skip(jvm.NO_JDK)
    rng = np.random.default_rng(11)
    n, k = 20_000, 3
    p = rng.dirichlet(np.ones(k), size=n)
    pdf = pd.DataFrame({"g": rng.choice(["a", "b"], n), "y": rng.integers(0, k, n), "p": list(p), "w": rng.random(n) * 2})
    metrics = ["log_loss", "brier_score", "ece", "roc_auc"]
    df = connect.createDataFrame(pdf).repartition(2)
    for wc in (None, "w"):
        ev = Evaluation(label_col="y", score_col="p", weight_col=wc, metrics=metrics, task="multiclass", num_classes=k)
        spec, why = jvm.evaluation_spec(ev)
        assert spec is not None and spec.split("\x1f")[1] == str(jvm.PROBABILITY_ROW_MODE), why
        col = jvm.evaluation_column(connect, ev, spec)
        assert jvm.CONNECT_ROW_FUNCTION in str(col)
        data = df.agg(col.alias("s")).collect()[0]["s"]
        want = ev.fold(ev.zero(), {"y": pdf.y.to_numpy(), "p": p, "w": pdf.w.to_numpy()}).states(())
        assert jvm.unpack(data, len(want)) == [s.encode() for s in want]  # byte for byte
        cols = metric_columns(metrics, label_col="y", score_col="p", weight_col=wc, task="multiclass", num_classes=k, engine="jvm")
        got = {r["g"]: r.asDict() for r in df.groupBy("g").agg(*cols).collect()}
        ref = Evaluation(label_col="y", score_col="p", weight_col=wc, metrics=metrics, task="multiclass", num_classes=k, slices=["g"]).evaluate([pdf])
        assert sorted(got) == ["a", "b"]
        for g, row in got.items():
            assert all(_same(row[key], ref[(("g", g),)].metrics[key]) for key in metrics), (g, row)
            part = pdf[pdf.g == g]
            want_ll = log_loss(part.y, np.stack(part.p.to_numpy()), labels=list(range(k)), sample_weight=None if wc is None else part.w)
            assert row["log_loss"] == pytest.approx(want_ll, rel=1e-12)
    bad = connect.createDataFrame(pd.DataFrame({"y": [0, 1], "p": [[0.2, 0.3, 0.5], [0.5, 0.5, 0.5]]}))
    with pytest.raises(Exception, match=r"column 'p': invalid value \[0\.5, 0\.5, 0\.5\] in a row of this group: probability rows must sum to 1 \(got 1\.5\)"):
        bad.agg(*metric_columns(["log_loss"], label_col="y", score_col="p", task="multiclass", num_classes=k, engine="jvm")).collect()


@pytest.mark.parametrize("weighted", [False, True])
def test_compute_metrics_regression_over_connect(connect, weighted, monkeypatch):
    """compute_metrics of a regression plan over Connect (the JVM fold, then core's merge and finish of the slices'
    states on the executors): every slice's values equal the local engine's bit for bit, and scikit-learn's."""
    from sklearn.metrics import mean_squared_error, r2_score

    from mergeable_metrics.spark import jvm

    if jvm.find_javac() is None and jvm.jar_path(build=False) is None:
        pytest.skip(jvm.NO_JDK)
    pdf = _frame(3000, seed=9)
    pdf["t"] = pdf.p * 10 + pdf.y
    pdf["q"] = pdf.t + np.cos(np.arange(len(pdf)))
    wc = "w" if weighted else None
    if weighted:
        pdf["w"] = np.where(np.arange(len(pdf)) % 3 == 0, 1.0, np.sin(np.arange(len(pdf))) ** 2 * 3)
    metrics = ["r2", "mse", "mae", "example_count"]
    ev = Evaluation(label_col="t", score_col="q", metrics=metrics, task="regression", weight_col=wc, slices=["country"])
    from mergeable_metrics.spark import jvm_path

    taken = []
    real = jvm_path.compute_jvm
    monkeypatch.setattr(jvm_path, "compute_jvm", lambda *a: taken.append(1) or real(*a))
    got = collect_results(compute_metrics(connect.createDataFrame(pdf).repartition(3), evaluation=ev), ev)
    assert taken == [1]  # the JVM fold, not the Arrow path
    want = ev.evaluate([pdf])
    assert [s.key for s in got] == [s.key for s in want]
    for a, b in zip(got, want):
        assert a.n == b.n and all(_same(a.metrics[m], b.metrics[m]) for m in metrics), (a.key, a.metrics, b.metrics)
    part = pdf[pdf.country == "DE"]
    sw = part.w if weighted else None
    de = got[(("country", "DE"),)].metrics
    assert de["r2"] == pytest.approx(r2_score(part.t, part.q, sample_weight=sw), rel=1e-9)
    assert de["mse"] == pytest.approx(mean_squared_error(part.t, part.q, sample_weight=sw), rel=1e-12)


def test_regression_terms_and_quantiles_over_connect(connect):
    """msle, the Poisson deviance and Tweedie deviances of powers 1.5 and -0.5 (finished in Java; StrictMath.pow on the
    server, fdlibm's pow in core) and median_absolute_error (regression_terms and absolute_error_distribution
    Java-serialised in mm_block_states' buffer; 20,000 rows in 2 partitions cross a block) over Connect: the Python
    fold's bytes and the local engine's values bit for bit."""
    from sklearn.metrics import mean_squared_log_error, median_absolute_error

    from mergeable_metrics.spark import jvm

    if jvm.find_javac() is None and jvm.jar_path(build=False) is None:
        pytest.skip(jvm.NO_JDK)
    pdf = _frame(20_000, seed=11)
    pdf["t"] = np.round(pdf.p * 10, 1) + 0.5
    pdf["q"] = np.round(pdf.t + np.cos(np.arange(len(pdf))), 1) + 1.5
    metrics = [
        "msle",
        "mean_poisson_deviance",
        "mean_tweedie_deviance@power=1.5",
        "mean_tweedie_deviance@power=-0.5",
        "median_absolute_error",
        "quantile_absolute_error@q=0.9",
    ]
    df = connect.createDataFrame(pdf).repartition(2)
    for wc in (None, "w"):
        ev = Evaluation(label_col="t", score_col="q", metrics=metrics, task="regression", weight_col=wc)
        spec, why = jvm.evaluation_spec(ev)
        assert spec is not None, why
        col = jvm.evaluation_column(connect, ev, spec)
        assert jvm.CONNECT_BLOCK_FUNCTION in str(col)
        data = df.agg(col.alias("s")).collect()[0]["s"]
        want = ev.fold(ev.zero(), {c: pdf[c].to_numpy() for c in ("t", "q", "w")}).states(())
        assert jvm.unpack(data, len(want)) == [s.encode() for s in want]
        cols = metric_columns(metrics, label_col="t", score_col="q", weight_col=wc, task="regression", engine="jvm")
        got = {r["country"]: r.asDict() for r in df.groupBy("country").agg(*cols).collect()}
        ref = Evaluation(label_col="t", score_col="q", metrics=metrics, task="regression", slices=["country"], weight_col=wc).evaluate([pdf])
        keys = [m.key for m in ev.plan.metrics]
        for country, row in got.items():
            assert all(_same(row[k], ref[(("country", country),)].metrics[k]) for k in keys), (country, row)
        part = pdf[pdf.country == "FR"]
        sw = None if wc is None else part.w
        assert got["FR"]["msle"] == pytest.approx(mean_squared_log_error(part.t, part.q, sample_weight=sw), rel=1e-12)
        assert got["FR"]["median_absolute_error"] == pytest.approx(median_absolute_error(part.t, part.q, sample_weight=sw), rel=1e-12)


def test_compute_metrics_binary_over_connect(connect, monkeypatch):
    """compute_metrics of a binary roc_auc / average_precision / f1 / log_loss plan over Connect takes the JVM path
    (the driver merges and finishes the groups' states; the result a local DataFrame): the local engine's values
    bit for bit and scikit-learn's; an invalid label that is a class id (2) gets the Arrow path's message with core's
    two-class hint."""
    from sklearn.metrics import log_loss, roc_auc_score

    from mergeable_metrics.spark import jvm, jvm_path

    if jvm.find_javac() is None and jvm.jar_path(build=False) is None:
        pytest.skip(jvm.NO_JDK)
    pdf = _frame(2000, seed=4)
    pdf["p"] = np.round(pdf.p, 3)  # ties
    metrics = ["roc_auc", "average_precision", "f1", "log_loss", "example_count"]
    ev = Evaluation(label_col="y", score_col="p", weight_col="w", metrics=metrics, slices=["country"])
    taken = []
    real = jvm_path.compute_jvm
    monkeypatch.setattr(jvm_path, "compute_jvm", lambda *a: taken.append(1) or real(*a))
    got = collect_results(compute_metrics(connect.createDataFrame(pdf).repartition(3), evaluation=ev), ev)
    assert taken == [1]  # the JVM fold, not the Arrow path
    want = ev.evaluate([pdf])
    assert [s.key for s in got] == [s.key for s in want]
    for a, b in zip(got, want):
        assert a.n == b.n and all(_same(a.metrics[m], b.metrics[m]) for m in metrics), (a.key, a.metrics, b.metrics)
    part = pdf[pdf.country == "FR"]
    fr = got[(("country", "FR"),)].metrics
    assert fr["roc_auc"] == pytest.approx(roc_auc_score(part.y, part.p, sample_weight=part.w), rel=1e-12)
    assert fr["log_loss"] == pytest.approx(log_loss(part.y, part.p, sample_weight=part.w, labels=[0, 1]), rel=1e-12)
    bad = pdf.iloc[:200].copy()
    bad.loc[bad.index[57], "y"] = 2
    with pytest.raises(
        Exception, match=r"column 'y': invalid value 2(\.0)? at row \d+: labels must be 0 or 1; for 3 classes pass task='multiclass', num_classes=3"
    ):
        collect_results(compute_metrics(connect.createDataFrame(bad).coalesce(1), evaluation=ev), ev)
    assert taken == [1, 1]


def test_multioutput_regression_over_connect(connect):
    """Multioutput regression over Connect (issue 26, helper mo26): RowBlockUDAF folds output rows (the target row's
    length, then the target and prediction rows; 20,000 rows in 2 partitions cross a block of 8192) to the Python
    fold's bytes, weighted too; metric_columns and compute_metrics equal the local engine bit for bit and
    scikit-learn's values; an invalid row raises naming the column."""
    import pandas as pd
    from sklearn.metrics import mean_squared_error, r2_score

    from mergeable_metrics.spark import jvm

    if jvm.find_javac() is None and jvm.jar_path(build=False) is None:
        pytest.skip(jvm.NO_JDK)
    rng = np.random.default_rng(5)
    n, d = 20_000, 3
    y = rng.normal(size=(n, d)) * np.array([1.0, 1e3, 1e-3])
    p = y + rng.normal(size=(n, d))
    pdf = pd.DataFrame({"g": rng.choice(["a", "b"], n), "y": [list(r) for r in y], "p": [list(r) for r in p], "w": rng.choice([0.0, 0.5, 1.0, 1 / 3], n)})
    schema = "g string, y array<double>, p array<double>, w double"
    df = connect.createDataFrame(pdf, schema).repartition(2)
    metrics = ["r2", "mse", "mae", "r2@multioutput=variance_weighted", "example_count"]
    for wc in (None, "w"):
        ev = Evaluation(label_col="y", score_col="p", weight_col=wc, metrics=metrics, task="regression", num_outputs=d)
        spec, why = jvm.evaluation_spec(ev)
        assert spec is not None, why
        col = jvm.evaluation_column(connect, ev, spec)
        assert jvm.CONNECT_ROW_FUNCTION in str(col)
        data = df.agg(col.alias("s")).collect()[0]["s"]
        want = ev.fold(ev.zero(), {"y": y, "p": p, "w": pdf.w.to_numpy()}).states(())
        assert jvm.unpack(data, len(want)) == [s.encode() for s in want]  # byte for byte
        cols = metric_columns(metrics, label_col="y", score_col="p", weight_col=wc, task="regression", num_outputs=d, engine="jvm")
        got = {r["g"]: r.asDict() for r in df.groupBy("g").agg(*cols).collect()}
        sliced = Evaluation(label_col="y", score_col="p", weight_col=wc, metrics=metrics, task="regression", num_outputs=d, slices=["g"])
        ref = sliced.evaluate([pdf])
        assert sorted(got) == ["a", "b"]
        for g, row in got.items():
            assert all(_same(row[k], ref[(("g", g),)].metrics[k]) for k in metrics), (g, row)
            part = pdf[pdf.g == g]
            sw = None if wc is None else part.w.to_numpy()
            assert row["r2"] == pytest.approx(r2_score(np.stack(part.y), np.stack(part.p), sample_weight=sw), rel=1e-9)
            assert row["mse"] == pytest.approx(mean_squared_error(np.stack(part.y), np.stack(part.p), sample_weight=sw), rel=1e-12)
        computed = collect_results(compute_metrics(df, evaluation=sliced), sliced)
        assert [s.key for s in computed] == [s.key for s in ref]
        for a, b in zip(computed, ref):
            assert a.n == b.n and all(_same(a.metrics[m], b.metrics[m]) for m in metrics), (a.key, a.metrics, b.metrics)
    bad = connect.createDataFrame([("a", [1.0, 2.0, 3.0], [1.0, 2.0], 1.0)], schema)
    with pytest.raises(Exception, match=r"column 'p': invalid value a row of 2 entries in a row of this group: multioutput prediction rows"):
        bad.groupBy("g").agg(*metric_columns(["mse"], label_col="y", score_col="p", task="regression", num_outputs=d, engine="jvm")).collect()
