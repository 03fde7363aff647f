"""The JVM path of the Spark adapter: core's states folded by Java aggregates, inside Spark's own aggregation.

The Java sources ship with the package (``mergeable_metrics/spark/java/``). On first use they are compiled with
``javac`` against the installed pyspark's jars into a small jar, cached per Spark version and source hash in the
user's cache directory (``$MERGEABLE_METRICS_CACHE``, else ``$XDG_CACHE_HOME/mergeable-metrics``, else
``~/.cache/mergeable-metrics``), so a read-only site-packages works. A classic session gets the jar through
``ADD JAR`` (``SparkContext.addJar`` plus the session's jar class loader, so it works in a session that is
already running); a Spark Connect session through ``spark.addArtifacts``.

Each aggregate folds the rows ``(label[, score][, weight])`` of a group into the states of an evaluation's plan
and returns their bytes, exactly the bytes core's codec writes for the same rows (any partitioning): the
values are then computed from those states by core, on the driver. No Python runs on the executors.

* classic Spark: a typed ``org.apache.spark.sql.expressions.Aggregator`` (``mergeablemetrics.StateAggregator``)
  registered with ``functions.udaf`` under a name of its own (usable from SQL); unweighted plans of count kinds
  only fold as Spark's own SQL sums per cell instead, packed into the same bytes in Java
  (:func:`count_cells_column`, issue 26 round 6: no object per row, code-generated);
* Spark Connect: the ``UserDefinedAggregateFunction`` form (``mergeablemetrics.StateUDAF``, registered with
  ``registerJavaUDAF`` as :data:`CONNECT_FUNCTION`), whose first argument is the spec string (count kinds only);
  for the float kinds (``roc_auc``, ``average_precision``, ``log_loss``, ``brier_score``, calibration, ...)
  ``mergeablemetrics.BlockStateUDAF`` (:data:`CONNECT_BLOCK_FUNCTION`), whose buffer holds the states
  Java-serialised plus a block of pending rows, folded a block at a time (not re-serialised per row);
  ``mergeablemetrics.RowBlockUDAF`` (:data:`CONNECT_ROW_FUNCTION`) likewise for score rows.

Score rows (:data:`SCORE_ROW_MODE`): multiclass ``roc_auc`` / ``average_precision`` read an ``array<double>`` column of
the K class scores of each row (``mergeablemetrics.RowStateAggregator`` in a classic session), folded into core's
``class_score_distribution``; probability rows (:data:`PROBABILITY_ROW_MODE`): multiclass ``log_loss``, ``brier_score``
and calibration read it as probabilities, each row checked in Java as core checks it (``Spec.checkProbabilities``).

Without a JDK (no ``javac``) :func:`jar_path` returns None and the adapter keeps its other paths, with one
line saying what to install (:data:`NO_JDK`).
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
import threading
import zipfile
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, SparkSession

_log = logging.getLogger(__name__)

#: the one line said when the JVM path is not available for want of a JDK
NO_JDK = (
    "mergeable_metrics.spark: no JDK (javac) found, so the JVM aggregates are off and the Python/SQL paths run; "
    "install a JDK 17+ (e.g. `apt-get install openjdk-17-jdk-headless`) or set JAVA_HOME to one"
)
#: the name of the UserDefinedAggregateFunction form under Spark Connect
CONNECT_FUNCTION = "mm_states"
#: the name of the UserDefinedAggregateFunction form of every state kind (the float kinds) under Spark Connect
CONNECT_BLOCK_FUNCTION = "mm_block_states"
#: the UserDefinedAggregateFunction form of specs whose score column holds score rows (:data:`SCORE_ROW_MODE`) under Spark Connect
CONNECT_ROW_FUNCTION = "mm_row_states"
#: the score mode of an ``array<double>`` score column of K finite scores per row (``mergeablemetrics.Spec.SCORE_ROW``:
#: multiclass ``roc_auc`` / ``average_precision`` one-vs-rest and one-vs-one from class score columns)
SCORE_ROW_MODE = 5
#: the score mode of an ``array<double>`` column of K class probabilities per row (``mergeablemetrics.Spec.PROBABILITY_ROW``:
#: multiclass ``log_loss``, ``brier_score``, calibration): the score rows' checks, then core's probability checks (each
#: entry in [0, 1], the row's numpy sum within ``PROBABILITY_SUM_TOL * K`` of 1), the same decisions bit for bit
PROBABILITY_ROW_MODE = 6
#: the float state kinds folded from score rows (the others of a multiclass plan with scores keep the Arrow path)
ROW_KINDS: frozenset[str] = frozenset({"class_score_distribution", "probability_sums", "calibration_bins"})
#: the state kinds :data:`CONNECT_FUNCTION` folds (sums of per-row cells)
COUNT_KINDS: frozenset[str] = frozenset({"binary_confusion", "confusion_matrix", "example_count"})
_SEP = "\x1f"
_lock = threading.Lock()
_said: set[str] = set()


def _say_once(line: str) -> None:
    if line not in _said:
        _said.add(line)
        _log.warning(line)


def java_sources() -> list[tuple[str, bytes]]:
    """``[(relative path, content)]`` of the packaged Java sources, sorted."""
    root = resources.files("mergeable_metrics.spark") / "java" / "mergeablemetrics"
    out = [(f"mergeablemetrics/{p.name}", p.read_bytes()) for p in root.iterdir() if p.name.endswith(".java")]
    return sorted(out)


def source_hash() -> str:
    h = hashlib.sha256()
    for name, data in java_sources():
        h.update(name.encode() + b"\0" + data + b"\0")
    return h.hexdigest()[:16]


def cache_dir() -> Path:
    base = os.environ.get("MERGEABLE_METRICS_CACHE")
    if base:
        return Path(base)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "mergeable-metrics"


def find_javac() -> str | None:
    """``$JAVA_HOME/bin/javac``, else ``javac`` on PATH, or None."""
    home = os.environ.get("JAVA_HOME")
    if home:
        cand = Path(home) / "bin" / ("javac.exe" if os.name == "nt" else "javac")
        if cand.is_file() and os.access(cand, os.X_OK):
            return str(cand)
    return shutil.which("javac")


def _pyspark_jars() -> tuple[str, Path]:
    import pyspark

    return pyspark.__version__, Path(pyspark.__file__).resolve().parent / "jars"


def jar_path(build: bool = True) -> Path | None:
    """The jar of the JVM aggregates for the installed pyspark, built on first use (None without a JDK).

    Raises:
        RuntimeError: ``javac`` failed (its output in the message).
    """
    version, jars = _pyspark_jars()
    target = cache_dir() / "jvm" / f"spark-{version}-{source_hash()}" / "mergeable-metrics-jvm.jar"
    if target.is_file():
        return target
    if not build:
        return None
    javac = find_javac()
    if javac is None:
        _say_once(NO_JDK)
        return None
    with _lock:
        if target.is_file():
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
            src, classes = Path(tmp) / "src", Path(tmp) / "classes"
            files = []
            for name, data in java_sources():
                p = src / name
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_bytes(data)
                files.append(str(p))
            classes.mkdir()
            cmd = [javac, "-nowarn", "-encoding", "UTF-8", "--release", "17", "-d", str(classes), "-cp", str(jars / "*"), *files]
            run = subprocess.run(cmd, capture_output=True, text=True)
            if run.returncode != 0:
                raise RuntimeError(f"mergeable_metrics.spark: javac failed building the JVM aggregates:\n{run.stdout}{run.stderr}")
            part = Path(tmp) / "out.jar"
            with zipfile.ZipFile(part, "w", zipfile.ZIP_DEFLATED) as z:
                z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\nCreated-By: mergeable-metrics\n\n")
                for f in sorted(classes.rglob("*.class")):
                    z.write(f, f.relative_to(classes).as_posix())
            os.replace(part, target)
    return target


def is_connect(spark: Any) -> bool:
    return type(spark).__module__.startswith("pyspark.sql.connect")


def _session_key(spark: Any) -> Any:
    return spark.session_id if is_connect(spark) else id(spark._jsparkSession)


_loaded: dict[Any, Any] = {}


def _registrar(spark: "SparkSession") -> Any:
    """The Registrar class object (Py4J) of a classic session, loading the jar into it on first use."""
    key = _session_key(spark)
    got = _loaded.get(key)
    if got is not None:
        return got
    jar = jar_path()
    if jar is None:
        return None
    jss = spark._jsparkSession
    spark.sql(f"ADD JAR '{jar.as_posix()}'")  # executors (SparkContext.addJar) and the session's jar class loader
    loader = jss.sharedState().jarClassLoader()
    cls = loader.loadClass("mergeablemetrics.Registrar")
    _loaded[key] = cls
    return cls


def _connect_ready(spark: Any) -> bool:
    key = _session_key(spark)
    if key in _loaded:
        return True
    jar = jar_path()
    if jar is None:
        return False
    spark.addArtifacts(str(jar))
    spark.udf.registerJavaUDAF(CONNECT_FUNCTION, "mergeablemetrics.StateUDAF")
    spark.udf.registerJavaUDAF(CONNECT_BLOCK_FUNCTION, "mergeablemetrics.BlockStateUDAF")
    spark.udf.registerJavaUDAF(CONNECT_ROW_FUNCTION, "mergeablemetrics.RowBlockUDAF")
    _loaded[key] = True
    return True


def available(spark: Any) -> bool:
    """Whether the JVM aggregates can run in ``spark`` (building and loading the jar on first use)."""
    try:
        return _connect_ready(spark) if is_connect(spark) else _registrar(spark) is not None
    except RuntimeError:
        raise
    except Exception as e:  # pragma: no cover - a session that refuses the jar
        _say_once(f"mergeable_metrics.spark: the JVM aggregates could not be loaded ({type(e).__name__}: {e}); the Python/SQL paths run")
        return False


def spec_text(k: int, score_mode: int, weighted: bool, names: Sequence[str | None], rules: Sequence[str], states: Sequence[tuple[str, str]]) -> str:
    """The spec string of ``mergeablemetrics.Spec``: input checks and the states' ``(kind, config)``."""
    fields = [str(int(k)), str(int(score_mode)), "1" if weighted else "0", *[n or "" for n in names], *rules, str(len(states))]
    for kind, config in states:
        fields += [kind, config]
    if any(_SEP in f for f in fields):
        raise ValueError("column names and configurations cannot contain the character U+001F")
    return _SEP.join(fields)


