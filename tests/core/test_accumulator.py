"""The accumulator (issue 12): an opaque, read-only core type whose blocks hold every slice of a
spec with a leading slice axis; :meth:`Accumulator.stacked` reads those arrays without per-slice
state objects, and :meth:`Evaluation.finish` computes the metrics of every slice from them in one
pass over the leading axis. References: the per-slice fold into a plain dict (slice by slice, the
states of :meth:`mergeable_metrics.collection.plan.Plan.fold`), :func:`mergeable_metrics.collection.stacked.stack_fields` of its states, and
hand counts."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest

from mergeable_metrics import Evaluation
from mergeable_metrics.evaluation.accumulator import Accumulator
from mergeable_metrics.collection.plan import Plan
from mergeable_metrics.collection.stacked import stack_fields

CASES = {
    "binary": dict(score_col="s", metrics=["precision", "recall", "f1", "accuracy", "tp", "fn", "example_count"]),
    "thresholds": dict(score_col="s", metrics=["f1@threshold=0.3", "precision@threshold=0.7", "specificity", "mcc"]),
    "multiclass": dict(prediction_col="p", num_classes=3, metrics=["f1@macro", "precision@weighted", "accuracy", "cohen_kappa", "confusion_matrix"]),
}


def _cols(rng: np.random.Generator, n: int, k: int) -> dict:
    y = rng.integers(0, k, n)
    y[rng.random(n) < 0.05] = k  # invalid rows (a label out of range): skipped, counted per slice
    return {"y": y, "s": rng.random(n).round(2), "p": rng.integers(0, k, n), "a": rng.choice(list("abcdefgh"), n), "b": rng.integers(0, 3, n)}


def _fold(ev: Evaluation, cols: dict, acc, size: int = 97):
    n = len(cols["y"])
    for lo in range(0, n, size):
        ev.fold(acc, {c: v[lo : lo + size] for c, v in cols.items()}, row_offset=lo)
    return acc


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("min_slice_size", [None, 12])
def test_finish_from_the_stacked_arrays_equals_the_per_slice_finish(case, min_slice_size):
    kw = CASES[case]
    rng = np.random.default_rng(len(case))
    cols = _cols(rng, 700, kw.get("num_classes", 2))
    ev = Evaluation(label_col="y", slices=["a", "a,b", "b"], on_invalid="skip", min_slice_size=min_slice_size, **kw)
    acc = _fold(ev, cols, ev.zero())
    per_slice = _fold(ev, cols, dict(ev.zero().items()))  # a plain dict: slice by slice
    # the stacked arrays are the fields of the per-slice states, bit for bit
    keys, fields = acc.copy().stacked()
    want = stack_fields(ev.plan.state_types, [per_slice[k] for k in keys])
    assert set(keys) == set(per_slice) and len(keys) == len(per_slice)
    assert fields.keys() == want.keys()
    for kind, f in want.items():
        for name, a in f.items():
            assert fields[kind][name].dtype == a.dtype and np.array_equal(fields[kind][name], a), (kind, name)
    with mock.patch.object(Plan, "compute_many", side_effect=AssertionError("per-slice states were stacked")):
        got = ev.finish(acc)  # the stacked path: compute_many (which stacks state objects) is not called
    assert got.to_json() == ev.finish(per_slice).to_json()
    assert got.overall.skipped == int((cols["y"] == kw.get("num_classes", 2)).sum()) > 0


def test_stacked_reads_held_and_block_slices_and_declines_what_does_not_stack():
    ev = Evaluation(label_col="y", score_col="s", slices=["a"], metrics=["tp", "fp"])
    acc = ev.fold(ev.zero(), {"y": [1, 0, 1, 1], "s": [0.9, 0.8, 0.2, 0.7], "a": ["x", "y", "x", "x"]})
    keys, fields = acc.stacked()
    assert keys == [(), (("a", "x"),), (("a", "y"),)]
    # hand counts at threshold 0.5: overall tp 2 fp 1; x: tp 2 (0.9, 0.7) fn 1; y: fp 1
    assert fields["binary_confusion"]["tp"][:, 0].tolist() == [2.0, 2.0, 0.0]
    assert fields["binary_confusion"]["fp"][:, 0].tolist() == [1.0, 0.0, 1.0]
    assert fields["example_count"]["count"].tolist() == [4, 3, 1]
    decoded = ev.decode(ev.encode(acc))  # held per-slice tuples only
    assert decoded.stacked()[0] == keys and all(np.array_equal(decoded.stacked()[1][k][f], a) for k, d in fields.items() for f, a in d.items())
    auc = Evaluation(label_col="y", score_col="s", slices=["a"], metrics=["roc_auc"])
    assert auc.fold(auc.zero(), {"y": [1, 0], "s": [0.9, 0.1], "a": ["x", "y"]}).stacked() is None  # score distributions
    weighted = Evaluation(label_col="y", score_col="s", weight_col="w", slices=["a"], metrics=["tp"])
    assert weighted.fold(weighted.zero(), {"y": [1, 0], "s": [0.9, 0.1], "a": ["x", "y"], "w": [0.5, 1.0]}).stacked() is None


def test_accumulators_of_mappings_compare_and_copy_as_values():
    ev = Evaluation(label_col="y", score_col="s", slices=["a"], metrics=["tp"])
    acc = ev.fold(ev.zero(), {"y": [1, 0], "s": [0.9, 0.1], "a": ["x", "y"]})
    plain = dict(acc.items())
    again = Accumulator(plain, ev.fingerprint)
    assert again == acc and acc == plain and again.slices() == acc.slices()
    c = acc.copy()
    ev.fold(c, {"y": [1], "s": [0.9], "a": ["x"]})
    assert c != acc and int(acc[(("a", "x"),)][0]["count"]) == 1 and int(c[(("a", "x"),)][0]["count"]) == 2
    assert ev.encode(again) == ev.encode(acc)
