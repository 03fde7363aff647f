"""Regression metrics: scikit-learn parity over a named grid, exact order-independent sums, large
offsets (issues 3 and 11).

Grid: balanced (normal targets), imbalanced (skewed, heavy-tailed), one_class (constant target),
ties (repeated values, some perfect predictions), weighted_zeros, single_row, empty, and
offset_1e8 (targets around 1e8 with unit spread). Each unweighted and weighted (weights in
[0, 4] with some zeros).
"""

from __future__ import annotations

import math
import warnings
import zlib
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn import metrics as skm

import mergeable_metrics._util.exact as core_exact
from mergeable_metrics import MetricCollection
from mergeable_metrics.engine import Plan
from mergeable_metrics.metrics import Task
from mergeable_metrics.inputs.validation import Batch
from mergeable_metrics._util.exact import fraction_to_float
from mergeable_metrics.metrics.regression import RegressionLayout, RegressionMomentsState
from tests._helpers import close, merge_tree, random_shards

CASES = ("balanced", "imbalanced", "one_class", "ties", "weighted_zeros", "single_row", "empty", "offset_1e8")
GRID = [(c, w) for c in CASES for w in (False, True) if not (c in ("weighted_zeros",) and not w) and not (c == "empty" and w)]
METRICS = ("mse", "rmse", "mae", "mape", "r2", "explained_variance", "mean_error", "max_error", "pearson", "mean_label",
           "mean_prediction", "r2@force_finite=false", "explained_variance@force_finite=false")  # fmt: skip


def regression_case(name: str, weighted: bool):
    rng = np.random.default_rng(zlib.crc32(f"regression-{name}".encode()))
    if name == "balanced":
        y = rng.normal(3.0, 2.0, 60)
        p = y + rng.normal(0.2, 0.7, 60)
    elif name == "imbalanced":
        y = rng.lognormal(0.0, 1.5, 80)
        p = y * rng.uniform(0.5, 1.5, 80)
    elif name == "one_class":
        y = np.full(12, 3.0)
        p = 3.0 + rng.choice([-0.5, 0.0, 0.5], 12)
    elif name == "ties":
        y = rng.choice([0.0, 1.0, 2.5], 30)
        p = np.where(rng.random(30) < 0.5, y, rng.choice([0.0, 1.0, 2.5], 30))
    elif name == "weighted_zeros":
        y = rng.normal(0, 1, 40)
        p = y + rng.normal(0, 0.3, 40)
    elif name == "single_row":
        y, p = np.array([2.0]), np.array([1.25])
    elif name == "empty":
        y, p = np.zeros(0), np.zeros(0)
    else:  # offset_1e8
        y = 1e8 + rng.normal(0, 1, 200)
        p = y + rng.normal(0, 0.1, 200)
    w = None
    if weighted or name == "weighted_zeros":
        w = rng.integers(0, 33, y.size) / 8.0
        w[: min(3, y.size - 1) if y.size > 1 else 0] = 0.0
    return y, p, w


def reference(y, p, w) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = {
            "mse": skm.mean_squared_error(y, p, sample_weight=w),
            "rmse": skm.root_mean_squared_error(y, p, sample_weight=w),
            "mae": skm.mean_absolute_error(y, p, sample_weight=w),
            "mape": skm.mean_absolute_percentage_error(y, p, sample_weight=w),
            "r2": skm.r2_score(y, p, sample_weight=w),
            "explained_variance": skm.explained_variance_score(y, p, sample_weight=w),
            "r2@force_finite=false": skm.r2_score(y, p, sample_weight=w, force_finite=False),
            "explained_variance@force_finite=false": skm.explained_variance_score(y, p, sample_weight=w, force_finite=False),
            "mean_error": np.average(p - y, weights=w),
            "mean_label": np.average(y, weights=w),
            "mean_prediction": np.average(p, weights=w),
        }
    keep = slice(None) if w is None else w > 0
    ref["max_error"] = skm.max_error(y[keep], p[keep])
    ww = np.ones_like(y) if w is None else w
    cov = np.cov(y, p, aweights=ww, bias=True)
    ref["pearson"] = cov[0, 1] / math.sqrt(cov[0, 0] * cov[1, 1]) if cov[0, 0] * cov[1, 1] > 0 else float("nan")
    return ref


