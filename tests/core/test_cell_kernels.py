"""The confusion folds' compiled cell kernels (issue 25, round 5) against the exact reference.

``exact_kernels.binary_cells`` (weights per cell ``2 * label + (score >= t)``) and
``exact_kernels.pair_cells`` (weights, or row counts, per cell ``a * k + b``) compute the cells in
the pass. Each per-cell sum must be the true rational sum (``fractions.Fraction``) and, rounded,
bit for bit the reference path's (``exact_sum`` of the weights with the cell index); the states
they build must encode to the same bytes as the reference path's, and inputs the kernels refuse
(a label out of range) must reach the reference path and its message.
"""

from __future__ import annotations

from collections import Counter
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mergeable_metrics._util import exact as E
from mergeable_metrics._util import exact_kernels as K
from mergeable_metrics.inputs.validation import Batch
from mergeable_metrics.states import base as B

pytestmark = pytest.mark.skipif(not K.AVAILABLE, reason="numba kernels disabled or not installed")

#: non-negative finite weights: huge, tiny, subnormal, zero, integers, and wide mixes (which need
#: more grids than the kernels' own, so the general kernel runs)
WEIGHTS = st.one_of(
    st.floats(min_value=0.0, max_value=1.7976931348623157e308, allow_nan=False, allow_infinity=False),
    st.sampled_from(
        [0.0, -0.0, 5e-324, 1e-310, 2.2250738585072014e-308, 1e-300, 0.1, 0.5, 1.0, 3.0, 2.0**52, 2.0**53 + 2, 1e16, 1e300, 1.7976931348623157e308]
    ),
    st.floats(min_value=0.0, max_value=1.0),
)
SCORES = st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.sampled_from([0.5, -0.0, 0.0, 0.49999999999999994, 0.5000000000000001, 1.0, 5e-324]))


def _true(w, cell, size):
    out = [Fraction(0)] * size
    for wi, c in zip(w, cell):
        out[int(c)] += Fraction(float(wi))
    return out


def _reference(w, cell, size):
    K.ready()
    saved, K.AVAILABLE = K.AVAILABLE, False  # the numpy path
    try:
        return E.exact_sum(np.asarray(w, dtype=np.float64), index=np.asarray(cell), size=size)
    finally:
        K.AVAILABLE = saved


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1), SCORES, WEIGHTS), max_size=60), st.sampled_from([0.5, 0.0, -0.0, 1.0, 5e-324, 0.49999999999999994]), st.booleans())
def test_binary_cells_are_the_true_sums(rows, t, strict):
    y = np.array([r[0] for r in rows], dtype=np.int64)
    s = np.array([r[1] for r in rows], dtype=np.float64)
    w = np.array([r[2] for r in rows], dtype=np.float64)
    pred = [(si > t) if strict else (si >= t) for si in s.tolist()]
    cell = [2 * int(yi) + int(p) for yi, p in zip(y.tolist(), pred)]
    raw = K.binary_cells(y, s, t, strict, w)
    if raw is not None:  # None: weights too wide for the kernel's grids (the reference path runs)
        got = E.ExactSums.lazy(raw[0], raw[1], (4,))
        assert got.fractions() == _true(w, cell, 4)
        assert got == _reference(w, cell, 4)
    cells = B._one_threshold_counts(y, s, t, ">" if strict else ">=", w)
    assert [cells[c].fractions()[0] for c in ("tn", "fp", "fn", "tp")] == _true(w, cell, 4)


