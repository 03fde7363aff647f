"""Plain int64 labels checked by the compiled pass that counts them (issue 25, round 6).

``make_batch(count_cells=...)`` (what ``MetricCollection.update`` passes for a plan with a K x K
confusion matrix or binary counts at one threshold) checks plain (N,) int64 labels with
predictions (or finite scores) in the kernel that counts the cells, and the counts travel with the
batch (``Batch.cells``). The counts must be the true ones (``np.bincount`` / scikit-learn), the
states' bytes those of the reference path (no ``count_cells``, and the numpy path), and every value
the kernel refuses must reach the reference checks: the same message (column, value, row), and
nothing folded.
"""

from __future__ import annotations

import numpy as np
import pytest

from mergeable_metrics import MetricCollection
from mergeable_metrics._util import exact_kernels as K
from mergeable_metrics.inputs.formats import make_batch
from tests._helpers.kernels import on_numpy_path

pytestmark = pytest.mark.skipif(not K.AVAILABLE, reason="numba kernels disabled or not installed")


def _off(mc):
    """The same collection on the reference label path (no counts from the validation)."""
    mc.plan.__dict__["count_cells"] = None
    return mc


def _multiclass(k):
    return MetricCollection("f1@macro", "accuracy", "confusion_matrix", num_classes=k)


def _binary():
    return MetricCollection("precision", "recall", "f1", "accuracy")


def test_the_plans_name_their_cells():
    assert _multiclass(10).plan.count_cells == ("pairs", 10)
    assert _binary().plan.count_cells == ("threshold", 0.5, False)
    assert MetricCollection("precision", threshold_rule=">").plan.count_cells == ("threshold", 0.5, True)
    assert MetricCollection("roc_auc").plan.count_cells is None
    assert MetricCollection("precision@threshold=0.3", "precision@threshold=0.6").plan.count_cells is None  # several thresholds


@pytest.mark.parametrize("k", [3, 4, 10])
@pytest.mark.parametrize("weighted", [False, True])
def test_multiclass_counts_and_bytes(k, weighted):
    from sklearn.metrics import confusion_matrix

    rng = np.random.default_rng(k)
    n = 20_000
    y, p = rng.integers(0, k, n), rng.integers(0, k, n)
    w = rng.random(n) * 10.0 ** rng.integers(-3, 3, n) if weighted else None
    mc = _multiclass(k)
    got = make_batch(
        num_classes=k,
        y_true=y[:7000],
        y_pred=p[:7000],
        sample_weight=None if w is None else w[:7000],
        task=mc.plan.task,
        needs=mc.plan.needs,
        count_cells=mc.plan.count_cells,
    )[0]
    assert got.cells is not None  # the validation's pass counted the cells
    if not weighted:
        assert got.cells[4].tolist() == np.bincount(k * y[:7000] + p[:7000], minlength=k * k).tolist()
    ref, npy = _off(_multiclass(k)), _multiclass(k)
    for lo, hi in ((0, 7000), (7000, 7001), (7001, n)):
        ww = None if w is None else w[lo:hi]
        mc.update(y[lo:hi], y_pred=p[lo:hi], sample_weight=ww)
        ref.update(y[lo:hi], y_pred=p[lo:hi], sample_weight=ww)
        on_numpy_path(lambda: npy.update(y[lo:hi], y_pred=p[lo:hi], sample_weight=ww))  # noqa: B023
    assert mc.encode() == ref.encode() == on_numpy_path(npy.encode)
    cm = np.asarray(mc.compute()["confusion_matrix"])
    assert (
        np.array_equal(cm, confusion_matrix(y, p, labels=list(range(k)), sample_weight=w))
        if not weighted
        else np.allclose(cm, confusion_matrix(y, p, labels=list(range(k)), sample_weight=w), rtol=1e-12)
    )


