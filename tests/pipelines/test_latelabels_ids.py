"""Late labels (issue 28, items 8 and 14): the one id rule and slice columns of two kinds.

The id rule (README, Guarantees): ids are compared by one canonical form in every engine: an
integer and a whole float are the same id (``1 == 1.0``, as their int64 value); text is text
(never cast: ``"01"`` is not ``1``). Id columns of different kinds (numbers in one input, text in
the other) are refused naming the column, both inputs and both types; a fraction compared with
integer ids is refused naming the value and the row. Tested on the local, Beam and Spark joins on
the same files."""

from __future__ import annotations


import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from sklearn.metrics import accuracy_score

from mergeable_metrics import Evaluation
from mergeable_metrics.time.latelabels import COUNT_NAMES, LabelJoin, classify, count_specs, join_batches
from mergeable_metrics.pipelines.latelabels import run_join

JOIN = LabelJoin("id", "y", "pt", "lt", "1h")


def _outcomes(preds, labels, join=JOIN):
    c = classify(pa.table(preds), pa.table(labels), join)
    return [COUNT_NAMES[i] for i in c.pred_outcome], [COUNT_NAMES[i] for i in c.label_outcome]


@pytest.mark.parametrize("pid, lid", [([1.0, 2.0, 3.0, 4.0], [4, 3, 2, 1]), ([4, 3, 2, 1], [1.0, 2.0, 3.0, 4.0]),
                                      (pa.array([1, 2, 3, 4], pa.int32()), pa.array([4, 3, 2, 1], pa.uint8()))])  # fmt: skip
def test_integers_and_whole_floats_are_one_id(pid, lid):
    p, lab = _outcomes({"id": pid, "pt": [0.0] * 4}, {"id": lid, "lt": [1.0] * 4, "y": [1] * 4})
    assert p == ["matched"] * 4 and lab == ["matched"] * 4


def test_ids_of_different_kinds_are_refused_naming_both_inputs_and_types():
    with pytest.raises(ValueError, match=r"id column 'id' is int64 in the predictions and string in the labels") as e:
        _outcomes({"id": [1, 2], "pt": [0.0, 0.0]}, {"id": ["1", "01"], "lt": [1.0, 1.0], "y": [1, 1]})
    assert "never cast" in str(e.value)
    with pytest.raises(ValueError, match=r"id column 'id' is string in the predictions and double in the labels"):
        _outcomes({"id": ["1"], "pt": [0.0]}, {"id": [1.0], "lt": [1.0], "y": [1]})


def test_a_fraction_compared_with_integer_ids_is_refused_naming_value_and_row():
    with pytest.raises(ValueError, match=r"prediction column 'id': invalid value 2.5 at row 1: .*whole number"):
        _outcomes({"id": [1.0, 2.5], "pt": [0.0, 0.0]}, {"id": [1, 2], "lt": [1.0, 1.0], "y": [1, 1]})


def test_text_ids_stay_text():
    # "01" and "1" are two ids (a duplicate only when the text is the same)
    p, lab = _outcomes({"id": ["1"], "pt": [0.0]}, {"id": ["01", "1"], "lt": [1.0, 2.0], "y": [1, 1]})
    assert p == ["matched"] and lab == ["orphan_labels", "matched"]


def test_a_slice_column_of_two_kinds_names_the_column_both_inputs_and_types():
    ev = Evaluation(label_col="y", score_col="s", slices=["c"], metrics=["accuracy"])
    preds = pa.table({"id": [1, 2], "pt": [0.0, 0.0], "s": [0.9, 0.1], "c": [1, 2]})
    labels = pa.table({"id": [1, 3], "lt": [1.0, 1.0], "y": [1, 0], "c": ["AA", "BB"]})  # id 3: an orphan, counted in c=BB
    with pytest.raises(ValueError, match=r"slice column 'c' is int64 in the predictions and string in the labels"):
        join_batches(preds, labels, JOIN, count_specs(ev))
    # numbers of two types are one kind: 2 and 2.0 are one slice
    labels = pa.table({"id": [1, 3], "lt": [1.0, 1.0], "y": [1, 0], "c": [2.0, 2.5]})
    counts = join_batches(preds, labels, JOIN, count_specs(ev))[1]
    assert counts.get((("c", 2),))["never"] == 1 and counts.get((("c", 2.5),))["orphan_labels"] == 1


# ------------------------------------------------------------------------------ every engine
def _files(tmp_path, pred_ids, label_ids):
    # pandas: an int id column with a gap reads as float (1.0, 2.0, NaN, ...), written as such
    pd.DataFrame({"id": pred_ids, "pt": [0.0] * len(pred_ids), "s": [0.9, 0.8, 0.2, 0.7, 0.1][: len(pred_ids)]}).to_parquet(tmp_path / "p.parquet")
    pd.DataFrame({"id": label_ids, "lt": [60.0] * len(label_ids), "y": [1, 1, 0, 1][: len(label_ids)]}).to_parquet(tmp_path / "l.parquet")
    return str(tmp_path / "p.parquet"), str(tmp_path / "l.parquet")


ENGINES = ["local", "beam", "spark"]


@pytest.mark.parametrize("engine", ENGINES)
def test_float_prediction_ids_meet_int_label_ids_on_every_engine(tmp_path, engine):
    p, lab = _files(tmp_path, [1.0, 2.0, np.nan, 3.0, 4.0], [1, 2, 3, 4])
    join = LabelJoin("id", "y", "pt", "lt", "1h", on_invalid="skip")
    ev = Evaluation(label_col="y", score_col="s", metrics=["accuracy"])
    res, counts = run_join(engine, ev, join, p, lab)
    c = counts.get()
    assert (c["matched"], c["invalid_predictions"], c["never"], c["orphan_labels"]) == (4, 1, 0, 0)
    # ids 1, 2, 3, 4: scores 0.9, 0.8, 0.7, 0.1 (>= 0.5), labels 1, 1, 0, 1
    assert res.overall.n == 4 and res.overall.metrics["accuracy"] == accuracy_score([1, 1, 0, 1], [1, 1, 1, 0])


@pytest.mark.parametrize("engine", ENGINES)
def test_int_prediction_ids_and_text_label_ids_are_refused_on_every_engine(tmp_path, engine):
    p, lab = _files(tmp_path, [1, 2, 3, 4], ["1", "01", "2", "3"])
    join = LabelJoin("id", "y", "pt", "lt", "1h")
    ev = Evaluation(label_col="y", score_col="s", metrics=["accuracy"])
    with pytest.raises(ValueError, match=r"id column 'id' is int64 in the predictions and string in the labels"):
        run_join(engine, ev, join, p, lab)
