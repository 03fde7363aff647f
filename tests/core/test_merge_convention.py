"""One merge convention (README "Guarantees", ``core`` docstring), issue 28 item 1.

* An object you ``update`` (``BinaryMetrics``, ``MetricCollection``, ``SingleMetric``,
  ``ContinualEvaluation``) merges ``other`` into itself IN PLACE and returns itself:
  ``for w in workers: total.merge(w)`` then ``total.compute()`` and ``c = a.merge(b)`` are both
  right (they have no ``merge_into``: one name per operation).
* Values passed around (states, ``Evaluation`` / ``PrequentialEvaluation`` /
  ``WindowedEvaluation`` accumulators, ``SliceProfile``) are immutable to ``merge``: it returns a
  new object and leaves both inputs unchanged (``merge_into`` merges in place where it exists).
* The module-level ``mergeable_metrics.merge(a, b, ...)`` (variadic, OnlineMetrics' ``merge(metrics...)``)
  returns a new object and leaves every input unchanged, for every mergeable type.

The merged values are checked against hand counts, scikit-learn and folding all rows at once.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from mergeable_metrics import BinaryMetrics, ContinualEvaluation, Evaluation, MetricCollection, SingleMetric
import mergeable_metrics
from mergeable_metrics.evaluation.profile import SliceProfile

A = {"y": [1, 0, 1], "s": [0.9, 0.2, 0.4], "g": ["x", "y", "x"]}
B = {"y": [1, 1, 0, 0], "s": [0.8, 0.1, 0.7, 0.3], "g": ["x", "z", "z", "y"]}
BOTH = {k: A[k] + B[k] for k in A}


def _ev(**kw):
    return Evaluation(label_col="y", score_col="s", slices=["g"], metrics=["tp", "fp", "roc_auc", "example_count"], **kw)


def _folded(ev, rows):
    return ev.fold(ev.zero(), rows)


def test_evaluation_merge_returns_a_new_accumulator_and_leaves_both_vectorised_inputs_unchanged():
    ev = _ev()
    a, b = _folded(ev, A), _folded(ev, B)
    assert a._blocks and b._blocks  # the vectorised slice blocks of fold, not yet materialised
    a_bytes, b_bytes = ev.encode(a.copy()), ev.encode(b.copy())
    merged = ev.merge(a, b)
    assert merged is not a and merged is not b
    assert ev.encode(a) == a_bytes and ev.encode(b) == b_bytes
    assert ev.encode(merged) == ev.encode(_folded(ev, BOTH))
    # hand counts: slice x holds rows y=1,s=.9 / y=1,s=.4 / y=1,s=.8 -> tp 2 at 0.5, 3 rows
    x = merged[(("g", "x"),)]
    assert x[0]["count"] == 3
    res = ev.finish(merged)
    assert res[(("g", "x"),)].metrics["tp"] == 2 and res[(("g", "z"),)].metrics["fp"] == 1
    assert res.overall.metrics["example_count"] == 7


def test_evaluation_merge_into_mutates_the_first_and_leaves_the_second_unchanged():
    ev = _ev()
    a, b = _folded(ev, A), _folded(ev, B)
    b_bytes = ev.encode(b.copy())
    out = ev.merge_into(a, b)
    assert out is a
    assert ev.encode(a) == ev.encode(_folded(ev, BOTH))
    assert ev.encode(b) == b_bytes
    # merging into an accumulator whose blocks were already read as a mapping adds to them
    c = _folded(ev, A)
    assert c[(("g", "x"),)][0]["count"] == 2  # materialised
    ev.merge_into(c, _folded(ev, B))
    assert ev.encode(c) == ev.encode(_folded(ev, BOTH))


def test_evaluation_merge_of_plain_dicts_is_pure_too():
    ev = _ev()
    a, b = dict(_folded(ev, A).items()), dict(_folded(ev, B).items())
    a_before, b_before = dict(a), dict(b)
    merged = ev.merge(a, b)
    assert a == a_before and b == b_before and merged is not a
    assert merged == dict(_folded(ev, BOTH).items())
    assert ev.merge_into(a, b) is a and a == merged


def test_evaluation_merge_all_leaves_its_inputs_unchanged():
    ev = _ev()
    parts = [_folded(ev, A), _folded(ev, B), ev.zero()]
    before = [ev.encode(p.copy()) for p in parts]
    merged = ev.merge_all(parts)
    assert [ev.encode(p) for p in parts] == before
    assert ev.encode(merged) == ev.encode(_folded(ev, BOTH))


def test_evaluation_merge_checks_the_configuration_before_touching_anything():
    ev, other = _ev(), _ev(weight_col="w")
    a = _folded(ev, A)
    a_bytes = ev.encode(a.copy())
    b = other.fold(other.zero(), {**B, "w": [1.0] * 4})
    for op in (ev.merge, ev.merge_into):
        with pytest.raises(ValueError, match="weight_col"):
            op(a, b)
    assert ev.encode(a) == a_bytes


def _profiled():
    ev = Evaluation(label_col="y", score_col="s", slices=["g;max_slices=1", "v:quantiles=2"])
    return ev.profiler()


PA = {"g": ["a", "a", "b"], "v": [1.0, 2.0, 3.0]}
PB = {"g": ["b", "b", "c", "b"], "v": [4.0, 5.0, 6.0, 7.0]}


def test_slice_profile_merge_is_pure_and_merge_into_mutates():
    prof = _profiled()
    a, b = prof.fold(prof.zero(), PA), prof.fold(prof.zero(), PB)
    a_bytes, b_bytes = a.encode(), b.encode()
    whole = prof.fold(prof.zero(), {k: PA[k] + PB[k] for k in PA})
    merged = a.merge(b)
    assert merged is not a and a.encode() == a_bytes and b.encode() == b_bytes
    assert merged == whole
    assert prof.merge(a, b) == whole and a.encode() == a_bytes
    assert prof.merge_all([a, b]) == whole and a.encode() == a_bytes and b.encode() == b_bytes
    # the resolved cut: "b" has 4 rows, the most, and is kept; "a" and "c" fold into __other__
    assert prof.finish(merged).parts["keys g;max_slices=1"]["folded_values"] == 2
    assert prof.merge_into(a, b) is a and a == whole and b.encode() == b_bytes
    c = SliceProfile.decode(b_bytes)
    assert c.merge_into(SliceProfile.decode(a_bytes)) is c and c == whole


# -- objects you update: merge in place, return self ---------------------------------------------
def test_binary_metrics_as_the_design_writes_it_workers_merged_into_total():
    """DESIGN: ``update(y_true, y_score, sample_weight=None)``, ``merge(other) -> self``,
    ``compute() -> dict`` (tp, fp, tn, fn, precision, recall, f1, accuracy); a total merging its
    workers in a loop reports every worker's rows (before: only its own)."""
    from sklearn.metrics import accuracy_score, confusion_matrix, precision_recall_fscore_support

    rng = np.random.default_rng(7)
    y, s, w = rng.integers(0, 2, 400), rng.random(400), rng.integers(1, 4, 400).astype(float)
    total = BinaryMetrics(threshold=0.5)
    total.update(y[:40], s[:40], sample_weight=w[:40])  # the total's own rows
    workers = []
    for lo in range(40, 400, 90):
        wk = BinaryMetrics(threshold=0.5)
        wk.update(y[lo : lo + 90], s[lo : lo + 90], sample_weight=w[lo : lo + 90])
        workers.append(wk)
    for wk in workers:
        total.merge(wk)
    r = total.compute()
    assert set(r) == {"tp", "fp", "tn", "fn", "precision", "recall", "f1", "accuracy"}
    pred = (s >= 0.5).astype(int)
    tn, fp, fn, tp = confusion_matrix(y, pred, sample_weight=w).ravel()
    assert (r["tp"], r["fp"], r["tn"], r["fn"]) == (tp, fp, tn, fn)
    p, rec, f1, _ = precision_recall_fscore_support(y, pred, sample_weight=w, average="binary")
    assert r["precision"] == pytest.approx(p, rel=1e-12) and r["recall"] == pytest.approx(rec, rel=1e-12)
    assert r["f1"] == pytest.approx(f1, rel=1e-12)
    assert r["accuracy"] == pytest.approx(accuracy_score(y, pred, sample_weight=w), rel=1e-12)
    # the workers are left as they were: worker 0 still holds its 90 rows only
    assert sum(workers[0].compute()[k] for k in ("tp", "fp", "tn", "fn")) == w[40:130].sum()
    # c = a.merge(b) is right too: c is a, holding both
    a, b = BinaryMetrics(), BinaryMetrics()
    a.update([1, 0], [0.9, 0.8])
    b.update([1, 1], [0.7, 0.1])
    c = a.merge(b)
    assert c is a and (c.compute()["tp"], c.compute()["fp"], c.compute()["fn"]) == (2.0, 1.0, 1.0)
    assert (b.compute()["tp"], b.compute()["fn"]) == (1.0, 1.0)