@pytest.mark.parametrize("rule", [">=", ">"])
@pytest.mark.parametrize("weighted", [False, True])
def test_binary_counts_and_bytes(rule, weighted):
    rng = np.random.default_rng(7)
    n = 20_000
    y = rng.integers(0, 2, n)
    s = np.round(rng.random(n), 2)  # ties at the threshold
    w = rng.random(n) if weighted else None
    make = lambda: MetricCollection("precision", "recall", "f1", "accuracy", threshold_rule=rule)  # noqa: E731
    mc, ref, npy = make(), _off(make()), make()
    got = make_batch(num_classes=2, y_true=y, y_score=s, sample_weight=w, task=mc.plan.task, needs=mc.plan.needs, count_cells=mc.plan.count_cells)[0]
    assert got.cells is not None
    pred = s >= 0.5 if rule == ">=" else s > 0.5
    if not weighted:
        assert got.cells[4] == (int(y.sum()), int(pred.sum()), int((pred & (y == 1)).sum()))
    for lo, hi in ((0, 5000), (5000, n)):
        ww = None if w is None else w[lo:hi]
        mc.update(y[lo:hi], s[lo:hi], sample_weight=ww)
        ref.update(y[lo:hi], s[lo:hi], sample_weight=ww)
        on_numpy_path(lambda: npy.update(y[lo:hi], s[lo:hi], sample_weight=ww))  # noqa: B023
    assert mc.encode() == ref.encode() == on_numpy_path(npy.encode)
    tp = float(((y == 1) & pred) @ (np.ones(n) if w is None else w))
    fp = float(((y == 0) & pred) @ (np.ones(n) if w is None else w))
    assert mc.compute()["precision"] == pytest.approx(tp / (tp + fp), rel=1e-12)


# invalid values: (y_true, y_pred or scores) of 6 rows, the bad value at row 4
GOOD_Y = [0, 1, 2, 1, 0, 2]
BAD_MULTICLASS = [
    ("y_true", np.array([0, 1, 2, 1, 3, 2])),  # out of range
    ("y_true", np.array([0, 1, 2, 1, -1, 2])),  # negative
    ("y_pred", np.array([0, 1, 2, 1, 7, 2])),
    ("y_pred", np.array([0, 1, 2, 1, -5, 2])),
    ("y_pred", np.array([0, 1, 2, 1, np.iinfo(np.int64).min, 2])),
    ("y_true", np.array([0, 1, 2, 1, 1.5, 2])),  # not an integer
    ("y_true", np.array([0, 1, 2, 1, np.nan, 2])),
    ("y_pred", np.array([0, 1, 2, 1, None, 2], dtype=object)),
    ("y_pred", np.array([0.0, 1, 2, 1, np.inf, 2])),
]


def _message(fn):
    with pytest.raises((ValueError, TypeError)) as e:
        fn()
    return type(e.value), str(e.value)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("case", range(len(BAD_MULTICLASS)))
def test_an_invalid_multiclass_label_gets_the_reference_message_and_folds_nothing(case, weighted):
    col, bad = BAD_MULTICLASS[case]
    good = np.array(GOOD_Y)
    y, p = (bad, good) if col == "y_true" else (good, bad)
    w = np.full(6, 0.5) if weighted else None
    first = np.array([0, 1, 2, 2, 1, 0])
    mc, ref = _multiclass(3), _off(_multiclass(3))
    for c in (mc, ref):
        c.update(first, y_pred=first, sample_weight=w)  # 6 rows before: the message names row 10
    before = mc.encode()
    got = _message(lambda: mc.update(y, y_pred=p, sample_weight=w))
    assert got == _message(lambda: ref.update(y, y_pred=p, sample_weight=w))
    assert f"column '{col}'" in got[1] and "at row 10" in got[1]
    assert mc.encode() == before  # nothing folded
    mc.update(good, y_pred=good, sample_weight=w)  # and the collection still folds
    ref.update(good, y_pred=good, sample_weight=w)
    assert mc.encode() == ref.encode()


@pytest.mark.parametrize(
    "col, bad",
    [
        ("y_true", np.array([0, 1, 1, 0, 2, 1])),
        ("y_true", np.array([0, 1, 1, 0, -1, 1])),
        ("y_true", np.array([0, 1, 1, 0, 0.5, 1])),
        ("y_true", np.array([0, 1, 1, 0, np.nan, 1])),
        ("y_true", np.array([0, 1, 1, 0, None, 1], dtype=object)),
        ("y_score", np.array([0.1, 0.9, 0.6, 0.2, np.nan, 0.7])),
        ("y_score", np.array([0.1, 0.9, 0.6, 0.2, np.inf, 0.7])),
        ("y_score", np.array([0.1, 0.9, 0.6, 0.2, -np.inf, 0.7])),
        ("sample_weight", np.array([1.0, 1.0, 1.0, 1.0, -1.0, 1.0])),
        ("sample_weight", np.array([1.0, 1.0, 1.0, 1.0, np.nan, 1.0])),
    ],
)
@pytest.mark.parametrize("weighted", [False, True])
def test_an_invalid_binary_value_gets_the_reference_message_and_folds_nothing(col, bad, weighted):
    y = np.array([0, 1, 1, 0, 1, 1])
    s = np.array([0.1, 0.9, 0.6, 0.2, 0.8, 0.7])
    w = np.full(6, 0.25)
    args = {"y_true": y, "y_score": s, "sample_weight": w if weighted else None, col: bad}
    mc, ref = _binary(), _off(_binary())
    for c in (mc, ref):
        c.update(y, s)
    before = mc.encode()
    got = _message(lambda: mc.update(**args))
    assert got == _message(lambda: ref.update(**args))
    assert f"column '{col}'" in got[1] and "at row 10" in got[1]
    assert mc.encode() == before


