"""The HTML report in a real browser: headless Chromium loads it without errors, every figure is
there and decoded, the tables sort, and a screenshot is saved as an artifact.

Chromium is the Debian package ``chromium`` (``/usr/bin/chromium``, or the binary named by
``$CHROMIUM``). The tests install nothing: ``.ci/run`` installs it before the test command, and
without it the tests are skipped saying what to install (marker ``browser``).

Screenshots are written to ``out/artifacts/`` (git-ignored; the path is printed) and to pytest's
tmp dir.
"""

from __future__ import annotations

import html.parser
import json
import os
import shutil
import subprocess
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("matplotlib")
pytest.importorskip("jinja2")

from mergeable_metrics import Evaluation  # noqa: E402
from mergeable_metrics.pipelines.report import write_report  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "out" / "artifacts"
CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")


def _find_chromium() -> str | None:
    env = os.environ.get("CHROMIUM")
    if env and os.access(env, os.X_OK):
        return env
    for c in CHROMIUM_CANDIDATES:
        if os.access(c, os.X_OK):
            return c
    return shutil.which("chromium")


@pytest.fixture(scope="module")
def chromium() -> str:
    path = _find_chromium()
    if path is None:
        pytest.skip(
            "headless Chromium not found (tried $CHROMIUM, " + ", ".join(CHROMIUM_CANDIDATES) + ", chromium on PATH): "
            "install it with `apt-get install -y --no-install-recommends chromium` (.ci/run does)"
        )
    return path


def _run_chromium(binary: str, url: str, *args: str, timeout: int = 180) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="mm-chromium-") as profile:
        cmd = [
            binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--disable-dev-shm-usage", "--hide-scrollbars", f"--user-data-dir={profile}",
            "--virtual-time-budget=10000", *args, url,
        ]  # fmt: skip
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


class _Dom(html.parser.HTMLParser):
    """Collects the <html> attributes, figures (with their <img>) and table rows of a dumped DOM."""

    def __init__(self) -> None:
        super().__init__()
        self.root: dict[str, str | None] = {}
        self.figures: list[dict] = []
        self.tables: dict[str, list[list[str]]] = {}
        self._table: str | None = None
        self._in_body = False
        self._row: list[str] | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "html":
            self.root = a
        elif tag == "figure":
            self.figures.append({"id": a.get("id"), "kind": a.get("data-figure"), "img": None})
        elif tag == "img" and self.figures:
            self.figures[-1]["img"] = a.get("src", "")
        elif tag == "table":
            self._table = a.get("id")
            self.tables[self._table] = []
        elif tag == "tbody":
            self._in_body = True
        elif tag == "tr" and self._in_body:
            self._row = []
        elif tag == "td" and self._row is not None:
            self._cell = []

    def handle_endtag(self, tag):
        if tag == "td" and self._cell is not None and self._row is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.tables[self._table].append(self._row)
            self._row = None
        elif tag == "tbody":
            self._in_body = False

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def _results():
    rng = np.random.default_rng(5)
    n = 4000
    y = rng.integers(0, 2, n)
    s = np.clip(0.35 * y + 0.65 * rng.random(n), 0, 1)
    region = rng.choice(["north", "south", "east", "west"], n)
    device = rng.choice(["mobile", "desktop"], n)
    ev = Evaluation(
        label_col="y", score_col="s", slices=["region", "region,device"],
        metrics=["accuracy", "precision", "recall", "f1", "roc_auc@capacity=64", "average_precision@capacity=64",
                 "roc_curve@capacity=64", "precision_recall_curve@capacity=64", "confusion_matrix", "reliability_diagram", "ece"],
    )  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ev.evaluate([{"y": y, "s": s, "region": region, "device": device}])


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    path = tmp_path_factory.mktemp("report") / "report.html"
    results = _results()
    write_report(results, path, title="Browser test report", run_info={"engine": "local", "rows": 4000})
    return path, results


