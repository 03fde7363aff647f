"""One merge convention (README "Guarantees", ``core`` docstring): ``merge`` is pure (a new object,
both inputs unchanged), ``merge_into`` merges into its first argument in place and returns it.

Checked for ``Evaluation`` accumulators (the vectorised slice blocks of ``fold`` and plain dicts),
``SliceProfiler`` / ``SliceProfile`` and ``MetricCollection`` / ``BinaryMetrics``; the merged
values are checked against hand counts and against folding all the rows at once.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from core import BinaryMetrics, Evaluation, MetricCollection
from core.slice_profile import SliceProfile

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
    a_bytes, b_bytes = ev.encode_accumulator(a.copy()), ev.encode_accumulator(b.copy())
    merged = ev.merge(a, b)
    assert merged is not a and merged is not b
    assert ev.encode_accumulator(a) == a_bytes and ev.encode_accumulator(b) == b_bytes
    assert ev.encode_accumulator(merged) == ev.encode_accumulator(_folded(ev, BOTH))
    # hand counts: slice x holds rows y=1,s=.9 / y=1,s=.4 / y=1,s=.8 -> tp 2 at 0.5, 3 rows
    x = merged[(("g", "x"),)]
    assert x[0]["count"] == 3
    res = ev.finish(merged)
    assert res[(("g", "x"),)].metrics["tp"] == 2 and res[(("g", "z"),)].metrics["fp"] == 1
    assert res.overall.metrics["example_count"] == 7


def test_evaluation_merge_into_mutates_the_first_and_leaves_the_second_unchanged():
    ev = _ev()
    a, b = _folded(ev, A), _folded(ev, B)
    b_bytes = ev.encode_accumulator(b.copy())
    out = ev.merge_into(a, b)
    assert out is a
    assert ev.encode_accumulator(a) == ev.encode_accumulator(_folded(ev, BOTH))
    assert ev.encode_accumulator(b) == b_bytes
    # merging into an accumulator whose blocks were already read as a mapping adds to them
    c = _folded(ev, A)
    assert c[(("g", "x"),)][0]["count"] == 2  # materialised
    ev.merge_into(c, _folded(ev, B))
    assert ev.encode_accumulator(c) == ev.encode_accumulator(_folded(ev, BOTH))


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
    before = [ev.encode_accumulator(p.copy()) for p in parts]
    merged = ev.merge_all(parts)
    assert [ev.encode_accumulator(p) for p in parts] == before
    assert ev.encode_accumulator(merged) == ev.encode_accumulator(_folded(ev, BOTH))


def test_evaluation_merge_checks_the_configuration_before_touching_anything():
    ev, other = _ev(), _ev(weight_col="w")
    a = _folded(ev, A)
    a_bytes = ev.encode_accumulator(a.copy())
    b = other.fold(other.zero(), {**B, "w": [1.0] * 4})
    for op in (ev.merge, ev.merge_into):
        with pytest.raises(ValueError, match="weight_col"):
            op(a, b)
    assert ev.encode_accumulator(a) == a_bytes


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


def _collection(cls, rows):
    mc = BinaryMetrics(threshold=0.5) if cls is BinaryMetrics else MetricCollection("tp", "fp", "accuracy", "roc_auc")
    mc.update(rows["y"], y_score=rows["s"]) if cls is MetricCollection else mc.update(rows["y"], rows["s"])
    return mc


@pytest.mark.parametrize("cls", [MetricCollection, BinaryMetrics])
def test_metric_collection_merge_is_pure_and_merge_into_mutates(cls):
    a, b = _collection(cls, A), _collection(cls, B)
    a_bytes, b_bytes = a.encode(), b.encode()
    merged = a.merge(b)
    assert type(merged) is cls and merged is not a and merged is not b
    assert a.encode() == a_bytes and b.encode() == b_bytes
    assert merged.encode() == _collection(cls, BOTH).encode()
    # hand counts over the 7 rows at threshold 0.5: tp = .9, .8; fp = .7
    assert merged.compute()["tp"] == 2 and merged.compute()["fp"] == 1
    assert merged._lock is not a._lock  # its own lock: updating the merge leaves ``a`` alone
    merged.update([1], [0.9]) if cls is BinaryMetrics else merged.update([1], y_score=[0.9])
    assert a.encode() == a_bytes and merged.compute()["tp"] == 3
    out = a.merge_into(b)
    assert out is a and a.encode() == _collection(cls, BOTH).encode() and b.encode() == b_bytes
    assert pickle.loads(pickle.dumps(a)).encode() == a.encode()


def test_metric_collection_merge_refuses_another_configuration_without_changing_either():
    a, b = MetricCollection("accuracy", num_classes=3, ignore_index=0), MetricCollection("accuracy", num_classes=3)
    for mc in (a, b):
        mc.update([0, 1, 2], y_pred=[0, 1, 1])
    a_bytes = a.encode()
    for op in (a.merge, a.merge_into):
        with pytest.raises(ValueError, match="ignore_index"):
            op(b)
    assert a.encode() == a_bytes
    assert np.isclose(a.compute()["accuracy"], 0.5)  # rows with label 0 are ignored: 1 of 2
