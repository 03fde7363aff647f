"""The JVM ports of the float state kinds (spark_metrics/java, compiled with plain javac, no Spark)
fold the same state bytes as the Python core: property tests on random rows in random partitions."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mergeable_metrics._util.exact import exact_sum_products
from mergeable_metrics.engine import State
from tests.spark_metrics import jvm_fold

SPECIAL = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    1e-300,
    -1e-300,
    5e-324,
    -5e-324,
    2.2250738585072014e-308,
    1e300,
    -1e300,
    1.7976931348623157e308,
    -1.7976931348623157e308,
    3.0,
    0.1,
]
FLOATS = st.one_of(st.sampled_from(SPECIAL), st.floats(allow_nan=False, allow_infinity=False), st.floats(-10, 10), st.integers(-1000, 1000).map(float))


@st.composite
def partitioned(draw, rows, max_parts=5):
    """``(n_partitions, merge order, [(partition, row)])``: rows spread over partitions (some empty)."""
    rs = draw(rows)
    nparts = draw(st.integers(1, max_parts))
    parts = [draw(st.integers(0, nparts - 1)) for _ in rs]
    order = draw(st.permutations(range(nparts)))
    return nparts, list(order), list(zip(parts, rs))


@st.composite
def exact_case(draw):
    m = draw(st.integers(1, 4))
    k = draw(st.integers(1, 3))
    row = st.tuples(st.integers(0, m - 1).map(float), *([FLOATS] * k))
    nparts, order, rows = draw(partitioned(st.lists(row, max_size=12)))
    return m, k, nparts, order, rows


def _python_exact(m, k, rows):
    g = np.array([int(r[0]) for _, r in rows], dtype=np.int64)
    factors = [np.array([r[1 + j] for _, r in rows], dtype=np.float64) for j in range(k)]
    e = exact_sum_products(factors, index=g, size=m)
    values = "".join(format(int(v), "016x") for v in e.values.view(np.uint64).ravel())
    return f"{values} {e.exp} {','.join(str(int(x)) for x in e.limbs.ravel())}"


@settings(max_examples=6)
@given(st.lists(exact_case(), min_size=40, max_size=40))
def test_exact_sums_equal_the_python_canonical_form_in_any_partitioning(cases):
    got = jvm_fold.run([("exact", str(m), nparts, order, rows) for m, k, nparts, order, rows in cases])
    for (m, k, _, _, rows), line in zip(cases, got):
        assert line == _python_exact(m, k, rows), (m, k, rows)


def test_exact_sums_of_a_known_inexact_sum():
    """1e100 + 1 - 1e100 + 2**-1074: the exact sum is 1 + 2**-1074 (rounds to 1.0, limbs kept)."""
    rows = [(0, (0.0, 1e100)), (1, (0.0, 1.0)), (1, (0.0, -1e100)), (0, (0.0, 5e-324))]
    (line,) = jvm_fold.run([("exact", "1", 2, [1, 0], rows)])
    values, exp, limbs = line.split(" ")
    assert values == format(int(np.float64(1.0).view(np.uint64)), "016x")
    limbs = [int(x) for x in limbs.split(",")]
    value = sum(Fraction(d) * Fraction(2) ** (32 * (int(exp) + i)) for i, d in enumerate(limbs))
    assert value == 1 + Fraction(2) ** -1074
    assert line == _python_exact(1, 1, rows)


# -- the state kinds: bytes of the JVM fold == core's encode() of the Python fold ---------------
UNIT = st.one_of(st.sampled_from([0.0, -0.0, 1.0, 0.5, 0.1, 0.3, 0.7, 0.9, 1 / 3, 2 / 3, 5e-324, 1e-300, 2.220446049250313e-16, 1 - 2**-53]), st.floats(0, 1))
WEIGHT = st.one_of(st.sampled_from([0.0, 1.0, 2.0, 0.5, 0.1, 5e-324, 1e-300, 1e300, 3.0]), st.floats(0, 1e6), st.floats(0, 1e300))


def _batch(zero, rows, weighted):
    from mergeable_metrics.inputs.validation import Batch

    kind = zero.kind
    labels = [r[0] for r in rows]
    w = np.array([r[2] for r in rows], dtype=np.float64) if weighted else None
    vector = rows and isinstance(rows[0][1], tuple)
    if kind in ("regression_moments", "absolute_error_distribution", "regression_terms"):
        return Batch(y_true=np.array(labels, dtype=np.float64), y_pred=np.array([r[1] for r in rows], dtype=np.float64), sample_weight=w)
    if kind.startswith("score_distribution"):
        return Batch(y_true=np.array(labels, dtype=np.int64), y_score=np.array([r[1] for r in rows], dtype=np.float64), sample_weight=w)
    if kind == "class_score_distribution":
        k = zero.layout.num_classes
        scores = np.array([r[1] for r in rows], dtype=np.float64).reshape(len(rows), k)
        return Batch(y_true=np.array(labels, dtype=np.int64), y_score=scores, sample_weight=w)
    k = getattr(zero.layout, "num_classes", 0)
    multiclass = (kind == "probability_sums" and not zero.layout.binary) or (kind == "calibration_bins" and k)
    if multiclass:
        scores = np.array([r[1] for r in rows], dtype=np.float64).reshape(len(rows), k)
    else:
        scores = np.array([r[1] for r in rows], dtype=np.float64)
    assert not vector or multiclass
    return Batch(y_true=np.array(labels, dtype=np.int64), y_score=scores, sample_weight=w)


def _python_fold(zero, weighted, nparts, order, rows):
    cls = type(zero)
    parts = [cls.from_batch(zero.layout, _batch(zero, [r for p, r in rows if p == i], weighted)) for i in range(nparts)]
    acc = zero
    for i in order:
        acc = acc.merge(parts[i])
    whole = cls.from_batch(zero.layout, _batch(zero, [r for _, r in rows], weighted))
    assert acc == whole  # core itself: exact in any partitioning
    return acc.encode().hex()


def _jvm_rows(rows, weighted):
    out = []
    for p, (label, score, w) in rows:
        w = w if weighted else 1.0
        vals = (float(label), float("nan"), w) + score if isinstance(score, tuple) else (float(label), score, w)
        out.append((p, vals))
    return out


def check_kind(cases):
    """Every case ``(zero, weighted, (nparts, order, rows))``: the JVM's bytes equal core's, every
    field bit for bit (the per-row logs of ``log_loss`` included: core's
    :mod:`mergeable_metrics._util.portable_log` and Java's ``StrictMath.log`` are both fdlibm's)."""
    from mergeable_metrics.spark.jvm_float_kinds import FLOAT_KINDS

    jvm = []
    for zero, weighted, (nparts, order, rows) in cases:
        kind, config = FLOAT_KINDS[type(zero)](zero)
        jvm.append((kind, config, nparts, order, _jvm_rows(rows, weighted)))
    got = jvm_fold.run(jvm)
    for (zero, weighted, (nparts, order, rows)), line in zip(cases, got):
        want = _python_fold(zero, weighted, nparts, order, rows)
        if line != want:
            got_state, want_state = State.decode(bytes.fromhex(line)), State.decode(bytes.fromhex(want))
            differ = [name for name, _ in type(want_state).STORED_FIELDS if not np.array_equal(got_state[name], want_state[name], equal_nan=True)]
            raise AssertionError(
                f"JVM bytes differ from core's in {differ}: {zero.layout}, weighted={weighted}, rows={rows if len(rows) <= 20 else f'{len(rows)} rows'}"
            )


def _prob_zero(binary, k, eps):
    from mergeable_metrics.engine import ProbabilitySumsState
    from mergeable_metrics.metrics.calibration import ProbabilitySumsLayout

    return ProbabilitySumsState.zero(ProbabilitySumsLayout(binary, k, eps))


@st.composite
def probability_case(draw):
    eps = draw(st.sampled_from([(2.220446049250313e-16,), (1e-15,), (1e-7, 2.220446049250313e-16 * 4, 0.25)]))
    eps = tuple(sorted(eps))
    binary = draw(st.booleans())
    k = 2 if binary else draw(st.integers(2, 4))
    if binary:
        row = st.tuples(st.integers(0, 1), UNIT, WEIGHT)
    else:
        row = st.tuples(st.integers(0, k - 1), st.tuples(*([UNIT] * k)), WEIGHT)
    return _prob_zero(binary, k, eps), draw(st.booleans()), draw(partitioned(st.lists(row, max_size=10)))


@settings(max_examples=5)
@given(st.lists(probability_case(), min_size=40, max_size=40))
def test_probability_sums_bytes_equal_the_python_fold(cases):
    check_kind(cases)


def test_probability_sums_of_many_scores_equal_core_bit_for_bit():
    """2,000 random probabilities (the per-row logs of the log-loss sum included: with a
    platform libm's ``log`` against Java's ``Math.log``, about 1 value in 2,000 differed)."""
    rng = np.random.default_rng(7)
    n = 2000
    rows = [(int(i % 3), (int(y), float(p), float(w))) for i, (y, p, w) in enumerate(zip(rng.integers(0, 2, n), rng.random(n), rng.random(n) * 3))]
    check_kind([(_prob_zero(True, 2, (2.220446049250313e-16 * 4, 1e-15)), True, (3, [2, 0, 1], rows))])


@st.composite
def regression_case(draw):
    from mergeable_metrics.engine import RegressionMomentsState
    from mergeable_metrics.metrics.regression import RegressionLayout

    value = st.one_of(
        st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.1, 5e-324, -5e-324, 1e-300, 2.0**-1022, 1e150, -1e150]), st.floats(-1e150, 1e150), st.floats(-10, 10)
    )
    row = st.tuples(value, value, WEIGHT)
    return RegressionMomentsState.zero(RegressionLayout()), draw(st.booleans()), draw(partitioned(st.lists(row, max_size=10)))


@settings(max_examples=5)
@given(st.lists(regression_case(), min_size=40, max_size=40))
def test_regression_moments_bytes_equal_the_python_fold(cases):
    check_kind(cases)


@st.composite
def calibration_case(draw):
    from mergeable_metrics.engine import CalibrationBinsState
    from mergeable_metrics.metrics.calibration import CalibrationBinsLayout

    bins = tuple(sorted(draw(st.sets(st.integers(1, 12), min_size=1, max_size=3))))
    k = draw(st.sampled_from([0, 0, 2, 3]))
    edge = st.integers(0, 12).flatmap(lambda i: st.integers(1, 12).map(lambda b: min(i, b) / b))  # scores on bin edges
    score = st.one_of(UNIT, edge)
    row = st.tuples(st.integers(0, max(k, 2) - 1), st.tuples(*([score] * k)) if k else score, WEIGHT)
    return CalibrationBinsState.zero(CalibrationBinsLayout(bins, k)), draw(st.booleans()), draw(partitioned(st.lists(row, max_size=10)))


@settings(max_examples=4)
@given(st.lists(calibration_case(), min_size=25, max_size=25))
def test_calibration_bins_bytes_equal_the_python_fold(cases):
    check_kind(cases)


@st.composite
def score_distribution_case(draw):
    from mergeable_metrics.engine import Class0ScoreDistributionState, ScoreDistributionState
    from mergeable_metrics.states.score_distribution import ScoreDistributionLayout

    capacity = draw(st.sampled_from([2, 3, 4, 7, 16, 40000]))
    pool = draw(
        st.lists(st.one_of(st.sampled_from(SPECIAL), st.floats(allow_nan=False, allow_infinity=False), UNIT, st.floats(-3, 3)), min_size=1, max_size=12)
    )
    score = st.sampled_from(pool)  # ties
    weight = st.one_of(st.just(1.0), WEIGHT)
    row = st.tuples(st.integers(0, 1), score, weight)
    cls = draw(st.sampled_from([ScoreDistributionState, Class0ScoreDistributionState]))
    return cls.zero(ScoreDistributionLayout(capacity)), draw(st.booleans()), draw(partitioned(st.lists(row, max_size=16)))


@settings(max_examples=6)
@given(st.lists(score_distribution_case(), min_size=40, max_size=40))
def test_score_distribution_bytes_equal_the_python_fold_exact_and_compressed(cases):
    check_kind(cases)


def test_score_distribution_of_many_rows_raises_its_level_as_core_does():
    """20,000 rows (scores rounded to 4 decimals and raw, half of them weighted) in 4 partitions,
    capacity 100 and 40,000: the JVM raises the level many times while folding and merging."""
    from mergeable_metrics.engine import ScoreDistributionState
    from mergeable_metrics.states.score_distribution import ScoreDistributionLayout

    rng = np.random.default_rng(11)
    n = 20000
    s = rng.normal(size=n)
    s[: n // 2] = np.round(s[: n // 2], 4)
    y = (rng.random(n) < 0.3).astype(int)
    w = np.where(rng.random(n) < 0.5, 1.0, rng.random(n) * 5)
    rows = [(int(i % 4), (int(y[i]), float(s[i]), float(w[i]))) for i in range(n)]
    cases = [(ScoreDistributionState.zero(ScoreDistributionLayout(c)), weighted, (4, [3, 1, 0, 2], rows)) for c in (100, 40000) for weighted in (True, False)]
    check_kind(cases)


def test_score_distribution_between_one_and_two_capacities_equals_core():
    """20,000 rows in 4 partitions at capacities of 7,000 to 15,000 (issue 26 round 7: the JVM lets the bins grow
    to twice the capacity before raising the level, and raises again before writing the state or its Java
    serialisation): the bytes of core's fold, which raises to the canonical level at once."""
    from mergeable_metrics.engine import Class0ScoreDistributionState, ScoreDistributionState
    from mergeable_metrics.states.score_distribution import ScoreDistributionLayout

    rng = np.random.default_rng(26)
    n = 20000
    s = rng.random(n)
    s[: n // 4] = np.round(s[: n // 4], 3)  # ties
    y = (rng.random(n) < 0.4).astype(int)
    w = np.where(rng.random(n) < 0.7, 1.0, rng.random(n) * 3)
    rows = [(int(i % 4), (int(y[i]), float(s[i]), float(w[i]))) for i in range(n)]
    cases = [
        (cls.zero(ScoreDistributionLayout(c)), weighted, (4, [2, 0, 3, 1], rows))
        for c in (7000, 12000, 15000)
        for weighted, cls in ((False, ScoreDistributionState), (True, Class0ScoreDistributionState))
    ]
    check_kind(cases)


def test_score_distribution_java_serialisation_holds_its_bins_only():
    """Spark's partial aggregation buffers are the states Java-serialised: a score distribution of 20,000 distinct
    scores (exact, unit weights) serialises to about its own bytes (a key and two counts per bin), not its hash
    index and spare array room (before issue 26 round 7: 2.7 times its bytes)."""
    from mergeable_metrics.engine import ScoreDistributionState
    from mergeable_metrics.spark.jvm_float_kinds import FLOAT_KINDS
    from mergeable_metrics.states.score_distribution import ScoreDistributionLayout

    n = 20000
    scores = np.random.default_rng(3).random(n)
    rows = [(i % 3, (float(i % 2), float(scores[i]), 1.0)) for i in range(n)]
    zero = ScoreDistributionState.zero(ScoreDistributionLayout(40000))
    kind, config = FLOAT_KINDS[type(zero)](zero)
    (line,) = jvm_fold.run([(kind, config, 3, [0, 1, 2], rows)], sizes=True)
    state, serialised = map(int, line.split())
    assert state >= 24 * n  # a key, a positive and a negative weight per bin
    assert serialised <= 1.05 * state + 2048, (state, serialised)


@st.composite
def class_score_distribution_case(draw):
    from mergeable_metrics.states.score_distribution import ClassScoreDistributionLayout, ClassScoreDistributionState

    k = draw(st.integers(2, 4))
    capacity = draw(st.sampled_from([2, 3, 4, 7, 16, None]))
    pool = draw(
        st.lists(st.one_of(st.sampled_from(SPECIAL), st.floats(allow_nan=False, allow_infinity=False), UNIT, st.floats(-3, 3)), min_size=1, max_size=10)
    )
    score = st.sampled_from(pool)  # ties within and across columns
    weight = st.one_of(st.just(1.0), WEIGHT)
    row = st.tuples(st.integers(0, k - 1), st.tuples(*([score] * k)), weight)
    zero = ClassScoreDistributionState.zero(ClassScoreDistributionLayout(k, capacity))
    return zero, draw(st.booleans()), draw(partitioned(st.lists(row, max_size=16)))


@settings(max_examples=6)
@given(st.lists(class_score_distribution_case(), min_size=40, max_size=40))
def test_class_score_distribution_bytes_equal_the_python_fold_exact_and_compressed(cases):
    """Per class column the canonical bins of its scores with every true class's exact weight: capacities 2
    to 16 (levels raised while folding and merging) and the default, weights 0, -0.0, subnormal, huge."""
    check_kind(cases)


def test_class_score_distribution_of_many_rows_raises_its_levels_as_core_does():
    """6,000 rows of 4 classes (scores rounded to 3 decimals in half the rows, raw in the others, half of
    them weighted) in 4 partitions, capacity 50 and the default: every column raises its own level."""
    from mergeable_metrics.states.score_distribution import ClassScoreDistributionLayout, ClassScoreDistributionState

    rng = np.random.default_rng(5)
    n, k = 6000, 4
    p = rng.dirichlet(np.ones(k), size=n)
    p[: n // 2] = np.round(p[: n // 2], 3)
    y = rng.integers(0, k, n)
    w = np.where(rng.random(n) < 0.5, 1.0, rng.random(n) * 5)
    rows = [(int(i % 4), (int(y[i]), tuple(float(v) for v in p[i]), float(w[i]))) for i in range(n)]
    zeros = [ClassScoreDistributionState.zero(ClassScoreDistributionLayout(k, c)) for c in (50, None)]
    check_kind([(z, weighted, (4, [2, 0, 3, 1], rows)) for z in zeros for weighted in (True, False)])


@st.composite
def absolute_error_case(draw):
    from mergeable_metrics.metrics.regression_quantiles import AbsoluteErrorDistributionState
    from mergeable_metrics.states.score_distribution import ScoreDistributionLayout

    capacity = draw(st.sampled_from([2, 3, 4, 7, 16, 40000]))
    pool = draw(
        st.lists(
            st.one_of(
                st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.1, 5e-324, -5e-324, 1e-300, 1e308, -1e308, 1.7976931348623157e308]),
                st.floats(-1e300, 1e300),
                st.floats(-3, 3),
            ),
            min_size=1,
            max_size=8,
        )
    )
    value = st.sampled_from(pool)  # tied errors; 1e308 - (-1e308) overflows (held at the largest float, label 1)
    row = st.tuples(value, value, st.one_of(st.just(1.0), WEIGHT))
    return AbsoluteErrorDistributionState.zero(ScoreDistributionLayout(capacity)), draw(st.booleans()), draw(partitioned(st.lists(row, max_size=16)))


