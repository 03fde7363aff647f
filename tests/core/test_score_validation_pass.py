"""Binary labels and scores checked by one compiled pass that sums the weights (issue 25, round 9).

``make_batch`` for a plan that reads only labels and scores (``roc_auc``, ``average_precision``)
checks plain (N,) int64 labels, (N,) float64 scores and (N,) float64 weights in one compiled pass
(:func:`mergeable_metrics._util.exact_kernels.score_batch_sums`) instead of a numpy reduction per
column, and the weights' exact sum computed on the way travels with the batch (``Batch.sums``,
the example count's weight). The sum must be the true one (``fractions.Fraction``), the states'
bytes those of the reference path (``plain_batch``) and of the numpy path, and every value the
kernel refuses must reach the reference checks: the same message (column, value, row), nothing
folded.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mergeable_metrics import MetricCollection
from mergeable_metrics._util import exact_kernels as K
from mergeable_metrics._util.exact import ExactSums, fraction_to_float
from mergeable_metrics.inputs import formats
from mergeable_metrics.inputs.formats import SCORE_WEIGHT_SUM, make_batch
from mergeable_metrics.inputs.validation import plain_batch
from tests._helpers.kernels import on_numpy_path

pytestmark = pytest.mark.skipif(not K.AVAILABLE, reason="numba kernels disabled or not installed")


@pytest.fixture
def reference(monkeypatch):
    """A function running ``fn`` with the compiled check off (the batch built by ``plain_batch``)."""

    def run(fn):
        with monkeypatch.context() as m:
            m.setattr(formats, "_plain_scores", lambda *a, **k: None)
            return fn()

    return run


def _batch(mc, y, s, w):
    return make_batch(num_classes=2, y_true=y, y_score=s, sample_weight=w, task=mc.plan.task, needs=mc.plan.needs, count_cells=mc.plan.count_cells)[0]


def _exact(x):
    return sum((Fraction(float(v)) for v in x), Fraction(0))


finite = st.floats(allow_nan=False, allow_infinity=False)
weight = st.one_of(
    st.floats(min_value=0.0, allow_nan=False, allow_infinity=False),
    st.sampled_from([0.0, -0.0, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 1.0, 0.5]),
)


@settings(max_examples=200, deadline=None)
@given(rows=st.lists(st.tuples(st.integers(0, 1), finite, weight), min_size=1, max_size=40), weighted=st.booleans())
def test_the_pass_sums_the_weights_exactly_and_builds_the_reference_batch(rows, weighted):
    y = np.array([r[0] for r in rows], dtype=np.int64)
    s = np.array([r[1] for r in rows], dtype=np.float64)
    w = np.array([r[2] for r in rows], dtype=np.float64) if weighted else None
    mc = MetricCollection("roc_auc")
    got = _batch(mc, y, s, w)
    ref = plain_batch(num_classes=2, y_true=y, y_score=s, sample_weight=w)[0]
    assert got.y_true is y and got.y_score is s and got.sample_weight is w and got.y_pred is None
    assert np.array_equal(got.y_true, ref.y_true) and np.array_equal(got.y_score, ref.y_score)
    if not weighted:
        assert got.sums is None
        return
    tag, ww, _, raw = got.sums
    assert tag == SCORE_WEIGHT_SUM and ww is w
    total = ExactSums.lazy(raw[0], raw[1], ())
    exact = _exact(w)
    assert total.fraction() == exact
    assert float(total.values) == fraction_to_float(exact)  # correctly rounded (inf past the range)


def test_long_batches_span_blocks_and_binades():
    """Several 8,192-row blocks, weights across the whole float range, zeros and -0.0."""
    rng = np.random.default_rng(3)
    n = 50_001
    y = rng.integers(0, 2, n)
    s = rng.normal(size=n)
    w = rng.random(n) * 2.0 ** rng.integers(-1074, 1000, n)
    w[::7] = 0.0
    w[::11] = -0.0
    mc = MetricCollection("roc_auc")
    raw = _batch(mc, y, s, w).sums[3]
    assert ExactSums.lazy(raw[0], raw[1], ()).fraction() == _exact(w)


@pytest.mark.parametrize("metrics", [("roc_auc",), ("roc_auc", "average_precision")])
@pytest.mark.parametrize("weighted", [False, True])
def test_states_bytes_are_the_reference_paths(metrics, weighted, reference):
    rng = np.random.default_rng(11)
    n = 30_000
    y = rng.integers(0, 2, n)
    s = np.clip(0.3 * y + 0.7 * rng.random(n), 1e-6, 1 - 1e-6)
    w = rng.random(n) * 10.0 ** rng.integers(-3, 3, n) if weighted else None
    mc, ref, npy = MetricCollection(*metrics), MetricCollection(*metrics), MetricCollection(*metrics)
    for lo, hi in ((0, 7000), (7000, 7001), (7001, n)):
        ww = None if w is None else w[lo:hi]
        mc.update(y[lo:hi], s[lo:hi], sample_weight=ww)
        reference(lambda: ref.update(y[lo:hi], s[lo:hi], sample_weight=ww))  # noqa: B023
        on_numpy_path(lambda: npy.update(y[lo:hi], s[lo:hi], sample_weight=ww))  # noqa: B023
    assert mc.encode() == ref.encode() == on_numpy_path(npy.encode)
    from sklearn.metrics import roc_auc_score

    assert mc.compute()["roc_auc"] == pytest.approx(roc_auc_score(y, s, sample_weight=w), abs=1e-3)
    count = mc.states[[st.kind for st in mc.states].index("example_count")]
    want = n if w is None else float(_exact(w))
    assert float(count.arrays["weight"]) == want


def test_the_plans_that_take_the_pass():
    y, s, w = np.array([0, 1, 1]), np.array([0.2, 0.7, 0.4]), np.array([1.0, 2.0, 0.5])
    assert _batch(MetricCollection("roc_auc"), y, s, w).sums[0] == SCORE_WEIGHT_SUM
    assert _batch(MetricCollection("roc_auc", "average_precision"), y, s, w).sums[0] == SCORE_WEIGHT_SUM
    # a plan that reads predictions too, or counts cells: not this pass
    assert _batch(MetricCollection("precision", "recall"), y, s, w).sums is None
    # other columns: bool or int32 labels, float32 or strided scores, lists
    mc = MetricCollection("roc_auc")
    assert _batch(mc, y.astype(bool), s, w).sums is None
    assert _batch(mc, y.astype(np.int32), s, w).sums is None
    assert _batch(mc, y, s.astype(np.float32), w).sums is None
    assert _batch(mc, y, np.repeat(s, 2)[::2], w).sums is None
    assert _batch(mc, y.tolist(), s, w).sums is None


# invalid values: 6 rows, the bad value at row 4
@pytest.mark.parametrize(
    "col, bad",
    [
        ("y_true", np.array([0, 1, 1, 0, 2, 1])),
        ("y_true", np.array([0, 1, 1, 0, -1, 1])),
        ("y_true", np.array([0, 1, 1, 0, np.iinfo(np.int64).min, 1])),
        ("y_true", np.array([0, 1, 1, 0, 3, 1])),
        ("y_score", np.array([0.1, 0.9, 0.6, 0.2, np.nan, 0.7])),
        ("y_score", np.array([0.1, 0.9, 0.6, 0.2, np.inf, 0.7])),
        ("y_score", np.array([0.1, 0.9, 0.6, 0.2, -np.inf, 0.7])),
        ("y_score", np.array([0.1, 0.9, 0.6, 0.2, -np.nan, 0.7])),
        ("sample_weight", np.array([1.0, 1.0, 1.0, 1.0, -1.0, 1.0])),
        ("sample_weight", np.array([1.0, 1.0, 1.0, 1.0, -5e-324, 1.0])),
        ("sample_weight", np.array([1.0, 1.0, 1.0, 1.0, np.nan, 1.0])),
        ("sample_weight", np.array([1.0, 1.0, 1.0, 1.0, -np.nan, 1.0])),
        ("sample_weight", np.array([1.0, 1.0, 1.0, 1.0, np.inf, 1.0])),
        ("sample_weight", np.array([1.0, 1.0, 1.0, 1.0, -np.inf, 1.0])),
    ],
)
@pytest.mark.parametrize("weighted", [False, True])
def test_an_invalid_value_gets_the_reference_message_and_folds_nothing(col, bad, weighted, reference):
    y = np.array([0, 1, 1, 0, 1, 1])
    s = np.array([0.1, 0.9, 0.6, 0.2, 0.8, 0.7])
    w = np.full(6, 0.25)
    args = {"y_true": y, "y_score": s, "sample_weight": w if weighted else None, col: bad}
    mc, ref = MetricCollection("roc_auc"), MetricCollection("roc_auc")
    for c in (mc, ref):
        c.update(np.tile(y, 2)[:4], np.tile(s, 2)[:4], sample_weight=np.full(4, 0.5))  # 4 rows before: row 8
    assert formats._plain_scores(mc.plan.task, 2, args["y_true"], args["y_score"], args["sample_weight"], None, mc.plan.needs) is None
    before = mc.encode()
    with pytest.raises(ValueError) as got:
        mc.update(**args)
    with pytest.raises(ValueError) as want:
        reference(lambda: ref.update(**args))
    assert str(got.value) == str(want.value)
    assert f"column '{col}'" in str(got.value) and "at row 8" in str(got.value)
    assert mc.encode() == before
    mc.update(y, s, sample_weight=w)  # and the collection still folds
    ref.update(y, s, sample_weight=w)
    assert mc.encode() == ref.encode()


def test_the_numpy_path_builds_no_sums():
    """Without the kernels (``MERGEABLE_METRICS_DISABLE_NUMBA=1``) the batch is plain_batch's."""
    y, s, w = np.array([0, 1, 1]), np.array([0.2, 0.7, 0.4]), np.array([1.0, 2.0, 0.5])
    mc = MetricCollection("roc_auc")
    got = on_numpy_path(lambda: _batch(mc, y, s, w))
    assert got.sums is None