def core_merge(*objs):
    return mergeable_metrics.merge(*objs)  # looked up when called: a missing mergeable_metrics.merge fails these tests only


def _updated(kind, rows):
    """An updatable object of ``kind`` folded with ``rows`` (label, score) pairs."""
    y, s = [r[0] for r in rows], [r[1] for r in rows]
    if kind == "BinaryMetrics":
        out = BinaryMetrics(threshold=0.5)
        out.update(y, s)
    elif kind == "MetricCollection":
        out = MetricCollection("tp", "fp", "accuracy", "roc_auc")
        out.update(y, y_score=s)
    elif kind == "SingleMetric":
        out = SingleMetric("recall")
        out.update(y, y_score=s)
    else:  # ContinualEvaluation: after task 0, on task 0; the prediction is score >= 0.5
        out = ContinualEvaluation(num_tasks=1, num_classes=2)
        out.update([0] * len(y), [0] * len(y), y, [int(v >= 0.5) for v in s])
    return out


def _snapshot(obj):
    return obj.encode()


RA = list(zip(A["y"], A["s"]))
RB = list(zip(B["y"], B["s"]))
RC = [(0, 0.95), (1, 0.05)]
UPDATABLE = ["BinaryMetrics", "MetricCollection", "SingleMetric", "ContinualEvaluation"]