@settings(max_examples=300, deadline=None)
@given(st.integers(2, 7), st.data())
def test_pair_cells_are_the_true_sums_and_counts(k, data):
    rows = data.draw(st.lists(st.tuples(st.integers(0, k - 1), st.integers(0, k - 1), WEIGHTS), max_size=60))
    a = np.array([r[0] for r in rows], dtype=np.int64)
    b = np.array([r[1] for r in rows], dtype=np.int64)
    w = np.array([r[2] for r in rows], dtype=np.float64)
    cell = (a * k + b).tolist()
    raw = K.pair_cells(a, b, k, w)
    if raw is not None:  # None: weights too wide for the kernel's grids (the reference path runs)
        got = E.ExactSums.lazy(raw[0], raw[1], (k * k,))
        assert got.fractions() == _true(w, cell, k * k)
        assert got == _reference(w, cell, k * k)
    assert B._pair_counts(a, b, k, w).fractions() == _true(w, cell, k * k)
    counts = K.pair_cells(a, b, k, None)
    c = Counter(cell)
    assert counts.tolist() == [c[i] for i in range(k * k)]


@pytest.mark.parametrize("n", [K.CELL_ROWS - 1, K.CELL_ROWS, K.CELL_ROWS + 1, 2 * K.CELL_ROWS + 7])
@pytest.mark.parametrize("kind", ["top", "uniform", "wide"])
def test_cell_kernels_across_carries(n, kind):
    """Many rows at the largest grid integers (every weight at the top of its binade) and block
    boundaries: the int64 partial sums must not overflow."""
    rng = np.random.default_rng(n)
    if kind == "top":
        w = np.full(n, np.nextafter(2.0, 0.0))
        w[::3] = 2.0**-60 + 2.0**-112  # lowest bits far below: several grids
    elif kind == "uniform":
        w = rng.random(n)
    else:
        w = rng.random(n) * 10.0 ** rng.integers(-300, 300, n)  # too wide for the grids
    y = rng.integers(0, 2, n)
    s = rng.random(n)
    cell = 2 * y + (s >= 0.5)
    raw = K.binary_cells(y, s, 0.5, False, w)
    a, b = rng.integers(0, 10, n), rng.integers(0, 10, n)
    pc = a * 10 + b
    if kind == "wide":  # more grids than the kernels have: the reference path
        assert raw is None and K.pair_cells(a, b, 10, w) is None
        return
    got = E.ExactSums.lazy(raw[0], raw[1], (4,))
    want = [Fraction(0)] * 4
    for c in range(4):
        want[c] = sum((Fraction(x) for x in w[cell == c].tolist()), Fraction(0))
    assert got.fractions() == want
    raw = K.pair_cells(a, b, 10, w)
    got = E.ExactSums.lazy(raw[0], raw[1], (100,))
    assert got == _reference(w, pc, 100)
    assert (K.pair_cells(a, b, 10, None) == np.bincount(pc, minlength=100)).all()


def test_kernels_refuse_out_of_range_labels_and_non_finite_weights():
    w = np.ones(4)
    assert K.binary_cells(np.array([0, 1, 2, 0]), np.zeros(4), 0.5, False, w) is None
    assert K.binary_cells(np.array([0, 1, -1, 0]), np.zeros(4), 0.5, False, np.zeros(4)) is None
    assert K.binary_cells(np.array([0, 1, 1, 0]), np.zeros(4), 0.5, False, np.array([1.0, np.inf, 0, 0])) is None
    assert K.pair_cells(np.array([0, 3, 1, 0]), np.zeros(4, dtype=np.int64), 3, w) is None
    assert K.pair_cells(np.array([0, 1, 1, 0]), np.array([0, 0, -1, 0]), 3, w) is None
    assert K.pair_cells(np.array([0, 1, 1, 0]), np.array([0, 0, 1, 0]), 3, np.array([1.0, np.nan, 0, 0])) is None
    assert K.pair_cells(np.array([0, 5]), np.array([0, 0]), 3, None) is None
    assert K.pair_cells(np.array([0, 5]), np.array([0, 0]), 3, np.zeros(2)) is None


def _states(monkeypatch, batch, off):
    if off:
        monkeypatch.setattr(K, "binary_cells", lambda *a: None)
        monkeypatch.setattr(K, "pair_cells", lambda *a: None)
    bc = B.BinaryConfusionState.from_batch(B.BinaryConfusionLayout((0.5,), ">="), batch)
    gt = B.BinaryConfusionState.from_batch(B.BinaryConfusionLayout((0.5,), ">"), batch)
    cm = B.ConfusionMatrixState.from_batch(B.ConfusionMatrixLayout(2), batch)
    return bc.encode(), gt.encode(), cm.encode()


