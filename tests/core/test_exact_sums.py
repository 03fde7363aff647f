"""Exact, order-independent sums (issue 11, item 7).

* :mod:`mergeable_metrics._util.exact`: the exact sum of any finite floats is ``math.fsum`` (correctly rounded) and,
  as a rational, the true sum; products are exact too; any merge order gives the same bits.
* Every state kind with float weights or values is bit-identical (``==`` on every field and limb,
  byte-identical encodings) for any batching, sharding and merge order, also with adversarial
  values (``1e300`` with ``1e-300``, cancellation like ``[1e16, 1, -1e16]``, integer weights past
  2**53, subnormals).
* int64 counts that overflow raise ``ValueError`` naming the state and field.
* The codec still reads version-1 bytes (each float the exact sum it stands for).
"""

from __future__ import annotations

import math
import struct
import zlib
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from mergeable_metrics.states import codec
from mergeable_metrics.inputs.validation import Batch
from mergeable_metrics.metrics.calibration import CalibrationBinsLayout, CalibrationBinsState, ProbabilitySumsLayout, ProbabilitySumsState
from mergeable_metrics._util.exact import ExactSums, exact_sum, exact_sum_products
from mergeable_metrics.metrics.measure import MeanMeasureLayout, MeanMeasureState
from mergeable_metrics.metrics.multilabel import MultilabelLayout, MultilabelState
from mergeable_metrics.metrics.regression import RegressionLayout, RegressionMomentsState
from mergeable_metrics.states.base import (
    BinaryConfusionLayout,
    BinaryConfusionState,
    ConfusionMatrixLayout,
    ConfusionMatrixState,
    ExampleCountLayout,
    ExampleCountState,
    State,
)
from mergeable_metrics.states.score_distribution import (
    ClassScoreDistributionLayout,
    ClassScoreDistributionState,
    ScoreDistributionLayout,
    ScoreDistributionState,
)
from mergeable_metrics.metrics.topk import TopKLayout, TopKState
from tests._helpers import merge_tree, random_shards

FINITE = st.floats(allow_nan=False, allow_infinity=False)  # subnormals and +-1.8e308 included
ADVERSARIAL = [1e300, 1e-300, 1e16, 1.0, 0.1, 2.0**53, 2.0**53 + 2, 5e-324, 1e-17, 3.0, 0.0]


def _fr(values) -> Fraction:
    return sum((Fraction(float(v)) for v in values), Fraction(0))


# -- the primitive ---------------------------------------------------------------------------
@settings(max_examples=300)
@given(st.lists(st.one_of(FINITE, st.sampled_from(ADVERSARIAL + [-v for v in ADVERSARIAL])), max_size=40))
@example([1e16, 1.0, -1e16])
@example([1e300, 1e-300, -1e300])
@example([0.1] * 10)
@example([1.7976931348623157e308, 1.7976931348623157e308, -1.7976931348623157e308])
@example([5e-324, 5e-324, 2.2250738585072014e-308])
def test_exact_sum_is_fsum_and_the_rational_sum(values):
    x = np.array(values, dtype=np.float64)
    s = exact_sum(x)
    assert s.fraction() == _fr(values)
    exact = _fr(values)
    try:
        want = math.fsum(values)
    except OverflowError:  # fsum overflows in an intermediate sum: the correct rounding of the exact one
        try:
            want = float(exact)
        except OverflowError:
            want = math.inf if exact > 0 else -math.inf
    assert float(s.values) == want
    assert not (float(s.values) == 0 and math.copysign(1, float(s.values)) < 0)  # a zero sum is +0.0


@settings(max_examples=200)
@given(
    st.lists(st.tuples(FINITE, FINITE, FINITE), max_size=25),
)
@example([(1e200, 1e200, 1e-300), (0.1, 0.1, 0.1), (-1e200, 1e200, 1e-300)])
def test_exact_sum_of_products_is_the_rational_sum_of_the_products(rows):
    a, b, c = (np.array([r[i] for r in rows], dtype=np.float64) for i in range(3))
    two = exact_sum(a, b)
    three = exact_sum_products([a, b, c])
    assert two.fraction() == sum((Fraction(x) * Fraction(y) for x, y in zip(a, b)), Fraction(0))
    assert three.fraction() == sum((Fraction(x) * Fraction(y) * Fraction(z) for x, y, z in zip(a, b, c)), Fraction(0))


