"""Monoid laws of every state kind, of Plans, MetricCollections and sliced Evaluation accumulators.

Laws (hypothesis):
    * identity: ``merge(zero, s) == s == merge(s, zero)`` (also byte-identical encodings);
    * commutativity: ``merge(a, b) == merge(b, a)`` exactly (float addition commutes);
    * associativity: exact, also with float weights (float sums are exact, mergeable_metrics._util.exact);
    * split invariance: any sharding (including empty shards and empty batches) merged along any
      binary tree gives the state of one fold bit for bit (``==`` and byte-identical encodings),
      with integer-valued and with arbitrary float weights;
    * encode/decode round trip: equal states and byte-identical re-encodings.

Merging different layouts (thresholds, threshold_rule, num_classes) raises ``ValueError`` naming
the setting.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from mergeable_metrics import BinaryMetrics, Evaluation, MetricCollection
from mergeable_metrics.engine import Plan
from mergeable_metrics.metrics import Task
from mergeable_metrics.states import (
    BinaryConfusionLayout,
    BinaryConfusionState,
    ConfusionMatrixLayout,
    ConfusionMatrixState,
    ExampleCountLayout,
    ExampleCountState,
    State,
)
from mergeable_metrics.inputs.validation import Batch
from mergeable_metrics.inputs.formats import make_batch
from tests._helpers import (
    CollectionFolder,
    EvaluationFolder,
    PlanFolder,
    StateFolder,
    assert_states_equal,
    fold_all,
    fold_sharded,
    merge_tree,
)
from tests._helpers.strategies import binary_batches, multiclass_batches, sliced_rows

# NaN results (an undefined metric) are expected in these tests; their warnings are noise here.
pytestmark = pytest.mark.filterwarnings("ignore::mergeable_metrics.UndefinedMetricWarning")


REL = 1e-12
SEEDS = st.integers(0, 2**32 - 1)
THRESHOLD_CHOICES = (0.0, 0.25, 0.5, 0.75, 1.0)


@dataclass
class World:
    """One accumulator API under test: a folder, a strategy for batches, and its codec."""

    folder: Any
    batches: st.SearchStrategy
    encode: Callable[[Any], bytes]
    decode: Callable[[bytes], Any]


def _state_codec():
    return (lambda s: s.encode()), State.decode


def _binary_cols(weight_kind: str | None, hard: bool) -> st.SearchStrategy:
    def to_cols(b: dict) -> dict:
        if hard:  # hard predictions instead of scores
            return {"y_true": b["y_true"], "y_pred": (b["y_score"] >= 0.5).astype(np.int64), "sample_weight": b["sample_weight"]}
        return b

    return binary_batches(max_size=30, weight_kind=weight_kind).map(to_cols)


def draw_world(data: Any, kind: str, weight_kind: str | None) -> World:
    """Draw a configuration of ``kind`` and return its World."""
    if kind == "example_count":
        enc, dec = _state_codec()
        return World(StateFolder(ExampleCountState, ExampleCountLayout()), _binary_cols(weight_kind, False), enc, dec)
    if kind == "binary_confusion":
        thr = sorted(data.draw(st.lists(st.sampled_from(THRESHOLD_CHOICES), min_size=1, max_size=4, unique=True), label="thresholds"))
        rule = data.draw(st.sampled_from([">=", ">"]), label="rule")
        hard = data.draw(st.booleans(), label="hard predictions")
        enc, dec = _state_codec()
        layout = BinaryConfusionLayout(tuple(thr), rule)
        return World(StateFolder(BinaryConfusionState, layout), _binary_cols(weight_kind, hard), enc, dec)
    if kind == "confusion_matrix":
        k = data.draw(st.integers(2, 5), label="K")
        enc, dec = _state_codec()
        cols = multiclass_batches(num_classes=k, max_size=30, weight_kind=weight_kind)
        return World(StateFolder(ConfusionMatrixState, ConfusionMatrixLayout(k), k), cols, enc, dec)
    if kind == "plan_binary":
        rule = data.draw(st.sampled_from([">=", ">"]), label="rule")
        plan = Plan(["f1@threshold=0.25", "accuracy", "tp@threshold=0.75", "confusion_matrix"], Task(threshold_rule=rule))
        return World(PlanFolder(plan), _binary_cols(weight_kind, False), plan.encode, plan.decode)
    if kind == "plan_multiclass":
        k = data.draw(st.integers(2, 5), label="K")
        plan = Plan(None, Task(num_classes=k, multiclass=True))
        return World(PlanFolder(plan), multiclass_batches(num_classes=k, max_size=30, weight_kind=weight_kind), plan.encode, plan.decode)
    if kind == "collection":
        factory = lambda: MetricCollection("precision", "recall@threshold=0.25", "accuracy")  # noqa: E731
        return World(CollectionFolder(factory), _binary_cols(weight_kind, False), lambda mc: mc.encode(), lambda b: factory().decode(b))
    if kind in ("evaluation", "evaluation_multiclass"):
        on_invalid = data.draw(st.sampled_from(["raise", "skip"]), label="on_invalid")
        wk = weight_kind or data.draw(st.sampled_from(["none", "int", "float"]), label="weight kind")
        k = None if kind == "evaluation" else 3
        ev = Evaluation(
            label_col="y_true",
            score_col="y_score" if k is None else None,
            prediction_col="y_pred" if k else None,
            weight_col=None if wk == "none" else "sample_weight",
            slices=["g", "g,h"] if k is None else ["h", "g,h"],
            metrics=["accuracy", "f1", "recall@threshold=0.25"] if k is None else ["accuracy", "f1@macro", "recall@none"],
            num_classes=k,
            on_invalid=on_invalid,
        )
        cols = sliced_rows(num_classes=k, max_size=30, weight_kind=wk, with_invalid=on_invalid == "skip")
        return World(EvaluationFolder(ev), cols, ev.encode, ev.decode)
    raise AssertionError(kind)


KINDS = [
    "example_count",
    "binary_confusion",
    "confusion_matrix",
    "plan_binary",
    "plan_multiclass",
    "collection",
    "evaluation",
    "evaluation_multiclass",
]
BINARY_KINDS = {"binary_confusion", "plan_binary", "collection", "evaluation"}


def _weight_kind(data: Any) -> str:
    return data.draw(st.sampled_from(["none", "int", "float"]), label="weight kind")


def _rel_for(weight_kind: str) -> float:
    return 0.0  # exact sums: bit-identical with any weights


def _enc_equal(world: World, a: Any, b: Any) -> None:
    assert world.encode(a) == world.encode(b)


# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=40)
@given(data=st.data())
def test_identity(kind, data):
    wk = _weight_kind(data)
    w = draw_world(data, kind, wk)
    s = fold_all(w.folder, data.draw(w.batches, label="batch"))
    assert_states_equal(w.folder.merge(w.folder.zero(), s), s)
    assert_states_equal(w.folder.merge(s, w.folder.zero()), s)
    _enc_equal(w, w.folder.merge(w.folder.zero(), s), s)
    _enc_equal(w, w.folder.merge(s, w.folder.zero()), s)
    # folding an empty batch is the identity too
    empty = {k: (v[:0] if hasattr(v, "__len__") else v) for k, v in data.draw(w.batches, label="template").items()}
    assert_states_equal(w.folder.fold(s, empty), s)


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=40)
@given(data=st.data())
def test_commutativity(kind, data):
    w = draw_world(data, kind, _weight_kind(data))
    a = fold_all(w.folder, data.draw(w.batches, label="a"))
    b = fold_all(w.folder, data.draw(w.batches, label="b"))
    assert_states_equal(w.folder.merge(a, b), w.folder.merge(b, a))
    _enc_equal(w, w.folder.merge(a, b), w.folder.merge(b, a))


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=40)
@given(data=st.data())
def test_associativity(kind, data):
    wk = _weight_kind(data)
    w = draw_world(data, kind, wk)
    a, b, c = (fold_all(w.folder, data.draw(w.batches, label=x)) for x in "abc")
    m = w.folder.merge
    assert_states_equal(m(m(a, b), c), m(a, m(b, c)), rel=_rel_for(wk))


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=40)
@given(data=st.data(), seed=SEEDS)
def test_split_invariance_exact_with_integer_weights(kind, data, seed):
    wk = data.draw(st.sampled_from(["none", "int"]), label="weight kind")
    w = draw_world(data, kind, wk)
    cols = data.draw(w.batches, label="batch")
    one = fold_all(w.folder, cols)
    sharded = fold_sharded(w.folder, cols, np.random.default_rng(seed))
    assert_states_equal(sharded, one)
    _enc_equal(w, sharded, one)


@pytest.mark.parametrize("kind", [k for k in KINDS if k not in BINARY_KINDS])
@settings(max_examples=40)
@given(data=st.data(), seed=SEEDS)
def test_split_invariance_float_weights(kind, data, seed):
    w = draw_world(data, kind, "float")
    cols = data.draw(w.batches, label="batch")
    one = fold_all(w.folder, cols)
    sharded = fold_sharded(w.folder, cols, np.random.default_rng(seed))
    assert_states_equal(sharded, one)
    _enc_equal(w, sharded, one)


# One negative predicted positive with a large weight and one predicted negative with a small one.
# From the whole batch, tn = (1e10 + 1e-3) - 1e10 = 0.00099945...; from two shards, tn = 1e-3.
CANCELLATION = {
    "y_true": np.array([0, 0, 1, 1]),
    "y_score": np.array([0.9, 0.1, 0.1, 0.9]),
    "sample_weight": np.array([1e10, 1e-3, 1e-3, 1e10]),
}


@pytest.mark.parametrize("kind", sorted(BINARY_KINDS))
@settings(max_examples=40)
@given(data=st.data(), seed=SEEDS)
@example(data=None, seed=0)  # data=None: use the CANCELLATION batch
def test_split_invariance_float_weights_binary(kind, data, seed):
    if data is None:
        world = _fixed_world(kind)
        cols = _with_slices(CANCELLATION) if kind == "evaluation" else CANCELLATION
        # worst case: every row in its own shard
        rows = [{k: v[i : i + 1] for k, v in cols.items()} for i in range(len(cols["y_true"]))]
        per_row = merge_tree([fold_all(world.folder, r) for r in rows], world.folder.merge, np.random.default_rng(seed), world.folder.zero)
        assert_states_equal(per_row, fold_all(world.folder, cols))
        return
    world = draw_world(data, kind, "float")
    cols = data.draw(world.batches, label="batch")
    one = fold_all(world.folder, cols)
    sharded = fold_sharded(world.folder, cols, np.random.default_rng(seed))
    assert_states_equal(sharded, one)
    _enc_equal(world, sharded, one)


def _fixed_world(kind: str) -> World:
    if kind == "binary_confusion":
        enc, dec = _state_codec()
        return World(StateFolder(BinaryConfusionState, BinaryConfusionLayout((0.5,))), st.nothing(), enc, dec)
    if kind == "plan_binary":
        plan = Plan(["accuracy"], Task())
        return World(PlanFolder(plan), st.nothing(), plan.encode, plan.decode)
    if kind == "collection":
        return World(CollectionFolder(lambda: MetricCollection("accuracy")), st.nothing(), None, None)
    ev = Evaluation(label_col="y_true", score_col="y_score", weight_col="sample_weight", slices="g")
    return World(EvaluationFolder(ev), st.nothing(), ev.encode, ev.decode)


def _with_slices(cols: dict) -> dict:
    return {**cols, "g": np.array(["a"] * len(cols["y_true"]), dtype=object)}


def test_binary_counts_are_correctly_rounded_sums():
    """Every count is the exact sum of the weights of the rows it counts, correctly rounded: the
    ``math.fsum`` of those weights, bit for bit."""
    b, _ = make_batch(num_classes=2, **CANCELLATION)
    s = BinaryConfusionState.from_batch(BinaryConfusionLayout((0.5,)), b)
    y, p, w = CANCELLATION["y_true"], CANCELLATION["y_score"] >= 0.5, CANCELLATION["sample_weight"]
    exact = {
        "tp": math.fsum(w[(y == 1) & p]),
        "fp": math.fsum(w[(y == 0) & p]),
        "tn": math.fsum(w[(y == 0) & ~p]),
        "fn": math.fsum(w[(y == 1) & ~p]),
    }
    for name, value in exact.items():
        assert s[name][0] == value, (name, s[name][0], value)


@pytest.mark.parametrize("kind", ["binary_confusion", "confusion_matrix"])
def test_state_fold_empty_weighted_batch(kind):
    if kind == "binary_confusion":
        zero = BinaryConfusionState.zero(BinaryConfusionLayout((0.25, 0.5)))
        batch, _ = make_batch(num_classes=2, y_true=[], y_score=[], sample_weight=[])
    else:
        zero = ConfusionMatrixState.zero(ConfusionMatrixLayout(3))
        batch, _ = make_batch(num_classes=3, y_true=[], y_pred=[], sample_weight=[])
    assert zero.fold(batch) == zero
    assert type(zero).from_batch(zero.layout, batch) == zero


def test_state_copies_are_equal_and_nothing_in_them_can_be_mutated():
    """States are immutable values, so ``copy.copy`` / ``deepcopy`` may return the state itself:
    what makes that safe is that neither the arrays nor the mapping holding them can be changed,
    through the state or through an array the caller passed in."""
    import copy
    import pickle

    mc = MetricCollection("f1", "accuracy")
    mc.update([1, 0, 1], y_score=[0.9, 0.1, 0.3])
    for s in mc.states:
        before = {n: s[n].copy() for n, _ in s.FIELDS}
        for c in (copy.copy(s), copy.deepcopy(s), pickle.loads(pickle.dumps(s))):
            assert c == s and type(c) is type(s) and c.layout == s.layout
            for n, _ in c.FIELDS:
                with pytest.raises(ValueError, match="read-only"):
                    c.arrays[n][...] = 7
                with pytest.raises(TypeError):
                    c.arrays[n] = np.zeros_like(c.arrays[n])  # the mapping is read-only too
            with pytest.raises(AttributeError):
                c.layout = None
        assert all(np.array_equal(s[n], before[n]) for n in before)
    # an array passed in as a view of a writable buffer is copied, so writing the buffer later
    # does not change the state
    buf = np.array([[1.0, 2.0], [3.0, 4.0]])
    m = ConfusionMatrixState(ConfusionMatrixLayout(2), {"matrix": buf[:, :]})
    buf[0, 0] = 100.0
    assert m["matrix"][0, 0] == 1.0
    clone = copy.deepcopy(mc)
    clone.update([1], y_score=[0.9])
    assert clone.compute() != mc.compute()


# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=40)
@given(data=st.data())
def test_encode_decode_round_trip(kind, data):
    w = draw_world(data, kind, _weight_kind(data))
    s = fold_all(w.folder, data.draw(w.batches, label="batch"))
    blob = w.encode(s)
    back = w.decode(blob)
    assert_states_equal(back, s)
    assert w.encode(back) == blob
    z = w.folder.zero()
    assert_states_equal(w.decode(w.encode(z)), z)


@settings(max_examples=30)
@given(cols=sliced_rows(max_size=30, with_invalid=True), seed=SEEDS)
def test_sliced_results_split_invariant(cols, seed):
    """Same results (values, n, weight, skipped per slice) however the rows are sharded."""
    ev = Evaluation(
        label_col="y_true", score_col="y_score",
        weight_col=None if cols["sample_weight"] is None else "sample_weight",
        slices=["g", "g,h"], on_invalid="skip", metrics=["accuracy", "precision", "recall", "f1", "example_count"],
    )  # fmt: skip
    folder = EvaluationFolder(ev)
    one = ev.finish(fold_all(folder, cols)).to_rows()
    sharded = ev.finish(fold_sharded(folder, cols, np.random.default_rng(seed))).to_rows()
    assert [r["slice"] for r in one] == [r["slice"] for r in sharded]
    for a, b in zip(one, sharded):
        assert (a["metric"], a["n"], a["skipped"]) == (b["metric"], b["n"], b["skipped"])
        assert math.isclose(a["weight"], b["weight"], rel_tol=1e-12)
        assert (math.isnan(a["value"]) and math.isnan(b["value"])) or math.isclose(a["value"], b["value"], rel_tol=1e-9, abs_tol=1e-9)
    # every row reaches the overall slice
    overall = [r for r in one if r["slice"] == "{}"][0]
    assert overall["n"] + overall["skipped"] == len(cols["y_true"])


def test_evaluation_merge_leaves_second_argument_unchanged():
    ev = Evaluation(label_col="y", score_col="s", slices="g")
    a = ev.fold(ev.zero(), {"y": [1, 0], "s": [0.9, 0.2], "g": ["x", "y"]})
    b = ev.fold(ev.zero(), {"y": [1, 1], "s": [0.1, 0.7], "g": ["x", "z"]})
    b_before = ev.encode(b)
    ev.merge(a, b)
    assert ev.encode(b) == b_before


# ---------------------------------------------------------------------------------------------
# different layouts refuse to merge, naming the setting
def _bc(thresholds=(0.5,), rule=">="):
    return BinaryConfusionState.zero(BinaryConfusionLayout(thresholds, rule))


@pytest.mark.parametrize(
    "a, b, setting",
    [
        (_bc((0.5,)), _bc((0.7,)), "thresholds"),
        (_bc((0.25, 0.5)), _bc((0.5,)), "thresholds"),
        (_bc(rule=">="), _bc(rule=">"), "threshold_rule"),
        (ConfusionMatrixState.zero(ConfusionMatrixLayout(3)), ConfusionMatrixState.zero(ConfusionMatrixLayout(4)), "num_classes"),
    ],
    ids=["threshold", "threshold_count", "rule", "num_classes"],
)
def test_state_merge_different_layouts_raises(a, b, setting):
    with pytest.raises(ValueError, match=setting):
        a.merge(b)
    with pytest.raises(ValueError, match=setting):
        b + a


def test_state_merge_different_kinds_raises():
    with pytest.raises(ValueError, match="binary_confusion|example_count"):
        ExampleCountState.zero(ExampleCountLayout()).merge(_bc())


@pytest.mark.parametrize(
    "kw_a, kw_b, setting",
    [
        (dict(threshold=0.5), dict(threshold=0.7), "thresholds"),
        (dict(threshold_rule=">="), dict(threshold_rule=">"), "threshold_rule"),
        (dict(num_classes=3), dict(num_classes=4), "num_classes"),
    ],
    ids=["threshold", "rule", "num_classes"],
)
def test_collection_and_plan_merge_different_layouts_raises(kw_a, kw_b, setting):
    metrics = ("accuracy", "f1@macro") if "num_classes" in kw_a else ("accuracy", "f1")
    a, b = MetricCollection(*metrics, **kw_a), MetricCollection(*metrics, **kw_b)
    with pytest.raises(ValueError, match=setting):
        a.merge(b)
    with pytest.raises(ValueError, match=setting):
        a.plan.merge(a.states, b.states)


def test_binary_metrics_merge_different_thresholds_raises():
    """DESIGN section 5: merging different thresholds raises ValueError."""
    a, b = BinaryMetrics(threshold=0.5), BinaryMetrics(threshold=0.7)
    a.update([1, 0], [0.6, 0.4])
    b.update([1, 0], [0.6, 0.4])
    with pytest.raises(ValueError, match="threshold"):
        a.merge(b)
    assert BinaryMetrics(0.5).merge(BinaryMetrics(0.5)).compute()["tp"] == 0.0


@pytest.mark.parametrize(
    "kw_b, setting",
    [(dict(threshold=0.7), "thresholds"), (dict(threshold_rule=">"), "threshold_rule")],
    ids=["threshold", "rule"],
)
def test_evaluation_merge_different_layouts_raises(kw_b, setting):
    cols = {"y": [1, 0, 1], "s": [0.9, 0.2, 0.6], "g": ["a", "b", "a"]}
    ev_a = Evaluation(label_col="y", score_col="s", slices="g")
    ev_b = Evaluation(label_col="y", score_col="s", slices="g", **kw_b)
    a, b = ev_a.fold(ev_a.zero(), cols), ev_b.fold(ev_b.zero(), cols)
    with pytest.raises(ValueError, match=setting):
        ev_a.merge(a, b)
    with pytest.raises(ValueError):
        ev_a.decode(ev_b.encode(b))


def test_evaluation_merge_different_num_classes_raises():
    cols = {"y": [1, 0, 2], "p": [0, 2, 2]}
    ev3 = Evaluation(label_col="y", prediction_col="p", num_classes=3)
    ev4 = Evaluation(label_col="y", prediction_col="p", num_classes=4)
    with pytest.raises(ValueError, match="num_classes"):
        ev3.merge(ev3.fold(ev3.zero(), cols), ev4.fold(ev4.zero(), cols))


@settings(max_examples=60)
@given(
    data=st.lists(st.tuples(st.integers(0, 1), st.sampled_from([0.0, 0.3, 0.5, 0.7, 1.0, -2.0, 0.49999]), st.integers(0, 3)), max_size=40),
    rule=st.sampled_from([">=", ">"]),
    weighted=st.booleans(),
)
def test_states_from_cells_equal_folding_the_rows(data, rule, weighted):
    """Engines that count rows per cell themselves (Spark SQL) rebuild the states with
    mergeable_metrics.states.base.states_from_cells: the cells are computed here independently with numpy."""
    from mergeable_metrics.states.base import states_from_cells

    y = np.array([d[0] for d in data], dtype=np.int64)
    s = np.array([d[1] for d in data], dtype=np.float64)
    w = np.array([d[2] for d in data], dtype=np.float64) if weighted else None
    plan = Plan(["example_count", "precision@threshold=0.3", "recall", "f1@threshold=0.7"], Task(threshold_rule=rule))
    thresholds = np.array([0.3, 0.5, 0.7])
    passed = (s[:, None] >= thresholds) if rule == ">=" else (s[:, None] > thresholds)
    cell = y * 4 + passed.sum(axis=1)
    u, inv = np.unique(cell, return_inverse=True)
    counts = np.bincount(inv, minlength=u.size)
    weights = np.bincount(inv, weights=w, minlength=u.size).astype(np.float64) if weighted else None
    got = states_from_cells(plan.state_types, u, counts, weights, 4)
    assert got == plan.fold(plan.zero(), Batch(y_true=y, y_score=s, sample_weight=w))
    # multiclass: cells are label * K + prediction
    p = (y + np.array([d[2] for d in data], dtype=np.int64)) % 3
    mplan = Plan(["accuracy", "f1@macro", "confusion_matrix"], Task(num_classes=3))
    u, inv = np.unique(y * 3 + p, return_inverse=True)
    mweights = np.bincount(inv, weights=w, minlength=u.size).astype(float) if weighted else None
    got = states_from_cells(mplan.state_types, u, np.bincount(inv, minlength=u.size), mweights, 3)
    assert got == mplan.fold(mplan.zero(), Batch(y_true=y, y_pred=p, sample_weight=w))


def test_states_from_cells_rejects_per_label_not_matching_the_thresholds():
    """A joint cell ``label * per_label + j`` is a binary confusion state's own cell only when
    ``per_label`` is its number of thresholds + 1; anything else must not build a wrong state."""
    from mergeable_metrics.states.base import states_from_cells

    plan = Plan(["precision@threshold=0.3", "recall@threshold=0.7"], Task())  # 2 thresholds: 3 cells per label
    cells, counts = np.array([0, 3], dtype=np.int64), np.array([1, 1], dtype=np.int64)
    assert states_from_cells(plan.state_types, np.array([0, 5]), counts, None, 3) == plan.fold(
        plan.zero(), Batch(y_true=np.array([0, 1]), y_score=np.array([0.0, 0.9]))
    )
    with pytest.raises(ValueError, match="per_label 2 does not match 2 thresholds"):
        states_from_cells(plan.state_types, cells, counts, None, 2)
