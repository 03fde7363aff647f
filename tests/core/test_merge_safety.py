"""Merges and decodes check every setting that changes what states hold (issue 11, item 5), and
decoded states are valid and of the asked kind; collections are safe from several threads
(item 16).

Frames with a *valid* checksum are built by hand (tests/_helpers/frames.py), so these tests reach
the decoder's value checks, not just the CRC.
"""

from __future__ import annotations

import copy
import pickle
import threading

import numpy as np
import pytest

from mergeable_metrics import BinaryMetrics, Evaluation, MetricCollection
from mergeable_metrics.states import (
    BinaryConfusionLayout,
    BinaryConfusionState,
    ConfusionMatrixLayout,
    ConfusionMatrixState,
    ExampleCountLayout,
    ExampleCountState,
    State,
)
from mergeable_metrics.states.codec import layout_to_json, slice_key_to_json
from tests._helpers.frames import accumulator_frame, field, state_frame, state_with

pytestmark = pytest.mark.filterwarnings("ignore::mergeable_metrics.UndefinedMetricWarning")

ROWS = {"y": [1, 0, 1, 0, 1, 1], "s": [0.9, 0.2, 0.6, 0.7, 0.3, 0.8], "w": [1.0, 2.0, 0.5, 1.0, 3.0, 1.0], "g": list("aabbab")}


def folded(ev: Evaluation, rows: dict = ROWS):
    return ev.fold(ev.zero(), {c: rows[c] for c in ev.columns})


def frame(ev: Evaluation, slices: list, version: int) -> bytes:
    """An accumulator frame of ``ev`` (its fingerprint in version 2; version 1 has none)."""
    return accumulator_frame(slices, ev.fingerprint if version == 2 else None, version=version)


# -- settings outside the layouts ---------------------------------------------------------------
def test_ignore_index_zero_does_not_merge_with_none():
    a = MetricCollection("accuracy", num_classes=3, ignore_index=0)
    b = MetricCollection("accuracy", num_classes=3)
    for mc in (a, b):
        mc.update([0, 1, 2, 0], y_pred=[0, 1, 1, 2])
    with pytest.raises(ValueError, match="ignore_index 0 \\(here\\) != None"):
        a.merge(b)
    with pytest.raises(ValueError, match="ignore_index"):
        a.decode(b.encode())
    ea = Evaluation(label_col="y", prediction_col="p", num_classes=3, ignore_index=0)
    eb = Evaluation(label_col="y", prediction_col="p", num_classes=3)
    rows = {"y": [0, 1, 2, 0], "p": [0, 1, 1, 2]}
    acc_b = eb.fold(eb.zero(), rows)
    with pytest.raises(ValueError, match="ignore_index"):
        ea.merge(ea.fold(ea.zero(), rows), acc_b)
    with pytest.raises(ValueError, match="ignore_index"):
        ea.decode(eb.encode(acc_b))


def test_accumulators_of_different_slice_specs_do_not_merge():
    e1 = Evaluation(label_col="y", score_col="s", slices=["g"])
    e2 = Evaluation(label_col="y", score_col="s", slices=["g;min_slice_size=2"])
    a1, a2 = folded(e1), folded(e2)
    with pytest.raises(ValueError, match="slices"):
        e1.merge(a1, a2)
    with pytest.raises(ValueError, match="slices"):
        e1.decode(e2.encode(a2))
    # a slice key outside the specs (e.g. from a v1 frame, which has no fingerprint) is rejected too
    z = e1.plan.zero()
    v1 = accumulator_frame([("[]", [s.encode() for s in z]), (slice_key_to_json((("h", "x"),)), [s.encode() for s in z])], version=1)
    with pytest.raises(ValueError, match="not a slice of this evaluation"):
        e1.decode(v1)


def test_weighted_and_unweighted_accumulators_do_not_merge():
    unweighted = Evaluation(label_col="y", score_col="s", slices=["g"])
    weighted = Evaluation(label_col="y", score_col="s", weight_col="w", slices=["g"])
    au, aw = folded(unweighted), folded(weighted)
    with pytest.raises(ValueError, match="weight_col None \\(here\\) != 'w'"):
        unweighted.merge(au, aw)
    with pytest.raises(ValueError, match="weight_col"):
        unweighted.merge(unweighted.zero(), aw)
    with pytest.raises(ValueError, match="weight_col"):
        unweighted.decode(weighted.encode(aw))
    with pytest.raises(ValueError, match="weight_col"):
        weighted.slice_codec.decode(unweighted.slice_codec.encode(au[()]))
    with pytest.raises(ValueError, match="weight_col"):
        unweighted.finish(aw)


