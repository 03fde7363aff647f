"""Adversarial checks of issue 25's round-5 compiled paths (helper brk25): the mean's one-pass
sums (``exact_kernels.mean_sums``, ``Batch.sums``), the compiled confusion cells, the fused log
loss + Brier kernel (branch-free fdlibm log), the regression running matrix, ``Plan.fold``'s
shared weight sum (example count last) and ``MetricCollection.update``'s cached role check.

Every check compares the compiled path with the numpy path (numba off: the reference
arithmetic) byte for byte on ``encode()``, and values with exact references (``Fraction``,
``math.fsum``), on inputs chosen to break them: +-0.0, subnormals, values near the float
maximum, cancelling sums, sorted inputs, blocks that span more binades than the two L1-block
grids hold, batch sizes around the kernels' block sizes (1,024, 8,192, 65,536), invalid values in
a later block (the message must name the right row), zero weights, different batchings of the
same rows, non-float64 / strided / big-endian / read-only columns and concurrent updates."""

from __future__ import annotations

import dataclasses
import math
import threading
import warnings
from fractions import Fraction

import numpy as np
import pytest

from mergeable_metrics import MetricCollection
from mergeable_metrics._util import exact as E
from mergeable_metrics._util import exact_kernels as K
from mergeable_metrics._util.portable_log import numpy_log
from mergeable_metrics.metrics.measure import MeanMeasureLayout, MeanMeasureState
from tests._helpers.kernels import on_numpy_path

pytestmark = [
    pytest.mark.skipif(not K.AVAILABLE, reason="numba kernels disabled or not installed"),
    pytest.mark.filterwarnings("ignore::UserWarning"),
]

EDGES = np.array([1.7976931348623157e308, 1e308, 1e300, 1e-300, 1e16, 1.0, 0.1, 2.0**53, 5e-324, 2.2250738585072014e-308, 1e-17, 3.0, 0.0, -0.0])
SIZES = [1, 2, 1023, 1024, 1025, 8191, 8192, 8193]


def _outcome(make, updates):
    """``("ok", encode(), compute())`` after the updates, or ``("error", type, message, encode())``
    at the first that raises (the state must be the one before it)."""
    mc = make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for kw in updates:
            try:
                mc.update(**kw)
            except (ValueError, TypeError) as e:
                return ("error", type(e).__name__, str(e), mc.encode())
        return ("ok", mc.encode(), repr(mc.compute()))


def _both(make, updates):
    got = _outcome(make, updates)
    want = on_numpy_path(lambda: _outcome(make, updates))
    assert got == want
    return got


