"""Multioutput regression (issue 17): (N, D) targets and predictions with ``num_outputs=D`` and
scikit-learn's ``multioutput="raw_values"|"uniform_average"|"variance_weighted"``.

Values against scikit-learn for every metric with ``multioutput`` and every option (weighted too,
per slice, sorted input, empty batches), the inputs (numpy, Arrow list / fixed-size list, pandas
lists), the merge laws of the states with an output axis (hypothesis), the codec (bytes of the
release before multioutput still decode), and the errors (column, value, row; settings)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn import metrics as M

from mergeable_metrics import Evaluation, MetricCollection
from mergeable_metrics.inputs.validation import Batch
from mergeable_metrics.metrics.base import Task
from mergeable_metrics.metrics.regression import RegressionLayout, RegressionMomentsState
from mergeable_metrics.metrics.regression_terms import RegressionTermsLayout, RegressionTermsState
from mergeable_metrics.states.base import State
from tests._helpers import merge_tree, random_shards

pytestmark = pytest.mark.filterwarnings("ignore::mergeable_metrics.metrics.base.UndefinedMetricWarning")

#: metric string -> (scikit-learn function, extra kwargs, multioutput options)
TWO = ("raw_values", "uniform_average")
THREE = ("raw_values", "uniform_average", "variance_weighted")
SKLEARN = {
    "mse": (M.mean_squared_error, {}, TWO),
    "rmse": (M.root_mean_squared_error, {}, TWO),
    "mae": (M.mean_absolute_error, {}, TWO),
    "mape": (M.mean_absolute_percentage_error, {}, TWO),
    "r2": (M.r2_score, {}, THREE),
    "r2@force_finite=false": (M.r2_score, {"force_finite": False}, THREE),
    "explained_variance": (M.explained_variance_score, {}, THREE),
    "explained_variance@force_finite=false": (M.explained_variance_score, {"force_finite": False}, THREE),
    "msle": (M.mean_squared_log_error, {}, TWO),
    "rmsle": (M.root_mean_squared_log_error, {}, TWO),
    "mean_pinball_loss": (M.mean_pinball_loss, {}, TWO),
    "mean_pinball_loss@alpha=0.9": (M.mean_pinball_loss, {"alpha": 0.9}, TWO),
}
CASES = [(name, mo) for name, (_, _, opts) in SKLEARN.items() for mo in opts]


def _metric(name: str, mo: str) -> str:
    return f"{name}@multioutput={mo}"


def _data(n: int, d: int = 3, seed: int = 0):
    rng = np.random.default_rng(seed)
    y = rng.gamma(2.0, 1.5, (n, d))  # >= 0: inside the squared log error's domain
    p = np.maximum(y * rng.lognormal(0, [0.1, 0.5, 1.0][:d] + [0.3] * (d - 3), (n, d)), 0.0)
    return y, p, rng.random(n), rng.choice(["a", "b", "c"], n)


def _reference(name: str, mo: str, y, p, w):
    fn, kw, _ = SKLEARN[name]
    return fn(y, p, sample_weight=w, multioutput=mo, **kw)


@pytest.mark.parametrize("weighted", [False, True])
def test_every_metric_and_multioutput_option_equals_sklearn_overall_and_per_slice(weighted):
    y, p, w, g = _data(400)
    order = np.lexsort((y[:, 0],))  # sorted input, then uneven batches with an empty one
    cols = {"y": y[order], "p": p[order], "g": g[order], **({"w": w[order]} if weighted else {})}
    batches = [{k: v[a:b] for k, v in cols.items()} for a, b in [(0, 5), (5, 5), (5, 230), (230, None)]]
    names = [_metric(n, mo) for n, mo in CASES]
    ev = Evaluation(label_col="y", prediction_col="p", num_outputs=3, slices=["g"], metrics=names, weight_col="w" if weighted else None)
    r = ev.evaluate(batches)
    for key, mask in [((), np.ones(len(y), bool))] + [((("g", v),), cols["g"] == v) for v in "abc"]:
        got = r[key].metrics
        for (name, mo), metric in zip(CASES, names):
            want = _reference(name, mo, cols["y"][mask], cols["p"][mask], cols["w"][mask] if weighted else None)
            assert np.shape(got[metric]) == np.shape(want), (key, metric)
            np.testing.assert_allclose(got[metric], want, rtol=1e-12, atol=1e-15, err_msg=f"{key} {metric}")


def test_default_is_uniform_average_and_the_defaults_of_the_task_are_multioutput():
    y, p, w, _ = _data(60, d=2, seed=1)
    mc = MetricCollection(num_outputs=2)  # the regression defaults: mse, rmse, mae, r2
    mc.update(y, y_pred=p, sample_weight=w)
    got = mc.compute()
    for name in ("mse", "rmse", "mae", "r2"):
        np.testing.assert_allclose(got[name], _reference(name, "uniform_average", y, p, w), rtol=1e-12)


def test_one_output_and_a_single_output_task_agree_with_sklearn():
    y, p, w, _ = _data(50, d=1, seed=2)
    for name, mo in CASES:
        want = _reference(name, mo, y[:, 0], p[:, 0], w)  # scikit-learn: (N,) targets
        one = MetricCollection(_metric(name, mo), num_outputs=1)  # (N, 1)
        one.update(y, y_pred=p, sample_weight=w)
        flat = MetricCollection(_metric(name, mo), task="regression")  # (N,)
        flat.update(y[:, 0], y_pred=p[:, 0], sample_weight=w)
        for got in (one.compute()[_metric(name, mo)], flat.compute()[_metric(name, mo)]):
            np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=f"{name} {mo}")
            assert np.shape(got) == np.shape(want)


def test_single_output_values_are_unchanged_by_the_multioutput_parameter():
    y, p, w, _ = _data(80, d=1, seed=3)
    names = ["mse", "rmse", "mae", "mape", "r2", "explained_variance", "msle", "rmsle", "mean_pinball_loss@alpha=0.3"]
    plain, averaged = MetricCollection(*names, task="regression"), MetricCollection(*[f"{n}@multioutput=uniform_average" for n in names], task="regression")
    for mc in (plain, averaged):
        mc.update(y[:, 0], y_pred=p[:, 0], sample_weight=w)
    a, b = plain.compute(), averaged.compute()
    for n in names:
        assert a[n] == b[f"{n}@multioutput=uniform_average"], n  # bit for bit


def test_constant_outputs_follow_force_finite_and_variance_weighted_falls_back_to_uniform():
    y = np.array([[1.0, 2.0, 0.5], [1.0, 3.0, 0.5], [1.0, 5.0, 0.5], [1.0, 4.0, 0.5]])
    cases = {
        "some constant": (y, y + np.array([[0.0, 0.5, 1.0]])),  # output 0 perfect, output 2 wrong and constant
        "all constant": (np.ones((4, 2)), np.array([[1.0, 2.0]] * 4)),
        "all constant, perfect": (np.ones((4, 2)), np.ones((4, 2))),
    }
    for label, (yy, pp) in cases.items():
        for name in ("r2", "r2@force_finite=false", "explained_variance", "explained_variance@force_finite=false"):
            for mo in THREE:
                mc = MetricCollection(_metric(name, mo), num_outputs=yy.shape[1])
                mc.update(yy, y_pred=pp)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    want = _reference(name, mo, yy, pp, None)
                np.testing.assert_allclose(mc.compute()[_metric(name, mo)], want, rtol=1e-12, err_msg=f"{label} {name} {mo}")


def test_variance_weighted_without_weight_is_undefined_not_a_division_by_zero():
    """No rows (or only zero weights): every output's variance weight is 0, so the average is the uniform one of
    undefined outputs, NaN (before: ``ZeroDivisionError`` from the exact centred sum over a zero weight)."""
    for name in ("r2@multioutput=variance_weighted", "explained_variance@multioutput=variance_weighted"):
        ev = Evaluation(label_col="y", score_col="p", task="regression", num_outputs=2, metrics=[name], weight_col="w")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            empty = ev.evaluate([{"y": np.zeros((0, 2)), "p": np.zeros((0, 2)), "w": np.zeros(0)}]).overall.metrics[name]
            zero_w = ev.evaluate([{"y": np.array([[1.0, 2.0], [3.0, 5.0]]), "p": np.ones((2, 2)), "w": np.zeros(2)}]).overall.metrics[name]
        assert np.isnan(empty) and np.isnan(zero_w), (name, empty, zero_w)


def test_list_columns_of_arrow_and_pandas_give_the_numpy_values():
    pa = pytest.importorskip("pyarrow")
    y, p, w, g = _data(90, seed=4)
    names = ["r2@multioutput=raw_values", "mse", "mean_pinball_loss@multioutput=raw_values", "mean_label", "mean_prediction"]
    ev = Evaluation(label_col="y", prediction_col="p", weight_col="w", num_outputs=3, slices=["g"], metrics=names)
    want = ev.evaluate([{"y": y, "p": p, "w": w, "g": g}]).to_json()
    fixed = pa.table({"y": pa.array(list(y), type=pa.list_(pa.float64(), 3)), "p": pa.array(list(p), type=pa.list_(pa.float64(), 3)), "w": w, "g": g})
    listed = pa.table({"y": pa.array([list(r) for r in y]), "p": pa.array([list(r) for r in p]), "w": w, "g": g})
    assert ev.evaluate([fixed]).to_json() == want
    assert ev.evaluate(listed.to_batches(max_chunksize=17)).to_json() == want
    assert ev.evaluate([listed.to_pandas()]).to_json() == want
    got = ev.evaluate([fixed]).overall.metrics
    np.testing.assert_allclose(got["mean_label"], np.average(y, axis=0, weights=w), rtol=1e-13)
    np.testing.assert_allclose(got["mean_prediction"], np.average(p, axis=0, weights=w), rtol=1e-13)


def test_raw_values_are_long_format_rows_per_output_and_undefined_outputs_are_listed():
    y = np.array([[1.0, -3.0], [2.0, 1.0], [3.0, 2.0]])  # output 1 has a target <= -1: no squared log error
    ev = Evaluation(label_col="y", prediction_col="p", num_outputs=2, metrics=["msle@multioutput=raw_values", "msle"])
    r = ev.evaluate([{"y": y, "p": np.abs(y)}])
    v = r.overall.metrics["msle@multioutput=raw_values"]
    assert v[0] == pytest.approx(M.mean_squared_log_error(y[:, 0], y[:, 0])) and np.isnan(v[1])
    assert np.isnan(r.overall.metrics["msle"])
    rows = [x for x in r.to_rows() if x["metric"] == "msle@multioutput=raw_values"]
    assert [x["index"] for x in rows] == ["0", "1"]
    undefined = {e["metric"]: e.get("classes") for e in r.overall.undefined}
    assert undefined["msle@multioutput=raw_values"] == [1]


# -- states: exact, merge laws, codec ------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(
    data=st.lists(
        st.tuples(st.floats(-10, 10), st.floats(-10, 10), st.floats(0, 5), st.floats(-1e8, 1e8), st.sampled_from([0.0, 0.5, 1.0, 3.25])), max_size=30
    ),
    seed=st.integers(0, 2**32 - 1),
)
def test_multioutput_states_are_bit_identical_for_any_sharding_and_each_output_is_its_single_output_state(data, seed):
    y = np.array([[d[0], d[2], d[3]] for d in data]).reshape(-1, 3)
    p = np.array([[d[1], d[0] + d[2], d[3] * 1.5] for d in data]).reshape(-1, 3)
    w = np.array([d[4] for d in data])
    rng = np.random.default_rng(seed)
    for cls, layout, single in [
        (RegressionMomentsState, RegressionLayout(3), RegressionLayout()),
        (RegressionTermsState, RegressionTermsLayout(("pinball:0.25", "sle", "tweedie:1.0"), 3), RegressionTermsLayout(("pinball:0.25", "sle", "tweedie:1.0"))),
    ]:
        whole = cls.from_batch(layout, Batch(y, None, p, w))
        states = []
        for shard in random_shards(rng, len(data)):
            s = cls.zero(layout)
            for idx in shard:
                s = s.fold(Batch(y[idx], None, p[idx], w[idx]))
            states.append(s)
        merged = merge_tree(states, lambda a, b: a.merge(b), rng, lambda: cls.zero(layout))
        assert merged == whole and merged.encode() == whole.encode()
        assert State.decode(whole.encode()) == whole
        for j in range(3):  # each output: the single-output state of its column, bit for bit
            assert merged.output(j) == cls.from_batch(single, Batch(y[:, j].copy(), None, p[:, j].copy(), w))
        assert cls.zero(layout) + whole == whole


def test_merging_or_decoding_states_of_another_num_outputs_raises_naming_it():
    y, p, w, _ = _data(10)
    a = RegressionMomentsState.from_batch(RegressionLayout(3), Batch(y, None, p, w))
    b = RegressionMomentsState.from_batch(RegressionLayout(2), Batch(y[:, :2].copy(), None, p[:, :2].copy(), w))
    with pytest.raises(ValueError, match="num_outputs"):
        a.merge(b)
    t3 = RegressionTermsState.zero(RegressionTermsLayout(("sle",), 3))
    with pytest.raises(ValueError, match="num_outputs"):
        t3.merge(RegressionTermsState.zero(RegressionTermsLayout(("sle",))))
    e3 = Evaluation(label_col="y", prediction_col="p", num_outputs=3, metrics=["mse"])
    e2 = Evaluation(label_col="y", prediction_col="p", num_outputs=2, metrics=["mse"])
    acc = e3.fold(e3.zero(), {"y": y, "p": p})
    with pytest.raises(ValueError, match="num_outputs"):
        e2.decode(e3.encode(acc))
    one = Evaluation(label_col="y", prediction_col="p", task="regression", metrics=["mse"])
    assert "num_outputs" not in one.fingerprint  # single-output fingerprints are those of earlier releases


#: bytes written by the release before multioutput (kind version 1, layouts without num_outputs):
#: targets [1, 2.5, -3, 4], predictions [1.5, 2, -1, 4.25], weights [1, 0.5, 2, 0.1]
OLD_MOMENTS = bytes.fromhex(
    "4d4d5303120072656772657373696f6e5f6d6f6d656e747301020000007b7d1a000500636f756e740200040000000000000006007765696768740100cdcccccccccc0c40050073756d5f790100cdcccccccccc0ac0050073756d5f7001009a9999999999ed3f060073756d5f797901009a99999999b93740060073756d5f70700100cdcccccccc1c2040060073756d5f797001006666666666662740090073756d5f6162735f6501009a99999999191340070073756d5f6170650100888888888808ff3f09006d61785f6162735f65010000000000000000400a007765696768742e6578700200feffffffffffffff0c007765696768742e6c696d627302010300000000000000009a99990000000099999999000000000300000000000000090073756d5f792e6578700200feffffffffffffff0b0073756d5f792e6c696d6273020103000000000000000068666600000000666666a600000000fcffffffffffffff090073756d5f702e6578700200feffffffffffffff0b0073756d5f702e6c696d62730201030000000000000080cecccc00000000ccccccec0000000000000000000000000a0073756d5f79792e6578700200feffffffffffffff0c0073756d5f79792e6c696d62730201030000000000000000a0999900000000999999b90000000017000000000000000a0073756d5f70702e6578700200feffffffffffffff0c0073756d5f70702e6c696d627302010300000000000000a06d6666000000006666660e0000000008000000000000000a0073756d5f79702e6578700200feffffffffffffff0c0073756d5f79702e6c696d627302010300000000000000003a333300000000333333b3000000000b000000000000000d0073756d5f6162735f652e6578700200feffffffffffffff0f0073756d5f6162735f652e6c696d6273020103000000000000008066666600000000666666c60000000004000000000000000b0073756d5f6170652e6578700200feffffffffffffff0d0073756d5f6170652e6c696d627302010300000000000000a083888800000000888888f0000000000100000000000000b6b8cd42"
)
OLD_TERMS = bytes.fromhex(
    "4d4d5303100072656772657373696f6e5f7465726d73011f0000007b227465726d73223a5b2270696e62616c6c3a302e39222c22736c65225d7d08000500636f756e740200040000000000000006007765696768740100cdcccccccccc0c40040073756d7301010200000000000000ad47e17a14aee53fe7dfe358f8b2af3f07006f75747369646502010200000000000000000000000000000001000000000000000a007765696768742e6578700200feffffffffffffff0c007765696768742e6c696d627302010300000000000000009a99990000000099999999000000000300000000000000080073756d732e6578700200fcffffffffffffff0a0073756d732e6c696d627302010a0000000000000000005c8f00000000c2f5285c00000000cf693d0a00000000d7a370ad0000000000000000000000000080751c000000004ebb00d80000000079f3ef71000000002c7cd90f000000000000000000000000c57bc60f"
)


def test_bytes_of_the_release_before_multioutput_decode_to_the_single_output_state():
    y, p, w = np.array([1.0, 2.5, -3.0, 4.0]), np.array([1.5, 2.0, -1.0, 4.25]), np.array([1.0, 0.5, 2.0, 0.1])
    b = Batch(y, None, p, w)
    moments = State.decode(OLD_MOMENTS)
    assert moments == RegressionMomentsState.from_batch(RegressionLayout(), b) and moments.layout.num_outputs is None
    terms = State.decode(OLD_TERMS)
    want = RegressionTermsState.from_batch(RegressionTermsLayout(("pinball:0.9", "sle")), b)
    # the squared log error's terms come from np.log1p, which is not correctly rounded and whose
    # last bit differs between numpy builds (the bytes were written by an older one): that sum is
    # compared to a few ulps, everything else exactly
    assert terms.layout == want.layout
    assert terms["sums"][0] == want["sums"][0] and terms["sums"][1] == pytest.approx(want["sums"][1], rel=1e-14, abs=0)
    for field in ("count", "weight", "outside", "posinf", "neginf", "nan"):
        assert np.array_equal(terms[field], want[field]), field
    assert RegressionMomentsState.VERSION == RegressionTermsState.VERSION == 2
    assert OLD_MOMENTS[3] == 3 and State.decode(moments.encode()) == moments  # today's bytes: kind version 2


# -- errors ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "cols, match",
    [
        (
            {"y": [[1.0, 2.0, 3.0]] * 3, "p": [[1.0, 2.0]] * 3},
            r"column 'p': row 0 holds 2 entries \[1.0, 2.0\]: multioutput prediction rows are lists of 3 values \(num_outputs=3\) \(3 such rows",
        ),
        ({"y": np.ones((3, 3)), "p": np.ones((3, 2))}, r"column 'p': multioutput prediction rows need 3 entries \(num_outputs\), got shape \(3, 2\)"),
        (
            {"y": [[1.0, 2.0, 3.0], [1.0, 2.0], [1.0, 2.0, 3.0]], "p": [[1.0, 2.0, 3.0]] * 3},
            r"column 'y': row 1 holds 2 entries \[1.0, 2.0\]: multioutput target rows are lists of 3 values \(num_outputs=3\)$",
        ),
        (
            {"y": [[1.0, 2.0, 3.0], [1.0, 2.0, float("nan")], [0.0, 0.0, 0.0]], "p": [[1.0, 2.0, 3.0]] * 3},
            r"column 'y': invalid value nan at row 1, entry 2: targets must be finite",
        ),
        ({"y": [[1.0, 2.0, 3.0]] * 2, "p": [[1.0, "x", 3.0]] * 2}, r"column 'p': value 'x' at row 0, entry 1 is not a number"),
        ({"y": [1.0, 2.0], "p": [[1.0, 2.0, 3.0]] * 2}, r"column 'y': a multioutput regression task \(num_outputs=3\) reads \(N, 3\) target values"),
    ],
)
def test_bad_rows_raise_naming_column_value_and_row(cols, match):
    ev = Evaluation(label_col="y", prediction_col="p", num_outputs=3, metrics=["mse"])
    with pytest.raises((ValueError, TypeError), match=match):
        ev.evaluate([cols])


def test_bad_rows_are_skipped_and_counted_with_on_invalid_skip():
    y = np.array([[1.0, 2.0], [np.nan, 1.0], [3.0, 4.0]])
    p = np.array([[1.5, 2.0], [1.0, 1.0], [2.0, np.inf]])
    ev = Evaluation(label_col="y", prediction_col="p", num_outputs=2, metrics=["mse@multioutput=raw_values"], on_invalid="skip")
    r = ev.evaluate([{"y": y, "p": p}])
    assert r.overall.skipped == 2 and r.overall.n == 1
    np.testing.assert_allclose(r.overall.metrics["mse@multioutput=raw_values"], [0.25, 0.0])


@pytest.mark.parametrize("bad", [[5.0], [], [5.0, 6.0, 7.0]], ids=["short", "empty", "long"])
def test_a_row_of_another_length_is_skipped_and_counted_with_on_invalid_skip(bad):
    ev = Evaluation(label_col="y", prediction_col="p", num_outputs=2, metrics=["mse@multioutput=raw_values"], on_invalid="skip")
    r = ev.evaluate([{"y": [[1.0, 2.0], [3.0, 4.0], [5.0, 7.0]], "p": [[1.5, 2.0], [3.0, 4.5], bad]}])
    assert r.overall.skipped == 1 and r.overall.n == 2
    np.testing.assert_allclose(r.overall.metrics["mse@multioutput=raw_values"], [0.125, 0.125])


# rows of another length and null rows, on every input path: invalid per row (raise naming column, row, length and
# num_outputs; skip counts them, per slice too, and the other rows give scikit-learn's values)
_Y = [[1.0, 2.0], [3.0, 4.0], [5.0, 7.0], [0.0, 1.0], [2.0, 2.0], [4.0, 0.5]]
_P = [[1.5, 2.0], [3.0, 4.5], [5.0], [0.5, 1.0], None, [4.0, 0.0]]  # row 2: one entry; row 4: missing
_G = ["a", "a", "b", "b", "b", "a"]
_BAD = {2, 4}


def _skip_reference():
    keep = [i for i in range(len(_Y)) if i not in _BAD]
    y, p = np.array([_Y[i] for i in keep]), np.array([_P[i] for i in keep])
    g = np.array([_G[i] for i in keep])
    return y, p, g


def _inputs(kind, p_rows=None):
    _P = p_rows if p_rows is not None else globals()["_P"]  # noqa: N806
    import pandas as pd
    import pyarrow as pa

    if kind == "lists":
        return [{"y": _Y, "p": _P, "g": _G}]
    if kind == "object_array":
        p = np.empty(len(_P), dtype=object)
        for i, v in enumerate(_P):
            p[i] = None if v is None else np.array(v)
        return [{"y": np.array(_Y), "p": p, "g": np.array(_G)}]
    if kind == "pandas":
        return [pd.DataFrame({"y": _Y, "p": _P, "g": _G})]
    if kind == "arrow_list":
        return [pa.table({"y": pa.array(_Y, pa.list_(pa.float64())), "p": pa.array(_P, pa.list_(pa.float64())), "g": _G})]
    if kind == "arrow_batches":  # rows 0-1, 2-3, 4-5 in three record batches: row positions count across batches
        t = pa.table({"y": pa.array(_Y, pa.list_(pa.float64())), "p": pa.array(_P, pa.list_(pa.float64())), "g": _G})
        return t.to_batches(max_chunksize=2)
    if kind == "row_dicts":  # Beam's dict rows, batched
        return [[{"y": y, "p": p, "g": g} for y, p, g in zip(_Y, _P, _G)]]
    if kind == "lists_in_batches":
        return [{"y": _Y[i : i + 2], "p": _P[i : i + 2], "g": _G[i : i + 2]} for i in range(0, 6, 2)]
    raise AssertionError(kind)


_KINDS = ["lists", "object_array", "pandas", "arrow_list", "arrow_batches", "row_dicts", "lists_in_batches"]


@pytest.mark.parametrize("kind", _KINDS)
def test_rows_of_another_length_and_null_rows_are_skipped_per_row(kind):
    ev = Evaluation(
        label_col="y", prediction_col="p", num_outputs=2, slices=["g"], on_invalid="skip", metrics=["mse@multioutput=raw_values", "r2@multioutput=raw_values"]
    )
    r = ev.evaluate(_inputs(kind))
    y, p, g = _skip_reference()
    assert r.overall.skipped == 2 and r.overall.n == 4
    np.testing.assert_allclose(r.overall.metrics["mse@multioutput=raw_values"], M.mean_squared_error(y, p, multioutput="raw_values"), rtol=1e-12)
    np.testing.assert_allclose(r.overall.metrics["r2@multioutput=raw_values"], M.r2_score(y, p, multioutput="raw_values"), rtol=1e-12)
    for v in ("a", "b"):
        s = r[{"g": v}]
        assert (s.n, s.skipped) == ((3, 0) if v == "a" else (1, 2))
        np.testing.assert_allclose(s.metrics["mse@multioutput=raw_values"], M.mean_squared_error(y[g == v], p[g == v], multioutput="raw_values"), rtol=1e-12)


@pytest.mark.parametrize("kind", _KINDS)
def test_a_row_of_another_length_raises_naming_column_row_length_and_num_outputs(kind):
    ev = Evaluation(label_col="y", prediction_col="p", num_outputs=2, metrics=["mse"])
    with pytest.raises(
        ValueError,
        match=r"^column 'p': row 2 holds 1 entries \[5.0\]: multioutput prediction rows are lists of 2 values "
        r"\(num_outputs=2\)",
    ):
        ev.evaluate(_inputs(kind))


@pytest.mark.parametrize("kind", _KINDS)
def test_a_null_row_raises_naming_the_missing_value_and_its_row(kind):
    shown = "null" if kind.startswith("arrow") else "None"
    ev = Evaluation(label_col="y", prediction_col="p", num_outputs=2, metrics=["mse"])
    data = _inputs(kind, [v if i != 2 else [5.0, 6.0] for i, v in enumerate(_P)])  # the null row at 4 is the only bad one
    with pytest.raises(
        ValueError,
        match=rf"^column 'p': invalid value {shown} at row 4: multioutput prediction rows are lists of 2 values "
        r"\(num_outputs=2\)$",
    ):
        ev.evaluate(data)


def test_null_and_short_rows_in_arrow_fixed_size_lists_and_multioutput_collection():
    import pyarrow as pa

    y = pa.array(_Y, pa.list_(pa.float64(), 2))
    p = pa.array([v if i != 2 else [5.0, 6.0] for i, v in enumerate(_P)], pa.list_(pa.float64(), 2))  # row 4: null
    ev = Evaluation(label_col="y", prediction_col="p", num_outputs=2, on_invalid="skip", metrics=["mae@multioutput=raw_values"])
    r = ev.evaluate(pa.table({"y": y, "p": p}))
    keep = [0, 1, 2, 3, 5]
    pp = np.array([[5.0, 6.0] if i == 2 else _P[i] for i in keep])
    assert (r.overall.n, r.overall.skipped) == (5, 1)
    np.testing.assert_allclose(r.overall.metrics["mae@multioutput=raw_values"], M.mean_absolute_error(np.array(_Y)[keep], pp, multioutput="raw_values"))
    with pytest.raises(ValueError, match=r"column 'p': invalid value null at row 4: multioutput prediction rows"):
        Evaluation(label_col="y", prediction_col="p", num_outputs=2, metrics=["mse"]).evaluate(pa.table({"y": y, "p": p}))
    # a fixed-size list type of another width is the column's type, not a row: it raises in either mode
    with pytest.raises(ValueError, match=r"column 'p': multioutput prediction rows need 2 entries \(num_outputs\), got shape \(6, 3\)"):
        ev.evaluate(pa.table({"y": y, "p": pa.array([[1.0, 2.0, 3.0]] * 6, pa.list_(pa.float64(), 3))}))
    # MetricCollection.update (no skip mode) reads lists the same way
    with pytest.raises(ValueError, match=r"column 'y_pred': row 2 holds 1 entries \[5.0\]: multioutput prediction rows are lists of 2 values"):
        MetricCollection("mse", num_outputs=2).update(_Y, y_pred=_P)


def test_a_baseline_row_of_another_length_is_skipped_with_its_row():
    b = [[1.0, 2.5], [3.0, 4.0], [5.0, 6.0], [0.0], [2.0, 1.0], [4.0, 0.5]]  # row 3 of the baseline: one entry
    p = [v if v is not None and len(v) == 2 else [0.0, 0.0] for v in _P]
    ev = Evaluation(label_col="y", prediction_col="p", baseline_prediction_col="b", num_outputs=2, on_invalid="skip", metrics=["mse@multioutput=raw_values"])
    r = ev.evaluate({"y": _Y, "p": p, "b": b})
    keep = [0, 1, 2, 4, 5]
    assert (r.overall.n, r.overall.skipped) == (5, 1)
    want = M.mean_squared_error(np.array(_Y)[keep], np.array(p)[keep], multioutput="raw_values")
    np.testing.assert_allclose(r.overall.metrics["mse@multioutput=raw_values"], want, rtol=1e-12)
    with pytest.raises(ValueError, match=r"^column 'b': row 3 holds 1 entries \[0.0\]: multioutput prediction rows are lists of 2 values"):
        Evaluation(label_col="y", prediction_col="p", baseline_prediction_col="b", num_outputs=2, metrics=["mse"]).evaluate({"y": _Y, "p": p, "b": b})


def test_a_batch_of_only_null_or_short_rows_is_skipped_like_any_batch():
    import pyarrow as pa

    ev = Evaluation(label_col="y", prediction_col="p", num_outputs=2, on_invalid="skip", metrics=["mse@multioutput=raw_values"])
    batches = [
        {"y": [[1.0, 2.0]], "p": [None]},
        {"y": [[1.0, 2.0], [3.0, 3.0]], "p": [[1.0], []]},
        pa.table({"y": pa.array([[0.0, 1.0]]), "p": pa.array([None], pa.list_(pa.float64()))}),
        {"y": [[3.0, 4.0]], "p": [[2.0, 4.0]]},
    ]
    r = ev.evaluate(batches)
    assert (r.overall.n, r.overall.skipped) == (1, 4)
    np.testing.assert_allclose(r.overall.metrics["mse@multioutput=raw_values"], [1.0, 0.0])


def test_configuration_errors_name_the_setting():
    mc = MetricCollection("mse", task="regression")
    with pytest.raises(ValueError, match=r"column 'y_true': target values of shape \(3, 2\) are multioutput; set num_outputs=2"):
        mc.update(np.ones((3, 2)), y_pred=np.ones((3, 2)))
    with pytest.raises(TypeError, match=r"column 'y': expected a 1-D column, got shape \(3, 2\)"):
        Evaluation(label_col="y", prediction_col="p", task="regression", metrics=["mse"]).evaluate([{"y": np.ones((3, 2)), "p": np.ones((3, 2))}])
    for name in ("max_error", "mean_error", "pearson", "mean_poisson_deviance", "d2_tweedie_score"):
        with pytest.raises(ValueError, match=rf"metric {name!r} has no multioutput form.*num_outputs=2"):
            MetricCollection(name, num_outputs=2)
    with pytest.raises(ValueError, match="multioutput must be one of raw_values, uniform_average; got 'variance_weighted'"):
        MetricCollection("mse@multioutput=variance_weighted", num_outputs=2)
    with pytest.raises(ValueError, match="multioutput must be one of"):
        MetricCollection("r2@multioutput=mean", num_outputs=2)
    with pytest.raises(ValueError, match="num_outputs applies to regression tasks, not binary"):
        Task(num_outputs=2)
    with pytest.raises(ValueError, match="num_outputs"):
        Task(kind="regression", num_outputs=0)
    with pytest.raises(ValueError, match="num_outputs"):
        Evaluation(label_col="y", prediction_col="p", task=Task(kind="regression", num_outputs=2), num_outputs=3)


def test_config_round_trip_and_task_object():
    ev = Evaluation(label_col="y", prediction_col="p", num_outputs=4, metrics=["r2@multioutput=raw_values"])
    assert ev.to_config()["num_outputs"] == 4 and ev.plan.task.kind == "regression"
    again = Evaluation(**ev.to_config())
    assert again.fingerprint == ev.fingerprint and again.plan.task == ev.plan.task
    via_task = Evaluation(label_col="y", prediction_col="p", task=Task(kind="regression", num_outputs=4), metrics=["r2@multioutput=raw_values"])
    assert via_task.plan.task == ev.plan.task
    assert "num_outputs" not in Evaluation(label_col="y", prediction_col="p", task="regression").to_config()


def test_corrupted_multioutput_bytes_are_rejected_with_a_clear_error():
    y, p, w, _ = _data(12)
    for s in (RegressionMomentsState.from_batch(RegressionLayout(3), Batch(y, None, p, w)),
              RegressionTermsState.from_batch(RegressionTermsLayout(("sle",), 3), Batch(y, None, p, w))):  # fmt: skip
        blob = s.encode()
        for n in range(0, len(blob), 7):  # truncations
            with pytest.raises(ValueError):
                State.decode(blob[:n])
        # bytes whose layout says 2 outputs but whose fields hold 3 (checksum recomputed)
        import struct
        import zlib

        body = blob[:-4].replace(b'"num_outputs":3', b'"num_outputs":2')
        assert body != blob[:-4]
        with pytest.raises(ValueError, match="expected float64"):
            State.decode(body + struct.pack("<I", zlib.crc32(body)))
