"""Column extraction and validation: clear errors naming column, value and row; input kinds.

* length mismatch, labels outside {0, 1} / [0, K), NaN labels, NaN/inf scores, negative/NaN/inf
  weights -> ValueError; strings in numeric columns -> TypeError; every message names the
  column, the bad value and its row position (``row_offset`` honoured);
* empty batches are fine;
* lists, numpy arrays, pandas Series (incl. nullable Int64) and pyarrow Array/ChunkedArray give
  identical states; nulls/NA are errors naming the row;
* ``on_invalid="skip"`` skips invalid rows and counts them per slice (``skipped``);
* a missing column is a ValueError listing the available columns.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from mergeable_metrics import Evaluation, MetricCollection
from mergeable_metrics.engine import Plan
from mergeable_metrics.metrics import Task
from mergeable_metrics.inputs.formats import make_batch
from tests._helpers import assert_states_equal, binary_case, multiclass_case

# NaN results (an undefined metric) are expected in these tests; their warnings are noise here.
pytestmark = pytest.mark.filterwarnings("ignore::mergeable_metrics.UndefinedMetricWarning")


def check_message(err: pytest.ExceptionInfo, column: str, value: str, row: int) -> None:
    msg = str(err.value)
    assert f"'{column}'" in msg, msg
    assert re.search(rf"(?<![\w.]){re.escape(value)}(?![\w])", msg), f"value {value!r} not in: {msg}"
    assert re.search(rf"\brow {row}\b", msg), f"row {row} not in: {msg}"


# ---------------------------------------------------------------------------------------------
# bad values
BAD_BINARY = [
    # (id, columns, exception, column, value text, row)
    ("label_2", dict(y_true=[0, 1, 2], y_score=[0.1, 0.2, 0.3]), ValueError, "y_true", "2", 2),
    ("label_negative", dict(y_true=[0, -1, 1], y_score=[0.1, 0.2, 0.3]), ValueError, "y_true", "-1", 1),
    ("label_fraction", dict(y_true=[0, 0.5, 1], y_score=[0.1, 0.2, 0.3]), ValueError, "y_true", "0.5", 1),
    ("label_nan", dict(y_true=[0, 1, np.nan], y_score=[0.1, 0.2, 0.3]), ValueError, "y_true", "nan", 2),
    ("label_none", dict(y_true=[None, 1, 0], y_score=[0.1, 0.2, 0.3]), ValueError, "y_true", "None", 0),
    ("score_nan", dict(y_true=[0, 1, 1], y_score=[0.1, np.nan, 0.3]), ValueError, "y_score", "nan", 1),
    ("score_inf", dict(y_true=[0, 1, 1], y_score=[0.1, 0.2, np.inf]), ValueError, "y_score", "inf", 2),
    ("score_neg_inf", dict(y_true=[0, 1, 1], y_score=[-np.inf, 0.2, 0.3]), ValueError, "y_score", "-inf", 0),
    ("pred_2", dict(y_true=[0, 1, 1], y_pred=[0, 2, 1]), ValueError, "y_pred", "2", 1),
    ("weight_negative", dict(y_true=[0, 1, 1], y_score=[0.1, 0.2, 0.3], sample_weight=[1, 1, -0.5]), ValueError, "sample_weight", "-0.5", 2),
    ("weight_nan", dict(y_true=[0, 1, 1], y_score=[0.1, 0.2, 0.3], sample_weight=[1, np.nan, 1]), ValueError, "sample_weight", "nan", 1),
    ("weight_inf", dict(y_true=[0, 1, 1], y_score=[0.1, 0.2, 0.3], sample_weight=[np.inf, 1, 1]), ValueError, "sample_weight", "inf", 0),
    ("label_string", dict(y_true=[0, "1", 1], y_score=[0.1, 0.2, 0.3]), TypeError, "y_true", "'1'", 1),
    ("score_string", dict(y_true=[0, 1, 1], y_score=[0.1, 0.2, "high"]), TypeError, "y_score", "'high'", 2),
    ("weight_string", dict(y_true=[0, 1, 1], y_score=[0.1, 0.2, 0.3], sample_weight=["1", 1, 1]), TypeError, "sample_weight", "'1'", 0),
]


@pytest.mark.parametrize("cols, exc, column, value, row", [c[1:] for c in BAD_BINARY], ids=[c[0] for c in BAD_BINARY])
def test_invalid_binary_values_name_column_value_and_row(cols, exc, column, value, row):
    mc = MetricCollection("f1", "accuracy")
    with pytest.raises(exc) as err:
        mc.update(cols["y_true"], y_score=cols.get("y_score"), y_pred=cols.get("y_pred"), sample_weight=cols.get("sample_weight"))
    check_message(err, column, value, row)
    assert mc.states == mc.plan.zero()  # nothing was folded


@pytest.mark.parametrize("cols, exc, column, value, row", [c[1:] for c in BAD_BINARY], ids=[c[0] for c in BAD_BINARY])
def test_invalid_values_honour_row_offset(cols, exc, column, value, row):
    with pytest.raises(exc) as err:
        make_batch(num_classes=2, row_offset=1000, **cols)
    check_message(err, column, value, 1000 + row)


BAD_MULTICLASS = [
    ("label_K", dict(y_true=[0, 3, 1], y_pred=[0, 1, 2]), "y_true", "3", 1),
    ("label_7", dict(y_true=[0, 1, 7], y_pred=[0, 1, 2]), "y_true", "7", 2),
    ("label_negative", dict(y_true=[-1, 1, 2], y_pred=[0, 1, 2]), "y_true", "-1", 0),
    ("pred_K", dict(y_true=[0, 1, 2], y_pred=[0, 1, 3]), "y_pred", "3", 2),
    ("pred_nan", dict(y_true=[0, 1, 2], y_pred=[0, np.nan, 2]), "y_pred", "nan", 1),
]


@pytest.mark.parametrize("cols, column, value, row", [c[1:] for c in BAD_MULTICLASS], ids=[c[0] for c in BAD_MULTICLASS])
def test_invalid_multiclass_values(cols, column, value, row):
    mc = MetricCollection("f1@macro", num_classes=3)
    with pytest.raises(ValueError) as err:
        mc.update(cols["y_true"], y_pred=cols["y_pred"])
    check_message(err, column, value, row)
    assert "[0, 3)" in str(err.value)


def test_error_counts_invalid_rows():
    with pytest.raises(ValueError, match=r"3 invalid rows"):
        make_batch(num_classes=2, y_true=[0, 2, 2, 1, 2], y_score=[0.1] * 5)


def test_length_mismatch_names_both_columns():
    mc = MetricCollection("f1")
    with pytest.raises(ValueError) as err:
        mc.update([0, 1, 1], y_score=[0.1, 0.2])
    msg = str(err.value)
    assert "'y_score'" in msg and "'y_true'" in msg and "2" in msg and "3" in msg
    with pytest.raises(ValueError, match="sample_weight"):
        mc.update([0, 1], y_score=[0.1, 0.2], sample_weight=[1.0])


def test_evaluation_length_mismatch():
    ev = Evaluation(label_col="label", score_col="score")
    with pytest.raises(ValueError, match=r"label.*2.*score.*3|different lengths"):
        ev.fold(ev.zero(), {"label": [0, 1], "score": [0.1, 0.2, 0.3]})


def test_later_batches_report_global_row_positions():
    mc = MetricCollection("f1")
    mc.update([0, 1, 1], y_score=[0.1, 0.2, 0.3])
    mc.update([], y_score=[])
    with pytest.raises(ValueError) as err:
        mc.update([0, 1], y_score=[0.4, np.nan])
    check_message(err, "y_score", "nan", 4)


def test_evaluation_messages_use_configured_column_names_and_offsets():
    ev = Evaluation(label_col="label", score_col="score", weight_col="w")
    with pytest.raises(ValueError) as err:
        ev.fold(ev.zero(), {"label": [0, 1], "score": [0.1, 0.2], "w": [1.0, -2.0]}, row_offset=40)
    check_message(err, "w", "-2.0", 41)
    with pytest.raises(ValueError) as err:  # evaluate() accumulates row offsets over batches
        ev.evaluate([
            {"label": [0, 1], "score": [0.1, 0.2], "w": [1, 1]},
            {"label": [], "score": [], "w": []},
            {"label": [1, 5], "score": [0.1, 0.2], "w": [1, 1]},
        ])  # fmt: skip
    check_message(err, "label", "5", 3)


def test_binary_needs_scores_or_predictions_and_multiclass_needs_predictions():
    with pytest.raises(ValueError, match="y_score or y_pred"):
        MetricCollection("f1").update([0, 1])
    with pytest.raises(ValueError, match="y_pred|y_score"):
        MetricCollection("f1@macro", num_classes=3).update([0, 1], y_score=[0.1, 0.2])


# ---------------------------------------------------------------------------------------------
# strings: TypeError naming column, bad value and row, whatever the container
STRING_CONTAINERS = {
    "list": lambda v: list(v),
    "pandas_object": lambda v: pd.Series(v, dtype=object),
    "pyarrow": lambda v: pa.array([str(x) for x in v]),
    "numpy_unicode": lambda v: np.array([str(x) for x in v]),
    "pandas_string": lambda v: pd.Series([str(x) for x in v], dtype="string"),
}
NUMPY_STR_BUG = (
    "core bug: a numpy unicode array (dtype <U) raises 'expected numbers, got dtype <U1 (e.g. ...)' "
    "naming the FIRST value and no row, instead of the bad value and its row"
)
PANDAS_STR_BUG = (
    "core bug: a pandas StringDtype Series goes through to_numpy(dtype=float64), so numeric "
    "strings like '1' are silently accepted as numbers (lists, object Series and pyarrow raise TypeError)"
)


@pytest.mark.parametrize(
    "container, value, row",
    [
        ("list", "'x'", 12),
        ("pandas_object", "'x'", 12),
        # containers of one type hold strings only: the first bad value is the '0' at row 0
        ("pyarrow", "'0'", 10),
        ("pandas_string", "'0'", 10),
        pytest.param("numpy_unicode", "'0'", 10),
    ],
)
def test_non_numeric_strings_raise_type_error(container, value, row):
    wrap = STRING_CONTAINERS[container]
    with pytest.raises(TypeError) as err:
        make_batch(num_classes=2, y_true=wrap([0, 1, "x", 1]), y_score=[0.1, 0.2, 0.3, 0.4], row_offset=10)
    check_message(err, "y_true", value, row)


@pytest.mark.parametrize(
    "container",
    [
        "list",
        "pyarrow",
        "pandas_object",
        pytest.param("numpy_unicode"),
        pytest.param("pandas_string"),
    ],
)
def test_numeric_strings_are_not_numbers(container):
    """``"1"`` is a string, not a label: every container must reject it with a TypeError."""
    wrap = STRING_CONTAINERS[container]
    with pytest.raises(TypeError) as err:
        make_batch(num_classes=2, y_true=wrap(["0", "1", "1"]), y_score=[0.1, 0.2, 0.3])
    check_message(err, "y_true", "'0'", 0)


# ---------------------------------------------------------------------------------------------
# empty batches
def test_empty_batches_are_no_ops():
    mc = MetricCollection("f1", "accuracy", "tp")
    mc.update([], y_score=[])
    mc.update(np.array([], dtype=np.int64), y_score=np.array([]), sample_weight=np.array([]))
    mc.update(pd.Series([], dtype="Int64"), y_score=pd.Series([], dtype=float))
    mc.update(pa.array([], type=pa.int64()), y_score=pa.chunked_array([], type=pa.float64()))
    mc.update([], y_pred=[])
    assert mc.states == mc.plan.zero()
    ev = Evaluation(label_col="y", score_col="s", weight_col="w", slices="g")
    empty = [
        {"y": [], "s": [], "w": [], "g": []},
        pd.DataFrame({"y": pd.Series([], dtype=int), "s": pd.Series([], dtype=float), "w": pd.Series([], dtype=float), "g": pd.Series([], dtype=object)}),
        pa.record_batch({"y": pa.array([], pa.int64()), "s": pa.array([], pa.float64()), "w": pa.array([], pa.float64()), "g": pa.array([], pa.string())}),
        pa.table({"y": pa.array([], pa.int64()), "s": pa.array([], pa.float64()), "w": pa.array([], pa.float64()), "g": pa.array([], pa.string())}),
        [],
    ]
    acc = ev.zero()
    for batch in empty:
        ev.fold(acc, batch)
    assert acc == ev.zero()
    res = ev.finish(acc)
    assert res.overall.n == 0 and np.isnan(res.overall.metrics["accuracy"])


# ---------------------------------------------------------------------------------------------
# identical states from every input kind
CONVERTERS = {
    "list": lambda a: a.tolist(),
    "tuple": lambda a: tuple(a.tolist()),
    "numpy": lambda a: a,
    "numpy_float32_scores": lambda a: a.astype(np.float32) if a.dtype.kind == "f" and not _is_weight(a) else a,
    "pandas": lambda a: pd.Series(a),
    "pandas_nullable": lambda a: pd.Series(a, dtype="Int64" if a.dtype.kind in "iu" else "Float64"),
    "pandas_indexed": lambda a: pd.Series(a, index=np.arange(len(a))[::-1] * 7),
    "pyarrow": lambda a: pa.array(a),
    "pyarrow_chunked": lambda a: pa.chunked_array([a[: len(a) // 3], a[len(a) // 3 :]]) if len(a) else pa.chunked_array([pa.array(a)]),
}


def _is_weight(a: np.ndarray) -> bool:
    return getattr(a, "_is_weight", False)


@pytest.mark.parametrize("converter", [c for c in CONVERTERS if c != "numpy_float32_scores"])
@pytest.mark.parametrize("case", ["balanced", "ties", "weighted_zeros"])
def test_binary_input_kinds_give_identical_states(case, converter):
    c = binary_case(case, weighted=True)
    conv = CONVERTERS[converter]
    reference = MetricCollection("f1", "accuracy@threshold=0.25", "tp@threshold=0.75")
    reference.update(c.y_true, y_score=c.y_score, sample_weight=c.sample_weight)
    mc = MetricCollection("f1", "accuracy@threshold=0.25", "tp@threshold=0.75")
    mc.update(conv(c.y_true), y_score=conv(c.y_score), sample_weight=conv(c.sample_weight))
    assert_states_equal(mc, reference)
    assert mc.encode() == reference.encode()


@pytest.mark.parametrize("converter", [c for c in CONVERTERS if c != "numpy_float32_scores"])
def test_multiclass_input_kinds_give_identical_states(converter):
    c = multiclass_case("balanced", weighted=True)
    conv = CONVERTERS[converter]
    reference = MetricCollection("f1@macro", "confusion_matrix", num_classes=c.num_classes)
    reference.update(c.y_true, y_pred=c.y_pred, sample_weight=c.sample_weight)
    mc = MetricCollection("f1@macro", "confusion_matrix", num_classes=c.num_classes)
    mc.update(conv(c.y_true), y_pred=conv(c.y_pred), sample_weight=conv(c.sample_weight))
    assert mc.encode() == reference.encode()


def test_bool_and_integer_valued_float_labels_equal_int_labels():
    a, b, c = (MetricCollection("f1", "accuracy") for _ in range(3))
    a.update([1, 0, 1], y_score=[0.9, 0.2, 0.4])
    b.update([True, False, True], y_score=[0.9, 0.2, 0.4])
    c.update(np.array([1.0, 0.0, 1.0]), y_score=np.array([0.9, 0.2, 0.4], dtype=np.float32))
    assert a.encode() == b.encode()
    # float32 scores are compared after conversion to float64 (0.4f != 0.4), same thresholds here
    assert a.compute() == c.compute()


@pytest.mark.parametrize(
    "labels",
    [
        pd.Series([0, 1, pd.NA, 1], dtype="Int64"),
        pd.Series([0.0, 1.0, None, 1.0], dtype="Float64"),
        pd.Series([False, True, pd.NA, True], dtype="boolean"),
        pa.array([0, 1, None, 1]),
        pa.chunked_array([[0, 1], [None, 1]]),
        [0, 1, None, 1],
        np.array([0, 1, None, 1], dtype=object),
    ],
    ids=["pandas_Int64", "pandas_Float64", "pandas_boolean", "pyarrow", "pyarrow_chunked", "list", "numpy_object"],
)
def test_missing_labels_are_errors_naming_the_row(labels):
    mc = MetricCollection("f1")
    with pytest.raises(ValueError) as err:
        mc.update(labels, y_score=[0.1, 0.2, 0.3, 0.4])
    msg = str(err.value)
    assert "'y_true'" in msg and re.search(r"\brow 2\b", msg), msg


def test_missing_scores_and_weights_are_errors():
    with pytest.raises(ValueError) as err:
        make_batch(num_classes=2, y_true=[0, 1], y_score=pa.array([0.5, None]))
    check_message(err, "y_score", "null", 1)  # a missing value is named as given: an Arrow null
    with pytest.raises(ValueError) as err:
        make_batch(num_classes=2, y_true=[0, 1], y_score=[0.1, 0.2], sample_weight=pd.Series([pd.NA, 1.0], dtype="Float64"))
    check_message(err, "sample_weight", "None", 0)  # pandas NA, read as None like NA in any pandas column


def test_scalar_columns_are_type_errors():
    with pytest.raises(TypeError, match="y_true"):
        make_batch(num_classes=2, y_true=1, y_score=[0.1])


# ---------------------------------------------------------------------------------------------
# slice columns from any container give the same slice keys (and the same encoded bytes)
SLICE_VALUES = {
    "strings_with_none": ["a", "b", None, "a", "b", "a"],
    "ints": [1, 2, 3, 1, 2, 1],
    "numeric_strings": ["1", "2", "3", "1", "2", "1"],
    "bools_with_none": [True, False, None, True, False, True],
}
SLICE_CONTAINERS = {
    "numpy": lambda v: np.array(v, dtype=object if any(x is None or isinstance(x, str) for x in v) else None),
    "pandas": lambda v: pd.Series(v),
    "pandas_extension": lambda v: pd.Series(v).convert_dtypes(),  # string / Int64 / boolean
    "pyarrow": lambda v: pa.array(v),
    "pyarrow_chunked": lambda v: pa.chunked_array([v[:2], v[2:]]),
}
PANDAS_EXT_SLICE_BUG = (
    "core bug: as_array converts pandas string/boolean extension dtypes with to_numpy(dtype=float64) "
    "when it can, so slice values change type (string '1' -> 1.0, boolean True -> 1.0): slice keys "
    "and encoded accumulators differ from list/numpy/pyarrow input"
)


@pytest.mark.parametrize("container", list(SLICE_CONTAINERS))
@pytest.mark.parametrize("values", list(SLICE_VALUES))
def test_slice_keys_do_not_depend_on_the_container(values, container, request):
    v = SLICE_VALUES[values]
    n = len(v)
    ev = Evaluation(label_col="y", score_col="s", slices="g")
    base = {"y": [i % 2 for i in range(n)], "s": [0.1 * i for i in range(n)]}
    want = ev.fold(ev.zero(), {**base, "g": list(v)})
    got = ev.fold(ev.zero(), {**base, "g": SLICE_CONTAINERS[container](v)})
    typed = lambda acc: sorted((tuple((c, type(x).__name__, x) for c, x in k) for k in acc.slices()), key=repr)  # noqa: E731
    assert typed(got) == typed(want)
    assert ev.encode(got) == ev.encode(want)


# ---------------------------------------------------------------------------------------------
# on_invalid="skip"
def test_skip_mode_skips_and_counts_per_slice():
    ev = Evaluation(
        label_col="y", score_col="s", weight_col="w", slices=["g", "g,h"], on_invalid="skip",
        metrics=["accuracy", "example_count", "weighted_example_count"],
    )  # fmt: skip
    batch = {
        "y": [1, 0, 2, 1, None, 0, 1],
        "s": [0.9, 0.1, 0.5, np.nan, 0.5, 0.2, 0.7],
        "w": [1.0, 2.0, 1.0, 1.0, 1.0, -1.0, 3.0],
        "g": ["a", "a", "a", "b", None, "b", None],
        "h": [1, 1, 2, 2, 2, 1, 1],
    }
    res = ev.finish(ev.fold(ev.zero(), batch, row_offset=100))
    got = {r.slice: (r.n, r.skipped, r.weight) for r in res.slices}
    assert got == {
        (): (3, 4, 6.0),
        (("g", "a"),): (2, 1, 3.0),
        (("g", "b"),): (0, 2, 0.0),
        (("g", None),): (1, 1, 3.0),
        (("g", "a"), ("h", 1)): (2, 0, 3.0),
        (("g", "a"), ("h", 2)): (0, 1, 0.0),
        (("g", "b"), ("h", 1)): (0, 1, 0.0),
        (("g", "b"), ("h", 2)): (0, 1, 0.0),
        (("g", None), ("h", 1)): (1, 0, 3.0),
        (("g", None), ("h", 2)): (0, 1, 0.0),
    }
    assert res.to_dict()["skipped"] == 4
    assert res.overall.metrics["example_count"] == 3
    assert res.overall.metrics["accuracy"] == 1.0
    assert np.isnan(res[(("g", "b"),)].metrics["accuracy"])
    # the skipped rows never reach any state: same as folding only the valid rows
    valid = [0, 1, 6]
    ev_raise = Evaluation(label_col="y", score_col="s", weight_col="w", slices=["g", "g,h"], metrics=["accuracy", "example_count", "weighted_example_count"])
    clean = ev_raise.finish(ev_raise.fold(ev_raise.zero(), {k: [v[i] for i in valid] for k, v in batch.items()}))
    assert clean.overall.metrics == res.overall.metrics
    assert clean.overall.n == res.overall.n and clean.overall.skipped == 0


def test_skip_mode_all_rows_invalid():
    ev = Evaluation(label_col="y", score_col="s", slices="g", on_invalid="skip")
    res = ev.finish(ev.fold(ev.zero(), {"y": [3, 4], "s": [0.1, 0.2], "g": ["a", "a"]}))
    assert [(r.slice, r.n, r.skipped) for r in res.slices] == [((), 0, 2), ((("g", "a"),), 0, 2)]
    assert res.to_dict()["skipped"] == 2


def test_skip_mode_make_batch_mask():
    batch, invalid = make_batch(num_classes=2, y_true=[0, 1, 5, 1], y_score=[0.1, np.inf, 0.2, 0.3], on_invalid="skip")
    assert invalid.tolist() == [False, True, True, False]
    assert batch.y_true.tolist() == [0, 1] and batch.y_score.tolist() == [0.1, 0.3]


def test_raise_mode_is_default_and_bad_on_invalid_rejected():
    ev = Evaluation(label_col="y", score_col="s")
    with pytest.raises(ValueError, match="row 1"):
        ev.fold(ev.zero(), {"y": [0, 3], "s": [0.1, 0.2]})
    with pytest.raises(ValueError, match="on_invalid"):
        Evaluation(label_col="y", score_col="s", on_invalid="drop")


# ---------------------------------------------------------------------------------------------
# missing columns
MISSING_INPUTS = {
    "dict": lambda: {"label": [0, 1], "scr": [0.1, 0.2]},
    "pandas": lambda: pd.DataFrame({"label": [0, 1], "scr": [0.1, 0.2]}),
    "record_batch": lambda: pa.record_batch({"label": [0, 1], "scr": [0.1, 0.2]}),
    "table": lambda: pa.table({"label": [0, 1], "scr": [0.1, 0.2]}),
    "rows": lambda: [{"label": 0, "scr": 0.1}, {"label": 1, "scr": 0.2}],
}


@pytest.mark.parametrize("kind", list(MISSING_INPUTS))
def test_missing_column_lists_available_columns(kind):
    ev = Evaluation(label_col="label", score_col="score")
    with pytest.raises(ValueError) as err:
        ev.fold(ev.zero(), MISSING_INPUTS[kind]())
    msg = str(err.value)
    assert "'score'" in msg and "label" in msg and "scr" in msg and "available" in msg


def test_missing_slice_column_is_reported():
    ev = Evaluation(label_col="label", score_col="scr", slices="region")
    with pytest.raises(ValueError, match=r"'region'.*available"):
        ev.fold(ev.zero(), {"label": [0, 1], "scr": [0.1, 0.2]})


@pytest.mark.parametrize("kind", ["dict", "pandas", "record_batch", "table", "rows"])
def test_evaluation_input_kinds_give_identical_accumulators(kind):
    c = binary_case("balanced", weighted=True)
    groups = ["x", "y", None, "x"] * (c.n // 4)
    cols = {"label": c.y_true.tolist(), "score": c.y_score.tolist(), "w": c.sample_weight.tolist(), "g": groups}
    make = {
        "dict": lambda: cols,
        "pandas": lambda: pd.DataFrame(cols),
        "record_batch": lambda: pa.record_batch(cols),
        "table": lambda: pa.Table.from_batches([pa.record_batch({k: v[:20] for k, v in cols.items()}), pa.record_batch({k: v[20:] for k, v in cols.items()})]),
        "rows": lambda: [dict(zip(cols, vals)) for vals in zip(*cols.values())],
    }[kind]
    ev = Evaluation(label_col="label", score_col="score", weight_col="w", slices="g")
    want = ev.fold(ev.zero(), cols)
    got = ev.fold(ev.zero(), make())
    assert ev.encode(got) == ev.encode(want)


def test_plan_rejects_unknown_task_settings():
    with pytest.raises(ValueError, match="num_classes"):
        Task(num_classes=1)
    with pytest.raises(ValueError, match="threshold_rule"):
        Task(threshold_rule="=>")
    with pytest.raises(ValueError, match="zero_division"):
        Plan(["f1@zero_division=2"], Task())


# ---------------------------------------------------------------------------------------------
# non-numbers, huge ints and deep nesting: TypeError/ValueError naming column, value and row
def test_string_inside_multiclass_score_list_names_value_row_and_entry():
    ev = Evaluation(label_col="y", score_col="s", num_classes=3, metrics=["accuracy"])
    with pytest.raises(TypeError) as err:
        ev.evaluate([{"y": [0, 1], "s": [[0.2, 0.3, 0.5], [0.1, "high", 0.9]]}])
    check_message(err, "s", "'high'", 1)
    assert "entry 1" in str(err.value)


def test_string_in_per_class_score_columns_names_that_column_and_the_real_row():
    from mergeable_metrics.inputs.formats import build_batch

    with pytest.raises(TypeError) as err:
        build_batch(
            task=Task(num_classes=3),
            columns={"target": [0, 1], "score": [[0.1, 0.2], [0.1, "x"], [0.8, 0.3]]},
            names={"score": ["p0", "p1", "p2"]},
            row_offset=100,
        )
    check_message(err, "p1", "'x'", 101)


@pytest.mark.parametrize("column", ["y_true", "y_score", "sample_weight"])
def test_int_beyond_float64_is_a_value_error_naming_column_value_and_row(column):
    cols = dict(y_true=[0, 1, 1], y_score=[0.1, 0.2, 0.3], sample_weight=[1, 1, 1])
    cols[column] = list(cols[column])
    cols[column][2] = 10**400
    with pytest.raises(ValueError) as err:
        make_batch(num_classes=2, row_offset=7, **cols)
    assert "out of the float64 range" in str(err.value)
    check_message(err, column, "1" * 1 + "0" * 39, 9)  # the value's first digits, then its row


def test_int_beyond_float64_inside_a_score_matrix_is_a_value_error():
    ev = Evaluation(label_col="y", score_col="s", num_classes=3, metrics=["accuracy"])
    with pytest.raises(ValueError, match=r"column 's': value 1000.* at row 0, entry 2 is out of the float64 range"):
        ev.evaluate([{"y": [0], "s": [[0.1, 0.2, 10**400]]}])


def test_deeply_nested_score_lists_raise_value_error_not_recursion_error():
    deep: list = [0.5]
    for _ in range(5000):
        deep = [deep]
    ev = Evaluation(label_col="y", score_col="s", num_classes=3, metrics=["accuracy"])
    with pytest.raises(ValueError, match=r"column 's': row 0 nests lists more than 3 levels deep"):
        ev.evaluate([{"y": [0], "s": [deep]}])


@pytest.mark.parametrize("column", ["y_true", "y_score", "sample_weight"])
def test_non_numeric_values_are_skipped_and_counted_with_on_invalid_skip(column):
    y, s, w = [0, 1, 1, 0], [0.1, 0.8, 0.6, 0.3], [1.0, 2.0, 1.0, 1.0]
    cols = {"y": list(y), "s": list(s), "w": list(w)}
    cols[{"y_true": "y", "y_score": "s", "sample_weight": "w"}[column]][1] = "abc"
    ev = Evaluation(label_col="y", score_col="s", weight_col="w", metrics=["accuracy"], on_invalid="skip")
    got = ev.evaluate([cols]).overall
    assert (got.n, got.skipped, got.weight) == (3, 1, 3.0)
    assert got.metrics["accuracy"] == 1.0  # rows 0, 2, 3 are all right at 0.5


def test_non_numeric_values_in_a_score_matrix_are_skipped_with_on_invalid_skip():
    ev = Evaluation(label_col="y", score_col="s", num_classes=3, metrics=["accuracy"], on_invalid="skip")
    got = ev.evaluate([{"y": [0, 1, 2], "s": [[0.7, 0.2, 0.1], [0.1, None, "x"], [0.1, 0.1, 0.8]]}]).overall
    assert (got.n, got.skipped, got.metrics["accuracy"]) == (2, 1, 1.0)


def test_decimal_weights_and_scores_are_read_as_numbers():
    from decimal import Decimal

    y, s, w = [0, 1, 1, 0], [0.1, 0.8, 0.3, 0.6], [1.5, 2.0, 0.5, 1.0]
    want = Evaluation(label_col="y", score_col="s", weight_col="w", metrics=["accuracy"]).evaluate([{"y": y, "s": s, "w": w}])
    ev = Evaluation(label_col="y", score_col="s", weight_col="w", metrics=["accuracy"])
    as_list = ev.evaluate([{"y": y, "s": [Decimal(str(v)) for v in s], "w": [Decimal(str(v)) for v in w]}]).overall
    as_arrow = ev.evaluate([pa.table({"y": y, "s": s, "w": pa.array([Decimal(str(v)) for v in w], pa.decimal128(6, 2))})]).overall
    for got in (as_list, as_arrow):
        assert (got.n, got.weight) == (4, 5.0)
        assert got.metrics["accuracy"] == want.overall.metrics["accuracy"] == (1.5 + 2.0) / 5.0


@pytest.mark.parametrize("dtype", ["Int64", "boolean", "Float64"])
def test_pandas_extension_arrays_read_like_series(dtype):
    # before: pd.array(...) (what df[col].array gives) raised AttributeError: no attribute 'hasnans'
    from mergeable_metrics import ContinualEvaluation
    from mergeable_metrics.inputs.validation import as_array

    values = [1, 0, None] if dtype != "boolean" else [True, False, None]
    got, want = as_array(pd.array(values, dtype=dtype), "y"), as_array(pd.Series(values, dtype=dtype), "y")
    assert got.dtype == want.dtype and [None if v is None or v != v else v for v in got] == [None if v is None or v != v else v for v in want]
    assert as_array(pd.array([1, 0], dtype=dtype if dtype != "boolean" else "Int64"), "y").tolist() == [1, 0]
    ev = ContinualEvaluation(2, 2)
    with pytest.raises(ValueError, match=r"column 'label': invalid value (None|nan) at row 2"):
        ev.update(0, 0, pd.array([1, 0, None], dtype="Int64" if dtype == "boolean" else dtype), [1, 0, 1])


# ---------------------------------------------------------------------------------------------
# a missing value is named as given: None (a Python None, a pandas NA) or null (an Arrow null),
# and nan only for a real NaN
def _obj(*values):
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


_Y, _S, _W = [1, 0, 1, 0], [0.9, 0.2, 0.7, 0.4], [1.0, 2.0, 1.0, 1.0]


def _with(column, index, value, kind):
    cols = {"y": list(_Y), "s": list(_S), "w": list(_W)}
    cols[column][index] = value
    if kind == "list":
        return cols
    if kind == "numpy":
        return {k: _obj(*v) if any(x is None for x in v) else np.array(v) for k, v in cols.items()}
    if kind == "arrow":
        return pa.table({k: pa.array(v, pa.int64() if k == "y" else pa.float64()) for k, v in cols.items()})
    if kind == "pandas":  # nullable dtypes: NA for None
        return pd.DataFrame({"y": pd.array(cols["y"], dtype="Int64"), "s": pd.array(cols["s"], dtype="Float64"), "w": pd.array(cols["w"], dtype="Float64")})
    if kind == "rows":
        return [{k: cols[k][i] for k in cols if not (cols[k][i] is None and k == column)} for i in range(4)]  # a missing key
    raise AssertionError(kind)


@pytest.mark.parametrize("kind, shown", [("list", "None"), ("numpy", "None"), ("arrow", "null"), ("pandas", "None"), ("rows", "None")])
@pytest.mark.parametrize("column, rule", [("y", "labels must be 0 or 1"), ("s", "scores must be finite"), ("w", "weights must be finite")])
def test_a_missing_value_is_named_as_given(kind, shown, column, rule):
    ev = Evaluation(label_col="y", score_col="s", weight_col="w", metrics=["roc_auc", "precision"])
    with pytest.raises(ValueError, match=rf"^column '{column}': invalid value {shown} at row 12: {rule}"):
        ev.fold(ev.zero(), _with(column, 2, None, kind), row_offset=10)
    skip = Evaluation(label_col="y", score_col="s", weight_col="w", metrics=["precision"], on_invalid="skip")
    r = skip.finish(skip.fold(skip.zero(), _with(column, 2, None, kind)))
    assert (r.overall.n, r.overall.skipped) == (3, 1)


@pytest.mark.parametrize("kind", ["list", "numpy", "arrow", "pandas_float64"])
def test_a_real_nan_is_named_nan(kind):
    s = [0.9, float("nan"), 0.7, 0.4]
    data = {
        "list": {"y": _Y, "s": s},
        "numpy": {"y": np.array(_Y), "s": np.array(s)},
        "arrow": pa.table({"y": _Y, "s": pa.array(s)}),
        "pandas_float64": pd.DataFrame({"y": _Y, "s": s}),
    }[kind]
    assert kind != "arrow" or data["s"].null_count == 0  # Arrow keeps a NaN apart from a null
    with pytest.raises(ValueError, match=r"^column 's': invalid value nan at row 1: scores must be finite"):
        Evaluation(label_col="y", score_col="s", metrics=["roc_auc"]).evaluate(data)


def test_missing_values_are_named_as_given_on_every_path():
    # MetricCollection.update (the plain (N,) path and the formats' path)
    with pytest.raises(ValueError, match=r"^column 'y_score': invalid value null at row 1: scores must be finite"):
        MetricCollection("roc_auc").update([1, 0, 1], pa.array([0.9, None, 0.3]))
    with pytest.raises(ValueError, match=r"^column 'y_true': invalid value null at row 2: labels must be integers in \[0, 3\)"):
        MetricCollection("accuracy", num_classes=3).update(pa.array([0, 1, None]), y_pred=[0, 1, 2])
    with pytest.raises(ValueError, match=r"^column 'y_score': invalid value None at row 0, entry 1: scores must be finite"):
        MetricCollection("roc_auc@macro", num_classes=3).update([0, 1], y_score=[[0.2, None, 0.3], [0.1, 0.8, 0.1]])
    # regression targets and predictions, a multioutput entry
    reg = Evaluation(label_col="y", prediction_col="p", task="regression", metrics=["mse"])
    with pytest.raises(ValueError, match=r"^column 'p': invalid value null at row 1: values must be finite"):
        reg.evaluate(pa.table({"y": [1.0, 2.0], "p": pa.array([1.0, None])}))
    with pytest.raises(ValueError, match=r"^column 'y': invalid value None at row 0: targets must be finite"):
        reg.evaluate({"y": [None, 2.0], "p": [1.0, 2.0]})
    mo = Evaluation(label_col="y", prediction_col="p", num_outputs=2, metrics=["mse"])
    with pytest.raises(ValueError, match=r"^column 'p': invalid value None at row 1, entry 0: values must be finite"):
        mo.evaluate({"y": [[1.0, 2.0], [1.0, 2.0]], "p": [[1.0, 2.0], [None, 2.0]]})
    # measures (mean_measure): an Arrow null measure
    with pytest.raises(ValueError, match=r"^column 'measure': invalid value null at row 1: values must be finite"):
        MetricCollection("mean_measure").update(measure=pa.array([1.0, None]))
    with pytest.raises(ValueError, match=r"^column 'm': invalid value null at row 1: values must be finite"):
        Evaluation(measure_col="m", metrics=["mean_measure"]).evaluate(pa.table({"m": pa.array([1.0, None])}))
    with pytest.raises(ValueError, match=r"^column 'p': invalid value null at row 1, entry 0: values must be finite"):
        mo.evaluate(pa.table({"y": [[1.0, 2.0], [1.0, 2.0]], "p": pa.array([[1.0, 2.0], [None, 2.0]])}))
    # class values: a missing label is not one of the classes
    with pytest.raises(ValueError, match=r"^column 'y': invalid value null at row 1: not one of classes=\[-1, 1\]"):
        Evaluation(label_col="y", score_col="s", classes=[-1, 1]).evaluate(pa.table({"y": pa.array([1, None]), "s": [0.3, 0.4]}))
    # ids: an Arrow null id is a missing id named null (a NaN id stays nan, see test_bootstrap)
    ev = Evaluation(label_col="y", score_col="s", metrics=["roc_auc"], ci="bootstrap", id_col="id")
    with pytest.raises(ValueError, match=r"^column 'id': invalid value null at row 2: ids must not be missing"):
        ev.evaluate(pa.table({"y": [1, 0, 1], "s": [0.2, 0.4, 0.9], "id": pa.array([1, 2, None])}))
    # a value column that is also sliced keeps its slice value None (the message names it as numpy reads it)
    sl = Evaluation(label_col="y", score_col="s", slices=["y"], metrics=["roc_auc"], on_invalid="skip")
    r = sl.evaluate(pa.table({"y": pa.array([1, None, 0]), "s": [0.2, 0.4, 0.9]}))
    assert r.overall.skipped == 1 and r[{"y": None}].skipped == 1


def test_a_score_column_of_width_k_with_the_binary_default_names_the_multiclass_settings():
    # issue 28 item 21: a 3-wide probability column used to fail on the labels ("labels must be 0 or 1")
    import pyarrow as pa

    from mergeable_metrics import Evaluation

    rng = np.random.default_rng(0)
    y, s = rng.integers(0, 3, 30), rng.dirichlet([1, 1, 1], 30)
    for batch in ({"y": y, "s": s}, pa.table({"y": y, "s": pa.array(s.tolist())})):
        for on_invalid in ("raise", "skip"):  # a column's shape, not a row's value: refused in either mode
            with pytest.raises(ValueError) as e:
                Evaluation(label_col="y", score_col="s", metrics=["accuracy"], on_invalid=on_invalid).evaluate([batch])
            msg = str(e.value)
            assert "column 's' holds 3 scores per row" in msg and "task='multiclass', num_classes=3" in msg and "--task multiclass --num-classes 3" in msg
            assert "must be 0 or 1" not in msg
    # and with the settings it names, the run works (accuracy as sklearn computes it)
    from sklearn.metrics import accuracy_score

    got = Evaluation(label_col="y", score_col="s", metrics=["accuracy"], task="multiclass", num_classes=3).evaluate([{"y": y, "s": s}])
    assert got.overall.metrics["accuracy"] == pytest.approx(accuracy_score(y, s.argmax(axis=1)))


def test_text_labels_without_classes_name_the_classes_setting():
    from mergeable_metrics import Evaluation

    y = np.array(["yes", "no", "no", "yes"])
    with pytest.raises(TypeError) as e:
        Evaluation(label_col="y", score_col="s", metrics=["accuracy"]).evaluate([{"y": y, "s": np.array([0.9, 0.2, 0.4, 0.7])}])
    msg = str(e.value)
    assert "column 'y': value 'yes' at row 0 is not a number" in msg
    assert "classes=['no', 'yes']" in msg and "--classes no,yes" in msg


# -- newcomer report: the binary default's label errors name the settings that read the labels --
def test_binary_default_with_three_labels_names_task_multiclass_and_num_classes():
    with pytest.raises(ValueError) as e:
        MetricCollection("accuracy").update([0, 1, 2], y_pred=[0, 1, 1])
    msg = str(e.value)
    assert msg.startswith("column 'y_true': invalid value 2.0 at row 2: labels must be 0 or 1")
    assert "task='multiclass', num_classes=3" in msg and "--task multiclass --num-classes 3" in msg
    # the settings it names read the batch (accuracy as scikit-learn computes it)
    from sklearn.metrics import accuracy_score

    m = MetricCollection("accuracy", task="multiclass", num_classes=3)
    m.update([0, 1, 2], y_pred=[0, 1, 1])
    assert m.compute()["accuracy"] == pytest.approx(accuracy_score([0, 1, 2], [0, 1, 1]))


def test_binary_default_with_labels_one_and_two_names_classes():
    with pytest.raises(ValueError) as e:
        MetricCollection("accuracy").update([1, 2, 1], y_pred=[1, 2, 2])
    msg = str(e.value)
    assert "labels must be 0 or 1" in msg and "classes=[1, 2]" in msg and "--classes 1,2" in msg
    assert "num_classes" not in msg
    from sklearn.metrics import accuracy_score

    m = MetricCollection("accuracy", classes=[1, 2])
    m.update([1, 2, 1], y_pred=[1, 2, 2])
    assert m.compute()["accuracy"] == pytest.approx(accuracy_score([1, 2, 1], [1, 2, 2]))


def test_a_regression_metric_on_the_binary_default_names_task_regression():
    with pytest.raises(ValueError, match=r"metric 'r2' is not defined for binary tasks.*pass task='regression'"):
        MetricCollection("r2")


def test_labels_that_are_no_class_ids_get_no_class_hint():
    # NaN, inf and huge values are no classes (and 1e300 used to overflow the hint's class count)
    for bad in (float("nan"), float("inf"), 1e300, 2.0**63):
        with pytest.raises(ValueError) as e:
            MetricCollection("accuracy").update([0, bad, 1], y_pred=[0, 1, 1])
        assert str(e.value).endswith("labels must be 0 or 1"), str(e.value)
