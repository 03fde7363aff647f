"""Regression batches checked by the moments kernel's own pass (issue 25, round 6).

``MetricCollection(..., task="regression").update`` of plain float64 (N,) targets and predictions
(and weights) validates them with the compiled pass that computes the regression moments' exact
sums (:func:`mergeable_metrics._util.exact_kernels.regression_stacked`; the sums travel with the
batch as :attr:`Batch.sums`), not with separate numpy reductions. This file checks that:

* the folded states are the true sums (``fractions.Fraction``) and the numpy path's bytes
  (``MERGEABLE_METRICS_DISABLE_NUMBA``) under any batching, adversarial values included;
* the kernel runs once per batch (the fold reuses the validation's sums);
* every invalid value (NaN / inf target or prediction, NaN / inf / negative weight, an error
  ``|p - y|`` that overflows) raises the reference path's message (column, value, row) and
  folds nothing; ``-0.0`` weights are valid.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mergeable_metrics import MetricCollection
from mergeable_metrics._util import exact_kernels as K
from mergeable_metrics.inputs.formats import REGRESSION_SUMS, build_batch, make_batch

pytestmark = pytest.mark.skipif(not K.AVAILABLE, reason="numba kernels disabled or not installed")

EPS = float(np.finfo(np.float64).eps)
ADVERSARIAL = [1e308, 1e300, 1e150, 1e-300, 1e16, 1.0, 0.1, 2.0**53, 2.0**53 + 2, 5e-324, 2.2250738585072014e-308, 1e-17, 3.0, 0.0, -0.0]
VALUES = st.one_of(st.floats(allow_nan=False, allow_infinity=False, width=64), st.sampled_from(ADVERSARIAL + [-v for v in ADVERSARIAL]))
WEIGHTS = st.one_of(st.floats(min_value=0.0, max_value=1e300, allow_nan=False), st.sampled_from([0.0, -0.0, 5e-324, 1e-300, 0.5, 1.0, 3.0, 1e16]))


def _make() -> MetricCollection:
    return MetricCollection("r2", "mse", "mae", task="regression")


def _fold(y, p, w, edges) -> MetricCollection:
    mc = _make()
    for a, c in zip(edges, edges[1:]):
        mc.update(y[a:c], y_pred=p[a:c], sample_weight=None if w is None else w[a:c])
    return mc


def _numpy_bytes(y, p, w, edges) -> bytes:
    K.ready()
    saved, K.AVAILABLE = K.AVAILABLE, False
    try:
        return _fold(y, p, w, edges).encode()
    finally:
        K.AVAILABLE = saved


def _finite_errors(y, p) -> bool:
    with np.errstate(over="ignore"):
        ae = np.abs(p - y)
        return bool(np.isfinite(ae).all() and np.isfinite(ae / np.maximum(np.abs(y), EPS)).all())


@settings(max_examples=120, deadline=None)
@given(st.lists(st.tuples(VALUES, VALUES, WEIGHTS), min_size=1, max_size=40), st.lists(st.integers(1, 40), max_size=4), st.booleans())
def test_updates_checked_by_the_kernel_fold_the_true_sums_and_the_numpy_bytes(rows, cuts, weighted):
    y = np.array([r[0] for r in rows])
    p = np.array([r[1] for r in rows])
    if not _finite_errors(y, p):
        return
    w = np.array([r[2] for r in rows]) if weighted else None
    edges = sorted({0, len(rows), *[c % (len(rows) + 1) for c in cuts]})
    mc = _fold(y, p, w, edges)
    assert mc.encode() == _numpy_bytes(y, p, w, edges)
    st_ = next(s for s in mc.states if s.kind == "regression_moments")
    ws = [Fraction(1)] * len(y) if w is None else [Fraction(float(v)) for v in w]
    fy, fp = [Fraction(float(v)) for v in y], [Fraction(float(v)) for v in p]
    ae = np.abs(p - y)
    fa = [Fraction(float(v)) for v in ae]
    fq = [Fraction(float(v)) for v in ae / np.maximum(np.abs(y), EPS)]
    true = {
        "weight": sum(ws, Fraction(0)),
        "sum_y": sum((a * b for a, b in zip(ws, fy)), Fraction(0)),
        "sum_p": sum((a * b for a, b in zip(ws, fp)), Fraction(0)),
        "sum_yy": sum((a * b * b for a, b in zip(ws, fy)), Fraction(0)),
        "sum_pp": sum((a * b * b for a, b in zip(ws, fp)), Fraction(0)),
        "sum_yp": sum((a * b * c for a, b, c in zip(ws, fy, fp)), Fraction(0)),
        "sum_abs_e": sum((a * b for a, b in zip(ws, fa)), Fraction(0)),
        "sum_ape": sum((a * b for a, b in zip(ws, fq)), Fraction(0)),
    }
    for name, v in true.items():
        assert st_.exact[name].fraction() == v, name
    assert int(st_["count"]) == len(y)


@pytest.mark.parametrize("weighted", [False, True])
def test_the_kernel_runs_once_per_batch_and_its_sums_travel_with_the_batch(weighted, monkeypatch):
    rng = np.random.default_rng(6)
    n = 5000
    y = rng.normal(100.0, 10.0, n)
    p = y + rng.normal(0.0, 3.0, n)
    w = rng.random(n) if weighted else None
    mc = _make()
    batch, _ = make_batch(
        num_classes=mc.plan.task.num_classes, y_true=y, y_pred=p, sample_weight=w, task=mc.plan.task, needs=mc.plan.needs, regression_sums=True
    )
    assert batch.sums is not None and batch.sums[0] is REGRESSION_SUMS and batch.sums[1] is y and batch.sums[2] is p and batch.sums[3] is w
    calls = []
    real = K.regression_stacked
    monkeypatch.setattr(K, "regression_stacked", lambda *a, **k: calls.append(1) or real(*a, **k))
    for _ in range(3):
        mc.update(y, y_pred=p, sample_weight=w)
    assert len(calls) == 3  # once per update: the fold reuses the validation's sums
    monkeypatch.setattr(K, "regression_stacked", real)
    assert mc.encode() == _numpy_bytes(np.concatenate([y] * 3), np.concatenate([p] * 3), None if w is None else np.concatenate([w] * 3), [0, n, 2 * n, 3 * n])


def test_a_plan_without_moments_does_not_run_the_kernel_in_its_validation(monkeypatch):
    calls = []
    real = K.regression_stacked
    monkeypatch.setattr(K, "regression_stacked", lambda *a, **k: calls.append(1) or real(*a, **k))
    mc = MetricCollection("median_absolute_error", task="regression")
    assert not mc.plan.regression_sums
    mc.update(np.array([1.0, 2.0, 3.0]), y_pred=np.array([1.5, 2.0, 2.0]))
    assert calls == []
    assert mc.compute()["median_absolute_error"] == 0.5


def _reference_message(y, p, w) -> str:
    """The message of the reference path (the format machinery of build_batch)."""
    task = _make().plan.task
    with pytest.raises(ValueError) as err:
        build_batch(
            task=task,
            columns={"target": y, "score": None, "prediction": p, "measure": None},
            names={"target": "y_true", "score": "y_score", "prediction": "y_pred", "measure": "measure"},
            sample_weight=w,
            weight_name="sample_weight",
            formats={},
            needs=frozenset({"target", "prediction"}),
            row_offset=0,
            on_invalid="raise",
        )
    return str(err.value)


def _invalid_cases():
    y = np.array([1.0, 2.0, 3.0, 4.0])
    p = np.array([1.5, 2.0, 2.5, 4.5])
    w = np.array([1.0, 0.5, 2.0, 0.0])
    for col, pos, v in [
        ("y", 2, np.nan),
        ("y", 0, np.inf),
        ("p", 3, -np.inf),
        ("p", 1, np.nan),
        ("w", 1, np.nan),
        ("w", 2, np.inf),
        ("w", 3, -1e-300),
        ("w", 0, -2.0),
    ]:
        a = {"y": y.copy(), "p": p.copy(), "w": w.copy()}
        a[col][pos] = v
        yield pytest.param(a["y"], a["p"], a["w"], id=f"{col}[{pos}]={v}")


@pytest.mark.parametrize("y,p,w", list(_invalid_cases()))
def test_an_invalid_value_raises_the_reference_message_and_folds_nothing(y, p, w):
    mc = _make()
    mc.update(np.array([0.5, 1.0]), y_pred=np.array([0.25, 1.5]), sample_weight=np.array([1.0, 2.0]))
    before = mc.encode()
    want = _reference_message(y, p, w)
    with pytest.raises(ValueError) as err:
        mc.update(y, y_pred=p, sample_weight=w)
    # the reference path's message, but for the row offset (this batch starts at row 2 of the input)
    assert str(err.value) == want.replace(f"row {_row(want)}", f"row {_row(want) + 2}")
    assert "row" in want and ("y_true" in want or "y_pred" in want or "sample_weight" in want)
    assert mc.encode() == before  # nothing folded


def _row(message: str) -> int:
    import re

    return int(re.search(r"row (\d+)", message).group(1))


def test_an_overflowing_error_raises_the_states_message_and_folds_nothing():
    mc = _make()
    mc.update(np.array([0.5, 1.0]), y_pred=np.array([0.25, 1.5]))
    before = mc.encode()
    with pytest.raises(ValueError, match=r"the error of row 2 overflows float64 \(target -1\.7e\+308, prediction 1\.7e\+308"):
        mc.update(np.array([-1.7e308, 1.0]), y_pred=np.array([1.7e308, 1.0]))
    assert mc.encode() == before


def test_negative_zero_weights_are_valid_and_the_kernel_declines_negative_ones():
    y = np.array([1.0, 2.0, 3.0])
    p = np.array([1.5, 2.0, 2.0])
    assert K.regression_stacked(y, p, np.array([1.0, -0.0, 2.0])) is not None
    assert K.regression_stacked(y, p, np.array([1.0, -5e-324, 2.0])) is None
    assert K.regression_stacked(y, p, np.array([1.0, np.nan, 2.0])) is None
    mc = _make()
    mc.update(y, y_pred=p, sample_weight=np.array([1.0, -0.0, 2.0]))
    ref = MetricCollection("r2", "mse", "mae", task="regression")
    ref.update(y[[0, 2]], y_pred=p[[0, 2]], sample_weight=np.array([1.0, 2.0]))
    assert mc.compute()["mse"] == ref.compute()["mse"] == (0.25 * 1 + 1.0 * 2) / 3


def test_a_plain_update_without_numba_still_validates(monkeypatch):
    K.ready()
    monkeypatch.setattr(K, "AVAILABLE", False)
    mc = _make()
    with pytest.raises(ValueError, match="y_pred"):
        mc.update(np.array([1.0, 2.0]), y_pred=np.array([1.0, np.nan]))
    mc.update(np.array([1.0, 2.0]), y_pred=np.array([1.5, 2.0]))
    assert mc.compute()["mae"] == 0.25


def _raw_fraction(acc: np.ndarray, exp: int) -> Fraction:
    """The exact value of raw limbs ``acc`` (1, L) at ``exp`` (limb j weighs 2**(32 (j + exp)))."""
    return sum((Fraction(int(v)) * Fraction(2) ** (32 * (j + exp)) for j, v in enumerate(acc[0].tolist())), Fraction(0))


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0.5, 2.0), st.floats(0.5, 2.0), st.floats(0.0, 1.0)), min_size=1, max_size=60),
    st.integers(-300, 300),
    st.integers(-300, 300),
    st.integers(0, 60),
)
def test_three_factor_sums_with_fewer_grids_for_tiers_0_and_2_are_exact(rows, ey, ew, spread):
    """``y y w`` / ``y p w`` of moderate ranges: the grid kernel puts the rounded products and the
    smallest terms on one grid fewer than the middle tier (``_rows3``); the sums are the true ones."""
    y = np.array([r[0] for r in rows]) * 2.0**ey
    p = np.array([r[1] for r in rows]) * 2.0**ey
    w = np.array([r[2] for r in rows]) * 2.0**ew
    w[::3] *= 2.0**-spread  # widen the weights' range (tier 1 then needs one more grid than tiers 0 and 2)
    for fs in ([y, y, w], [y, p, w], [p, p, w]):
        acc, exp = K.sum_products(fs, None, 1)
        true = sum((Fraction(float(a)) * Fraction(float(b)) * Fraction(float(c)) for a, b, c in zip(*fs)), Fraction(0))
        assert _raw_fraction(acc, exp) == true


def test_the_benchmarks_weighted_products_are_exact():
    """The typical weighted batch (targets ~ N(100, 10), weights uniform in [0, 1)): its
    three-factor sums take the tier-0/2 reduced grids (K = 3 for tier 1, 2 for tiers 0 and 2)."""
    rng = np.random.default_rng(3)
    y = rng.normal(100.0, 10.0, 3000)
    p = y + rng.normal(0.0, 3.0, 3000)
    w = rng.random(3000)
    for fs in ([y, y, w], [y, p, w]):
        acc, exp = K.sum_products(fs, None, 1)
        assert _raw_fraction(acc, exp) == sum((Fraction(float(a)) * Fraction(float(b)) * Fraction(float(c)) for a, b, c in zip(*fs)), Fraction(0))
