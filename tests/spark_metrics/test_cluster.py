"""compute_metrics on a real Spark standalone cluster: a master and two workers (one core each), as
separate processes on 127.0.0.1, started from the pip pyspark installation; the executors shuffle
the input and the partial states between them.

Results (Arrow and native paths, slices, ``max_slices``/quantile counting jobs, AUC) must equal
``local[2]``'s and core's direct fold exactly, also when tasks fail on their first attempt after
passing rows on, and are retried. The driver runs in a subprocess (tests/spark_metrics/cluster_job.py):
this pytest process already holds the session-scoped local[2] SparkSession, and a process can
have only one. Select these tests with ``-m cluster``; they also run by default.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pyspark = pytest.importorskip("pyspark")
pytest.importorskip("pandas")

from tests.spark_metrics import cluster_job  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[2]
SPARK_HOME = Path(pyspark.__file__).resolve().parent
START_TIMEOUT = 120.0


def _env(tmp: Path) -> dict[str, str]:
    """Environment of every cluster process: loopback only, this checkout first on PYTHONPATH,
    scratch space and logs under ``tmp``, small daemons, no REST submission server."""
    env = dict(os.environ)
    env.update(
        SPARK_HOME=str(SPARK_HOME),
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_LOCAL_DIRS=str(tmp / "local"),
        SPARK_LOG_DIR=str(tmp),
        SPARK_DAEMON_MEMORY="256m",
        SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false",
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
        PYTHONPATH=os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])),
    )
    return env


def _spawn(args: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen:
    """Start ``spark-class ARGS`` in its own process group (its executors and Python workers join
    it), output to ``log``."""
    with open(log, "wb") as out:
        return subprocess.Popen(
            [str(SPARK_HOME / "bin" / "spark-class"), *args],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, start_new_session=True,
        )  # fmt: skip


def _wait_for(log: Path, pattern: str, proc: subprocess.Popen, what: str) -> re.Match:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        m = re.search(pattern, log.read_text(errors="replace"))
        if m:
            return m
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    tail = log.read_text(errors="replace")[-3000:]
    raise RuntimeError(f"the Spark {what} did not start (exit code {proc.poll()}); end of {log}:\n{tail}")


def _kill(proc: subprocess.Popen) -> None:
    """SIGTERM the process group, then SIGKILL whatever of it is left (executors, Python workers)."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def _start_cluster(tmp: Path, env: dict[str, str], procs: list[subprocess.Popen]) -> str:
    """Start a standalone master and two workers (1 core, 1 GiB each) on 127.0.0.1, on ports the OS picks
    (read back from the logs), appending their processes to ``procs`` (the caller kills them); returns the
    master URL."""
    master_log = tmp / "master.log"
    master = _spawn(["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", "0", "--webui-port", "0"], master_log, env)
    procs.append(master)
    url = _wait_for(master_log, r"Starting Spark master at (spark://127\.0\.0\.1:\d+)", master, "master").group(1)
    _wait_for(master_log, r"I have been elected leader", master, "master")
    for i in (1, 2):
        args = ["org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1", "--port", "0", "--webui-port", "0",
                "--cores", "1", "--memory", "1g", "--work-dir", str(tmp / f"work{i}")]  # fmt: skip
        procs.append(_spawn(args, tmp / f"worker{i}.log", env))
    for i, proc in enumerate(procs[1:3], 1):
        _wait_for(tmp / f"worker{i}.log", r"Successfully registered with master", proc, f"worker {i}")
    return url


@pytest.fixture(scope="module")
def standalone_master(tmp_path_factory):
    """A Spark standalone master and two workers (1 core, 1 GiB each) on 127.0.0.1, on ports the
    OS picks (read back from the logs), web UIs on free loopback ports; yields the master URL and
    the log directory. Every process group is killed at the end, whatever happened."""
    tmp = tmp_path_factory.mktemp("spark-cluster")
    env = _env(tmp)
    procs: list[subprocess.Popen] = []
    try:
        yield _start_cluster(tmp, env, procs), tmp
    finally:
        for proc in reversed(procs):
            _kill(proc)


