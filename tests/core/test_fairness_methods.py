"""fairlearn's ``method=`` for the gaps between slices (``between_groups``, its default, and
``to_overall``), ``group_min`` / ``group_max``, differences and ratios, for any metric and for the
fairness criteria, against fairlearn's published definitions computed with numpy here:

- ``MetricFrame.group_min()`` / ``group_max()``: the smallest / largest group value;
- ``difference(method="between_groups")`` = ``group_max - group_min``;
  ``ratio(method="between_groups")`` = ``group_min / group_max``;
- ``difference(method="to_overall")`` = ``max |group - overall|``;
  ``ratio(method="to_overall")`` = ``min`` of ``group / overall`` with ``x > 1`` taken as ``1 / x``;
- ``demographic_parity_*``: those of the selection rate; ``equalized_odds_*`` (``agg="worst_case"``):
  the larger difference / smaller ratio of the TPR's and the FPR's.

fairlearn itself, when installed, is a second reference (skipped when absent)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mergeable_metrics import Evaluation

pytestmark = pytest.mark.filterwarnings("ignore::mergeable_metrics.metrics.base.UndefinedMetricWarning")


def _rate(num_mask: np.ndarray, den_mask: np.ndarray, w: np.ndarray) -> float:
    den = w[den_mask].sum()
    return float(w[num_mask & den_mask].sum() / den) if den > 0 else math.nan


def _numpy_metrics(y: np.ndarray, pred: np.ndarray, w: np.ndarray) -> dict[str, float]:
    """The metrics' published definitions (weighted), by hand."""
    tp, fp, fn = w[(y == 1) & pred].sum(), w[(y == 0) & pred].sum(), w[(y == 1) & ~pred].sum()
    return {
        "selection_rate": _rate(pred, np.ones_like(pred), w),
        "recall": _rate(pred, y == 1, w),
        "fpr": _rate(pred, y == 0, w),
        "accuracy": _rate(pred == (y == 1), np.ones_like(pred), w),
        "f1": float(2 * tp / (2 * tp + fp + fn)) if tp + fp + fn > 0 else math.nan,
    }


def _fairlearn_numpy(groups: dict[str, dict[str, float]], overall: dict[str, float], m: str) -> dict[str, float]:
    """fairlearn's definitions of one metric over the groups (NaN groups skipped, as pandas does)."""
    v = np.array([g[m] for g in groups.values()])
    v = v[~np.isnan(v)]
    o = overall[m]
    r = v / o
    r = np.where(r > 1, 1 / r, r)
    return {
        "group_min": v.min(),
        "group_max": v.max(),
        "between_groups_difference": v.max() - v.min(),
        "between_groups_ratio": v.min() / v.max(),
        "to_overall_difference": np.abs(v - o).max(),
        "to_overall_ratio": r.min(),
    }


METRICS = ["selection_rate", "recall", "fpr", "accuracy", "f1"]


def _rows(seed: int, n: int = 400, groups: str = "abcd") -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    g = rng.choice(list(groups), n)
    y = rng.integers(0, 2, n)
    shift = np.array([0.1 * "abcd".index(x) for x in g])
    p = np.clip(0.3 * y + 0.6 * rng.random(n) + shift, 0, 1)
    return {"y": y, "p": p, "g": g, "w": rng.integers(1, 4, n).astype(float)}


