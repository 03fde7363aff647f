"""The plain-float fast path of ``make_batch`` (issue 25, round 3): (N,) float64 regression targets
and predictions, or one measure column, are read without the per-column format machinery. The
batch must be the one ``build_batch`` (the formats path) makes of the same columns, and any
invalid or unusual input (NaN, inf, negative or NaN weights, masked arrays, other dtypes, lengths
that differ, empty batches) must get ``build_batch``'s own result or message."""

from __future__ import annotations

import numpy as np
import pytest

from mergeable_metrics import MetricCollection
from mergeable_metrics.inputs import formats as F
from mergeable_metrics.inputs.validation import Batch

REG = MetricCollection("r2", "mse", task="regression")
MEAN = MetricCollection(measures=["loss"])
UNNAMED = MetricCollection("mean_measure")


def _make(mc, y=None, p=None, w=None, values=None, measure_name="measure"):
    return F.make_batch(
        num_classes=mc.task.num_classes, y_true=y, y_pred=p, sample_weight=w, task=mc.task, formats=mc.formats,
        values=values, measure_name=measure_name, needs=mc.plan.needs,
    )  # fmt: skip


def _reference(mc, y=None, p=None, w=None, values=None, measure_name="measure"):
    return F.build_batch(
        task=mc.task, columns={"target": y, "score": None, "prediction": p, "measure": values},
        names={"target": "y_true", "score": "y_score", "prediction": "y_pred", "measure": measure_name},
        sample_weight=w, weight_name="sample_weight", formats={}, needs=frozenset(mc.plan.needs),
    )  # fmt: skip


def _same(a: Batch, b: Batch) -> None:
    for name in ("y_true", "y_score", "y_pred", "sample_weight", "values", "row_of", "y_score_class0"):
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None) == (y is None), name
        if x is not None:
            assert x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x, y), name


RNG = np.random.default_rng(3)
Y = RNG.normal(size=50)
P = Y + RNG.normal(size=50)
W = RNG.random(50)


@pytest.mark.parametrize("w", [None, W, np.zeros(50), -np.zeros(50)])
def test_regression_columns_take_the_fast_path_and_equal_the_formats_path(w):
    got, invalid = _make(REG, Y, P, w)
    assert invalid is None and got.y_true is Y and got.y_pred is P  # no copies: the fast path
    _same(got, _reference(REG, Y, P, w)[0])


@pytest.mark.parametrize("w", [None, W])
def test_measure_columns_take_the_fast_path_and_equal_the_formats_path(w):
    got, _ = _make(MEAN, values=[Y], w=w, measure_name=["loss"])
    assert got.values.base is Y or got.values.base is Y.base or np.shares_memory(got.values, Y)
    _same(got, _reference(MEAN, values=[Y], w=w, measure_name=["loss"])[0])
    got, _ = _make(UNNAMED, values=Y, w=w)
    assert got.values is Y
    _same(got, _reference(UNNAMED, values=Y, w=w)[0])


def _bad(x, i, v):
    x = x.copy()
    x[i] = v
    return x


@pytest.mark.parametrize(
    "y, p, w",
    [
        (_bad(Y, 7, np.nan), P, None),
        (Y, _bad(P, 3, np.inf), None),
        (Y, P, _bad(W, 5, -1.0)),
        (Y, P, _bad(W, 9, np.nan)),
        (Y, P, _bad(W, 2, np.inf)),
        (Y, P[:40], None),
        (Y, P, W[:40]),
    ],
)
def test_invalid_regression_columns_raise_the_formats_path_message(y, p, w):
    with pytest.raises(ValueError) as ref:
        _reference(REG, y, p, w)
    with pytest.raises(ValueError) as got:
        _make(REG, y, p, w)
    assert str(got.value) == str(ref.value)
    with pytest.raises(ValueError) as upd:
        MetricCollection("r2", task="regression").update(y, y_pred=p, sample_weight=w)
    assert str(upd.value) == str(ref.value)


def test_invalid_measures_raise_the_formats_path_message():
    bad = _bad(Y, 4, np.nan)
    for mc, values, name in ((MEAN, [bad], ["loss"]), (UNNAMED, bad, "measure")):
        with pytest.raises(ValueError) as ref:
            _reference(mc, values=values, measure_name=name)
        with pytest.raises(ValueError) as got:
            _make(mc, values=values, measure_name=name)
        assert str(got.value) == str(ref.value)


def test_other_inputs_go_through_the_formats_path():
    masked = np.ma.masked_array(Y, mask=np.arange(50) == 3)
    for y, p in ((masked, P), (Y.astype(np.float32), P), (Y[::2], P[::2]), (Y[:0], P[:0]), (list(Y), P)):
        got, _ = _make(REG, y, p)
        _same(got, _reference(REG, y, p)[0])


def test_valid_plain_columns_never_reach_the_formats_machinery(monkeypatch):
    def refuse(**kw):
        raise AssertionError("build_batch called")

    monkeypatch.setattr(F, "build_batch", refuse)
    for w in (None, W):
        assert _make(REG, Y, P, w)[0].n == 50
        assert _make(MEAN, values=[Y], w=w, measure_name=["loss"])[0].values.shape == (50, 1)
        assert _make(UNNAMED, values=Y, w=w)[0].values.shape == (50,)
    with pytest.raises(AssertionError, match="build_batch called"):  # an invalid value: the formats path names it
        _make(REG, _bad(Y, 1, np.nan), P)
