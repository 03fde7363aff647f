"""Plan.compute_many (metrics over a leading axis) equals compute_detailed per element, bit for bit.

The reference is :meth:`mergeable_metrics.collection.plan.Plan.compute_detailed` of each element on its own (the scalar
path, itself tested against scikit-learn); the vectorised path (mergeable_metrics.collection.stacked) must give the same
floats (compared by their bits), the same Python types, the same NaN entries, certified bounds and
undefined entries, for random states of every metric in the registry and its variants (averages,
zero_division, weights, several thresholds, ignore_index, kappa weights, ...). The cell entry
point (compute_cells) is checked against hand-computed values and against compute_many of the
states whose cells it is given.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mergeable_metrics.engine import Plan
from mergeable_metrics.metrics import Task
from mergeable_metrics.metrics.base import REGISTRY
from mergeable_metrics.collection.plan import make_task
from mergeable_metrics.collection.stacked import CELL_KINDS, _vectorised, compute_many
from mergeable_metrics.states.base import BinaryConfusionState, ConfusionMatrixState
from mergeable_metrics.inputs.formats import make_batch

pytestmark = pytest.mark.filterwarnings("ignore")

AVERAGED = ("precision", "recall", "f1", "fbeta@beta=2", "fbeta@beta=0.5", "iou", "dice", "fbeta@beta=inf")
AVERAGES = ("micro", "macro", "weighted", "none")


def _names(kind: str) -> list[str]:
    # mean_measure needs a measure column; the retrieval metrics query ids (tests/core/test_retrieval.py)
    return sorted({c.name for c in REGISTRY.values() if kind in c.tasks and c.__module__ != "mergeable_metrics.metrics.retrieval"} - {"mean_measure"})


def binary_metrics(zd: str) -> list[str]:
    needs_param = ("precision_at_recall", "recall_at_precision", "sensitivity_at_specificity", "specificity_at_sensitivity", "partial_roc_auc",
                   "threshold_at_recall", "threshold_at_precision")  # fmt: skip
    out = [n for n in _names("binary") if n not in needs_param] + ["partial_roc_auc@max_fpr=0.3"]
    out += ["precision_at_recall@recall=0.5", "recall_at_precision@precision=0.5", "sensitivity_at_specificity@specificity=0.5"]
    out += ["specificity_at_sensitivity@sensitivity=0.5", "roc_auc@max_fpr=0.5", "roc_auc@pos_label=0", "average_precision@pos_label=0"]
    out += [f"{m}@{a}" for m in AVERAGED for a in AVERAGES] + [
        f"{m}@zero_division={zd}"
        for m in ("precision", "recall", "f1", "mcc", "npv", "specificity", "fpr", "fnr", "cohen_kappa", "iou", "classification_report")
    ]
    out += ["precision@threshold=0.3", "recall@threshold=0.7@macro", "accuracy@threshold=0.3", "tp@threshold=0.7", "mcc@threshold=0.3"]
    out += ["cohen_kappa@linear", "cohen_kappa@quadratic", "balanced_accuracy@adjusted=true", "miou@zero_division=1", "roc_auc@capacity=4"]
    out += ["threshold_at_recall@recall=0.5", "threshold_at_precision@precision=0.5", "metric_at_thresholds@metric=mcc@thresholds=0.3|0.6",
            "best_threshold@criterion=cost@cost_fn=3", "best_threshold_score@criterion=youden"]  # fmt: skip
    return out


def multiclass_metrics(zd: str) -> list[str]:
    out = [n for n in _names("multiclass")]
    out += [f"{m}@{a}" for m in AVERAGED for a in AVERAGES] + [f"{m}@zero_division={zd}@{a}" for m in ("precision", "recall", "f1", "iou") for a in AVERAGES]
    out += [f"{m}@zero_division={zd}" for m in ("mcc", "cohen_kappa", "classification_report", "miou")]
    out += ["cohen_kappa@linear", "cohen_kappa@quadratic", "balanced_accuracy@adjusted=true", "roc_auc@multi_class=ovo", "average_precision@macro"]
    return out


def same(a, b) -> bool:
    """Equal values of the same type; floats compared by their bits (NaN == NaN)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return (
            a.shape == b.shape
            and a.dtype == b.dtype
            and np.array_equal(a.view(np.uint8) if a.dtype.kind == "f" else a, b.view(np.uint8) if b.dtype.kind == "f" else b)
        )
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or np.float64(a).tobytes() == np.float64(b).tobytes()
    return a == b