@settings(max_examples=6)
@given(st.lists(absolute_error_case(), min_size=40, max_size=40))
def test_absolute_error_distribution_bytes_equal_the_python_fold(cases):
    """``median_absolute_error``'s state: the canonical bins of ``|p - y|`` (exact and compressed), errors past
    float64 kept at the largest float with label 1, weights 0, -0.0, subnormal, huge: core's bytes."""
    check_kind(cases)


def test_absolute_error_distribution_of_an_overflowing_error():
    """1e308 - (-1e308) is inf: core holds its weight as ``pos`` of the largest float's bin (by hand)."""
    from mergeable_metrics.engine import State
    from mergeable_metrics.metrics.regression_quantiles import AbsoluteErrorDistributionState
    from mergeable_metrics.spark.jvm_float_kinds import FLOAT_KINDS
    from mergeable_metrics.states.score_distribution import ScoreDistributionLayout

    zero = AbsoluteErrorDistributionState.zero(ScoreDistributionLayout(16))
    kind, config = FLOAT_KINDS[type(zero)](zero)
    (line,) = jvm_fold.run([(kind, config, 1, [0], [(0, (1e308, -1e308, 2.0)), (0, (1.0, 3.5, 1.0))])])
    st_ = State.decode(bytes.fromhex(line))
    assert st_["keys"].tolist() == [int(np.float64(2.5).view(np.int64)), int(np.float64(1.7976931348623157e308).view(np.int64))]
    assert st_["pos"].tolist() == [0.0, 2.0] and st_["neg"].tolist() == [1.0, 0.0]


