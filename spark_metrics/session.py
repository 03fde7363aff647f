"""A SparkSession helper with the settings this library expects (and a clear error without Java)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

MIN_JAVA = 17
_INSTALL_HINT = (
    f"Spark needs a Java runtime (JDK/JRE {MIN_JAVA}+). Install one, e.g. "
    "`apt-get install openjdk-17-jre-headless` (Debian/Ubuntu) or `brew install openjdk@17` (macOS), "
    "and put `java` on PATH or set JAVA_HOME."
)


def _import_root() -> str | None:
    """The directory that holds the ``mergeable_metrics`` package as a folder (an installed copy:
    site-packages), for the workers' ``PYTHONPATH``; None for an editable install, whose folders
    (``core/``, ``spark_metrics/``) map onto the package through the environment's import hook
    (workers running this interpreter have it). Never the package's own folder: its subpackages
    (``time``, ``inputs``) would shadow modules of the standard library."""
    package = Path(__file__).resolve().parent.parent  # mergeable_metrics/ when installed, the repository when editable
    return str(package.parent) if package.name == "mergeable_metrics" else None


_PROJECT_ROOT = _import_root()


class SparkSetupError(RuntimeError):
    """Spark cannot run this library: no usable Java runtime, or Python workers that cannot import
    ``mergeable_metrics.spark`` (the message says how to fix it)."""


def find_java() -> str | None:
    """Path of the ``java`` executable Spark would use (``$JAVA_HOME/bin/java``, else PATH), or None."""
    home = os.environ.get("JAVA_HOME")
    if home:
        cand = Path(home) / "bin" / ("java.exe" if os.name == "nt" else "java")
        if cand.is_file() and os.access(cand, os.X_OK):
            return str(cand)
    return shutil.which("java")


def java_version(java: str) -> int | None:
    """Major version of ``java`` (``17`` for "17.0.15", ``8`` for "1.8.0"), or None if unknown."""
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if not m:
        return None
    major = int(m.group(1))
    return int(m.group(2) or 0) if major == 1 else major


def check_java() -> str:
    """Make sure a usable Java runtime exists before a SparkSession is started.

    Returns:
        The path of the ``java`` executable.

    Raises:
        SparkSetupError: (a ``RuntimeError``) no ``java`` is found, or it is older than Java 17;
            the message says how to install a JDK 17+.
    """
    java = find_java()
    if java is None:
        raise SparkSetupError(f"java was not found (JAVA_HOME={os.environ.get('JAVA_HOME')!r}). {_INSTALL_HINT}")
    version = java_version(java)
    if version is not None and version < MIN_JAVA:
        raise SparkSetupError(f"{java} is Java {version}; PySpark 4 needs Java {MIN_JAVA}+. {_INSTALL_HINT}")
    return java


def get_spark(
    app_name: str = "mergeable-metrics",
    master: str = "local[2]",
    *,
    shuffle_partitions: int = 8,
    config: Mapping[str, Any] | None = None,
) -> "SparkSession":
    """Get or create a classic SparkSession configured for this library.

    Sets ``PYSPARK_PYTHON``/``PYSPARK_DRIVER_PYTHON`` to the running interpreter (always for
    ``local`` masters, only when unset otherwise) so Python workers use the same environment,
    adds the installed package's directory to ``PYTHONPATH`` so workers can import it, checks for Java,
    disables the Spark UI, uses a small ``spark.sql.shuffle.partitions`` and enables Arrow.

    Args:
        app_name: Spark application name.
        master: Spark master URL, e.g. ``"local[2]"`` or ``"local[*]"``.
        shuffle_partitions: ``spark.sql.shuffle.partitions`` (the per-slice merge runs in this
            many tasks; results are small, so a small number is best).
        config: extra Spark settings, applied last.

    Returns:
        The SparkSession (an already running one is reused; static settings then keep their
        old values).

    Raises:
        RuntimeError: Java is missing or older than 17 (checked before any JVM is started).
        ImportError: pyspark is not installed (``pip install 'mergeable-metrics[spark]'``).
    """
    if master.startswith("local") or not os.environ.get("PYSPARK_PYTHON"):
        os.environ["PYSPARK_PYTHON"] = sys.executable
    if master.startswith("local") or not os.environ.get("PYSPARK_DRIVER_PYTHON"):
        os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if _PROJECT_ROOT is not None and _PROJECT_ROOT not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([_PROJECT_ROOT, *paths])
    check_java()
    try:
        from pyspark.sql import SparkSession
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("mergeable_metrics.spark needs pyspark: pip install 'mergeable-metrics[spark]'") from e

    builder = (
        SparkSession.builder.appName(app_name)
        .master(master)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(int(shuffle_partitions)))
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.execution.arrow.pyspark.fallback.enabled", "false")
        # large Arrow batches: fewer, larger folds per partition (about a fifth less time for the
        # Arrow path of compute_metrics than 100,000 rows: BENCHMARKS.md), bounded in bytes
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "1000000")
        .config("spark.sql.execution.arrow.maxBytesPerBatch", str(64 * 2**20))
        .config("spark.sql.session.timeZone", "UTC")
    )
    if master.startswith("local"):
        local_ip = os.environ.get("SPARK_LOCAL_IP", "127.0.0.1")
        # advertise the address we bind to: task results over spark.task.maxDirectResultSize (1 MB)
        # are fetched from the block manager at the advertised host, which otherwise may be another
        # interface than the bound one (connection refused -> TaskResultLost)
        builder = builder.config("spark.driver.bindAddress", local_ip).config("spark.driver.host", local_ip)
    for key, value in (config or {}).items():
        builder = builder.config(key, str(value))
    spark = builder.getOrCreate()
    # runtime SQL settings also apply to a reused session
    spark.conf.set("spark.sql.shuffle.partitions", str(int(shuffle_partitions)))
    spark.conf.set("spark.sql.execution.arrow.pyspark.enabled", "true")
    return spark


#: (application id, worker Python) pairs whose workers were found to import this package
_WORKERS_OK: set[tuple[str, str]] = set()


def _last_error_line(e: BaseException) -> str:
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    named = [ln for ln in lines if re.match(r"^[\w.]*(Error|Exception)\b", ln) and not ln.startswith(("org.", "java.", "py4j."))]
    return (named or lines or [type(e).__name__])[-1][:300]


def check_workers(spark: Any) -> None:
    """Make sure Spark's Python workers can import ``core`` and ``mergeable_metrics.spark`` (and numpy and
    pyarrow, which their jobs need), once per
    session and worker Python (one one-task job; later calls return at once).

    A session built with a plain ``SparkSession.builder`` runs its workers with ``python3`` from
    ``PATH`` (unless ``PYSPARK_PYTHON`` or ``spark.pyspark.python`` say otherwise), which often
    lacks this package: the metric job would fail in a worker, after its first stage, with
    ``ModuleNotFoundError``. This says so, in one line, before the job. Spark Connect sessions
    (no ``SparkContext`` on the client) are not checked.

    Raises:
        SparkSetupError: the workers' Python cannot import the package or cannot start; the
            message names it and how to fix it.
    """
    try:
        sc = spark.sparkContext
        key = (str(sc.applicationId), str(sc.pythonExec))
    except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext
        return
    if key in _WORKERS_OK:
        return

    def probe(_: Any) -> Any:  # pragma: no cover - runs in a worker; nested, so it is pickled by value
        import sys as worker_sys

        try:  # what the metric jobs' workers import: the package and the Arrow path's libraries
            import numpy  # noqa: F401
            import pyarrow  # noqa: F401

            import mergeable_metrics  # noqa: F401
            import mergeable_metrics.spark  # noqa: F401
        except Exception as e:  # noqa: BLE001 - any failure to import is the answer
            return [(worker_sys.executable, worker_sys.prefix, f"{type(e).__name__}: {e}")]
        return [(worker_sys.executable, worker_sys.prefix, "")]

    try:
        exe, prefix, problem = sc.parallelize([0], 1).mapPartitions(probe).collect()[0]
    except Exception as e:  # noqa: BLE001 - the worker Python did not start or could not unpickle the probe
        exe, prefix, problem = key[1], None, _last_error_line(e)
    if problem:
        fix = (  # the driver's environment (a venv is its prefix): the package is missing from the workers' path
            "add the project to the workers' PYTHONPATH (spark.executorEnv.PYTHONPATH) or install it there"
            if prefix == sys.prefix
            else f"start the session with mergeable_metrics.spark.get_spark(), or set PYSPARK_PYTHON={sys.executable} (or spark.pyspark.python) before the SparkSession starts"
        )
        raise SparkSetupError(f"Spark's Python workers ({exe}) cannot run mergeable_metrics.spark ({problem}): {fix}")
    _WORKERS_OK.add(key)
