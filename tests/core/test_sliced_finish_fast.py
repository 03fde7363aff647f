"""The fast paths of the sliced ``evaluate`` (issue 25, item 4) against the paths they replace.

* The overall slice of a plan of cell states (example counts, binary confusion counts,
  confusion matrices) is folded as a one-slot block (``SliceBlock.fold_one``: one ``np.bincount``
  of the rows' cells) instead of a state fold per batch: its states, bytes and metric values equal
  the per-slice fold's (a plain dict: every slice, the overall one included, folded from its own
  rows by the states' own ``fold``), on random data with missing slice values, empty batches,
  one slice only, skipped rows and weights; ``Accumulator.stacked`` adds the held overall states
  (from ``zero``, a merge or bytes) to the block's row as the merge of the states does.
"""

from __future__ import annotations

import warnings

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mergeable_metrics import Evaluation
from mergeable_metrics.collection.stacked import stack_fields
from mergeable_metrics.evaluation.batches import num_rows
from mergeable_metrics.evaluation.evaluation import Accumulator
from mergeable_metrics.slicing.assign import OTHER, SUPPRESSED, sort_key, sort_order

COUNT_METRICS = ["precision", "recall", "f1", "accuracy", "precision@threshold=0.25"]


def _fold(ev: Evaluation, batches: list, acc):
    """``acc`` (an accumulator, or a plain dict: the per-slice fold) with ``batches`` folded in order."""
    offsets = np.cumsum([0] + [num_rows(b) for b in batches]).tolist()
    for b, offset in zip(batches, offsets):
        ev.fold(acc, b, row_offset=offset)
    return acc


@st.composite
def cases(draw):
    n = draw(st.integers(0, 120))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    values = draw(st.integers(1, 5))  # 1: one slice only
    a = [None if v == values else f"v{v}" for v in rng.integers(0, values + draw(st.integers(0, 1)), n)]  # None: missing
    s = rng.random(n)
    skip = draw(st.booleans())
    if skip and n:
        s = np.where(rng.random(n) < 0.2, np.nan, s)
    cols = {"y": rng.integers(0, 2, n), "s": s, "a": a, "w": rng.integers(0, 4, n) * draw(st.sampled_from([1.0, 0.1]))}
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=4)))  # repeated cuts: empty batches
    return cols, n, cuts, skip, draw(st.booleans()), draw(st.booleans()), draw(st.integers(1, 3))


def _batches(cols: dict, n: int, cuts: list[int], arrow: bool) -> list:
    bounds = [0, *cuts, n]
    out = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        part = {c: v[lo:hi] for c, v in cols.items()}
        if arrow:
            part = pa.RecordBatch.from_pydict({c: pa.array(list(v)) if c == "a" else pa.array(np.asarray(v)) for c, v in part.items()})
        out.append(part)
    return out


@settings(max_examples=120)
@given(cases())
def test_overall_block_equals_the_per_slice_fold(case):
    cols, n, cuts, skip, weighted, arrow, shards = case
    ev = Evaluation(
        label_col="y", score_col="s", slices=["a"], metrics=COUNT_METRICS, weight_col="w" if weighted else None, on_invalid="skip" if skip else "raise"
    )
    batches = _batches(cols, n, cuts, arrow)
    per_slice = _fold(ev, batches, dict(ev.zero().items()))  # a plain dict: each slice's own state fold
    fast = _fold(ev, batches, ev.zero())
    if n:
        assert () in fast._blocks  # the overall slice folded as a block
    assert set(fast.slices()) == set(per_slice)
    assert ev.encode(fast.copy()) == ev.encode(Accumulator(per_slice, ev.fingerprint))
    for key, states in per_slice.items():
        assert fast[key] == states, key
    # folded in shards and merged: the same bytes
    parts = [ev.zero() for _ in range(shards)]
    for i, b in enumerate(batches):
        _fold(ev, [b], parts[i % shards])
    merged = ev.merge_all(reversed(parts))
    assert ev.encode(merged) == ev.encode(Accumulator(per_slice, ev.fingerprint))
    # the finish reads the same values
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got, want = ev.finish(_fold(ev, batches, ev.zero())), ev.finish(Accumulator(per_slice, ev.fingerprint))
    assert got.to_dict() == want.to_dict()


