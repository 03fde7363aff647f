"""A Spark Connect server on loopback for the Spark Connect tests (tests/spark_metrics/test_connect.py).

The test session already holds a classic ``local[2]`` SparkSession, and a process can have only
one SparkContext, so the server runs in a subprocess::

    python -m tests.spark_metrics.connect_server PORT

It starts a ``local[2]`` session of :func:`mergeable_metrics.spark.get_spark` (this checkout on the Python
workers' path, UI off, 4 shuffle partitions) with Spark's Connect plugin serving gRPC on
``127.0.0.1:PORT`` (clients authenticate with ``$SPARK_CONNECT_AUTHENTICATE_TOKEN``), prints
``READY`` once the server listens, and stops when its standard input closes.
"""

from __future__ import annotations

import sys


def main(port: int) -> None:
    from mergeable_metrics.spark import get_spark

    spark = get_spark(
        "mergeable-metrics-connect-tests",
        "local[2]",
        shuffle_partitions=4,
        config={
            "spark.plugins": "org.apache.spark.sql.connect.SparkConnectPlugin",
            "spark.connect.grpc.binding.address": "127.0.0.1",
            "spark.connect.grpc.binding.port": port,
        },
    )
    spark.sparkContext.setLogLevel("FATAL")  # expected executor errors are asserted on by the client
    print("READY", flush=True)
    sys.stdin.read()  # until the test session closes our standard input (or dies)
    spark.stop()


if __name__ == "__main__":
    main(int(sys.argv[1]))