def _adversarial(rng, n, kind):
    if kind == "edges":
        return rng.choice(np.concatenate([EDGES, -EDGES]), n)
    if kind == "cancel":  # each value and its negation, shuffled: the exact sum is 0
        x = rng.normal(size=(n + 1) // 2) * 10.0 ** rng.integers(-200, 200, (n + 1) // 2)
        return rng.permutation(np.concatenate([x, -x]))[:n]
    if kind == "sorted":
        return np.sort(rng.normal(size=n) * 10.0 ** rng.integers(-30, 30, n))
    if kind == "subnormal":
        return rng.choice([5e-324, -5e-324, 1e-310, -1e-310, 2.2250738585072014e-308], n)
    return rng.normal(size=n)


def _weights(rng, n, kind):
    if kind == "none":
        return None
    if kind == "zero":
        return np.zeros(n)
    if kind == "wide":  # more binades than four 45-bit grids hold: the cell kernels' fallback
        return rng.choice([0.0, 5e-324, 1e-300, 1e300, 1.0, 1e-310], n)
    if kind == "signed_zero":
        return rng.choice([0.0, -0.0, 1.0], n)
    return rng.random(n) * 10.0 ** rng.integers(-10, 10, n)


def _frac_sum(xs, ws=None):
    if ws is None:
        return sum(map(Fraction, xs), Fraction(0))
    return sum((Fraction(a) * Fraction(b) for a, b in zip(xs, ws)), Fraction(0))


# -- the mean of a measure: one-pass sums across block boundaries -----------------------------
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("kind", ["edges", "cancel", "sorted", "subnormal"])
def test_mean_update_is_the_numpy_path_and_the_exact_mean(n, kind):
    rng = np.random.default_rng(n * 7 + len(kind))
    v = _adversarial(rng, n, kind)
    for wk in ["none", "zero", "wide", "signed_zero", "random"]:
        w = _weights(rng, n, wk)
        h = n // 2
        updates = [dict(measure=v, sample_weight=w), dict(measure=v[:h], sample_weight=None if w is None else w[:h])]
        for make in (lambda: MetricCollection(measures=["loss"]), lambda: MetricCollection("mean_measure", "example_count", task="regression")):
            got = _both(make, updates)
            assert got[0] == "ok"
        # the state's sums are the exact sums of the rows (both updates)
        mc = MetricCollection(measures=["loss"])
        for kw in updates:
            mc.update(**kw)
        (state,) = [s for s in mc.states if s.kind == "mean_measure"]
        rows = np.concatenate([v, v[:h]])
        ws = None if w is None else np.concatenate([w, w[:h]])
        total = state.exact["total"]
        want = _frac_sum(rows.tolist(), None if ws is None else ws.tolist())
        assert (total.fractions() if total.shape else [total.fraction()]) == [want]
        if ws is None:
            assert float(np.ravel(total.values)[0]) == E.fraction_to_float(want)
            if abs(want) < 1e300:
                assert float(np.ravel(total.values)[0]) == math.fsum(rows.tolist())


@pytest.mark.parametrize("weighted", [False, True])
def test_mean_bytes_do_not_depend_on_the_batching(weighted):
    rng = np.random.default_rng(3)
    n = 8193 + 1025
    v = _adversarial(rng, n, "edges")
    w = _weights(rng, n, "random") if weighted else None
    outs = set()
    for cuts in ([0, n], [0, 1, 2, 1024, 1025, 8192, 8193, n], [0, 8191, n], list(range(0, n, 1023)) + [n]):
        updates = [dict(measure=v[a:b], sample_weight=None if w is None else w[a:b]) for a, b in zip(cuts[:-1], cuts[1:])]
        outs.add(_both(lambda: MetricCollection("example_count", measures=["loss"]), updates)[1])
    assert len(outs) == 1


@pytest.mark.parametrize("pos", [0, 1023, 1024, 1025, 8191, 8192, 8193, 9999])
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, -1.0, -5e-324])
def test_an_invalid_value_in_a_later_block_names_its_row(pos, bad):
    """A non-finite value (or a negative weight) anywhere: the reference path's message (column,
    value, row counted from the collection's first row) and nothing folded."""
    rng = np.random.default_rng(pos)
    v = rng.normal(size=10_000)
    w = rng.random(10_000)
    head = dict(measure=v[:5], sample_weight=w[:5])
    if bad >= 0 or math.isnan(bad):
        vv = v.copy()
        vv[pos] = bad
        got = _both(lambda: MetricCollection(measures=["loss"]), [head, dict(measure=vv, sample_weight=w)])
        assert got[0] == "error" and f"row {pos + 5}" in got[2]
        got = _both(lambda: MetricCollection(measures=["loss"]), [dict(measure=v[:5]), dict(measure=vv)])
        assert got[0] == "error" and f"row {pos + 5}" in got[2]
    ww = w.copy()
    ww[pos] = bad
    got = _both(lambda: MetricCollection(measures=["loss"]), [head, dict(measure=v, sample_weight=ww)])
    assert got[0] == "error" and f"row {pos + 5}" in got[2]
    assert got[3] == _outcome(lambda: MetricCollection(measures=["loss"]), [head])[1]  # nothing folded


