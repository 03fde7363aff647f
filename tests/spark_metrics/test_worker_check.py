"""compute_metrics checks once per session that Spark's Python workers can import the package."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest

from mergeable_metrics.spark import SparkSetupError, check_workers, compute_metrics
from mergeable_metrics.spark import session as session_module


@pytest.fixture
def worker_python(spark, monkeypatch):
    """Set the session's worker Python (``sc.pythonExec``, what ``PYSPARK_PYTHON`` sets) for one test."""
    sc = spark.sparkContext

    def use(exe: str) -> None:
        monkeypatch.setattr(sc, "pythonExec", exe)

    return use


def _script(path, body: str) -> str:
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_a_worker_python_without_the_package_fails_in_one_line_before_the_job(spark, worker_python, tmp_path):
    # the driver's own interpreter, with a PYTHONPATH entry that hides mergeable_metrics: the package
    # is missing from the workers' path (as when the project is not installed in the workers' Python)
    shadow = tmp_path / "shadow" / "mergeable_metrics"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'mergeable_metrics'\")\n")
    # (run in tmp_path: a worker's sys.path starts with its working directory, here the project's)
    exe = _script(tmp_path / "python", f'cd "{tmp_path}" && PYTHONPATH="{shadow.parent}:$PYTHONPATH" exec "{sys.executable}" "$@"')
    worker_python(exe)
    df = spark.createDataFrame([(1, 0.9), (0, 0.2)], ["y", "p"])
    with pytest.raises(SparkSetupError) as e:
        compute_metrics(df, label_col="y", score_col="p", native=False)  # the Arrow path: Python on the executors
    msg = str(e.value)
    assert "\n" not in msg
    assert "cannot run mergeable_metrics.spark (ModuleNotFoundError: No module named 'mergeable_metrics')" in msg
    assert "PYTHONPATH" in msg  # the same environment: the fix is the path, not the interpreter


def _base_python_lacks_pyarrow() -> str | None:
    base = os.path.join(sys.base_prefix, "bin", "python3")
    if sys.base_prefix == sys.prefix or not os.path.exists(base):
        return None
    probe = subprocess.run([base, "-c", "import numpy, pyarrow"], capture_output=True)
    return base if probe.returncode != 0 else None


def test_another_python_is_named_with_the_fix(spark, worker_python):
    # the README's failure: a plain SparkSession.builder runs workers with python3 from PATH, an
    # interpreter outside this environment (here: the one the virtual environment was made from)
    base = _base_python_lacks_pyarrow()
    if base is None:
        pytest.skip("needs a virtual environment whose base Python lacks numpy or pyarrow")
    worker_python(base)
    with pytest.raises(SparkSetupError) as e:
        check_workers(spark)
    msg = str(e.value)
    assert "\n" not in msg and "cannot run mergeable_metrics.spark (ModuleNotFoundError: No module named" in msg
    assert f"PYSPARK_PYTHON={sys.executable}" in msg and "mergeable_metrics.spark.get_spark()" in msg


def test_a_missing_worker_python_is_named(spark, worker_python, tmp_path):
    worker_python(str(tmp_path / "no-such-python"))
    with pytest.raises(SparkSetupError, match=r"Spark's Python workers \(.*no-such-python\) cannot run mergeable_metrics.spark"):
        check_workers(spark)


def test_checked_once_per_session_and_worker_python(spark, monkeypatch):
    check_workers(spark)  # the session's workers run this interpreter: fine
    key = (str(spark.sparkContext.applicationId), str(spark.sparkContext.pythonExec))
    assert key in session_module._WORKERS_OK

    def no_job(*a, **k):
        raise AssertionError("a second check ran a job")

    monkeypatch.setattr(spark.sparkContext, "parallelize", no_job)
    check_workers(spark)  # cached: no job


def test_the_jvm_path_of_compute_metrics_needs_no_python_package_on_the_workers(spark, worker_python, tmp_path):
    """Issue 26: with the JVM path the executors need no Python package: ``compute_metrics`` of a plan the JVM
    path takes runs (and equals scikit-learn) although the workers' Python cannot import the package."""
    from sklearn.metrics import f1_score, roc_auc_score

    from mergeable_metrics import Evaluation
    from mergeable_metrics.spark import jvm_path

    shadow = tmp_path / "shadow" / "mergeable_metrics"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'mergeable_metrics'\")\n")
    exe = _script(tmp_path / "python", f'cd "{tmp_path}" && PYTHONPATH="{shadow.parent}:$PYTHONPATH" exec "{sys.executable}" "$@"')
    worker_python(exe)
    y, p = [1, 0, 1, 1, 0, 0, 1, 0], [0.9, 0.2, 0.6, 0.4, 0.7, 0.1, 0.8, 0.3]
    df = spark.createDataFrame(list(zip(y, p)), ["y", "p"])
    ev = Evaluation(label_col="y", score_col="p", metrics=["roc_auc", "f1"])
    if jvm_path.jvm_blocker(df, ev)[0] is None:
        pytest.skip("the JVM path is not available here (no JDK)")
    row = compute_metrics(df, evaluation=ev).collect()[0].asDict()
    assert row["roc_auc"] == roc_auc_score(y, p) and row["f1"] == f1_score(y, [int(v >= 0.5) for v in p])
