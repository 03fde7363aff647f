"""Continual learning (issue 15): the split-digits example and event rows on every engine.

R, FWT and BWT of the example are checked against a direct numpy computation from the raw
events; local, Beam and Spark give the same OCLMetrics (and the same metrics.json)."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mergeable_metrics import ContinualEvaluation
from mergeable_metrics.pipelines.evaluate import main
from mergeable_metrics.pipelines.examples.split_digits import split_digits_events


@pytest.fixture(scope="module")
def digits():
    return split_digits_events(num_tasks=5, evaluations_per_task=4)


def _direct(cols, t):
    """R from the events with plain loops: mean of label == prediction per (trained, evaluated)
    over the rows with a null step."""
    final = np.isnan(cols["step"])
    r = np.full((t, t), np.nan)
    for i in range(t):
        for j in range(t):
            m = final & (cols["trained_task"] == i) & (cols["evaluated_task"] == j)
            r[i, j] = np.mean(cols["label"][m] == cols["prediction"][m])
    fwt = np.mean([r[i, j] for i in range(t) for j in range(i + 1, t)])
    bwt = np.mean([r[i, j] - r[j, j] for i in range(t) for j in range(i)])
    return r, fwt, bwt


def test_split_digits_r_fwt_bwt_against_numpy(digits):
    cols, info = digits
    assert info["num_tasks"] == 5 and info["events"] == cols["label"].shape[0] == 540 * (4 + 1) * 5
    ev = ContinualEvaluation(5, 10, 4)
    ev.fold_events(cols)
    m = ev.compute()
    r, fwt, bwt = _direct(cols, 5)
    np.testing.assert_allclose(m.accuracy_matrix, r, rtol=1e-12)
    assert m.forward_transfer == pytest.approx(fwt, rel=1e-12, abs=1e-15)
    assert m.backward_transfer == pytest.approx(bwt, rel=1e-12)
    # the learner forgets: each task is learnt (diagonal high) and mostly forgotten after the next
    assert np.diag(m.accuracy_matrix).min() > 0.9 and m.backward_transfer < -0.5
    # the last anytime evaluation of each task is the same predictions as R (as CapyMOA takes R)
    np.testing.assert_array_equal(m.anytime_accuracy_matrix[3::4], m.accuracy_matrix)


def _events_file(tmp_path, cols):
    step = pa.array(cols["step"], mask=np.isnan(cols["step"])).cast(pa.int64())
    table = pa.table({"trained_task": cols["trained_task"], "step": step, "evaluated_task": cols["evaluated_task"],
                      "y": cols["label"], "yhat": cols["prediction"]})  # fmt: skip
    path = tmp_path / "events.parquet"
    pq.write_table(table, path, row_group_size=3000)  # several row groups: several Beam bundles / Spark partitions
    return path


@pytest.mark.parametrize("engine", ["local", "beam", "spark"])
def test_cli_task_continual_on_every_engine(tmp_path, digits, engine):
    cols, _ = digits
    path = _events_file(tmp_path, cols)
    out = tmp_path / engine
    argv = ["--task", "continual", "--input", str(path), "--label", "y", "--prediction", "yhat", "--num-tasks", "5",
            "--num-classes", "10", "--evaluations-per-task", "4", "--engine", engine, "--output", str(out), "--quiet"]  # fmt: skip
    assert main(argv) == 0
    got = json.loads((out / "metrics.json").read_text())
    ev = ContinualEvaluation(5, 10, 4)
    ev.fold_events(cols)
    want = ev.compute()
    m = got["slices"][0]["metrics"]
    assert got["config"]["task"] == "continual" and got["slices"][0]["n"] == cols["label"].shape[0]
    np.testing.assert_array_equal(np.array(m["accuracy_matrix"], dtype=float), want.accuracy_matrix)
    np.testing.assert_array_equal(np.array(m["anytime_accuracy_matrix"], dtype=float), want.anytime_accuracy_matrix)
    np.testing.assert_array_equal(np.array(m["class_cm"]), want.class_cm)
    assert m["backward_transfer"] == want.backward_transfer and m["forward_transfer"] == want.forward_transfer


def test_example_writes_report_with_the_continual_figures(tmp_path):
    out = tmp_path / "digits"
    assert main(["--example", "split-digits", "--output", str(out), "--quiet"]) == 0
    html = (out / "report.html").read_text()
    for fid in ("fig-accuracy-matrix-accuracy-matrix", "fig-anytime-accuracy-matrix", "fig-continual-curves"):
        assert f'id="{fid}"' in html


def test_bad_events_fail_with_column_value_and_row(tmp_path, capsys):
    path = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"trained_task": [0, 0, 1], "evaluated_task": [0, 1, 7], "label": [0, 1, 1], "prediction": [0, 1, 1]}), path)
    argv = ["--task", "continual", "--input", str(path), "--num-tasks", "2", "--num-classes", "2", "--output", str(tmp_path / "o")]
    assert main(argv) == 1
    assert "column 'evaluated_task': invalid value 7 at row 2" in capsys.readouterr().err
    assert main(["--task", "continual", "--input", str(path), "--num-classes", "2", "--output", str(tmp_path / "o")]) == 2
    assert "--num-tasks" in capsys.readouterr().err


def test_beam_combine_fn_rows_and_batches_any_split():
    beam = pytest.importorskip("apache_beam")
    from apache_beam.testing.util import assert_that

    from mergeable_metrics.beam.continual import ComputeContinualMetrics, ContinualCombineFn

    rng = np.random.default_rng(3)
    n = 5000
    cols = {"trained_task": rng.integers(0, 3, n), "step": np.where(rng.random(n) < 0.5, np.nan, rng.integers(0, 2, n)),
            "evaluated_task": rng.integers(0, 3, n), "label": rng.integers(0, 4, n), "prediction": rng.integers(0, 4, n)}  # fmt: skip
    want = ContinualEvaluation(3, 4, 2)
    want.fold_events(cols)
    rows = [{k: (None if k == "step" and np.isnan(v[i]) else v[i].item()) for k, v in cols.items()} for i in range(n)]
    batch = pa.table({k: (pa.array(v, mask=np.isnan(v)).cast(pa.int64()) if k == "step" else v) for k, v in cols.items()})
    elements = rows[:3000] + batch.slice(3000).to_batches(max_chunksize=700)

    def check(got):
        assert len(got) == 1
        np.testing.assert_array_equal(got[0].accuracy_matrix, want.compute().accuracy_matrix)
        np.testing.assert_array_equal(got[0].class_cm, want.compute().class_cm)

    with beam.Pipeline() as p:
        assert_that(p | beam.Create(elements, reshuffle=True) | ComputeContinualMetrics(3, 4, 2), check)
    fn = ContinualCombineFn(3, 4, 2)
    parts = [fn.create_accumulator() for _ in range(3)]  # one empty
    for i, e in enumerate(elements[:3000]):
        fn.add_input(parts[i % 2], e)
    for e in elements[3000:]:
        fn.add_input(parts[0], e)
    assert fn.extract_output(fn.merge_accumulators(parts)) == want


@pytest.mark.parametrize("flag, value, message", [("--num-tasks", "0", "num_tasks must be an int in [1, 100000], got 0"),
                                                  ("--num-classes", "0", "num_classes must be an int in [2, 10000], got 0")])  # fmt: skip
def test_a_zero_size_names_the_setting_and_its_range(tmp_path, capsys, flag, value, message):
    # before: --num-tasks 0 said "--task continual needs --num-tasks T and --num-classes K", as if it were missing
    path = tmp_path / "ev.parquet"
    pq.write_table(pa.table({"trained_task": [0], "evaluated_task": [0], "label": [0], "prediction": [0]}), path)
    sizes = {"--num-tasks": "2", "--num-classes": "2", flag: value}
    argv = ["--task", "continual", "--input", str(path), *[x for kv in sizes.items() for x in kv], "--output", str(tmp_path / "o")]
    assert main(argv) != 0
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("engine", ["local", "beam"])
def test_bad_classes_name_the_users_label_column(tmp_path, capsys, engine):
    # before: local and Beam said column 'label' for --label y (Spark already named 'y')
    path = tmp_path / "ev.parquet"
    pq.write_table(pa.table({"trained_task": [0, 0, 1], "evaluated_task": [0, 1, 1], "y": [0, 1, 9], "yhat": [0, 1, 1]}), path)
    argv = ["--task", "continual", "--input", str(path), "--label", "y", "--prediction", "yhat", "--num-tasks", "2", "--num-classes", "2",
            "--engine", engine, "--output", str(tmp_path / "o")]  # fmt: skip
    assert main(argv) != 0
    assert "column 'y': invalid value 9 at row 2: labels must be integers in [0, 2)" in capsys.readouterr().err