@pytest.mark.parametrize("chunk", [None, 5], ids=["one-chunk", "chunks-of-5"])
@pytest.mark.parametrize("name,weighted", GRID, ids=[f"{n}{'-w' if w else ''}" for n, w in GRID])
def test_regression_metrics_match_sklearn(name, weighted, chunk, monkeypatch):
    """``chunks-of-5``: the exact sums are accumulated in row chunks of 5."""
    if chunk:
        monkeypatch.setattr(core_exact, "_ROWS", chunk)
    y, p, w = regression_case(name, weighted)
    mc = MetricCollection(*METRICS, task="regression")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for idx in np.array_split(np.arange(y.size), 3):  # three batches
            mc.update(y[idx], y_pred=p[idx], sample_weight=None if w is None else w[idx])
        ours = mc.compute()
    if name == "empty":
        assert all(np.isnan(v) for v in ours.values())
        return
    ref = reference(y, p, w)
    if name == "one_class":  # force_finite=False: 0/0 -> NaN or x/0 -> -inf, as sklearn
        assert ours["r2@force_finite=false"] == -math.inf
    bad = {k: (ours[k], v) for k, v in ref.items() if not close(ours[k], v)}
    assert not bad, f"(ours, sklearn): {bad}"


def _exact_r2(y: np.ndarray, p: np.ndarray) -> float:
    fy = [Fraction(float(v)) for v in y]
    fp = [Fraction(float(v)) for v in p]
    mean = sum(fy) / len(fy)
    ss_tot = sum((v - mean) ** 2 for v in fy)
    ss_res = sum((a - b) ** 2 for a, b in zip(fy, fp))
    return float(1 - ss_res / ss_tot)


@pytest.mark.parametrize("chunk", [None, 64])
def test_r2_at_1e8_offset_to_1e9_where_a_naive_state_fails(chunk, monkeypatch):
    if chunk:
        monkeypatch.setattr(core_exact, "_ROWS", chunk)
    rng = np.random.default_rng(42)
    y = 1e8 + rng.normal(0, 1, 3000)
    p = y + rng.normal(0, 0.5, 3000)
    exact = _exact_r2(y, p)
    parts = [MetricCollection("r2", task="regression") for _ in range(7)]
    for i, idx in enumerate(np.array_split(rng.permutation(3000), 7)):
        parts[i].update(y[idx], y_pred=p[idx])
    merged = parts[0]
    for other in parts[1:]:
        merged.merge(other)
    assert abs(merged.compute()["r2"] - exact) <= 1e-9
    assert merged.compute()["r2"] == exact  # exact sums: correctly rounded
    # the naive sufficient statistics (n, sum y, sum y^2, sum (y-p)^2) lose every digit here
    n, sy, syy = len(y), float(np.sum(y)), float(np.sum(y * y))
    naive = 1 - float(np.sum((y - p) ** 2)) / (syy - sy * sy / n)
    assert abs(naive - exact) > 1e-3


def test_moments_merge_is_exactly_commutative_and_zero_is_identity():
    rng = np.random.default_rng(1)
    y, p = 1e6 + rng.normal(0, 3, 50), 1e6 + rng.normal(0, 3, 50)
    w = rng.random(50)
    lay = RegressionLayout()
    a = RegressionMomentsState.from_batch(lay, Batch(y[:20], None, p[:20], w[:20]))
    b = RegressionMomentsState.from_batch(lay, Batch(y[20:], None, p[20:], w[20:]))
    z = RegressionMomentsState.zero(lay)
    assert a.merge(b) == b.merge(a)
    assert a.merge(z) == a == z.merge(a)
    assert RegressionMomentsState.decode(a.merge(b).encode()) == a.merge(b)


