"""ComputeMetrics merges partial states by slice key (``CombinePerKey``), not in one accumulator.

Each bundle's fold emits one element per slice; ``MergeSliceStatesFn`` records, as the Beam
distribution ``beam_metrics/slices_per_accumulator``, how many distinct slice keys each finished
accumulator merged (the gather, for the overall slice whose shards it merges). Under ``CombinePerKey`` by slice key that is exactly one, for every slice,
whatever the bundles, the sort order of the input, empty parts or worker processes. Results
equal ``CombineGlobally(MetricsCombineFn)`` (the previous implementation) in the same pipeline
and core's direct ``Evaluation.evaluate`` of the same rows.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

pa = pytest.importorskip("pyarrow")

import apache_beam as beam  # noqa: E402
from apache_beam.metrics.metric import MetricsFilter  # noqa: E402
from apache_beam.options.pipeline_options import PipelineOptions  # noqa: E402

import mergeable_metrics  # noqa: E402
from mergeable_metrics.beam import ComputeMetrics, MetricsCombineFn, slice_result_from_json  # noqa: E402
from mergeable_metrics.beam.per_slice import MergeSliceStatesFn, SliceStates, SliceStatesCoder  # noqa: E402
from mergeable_metrics.states import codec  # noqa: E402
from tests.beam_metrics.test_beam_pipelines import REPO_ROOT, assert_results_equal, flattened, read_lines, split, write_slices  # noqa: E402


def evaluation(**kw: Any) -> mergeable_metrics.Evaluation:
    args = dict(
        label_col="label", score_col="score", weight_col="weight",
        slices=["carrier", "origin", "carrier,origin"],
        metrics=["accuracy", "precision", "recall", "roc_auc", "tp"],
    )  # fmt: skip
    args.update(kw)
    return mergeable_metrics.Evaluation(**args)


def _parts(rows: list[dict]) -> list[list]:
    """Row dicts, an empty Create, Arrow batches with an empty one, lists of rows."""
    chunks = split(rows, [250, 0, 300, 200])
    batches = [pa.RecordBatch.from_pylist(chunks[2][i : i + 100]) for i in range(0, 300, 100)]
    empty = pa.RecordBatch.from_pylist([], schema=batches[0].schema)
    return [chunks[0], [], batches + [empty], [chunks[3][i : i + 40] for i in range(0, 200, 40)], chunks[4], []]


def _run(
    parts: list[list], ev: mergeable_metrics.Evaluation, tmp_path: Path, name: str, globally: bool = True, **options: Any
) -> tuple[mergeable_metrics.Results, mergeable_metrics.Results | None, Any]:
    """(ComputeMetrics results, CombineGlobally(MetricsCombineFn) results of the same pipeline or
    None, the distribution of slice keys per finished accumulator)."""
    prefix = str(tmp_path / name / "slices")
    p = beam.Pipeline(runner="DirectRunner", options=PipelineOptions([], **options))
    pcoll = flattened(p, parts)
    write_slices(pcoll | ComputeMetrics(ev, batch_size=64), prefix)
    if globally:
        _ = (
            pcoll
            | "Globally" >> beam.CombineGlobally(MetricsCombineFn(ev, batch_size=64))
            | "GloballyJson" >> beam.Map(lambda r: json.dumps(r.to_dict(), allow_nan=False))
            | "WriteGlobally" >> beam.io.WriteToText(str(tmp_path / name / "globally"))
        )
    result = p.run()
    result.wait_until_finish()
    got = [slice_result_from_json(line) for line in read_lines(prefix)]
    assert len({s.slice for s in got}) == len(got), "one element per slice"
    old = None
    if globally:
        (line,) = read_lines(str(tmp_path / name / "globally"))
        old = mergeable_metrics.Results.from_dict(json.loads(line))
    dists = result.metrics().query(MetricsFilter().with_namespace("mergeable_metrics.beam").with_name("slices_per_accumulator"))["distributions"]
    # the per-slice merge's step, and the gather's, which merges the overall slice's shards
    assert 1 <= len(dists) <= 2, dists
    parts = [d.committed for d in dists]
    dist = SimpleNamespace(count=sum(d.count for d in parts), min=min(d.min for d in parts), max=max(d.max for d in parts), sum=sum(d.sum for d in parts))
    return ev.collect(slices=got), old, dist


def _check(got: mergeable_metrics.Results, globally: mergeable_metrics.Results, dist: Any, ev: mergeable_metrics.Evaluation, rows: list[dict]) -> None:
    want = ev.evaluate([rows])
    assert_results_equal(got, want)
    assert_results_equal(globally, want)
    assert got.to_json() == globally.to_json() == want.to_json()
    n_slices = len(want.slices)
    assert n_slices == 1 + 4 + 3 + 12  # carrier has a None value: 4 carriers x 3 origins
    # every slice was finished from an accumulator that merged that slice's states only
    assert (dist.count, dist.min, dist.max, dist.sum) == (n_slices, 1, 1, n_slices)


@pytest.mark.parametrize("order", ["shuffled", "sorted"])
def test_per_slice_states_merge_under_combine_per_key_one_slice_per_accumulator(make_rows, tmp_path, order):
    rows = make_rows(1200, seed=71)
    if order == "sorted":  # each bundle then holds few slices
        rows = sorted(rows, key=lambda r: (str(r["carrier"]), r["origin"]))
    ev = evaluation()
    got, globally, dist = _run(_parts(rows), ev, tmp_path, order)
    _check(got, globally, dist, ev, rows)


@pytest.mark.cluster
@pytest.mark.multiprocess
def test_per_slice_merge_on_multi_processing_direct_runner(make_rows, tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [REPO_ROOT, os.environ.get("PYTHONPATH")])))
    rows = make_rows(1500, seed=72)
    ev = evaluation()
    got, globally, dist = _run(_parts(rows), ev, tmp_path, "multi", direct_num_workers=2, direct_running_mode="multi_processing")
    _check(got, globally, dist, ev, rows)


def test_per_slice_merge_with_counting_pass(make_rows, tmp_path):
    rows = make_rows(1500, seed=75)
    ev = evaluation(slices=["carrier", "origin", "carrier,origin;max_slices=5"])
    got, _, dist = _run(_parts(rows), ev, tmp_path, "profiled", globally=False)
    want = ev.evaluate([rows])
    assert_results_equal(got, want)
    assert got.to_json() == want.to_json()
    other = [s for s in got.slices if s.slice == (("carrier", "__other__"), ("origin", "__other__"))]
    pairs = {(r["carrier"], r["origin"]) for r in rows if r["carrier"] is not None}  # missing values are never folded
    kept = [s for s in got.slices if len(s.slice) == 2 and s.slice[0][1] not in (None, "__other__")]
    assert len(kept) == 5 and len(pairs) == 9
    assert other and other[0].folded_values == len(pairs) - len(kept)  # the counting pass' summary reached the assembly
    assert (dist.min, dist.max, dist.count) == (1, 1, len(want.slices))


def test_empty_input_gives_the_overall_slice_only(tmp_path):
    ev = evaluation()
    prefix = str(tmp_path / "slices")
    with beam.Pipeline(runner="DirectRunner") as p:
        write_slices(flattened(p, [[], []]) | ComputeMetrics(ev), prefix)
    got = ev.collect(slices=[slice_result_from_json(line) for line in read_lines(prefix)])
    want = ev.evaluate([[]])
    assert got.to_json() == want.to_json()
    assert [s.slice for s in got.slices] == [()] and got.overall.n == 0


def test_merging_states_of_two_slices_raises_value_error(make_rows):
    rows = make_rows(50, seed=73)
    ev = evaluation(slices=["carrier"])
    acc = ev.fold(ev.zero(), rows)
    fn = MergeSliceStatesFn(ev)
    a = fn.create_accumulator()
    fn.add_input(a, ("[]", ev.slice_codec.encode(acc[()])))
    other = next(k for k in acc.slices() if k)
    with pytest.raises(ValueError, match="cannot merge the states of slice"):
        fn.add_input(a, (codec.slice_key_to_json(other), ev.slice_codec.encode(acc[other])))


def test_slice_states_coder_round_trips_and_rejects_corrupted_bytes(make_rows):
    rows = make_rows(80, seed=74)
    ev = evaluation(slices=["carrier"])
    acc = ev.fold(ev.zero(), rows)
    coder = SliceStatesCoder(ev)
    value = SliceStates("[]", acc[()])
    data = coder.encode(value)
    back = coder.decode(data)
    assert back.key == "[]" and back.keys == frozenset({"[]"})
    assert ev.slice_codec.encode(back.states) == ev.slice_codec.encode(acc[()])
    assert coder.encode(back) == data  # deterministic
    assert coder.encode(SliceStates(None, ev.plan.zero())) != data
    assert coder.decode(coder.encode(SliceStates(None, ev.plan.zero()))).key is None
    with pytest.raises(ValueError):
        coder.decode(data[:-3])
    with pytest.raises(ValueError):
        coder.decode(b"\xff\xff\xff\x7f" + data[4:])


def test_slice_states_pickle_through_the_state_codec(make_rows):
    """Beam's hot-key fanout pickles accumulators: each state as its own versioned bytes."""
    import pickle

    ev = evaluation(slices=["carrier"])
    acc = ev.fold(ev.zero(), make_rows(60, seed=75))
    value = SliceStates("[]", acc[()], frozenset({"[]", "x"}))
    data = pickle.dumps(value)
    assert b"MMS" in data  # the codec's state frames, not pickled objects
    back = pickle.loads(data)
    assert back.key == "[]" and back.keys == frozenset({"[]", "x"}) and back.states == acc[()]
    assert ev.slice_codec.encode(back.states) == ev.slice_codec.encode(acc[()])