@settings(max_examples=150)
@given(st.lists(st.tuples(st.one_of(FINITE, st.sampled_from(ADVERSARIAL)), st.integers(0, 4)), max_size=40), st.integers(0, 2**32 - 1))
def test_exact_sums_merge_bit_identically_in_any_order_and_grouping(rows, seed):
    x = np.array([r[0] for r in rows], dtype=np.float64)
    g = np.array([r[1] for r in rows], dtype=np.int64)
    whole = exact_sum(x, index=g, size=5)
    rng = np.random.default_rng(seed)
    parts = [exact_sum(x[idx], index=g[idx], size=5) for shard in random_shards(rng, len(rows)) for idx in shard]
    merged = merge_tree(parts, lambda a, b: a + b, rng, lambda: ExactSums.zeros((5,)))
    assert merged == whole
    assert merged.fractions() == [_fr(x[g == j]) for j in range(5)]
    assert whole.cumsum().fractions() == [_fr(x[g <= j]) for j in range(5)]
    assert whole.cumsum(reverse=True).fractions() == [_fr(x[g >= j]) for j in range(5)]
    assert whole.regroup(np.array([0, 0, 1, 1, 1]), 2).fractions() == [_fr(x[g < 2]), _fr(x[g >= 2])]


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_exact_sum_of_a_non_finite_value_raises(bad):
    with pytest.raises(ValueError, match="not finite"):
        exact_sum(np.array([1.0, bad]))
    with pytest.raises(ValueError, match="not finite"):
        exact_sum(np.array([1.0, 2.0]), np.array([1.0, bad]))


# -- every state kind ------------------------------------------------------------------------
K = 3
WEIGHTS = st.one_of(st.floats(0.0, 1e6, allow_nan=False), st.sampled_from(ADVERSARIAL))
ROWS = st.lists(
    st.tuples(
        st.integers(0, K - 1),  # label
        st.floats(0.0, 1.0, allow_nan=False),  # score / probability
        WEIGHTS,
        st.one_of(FINITE.filter(lambda v: abs(v) < 1e150), st.sampled_from([1e16, -1e16, 1.0, 1e-300])),  # value / target
        st.integers(0, K - 1),  # prediction
    ),
    max_size=30,
)


