"""ComputeMetrics with the slice-vectorised fold on inputs that attack it: Arrow slice columns of
every flavour across bundles (string, large_string, dictionary-typed, chunked tables), slices whose
rows are all skipped in one bundle (merged by MetricsCombineFn without a coder in between), against
core's per-slice fold (a plain dict) and hand counts."""

from __future__ import annotations

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")

import mergeable_metrics  # noqa: E402
from mergeable_metrics.evaluation.evaluation import Accumulator  # noqa: E402
from tests.beam_metrics.test_beam_pipelines import assert_results_equal, run_compute  # noqa: E402


def _parts():
    rng = np.random.default_rng(7)
    vals = ["a", "a\x00", "", "é", None, "b"]

    def cols(n, bad=False):
        s = rng.random(n)
        if bad:
            s[:] = np.nan
        return {"label": rng.integers(0, 2, n), "score": s, "weight": rng.integers(1, 5, n) * 0.1}

    def flav(values, kind):
        return {"string": pa.array(values, pa.string()), "large": pa.array(values, pa.large_string()),
                "dict": pa.array(values, pa.string()).dictionary_encode()}[kind]  # fmt: skip

    parts = []
    for i, kind in enumerate(["string", "large", "dict", "string"]):
        a = [vals[j] for j in rng.integers(0, len(vals), 40)]
        c = {k: pa.array(v) for k, v in cols(40).items()}
        c["a"] = flav(a, kind)
        parts.append([pa.RecordBatch.from_pydict(c)])
        # a bundle whose last slices saw only skipped rows (invalid scores)
        c = {k: pa.array(v) for k, v in cols(3, bad=True).items()}
        c["a"] = flav([f"only-skipped-{i}", "zz", None], kind)
        parts[-1].append(pa.RecordBatch.from_pydict(c))
    parts.append([])
    t = {k: pa.array(v) for k, v in cols(30).items()}
    t["a"] = pa.array([vals[j] for j in rng.integers(0, len(vals), 30)])
    parts.append([pa.Table.from_batches([pa.RecordBatch.from_pydict(t).slice(0, 10), pa.RecordBatch.from_pydict(t).slice(10)])])
    return parts


def test_beam_slices_of_every_arrow_flavour_with_skipped_only_slices_equal_the_per_slice_fold(tmp_path):
    ev = mergeable_metrics.Evaluation(
        label_col="label", score_col="score", weight_col="weight", slices=["a"],
        metrics=["accuracy", "precision", "roc_auc", "tp"], on_invalid="skip",
    )  # fmt: skip
    parts = _parts()
    got = run_compute(parts, ev, tmp_path, batch_size=16)
    acc = dict(ev.zero().items())
    offset = 0
    for part in parts:
        for b in part:
            ev.fold(acc, b, row_offset=offset)
            offset += b.num_rows
    want = ev.finish(Accumulator(acc, ev.fingerprint))
    assert want[(("a", "zz"),)].skipped == 4 and want[(("a", "zz"),)].n == 0
    assert_results_equal(got, want)


def test_beam_merge_accumulators_of_bundles_whose_last_slices_saw_only_skipped_rows():
    """MetricsCombineFn.merge_accumulators merges the bundles' blocks as they are (no coder in
    between): a slice that only had skipped rows in a bundle must not receive another slice's
    counts."""
    from mergeable_metrics.beam import MetricsCombineFn

    ev = mergeable_metrics.Evaluation(label_col="label", score_col="score", slices=["a"], metrics=["tp", "fp"], on_invalid="skip")
    fn = MetricsCombineFn(ev)
    one, two = fn.create_accumulator(), fn.create_accumulator()
    one = fn.add_input(one, pa.RecordBatch.from_pydict({"label": [1, 0], "score": [0.9, 0.8], "a": ["x", "x"]}))
    one = fn.add_input(one, pa.RecordBatch.from_pydict({"label": [1, 1], "score": [np.nan, np.nan], "a": ["y", "z"]}))
    two = fn.add_input(two, pa.RecordBatch.from_pydict({"label": [1], "score": [0.7], "a": ["z"]}))
    results = fn.extract_output(fn.merge_accumulators([two, one]))
    got = {r.slice: (r.n, r.skipped, r.metrics["tp"], r.metrics["fp"]) for r in results}
    assert got[(("a", "x"),)] == (2, 0, 1.0, 1.0)
    assert got[(("a", "y"),)] == (0, 1, 0.0, 0.0)
    assert got[(("a", "z"),)] == (1, 1, 1.0, 0.0)
