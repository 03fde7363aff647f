"""The docs site (docs/, Sphinx with MyST) builds with warnings as errors, and its API reference
covers every public name (issue 27, item 5). Its Python blocks run in tests/test_readme_examples.py.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _sphinx(builder: str, out: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    return subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-E", "-q", "-b", builder, str(DOCS), str(out)],
                          capture_output=True, text=True, timeout=600, env=env)  # fmt: skip


def _warnings(proc: subprocess.CompletedProcess) -> list[str]:
    # Beam's import logs a line about its GCP client libraries on stderr; not a Sphinx warning
    return [line for line in proc.stderr.splitlines() if line.strip() and "apitools not found" not in line]


def test_the_docs_build_with_warnings_as_errors(tmp_path):
    pytest.importorskip("sphinx", reason="the docs build needs the docs extra: pip install -e '.[docs]'")
    pytest.importorskip("myst_parser", reason="the docs build needs the docs extra: pip install -e '.[docs]'")
    proc = _sphinx("html", tmp_path / "html")
    assert proc.returncode == 0 and not _warnings(proc), proc.stderr[-6000:]
    html = (tmp_path / "html" / "metrics.html").read_text(encoding="utf-8")
    # the registry's table rendered at build time, as a table, with a row per metric
    assert re.search(r"<td[^>]*><p><code[^>]*><span class=\"pre\">roc_auc</span></code>", html), "the metrics table is missing"
    api = (tmp_path / "html" / "api" / "mergeable_metrics.html").read_text(encoding="utf-8")
    assert 'id="mergeable_metrics.MetricCollection"' in api and 'id="mergeable_metrics.merge"' in api
    guarantees = (tmp_path / "html" / "guarantees.html").read_text(encoding="utf-8")
    assert "One merge convention" in guarantees and "Not guaranteed" in guarantees  # the README's table, included whole


def _documented(page: str) -> list[str]:
    """The modules a page documents with ``automodule`` (members: the module's ``__all__``)."""
    text = (DOCS / "api" / page).read_text(encoding="utf-8")
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)  # a commented-out directive documents nothing
    return re.findall(r"^\.\. automodule:: (\S+)\n\s+:members:", text, flags=re.M)


def test_the_api_reference_covers_every_public_name():
    """Every name of the user tier, the adapters and (once it exists) the engine tier: the pages
    document those modules with ``:members:``, which autodoc takes from ``__all__``."""
    documented = {m for page in ("mergeable_metrics.md", "beam.md", "spark.md", "engine.md") for m in _documented(page)}
    assert documented >= {"mergeable_metrics", "mergeable_metrics.beam", "mergeable_metrics.spark"}
    toc = (DOCS / "api" / "index.md").read_text(encoding="utf-8")
    assert all(name in toc.split() for name in ("mergeable_metrics", "engine", "beam", "spark"))
    for module in documented:
        assert importlib.import_module(module).__all__, module  # autodoc documents __all__: it must exist
    assert "mergeable_metrics.engine" in documented
    # the engine page leaves out exactly the names the user tier's page documents
    import mergeable_metrics
    import mergeable_metrics.engine

    text = (DOCS / "api" / "engine.md").read_text(encoding="utf-8")
    excluded = set(re.search(r":exclude-members: (.*)", text).group(1).replace(",", " ").split())
    assert excluded == set(mergeable_metrics.engine.__all__) & set(mergeable_metrics.__all__)


def test_the_readme_is_short_and_keeps_the_two_commands_and_the_quick_starts():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 250
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    command2 = "python3 -m venv .venv && .venv/bin/pip install -q -e '.[all]' && .venv/bin/python -m pytest"
    assert command2 in readme and command2 in ci  # CI runs the README's test command verbatim
    assert "--example flights --engine beam" in readme
    headings = re.findall(r"^## (.+)$", readme, flags=re.M)
    for quick in ("the command line", "an Apache Beam pipeline", "Spark `groupBy().agg()`", "the pytest plugin", "in-process"):
        assert any(quick in h for h in headings if h.startswith("Quick start")), quick
    # every row of the Guarantees table names its tests
    table = readme.split("<!-- guarantees:start -->")[1].split("<!-- guarantees:end -->")[0]
    rows = [r for r in table.splitlines() if r.startswith("| **")]
    assert len(rows) >= 15 and all("`tests/" in r.rsplit("|", 2)[1] for r in rows)
    # the README's links into the docs point at pages that exist
    for link in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (ROOT / link).exists(), link


def test_the_cli_pages_synopsis_lists_every_flag_of_the_help():
    """docs/cli.md's synopsis of ``mergeable-evaluate`` names every option ``--help`` shows (a newcomer
    found ``--format``, ``--batch-size``, ``--ci-prevalence-prior`` and ``--example-days`` only in ``--help``)."""
    import argparse

    from mergeable_metrics.pipelines.evaluate import build_parser

    page = (DOCS / "cli.md").read_text(encoding="utf-8")
    synopsis = re.search(r"```\n(python -m mergeable_metrics\.pipelines\.evaluate --input .*?)```", page, flags=re.S).group(1)
    shown = {o for a in build_parser()._actions if a.help != argparse.SUPPRESS for o in a.option_strings if o.startswith("--") and o != "--help"}
    missing = sorted(o for o in shown if not re.search(re.escape(o) + r"(?![\w-])", synopsis))
    assert not missing, f"docs/cli.md's synopsis does not list {missing}"
