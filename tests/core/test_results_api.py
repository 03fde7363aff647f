"""Naming a slice every way a user would, and evaluating one table (issue 16, Python API)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from sklearn.metrics import accuracy_score

from mergeable_metrics import Evaluation

DATA = {"y": [1, 0, 1, 1, 0, 0], "p": [0.9, 0.2, 0.4, 0.8, 0.6, 0.1], "country": ["DE", "DE", "FR", "FR", "FR", None]}


def _results():
    return Evaluation(label_col="y", score_col="p", slices=["country"], metrics=["accuracy"]).evaluate([DATA])


def test_a_slice_is_found_by_name_dict_tuple_and_position():
    r = _results()
    de = r[(("country", "DE"),)]
    assert de.metrics["accuracy"] == accuracy_score([1, 0], [1, 0])
    assert r["country=DE"] is de and r[{"country": "DE"}] is de and r[[["country", "DE"]]] is de
    assert r[0] is r.overall and r["Overall"] is r.overall and r[{}] is r.overall
    assert r[-1].slice == (("country", None),) and r["country=null"] is r[-1]
    assert len(r) == 4 and [s.name for s in r] == ["Overall", "country=DE", "country=FR", "country=null"]


def test_a_slice_has_one_shape_a_dict_in_results_json_and_rows():
    import json

    from mergeable_metrics import Results

    r = _results()
    assert [s.key for s in r] == [{}, {"country": "DE"}, {"country": "FR"}, {"country": None}]
    assert [s["slice"] for s in json.loads(r.to_json())["slices"]] == [s.key for s in r]  # metrics.json
    rows = r.to_rows()
    assert [row["slice"] for row in rows] == ["{}", '{"country":"DE"}', '{"country":"FR"}', '{"country":null}']
    assert "slice_key" not in rows[0] and all(r[json.loads(row["slice"])].n == row["n"] for row in rows)  # the dict finds the slice
    r.overall.key["x"] = 1  # a new dict each time: the result is not changed
    assert r.overall.key == {} and r.overall.slice == ()
    # long rows written before the slice was one JSON object: display name in "slice", JSON pairs in "slice_key"
    old = [{**row, "slice": r[json.loads(row["slice"])].name, "slice_key": json.dumps(list(map(list, r[json.loads(row["slice"])].slice)))} for row in rows]
    assert old[1]["slice"] == "country=DE" and old[1]["slice_key"] == '[["country", "DE"]]'
    assert Results.from_rows(old, r.config, [("country",)]).to_json() == Results.from_rows(rows, r.config, [("country",)]).to_json() == r.to_json()
    with pytest.raises(ValueError, match=r"column 'slice' must hold a JSON object"):
        Results.from_rows([{**rows[0], "slice": "Overall"}])


def test_unknown_slices_raise_clear_errors():
    r = _results()
    with pytest.raises(KeyError, match=r"no slice 'country=XX'; did you mean .*'country=DE'.*\? \(4 slices\)"):
        r["country=XX"]
    with pytest.raises(KeyError, match=r"no slice \{'country': 'D'\}; did you mean 'country=DE'"):
        r[{"country": "D"}]
    with pytest.raises(KeyError, match=r"no slice 'zzzzzzzzzzzzzzzzzzzz'; slices: \['Overall', 'country=DE'"):
        r["zzzzzzzzzzzzzzzzzzzz"]
    assert r.get("country=XX") is None and r.get(9, "none") == "none" and r.get({"country": "FR"}) is r["country=FR"]
    with pytest.raises(IndexError, match="position 9 out of range: the results have 4 slices"):
        r[9]
    with pytest.raises(TypeError, match="a slice is named by"):
        r[1.5]


@pytest.mark.parametrize("make", [lambda: pd.DataFrame(DATA), lambda: pa.table(DATA), lambda: pa.RecordBatch.from_pydict(DATA), lambda: dict(DATA)],
                         ids=["pandas", "arrow-table", "arrow-batch", "dict"])  # fmt: skip
def test_evaluate_accepts_one_table(make):
    r = Evaluation(label_col="y", score_col="p", slices=["country"], metrics=["accuracy"]).evaluate(make())
    y, p = np.array(DATA["y"]), (np.array(DATA["p"]) >= 0.5).astype(int)
    assert r.overall.n == 6 and r.overall.metrics["accuracy"] == accuracy_score(y, p)
    assert r["country=FR"].metrics["accuracy"] == accuracy_score(y[2:5], p[2:5])


def test_multiclass_labels_passed_as_scores_say_pass_y_pred():
    from mergeable_metrics import MetricCollection

    mc = MetricCollection("f1@macro", num_classes=3)
    with pytest.raises(ValueError, match=r"for predicted labels pass y_pred= \(update\(y_true, y_pred=labels\)\)"):
        mc.update([0, 1, 2], [0, 2, 1])
    mc.update([0, 1, 2], y_pred=[0, 2, 1])
    from sklearn.metrics import f1_score

    assert mc.compute()["f1@macro"] == f1_score([0, 1, 2], [0, 2, 1], average="macro")


def test_the_requested_metric_name_is_a_key_of_the_result():
    from sklearn.metrics import f1_score, precision_score

    from mergeable_metrics import MetricCollection

    y, p = [0, 1, 2, 2, 1, 0], [0, 1, 1, 2, 1, 2]
    mc = MetricCollection("f1", "precision", num_classes=3)
    mc.update(y, y_pred=p)
    r = mc.compute()
    assert r["f1"] == r["f1@macro"] == f1_score(y, p, average="macro")
    assert "precision" in r and r.get("precision") == precision_score(y, p, average="macro")
    assert list(r) == ["f1@macro", "precision@macro"]  # the canonical keys, as before
    assert mc.describe()["metric_names"] == {"f1": "f1@macro", "precision": "precision@macro"}
    assert mc.resolved_names["f1"] == "f1@macro"
    with pytest.raises(KeyError):
        r["recall"]


def test_display_names_are_the_result_keys():
    from sklearn.metrics import accuracy_score, f1_score

    from mergeable_metrics import MetricCollection, SingleMetric

    y, p = [0, 1, 2, 2, 1, 0], [0, 1, 1, 2, 1, 2]
    mc = MetricCollection(("val_f1", "f1@macro"), acc="accuracy", num_classes=3)
    mc.update(y, y_pred=p)
    r = mc.compute()
    assert list(r) == ["val_f1", "acc"]
    assert r["val_f1"] == f1_score(y, p, average="macro") and r["acc"] == accuracy_score(y, p)
    assert r["f1@macro"] == r["val_f1"] and r["accuracy"] == r["acc"]  # the canonical strings find them too
    assert mc.resolved_names == {"val_f1": "f1@macro", "acc": "accuracy"}
    assert list(MetricCollection({"val_f1": "f1@macro"}, "recall", num_classes=3).plan.keys) == ["val_f1", "recall@macro"]
    assert "val_f1 (f1@macro): value=0.655556 | tp=[1, 2, 1] | fp=[0, 1, 1] | fn=[1, 0, 1]" in repr(mc)  # f1 = 2tp / (2tp + fp + fn) per class: 2/3, 4/5, 1/2
    with pytest.raises(ValueError, match="display name .*'@'"):
        MetricCollection(("a@b", "f1"))
    with pytest.raises(ValueError, match="metric name 'x' is given to two metrics: 'accuracy' and 'f1'"):
        MetricCollection(("x", "accuracy"), ("x", "f1"))
    with pytest.raises(TypeError, match="a metric is a metric string, a Metric or a"):
        MetricCollection(3)
    # a misspelt option is not taken for a display name (its value is no metric): named, with the closest option
    with pytest.raises(TypeError, match=r"unexpected keyword argument treshold=0.3 \(did you mean 'threshold'\?\)"):
        MetricCollection("f1", treshold=0.3)
    with pytest.raises(TypeError, match=r"pos_labels=1 \(did you mean 'pos_label'\?\)"):
        SingleMetric("f1", classes=[-1, 1], pos_labels=1)


def test_evaluation_results_answer_requested_and_display_names_after_json_and_rows():
    import json

    from sklearn.metrics import f1_score

    from mergeable_metrics import Results

    d = {"y": [0, 1, 2, 2, 1], "p": [0, 1, 1, 2, 1], "c": ["a", "a", "b", "b", "b"]}
    ev = Evaluation(label_col="y", prediction_col="p", num_classes=3, slices=["c"], metrics=["f1", ("val_acc", "accuracy")])
    r = ev.evaluate(d)
    want = f1_score(d["y"], d["p"], average="macro")
    assert r.resolved_names == {"f1": "f1@macro", "val_acc": "accuracy"}
    assert list(r.overall.metrics) == ["f1@macro", "val_acc"]
    for got in (r, Results.from_dict(json.loads(r.to_json())), Results.from_rows(r.to_rows(), r.config)):
        assert got.overall.metrics["f1"] == want and got.overall.metrics["accuracy"] == 0.8
        assert got["c=b"].metrics["f1"] == got["c=b"].metrics["f1@macro"]
    assert json.loads(r.to_json())["config"]["metric_names"] == {"f1": "f1@macro", "val_acc": "accuracy"}
    # the name asked for is a key of metrics.json as well (beside the canonical one), read back once
    for s_ in json.loads(r.to_json())["slices"]:
        assert s_["metrics"]["f1"] == s_["metrics"]["f1@macro"] and set(s_["metrics"]) == {"f1@macro", "val_acc", "f1"}
    assert Results.from_dict(json.loads(r.to_json())).to_json() == r.to_json()
    again = Evaluation(**ev.to_config()).evaluate(d)  # to_config keeps the display names
    assert list(again.overall.metrics) == ["f1@macro", "val_acc"]
    mapping = Evaluation(label_col="y", prediction_col="p", num_classes=3, metrics={"F1": "f1@macro"}).evaluate(d)
    assert list(mapping.overall.metrics) == ["F1"] and mapping.overall.metrics["F1"] == want


def test_a_display_name_beside_its_canonical_metric_survives_json():
    import json

    from sklearn.metrics import f1_score

    from mergeable_metrics import Results

    # ("val_f1", "f1@weighted") and "f1@weighted" are two result keys: neither is a copy of the other
    d = {"y": [0, 1, 2, 2, 1], "p": [0, 1, 1, 2, 1]}
    r = Evaluation(label_col="y", prediction_col="p", num_classes=3, metrics=[("val_f1", "f1@weighted"), "f1@weighted", "f1"]).evaluate(d)
    want = f1_score(d["y"], d["p"], average="weighted")
    back = Results.from_dict(json.loads(r.to_json()))
    assert list(back.overall.metrics) == list(r.overall.metrics) == ["val_f1", "f1@weighted", "f1@macro"]
    assert back.overall.metrics["val_f1"] == back.overall.metrics["f1@weighted"] == want
    assert back.to_json() == r.to_json()


def test_a_metric_is_found_by_any_spelling_the_parser_accepts():
    import json
    import pickle

    from sklearn.metrics import f1_score, mean_squared_error

    from mergeable_metrics import MetricCollection, Results

    y, p = np.array([1.0, 2.0, 3.0, 4.0, 10.0]), np.array([1.5, 2.0, 2.0, 4.25, 7.0])
    ev = Evaluation(label_col="y", prediction_col="p", task="regression", metrics=["quantile_absolute_error@q=0.9", "mse"])
    r = ev.evaluate({"y": y, "p": p})
    want_q = float(np.quantile(np.abs(p - y), 0.9, method="averaged_inverted_cdf"))
    for got in (r, Results.from_dict(json.loads(r.to_json())), pickle.loads(pickle.dumps(r))):
        m = got.overall.metrics
        assert list(m) == ["quantile_absolute_error@0.9", "mse"] and len(m) == 2  # each entry once
        for name in (
            "quantile_absolute_error@q=0.9",
            "quantile_absolute_error@0.9",
            "quantile_absolute_error@q=0.90",
            "quantile_absolute_error@0.900",
            "absolute_error_quantile@q=0.9",
            " quantile_absolute_error @ q = 0.9 ",
        ):
            assert name in m and m[name] == m.get(name) == want_q, name
        for name in ("mse", "mean_squared_error"):
            assert name in m and m[name] == mean_squared_error(y, p)
        for name in ("quantile_absolute_error@q=0.5", "mae", "no_such_metric", "f1@macro", 3):
            assert name not in m and m.get(name) is None
            with pytest.raises(KeyError):
                m[name]

    yc, pc = [0, 1, 2, 2, 1, 0, 1], [0, 1, 1, 2, 1, 2, 2]
    want_f1 = f1_score(yc, pc, average="macro", labels=[1, 2])
    r = Evaluation(label_col="y", prediction_col="p", num_classes=3, metrics=["f1@macro@labels=1.0|2"]).evaluate({"y": yc, "p": pc})
    mc = MetricCollection("f1@macro@labels=1.0|2", num_classes=3)
    mc.update(yc, y_pred=pc)
    for m in (r.overall.metrics, mc.compute()):
        assert list(m) == ["f1@macro@labels=1|2"]
        for name in ("f1@macro@labels=1.0|2", "f1@macro@labels=1|2", "f1@labels=1|2@macro", "f1@average=macro@labels=1|2.0", "f1_score@macro@labels=1|2"):
            assert name in m and m[name] == want_f1, name
        assert "f1@macro@labels=2|1" not in m and "f1@macro" not in m  # other labels (order) are another metric
    # a display name is found by any spelling of its metric too
    r = Evaluation(label_col="y", prediction_col="p", num_classes=3, metrics={"val_f1": "f1@macro"}).evaluate({"y": yc, "p": pc})
    m = r.overall.metrics
    assert list(m) == ["val_f1"] and m["f1@average=macro"] == m["f1_score@macro"] == f1_score(yc, pc, average="macro")
    # class values: labels= is read as the classes
    r = Evaluation(label_col="y", prediction_col="p", classes=["a", "b", "c"], metrics=["f1@macro@labels=b|c"]).evaluate(
        {"y": ["a", "b", "c", "c"], "p": ["b", "b", "c", "a"]}
    )
    assert r.overall.metrics["f1@labels=b|c@average=macro"] == f1_score(["a", "b", "c", "c"], ["b", "b", "c", "a"], average="macro", labels=["b", "c"])


def test_a_crossed_slice_is_found_by_a_dict_in_any_column_order():
    d = {"y": [1, 0, 1, 0], "p": [0.9, 0.2, 0.4, 0.8], "a": ["x", "x", "y", "y"], "b": ["u", "v", "u", "v"]}
    r = Evaluation(label_col="y", score_col="p", slices=["a,b"], metrics=["accuracy"]).evaluate(d)
    s = r["a=y, b=v"]
    assert r[{"b": "v", "a": "y"}] is s and r[{"a": "y", "b": "v"}] is s and r[(("a", "y"), ("b", "v"))] is s
    assert s.metrics["accuracy"] == accuracy_score([0], [1])


def test_bounds_and_intervals_are_found_by_any_spelling_too():
    """``SliceResult.bounds`` / ``.ci`` answer every spelling of a metric, like ``.metrics``: the
    compressed quantile's bounds contain numpy's exact quantile, the posterior interval of the
    recall contains the recall computed directly."""
    import json

    from mergeable_metrics import Results

    rng = np.random.default_rng(3)
    y, p = rng.random(2000), rng.random(2000)
    ev = Evaluation(label_col="y", prediction_col="p", task="regression", metrics=["quantile_absolute_error@q=0.9@capacity=16"])
    r = ev.evaluate({"y": y, "p": p})
    exact = float(np.quantile(np.abs(p - y), 0.9, method="averaged_inverted_cdf"))
    for got in (r, Results.from_dict(json.loads(r.to_json()))):
        b = got.overall.bounds
        assert list(b) == ["quantile_absolute_error@0.9@capacity=16"]
        for name in ("quantile_absolute_error@q=0.9@capacity=16", "quantile_absolute_error@capacity=16@q=0.90"):
            lo, hi = b[name]
            assert name in b and lo <= exact <= hi and lo < hi, name
        assert "quantile_absolute_error@q=0.9" not in b  # another capacity is another metric

    yb = rng.integers(0, 2, 400)
    s = np.clip(yb * 0.3 + rng.random(400) * 0.7, 0, 1)
    r = Evaluation(label_col="y", score_col="s", metrics=["recall"], ci="posterior").evaluate({"y": yb, "s": s})
    recall = float(((s >= 0.5) & (yb == 1)).sum() / (yb == 1).sum())
    for name in ("recall", "tpr", "sensitivity", "true_positive_rate"):
        lo, hi = r.overall.ci[name]
        assert lo < recall < hi, name


# newcomer report (issue 28 follow-up): to_pandas(wide=True) shows the slice as the JSON text that
# metrics.json writes (documented); slice_columns=True adds one column per slice feature
@pytest.mark.parametrize("wide", [True, False])
def test_to_pandas_slice_columns_gives_one_column_per_slice_feature(wide):
    data = {**DATA, "n": [1, 1, 2, 2, 2, 3]}  # a slice feature named like a count column
    r = Evaluation(label_col="y", score_col="p", slices=["country", ("country", "n")], metrics=["accuracy"]).evaluate([data])
    plain = r.to_pandas(wide=wide)
    assert "country" not in plain.columns and plain.loc[0, "slice"] == "{}"  # the documented default is unchanged
    df = r.to_pandas(wide=wide, slice_columns=True)
    assert list(df.columns[:3]) == ["slice", "country", "slice:n"] and df["n"].tolist() == plain["n"].tolist()
    assert df.drop(columns=["country", "slice:n"]).equals(plain)
    keys = [json.loads(t) for t in df["slice"]]
    assert df["country"].tolist() == [k.get("country") for k in keys]  # None where the slice has no such feature
    assert df["slice:n"].tolist() == [k.get("n") for k in keys] and {type(v) for v in df["slice:n"] if v is not None} == {int}  # not 2.0
    de = df[(df["country"] == "DE") & df["slice:n"].isna()]
    values = de["accuracy"] if wide else de.loc[de["metric"] == "accuracy", "value"]
    assert values.tolist() == [accuracy_score([1, 0], [1, 0])]
    assert df.loc[df["country"].isna() & df["slice:n"].isna(), "slice"].tolist()[0] == "{}"
