"""Test-then-train rows (``position``) in the continual events, on local, Beam (DirectRunner) and
Spark: the same ``ttt`` / ``boundaries`` / ``ttt_windowed_task_index`` everywhere (metrics.json
equal across engines), equal to a numpy computation of CapyMOA's definitions, and the report's
windowed-accuracy figure with the task boundaries."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mergeable_metrics import ContinualEvaluation
from mergeable_metrics.pipelines.evaluate import main

T, K, W, SIZES = 3, 4, 100, (900, 750, 850)  # 2500 training rows; windows of 100, task 1 starts mid-window
N_EVAL = 1200


def _events() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(11)
    n = sum(SIZES)
    task = np.repeat(np.arange(T), SIZES)
    y = rng.integers(0, K, n)
    # the learner gets better within each task: P(right) rises from 0.3 to 0.9
    within = np.concatenate([np.linspace(0, 1, s) for s in SIZES])
    right = rng.random(n) < 0.3 + 0.6 * within
    p = np.where(right, y, (y + rng.integers(1, K, n)) % K)
    ey = rng.integers(0, K, N_EVAL)
    cols = {
        "trained_task": np.concatenate([task, rng.integers(0, T, N_EVAL)]),
        "evaluated_task": np.concatenate([np.full(n, -1), rng.integers(0, T, N_EVAL)]),
        "label": np.concatenate([y, ey]),
        "prediction": np.concatenate([p, np.where(rng.random(N_EVAL) < 0.7, ey, 0)]),
        "position": np.concatenate([np.arange(n), np.full(N_EVAL, -1)]),
    }
    order = rng.permutation(n + N_EVAL)  # rows in any order: positions say where each was in the stream
    return {k: v[order] for k, v in cols.items()}


def _table(cols: dict[str, np.ndarray]) -> pa.Table:
    ttt = cols["position"] >= 0
    return pa.table({
        "trained_task": cols["trained_task"],
        "evaluated_task": pa.array(cols["evaluated_task"], mask=ttt),
        "label": cols["label"],
        "prediction": cols["prediction"],
        "position": pa.array(cols["position"], mask=~ttt),
    })  # fmt: skip


def _numpy(cols: dict[str, np.ndarray]) -> dict:
    """CapyMOA's definitions on the training stream, by hand."""
    ttt = cols["position"] >= 0
    order = np.argsort(cols["position"][ttt])
    y, p = cols["label"][ttt][order], cols["prediction"][ttt][order]
    full = len(y) // W
    boundaries = np.concatenate([[0], np.cumsum(SIZES)])
    index = np.zeros(boundaries[-1] // W)
    for t, (a, b) in enumerate(zip(boundaries[:-1], boundaries[1:])):
        index[a // W : b // W] = np.linspace(t, t + 1, b // W - a // W)
    return {
        "windowed": [float(np.mean(y[i * W : (i + 1) * W] == p[i * W : (i + 1) * W])) for i in range(full)],
        "cumulative": float(np.mean(y == p)),
        "boundaries": boundaries.tolist(),
        "index": index.tolist(),
    }


@pytest.fixture(scope="module")
def events_file(tmp_path_factory):
    cols = _events()
    path = tmp_path_factory.mktemp("ttt") / "events.parquet"
    pq.write_table(_table(cols), path, row_group_size=900)  # several row groups: several Beam bundles / Spark partitions
    return path, cols


def _run(path, out, engine, *extra):
    argv = ["--task", "continual", "--input", str(path), "--num-tasks", str(T), "--num-classes", str(K), "--max-instances", "3000",
            "--eval-window-size", str(W), "--engine", engine, "--output", str(out), "--quiet", "--batch-size", "700", *extra]  # fmt: skip
    assert main(argv) == 0
    return json.loads((out / "metrics.json").read_text())


def test_core_against_numpy(events_file):
    _, cols = events_file
    ev = ContinualEvaluation(T, K, max_instances=3000, eval_window_size=W)
    ev.fold_events({**{k: v for k, v in cols.items() if k not in ("position", "evaluated_task")},
                    "position": [None if v < 0 else int(v) for v in cols["position"]],
                    "evaluated_task": [None if v < 0 else int(v) for v in cols["evaluated_task"]]})  # fmt: skip
    m, want = ev.compute(), _numpy(cols)
    assert m.ttt.windowed.accuracy() == want["windowed"] and m.ttt.accuracy() == want["cumulative"]
    assert m.boundaries.tolist() == want["boundaries"] and m.ttt_windowed_task_index.tolist() == want["index"]
    assert len(want["windowed"]) == 25 and want["windowed"][0] < 0.5 < want["windowed"][8]


@pytest.mark.parametrize("engine", ["local", "beam", "spark"])
def test_same_ttt_on_every_engine(tmp_path, events_file, engine):
    path, cols = events_file
    got = _run(path, tmp_path / engine, engine)
    want = _numpy(cols)
    m, cfg = got["slices"][0]["metrics"], got["config"]
    assert m["ttt_windowed_accuracy"] == want["windowed"] and m["ttt_accuracy"] == want["cumulative"]
    assert cfg["boundaries"] == want["boundaries"] and cfg["ttt_windowed_task_index"] == want["index"] and cfg["eval_window_size"] == W
    assert got["slices"][0]["n"] == sum(SIZES) + N_EVAL
    if engine != "local":  # the whole metrics.json equals the local run's
        local = _run(path, tmp_path / "local", "local")
        assert got == local


def test_report_draws_the_windowed_accuracy_with_the_boundaries(tmp_path, events_file):
    path, _ = events_file
    _run(path, tmp_path / "r", "local", "--report")
    html = (tmp_path / "r" / "report.html").read_text()
    assert 'id="fig-ttt-accuracy"' in html and "Test-then-train accuracy" in html


def test_beam_combine_fn_rows_and_batches(events_file):
    beam = pytest.importorskip("apache_beam")
    from apache_beam.testing.util import assert_that

    from mergeable_metrics.beam.continual import ComputeContinualMetrics

    _, cols = events_file
    table = _table(cols)
    rows = table.slice(0, 1500).to_pylist()  # row dicts (None position on evaluation rows) and Arrow batches
    elements = rows + table.slice(1500).to_batches(max_chunksize=400)
    want = _numpy(cols)

    def check(got):
        assert len(got) == 1 and got[0].ttt.windowed.accuracy() == want["windowed"] and got[0].boundaries.tolist() == want["boundaries"]

    with beam.Pipeline() as p:
        assert_that(p | beam.Create(elements, reshuffle=True) | ComputeContinualMetrics(T, K, max_instances=3000, eval_window_size=W), check)
