"""Shared fixtures for the Spark adapter tests: one local[2] SparkSession per test session (``jvm_spark``: with
the JVM aggregates loaded), and
(for tests/spark_metrics/test_connect.py) one Spark Connect server per test session."""

from __future__ import annotations

import os
import selectors
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def spark():
    """A session-scoped ``local[2]`` SparkSession (UI off, 4 shuffle partitions), stopped at the end."""
    pytest.importorskip("pyspark")  # (no Java: tests/conftest.py skips every test marked spark)
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from mergeable_metrics.spark import get_spark

    session = get_spark("mergeable-metrics-tests", "local[2]", shuffle_partitions=4)
    session.sparkContext.setLogLevel("FATAL")  # expected executor errors are asserted on, not logged
    yield session
    session.stop()


@pytest.fixture(scope="module")
def jvm_spark(spark):
    """The session with the JVM aggregates loaded (skipped without a JDK)."""
    from mergeable_metrics.spark import jvm

    if jvm.find_javac() is None and jvm.jar_path(build=False) is None:
        pytest.skip(jvm.NO_JDK)
    assert jvm.available(spark)
    return spark


REPO_ROOT = Path(__file__).resolve().parents[2]
#: seconds the Spark Connect server may take to start (a JVM and a SparkContext; slow under load)
CONNECT_START_TIMEOUT = 240.0


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _stop(proc: subprocess.Popen) -> None:
    """Close the server's standard input (it stops its session), then end its process group."""
    try:
        proc.stdin.close()
        proc.wait(30)
    except (OSError, subprocess.TimeoutExpired):
        pass
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
            proc.wait(10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass


@pytest.fixture(scope="session")
def spark_connect(tmp_path_factory):
    """A Spark Connect client session of a ``local[2]`` Connect server on 127.0.0.1 (a
    subprocess: tests/spark_metrics/connect_server.py; token-authenticated), one per test session.

    Skips, saying why, when Java (tests/conftest.py) or the Connect client's packages (``pyspark[connect]``: grpcio,
    grpcio-status, googleapis-common-protos, zstandard) are missing, or the server does not start.
    ``pyspark.sql.functions`` build Connect columns only while ``SPARK_CONNECT_MODE_ENABLED`` is
    set (process-wide): tests set it for their own duration (``monkeypatch``), so the classic tests
    of the same process are not affected.
    """
    pytest.importorskip("pyspark")
    try:
        from pyspark.sql.connect.utils import check_dependencies

        check_dependencies()
    except Exception as e:  # noqa: BLE001 - ImportError or pyspark's PySparkImportError
        pytest.skip(f"the Spark Connect client cannot load ({e}): pip install 'pyspark[connect]' (grpcio, grpcio-status, googleapis-common-protos, zstandard)")
    port, token = _free_port(), str(uuid.uuid4())
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "SPARK_LOCAL_REMOTE", "SPARK_CONNECT_MODE_ENABLED")}
    env.update(
        SPARK_CONNECT_AUTHENTICATE_TOKEN=token, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
        PYTHONPATH=os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])),
    )  # fmt: skip
    log = tmp_path_factory.mktemp("spark-connect") / "server.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.spark_metrics.connect_server", str(port)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, cwd=REPO_ROOT, env=env, start_new_session=True,
        )  # fmt: skip
    try:
        ready, deadline = False, time.monotonic() + CONNECT_START_TIMEOUT
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            while not ready and proc.poll() is None and time.monotonic() < deadline:
                if sel.select(timeout=1.0):
                    line = proc.stdout.readline()
                    ready = line.strip() == b"READY"
                    if not line:
                        break
        if not ready:
            tail = log.read_text(errors="replace")[-2000:]
            pytest.skip(f"the Spark Connect server did not start on 127.0.0.1:{port} (exit code {proc.poll()}); end of {log}:\n{tail}")
        from pyspark.sql.connect.session import SparkSession as RemoteSparkSession

        session = RemoteSparkSession.builder.remote(f"sc://localhost:{port}/;token={token}").getOrCreate()
        try:
            yield session
        finally:
            session.stop()
    finally:
        _stop(proc)
