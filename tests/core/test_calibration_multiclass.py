"""Multiclass calibration (issue 17): top-label ECE / MCE as torchmetrics'
``MulticlassCalibrationError``, one-vs-rest per class (``@none``) and classwise (``@macro``)
errors, per-class and top-label reliability diagrams; the class axis of the calibration-bins
state (merge laws, codec, kind version 1 bytes, settings named on mismatch).

References: a numpy transcription of torchmetrics' ``_binning_bucketize`` / ``_ce_compute``
(src/torchmetrics/functional/classification/calibration_error.py, commit dab0333 of
Lightning-AI/torchmetrics; torch itself is not installed here), with its edges ``i/B`` correctly
rounded instead of a float ``linspace``; ``sklearn.calibration.calibration_curve``; hand counts.
"""

from __future__ import annotations

import struct
import warnings
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.calibration import calibration_curve

from mergeable_metrics import Evaluation, MetricCollection
from mergeable_metrics.states import State
from mergeable_metrics.inputs.validation import Batch
from mergeable_metrics.metrics.calibration import CalibrationBinsLayout, CalibrationBinsState
from tests._helpers.sharding import StateFolder, fold_sharded
from tests._helpers.calibration_ref import tm_calibration_error

pytestmark = pytest.mark.filterwarnings("ignore::mergeable_metrics.UndefinedMetricWarning")


def _data(n=400, k=4, seed=0, weighted=False):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    P = rng.dirichlet(np.full(k, 0.6), n)
    P = 0.5 * P + 0.5 * np.eye(k)[np.where(rng.random(n) < 0.6, y, rng.integers(0, k, n))]  # informative
    P[:7] = np.eye(k)[y[:7]]  # confidence exactly 1.0 (correct)
    P[7:10] = np.eye(k)[(y[7:10] + 1) % k]  # confidence exactly 1.0 (wrong)
    w = rng.integers(0, 4, n).astype(float) * 0.5 if weighted else None
    return y, P, w