def test_report_loads_without_errors_and_shows_every_figure(chromium, report, tmp_path):
    path, results = report
    proc = _run_chromium(chromium, path.as_uri(), "--dump-dom")
    assert proc.returncode == 0, proc.stderr[-3000:]
    dom = _Dom()
    dom.feed(proc.stdout)
    assert dom.root.get("data-report-ready") == "1", f"the page's load handler did not run; stderr: {proc.stderr[-2000:]}"
    assert "data-js-errors" not in dom.root, f"JavaScript errors / blocked loads: {dom.root.get('data-js-errors')}"
    kinds = [f["kind"] for f in dom.figures]
    for kind in ("roc", "pr", "reliability", "confusion_matrix", "slices"):
        assert kind in kinds, (kind, kinds)
    assert kinds.count("slices") == 7  # one bar chart per scalar rate metric
    assert all(f["img"].startswith("data:image/png;base64,") for f in dom.figures)
    assert dom.root.get("data-images-loaded") == str(len(dom.figures)), "some figure images did not decode"
    slices = dom.tables["slices-table"]
    assert len(slices) == len(results.slices) == 1 + 4 + 8
    assert slices[0][0] == "Overall"
    # as a reviewer reads it: n in every row, short headers (full key in the tooltip), no weight
    # column without a weight column, no nested list in the overall table
    assert [r[1].split(" ")[0] for r in slices] == [f"{s.n:,}" for s in results.slices]
    head = proc.stdout[proc.stdout.index('id="slices-table"') :].split("</thead>", 1)[0]
    assert ">weight<" not in head and ">average_precision</th>" in head and 'title="Average precision (capacity=64): average_precision@capacity=64"' in head
    overall = {r[0]: r[2] for r in dom.tables["overall-table"]}
    assert overall["confusion_matrix"] == "shown as the heatmap below" and "[[" not in "".join(overall.values())


def test_table_sorts_in_the_browser(chromium, report):
    path, results = report
    # column 2 of the per-slice table is the first metric (accuracy): slice, n, then metrics (no
    # weight column: the run has no weight column)
    proc = _run_chromium(chromium, path.as_uri() + "#sort=slices-table:2:desc", "--dump-dom")
    assert proc.returncode == 0, proc.stderr[-3000:]
    dom = _Dom()
    dom.feed(proc.stdout)
    assert "data-js-errors" not in dom.root, dom.root.get("data-js-errors")
    shown = [float(r[2]) for r in dom.tables["slices-table"]]
    assert shown == sorted(shown, reverse=True)
    want = sorted((float(s.metrics["accuracy"]) for s in results.slices), reverse=True)
    assert shown == pytest.approx(want, abs=1e-4)


def _regression_and_multiclass_reports(tmp_path):
    rng = np.random.default_rng(2)
    n = 3000
    g = rng.choice(["a", "b", "c", "tiny"], n, p=[0.4, 0.35, 0.24, 0.01])
    y = rng.normal(5, 2, n)
    reg = Evaluation(label_col="y", score_col="p", task="regression", slices=["g"], metrics=["mse", "mae", "r2", "mean_label", "mean_prediction", "mean_error"])
    r = reg.evaluate([{"y": y, "p": y + rng.normal(0.3, 1, n) + (g == "b"), "g": g}])
    k = rng.integers(0, 3, n)
    mc = Evaluation(
        label_col="y", score_col="s", task="multiclass", num_classes=3, slices=["g"], metrics=["accuracy", "f1@macro", "roc_auc", "confusion_matrix"]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = mc.evaluate([{"y": k, "s": rng.dirichlet([1, 1, 1], n) * 0.8 + np.eye(3)[k] * 0.2, "g": g}])
    return write_report(r, tmp_path / "regression.html", title="Regression"), write_report(m, tmp_path / "multiclass.html", title="Multiclass")


def test_regression_and_multiclass_reports_in_the_browser(chromium, tmp_path):
    reg, mc = _regression_and_multiclass_reports(tmp_path)
    for path, want in ((reg, ["predicted_vs_actual", "residuals"]), (mc, ["confusion_matrix"])):
        proc = _run_chromium(chromium, path.as_uri(), "--dump-dom")
        assert proc.returncode == 0, proc.stderr[-3000:]
        dom = _Dom()
        dom.feed(proc.stdout)
        assert dom.root.get("data-report-ready") == "1" and "data-js-errors" not in dom.root, dom.root.get("data-js-errors")
        kinds = [f["kind"] for f in dom.figures]
        assert kinds[: len(want)] == want and "slices" in kinds
        assert dom.root.get("data-images-loaded") == str(len(dom.figures))
        assert ">threshold<" not in proc.stdout  # no threshold applies to regression or argmax
        small = [r for r in dom.tables["slices-table"] if r[0] == "g=tiny"]
        assert small and small[0][1].endswith("small")
        shot = tmp_path / (path.stem + ".png")
        proc = _run_chromium(chromium, path.as_uri(), f"--screenshot={shot}", "--window-size=1400,2400")
        assert proc.returncode == 0 and shot.exists() and len(shot.read_bytes()) > 20_000, proc.stderr[-3000:]
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, ARTIFACTS / f"report_{path.stem}_screenshot.png")