def spec_kinds(spec: str) -> list[str]:
    """The state kinds of a spec string (:func:`spec_text`'s)."""
    fields = spec.split(_SEP)
    return fields[10::2][: int(fields[9])]


def register(spark: "SparkSession", name: str, spec: str) -> str:
    """Register the typed Aggregator of ``spec`` under ``name`` in a classic session (usable from SQL:
    ``SELECT name(label, score) ...``); returns the name."""
    _call_registrar(spark, "register", name, spec)
    return name


def _call_registrar(spark: "SparkSession", method: str, first: str, second: str) -> None:
    """Call the registrar's static ``method(SparkSession, String, String)`` through the gateway."""
    cls = _registrar(spark)
    if cls is None:
        raise RuntimeError(NO_JDK)
    gw = spark.sparkContext._gateway
    types = gw.new_array(gw.jvm.java.lang.Class, 3)
    types[0] = gw.jvm.java.lang.Class.forName("org.apache.spark.sql.SparkSession")
    types[1] = types[2] = gw.jvm.java.lang.Class.forName("java.lang.String")
    args = gw.new_array(gw.jvm.java.lang.Object, 3)
    args[0], args[1], args[2] = spark._jsparkSession, first, second
    cls.getMethod(method, types).invoke(None, args)


def function_name(spec: str) -> str:
    return "mm_state_" + hashlib.sha256(spec.encode()).hexdigest()[:16]


