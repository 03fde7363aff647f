"""Monoid laws, codec and configuration checks of the additive new states (issue 3): top-k rank
histogram, probability sums (log loss / Brier), calibration bins. Any sharding and merge tree
equals one fold bit for bit (exact sums, mergeable_metrics._util.exact). (Regression moments, multilabel and
mean-of-measure states have their own property tests next to their metrics.)"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mergeable_metrics.inputs.validation import Batch
from mergeable_metrics.metrics.calibration import CalibrationBinsLayout, CalibrationBinsState, ProbabilitySumsLayout, ProbabilitySumsState
from mergeable_metrics.states.base import State
from mergeable_metrics.metrics.topk import TopKLayout, TopKState
from tests._helpers import merge_tree, random_shards

DYADIC = [0.0, 0.125, 0.25, 0.5, 0.625, 0.75, 1.0]
K = 3

rows = st.lists(
    st.tuples(st.integers(0, K - 1), st.lists(st.sampled_from(DYADIC), min_size=K, max_size=K), st.sampled_from([0.0, 1.0, 2.0, 5.0])),
    max_size=30,
)


def _batch(kind: str, y, S, w, idx) -> Batch:
    if kind == "binary":
        return Batch((y[idx] > 0).astype(np.int64), S[idx, 0], None, w[idx])
    P = S[idx] / np.maximum(S[idx].sum(axis=1, keepdims=True), 1.0)  # dyadic-ish rows
    return Batch(y[idx], P, None, w[idx])


STATES = [
    ("top_k", TopKState, TopKLayout(K, 2), "multiclass"),
    ("probability_sums_binary", ProbabilitySumsState, ProbabilitySumsLayout(True, 2, (2.220446049250313e-16, 1e-7)), "binary"),
    ("calibration_bins", CalibrationBinsState, CalibrationBinsLayout((4, 10)), "binary"),
    ("calibration_bins_multiclass", CalibrationBinsState, CalibrationBinsLayout((4, 10), K), "multiclass"),
]


@pytest.mark.parametrize("name,cls,layout,kind", STATES, ids=[s[0] for s in STATES])
@settings(max_examples=40)
@given(data=rows, seed=st.integers(0, 2**32 - 1))
def test_sharded_merge_equals_one_fold(name, cls, layout, kind, data, seed):
    y = np.array([d[0] for d in data], dtype=np.int64)
    S = np.array([d[1] for d in data], dtype=np.float64).reshape(-1, K)
    w = np.array([d[2] for d in data])
    zero = cls.zero(layout)
    whole = zero.fold(_batch(kind, y, S, w, np.arange(len(data)))) if data else zero
    rng = np.random.default_rng(seed)
    states = []
    for shard in random_shards(rng, len(data)):
        s = zero
        for idx in shard:
            s = s.fold(_batch(kind, y, S, w, idx))
        states.append(s)
    merged = merge_tree(states, lambda a, b: a.merge(b), rng, lambda: zero)
    for f, _ in cls.STORED_FIELDS:  # exact sums (log-loss logarithms too): bit for bit
        assert np.array_equal(merged[f], whole[f]), f
    assert merged.encode() == whole.encode()
    assert merged.merge(zero) == merged == zero.merge(merged)
    assert State.decode(merged.encode()) == merged


@pytest.mark.parametrize(
    "a,b,message",
    [
        (TopKState.zero(TopKLayout(3, 2)), TopKState.zero(TopKLayout(3, 5)), "max_k 2 != 5"),
        (CalibrationBinsState.zero(CalibrationBinsLayout((10,))), CalibrationBinsState.zero(CalibrationBinsLayout((15,))), r"bins \(10,\) != \(15,\)"),
        (ProbabilitySumsState.zero(ProbabilitySumsLayout(True, 2, (1e-7,))), ProbabilitySumsState.zero(ProbabilitySumsLayout(True, 2)), "eps"),
    ],
)
def test_merging_different_configurations_names_the_setting(a, b, message):
    with pytest.raises(ValueError, match=message):
        a.merge(b)


def test_layouts_validate_their_settings():
    with pytest.raises(ValueError, match="max_k must be an integer >= 1"):
        TopKLayout(3, 0)
    with pytest.raises(ValueError, match="bins must be sorted distinct integers >= 1"):
        CalibrationBinsLayout((10, 5))
    with pytest.raises(ValueError, match="eps must be sorted distinct values"):
        ProbabilitySumsLayout(True, 2, (0.9,))