@pytest.mark.parametrize("weighted", [False, True])
def test_states_encode_as_the_reference_path(monkeypatch, weighted):
    rng = np.random.default_rng(3)
    n = 5000
    y = rng.integers(0, 2, n)
    s = np.round(rng.random(n), 2)  # ties at the threshold
    w = rng.random(n) * 10.0 ** rng.integers(-5, 5, n) if weighted else None
    batch = Batch(y, s, (s >= 0.5).astype(np.int64), w)
    fast = _states(monkeypatch, batch, False)
    assert fast == _states(monkeypatch, batch, True)


def test_a_label_the_kernels_refuse_gets_the_reference_message():
    with pytest.raises(ValueError, match="outside"):
        B._pair_counts(np.array([0, 3]), np.array([0, 1]), 3, np.ones(2))


def test_the_cells_total_is_the_example_counts_weight():
    """The confusion cells' total recorded for the batch's other states is the exact weight sum."""
    rng = np.random.default_rng(5)
    w = rng.random(1000) * 10.0 ** rng.integers(-10, 10, 1000)  # within the kernels' grids
    y = rng.integers(0, 2, 1000)
    with E.shared_weight_sums():
        B._one_threshold_counts(y, rng.random(1000), 0.5, ">=", w)
        total = E.known_weight_sum(w)
    assert total is not None and total.fraction() == sum((Fraction(x) for x in w.tolist()), Fraction(0))
    assert total == _reference(w, np.zeros(1000, dtype=np.int64), 1).take(np.array([0]), shape=())
    with E.shared_weight_sums():
        B._pair_counts(y, 1 - y, 2, w)
        assert E.known_weight_sum(w) == total


@pytest.mark.parametrize("kind", ["binary", "multiclass", "logloss"])
def test_a_weighted_fold_sums_the_weights_once_in_the_kernel(kind, monkeypatch):
    """One weighted batch through ``MetricCollection.update``: the confusion or log-loss kernel's
    weight total is the example count's weight (no separate exact sum of the weights), the weight
    is the true sum, and the bytes are the numpy path's."""
    from mergeable_metrics import MetricCollection

    rng = np.random.default_rng(9)
    n = 3000
    w = rng.random(n) * 10.0 ** rng.integers(-5, 5, n)
    y = rng.integers(0, 2, n)
    s = rng.random(n)
    yc, pc = rng.integers(0, 4, n), rng.integers(0, 4, n)
    if kind == "binary":
        make = lambda: MetricCollection("precision", "recall", "f1")  # noqa: E731
        update = lambda mc: mc.update(y, s, sample_weight=w)  # noqa: E731
    elif kind == "multiclass":
        make = lambda: MetricCollection("f1@macro", num_classes=4)  # noqa: E731
        update = lambda mc: mc.update(yc, y_pred=pc, sample_weight=w)  # noqa: E731
    else:
        make = lambda: MetricCollection("log_loss", "brier_score")  # noqa: E731
        update = lambda mc: mc.update(y, s, sample_weight=w)  # noqa: E731
    calls = []
    real = E.exact_sum
    monkeypatch.setattr(E, "exact_sum", lambda *a, **k: calls.append(a[0] is w) or real(*a, **k))
    mc = make()
    update(mc)
    assert sum(calls) == 0
    monkeypatch.setattr(E, "exact_sum", real)
    K.ready()
    saved, K.AVAILABLE = K.AVAILABLE, False  # the numpy path's bytes
    try:
        ref = make()
        update(ref)
    finally:
        K.AVAILABLE = saved
    assert mc.encode() == ref.encode()
    count = next(st_ for st_ in mc.states if st_.kind == "example_count")
    assert count.exact["weight"].fraction() == sum((Fraction(x) for x in w.tolist()), Fraction(0))