@st.composite
def regression_terms_case(draw):
    from mergeable_metrics.metrics.regression_terms import RegressionTermsLayout, RegressionTermsState

    ported = [
        "sle",
        "pinball:0.9",
        "pinball:0.5",
        "pinball:0.1",
        "pinball:0.3333333333333333",
        "tweedie:0.0",
        "tweedie:1.0",
        "tweedie:2.0",
        "null:1.0",
        "null:2.0",
        # the other Tweedie powers: fdlibm's pow on both sides (StrictMath.pow in Java, core's portable_pow)
        "tweedie:1.5",
        "tweedie:1.2345",
        "tweedie:3.0",
        "tweedie:2.5",
        "tweedie:-1.0",
        "tweedie:-0.37",
        "tweedie:0.5",  # refused by the metrics, but a valid layout term
        "null:1.5",
        "null:3.0",
        "null:-1.0",
        "null:0.0",
    ]
    terms = tuple(draw(st.lists(st.sampled_from(ported), min_size=1, max_size=5, unique=True)))
    value = st.one_of(
        st.sampled_from(
            [0.0, -0.0, 1.0, -1.0, -0.5, -1 + 2**-53, 0.1, 5e-324, -5e-324, 1e-300, 2.0**-1022, 1e300, -1e300, 1.7976931348623157e308, -1.7976931348623157e308]
        ),
        st.floats(-1e300, 1e300),
        st.floats(-2, 10),
        st.floats(0, 1e6),
    )  # targets <= -1 and predictions <= 0 outside the domains; 1e300 / 1e-300 overflows the deviances
    row = st.tuples(value, value, WEIGHT)
    return RegressionTermsState.zero(RegressionTermsLayout(terms)), draw(st.booleans()), draw(partitioned(st.lists(row, max_size=10)))


