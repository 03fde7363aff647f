"""End-to-end tests of the Beam adapter on the DirectRunner (never Prism: it downloads a binary).

References are independent of the adapter: core's direct fold over all rows
(``evaluation.finish(evaluation.fold(evaluation.zero(), rows))``) and scikit-learn. Pipeline output
is collected through a single-shard text sink and read back.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
pd = pytest.importorskip("pandas")
sklearn_metrics = pytest.importorskip("sklearn.metrics")

import apache_beam as beam  # noqa: E402
from apache_beam.options.pipeline_options import PipelineOptions  # noqa: E402
from apache_beam.testing.util import BeamAssertException, assert_that  # noqa: E402
from apache_beam.transforms import window  # noqa: E402

import mergeable_metrics  # noqa: E402
from mergeable_metrics.beam import ComputeMetrics, MetricsCombineFn, slice_result_from_json, slice_result_to_json  # noqa: E402

SLICES = ["carrier", "origin", "carrier,origin"]
REPO_ROOT = str(Path(__file__).resolve().parents[2])


# -- helpers ----------------------------------------------------------------------------------------
def binary_evaluation(**kw: Any) -> mergeable_metrics.Evaluation:
    args = dict(label_col="label", score_col="score", weight_col="weight", slices=SLICES)
    args.update(kw)
    return mergeable_metrics.Evaluation(**args)


def direct(ev: mergeable_metrics.Evaluation, rows: list) -> mergeable_metrics.Results:
    return ev.finish(ev.fold(ev.zero(), rows))


def pipeline(**options: Any) -> beam.Pipeline:
    return beam.Pipeline(runner="DirectRunner", options=PipelineOptions(**options))


def split(rows: list, sizes: list[int]) -> list[list]:
    """Consecutive chunks of the given sizes plus the rest; the caller adds empty ones."""
    out, start = [], 0
    for s in sizes:
        out.append(rows[start : start + s])
        start += s
    out.append(rows[start:])
    return out


def flattened(p: beam.Pipeline, parts: list[list]) -> beam.PCollection:
    """One ``beam.Create`` per part (empty parts included), Flattened."""
    pcolls = [p | f"Create{i}" >> beam.Create(part) for i, part in enumerate(parts)]
    return pcolls | "Flatten" >> beam.Flatten()


def write_slices(pcoll: beam.PCollection, prefix: str) -> None:
    _ = pcoll | "ToJson" >> beam.Map(slice_result_to_json) | "Write" >> beam.io.WriteToText(prefix)


def read_lines(prefix: str) -> list[str]:
    lines: list[str] = []
    for path in sorted(Path(prefix).parent.glob(Path(prefix).name + "*")):
        lines += [line for line in path.read_text().splitlines() if line]
    return lines


def run_compute(parts: list[list], ev: mergeable_metrics.Evaluation, tmp_path: Path, batch_size: int = 4096, **options: Any) -> mergeable_metrics.Results:
    """Run ComputeMetrics over Flattened Creates and return the collected, sorted Results."""
    prefix = str(tmp_path / "slices")
    with pipeline(**options) as p:
        write_slices(flattened(p, parts) | ComputeMetrics(ev, batch_size=batch_size), prefix)
    lines = read_lines(prefix)
    got = [slice_result_from_json(line) for line in lines]
    assert len({s.slice for s in got}) == len(got), "one element per slice"
    # each element's slice is one dict: SliceResult.key, written as metrics.json's "slice"
    assert [json.loads(line)["slice"] for line in lines] == [s.key for s in got]
    return ev.collect(slices=got)


def assert_results_equal(got: mergeable_metrics.Results, want: mergeable_metrics.Results) -> None:
    """Every slice's key, n, weight, skipped and metric values equal exactly (NaN == NaN)."""
    assert [s.slice for s in got.slices] == [s.slice for s in want.slices]
    for g, w in zip(got.slices, want.slices):
        assert (g.n, g.weight, g.skipped) == (w.n, w.weight, w.skipped), g.slice
        assert list(g.metrics) == list(w.metrics), g.slice
        for k in w.metrics:
            np.testing.assert_array_equal(np.asarray(g.metrics[k]), np.asarray(w.metrics[k]), err_msg=f"{g.slice} {k}")


