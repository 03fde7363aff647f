"""Pluggable input formats (issue 3): conversion and validation apart from the metric math."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from mergeable_metrics import Evaluation, MetricCollection
from mergeable_metrics.metrics import Task
from mergeable_metrics.inputs.formats import FORMATS, Converted, InputFormat, as_nd_array, build_batch, register_format, resolve_format
from tests._helpers import close

P = [[0.2, 0.5, 0.3], [0.1, 0.1, 0.8], [0.6, 0.3, 0.1], [0.3, 0.3, 0.4]]
Y = [1, 2, 0, 0]


def test_builtin_formats_and_their_roles():
    assert {"labels", "onehot", "indicator", "scores", "probabilities", "logits", "label_map", "score_map", "values"} <= set(FORMATS)
    for fmt in FORMATS.values():
        assert fmt.roles and fmt.tasks and fmt.description
    with pytest.raises(ValueError, match="already registered"):
        register_format(FORMATS["labels"])


@pytest.mark.parametrize(
    "make",
    [
        lambda: np.asarray(P),
        lambda: P,
        lambda: [np.asarray(r) for r in P],
        lambda: pa.array(P, type=pa.list_(pa.float64(), 3)),
        lambda: pa.array(P),
        lambda: pa.chunked_array([pa.array(P[:2]), pa.array(P[2:])]),
        lambda: pd.Series(P),
    ],
    ids=["ndarray", "lists", "list-of-arrays", "arrow-fixed-size", "arrow-list", "arrow-chunked", "pandas"],
)
def test_matrix_columns_from_every_container(make):
    arr = as_nd_array(make(), "p")
    assert arr.shape == (4, 3) and close(arr, np.asarray(P))
    mc = MetricCollection("accuracy", "log_loss", num_classes=3)
    mc.update(Y, y_score=make())
    assert close(mc.compute()["accuracy"], 0.75)


def test_ragged_rows_are_rejected_with_the_row():
    with pytest.raises(ValueError, match=r"column 'p': rows have different (shapes|lengths).*row 1"):
        as_nd_array([[0.1, 0.9], [1.0]], "p")
    with pytest.raises(ValueError, match=r"column 'p': rows have different lengths.* 1 at row 1"):
        as_nd_array(pa.array([[0.1, 0.9], [1.0]]), "p")
    with pytest.raises(ValueError, match=r"column 'p': row 2 holds a list \[0.2, 0.8\] but row 0 holds a scalar"):
        as_nd_array([0.3, 0.4, [0.2, 0.8]], "p")


def test_ragged_rows_name_the_absolute_row_after_a_missing_row():
    with pytest.raises(ValueError, match=r"column 'p': rows have different shapes.* at row 12\b"):
        as_nd_array([[0.1, 0.9], None, [1.0]], "p", row_offset=10)
    with pytest.raises(ValueError, match=r"column 'p': rows have different lengths.* 1 at row 12\b"):
        as_nd_array(pa.array([[0.1, 0.9], None, [1.0]]), "p", row_offset=10)
    with pytest.raises(ValueError, match=r"column 'p': row 12 holds a list \[0.2, 0.8\] but row 11 holds a scalar"):
        as_nd_array([None, 0.4, [0.2, 0.8]], "p", row_offset=10)


@pytest.mark.parametrize(
    "make",
    [
        lambda rows: rows,
        lambda rows: pa.array(rows),
        lambda rows: pa.array(rows, type=pa.list_(pa.float64(), 2)),
        lambda rows: pd.Series(rows, dtype=object),
    ],
    ids=["lists", "arrow-list", "arrow-fixed-size", "pandas"],
)
def test_a_missing_row_of_a_list_column_reads_as_missing_entries(make):
    # the checks of the column's format then name the row, or skip it (test_validation_paths.py)
    arr = as_nd_array(make([None, [0.1, 0.9], None, [1.0, 0.0]]), "p")
    assert arr.shape == (4, 2) and arr.dtype == np.float64
    assert np.isnan(arr[[0, 2]]).all() and arr[[1, 3]].tolist() == [[0.1, 0.9], [1.0, 0.0]]


def test_onehot_labels_and_predictions():
    eye = np.eye(3, dtype=int)
    b, _ = build_batch(task=Task(num_classes=3), columns={"target": eye[[1, 2, 0]], "prediction": eye[[1, 0, 0]]})
    assert b.y_true.tolist() == [1, 2, 0] and b.y_pred.tolist() == [1, 0, 0]
    with pytest.raises(ValueError, match=r"column 'y_true': invalid value \[1\.0, 1\.0, 0\.0\] at row 1: a one-hot row needs exactly one 1"):
        build_batch(task=Task(num_classes=3), columns={"target": [[0, 1, 0], [1, 1, 0]], "prediction": [0, 1]})
    with pytest.raises(ValueError, match=r"column 'y_true': invalid value 0\.5 at row 0, entry 1: one-hot entries must be 0 or 1"):
        build_batch(task=Task(num_classes=3), columns={"target": [[0, 0.5, 0.5]], "prediction": [0]})


def test_probability_and_logit_formats():
    task = Task(num_classes=3)
    b, _ = build_batch(task=task, columns={"target": Y, "score": P}, formats={"score": "probabilities"})
    assert b.y_pred.tolist() == [1, 2, 0, 2]
    with pytest.raises(ValueError, match=r"column 'y_score': invalid value 1\.2 at row 0, entry 1: probabilities must be in \[0, 1\]"):
        build_batch(task=task, columns={"target": [0], "score": [[0.0, 1.2, -0.2]]}, formats={"score": "probabilities"})
    z = np.log(np.asarray(P))
    b, _ = build_batch(task=task, columns={"target": Y, "score": z}, formats={"score": "logits"})
    assert close(b.y_score, np.asarray(P))
    # binary: (N, 2) probabilities give the class-1 column; (N,) logits the sigmoid
    b, _ = build_batch(task=Task(), columns={"target": [1, 0], "score": [[0.3, 0.7], [0.9, 0.1]]})
    assert close(b.y_score, [0.7, 0.1])
    b, _ = build_batch(task=Task(), columns={"target": [1, 0], "score": [0.0, 2.0]}, formats={"score": "logits"})
    assert close(b.y_score, [0.5, 1 / (1 + np.exp(-2.0))])


def test_resolve_format_errors_name_column_shape_and_choices():
    t3 = Task(num_classes=3)
    with pytest.raises(
        ValueError, match=r"column 'p': a multiclass task cannot read score values of shape \(4,\); expected one of: scores \(\(N, K\)\), score_map"
    ):
        resolve_format(t3, "score", np.zeros(4), None, "p")
    with pytest.raises(ValueError, match=r"column 'y': input format 'logits' cannot be used for target values"):
        resolve_format(t3, "target", np.zeros(4), "logits", "y")
    with pytest.raises(ValueError, match=r"input format 'indicator' does not apply to multiclass tasks"):
        resolve_format(t3, "target", np.zeros((4, 3)), "indicator", "y")
    with pytest.raises(ValueError, match=r"input format 'label_map' expects \(N, H, W\) values, got shape \(4,\)"):
        resolve_format(t3, "target", np.zeros(4), "label_map", "y")
    with pytest.raises(ValueError, match="unknown input format 'percent'"):
        MetricCollection("accuracy", num_classes=3, formats={"y_score": "percent"})


def test_a_new_format_needs_no_metric_change():
    """Scores given in percent (0..100): one registered format, every metric works unchanged."""

    def validate(values, ctx):
        v = np.asarray(values, dtype=np.float64)
        ctx.checker.check((v < 0) | (v > 100) | ~np.isfinite(v), v, ctx.column, "percentages must be in [0, 100]")

    def convert(values, ctx):
        return Converted(np.asarray(values, dtype=np.float64) / 100.0)

    register_format(InputFormat("percent_test", ("score",), ("binary",), (0,), validate, convert, "scores in percent"), replace=True)
    try:
        mc = MetricCollection("log_loss", "f1", "ece", formats={"y_score": "percent_test"})
        mc.update([1, 0, 1], y_score=[90.0, 20.0, 40.0])
        ref = MetricCollection("log_loss", "f1", "ece")
        ref.update([1, 0, 1], y_score=[0.9, 0.2, 0.4])
        assert mc.states == ref.states
        with pytest.raises(ValueError, match=r"column 'y_score': invalid value 120\.0 at row 4: percentages must be in \[0, 100\]"):
            mc.update([1, 0], y_score=[90.0, 120.0])
    finally:
        FORMATS.pop("percent_test")


def test_evaluation_with_k_score_columns_names_the_bad_column():
    ev = Evaluation(label_col="y", score_col=["p0", "p1", "p2"], num_classes=3, metrics=["log_loss", "top_k_accuracy@k=2"])
    data = {"y": Y, "p0": [r[0] for r in P], "p1": [r[1] for r in P], "p2": [r[2] for r in P]}
    res = ev.evaluate([data])
    listed = Evaluation(label_col="y", score_col="p", num_classes=3, metrics=["log_loss", "top_k_accuracy@k=2"]).evaluate([{"y": Y, "p": P}])
    assert close(res.overall.metrics["log_loss"], listed.overall.metrics["log_loss"])
    assert ev.columns == ["y", "p0", "p1", "p2"] and ev.value_columns == ["y", "p0", "p1", "p2"]
    bad = dict(data, p2=[0.3, -0.8, 0.1, 0.4])
    with pytest.raises(ValueError, match=r"column 'p2': invalid value -0\.8 at row 1: probabilities must be in \[0, 1\]"):
        ev.evaluate([bad])


def test_skip_mode_drops_invalid_matrix_rows_and_counts_them():
    ev = Evaluation(label_col="y", score_col="p", num_classes=3, metrics=["log_loss", "example_count"], on_invalid="skip", slices=["g"])
    data = {"y": [0, 1, 7, 2], "p": [[0.5, 0.25, 0.25], [0.2, 0.3, 0.4], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]], "g": ["a", "a", "b", "b"]}
    res = ev.evaluate([data])
    assert res.overall.skipped == 2 and res.overall.metrics["example_count"] == 2  # bad label 7, row sum 0.9
    assert res[(("g", "a"),)].skipped == 1 and res[(("g", "b"),)].skipped == 1
    eps = np.finfo(np.float64).eps  # p = 1.0 is clipped to 1 - eps
    assert close(res.overall.metrics["log_loss"], -(np.log(0.5) + np.log(1.0 - eps)) / 2)


def test_evaluation_config_round_trips_with_the_new_arguments():
    ev = Evaluation(label_col="m", prediction_col="pm", num_classes=4, ignore_index=255, label_format="label_map",
                    prediction_format="label_map", metrics=["miou"], task="multiclass")  # fmt: skip
    cfg = ev.to_config()
    assert cfg["ignore_index"] == 255 and cfg["label_format"] == "label_map" and cfg["task"] == "multiclass"
    assert Evaluation(**cfg).to_config() == cfg
    ev2 = Evaluation(label_col="y", score_col="s", task=Task(kind="multilabel", num_classes=3), metrics=["f1@samples"])
    assert Evaluation(**ev2.to_config()).plan.task == ev2.plan.task
    assert Evaluation(label_col="y", score_col="s").to_config() == {  # unchanged for first-release configurations
        "label_col": "y", "score_col": "s", "prediction_col": None, "weight_col": None, "slices": [],
        "metrics": ["accuracy", "precision", "recall", "f1"], "num_classes": None, "threshold": 0.5,
        "threshold_rule": ">=", "zero_division": "nan", "on_invalid": "raise", "multiclass": False,
    }  # fmt: skip


def test_task_kinds_and_validation():
    assert Task().kind == "binary" and Task(num_classes=3).kind == "multiclass"
    assert Task(num_classes=2, kind="multiclass").multiclass and Task(kind="multilabel", num_classes=1).kind == "multilabel"
    with pytest.raises(ValueError, match="task kind must be one of"):
        Task(kind="ranking")
    with pytest.raises(ValueError, match="a binary task has num_classes=2"):
        Task(num_classes=3, kind="binary")
    with pytest.raises(ValueError, match="ignore_index applies to binary and multiclass"):
        Task(kind="regression", ignore_index=0)
    with pytest.raises(ValueError, match="needs num_classes"):
        Task(kind="multilabel", num_classes=0)


def test_example_count_is_an_int_again_after_long_format_rows():
    """Spark's result rows hold every value as a double: example_count must come back as the int
    core and Beam report, or metrics.json differs between engines ("12000.0" vs "12000")."""
    from mergeable_metrics.results.results import Results

    ev = Evaluation(label_col="y", score_col="s", slices=["g"], metrics=["example_count", "f1"])
    res = ev.evaluate([{"y": [1, 0, 1], "s": [0.9, 0.2, 0.4], "g": ["a", "b", "a"]}])
    rows = [{**r, "value": float(r["value"])} for r in res.to_rows()]
    again = Results.from_rows(rows, res.config, [s.columns for s in ev.slices], ev.plan.keys)
    assert [type(s.metrics["example_count"]) for s in again.slices] == [int, int, int]
    assert [s.metrics["example_count"] for s in again.slices] == [3, 2, 1]
    assert again.to_json() == res.to_json()