@pytest.mark.parametrize("version", [1, 2])
def test_unweighted_decode_rejects_fractional_counts(version):
    ev = Evaluation(label_col="y", score_col="s")
    z = ev.plan.zero()
    half = BinaryConfusionState(z[1].layout, {n: np.array([0.5]) for n in ("tp", "fp", "tn", "fn")})
    count = ExampleCountState(ExampleCountLayout(), {"count": np.int64(2), "weight": np.float64(2.0), "skipped": np.int64(0)})
    blob = frame(ev, [("[]", [count.encode(), half.encode()])], version)
    with pytest.raises(ValueError, match="tp.*0.5.*whole number"):
        ev.decode(blob)
    weighted = Evaluation(label_col="y", score_col="s", weight_col="w")
    back = weighted.decode(frame(weighted, [("[]", [count.encode(), half.encode()])], version))
    assert back[()][1] == half  # weighted sums may be fractional


def _profiled(values):
    ev = Evaluation(label_col="y", score_col="s", slices=["g;max_slices=1"])
    rows = {**ROWS, "g": values}
    return ev, ev.with_profile(ev.profiler().profile([{"g": rows["g"]}])), rows


def test_max_slices_accumulators_of_different_profiles_do_not_merge():
    ev, pa, rows_a = _profiled(list("aaabbc"))  # keeps "a"
    _, pb, rows_b = _profiled(list("abbbcc"))  # keeps "b"
    acc_a, acc_b = folded(pa, rows_a), folded(pb, rows_b)
    with pytest.raises(ValueError, match="profile"):
        pa.merge(acc_a, acc_b)
    with pytest.raises(ValueError, match="profile"):
        pa.decode(pb.encode(acc_b))
    # the unprofiled evaluation (which engines merge with) takes one profile, never two
    merged = ev.merge(ev.zero(), ev.decode(pa.encode(acc_a)))
    assert merged.fingerprint == pa.fingerprint
    with pytest.raises(ValueError, match="profile"):
        ev.merge(merged, ev.decode(pb.encode(acc_b)))
    # the same profile merges
    again = folded(pa, rows_a)
    assert pa.merge(again, acc_a)[()][0]["count"] == 12


# -- crafted frames with a valid checksum ---------------------------------------------------------
def binary_state() -> BinaryConfusionState:
    return BinaryConfusionState(BinaryConfusionLayout((0.5,)), {n: np.array([v]) for n, v in zip(("tp", "fp", "tn", "fn"), (3.0, 1.0, 2.0, 0.0))})


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf"), -float("inf")])
def test_valid_checksum_frames_with_negative_nan_or_inf_counts_are_rejected(bad):
    s = binary_state()
    # rejected by the exact-sum check of the constructor (non-finite) or by validate (negative)
    with pytest.raises(ValueError, match=r"binary_confusion(\.| state: )fp"):
        State.decode(state_with(s, fp=np.array([bad])))
    m = ConfusionMatrixState(ConfusionMatrixLayout(2), {"matrix": np.ones((2, 2))})
    with pytest.raises(ValueError, match=r"confusion_matrix(\.matrix: exact sum: value .* at position 2| state: matrix\[1, 0\])"):
        State.decode(state_with(m, matrix=np.array([[1.0, 1.0], [bad, 1.0]])))
    c = ExampleCountState.zero(ExampleCountLayout())
    with pytest.raises(ValueError, match=r"(invalid example_count state|example_count\.weight: exact sum)"):
        State.decode(state_with(c, weight=np.float64(bad)))
    with pytest.raises(ValueError, match="count = -3"):
        State.decode(state_with(c, count=np.int64(-3)))