@settings(max_examples=60)
@given(
    data=st.lists(
        st.tuples(st.floats(-10, 10), st.floats(-10, 10), st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.25, 0.1, 1e-300, 1e300])),
        min_size=0,
        max_size=40,
    ),
    offset=st.sampled_from([0.0, 1e3, 1e8, 1e16]),
    seed=st.integers(0, 2**32 - 1),
)
def test_regression_moments_are_bit_identical_for_any_sharding_and_equal_the_exact_sums(data, offset, seed):
    y = np.array([d[0] for d in data]) + offset
    p = np.array([d[1] for d in data]) + offset
    w = np.array([d[2] for d in data])
    lay = RegressionLayout()
    whole = RegressionMomentsState.from_batch(lay, Batch(y, None, p, w)) if len(data) else RegressionMomentsState.zero(lay)
    rng = np.random.default_rng(seed)
    states = []
    for shard in random_shards(rng, len(data)):
        s = RegressionMomentsState.zero(lay)
        for idx in shard:
            if idx.size:
                s = s.fold(Batch(y[idx], None, p[idx], w[idx]))
        states.append(s)
    merged = merge_tree(states, lambda a, b: a.merge(b), rng, lambda: RegressionMomentsState.zero(lay))
    assert merged == whole  # every field, every limb: bit for bit
    assert merged.encode() == whole.encode()
    F = Fraction
    e = [F(float(b)) - F(float(a)) for a, b in zip(y, p)]  # exact p - y
    refs = {
        "weight": sum((F(float(v)) for v in w), F(0)),
        "sum_y": sum((F(float(a)) * F(float(c)) for a, c in zip(y, w)), F(0)),
        "sum_yy": sum((F(float(a)) ** 2 * F(float(c)) for a, c in zip(y, w)), F(0)),
        "sum_yp": sum((F(float(a)) * F(float(b)) * F(float(c)) for a, b, c in zip(y, p, w)), F(0)),
        "sum_ee": sum((d * d * F(float(c)) for d, c in zip(e, w)), F(0)),
    }
    for name, ref in refs.items():
        assert merged.fr(name) == ref, name
        if name != "sum_ee":  # a field (sum_ee is derived exactly from sum_pp, sum_yp, sum_yy)
            assert float(merged[name]) == fraction_to_float(ref), name  # correctly rounded (+-inf past the range)
    assert int(merged["count"]) == len(data) and float(merged["max_abs_e"]) == float(whole["max_abs_e"])


def test_plan_shares_one_moments_state_and_validates_inputs():
    plan = Plan(["r2", "mse", "pearson", "mean_label", "max_error"], Task(kind="regression"))
    assert [cls.kind for cls, _ in plan.state_types] == ["example_count", "regression_moments"]
    mc = MetricCollection("mse", task="regression")
    with pytest.raises(ValueError, match=r"column 'y_pred': invalid value nan at row 1: values must be finite"):
        mc.update([1.0, 2.0], y_pred=[1.0, float("nan")])
    with pytest.raises(ValueError, match=r"column 'y_true': invalid value inf at row 0: targets must be finite"):
        mc.update([float("inf")], y_pred=[1.0])
    with pytest.raises(ValueError, match="metric 'mse' needs y_pred or y_score"):
        mc.update([1.0, 2.0])
    with pytest.raises(ValueError, match="not defined for regression tasks"):
        MetricCollection("f1", task="regression")


def test_r2_single_row_is_nan_like_sklearn_and_constant_target_is_force_finite():
    mc = MetricCollection("r2", "explained_variance", task="regression")
    mc.update([2.0], y_pred=[1.0])
    with pytest.warns(Warning):
        r = mc.compute()
    assert math.isnan(r["r2"]) and r["explained_variance"] == 1.0  # sklearn: nan and 1.0


def test_an_error_that_overflows_float64_raises_naming_the_row_and_values():
    """``y = 1e308``, ``p = -1e308``: ``p - y`` is -inf in float64 (scikit-learn's mse is inf); the
    exact sums cannot hold it, so the fold says which row and values, not an exact-sum internal."""
    from mergeable_metrics import MetricCollection

    mc = MetricCollection("mse", "mae", "r2", task="regression")
    with pytest.raises(ValueError, match=r"the error of row 1 overflows float64 \(target 1e\+308, prediction -1e\+308"):
        mc.update([1.0, 1e308], y_pred=[2.0, -1e308])


def test_pearson_of_a_covariance_past_the_float_range_is_its_value_not_an_overflow():
    """Targets and predictions around 1e150 weighted 1e10: the centred sums (about 1e310) are past float64, but
    the correlation is scale-free: it equals numpy's correlation of the data scaled down (equal weights). The
    sign was taken by ``math.copysign(..., c)``, which converts the exact covariance ``c`` to a float and raised
    ``OverflowError`` there."""
    rng = np.random.default_rng(3)
    y = rng.normal(size=50)
    p = -0.8 * y + rng.normal(scale=0.5, size=50)
    mc = MetricCollection("pearson", task="regression")
    mc.update(y * 1e150, y_pred=p * 1e150, sample_weight=np.full(50, 1e10))
    want = np.corrcoef(y, p)[0, 1]
    got = mc.compute()["pearson"]
    assert got < 0 and got == pytest.approx(want, rel=1e-12)