def test_mean_columns_of_any_layout_give_the_float64_bytes():
    """float32, ints, big-endian, strided, reversed, read-only, (N, 1) and Python lists: the same
    state as the C float64 copy of the same values (the compiled pass only sees C float64)."""
    rng = np.random.default_rng(4)
    n = 9000
    base = np.round(rng.normal(size=n) * 1000.0)  # exact in float32 and int64
    w = rng.integers(0, 5, n).astype(np.float64)
    ro = base.copy()
    ro.flags.writeable = False
    forms = [base.astype(np.float32), base.astype(np.int64), base.astype(">f8"), np.repeat(base, 2)[::2], base[::-1][::-1], ro, base.tolist()]
    wforms = [None, w, w.astype(np.float32), w.astype(">f8"), np.repeat(w, 2)[::2], w.astype(np.int64)]
    for wf in wforms:
        want = _both(lambda: MetricCollection(measures=["loss"]), [dict(measure=base.copy(), sample_weight=None if wf is None else w.copy())])
        for f in forms:
            assert _both(lambda: MetricCollection(measures=["loss"]), [dict(measure=f, sample_weight=wf)]) == want


def test_batch_sums_are_not_reused_for_other_arrays():
    """``Batch.sums`` travels with the batch: a batch whose values or weights were replaced
    (``dataclasses.replace``) or taken (``take``) must fold its own arrays."""
    from mergeable_metrics.inputs.formats import make_batch

    mc = MetricCollection(measures=["loss"])
    v = np.array([1.0, 2.0, 3.0, 4.0])
    w = np.array([1.0, 1.0, 2.0, 0.5])
    batch, _ = make_batch(num_classes=2, y_true=None, sample_weight=w, task=mc.plan.task, values=[v], measure_name=["loss"], needs=mc.plan.needs)
    assert batch.sums is not None  # the compiled validation ran
    layout = MeanMeasureLayout(("loss",))
    zero = MeanMeasureState.zero(layout)
    other = np.array([[10.0], [20.0], [30.0], [40.0]])
    for b, vals, ws in [
        (dataclasses.replace(batch, values=other), other[:, 0], w),
        (dataclasses.replace(batch, sample_weight=w * 3), v, w * 3),
        (dataclasses.replace(batch, sample_weight=None), v, np.ones(4)),
        (batch.take(np.array([0, 2])), v[[0, 2]], w[[0, 2]]),
    ]:
        st = zero.fold(b)
        assert st.exact["total"].fractions() == [_frac_sum(vals.tolist(), ws.tolist())]
        assert st.exact["weight"].fractions() == [_frac_sum(ws.tolist())]
        assert st.encode() == on_numpy_path(lambda: zero.fold(b)).encode()


# -- the shared weight sum of a plan's fold ----------------------------------------------------
@pytest.mark.parametrize("case", ["regression+measure", "regression+mean", "named", "binary", "multiclass"])
@pytest.mark.parametrize("n", [1, 1025, 8193])
def test_every_weight_field_is_the_exact_weight_sum(case, n):
    rng = np.random.default_rng(n)
    y = rng.normal(size=n) * 10.0 ** rng.integers(-30, 30, n)
    p = y + rng.normal(size=n)
    v = rng.normal(size=n)
    for w in (rng.random(n) * 10.0 ** rng.integers(-200, 200, n), np.zeros(n), rng.choice([0.0, 5e-324, 1e300], n)):
        make, kw = {
            "regression+measure": (
                lambda: MetricCollection("r2", "mse", "example_count", measures=["loss"], task="regression"),
                dict(y_true=y, y_pred=p, measure=v),
            ),
            "regression+mean": (lambda: MetricCollection("r2", "example_count", "mean_measure", task="regression"), dict(y_true=y, y_pred=p, measure=v)),
            "named": (lambda: MetricCollection("example_count", measures=["a", "b"]), dict(measure={"a": v, "b": y})),
            "binary": (
                lambda: MetricCollection("log_loss", "precision", "f1@macro", "example_count", task="binary"),
                dict(y_true=(v > 0).astype(int), y_score=rng.random(n)),
            ),
            "multiclass": (
                lambda: MetricCollection("f1@macro", "log_loss", "example_count", task="multiclass", num_classes=3),
                dict(y_true=rng.integers(0, 3, n), y_score=rng.dirichlet([1, 1, 1], n)),
            ),
        }[case]
        updates = [dict(kw, sample_weight=w), dict(kw, sample_weight=w), dict(kw)]
        assert _both(make, updates)[0] == "ok"
        mc = make()
        for u in updates:
            mc.update(**u)
        want = 2 * _frac_sum(w.tolist()) + n
        seen = 0
        for s in mc.states:
            if "weight" in getattr(s, "exact", {}):
                weight = s.exact["weight"]
                assert all(f == want for f in (weight.fractions() if weight.shape else [weight.fraction()])), s.kind
                seen += 1
        assert seen >= 2


