"""Every registered metric by name through the CLI's local engine (issue 3).

One small Parquet file per task (binary, multiclass with a list-valued score column, multilabel,
regression, each with a measure column for ``mean_measure``); the CLI must accept every metric of
the task by its name and write the same values as ``mergeable_metrics.Evaluation`` in process.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mergeable_metrics import Evaluation
from mergeable_metrics.metrics.registry_table import metric_classes
from mergeable_metrics.pipelines.evaluate import main
from tests._helpers import close

N = 240


def _metric_string(cls) -> str:
    """The metric's name, with its positional parameter when it needs one."""
    needs_param = any(v is None and k == cls.positional and k not in ("average", "weights") for k, v in cls.params.items())
    return f"{cls.name}@{cls.positional}=0.5" if needs_param else cls.name


def _metrics_for(task: str) -> list[str]:
    # the retrieval metrics need query ids and take no weights: tests/pipelines/test_retrieval_cli.py
    return [_metric_string(c) for c in metric_classes() if task in c.tasks and c.__module__ != "mergeable_metrics.metrics.retrieval"]


def _table(task: str) -> tuple[pa.Table, list[str], dict]:
    rng = np.random.default_rng(abs(hash(task)) % 2**32)
    g = rng.choice(["a", "b", "c"], N)
    loss = rng.random(N)
    w = rng.integers(0, 4, N).astype(float)
    if task == "binary":
        y = rng.integers(0, 2, N)
        s = np.round(np.clip(0.3 * y + 0.7 * rng.random(N), 0, 1), 3)
        return pa.table({"y": y, "s": s, "g": g, "loss": loss, "w": w}), ["--label", "y", "--score", "s"], dict(label_col="y", score_col="s")
    if task == "multiclass":
        y = rng.integers(0, 3, N)
        p = rng.dirichlet(np.ones(3), N)
        col = pa.array(p.tolist(), type=pa.list_(pa.float64(), 3))
        t = pa.table({"y": y, "p": col, "g": g, "loss": loss, "w": w})
        return t, ["--label", "y", "--score", "p", "--num-classes", "3"], dict(label_col="y", score_col="p", num_classes=3)
    if task == "multilabel":
        Y = rng.integers(0, 2, (N, 3))
        S = np.round(rng.random((N, 3)), 3)
        t = pa.table({"y": pa.array(Y.tolist()), "s": pa.array(S.tolist()), "g": g, "loss": loss, "w": w})
        return (
            t,
            ["--label", "y", "--score", "s", "--task", "multilabel", "--num-classes", "3"],
            dict(label_col="y", score_col="s", task="multilabel", num_classes=3),
        )
    t_ = rng.normal(10, 3, N)
    q = t_ + rng.normal(0, 1, N)
    return (
        pa.table({"t": t_, "q": q, "g": g, "loss": loss, "w": w}),
        ["--label", "t", "--prediction", "q", "--task", "regression"],
        dict(label_col="t", prediction_col="q", task="regression"),
    )


@pytest.mark.parametrize("task", ["binary", "multiclass", "multilabel", "regression"])
def test_every_metric_of_the_task_by_name_through_the_cli(tmp_path, task):
    table, flags, kwargs = _table(task)
    src = tmp_path / f"{task}.parquet"
    pq.write_table(table, src)
    metrics = _metrics_for(task)
    out = tmp_path / "out"
    argv = ["--input", str(src), *flags, "--measure", "loss", "--weight", "w", "--slice", "g", "--metrics", ",".join(metrics),
            "--engine", "local", "--output", str(out), "--quiet", "--batch-size", "64"]  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(argv) == 0
        ev = Evaluation(**kwargs, measure_col="loss", weight_col="w", slices=["g"], metrics=metrics)
        want = ev.evaluate(table.to_batches(max_chunksize=100))
    doc = json.loads((out / "metrics.json").read_text())
    assert len(doc["slices"]) == 4 and doc["slices"][0]["slice"] == {}
    names = {k: v for k, v in doc["config"].get("metric_names", {}).items() if k != v and v in ev.plan.keys}  # requested names
    assert list(doc["slices"][0]["metrics"]) == list(ev.plan.keys) + [k for k in names if k not in ev.plan.keys]
    assert all(doc["slices"][0]["metrics"][k] == doc["slices"][0]["metrics"][v] for k, v in names.items() if k not in ev.plan.keys)
    for got, exp in zip(doc["slices"], want.slices):
        for key, value in exp.metrics.items():
            v = got["metrics"][key]
            v = np.asarray(v, dtype=np.float64) if isinstance(v, list) else (np.nan if v is None else v)
            value = np.where(np.isfinite(value), value, np.nan)  # JSON writes non-finite numbers as null
            assert close(v, value, tol=1e-9), (task, got["slice"], key, v, value)
    assert (out / "metrics.parquet").exists()


