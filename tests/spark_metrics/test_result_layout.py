"""The result layouts of ``mergeable_metrics.spark.compute_metrics`` without a JVM.

A wide row per slice (a column per metric, arrays nested, interval / bound / comparison columns
only when the evaluation computes them) and the long rows both turn back into exactly core's
Results (the local engine's, an independent fold), and the ``slice`` column is the slice as
``metrics.json`` writes it.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pyarrow as pa
import pytest

import mergeable_metrics as mm
from mergeable_metrics.engine import slice_from_json, slice_to_json
from mergeable_metrics.spark._frames import RESULT_COLUMNS, ResultLayout

RNG = np.random.default_rng(7)
N = 300
TABLE = pa.table({
    "y": RNG.integers(0, 2, N), "p": RNG.random(N), "q": RNG.random(N), "w": RNG.random(N),
    "k": RNG.integers(0, 3, N), "kp": RNG.integers(0, 3, N), "c": RNG.choice(["a", "b", "c"], N, p=[0.6, 0.35, 0.05]),
})  # fmt: skip

CASES = {
    "binary": dict(score_col="p", metrics=["accuracy", "f1", "roc_auc"]),
    "multiclass arrays": dict(prediction_col="kp", label_col="k", num_classes=3, metrics=["accuracy", "f1@none", "confusion_matrix"]),
    "ci": dict(score_col="p", metrics=["accuracy", "roc_auc"], ci="analytic"),
    "suppressed": dict(score_col="p", metrics=["accuracy"], min_slice_size=20, weight_col="w"),
    "baseline": dict(score_col="p", metrics=["accuracy", "roc_auc"], baseline_score_col="q"),
    "bounds": dict(score_col="p", metrics=["roc_auc@capacity=8", "accuracy"]),
    # an array whose cells an empty slice does not have (the layout's columns come from one)
    "curve": dict(score_col="p", metrics=["metric_at_thresholds@f1@thresholds=0.2|0.5|0.8", "threshold_at_recall@0.8"]),
}


def _results(kw):
    ev = mm.Evaluation(**{"label_col": "y", "slices": ["c"], **kw})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ev, ev.evaluate(TABLE)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("layout", ["wide", "long"])
def test_rows_of_either_layout_collect_to_the_local_engines_results(case, layout):
    ev, want = _results(CASES[case])
    lay = ResultLayout(ev, layout=layout)
    table = lay.table(want.to_rows())
    assert table.schema == lay.arrow_schema()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = ev.collect(rows=lay.core_rows(table.to_pylist()))
    assert got.to_json() == want.to_json()
    if layout == "wide":
        assert table.num_rows == len(want.slices)  # one row per slice
    else:
        assert table.column_names == list(RESULT_COLUMNS)


def test_wide_columns_are_the_metrics_and_only_the_extras_asked_for():
    ev, res = _results(CASES["multiclass arrays"])
    table = ResultLayout(ev).table(res.to_rows())
    assert table.column_names == ["slice", "n", "weight", "skipped", "accuracy", "f1@none", "confusion_matrix"]
    overall = table.to_pylist()[0]
    assert overall["slice"] == "{}" and overall["n"] == N
    assert overall["confusion_matrix"] == res.overall.metrics["confusion_matrix"].tolist()
    assert overall["f1@none"] == pytest.approx(res.overall.metrics["f1@none"].tolist())
    ev, _ = _results(CASES["ci"])
    # roc_auc's score distribution may compress (capacity): certified bounds of the scalar metrics too
    assert [c for c, _ in ResultLayout(ev).columns()][4:] == [
        "accuracy", "accuracy:lower", "accuracy:upper", "accuracy:ci_lower", "accuracy:ci_upper",
        "roc_auc", "roc_auc:lower", "roc_auc:upper", "roc_auc:ci_lower", "roc_auc:ci_upper",
    ]  # fmt: skip


def test_the_slice_column_is_the_slice_of_metrics_json():
    ev, res = _results(CASES["binary"])
    texts = ResultLayout(ev).table(res.to_rows()).column("slice").to_pylist()
    assert [json.loads(t) for t in texts] == [s["slice"] for s in json.loads(res.to_json())["slices"]]
    assert texts == [r["slice"] for r in res.to_rows() if r["metric"] == "accuracy"]  # core's long rows: the same text
    assert [json.loads(t) for t in texts] == [s.key for s in res]  # SliceResult.key: the same dict
    assert slice_to_json((("c", "a"), ("n", 3))) == '{"c":"a","n":3}' and slice_from_json('{"c":"a","n":3}') == (("c", "a"), ("n", 3))
    assert slice_from_json("{}") == () and slice_to_json(()) == "{}"
    with pytest.raises(ValueError, match=r"column 'slice' must hold a JSON object .*'\[\[\"c\",\"a\"\]\]'"):
        slice_from_json('[["c","a"]]')


def test_a_bad_layout_is_named():
    ev, _ = _results(CASES["binary"])
    with pytest.raises(ValueError, match=r"layout must be one of \('wide', 'long'\), got 'tall'"):
        ResultLayout(ev, layout="tall")
