"""What the report and the text table say about a model comparison (issue 28, item 19), from the
report's data model (``report._comparison_table``, ``render_report``'s page) and
``Results.format_comparison``, not from pixels (the browser test looks at those).

A comparison without a paired interval is "not tested", one whose delta is null is "undefined"
(naming the model whose value is undefined); "indistinguishable" only where a paired interval
was computed and holds 0. Every expected value here comes from scikit-learn.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

pytest.importorskip("jinja2")
pytest.importorskip("matplotlib")
sklearn_metrics = pytest.importorskip("sklearn.metrics")

from mergeable_metrics import Evaluation  # noqa: E402
from mergeable_metrics.pipelines import report  # noqa: E402


def _table(n=3000, seed=3):
    """Slice g=a: the baseline scores every row below the threshold (no predicted positive: its
    precision is undefined); g=b: both models are the same up to noise far below the threshold
    effect (accuracy's interval holds 0); a 40-row slice g=tiny is suppressed (min_slice_size), and
    g=c with it (so that g=tiny cannot be derived from the overall slice)."""
    rng = np.random.default_rng(seed)
    g = rng.choice(["a", "b", "c"], n, p=[0.45, 0.45, 0.1])
    g[:40] = "tiny"
    y = rng.integers(0, 2, n)
    new = np.clip(0.45 * y + 0.55 * rng.random(n), 0, 1)
    old = np.where(g == "a", 0.4 * rng.random(n), new + rng.normal(0, 1e-3, n).clip(-1e-3, 1e-3))
    old = np.clip(old, 0, 1)
    return {"y": y, "new": new, "old": old, "g": g}


@pytest.fixture(scope="module")
def run():
    t = _table()
    ev = Evaluation(label_col="y", score_col="new", baseline_score_col="old", ci="posterior", slices=["g"], min_slice_size=100,
                    metrics=["accuracy", "precision", "roc_auc@capacity=1000", "log_loss"])  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return t, ev.evaluate([t])


def _cells(table):
    return {row["name"]: dict(zip(table["metrics"], row["cells"])) for row in table["rows"]}


def test_marks_of_the_report_data_model(run):
    t, r = run
    table = report._comparison_table(r, 100)
    cells = _cells(table)
    a = t["g"] == "a"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        base_prec = sklearn_metrics.precision_score(t["y"][a], t["old"][a] >= 0.5, zero_division=np.nan)
        cand_prec = sklearn_metrics.precision_score(t["y"][a], t["new"][a] >= 0.5)
    assert np.isnan(base_prec) and np.isfinite(cand_prec)  # the baseline has no predicted positive in g=a
    prec = cells["g=a"]["precision"]
    assert prec["mark"] == "undefined" and prec["text"] == "null"
    assert "baseline" in prec["reason"] and "candidate" not in prec["reason"]
    # ROC AUC: a large real difference, but the posterior method gives it no paired interval
    auc = cells["g=a"]["roc_auc@capacity=1000"]
    want = sklearn_metrics.roc_auc_score(t["y"][a], t["new"][a]) - sklearn_metrics.roc_auc_score(t["y"][a], t["old"][a])
    assert float(auc["text"]) == pytest.approx(want, abs=2e-3) and want > 0.2
    assert auc["mark"] == "not tested" and auc["interval"] == "" and "bootstrap" in auc["reason"]
    assert cells["g=a"]["log_loss"]["mark"] == "not tested"
    # accuracy has a paired interval: a tested verdict
    assert cells["g=a"]["accuracy"]["mark"] == "better" and cells["g=a"]["accuracy"]["interval"].startswith("[")
    b = cells["g=b"]["accuracy"]
    lo, hi = (float(x) for x in b["interval"].strip("[]").split(","))
    assert lo <= 0 <= hi and b["mark"] == "indistinguishable"
    # no cell without an interval reads "indistinguishable"
    for row in cells.values():
        for c in row.values():
            if c["mark"] == "indistinguishable":
                assert c["interval"]
    assert table["mark_counts"]["not tested"] == 2 * len(cells)  # roc_auc and log_loss in every slice
    assert list(table["not_tested"].values()) == [["roc_auc", "log_loss"]]


def test_comparison_mark_names_the_undefined_model():
    from mergeable_metrics.results.results import Comparison, comparison_mark

    c = Comparison(float("nan"), None, "indistinguishable", "undefined for the candidate or the baseline model (delta is null)")
    assert comparison_mark(c, 0.5, float("nan"))[1] == "the baseline's value is null"
    assert comparison_mark(c, float("nan"), 0.5)[1] == "the candidate's value is null"
    assert comparison_mark(c, float("nan"), float("nan"))[1] == "both models' values are null"
    assert comparison_mark(Comparison(0.25, None, "indistinguishable", "no interval"), 0.9, 0.65) == ("not tested", "no interval")
    assert comparison_mark(Comparison(0.01, (-0.02, 0.04), "indistinguishable"), 0.9, 0.89)[0] == "indistinguishable"


def test_page_and_text_table_show_the_marks_and_counts(run):
    t, r = run
    page = report.render_report(r)
    section = page[page.index('<section id="comparison">') :].split("</section>", 1)[0]
    marks = re.findall(r'data-mark="([a-z ]+)"', section)
    assert marks == [c["mark"] for row in report._comparison_table(r, 100)["rows"] for c in row["cells"]]
    assert marks.count("not tested") == 6 and marks.count("undefined") == 1  # 3 published slices x (roc_auc, log_loss)
    assert "undefined: the baseline&#39;s value is null" in section
    legend = section[section.index('id="comparison-legend"') :]
    for word in ("better", "worse", "indistinguishable", "not tested", "undefined"):
        assert f">{word}</span>" in legend
    # suppressed slices: counted beside the tables, and one slice count in the header
    assert "2 more slices are suppressed" in section
    per_slice = page[page.index('<section id="per-slice">') :].split("</section>", 1)[0]
    assert "2 more slices are suppressed" in per_slice
    published = sum(1 for s in r.slices if not s.suppressed)
    assert report.slice_counts(r) == (published, 2) == (3, 2)
    assert f'<span id="slice-count">{published} slices with values, 2 suppressed</span>' in page
    # the text table: ? not tested, u undefined, = only with an interval
    text = r.format_comparison().splitlines()
    row_a = next(line for line in text if line.startswith("g=a"))
    assert row_a.split()[-1] == "?" and " null u" in row_a
    assert "? not tested" in text[0] and "u undefined" in text[0]


def test_bar_axis_is_scaled_to_the_values():
    # ECE near 0: the axis starts at 0 and ends near the largest value, not at 1
    lo, hi, zero = report.bar_axis("ece", np.array([0.004, 0.006, 0.012]), [None] * 3, [], 0.005)
    assert lo == 0 and zero and 0.012 < hi < 0.02
    # accuracies 0.85 to 0.95: not from 0, within [0, 1]
    lo, hi, zero = report.bar_axis("accuracy", np.array([0.85, 0.9, 0.95]), [(0.84, 0.86), None, (0.94, 0.99)], [], 0.9)
    assert 0.8 < lo < 0.84 and 0.99 < hi <= 1.0 and not zero


def test_bar_chart_has_a_colour_legend_and_an_axis_scaled_to_the_data(run):
    t, r = run
    fig = report.plot_slices(r, "log_loss")
    ax = fig.axes[0]
    (legend,) = fig.legends
    assert [x.get_text() for x in legend.get_texts()] == ["g"] and legend.get_title().get_text() == "bar colour: slices by"
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(fig).get_renderer()
    assert not legend.get_window_extent(renderer).overlaps(ax.xaxis.label.get_window_extent(renderer))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = {g: sklearn_metrics.log_loss(t["y"][t["g"] == g], t["new"][t["g"] == g]) for g in ("a", "b")}
    lo, hi = ax.get_xlim()
    assert lo <= min(want.values()) and max(want.values()) <= hi and (hi - lo) < 0.5 * max(want.values())  # not a fixed 0 to 1
    ends = sorted(b.get_x() + b.get_width() for b in ax.patches)
    assert ends == pytest.approx(sorted(want.values()), rel=1e-6)
    assert f"axis {lo:.4g} to {hi:.4g}" in ax.get_title()