def state_column(spark: Any, spec: str, label: "Column", score: "Column | None", weight: "Column | None") -> "Column":
    """The aggregate Column of ``spec`` over the (double) input columns: the states' packed bytes."""
    from pyspark.sql import functions as F

    rows = int(spec.split(_SEP, 2)[1]) in (SCORE_ROW_MODE, PROBABILITY_ROW_MODE, OUTPUT_ROWS_MODE)
    if is_connect(spark):
        if not _connect_ready(spark):
            raise RuntimeError(NO_JDK)
        none = F.lit(None).cast("double")
        name = CONNECT_ROW_FUNCTION if rows else connect_function(spec)
        return F.call_function(name, F.lit(spec), label, score if score is not None else none, weight if weight is not None else none)
    name = function_name(spec)
    key = (_session_key(spark), name)
    if key not in _loaded:
        if rows:
            _call_registrar(spark, "registerRows", name, spec)
        else:
            register(spark, name, spec)
        _loaded[key] = True
    cols = [label] + ([score] if score is not None else []) + ([weight] if weight is not None else [])
    return F.call_function(name, *cols)


#: fold unweighted count kinds with Spark's own sums (:func:`count_cells_column`); False: the typed Aggregator
NATIVE_COUNTS = True
#: the most cells (over a spec's states, example_count's aside) :func:`count_cells_column` lowers to SQL sums
MAX_NATIVE_CELLS = 64
#: the names of ``mergeablemetrics.CountCells``' two functions in a classic session
CHECK_FUNCTION, PACK_FUNCTION = "mm_count_check", "mm_pack_cells"


