"""Multioutput regression (``num_outputs=D``, issue 17; median / quantile absolute error too) on every engine: core in process, Beam
(DirectRunner, Parquet list columns read in row groups) and Spark (local, array columns over
partitions) give identical results, equal to scikit-learn's; the CLI reads Parquet list /
fixed-size-list columns and JSON Lines arrays with ``--num-outputs``."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sklearn import metrics as M
from sklearn.utils.stats import _weighted_percentile

from mergeable_metrics import Evaluation
from mergeable_metrics.pipelines.evaluate import main

pytestmark = pytest.mark.filterwarnings("ignore::mergeable_metrics.metrics.base.UndefinedMetricWarning")

METRICS = ["r2@multioutput=raw_values", "r2@multioutput=variance_weighted", "mse", "rmse@multioutput=raw_values", "mae",
           "explained_variance@multioutput=raw_values", "mape", "msle@multioutput=raw_values", "mean_pinball_loss@alpha=0.8",
           "median_absolute_error@multioutput=raw_values", "median_absolute_error", "quantile_absolute_error@q=0.9"]  # fmt: skip


def _table(n: int = 300, d: int = 3, seed: int = 5, fixed: bool = True) -> pa.Table:
    rng = np.random.default_rng(seed)
    y = rng.gamma(2.0, 2.0, (n, d))
    p = np.maximum(y + rng.normal(0, [0.5, 1.0, 3.0][:d], (n, d)), 0.0)
    typ = pa.list_(pa.float64(), d) if fixed else pa.list_(pa.float64())
    return pa.table({
        "y": pa.array(list(y), type=typ), "p": pa.array(list(p), type=typ),
        "w": rng.integers(0, 4, n).astype(np.float64), "g": rng.choice(["a", "b", "c"], n),
    })  # fmt: skip


def _evaluation() -> Evaluation:
    return Evaluation(label_col="y", prediction_col="p", weight_col="w", num_outputs=3, slices=["g"], metrics=METRICS)


def _sklearn_checks(results, table: pa.Table) -> None:
    y, p = np.stack(table["y"].to_numpy(zero_copy_only=False)), np.stack(table["p"].to_numpy(zero_copy_only=False))
    w = table["w"].to_numpy()
    m = results.overall.metrics
    np.testing.assert_allclose(m["r2@multioutput=raw_values"], M.r2_score(y, p, sample_weight=w, multioutput="raw_values"), rtol=1e-12)
    np.testing.assert_allclose(m["r2@multioutput=variance_weighted"], M.r2_score(y, p, sample_weight=w, multioutput="variance_weighted"), rtol=1e-12)
    np.testing.assert_allclose(m["mse"], M.mean_squared_error(y, p, sample_weight=w), rtol=1e-12)
    np.testing.assert_allclose(m["msle@multioutput=raw_values"], M.mean_squared_log_error(y, p, sample_weight=w, multioutput="raw_values"), rtol=1e-12)
    np.testing.assert_allclose(m["mean_pinball_loss@0.8"], M.mean_pinball_loss(y, p, alpha=0.8, sample_weight=w), rtol=1e-12)
    medae = M.median_absolute_error(y, p, sample_weight=w, multioutput="raw_values")
    assert np.array_equal(m["median_absolute_error@multioutput=raw_values"], medae)  # exact state: bit for bit
    assert m["median_absolute_error"] == M.median_absolute_error(y, p, sample_weight=w)
    q90 = [_weighted_percentile(np.abs(p - y)[:, j], w, 90, average=True) for j in range(y.shape[1])]  # integer weights: exact
    assert m["quantile_absolute_error@0.9"] == float(np.average(q90))


def test_core_beam_spark_identical(tmp_path):
    pytest.importorskip("apache_beam")
    from tests._helpers.beam_run import beam_parquet_results

    table = _table()
    ev = _evaluation()
    want = ev.evaluate(table.to_batches(max_chunksize=64))
    assert len(want.slices) == 4
    _sklearn_checks(want, table)
    got = beam_parquet_results(tmp_path, table, {"mo": ev}, row_group_size=37)["mo"]
    assert got.to_json() == want.to_json()
    pytest.importorskip("pyspark")
    from mergeable_metrics.spark import collect_results, compute_metrics, get_spark

    sdf = get_spark().createDataFrame(_table(fixed=False).to_pandas()).repartition(5)  # Spark: ArrayType columns
    # layout="long": the wide layout's columns come from an empty slice's metrics, and those raise
    # ZeroDivisionError for this multi-output regression (core: ev.evaluate of an empty table too)
    assert collect_results(compute_metrics(sdf, evaluation=ev, layout="long"), ev).to_json() == want.to_json()


@pytest.mark.parametrize("engine, fmt", [("local", "parquet"), ("local", "jsonl"), ("beam", "parquet")])
def test_cli_num_outputs_reads_list_columns(tmp_path, engine, fmt):
    if engine == "beam":
        pytest.importorskip("apache_beam")
    table = _table(fixed=fmt == "parquet")
    if fmt == "parquet":
        src = tmp_path / "in.parquet"
        pq.write_table(table, src, row_group_size=50)
    else:
        src = tmp_path / "in.jsonl"
        src.write_text("".join(json.dumps(r) + "\n" for r in table.to_pylist()))
    out = tmp_path / "out"
    argv = ["--input", str(src), "--label", "y", "--prediction", "p", "--weight", "w", "--num-outputs", "3", "--slice", "g",
            "--metrics", ",".join(METRICS), "--engine", engine, "--output", str(out), "--quiet", "--batch-size", "64"]  # fmt: skip
    assert main(argv) == 0
    doc = json.loads((out / "metrics.json").read_text())
    assert doc["config"]["num_outputs"] == 3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = json.loads(_evaluation().evaluate(table.to_batches(max_chunksize=64)).to_json())
    assert [s["metrics"] for s in doc["slices"]] == [s["metrics"] for s in want["slices"]]
    assert len(doc["slices"][0]["metrics"]["r2@multioutput=raw_values"]) == 3


def test_cli_multioutput_errors_name_column_and_row(tmp_path, capsys):
    table = pa.table({"y": pa.array([[1.0, 2.0], [1.0, 2.0, 3.0], [0.0, 1.0]]), "p": pa.array([[1.0, 2.0]] * 3)})
    src = tmp_path / "bad.parquet"
    pq.write_table(table, src)
    argv = ["--input", str(src), "--label", "y", "--prediction", "p", "--num-outputs", "2", "--metrics", "mse", "--output", str(tmp_path / "o"), "--quiet"]
    assert main(argv) == 1
    assert "column 'y': row 1 holds 3 entries [1.0, 2.0, 3.0]: multioutput target rows are lists of 2 values (num_outputs=2)" in capsys.readouterr().err
    pq.write_table(pa.table({"y": pa.array([[1.0, 2.0]] * 2), "p": pa.array([[1.0, 2.0, 3.0]] * 2)}), src)
    assert main(argv) == 1
    assert (
        "column 'p': row 0 holds 3 entries [1.0, 2.0, 3.0]: multioutput prediction rows are lists of 2 values (num_outputs=2) (2 such rows"
        in capsys.readouterr().err
    )
    fixed = pa.list_(pa.float64(), 3)  # a fixed-size list type of another width: the column's type is wrong, in either mode
    pq.write_table(pa.table({"y": pa.array([[1.0, 2.0, 3.0]] * 2, fixed), "p": pa.array([[1.0, 2.0, 3.0]] * 2, fixed)}), src)
    assert main(argv + ["--skip-invalid"]) == 1
    assert "column 'y': multioutput target rows need 2 entries (num_outputs), got shape (2, 3)" in capsys.readouterr().err


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_cli_skip_invalid_skips_rows_of_another_length_and_null_rows(tmp_path, capsys, fmt):
    y = [[1.0, 2.0], [3.0, 4.0], [5.0, 7.0], [0.0, 1.0], [2.0, 2.0], [4.0, 0.5]]
    p = [[1.5, 2.0], [3.0, 4.5], [5.0], [0.5, 1.0], None, [4.0, 0.0]]
    rows = [{"y": a, "p": b} for a, b in zip(y, p)]
    src = tmp_path / f"in.{fmt}"
    if fmt == "jsonl":
        src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    else:
        pq.write_table(pa.table({"y": pa.array(y), "p": pa.array(p, pa.list_(pa.float64()))}), src, row_group_size=2)
    argv = ["--input", str(src), "--label", "y", "--prediction", "p", "--num-outputs", "2", "--metrics", "mse@multioutput=raw_values",
            "--output", str(tmp_path / "o"), "--quiet", "--batch-size", "2"]  # fmt: skip
    assert main(argv) == 1
    assert "column 'p': row 2 holds 1 entries [5.0]: multioutput prediction rows are lists of 2 values (num_outputs=2)" in capsys.readouterr().err
    assert main(argv + ["--skip-invalid"]) == 0
    doc = json.loads((tmp_path / "o" / "metrics.json").read_text())
    keep = [0, 1, 3, 5]
    want = M.mean_squared_error(np.array(y)[keep], np.array([p[i] for i in keep]), multioutput="raw_values")
    assert doc["slices"][0]["skipped"] == 2 and doc["slices"][0]["n"] == 4
    np.testing.assert_allclose(doc["slices"][0]["metrics"]["mse@multioutput=raw_values"], want, rtol=1e-12)
    p[2] = [5.0, 6.0]  # the null row alone: named as the file gives it
    rows = [{"y": a, "p": b} for a, b in zip(y, p)]
    if fmt == "jsonl":
        src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    else:
        pq.write_table(pa.table({"y": pa.array(y), "p": pa.array(p, pa.list_(pa.float64()))}), src, row_group_size=2)
    assert main(argv) == 1
    assert "column 'p': invalid value null at row 4: multioutput prediction rows are lists of 2 values (num_outputs=2)" in capsys.readouterr().err