@pytest.fixture(scope="module")
def runs(standalone_master, spark):
    """Every case of cluster_job.CASES run on the cluster (plain and with retried failures) by the
    driver subprocess, the task attempts its probes recorded; and meanwhile the same cases on this
    process's local[2] SparkSession (no probes)."""
    url, tmp = standalone_master
    markers, out, log = tmp / "markers", tmp / "results.json", tmp / "driver.log"
    with open(log, "wb") as f:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.spark_metrics.cluster_job", url, str(markers), str(out)],
            cwd=REPO_ROOT, env=_env(tmp), stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
    try:
        df = cluster_job.input_frame(spark)
        local = {name: cluster_job.run_case(df, name) for name in cluster_job.CASES}
        code = proc.wait(timeout=600)
    finally:
        _kill(proc)  # the driver and its JVM, whatever happened
    assert code == 0, f"the cluster driver failed; end of {log}:\n{log.read_text(errors='replace')[-6000:]}"
    return json.loads(out.read_text()), markers, local


def _attempts(marker_dir: Path) -> list[dict]:
    out = []
    for path in sorted(marker_dir.iterdir()):
        m = re.fullmatch(r"s(\d+)-p(\d+)-a(\d+)-e(\w+)", path.name)
        out.append({"stage": int(m[1]), "partition": int(m[2]), "attempt": int(m[3]), "executor": m[4], "core": path.read_text()})
    return out


@pytest.mark.parametrize("name", list(cluster_job.CASES))
def test_cluster_results_equal_local_and_core_exactly(name, runs):
    cluster, _, local = runs
    ev = cluster_job.evaluation(name)
    direct = ev.evaluate([cluster_job.make_pdf()])
    assert local[name]["rows"] == cluster_job.canonical_rows(json.loads(json.dumps(direct.to_rows())))
    assert local[name]["json"] == direct.to_json()
    assert cluster[f"{name}/plain"]["rows"] == local[name]["rows"]
    assert cluster[f"{name}/plain"]["json"] == local[name]["json"]


@pytest.mark.parametrize("name", list(cluster_job.CASES))
def test_retried_task_failures_do_not_double_count_on_the_cluster(name, runs):
    cluster, markers, local = runs
    assert cluster[f"{name}/retried"]["rows"] == local[name]["rows"]
    assert cluster[f"{name}/retried"]["json"] == local[name]["json"]
    # the faults did happen: a failed first attempt and its retry, in every stage that read the input
    # (one more stage, the counting job, when the evaluation needs a profile) and in the merge stage
    attempts = _attempts(markers / f"{name}-retried")
    stages = {a["stage"] for a in attempts}
    retried = {a["stage"] for a in attempts if a["attempt"] == 1}
    assert retried == stages, attempts
    expected_stages = 3 if cluster_job.evaluation(name).needs_profile else 2
    assert len(stages) == expected_stages, attempts
    plain = _attempts(markers / f"{name}-plain")
    assert all(a["attempt"] == 0 for a in plain), plain


def test_cluster_runs_on_two_executors_importing_this_checkout(runs):
    _, markers, _ = runs
    attempts = [a for d in markers.iterdir() for a in _attempts(d)]
    assert {a["executor"] for a in attempts} == {"0", "1"}, attempts
    assert {a["core"] for a in attempts} == {str(REPO_ROOT / "core" / "__init__.py")}


# -- the JVM path on executors that cannot run Python ------------------------------------------------
NO_PYTHON = "/nonexistent/python-without-mergeable-metrics"


@pytest.fixture(scope="module")
def jvm_only_runs(tmp_path_factory):
    """A standalone master and two workers whose Python does not exist (PYSPARK_PYTHON a missing path, no
    PYTHONPATH): the driver subprocess (tests/spark_metrics/cluster_jvm_job.py) runs the JVM aggregates there."""
    from mergeable_metrics.spark import jvm

    if jvm.find_javac() is None and jvm.jar_path(build=False) is None:
        pytest.skip(jvm.NO_JDK)
    tmp = tmp_path_factory.mktemp("spark-cluster-jvm")
    env = _env(tmp)
    env.update(PYSPARK_PYTHON=NO_PYTHON)
    env.pop("PYTHONPATH", None)
    driver_env = dict(env, PYTHONPATH=str(REPO_ROOT))  # the driver imports the package; its executors cannot
    data = tmp / "flights.parquet"
    cluster_job.make_pdf().to_parquet(data)
    procs: list[subprocess.Popen] = []
    try:
        url = _start_cluster(tmp, env, procs)
        out, log = tmp / "results.json", tmp / "driver.log"
        with open(log, "wb") as f:
            driver = subprocess.Popen(
                [sys.executable, "-m", "tests.spark_metrics.cluster_jvm_job", url, str(data), str(out)],
                cwd=REPO_ROOT, env=driver_env, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            )  # fmt: skip
        procs.append(driver)
        code = driver.wait(timeout=600)
        assert code == 0, f"the cluster driver failed; end of {log}:\n{log.read_text(errors='replace')[-6000:]}"
        return json.loads(out.read_text())
    finally:
        for proc in reversed(procs):
            _kill(proc)