def _evaluate(rows: dict[str, np.ndarray], weighted: bool):
    ev = Evaluation(label_col="y", score_col="p", weight_col="w" if weighted else None, slices=["g"], metrics=METRICS)
    return ev.evaluate([rows])


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_metric_both_methods_against_numpy(seed, weighted):
    rows = _rows(seed)
    w = rows["w"] if weighted else np.ones(len(rows["y"]))
    pred = rows["p"] >= 0.5
    overall = _numpy_metrics(rows["y"], pred, w)
    groups = {k: _numpy_metrics(rows["y"][rows["g"] == k], pred[rows["g"] == k], w[rows["g"] == k]) for k in "abcd"}
    r = _evaluate(rows, weighted)
    for m in METRICS:
        want = _fairlearn_numpy(groups, overall, m)
        for method in ("between_groups", "to_overall"):
            f = r.fairness(m, method=method)
            assert f.method == method
            assert f.group_min[m] == pytest.approx(want["group_min"], rel=1e-12) and f.group_max[m] == pytest.approx(want["group_max"], rel=1e-12)
            assert f.difference == pytest.approx(want[f"{method}_difference"], rel=1e-12, abs=1e-15), (m, method)
            assert f.ratio == pytest.approx(want[f"{method}_ratio"], rel=1e-12), (m, method)
            for other in ("between_groups", "to_overall"):  # both are computed whichever is reported
                assert f.differences[other][m] == pytest.approx(want[f"{other}_difference"], rel=1e-12, abs=1e-15)
                assert f.ratios[other][m] == pytest.approx(want[f"{other}_ratio"], rel=1e-12)
    # the criteria: worst case over their metrics
    for method in ("between_groups", "to_overall"):
        dp = r.fairness("demographic_parity", method=method)
        want = _fairlearn_numpy(groups, overall, "selection_rate")
        assert dp.difference == pytest.approx(want[f"{method}_difference"], rel=1e-12, abs=1e-15)
        assert dp.ratio == pytest.approx(want[f"{method}_ratio"], rel=1e-12)
        eo = r.fairness("equalized_odds", method=method)
        tpr, fpr = (_fairlearn_numpy(groups, overall, m) for m in ("recall", "fpr"))
        assert eo.difference == pytest.approx(max(tpr[f"{method}_difference"], fpr[f"{method}_difference"]), rel=1e-12)
        assert eo.ratio == pytest.approx(min(tpr[f"{method}_ratio"], fpr[f"{method}_ratio"]), rel=1e-12)
        eop = r.fairness("equal_opportunity", method=method)
        assert eop.difference == pytest.approx(tpr[f"{method}_difference"], rel=1e-12)


def test_between_groups_is_the_default_and_named():
    """The issue's symptom: on these rows demographic parity was 0.123 (the largest gap to the
    overall rate) where fairlearn's default gives 0.164 (the largest rate minus the smallest),
    and nothing said which. Group a: 125 of 250 selected (0.5); b: 252 of 750 (0.336); overall
    377/1000 = 0.377."""
    y = np.zeros(1000, dtype=int)
    p = np.zeros(1000)
    p[:125] = 0.9  # a: rows 0..249
    p[250 : 250 + 252] = 0.9  # b: rows 250..999
    g = np.array(["a"] * 250 + ["b"] * 750)
    r = Evaluation(label_col="y", score_col="p", slices=["g"], metrics=["selection_rate"]).evaluate([{"y": y, "p": p, "g": g}])
    f = r.fairness("demographic_parity")
    assert f.method == "between_groups" and f.difference == pytest.approx(0.5 - 0.336, rel=1e-12)
    assert f.ratio == pytest.approx(0.336 / 0.5, rel=1e-12)
    t = r.fairness("demographic_parity", method="to_overall")
    assert t.difference == pytest.approx(0.5 - 0.377, rel=1e-12) and round(t.difference, 3) == 0.123 and round(f.difference, 3) == 0.164
    assert f.to_dict()["method"] == "between_groups" and f.to_dict()["differences"]["to_overall"]["selection_rate"] == pytest.approx(0.123, rel=1e-12)
    assert "(between_groups, reference Overall): difference 0.1640" in f.format_table()
    # a named reference slice: to_overall against it is the default, between_groups on request
    ra = r.fairness("demographic_parity", reference="g=a")
    assert ra.method == "to_overall" and ra.difference == pytest.approx(0.164, rel=1e-12)
    assert r.fairness("demographic_parity", reference="g=b", method="between_groups").difference == pytest.approx(0.164, rel=1e-12)
    with pytest.raises(ValueError, match="method must be one of .*between_groups.*got 'worst'"):
        r.fairness("demographic_parity", method="worst")


