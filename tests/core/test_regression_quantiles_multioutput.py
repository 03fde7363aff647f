"""Multioutput median / quantile absolute error (issue 17): ``num_outputs=D`` with scikit-learn's
``multioutput="raw_values"|"uniform_average"``. Values against ``sklearn.metrics.
median_absolute_error(..., multioutput=...)`` and numpy (weighted and unweighted, per slice, sorted
input, empty batches), each output's column against the single-output state bit for bit, certified
bounds of compressed states, the merge laws (hypothesis), the codec, ``num_outputs`` mismatches,
the bootstrap (the stacked finish: test_regression_quantiles.py)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn import metrics as M

from mergeable_metrics import Evaluation, MetricCollection
from mergeable_metrics.states import State
from mergeable_metrics.inputs.validation import Batch
from mergeable_metrics.metrics.regression_quantiles import (
    AbsoluteErrorDistributionState,
    OutputAbsoluteErrorDistributionLayout,
    OutputAbsoluteErrorDistributionState,
)
from mergeable_metrics.states.score_distribution import ScoreDistributionLayout
from tests._helpers import fold_state_shards

OS, OL = OutputAbsoluteErrorDistributionState, OutputAbsoluteErrorDistributionLayout


def _data(n, d=3, seed=0, discrete=False):
    rng = np.random.default_rng(seed)
    y = rng.normal(0, 3, (n, d))
    p = y + rng.standard_cauchy((n, d)) * np.array([0.5, 1.0, 4.0, 2.0][:d])
    if discrete:  # many ties
        y, p = np.round(y), np.round(p)
    return y, p, rng.integers(0, 4, n).astype(float), rng.random(n), rng.choice(["a", "b", "c"], n)


def _evaluate(y, p, w, metrics, batches, g=None, **kw):
    cols = {"y": y, "p": p} | ({"w": w} if w is not None else {}) | ({"g": g} if g is not None else {})
    parts = [{k: v[a:b] for k, v in cols.items()} for a, b in batches]
    ev = Evaluation(label_col="y", prediction_col="p", num_outputs=y.shape[1], metrics=metrics, weight_col=None if w is None else "w",
                    slices=None if g is None else ["g"], **kw)  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ev, ev.evaluate(parts)


@pytest.mark.parametrize("discrete", [False, True])
@pytest.mark.parametrize("weights", [None, "int", "float"])
def test_equals_sklearn_raw_values_and_uniform_average_overall_and_per_slice(discrete, weights):
    y, p, wi, wf, g = _data(400, seed=3, discrete=discrete)
    w = {None: None, "int": wi, "float": wf}[weights]
    order = np.argsort(y[:, 0], kind="stable")  # sorted input, uneven batches with an empty one
    y, p, g = y[order], p[order], g[order]
    w = None if w is None else w[order]
    names = ["median_absolute_error@multioutput=raw_values", "median_absolute_error", "medae@multioutput=uniform_average"]
    _, r = _evaluate(y, p, w, names, [(0, 5), (5, 5), (5, 250), (250, 400)], g)
    for key, mask in [((), np.ones(400, bool))] + [((("g", v),), g == v) for v in "abc"]:
        sw = None if w is None else w[mask]
        raw = M.median_absolute_error(y[mask], p[mask], sample_weight=sw, multioutput="raw_values")
        got = r[key].metrics
        assert np.array_equal(got["median_absolute_error@multioutput=raw_values"], raw), key  # bit for bit
        assert got["median_absolute_error"] == M.median_absolute_error(y[mask], p[mask], sample_weight=sw) == float(np.average(raw)), key
        assert got["median_absolute_error@multioutput=uniform_average"] == got["median_absolute_error"]
        assert r[key].bounds == {}


def test_quantiles_per_output_equal_numpy():
    y, p, *_ = _data(301, d=2, seed=4, discrete=True)
    e = np.abs(p - y)
    for q in (0.0, 0.1, 0.25, 0.9, 1.0):
        _, r = _evaluate(y, p, None, [f"quantile_absolute_error@q={q}@multioutput=raw_values", f"quantile_absolute_error@q={q}"], [(0, 301)])
        want = np.quantile(e, q, axis=0, method="averaged_inverted_cdf")
        assert np.array_equal(r.overall.metrics[f"quantile_absolute_error@q={q}@multioutput=raw_values"], want), q
        assert r.overall.metrics[f"quantile_absolute_error@q={q}"] == float(np.average(want)), q


def test_hand_computed_two_outputs():
    # output 0: errors 0.5, 0.5, 0, 1 -> median 0.5; output 1: errors 1, 3, 5, 7 -> (3 + 5) / 2 = 4
    y = np.array([[3.0, 0.0], [-0.5, 0.0], [2.0, 0.0], [7.0, 0.0]])
    p = np.array([[2.5, 1.0], [0.0, 3.0], [2.0, 5.0], [8.0, 7.0]])
    mc = MetricCollection("median_absolute_error@multioutput=raw_values", "median_absolute_error", num_outputs=2)
    mc.update(y, y_pred=p)
    got = mc.compute()
    assert np.array_equal(got["median_absolute_error@multioutput=raw_values"], [0.5, 4.0])
    assert got["median_absolute_error"] == 2.25 == M.median_absolute_error(y, p)
    mc = MetricCollection("median_absolute_error@multioutput=raw_values", num_outputs=2)
    # zero weight on row 2. output 0: errors 0.5 (w 2), 1 (w 2): C = 2 == W / 2 -> (0.5 + 1) / 2;
    # output 1: errors 1, 3, 7 (w 1, 1, 2): C = 1, 2 == W / 2 at 3 -> (3 + 7) / 2
    w = [1.0, 1.0, 0.0, 2.0]
    mc.update(y, y_pred=p, sample_weight=w)
    got = mc.compute()["median_absolute_error@multioutput=raw_values"]
    assert np.array_equal(got, [0.75, 5.0]) and np.array_equal(got, M.median_absolute_error(y, p, sample_weight=w, multioutput="raw_values"))


def test_single_output_raw_values_is_a_one_entry_array_as_sklearn():
    y, p, w, *_ = _data(50, d=1, seed=2)
    mc = MetricCollection("median_absolute_error@multioutput=raw_values", "median_absolute_error", task="regression")
    mc.update(y[:, 0], y_pred=p[:, 0], sample_weight=w)
    got = mc.compute()
    want = M.median_absolute_error(y[:, 0], p[:, 0], sample_weight=w, multioutput="raw_values")
    assert np.shape(want) == (1,) and np.array_equal(got["median_absolute_error@multioutput=raw_values"], want)
    assert got["median_absolute_error"] == float(want[0])


def test_no_weight_is_undefined_per_output():
    ev, r = _evaluate(np.ones((2, 2)), np.zeros((2, 2)), np.zeros(2), ["median_absolute_error@multioutput=raw_values", "median_absolute_error"], [(0, 2)])
    m = r.overall.metrics
    assert np.isnan(m["median_absolute_error"]) and np.isnan(m["median_absolute_error@multioutput=raw_values"]).all()
    listed = {(u["metric"], tuple(u.get("classes") or ())) for u in r.overall.undefined}
    assert ("median_absolute_error", ()) in listed
    assert {k for k, _ in listed} == {"median_absolute_error", "median_absolute_error@multioutput=raw_values"}
    _, empty = _evaluate(np.zeros((0, 2)), np.zeros((0, 2)), None, ["median_absolute_error"], [(0, 0)])
    assert np.isnan(empty.overall.metrics["median_absolute_error"])


def test_overflowed_errors_are_inf_per_output():
    y = np.array([[1e308, 0.0], [0.0, 1.0], [0.0, 2.0]])
    p = np.array([[-1e308, 0.0], [0.0, 1.0], [1.0, 2.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numpy's overflow warning in scikit-learn
        want = M.median_absolute_error(y[:2], p[:2], multioutput="raw_values")
        want3 = M.median_absolute_error(y, p, multioutput="raw_values")
    _, r = _evaluate(y, p, None, ["median_absolute_error@multioutput=raw_values"], [(0, 1), (1, 3)])
    assert np.array_equal(r.overall.metrics["median_absolute_error@multioutput=raw_values"], want3)
    _, r2 = _evaluate(y[:2], p[:2], None, ["median_absolute_error@multioutput=raw_values"], [(0, 2)])
    assert np.array_equal(r2.overall.metrics["median_absolute_error@multioutput=raw_values"], want) and want[0] == np.inf
    s = OS.from_batch(OL(2), Batch(y, None, p, None))
    assert State.decode(s.encode()) == s


values = st.one_of(st.integers(-3, 3).map(float), st.floats(-1e3, 1e3, allow_nan=False), st.sampled_from([1e308, -1e308, 0.0, -0.0]))
rows = st.lists(st.tuples(values, values, values, values, st.sampled_from([0.0, 1.0, 0.5, 3.0])), max_size=40)


@settings(max_examples=40)
@given(data=rows, seed=st.integers(0, 2**32 - 1), capacity=st.sampled_from([2, 3, 5, None]))
def test_sharded_merge_equals_one_fold_and_each_output_is_its_single_output_state(data, seed, capacity):
    y = np.array([d[0:2] for d in data], dtype=np.float64).reshape(-1, 2)
    p = np.array([d[2:4] for d in data], dtype=np.float64).reshape(-1, 2)
    w = np.array([d[4] for d in data], dtype=np.float64)
    layout = OL(2, capacity)
    zero = OS.zero(layout)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        whole = zero.fold(Batch(y, None, p, w))
        assert whole == OS.from_batch(layout, Batch(y, None, p, w))
        merged = fold_state_shards(zero, lambda idx: Batch(y[idx], None, p[idx], w[idx]), len(data), np.random.default_rng(seed))
        assert merged.encode() == whole.encode()
        assert merged.merge(zero) == merged == zero.merge(merged)
        assert State.decode(merged.encode()) == merged
        single = ScoreDistributionLayout(layout.capacity)
        for j in range(2):  # output j: the single-output state of column j, bit for bit
            want = AbsoluteErrorDistributionState.from_batch(single, Batch(y[:, j].copy(), None, p[:, j].copy(), w))
            assert merged.output(j) == want and merged.output(j).encode() == want.encode()


@pytest.mark.parametrize("capacity", [2, 5, 17])
def test_compressed_states_certify_bounds_around_the_exact_values(capacity):
    y, p, wi, *_ = _data(600, seed=capacity)
    names = [f"median_absolute_error@capacity={capacity}", f"median_absolute_error@multioutput=raw_values@capacity={capacity}"]
    ev, r = _evaluate(y, p, wi, names, [(0, 100), (100, 600)])
    exact = M.median_absolute_error(y, p, sample_weight=wi, multioutput="raw_values")
    lo, hi = r.overall.bounds[names[0]]
    assert lo <= float(np.average(exact)) <= hi and lo < hi
    assert lo <= r.overall.metrics[names[0]] <= hi
    states = OS.from_batch(OL(3, capacity), Batch(y, None, p, wi))
    assert not states.is_exact
    from mergeable_metrics.metrics.regression_quantiles import error_quantile
    from fractions import Fraction

    for j in range(3):  # each output's middle value lies in its own certified interval around the exact value
        v = error_quantile(states.output(j), Fraction(1, 2))
        a, b = (v.lower, v.upper) if hasattr(v, "lower") else (v, v)
        assert a <= exact[j] <= b and a <= r.overall.metrics[names[1]][j] <= b


def test_merging_or_decoding_another_num_outputs_raises_naming_it():
    y, p, w, *_ = _data(10)
    a = OS.from_batch(OL(3), Batch(y, None, p, w))
    b = OS.from_batch(OL(2), Batch(y[:, :2].copy(), None, p[:, :2].copy(), w))
    with pytest.raises(ValueError, match="num_outputs"):
        a.merge(b)
    with pytest.raises(ValueError, match="capacity"):
        a.merge(OS.zero(OL(3, 10)))
    with pytest.raises(ValueError, match="num_outputs"):
        OS.from_batch(OL(2), Batch(y, None, p, w))
    e3 = Evaluation(label_col="y", prediction_col="p", num_outputs=3, metrics=["median_absolute_error"])
    e2 = Evaluation(label_col="y", prediction_col="p", num_outputs=2, metrics=["median_absolute_error"])
    acc = e3.fold(e3.zero(), {"y": y, "p": p})
    with pytest.raises(ValueError, match="num_outputs"):
        e2.decode(e3.encode(acc))
    with pytest.raises(ValueError, match="multioutput must be one of raw_values, uniform_average"):
        MetricCollection("median_absolute_error@multioutput=variance_weighted", num_outputs=2)


def test_decoded_bytes_are_checked():
    from tests._helpers.frames import state_with

    y, p = np.zeros((3, 2)), np.array([[1.0, 2.0], [2.0, 3.0], [3.0, 4.0]])
    s = OS.from_batch(OL(2), Batch(y, None, p, None))
    bad = s["weights"].copy()
    bad[1] = 1.0  # an overflow weight in a bin of a finite error
    with pytest.raises(ValueError, match="overflowed"):
        State.decode(state_with(s, weights=bad))
    keys = s["keys"].copy()
    keys[0] = -5
    with pytest.raises(ValueError, match="negative absolute errors"):
        State.decode(state_with(s, keys=keys))


def test_bootstrap_intervals_are_reproducible_and_hold_the_value():
    y, p, *_ = _data(300, d=2, seed=9)
    kw = dict(ci="bootstrap", ci_buckets=10, ci_replicates=40)
    names = ["median_absolute_error", "median_absolute_error@multioutput=raw_values"]
    _, a = _evaluate(y, p, None, names, [(0, 300)], **kw)
    _, b = _evaluate(y, p, None, names, [(0, 120), (120, 120), (120, 300)], **kw)
    lo, hi = a.overall.ci["median_absolute_error"]
    assert lo < a.overall.metrics["median_absolute_error"] == M.median_absolute_error(y, p) < hi
    lo, hi = a.overall.ci["median_absolute_error@multioutput=raw_values"]  # (D,) intervals
    raw = a.overall.metrics["median_absolute_error@multioutput=raw_values"]
    assert np.shape(lo) == (2,) and np.all(lo < raw) and np.all(raw < hi)
    assert np.array_equal(raw, M.median_absolute_error(y, p, multioutput="raw_values"))
    assert b.to_json() == a.to_json()
