"""``MetricCollection.update``'s fast path for the mean of one measure (issue 25, round 8): a plain
float64 measure column (and weights) is checked and added to the running exact sums by one
compiled call (``exact_kernels.mean_fold``) and the two new states are built without a batch; the
unweighted exact sum reads the next 1,024-row block while it sums this one (``sum_blocks``).

Checked against ``Fraction`` and ``math.fsum`` (the exact sums), the numpy path (no numba: the
general ``update``) bit for bit, one update of the concatenated rows, and the general path's
messages, on adversarial values (subnormals, +-1.8e308, cancellation, -0.0), batches across block
boundaries and random batchings."""

from __future__ import annotations

import math
import pickle
import re
import threading
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mergeable_metrics import MetricCollection
from mergeable_metrics._util import exact as E
from mergeable_metrics._util import exact_kernels as K
import mergeable_metrics.collection.plan as plan_module
from tests._helpers.kernels import on_numpy_path

needs_numba = pytest.mark.skipif(not K.AVAILABLE, reason="numba kernels disabled or not installed")

ADVERSARIAL = [1.7976931348623157e308, 1e308, 1e300, 1e-300, 1e16, 1.0, 0.1, 2.0**53, 2.0**53 + 2, 5e-324, 2.2250738585072014e-308, 1e-17, 3.0, 0.0, -0.0]
VALUES = st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.sampled_from(ADVERSARIAL + [-v for v in ADVERSARIAL]))
WEIGHTS = st.one_of(st.floats(min_value=0.0, max_value=1e30, allow_nan=False), st.sampled_from([0.0, -0.0, 5e-324, 1e-300, 0.1, 3.0, 1e100, 2.0**60]))
BLOCK = 2048  # exact_kernels.L1_BLOCK: the unweighted pass's block


def _collection(named: bool) -> MetricCollection:
    return MetricCollection(measures=["loss"]) if named else MetricCollection("mean_measure")


def _fold(named, parts):
    mc = _collection(named)
    for v, w in parts:
        mc.update(measure=v, sample_weight=w)
    return mc


def _exact(parts):
    num = sum(
        (Fraction(x) * (Fraction(y) if w is not None else 1) for v, w in parts for x, y in zip(v.tolist(), (v if w is None else w).tolist())), Fraction(0)
    )
    den = sum((sum(map(Fraction, w.tolist()), Fraction(0)) if w is not None else Fraction(len(v)) for v, w in parts), Fraction(0))
    return num, den


def _fsum(xs, exact):
    try:
        return math.fsum(xs)
    except OverflowError:  # fsum's partials overflow: the exact sum rounded
        return E.fraction_to_float(exact)


def _column(data, n):
    """(n,) float64 values of one of several adversarial kinds (Hypothesis draws the kind, the
    seed and a few planted values)."""
    kind = data.draw(st.sampled_from(["wide", "gamma", "subnormal", "cancel", "huge", "listed"]))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    if kind == "listed":
        return np.array(data.draw(st.lists(VALUES, min_size=n, max_size=n)), dtype=np.float64)
    if kind == "wide":
        v = rng.normal(size=n) * 10.0 ** rng.integers(-320, 308, n)
    elif kind == "gamma":
        v = rng.gamma(2.0, 1.0, n)
    elif kind == "subnormal":
        v = rng.integers(-(2**40), 2**40, n) * 5e-324
    elif kind == "cancel":
        v = rng.normal(size=n) * 1e200
        v = np.concatenate([v, -v[::-1]])[:n]
    else:
        v = rng.choice([1.7976931348623157e308, -1.7976931348623157e308, 1e308, -1e308, 1.0, -0.0], n)
    for _ in range(data.draw(st.integers(0, 3))):  # planted adversarial values
        v[data.draw(st.integers(0, n - 1))] = data.draw(VALUES)
    return v


