"""ComputeMetrics on Beam's DirectRunner with worker processes, and under bundle failures.

* ``direct_running_mode="multi_processing"``, ``direct_num_workers=2``: the same results as the
  single-process DirectRunner and as core's direct fold, exactly (slices, ``max_slices`` with its
  counting pass as a side input, AUC).
* Bundle retries: the DirectRunner's FnApiRunner (every ``direct_running_mode``) does not retry a
  failed bundle, the pipeline fails (checked below: loudly, with the error, never a wrong
  number). The runner that does retry is the ``BundleBasedDirectRunner`` (up to 4 attempts per
  bundle): there a DoFn upstream of ComputeMetrics fails once per marked element, after it has
  passed earlier elements of the bundle on, and the results must equal the fault-free ones.

The failing DoFn coordinates through marker files in ``tmp_path``, so "once" holds across worker
processes. Select with ``-m cluster`` (or ``-m multiprocess``); they also run by default.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

pa = pytest.importorskip("pyarrow")

import apache_beam as beam  # noqa: E402
from apache_beam.options.pipeline_options import PipelineOptions  # noqa: E402

import mergeable_metrics  # noqa: E402
from mergeable_metrics.beam import ComputeMetrics, slice_result_from_json  # noqa: E402
from tests.beam_metrics.test_beam_pipelines import (  # noqa: E402
    REPO_ROOT,
    assert_results_equal,
    binary_evaluation,
    direct,
    flattened,
    read_lines,
    split,
    write_slices,
)

pytestmark = [pytest.mark.cluster, pytest.mark.multiprocess]

MULTI = dict(direct_num_workers=2, direct_running_mode="multi_processing")


class FailOnce(beam.DoFn):
    """Pass ``(index, element)`` pairs on as ``element``; raise the first time an index in
    ``fail_at`` is seen (marker file ``<marker_dir>/failed-<index>``), across processes. Each
    process that runs it leaves ``<marker_dir>/pid-<pid>``."""

    def __init__(self, marker_dir: str, fail_at: frozenset = frozenset()):
        self.marker_dir, self.fail_at = marker_dir, fail_at

    def setup(self) -> None:
        Path(self.marker_dir, f"pid-{os.getpid()}").touch()  # which processes ran the pipeline

    def process(self, item: tuple[int, Any]):
        index, element = item
        marker = Path(self.marker_dir, f"failed-{index}")
        if index in self.fail_at and not marker.exists():
            marker.write_text(str(os.getpid()))
            raise RuntimeError(f"injected failure at element {index}")
        yield element


class FlakyRow(dict):
    """A row dict whose first lookup raises (marker file ``marker``, across processes): it makes
    ComputeMetrics' own combine step fail mid-bundle, after earlier elements of the bundle were
    added to its accumulator."""

    def __init__(self, row: dict, marker: str):
        super().__init__(row)
        self.marker = marker

    def _trip(self, what: str) -> None:
        if not os.path.exists(self.marker):
            Path(self.marker).write_text(str(os.getpid()))
            raise RuntimeError(f"injected failure reading {what} inside ComputeMetrics")

    def __getitem__(self, key: str) -> Any:
        self._trip(repr(key))
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self._trip(repr(key))
        return super().get(key, default)


def _elements(rows: list[dict]) -> list[list]:
    """Input elements per Create: row dicts, lists of rows, Arrow record batches, an empty Create
    and an empty batch, indexed for :class:`FailOnce`."""
    parts = split(rows, [300, 0, 450, 250])  # + the rest
    batches = [pa.RecordBatch.from_pylist(parts[2][i : i + 150]) for i in range(0, 450, 150)]
    kinds = [parts[0], [], batches + [pa.RecordBatch.from_pylist([], schema=batches[0].schema)],
             [parts[3][i : i + 50] for i in range(0, 250, 50)], parts[4]]  # fmt: skip
    index = 0
    out = []
    for kind in kinds:
        out.append([])
        for element in kind:
            out[-1].append((index, element))
            index += 1
    return out


def _run(
    parts: list[list], ev: mergeable_metrics.Evaluation, tmp_path: Path, name: str, fail_at: frozenset = frozenset(), **options: Any
) -> mergeable_metrics.Results:
    """ComputeMetrics over the Flattened Creates of ``parts`` through :class:`FailOnce`; checks
    that each index of ``fail_at`` failed once and returns the collected Results."""
    marker_dir = tmp_path / f"{name}-markers"
    marker_dir.mkdir()
    prefix = str(tmp_path / name / "slices")
    runner = options.pop("runner", "DirectRunner")
    with beam.Pipeline(runner=runner, options=PipelineOptions(**options)) as p:
        rows = flattened(p, parts) | "FailOnce" >> beam.ParDo(FailOnce(str(marker_dir), fail_at))
        write_slices(rows | ComputeMetrics(ev, batch_size=128), prefix)
    got = [slice_result_from_json(line) for line in read_lines(prefix)]
    assert len({s.slice for s in got}) == len(got), "one element per slice"
    assert {p.name for p in marker_dir.glob("failed-*")} == {f"failed-{i}" for i in fail_at}
    return ev.collect(slices=got)


def _pids(tmp_path: Path, name: str) -> set[int]:
    return {int(p.name[4:]) for p in (tmp_path / f"{name}-markers").glob("pid-*")}


@pytest.fixture
def worker_pythonpath(monkeypatch):
    """Worker subprocesses unpickle beam_metrics/core by reference: this checkout first."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [REPO_ROOT, os.environ.get("PYTHONPATH")])))