def test_every_registered_metric_is_covered_by_the_cli_runs():
    from tests.pipelines.test_retrieval_cli import METRICS as RETRIEVAL

    covered = {m.split("@")[0] for task in ("binary", "multiclass", "multilabel", "regression") for m in _metrics_for(task)}
    covered |= {m.split("@")[0] for m in RETRIEVAL.split(",")}
    assert covered == {c.name for c in metric_classes()}


def test_cli_k_score_columns_ignore_index_and_formats(tmp_path):
    rng = np.random.default_rng(9)
    y = rng.integers(0, 3, 100)
    y[:10] = 255
    z = rng.normal(0, 2, (100, 3))
    table = pa.table({"y": y, "z0": z[:, 0], "z1": z[:, 1], "z2": z[:, 2]})
    src = tmp_path / "logits.csv"
    import pyarrow.csv as pacsv

    pacsv.write_csv(table, src)
    out = tmp_path / "out"
    argv = ["--input", str(src), "--label", "y", "--score", "z0,z1,z2", "--score-format", "logits", "--num-classes", "3",
            "--ignore-index", "255", "--metrics", "log_loss,top_k_accuracy@k=2,miou", "--output", str(out), "--quiet"]  # fmt: skip
    assert main(argv) == 0
    doc = json.loads((out / "metrics.json").read_text())
    keep = y != 255
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    from sklearn.metrics import log_loss, top_k_accuracy_score

    m = doc["slices"][0]["metrics"]
    assert close(m["log_loss"], log_loss(y[keep], p[keep], labels=[0, 1, 2]))
    assert close(m["top_k_accuracy@k=2"], top_k_accuracy_score(y[keep], z[keep], k=2, labels=[0, 1, 2]))
    assert doc["slices"][0]["n"] == 90 and doc["config"]["ignore_index"] == 255


def test_cli_errors_for_new_roles(tmp_path, capsys):
    table = pa.table({"y": [0, 1, 2], "p": [[0.2, 0.3, 0.5], [0.5, 0.6, -0.1], [0.1, 0.1, 0.8]]})
    src = tmp_path / "bad.parquet"
    pq.write_table(table, src)
    code = main(
        ["--input", str(src), "--label", "y", "--score", "p", "--num-classes", "3", "--metrics", "log_loss", "--output", str(tmp_path / "o"), "--quiet"]
    )
    assert code == 1
    assert "column 'p': invalid value -0.1 at row 1, entry 2: probabilities must be in [0, 1]" in capsys.readouterr().err
    code = main(
        ["--input", str(src), "--label", "y", "--score", "p", "--num-classes", "3", "--metrics", "mean_measure", "--output", str(tmp_path / "o"), "--quiet"]
    )
    assert code == 2 and "metric 'mean_measure' needs measure_col" in capsys.readouterr().err


@pytest.mark.parametrize("engine", ["local", "beam"])
def test_cli_several_named_measures(tmp_path, engine):
    """``--measure loss=COL --measure mae=COL2`` (issue 18): each named measure is the weighted
    mean of its column, per slice, against numpy."""
    rng = np.random.default_rng(5)
    n = 60
    y, s = rng.integers(0, 2, n), rng.random(n)
    loss, err, w = rng.random(n), rng.normal(0, 1, n), rng.integers(0, 3, n).astype(float)
    g = rng.choice(["a", "b"], n)
    src = tmp_path / "m.parquet"
    pq.write_table(pa.table({"y": y, "s": s, "l": loss, "e": err, "w": w, "g": g}), src)
    out = tmp_path / "out"
    argv = ["--input", str(src), "--label", "y", "--score", "s", "--weight", "w", "--slice", "g", "--metrics", "accuracy",
            "--measure", "loss=l", "--measure", "mae=e", "--engine", engine, "--output", str(out), "--quiet"]  # fmt: skip
    assert main(argv) == 0
    doc = json.loads((out / "metrics.json").read_text())
    overall = doc["slices"][0]["metrics"]
    assert close(overall["loss"], np.average(loss, weights=w)) and close(overall["mae"], np.average(err, weights=w))
    a = next(r for r in doc["slices"] if r["slice"] == {"g": "a"})["metrics"]
    keep = g == "a"
    assert close(a["loss"], np.average(loss[keep], weights=w[keep])) and close(a["accuracy"], np.average(y[keep] == (s[keep] >= 0.5), weights=w[keep]))
    assert doc["config"]["measure_cols"] == {"loss": "l", "mae": "e"}