def _native_cells(k: int, kind: str, config: str) -> tuple[int, Any] | None:
    """``(number of cells, sums(label, score) -> [aggregate Column])`` of one count state (None: not lowered): the
    SQL sums ``mergeablemetrics.CountCells.Pack`` turns into the Java state's cell counts.

    * ``example_count``: ``count(1)``;
    * ``confusion_matrix``: per cell ``j``, ``sum(label * K + prediction == j)``;
    * ``binary_confusion`` at sorted thresholds ``t_1 <= ... <= t_T`` (issue 26 round 7): ``sum(label != 0)`` and,
      per threshold, ``sum(score passes t_j)`` and ``sum(label != 0 and score passes t_j)``, ``1 + 2T`` sums of
      one comparison each (a score passing ``t_j`` passes every lower threshold, so these are the rows at or above
      each cell, and Pack takes the differences with the row count): smaller expressions for Spark to analyse,
      plan and run than ``2(T + 1)`` sums of ``cell == j``.
    """
    from pyspark.sql import functions as F

    def ones(cond: Any) -> Any:
        return F.sum(F.when(cond, F.lit(1)).otherwise(F.lit(0)))

    lines = config.split("\n")
    if kind == "example_count":
        return 1, lambda y, s: [F.count(F.lit(1))]
    if kind == "confusion_matrix":
        kk = int(lines[1].strip())
        if kk != k:
            return None

        def matrix(y: Any, s: Any) -> list:
            c = (y * kk + s).cast("int")
            return [ones(c == F.lit(j)) for j in range(kk * kk)]

        return kk * kk, matrix
    if kind == "binary_confusion" and len(lines) >= 3 and lines[1] in (">=", ">"):
        ts = [float(t) for t in lines[2].split(",")] if lines[2] else []
        if any(not (a <= b) for a, b in zip(ts, ts[1:])) or any(t != t for t in ts):
            return None  # the Java cell counts a sorted prefix: unsorted thresholds keep the Aggregator

        def binary(y: Any, s: Any) -> list:
            pos = y != F.lit(0.0)
            out = [ones(pos)]
            for t in ts:
                passes = s >= F.lit(t) if lines[1] == ">=" else s > F.lit(t)
                out += [ones(passes), ones(pos & passes)]
            return out

        return 2 * (len(ts) + 1), binary
    return None


