"""The CLI's exit codes (2 usage/config, 1 data, 0 ok) and its clean error lines on every engine."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mergeable_metrics.pipelines import errors
from mergeable_metrics.pipelines.evaluate import LOG_NAME, main
from mergeable_metrics.pipelines.io import InputError

ROOT = Path(__file__).resolve().parents[2]


def _bad_scores(path: Path, n: int = 60, bad_row: int = 42) -> Path:
    rng = np.random.default_rng(3)
    p = rng.random(n)
    p[bad_row] = np.nan
    pq.write_table(pa.table({"y": rng.integers(0, 2, n), "p": p, "c": rng.choice(["a", "b"], n)}), path)
    return path


def _good(path: Path, n: int = 20) -> Path:
    rng = np.random.default_rng(4)
    pq.write_table(pa.table({"y": rng.integers(0, 2, n), "p": rng.random(n)}), path)
    return path


def _run(tmp_path, *argv: str) -> int:
    return main([*argv, "--output", str(tmp_path / "o"), "--no-report"])


@pytest.mark.parametrize(
    "make, expected",
    [
        (lambda d: d.joinpath("x.parquet").write_bytes(b"not a parquet file") and d / "x.parquet", "cannot read"),
        (lambda d: d.joinpath("x.csv").write_text("y,p\n1,0.5\n0,0.2,7\n") and d / "x.csv", "cannot read"),
        (lambda d: d.joinpath("x.txt").write_text("y,p\n") and d / "x.txt", "cannot tell the format"),
        (lambda d: d / "missing.parquet", "does not exist"),
    ],
    ids=["not-parquet", "malformed-csv", "unknown-format", "missing-file"],
)
def test_bad_files_are_usage_errors_with_exit_code_2(tmp_path, capsys, make, expected):
    code = _run(tmp_path, "--input", str(make(tmp_path)), "--label", "y", "--score", "p")
    err = capsys.readouterr().err
    assert code == 2 and expected in err
    assert err.count("\n") == 1 and err.startswith("error: ")  # one line: its message says all


def test_exit_codes_usage_data_ok(tmp_path, capsys):
    good = str(_good(tmp_path / "g.parquet"))
    assert _run(tmp_path, "--input", good, "--label", "y", "--score", "p", "--quiet") == 0
    assert _run(tmp_path, "--input", good, "--label", "nope", "--score", "p") == 2  # missing column
    assert _run(tmp_path, "--input", good, "--label", "y", "--score", "p", "--metrics", "acuracy") == 2  # unknown metric
    assert _run(tmp_path, "--input", good, "--label", "y", "--score", "p", "--metrics", "precision@threshold=abc") == 2
    assert _run(tmp_path, "--input", str(_bad_scores(tmp_path / "b.parquet")), "--label", "y", "--score", "p") == 1  # invalid value
    with pytest.raises(SystemExit) as e:  # argparse: a bad flag value
        _run(tmp_path, "--input", good, "--label", "y", "--score", "p", "--engine", "flink")
    assert e.value.code == 2
    capsys.readouterr()


def test_beam_error_is_one_clean_line_and_the_trace_is_in_the_log(tmp_path, capsys):
    pytest.importorskip("apache_beam")
    bad = str(_bad_scores(tmp_path / "b.parquet"))
    code = main(["--input", bad, "--label", "y", "--score", "p", "--engine", "beam", "--output", str(tmp_path / "o"), "--no-report"])
    err = capsys.readouterr().err
    log = tmp_path / "o" / LOG_NAME
    assert code == 1
    lines = [ln for ln in err.splitlines() if not ln.startswith("INFO pipelines:")]  # the stage lines
    assert lines == [
        "error: column 'p': invalid value nan at row 42: scores must be finite (no NaN or inf) [while running 'Metrics/FoldPerBundle']",
        f"the full trace is in {log} (or rerun with --verbose)",
    ]
    text = log.read_text()
    assert "Traceback (most recent call last)" in text and "core/inputs/validation.py" in text
    # --verbose: the trace on stderr too; --quiet: no stage lines, still the error
    assert main(["--input", bad, "--label", "y", "--score", "p", "--engine", "beam", "--output", str(tmp_path / "v"), "--no-report", "--verbose"]) == 1
    assert "Traceback (most recent call last)" in capsys.readouterr().err
    assert main(["--input", bad, "--label", "y", "--score", "p", "--engine", "beam", "--output", str(tmp_path / "q"), "--no-report", "--quiet"]) == 1
    assert capsys.readouterr().err.splitlines()[0].startswith("error: column 'p': invalid value nan at row 42")


def test_spark_error_is_one_clean_line_without_the_jvm_output(tmp_path):
    # a fresh process: its JVM starts inside the CLI, which sends the JVM's stderr (log4j, the
    # executors' Java stack traces, the Python workers' tracebacks) to the log file
    pytest.importorskip("pyspark")
    bad = str(_bad_scores(tmp_path / "b.parquet"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [sys.executable, "-m", "mergeable_metrics.pipelines.evaluate", "--input", bad, "--label", "y", "--score", "p", "--engine", "spark",
         "--output", str(tmp_path / "o"), "--no-report", "--quiet"],
        capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path,
    )  # fmt: skip
    log = tmp_path / "o" / LOG_NAME
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert proc.stderr.splitlines() == [
        "error: column 'p': invalid value nan at row 42: scores must be finite (no NaN or inf) [Spark partition 0; rows are counted from 0 within the partition]",
        f"the full trace is in {log} (or rerun with --verbose)",
    ], proc.stderr[-3000:]
    text = log.read_text()
    assert "org.apache.spark.api.python.PythonException" in text and "Traceback (most recent call last)" in text


class _Wrapped(Exception):
    """Stands for pyspark's PythonException (matched by module)."""


