"""The slice-vectorised fold (mergeable_metrics.slicing.grouped) against the per-slice fold, for every state kind.

``Evaluation.fold`` into its :class:`mergeable_metrics.evaluation.evaluation.Accumulator` folds every slice of a spec in
one pass (cell tables, sorted score runs); folding into a plain dict takes each slice's rows out
of the batch and folds them on their own (the first release's fold). On random data with random
slice specs (crosses, filters, missing values, list-valued columns, ``max_slices``), random
batching (empty batches included), skipped invalid rows, weights, Arrow and dict input, both give
the same slices with bit-identical states, also after merging shards and through the codec.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mergeable_metrics import Evaluation
from mergeable_metrics.evaluation.evaluation import Accumulator

#: (task kwargs, metrics): together every state kind of the library
CONFIGS = {
    "binary": (dict(score_col="s"), ["precision", "recall@threshold=0.25", "f1@threshold=0.75", "roc_auc", "roc_auc@pos_label=0"]),
    "binary_small_capacity": (dict(score_col="s"), ["roc_auc@capacity=3", "accuracy"]),
    "binary_calibration": (dict(score_col="s"), ["log_loss", "expected_calibration_error"]),
    "binary_predictions": (dict(prediction_col="p2"), ["precision", "accuracy"]),
    "multiclass": (dict(prediction_col="p", num_classes=3), ["accuracy", "f1@macro", "confusion_matrix"]),
    "multiclass_scores": (dict(score_col="sm", num_classes=3), ["top_k_accuracy@k=2", "roc_auc"]),
    "regression": (dict(prediction_col="r", task="regression"), ["mean_absolute_error", "r2"]),
    "regression_quantiles": (dict(prediction_col="r", task="regression"), ["median_absolute_error@capacity=3", "quantile_absolute_error@q=0.9@capacity=3"]),
    "multioutput": (
        dict(prediction_col="rm", num_outputs=3),
        ["median_absolute_error@multioutput=raw_values@capacity=3", "quantile_absolute_error@q=0.25@capacity=3", "mae"],
    ),
    "measure": (dict(score_col="s", measure_col="m"), ["mean_measure", "precision"]),
    "multilabel": (dict(prediction_col="pl", task="multilabel", num_classes=3), ["f1@micro"]),
}
SPECS = ["a", "b", "a,b", "tags", "a=x,b", "b;max_slices=2", "a,tags", "a;max_slices=1"]


def _columns(spec: str) -> tuple[str, ...]:
    return tuple(part.split("=")[0] for part in spec.split(";")[0].split(","))


def _label_col(config: str) -> str:
    return {"multiclass": "yk", "multiclass_scores": "yk", "regression": "t", "regression_quantiles": "t", "multioutput": "tm", "multilabel": "yl"}.get(
        config, "y"
    )


@st.composite
def cases(draw):
    config = draw(st.sampled_from(sorted(CONFIGS)))
    n = draw(st.integers(0, 80))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    ties = draw(st.booleans())
    s = rng.integers(0, 4, n) / 4.0 if ties else rng.random(n)
    if draw(st.booleans()):  # sorted input: real data arrives that way
        s = np.sort(s)
    sm = rng.random((n, 3))
    sm = sm / sm.sum(axis=1, keepdims=True)
    cols = {
        "y": rng.integers(0, 2, n),
        "yk": rng.integers(0, 3, n),
        "yl": [list(map(int, rng.integers(0, 2, 3))) for _ in range(n)],
        "t": rng.normal(size=n),
        "s": s,
        "p2": rng.integers(0, 2, n),
        "p": rng.integers(0, 3, n),
        "sm": [list(map(float, r)) for r in sm],
        "r": rng.normal(size=n),
        "tm": [list(map(float, r)) for r in np.round(rng.normal(size=(n, 3)), 1)],  # ties: rounded
        "rm": [list(map(float, r)) for r in np.round(rng.normal(size=(n, 3)), 1)],
        "m": rng.normal(size=n),
        "pl": [list(map(int, rng.integers(0, 2, 3))) for _ in range(n)],
        "w": rng.integers(0, 4, n).astype(float) * draw(st.sampled_from([1.0, 0.1])),
        "a": [None if v == 3 else "xyz"[v] for v in rng.integers(0, 4, n)],
        "b": rng.integers(0, 3, n),
        "tags": [[f"t{v}" for v in sorted(set(rng.integers(0, 3, rng.integers(0, 3)).tolist()))] for _ in range(n)],
    }
    skip = draw(st.booleans()) and config in ("binary", "binary_small_capacity", "measure")
    if skip and n:  # invalid scores: skipped and counted per slice
        bad = rng.random(n) < 0.2
        cols["s"] = np.where(bad, np.nan, cols["s"])
    specs = draw(st.lists(st.sampled_from(SPECS), min_size=1, max_size=3, unique_by=_columns))
    weighted = draw(st.booleans())
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=4)))
    arrow = draw(st.booleans())
    shards = draw(st.integers(1, 3))
    return config, cols, specs, weighted, skip, cuts, arrow, shards, n


def _batches(cols: dict, cuts: list[int], n: int, arrow: bool, names: list[str]) -> list:
    bounds = [0, *cuts, n]
    out = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        part = {c: cols[c][lo:hi] for c in names}
        if arrow:
            arrays = {}
            for c, v in part.items():
                if c in ("a", "tags", "yl", "pl", "sm", "tm", "rm"):
                    arrays[c] = pa.array(list(v))
                else:
                    arrays[c] = pa.array(np.asarray(v))
            part = pa.RecordBatch.from_pydict(arrays)
        else:
            part = {c: (list(v) if isinstance(v, list) else np.asarray(v)) for c, v in part.items()}
        out.append(part)
    return out


def _fold(ev: Evaluation, batches: list, acc):
    offset = 0
    for b in batches:
        ev.fold(acc, b, row_offset=offset)
        offset += b.num_rows if hasattr(b, "num_rows") else len(next(iter(b.values())))
    return acc


@settings(max_examples=150)
@given(cases())
def test_vectorised_fold_equals_the_per_slice_fold_for_every_state_kind(case):
    config, cols, specs, weighted, skip, cuts, arrow, shards, n = case
    kw, metrics = CONFIGS[config]
    ev = Evaluation(
        label_col=_label_col(config), slices=specs, metrics=metrics, weight_col="w" if weighted else None,
        on_invalid="skip" if skip else "raise", **kw,
    )  # fmt: skip
    batches = _batches(cols, cuts, n, arrow, ev.columns)
    if ev.needs_profile:
        ev = ev.with_profile(ev.profiler().profile(batches))
    per_slice = _fold(ev, batches, dict(ev.zero().items()))  # a plain dict: slice by slice
    vectorised = _fold(ev, batches, ev.zero())
    assert isinstance(vectorised, Accumulator) and not isinstance(per_slice, Accumulator)
    assert set(vectorised.slices()) == set(per_slice)
    for key, states in per_slice.items():
        assert vectorised[key] == states, key
    # shards folded apart and merged (blocks merge slot by slot) give the same states
    parts = [ev.zero() for _ in range(shards)]
    for i, b in enumerate(batches):
        _fold(ev, [b], parts[i % shards])
    merged = ev.zero()
    for p in reversed(parts):
        ev.merge_into(merged, p)
    assert dict(merged.items()) == per_slice or all(merged[k] == per_slice[k] for k in per_slice) and set(merged) == set(per_slice)
    assert ev.encode(merged) == ev.encode(Accumulator(per_slice, ev.fingerprint))
    # finishing gives the same values as the per-slice accumulator
    got, want = ev.finish(vectorised), ev.finish(Accumulator(per_slice, ev.fingerprint))
    assert [r.slice for r in got.slices] == [r.slice for r in want.slices]


def test_merge_leaves_the_other_accumulators_blocks_unchanged():
    ev = Evaluation(label_col="y", score_col="s", slices=["a"], metrics=["precision", "roc_auc"])
    a, b = ev.zero(), ev.zero()
    ev.fold(a, {"y": [1, 0], "s": [0.9, 0.2], "a": ["x", "y"]})
    ev.fold(b, {"y": [1, 1], "s": [0.4, 0.8], "a": ["x", "z"]})
    before = dict(b.copy().items())
    ev.merge_into(a, b)
    ev.merge_into(a, b)
    assert dict(b.items()) == before
    assert a[(("a", "x"),)][0]["count"] == 1 + 2 * 1
    assert a[(("a", "z"),)][0]["count"] == 2


def test_fold_after_reading_the_accumulator_keeps_adding():
    """Reading turns the blocks into per-slice states; later folds add to them."""
    ev = Evaluation(label_col="y", score_col="s", slices=["a"], metrics=["tp", "roc_auc"])
    acc = ev.zero()
    ev.fold(acc, {"y": [1, 0], "s": [0.9, 0.2], "a": ["x", "x"]})
    assert acc[(("a", "x"),)][0]["count"] == 2
    ev.fold(acc, {"y": [1], "s": [0.7], "a": ["x"]})
    r = ev.finish(acc)[(("a", "x"),)]
    assert r.n == 3 and r.metrics["tp"] == 2.0 and r.metrics["roc_auc"] == 1.0


@pytest.mark.parametrize("capacity", [2, 3, 5])
def test_score_distribution_slices_past_capacity_are_the_compressed_states(capacity):
    """A slice with more distinct scores than the capacity is compressed exactly as its own fold."""
    from mergeable_metrics.states.score_distribution import ScoreDistributionLayout, ScoreDistributionState

    rng = np.random.default_rng(capacity)
    y, s = rng.integers(0, 2, 40), rng.random(40)
    a = np.where(np.arange(40) < 30, "big", "small")
    ev = Evaluation(label_col="y", score_col="s", slices=["a"], metrics=[f"roc_auc@capacity={capacity}"])
    acc = ev.zero()
    for lo in range(0, 40, 7):
        ev.fold(acc, {"y": y[lo : lo + 7], "s": s[lo : lo + 7], "a": list(a[lo : lo + 7])})
    big = next(st_ for st_ in acc[(("a", "big"),)] if isinstance(st_, ScoreDistributionState))
    want = ScoreDistributionState.from_arrays(ScoreDistributionLayout(capacity), s[:30], y[:30])
    assert big == want and big.level > 0


@pytest.mark.parametrize("heavy", [1, 3, 1 << 12])
@pytest.mark.parametrize("capacity", [3, 40_000])
def test_heavy_slots_fold_into_their_own_state_equal_to_the_per_slice_fold(heavy, capacity):
    """Slots with many rows in a batch take the state's own (histogram) fold; the rest are sorted
    together: both give the per-slice fold's states, in any mix across batches and merges."""
    from unittest import mock

    from mergeable_metrics.slicing.grouped import DistributionStack

    rng = np.random.default_rng(heavy + capacity)
    n = 9_000
    cols = {"y": rng.integers(0, 2, n), "s": rng.random(n), "g": np.where(rng.random(n) < 0.9, "big", rng.choice(["a", "b", "c"], n))}
    ev = Evaluation(label_col="y", score_col="s", slices=["g"], metrics=[f"roc_auc@capacity={capacity}", "average_precision@pos_label=0"])
    cuts = [0, 10, 5_000, 5_001, n]
    batches = [{k: v[lo:hi] for k, v in cols.items()} for lo, hi in zip(cuts[:-1], cuts[1:])]
    with mock.patch.object(DistributionStack, "HEAVY", heavy):
        got, parts = ev.zero(), [ev.zero(), ev.zero()]
        for i, b in enumerate(batches):
            ev.fold(got, b)
            ev.fold(parts[i % 2], b)
        merged = ev.merge(ev.merge(ev.zero(), parts[1]), parts[0])
    want = dict(ev.zero().items())
    for b in batches:
        ev.fold(want, b)
    assert set(got.slices()) == set(want) == set(merged.slices())
    for k in want:
        assert got[k] == want[k] and merged[k] == want[k], k