@settings(max_examples=6)
@given(st.lists(regression_terms_case(), min_size=40, max_size=40))
def test_regression_terms_bytes_equal_the_python_fold(cases):
    """msle's, pinball's, the Tweedie deviances' (every power) and the D2 null terms' per-row values (fdlibm's log,
    log1p and pow on both sides: ``StrictMath`` in Java), rows outside the domains, terms that overflow
    to inf or give NaN (inf - inf), weights 0, subnormal, huge: core's bytes, any partitioning."""
    check_kind(cases)


def test_regression_terms_of_many_rows_equal_core_bit_for_bit():
    """3,000 random rows (positive and negative targets, weights) in 3 partitions: the per-row logs of every
    ported term agree with core's (a platform libm's log or log1p differs in about 1 value in 2,000)."""
    from mergeable_metrics.metrics.regression_terms import RegressionTermsLayout, RegressionTermsState

    rng = np.random.default_rng(13)
    n = 3000
    y = np.where(rng.random(n) < 0.9, rng.gamma(2.0, 3.0, n), -rng.random(n) * 3)
    p = np.abs(y + rng.normal(size=n)) + 1e-3
    w = rng.random(n) * 4
    rows = [(int(i % 3), (float(y[i]), float(p[i]), float(w[i]))) for i in range(n)]
    zero = RegressionTermsState.zero(RegressionTermsLayout(("sle", "pinball:0.9", "tweedie:0.0", "tweedie:1.0", "tweedie:2.0", "null:1.0", "null:2.0")))
    check_kind([(zero, weighted, (3, [1, 2, 0], rows)) for weighted in (True, False)])


