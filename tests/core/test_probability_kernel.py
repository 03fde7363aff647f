"""The fused log-loss / Brier kernel (issue 25, round 5) against the exact reference.

``exact_kernels.probability_moments`` computes per row ``-log(clip(q, eps, 1 - eps))`` (fdlibm's
log, branch-free and vectorised; bit for bit against ``portable_log`` and Java in
tests/core/test_portable_log.py) and ``(p - y)**2`` and every exact sum of a binary
probability-sums state in one compiled call. Each sum must be the true rational sum of the numpy
path's per-row terms (``fractions.Fraction``), and the state must encode to the numpy path's bytes,
weighted and unweighted, for adversarial scores, weights and ``eps`` (a subnormal clip too).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mergeable_metrics._util import exact as E
from mergeable_metrics._util import exact_kernels as K
from mergeable_metrics._util.portable_log import numpy_log
from mergeable_metrics.inputs.validation import Batch
from mergeable_metrics.metrics.calibration import ProbabilitySumsLayout, ProbabilitySumsState

pytestmark = pytest.mark.skipif(not K.AVAILABLE, reason="numba kernels disabled or not installed")

EPS = float(np.finfo(np.float64).eps)
SCORES = st.one_of(
    st.floats(min_value=0.0, max_value=1.0),
    st.sampled_from([0.0, -0.0, 1.0, 0.5, EPS, 1 - EPS, EPS / 2, 1e-300, 5e-324, 1e-310, 0.9999999999999999, 1.0000000000000002 - 2**-52, 1e-7, 1 - 1e-7]),
)
WEIGHTS = st.one_of(st.floats(min_value=0.0, max_value=1e300), st.sampled_from([0.0, 5e-324, 1e-310, 1.0, 3.0, 0.1, 1e16, 1e300]))
CLIPS = st.sampled_from([EPS, 1e-15, 1e-7, 0.25, 0.4999999999999999, 1e-300, 1e-310, 5e-324])


def _fracs(x):
    return [Fraction(float(v)) for v in x]


def _terms(y, p, eps):
    q = np.where(y == 1, p, 1.0 - p)
    return -numpy_log(np.clip(q, eps, 1 - eps)), (p - y.astype(np.float64)) ** 2


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1), SCORES, WEIGHTS), min_size=1, max_size=50), CLIPS, st.booleans())
def test_kernel_sums_are_the_true_sums_of_the_reference_terms(rows, eps, weighted):
    y = np.array([r[0] for r in rows], dtype=np.int64)
    p = np.array([r[1] for r in rows], dtype=np.float64)
    w = np.array([r[2] for r in rows], dtype=np.float64) if weighted else None
    got = K.probability_moments(y, p, w, eps)
    assert got is not None
    raws, npos = got
    ll, bq = _terms(y, p, eps)
    ww = _fracs(w) if weighted else [Fraction(1)] * len(rows)

    def true(x):
        return sum((a * b for a, b in zip(_fracs(x), ww)), Fraction(0))

    assert E.ExactSums.lazy(*raws[1], ()).fraction() == true(p)
    assert E.ExactSums.lazy(*raws[2], ()).fraction() == true(bq)
    assert E.ExactSums.lazy(*raws[3], (1,)).fractions() == [true(ll)]
    if weighted:
        assert E.ExactSums.lazy(*raws[0], ()).fraction() == true(y.astype(np.float64))
        assert E.ExactSums.lazy(*raws[4], ()).fraction() == sum(ww, Fraction(0))
    else:
        assert npos == int(y.sum())


def _encode(batch, eps, kernel):
    layout = ProbabilitySumsLayout(eps=(eps,))
    saved = K.probability_moments
    if not kernel:
        K.probability_moments = lambda *a, **k: None
    try:
        return ProbabilitySumsState.from_batch(layout, batch).encode()
    finally:
        K.probability_moments = saved


@pytest.mark.parametrize("eps", [EPS, 1e-7, 1e-310])
@pytest.mark.parametrize("weighted", [False, True])
def test_states_encode_as_the_numpy_path(eps, weighted):
    rng = np.random.default_rng(11)
    n = 70_000  # more than one 65,536-row block
    y = rng.integers(0, 2, n)
    p = rng.random(n)
    p[:50] = 0.0
    p[50:100] = 1.0
    p[100:150] = 1e-320
    p[150:200] = 0.5
    w = rng.random(n) * 10.0 ** rng.integers(-8, 8, n) if weighted else None
    w_ = None if w is None else w.copy()
    if w_ is not None:
        w_[:10] = 0.0
    batch = Batch(y, p, None, w_)
    assert _encode(batch, eps, True) == _encode(batch, eps, False)


def test_labels_outside_zero_one_go_to_the_numpy_path():
    y = np.array([0, 1, 2])
    p = np.array([0.2, 0.7, 0.4])
    assert K.probability_moments(y, p, None, EPS) is None
    assert K.probability_moments(np.array([0, 1, 1]), np.array([0.2, np.nan, 0.4]), None, EPS) is None
    assert K.probability_moments(np.array([0, 1, 1]), p, np.array([1.0, np.inf, 0.0]), EPS) is None


def test_the_weight_sum_is_shared_with_the_batchs_other_states():
    rng = np.random.default_rng(2)
    w = rng.random(1000)
    batch = Batch(rng.integers(0, 2, 1000), rng.random(1000), None, w)
    with E.shared_weight_sums():
        st_ = ProbabilitySumsState.from_batch(ProbabilitySumsLayout(), batch)
        assert E.known_weight_sum(w) is st_.exact["weight"] or E.known_weight_sum(w) == st_.exact["weight"]
    assert st_.exact["weight"].fraction() == sum(_fracs(w), Fraction(0))


@pytest.mark.parametrize(
    "labels",
    [
        np.array([0, 1, 1, 0]),
        np.array([0, 1, 1, 0], dtype=np.uint8),
        np.array([False, True, True, False]),
        np.array([0.0, 1.0, -0.0, 1.0]),
        np.array([0, 1, 2, 0]),  # invalid: the full check's message
        np.array([0.0, 1.5, 1.0, 0.0]),
        np.array([0.0, np.nan, 1.0, 0.0]),
        np.array([0, -1, 1, 0]),
    ],
)
@pytest.mark.parametrize("on_invalid", ["raise", "skip"])
def test_label_fast_path_of_probability_batches_equals_the_full_check(monkeypatch, labels, on_invalid):
    """A log-loss batch (probability checks: ``build_batch``) reads valid (N,) labels with whole-array
    reductions; the batch, the skipped rows and any message are the full check's."""
    from mergeable_metrics.inputs import formats as F

    def run():
        try:
            batch, invalid = F.make_batch(
                num_classes=2, y_true=labels, y_score=np.array([0.2, 0.7, 0.4, 0.9]), on_invalid=on_invalid, needs=frozenset({"probability"})
            )
        except ValueError as e:
            return "error", str(e)
        return batch.y_true.dtype, batch.y_true.tolist(), batch.y_score.tolist(), None if invalid is None else invalid.tolist()

    fast = run()
    monkeypatch.setattr(F, "_valid_labels", lambda *a: None)  # the full check only
    assert fast == run()
