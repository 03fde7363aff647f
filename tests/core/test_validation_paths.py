"""One validation path: the plain (N,) path and the pluggable formats give the same checks.

* every value check (label range, non-finite float, negative / non-finite weight, missing value)
  gives the same message text and the same ``on_invalid="skip"`` behaviour whether a batch goes
  through the plain binary/multiclass path or through :mod:`mergeable_metrics.inputs.formats`;
* a null inside a list-valued column (multiclass score lists, multilabel label lists, binary
  ``[p0, p1]`` score lists, maps) is a missing value like a scalar null: the error names the
  column and the absolute row (``row_offset`` + index), and ``on_invalid="skip"`` skips and
  counts the row;
* the same for every built-in input format (parametrised).
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pytest

from mergeable_metrics import Evaluation
from mergeable_metrics.metrics import Task
from mergeable_metrics.inputs.formats import FORMATS, build_batch, make_batch

pytestmark = pytest.mark.filterwarnings("ignore::mergeable_metrics.UndefinedMetricWarning")

OFFSET = 100


def _row_in(msg: str, row: int) -> bool:
    return re.search(rf"\brow {row}\b", msg) is not None


# -- every check: the same text and the same skipping on both paths -----------------------------
# (id, columns, exception, column): one bad value at row 2 of 4
CHECKS = [
    ("label_out_of_range", dict(y_true=[0, 1, 2, 1], y_score=[0.1, 0.2, 0.3, 0.4]), ValueError, "y_true"),
    ("label_fraction", dict(y_true=[0, 1, 0.5, 1], y_score=[0.1, 0.2, 0.3, 0.4]), ValueError, "y_true"),
    ("label_none", dict(y_true=[0, 1, None, 1], y_score=[0.1, 0.2, 0.3, 0.4]), ValueError, "y_true"),
    ("label_arrow_null", dict(y_true=pa.array([0, 1, None, 1]), y_score=[0.1, 0.2, 0.3, 0.4]), ValueError, "y_true"),
    ("label_string", dict(y_true=[0, 1, "1", 1], y_score=[0.1, 0.2, 0.3, 0.4]), TypeError, "y_true"),
    ("score_nan", dict(y_true=[0, 1, 1, 0], y_score=[0.1, 0.2, np.nan, 0.4]), ValueError, "y_score"),
    ("score_inf", dict(y_true=[0, 1, 1, 0], y_score=[0.1, 0.2, -np.inf, 0.4]), ValueError, "y_score"),
    ("score_arrow_null", dict(y_true=[0, 1, 1, 0], y_score=pa.array([0.1, 0.2, None, 0.4])), ValueError, "y_score"),
    ("score_big_int", dict(y_true=[0, 1, 1, 0], y_score=[0.1, 0.2, 10**400, 0.4]), ValueError, "y_score"),
    ("prediction_out_of_range", dict(y_true=[0, 1, 1, 0], y_pred=[0, 1, 3, 0]), ValueError, "y_pred"),
    ("weight_negative", dict(y_true=[0, 1, 1, 0], y_score=[0.1, 0.2, 0.3, 0.4], sample_weight=[1, 1, -1, 1]), ValueError, "sample_weight"),
    ("weight_nan", dict(y_true=[0, 1, 1, 0], y_score=[0.1, 0.2, 0.3, 0.4], sample_weight=[1, 1, np.nan, 1]), ValueError, "sample_weight"),
    ("weight_inf", dict(y_true=[0, 1, 1, 0], y_score=[0.1, 0.2, 0.3, 0.4], sample_weight=[1, 1, np.inf, 1]), ValueError, "sample_weight"),
    ("weight_none", dict(y_true=[0, 1, 1, 0], y_score=[0.1, 0.2, 0.3, 0.4], sample_weight=[1, 1, None, 1]), ValueError, "sample_weight"),
]  # fmt: skip


def _through_formats(cols: dict) -> dict:
    """The same columns, sent through mergeable_metrics.inputs.formats by naming the default formats."""
    fmts = {"target": "labels"}
    if "y_score" in cols:
        fmts["score"] = "scores"
    if "y_pred" in cols:
        fmts["prediction"] = "labels"
    return dict(cols, formats=fmts)


@pytest.mark.parametrize("cols, exc, column", [c[1:] for c in CHECKS], ids=[c[0] for c in CHECKS])
def test_each_check_has_the_same_message_on_the_plain_and_the_formats_path(cols, exc, column):
    with pytest.raises(exc) as plain:
        make_batch(num_classes=2, row_offset=OFFSET, **cols)
    with pytest.raises(exc) as formats:
        make_batch(num_classes=2, row_offset=OFFSET, **_through_formats(cols))
    assert str(plain.value) == str(formats.value)
    assert f"'{column}'" in str(plain.value) and _row_in(str(plain.value), OFFSET + 2), str(plain.value)


@pytest.mark.parametrize("cols, exc, column", [c[1:] for c in CHECKS], ids=[c[0] for c in CHECKS])
def test_each_check_skips_the_same_row_on_the_plain_and_the_formats_path(cols, exc, column):
    plain, plain_invalid = make_batch(num_classes=2, row_offset=OFFSET, on_invalid="skip", **cols)
    formats, formats_invalid = make_batch(num_classes=2, row_offset=OFFSET, on_invalid="skip", **_through_formats(cols))
    assert plain_invalid.tolist() == formats_invalid.tolist() == [False, False, True, False]
    for field in ("y_true", "y_score", "y_pred", "sample_weight"):
        a, b = getattr(plain, field), getattr(formats, field)
        assert (a is None) == (b is None), field
        if a is not None:
            assert a.tolist() == b.tolist(), field


def test_binary_label_rule_reads_the_same_for_a_two_class_multiclass_task():
    task = Task(num_classes=2, multiclass=True)
    cols = dict(y_true=[0, 1, 2, 1], y_pred=[0, 1, 1, 1])
    with pytest.raises(ValueError) as plain:
        make_batch(num_classes=2, row_offset=OFFSET, **cols)
    with pytest.raises(ValueError) as formats:
        make_batch(num_classes=2, row_offset=OFFSET, task=task, formats={"target": "labels"}, **cols)
    assert (
        str(plain.value)
        == str(formats.value)
        == (
            "column 'y_true': invalid value 2.0 at row 102: labels must be 0 or 1; for 3 classes pass task='multiclass', num_classes=3 (--task multiclass --num-classes 3)"
        )
    )


# -- a null inside a list column, through Evaluation.fold ---------------------------------------
def _arrow_list(rows: list, fixed: int | None = None, int_values: bool = False) -> pa.Array:
    value_type = pa.int64() if int_values else pa.float64()
    return pa.array(rows, type=pa.list_(value_type, fixed) if fixed else pa.list_(value_type))


CONTAINERS = {
    "python-lists": lambda rows, width, ints: list(rows),
    "arrow-list": lambda rows, width, ints: _arrow_list(rows, None, ints),
    "arrow-fixed-size-list": lambda rows, width, ints: _arrow_list(rows, width, ints),
}

# (id, Evaluation keyword arguments, the list column, clean rows, the other columns)
LIST_CASES = [
    (
        "multiclass-score-lists",
        dict(label_col="y", score_col="s", num_classes=3, metrics=["accuracy"]),
        "s", [[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6], [0.1, 0.1, 0.8], [0.5, 0.3, 0.2]], False,
        {"y": [0, 1, 2, 1, 0]},
    ),
    (
        "multilabel-label-lists",
        dict(label_col="y", prediction_col="p", task="multilabel", num_classes=3, metrics=["hamming_loss"]),
        "y", [[1, 0, 1], [0, 1, 0], [1, 1, 0], [0, 0, 1], [1, 0, 0]], True,
        {"p": [[1, 0, 0], [0, 1, 0], [1, 1, 1], [0, 1, 1], [1, 0, 0]]},
    ),
    (
        "binary-two-class-score-lists",
        dict(label_col="y", score_col="s", metrics=["accuracy"]),
        "s", [[0.8, 0.2], [0.3, 0.7], [0.6, 0.4], [0.1, 0.9], [0.45, 0.55]], False,
        {"y": [0, 1, 1, 1, 0]},
    ),
]  # fmt: skip


def _reference(kwargs: dict, column: str, rows: list, others: dict, keep: list[int]):
    """The same evaluation on the rows ``keep`` only, with no null anywhere."""
    ev = Evaluation(**kwargs)
    data = {column: [rows[i] for i in keep], **{k: [v[i] for i in keep] for k, v in others.items()}}
    return ev.finish(ev.fold(ev.zero(), data)).overall


@pytest.mark.parametrize("null_at", [0, 3])
@pytest.mark.parametrize("container", list(CONTAINERS))
@pytest.mark.parametrize("kwargs, column, rows, ints, others", [c[1:] for c in LIST_CASES], ids=[c[0] for c in LIST_CASES])
def test_null_inside_a_list_column_names_the_absolute_row(kwargs, column, rows, ints, others, container, null_at):
    cells = [None if i == null_at else r for i, r in enumerate(rows)]
    data = {column: CONTAINERS[container](cells, len(rows[0]), ints), **others}
    ev = Evaluation(**kwargs)
    with pytest.raises(ValueError) as err:
        ev.fold(ev.zero(), data, row_offset=OFFSET)
    msg = str(err.value)
    assert f"'{column}'" in msg and _row_in(msg, OFFSET + null_at), msg


@pytest.mark.parametrize("null_at", [0, 3])
@pytest.mark.parametrize("container", list(CONTAINERS))
@pytest.mark.parametrize("kwargs, column, rows, ints, others", [c[1:] for c in LIST_CASES], ids=[c[0] for c in LIST_CASES])
def test_null_inside_a_list_column_is_skipped_and_counted(kwargs, column, rows, ints, others, container, null_at):
    cells = [None if i == null_at else r for i, r in enumerate(rows)]
    data = {column: CONTAINERS[container](cells, len(rows[0]), ints), **others}
    ev = Evaluation(**{**kwargs, "on_invalid": "skip"})
    got = ev.finish(ev.fold(ev.zero(), data, row_offset=OFFSET)).overall
    want = _reference(kwargs, column, rows, others, [i for i in range(len(rows)) if i != null_at])
    assert (got.n, got.skipped) == (len(rows) - 1, 1)
    assert got.metrics == pytest.approx(want.metrics)


def test_null_list_is_skipped_like_a_scalar_null_in_the_same_batch():
    ev = Evaluation(label_col="y", score_col="s", num_classes=3, metrics=["accuracy"], on_invalid="skip", slices="g")
    data = {
        "y": [0, None, 2, 1],
        "s": pa.array([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], None, [0.1, 0.8, 0.1]], type=pa.list_(pa.float64())),
        "g": ["a", "a", "b", "b"],
    }
    res = ev.finish(ev.fold(ev.zero(), data, row_offset=OFFSET))
    assert {r.slice: (r.n, r.skipped) for r in res.slices} == {(): (2, 2), (("g", "a"),): (1, 1), (("g", "b"),): (1, 1)}
    assert res.overall.metrics["accuracy"] == 1.0


# -- every built-in format: a missing row is a missing value ------------------------------------
# (format, task, role, clean (N=4) rows of the column, the other columns)
P3 = [[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6], [0.1, 0.1, 0.8]]
FORMAT_CASES = {
    "labels": (Task(num_classes=3), "target", [0, 1, 2, 1], {"prediction": [0, 1, 2, 2]}),
    "onehot": (Task(num_classes=3), "target", [[1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 1, 0]], {"prediction": [0, 1, 2, 2]}),
    "indicator": (Task(kind="multilabel", num_classes=3), "target", [[1, 0, 1], [0, 1, 0], [1, 1, 0], [0, 0, 1]], {"prediction": [[1, 0, 0], [0, 1, 0], [1, 1, 1], [0, 1, 1]]}),
    "scores": (Task(num_classes=3), "score", P3, {"target": [0, 1, 2, 1]}),
    "probabilities": (Task(num_classes=3), "score", P3, {"target": [0, 1, 2, 1]}),
    "logits": (Task(num_classes=3), "score", [[2.0, 0.1, -1.0], [0.0, 3.0, 0.0], [0.2, 0.2, 1.6], [-1.0, 0.1, 2.0]], {"target": [0, 1, 2, 1]}),
    "label_map": (Task(num_classes=3), "target", [[[0, 1], [2, 1]], [[1, 1], [0, 0]], [[2, 2], [2, 0]], [[0, 0], [1, 1]]], {"prediction": [[[0, 1], [2, 2]], [[1, 1], [0, 1]], [[2, 2], [2, 0]], [[0, 1], [1, 1]]]}),
    "score_map": (Task(num_classes=2, multiclass=True), "score", [[[[0.9, 0.2]], [[0.1, 0.8]]], [[[0.3, 0.6]], [[0.7, 0.4]]], [[[0.5, 0.5]], [[0.4, 0.6]]], [[[0.2, 0.9]], [[0.8, 0.1]]]], {"target": [[[0, 1]], [[1, 0]], [[1, 1]], [[1, 0]]]}),
    "values": (Task(kind="regression"), "target", [1.5, 2.0, -0.5, 3.25], {"prediction": [1.0, 2.5, 0.0, 3.0]}),
    "multioutput": (Task(kind="regression", num_outputs=2), "target", [[1.5, 0.0], [2.0, 1.0], [-0.5, 2.0], [3.25, 3.0]], {"prediction": [[1.0, 0.5], [2.5, 1.0], [0.0, 2.0], [3.0, 3.5]]}),
}  # fmt: skip


def test_every_builtin_format_has_a_missing_value_case():
    assert set(FORMAT_CASES) == set(FORMATS)


def _formats_for(name: str, role: str, others: dict) -> dict:
    fmts = {role: name}
    if name in ("label_map", "score_map"):  # the other column is a map too
        fmts.update({r: "label_map" for r in others})
    return fmts


@pytest.mark.parametrize("null_at", [0, 2])
@pytest.mark.parametrize("name", list(FORMAT_CASES))
def test_a_missing_row_in_any_format_names_the_absolute_row(name, null_at):
    task, role, rows, others = FORMAT_CASES[name]
    cells = [None if i == null_at else r for i, r in enumerate(rows)]
    with pytest.raises(ValueError) as err:
        build_batch(task=task, columns={role: cells, **others}, names={role: "c"}, formats=_formats_for(name, role, others), row_offset=OFFSET)
    msg = str(err.value)
    assert "'c'" in msg and _row_in(msg, OFFSET + null_at), msg


@pytest.mark.parametrize("null_at", [0, 2])
@pytest.mark.parametrize("name", list(FORMAT_CASES))
def test_a_missing_row_in_any_format_is_skipped(name, null_at):
    task, role, rows, others = FORMAT_CASES[name]
    cells = [None if i == null_at else r for i, r in enumerate(rows)]
    fmts = _formats_for(name, role, others)
    got, invalid = build_batch(task=task, columns={role: cells, **others}, formats=fmts, row_offset=OFFSET, on_invalid="skip")
    keep = [i for i in range(len(rows)) if i != null_at]
    want, _ = build_batch(task=task, columns={role: [rows[i] for i in keep], **{r: [v[i] for i in keep] for r, v in others.items()}}, formats=fmts)
    assert invalid.tolist() == [i == null_at for i in range(len(rows))]
    for field in ("y_true", "y_score", "y_pred", "sample_weight", "values", "y_score_class0"):
        a, b = getattr(got, field), getattr(want, field)
        assert (a is None) == (b is None), field
        if a is not None:
            assert np.array_equal(a, b), field
    assert (got.row_of is None) == (want.row_of is None)
    if want.row_of is not None:  # map elements point at the kept rows
        assert np.array_equal(got.row_of, want.row_of)


@pytest.mark.parametrize("container", ["python-lists", "arrow"])
def test_a_null_list_inside_a_map_row_names_the_row_and_entry_and_is_skipped(container):
    maps = [[[0, 1], [2, 1]], [[1, 1], None], [[2, 2], [2, 0]]]
    preds = [[[0, 1], [2, 1]], [[1, 1], [0, 0]], [[2, 2], [2, 0]]]
    target = pa.array(maps) if container == "arrow" else maps
    with pytest.raises(ValueError) as err:
        build_batch(task=Task(num_classes=3), columns={"target": target, "prediction": preds}, names={"target": "m"}, row_offset=OFFSET)
    assert str(err.value).startswith(f"column 'm': invalid value nan at row {OFFSET + 1}, entry (1, 0):"), str(err.value)
    got, invalid = build_batch(task=Task(num_classes=3), columns={"target": target, "prediction": preds}, row_offset=OFFSET, on_invalid="skip")
    assert invalid.tolist() == [False, True, False]
    assert got.y_true.tolist() == [0, 1, 2, 1, 2, 2, 2, 0] and got.row_of.tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