def test_bool_and_other_int_labels_take_the_reference_path():
    """Bool labels and int32 columns are read as before (not the kernel's int64 columns)."""
    y = np.array([True, False, True, True])
    s = np.array([0.9, 0.2, 0.4, 0.6])
    mc, ref = _binary(), _off(_binary())
    mc.update(y, s)
    ref.update(y.astype(np.int64), s)
    assert mc.encode() == ref.encode()
    mc3 = _multiclass(3)
    mc3.update(np.array([0, 2, 1], dtype=np.int32), y_pred=np.array([0, 1, 1], dtype=np.int32))
    ref3 = _off(_multiclass(3))
    ref3.update(np.array([0, 2, 1]), y_pred=np.array([0, 1, 1]))
    assert mc3.encode() == ref3.encode()
    with pytest.raises(ValueError, match="at row 5") as e:
        mc3.update(np.array([0, 1, 5], dtype=np.int32), y_pred=np.array([0, 1, 1], dtype=np.int32))
    assert "column 'y_true'" in str(e.value)


def test_a_batch_taken_leaves_the_counts_behind():
    mc = _multiclass(3)
    y, p = np.array([0, 1, 2, 2]), np.array([0, 2, 2, 1])
    b = make_batch(num_classes=3, y_true=y, y_pred=p, task=mc.plan.task, needs=mc.plan.needs, count_cells=mc.plan.count_cells)[0]
    assert b.cells_for(("pairs", 3), b.y_pred) is not None
    t = b.take(np.array([True, False, True, True]))
    assert t.cells_for(("pairs", 3), t.y_pred) is None
    assert b.cells_for(("pairs", 4), b.y_pred) is None


def test_the_numpy_path_checks_as_before():
    """Without the kernels (``MERGEABLE_METRICS_DISABLE_NUMBA=1``) no counts travel with the batch
    and the reference checks run; the values are scikit-learn's."""
    from sklearn.metrics import f1_score

    rng = np.random.default_rng(11)
    y, p = rng.integers(0, 5, 3000), rng.integers(0, 5, 3000)
    mc = _multiclass(5)
    assert (
        on_numpy_path(lambda: make_batch(num_classes=5, y_true=y, y_pred=p, task=mc.plan.task, needs=mc.plan.needs, count_cells=mc.plan.count_cells)[0].cells)
        is None
    )
    on_numpy_path(lambda: mc.update(y, y_pred=p))
    assert mc.compute()["f1@macro"] == pytest.approx(f1_score(y, p, average="macro"), rel=1e-12)
    with pytest.raises(ValueError, match=r"column 'y_pred': invalid value 5.0 at row 3001: predictions must be integers in \[0, 5\)"):
        on_numpy_path(lambda: mc.update(np.array([0, 1]), y_pred=np.array([0, 5])))


def test_a_plan_with_other_states_reads_the_same_batch():
    """Counts from the validation's pass next to states that read the columns themselves (a
    score distribution): the bytes of the reference path, the values scikit-learn's."""
    from sklearn.metrics import f1_score, roc_auc_score

    rng = np.random.default_rng(13)
    y = rng.integers(0, 2, 4000)
    s = np.clip(0.3 * y + 0.7 * rng.random(4000), 0, 1)
    make = lambda: MetricCollection("roc_auc", "f1")  # noqa: E731
    mc, ref = make(), _off(make())
    assert mc.plan.count_cells == ("threshold", 0.5, False)
    for c in (mc, ref):
        c.update(y[:1000], s[:1000])
        c.update(y[1000:], s[1000:])
    assert mc.encode() == ref.encode()
    got = mc.compute()
    assert got["f1"] == pytest.approx(f1_score(y, s >= 0.5), rel=1e-12)
    assert got["roc_auc"] == pytest.approx(roc_auc_score(y, s), rel=1e-9)