_Wrapped.__module__ = "pyspark.errors.exceptions.captured"


def test_error_message_and_exit_code_of_wrapped_worker_errors():
    worker = 'An exception was thrown from the Python worker:\nTraceback (most recent call last):\n  File "x.py", line 1\n'
    e = _Wrapped(worker + "ValueError: column 'y': invalid value 7 at row 3\n")
    assert errors.error_message(e) == "column 'y': invalid value 7 at row 3" and errors.exit_code(e) == 1
    e = _Wrapped(worker + "ModuleNotFoundError: No module named 'mergeable_metrics.spark'\n")
    assert errors.error_message(e) == "No module named 'mergeable_metrics.spark'" and errors.exit_code(e) == 2
    assert errors.exit_code(InputError("x")) == 2 and errors.exit_code(ValueError("x")) == 1 and errors.exit_code(TypeError("x")) == 1
    assert errors.error_message(KeyError("c")) == "KeyError: 'c'"


def test_the_readme_shows_the_console_script_it_installs(tmp_path):
    import shutil
    import tomllib

    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["mergeable-evaluate"] == "mergeable_metrics.pipelines.evaluate:main"
    readme = (ROOT / "README.md").read_text()
    assert "\nmergeable-evaluate --input " in readme and "--verbose" in readme and "evaluate.log" in readme
    exe = shutil.which("mergeable-evaluate", path=os.path.dirname(sys.executable))
    if exe is None:
        pytest.skip("the package is not installed in this environment (no console script)")
    proc = subprocess.run([exe, "--input", str(tmp_path / "missing.parquet"), "--label", "y", "--score", "p", "--output", str(tmp_path / "o")],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 2 and proc.stderr.startswith("error: input ") and "does not exist" in proc.stderr


def test_the_console_scripts_help_and_usage_errors_name_the_command_the_user_typed(tmp_path, monkeypatch):
    # argparse's default (or a fixed 'python -m ...') printed a name the user did not type
    from mergeable_metrics.pipelines import evaluate, validate

    monkeypatch.setattr(sys, "argv", ["/venv/bin/mergeable-evaluate"])
    assert evaluate.build_parser().format_usage().startswith("usage: mergeable-evaluate ")
    monkeypatch.setattr(sys, "argv", ["/venv/bin/mergeable-validate"])
    assert validate.build_parser().format_usage().startswith("usage: mergeable-validate ")
    monkeypatch.setattr(sys, "argv", ["/x/mergeable_metrics/pipelines/evaluate.py"])  # python -m
    assert evaluate.build_parser().format_usage().startswith("usage: python -m mergeable_metrics.pipelines.evaluate ")
    exe = shutil.which("mergeable-validate", path=os.path.dirname(sys.executable))
    if exe is None:
        pytest.skip("the package is not installed in this environment (no console script)")
    proc = subprocess.run([exe, "--currnt", "x"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.startswith("mergeable-validate: error: "), proc.stderr
    assert "see mergeable-validate --help" in proc.stderr


def test_skip_invalid_that_skips_every_row_is_an_error_with_the_count_and_the_first_reasons(tmp_path, capsys):
    # labels 'yes'/'no' with the binary default: every row is invalid; --skip-invalid used to exit 0
    # with every metric null
    n = 50
    rng = np.random.default_rng(7)
    labels = np.where(rng.random(n) < 0.5, "yes", "no")
    pq.write_table(pa.table({"y": labels, "p": rng.random(n)}), tmp_path / "all_bad.parquet")
    code = _run(tmp_path, "--input", str(tmp_path / "all_bad.parquet"), "--label", "y", "--score", "p", "--skip-invalid", "--quiet")
    err = capsys.readouterr().err
    assert code == 1, err
    assert f"all {n} rows were skipped as invalid (--skip-invalid)" in err
    # the first reason, with the column, the value and the row; the same check on the other rows is counted, not repeated
    assert f"column 'y': value {str(labels[0])!r} at row 0" in err and f"({n} such values in this batch)" in err and err.count("column 'y'") == 1
    assert "classes=['no', 'yes']" in err and "--classes no,yes" in err  # item 21's hint, with both values
    # two different reasons: both given
    s = rng.random(n)
    s[1] = np.nan
    pq.write_table(pa.table({"y": np.r_[[7, 0], np.full(n - 2, 9)], "p": s}), tmp_path / "two.parquet")  # row 1: a valid label, a NaN score
    assert _run(tmp_path, "--input", str(tmp_path / "two.parquet"), "--label", "y", "--score", "p", "--skip-invalid", "--quiet") == 1
    err = capsys.readouterr().err
    assert f"all {n} rows were skipped" in err and "at row 0" in err and "at row 1" in err and "nan" in err.lower(), err
    assert not (tmp_path / "o" / "metrics.json").exists()
    # some rows valid: still exit 0 and counted
    ok = labels.copy()
    ok[:10] = "1"
    pq.write_table(pa.table({"y": np.where(ok == "1", 1, 0)[:10].tolist() + [None] * (n - 10), "p": rng.random(n)}), tmp_path / "some.parquet")
    assert _run(tmp_path, "--input", str(tmp_path / "some.parquet"), "--label", "y", "--score", "p", "--skip-invalid", "--quiet") == 0


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_text_labels_name_classes_from_csv_as_from_parquet(tmp_path, capsys, fmt):
    # newcomer report: from CSV the error advised --skip-invalid (which would skip every row) and no --classes
    import pyarrow.csv as pacsv

    n = 40
    rng = np.random.default_rng(8)
    table = pa.table({"y": np.where(rng.random(n) < 0.5, "yes", "no"), "p": rng.random(n)})
    path = tmp_path / f"text.{fmt}"
    pacsv.write_csv(table, path) if fmt == "csv" else pq.write_table(table, path)
    code = _run(tmp_path, "--input", str(path), "--label", "y", "--score", "p", "--quiet")
    err = capsys.readouterr().err
    assert code == 1, err
    assert "column 'y': value " in err and "classes=['no', 'yes']" in err and "--classes no,yes" in err, err
    assert "--skip-invalid" not in err, err
    # with the flag it names, the run reads the labels (no the first class, yes the positive one)
    from sklearn.metrics import roc_auc_score
    import json

    out = tmp_path / "ok"
    assert (
        main(
            [
                "--input",
                str(path),
                "--label",
                "y",
                "--score",
                "p",
                "--classes",
                "no,yes",
                "--metrics",
                "roc_auc",
                "--output",
                str(out),
                "--no-report",
                "--quiet",
            ]
        )
        == 0
    )
    got = json.loads((out / "metrics.json").read_text())["slices"][0]["metrics"]["roc_auc"]
    assert got == pytest.approx(roc_auc_score(np.asarray(table["y"]) == "yes", np.asarray(table["p"])))


@pytest.mark.parametrize(
    "argv, suggestion",
    [
        (["--treshold", "0.3"], "--threshold"),
        (["--slices", "country"], "--slice"),
        (["--num-clases", "3"], "--num-classes"),
    ],
)
def test_an_unknown_option_is_a_short_error_with_the_closest_option_and_help(tmp_path, capsys, argv, suggestion):
    # newcomer report: a 58-line usage dump with no suggestion
    good = _good(tmp_path / "g.parquet")
    with pytest.raises(SystemExit) as e:
        main(["--input", str(good), "--label", "y", "--score", "p", *argv, "--output", str(tmp_path / "o")])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) <= 3, err
    assert f"unrecognized arguments: {' '.join(argv)}" in err and f"(did you mean {suggestion}?)" in err, err
    assert "--help" in err


def test_validate_unknown_option_is_short_too(capsys):
    from mergeable_metrics.pipelines.validate import main as validate_main

    with pytest.raises(SystemExit) as e:
        validate_main(["--current", "a", "--baseline", "b", "--thresholds", "t.yaml", "--shw-all"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "(did you mean --show-all?)" in err and len(err.strip().splitlines()) <= 3, err