def test_equalized_odds_with_a_group_whose_tpr_is_undefined():
    """Group c has no positive labels (TPR undefined) but negatives (FPR 1.0): its TPR is left out
    of the TPR comparison and its FPR is compared (the largest FPR gap is c's)."""
    y = np.array([1, 1, 0, 0, 1, 1, 0, 0, 0, 0])
    p = np.array([0.9, 0.2, 0.1, 0.1, 0.9, 0.8, 0.1, 0.2, 0.7, 0.8])
    g = np.array(["a"] * 4 + ["b"] * 4 + ["c"] * 2)
    # a: tpr 1/2 fpr 0; b: tpr 1 fpr 0; c: tpr undefined fpr 1; overall tpr 3/4, fpr 2/6
    r = Evaluation(label_col="y", score_col="p", slices=["g"], metrics=["recall", "fpr"]).evaluate([{"y": y, "p": p, "g": g}])
    f = r.fairness("equalized_odds")
    assert f.group_min == {"recall": 0.5, "fpr": 0.0} and f.group_max == {"recall": 1.0, "fpr": 1.0}
    assert f.differences["between_groups"] == {"recall": 0.5, "fpr": 1.0} and f.difference == 1.0 and f.ratio == 0.0
    t = r.fairness("equalized_odds", method="to_overall")
    assert t.differences["to_overall"] == {"recall": 0.25, "fpr": pytest.approx(2 / 3)} and t.difference == pytest.approx(2 / 3)
    assert t.ratios["to_overall"] == {"recall": pytest.approx(2 / 3), "fpr": 0.0}
    c = t.slices[2]
    assert math.isnan(c.differences["recall"]) and c.difference == pytest.approx(2 / 3) and t.worst.name == "g=c"
    assert t.undefined == [(("g", "c"),)]


def test_fairlearn_itself_when_installed():
    fl = pytest.importorskip("fairlearn.metrics")
    rows = _rows(5, n=600)
    pred = (rows["p"] >= 0.5).astype(int)
    r = _evaluate(rows, True)
    kw = {"sensitive_features": rows["g"], "sample_weight": rows["w"]}
    for method in ("between_groups", "to_overall"):
        dp, eo = r.fairness("demographic_parity", method=method), r.fairness("equalized_odds", method=method)
        assert dp.difference == pytest.approx(fl.demographic_parity_difference(rows["y"], pred, method=method, **kw), rel=1e-12)
        assert dp.ratio == pytest.approx(fl.demographic_parity_ratio(rows["y"], pred, method=method, **kw), rel=1e-12)
        assert eo.difference == pytest.approx(fl.equalized_odds_difference(rows["y"], pred, method=method, **kw), rel=1e-12)
        assert eo.ratio == pytest.approx(fl.equalized_odds_ratio(rows["y"], pred, method=method, **kw), rel=1e-12)
    mf = fl.MetricFrame(metrics={"accuracy": __import__("sklearn.metrics").metrics.accuracy_score}, y_true=rows["y"], y_pred=pred,
                        sensitive_features=rows["g"], sample_params={"accuracy": {"sample_weight": rows["w"]}})  # fmt: skip
    f = r.fairness("accuracy")
    assert f.group_min["accuracy"] == pytest.approx(mf.group_min()["accuracy"], rel=1e-12)
    assert f.group_max["accuracy"] == pytest.approx(mf.group_max()["accuracy"], rel=1e-12)
    for method in ("between_groups", "to_overall"):
        assert f.differences[method]["accuracy"] == pytest.approx(mf.difference(method=method)["accuracy"], rel=1e-12)
        assert f.ratios[method]["accuracy"] == pytest.approx(mf.ratio(method=method)["accuracy"], rel=1e-12)