def count_cells_column(
    spark: Any, spec: str, label: "Column", score: "Column | None", fast_label: "Column | None" = None, fast_score: "Column | None" = None
) -> "Column | None":
    """The unweighted count kinds' fold as Spark's own aggregates: per state, SQL sums of one-comparison indicators
    (:func:`_native_cells`; code-generated, partially aggregated), packed into the states' bytes by
    ``mergeablemetrics.CountCells.Pack``: the bytes :class:`StateAggregator` returns for the same rows. The SQL
    condition accepts exactly the valid rows; any other row (nulls, NaN, values out of range) meets
    ``CountCells.Check`` in one more aggregate, which raises the Java checks' error. None when the spec is not lowered (weighted, other kinds, too many cells).
    ``fast_label`` / ``fast_score``: the inputs the SQL condition and cells read, when cheaper than ``label`` /
    ``score`` (which then only the Java branch reads: e.g. without their checks, a null there takes the Java branch)."""
    from pyspark.sql import functions as F

    fields = spec.split(_SEP)
    k, mode, weighted = int(fields[0]), int(fields[1]), fields[2] == "1"
    if weighted or mode not in (0, 1, 2, 3):  # NO_SCORE, SCORE, PREDICTION, PROBABILITY
        return None
    states = list(zip(fields[10::2], fields[11::2]))[: int(fields[9])]
    cells = []
    for kind, config in states:
        got = _native_cells(k, kind, config)
        if got is None:
            return None
        cells.append(got)
    if not cells or sum(n for n, _ in cells if n > 1) > MAX_NATIVE_CELLS or k > MAX_NATIVE_CELLS:
        return None
    key = (_session_key(spark), CHECK_FUNCTION)
    if key not in _loaded:
        _call_registrar(spark, "registerCountCells", CHECK_FUNCTION, PACK_FUNCTION)
        _loaded[key] = True
    java_label, java_score = label, F.lit(None).cast("double") if mode == 0 else score
    label = label if fast_label is None else fast_label
    score = score if fast_score is None else fast_score

    def is_class(v: Any) -> Any:
        # an integer in [0, k): -0.0 is 0; null and NaN (above every number in Spark SQL) fail. Not `isin`: Spark
        # turns a long IN list into a hash set, where -0.0 is not 0.0
        if k == 2:
            return (v == F.lit(0.0)) | (v == F.lit(1.0))  # SQL's = on doubles: -0.0 = 0.0, NaN = NaN only
        return (v >= F.lit(0.0)) & (v < F.lit(float(k))) & (v == F.rint(v))

    ok = is_class(label)
    if mode == 0:
        s = F.lit(0.0)
    else:
        s = score
        if mode == 1:
            ok = ok & (F.abs(s) < F.lit(float("inf")))  # NaN is above every number in Spark SQL, inf is not below it
        elif mode == 3:
            ok = ok & (s >= F.lit(0.0)) & (s <= F.lit(1.0))  # NaN is above every number in Spark SQL
        else:
            ok = ok & is_class(s)
    # every row meets the check aggregate, and a row the condition refuses is invalid (nulls, NaN, out of range):
    # the Java check raises its error and the job fails, so the sums need not test the condition again (a smaller
    # expression: Spark's analysis and planning of it cost more than folding a million rows)
    check = F.max(F.when(ok, F.lit(0)).otherwise(F.call_function(CHECK_FUNCTION, F.lit(spec), java_label, java_score)))
    sums = [check, F.count(F.lit(1))]  # the row count: Pack's cells of binary_confusion (Spark computes it once)
    for _, state_sums in cells:
        sums += state_sums(label, s)
    return F.call_function(PACK_FUNCTION, F.lit(spec), F.array(*sums))


def unpack(data: bytes | None, count: int) -> list[bytes] | None:
    """The ``count`` state frames of an aggregate's output (None: a group without rows under Connect)."""
    if data is None:
        return None
    data = bytes(data)
    out, at = [], 0
    for _ in range(count):
        n = int.from_bytes(data[at : at + 4], "little")
        out.append(data[at + 4 : at + 4 + n])
        at += 4 + n
    if at != len(data) or len(out) != count:
        raise ValueError("corrupted JVM aggregate output")
    return out


# -- an evaluation's plan as a spec -------------------------------------------------------------------------------
#: what the JVM path does not fold (one line each; such evaluations keep the other paths)
NOT_PORTED = "per-query ranking, multilabel, top-k and multioutput regression error quantiles keep the Arrow path (not ported to the JVM)"


def _count_kind(state: Any) -> tuple[str, str] | None:
    """``(kind, config)`` of a count state kind (its zero state), or None."""
    from mergeable_metrics.engine import BinaryConfusionState, ConfusionMatrixState, ExampleCountState, layout_to_json

    layout = state.layout
    if isinstance(state, BinaryConfusionState):
        return "binary_confusion", "\n".join([layout_to_json(layout), layout.threshold_rule, ",".join(repr(float(t)) for t in layout.thresholds)])
    if isinstance(state, ConfusionMatrixState):
        return "confusion_matrix", f"{layout_to_json(layout)}\n{layout.num_classes}"
    if isinstance(state, ExampleCountState):
        return "example_count", layout_to_json(layout)
    return None


def _float_kinds() -> dict:
    try:
        from mergeable_metrics.spark.jvm_float_kinds import FLOAT_KINDS
    except ImportError:
        return {}
    return dict(FLOAT_KINDS)


#: the rule of probability scores (core's, for log_loss, brier_score, ...)
PROBABILITIES = "probabilities must be in [0, 1]"
#: core's rule of finite values under ``score_format="probabilities"`` (core/inputs/formats.py)
PROBABILITIES_FINITE = "probabilities must be finite (no NaN or inf)"
#: the count kinds (their UserDefinedAggregateFunction form under Spark Connect keeps int64 cells: unweighted plans only)
COUNT_KINDS: frozenset[str] = frozenset({"binary_confusion", "confusion_matrix", "example_count"})


