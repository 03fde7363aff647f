"""Fairness across slices (mergeable_metrics.results.fairness, Results.fairness) on hand-computed cases, and the
selection_rate metric it reads (parity with a numpy computation, merge laws)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mergeable_metrics import Evaluation, MetricCollection
from mergeable_metrics.results.fairness import compute_fairness, parse_reference
from tests._helpers import BINARY_GRID, binary_case

pytestmark = pytest.mark.filterwarnings("ignore::mergeable_metrics.metrics.base.UndefinedMetricWarning")

# group a: y 1 1 0 0, predictions (p >= 0.5) 1 0 1 0 -> tp 1 fn 1 fp 1 tn 1
# group b: y 1 1 0 0, predictions 1 1 0 0         -> tp 2 fn 0 fp 0 tn 2
# group c: y 0 0,     predictions 1 0             -> fp 1 tn 1 (no positives: recall undefined)
# overall: tp 3 fn 1 fp 2 tn 4 -> selection 5/10, recall 3/4, fpr 2/6
ROWS = {
    "y": [1, 1, 0, 0, 1, 1, 0, 0, 0, 0],
    "p": [0.9, 0.2, 0.8, 0.1, 0.9, 0.8, 0.1, 0.2, 0.7, 0.1],
    "g": ["a"] * 4 + ["b"] * 4 + ["c"] * 2,
    "d": ["x", "y"] * 5,
}


def _results(**kw):
    metrics = kw.pop("metrics", ["selection_rate", "recall", "fpr", "f1", "confusion_matrix"])
    ev = Evaluation(label_col="y", score_col="p", slices=kw.pop("slices", ["g"]), metrics=metrics, **kw)
    return ev.evaluate([{k: np.asarray(v) for k, v in ROWS.items()}])


def test_equal_opportunity_against_the_overall_slice():
    f = _results().fairness("equal_opportunity", method="to_overall")
    assert f.metrics == ("recall",) and f.spec == ("g",) and f.reference == () and f.method == "to_overall"
    assert f.reference_values == {"recall": 0.75}
    a, b, c = f.slices
    assert (a.slice, a.n, a.values["recall"], a.differences["recall"]) == ((("g", "a"),), 4, 0.5, -0.25)
    assert a.ratios["recall"] == pytest.approx(2 / 3) and a.ratio == pytest.approx(2 / 3)
    assert b.differences["recall"] == 0.25 and b.ratios["recall"] == pytest.approx(4 / 3) and b.ratio == pytest.approx(0.75)
    assert math.isnan(c.values["recall"]) and math.isnan(c.difference) and math.isnan(c.ratio)
    assert f.difference == 0.25 and f.ratio == pytest.approx(2 / 3)
    assert f.worst.slice == (("g", "a"),)  # a tie with b: the first in order
    assert f.undefined == [(("g", "c"),)]


def test_equalized_odds_and_demographic_parity():
    r = _results()
    f = r.fairness("equalized_odds", method="to_overall")
    assert f.metrics == ("recall", "fpr")
    a, b, _ = f.slices
    assert a.differences == {"recall": -0.25, "fpr": pytest.approx(0.5 - 1 / 3)}
    assert a.difference == 0.25 and a.ratio == pytest.approx(2 / 3)  # min(0.5/0.75, (1/3)/0.5)
    assert b.difference == pytest.approx(1 / 3) and b.ratio == 0.0  # fpr 0 against 1/3
    # c: recall undefined (no positives), its fpr 1/2 still compared (|1/2 - 1/3|)
    assert f.slices[2].difference == pytest.approx(1 / 6) and f.slices[2].ratio == pytest.approx(2 / 3)
    assert f.difference == pytest.approx(1 / 3) and f.ratio == 0.0 and f.worst.slice == (("g", "b"),)
    dp = r.fairness("demographic_parity", method="to_overall")
    assert [s.values["selection_rate"] for s in dp.slices] == [0.5, 0.5, 0.5] and dp.reference_values == {"selection_rate": 0.5}
    assert dp.difference == 0.0 and dp.ratio == 1.0


def test_named_reference_slice_and_any_metric():
    r = _results()
    for ref in ("g=a", {"g": "a"}, (("g", "a"),)):
        f = r.fairness("equal_opportunity", reference=ref)
        assert f.reference == (("g", "a"),) and [s.name for s in f.slices] == ["g=b", "g=c"]
        assert f.slices[0].differences["recall"] == 0.5 and f.slices[0].ratios["recall"] == 2.0 and f.slices[0].ratio == 0.5
    # f1: a = 2/4 = 0.5, b = 1.0, c = 0 / (0 + 1 + 0) = 0, overall 6/9
    f = r.fairness("f1", method="to_overall")
    assert f.reference_values["f1"] == pytest.approx(2 / 3)
    assert f.slices[1].differences["f1"] == pytest.approx(1 / 3) and f.slices[2].differences["f1"] == pytest.approx(-2 / 3)
    assert f.worst.slice == (("g", "c"),) and f.difference == pytest.approx(2 / 3) and f.ratio == 0.0
    # a metric string as written, resolved to its key in the results
    r2 = _results(metrics=["recall@threshold=0.85", "precision_at_recall@recall=0.5"])
    assert r2.fairness("recall@threshold=0.85").slices[0].values["recall@threshold=0.85"] == 0.5
    assert r2.fairness("precision_at_recall@recall=0.5").metrics == ("precision_at_recall@0.5",)


def test_a_crossed_reference_slice_in_any_column_order():
    # slices g x d: g=a, d=x holds rows 0 and 2 (y 1 0, predictions 1 1): recall 1/1
    r = _results(slices=[["g", "d"]])
    for ref in ("d=x, g=a", "g=a, d=x", {"d": "x", "g": "a"}, (("d", "x"), ("g", "a"))):
        f = r.fairness("equal_opportunity", reference=ref)
        assert f.reference == (("g", "a"), ("d", "x")) and f.reference_values == {"recall": 1.0}
        assert "g=a, d=x" not in [s.name for s in f.slices] and len(f.slices) == 5
    with pytest.raises(ValueError, match="no reference slice 'd=x'"):
        r.fairness("equal_opportunity", reference={"d": "x"})


def test_confidence_intervals_are_carried():
    r = _results(ci="posterior")
    f = r.fairness("equalized_odds")
    assert f.reference_ci == {m: r.overall.ci[m] for m in ("recall", "fpr")}
    for s in f.slices:
        assert s.ci == {m: r[s.slice].ci[m] for m in ("recall", "fpr") if m in r[s.slice].ci}
    d = f.to_dict()
    assert d["reference_ci"]["recall"] == list(r.overall.ci["recall"])
    assert "ci" in d["slices"][0]


def test_json_keys():
    d = _results().fairness("equal_opportunity").to_dict()
    assert set(d) == {"criterion", "method", "metrics", "spec", "reference", "reference_n", "reference_values", "difference", "ratio", "worst", "slices", "undefined",
                      "group_min", "group_max", "differences", "ratios"}  # fmt: skip
    assert d["method"] == "between_groups" and d["group_min"] == {"recall": 0.5} and d["differences"]["to_overall"] == {"recall": 0.25}
    assert d["worst"] == {"g": "a"} and d["reference"] == {} and d["undefined"] == [{"g": "c"}]
    assert d["slices"][2]["values"]["recall"] is None  # NaN -> null
    json.dumps(d, allow_nan=False)


def test_several_specs_and_errors():
    r = _results(slices=["g", "d"])
    with pytest.raises(ValueError, match="spec="):
        r.fairness("recall")
    f = r.fairness("recall", spec="d")
    assert [s.name for s in f.slices] == ["d=x", "d=y"]
    assert [s.name for s in r.fairness("recall", reference="d=y").slices] == ["d=x"]
    with pytest.raises(ValueError, match="not in the results"):
        r.fairness("demographic_parity@threshold=0.3")
    with pytest.raises(ValueError, match="'precision' is not in the results"):
        r.fairness("precision", spec="g")
    with pytest.raises(ValueError, match="criterion 'equal_opportunity'"):
        _results(metrics=["f1"]).fairness("equal_opportunity")
    with pytest.raises(ValueError, match="not a scalar"):
        r.fairness("confusion_matrix", spec="g")
    with pytest.raises(ValueError, match="no reference slice"):
        r.fairness("recall", reference="g=zzz")
    with pytest.raises(ValueError, match="no slices of spec"):
        r.fairness("recall", spec="nope")
    with pytest.raises(ValueError, match="column=value"):
        parse_reference("north")
    assert parse_reference("Overall") == () and parse_reference("a=1, b=x") == (("a", "1"), ("b", "x"))


def test_suppressed_slices_are_listed_not_compared():
    from mergeable_metrics.results.results import SliceResult

    r = _results(min_slice_size=3)  # g=c (2 rows) is suppressed, and g=a with it (its names are withheld)
    f = r.fairness("recall")
    assert [s.name for s in f.slices] == ["g=b"] and f.suppressed == [(("g", "__suppressed__"),)]
    assert f.to_dict()["suppressed"] == [{"g": "__suppressed__"}]
    slices = list(_results().slices[:3]) + [SliceResult((("g", "c"),), None, None, None, {}, suppressed=True)]
    with pytest.raises(ValueError, match="suppressed"):
        compute_fairness(slices, "recall", reference="g=c")


def test_format_table():
    text = _results().fairness("equalized_odds", method="to_overall").format_table()
    assert "equalized_odds across g (to_overall, reference Overall): difference 0.3333, ratio 0.0000, worst g=b" in text
    assert "g=a" in text and "-0.2500" in text and "null" in text


def test_the_reference_row_shows_its_example_count():
    """Newcomer report: the reference row's ``n`` was blank. Overall has the 10 rows of ROWS, g=a 4."""
    for ref, n in ((None, 10), ("g=a", 4)):
        f = _results().fairness("equal_opportunity", reference=ref)
        assert f.reference_n == n and f.to_dict()["reference_n"] == n
        lines = f.format_table().splitlines()
        header, row = lines[1].split(), lines[3].split()
        assert header[:2] == ["slice", "n"] and row[: row.index("(reference)") + 2][-1] == str(n), lines
        pytest.importorskip("jinja2")
        from mergeable_metrics.pipelines.report import _fairness_table

        assert _fairness_table(f, 10)["rows"][0]["n"] == n


