"""The mean of a measure through ``MetricCollection.update`` (issue 25, round 5): a plain float
measure column (and float weights) is checked and summed in one compiled pass
(``exact_kernels.mean_sums``), and the example count and mean states fold the batch without
building its own state. Checked against the exact reference arithmetic (``Fraction``,
``math.fsum``), the general kernel and the numpy path (no numba) bit for bit, on adversarial
inputs (huge, tiny, subnormal, cancelling, +-1.8e308, -0.0, mixed signs); invalid values raise
the reference path's message (column, value, row)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mergeable_metrics import MetricCollection
from mergeable_metrics._util import exact as E
from mergeable_metrics._util import exact_kernels as K
from mergeable_metrics.inputs.validation import Batch
from mergeable_metrics.metrics.measure import MeanMeasureLayout, MeanMeasureState
from mergeable_metrics.states.base import ExampleCountLayout, ExampleCountState, State
from tests._helpers.kernels import on_numpy_path

needs_numba = pytest.mark.skipif(not K.AVAILABLE, reason="numba kernels disabled or not installed")

ADVERSARIAL = [1.7976931348623157e308, 1e308, 1e300, 1e-300, 1e16, 1.0, 0.1, 2.0**53, 2.0**53 + 2, 5e-324, 2.2250738585072014e-308, 1e-17, 3.0, 0.0, -0.0]
VALUES = st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.sampled_from(ADVERSARIAL + [-v for v in ADVERSARIAL]))
WEIGHTS = st.one_of(st.floats(min_value=0.0, max_value=1e30, allow_nan=False), st.sampled_from([0.0, -0.0, 5e-324, 1e-300, 0.1, 3.0, 1e100, 2.0**60]))


def _fsum(xs, exact):
    """``math.fsum`` (the correctly rounded sum), or the exact sum rounded where fsum's partials overflow."""
    try:
        return math.fsum(xs)
    except OverflowError:
        return E.fraction_to_float(exact)


def _same(a: E.ExactSums, b: E.ExactSums) -> bool:
    return a.exp == b.exp and np.array_equal(a.limbs, b.limbs) and np.array_equal(a.values, b.values)


@needs_numba
@given(data=st.data(), n=st.integers(1, 300), weighted=st.booleans())
@settings(max_examples=150, deadline=None)
def test_mean_sums_are_the_exact_sums_bit_for_bit(data, n, weighted):
    v = np.array(data.draw(st.lists(VALUES, min_size=n, max_size=n)), dtype=np.float64)
    w = np.array(data.draw(st.lists(WEIGHTS, min_size=n, max_size=n)), dtype=np.float64) if weighted else None
    (total, wsum) = K.mean_batch_sums(v, w)
    got = E.ExactSums.lazy(*total, ())
    want = sum((Fraction(x) * (1 if w is None else Fraction(y)) for x, y in zip(v.tolist(), (w if w is not None else v).tolist())), Fraction(0))
    assert got.fraction() == want
    if w is None:
        assert got.values.item() == _fsum(v.tolist(), want)
        assert wsum is None
    else:
        ws = E.ExactSums.lazy(*wsum, ())
        assert ws.fraction() == sum(map(Fraction, w.tolist()), Fraction(0))
        assert ws.values.item() == _fsum(w.tolist(), ws.fraction())
        assert _same(ws, E.exact_sum(w)) and _same(ws, on_numpy_path(lambda: E.exact_sum(w)))
    assert _same(got, E.exact_sum(v, w))  # the general kernel
    assert _same(got, on_numpy_path(lambda: E.exact_sum(v, w)))  # the numpy path


@needs_numba
def test_mean_sums_refuse_what_validation_refuses():
    v = np.array([1.0, 2.0, 3.0])
    assert K.mean_batch_sums(v, np.array([1.0, -0.0, 0.0])) is not None  # -0.0 is a weight >= 0
    for bad_v, bad_w in [
        ([1.0, np.nan, 3.0], None),
        ([1.0, np.inf, 3.0], None),
        ([-np.inf, 2.0, 3.0], [1.0, 1.0, 1.0]),
        ([1.0, 2.0, 3.0], [1.0, -5e-324, 1.0]),
        ([1.0, 2.0, 3.0], [1.0, np.nan, 1.0]),
        ([1.0, 2.0, 3.0], [np.inf, 1.0, 1.0]),
        ([1.0, 2.0, 3.0], [-1.0, 1.0, 1.0]),
    ]:
        assert K.mean_batch_sums(np.array(bad_v), None if bad_w is None else np.array(bad_w)) is None


