"""Compile the JVM float state kinds (spark_metrics/java) with plain ``javac`` and fold rows in them
through tests/spark_metrics/java/FoldDriver.java: many cases per JVM start (no Spark needed)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted((ROOT / "spark_metrics" / "java" / "mergeablemetrics").glob("*.java"))
DRIVER = Path(__file__).resolve().parent / "java" / "FoldDriver.java"
FINISH_DRIVER = Path(__file__).resolve().parent / "java" / "FinishDriver.java"
ROW_DRIVER = Path(__file__).resolve().parent / "java" / "RowFoldDriver.java"


@lru_cache(maxsize=1)
def classes() -> str:
    """Directory of the compiled classes (pytest.skip without ``javac``)."""
    if shutil.which("javac") is None or shutil.which("java") is None:
        pytest.skip("javac not found: the JVM state ports need a JDK 17+ (e.g. `apt-get install openjdk-17-jdk-headless`)")
    out = tempfile.mkdtemp(prefix="mm-jvm-float-")
    # only the engine-free sources: the Spark wrappers of the same folder need Spark's jars
    own = [str(p) for p in SOURCES if "org.apache.spark" not in p.read_text()]
    subprocess.run(["javac", "-d", out, *own, str(DRIVER), str(FINISH_DRIVER), str(ROW_DRIVER)], check=True, capture_output=True, text=True)
    return out


def _bits(x: float) -> str:
    return format(int(np.float64(x).view(np.uint64)), "016x")


def run(cases: list[tuple[str, str, int, list[int], list[tuple[int, tuple[float, ...]]]]], sizes: bool = False) -> list[str]:
    """One output line per case ``(kind, config, n_partitions, merge_order, [(partition, values)])``: the merged
    state's bytes in hex (``sizes``: ``"<length of the state bytes> <length of its Java serialisation>"``)."""
    lines = []
    for kind, config, nparts, order, rows in cases:
        lines.append(f"case {kind} {config.encode().hex()} {nparts} {','.join(map(str, order)) or '-'}")
        lines += [f"{p} " + " ".join(_bits(v) for v in vals) for p, vals in rows]
        lines.append("end")
    done = subprocess.run(
        ["java", "-cp", classes(), "FoldDriver", *(["size"] if sizes else [])], input="\n".join(lines) + "\n", capture_output=True, text=True, check=True
    )
    out = done.stdout.splitlines()
    assert len(out) == len(cases), done.stderr
    return out


def finish(cases: list[tuple[str, bytes | None]]) -> list[float | None]:
    """``Finish.value(metric, packed)`` in the JVM for each ``(metric description, packed states or None)``
    (None where it returns null)."""
    lines = [f"{m.encode().hex()} {'-' if b is None else b.hex()}" for m, b in cases]
    done = subprocess.run(["java", "-cp", classes(), "FinishDriver"], input="\n".join(lines) + "\n", capture_output=True, text=True, check=True)
    out = done.stdout.splitlines()
    assert len(out) == len(cases), done.stderr
    return [None if x == "null" else float(np.uint64(int(x, 16)).view(np.float64)) for x in out]


def _value(x: float | None) -> str:
    return "null" if x is None else _bits(x)


def fold_rows(cases: list[tuple[str, int, list[int], list[tuple[int, float | None, float | None, list | None]]]]) -> list[str]:
    """One output line per case ``(spec, n_partitions, merge_order, [(partition, label, weight, score row)])`` folded by
    ``Spec.foldRow`` (tests/spark_metrics/java/RowFoldDriver.java: the checks and folds of the Spark aggregates):
    the packed states in hex, or ``ERR <message>`` (None values are nulls; a None score row is a null row)."""
    lines = []
    for spec, nparts, order, rows in cases:
        lines.append(f"case {spec.encode().hex()} {nparts} {','.join(map(str, order)) or '-'}")
        for p, y, w, s in rows:
            entries = [] if s is None else [_value(x) for x in s]
            lines.append(f"{p} {_value(y)} {_value(w)} {-1 if s is None else len(entries)} {' '.join(entries)}".rstrip())
        lines.append("end")
    done = subprocess.run(["java", "-cp", classes(), "RowFoldDriver"], input="\n".join(lines) + "\n", capture_output=True, text=True, check=True)
    out = done.stdout.splitlines()
    assert len(out) == len(cases), done.stderr
    return out
