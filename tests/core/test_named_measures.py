"""Named measures (issue 18): ``MeanMeasure(fn, name=)``, ``MetricCollection(measures=...)``,
``Evaluation(measure_cols=...)``: hand-computed values, per-sample and per-batch functions,
errors naming the measure, and the merge laws of the (M,) state."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mergeable_metrics import Evaluation, MetricCollection
from mergeable_metrics.inputs.validation import Batch
from mergeable_metrics.metrics.measure import MeanMeasure, MeanMeasureLayout, MeanMeasureState
from tests._helpers.sharding import fold_sharded


def _sq(y, p):
    return (np.asarray(y, float) - np.asarray(p, float)) ** 2


def test_per_sample_function_weighted_by_sample_weight():
    mc = MetricCollection(MeanMeasure(_sq, name="loss"), task="regression")
    mc.update([1.0, 2.0, 3.0], y_pred=[1.0, 0.0, 4.0], sample_weight=[1.0, 2.0, 1.0])  # (0, 4, 1)
    mc.update([0.0], y_pred=[3.0], sample_weight=[4.0])  # 9
    assert mc.compute() == {"loss": pytest.approx((0 + 8 + 1 + 36) / 8)}


def test_per_batch_function_weighted_by_batch_size():
    """A scalar per batch stands for every row: batches weighted by their size, not averaged."""
    mc = MetricCollection("accuracy", measures={"batch_error": lambda y, p: float(np.mean(np.asarray(y) != np.asarray(p)))})
    mc.update([0, 1, 1, 0], y_pred=[0, 1, 0, 0])  # 0.25 over 4 rows
    mc.update([1, 1], y_pred=[0, 0])  # 1.0 over 2 rows
    mc.update([], y_pred=[])  # an empty batch changes nothing
    got = mc.compute()
    assert got["batch_error"] == pytest.approx((0.25 * 4 + 1.0 * 2) / 6) and got["accuracy"] == pytest.approx(3 / 6)
    assert got["batch_error"] != pytest.approx((0.25 + 1.0) / 2)  # not the mean of batch values


def test_several_measures_given_as_values_and_functions():
    mc = MetricCollection("mae", task="regression", measures={"sq": _sq, "given": None})
    mc.update([1.0, 3.0], y_pred=[2.0, 3.0], measure={"given": [10.0, 20.0]})
    assert mc.compute() == {"mae": pytest.approx(0.5), "sq": pytest.approx(0.5), "given": pytest.approx(15.0)}
    with pytest.raises(ValueError, match="measure 'given' has no function"):
        mc.update([1.0], y_pred=[1.0])
    with pytest.raises(ValueError, match=r"unknown measure name\(s\) \['other'\]"):
        mc.update([1.0], y_pred=[1.0], measure={"given": [1.0], "other": [2.0]})
    with pytest.raises(ValueError, match=r"column 'given': invalid value nan at row 3"):  # rows count on from earlier updates
        mc.update([1.0, 2.0], y_pred=[1.0, 2.0], measure={"given": [1.0, float("nan")]})
    bad = MetricCollection(measures={"m": lambda y, p: np.zeros(3)}, task="regression")
    with pytest.raises(ValueError, match=r"measure 'm': the function returned shape \(3,\) for a batch of 2 rows"):
        bad.update([1.0, 2.0], y_pred=[1.0, 2.0])


def test_measures_alone_read_any_inputs():
    """With only measures, y_true / y_pred are the functions' inputs, not labels to validate."""
    mc = MetricCollection(measures={"sq": _sq})  # the default (binary) task
    mc.update([0.5, 2.0], y_pred=[1.0, 2.0])
    assert mc.compute() == {"sq": pytest.approx(0.125)}


def test_one_named_measure_takes_plain_values_and_merges():
    a, b = MetricCollection(measures=["loss"]), MetricCollection(measures=["loss"])
    a.update(measure=[1.0, 2.0])
    b.update(measure=[6.0])
    assert a.merge(b) is a and a.compute() == {"loss": 3.0} and b.compute() == {"loss": 6.0}
    other = MetricCollection(measures=["mae"])
    with pytest.raises(ValueError, match="names"):  # the layouts' measure names differ
        a.merge(other)
    c = MetricCollection(measures=["loss"])
    d = c.decode(a.encode())
    assert d.compute() == {"loss": 3.0} and np.isnan(c.compute()["loss"])  # c is left unchanged (no values: NaN)