@needs_numba
@pytest.mark.filterwarnings("ignore::mergeable_metrics.UndefinedMetricWarning")
@given(data=st.data(), named=st.booleans())
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_fast_update_is_the_exact_mean_in_any_batching(data, named):
    """Random batchings (sizes at and around the 1,024-row block, several blocks, one row),
    weighted and unweighted updates mixed: the state's sums are the exact sums (``Fraction``,
    ``math.fsum``), the bytes are the numpy path's and those of one update of every row."""
    parts = []
    for _ in range(data.draw(st.integers(1, 4))):
        n = data.draw(st.one_of(st.integers(1, 40), st.sampled_from([BLOCK - 1, BLOCK, BLOCK + 1, 2 * BLOCK + 1, 3 * BLOCK - 7])))
        v = _column(data, n)
        w = None
        if data.draw(st.booleans()):
            w = np.array(data.draw(st.lists(WEIGHTS, min_size=1, max_size=8)) * n, dtype=np.float64)[:n]
        parts.append((v, w))
    mc = _fold(named, parts)
    key = "loss" if named else "mean_measure"
    st_mean = next(s for s in mc.states if s.kind == "mean_measure")
    num, den = _exact(parts)
    total = st_mean.exact["total"]
    assert total.fraction() == num
    assert st_mean.exact["weight"].fraction() == den
    if all(w is None for _, w in parts):
        assert total.values.item() == _fsum(np.concatenate([v for v, _ in parts]).tolist(), num)
    assert mc.encode() == on_numpy_path(lambda: _fold(named, parts).encode())
    if all(w is None for _, w in parts) or all(w is not None for _, w in parts):
        whole = (np.concatenate([v for v, _ in parts]), None if parts[0][1] is None else np.concatenate([w for _, w in parts]))
        assert mc.encode() == _fold(named, [whole]).encode()
    value = mc.compute()[key]
    assert math.isnan(value) if den == 0 else value == E.exact_ratio(num, den)