def assert_binary_matches_sklearn(results: mergeable_metrics.Results, rows: list, threshold: float = 0.5) -> None:
    """Every slice (overall and each slice value) against scikit-learn with sample weights."""
    checked = 0
    for s in results.slices:
        sel = [r for r in rows if all(r[c] == v for c, v in s.slice)]
        y = np.array([r["label"] for r in sel])
        pred = (np.array([r["score"] for r in sel]) >= threshold).astype(int)
        w = np.array([r["weight"] for r in sel], dtype=float)
        assert s.n == len(sel) and s.weight == w.sum()
        refs = {
            "accuracy": sklearn_metrics.accuracy_score(y, pred, sample_weight=w),
            "precision": sklearn_metrics.precision_score(y, pred, sample_weight=w),
            "recall": sklearn_metrics.recall_score(y, pred, sample_weight=w),
            "f1": sklearn_metrics.f1_score(y, pred, sample_weight=w),
        }
        for k, ref in refs.items():
            assert math.isfinite(s.metrics[k])
            assert abs(s.metrics[k] - ref) <= 1e-12, (s.slice, k, s.metrics[k], ref)
        checked += 1
    assert checked == 1 + 4 + 3 + 12


# -- results equal core's and scikit-learn's -----------------------------------------------------
def test_rows_match_core_and_sklearn(make_rows, tmp_path):
    rows = make_rows(2000, seed=11)
    ev = binary_evaluation()
    parts = split(rows, [700, 0, 1, 599]) + [[]]
    got = run_compute(parts, ev, tmp_path, batch_size=256)
    want = direct(ev, rows)
    assert_results_equal(got, want)
    assert (("carrier", None),) in {s.slice for s in got.slices}  # the None slice value is kept
    assert {"carrier": None} in [s.key for s in got] and got[{"carrier": None}].key == {"carrier": None}
    assert_binary_matches_sklearn(got, rows)


def test_arrow_record_batches_match_core(make_rows, tmp_path):
    rows = make_rows(2000, seed=12)
    ev = binary_evaluation()
    # Several Creates, each of several record batches (plus an empty Create and an empty batch).
    batches = [pa.RecordBatch.from_pylist(rows[i : i + 300]) for i in range(0, 2000, 300)]
    empty = pa.RecordBatch.from_pylist([], schema=batches[0].schema)
    parts = [batches[:3], [], batches[3:5] + [empty], batches[5:]]
    got = run_compute(parts, ev, tmp_path)
    assert_results_equal(got, direct(ev, rows))
    assert_binary_matches_sklearn(got, rows)


def test_column_dicts_and_mixed_kinds_match_core(make_rows, tmp_path):
    rows = make_rows(2000, seed=13)
    ev = binary_evaluation()

    def as_columns(chunk: list, kind: str) -> dict:
        cols = {k: [r[k] for r in chunk] for k in chunk[0]}
        if kind == "numpy":
            return {k: np.array(v, dtype=object if k in ("carrier", "origin", "unused") else None) for k, v in cols.items()}
        if kind == "arrow":
            return {k: pa.array(v) for k, v in cols.items()}
        return cols  # plain lists

    col_parts = [
        [as_columns(rows[0:400], "numpy"), as_columns(rows[400:700], "lists")],
        [],
        [as_columns(rows[700:1000], "arrow")],
    ]
    mixed = [rows[1000:1300], [pd.DataFrame(rows[1300:1500]), pa.Table.from_pylist(rows[1500:1600]), rows[1600:1700]], rows[1700:]]
    got = run_compute(col_parts + mixed, ev, tmp_path, batch_size=128)
    assert_results_equal(got, direct(ev, rows))
    assert_binary_matches_sklearn(got, rows)