def test_cli_multiclass_metrics_json_holds_per_class_curves_and_calibration(tmp_path):
    """metrics.json of a 3-class run: ``roc_curve`` / ``precision_recall_curve`` are (K, n, 3)
    one-vs-rest curves (padding rows all null), each class's rows scikit-learn's curve of
    ``y == c`` and ``P[:, c]``; ``reliability_diagram`` is (K + 1, B, 3), each class row
    scikit-learn's ``calibration_curve``; ``ece@none`` the (K,) one-vs-rest errors."""
    from sklearn.calibration import calibration_curve
    from sklearn.metrics import precision_recall_curve, roc_curve

    from tests._helpers.calibration_ref import tm_calibration_error

    rng = np.random.default_rng(3)
    n, k = 400, 3
    y = rng.integers(0, k, n)
    P = rng.dirichlet(np.ones(k), n) * 0.7 + np.eye(k)[y] * 0.3  # no probability on a bin edge (scikit-learn's edge bin differs)
    w = rng.integers(1, 4, n).astype(float)
    pq.write_table(pa.table({"y": y, "p": [list(r) for r in P], "w": w}), tmp_path / "in.parquet")
    metrics = "roc_curve,precision_recall_curve,reliability_diagram@n_bins=4,ece@none,ece"
    assert main(["--input", str(tmp_path / "in.parquet"), "--label", "y", "--score", "p", "--num-classes", "3", "--weight", "w",
                 "--metrics", metrics, "--engine", "local", "--output", str(tmp_path / "out"), "--quiet", "--no-report"]) == 0  # fmt: skip
    m = json.loads((tmp_path / "out" / "metrics.json").read_text())["slices"][0]["metrics"]

    def rows(curve, c):
        a = np.array([[np.nan if v is None else v for v in r] for r in curve[c]], dtype=float)
        return a[~np.isnan(a).all(axis=1)]

    for c in range(k):
        fpr, tpr, _ = roc_curve(y == c, P[:, c], sample_weight=w)
        roc = rows(m["roc_curve"], c)
        assert roc[:, 0] == pytest.approx(fpr, rel=1e-12) and roc[:, 1] == pytest.approx(tpr, rel=1e-12)
        precision, recall, thr = precision_recall_curve(y == c, P[:, c], sample_weight=w)
        pr = rows(m["precision_recall_curve"], c)
        assert pr[:, 0] == pytest.approx(precision, rel=1e-12) and pr[:, 1] == pytest.approx(recall, rel=1e-12)
        assert pr[:-1, 2] == pytest.approx(thr)
        reps = w.astype(int)  # integer weights: scikit-learn's (unweighted) curve of the repeated rows
        prob_true, prob_pred = calibration_curve(np.repeat(y == c, reps), np.repeat(P[:, c], reps), n_bins=4)
        d = np.array([[np.nan if v is None else v for v in r] for r in m["reliability_diagram@n_bins=4"][c]], dtype=float)
        ok = d[:, 0] > 0
        assert d[ok, 1] == pytest.approx(prob_pred, rel=1e-12) and d[ok, 2] == pytest.approx(prob_true, rel=1e-12)
        assert d[:, 0].sum() == pytest.approx(w.sum())
        assert m["ece@none"][c] == pytest.approx(tm_calibration_error(P[:, c], y == c, 10, "l1", w), rel=1e-12)
    assert np.array(m["reliability_diagram@n_bins=4"]).shape == (k + 1, 4, 3)
    assert m["ece"] == pytest.approx(tm_calibration_error(P.max(axis=1), P.argmax(axis=1) == y, 10, "l1", w), rel=1e-12)


def test_cli_labels_by_class_value_and_binary_top_k(tmp_path):
    """``labels=`` by class value and binary ``top_k_accuracy`` by name through the CLI (issue 17)."""
    from sklearn.metrics import f1_score, top_k_accuracy_score

    rng = np.random.default_rng(17)
    names = np.array(["cat", "dog", "bird"])
    y, p = names[rng.integers(0, 3, 60)], names[rng.integers(0, 3, 60)]
    src = tmp_path / "mc.parquet"
    pq.write_table(pa.table({"y": y, "p": p}), src)
    out = tmp_path / "out"
    argv = ["--input", str(src), "--label", "y", "--prediction", "p", "--classes", "cat,dog,bird",
            "--metrics", "f1@none@labels=bird|cat,f1@micro@labels=dog", "--output", str(out), "--quiet"]  # fmt: skip
    assert main(argv) == 0
    m = json.loads((out / "metrics.json").read_text())["slices"][0]["metrics"]
    assert close(m["f1@none@labels=bird|cat"], f1_score(y, p, labels=["bird", "cat"], average=None))
    assert close(m["f1@micro@labels=dog"], f1_score(y, p, labels=["dog"], average="micro"))
    yb, s = rng.integers(0, 2, 60), rng.normal(0, 1, 60)
    src = tmp_path / "bin.parquet"
    pq.write_table(pa.table({"y": yb, "s": s}), src)
    out = tmp_path / "out_bin"
    assert main(["--input", str(src), "--label", "y", "--score", "s", "--metrics", "top_k_accuracy@k=1", "--output", str(out), "--quiet"]) == 0
    m = json.loads((out / "metrics.json").read_text())["slices"][0]["metrics"]
    assert close(m["top_k_accuracy@k=1"], top_k_accuracy_score(yb, s, k=1))  # scores outside [0, 1]: threshold 0
