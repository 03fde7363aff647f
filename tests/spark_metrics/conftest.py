"""Shared fixtures for the Spark adapter tests: one local[2] SparkSession per test session."""

from __future__ import annotations

import os
import sys

import pytest

from spark_metrics.session import find_java

JAVA_MISSING_REASON = (
    "java not found: the Spark tests need a JDK/JRE 17+ (e.g. `apt-get install openjdk-17-jre-headless`)"
)


@pytest.fixture(scope="session")
def spark():
    """A session-scoped ``local[2]`` SparkSession (UI off, 4 shuffle partitions), stopped at the end."""
    if find_java() is None:
        pytest.skip(JAVA_MISSING_REASON)
    pytest.importorskip("pyspark")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from spark_metrics import get_spark

    session = get_spark("mergeable-metrics-tests", "local[2]", shuffle_partitions=4)
    session.sparkContext.setLogLevel("FATAL")  # expected executor errors are asserted on, not logged
    yield session
    session.stop()