@pytest.fixture(scope="module")
def case(make_rows):
    rows = make_rows(1500, seed=61)
    ev = binary_evaluation(
        slices=["origin", "carrier;max_slices=2", "origin,carrier;max_slices=3;by=weight"],
        metrics=["accuracy", "precision", "recall", "f1", "roc_auc", "average_precision", "tp", "fn"],
    )
    return rows, ev, _elements(rows)


def test_multi_processing_direct_runner_equals_single_process_and_core(case, tmp_path, worker_pythonpath):
    rows, ev, parts = case
    single = _run(parts, ev, tmp_path, "single")
    multi = _run(parts, ev, tmp_path, "multi", **MULTI)
    want = direct(ev.with_profile(ev.profiler().profile([rows])), rows)
    assert_results_equal(single, want)
    assert_results_equal(multi, single)
    assert multi.to_json() == single.to_json() == want.to_json()
    assert any(s.slice == (("carrier", "__other__"),) for s in multi.slices)  # the profile side input was used
    assert _pids(tmp_path, "single") == {os.getpid()}
    assert len(_pids(tmp_path, "multi")) == 2 and os.getpid() not in _pids(tmp_path, "multi")  # two worker processes


def test_failed_bundle_fails_the_multi_processing_pipeline_loudly(case, tmp_path, worker_pythonpath):
    """The FnApiRunner behind the multi_processing DirectRunner does not retry bundles: a failure
    must surface as the pipeline's error (if a later Beam retries, the result must be exact)."""
    rows, ev, parts = case
    try:
        got = _run(parts, ev, tmp_path, "multi-fail", fail_at=frozenset({3}), **MULTI)
    except Exception as e:  # Beam wraps the worker's exception
        assert "injected failure at element 3" in str(e)
    else:  # pragma: no cover - Beam 2.77 does not retry here
        assert got.to_json() == _run(parts, ev, tmp_path, "single").to_json()


def test_retried_bundles_do_not_double_count(case, tmp_path):
    """BundleBasedDirectRunner retries a failed bundle; elements the failed attempt had already
    passed on (elements before the failing one in the same Create: rows, Arrow batches, row lists) must count once."""
    rows, ev, parts = case
    want = _run(parts, ev, tmp_path, "plain", runner="BundleBasedDirectRunner")
    flaky = [list(part) for part in parts]  # and one failure inside ComputeMetrics' combine
    index, row = flaky[0][200]
    flaky[0][200] = (index, FlakyRow(row, str(tmp_path / "flaky-row")))
    got = _run(flaky, ev, tmp_path, "retried", fail_at=frozenset({1, 301, 306, 700}), runner="BundleBasedDirectRunner")
    assert (tmp_path / "flaky-row").exists()
    assert_results_equal(want, direct(ev.with_profile(ev.profiler().profile([rows])), rows))
    assert got.to_json() == want.to_json()
    assert_results_equal(got, want)
