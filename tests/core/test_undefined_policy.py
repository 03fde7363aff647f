"""One undefined-value policy (issue 3): NaN plus one warning naming the metric, class and slice;
``zero_division`` as scikit-learn; results list the undefined metrics / classes per slice; NaN is
``null`` in JSON; the long-format rows keep their columns."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest

from mergeable_metrics import Evaluation, MetricCollection, Results, UndefinedMetricWarning
from mergeable_metrics.results.results import ROW_COLUMNS


def _ev(**kw) -> Evaluation:
    return Evaluation(label_col="y", prediction_col="p", num_classes=3, slices=["g"], metrics=["f1@none", "f1@macro", "accuracy", "mcc"], **kw)


DATA = {"y": [0, 1, 1, 0, 0], "p": [0, 1, 1, 0, 0], "g": ["a", "a", "b", "b", "c"]}


def test_one_warning_per_metric_naming_classes_and_slices():
    ev = _ev()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = ev.finish(ev.fold(ev.zero(), DATA))
    msgs = [str(w.message) for w in caught if issubclass(w.category, UndefinedMetricWarning)]
    assert len(msgs) == 3  # f1@none, f1@macro, mcc: once each, whatever the number of slices
    f1 = next(m for m in msgs if m.startswith("metric 'f1@none'"))
    assert "'Overall' [class 2]" in f1 and "'g=a' [class 2]" in f1 and "'g=c' [classes 1, 2]" in f1
    mcc = next(m for m in msgs if m.startswith("metric 'mcc'"))
    assert "'g=c'" in mcc and "Overall" not in mcc  # only slice c has a single class
    assert res[(("g", "c"),)].undefined == [{"metric": "f1@none", "classes": [1, 2]}, {"metric": "mcc"}]
    assert res.overall.metrics["f1@macro"] == 1.0  # class 2 left out of the average


def test_explicit_zero_division_is_silent_and_warn_gives_zero_with_a_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = _ev(zero_division=0).evaluate([DATA])  # mcc: zero_division=0 too, as sklearn's 0.0
    assert res.overall.metrics["f1@none"].tolist() == [1.0, 1.0, 0.0] and res[(("g", "c"),)].metrics["mcc"] == 0.0
    assert res.to_dict()["slices"][0].get("undefined") is None
    mc = MetricCollection("precision", zero_division="warn")
    mc.update([1, 0], y_score=[0.1, 0.2])
    with pytest.warns(UndefinedMetricWarning, match=r"metric 'precision' is undefined .* 'Overall'.*set to 0\.0"):
        assert mc.compute()["precision"] == 0.0


def test_json_has_null_and_undefined_lists_and_rows_keep_their_keys():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = _ev().evaluate([DATA])
    doc = json.loads(res.to_json())
    c = next(s for s in doc["slices"] if s["slice"] == {"g": "c"})
    assert c["metrics"]["f1@none"] == [1.0, None, None] and c["metrics"]["mcc"] is None
    assert c["undefined"] == [{"metric": "f1@none", "classes": [1, 2]}, {"metric": "mcc"}]
    rows = res.to_rows()
    assert all(set(r) == set(ROW_COLUMNS) for r in rows)  # Spark builds its result table from these keys
    again = Results.from_rows(rows, res.config, [("g",)], list(res.config["metrics"]))
    assert again.to_dict() == res.to_dict()  # the undefined lists follow from the values
    assert Results.from_dict(json.loads(res.to_json())).to_dict() == res.to_dict()


def test_empty_slices_and_no_data_are_nan_with_the_policy():
    ev = Evaluation(task="regression", label_col="t", prediction_col="q", weight_col="w", metrics=["mae"], slices=["g"])
    with pytest.warns(UndefinedMetricWarning, match=r"metric 'mae' is undefined .*'g=b'"):
        res = ev.evaluate([{"t": [1.0, 2.0, 3.0], "q": [1.5, 2.0, 2.0], "w": [1.0, 1.0, 0.0], "g": ["a", "a", "b"]}])
    assert math.isnan(res[(("g", "b"),)].metrics["mae"]) and res[(("g", "b"),)].n == 1


def test_ignored_class_is_not_listed_in_results():
    ev = Evaluation(label_col="y", prediction_col="p", num_classes=3, ignore_index=0, metrics=["f1@none"], zero_division=0)
    res = ev.evaluate([{"y": [0, 1, 2, 1], "p": [1, 1, 2, 0]}])
    assert np.isnan(res.overall.metrics["f1@none"][0])
    assert "undefined" not in res.to_dict()["slices"][0]


def test_reliability_diagram_empty_bins_are_not_undefined():
    mc = MetricCollection("reliability_diagram@n_bins=4")
    mc.update([1, 0], y_score=[0.9, 0.1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        diag = mc.compute()["reliability_diagram@n_bins=4"]
    assert diag[:, 0].tolist() == [1.0, 0.0, 0.0, 1.0] and np.isnan(diag[1, 1])