def test_multiclass_matches_sklearn(tmp_path):
    rng = np.random.default_rng(21)
    n, k = 1500, 4
    y = rng.integers(0, k, n)
    p = np.where(rng.random(n) < 0.6, y, rng.integers(0, k, n))
    w = rng.integers(1, 5, n)
    g = rng.choice(np.array(["x", "y"], dtype=object), n)
    rows = [{"y": int(y[i]), "p": int(p[i]), "w": int(w[i]), "g": g[i]} for i in range(n)]
    ev = mergeable_metrics.Evaluation(
        label_col="y", prediction_col="p", weight_col="w", num_classes=k, slices=["g"],
        metrics=["f1@macro", "f1@none", "confusion_matrix", "accuracy"],
    )  # fmt: skip
    got = run_compute(split(rows, [500, 0, 600]), ev, tmp_path, batch_size=200)
    assert_results_equal(got, direct(ev, rows))
    for s in got.slices:
        m = np.ones(n, dtype=bool) if not s.slice else g == s.slice[0][1]
        yy, pp, ww = y[m], p[m], w[m].astype(float)
        assert s.n == m.sum()
        assert abs(s.metrics["f1@macro"] - sklearn_metrics.f1_score(yy, pp, average="macro", sample_weight=ww)) <= 1e-12
        np.testing.assert_allclose(s.metrics["f1@none"], sklearn_metrics.f1_score(yy, pp, average=None, labels=range(k), sample_weight=ww), rtol=0, atol=1e-12)
        np.testing.assert_array_equal(s.metrics["confusion_matrix"], sklearn_metrics.confusion_matrix(yy, pp, labels=range(k), sample_weight=ww))
        assert abs(s.metrics["accuracy"] - sklearn_metrics.accuracy_score(yy, pp, sample_weight=ww)) <= 1e-12


# -- empty input ---------------------------------------------------------------------------------
def _check_empty_results(results_list: list) -> None:
    if len(results_list) != 1:
        raise BeamAssertException(f"expected one Results, got {len(results_list)}")
    res = results_list[0]
    if [s.slice for s in res.slices] != [()]:
        raise BeamAssertException(f"expected only the overall slice, got {[s.slice for s in res.slices]}")
    o = res.overall
    if (o.n, o.weight, o.skipped) != (0, 0.0, 0) or not all(math.isnan(v) for v in o.metrics.values()):
        raise BeamAssertException(f"expected n=0 and NaN metrics, got {o}")
    if sorted(o.metrics) != ["accuracy", "f1", "precision", "recall"]:
        raise BeamAssertException(f"unexpected metrics {sorted(o.metrics)}")


def test_empty_input_combine_globally_and_compute_metrics(tmp_path):
    ev = binary_evaluation()
    prefix = str(tmp_path / "slices")
    with pipeline() as p:
        empty = p | beam.Create([])
        assert_that(empty | "Globally" >> beam.CombineGlobally(MetricsCombineFn(ev)), _check_empty_results)
        write_slices(empty | ComputeMetrics(ev), prefix)
    got = [slice_result_from_json(line) for line in read_lines(prefix)]
    assert [s.slice for s in got] == [()]
    assert got[0].n == 0 and all(math.isnan(v) for v in got[0].metrics.values())


# -- CombinePerKey ---------------------------------------------------------------------------------
def _keyed_line(kv: tuple) -> str:
    key, results = kv
    return json.dumps({"key": key, "results": results.to_dict()}, allow_nan=False)


def test_combine_per_key_gives_each_key_its_own_results(make_rows, tmp_path):
    rows_a = make_rows(600, seed=31)
    rows_b = make_rows(450, seed=32, score_shift=0.2)  # a different model: different predictions
    ev = binary_evaluation(slices=["carrier"])
    keyed = [("model_a", r) for r in rows_a] + [("model_b", r) for r in rows_b]
    prefix = str(tmp_path / "keyed")
    with pipeline() as p:
        pcoll = flattened(p, [keyed[:400], [], keyed[400:800], keyed[800:]])
        out = pcoll | beam.CombinePerKey(MetricsCombineFn(ev, batch_size=100))
        _ = out | beam.Map(_keyed_line) | beam.io.WriteToText(prefix)
    got = {}
    for line in read_lines(prefix):
        d = json.loads(line)
        got[d["key"]] = mergeable_metrics.Results.from_dict(d["results"])
    assert sorted(got) == ["model_a", "model_b"]
    assert_results_equal(got["model_a"], direct(ev, rows_a))
    assert_results_equal(got["model_b"], direct(ev, rows_b))
    assert got["model_a"].overall.metrics["recall"] != got["model_b"].overall.metrics["recall"]