@needs_numba
@pytest.mark.parametrize("n", [1, BLOCK - 1, BLOCK, BLOCK + 1, 5 * BLOCK + 3, 1 << 16, (1 << 16) + 1])
def test_big_batches_across_blocks_of_every_range(n):
    """Blocks of zeros, subnormals, values at the float maximum (their own range), wide ranges
    (the general kernel) and ordinary values next to each other in one batch."""
    rng = np.random.default_rng(n)
    kinds = [
        lambda m: np.zeros(m),
        lambda m: rng.integers(-5, 6, m) * 5e-324,
        lambda m: rng.choice([1.7976931348623157e308, -1.7976931348623157e308, 1e308], m),
        lambda m: rng.normal(size=m) * 10.0 ** rng.integers(-300, 300, m),
        lambda m: rng.gamma(2.0, 1.0, m),
        lambda m: np.full(m, -0.0),
    ]
    v = np.concatenate([kinds[i % len(kinds)](BLOCK) for i in range(-(-n // BLOCK))])[:n]
    rng.shuffle(v[: n // 3])  # one part with every kind mixed in each block
    mc = _fold(False, [(v, None)])
    total = next(s for s in mc.states if s.kind == "mean_measure").exact["total"]
    want = sum(map(Fraction, v.tolist()), Fraction(0))
    assert total.fraction() == want
    assert total.values.item() == _fsum(v.tolist(), want)
    assert mc.encode() == on_numpy_path(lambda: _fold(False, [(v, None)]).encode())


@needs_numba
@pytest.mark.parametrize("row", [0, 1, BLOCK - 1, BLOCK, BLOCK + 1, 3 * BLOCK + 17, 4 * BLOCK - 1])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_a_non_finite_value_in_any_block_raises_naming_its_row(row, bad):
    v = np.random.default_rng(row).gamma(2.0, 1.0, 4 * BLOCK)
    v[row] = bad
    for named in (False, True):
        mc = _collection(named)
        mc.update(measure=np.arange(3.0))
        before = mc.encode()
        with pytest.raises(ValueError, match=rf"column '{'loss' if named else 'measure'}': invalid value {re.escape(str(bad))} at row {row + 3}\b"):
            mc.update(measure=v)
        assert mc.encode() == before  # nothing folded


def _no_general_path(monkeypatch):
    def refuse(**kw):
        raise AssertionError("the general path ran")

    monkeypatch.setattr(plan_module, "make_batch", refuse)


@needs_numba
@pytest.mark.parametrize("named", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_the_fast_path_folds_plain_columns_without_a_batch(monkeypatch, named, weighted):
    """Plain float64 columns (read-only ones too, and ``{name: column}``) take the fast path;
    the result is the general path's."""
    rng = np.random.default_rng(5)
    parts = [(rng.normal(size=n) * 1e10, rng.random(n) if weighted else None) for n in (3, 1500, 1)]
    want = _fold(named, [(list(v), None if w is None else list(w)) for v, w in parts])  # lists: the general path
    _no_general_path(monkeypatch)
    mc = _collection(named)
    for i, (v, w) in enumerate(parts):
        if i == 1:
            v = v.copy()
            v.flags.writeable = False
            if w is not None:
                w = w.copy()
                w.flags.writeable = False
        mc.update(measure={"loss": v} if named and i == 2 else v, sample_weight=w)
    assert mc.encode() == want.encode() and mc._rows == want._rows == 1504
    assert mc.compute() == want.compute()


@needs_numba
@pytest.mark.filterwarnings("ignore::mergeable_metrics.UndefinedMetricWarning")
def test_other_inputs_and_collections_take_the_general_path():
    v = np.array([1.0, 2.5, -4.0])
    calls = []
    real = plan_module.make_batch

    def spy(**kw):
        calls.append(1)
        return real(**kw)

    plan_module.make_batch = spy
    try:
        for measure in ([1.0, 2.5, -4.0], v.astype(np.float32), np.repeat(v, 2)[::2], v.astype(">f8"), np.zeros(0)):
            before = len(calls)
            _collection(True).update(measure=measure)
            assert len(calls) == before + 1, measure
        before = len(calls)
        _collection(False).update(measure=v, sample_weight=[1.0, 1.0, 2.0])  # a list of weights
        MetricCollection("mean_measure", "accuracy").update([0, 1, 1], y_pred=[0, 1, 0], measure=v)  # another state
        MetricCollection(measures=["a", "b"]).update(measure={"a": v, "b": v})  # two measures
        assert len(calls) == before + 3
    finally:
        plan_module.make_batch = real
    assert MetricCollection("mean_measure", "accuracy").plan.mean_fold_at is None
    assert MetricCollection(measures=["a", "b"]).plan.mean_fold_at is None
    assert MetricCollection(measures=["loss"]).plan.mean_fold_at is not None


@needs_numba
@pytest.mark.parametrize("named", [False, True])
@pytest.mark.parametrize(
    "kwargs",
    [
        {"measure": np.array([1.0, 2.0]), "sample_weight": np.array([1.0, -1.0])},
        {"measure": np.array([1.0, np.nan]), "sample_weight": np.array([1.0, 1.0])},
        {"measure": np.array([1.0, 2.0]), "sample_weight": np.array([1.0, 1.0, 1.0])},
        {"measure": np.array([1.0, 2.0]), "preds": np.array([1.0, 2.0])},
        {"measure": np.array([[1.0, 2.0]])},
        {"measure": {"other": np.array([1.0, 2.0])}},
    ],
)
def test_messages_of_the_general_path(named, kwargs):
    """Refused inputs raise the general path's message (the same as without the kernels) and
    fold nothing."""

    def attempt():
        mc = _collection(named)
        mc.update(measure=np.array([0.5]))
        before = mc.encode()
        with pytest.raises((ValueError, TypeError)) as err:
            mc.update(**kwargs)
        assert mc._rows == 1 and mc.encode() == before
        return type(err.value), str(err.value)

    assert attempt() == on_numpy_path(attempt)


@needs_numba
@pytest.mark.parametrize("weighted", [False, True])
def test_after_compute_merge_pickle_and_decode_the_fold_goes_on(weighted):
    """The running sums rounded by ``compute`` (compact or canonical), states from ``merge``,
    ``decode`` and ``pickle``: the next fast updates add to them exactly."""
    rng = np.random.default_rng(9)
    parts = [(rng.normal(size=n) * 10.0 ** rng.integers(-100, 100, n), rng.random(n) if weighted else None) for n in (7, 2000, 64, 5)]
    ref = on_numpy_path(lambda: _fold(True, parts))
    mc = _collection(True)
    mc.update(measure=parts[0][0], sample_weight=parts[0][1])
    mc.compute()
    other = _collection(True)
    other.update(measure=parts[1][0], sample_weight=parts[1][1])
    mc.merge(other)
    mc = pickle.loads(pickle.dumps(mc))
    mc.update(measure=parts[2][0], sample_weight=parts[2][1])
    mc = _collection(True).decode(mc.encode())
    mc.update(measure=parts[3][0], sample_weight=parts[3][1])
    assert mc.encode() == ref.encode()
    assert mc.compute() == ref.compute()


@needs_numba
def test_concurrent_updates_lose_nothing():
    rng = np.random.default_rng(2)
    chunks = [rng.normal(size=int(rng.integers(1, 3000))) * 1e5 for _ in range(64)]
    mc = _collection(True)

    def work(k):
        for c in chunks[k::4]:
            mc.update(measure=c, sample_weight=None if k % 2 else np.full(c.shape, 2.0))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    st_mean = next(s for s in mc.states if s.kind == "mean_measure")
    num = sum((Fraction(x) * (1 if (i % 4) % 2 else 2) for i, c in enumerate(chunks) for x in c.tolist()), Fraction(0))
    assert st_mean.exact["total"].fraction() == num
    assert mc._rows == sum(c.shape[0] for c in chunks)


@given(
    a=st.lists(VALUES, min_size=1, max_size=6),
    b=st.lists(st.one_of(WEIGHTS, st.sampled_from([5e-324, 1e-320, 1.7976931348623157e308])), min_size=1, max_size=6),
)
@settings(max_examples=300, deadline=None)
def test_exact_quotient_is_the_correctly_rounded_ratio(a, b):
    """``exact_quotient`` (the mean's ``compute``: integer division where the result is a normal
    float) against ``Fraction``: huge, tiny (subnormal and underflowing) and overflowing ratios."""
    num, den = E.exact_sum(np.array(a)), E.exact_sum(np.array(b))
    fd = sum(map(Fraction, b), Fraction(0))
    if fd == 0:
        return
    fn = sum(map(Fraction, a), Fraction(0))
    assert E.exact_quotient(num, den) == E.exact_ratio(fn, fd)
    assert E.exact_quotient(num, den) == E.fraction_to_float(fn / fd)
    col_n = E.ExactSums.lazy(*E.exact_sum(np.array(a + a), index=np.repeat([0, 1], len(a)), size=2).full(), (2,))
    col_d = E.ExactSums.lazy(*E.exact_sum(np.array(b + b), index=np.repeat([0, 1], len(b)), size=2).full(), (2,))
    assert E.exact_quotient(col_n, col_d, 1) == E.exact_ratio(fn, fd)


@pytest.mark.parametrize(
    "make",
    [
        lambda: MetricCollection(measures=["loss"]),
        lambda: MetricCollection("mean_measure"),
        lambda: MetricCollection(avg="mean_measure"),
        lambda: MetricCollection("mean_measure", "mean_loss", running="mean_measure"),
    ],
)
@pytest.mark.parametrize("weights", [None, [0.5, 0.0, 2.0], [0.0, 0.0, -0.0]])
def test_the_mean_s_compute_is_the_general_compute(make, weights):
    """``compute`` of a one-measure collection (the quotient of the exact sums without the
    general machinery) returns the general path's values and keys; with no weight, NaN and the
    general path's warning."""
    import warnings

    mc = make()
    v = np.array([1e300, -3.5, 1e-300])
    mc.update(measure=v, sample_weight=None if weights is None else np.array(weights))
    with warnings.catch_warnings(record=True) as fast_w:
        warnings.simplefilter("always")
        got = mc.compute()
    with warnings.catch_warnings(record=True) as general_w:
        warnings.simplefilter("always")
        want = mc.plan.compute(mc.states)
    assert type(got) is type(want) and list(got) == list(want)
    assert [str(w.message) for w in fast_w] == [str(w.message) for w in general_w]
    num, den = _exact([(v, None if weights is None else np.array(weights))])
    for key in want:
        assert (math.isnan(got[key]) and math.isnan(want[key]) and den == 0) or got[key] == want[key] == E.exact_ratio(num, den)
    for alias in ("mean_loss", "mean_measure"):
        if alias in want:
            assert got[alias] == want[alias] or math.isnan(want[alias])


# -- round 9: the running sums stay raw in the collection until the states are read ------------------------
def _other(weighted):
    o = _collection(True)
    o.update(measure=np.array([1e300, -2.5, 3e-310]), sample_weight=np.array([0.5, 2.0, 1e10]) if weighted else None)
    return o


def _observers():
    """``name: fn(mc, weighted) -> (mc to go on with, what was observed as bytes or text)``: every
    way the states are read or replaced."""
    import copy

    import mergeable_metrics as mm

    def states(mc, wt):
        held = mc.states
        return mc, (held, mc.plan.encode(held, mc.fingerprint))

    def merged_into(mc, wt):  # mc is the other of a merge
        return mc, _collection(True).merge(mc).encode()

    def merge_from(mc, wt):
        return mc.merge(_other(wt)), mc.encode()

    def module_merge(mc, wt):
        return mm.merge(mc, _other(wt)), mc.encode()

    def set_states(mc, wt):
        mc.states = _other(wt).states
        return mc, mc.encode()

    def general_update(mc, wt):  # lists: the general path folds on top of the running sums
        mc.update(measure=[0.1, -7.0, 1e-320], sample_weight=[1.0, 3.0, 0.25] if wt else None)
        return mc, mc.encode()

    return {
        "states": states,
        "encode": lambda mc, wt: (mc, mc.encode()),
        "compute": lambda mc, wt: (mc, repr(sorted(mc.compute().items()))),
        "repr": lambda mc, wt: (mc, repr(mc)),
        "fingerprint": lambda mc, wt: (mc, repr(mc.fingerprint)),
        "merged_into": merged_into,
        "merge_from": merge_from,
        "module_merge": module_merge,
        "pickle": lambda mc, wt: (pickle.loads(pickle.dumps(mc)), mc.plan.encode(pickle.loads(pickle.dumps(mc.states)))),
        "copy": lambda mc, wt: (copy.copy(mc), mc.encode()),
        "deepcopy": lambda mc, wt: (copy.deepcopy(mc), mc.encode()),
        "decode": lambda mc, wt: (mc.decode(mc.encode()), mc.encode()),
        "reset": lambda mc, wt: (mc.reset() or mc, mc.encode()),
        "set_states": set_states,
        "general_update": general_update,
    }


def _interleaved(observer, pattern):
    """Fast updates (weighted where ``pattern`` says so) with ``observer`` between them: what each
    observation saw (states read earlier encoded again at the end: they keep their bytes), the
    final bytes, values and rows."""
    rng = np.random.default_rng(len(observer) + 7 * len(pattern))
    fn = _observers()[observer]
    mc = _collection(True)
    seen, held = [], []
    for wt in pattern:
        for n in (5, BLOCK + 3):
            v = rng.normal(size=n) * 10.0 ** rng.integers(-300, 300, n)
            mc.update(measure=v, sample_weight=rng.random(n) * 1e3 if wt else None)
        mc, got = fn(mc, wt)
        if observer == "states":
            held.append(got)
            got = got[1]
        seen.append(got)
    again = [mc.plan.encode(h, mc.fingerprint) for h, _ in held]
    return seen, again, mc.encode(), repr(sorted(mc.compute().items())), mc._rows


@needs_numba
@pytest.mark.filterwarnings("ignore::mergeable_metrics.UndefinedMetricWarning")
@pytest.mark.parametrize("pattern", [(False, False, False), (True, True, True), (False, True, False, True)])
@pytest.mark.parametrize("observer", list(_observers()))
def test_fast_updates_interleaved_with_every_observer(observer, pattern):
    """States read (``states``, ``encode``, ``compute``, ``repr``, merges either way, pickle, copies,
    ``decode``), replaced (``reset``, the ``states`` setter) or folded by the general path between
    fast updates: each observation, the states read earlier, the final bytes, values and rows are
    those of the numpy path (no numba: every batch through the general ``update``)."""
    got = _interleaved(observer, pattern)
    want = on_numpy_path(lambda: _interleaved(observer, pattern))
    assert got[0] == want[0]
    assert got[1] == (got[0] if observer == "states" else [])  # states read earlier keep their bytes
    assert got[2:] == want[2:]


@needs_numba
def test_fast_updates_build_no_state_until_read(monkeypatch):
    """A fast ``update`` is a compiled call on the running raw sums: no state is built per batch
    nor by ``compute`` (the quotient of the running sums), two (the count and the mean) when the
    states are read (or a weighted update follows unweighted ones), none again until the next
    update."""
    from mergeable_metrics.states.base import State

    built = []
    real = State._of_fields.__func__

    def counting(cls, *a, **kw):
        built.append(cls.kind)
        return real(cls, *a, **kw)

    monkeypatch.setattr(State, "_of_fields", classmethod(counting))
    mc = _collection(True)
    rng = np.random.default_rng(3)
    parts = [(rng.normal(size=n), None) for n in (10, 3000, 1, 700)]
    for v, _ in parts:
        mc.update(measure=v)
    assert built == []
    num, den = _exact(parts)
    assert mc.compute()["loss"] == E.exact_ratio(num, den) and built == []  # compute reads the running sums as they are
    mc.update(measure=parts[0][0], sample_weight=np.full(10, 0.5))  # weighted: the same
    parts.append((parts[0][0], np.full(10, 0.5)))
    num, den = _exact(parts)
    assert mc.compute()["loss"] == E.exact_ratio(num, den) and built == ["example_count", "mean_measure"]  # (settled to switch)
    built.clear()
    st_mean = next(s for s in mc.states if s.kind == "mean_measure")
    assert sorted(built) == ["example_count", "mean_measure"]
    assert st_mean.exact["total"].fraction() == num and st_mean.exact["weight"].fraction() == den
    mc.encode(), mc.compute(), mc.states
    assert len(built) == 2


@needs_numba
def test_a_count_past_int64_raises_the_general_message_and_folds_nothing():
    """Counts near 2**63 - 1 (states set by the caller): the fast path folds what fits, the batch
    that would pass it takes the general path (its overflow message), nothing is folded."""
    from mergeable_metrics.states.base import ExampleCountLayout, ExampleCountState
    from mergeable_metrics.metrics.measure import MeanMeasureState

    def attempt():
        mc = _collection(False)
        top = 2**63 - 1 - 5
        layout = next(s.layout for s in mc.states if s.kind == "mean_measure")
        near = {
            "example_count": ExampleCountState(ExampleCountLayout(), {"count": np.int64(top), "weight": np.float64(top), "skipped": np.int64(0)}),
            "mean_measure": MeanMeasureState(layout, {"count": np.int64(top), "weight": np.float64(top), "total": np.float64(1.0)}),
        }
        mc.states = tuple(near[s.kind] for s in mc.states)
        mc.update(measure=np.array([1.0, 2.0, 3.0]))
        mc.update(measure=np.array([0.5, 0.25]))
        before = mc.encode()
        with pytest.raises(ValueError) as err:
            mc.update(measure=np.array([1.0]))
        assert mc.encode() == before and mc._rows == 5
        return str(err.value), before

    got, want = attempt(), on_numpy_path(attempt)
    assert got == want and "count: int64 overflow" in got[0]


@needs_numba
@pytest.mark.filterwarnings("ignore::mergeable_metrics.UndefinedMetricWarning")
def test_observers_racing_fast_updates_see_consistent_states():
    """Threads updating (weighted and not) while others read ``states``, ``encode``, ``compute`` and
    merge the collection into another: every snapshot's two states agree (counts, weight sums),
    and the end holds every row exactly (``Fraction``)."""
    rng = np.random.default_rng(11)
    chunks = [rng.normal(size=int(rng.integers(1, 4000))) * 1e5 for _ in range(48)]
    mc = _collection(True)
    stop = threading.Event()
    snaps, errors = [], []

    def work(k):
        for c in chunks[k::3]:
            mc.update(measure=c, sample_weight=None if k % 2 else np.full(c.shape, 2.0))

    def watch(j):
        try:
            while not stop.is_set():
                if j == 0:
                    snaps.append(mc.states)
                elif j == 1:
                    snaps.append(mc.decode(mc.encode()).states)
                else:
                    mc.compute()
                    snaps.append(_collection(True).merge(mc).states)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    workers = [threading.Thread(target=work, args=(k,)) for k in range(3)]
    watchers = [threading.Thread(target=watch, args=(j,)) for j in range(3)]
    for t in watchers + workers:
        t.start()
    for t in workers:
        t.join()
    stop.set()
    for t in watchers:
        t.join()
    assert not errors
    for s in snaps:
        by = {x.kind: x for x in s}
        ec, ms = by["example_count"], by["mean_measure"]
        assert ec["count"].item() == ms["count"].item()
        assert ec.exact["weight"].fraction() == ms.exact["weight"].fraction()
    st_mean = next(s for s in mc.states if s.kind == "mean_measure")
    num = sum((Fraction(x) * (1 if (i % 3) % 2 else 2) for i, c in enumerate(chunks) for x in c.tolist()), Fraction(0))
    assert st_mean.exact["total"].fraction() == num
    assert mc._rows == sum(c.shape[0] for c in chunks)


def test_collections_of_the_same_simple_arguments_copy_one_plan():
    """A collection built from the same plain arguments as an earlier one copies its plan (the
    metrics are not resolved again); each copy is its own (an attribute set on one is not the
    other's), and arguments that differ only in type (``0`` / ``False`` / ``0.0``) or are not
    plain (functions, display names, classes, formats) get their own plans."""
    import warnings

    a = MetricCollection(measures=["loss"])
    b = MetricCollection(measures=["loss"])
    assert a.plan is not b.plan and a.plan.metrics is b.plan.metrics  # the same resolved metrics, not resolved again
    a.plan.mean_fold_at = None
    assert b.plan.mean_fold_at is not None and MetricCollection(measures=["loss"]).plan.mean_fold_at is not None
    assert MetricCollection(measures=["other"]).plan.measure_names == ("other",)
    assert MetricCollection(measures={"loss": lambda t, p: t}).plan.measure_fns  # a function: not cached
    assert MetricCollection(avg="mean_measure").plan.metrics[0].key == "avg"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        z0 = MetricCollection("precision", zero_division=0).compute()["precision"]
        z1 = MetricCollection("precision", zero_division=1).compute()["precision"]
        zn = MetricCollection("precision").compute()["precision"]
    assert (z0, z1, math.isnan(zn)) == (0.0, 1.0, True)
    with pytest.raises(ValueError):
        MetricCollection("precision", zero_division=2)
    with pytest.raises(ValueError):
        MetricCollection("precision", zero_division=2)  # raised again (an error is never cached)
    p = MetricCollection("recall", threshold=0.25)
    p.update([1, 1], y_score=[0.3, 0.2])
    q = MetricCollection("recall", threshold=0.5)
    q.update([1, 1], y_score=[0.3, 0.2])
    assert (p.compute()["recall"], q.compute()["recall"]) == (0.5, 0.0)
    c = MetricCollection("precision", classes=["n", "y"])
    c.update(["y", "n"], y_pred=["y", "y"])
    assert c.compute()["precision"] == 0.5 and c.classes == ("n", "y")