@settings(max_examples=60)
@given(cases())
def test_stacked_adds_the_held_overall_states_to_the_blocks_row(case):
    cols, n, cuts, skip, _, arrow, _ = case
    ev = Evaluation(label_col="y", score_col="s", slices=["a"], metrics=COUNT_METRICS, on_invalid="skip" if skip else "raise")
    batches = _batches(cols, n, cuts, arrow)
    half = len(batches) // 2
    decoded = ev.decode(ev.encode(_fold(ev, batches[:half], ev.zero())))  # every slice held as states
    acc = ev.merge_into(_fold(ev, batches[half:], ev.zero()), decoded)  # the overall slice held and in a block
    reference = Accumulator(dict(acc.copy().items()), ev.fingerprint)  # materialised: the states' merge
    got = acc.stacked()
    assert got is not None
    keys, fields = got
    state_types = ev.plan.state_types
    want = stack_fields(state_types, [reference[k] for k in keys])
    assert set(keys) == set(reference.slices()) and len(keys) == len(set(keys))
    for kind, f in want.items():
        for name, a in f.items():
            assert fields[kind][name].dtype == a.dtype and np.array_equal(fields[kind][name], a), (kind, name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert ev.finish(acc).to_dict() == ev.finish(reference).to_dict()


def test_overall_block_hand_counts():
    """Four rows, one threshold: hand-counted tp/fp/tn/fn of the overall slice and each slice."""
    ev = Evaluation(label_col="y", score_col="s", slices=["a"], metrics=["precision", "recall", "accuracy"])
    acc = ev.zero()
    ev.fold(acc, pa.RecordBatch.from_pydict({"y": [1, 0, 1, 0], "s": [0.9, 0.8, 0.1, 0.2], "a": ["x", "x", None, "x"]}))
    ev.fold(acc, {"y": [], "s": [], "a": []})  # an empty batch
    res = ev.finish(acc)
    overall = res.overall.metrics
    assert (overall["precision"], overall["recall"], overall["accuracy"]) == (0.5, 0.5, 0.5)  # tp 1, fp 1, fn 1, tn 1
    x = res[(("a", "x"),)].metrics
    assert (x["precision"], x["recall"], x["accuracy"]) == (0.5, 1.0, 2 / 3)  # tp 1, fp 1, tn 1
    assert res.overall.n == 4 and res[(("a", None),)].n == 1


@pytest.mark.parametrize("metrics", [["roc_auc"], ["mean_absolute_error"]])
def test_plans_with_other_states_keep_the_overall_slice_as_states(metrics):
    kw = {"score_col": "s"} if metrics == ["roc_auc"] else {"prediction_col": "s", "task": "regression"}
    ev = Evaluation(label_col="y", slices=["a"], metrics=metrics, **kw)
    acc = ev.fold(ev.zero(), {"y": [1, 0], "s": [0.9, 0.1], "a": ["x", "y"]})
    assert () not in acc._blocks


#: plans of other states than the cell kinds: the finish reads their states lazily, ``roc_auc`` of
#: exact unweighted distributions from the blocks' bins
OTHER_METRICS = [
    ["roc_auc"],
    ["roc_auc@pos_label=0", "precision", "accuracy"],
    ["roc_auc@capacity=3", "average_precision"],  # compressed slices: certified bounds, the states path
    ["roc_auc@max_fpr=0.5", "log_loss", "brier_score_loss"],
]


def _finish_both(ev: Evaluation, batches: list) -> tuple:
    """``(fast, reference)``: the finish of a folded accumulator (the stacked path), and of the
    same slices' states as a plain mapping (the per-slice path, ``Evaluation._finish_states``),
    each with its warnings' messages."""
    out = []
    for plain in (False, True):
        acc = _fold(ev, batches, ev.zero())
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = ev.finish(dict(acc.items()) if plain else acc)
        out.append((res, [str(w.message) for w in caught]))
    return out[0], out[1]


@settings(max_examples=100)
@given(cases(), st.sampled_from(range(len(OTHER_METRICS))), st.booleans())
def test_lazy_finish_equals_the_per_slice_finish(case, which, big):
    cols, n, cuts, skip, weighted, arrow, _ = case
    ev = Evaluation(
        label_col="y", score_col="s", slices=["a"], metrics=OTHER_METRICS[which], weight_col="w" if weighted else None, on_invalid="skip" if skip else "raise"
    )
    if big:  # few distinct scores: many ties
        cols = dict(cols, s=np.round(cols["s"], 1))
    batches = _batches(cols, n, cuts, arrow)
    (fast, fast_warnings), (want, want_warnings) = _finish_both(ev, batches)
    assert fast.to_dict() == want.to_dict()
    assert [s.bounds for s in fast.slices] == [s.bounds for s in want.slices]
    assert fast_warnings == want_warnings


def test_lazy_finish_roc_auc_hand_computed_and_against_scikit_learn():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(7)
    n = 3000
    a = rng.choice(["p", "q", "r", "s", None], n)
    y = rng.integers(0, 2, n)
    s = np.round(rng.random(n), 2)  # ties
    ev = Evaluation(label_col="y", score_col="s", slices=["a"], metrics=["roc_auc"])
    batches = _batches({"y": y, "s": s, "a": list(a)}, n, [1000, 1000, 2000], arrow=True)
    (fast, _), (want, _) = _finish_both(ev, batches)
    assert fast.to_dict() == want.to_dict()
    for v in ["p", "q", "r", "s", None]:
        m = np.array([x == v for x in a])
        assert fast[(("a", v),)].metrics["roc_auc"] == pytest.approx(roc_auc_score(y[m], s[m]), abs=1e-12)
    # hand computed: positives 0.9, 0.4; negatives 0.6, 0.1 -> 3 of 4 pairs ordered
    ev2 = Evaluation(label_col="y", score_col="s", slices=["a"], metrics=["roc_auc"])
    acc = ev2.fold(ev2.zero(), {"y": [1, 1, 0, 0] * 3, "s": [0.9, 0.4, 0.6, 0.1] * 3, "a": ["x"] * 4 + ["y"] * 4 + ["z"] * 4})
    res = ev2.finish(acc)
    assert [res[(("a", v),)].metrics["roc_auc"] for v in "xyz"] == [0.75, 0.75, 0.75]


@pytest.mark.parametrize("extra", [[], [None], [None, "[0, 1)"], ["(x"], [None, OTHER], [SUPPRESSED], [3]])
def test_sort_order_of_one_column_strings_and_the_missing_value(extra):
    """The fast path of one-column specs of plain strings and None equals the order of ``sort_key``."""
    rng = np.random.default_rng(len(extra))
    pool = ["b", "a", "", "Z", "10", "9", "é", "a b"] + extra
    specs = [("g",), ("h",)]
    keys = list({(("gh"[rng.integers(0, 2)], pool[rng.integers(0, len(pool))]),) for _ in range(200)}) + [()]
    rng.shuffle(keys)
    assert sort_order(keys, specs) == sorted(range(len(keys)), key=lambda i: sort_key(keys[i], specs))