def test_group_by_agg_on_executors_without_python_equals_the_local_engine_exactly(jvm_only_runs):
    """The issue's criterion: df.groupBy("carrier").agg(...) with roc_auc, average_precision, f1 and log_loss
    on the flights data, on executors that cannot run Python (the JVM aggregates, finished on the driver),
    equals the local engine bit for bit (log_loss too: core's logarithm is fdlibm's, as Java's StrictMath)."""
    from mergeable_metrics import Evaluation
    from tests.spark_metrics.cluster_jvm_job import ARGS, METRICS

    assert jvm_only_runs["executors"] == 2
    assert NO_PYTHON in (jvm_only_runs["python_udf_error"] or ""), jvm_only_runs["python_udf_error"]  # no Python there at all
    want = Evaluation(metrics=METRICS, slices=["carrier"], **ARGS).evaluate([cluster_job.make_pdf()])
    expected = {str(dict(s.key).get("carrier")): {k: float(s.metrics[k]).hex() for k in METRICS} for s in want if s.key}
    assert jvm_only_runs["group_by"] == expected
    evaluated = {json.dumps(s.key): {k: float(s.metrics[k]).hex() for k in METRICS} for s in want}
    assert jvm_only_runs["evaluate"] == evaluated


def test_regression_metric_columns_on_executors_without_python_equal_the_local_engine_exactly(jvm_only_runs):
    """Regression (issue 26, round 5): groupBy("carrier").agg(*metric_columns(["r2", "mse", "mae", "pearson"],
    task="regression", weight_col="w")) on executors that cannot run Python: folded and finished in Java, equal to
    the local engine bit for bit."""
    from mergeable_metrics import Evaluation
    from tests.spark_metrics.cluster_jvm_job import REGRESSION, REGRESSION_ARGS

    want = Evaluation(metrics=REGRESSION, slices=["carrier"], **REGRESSION_ARGS).evaluate([cluster_job.make_pdf()])
    expected = {str(dict(s.key).get("carrier")): {k: float(s.metrics[k]).hex() for k in REGRESSION} for s in want if s.key}
    assert jvm_only_runs["regression"] == expected


def test_java_finishes_and_driver_finishes_on_executors_without_python_equal_the_local_engine_exactly(jvm_only_runs):
    """Issue 26 rounds 7-8 on executors that cannot run Python: metric_columns of the regression terms (msle, rmsle,
    pinball, Poisson and Gamma deviances) and of multiclass log_loss / brier_score from an array<double> of
    probabilities (checked in Java as core checks them) are folded and finished in Java; the error quantiles
    (median_absolute_error, d2_tweedie_score) and the class score distributions (multiclass roc_auc one-vs-rest and
    one-vs-one, average_precision) and calibration are folded in Java and finished by core on the driver. Every value
    equals the local engine's bit for bit."""
    from mergeable_metrics import Evaluation
    from tests.spark_metrics.cluster_jvm_job import CLASS_SCORES, PROBABILITIES, PROBABILITY_ARGS, QUANTILES, TERMS, TERMS_ARGS, with_derived

    pdf = with_derived(cluster_job.make_pdf())

    def expected(metrics: list, args: dict) -> dict:
        ev = Evaluation(metrics=metrics, slices=["carrier"], **args)
        keys = [m.key for m in ev.plan.metrics]
        return {str(dict(s.key).get("carrier")): {k: float(s.metrics[k]).hex() for k in keys} for s in ev.evaluate([pdf]) if s.key}

    def joined(*parts: dict) -> dict:
        out: dict = {}
        for part in parts:
            for g, values in part.items():
                out.setdefault(g, {}).update(values)
        return out

    assert jvm_only_runs["java_finished"] == joined(expected(TERMS, TERMS_ARGS), expected(PROBABILITIES, PROBABILITY_ARGS))
    assert jvm_only_runs["driver_finished"] == joined(expected(QUANTILES, TERMS_ARGS), expected(CLASS_SCORES, PROBABILITY_ARGS))