def check(plan: Plan, states_list: list) -> None:
    _check(plan, states_list, compute_many(plan, states_list, vectorise_from=1))  # always the stacked path
    _check(plan, states_list, plan.compute_many(states_list))  # one or two elements: the scalar path


def _check(plan: Plan, states_list: list, many) -> None:
    values, bounds, undefined = many
    assert len(many) == len(states_list)
    for i, states in enumerate(states_list):
        want_v, want_i, want_u = plan.compute_detailed(states)
        got_v, got_i, got_u = many.element(i)
        assert list(got_v) == list(want_v)
        for key in want_v:
            if key.startswith("mcc") and isinstance(want_v[key], float):  # multiclass MCC: a few ulp apart at times (a known gap: 4 ulp seen)
                assert got_v[key] == pytest.approx(want_v[key], rel=2e-15, abs=1e-300, nan_ok=True), (key, i, got_v[key], want_v[key])
                continue
            assert same(got_v[key], want_v[key]), (key, i, got_v[key], want_v[key])
            stacked = values[key][i]
            if values[key].dtype != object:
                assert np.array_equal(stacked, np.asarray(want_v[key]), equal_nan=True), key
        assert got_i == want_i and bounds[i] == want_i
        assert got_u == want_u and undefined[i] == want_u, (i, got_u, want_u)


def _states(plan: Plan, task: Task, parts: list[dict]) -> list:
    out = []
    for p in parts:
        s = plan.zero()
        if p["y_true"].size:
            batch, _ = make_batch(num_classes=task.num_classes, task=task, needs=plan.needs, **p)
            s = plan.fold(s, batch)
        out.append(s)
    return out


@st.composite
def binary_parts(draw, weighted: bool):
    parts = []
    for _ in range(draw(st.integers(1, 6))):
        n = draw(st.integers(0, 25))
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        kind = draw(st.sampled_from(["random", "one_class", "ties"]))
        y = rng.integers(0, 2, n) if kind != "one_class" else np.full(n, rng.integers(0, 2))
        s = rng.random(n) if kind != "ties" else rng.integers(0, 3, n) / 2.0
        w = None
        if weighted:
            w = rng.random(n) * rng.integers(0, 2, n) if draw(st.booleans()) else rng.integers(0, 4, n).astype(float)
        parts.append({"y_true": y, "y_score": s, "sample_weight": w})
    return parts


@st.composite
def multiclass_parts(draw, k: int, weighted: bool):
    parts = []
    for _ in range(draw(st.integers(1, 6))):
        n = draw(st.integers(0, 40))
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        present = rng.choice(k, size=draw(st.integers(1, k)), replace=False)
        y = rng.choice(present, n)
        p = rng.random((n, k)) + 0.05
        p = p / p.sum(axis=1, keepdims=True)
        w = (rng.random(n) * rng.integers(0, 2, n)) if weighted else None
        parts.append({"y_true": y, "y_score": p, "sample_weight": w})
    return parts


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data(), st.sampled_from([0, 1, "nan", "warn"]), st.booleans(), st.sampled_from([">=", ">"]))
def test_binary_compute_many_equals_compute_detailed(data, zd, weighted, rule):
    task = make_task(None, 2, 0.5, rule, zd)
    plan = Plan(binary_metrics(str(zd)), task)
    check(plan, _states(plan, task, data.draw(binary_parts(weighted))))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data(), st.sampled_from([0, 1, "nan", "warn"]), st.booleans(), st.sampled_from([3, 4, 9, 12]), st.booleans())