# -- the compiled confusion cells -------------------------------------------------------------
@pytest.mark.parametrize("n", [1, 7, 1025, 65537])
def test_binary_cells_at_and_around_the_threshold(n):
    """Scores equal to the threshold and one ulp either side, both rules, weighted on the kernel's
    grids and on the wide-range fallback: the numpy path's bytes, and the cells against
    ``Fraction`` sums of the rows sklearn's rule puts in each cell."""
    rng = np.random.default_rng(n)
    y = rng.integers(0, 2, n)
    s = rng.choice([0.5, np.nextafter(0.5, 0), np.nextafter(0.5, 1), 0.0, 1.0, 0.25], n)
    for rule in (">=", ">"):
        for thr in (0.5, 0.0, 1.0):
            for wk in ("none", "random", "zero", "wide"):
                w = _weights(rng, n, wk)
                make = lambda: MetricCollection("precision", "recall", "f1", "log_loss", "example_count", task="binary", threshold=thr, threshold_rule=rule)  # noqa: E731
                assert _both(make, [dict(y_true=y, y_score=s, sample_weight=w)])[0] == "ok"
                if w is None:
                    continue
                mc = make()
                mc.update(y, y_score=s, sample_weight=w)
                (st,) = [x for x in mc.states if x.kind == "binary_confusion"]
                pred = s > thr if rule == ">" else s >= thr
                for name, mask in (("tp", (y == 1) & pred), ("fp", (y == 0) & pred), ("fn", (y == 1) & ~pred), ("tn", (y == 0) & ~pred)):
                    assert st.exact[name].fractions() == [_frac_sum(w[mask].tolist())], name


@pytest.mark.parametrize("n", [1, 513, 65537])
def test_confusion_matrix_cells_and_their_fallbacks(n):
    rng = np.random.default_rng(n + 1)
    k = 5
    a = rng.integers(0, k, n)
    b = rng.integers(0, k, n)
    for wk in ("none", "random", "zero", "wide", "signed_zero"):
        w = _weights(rng, n, wk)
        make = lambda: MetricCollection("f1@macro", "confusion_matrix", "example_count", task="multiclass", num_classes=k)  # noqa: E731
        assert _both(make, [dict(y_true=a, y_pred=b, sample_weight=w), dict(y_true=b, y_pred=a, sample_weight=w)])[0] == "ok"
        if w is not None:
            mc = make()
            mc.update(a, y_pred=b, sample_weight=w)
            (st,) = [x for x in mc.states if x.kind == "confusion_matrix"]
            want = [_frac_sum(w[(a == i) & (b == j)].tolist()) for i in range(k) for j in range(k)]
            assert list(np.ravel(st.exact["matrix"].fractions())) == want
    for bad in (k, -1, 255, 2.5):  # an out-of-range label in a later step: the reference message
        aa = a.astype(np.float64)
        aa[n - 1] = bad
        for w in (None, rng.random(n)):
            got = _both(lambda: MetricCollection("f1@macro", task="multiclass", num_classes=k), [dict(y_true=aa, y_pred=b, sample_weight=w)])
            assert got[0] == "error" and f"row {n - 1}" in got[2]