def connect_function(spec: str) -> str:
    """The Spark Connect aggregate that folds ``spec``: :data:`CONNECT_FUNCTION` for unweighted count kinds only
    (int64 cells in its buffer), else :data:`CONNECT_BLOCK_FUNCTION` (every kind, any weights: the JVM states)."""
    weighted = spec.split(_SEP)[2] == "1"
    return CONNECT_FUNCTION if set(spec_kinds(spec)) <= COUNT_KINDS and not weighted else CONNECT_BLOCK_FUNCTION


def connect_refuses(spec: str) -> str | None:
    """Why Spark Connect cannot fold ``spec`` in the JVM, or None. None for every spec: weighted plans (count
    kinds included) go to :data:`CONNECT_BLOCK_FUNCTION` (:func:`connect_function`); before, a weight column
    with any count kind in the plan (every plan has ``example_count``) was refused, so weighted ``roc_auc`` or
    ``log_loss`` could not be computed by ``metric_columns`` over Connect."""
    return None


def evaluation_spec(ev: Any, sliced: bool = False) -> tuple[str | None, str]:
    """``(spec, "")`` of an evaluation the JVM aggregates can fold, else ``(None, why not)``.

    ``sliced``: the caller folds each slice itself (``groupBy`` of the slice columns), so slice specs are no reason not to.
    """
    from mergeable_metrics.engine import SCORES_FINITE, WEIGHTS_RULE, label_rule

    plan = ev.plan
    task = plan.task
    if ev.slices and not sliced:
        return None, "slice specs (use groupBy keys with metric_columns)"
    if task.kind == "regression":
        return _regression_spec(ev)
    if task.kind == "multiclass" and ev.score_col is not None:
        return _score_row_spec(ev)
    # the plain (N,) inputs, or one binary score column read as probabilities (log_loss, brier_score, ...)
    binary_score = (
        task.kind == "binary"
        and isinstance(ev.score_col, str)
        and task.ignore_index is None
        and not any(ev.formats.values())
        and ev.measure_col is None
        and ev.query_col is None
        and ev.label_col is not None
        and not {"score_matrix", "measure"} & plan.needs
    )
    if not (getattr(ev, "_plain", False) or binary_score) or getattr(ev, "classes", None) is not None:
        return None, "inputs need core's input formats (score matrices, one-hot, ignore_index, classes=, ...)"
    k = plan.task.num_classes
    if plan.task.kind == "multiclass":
        if ev.prediction_col is None:
            return None, "a multiclass task needs a prediction column"
        mode, score_name, score_rule = 2, ev.prediction_col, label_rule("predictions", k)
    elif plan.task.kind == "binary":
        if ev.score_col is not None and "probability" in plan.needs:
            mode, score_name, score_rule = 3, ev.score_col, PROBABILITIES
        elif ev.score_col is not None:
            mode, score_name, score_rule = 1, ev.score_col, SCORES_FINITE
        elif ev.prediction_col is not None:
            mode, score_name, score_rule = 2, ev.prediction_col, label_rule("predictions", k)
        else:
            mode, score_name, score_rule = 0, None, ""
    else:
        return None, f"a {plan.task.kind} task"
    states, why = _jvm_states(plan, None if mode in (1, 3) else "state {kind!r} folds a score column in the JVM (not predictions or probability rows)")
    if states is None:
        return None, why
    names = [ev.label_col, score_name, ev.weight_col]
    rules = [label_rule("labels", k), score_rule, WEIGHTS_RULE]
    return spec_text(k, mode, ev.weight_col is not None, names, rules, states), ""


def _jvm_states(plan: Any, no_float: str | None) -> tuple[list | None, str]:
    """``(the JVM kind of each state of plan, "")``, or ``(None, why not)``: a state with no JVM port, or
    (``no_float``, formatted with the state's ``kind``) a float state where the input cannot feed one."""
    floats = _float_kinds()
    states = []
    for cls, layout in plan.state_types:
        zero = cls.zero(layout)
        got = _count_kind(zero)
        if got is None and type(zero) in floats:
            if no_float is not None:
                return None, no_float.format(kind=cls.kind)
            try:
                got = floats[type(zero)](zero)
            except NotImplementedError as e:
                return None, str(e)
        if got is None:
            return None, f"state {cls.kind!r} has no JVM port ({NOT_PORTED})"
        states.append(got)
    return states, ""


