"""The checks shared by pipelines.validate, Beam's matchers and ValidateMetrics and Spark's
assert_metrics (issue 29, item 9): one value against one bound, expectations on result entries,
compare without a baseline. References: numpy's isclose and scikit-learn."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import accuracy_score, recall_score

from mergeable_metrics import Evaluation
from mergeable_metrics.engine import check_expectations, check_value, compare, entries_from_rows, failure_message, parse_thresholds, validate_entries


@pytest.mark.parametrize("value", [0.75, 0.75 + 7.5e-6, 0.75 + 7.6e-6, 0.75 - 8e-6, 0.7])
def test_equal_is_numpys_isclose(value):
    row = check_value("accuracy", "equal", value, 0.75, rtol=1e-5, atol=0.0)
    assert (row["status"] == "pass") == bool(np.isclose(value, 0.75, rtol=1e-5, atol=0.0))
    if row["status"] == "fail":
        assert row["message"].startswith(f"accuracy {value!r} != expected 0.75 (differs by ")


@pytest.mark.parametrize(("value", "bound"), [(math.inf, math.inf), (-math.inf, -math.inf), (math.inf, -math.inf), (math.inf, 1.0), (1.0, math.inf)])
def test_equal_is_numpys_isclose_at_infinity(value, bound):
    """np.isclose(inf, inf) is True (inf - inf is NaN, which no tolerance admits)."""
    row = check_value("log_loss", "equal", value, bound, rtol=1e-7)
    assert (row["status"] == "pass") == bool(np.isclose(value, bound, rtol=1e-7, atol=0.0)), row["message"]


def test_bounds_and_undefined_values():
    assert check_value("recall", "minimum", 0.5, 0.6) | {} == {
        "metric": "recall", "check": "minimum", "current": 0.5, "baseline": None, "threshold": 0.6, "status": "fail", "message": "recall 0.5 < minimum 0.6",
    }  # fmt: skip
    assert check_value("recall", "minimum", 0.6, 0.6)["status"] == "pass"  # at the bound passes
    assert check_value("log_loss", "maximum", 0.41, 0.4)["message"] == "log_loss 0.41 > maximum 0.4"
    for v in (None, math.nan, np.float64("nan")):
        row = check_value("recall", "minimum", v, 0.6)
        assert (row["status"], row["message"]) == ("fail", "recall is undefined; minimum 0.6")
    # with a baseline (pipelines.validate): undefined on both sides passes as "undefined"
    assert check_value("recall", "minimum", None, 0.6, baseline=None)["status"] == "undefined"
    with pytest.raises(ValueError, match="check must be one of minimum, maximum, equal"):
        check_value("recall", "between", 0.5, 0.6)


def test_numpy_numbers_are_bounds_and_bad_bounds_are_refused():
    """An expected count from numpy (``np.sum`` gives an ``np.int64``) or a float32 bound is a
    number like any other; NaN, a bool or a string is refused naming the metric."""
    f = FRAME
    tp = np.sum((f.y == 1) & (f.p >= 0.5))  # np.int64(2)
    entries = [{"slice": {}, "n": 8, "metrics": {"tp": 2.0, "accuracy": _sk(accuracy_score)}}]
    checks = check_expectations(entries, equal={"tp": tp}, minimum={"accuracy": np.float32(0.5)}, maximum={"accuracy": np.int64(1)})
    assert [c["status"] for c in checks] == ["pass", "pass", "pass"] and checks[0]["threshold"] == 2.0
    for bad in (math.nan, np.float32("nan"), True, np.bool_(True), "0.5"):
        with pytest.raises(ValueError, match="minimum: the bound of 'accuracy' must be a number"):
            check_expectations(entries, minimum={"accuracy": bad})


FRAME = pd.DataFrame({"y": [1, 1, 0, 1, 0, 0, 1, 0], "p": [0.9, 0.4, 0.2, 0.7, 0.6, 0.1, 0.3, 0.8], "g": list("aabbabab")})


def _results():
    return Evaluation(label_col="y", score_col="p", slices=["g"], metrics=["accuracy", "recall"]).evaluate([FRAME])


def _sk(fn, g=None):
    f = FRAME if g is None else FRAME[FRAME.g == g]
    return float(fn(f.y, (f.p >= 0.5).astype(int)))


def test_expectations_on_every_layout_give_the_same_checks():
    res = _results()
    wide = [{"slice": s.key, "n": s.n, **s.metrics, "accuracy:ci_lower": 0.0} for s in res.slices]
    grouped = [{"g": s.key["g"], **s.metrics} for s in res.slices if s.key]
    layouts = {"to_dict": res.to_dict()["slices"], "long": entries_from_rows(res.to_rows()), "wide": entries_from_rows(wide)}
    want = {"recall": {"g=a": _sk(recall_score, "a"), "g=b": _sk(recall_score, "b") + 0.1}}
    for name, entries in layouts.items():
        checks = check_expectations(entries, equal={"accuracy": _sk(accuracy_score), **want}, slices=["g=c"])
        assert [c["status"] for c in checks] == ["fail", "pass", "pass", "fail"], name
        assert checks[0]["message"].startswith("g=c: no such slice in the results")
        assert checks[3]["message"].startswith(f"g=b: recall {_sk(recall_score, 'b')!r} != expected {_sk(recall_score, 'b') + 0.1!r}")
    checks = check_expectations(entries_from_rows(grouped), equal=want)  # metric_columns aggregates: g is the group column
    assert [c["status"] for c in checks] == ["pass", "fail"]
    assert failure_message(checks).splitlines()[0] == "1 of 2 metric checks failed:"


def test_compare_without_a_baseline_checks_values_only():
    res = _results()
    t = parse_thresholds({"metrics": {"recall": {"minimum": 0.7, "change": {"absolute": 0.01}}}})
    report = compare(res.to_dict(), None, t)
    by = {(c["slice_name"], c["check"]): c for c in report["checks"]}
    assert report["mismatches"] == [] and len(report["checks"]) == 6
    for name, g in (("Overall", None), ("g=a", "a"), ("g=b", "b")):
        want = _sk(recall_score, g)
        assert by[(name, "minimum")]["status"] == ("pass" if want >= 0.7 else "fail")
        assert by[(name, "absolute")]["status"] == "no_baseline"
    assert report["status"] == ("regression" if min(_sk(recall_score, g) for g in (None, "a", "b")) < 0.7 else "ok")
    worse = {"slices": [{**s, "metrics": {**s["metrics"], "recall": s["metrics"]["recall"] + 0.05}} for s in res.to_dict()["slices"]]}
    checks = validate_entries(res.to_dict()["slices"], t, baseline=worse)  # against a baseline: the change fails by 0.05
    assert [c["message"] for c in checks if c["check"] == "absolute" and c["status"] == "fail"][0].startswith("Overall: recall")
