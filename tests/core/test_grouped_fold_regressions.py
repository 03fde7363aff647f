"""Regressions of the slice-vectorised fold (mergeable_metrics.slicing.grouped, the Accumulator's blocks) found by
attacking it: each test names what it guards; references are hand counts, numpy, scikit-learn or
the per-slice fold (folding into a plain dict)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from mergeable_metrics import Evaluation, UndefinedMetricWarning
from mergeable_metrics.evaluation.accumulator import Accumulator


def _per_slice(ev: Evaluation, batches: list) -> dict:
    acc = dict(ev.zero().items())
    offset = 0
    for b in batches:
        ev.fold(acc, b, row_offset=offset)
        offset += b.num_rows if hasattr(b, "num_rows") else len(next(iter(b.values())))
    return acc


def _vectorised(ev: Evaluation, batches: list):
    acc = ev.zero()
    offset = 0
    for b in batches:
        ev.fold(acc, b, row_offset=offset)
        offset += b.num_rows if hasattr(b, "num_rows") else len(next(iter(b.values())))
    return acc


@pytest.mark.parametrize("weighted", [False, True])
def test_merging_a_block_whose_last_slices_had_only_skipped_rows(weighted):
    """Slices that only ever saw skipped rows have no row in the block's cell tables: merging
    must not broadcast another slice's counts into them."""
    ev = Evaluation(label_col="y", score_col="s", slices=["a"], metrics=["precision"], on_invalid="skip", weight_col="w" if weighted else None)
    acc = ev.zero()
    ev.fold(acc, {"y": [1, 0], "s": [0.9, 0.1], "a": ["x", "x"], "w": [0.5, 0.25]})
    ev.fold(acc, {"y": [1, 0], "s": [np.nan, np.nan], "a": ["z", "w"], "w": [1.0, 1.0]}, row_offset=2)
    into = ev.zero()
    ev.fold(into, {"y": [1], "s": [0.3], "a": ["w"], "w": [0.1]})
    ev.merge_into(into, acc)
    counts = {k[0][1]: (v[0]["count"], v[0]["skipped"]) for k, v in into.items() if k}
    assert counts == {"x": (2, 0), "z": (0, 1), "w": (1, 1)}
    if weighted:
        assert float(into[(("a", "x"),)][0]["weight"]) == 0.75
        assert float(into[(("a", "w"),)][0]["weight"]) == 0.1


def test_accumulator_not_equal_is_the_negation_of_equal():
    ev = Evaluation(label_col="y", score_col="s", slices=["a"], metrics=["precision"])
    a, b = ev.zero(), ev.zero()
    ev.fold(a, {"y": [1, 0], "s": [0.9, 0.1], "a": ["x", "y"]})
    ev.fold(b, {"y": [1, 0], "s": [0.9, 0.1], "a": ["x", "x"]})
    assert (a != b) is True and (a == b) is False
    c = ev.zero()
    ev.fold(c, {"y": [1, 0], "s": [0.9, 0.1], "a": ["x", "x"]})
    plain = _per_slice(ev, [{"y": [1, 0], "s": [0.9, 0.1], "a": ["x", "x"]}])
    assert (c != plain) is False and c == plain


def test_the_accumulator_is_read_only_for_its_users():
    """Issue 12: an opaque core type, not a dict that adapters index and write; only the
    evaluation's operations (fold, merge_into, ...) change it."""
    ev = Evaluation(label_col="y", score_col="s", slices=["a"], metrics=["precision"])
    acc = ev.zero()
    ev.fold(acc, {"y": [1, 0], "s": [0.9, 0.1], "a": ["x", "y"]})
    assert not isinstance(acc, dict)
    with pytest.raises(TypeError):
        acc[(("a", "x"),)] = ev.plan.zero()
    with pytest.raises(TypeError):
        del acc[(("a", "y"),)]
    for name in ("clear", "update", "pop", "setdefault", "popitem", "keys", "values", "get"):
        assert not hasattr(acc, name), name
    with pytest.raises(TypeError, match=r"slices\(\)"):
        iter(acc)
    with pytest.raises(KeyError, match="no slice 'a=z'"):
        acc.states((("a", "z"),))
    # the reads: slice keys in fold order, the overall slice first; hand counts
    assert acc.slices() == [(), (("a", "x"),), (("a", "y"),)] and len(acc) == 3 and (("a", "y"),) in acc
    assert [int(s[0]["count"]) for _, s in acc.items()] == [2, 1, 1]
    assert acc[(("a", "x"),)] == acc.states((("a", "x"),)) and int(acc[(("a", "x"),)][1]["tp"][0]) == 1