def _batch(kind: str, rows: list, idx: np.ndarray) -> Batch:
    y = np.array([r[0] for r in rows], dtype=np.int64)[idx]
    s = np.array([r[1] for r in rows], dtype=np.float64)[idx]
    w = np.array([r[2] for r in rows], dtype=np.float64)[idx]
    v = np.array([r[3] for r in rows], dtype=np.float64)[idx]
    pred = np.array([r[4] for r in rows], dtype=np.int64)[idx]
    if kind == "binary":
        return Batch(y % 2, s, None, w)
    if kind == "multiclass":
        P = np.stack([s, 1 - s, np.zeros_like(s)], axis=1)[:, :K] if idx.size else np.zeros((0, K))
        return Batch(y % 2, P, pred, w)
    if kind == "multilabel":  # two labels: the label's bits; scores s and 1 - s
        Y = np.stack([y % 2, y // 2], axis=1) if idx.size else np.zeros((0, 2), dtype=np.int64)
        S = np.stack([s, 1 - s], axis=1) if idx.size else np.zeros((0, 2))
        return Batch(Y, S, None, w)
    if kind == "measure":
        return Batch(None, None, None, w, values=v)
    return Batch(v, None, v + s, w)  # regression: targets v, predictions v + s


STATES = [
    ("example_count", ExampleCountState, ExampleCountLayout(), "binary"),
    ("binary_confusion", BinaryConfusionState, BinaryConfusionLayout((0.5,)), "binary"),
    ("binary_confusion_3", BinaryConfusionState, BinaryConfusionLayout((0.25, 0.5, 0.75), ">"), "binary"),
    ("confusion_matrix", ConfusionMatrixState, ConfusionMatrixLayout(K), "multiclass"),
    ("probability_sums_binary", ProbabilitySumsState, ProbabilitySumsLayout(True, 2, (2.220446049250313e-16, 1e-7)), "binary"),
    ("probability_sums_multiclass", ProbabilitySumsState, ProbabilitySumsLayout(False, K), "multiclass"),
    ("calibration_bins", CalibrationBinsState, CalibrationBinsLayout((4, 10)), "binary"),
    ("calibration_bins_multiclass", CalibrationBinsState, CalibrationBinsLayout((4, 10), K), "multiclass"),
    ("top_k", TopKState, TopKLayout(K, 2), "multiclass"),
    ("mean_measure", MeanMeasureState, MeanMeasureLayout(), "measure"),
    ("score_distribution", ScoreDistributionState, ScoreDistributionLayout(4), "binary"),  # capacity 4: coarsens
    ("score_distribution_exact", ScoreDistributionState, ScoreDistributionLayout(1000), "binary"),
    ("class_score_distribution", ClassScoreDistributionState, ClassScoreDistributionLayout(K, 4), "multiclass"),
    ("multilabel", MultilabelState, MultilabelLayout(2, (0.25, 0.5), ">=", (0.5, 1.0)), "multilabel"),
    ("regression_moments", RegressionMomentsState, RegressionLayout(), "regression"),
]


@pytest.mark.parametrize("name,cls,layout,kind", STATES, ids=[s[0] for s in STATES])
@settings(max_examples=60)
@given(rows=ROWS, seed=st.integers(0, 2**32 - 1))
@example(rows=[(1, 0.9, 1e16, 1e16, 1), (1, 0.8, 1.0, 1.0, 1), (0, 0.1, 1e-300, -1e16, 0), (1, 0.7, 1e16, 1.0, 1)], seed=0)
@example(rows=[(1, 0.3, 0.1, 0.1, 0)] * 10, seed=1)
def test_every_state_is_bit_identical_for_any_batching_sharding_and_merge_order(name, cls, layout, kind, rows, seed):
    zero = cls.zero(layout)
    whole = cls.from_batch(layout, _batch(kind, rows, np.arange(len(rows)))) if rows else zero
    rng = np.random.default_rng(seed)
    shards = []
    for shard in random_shards(rng, len(rows)):
        s = zero
        for idx in shard:
            if idx.size:
                s = s.fold(_batch(kind, rows, idx))
        shards.append(s)
    merged = merge_tree(shards, lambda a, b: a.merge(b), rng, lambda: zero)
    for f, _ in cls.STORED_FIELDS:
        assert np.array_equal(merged[f], whole[f]), f
    assert merged == whole and merged.encode() == whole.encode()
    assert State.decode(merged.encode()) == merged
    # the weight sums are the correctly rounded exact sums of the weights
    w = [r[2] for r in rows]
    if "weight" in dict(cls.FIELDS):
        assert float(merged["weight"]) == math.fsum(w)


def test_weighted_count_past_2_53_is_the_same_for_1_and_1000_batches():
    """Integer weights past 2**53: float64 running sums lose the +1s depending on the batching."""
    rng = np.random.default_rng(3)
    w = rng.integers(1, 50, 5000).astype(np.float64)
    w[::7] = 2.0**53  # each exact as float64; their sum with the small ones is not
    y = rng.integers(0, 2, 5000)
    s = rng.random(5000)
    lay = BinaryConfusionLayout((0.5,))
    one = ExampleCountState.from_batch(ExampleCountLayout(), Batch(y, s, None, w))
    many = ExampleCountState.zero(ExampleCountLayout())
    conf_one = BinaryConfusionState.from_batch(lay, Batch(y, s, None, w))
    conf_many = BinaryConfusionState.zero(lay)
    for idx in np.array_split(np.arange(5000), 1000):
        many = many.fold(Batch(y[idx], s[idx], None, w[idx]))
        conf_many = conf_many.fold(Batch(y[idx], s[idx], None, w[idx]))
    assert many == one and conf_many == conf_one
    exact = int(w.astype(np.int64).sum())
    assert one.exact["weight"].fraction() == exact
    assert float(one["weight"]) == float(exact)  # correctly rounded
    tp = int(w[(y == 1) & (s >= 0.5)].astype(np.int64).sum())
    assert conf_one.exact["tp"].fraction() == tp


def test_int64_count_overflow_on_merge_raises_naming_the_state_and_field():
    big = ExampleCountState(ExampleCountLayout(), {"count": np.int64(2**62), "weight": np.float64(1.0), "skipped": np.int64(0)})
    with pytest.raises(ValueError, match=r"example_count\.count: int64 overflow"):
        big.merge(big)
    skipped = ExampleCountState.skipped_rows(2**63 - 1)
    with pytest.raises(ValueError, match=r"example_count\.skipped: int64 overflow"):
        skipped.merge(ExampleCountState.skipped_rows(1))
    reg = RegressionMomentsState.from_batch(RegressionLayout(), Batch(np.array([1.0]), None, np.array([2.0])))
    huge = RegressionMomentsState(RegressionLayout(), {**{n: reg.exact[n] for n in reg.EXACT}, "count": np.int64(2**63 - 1), "max_abs_e": reg["max_abs_e"]})
    with pytest.raises(ValueError, match=r"regression_moments\.count: int64 overflow"):
        huge.merge(reg)


# -- codec -----------------------------------------------------------------------------------
def _encode_v1(state: State) -> bytes:
    """Bytes as codec version 1 wrote them: the FIELDS only, no limbs."""
    parts = [b"MMS", bytes([1]), codec._str16(state.kind), codec._str32(codec.layout_to_json(state.layout))]
    parts.append(struct.pack("<H", len(state.FIELDS)))
    for name, dtype in state.FIELDS:
        a = np.asarray(state.arrays[name], dtype=np.dtype(dtype).newbyteorder("<"))
        parts += [codec._str16(name), struct.pack("<BB", codec._DTYPE_CODES[np.dtype(dtype)], a.ndim)]
        parts += [struct.pack(f"<{a.ndim}Q", *a.shape), a.tobytes()]
    body = b"".join(parts)
    return body + struct.pack("<I", zlib.crc32(body))


def test_codec_version_1_bytes_are_upgraded_and_regression_moments_raise():
    lay = BinaryConfusionLayout((0.5,))
    b = Batch(np.array([1, 0, 1]), np.array([0.9, 0.2, 0.7]), None, np.array([0.1, 0.2, 0.3]))
    st_ = BinaryConfusionState.from_batch(lay, b)
    old = State.decode(_encode_v1(st_))
    assert np.array_equal(old["tp"], st_["tp"]) and old["tp"][0] == 0.1 + 0.3
    assert old.exact["tp"].fraction() == Fraction(float(st_["tp"][0]))  # the float, exactly
    assert State.decode(old.encode()) == old  # re-encoded as version 2
    reg = RegressionMomentsState.zero(RegressionLayout())
    with pytest.raises(ValueError, match="regression_moments bytes of codec version 1 cannot be read"):
        State.decode(_encode_v1(reg))


def test_decoding_non_canonical_or_inconsistent_limbs_raises():
    st_ = ExampleCountState.from_batch(ExampleCountLayout(), Batch(np.array([1, 0]), None, None, np.array([0.1, 0.2])))
    assert st_.arrays["weight.limbs"].size  # 0.1 + 0.2 is not a float64: limbs are kept
    for change in (
        {"weight": np.float64(0.3)},  # a value that is not the rounding of the limbs
        {"weight.limbs": np.concatenate([st_.arrays["weight.limbs"], [0]])},  # a non-canonical window
        {"weight.exp": np.int64(int(st_.arrays["weight.exp"]) + 1)},
    ):
        with pytest.raises(ValueError, match="example_count.weight"):
            ExampleCountState(ExampleCountLayout(), {**st_.arrays, **change})