def test_screenshot_artifact(chromium, report, tmp_path):
    path, _ = report
    shot = tmp_path / "report.png"
    proc = _run_chromium(chromium, path.as_uri(), f"--screenshot={shot}", "--window-size=1400,3200")
    assert proc.returncode == 0 and shot.exists(), proc.stderr[-3000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000  # a real rendering, not a blank page
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    target = ARTIFACTS / "report_screenshot.png"
    shutil.copyfile(shot, target)
    shutil.copyfile(path, ARTIFACTS / "report.html")
    print(f"\nreport screenshot: {target} (also {shot})")
    (ARTIFACTS / "report_screenshot.json").write_text(json.dumps({"screenshot": str(target), "report": str(ARTIFACTS / "report.html")}) + "\n")


def _comparison_report(tmp_path):
    """A two-model run as the flights example's: 9 metrics with posterior intervals (ROC AUC, AP,
    log loss, Brier and ECE get none: "not tested"), a slice where the baseline's precision is
    undefined, and suppressed slices."""
    from tests.pipelines.test_report_comparison import _table

    t = _table()
    metrics = ["accuracy", "precision", "recall", "f1", "roc_auc@capacity=1000", "average_precision@capacity=1000", "log_loss", "brier_score", "ece"]
    ev = Evaluation(label_col="y", score_col="new", baseline_score_col="old", ci="posterior", slices=["g"], min_slice_size=100, metrics=metrics)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = ev.evaluate([t])
    return r, write_report(r, tmp_path / "comparison.html", title="Comparison", run_info={"engine": "local", "slices": 3, "suppressed_slices": 2})


def test_comparison_report_in_the_browser(chromium, tmp_path):
    r, path = _comparison_report(tmp_path)
    proc = _run_chromium(chromium, path.as_uri(), "--dump-dom", "--window-size=1400,2400")
    assert proc.returncode == 0, proc.stderr[-3000:]
    dom = _Dom()
    dom.feed(proc.stdout)
    assert dom.root.get("data-report-ready") == "1" and "data-js-errors" not in dom.root, dom.root.get("data-js-errors")
    # at 1,400 px every table fits its box (intervals on a second line), none is cut off
    assert dom.root.get("data-wide-tables") == "", dom.root.get("data-wide-tables")
    rows = {row[0]: row for row in dom.tables["comparison-table"]}
    assert set(rows) == {"Overall", "g=a", "g=b"}
    a = rows["g=a"]  # slice, n, accuracy, precision, recall, f1, roc_auc, ...
    assert a[3].startswith("null") and a[3].endswith("undefined: the baseline's value is null")
    assert a[6].endswith("not tested") and "indistinguishable" not in a[6]
    assert not any(c.endswith("indistinguishable") and "[" not in c for row in rows.values() for c in row[2:])
    assert "2 more slices are suppressed" in proc.stdout and 'id="slice-count">3 slices with values, 2 suppressed<' in proc.stdout
    shot = tmp_path / "comparison.png"
    proc = _run_chromium(chromium, path.as_uri(), f"--screenshot={shot}", "--window-size=1400,4000")
    assert proc.returncode == 0 and shot.exists() and len(shot.read_bytes()) > 20_000, proc.stderr[-3000:]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(shot, ARTIFACTS / "report_comparison_screenshot.png")
    print(f"\ncomparison report screenshot: {ARTIFACTS / 'report_comparison_screenshot.png'}")