def _compute(metrics, y, P, w=None, k=None, chunks=1):
    mc = MetricCollection(*metrics, num_classes=k or P.shape[1], multiclass=True)
    for idx in np.array_split(np.arange(len(y)), chunks):
        mc.update(y[idx], y_score=P[idx], sample_weight=None if w is None else w[idx])
    return mc.compute()


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("n_bins", [1, 5, 10, 15])
def test_top_label_ece_and_mce_equal_torchmetrics(weighted, n_bins):
    y, P, w = _data(weighted=weighted)
    r = _compute([f"ece@n_bins={n_bins}", f"mce@n_bins={n_bins}"], y, P, w, chunks=3)
    conf, correct = P.max(axis=1), P.argmax(axis=1) == y
    assert r[f"ece@n_bins={n_bins}"] == pytest.approx(tm_calibration_error(conf, correct, n_bins, "l1", w), rel=1e-12, abs=1e-15)
    assert r[f"mce@n_bins={n_bins}"] == pytest.approx(tm_calibration_error(conf, correct, n_bins, "max", w), rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
def test_per_class_and_classwise_errors_are_one_vs_rest(weighted):
    y, P, w = _data(k=3, seed=2, weighted=weighted)
    r = _compute(["ece@none", "ece@macro", "mce@none", "mce@macro"], y, P, w)
    ece = [tm_calibration_error(P[:, c], y == c, 10, "l1", w) for c in range(3)]
    mce = [tm_calibration_error(P[:, c], y == c, 10, "max", w) for c in range(3)]
    np.testing.assert_allclose(r["ece@none"], ece, rtol=1e-12)
    np.testing.assert_allclose(r["mce@none"], mce, rtol=1e-12)
    assert r["ece@macro"] == pytest.approx(np.mean(ece), rel=1e-12)
    assert r["mce@macro"] == pytest.approx(np.mean(mce), rel=1e-12)


def test_hand_computed_top_label_with_confidence_one_in_its_own_bin():
    # 2 bins. Rows: conf 0.6 correct, conf 0.8 wrong, conf 1.0 correct, conf 1.0 wrong.
    # torchmetrics' bins: [0, .5), [.5, 1), {1}: bin [.5, 1) holds 0.6 (acc 1) and 0.8 (acc 0):
    # |0.5 - 0.7| * 2/4 = 0.1; bin {1}: |0.5 - 1| * 2/4 = 0.25. ECE 0.35, MCE 0.5.
    # (One closed last bin would give |2/4 - 3.4/4| = 0.35 * ... : |0.5 - 0.85| * 4/4 = 0.35 too,
    # but MCE 0.35: the bin of 1.0 is what makes MCE 0.5.)
    P = np.array([[0.6, 0.4, 0.0], [0.2, 0.8, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    y = np.array([0, 0, 2, 1])
    r = _compute(["ece@n_bins=2", "mce@n_bins=2", "reliability_diagram@n_bins=2"], y, P)
    assert r["ece@n_bins=2"] == pytest.approx(0.35, abs=1e-15)
    assert r["mce@n_bins=2"] == pytest.approx(0.5, abs=1e-15)
    top = r["reliability_diagram@n_bins=2"][3]  # the top-label row: 1.0 joins the closed last bin
    np.testing.assert_allclose(top[0], [0.0, np.nan, np.nan])
    np.testing.assert_allclose(top[1], [4.0, 3.4 / 4, 0.5])


def test_hand_computed_underconfident_last_bin_differs_from_a_closed_last_bin():
    # conf 0.95 correct (twice) and 1.0 wrong: bins [.5, 1) and {1}:
    # |1 - 0.95| * 2/3 + |0 - 1| * 1/3 = 0.1/3 + 1/3; a closed last bin would give |2 - 2.9| / 3.
    P = np.array([[0.95, 0.05], [0.05, 0.95], [1.0, 0.0]])
    y = np.array([0, 1, 1])
    r = _compute(["ece@n_bins=2"], y, P, k=2)
    assert r["ece@n_bins=2"] == pytest.approx(1.1 / 3, rel=1e-14)
    assert r["ece@n_bins=2"] != pytest.approx(0.9 / 3)


@pytest.mark.parametrize("n_bins", [3, 10])
def test_reliability_diagram_rows_equal_sklearn_calibration_curve(n_bins):
    y, P, _ = _data(k=4, seed=5)
    d = _compute([f"reliability_diagram@n_bins={n_bins}"], y, P, chunks=4)[f"reliability_diagram@n_bins={n_bins}"]
    assert d.shape == (5, n_bins, 3)
    for c in range(4):
        prob_true, prob_pred = calibration_curve(y == c, P[:, c], n_bins=n_bins, strategy="uniform")
        ok = d[c, :, 0] > 0
        np.testing.assert_allclose(d[c, ok, 2], prob_true, rtol=1e-12)
        np.testing.assert_allclose(d[c, ok, 1], prob_pred, rtol=1e-12)
        assert d[c, :, 0].sum() == len(y)
    prob_true, prob_pred = calibration_curve(P.argmax(axis=1) == y, P.max(axis=1), n_bins=n_bins)
    ok = d[4, :, 0] > 0
    np.testing.assert_allclose(d[4, ok, 2], prob_true, rtol=1e-12)
    np.testing.assert_allclose(d[4, ok, 1], prob_pred, rtol=1e-12)


def test_sorted_inputs_empty_batches_and_empty_data():
    y, P, w = _data(seed=9, weighted=True)
    order = np.argsort(P.max(axis=1))
    metrics = ["ece", "mce@none", "reliability_diagram@n_bins=4"]
    want = _compute(metrics, y, P, w)
    mc = MetricCollection(*metrics, num_classes=4)
    mc.update(np.zeros(0, dtype=int), y_score=np.zeros((0, 4)), sample_weight=np.zeros(0))
    for idx in np.array_split(order, 5):
        mc.update(y[idx], y_score=P[idx], sample_weight=w[idx])
    got = mc.compute()
    for m in metrics:
        np.testing.assert_array_equal(got[m], want[m])  # exact sums: bit for bit in any order
    empty = MetricCollection(*metrics, num_classes=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e = empty.compute()
    assert np.isnan(e["ece"]) and np.isnan(e["mce@none"]).all() and e["mce@none"].shape == (4,)
    assert (e["reliability_diagram@n_bins=4"][..., 0] == 0).all()


def test_keys_settings_and_errors():
    mc = MetricCollection("ece", "ece@top_label", "ece@none", "ece@macro", num_classes=3)
    assert list(mc.compute()) == ["ece", "ece@none", "ece@macro"]  # top_label is the default: key "ece"
    assert mc.resolved_names["ece@top_label"] == "ece"
    with pytest.raises(ValueError, match="average applies to multiclass tasks only"):
        MetricCollection("ece@macro")
    with pytest.raises(ValueError, match="average must be one of"):
        MetricCollection("mce@weighted", num_classes=3)
    with pytest.raises(ValueError, match="average does not apply"):
        MetricCollection("reliability_diagram@macro", num_classes=3)
    with pytest.raises(ValueError, match="n_bins=100000 with num_classes=5000"):
        MetricCollection("ece@n_bins=100000", num_classes=5000)
    with pytest.raises(ValueError, match="num_classes must be 0"):
        CalibrationBinsLayout((10,), 1)


def test_merging_or_decoding_another_configuration_names_the_setting():
    a = CalibrationBinsState.zero(CalibrationBinsLayout((10,), 3))
    with pytest.raises(ValueError, match="num_classes 3 != 4"):
        a.merge(CalibrationBinsState.zero(CalibrationBinsLayout((10,), 4)))
    with pytest.raises(ValueError, match="num_classes 3 != 0"):
        a.merge(CalibrationBinsState.zero(CalibrationBinsLayout((10,))))
    ev3 = Evaluation(label_col="y", score_col="p", num_classes=3, metrics=["ece"])
    ev4 = Evaluation(label_col="y", score_col="p", num_classes=4, metrics=["ece"])
    blob = ev3.encode(ev3.zero())
    with pytest.raises(ValueError, match="num_classes"):
        ev4.decode(blob)


def _as_kind_version_1(blob: bytes) -> bytes:
    (n,) = struct.unpack("<H", blob[4:6])
    b = bytearray(blob[:-4])
    assert b[6 + n] == CalibrationBinsState.VERSION == 2
    b[6 + n] = 1
    return bytes(b) + struct.pack("<I", zlib.crc32(bytes(b)))


def test_kind_version_1_bytes_are_binary_layouts_and_still_decode():
    binary = CalibrationBinsState.from_batch(CalibrationBinsLayout((4, 10)), Batch(np.array([1, 0, 1]), np.array([0.9, 0.3, 1.0]), None, None))
    assert State.decode(_as_kind_version_1(binary.encode())) == binary
    multi = CalibrationBinsState.zero(CalibrationBinsLayout((10,), 3))
    with pytest.raises(ValueError, match="kind version 1 cannot be upgraded to version 2"):
        State.decode(_as_kind_version_1(multi.encode()))


DYADIC = [0.0, 0.125, 0.25, 0.5, 0.75, 1.0]
K = 3
ROWS = st.lists(
    st.tuples(st.integers(0, K - 1), st.lists(st.sampled_from(DYADIC), min_size=K, max_size=K), st.sampled_from([0.0, 0.5, 1.0, 3.0, 1e-3])),
    max_size=40,
)


def _batch(y, S, w, idx, weighted):
    P = S[idx] / np.where(S[idx].sum(axis=1, keepdims=True) > 0, S[idx].sum(axis=1, keepdims=True), 1.0)
    return Batch(y[idx], P, None, w[idx] if weighted else None)


@settings(max_examples=40)
@given(data=ROWS, seed=st.integers(0, 2**32 - 1), weighted=st.booleans())
def test_multiclass_bins_merge_laws_and_grouped_fold(data, seed, weighted):
    """Any sharding (empty shards too) and merge tree equals one fold bit for bit; the grouped
    fold (one pass over all groups) equals each group's own fold; the codec round-trips."""
    layout = CalibrationBinsLayout((2, 5), K)
    y = np.array([d[0] for d in data], dtype=np.int64)
    S = np.array([d[1] for d in data], dtype=np.float64).reshape(-1, K)
    w = np.array([d[2] for d in data])
    zero = CalibrationBinsState.zero(layout)
    full = _batch(y, S, w, np.arange(len(data)), weighted)
    whole = zero.fold(full)
    rng = np.random.default_rng(seed)
    columns = {"y_true": full.y_true, "y_score": full.y_score, "sample_weight": full.sample_weight}
    merged = fold_sharded(StateFolder(CalibrationBinsState, layout, num_classes=K), columns, rng)
    assert merged == whole and merged.encode() == whole.encode()
    assert merged.merge(zero) == merged == zero.merge(merged)
    half = len(data) // 2
    a, b = zero.fold(_batch(y, S, w, np.arange(half), weighted)), zero.fold(_batch(y, S, w, np.arange(half, len(data)), weighted))
    assert a.merge(b) == b.merge(a) == whole
    assert State.decode(merged.encode()) == merged
    groups = rng.integers(0, 3, len(data))
    fields = CalibrationBinsState.grouped_fields(layout, _batch(y, S, w, np.arange(len(data)), weighted), groups, 3)
    for g in range(3):
        one = zero.fold(_batch(y, S, w, np.flatnonzero(groups == g), weighted))
        for name, _ in CalibrationBinsState.FIELDS:
            got = fields[name]
            got = got.values if hasattr(got, "values") else got
            np.testing.assert_array_equal(np.asarray(got)[g], one[name])


def test_sliced_evaluation_and_bootstrap_intervals_for_multiclass_calibration():
    y, P, w = _data(n=300, k=3, seed=4, weighted=True)
    g = np.where(np.arange(300) % 3 == 0, "a", "b")
    cols = {"y": y, "p": list(P), "w": w, "g": g}
    ev = Evaluation(label_col="y", score_col="p", weight_col="w", num_classes=3, slices="g",
                    metrics=["ece", "ece@macro", "mce@none", "reliability_diagram@n_bins=4"], ci="bootstrap", ci_replicates=50)  # fmt: skip
    res = ev.finish(ev.fold(ev.zero(), cols))
    a = next(s for s in res.slices if s.slice == (("g", "a"),))
    m = g == "a"
    assert a.metrics["ece"] == pytest.approx(tm_calibration_error(P[m].max(1), P[m].argmax(1) == y[m], 10, "l1", w[m]), rel=1e-12)
    lo, hi = res.overall.ci["ece"]
    assert lo <= res.overall.metrics["ece"] <= hi and lo < hi
    lo, hi = res.overall.ci["mce@none"]
    assert lo.shape == hi.shape == (3,) and (lo <= hi).all()
