"""The fused regression-moments kernel (issue 25, round 3) against the reference exact arithmetic.

``RegressionMomentsState.from_batch`` of (n,) targets computes every exact sum of the state (and
``max |e|``) in one compiled call (:func:`mergeable_metrics._util.exact_kernels.regression_moments`).
Each sum must be the true rational sum (``fractions.Fraction`` of the per-row ``|e|`` and ``ape``
that numpy rounds), and the state must be the reference path's (the numpy / per-sum route of
``MERGEABLE_METRICS_DISABLE_NUMBA``) bit for bit, on adversarial inputs (huge, tiny, subnormal,
cancelling, +-1e308, -0.0, zero weights) and under any re-batching; a non-finite error raises the
reference path's message.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mergeable_metrics._util import exact_kernels as K
from mergeable_metrics.inputs.validation import Batch
from mergeable_metrics.metrics.regression import RegressionLayout, RegressionMomentsState

pytestmark = pytest.mark.skipif(not K.AVAILABLE, reason="numba kernels disabled or not installed")

EPS = float(np.finfo(np.float64).eps)
ADVERSARIAL = [1e308, 1e300, 1e150, 1e-300, 1e16, 1.0, 0.1, 2.0**53, 2.0**53 + 2, 5e-324, 2.2250738585072014e-308, 1e-17, 3.0, 0.0, -0.0]
#: targets and predictions: any finite float, and the adversarial values of either sign
VALUES = st.one_of(st.floats(allow_nan=False, allow_infinity=False, width=64), st.sampled_from(ADVERSARIAL + [-v for v in ADVERSARIAL]))
#: weights: >= 0, zeros and subnormals included
WEIGHTS = st.one_of(st.floats(min_value=0.0, max_value=1e300, allow_nan=False), st.sampled_from([0.0, 0.0, 5e-324, 1e-300, 0.5, 1.0, 3.0, 1e16]))
LAYOUT = RegressionLayout()
_SUMS = ("sum_y", "sum_p", "sum_yy", "sum_pp", "sum_yp", "sum_abs_e", "sum_ape")


def _reference(batch: Batch) -> RegressionMomentsState:
    """The state through the reference path (per-sum exact sums, numpy path without numba)."""
    K.ready()
    saved, K.AVAILABLE = K.AVAILABLE, False
    try:
        return RegressionMomentsState.from_batch(LAYOUT, batch)
    finally:
        K.AVAILABLE = saved


def _true_sums(y: np.ndarray, p: np.ndarray, w: np.ndarray | None) -> dict[str, Fraction]:
    ae = np.abs(p - y)
    ape = ae / np.maximum(np.abs(y), EPS)
    ws = [Fraction(1)] * len(y) if w is None else [Fraction(float(v)) for v in w]
    F = lambda a: [Fraction(float(v)) for v in a]  # noqa: E731
    fy, fp, fa, fq = F(y), F(p), F(ae), F(ape)
    terms = {
        "weight": ws,
        "sum_y": [a * b for a, b in zip(ws, fy)],
        "sum_p": [a * b for a, b in zip(ws, fp)],
        "sum_yy": [a * b * b for a, b in zip(ws, fy)],
        "sum_pp": [a * b * b for a, b in zip(ws, fp)],
        "sum_yp": [a * b * c for a, b, c in zip(ws, fy, fp)],
        "sum_abs_e": [a * b for a, b in zip(ws, fa)],
        "sum_ape": [a * b for a, b in zip(ws, fq)],
    }
    return {k: sum(v, Fraction(0)) for k, v in terms.items()}


def _finite_errors(y: np.ndarray, p: np.ndarray) -> bool:
    with np.errstate(over="ignore"):
        ae = np.abs(p - y)
        return bool(np.isfinite(ae).all() and np.isfinite(ae / np.maximum(np.abs(y), EPS)).all())


def test_the_fused_kernel_is_used_and_equals_the_reference_on_a_typical_batch(monkeypatch):
    rng = np.random.default_rng(25)
    n = (1 << 16) + 333  # past one 1,024-row block and one 2**16-row flush
    y = rng.normal(100.0, 10.0, n)
    p = y + rng.normal(0.0, 3.0, n)
    w = rng.random(n)
    w[::7] = 0.0
    calls = []
    K.ready()
    real = K.regression_stack_sums  # the compiled call of regression_stacked
    monkeypatch.setattr(K, "regression_stack_sums", lambda *a: calls.append(1) or real(*a))
    for ww in (None, w):
        b = Batch(y, None, p, ww, None)
        got = RegressionMomentsState.from_batch(LAYOUT, b)
        ref = _reference(b)
        assert got == ref and got.encode() == ref.encode()
        e = np.abs(p - y)
        assert float(got["max_abs_e"]) == float(e.max() if ww is None else e[ww > 0].max())
    assert len(calls) == 2  # the fused path ran (it did not fall back)


@settings(max_examples=250, deadline=None)
@given(st.lists(st.tuples(VALUES, VALUES, WEIGHTS), min_size=1, max_size=25), st.booleans())
def test_fused_sums_are_the_true_sums_and_the_reference_state(rows, weighted):
    y = np.array([r[0] for r in rows])
    p = np.array([r[1] for r in rows])
    w = np.array([r[2] for r in rows]) if weighted else None
    b = Batch(y, None, p, w, None)
    if not _finite_errors(y, p):  # |e| or ape overflows: the reference path's message, from both
        with pytest.raises(ValueError) as ref_err:
            _reference(b)
        with pytest.raises(ValueError) as got_err:
            RegressionMomentsState.from_batch(LAYOUT, b)
        assert str(got_err.value) == str(ref_err.value)
        return
    got = RegressionMomentsState.from_batch(LAYOUT, b)
    assert got.encode() == _reference(b).encode()
    true = _true_sums(y, p, w)
    for name in _SUMS + (("weight",) if weighted else ()):
        assert got.exact[name].fraction() == true[name], name
    if not weighted:
        assert float(got["weight"]) == len(rows)
    ae = np.abs(p - y)
    pos = ae if w is None else ae[w > 0]
    assert float(got["max_abs_e"]) == (float(pos.max()) if pos.size else 0.0)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(VALUES, VALUES, WEIGHTS), min_size=1, max_size=40), st.lists(st.integers(1, 40), max_size=5), st.booleans())
def test_fused_folds_are_rebatching_invariant(rows, cuts, weighted):
    y = np.array([r[0] for r in rows])
    p = np.array([r[1] for r in rows])
    if not _finite_errors(y, p):
        return
    w = np.array([r[2] for r in rows]) if weighted else None
    whole = RegressionMomentsState.from_batch(LAYOUT, Batch(y, None, p, w, None))
    edges = sorted({0, len(rows), *[c % (len(rows) + 1) for c in cuts]})
    total = RegressionMomentsState.zero(LAYOUT)
    for a, c in zip(edges, edges[1:]):
        total = total.merge(RegressionMomentsState.from_batch(LAYOUT, Batch(y[a:c], None, p[a:c], None if w is None else w[a:c], None)))
    assert total.encode() == whole.encode() == _reference(Batch(y, None, p, w, None)).encode()


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(VALUES, VALUES, WEIGHTS), min_size=1, max_size=40), st.lists(st.integers(1, 40), max_size=5), st.booleans())
def test_a_running_state_folds_a_batchs_stacked_sums_as_the_merge(rows, cuts, weighted):
    """``fold`` of a state from the fused kernel adds the batch's seven raw sums to its own in one
    compiled call: the same bytes as merging the batches' states (and the reference path's), the
    fast path taken; zero batches (sums without limbs) included."""
    y = np.array([r[0] for r in rows])
    p = np.array([r[1] for r in rows])
    if not _finite_errors(y, p):
        return
    w = np.array([r[2] for r in rows]) if weighted else None
    edges = sorted({0, len(rows), *[c % (len(rows) + 1) for c in cuts]})
    parts = [Batch(y[a:c], None, p[a:c], None if w is None else w[a:c], None) for a, c in zip(edges, edges[1:])]
    parts.insert(1, Batch(np.zeros(3), None, np.zeros(3), None if w is None else np.ones(3), None))  # every sum zero
    folded = RegressionMomentsState.zero(LAYOUT)
    merged = RegressionMomentsState.zero(LAYOUT)
    for b in parts:
        folded = folded.fold(b)
        assert "_stack" in folded.__dict__  # the stacked fold (not the fieldwise merge)
        merged = merged.merge(RegressionMomentsState.from_batch(LAYOUT, b))
    ref = RegressionMomentsState.zero(LAYOUT)
    for b in parts:
        ref = ref.merge(_reference(b))
    assert folded.encode() == merged.encode() == ref.encode()


def test_the_stacked_fold_raises_the_reference_message_on_an_overflowing_error():
    s = RegressionMomentsState.from_batch(LAYOUT, Batch(np.array([1.0, 2.0]), None, np.array([1.5, 2.5]), None, None))
    with pytest.raises(ValueError, match="overflows float64"):
        s.fold(Batch(np.array([-1.7e308, 1.0]), None, np.array([1.7e308, 1.0]), None, None))


def test_fused_kernel_wide_ranges_take_the_limb_kernel_and_stay_exact():
    """Products past the float grids' moderate range (1e200 * 1e200) go through the limb kernel
    inside the same compiled call; zero weights everywhere give zero weighted sums."""
    y = np.array([1e200, -1e-200, 3.0, 5e-324, -0.0])
    p = np.array([-1e200 * 0.5, 1e-200, 3.0, 0.0, 1e-310])
    for w in (None, np.array([1.0, 2.0, 0.0, 1e300, 0.5]), np.zeros(5)):
        b = Batch(y, None, p, w, None)
        got = RegressionMomentsState.from_batch(LAYOUT, b)
        assert got.encode() == _reference(b).encode()
        true = _true_sums(y, p, w)
        for name in _SUMS:
            assert got.exact[name].fraction() == true[name], name
    assert float(RegressionMomentsState.from_batch(LAYOUT, Batch(y, None, p, np.zeros(5), None))["max_abs_e"]) == 0.0


def _numpy_collection_bytes(make, update):
    K.ready()
    saved, K.AVAILABLE = K.AVAILABLE, False
    try:
        mc = make()
        update(mc)
        return mc.encode()
    finally:
        K.AVAILABLE = saved


@pytest.mark.parametrize("kind", ["regression", "mean", "named"])
def test_a_fold_sums_the_weight_once_for_every_state(kind, monkeypatch):
    """One batch's fold into a plan's states computes the weight's exact sum once (shared by the
    example count, the regression moments and the measures' weights) and the bytes are the
    reference path's; the weight fields are the true sum of the weights."""
    from mergeable_metrics import MetricCollection
    from mergeable_metrics._util import exact as E

    rng = np.random.default_rng(7)
    n = 3000
    y = rng.normal(0.0, 1.0, n) * 10.0 ** rng.integers(-20, 20, n)
    p = y + rng.normal(0.0, 1.0, n)
    w = rng.random(n) * 10.0 ** rng.integers(-5, 5, n)
    if kind == "regression":
        make = lambda: MetricCollection("r2", "mse", "mae", task="regression")  # noqa: E731
        update = lambda mc: mc.update(y, y_pred=p, sample_weight=w)  # noqa: E731
    elif kind == "mean":
        make = lambda: MetricCollection(measures=["loss"])  # noqa: E731
        update = lambda mc: mc.update(measure=y, sample_weight=w)  # noqa: E731
    else:
        make = lambda: MetricCollection(measures=["a", "b", "c"])  # noqa: E731
        update = lambda mc: mc.update(measure={"a": y, "b": p, "c": y * 0.5}, sample_weight=w)  # noqa: E731
    calls = []
    real = E.exact_sum
    monkeypatch.setattr(E, "exact_sum", lambda *a, **k: calls.append(k.get("weights", a[1] if len(a) > 1 else None) is None and a[0] is w) or real(*a, **k))
    real_mean = K.mean_batch_sums  # a plain measure column's validation pass sums w too (issue 25, round 5)
    monkeypatch.setattr(K, "mean_batch_sums", lambda v, ww: calls.append(ww is w) or real_mean(v, ww))
    real_fold = K.mean_fold  # update's fast path for one measure: checks, sums and adds in one call (issue 25, round 8)
    monkeypatch.setattr(K, "mean_fold", lambda v, ww, has_w, *rest: calls.append(has_w and ww is w) or real_fold(v, ww, has_w, *rest))
    fused = K.regression_stacked  # the regression kernel sums w itself when asked (want_w)
    monkeypatch.setattr(K, "regression_stacked", lambda y_, p_, w_, want_w=True: calls.append(w_ is w and want_w) or fused(y_, p_, w_, want_w))
    mc = make()
    update(mc)
    assert sum(calls) == 1  # the plain sum of w: once per fold (exact_sum, or in the regression kernel)
    monkeypatch.setattr(E, "exact_sum", real)
    monkeypatch.setattr(K, "mean_batch_sums", real_mean)
    monkeypatch.setattr(K, "mean_fold", real_fold)
    monkeypatch.setattr(K, "regression_stacked", fused)
    assert mc.encode() == _numpy_collection_bytes(make, update)
    true_w = sum(map(Fraction, w.tolist()), Fraction(0))
    for s in mc.states:
        assert all(f == true_w for f in s.exact["weight"].fractions()), s.kind


def test_concurrent_updates_from_threads_equal_one_sequential_fold():
    """The fused kernel's scratch rows and the fold's shared weight sum are per thread: updates
    from several threads at once (the kernels release the GIL) give the sequential bytes."""
    import threading

    from mergeable_metrics import MetricCollection

    rng = np.random.default_rng(11)
    batches = []
    for _ in range(16):
        y = rng.normal(0.0, 1.0, 20000) * 10.0 ** rng.integers(-8, 8, 20000)
        batches.append((y, y + rng.normal(0.0, 1.0, 20000), rng.random(20000)))
    seq = MetricCollection("r2", "mse", "mae", "mape", task="regression")
    for y, p, w in batches:
        seq.update(y, y_pred=p, sample_weight=w)
    par = MetricCollection("r2", "mse", "mae", "mape", task="regression")
    threads = [threading.Thread(target=lambda k=k: [par.update(y, y_pred=p, sample_weight=w) for y, p, w in batches[k::4]]) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert par.encode() == seq.encode()
