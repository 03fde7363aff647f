"""Squared log error, pinball loss, Tweedie deviances and D² Tweedie scores (issue 17, "regression"):
values against scikit-learn (weighted, per slice, sorted input, empty batches), rows outside a
metric's domain, the merge laws (hypothesis) and configuration checks."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn import metrics as M

from mergeable_metrics import Evaluation
from mergeable_metrics.inputs.validation import Batch
from mergeable_metrics.metrics.regression_terms import RegressionTermsLayout, RegressionTermsState
from mergeable_metrics.states.base import State
from tests._helpers import fold_state_shards

POWERS = [-1.0, -0.5, 0.0, 1.0, 1.5, 2.0, 3.0]
METRICS = {
    "msle": lambda y, p, w: M.mean_squared_log_error(y, p, sample_weight=w),
    "rmsle": lambda y, p, w: M.root_mean_squared_log_error(y, p, sample_weight=w),
    "mean_pinball_loss": lambda y, p, w: M.mean_pinball_loss(y, p, sample_weight=w),
    "mean_pinball_loss@alpha=0.1": lambda y, p, w: M.mean_pinball_loss(y, p, alpha=0.1, sample_weight=w),
    "mean_pinball_loss@alpha=1": lambda y, p, w: M.mean_pinball_loss(y, p, alpha=1.0, sample_weight=w),
    "mean_poisson_deviance": lambda y, p, w: M.mean_poisson_deviance(y, p, sample_weight=w),
    "mean_gamma_deviance": lambda y, p, w: M.mean_gamma_deviance(y, p, sample_weight=w),
    **{f"mean_tweedie_deviance@power={q}": (lambda q: lambda y, p, w: M.mean_tweedie_deviance(y, p, power=q, sample_weight=w))(q) for q in POWERS},
    **{f"d2_tweedie_score@power={q}": (lambda q: lambda y, p, w: M.d2_tweedie_score(y, p, power=q, sample_weight=w))(q) for q in POWERS},
}


def _data(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    y = rng.gamma(2.0, 1.5, n)
    y[:5] = 0.0  # zero targets: in the Poisson / Tweedie 1 < p < 2 domain, not the Gamma one
    p = np.maximum(y, 0.1) * rng.lognormal(0, 0.3, n)
    return y, p, rng.random(n), rng.choice(["a", "b", "c"], n)


@pytest.mark.parametrize("weighted", [False, True])
def test_values_equal_sklearn_overall_and_per_slice(weighted):
    y, p, w, g = _data(600)
    pos = y > 0  # the Gamma family (power >= 2) needs positive targets: those rows only
    metrics = list(METRICS)
    for rows, names in [
        (np.ones(len(y), bool), [m for m in metrics if not any(f"power={q}" in m for q in (2.0, 3.0)) and m != "mean_gamma_deviance"]),
        (pos, metrics),
    ]:
        cols = {"y": y[rows], "p": p[rows], "g": g[rows]} | ({"w": w[rows]} if weighted else {})
        order = np.argsort(cols["y"], kind="stable")  # sorted input, then in uneven batches with an empty one
        cols = {k: v[order] for k, v in cols.items()}
        batches = [{k: v[a:b] for k, v in cols.items()} for a, b in [(0, 7), (7, 7), (7, 300), (300, None)]]
        ev = Evaluation(label_col="y", prediction_col="p", task="regression", slices=["g"], metrics=names, weight_col="w" if weighted else None)
        keys = dict(zip(names, (m.key for m in ev.plan.metrics)))
        r = ev.evaluate(batches)
        for key, mask in [((), np.ones(len(cols["y"]), bool))] + [((("g", v),), cols["g"] == v) for v in "abc"]:
            got = r[key].metrics
            for name in names:
                want = METRICS[name](cols["y"][mask], cols["p"][mask], cols["w"][mask] if weighted else None)
                assert got[keys[name]] == pytest.approx(want, rel=1e-12, abs=1e-15), (key, name)


def test_rows_outside_a_domain_make_only_that_metric_undefined():
    y = np.array([0.0, 1.0, 2.0, -2.0, 3.0])
    p = np.array([0.5, 1.0, 0.0, 1.0, 2.5])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = Evaluation(label_col="y", prediction_col="p", task="regression",
                       metrics=["msle", "mean_poisson_deviance", "mean_gamma_deviance", "mean_tweedie_deviance@power=-1", "mse", "mean_pinball_loss"]).evaluate([{"y": y, "p": p}])  # fmt: skip
    m = r.overall.metrics
    assert np.isnan(m["msle"])  # y = -2 <= -1
    assert np.isnan(m["mean_poisson_deviance"])  # y = -2 < 0 and p = 0
    assert np.isnan(m["mean_gamma_deviance"])  # y = 0
    assert np.isnan(m["mean_tweedie_deviance@-1"])  # p = 0
    assert m["mse"] == pytest.approx(M.mean_squared_error(y, p), rel=1e-15)
    assert m["mean_pinball_loss"] == pytest.approx(M.mean_pinball_loss(y, p), rel=1e-15)
    listed = {u["metric"] for u in r.overall.undefined}
    assert {"msle", "mean_poisson_deviance", "mean_gamma_deviance", "mean_tweedie_deviance@-1"} <= listed and "mse" not in listed
    assert any("msle" in str(c.message) for c in caught)
    ok = Evaluation(label_col="y", prediction_col="p", task="regression", metrics=["msle"]).evaluate([{"y": y[[0, 1, 2, 4]], "p": p[[0, 1, 2, 4]]}])
    assert ok.overall.metrics["msle"] == pytest.approx(M.mean_squared_log_error(y[[0, 1, 2, 4]], p[[0, 1, 2, 4]]), rel=1e-15)


def test_d2_with_one_row_or_a_constant_target():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        one = Evaluation(label_col="y", prediction_col="p", task="regression", metrics=["d2_tweedie_score@power=1"]).evaluate(
            [{"y": np.array([2.0]), "p": np.array([1.0])}]
        )
        const = Evaluation(label_col="y", prediction_col="p", task="regression", metrics=["d2_tweedie_score@power=1", "d2_tweedie_score"]).evaluate(
            [{"y": np.array([2.0, 2.0, 2.0]), "p": np.array([1.0, 2.0, 3.0])}]
        )
    assert np.isnan(one.overall.metrics["d2_tweedie_score@1"])  # fewer than 2 rows, as scikit-learn
    assert const.overall.metrics["d2_tweedie_score@1"] == -np.inf  # null deviance 0, the model's not
    assert const.overall.metrics["d2_tweedie_score"] == -np.inf


def test_parameters_are_checked():
    for bad, msg in [("mean_pinball_loss@alpha=1.5", "alpha must be a number in"), ("mean_tweedie_deviance@power=0.5", "power must be <= 0 or >= 1"),
                     ("d2_tweedie_score@power=abc", "power must be")]:  # fmt: skip
        with pytest.raises(ValueError, match=msg):
            Evaluation(label_col="y", prediction_col="p", task="regression", metrics=[bad])


LAYOUT = RegressionTermsLayout(("sle", "pinball:0.25", "tweedie:1.5", "null:1.5", "tweedie:2.0", "null:2.0"))
values = st.sampled_from([-2.0, -1.0, 0.0, 0.5, 1.0, 2.0, 1e6, 3.25])
rows = st.lists(st.tuples(values, values, st.sampled_from([0.0, 1.0, 0.5, 3.0])), max_size=30)


@settings(max_examples=40)
@given(data=rows, seed=st.integers(0, 2**32 - 1))
def test_sharded_merge_equals_one_fold(data, seed):
    y = np.array([d[0] for d in data], dtype=np.float64)
    p = np.array([d[1] for d in data], dtype=np.float64)
    w = np.array([d[2] for d in data], dtype=np.float64)
    zero = RegressionTermsState.zero(LAYOUT)
    whole = zero.fold(Batch(y, None, p, w)) if data else zero
    merged = fold_state_shards(zero, lambda idx: Batch(y[idx], None, p[idx], w[idx]), len(data), np.random.default_rng(seed))
    assert merged.encode() == whole.encode()
    assert merged.merge(zero) == merged == zero.merge(merged)
    assert State.decode(merged.encode()) == merged
    # the sums against a direct computation: the sum of w * term over the rows in the domain,
    # with exact products and an exact sum (the module docstring: each row's term is rounded once
    # to float64, then "summed exactly"). A float64 np.sum is no reference: the Gamma null term
    # log(y) has both signs, so w=(1, 1, 1, 3) at y=(0.5, 0.5, 0.5, 2) sums to 0.0 in float64
    # while the exact sum of the rounded products is -2**-53.
    if data:
        from fractions import Fraction

        from mergeable_metrics.metrics.regression_terms import term_rows

        for j, t in enumerate(LAYOUT.terms):
            v, inside = term_rows(t, y, p)
            assert int(merged["outside"][j]) == int((~inside).sum())
            finite = inside & np.isfinite(v)
            want = sum((Fraction(float(a)) * Fraction(float(b)) for a, b in zip(w[finite], v[finite])), Fraction(0))
            assert float(merged["sums"][j]) == float(want), t  # correctly rounded exact sum


def test_merging_other_terms_names_the_setting():
    a, b = RegressionTermsState.zero(RegressionTermsLayout(("sle",))), RegressionTermsState.zero(RegressionTermsLayout(("sle", "pinball:0.5")))
    with pytest.raises(ValueError, match="terms"):
        a.merge(b)
    with pytest.raises(ValueError, match="unknown regression term 'cubic'"):
        RegressionTermsLayout(("cubic",))


# -- overflow: a term that is +-inf (or inf - inf) inside the domain gives what scikit-learn gives
OVERFLOW = [
    # (y, p, w): y = 1e300 against p = 1e-300 overflows the Poisson / Tweedie terms (+inf)
    (np.array([1e300, 1.0, 2.0]), np.array([1e-300, 1.0, 3.0]), None),
    (np.array([1e300, 1.0, 2.0]), np.array([1e-300, 1.0, 3.0]), np.array([1.0, 1.0, 2.0])),
    (np.array([1e300, 1.0, 2.0]), np.array([1e-300, 1.0, 3.0]), np.array([0.0, 1.0, 2.0])),  # 0 * inf: NaN
    (np.array([1e200, 1.0, 2.0]), np.array([1e200, 1.0, 3.0]), None),  # power -1: inf - inf, NaN
    (np.array([1e200, 1.0, 2.0]), np.array([-1e200, 1.0, 3.0]), None),  # (y - p)^2: +inf
]
OVERFLOW_METRICS = {
    "mean_poisson_deviance": lambda y, p, w: M.mean_poisson_deviance(y, p, sample_weight=w),
    "mean_tweedie_deviance@power=-1": lambda y, p, w: M.mean_tweedie_deviance(y, p, power=-1, sample_weight=w),
    "mean_tweedie_deviance@power=0": lambda y, p, w: M.mean_tweedie_deviance(y, p, power=0, sample_weight=w),
    "mean_tweedie_deviance@power=1.5": lambda y, p, w: M.mean_tweedie_deviance(y, p, power=1.5, sample_weight=w),
    "mean_tweedie_deviance@power=3": lambda y, p, w: M.mean_tweedie_deviance(y, p, power=3, sample_weight=w),
    "mean_pinball_loss@alpha=0.3": lambda y, p, w: M.mean_pinball_loss(y, p, alpha=0.3, sample_weight=w),
    "d2_tweedie_score@power=1": lambda y, p, w: M.d2_tweedie_score(y, p, power=1, sample_weight=w),
    "d2_tweedie_score@power=1.5": lambda y, p, w: M.d2_tweedie_score(y, p, power=1.5, sample_weight=w),
}


@pytest.mark.parametrize("case", range(len(OVERFLOW)))
def test_overflowing_terms_give_what_sklearn_gives(case):
    y, p, w = OVERFLOW[case]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, ref in OVERFLOW_METRICS.items():
            try:
                want = ref(y, p, w)
            except ValueError:  # outside scikit-learn's domain (p < 0): ours is undefined
                want = np.nan
            cols = {"y": y, "p": p} | ({"w": w} if w is not None else {})
            for batches in ([cols], [{k: v[:1] for k, v in cols.items()}, {k: v[1:] for k, v in cols.items()}]):
                ev = Evaluation(label_col="y", prediction_col="p", task="regression", metrics=[name], weight_col=None if w is None else "w")
                r = ev.evaluate(batches)
                (got,) = r.overall.metrics.values()
                assert got == want or (np.isnan(got) and np.isnan(want)), (case, name, got, want)
                assert np.isnan(got) == any(u["metric"] == ev.plan.metrics[0].key for u in r.overall.undefined), (case, name)


def test_the_poisson_deviance_of_1e300_against_1e_minus_300_is_inf_not_undefined():
    y, p = np.array([1e300, 1.0]), np.array([1e-300, 1.0])
    s = RegressionTermsState.zero(RegressionTermsLayout(("tweedie:1.0",))).fold(Batch(y, None, p, None))
    assert (int(s["outside"][0]), int(s["posinf"][0]), int(s["neginf"][0]), int(s["nan"][0])) == (0, 1, 0, 0)
    assert float(s["sums"][0]) == 0.0  # the finite row's deviance is 0; the infinite one is counted
    assert s.mean("tweedie:1.0") == np.inf == M.mean_poisson_deviance(y, p)
    assert State.decode(s.encode()) == s


def test_version_1_bytes_decode_with_zero_overflow_counts():
    import struct
    import zlib

    from mergeable_metrics.states import codec

    s = RegressionTermsState.zero(RegressionTermsLayout(("sle", "tweedie:1.0"))).fold(
        Batch(np.array([1.0, 2.5]), None, np.array([2.0, 0.5]), np.array([0.5, 0.25]))
    )
    old_fields = [("count", "int64"), ("weight", "float64"), ("sums", "float64"), ("outside", "int64")]
    stored = old_fields + [(f"{n}.{part}", "int64") for n in ("weight", "sums") for part in ("exp", "limbs")]
    parts = [
        codec._STATE_MAGIC,
        bytes([codec.VERSION]),
        codec._str16(s.kind),
        bytes([1]),
        codec._str32(codec.layout_to_json(s.layout)),
        struct.pack("<H", len(stored)),
    ]
    for name, dtype in stored:
        a = np.asarray(s.arrays[name]).astype(np.dtype(dtype).newbyteorder("<"))
        parts += [codec._str16(name), struct.pack("<BB", codec._DTYPE_CODES[np.dtype(dtype)], a.ndim), struct.pack(f"<{a.ndim}Q", *a.shape), a.tobytes()]
    body = b"".join(parts)
    back = State.decode(body + struct.pack("<I", zlib.crc32(body)))
    assert back == s and back.encode()[6 + len(s.kind)] == RegressionTermsState.VERSION == 2
    # a version-1 frame with today's fields (or today's with version 1's) is refused
    with pytest.raises(ValueError, match="fields"):
        parts[3] = bytes([2])
        body = b"".join(parts)
        State.decode(body + struct.pack("<I", zlib.crc32(body)))