@pytest.mark.parametrize("version", [1, 2])
def test_duplicate_slice_keys_are_rejected(version):
    ev = Evaluation(label_col="y", score_col="s", slices=["g"])
    acc = folded(ev)
    good = [s.encode() for s in acc[(("g", "a"),)]]
    other = [s.encode() for s in acc[(("g", "b"),)]]
    overall = [s.encode() for s in acc[()]]
    key = slice_key_to_json((("g", "a"),))
    blob = frame(ev, [("[]", overall), (key, good), (key, other)], version)
    with pytest.raises(ValueError, match="appears twice"):
        ev.decode(blob)


@pytest.mark.parametrize("version", [1, 2])
def test_accumulator_without_overall_slice_is_rejected(version):
    ev = Evaluation(label_col="y", score_col="s", slices=["g"])
    acc = folded(ev)
    blob = frame(ev, [(slice_key_to_json((("g", "a"),)), [s.encode() for s in acc[(("g", "a"),)]])], version)
    with pytest.raises(ValueError, match="overall slice is missing"):
        ev.decode(blob)


def test_binary_confusion_decode_rejects_other_kinds():
    m = ConfusionMatrixState(ConfusionMatrixLayout(3), {"matrix": np.ones((3, 3))})
    with pytest.raises(TypeError, match="'confusion_matrix' state, not 'binary_confusion'"):
        BinaryConfusionState.decode(m.encode())
    assert type(ConfusionMatrixState.decode(m.encode())) is ConfusionMatrixState
    assert State.decode(m.encode()) == m
    from mergeable_metrics.states.score_distribution import Class0ScoreDistributionState, ScoreDistributionLayout, ScoreDistributionState

    c0 = Class0ScoreDistributionState.zero(ScoreDistributionLayout(8))
    with pytest.raises(TypeError, match="score_distribution_class0"):
        ScoreDistributionState.decode(c0.encode())


def test_non_canonical_layouts_are_rejected():
    from mergeable_metrics.metrics.calibration import CalibrationBinsLayout, CalibrationBinsState

    s = CalibrationBinsState.zero(CalibrationBinsLayout((2,)))
    fields = [field(n, s.arrays[n]) for n, _ in s.FIELDS]
    with pytest.raises(ValueError, match="bins.*(not canonical|must be an integer)"):  # the layout check or the round trip
        State.decode(state_frame(s.kind, '{"bins":[2.5]}', fields))
    for text in ('{"bins":[[2]]}', '{"bins":[2],"extra":1}', "[" * 100_000, '{"bins":[Infinity]}', '"x"'):
        with pytest.raises(ValueError):
            State.decode(state_frame(s.kind, text, fields))


def test_foreign_state_tuples_are_not_states():
    ev = Evaluation(label_col="y", score_col="s")
    with pytest.raises(TypeError, match="as a state"):
        ev.plan.merge(ev.plan.zero(), (1, 2))


# -- concurrency ------------------------------------------------------------------------------------
@pytest.mark.parametrize("make", [lambda: MetricCollection("tp", "accuracy"), lambda: BinaryMetrics()])
def test_concurrent_updates_and_merges_lose_no_rows(make):
    mc = make()
    y = np.ones(1000, dtype=np.int64)
    s = np.full(1000, 0.9)
    other = make()
    other.update(y, y_score=s)
    start = threading.Barrier(5)

    def work(i: int) -> None:
        start.wait()
        for j in range(200):
            if i == 0 and j % 50 == 0:  # merge: in place
                mc.merge(other)
            elif isinstance(mc, BinaryMetrics):
                mc.update(y, s)
            else:
                mc.update(y, y_score=s)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # 4 updating threads x 200 batches + thread 0: 4 merges of 1,000 and 196 batches
    expected = 4 * 200 * 1000 + 4 * 1000 + 196 * 1000
    assert mc.compute()["tp"] == expected
    assert int(mc.states[0]["count"]) == expected and mc._rows == expected


def test_collections_with_a_lock_still_copy_deepcopy_and_pickle():
    mc = MetricCollection("f1", "accuracy")
    mc.update([1, 0, 1], y_score=[0.9, 0.1, 0.3])
    for clone in (copy.copy(mc), copy.deepcopy(mc), pickle.loads(pickle.dumps(mc))):
        assert clone.states == mc.states and clone._lock is not mc._lock
        clone.update([1], y_score=[0.9])
        assert clone.compute() != mc.compute()
    assert mc.compute()["accuracy"] == pytest.approx(2 / 3)