def _score_row_spec(ev: Any) -> tuple[str | None, str]:
    """``(spec, "")`` of a multiclass evaluation of an ``array<double>`` score column of K scores per row whose
    states are ``example_count``, the class score distribution (``roc_auc``, ``average_precision``,
    one-vs-rest and one-vs-one), the probability sums (``log_loss``, ``brier_score``) and the calibration bins, else
    ``(None, why not)``. A plan reading probabilities (:data:`PROBABILITY_ROW_MODE`) checks each row as core does."""
    from mergeable_metrics.engine import SCORES_FINITE, WEIGHTS_RULE, label_rule

    plan = ev.plan
    task = plan.task
    formats = dict(ev.formats)
    probabilities = formats.pop("score", None) == "probabilities"  # the probabilities format: core checks every row
    if (
        not isinstance(ev.score_col, str)
        or not isinstance(ev.label_col, str)
        or ev.prediction_col is not None
        or any(formats.values())
        or (ev.formats.get("score") not in (None, "probabilities"))
        or ev.measure_col is not None
        or ev.query_col is not None
        or getattr(ev, "classes", None) is not None
        or task.ignore_index is not None
        or not plan.needs <= {"target", "score_matrix", "probability"}
    ):
        return None, "inputs need core's input formats (per-class score columns, one-hot, logits, classes=, ...)"
    states = []
    for cls, layout in plan.state_types:
        zero = cls.zero(layout)
        if cls.kind == "example_count":
            got = _count_kind(zero)
        elif cls.kind in ROW_KINDS:
            got = _float_kinds()[type(zero)](zero)
        else:
            return None, f"state {cls.kind!r} is not folded from score rows in the JVM ({NOT_PORTED})"
        states.append(got)
    k = task.num_classes
    names = [ev.label_col, ev.score_col, ev.weight_col]
    rules = [label_rule("labels", k), PROBABILITIES_FINITE if probabilities else SCORES_FINITE, WEIGHTS_RULE]
    mode = PROBABILITY_ROW_MODE if probabilities or "probability" in plan.needs else SCORE_ROW_MODE
    return spec_text(k, mode, ev.weight_col is not None, names, rules, states), ""


#: the rules of regression targets and predictions, as core's messages state them (inputs/formats.py)
TARGETS_FINITE = "targets must be finite (no NaN or inf)"
VALUES_FINITE = "values must be finite (no NaN or inf)"
#: the score mode of regression targets and predictions (``mergeablemetrics.Spec.VALUES``)
VALUES_MODE = 4
#: the score mode of multioutput regression (``mergeablemetrics.Spec.OUTPUT_ROWS``, ``num_outputs=D``): the label
#: argument is the length of the target row (+ 0.5 where the prediction row is null; null for a null target row),
#: the score argument the target row followed by the prediction row (:func:`input_columns`)
OUTPUT_ROWS_MODE = 7
#: the states a multioutput regression plan folds in the JVM
OUTPUT_ROW_KINDS: frozenset[str] = frozenset({"example_count", "regression_moments", "regression_terms"})


def _regression_spec(ev: Any) -> tuple[str | None, str]:
    """``(spec, "")`` of a single-output regression evaluation of plain (N,) columns (targets, predictions
    from ``score_col`` or ``prediction_col``, weights), else ``(None, why not)``."""
    from mergeable_metrics.engine import WEIGHTS_RULE

    plan = ev.plan
    task = plan.task
    values = ev.score_col if ev.score_col is not None else ev.prediction_col
    d = getattr(task, "num_outputs", None)
    if (
        not isinstance(values, str)
        or not isinstance(ev.label_col, str)
        or any(ev.formats.values())
        or ev.measure_col is not None
        or ev.query_col is not None
        or getattr(ev, "classes", None) is not None
        or not plan.needs <= {"target", "prediction"}
    ):
        return None, "inputs need core's input formats (measures, queries, list columns, input formats, ...)"
    if d is not None:
        other = next((cls.kind for cls, _ in plan.state_types if cls.kind not in OUTPUT_ROW_KINDS), None)
        if other is not None:
            return None, f"state {other!r} of multioutput regression (num_outputs={d}) is not folded in the JVM ({NOT_PORTED})"
    states, why = _jvm_states(plan, None)
    if states is None:
        return None, why
    names = [ev.label_col, values, ev.weight_col]
    rules = [TARGETS_FINITE, VALUES_FINITE, WEIGHTS_RULE]
    if d is not None:  # k is num_outputs: the length of every target and prediction row
        return spec_text(d, OUTPUT_ROWS_MODE, ev.weight_col is not None, names, rules, states), ""
    return spec_text(task.num_classes, VALUES_MODE, ev.weight_col is not None, names, rules, states), ""