@pytest.mark.parametrize("values", [["x", None, "y", None], [None, None, None, None], [1, None, 2, None], [1.5, None, 1.5, None]])
@pytest.mark.parametrize("chunked", [False, True])
def test_dictionary_typed_arrow_slice_column_keeps_its_nulls(values, chunked):
    """A dictionary-encoded Arrow slice column (a Table's ChunkedArray too) slices by its values:
    a null is the missing value, never the dictionary's first entry (nor an IndexError when the
    dictionary is empty)."""
    ev = Evaluation(label_col="y", score_col="s", slices=["a"], metrics=["precision"])
    d = pa.array(values).dictionary_encode()
    data = {"y": pa.array([1, 0, 1, 1]), "s": pa.array([0.5, 0.2, 0.9, 0.1]), "a": d}
    batch = pa.table({k: pa.chunked_array([v[:2], v[2:]]) for k, v in data.items()}) if chunked else pa.RecordBatch.from_pydict(data)
    acc = ev.zero()
    ev.fold(acc, batch)
    want: dict = {}
    for v in values:
        want[v] = want.get(v, 0) + 1
    assert {k[0][1]: int(s[0]["count"]) for k, s in acc.items() if k} == want
    assert acc == _per_slice(ev, [{"y": [1, 0, 1, 1], "s": [0.5, 0.2, 0.9, 0.1], "a": list(values)}])


def test_folding_keeps_the_slices_in_blocks_until_the_accumulator_is_read():
    """Writing the overall slice during a fold must not turn the blocks into per-slice states
    (that made each fold cost a pass over every slice's states)."""
    ev = Evaluation(label_col="y", score_col="s", slices=["a"], metrics=["precision"], weight_col="w")
    acc = ev.zero()
    for _ in range(2):
        ev.fold(acc, {"y": [1, 0], "s": [0.9, 0.1], "a": ["x", "y"], "w": [0.5, 0.25]})
    assert acc._blocks and list(acc._states) == [()]  # the overall slice only, outside the blocks
    assert float(acc[(("a", "x"),)][0]["weight"]) == 1.0 and not acc._blocks


@pytest.mark.parametrize(
    "other_metrics, message",
    [
        (["roc_auc"], "cannot merge state 'score_distribution' into 'binary_confusion'"),
        (["f1@threshold=0.25"], r"cannot merge binary_confusion states: different thresholds \(0.5,\) != \(0.25,\)"),
        (["f1", "roc_auc"], "cannot merge state tuples of different plans"),
    ],
)
def test_merging_sliced_accumulators_of_other_metrics_raises_a_value_error_naming_the_states(other_metrics, message):
    """Found by the newcomer check: blocks of other states raised a bare AssertionError."""
    batch = {"y": [1, 0, 1], "s": [0.2, 0.3, 0.9], "c": ["a", "a", "b"]}
    mine = Evaluation(label_col="y", score_col="s", slices=["c"], metrics=["f1"])
    theirs = Evaluation(label_col="y", score_col="s", slices=["c"], metrics=other_metrics)
    a, b = mine.zero(), theirs.zero()
    mine.fold(a, batch)
    theirs.fold(b, batch)
    with pytest.raises(ValueError, match=message):
        mine.merge(a, b)
    with pytest.raises(ValueError, match=message):  # read as per-slice states first: the same error
        mine.merge(Accumulator(dict(a.items()), a.fingerprint), Accumulator(dict(b.items()), b.fingerprint))


def test_engine_results_warn_once_per_undefined_metric_like_finish():
    """Engines finish slices on workers; ``collect`` on the driver warns as ``finish`` does locally."""
    ev = Evaluation(label_col="y", score_col="s", slices=["c"], metrics=["precision", "recall"])
    acc = ev.zero()
    ev.fold(acc, {"y": [0, 0, 1], "s": [0.1, 0.2, 0.9], "c": ["a", "a", "b"]})
    with pytest.warns(UndefinedMetricWarning) as local:
        slices = ev.finish(acc).slices
    with pytest.warns(UndefinedMetricWarning) as engine:
        ev.collect(slices=slices)
    assert [str(w.message) for w in engine] == [str(w.message) for w in local]
    assert "'precision'" in str(engine[0].message) and "'c=a'" in str(engine[0].message)