# -- log loss + Brier: the branch-free fdlibm log ---------------------------------------------
def test_the_vectorised_log_is_the_scalar_fdlibm_log_on_random_bits():
    rng = np.random.default_rng(25)
    bits = rng.integers(1, 0x7FF0000000000000, 300_000, dtype=np.int64)
    near = [np.float64(c).view(np.int64) + np.arange(-2000, 2000) for c in (1.0, 0.5, 2.0, math.sqrt(0.5), math.sqrt(2.0), 2.0**-1022, 1 - 2**-20, 1 + 2**-20)]
    x = np.concatenate([bits] + near).view(np.float64)
    x = x[(x > 0) & np.isfinite(x)]
    out = np.empty_like(x)
    assert K.log_rows(x, out)
    assert np.array_equal(out.view(np.int64), numpy_log(x).view(np.int64))


SPECIAL_P = np.array(
    [
        0.0,
        -0.0,
        1.0,
        0.5,
        np.nextafter(0.5, 0),
        np.nextafter(0.5, 1),
        np.nextafter(1.0, 0),
        2.0**-52,
        2.0**-53,
        1 - 2.0**-52,
        5e-324,
        1e-310,
        1e-300,
        2.2250738585072014e-308,
        1e-7,
        1 - 1e-7,
    ]
)


@pytest.mark.parametrize("n", [1, 1025, 65537])
@pytest.mark.parametrize("metric", ["log_loss", "log_loss@eps=1e-300", "log_loss@eps=0.4999999999999999", "log_loss@eps=5e-324"])
def test_log_loss_and_brier_on_special_probabilities(n, metric):
    rng = np.random.default_rng(n)
    y = rng.integers(0, 2, n)
    p = rng.choice(SPECIAL_P, n)
    for wk in ("none", "random", "zero", "wide"):
        w = _weights(rng, n, wk)
        make = lambda: MetricCollection(metric, "brier_score", "example_count", task="binary")  # noqa: E731
        assert (
            _both(make, [dict(y_true=y, y_score=p, sample_weight=w), dict(y_true=y[1:], y_score=p[1:], sample_weight=None if w is None else w[1:])])[0] == "ok"
        )


@pytest.mark.parametrize("pos", [0, 1024, 65536])
def test_log_loss_invalid_values_in_a_later_block(pos):
    n = 65537
    rng = np.random.default_rng(pos)
    y = rng.integers(0, 2, n)
    p = rng.random(n)
    w = rng.random(n)
    for col, bad in (("y_score", math.nan), ("y_score", 1.5), ("y_score", -1e-300), ("y_true", 2.0), ("sample_weight", -1.0), ("sample_weight", math.inf)):
        kw = dict(y_true=y.astype(np.float64), y_score=p.copy(), sample_weight=w.copy())
        kw[col][pos] = bad
        got = _both(lambda: MetricCollection("log_loss", "brier_score", task="binary"), [dict(y_true=y[:3], y_score=p[:3]), kw])
        assert got[0] == "error" and f"row {pos + 3}" in got[2], got[2]


# -- the regression running matrix ------------------------------------------------------------
@pytest.mark.parametrize("weighted", [False, True])
def test_regression_running_matrix_in_any_batching(weighted):
    """All-zero batches (a raw matrix without limbs), 1-row batches, values near the float
    maximum and subnormals, folded in several batchings: one set of bytes, the numpy path's."""
    rng = np.random.default_rng(8)
    n = 1025 + 64
    y = rng.choice([1e300, -1e300, 1e-300, 5e-324, 0.0, -0.0, 1.0, 3.0, 1e16], n)
    p = y * (1 + 1e-9 * rng.normal(size=n))
    y[:50] = p[:50] = 0.0  # an all-zero first batch in some batchings
    w = _weights(rng, n, "random") if weighted else None
    outs = set()
    for cuts in ([0, n], [0, 50, n], [0, 1, 2, 3, 50, 51, 1024, n], list(range(0, n, 97)) + [n]):
        updates = [dict(y_true=y[a:b], y_pred=p[a:b], sample_weight=None if w is None else w[a:b]) for a, b in zip(cuts[:-1], cuts[1:])]
        got = _both(lambda: MetricCollection("r2", "mse", "mae", "mape", "example_count", task="regression"), updates)
        assert got[0] == "ok"
        outs.add(got[1])
    assert len(outs) == 1


