"""Folding rows into bins already known (mergeable_metrics.states.score_bins.BinLookup, fold_bins_by_lookup and the
score-distribution stack's known slots): the states must be exactly the canonical states of the
data, i.e. those built from all the rows at once by ``bin_scores`` (no lookup involved)."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mergeable_metrics import Evaluation
from mergeable_metrics.states import score_bins
from mergeable_metrics.slicing.grouped import DistributionStack
from mergeable_metrics.states.score_bins import BinLookup, bin_scores, fold_bins_by_lookup, lookup_cells, merge_bins, score_keys
from mergeable_metrics.states.score_distribution import ScoreDistributionLayout, ScoreDistributionState

SPECIAL = [0.0, -0.0, 1.0, 0.5, -0.5, 1e-300, -1e300, 5e-324, 2.0**-1074, 1.7976931348623157e308, 0.25, 0.75]


@st.composite
def scores(draw, max_size=400):
    """Scores mixing special values, values of few distinct digits, and arbitrary floats."""
    n = draw(st.integers(0, max_size))
    seed = draw(st.integers(0, 2**32 - 1))
    kind = draw(st.sampled_from(["uniform", "normal", "rounded", "special", "logits"]))
    rng = np.random.default_rng(seed)
    if kind == "uniform":
        s = rng.random(n)
    elif kind == "normal":
        s = rng.normal(0, 3, n)
    elif kind == "rounded":
        s = np.round(rng.random(n), int(rng.integers(1, 4)))
    elif kind == "special":
        s = rng.choice(np.array(SPECIAL), n)
    else:
        s = np.exp(rng.normal(0, 30, n)) * rng.choice([-1.0, 1.0], n)
    return s.astype(np.float64), rng.integers(0, 2, n).astype(np.int64)


@settings(max_examples=300)
@given(scores(), scores(), st.sampled_from([1, 2, 3, 7, 50, 1000]))
def test_fold_by_lookup_is_the_merge_of_the_canonical_bins(old, new, capacity):
    (s0, y0), (s1, y1) = old, new
    if s0.size == 0:
        return
    bins = bin_scores(s0, y0, None, capacity)
    with mock.patch.object(score_bins, "LOOKUP_CELLS_PER_ROW", 1 << 40):  # whatever the table's cost
        got = fold_bins_by_lookup(bins, score_keys(s1), y1, capacity)
    cells = lookup_cells(bins[0], bins[2])
    assert (got is None) == (cells is None or cells > score_bins.LOOKUP_CELLS or s1.size == 0)
    if got is None:
        return
    want = merge_bins(bins, bin_scores(s1, y1, None, capacity), capacity) if s1.size else bins
    assert got[2] == want[2]
    np.testing.assert_array_equal(got[0], want[0])
    assert got[1].dtype == np.float64 and np.array_equal(got[1], want[1])


@settings(max_examples=200)
@given(st.lists(scores(max_size=200), min_size=1, max_size=4), st.integers(0, 2**32 - 1))
def test_lookup_cells_are_the_positions_of_each_part(parts_data, seed):
    """Each row's table value is 2 x the position of ``key >> level`` among its part's bins
    (positions counted over the parts in order), else the miss value; reference: searchsorted."""
    rng = np.random.default_rng(seed)
    parts = []
    for s, y in parts_data:
        if s.size:
            k, _, level = bin_scores(s, y, None, int(rng.choice([1, 3, 20])))
            if lookup_cells(k, level) is not None and lookup_cells(k, level) <= score_bins.LOOKUP_CELLS:
                parts.append((k, level))
    if not parts:
        return
    lookup = BinLookup(parts)
    pool = np.concatenate([s for s, _ in parts_data] + [rng.normal(0, 10, 50), np.array(SPECIAL)])
    keys = score_keys(pool[rng.integers(0, pool.size, 300)])
    part = rng.integers(0, len(parts), keys.size)
    got = lookup.cells(keys, part)
    start = 0
    want = np.empty(keys.size, dtype=np.int64)
    for i, (k, level) in enumerate(parts):
        b = keys[part == i] >> np.int64(level)
        at = np.minimum(np.searchsorted(k, b), k.size - 1)
        want[part == i] = np.where(k[at] == b, 2 * (start + at), lookup.miss)
        start += k.size
    np.testing.assert_array_equal(got, want)
    if len(parts) == 1:
        np.testing.assert_array_equal(lookup.cells(keys), lookup.cells(keys, np.zeros(keys.size, np.int64)))


@pytest.mark.parametrize("capacity", [5, 300, 2_000])
@pytest.mark.parametrize("sort_rows", [False, True])
def test_known_slots_of_a_block_are_the_canonical_states_of_their_rows(capacity, sort_rows):
    """Heavy slots whose states already have bins take the lookup (no split by slot): with new
    bins, a level raised by new rows, slots new in a batch, light slots and merges, every
    slice's state equals ``from_arrays`` of all its rows, and the per-slice fold."""
    rng = np.random.default_rng(capacity)
    batches, rows = [], {}
    for i in range(6):
        n = int(rng.integers(3_000, 9_000))
        s = np.round(rng.normal(0, 1, n), int(rng.integers(2, 5))) if i % 2 else rng.random(n) ** 3
        y = rng.integers(0, 2, n)
        g = rng.choice(["a", "b", "c", "d"] + (["e"] if i >= 2 else []), n, p=[0.4, 0.3, 0.2, 0.09, 0.01] if i >= 2 else [0.4, 0.3, 0.2, 0.1])
        if sort_rows:
            order = np.argsort(s, kind="stable")
            s, y, g = s[order], y[order], g[order]
        batches.append(pa.table({"y": y, "s": s, "g": pa.array(g.tolist())}))
        for v in np.unique(g):
            ss, yy = rows.get(v, (np.zeros(0), np.zeros(0, np.int64)))
            rows[v] = (np.concatenate([ss, s[g == v]]), np.concatenate([yy, y[g == v]]))
    ev = Evaluation(label_col="y", score_col="s", slices=["g"], metrics=[f"roc_auc@capacity={capacity}", "precision"])
    calls = []
    real = DistributionStack._fold_known

    def spy(self, *args):
        calls.append(int(args[3].sum()))
        return real(self, *args)

    with (
        mock.patch.object(DistributionStack, "HEAVY", 500),
        mock.patch.object(DistributionStack, "_fold_known", spy),
        mock.patch("mergeable_metrics.slicing.grouped.LOOKUP_CELLS_PER_ROW", 1 << 40),  # the lookup whatever its table's cost
    ):
        acc, parts = ev.zero(), [ev.zero(), ev.zero()]
        for i, b in enumerate(batches):
            ev.fold(acc, b)
            ev.fold(parts[i % 2], b)
        merged = ev.merge(parts[0], parts[1])
    if capacity > 5:  # (capacity 5: levels above 52, no lookup: the sorted path)
        assert calls and max(calls) >= 3  # the lookup path ran, for several slots at once
    layout = ScoreDistributionLayout(capacity)
    per_slice = dict(ev.zero().items())  # a plain dict: slice by slice
    for b in batches:
        ev.fold(per_slice, b)
    for v, (s, y) in rows.items():
        key = (("g", v),)
        want = ScoreDistributionState.from_arrays(layout, s, y)
        for a in (acc, merged, per_slice):
            got = next(x for x in a[key] if isinstance(x, ScoreDistributionState))
            assert got == want, (v, got, want)
    overall = next(x for x in acc[()] if isinstance(x, ScoreDistributionState))
    assert overall == ScoreDistributionState.from_arrays(layout, np.concatenate([r[0] for r in rows.values()]), np.concatenate([r[1] for r in rows.values()]))


def test_capacity_one_with_scores_of_both_signs_merges_at_the_top_level():
    """Capacity 1 (the bin functions' own; states take capacities >= 2, where level 63's at most two bins fit):
    scores of both signs keep two bins at level 63 (a bin never spans the sign); merging such bins raised
    StopIteration (found by the property test above: old (0.51, 0.95), new (0.38, -0.40))."""
    old_s, old_y = np.array([0.51182162, 0.9504637]), np.array([0, 0])
    new_s, new_y = np.array([0.37719066, -0.39631459]), np.array([0, 0])
    old, new = bin_scores(old_s, old_y, None, 1), bin_scores(new_s, new_y, None, 1)
    assert new[2] == 63 and new[0].size == 2  # one bin per sign, at the top level
    got = merge_bins(old, new, 1)
    want = bin_scores(np.concatenate([old_s, new_s]), np.concatenate([old_y, new_y]), None, 1)
    assert got[2] == want[2] == 63
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