def test_field_with_dtype_code_zero_is_rejected():
    """``np.dtype(None)`` is float64, so an unknown dtype code 0 once passed the dtype check."""
    s = binary_state()
    fields = [field(n, s.arrays[n], code=0 if n == "tp" else None) for n, _ in s.FIELDS]
    with pytest.raises(ValueError, match="dtype code 0"):
        State.decode(state_frame(s.kind, layout_to_json(s.layout), fields))


def test_slice_profile_with_overflowing_or_negative_counts_is_rejected():
    from mergeable_metrics.evaluation.profile import SliceProfile, SliceProfiler, ValueSketch

    p = SliceProfiler(["x:quantiles=2", "g;max_slices=1"])
    prof = p.fold(p.zero(), {"x": [0.5, 1.5, 2.5], "g": ["a", "b", "a"]})
    sk = prof.parts["values x"]
    huge = SliceProfile({**prof.parts, "values x": ValueSketch(sk.capacity, 0, sk.keys, np.array([2**62, 1, 1]))})
    with pytest.raises(ValueError, match="overflow"):
        p.decode(huge.encode())
    kc = prof.parts["keys g;max_slices=1"]
    kc.counts = np.array([-1, 1])
    with pytest.raises(ValueError, match="counts must be > 0"):
        p.decode(prof.encode())


def test_finish_of_a_plain_mapping_of_states_of_another_configuration_raises_naming_the_setting():
    # a mapping has no fingerprint: 4-class states were computed as if they were the 3-class plan's
    ev3 = Evaluation(label_col="y", prediction_col="p", num_classes=3, metrics=["accuracy", "f1@none"])
    ev4 = Evaluation(label_col="y", prediction_col="p", num_classes=4, metrics=["accuracy", "f1@none"])
    other = dict(ev4.fold(ev4.zero(), {"y": [0, 1, 3], "p": [0, 1, 1]}).items())
    with pytest.raises(ValueError, match=r"finish: slice 'Overall': confusion_matrix states of another configuration: different num_classes 3 != 4"):
        ev3.finish(other)
    reg = Evaluation(label_col="y", prediction_col="p", task="regression", metrics=["mse"])
    with pytest.raises(ValueError, match=r"finish: slice 'Overall': states of kinds \['example_count', 'regression_moments'\]"):
        ev3.finish(dict(reg.fold(reg.zero(), {"y": [0.0, 1.0], "p": [0.0, 1.0]}).items()))
    own = dict(ev3.fold(ev3.zero(), {"y": [0, 1, 2], "p": [0, 1, 1]}).items())
    assert ev3.finish(own).overall.metrics["accuracy"] == 2 / 3


@pytest.mark.parametrize("weighted", [False, True])
def test_update_that_loses_a_race_merges_its_batch_and_keeps_the_other_threads_rows(weighted):
    # update folds a batch into the running states outside the lock and keeps the result only if
    # no other update or merge came in between; otherwise it merges the batch's own states
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(7)
    y = rng.integers(0, 2, 3000)
    s = rng.random(3000).round(3)
    w = rng.random(3000) if weighted else None
    parts = [slice(0, 1000), slice(1000, 2000), slice(2000, 3000)]

    def batch(mc, sl):
        mc.update(y[sl], y_score=s[sl], sample_weight=None if w is None else w[sl])

    serial = MetricCollection("roc_auc", "tp")
    for sl in parts:
        batch(serial, sl)
    other = MetricCollection("roc_auc", "tp")
    batch(other, parts[2])
    mc = MetricCollection("roc_auc", "tp")
    batch(mc, parts[0])
    fold = mc.plan.fold
    raced = []

    def fold_while_another_thread_merges(states, b):
        out = fold(states, b)
        if not raced and states is not mc.plan.zero() and any(x is not z for x, z in zip(states, mc.plan.zero())):
            raced.append(True)
            mc.merge(other)  # lands between the read and the commit
        return out

    mc.plan.fold = fold_while_another_thread_merges
    batch(mc, parts[1])
    assert raced
    assert mc._rows == 3000
    assert [x.encode() for x in mc.states] == [x.encode() for x in serial.states]
    assert mc.compute()["roc_auc"] == pytest.approx(roc_auc_score(y, s, sample_weight=w), rel=1e-12)