def test_measure_configuration_errors():
    with pytest.raises(ValueError, match="cannot be combined with named measures"):
        MetricCollection("mean_measure", measures=["loss"])
    with pytest.raises(ValueError, match=r"'mae' is given to two metrics"):
        MetricCollection("mae", task="regression", measures=["mae"])
    with pytest.raises(ValueError, match="measure name must be"):
        MeanMeasure(name="a@b")
    with pytest.raises(TypeError, match="fn must be callable"):
        MeanMeasure(3, name="x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="measure_cols"):
        Evaluation(measure_cols={"a": ""})


def test_evaluation_measure_cols_per_slice_and_round_trip():
    data = {"y": [1, 0, 1, 1], "s": [0.9, 0.2, 0.4, 0.7], "l": [0.1, 0.2, 0.9, 0.3], "a": [1.0, 2.0, 3.0, 4.0], "g": ["a", "b", "a", "a"]}
    ev = Evaluation(label_col="y", score_col="s", measure_cols={"loss": "l", "mae": "a"}, slices=["g"], metrics=["accuracy"])
    res = ev.evaluate([data])
    assert res.overall.metrics == {"accuracy": 0.75, "loss": pytest.approx(0.375), "mae": 2.5}
    assert res[(("g", "a"),)].metrics["loss"] == pytest.approx(1.3 / 3) and res[(("g", "a"),)].metrics["mae"] == pytest.approx(8 / 3)
    assert Evaluation(**ev.to_config()).to_config() == ev.to_config()
    assert ev.fingerprint["measure_cols"] == {"loss": "l", "mae": "a"}
    only = Evaluation(measure_cols=["l", "a"])  # no labels: only the measures
    assert only.evaluate([data]).overall.metrics == {"l": pytest.approx(0.375), "a": 2.5}
    swapped = Evaluation(label_col="y", score_col="s", measure_cols={"loss": "a", "mae": "l"}, slices=["g"], metrics=["accuracy"])
    with pytest.raises(ValueError, match="measure_cols"):
        ev.merge(ev.fold(ev.zero(), data), swapped.fold(swapped.zero(), data))
    with pytest.raises(ValueError, match="column 'a': invalid value inf at row 1"):
        only.evaluate([{"l": [1.0, 2.0], "a": [1.0, float("inf")]}])


@settings(max_examples=30)
@given(
    rows=st.lists(st.tuples(st.integers(-100, 100), st.integers(-100, 100), st.sampled_from([0.0, 1.0, 3.0])), max_size=30),
    seed=st.integers(0, 2**32 - 1),
)
def test_named_state_merge_laws(rows, seed):
    """Integer values and weights are exact: any sharding (empty shards too) and merge tree
    equals one fold, and equals the direct weighted sums."""
    v = np.array([[a, b] for a, b, _ in rows], dtype=float).reshape(-1, 2)
    w = np.array([c for _, _, c in rows])
    lay = MeanMeasureLayout(("a", "b"))
    zero = MeanMeasureState.zero(lay)
    whole = zero.fold(Batch(None, None, None, w, v)) if rows else zero
    assert whole["total"].tolist() == pytest.approx((w[:, None] * v).sum(axis=0).tolist() if rows else [0.0, 0.0])
    folder = _StateFolder(zero)
    merged = fold_sharded(folder, {"w": w, "v": v}, np.random.default_rng(seed))
    assert merged == whole and merged.merge(zero) == merged
    assert MeanMeasureState.decode(merged.encode()) == merged


class _StateFolder:
    """A state kind as :func:`tests._helpers.sharding.fold_sharded` folds it."""

    def __init__(self, zero: MeanMeasureState):
        self._zero = zero

    def zero(self) -> MeanMeasureState:
        return self._zero

    def fold(self, s: MeanMeasureState, cols: dict) -> MeanMeasureState:
        return s.fold(Batch(None, None, None, cols["w"], cols["v"])) if len(cols["w"]) else s

    @staticmethod
    def merge(a: MeanMeasureState, b: MeanMeasureState) -> MeanMeasureState:
        return a.merge(b)