@pytest.mark.parametrize("weights", ["fractional", "integer", "with zeros"])
@pytest.mark.parametrize("capacity", [3, 40_000])
def test_weighted_score_distributions_of_every_slice_equal_the_per_slice_fold(weights, capacity):
    """Weighted rows: exact weight sums per (slice, score) pair; slices past the capacity are
    compressed with their exact sums regrouped, as the state's own fold does."""
    rng = np.random.default_rng(capacity)
    n = 300
    w = {"fractional": rng.random(n), "integer": rng.integers(1, 4, n).astype(float), "with zeros": rng.integers(0, 3, n) * 0.1}[weights]
    cols = {"y": rng.integers(0, 2, n), "s": rng.random(n).round(2), "w": w, "a": list(rng.choice(["x", "y", "z"], n))}
    ev = Evaluation(label_col="y", score_col="s", weight_col="w", slices=["a"], metrics=[f"roc_auc@capacity={capacity}", "average_precision@pos_label=0"])
    got, want = ev.zero(), dict(ev.zero().items())
    for lo in range(0, n, 70):
        part = {k: v[lo : lo + 70] for k, v in cols.items()}
        ev.fold(got, part)
        ev.fold(want, part)
    assert set(got.slices()) == set(want)
    for k in want:
        assert got[k] == want[k], k