@pytest.mark.parametrize("powers", ["(1,2)", ">2", "<0"])
def test_tweedie_terms_of_random_powers_equal_core_bit_for_bit(powers):
    """Tweedie deviances and D2 null terms of random powers in (1, 2), above 2 and below 0 (their per-row powers
    are fdlibm's on both sides: ``StrictMath.pow`` in Java, core's ``portable_pow``; ``np.power`` differs from
    both in the last bit of about 7% of the values), 4,000 rows with targets and predictions over many binades
    (zero and negative targets, overflowing and underflowing terms), weighted and not, in 3 partitions."""
    from mergeable_metrics.metrics.regression_terms import RegressionTermsLayout, RegressionTermsState

    rng = np.random.default_rng({"(1,2)": 12, ">2": 2, "<0": 0}[powers])
    lo, hi = {"(1,2)": (1.0, 2.0), ">2": (2.0, 8.0), "<0": (-6.0, 0.0)}[powers]
    qs = [float(q) for q in rng.uniform(lo, hi, 4)]
    n = 4000
    y = np.where(rng.random(n) < 0.85, rng.gamma(2.0, 3.0, n) * 10.0 ** rng.integers(-3, 4, n), 0.0)
    y = np.where(rng.random(n) < 0.05, -rng.random(n), y)  # outside the domain above power 0
    p = np.abs(y + rng.normal(size=n)) * 10.0 ** rng.integers(-2, 3, n) + 1e-9
    y[:4], p[:4] = [1e300, 1e-300, 5e-324, 3.0], [1e-300, 1e300, 2.0, 5e-324]  # terms of +-inf, 0, subnormal
    w = rng.random(n) * 4
    rows = [(int(i % 3), (float(y[i]), float(p[i]), float(w[i]))) for i in range(n)]
    terms = tuple(t for q in qs for t in (f"tweedie:{q!r}", f"null:{q!r}"))
    zero = RegressionTermsState.zero(RegressionTermsLayout(terms))
    check_kind([(zero, weighted, (3, [2, 0, 1], rows)) for weighted in (True, False)])


