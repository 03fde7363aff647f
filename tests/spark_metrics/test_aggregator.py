"""MetricsAggregator and the session helper: no SparkSession (and no Java) needed."""

from __future__ import annotations

import doctest
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
pa = pytest.importorskip("pyarrow")

import mergeable_metrics  # noqa: E402
import mergeable_metrics.spark  # noqa: E402
import mergeable_metrics.spark.aggregator  # noqa: E402
from mergeable_metrics.spark import MetricsAggregator  # noqa: E402
from mergeable_metrics.spark import session as session_mod  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(11)
    n = 3000
    return pd.DataFrame(
        {
            "y": rng.integers(0, 2, n),
            "s": rng.random(n),
            "w": rng.integers(0, 5, n).astype(float),
            "a": rng.choice(np.array(["x", "y", None], dtype=object), n),
            "b": rng.integers(0, 3, n),
        }
    )


@pytest.fixture(scope="module")
def evaluation():
    return mergeable_metrics.Evaluation(label_col="y", score_col="s", weight_col="w", slices=["a", "a,b"], metrics=["accuracy", "f1", "tp", "fn"])


def test_zero_reduce_merge_finish_on_chunks_equals_one_fold(data, evaluation):
    agg = MetricsAggregator(evaluation)
    rng = np.random.default_rng(3)
    cuts = np.sort(rng.choice(len(data), 9, replace=False))
    cuts = np.concatenate([[0, 0], cuts, [len(data), len(data)]])  # includes empty chunks
    partials = []
    for lo, hi in zip(cuts[:-1], cuts[1:]):
        chunk = data.iloc[lo:hi]
        kind = len(partials) % 3  # pandas, Arrow batch and dict of columns
        if kind == 1:
            chunk = pa.RecordBatch.from_pandas(chunk, preserve_index=False)
        elif kind == 2:
            chunk = {c: chunk[c].to_numpy() for c in chunk.columns}
        partials.append(agg.reduce(agg.zero(), chunk, row_offset=int(lo)))
    # merge in a random order along a random tree, shipping some partials through the codec
    rng.shuffle(partials)
    partials = [agg.decode(agg.encode(p)) if i % 2 else p for i, p in enumerate(partials)]
    while len(partials) > 1:
        i = int(rng.integers(0, len(partials) - 1))
        partials[i : i + 2] = [agg.merge(partials[i], partials[i + 1])]
    got = agg.finish(partials[0])
    want = evaluation.finish(evaluation.fold(evaluation.zero(), data))
    assert got.to_json() == want.to_json()
    assert agg.encode(partials[0]) == evaluation.encode(evaluation.fold(evaluation.zero(), data))


def test_zero_finishes_to_overall_with_nan(evaluation):
    agg = MetricsAggregator(evaluation)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mergeable_metrics.UndefinedMetricWarning)
        res = agg.finish(agg.zero())
    assert [s.slice for s in res.slices] == [()]
    assert res.overall.n == 0 and np.isnan(res.overall.metrics["accuracy"])


def test_reduce_error_names_column_value_and_offset_row(data, evaluation):
    agg = MetricsAggregator(evaluation)
    chunk = data.iloc[:50].copy()
    chunk.loc[chunk.index[7], "s"] = np.nan
    with pytest.raises(ValueError, match=r"column 's': invalid value nan at row 1007"):
        agg.reduce(agg.zero(), chunk, row_offset=1000)
    with pytest.raises(ValueError, match=r"column 'w' not found"):
        agg.reduce(agg.zero(), chunk.drop(columns="w"))


def test_decode_rejects_foreign_bytes_and_bad_types(evaluation):
    agg = MetricsAggregator(evaluation)
    with pytest.raises(ValueError):
        agg.decode(b"not an accumulator")
    other = mergeable_metrics.Evaluation(label_col="y", score_col="s", threshold=0.7)
    with pytest.raises(ValueError):
        agg.decode(MetricsAggregator(other).encode(other.zero()))
    with pytest.raises(TypeError):
        MetricsAggregator({"label_col": "y"})


def test_aggregator_docstring_example():
    result = doctest.testmod(mergeable_metrics.spark.aggregator, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_import_does_not_import_pyspark():
    code = "import sys, mergeable_metrics.spark; assert 'pyspark' not in sys.modules, 'pyspark was imported'; print('ok')"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_get_spark_without_java_raises_clear_error(monkeypatch):
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", "")
    for name in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "PYTHONPATH"):
        monkeypatch.setenv(name, os.environ.get(name, ""))
    assert session_mod.find_java() is None
    with pytest.raises(RuntimeError, match=r"java was not found.*openjdk-17-jre-headless"):
        mergeable_metrics.spark.get_spark()
    with pytest.raises(RuntimeError, match="JDK/JRE 17"):
        mergeable_metrics.spark.check_java()


def test_old_java_is_rejected(monkeypatch):
    monkeypatch.setattr(session_mod, "find_java", lambda: "/opt/java8/bin/java")
    monkeypatch.setattr(session_mod, "java_version", lambda java: 8)
    with pytest.raises(RuntimeError, match="Java 8; PySpark 4 needs Java 17"):
        session_mod.check_java()


def test_int_slice_values_do_not_depend_on_the_container():
    """Spark hands core Arrow batches, the reference folds pandas: an int slice column must give int
    slice values (0, not 0.0) either way."""
    ev = mergeable_metrics.Evaluation(label_col="y", score_col="s", slices=["d"], metrics=["accuracy"])
    df = pd.DataFrame({"y": [0, 1, 1], "s": [0.1, 0.9, 0.2], "d": [0, 1, 1]})
    from_pandas = ev.finish(ev.fold(ev.zero(), df))
    from_arrow = ev.finish(ev.fold(ev.zero(), pa.RecordBatch.from_pandas(df, preserve_index=False)))
    assert from_pandas.to_json() == from_arrow.to_json()
    assert [s.slice for s in from_pandas.slices] == [(), (("d", 0),), (("d", 1),)]


def test_nullable_int_slice_values_do_not_depend_on_nulls_in_the_batch():
    ev = mergeable_metrics.Evaluation(label_col="y", score_col="s", slices=["d"], metrics=["accuracy"])
    with_null = pa.table({"y": [0, 1, 1], "s": [0.1, 0.9, 0.2], "d": [0, 1, None]})
    res = ev.finish(ev.fold(ev.zero(), with_null))
    assert [s.slice for s in res.slices] == [(), (("d", 0),), (("d", 1),), (("d", None),)]
    assert all(type(s.slice[0][1]) is int for s in res.slices[1:3])
