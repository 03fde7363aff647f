"""The import contracts of ``core`` (``[tool.importlinter]`` in pyproject.toml) hold.

``core`` reads bottom-up (input checks, states, metrics, plans and slicing, results, evaluation:
the ``core-layers`` contract), has no import cycle between its modules, function-level imports
included (``core-acyclic``), and never imports the pipelines, the engines or their libraries
(``core-engine-free``); the engine adapters (``beam_metrics``, ``spark_metrics``) never import
the pipelines built on them (``adapters-below-pipelines``). The contracts are run by import-linter's ``lint-imports`` in a fresh
interpreter; a failure shows its report (which import breaks which contract).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import importlinter  # noqa: F401  (the test extra installs it: fail here rather than skip)
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("core", "pipelines", "beam_metrics", "spark_metrics")


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    """``lint-imports`` of ``root``'s pyproject.toml, with ``root`` first on the import path."""
    code = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"
    return subprocess.run(
        [sys.executable, "-c", code, "--no-cache", "--no-logo", "pyproject.toml"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_core_import_contracts_hold():
    proc = lint_imports(REPO_ROOT)
    report = proc.stdout + proc.stderr
    assert proc.returncode == 0, report
    assert "4 kept, 0 broken" in report, report  # all four ran


@pytest.fixture(scope="module")
def broken_copy(tmp_path_factory) -> Path:
    """A copy of the packages with one upward import that also closes a cycle (the states
    reading the metrics, inside a function as cycles used to be hidden), one import of the
    pipelines from ``core`` and one from an engine adapter (as ``beam_metrics.latelabels`` once
    read ``pipelines.latelabels``)."""
    root = tmp_path_factory.mktemp("layers")
    for pkg in PACKAGES:
        shutil.copytree(REPO_ROOT / pkg, root / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO_ROOT / "pyproject.toml", root / "pyproject.toml")
    with open(root / "core" / "states.py", "a", encoding="utf-8") as f:
        f.write("\n\ndef _metrics():\n    from core.metrics import REGISTRY\n\n    return REGISTRY\n")
    with open(root / "core" / "results.py", "a", encoding="utf-8") as f:
        f.write("\n\ndef _report():\n    from pipelines import report\n\n    return report\n")
    with open(root / "beam_metrics" / "latelabels.py", "a", encoding="utf-8") as f:
        f.write("\n\ndef _join():\n    from pipelines import latelabels\n\n    return latelabels\n")
    return root


def test_import_contracts_report_an_upward_import_a_cycle_and_a_pipelines_import(broken_copy):
    proc = lint_imports(broken_copy)
    report = proc.stdout + proc.stderr
    assert proc.returncode != 0, report
    assert "0 kept, 4 broken" in report, report
    assert "beam_metrics is not allowed to import pipelines" in report and "beam_metrics.latelabels -> pipelines.latelabels" in report, report
    assert "core.states is not allowed to import core.metrics" in report, report
    assert "core is not allowed to import pipelines" in report and "core.results -> pipelines.report" in report, report
    assert ".states -> .metrics" in report or ".metrics -> .states" in report, report