@pytest.mark.parametrize("named", [True, False])
@pytest.mark.parametrize(
    "values, weights, message",
    [
        ([1.0, 2.0, np.nan, 4.0], None, r"column 'M': invalid value nan at row 7\b"),
        ([1.0, 2.0, 3.0, -np.inf], [1.0, 1.0, 1.0, 1.0], r"column 'M': invalid value -inf at row 8\b"),
        ([1.0, 2.0, 3.0, 4.0], [1.0, -2.0, 1.0, 1.0], r"column 'sample_weight': invalid value -2.0 at row 6\b.*>= 0"),
        ([1.0, 2.0, 3.0, 4.0], [1.0, 1.0, np.nan, 1.0], r"column 'sample_weight': invalid value nan at row 7\b"),
    ],
)
def test_invalid_values_raise_the_reference_message_and_fold_nothing(named, values, weights, message):
    def attempt():
        mc = MetricCollection(measures=["loss"]) if named else MetricCollection("mean_measure")
        mc.update(measure=np.arange(5.0))
        before = mc.encode()
        with pytest.raises(ValueError) as err:
            mc.update(measure=np.array(values), sample_weight=None if weights is None else np.array(weights))
        assert mc.encode() == before  # nothing folded
        return str(err.value)

    got = attempt()
    assert got == on_numpy_path(attempt)  # the same message as without the kernels
    import re

    assert re.search(message.replace("'M'", "'loss'" if named else "'measure'"), got), got


def _fold_batches(named, parts, weighted):
    mc = MetricCollection(measures=["loss"]) if named else MetricCollection("mean_measure")
    for v, w in parts:
        mc.update(measure=v, sample_weight=w if weighted else None)
    return mc


@pytest.mark.filterwarnings("ignore::mergeable_metrics.UndefinedMetricWarning")
@given(data=st.data(), named=st.booleans(), weighted=st.booleans())
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_update_folds_like_the_numpy_path_and_like_the_exact_mean(data, named, weighted):
    parts = []
    for _ in range(data.draw(st.integers(1, 4))):
        n = data.draw(st.integers(1, 40))
        v = np.array(data.draw(st.lists(VALUES, min_size=n, max_size=n)))
        w = np.array(data.draw(st.lists(WEIGHTS, min_size=n, max_size=n)))
        parts.append((v, w))
    mc = _fold_batches(named, parts, weighted)
    assert mc.encode() == on_numpy_path(lambda: _fold_batches(named, parts, weighted).encode())
    one = _fold_batches(named, [(np.concatenate([v for v, _ in parts]), np.concatenate([w for _, w in parts]))], weighted)
    assert mc.encode() == one.encode()
    num = sum((Fraction(x) * (Fraction(y) if weighted else 1) for v, w in parts for x, y in zip(v.tolist(), w.tolist())), Fraction(0))
    den = sum((Fraction(y) if weighted else Fraction(1) for _, w in parts for y in w.tolist()), Fraction(0))
    key = "loss" if named else "mean_measure"
    value = mc.compute()[key]
    if den == 0:
        assert math.isnan(value)
    else:
        assert value == E.exact_ratio(num, den)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("layout", [MeanMeasureLayout(()), MeanMeasureLayout(("loss",))])
def test_state_folds_equal_the_merge_of_the_batch_state(weighted, layout):
    rng = np.random.default_rng(3)
    v = rng.normal(0, 1, 50) * 10.0 ** rng.integers(-30, 30, 50)
    w = rng.random(50) if weighted else None
    values = v.reshape(-1, 1) if layout.names else v
    sums = K.mean_batch_sums(v, w) if K.ready() else None
    batches = [Batch(None, None, None, w, values)]
    if sums is not None:
        batches.append(Batch(None, None, None, w, values, sums=(values, w, *sums)))
    for batch in batches:
        for cls, lay in ((ExampleCountState, ExampleCountLayout()), (MeanMeasureState, layout)):
            start = cls.zero(lay).merge(cls.from_batch(lay, Batch(None, None, None, None, values[:7])))
            want = start.merge(cls.from_batch(lay, batch))
            got = start.fold(batch)
            assert type(got) is cls and got == want and got.encode() == want.encode()
            assert cls.zero(lay).fold(batch) == cls.from_batch(lay, batch)