# -- the count kinds with weights: per-cell exact weight sums, as core's weighted fold ------------
COUNT_WEIGHT = st.one_of(
    st.sampled_from([0.0, -0.0, 1.0, 2.0, 0.5, 0.1, 1 / 3, 5e-324, 1e-300, 1e300, 1.7976931348623157e308, 3.0]),
    st.floats(0, 1e6),
    st.floats(0, 1e300),
    st.floats(0, 1, exclude_min=True),
)


@st.composite
def count_case(draw):
    from mergeable_metrics.engine import BinaryConfusionState, ConfusionMatrixState, ExampleCountState
    from mergeable_metrics.states.base import BinaryConfusionLayout, ConfusionMatrixLayout, ExampleCountLayout

    kind = draw(st.sampled_from(["binary_confusion", "confusion_matrix", "example_count"]))
    if kind == "binary_confusion":
        thr = draw(st.lists(st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0, 0.3]), min_size=1, max_size=4, unique=True))
        zero = BinaryConfusionState.zero(BinaryConfusionLayout(tuple(sorted(thr)), draw(st.sampled_from([">=", ">"]))))
        row = st.tuples(st.integers(0, 1), st.sampled_from([0.0, -0.0, 0.25, 0.5, 0.75, 1.0, 1e-300]) | st.floats(-2, 2), COUNT_WEIGHT)
    elif kind == "confusion_matrix":
        k = draw(st.integers(2, 4))
        zero = ConfusionMatrixState.zero(ConfusionMatrixLayout(k))
        row = st.tuples(st.integers(0, k - 1), st.integers(0, k - 1).map(float), COUNT_WEIGHT)
    else:
        zero = ExampleCountState.zero(ExampleCountLayout())
        row = st.tuples(st.integers(0, 1), st.just(0.0), COUNT_WEIGHT)
    return zero, draw(st.booleans()), draw(partitioned(st.lists(row, max_size=12)))