# -- invalid data ----------------------------------------------------------------------------------
def test_nan_score_error_names_column_and_value(make_rows):
    rows = make_rows(300, seed=41)
    rows[123] = dict(rows[123], score=float("nan"))
    ev = binary_evaluation(score_col="score")
    with pytest.raises(Exception) as exc:
        with pipeline() as p:
            _ = p | beam.Create(rows) | ComputeMetrics(ev, batch_size=50)
    msg = str(exc.value)
    assert "'score'" in msg and "nan" in msg, msg[:2000]
    assert "scores must be finite" in msg


def test_on_invalid_skip_reports_skipped_per_slice(make_rows, tmp_path):
    rows = make_rows(1200, seed=42)
    rng = np.random.default_rng(43)
    bad_idx = rng.choice(len(rows), 90, replace=False)
    for j, i in enumerate(bad_idx):
        kind = j % 3
        if kind == 0:
            rows[i] = dict(rows[i], score=float("nan"))
        elif kind == 1:
            rows[i] = dict(rows[i], label=2)
        else:
            rows[i] = dict(rows[i], weight=-1)
    ev = binary_evaluation(on_invalid="skip")
    got = run_compute(split(rows, [400, 0, 500]), ev, tmp_path, batch_size=100)
    assert_results_equal(got, direct(ev, rows))

    bad = set(int(i) for i in bad_idx)
    for s in got.slices:
        in_slice = [i for i, r in enumerate(rows) if all(r[c] == v for c, v in s.slice)]
        assert s.skipped == sum(i in bad for i in in_slice), s.slice
        assert s.n == sum(i not in bad for i in in_slice), s.slice
    assert got.overall.skipped == 90
    valid = [r for i, r in enumerate(rows) if i not in bad]
    y = np.array([r["label"] for r in valid])
    pred = (np.array([r["score"] for r in valid]) >= 0.5).astype(int)
    w = np.array([r["weight"] for r in valid], dtype=float)
    assert abs(got.overall.metrics["f1"] - sklearn_metrics.f1_score(y, pred, sample_weight=w)) <= 1e-12


# -- windowing ------------------------------------------------------------------------------------
def _with_window_start(sr: mergeable_metrics.SliceResult, w=beam.DoFn.WindowParam) -> str:
    return json.dumps({"window_start": float(w.start), "slice": json.loads(slice_result_to_json(sr))})


def test_fixed_windows_compute_per_window(make_rows, tmp_path):
    rows = make_rows(400, seed=51)
    ev = binary_evaluation(slices=["origin"])
    stamped = [window.TimestampedValue(r, 10.0 * (i % 3 == 0) + 1.0) for i, r in enumerate(rows)]  # windows [0,10) and [10,20)
    prefix = str(tmp_path / "windows")
    with pipeline() as p:
        out = p | beam.Create(stamped) | beam.WindowInto(window.FixedWindows(10)) | ComputeMetrics(ev)
        _ = out | beam.Map(_with_window_start) | beam.io.WriteToText(prefix)
    by_window: dict[float, list] = {}
    for line in read_lines(prefix):
        d = json.loads(line)
        by_window.setdefault(d["window_start"], []).append(slice_result_from_json(json.dumps(d["slice"])))
    assert sorted(by_window) == [0.0, 10.0]
    assert_results_equal(ev.collect(slices=by_window[10.0]), direct(ev, rows[0::3]))
    assert_results_equal(ev.collect(slices=by_window[0.0]), direct(ev, [r for i, r in enumerate(rows) if i % 3]))