@pytest.mark.parametrize("layout", [MeanMeasureLayout(()), MeanMeasureLayout(("loss",))])
def test_count_overflow_raises_the_merge_message(layout):
    v = np.array([1.0, 2.0])
    values = v.reshape(-1, 1) if layout.names else v
    shape = (1,) if layout.names else ()
    full = State.decode(
        MeanMeasureState(layout, {"count": np.full(shape, 2**63 - 1, dtype=np.int64), "weight": np.full(shape, 1.0), "total": np.full(shape, 1.0)}).encode()
    )
    sums = K.mean_batch_sums(v, None) if K.ready() else None
    batch = Batch(None, None, None, None, values, sums=None if sums is None else (values, None, *sums))
    with pytest.raises(ValueError) as merged:
        full.merge(MeanMeasureState.from_batch(layout, batch))
    with pytest.raises(ValueError) as folded:
        full.fold(batch)
    assert str(folded.value) == str(merged.value) and "mean_measure.count: int64 overflow" in str(folded.value)
    ec = ExampleCountState(ExampleCountLayout(), {"count": np.int64(2**63 - 1), "weight": np.float64(1.0), "skipped": np.int64(0)})
    with pytest.raises(ValueError, match="example_count.count: int64 overflow"):
        ec.fold(batch)


def test_sums_of_other_arrays_are_not_used():
    """A batch whose arrays are not the ones its sums were computed from (``dataclasses.replace``)
    folds from its arrays."""
    import dataclasses

    v = np.array([1.0, 2.0, 4.0])
    stale = K.mean_batch_sums(v, None) if K.ready() else ((np.zeros((1, 0), dtype=np.int64), 0), None)
    batch = dataclasses.replace(Batch(None, None, None, None, v, sums=(v, None, *stale)), values=np.array([8.0, 16.0, 32.0]))
    lay = MeanMeasureLayout(())
    got = MeanMeasureState.zero(lay).fold(batch)
    assert got["total"].item() == 56.0 and got["weight"].item() == 3.0 and got["count"].item() == 3


@needs_numba
@pytest.mark.parametrize("weighted", [False, True])
def test_mean_sums_of_many_blocks_with_their_own_ranges(weighted):
    """Batches longer than one block (``exact_kernels.MEAN_BLOCK`` rows): every block is summed
    on its own grids (tiny, huge, subnormal, cancelling blocks next to each other) into one
    exact sum."""
    rng = np.random.default_rng(11)
    b = K.MEAN_BLOCK
    parts = [
        rng.normal(0, 1, b) * 1e-300,
        rng.normal(0, 1, b) * 1e300,
        np.full(b, 5e-324) * rng.integers(-3, 4, b),
        rng.gamma(2.0, 1.0, b) * 10.0 ** rng.integers(-200, 200, b),  # past the float grids: the limb kernel
        np.concatenate([[1e308, -1e308], rng.normal(0, 1, 37)]),
    ]
    v = np.concatenate(parts)
    w = rng.random(v.shape[0]) * 10.0 ** rng.integers(-3, 3, v.shape[0]) if weighted else None
    if weighted:
        w[b - 1 : b + 1] = [0.0, -0.0]
    total, wsum = K.mean_batch_sums(v, w)
    got = E.ExactSums.lazy(*total, ())
    ws = w if weighted else np.ones_like(v)
    assert got.fraction() == sum((Fraction(x) * Fraction(y) for x, y in zip(v.tolist(), ws.tolist())), Fraction(0))
    assert _same(got, E.exact_sum(v, w)) and _same(got, on_numpy_path(lambda: E.exact_sum(v, w)))
    if weighted:
        assert _same(E.ExactSums.lazy(*wsum, ()), E.exact_sum(w))
    for name, column in (("measure", v), ("sample_weight", w)):
        if column is None:
            continue
        bad_v, bad_w = v.copy(), None if w is None else w.copy()
        (bad_v if name == "measure" else bad_w)[3 * b + 17] = np.nan  # in the fourth block
        assert K.mean_batch_sums(bad_v, bad_w) is None
        mc = MetricCollection("mean_measure")
        with pytest.raises(ValueError, match=rf"column '{name}': invalid value nan at row {3 * b + 17}\b"):
            mc.update(measure=bad_v, sample_weight=bad_w)