# -- selection_rate -------------------------------------------------------------------------------
@pytest.mark.parametrize("name,weighted", BINARY_GRID, ids=lambda p: str(p))
def test_selection_rate_parity(name, weighted):
    c = binary_case(name, weighted)
    mc = MetricCollection("selection_rate", "selection_rate@threshold=0.7", "positive_rate@threshold=0.2")
    mc.update(c.y_true, y_score=c.y_score, sample_weight=c.sample_weight)
    got = mc.compute()
    w = np.ones(len(c.y_true)) if c.sample_weight is None else np.asarray(c.sample_weight, float)
    s = np.asarray(c.y_score, float)
    for key, t in (("selection_rate", 0.5), ("selection_rate@threshold=0.7", 0.7), ("selection_rate@threshold=0.2", 0.2)):
        want = float(np.average(s >= t, weights=w)) if w.sum() > 0 else math.nan
        assert got[key] == pytest.approx(want, rel=1e-12, nan_ok=True), key


@settings(max_examples=30, deadline=None)
@given(rows=st.lists(st.tuples(st.integers(0, 1), st.floats(0, 1), st.integers(0, 3)), max_size=40), cuts=st.lists(st.integers(0, 40), max_size=4))
def test_selection_rate_merge_laws(rows, cuts):
    y = np.array([r[0] for r in rows], dtype=int)
    s = np.array([r[1] for r in rows], dtype=float)
    w = np.array([r[2] for r in rows], dtype=float)
    whole = MetricCollection("selection_rate")
    whole.update(y, y_score=s, sample_weight=w)
    parts = []
    for idx in np.split(np.arange(len(rows)), sorted(c for c in cuts if c <= len(rows))):
        m = MetricCollection("selection_rate")
        m.update(y[idx], y_score=s[idx], sample_weight=w[idx])
        parts.append(m)
    merged = parts[-1]
    for p in reversed(parts[:-1]):
        merged = p.merge(merged)
    a, b = whole.compute()["selection_rate"], merged.compute()["selection_rate"]
    assert a == b or (math.isnan(a) and math.isnan(b))