def test_multiclass_compute_many_equals_compute_detailed(data, zd, weighted, k, ignore):
    task = make_task(None, k, zero_division=zd, ignore_index=(1 if ignore else None))
    plan = Plan(multiclass_metrics(str(zd)), task)
    check(plan, _states(plan, task, data.draw(multiclass_parts(k, weighted))))


@settings(max_examples=10, deadline=None)
@given(st.data(), st.booleans())
def test_binary_ignore_index_and_multiclass_binary(data, weighted):
    """Binary tasks with ignore_index, and num_classes=2 read as multiclass."""
    for task in (make_task(None, 2, ignore_index=0), make_task(None, 2, multiclass=True)):
        names = binary_metrics("nan") if task.kind == "binary" else multiclass_metrics("nan")
        plan = Plan(names, task)
        parts = data.draw(binary_parts(weighted))
        if task.kind == "multiclass":
            parts = [{"y_true": p["y_true"], "y_pred": (p["y_score"] >= 0.5).astype(int), "sample_weight": p["sample_weight"]} for p in parts]
            plan = Plan(
                [
                    m
                    for m in names
                    if not m.startswith(
                        (
                            "roc_auc",
                            "average_precision",
                            "roc_curve",
                            "precision_recall_curve",
                            "log_loss",
                            "brier",
                            "top_k",
                            "ece",
                            "mce",
                            "reliability_diagram",
                        )
                    )
                ],
                task,
            )
        check(plan, _states(plan, task, parts))


def test_other_tasks_fall_back_to_their_compute():
    """Regression and multilabel metrics (no cell states) go element by element: same values."""
    rng = np.random.default_rng(5)
    task = Task(kind="regression")
    plan = Plan(_names("regression"), task)
    parts = [{"y_true": rng.normal(size=n), "y_pred": rng.normal(size=n), "sample_weight": None} for n in (0, 1, 7, 30)]
    check(plan, _states(plan, task, parts))
    task = Task(num_classes=3, kind="multilabel")
    plan = Plan(_names("multilabel") + ["f1@none", "precision@macro"], task)
    parts = [{"y_true": rng.integers(0, 2, (n, 3)), "y_score": rng.random((n, 3)), "sample_weight": None} for n in (0, 2, 9)]
    check(plan, _states(plan, task, parts))


def test_the_confusion_metrics_are_vectorised():
    """The metrics of the brief take the leading-axis path (not the per-element fallback)."""
    for task, names in ((Task(2), binary_metrics("nan")), (Task(4), multiclass_metrics("nan"))):
        plan = Plan(names, task)
        fast = {m.key for m in plan.metrics if _vectorised(m) is not None}
        for name in ("precision", "recall", "f1", "fbeta", "accuracy", "mcc", "cohen_kappa", "iou", "confusion_matrix"):
            assert any(k.split("@")[0] == name for k in fast), name
        assert all(cls.kind in CELL_KINDS for m in plan.metrics if m.key in fast for cls, _ in m.requires())
    binary = {m.key for m in Plan(binary_metrics("nan"), Task(2)).metrics if _vectorised(m) is not None}
    assert {"specificity", "npv", "fpr", "precision@macro", "f1@weighted", "recall@none"} <= binary


def test_compute_cells_hand_computed():
    """[tn, fp, fn, tp] = [5, 1, 2, 3] and Dirichlet-like non-integer pseudo-counts."""
    plan = Plan(["precision", "recall", "f1", "accuracy", "specificity", "mcc"], Task(2))
    cells = np.array([[5.0, 1.0, 2.0, 3.0], [0.5, 0.25, 0.0, 1.5], [1.0, 0.0, 1.0, 0.0]])
    v = plan.compute_cells({"binary_confusion": cells})
    np.testing.assert_array_equal(v.values["precision"][:2], [3 / 4, 1.5 / 1.75])
    np.testing.assert_array_equal(v.values["recall"][:2], [3 / 5, 1.0])
    assert v.values["f1"][0] == 2 * 3 / (2 * 3 + 1 + 2)
    assert v.values["accuracy"][1] == 2.0 / 2.25
    assert v.values["specificity"][0] == 5 / 6
    mcc = (3 * 5 - 1 * 2) / math.sqrt((3 + 1) * (3 + 2) * (5 + 1) * (5 + 2))  # (tp tn - fp fn) / sqrt(...)
    assert abs(v.values["mcc"][0] - mcc) < 1e-15
    assert math.isnan(v.values["precision"][2]) and v.undefined[2]["precision"] == (None, "nan")
    assert "recall" not in v.undefined[2]


