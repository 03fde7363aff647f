"""Adversarial inputs for issue 25 rounds 5-7 (helper brk6): the running score distributions
(:mod:`mergeable_metrics.states.score_running`) and the compiled validation passes (regression by
its kernel, labels by the counting pass, the mean's one-pass sums), checked against the canonical
fold (``from_arrays``), the path without compiled kernels, ``math.fsum`` / ``Fraction`` and
scikit-learn."""

from __future__ import annotations

import contextlib
import math
import pickle
import threading
import warnings

import numpy as np
import pytest

from mergeable_metrics import MetricCollection
from mergeable_metrics._util import exact_kernels as K
from mergeable_metrics.inputs.validation import Batch
from mergeable_metrics.states import score_running as R
from mergeable_metrics.states.score_distribution import (
    ClassScoreDistributionLayout,
    ClassScoreDistributionState,
    Class0ScoreDistributionState,
    ScoreDistributionLayout as L,
    ScoreDistributionState as S,
    score_keys,
)

needs_numba = pytest.mark.skipif(not K.AVAILABLE, reason="running bins need the compiled kernels")
pytestmark = pytest.mark.filterwarnings("ignore::mergeable_metrics.metrics.base.UndefinedMetricWarning")
BIG = 1.7976931348623157e308


def _running(layout, parts, start=None, cls=S):
    out = cls.zero(layout) if start is None else start
    with R.running_folds():
        for s, y, w in parts:
            out = out.fold(
                Batch(y_true=np.asarray(y, dtype=np.int64), y_score=np.asarray(s, dtype=float), sample_weight=None if w is None else np.asarray(w, dtype=float))
            )
    return out


def _whole(parts):
    s = np.concatenate([np.asarray(p[0], dtype=float) for p in parts])
    y = np.concatenate([np.asarray(p[1], dtype=np.int64) for p in parts])
    w = None if all(p[2] is None for p in parts) else np.concatenate([np.ones(len(p[0])) if p[2] is None else np.asarray(p[2], dtype=float) for p in parts])
    return s, y, w


# -- a bin whose exact weight rounds past float64 -------------------------------------------------
def test_a_bin_whose_weight_sum_overflows_decodes_and_pickles():
    """Two rows of weight 1.7e308 in one bin: the exact weight (3.4e308) is a valid state whose
    rounded value is inf (its limbs are kept); encode() worked but decode() and pickling (a
    MetricCollection, a running state) raised "weights must be finite" (every engine: Spark's
    driver decodes the JVM's bytes of such a group)."""
    layout = L(10)
    st = S.from_arrays(layout, np.array([0.5, 0.5, 0.2]), np.array([1, 1, 0]), np.array([BIG, BIG, 1.0]))
    assert st["pos"].tolist() == [0.0, math.inf]  # 2 * BIG rounds to inf; the limbs hold it exactly
    back = S.decode(st.encode())
    assert back == st and back.encode() == st.encode()
    assert pickle.loads(pickle.dumps(st)) == st
    mc = MetricCollection("roc_auc", "average_precision", "example_count")
    mc.update([1, 1, 0], [0.5, 0.5, 0.2], sample_weight=[BIG, BIG, 1.0])
    again = pickle.loads(pickle.dumps(mc))
    assert again.encode() == mc.encode()
    assert MetricCollection("roc_auc", "average_precision", "example_count").decode(mc.encode()).encode() == mc.encode()
    c0 = Class0ScoreDistributionState.from_arrays(layout, np.array([0.5, 0.5]), np.array([0, 0]), np.array([BIG, BIG]))
    assert Class0ScoreDistributionState.decode(c0.encode()) == c0
    # corrupted states are still refused: NaN, negative weights, an inf without the limbs behind it
    for bad in (np.nan, -1.0, math.inf):
        with pytest.raises(ValueError):
            S(layout, {"level": np.int64(0), "keys": np.array([1], np.int64), "pos": np.array([bad]), "neg": np.array([1.0])})
    arrays = dict(st.arrays)
    arrays["pos"] = np.array([0.0, -math.inf])
    with pytest.raises(ValueError):
        S(layout, arrays)


def test_a_class_score_bin_whose_weight_sum_overflows_decodes():
    layout = ClassScoreDistributionLayout(3, None)
    st = ClassScoreDistributionState.from_batch(
        layout, Batch(y_true=np.array([0, 0, 1]), y_score=np.array([[0.5, 0.3, 0.2]] * 3), sample_weight=np.array([BIG, BIG, 1.0]))
    )
    assert np.isinf(st["weights"]).any()
    assert ClassScoreDistributionState.decode(st.encode()) == st
    assert pickle.loads(pickle.dumps(st)) == st