def _hand(kind, obj):
    """The merged value of A + B (+ C) by hand: 7 (9) rows, at threshold 0.5."""
    if kind in ("BinaryMetrics", "MetricCollection"):
        v = obj.compute()
        return v["tp"], v["fp"]
    if kind == "SingleMetric":
        return obj.compute()
    return float(obj.compute().accuracy_matrix[0, 0])


# A + B: tp .9 .8, fp .7, fn .4 .1 -> (tp, fp) = (2, 1); recall 2/4; accuracy 4/7.
# A + B + C: C adds fp .95 and fn .05 -> (2, 2); recall 2/5; accuracy 4/9.
HAND_AB = {"BinaryMetrics": (2, 1), "MetricCollection": (2, 1), "SingleMetric": 0.5, "ContinualEvaluation": 4 / 7}
HAND_ABC = {"BinaryMetrics": (2, 2), "MetricCollection": (2, 2), "SingleMetric": 0.4, "ContinualEvaluation": 4 / 9}


@pytest.mark.parametrize("kind", UPDATABLE)
def test_an_updatable_object_merges_other_into_itself_and_returns_itself(kind):
    a, b = _updated(kind, RA), _updated(kind, RB)
    b_bytes = _snapshot(b)
    out = a.merge(b)
    assert out is a and type(out).__name__ == kind
    assert _hand(kind, a) == pytest.approx(HAND_AB[kind])
    assert _snapshot(a) == _snapshot(_updated(kind, RA + RB))  # as folding every row into one
    assert _snapshot(b) == b_bytes  # other is left unchanged
    # the workers loop: total.merge(w) for every worker, then total.compute()
    total = _updated(kind, [])
    for w in (_updated(kind, RA), _updated(kind, RB), _updated(kind, RC)):
        total.merge(w)
    assert _hand(kind, total) == pytest.approx(HAND_ABC[kind])
    assert pickle.loads(pickle.dumps(a)).encode() == a.encode()


@pytest.mark.parametrize("kind", UPDATABLE)
def test_module_level_merge_returns_a_new_object_and_leaves_every_input_unchanged(kind):
    parts = [_updated(kind, RA), _updated(kind, RB), _updated(kind, RC)]
    before = [_snapshot(p) for p in parts]
    merged = core_merge(*parts)
    assert type(merged).__name__ == kind and all(merged is not p for p in parts)
    assert [_snapshot(p) for p in parts] == before
    assert _hand(kind, merged) == pytest.approx(HAND_ABC[kind])
    assert _snapshot(merged) == _snapshot(_updated(kind, RA + RB + RC))
    # the new object is independent: updating or merging into it leaves the inputs alone
    merged.merge(parts[1])
    assert [_snapshot(p) for p in parts] == before
    if kind != "ContinualEvaluation":
        assert merged._lock is not parts[0]._lock
    two = core_merge(parts[0], parts[1])
    assert _hand(kind, two) == pytest.approx(HAND_AB[kind]) and [_snapshot(p) for p in parts] == before
    one = core_merge(parts[0])  # the merge of one object: a copy
    assert one is not parts[0] and _snapshot(one) == before[0]


