"""Lint and types run in the suite (so CI runs them): ``ruff check`` and ``ruff format --check`` over
the repository with the settings of ``[tool.ruff]`` in pyproject.toml, and mypy over the user tier (the modules behind the names
``mergeable_metrics`` exports), on the package assembled as installed (mypy cannot follow
setuptools' ``package-dir`` mapping of ``core/`` onto ``mergeable_metrics``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import mergeable_metrics
from tests.core.test_layers import assemble

ROOT = Path(__file__).resolve().parents[1]


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=cwd, capture_output=True, text=True, timeout=600, check=False)


def test_ruff_check_passes():
    pytest.importorskip("ruff", reason="the test extra installs ruff: pip install -e '.[test]'")
    proc = _run("ruff", "check", "--no-cache", ".", cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff_format_leaves_the_code_as_it_is():
    pytest.importorskip("ruff", reason="the test extra installs ruff: pip install -e '.[test]'")
    proc = _run("ruff", "format", "--check", "--no-cache", ".", cwd=ROOT)
    assert proc.returncode == 0, "run `python -m ruff format .`\n" + proc.stdout + proc.stderr


#: names of the user tier whose modules mypy checks (the rest of the package is read, not reported)
USER_NAMES = ("MetricCollection", "BinaryMetrics", "Evaluation", "Results", "merge")


def test_mypy_passes_on_the_user_tier(tmp_path):
    pytest.importorskip("mypy", reason="the test extra installs mypy: pip install -e '.[test]'")
    modules = ["mergeable_metrics", *sorted({mergeable_metrics._EXPORTS[n] for n in USER_NAMES})]
    assert len(modules) >= 4, modules
    root = assemble(tmp_path)
    args = [a for m in modules for a in ("-m", m)]
    proc = _run("mypy", "--no-incremental", "--cache-dir", str(tmp_path / ".mypy_cache"), *args, cwd=root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"in {len(modules)} source files" in proc.stdout, proc.stdout  # they were all found