def input_columns(ev: Any) -> tuple["Column", "Column | None", "Column | None"]:
    """The (double) label, score and weight columns of an evaluation (as :func:`evaluation_spec` reads them)."""
    from pyspark.sql import functions as F

    from mergeable_metrics.spark._frames import quote

    def num(name: str | None) -> "Column | None":
        # try_cast, not cast: a value that is not a number (text in a string column) raises an
        # error naming the column and the value (Spark's own CAST_INVALID_INPUT names neither the
        # user's column nor a fix); on a numeric column the check is two null tests per row
        if name is None:
            return None
        raw = F.col(quote(name))
        value = raw.try_cast("double")
        message = F.concat(
            F.lit(f"column {name!r}: value '"),
            raw.cast("string"),
            F.lit(
                "' in a row of this group is not a number (inside groupBy().agg() the row position is not known: "
                "mergeable_metrics.spark.compute_metrics names the row and its partition)"
            ),
        )
        return F.when(raw.isNotNull() & value.isNull(), F.raise_error(message).cast("double")).otherwise(value)

    if ev.plan.task.kind == "multiclass" and ev.score_col is not None:  # score rows (SCORE_ROW_MODE)
        return num(ev.label_col), F.col(quote(ev.score_col)).cast("array<double>"), num(ev.weight_col)
    if ev.plan.task.kind == "regression" and getattr(ev.plan.task, "num_outputs", None) is not None:  # OUTPUT_ROWS_MODE
        y = F.col(quote(ev.label_col)).cast("array<double>")
        p = F.col(quote(ev.score_col if ev.score_col is not None else ev.prediction_col)).cast("array<double>")
        size = F.when(y.isNull(), F.lit(None).cast("double")).otherwise(F.size(y).cast("double") + F.when(p.isNull(), F.lit(0.5)).otherwise(F.lit(0.0)))
        return size, F.concat(F.coalesce(y, F.array().cast("array<double>")), F.coalesce(p, F.array().cast("array<double>"))), num(ev.weight_col)
    if ev.plan.task.kind == "multiclass":
        score = ev.prediction_col
    else:
        score = ev.score_col if ev.score_col is not None else ev.prediction_col
    return num(ev.label_col), num(score), num(ev.weight_col)


#: built aggregate Columns by (session, spec, input columns, lowering): a Column is an immutable expression, and
#: building one costs a few hundred Py4J calls (tens of ms, more than folding a million rows)
_columns: dict[tuple, "Column"] = {}


def evaluation_column(spark: Any, ev: Any, spec: str) -> "Column":
    """The JVM aggregate Column folding ``ev``'s states (their packed bytes)."""
    score_name = (
        ev.prediction_col if ev.plan.task.kind == "multiclass" and ev.score_col is None else (ev.score_col if ev.score_col is not None else ev.prediction_col)
    )
    key = (_session_key(spark), spec, ev.label_col, score_name, ev.weight_col, NATIVE_COUNTS)
    got = _columns.get(key)
    if got is not None:
        return got
    label, score, weight = input_columns(ev)
    col = None
    if weight is None and NATIVE_COUNTS and not is_connect(spark):
        from pyspark.sql import functions as F

        from mergeable_metrics.spark._frames import quote

        def fast(name: str | None) -> "Column | None":
            return None if name is None else F.col(quote(name)).try_cast("double")

        col = count_cells_column(spark, spec, label, score, fast(ev.label_col), fast(score_name))
    if col is None:
        col = state_column(spark, spec, label, score, weight)
    if len(_columns) > 512:
        _columns.clear()
    _columns[key] = col
    return col


def decode_states(ev: Any, data: bytes | None) -> tuple:
    """The states of one group from the aggregate's bytes (the zero states for None)."""
    from mergeable_metrics.engine import State

    types = ev.plan.state_types
    parts = unpack(data, len(types))
    if parts is None:
        return tuple(cls.zero(layout) for cls, layout in types)
    return tuple(State.decode(b) for b in parts)
