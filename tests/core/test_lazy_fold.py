"""Folds keep raw exact sums and round them only where a state is observed (issue 25, item 2):
the bytes of a collection folded in random batchings equal those of one batch, and those of the
numpy fallback (no compiled kernels), for every workload of ``benchmarks/bench_float_speed.py``;
the sums themselves are checked against ``Fraction`` / ``math.fsum``."""

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
from mergeable_metrics.states.base import State

WORKLOADS = ("regression", "logloss", "binary", "multiclass", "roc_auc", "mean")


def _collection(kind):
    if kind == "regression":
        return MetricCollection("r2", "mse", "mae", task="regression")
    if kind == "logloss":
        return MetricCollection("log_loss", "brier_score")
    if kind == "binary":
        return MetricCollection("precision", "recall", "f1")
    if kind == "multiclass":
        return MetricCollection("f1@macro", num_classes=10)
    if kind == "roc_auc":
        return MetricCollection("roc_auc")
    return MetricCollection(measures=["loss"])


def _data(n, seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    yr = rng.normal(100.0, 10.0, n) * 10.0 ** rng.integers(-30, 30, n)  # many binades: limbs, not compact sums
    return {
        "y": y,
        "s": np.clip(0.3 * y + 0.7 * rng.random(n), 1e-6, 1 - 1e-6),
        "w": rng.random(n),
        "yr": yr,
        "pr": yr + rng.normal(0.0, 3.0, n),
        "yc": rng.integers(0, 10, n),
        "pc": rng.integers(0, 10, n),
        "v": rng.gamma(2.0, 1.0, n) * 10.0 ** rng.integers(-20, 20, n),
    }


def _fold(kind, d, cuts, weighted):
    mc = _collection(kind)
    n = d["y"].shape[0]
    edges = [0, *sorted(cuts), n]
    for a, b in zip(edges, edges[1:]):
        sl = slice(a, b)
        w = d["w"][sl] if weighted else None
        if kind == "regression":
            mc.update(d["yr"][sl], y_pred=d["pr"][sl], sample_weight=w)
        elif kind == "multiclass":
            mc.update(d["yc"][sl], y_pred=d["pc"][sl], sample_weight=w)
        elif kind == "mean":
            mc.update(measure=d["v"][sl], sample_weight=w)
        else:
            mc.update(d["y"][sl], d["s"][sl], sample_weight=w)
    return mc


@pytest.mark.filterwarnings("ignore::mergeable_metrics.UndefinedMetricWarning")
@pytest.mark.parametrize("kind", WORKLOADS)
@given(seed=st.integers(0, 2**16), n=st.integers(1, 400), data=st.data(), weighted=st.booleans())
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_random_batchings_encode_like_one_batch_and_like_numpy(kind, seed, n, data, weighted, monkeypatch):
    d = _data(n, seed)
    cuts = data.draw(st.lists(st.integers(0, n), max_size=8))
    one = _fold(kind, d, [], weighted).encode()
    many = _fold(kind, d, cuts, weighted)
    assert many.encode() == one
    many.compute()  # observing (rounding) the sums first changes nothing
    assert many.encode() == one
    with monkeypatch.context() as m:
        m.setattr(K, "AVAILABLE", False)  # the numpy fallback: sums rounded at every step
        assert not K.ready()
        assert _fold(kind, d, cuts, weighted).encode() == one


def test_lazy_sums_round_once_and_equal_the_exact_sum():
    rng = np.random.default_rng(5)
    parts = [rng.normal(0, 1, 50) * 10.0 ** rng.integers(-300, 300, 50) for _ in range(7)]
    total = E.ExactSums.zeros(())
    for p in parts:
        total = total + E.exact_sum(p)
    assert total._raw is not None or not K.ready()  # still raw: nothing rounded yet
    want = sum((Fraction(x) for p in parts for x in p.tolist()), Fraction(0))
    assert total.fraction() == want
    assert total.values.item() == math.fsum(np.concatenate(parts).tolist())
    assert total == E.exact_sum(np.concatenate(parts))


def test_a_merged_state_rounds_its_sums_when_read():
    mc = _fold("mean", _data(300, 1), [100, 200], True)
    state = next(s for s in mc.states if s.exact)
    assert isinstance(state, State)
    assert sorted(state.arrays) == sorted(n for n, _ in type(state).STORED_FIELDS)
    decoded = State.decode(state.encode())
    assert decoded == state and dict(decoded.arrays).keys() == dict(state.arrays).keys()
    assert all(np.array_equal(decoded.arrays[k], state.arrays[k]) for k in state.arrays)


def test_states_with_raw_sums_pickle_and_compare_like_rounded_ones():
    import pickle

    d = _data(500, 3)
    raw = _fold("regression", d, [100, 250], True)
    rounded = _fold("regression", d, [], True)
    for s in rounded.states:
        dict(s.arrays)  # round every field of these first
    for a, b in zip(raw.states, rounded.states):
        back = pickle.loads(pickle.dumps(a))
        assert back == b and a == b and hash(a) == hash(b) and repr(a) == repr(b)
        assert back.encode() == b.encode()