# -- update's cached role check and concurrent updates ------------------------------------------
def test_the_cached_role_check_answers_each_combination_of_arguments():
    """A combination that passed once must not let another through, nor a refused one stick."""
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 20)
    s = rng.random(20)
    v = rng.normal(size=20)
    mc = MetricCollection("precision", "log_loss", "mean_measure", task="binary")
    with pytest.raises(ValueError):
        mc.update(y, y_score=s)  # no measure
    mc.update(y, y_score=s, measure=v)
    with pytest.raises(ValueError):
        mc.update(y, y_score=s)
    with pytest.raises(ValueError):
        mc.update(y, measure=v)  # no score
    with pytest.raises(ValueError):
        mc.update(measure=v)
    mc.update(y, y_score=s, measure=v)
    want = MetricCollection("precision", "log_loss", "mean_measure", task="binary")
    want.update(np.concatenate([y, y]), y_score=np.concatenate([s, s]), measure=np.concatenate([v, v]))
    assert mc.encode() == want.encode()
    m = MetricCollection(measures=["loss"])
    m.update(measure=v)
    with pytest.raises(ValueError):
        m.update()
    m.update(measure=v, sample_weight=np.ones(20))
    m.update(measure={"loss": v})
    with pytest.raises(ValueError):
        m.update(measure={"other": v})


