"""Comparisons: the project tolerance for metric values, and equality of states/accumulators.

Metric values: ``abs(a - b) <= 1e-9 * max(1, |a|, |b|)``, NaN equals NaN, +-inf equal only to
themselves; arrays compare elementwise and must have the same shape.

States: exact (``==`` on every array) or relative (``abs(a - b) <= rel * max(|a|, |b|)``, which
also demands exact zeros), for single states, tuples of states (``Plan``), ``MetricCollection``
objects and sliced accumulators (``{slice_key: tuple_of_states}``).

Example:
    >>> close(0.1 + 0.2, 0.3), close(float("nan"), float("nan")), close(1.0, 1.001)
    (True, True, False)
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

from mergeable_metrics.evaluation.accumulator import Accumulator

TOL = 1e-9


def close(a: Any, b: Any, tol: float = TOL) -> bool:
    """Project tolerance for scalars or arrays (NaN == NaN)."""
    a_arr = np.asarray(a, dtype=np.float64)
    b_arr = np.asarray(b, dtype=np.float64)
    if a_arr.shape != b_arr.shape:
        return False
    for x, y in zip(a_arr.ravel().tolist(), b_arr.ravel().tolist()):
        if math.isnan(x) or math.isnan(y):
            if not (math.isnan(x) and math.isnan(y)):
                return False
        elif math.isinf(x) or math.isinf(y):
            if x != y:
                return False
        elif abs(x - y) > tol * max(1.0, abs(x), abs(y)):
            return False
    return True


def assert_all_close(ours: Mapping[str, Any], ref: Mapping[str, Any], tol: float = TOL, context: str = "", without_reference: Any = ()) -> None:
    """``ours`` and ``ref`` have the same keys and every value is close; reports every mismatch
    at once.

    A value of ours without a reference is a failure (it would go untested), unless its key is
    named in ``without_reference`` (an explicit list, so the exclusion is visible in the test);
    a key named there must be in ``ours`` and absent from ``ref``.
    """
    excluded = set(without_reference)
    bad = []
    for k in sorted(excluded):
        if k not in ours or k in ref:
            bad.append(f"  {k}: listed in without_reference but {'not computed' if k not in ours else 'has a reference'}")
    for k in ours:
        if k not in ref and k not in excluded:
            bad.append(f"  {k}: no reference value (ours={_show(ours[k])}); give one or name it in without_reference")
    for k, v in ref.items():
        if k not in ours:
            bad.append(f"  {k}: missing (ours has {sorted(ours)})")
        elif not close(ours[k], v, tol):
            bad.append(f"  {k}: ours={_show(ours[k])} reference={_show(v)}")
    assert not bad, f"{context}\n" + "\n".join(bad)


def _show(v: Any) -> str:
    return repr(np.asarray(v).tolist()) if np.ndim(v) else repr(float(v))


def _states_of(x: Any) -> Any:
    if isinstance(x, Accumulator):  # read as the mapping of its slices' states
        return dict(x.items())
    return x.states if hasattr(x, "states") and hasattr(x, "plan") else x


def _state_diff(a: Any, b: Any, rel: float) -> str | None:
    if type(a) is not type(b):
        return f"kinds differ: {type(a).__name__} vs {type(b).__name__}"
    if a.layout != b.layout:
        return f"layouts differ: {a.layout} vs {b.layout}"
    for name, _ in a.FIELDS:
        x, y = np.asarray(a[name]), np.asarray(b[name])
        if x.dtype != y.dtype or x.shape != y.shape:
            return f"{a.kind}.{name}: {x.dtype}{x.shape} vs {y.dtype}{y.shape}"
        if rel == 0:
            if not np.array_equal(x, y):
                return f"{a.kind}.{name}: {x.tolist()} != {y.tolist()}"
        else:
            xf, yf = x.astype(np.float64), y.astype(np.float64)
            ok = np.abs(xf - yf) <= rel * np.maximum(np.abs(xf), np.abs(yf))
            if not ok.all():
                return f"{a.kind}.{name}: {x.tolist()} vs {y.tolist()} (rel {rel})"
    return None


def states_diff(a: Any, b: Any, rel: float = 0.0) -> str | None:
    """None if equal (exactly when ``rel == 0``), else a description of the first difference.

    Accepts a State, a tuple of states, a MetricCollection, an :class:`mergeable_metrics.evaluation.accumulator.Accumulator`
    or an accumulator dict.
    """
    a, b = _states_of(a), _states_of(b)
    if isinstance(a, Mapping) or isinstance(b, Mapping):
        if not (isinstance(a, Mapping) and isinstance(b, Mapping)):
            return f"accumulator vs {type(b).__name__}"
        if set(a) != set(b):
            return f"slice keys differ: only left {sorted(map(str, set(a) - set(b)))}, only right {sorted(map(str, set(b) - set(a)))}"
        for key in a:
            d = states_diff(a[key], b[key], rel)
            if d:
                return f"slice {key!r}: {d}"
        return None
    if isinstance(a, tuple) or isinstance(b, tuple):
        if not (isinstance(a, tuple) and isinstance(b, tuple)) or len(a) != len(b):
            return f"state tuples differ in length: {a!r} vs {b!r}"
        for x, y in zip(a, b):
            d = _state_diff(x, y, rel)
            if d:
                return d
        return None
    return _state_diff(a, b, rel)


def states_close(a: Any, b: Any, rel: float = 0.0) -> bool:
    return states_diff(a, b, rel) is None


def assert_states_equal(a: Any, b: Any, rel: float = 0.0, context: str = "") -> None:
    """Assert exact (``rel=0``; also checks ``==`` of the objects) or relative state equality."""
    d = states_diff(a, b, rel)
    assert d is None, f"{context}: {d}" if context else d
    if rel == 0:
        a, b = _states_of(a), _states_of(b)
        assert a == b, f"{context}: states_diff found no difference but == is False"


def assert_bounds_contain(metrics: Any, kind: str, exact: Any, small: Any, where: Any = None) -> None:
    """Every metric of ``metrics`` computed from the exact state ``exact`` and the compressed
    state ``small`` (both of state kind ``kind``): the exact value is a float, and lies within the
    compressed value's certified bounds (or equals it when the compressed value is a float)."""
    from mergeable_metrics.metrics.base import Interval

    for m in metrics:
        e = m.compute({kind: exact})
        c = m.compute({kind: small})
        assert not isinstance(e, Interval)
        if isinstance(c, Interval):
            assert c.lower <= e <= c.upper, (where, m.key, e, c)
        else:
            assert (math.isnan(c) and math.isnan(e)) or np.isclose(c, e, rtol=1e-12), (where, m.key, e, c)


def assert_same_as_in_process(got: Any, ev: Any, data: Any, what: Any = "", n_slices: int | None = None) -> Any:
    """``got`` (an engine's collected :class:`mergeable_metrics.Results`) equals ``ev.evaluate([data])`` in
    process: the slices in order (``n_slices`` of them, when given), their counts and every metric
    value (:func:`close`). Returns the in-process results, for the caller's JSON checks."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = ev.evaluate([data])
    assert [s.slice for s in got.slices] == [s.slice for s in want.slices], what
    assert n_slices is None or len(got.slices) == n_slices, (what, len(got.slices))
    for g, w in zip(got.slices, want.slices):
        assert g.n == w.n, (what, g.slice)
        for key, value in w.metrics.items():
            assert close(g.metrics[key], value), (what, g.slice, key)
    return want
