"""Median absolute error and quantiles of the absolute error from a bounded quantile state (issue
17, "regression"; multioutput: test_regression_quantiles_multioutput.py): values against scikit-learn and numpy (weighted, per slice, sorted input, empty
batches, ties, zero weights), certified bounds of compressed states against the exact value, the
merge laws (hypothesis: any sharding and merge tree gives the same bytes), the codec, overflowed
errors, the stacked finish and configuration checks."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn import metrics as M
from sklearn.utils.stats import _weighted_percentile

from mergeable_metrics import Evaluation, MetricCollection
from mergeable_metrics.engine import Plan
from mergeable_metrics.metrics import Task
from mergeable_metrics.states import State
from mergeable_metrics.inputs.validation import Batch
from mergeable_metrics.metrics.regression_quantiles import AbsoluteErrorDistributionState
from mergeable_metrics.states.score_distribution import ScoreDistributionLayout
from tests._helpers import fold_state_shards


def _evaluate(y, p, w=None, metrics=("median_absolute_error",), batches=None, slices=None, g=None):
    cols = {"y": np.asarray(y, float), "p": np.asarray(p, float)} | ({"w": np.asarray(w, float)} if w is not None else {}) | ({"g": g} if g is not None else {})
    n = len(cols["y"])
    cuts = batches or [(0, n)]
    parts = [{k: v[a:b] for k, v in cols.items()} for a, b in cuts]
    ev = Evaluation(label_col="y", prediction_col="p", task="regression", metrics=list(metrics), weight_col=None if w is None else "w", slices=slices)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ev, ev.evaluate(parts)


def _data(n, seed, discrete):
    rng = np.random.default_rng(seed)
    y = rng.normal(0, 3, n)
    p = y + rng.standard_cauchy(n)
    if discrete:  # many ties
        y, p = np.round(y), np.round(p)
    return y, p, rng.integers(0, 4, n).astype(float), rng.random(n), rng.choice(["a", "b", "c"], n)


@pytest.mark.parametrize("discrete", [False, True])
@pytest.mark.parametrize("weights", [None, "int", "float"])
def test_median_absolute_error_equals_sklearn_overall_and_per_slice(discrete, weights):
    y, p, wi, wf, g = _data(500, 3, discrete)
    w = {None: None, "int": wi, "float": wf}[weights]
    order = np.argsort(y, kind="stable")  # sorted input, uneven batches with an empty one
    y, p, g = y[order], p[order], g[order]
    w = None if w is None else w[order]
    _, r = _evaluate(y, p, w, batches=[(0, 7), (7, 7), (7, 300), (300, 500)], slices=["g"], g=g)
    for key, mask in [((), np.ones(500, bool))] + [((("g", v),), g == v) for v in "abc"]:
        want = M.median_absolute_error(y[mask], p[mask], sample_weight=None if w is None else w[mask])
        assert r[key].metrics["median_absolute_error"] == want, key  # bit for bit
        assert r[key].bounds == {}


@pytest.mark.parametrize(
    "y, p, w, want",
    [
        ([3, -0.5, 2, 7], [2.5, 0.0, 2, 8], None, 0.5),  # scikit-learn's docstring example
        ([1.0], [4.0], None, 3.0),  # one row
        ([0, 0, 0, 0], [1, 2, 3, 4], None, 2.5),  # even count: the mean of the middle two
        ([0, 0, 0, 0], [1, 2, 3, 4], [1, 1, 0, 2], 3.0),  # a zero weight is skipped: C = 1, 2, 4 of 4
        ([0, 0, 0], [1, 2, 3], [1, 1, 2], 2.5),  # the rank lands on a boundary: (2 + 3) / 2
        ([0, 0, 0], [1, 2, 3], [1, 1, 0], 1.5),  # the next error has weight 0: the next positive one
        ([0, 0, 0], [5, 5, 1], None, 5.0),  # ties
    ],
)
def test_hand_computed_cases(y, p, w, want):
    _, r = _evaluate(y, p, w)
    assert r.overall.metrics["median_absolute_error"] == want == M.median_absolute_error(y, p, sample_weight=w)


def _exact_weighted_quantile(e, w, q):
    """The documented rule in exact rational arithmetic (fractions): the first error whose
    cumulative weight reaches q * W, or its mean with the next positive-weight one on equality."""
    from fractions import Fraction

    order = np.argsort(e, kind="stable")
    e, w = np.asarray(e, float)[order], [Fraction(float(x)) for x in np.asarray(w, float)[order]]
    target = Fraction(str(q)) * sum(w)
    cum = Fraction(0)
    for i, wi in enumerate(w):
        cum += wi
        if wi and cum >= target:
            if cum == target and q < 1:
                nxt = next(e[j] for j in range(i + 1, len(e)) if w[j])
                return (e[i] + nxt) / 2
            return e[i]


def test_fractional_weights_whose_float_sums_round_onto_the_rank_follow_the_exact_rule():
    # 0.1 + 0.2 is 0.30000000000000004 in float64 and so is (0.1 + 0.2 + 0.3) / 2: scikit-learn's
    # float cumsum lands on W / 2 and averages (2.5); the exact sums do not (2.0), in any merge order
    y, p, w = [0.0, 0.0, 0.0], [1.0, 2.0, 3.0], [0.1, 0.2, 0.3]
    want = _exact_weighted_quantile(np.abs(np.subtract(p, y)), w, 0.5)
    assert want == 2.0 and M.median_absolute_error(y, p, sample_weight=w) == 2.5
    for cuts in ([(0, 3)], [(0, 1), (1, 3)], [(0, 2), (2, 2), (2, 3)]):
        _, r = _evaluate(y, p, w, batches=cuts)
        assert r.overall.metrics["median_absolute_error"] == want


def test_no_weight_is_undefined():
    _, r = _evaluate([1.0, 2.0], [2.0, 4.0], [0.0, 0.0])
    assert np.isnan(r.overall.metrics["median_absolute_error"])
    assert [u["metric"] for u in r.overall.undefined] == ["median_absolute_error"]
    _, empty = _evaluate([], [])
    assert np.isnan(empty.overall.metrics["median_absolute_error"])


@pytest.mark.parametrize("q", [0.0, 0.1, 0.25, 0.5, 0.9, 0.95, 1.0])
def test_quantiles_equal_numpy_and_sklearns_weighted_percentile(q):
    y, p, wi, _, _ = _data(301, 4, True)
    ev, r = _evaluate(y, p, metrics=[f"quantile_absolute_error@q={q}"])
    key = ev.plan.metrics[0].key
    e = np.abs(p - y)
    assert r.overall.metrics[key] == np.quantile(e, q, method="averaged_inverted_cdf")
    _, rw = _evaluate(y, p, wi, metrics=[f"quantile_absolute_error@q={q}"])
    assert rw.overall.metrics[key] == _weighted_percentile(e, wi, 100 * q, average=True)


def test_even_count_quantile_on_a_boundary():
    # ten errors 1..10 and q = 0.9: the rank 9 lands exactly on an error, so 9.5 (0.9 read as 9/10)
    _, r = _evaluate(np.zeros(10), np.arange(1.0, 11.0), metrics=["quantile_absolute_error@q=0.9"])
    assert r.overall.metrics["quantile_absolute_error@0.9"] == 9.5 == np.quantile(np.arange(1.0, 11.0), 0.9, method="averaged_inverted_cdf")


@pytest.mark.parametrize("seed", range(40))
def test_compressed_states_give_certified_bounds(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 200))
    y = rng.normal(0, 10 ** rng.uniform(-3, 3), n)
    p = y + rng.standard_cauchy(n) * rng.choice([1e-6, 1.0, 1e6])
    w = None if seed % 2 else rng.integers(0, 3, n).astype(float)
    if w is not None and w.sum() == 0:
        w[0] = 1.0
    cap = int(rng.integers(2, 16))
    q = float(rng.choice([0.5, 0.1, 0.9, 0.0, 1.0]))
    name = f"quantile_absolute_error@q={q}@capacity={cap}"
    ev, r = _evaluate(y, p, w, metrics=[name], batches=[(0, n // 3), (n // 3, n)])
    ((key, v),) = r.overall.metrics.items()
    want = _weighted_percentile(np.abs(p - y), np.ones(n) if w is None else w, 100 * q, average=True)
    if key in r.overall.bounds:
        lo, hi = r.overall.bounds[key]
        assert lo <= want <= hi and lo <= v <= hi and lo < hi
    else:
        assert v == want
    distinct = np.unique(np.abs(p - y) if w is None else np.abs(p - y)[w > 0]).size
    assert (key in r.overall.bounds) <= (distinct > cap)  # exact while the distinct errors fit


def test_bounds_narrow_with_capacity():
    rng = np.random.default_rng(7)
    y, p = rng.normal(0, 1, 20000), rng.normal(0, 1, 20000)
    want = M.median_absolute_error(y, p)
    widths = []
    for cap in (16, 256, 4096):
        _, r = _evaluate(y, p, metrics=[f"median_absolute_error@capacity={cap}"])
        lo, hi = r.overall.bounds[f"median_absolute_error@capacity={cap}"]
        assert lo <= want <= hi
        widths.append(hi - lo)
    assert widths[0] > widths[1] > widths[2] and widths[2] < 2e-3 * want  # relative bins: about 2**-9 here


values = st.sampled_from([-2.0, -1.0, 0.0, 0.5, 1.0, 2.0, 1e6, 3.25, 1e-300, 7.0])
rows = st.lists(st.tuples(values, values, st.sampled_from([0.0, 1.0, 0.5, 3.0])), max_size=40)


@settings(max_examples=40)
@given(data=rows, seed=st.integers(0, 2**32 - 1), capacity=st.sampled_from([2, 3, 5, 40_000]))
def test_sharded_merge_equals_one_fold(data, seed, capacity):
    y = np.array([d[0] for d in data], dtype=np.float64)
    p = np.array([d[1] for d in data], dtype=np.float64)
    w = np.array([d[2] for d in data], dtype=np.float64)
    layout = ScoreDistributionLayout(capacity)
    zero = AbsoluteErrorDistributionState.zero(layout)
    whole = zero.fold(Batch(y, None, p, w))
    assert whole == AbsoluteErrorDistributionState.from_batch(layout, Batch(y, None, p, w))
    merged = fold_state_shards(zero, lambda idx: Batch(y[idx], None, p[idx], w[idx]), len(data), np.random.default_rng(seed))
    assert merged.encode() == whole.encode()
    assert merged.merge(zero) == merged == zero.merge(merged)
    assert State.decode(merged.encode()) == merged
    # the total weight against a direct sum; exact states hold each distinct error's weight
    assert merged.total_weight() == pytest.approx(float(w.sum()), rel=1e-15)
    if merged.is_exact:
        e = np.abs(p - y)[w > 0]
        assert np.array_equal(merged.thresholds(), np.unique(e))
        assert np.array_equal(merged["neg"], np.array([w[np.abs(p - y) == x].sum() for x in np.unique(e)]))


def test_overflowed_errors_are_kept_as_inf():
    y, p = np.array([1e308, 0.0, 0.0]), np.array([-1e308, 0.0, 1.0])
    y2, p2 = np.array([1e308, 0.0]), np.array([-1e308, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numpy's overflow warning in scikit-learn
        want1, want = M.median_absolute_error(y, p), M.median_absolute_error(y2, p2)
    _, r = _evaluate(y, p)
    assert r.overall.metrics["median_absolute_error"] == 1.0 == want1
    _, r2 = _evaluate(y2, p2)
    assert r2.overall.metrics["median_absolute_error"] == np.inf == want
    s = AbsoluteErrorDistributionState.from_batch(ScoreDistributionLayout(), Batch(y2, None, p2, None))
    assert State.decode(s.encode()) == s and float(s["pos"].sum()) == 1.0


def test_decoded_bytes_are_checked():
    from tests._helpers.frames import state_with

    s = AbsoluteErrorDistributionState.from_batch(ScoreDistributionLayout(), Batch(np.zeros(3), None, np.array([1.0, 2.0, 3.0]), None))
    with pytest.raises(ValueError, match="overflowed"):
        State.decode(state_with(s, pos=np.array([1.0, 0.0, 0.0])))
    with pytest.raises(ValueError, match="negative absolute errors"):
        State.decode(state_with(s, keys=np.array([-5, 1, 2], dtype=np.int64)))
    with pytest.raises(ValueError, match="capacity"):
        s.merge(AbsoluteErrorDistributionState.zero(ScoreDistributionLayout(10)))


@pytest.mark.parametrize("d", [None, 2])  # single output; multioutput (raw_values and the mean)
def test_compute_many_equals_compute_per_element(d):
    q90 = "quantile_absolute_error@q=0.9@capacity=4" + ("" if d is None else "@multioutput=raw_values")
    plan = Plan(["median_absolute_error@capacity=4", q90, "mae"], Task(kind="regression", num_outputs=d))
    rng = np.random.default_rng(5)
    tuples = []
    for n in (0, 3, 50, 400):
        y, p = rng.normal(0, 1, (n,) if d is None else (n, d)), rng.normal(0, 1, (n,) if d is None else (n, d))
        tuples.append(plan.fold(plan.zero(), Batch(y, None, p, None)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        values, bounds, undefined = plan.compute_many(tuples)
        for i, states in enumerate(tuples):
            v, b, u = plan.compute_detailed(states)
            for key in v:
                assert np.array_equal(values[key][i], v[key], equal_nan=True)
            assert bounds[i] == b and undefined[i] == u


def test_a_collection_and_the_metric_strings():
    mc = MetricCollection("median_absolute_error", "medae@capacity=100", "quantile_absolute_error@q=0.25", task="regression")
    mc.update([3, -0.5, 2, 7], y_pred=[2.5, 0.0, 2, 8])
    got = mc.compute()
    e = np.abs(np.array([2.5, 0.0, 2, 8]) - np.array([3, -0.5, 2, 7]))
    assert got["median_absolute_error"] == 0.5 and got["quantile_absolute_error@0.25"] == np.quantile(e, 0.25, method="averaged_inverted_cdf")
    assert len(mc.plan.state_types) == 2  # one error distribution (capacity 40,000 for both) + example counts


@pytest.mark.parametrize(
    "bad, msg",
    [("quantile_absolute_error@q=1.5", "q must be a number in"), ("quantile_absolute_error@q=abc", "q must be"),
     ("median_absolute_error@capacity=1", "capacity"), ("median_absolute_error@capacity=2.5", "capacity must be an integer"),
     ("median_absolute_error@capacity=100000000000", "capacity"), ("median_absolute_error@q=0.3", "unknown parameter")],
)  # fmt: skip
def test_parameters_are_checked(bad, msg):
    with pytest.raises(ValueError, match=msg):
        Evaluation(label_col="y", prediction_col="p", task="regression", metrics=[bad])


def test_not_for_classification():
    with pytest.raises(ValueError, match="not defined for binary tasks"):
        MetricCollection("median_absolute_error")


def test_bootstrap_intervals_of_the_median_are_reproducible_and_hold_the_value():
    rng = np.random.default_rng(9)
    y, p = rng.normal(0, 1, 400), rng.normal(0, 1, 400)
    ev, r = _evaluate(y, p, metrics=["median_absolute_error"])
    kw = dict(label_col="y", prediction_col="p", task="regression", metrics=["median_absolute_error"], ci="bootstrap", ci_buckets=16, ci_replicates=50)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = Evaluation(**kw).evaluate([{"y": y, "p": p}])
        b = Evaluation(**kw).evaluate([{"y": y[:150], "p": p[:150]}, {"y": y[150:], "p": p[150:]}])
    lo, hi = a.overall.ci["median_absolute_error"]
    assert lo < r.overall.metrics["median_absolute_error"] == a.overall.metrics["median_absolute_error"] < hi
    assert b.overall.ci == a.overall.ci
