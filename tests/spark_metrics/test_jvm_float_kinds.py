"""The JVM ports of the float state kinds (spark_metrics/java, compiled with plain javac, no Spark)
fold the same state bytes as the Python core: property tests on random rows in random partitions."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mergeable_metrics._util.exact import exact_sum_products
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