@pytest.mark.parametrize("kind", ["mean", "regression", "binary", "multiclass"])
def test_concurrent_updates_give_the_sequential_bytes(kind):
    rng = np.random.default_rng(2)
    n = 4000
    y = rng.normal(size=n) * 10.0 ** rng.integers(-20, 20, n)
    p = y + rng.normal(size=n)
    w = rng.random(n) * 10.0 ** rng.integers(-20, 20, n)
    make, kw = {
        "mean": (lambda: MetricCollection("example_count", measures=["loss"]), lambda a, b: dict(measure=y[a:b], sample_weight=w[a:b])),
        "regression": (
            lambda: MetricCollection("r2", "mae", "example_count", task="regression"),
            lambda a, b: dict(y_true=y[a:b], y_pred=p[a:b], sample_weight=w[a:b]),
        ),
        "binary": (
            lambda: MetricCollection("log_loss", "f1", task="binary"),
            lambda a, b: dict(y_true=(y[a:b] > 0).astype(int), y_score=np.abs(np.tanh(p[a:b])), sample_weight=w[a:b]),
        ),
        "multiclass": (
            lambda: MetricCollection("f1@macro", task="multiclass", num_classes=4),
            lambda a, b: dict(y_true=(np.abs(y[a:b]) * 7 % 4).astype(int), y_pred=(np.abs(p[a:b]) * 3 % 4).astype(int), sample_weight=w[a:b]),
        ),
    }[kind]
    parts = [kw(a, min(n, a + 97)) for a in range(0, n, 97)]
    seq = make()
    for u in parts:
        seq.update(**u)
    mc = make()
    threads = [threading.Thread(target=lambda ps=parts[i::4]: [mc.update(**u) for u in ps]) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert mc.encode() == seq.encode()


# -- first use from several threads ----------------------------------------------------------
_FIRST_USE = """
import threading, time
from mergeable_metrics._util import exact_kernels as K

inside = threading.Event()
real = K._cache_dir


def slow_cache_dir():  # the first thread is inside ready() (importing numba, wrapping the kernels)
    inside.set()
    time.sleep(0.5)
    real()


K._cache_dir = slow_cache_dir
seen = []


def second():
    inside.wait()
    seen.append((K.ready(), type(K.mean_sums).__name__, type(K.f2i).__name__))


t = threading.Thread(target=second)
t.start()
K.ready()
t.join()
print(*seen[0])
"""


def test_ready_in_a_second_thread_waits_for_the_compiled_kernels():
    """A thread whose first exact sum comes while another thread is inside ``ready()`` (importing
    numba, wrapping the kernels: about a second) must get the compiled kernels, not the plain
    Python functions (before: ``ready()`` said True as soon as the first thread had started, so
    the second ran the kernels in the interpreter: orders of magnitude slower, with numpy
    integer-overflow warnings, errors under ``-W error``)."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "MERGEABLE_METRICS_DISABLE_NUMBA"}
    out = subprocess.run([sys.executable, "-c", _FIRST_USE], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    available, kernel, intrinsic = out.stdout.split()
    assert available == "True"
    assert kernel != "function" and intrinsic != "function", out.stdout


@pytest.mark.parametrize("weighted", [False, True])
def test_a_batch_of_chunk_rows_near_the_float_maximum(weighted):
    """The largest batch the compiled mean pass takes (``CHUNK`` rows: 16,384 L1 blocks, 2,048
    weighted blocks), every value near the float maximum (each block summed on its own range)
    and the sum past it: the numpy path's bytes."""
    rng = np.random.default_rng(16)
    n = K.CHUNK
    v = np.ldexp(rng.random(n) + 1, rng.integers(1000, 1023, n))
    v[::3] *= -1
    w = np.ldexp(rng.random(n) + 1, rng.integers(900, 1023, n)) if weighted else None
    got = _both(lambda: MetricCollection(measures=["loss"]), [dict(measure=v, sample_weight=w)])
    assert got[0] == "ok"


@pytest.mark.parametrize("kind", ["regression", "binary", "mean"])
@pytest.mark.parametrize("weighted", [False, True])
def test_decoded_and_merged_states_fold_on_to_the_same_bytes(kind, weighted):
    """A collection decoded from bytes (compact sums, no running raw matrix), updated, merged with
    another and updated with an empty batch: the bytes of one collection updated with every row."""
    rng = np.random.default_rng(3)
    n = 3000
    y = rng.normal(size=n) * 10.0 ** rng.integers(-50, 50, n)
    p = y + rng.normal(size=n)
    w = rng.random(n) * 10.0 ** rng.integers(-50, 50, n) if weighted else None
    make, part = {
        "regression": (
            lambda: MetricCollection("r2", "mse", "mae", "example_count", measures=["loss"], task="regression"),
            lambda a, b: dict(y_true=y[a:b], y_pred=p[a:b], measure=p[a:b]),
        ),
        "binary": (
            lambda: MetricCollection("log_loss", "precision", "f1@macro", task="binary"),
            lambda a, b: dict(y_true=(y[a:b] > 0).astype(int), y_score=np.abs(np.tanh(p[a:b]))),
        ),
        "mean": (lambda: MetricCollection("example_count", measures=["loss"]), lambda a, b: dict(measure=p[a:b])),
    }[kind]

    def up(a, b):
        return dict(part(a, b), sample_weight=None if w is None else w[a:b])

    straight = make()
    for a, b in [(0, 1000), (1000, 2000), (2000, 3000)]:
        straight.update(**up(a, b))
    first = make()
    first.update(**up(0, 1000))
    z = make().decode(first.encode())
    z.update(**up(1000, 2000))
    last = make()
    last.update(**up(2000, 3000))
    z.merge(last)
    z.update(**up(0, 0))
    assert z.encode() == straight.encode()

    def numpy_straight():
        mc = make()
        for a, b in [(0, 1000), (1000, 2000), (2000, 3000)]:
            mc.update(**up(a, b))
        return mc.encode()

    assert on_numpy_path(numpy_straight) == z.encode()
