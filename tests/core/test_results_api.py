"""Naming a slice every way a user would, and evaluating one table (issue 16, Python API)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from sklearn.metrics import accuracy_score

from core import Evaluation

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


def test_unknown_slices_raise_clear_errors():
    r = _results()
    with pytest.raises(KeyError, match="no slice 'country=XX'; slices: .*country=DE"):
        r["country=XX"]
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
    from core import MetricCollection

    mc = MetricCollection("f1@macro", num_classes=3)
    with pytest.raises(ValueError, match=r"for predicted labels pass y_pred= \(update\(y_true, y_pred=labels\)\)"):
        mc.update([0, 1, 2], [0, 2, 1])
    mc.update([0, 1, 2], y_pred=[0, 2, 1])
    from sklearn.metrics import f1_score

    assert mc.compute()["f1@macro"] == f1_score([0, 1, 2], [0, 2, 1], average="macro")