def test_module_level_merge_of_states_and_profiles_returns_a_merged_value():
    from mergeable_metrics.states.base import BinaryConfusionState

    mc = [_updated("MetricCollection", r) for r in (RA, RB, RC)]
    states = [m.states[1] for m in mc]  # the binary confusion states
    assert all(isinstance(s, BinaryConfusionState) for s in states)
    before = [s.encode() for s in states]
    merged = core_merge(*states)
    assert [s.encode() for s in states] == before and all(merged is not s for s in states)
    assert merged == _updated("MetricCollection", RA + RB + RC).states[1]
    assert merged == states[0].merge(states[1]).merge(states[2])
    prof = _profiled()
    a, b = prof.fold(prof.zero(), PA), prof.fold(prof.zero(), PB)
    a_bytes = a.encode()
    assert core_merge(a, b) == prof.fold(prof.zero(), {k: PA[k] + PB[k] for k in PA}) and a.encode() == a_bytes


def test_module_level_merge_refuses_what_it_cannot_merge():
    ev = _ev()
    acc = _folded(ev, A)
    with pytest.raises(TypeError, match="evaluation.merge"):
        core_merge(acc, acc)
    with pytest.raises(TypeError, match="at least one"):
        core_merge()
    with pytest.raises(TypeError, match="cannot merge"):
        core_merge(_updated("BinaryMetrics", RA), _updated("ContinualEvaluation", RA))


def test_prequential_and_windowed_accumulators_are_values_merge_is_pure():
    from mergeable_metrics import PrequentialEvaluation

    pe = PrequentialEvaluation(2, label_col="y", score_col="s", metrics=["tp", "fp"])
    a = pe.fold(pe.zero(), {"y": A["y"], "s": A["s"]})
    b = pe.fold(pe.zero(), {"y": B["y"], "s": B["s"]}, row_offset=3)
    a_bytes, b_bytes = pe.encode(a.copy()), pe.encode(b.copy())
    merged = pe.merge(a, b)
    assert pe.encode(a) == a_bytes and pe.encode(b) == b_bytes
    whole = pe.fold(pe.zero(), {"y": BOTH["y"], "s": BOTH["s"]})
    assert pe.encode(merged) == pe.encode(whole)
    # windows of 2 rows: window 1 holds rows 2 and 3 (y=1 s=.4, y=1 s=.8): tp 1, fp 0
    assert pe.finish(merged).windowed["tp"][1] == 1


def test_metric_collection_merge_refuses_another_configuration_without_changing_either():
    a, b = MetricCollection("accuracy", num_classes=3, ignore_index=0), MetricCollection("accuracy", num_classes=3)
    for mc in (a, b):
        mc.update([0, 1, 2], y_pred=[0, 1, 1])
    a_bytes = a.encode()
    with pytest.raises(ValueError, match="ignore_index"):
        a.merge(b)
    assert a.encode() == a_bytes
    assert np.isclose(a.compute()["accuracy"], 0.5)  # rows with label 0 are ignored: 1 of 2


def test_collections_of_other_metrics_over_the_same_states_do_not_merge():
    """Accuracy and IoU (or fbeta@beta=2 and fbeta@beta=3) share a state: a merge would silently report the
    first object's metric over both objects' rows, so it is refused, naming the metrics."""
    from sklearn.metrics import accuracy_score

    from mergeable_metrics import MetricCollection, merge
    from mergeable_metrics import onlinemetrics as om

    acc, iou = om.Accuracy(3), om.IoU(3)
    acc.update([0, 1, 2], y_pred=[0, 1, 1])
    iou.update([0, 1, 2], y_pred=[0, 0, 0])
    with pytest.raises(ValueError, match=r"metrics differ \(accuracy vs iou@none\)"):
        merge(acc, iou)
    with pytest.raises(ValueError, match=r"fbeta@beta=2 vs fbeta@beta=3"):
        MetricCollection("fbeta@beta=2").merge(MetricCollection("fbeta@beta=3"))
    other = om.Accuracy(3)
    other.update([2, 2], y_pred=[2, 2])
    assert merge(acc, other).compute() == accuracy_score([0, 1, 2, 2, 2], [0, 1, 1, 2, 2])
    # display names may differ: the metrics are what must match
    a, b = MetricCollection(("val_f1", "f1@macro"), num_classes=3), MetricCollection("f1@macro", num_classes=3)
    a.update([0, 1, 2], y_pred=[0, 1, 2])
    assert a.merge(b) is a
