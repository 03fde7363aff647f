"""Slice values on Beam's DirectRunner: every spec kind on sorted bundles with empty ones, -0.0
and 0.0 in different bundles are one slice, NUL-ending strings stay distinct, all-null quantiles
(issue 11, items 1, 2, 8, 11)."""

from __future__ import annotations

import json

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
pytest.importorskip("apache_beam")

from mergeable_metrics import Evaluation  # noqa: E402
from tests._helpers.slice_kinds import METRICS, SPECS, observed, reference, sorted_rows  # noqa: E402
from tests.beam_metrics.test_beam_pipelines import run_compute  # noqa: E402


def _rows(df):
    return [{**r, "tags": list(r["tags"])} for r in df.to_dict("records")]


def test_every_spec_kind_on_sorted_rows_in_small_bundles_with_empty_ones_on_beam(tmp_path):
    df = sorted_rows()
    rows = _rows(df)
    parts = [[], rows[:5], [], rows[5:6], rows[6:40], [], rows[40:]]
    ev = Evaluation(label_col="y", score_col="score", slices=SPECS, metrics=METRICS)
    assert observed(run_compute(parts, ev, tmp_path, batch_size=3)) == reference(df)


def test_every_spec_kind_on_sorted_arrow_batches_with_empty_ones_on_beam(tmp_path):
    df = sorted_rows()
    table = pa.Table.from_pandas(df, preserve_index=False)
    batches = table.to_batches(max_chunksize=4)
    empty = pa.RecordBatch.from_pylist([], schema=table.schema)
    parts = [[empty], batches[:3] + [empty], [], batches[3:]]
    ev = Evaluation(label_col="y", score_col="score", slices=SPECS, metrics=METRICS)
    assert observed(run_compute(parts, ev, tmp_path / "arrow")) == reference(df)


def test_negative_zero_slice_values_merge_on_beam(tmp_path):
    rows = [{"y": 1, "s": 0.9, "x": -0.0}] * 3 + [{"y": 0, "s": 0.2, "x": 0.0}] * 5 + [{"y": 1, "s": 0.7, "x": 1.5}] * 2
    ev = Evaluation(label_col="y", score_col="s", slices=["x"], metrics=["tp", "fp", "tn"])
    got = run_compute([rows[:3], rows[3:]], ev, tmp_path, batch_size=2)
    assert {s.slice: s.n for s in got.slices} == {(): 10, (("x", 0),): 8, (("x", 1.5),): 2}
    assert json.dumps(json.loads(got.to_json())["slices"][1]["slice"]) == '{"x": 0}'  # one JSON text, not -0.0 or 0.0


def test_strings_ending_in_nul_stay_distinct_slices_on_beam(tmp_path):
    rows = [{"y": 1, "s": 0.9, "x": "a"}] * 3 + [{"y": 0, "s": 0.2, "x": "a\x00"}] * 5
    ev = Evaluation(label_col="y", score_col="s", slices=["x"], metrics=["tp", "fp"])
    got = run_compute([rows[:4], rows[4:]], ev, tmp_path, batch_size=3)
    assert {s.slice: s.n for s in got.slices} == {(): 8, (("x", "a"),): 3, (("x", "a\x00"),): 5}


def test_quantiles_of_an_all_null_column_on_beam(tmp_path):
    rows = [{"y": 1, "s": 0.9, "x": None}] * 3 + [{"y": 0, "s": 0.2, "x": float("nan")}] * 2
    ev = Evaluation(label_col="y", score_col="s", slices=["x:quantiles=4"], metrics=["tp", "fp"])
    got = run_compute([rows[:2], [], rows[2:]], ev, tmp_path, batch_size=2)
    assert {s.slice: s.n for s in got.slices} == {(): 5, (("x", None),): 5}
    assert np.isclose(got[(("x", None),)].metrics["tp"], 3)
