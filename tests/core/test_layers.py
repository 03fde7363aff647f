"""The import contracts of ``mergeable_metrics`` (``[tool.importlinter]`` in pyproject.toml) hold.

The package reads bottom-up (``_util``, ``inputs``, ``states``, ``metrics``, ``collection | slicing``,
``results``, ``uncertainty``, ``evaluation``, ``time | aggregation``, then the adapters ``beam | spark``
and ``pipelines`` on top: the ``layers`` contract; the metric families above their base:
``metric-families``), has no import cycle between sibling modules anywhere, function-level imports
included (``acyclic``), and the engine-free layer never imports the pipelines, the engines or their
libraries (``engine-free``); the Beam adapter reads that layer only through
``mergeable_metrics.engine`` (``adapters-through-engine``). The contracts are run by import-linter's ``lint-imports`` in a fresh
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
#: the package's folders in the repository and where they sit in the package (pyproject's package-dir)
FOLDERS = {
    "core": "mergeable_metrics",
    "beam_metrics": "mergeable_metrics/beam",
    "spark_metrics": "mergeable_metrics/spark",
    "pipelines": "mergeable_metrics/pipelines",
}
CONTRACTS = 5


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    """``lint-imports`` of ``root``'s pyproject.toml, with ``root`` first on the import path."""
    code = "import sys; sys.path.insert(0, '.'); from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"
    return subprocess.run(
        [sys.executable, "-c", code, "--no-cache", "--no-logo", "pyproject.toml"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def assemble(root: Path) -> Path:
    """The package laid out under ``root`` as it is installed (``mergeable_metrics/`` with its
    subpackages), with the pyproject: import-linter walks folders, and in an editable install
    the adapters' folders are not below ``core/``."""
    for folder, target in FOLDERS.items():
        shutil.copytree(REPO_ROOT / folder, root / target, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO_ROOT / "pyproject.toml", root / "pyproject.toml")
    return root


def test_import_contracts_hold(tmp_path):
    proc = lint_imports(assemble(tmp_path))
    report = proc.stdout + proc.stderr
    assert proc.returncode == 0, report
    assert f"{CONTRACTS} kept, 0 broken" in report, report  # all of them ran


@pytest.fixture(scope="module")
def broken_copy(tmp_path_factory) -> Path:
    """The package assembled as installed (``mergeable_metrics/`` with its subpackages) with one
    upward import that also closes a cycle (the states reading the metrics, inside a function as
    cycles used to be hidden), one import of the pipelines from the engine-free layer and one
    from an engine adapter (as ``beam.latelabels`` once read ``pipelines.latelabels``), and one
    of the Beam adapter reaching past ``mergeable_metrics.engine`` into the evaluation layer."""
    root = assemble(tmp_path_factory.mktemp("layers"))
    pkg = root / "mergeable_metrics"
    with open(pkg / "states" / "base.py", "a", encoding="utf-8") as f:
        f.write("\n\ndef _metrics():\n    from mergeable_metrics.metrics.base import REGISTRY\n\n    return REGISTRY\n")
    with open(pkg / "results" / "results.py", "a", encoding="utf-8") as f:
        f.write("\n\ndef _report():\n    from mergeable_metrics.pipelines import report\n\n    return report\n")
    with open(pkg / "beam" / "latelabels.py", "a", encoding="utf-8") as f:
        f.write("\n\ndef _join():\n    from mergeable_metrics.pipelines import latelabels\n\n    return latelabels\n")
    with open(pkg / "beam" / "transforms.py", "a", encoding="utf-8") as f:
        f.write("\n\ndef _accumulator():\n    from mergeable_metrics.evaluation.accumulator import Accumulator\n\n    return Accumulator\n")
    return root


def test_import_contracts_report_an_upward_import_a_cycle_and_a_pipelines_import(broken_copy):
    proc = lint_imports(broken_copy)
    report = proc.stdout + proc.stderr
    assert proc.returncode != 0, report
    assert "broken" in report and f"{CONTRACTS} kept" not in report, report
    assert "mergeable_metrics.beam is not allowed to import mergeable_metrics.pipelines" in report, report
    assert "mergeable_metrics.beam.latelabels -> mergeable_metrics.pipelines.latelabels" in report, report
    assert "mergeable_metrics.states is not allowed to import mergeable_metrics.metrics" in report, report
    assert "mergeable_metrics.results.results -> mergeable_metrics.pipelines.report" in report, report
    assert "mergeable_metrics.states.base -> mergeable_metrics.metrics.base" in report, report
    assert "mergeable_metrics.beam is not allowed to import mergeable_metrics.evaluation" in report, report
    assert "mergeable_metrics.beam.transforms -> mergeable_metrics.evaluation.accumulator" in " ".join(report.split()), report
