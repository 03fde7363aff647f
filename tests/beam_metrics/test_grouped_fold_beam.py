"""ComputeMetrics with the slice-vectorised fold on inputs that attack it: Arrow slice columns of
every flavour across bundles (string, large_string, dictionary-typed, chunked tables), slices whose
rows are all skipped in one bundle, against core's per-slice fold (a plain dict)."""

from __future__ import annotations

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")

import core  # noqa: E402
from core.evaluation import Accumulator  # noqa: E402
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
    ev = core.Evaluation(
        label_col="label", score_col="score", weight_col="weight", slices=["a", "a;max_slices=3"][:1],
        metrics=["accuracy", "precision", "roc_auc", "tp"], on_invalid="skip",
    )  # fmt: skip
    parts = _parts()
    got = run_compute(parts, ev, tmp_path, batch_size=16)
    acc = dict(ev.zero())
    offset = 0
    for part in parts:
        for b in part:
            ev.fold(acc, b, row_offset=offset)
            offset += b.num_rows
    want = ev.finish(Accumulator(acc, ev.fingerprint))
    assert want[(("a", "zz"),)].skipped == 4 and want[(("a", "zz"),)].n == 0
    assert_results_equal(got, want)
