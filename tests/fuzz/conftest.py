"""The fuzz suite reuses the Spark tests' session-scoped ``local[2]`` SparkSession fixture."""

from tests.spark_metrics.conftest import spark  # noqa: F401 -- the fixture, under its own name