def _count_batch(zero, rows, weighted):
    from mergeable_metrics.inputs.validation import Batch

    y = np.array([r[0] for r in rows], dtype=np.int64)
    s = np.array([r[1] for r in rows], dtype=np.float64)
    w = np.array([r[2] for r in rows], dtype=np.float64) if weighted else None
    if zero.kind == "confusion_matrix":
        return Batch(y_true=y, y_pred=s.astype(np.int64), sample_weight=w)
    return Batch(y_true=y, y_score=s, sample_weight=w)


@settings(max_examples=5)
@given(st.lists(count_case(), min_size=60, max_size=60))
def test_count_kinds_with_weights_bytes_equal_the_python_fold(cases):
    """Weights 0, -0.0, subnormal, huge (sums past float64's range), fractional: the JVM's count kinds
    (unit weights counted in int64, others summed exactly per cell) write core's bytes, any partitioning."""
    from mergeable_metrics.spark import jvm

    runs = []
    for zero, weighted, (nparts, order, rows) in cases:
        kind, config = jvm._count_kind(zero)
        runs.append((kind, config, nparts, order, _jvm_rows(rows, weighted)))
    got = jvm_fold.run(runs)
    for (zero, weighted, (nparts, order, rows)), line in zip(cases, got):
        cls = type(zero)
        parts = [cls.from_batch(zero.layout, _count_batch(zero, [r for p, r in rows if p == i], weighted)) for i in range(nparts)]
        acc = zero
        for i in order:
            acc = acc.merge(parts[i])
        assert acc == cls.from_batch(zero.layout, _count_batch(zero, [r for _, r in rows], weighted))
        assert line == acc.encode().hex(), (zero.layout, weighted, rows)


def test_count_kinds_of_an_inexact_weight_sum():
    """1 + 2**-1074 (by hand): not a float64, so the bytes carry the limbs; the decoded state keeps the
    exact sum (its float64 value rounds to 1.0)."""
    from mergeable_metrics.engine import ExampleCountState
    from mergeable_metrics.spark import jvm
    from mergeable_metrics.states.base import ExampleCountLayout

    zero = ExampleCountState.zero(ExampleCountLayout())
    kind, config = jvm._count_kind(zero)
    (line,) = jvm_fold.run([(kind, config, 2, [1, 0], [(0, (0.0, 0.0, 1.0)), (1, (1.0, 0.0, 5e-324))])])
    state = State.decode(bytes.fromhex(line))
    assert int(state["count"]) == 2 and float(state["weight"]) == 1.0 and int(state["weight.exp"]) != 0
    assert line == ExampleCountState.from_batch(zero.layout, _count_batch(zero, [(0, 0.0, 1.0), (1, 0.0, 5e-324)], True)).encode().hex()