def test_compute_cells_equals_compute_many_of_the_states():
    """Integer cells of real rows give the states' values (several thresholds; a K x K matrix)."""
    rng = np.random.default_rng(11)
    task = Task(2)
    plan = Plan(["precision", "recall@threshold=0.2", "f1@threshold=0.8@macro", "tn@threshold=0.8", "cohen_kappa"], task)
    cls, layout = next((c, lay) for c, lay in plan.state_types if c is BinaryConfusionState)
    parts = [{"y_true": rng.integers(0, 2, n), "y_score": rng.random(n), "sample_weight": None} for n in (0, 3, 20, 50)]
    states = _states(plan, task, parts)
    cells = []
    for p in parts:
        batch, _ = make_batch(num_classes=2, task=task, needs=plan.needs, **p) if p["y_true"].size else (None, None)
        c = np.zeros(cls.num_cells(layout))
        if batch is not None:
            np.add.at(c, cls.cells(layout, batch), 1.0)
        cells.append(c)
    got = plan.compute_cells({"binary_confusion": np.array(cells)})
    want = plan.compute_many(states)
    for key in plan.keys:
        np.testing.assert_array_equal(got.values[key], want.values[key])
    assert got.undefined == want.undefined
    task = Task(3)
    plan = Plan(["f1@weighted", "accuracy", "mcc"], task)
    m = rng.integers(0, 5, (4, 9)).astype(float)
    got = plan.compute_cells({"confusion_matrix": m})
    states = [(plan.zero()[0], ConfusionMatrixState(plan.state_types[1][1], {"matrix": row.reshape(3, 3)})) for row in m]
    want = plan.compute_many(states)
    for key in plan.keys:
        np.testing.assert_array_equal(got.values[key], want.values[key])


def test_compute_cells_errors_and_empty():
    plan = Plan(["precision", "roc_auc"], Task(2))
    with pytest.raises(ValueError, match="roc_auc"):
        plan.compute_cells({"binary_confusion": np.ones((2, 4))})
    plan = Plan(["precision"], Task(2))
    with pytest.raises(ValueError, match=r"shape \(R, 4\)"):
        plan.compute_cells({"binary_confusion": np.ones((2, 3))})
    with pytest.raises(ValueError, match=">= 0"):
        plan.compute_cells({"binary_confusion": -np.ones((2, 4))})
    with pytest.raises(ValueError, match="confusion_matrix"):
        plan.compute_cells({"confusion_matrix": np.ones((2, 4))})
    empty = plan.compute_many([])
    assert empty.values["precision"].shape == (0,) and empty.undefined == []


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data(), st.sampled_from([0, 1, "nan", "warn"]), st.booleans(), st.sampled_from([3, 5]))
def test_labels_compute_many_equals_compute_detailed(data, zd, weighted, k):
    """``labels=`` (issue 17): a subset, a reordering, one class; stacked as the scalar path."""
    task = make_task(None, k, zero_division=zd)
    labels = ["2|0", "1", "|".join(str(c) for c in reversed(range(k)))]
    names = [f"{m}@{a}@labels={lab}" for m in ("precision", "recall", "f1", "iou", "dice") for a in ("micro", "macro", "weighted", "none") for lab in labels]
    names += [f"fbeta@macro@beta=2@labels={labels[0]}", f"miou@labels={labels[0]}", f"classification_report@labels={labels[2]}",
              f"confusion_matrix@labels={labels[0]}", f"confusion_matrix@labels={labels[2]}@normalize=true"]  # fmt: skip
    plan = Plan(names, task)
    check(plan, _states(plan, task, data.draw(multiclass_parts(k, weighted))))
