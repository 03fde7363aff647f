"""Narrow, deterministic regression tests of the defects the fuzz suite found.

Each test reproduces one defect (issue 11's numbered items; ``NEW-x`` are defects the fuzz
suite found that the issue does not list) and asserts the promised behaviour; the property tests
of tests/fuzz/test_*_fuzz.py cover the same regions with generated inputs.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import tempfile
from pathlib import Path

import pytest

from mergeable_metrics import BinaryMetrics, Evaluation, MetricCollection


# -- NEW-A: ints beyond float range --------------------------------------------------------------
@pytest.mark.parametrize("column", ["y_true", "y_score", "sample_weight"])
def test_int_beyond_float_range_raises_value_error_naming_column_row_and_value(column: str) -> None:
    cols = {"y_true": [1, 0], "y_score": [0.5, 0.2], "sample_weight": [1, 1]}
    cols[column] = list(cols[column])
    cols[column][1] = 10**400
    with pytest.raises((ValueError, TypeError)) as e:
        BinaryMetrics().update(cols["y_true"], cols["y_score"], sample_weight=cols["sample_weight"])
    assert f"'{column}'" in str(e.value) and "row 1" in str(e.value)


def test_int_beyond_float_range_in_a_multiclass_prediction_raises_value_error() -> None:
    with pytest.raises(ValueError, match=r"'y_pred'.*row 0"):
        MetricCollection("accuracy", num_classes=3).update([1, 0], y_pred=[10**400, 0])


# -- NEW-B: empty JSON Lines file ------------------------------------------------------------------
@pytest.mark.parametrize("engine", ["local", "beam", "spark"])
@pytest.mark.parametrize("text", ["", "\n  \n"])
def test_empty_jsonl_file_gives_n_zero_like_an_empty_parquet_file(engine: str, text: str) -> None:
    from mergeable_metrics.pipelines.evaluate import main

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "empty.jsonl"
        path.write_text(text)
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = main(
                [
                    "--input",
                    str(path),
                    "--label",
                    "y",
                    "--score",
                    "s",
                    "--slice",
                    "g",
                    "--engine",
                    engine,
                    "--output",
                    str(Path(tmp) / "out"),
                    "--quiet",
                    "--no-report",
                ]
            )
        assert code == 0, err.getvalue()
        slices = json.loads((Path(tmp) / "out" / "metrics.json").read_text())["slices"]
        assert [s["n"] for s in slices] == [0]


def test_empty_jsonl_file_in_a_directory_adds_no_rows() -> None:
    from mergeable_metrics.pipelines.evaluate import main

    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "in"
        data.mkdir()
        (data / "part-0.jsonl").write_text("")
        (data / "part-1.jsonl").write_text('{"y": 1, "s": 0.9}\n{"y": 0, "s": 0.8}\n')
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = main(
                ["--input", str(data), "--label", "y", "--score", "s", "--metrics", "tp,fp", "--output", str(Path(tmp) / "out"), "--quiet", "--no-report"]
            )
        assert code == 0, err.getvalue()
        overall = json.loads((Path(tmp) / "out" / "metrics.json").read_text())["slices"][0]
        assert (overall["n"], overall["metrics"]["tp"], overall["metrics"]["fp"]) == (2, 1, 1)


# -- NEW-E: max_slices keys equal int and float values apart ---------------------------------------
def test_max_slices_counts_equal_int_and_float_values_as_one_value() -> None:
    batches = [{"y": [1, 0], "s": [0.9, 0.1], "g": [0.0, 0.0]}, {"y": [1], "s": [0.9], "g": [0]}]
    plain = Evaluation(label_col="y", score_col="s", slices=["g"], metrics=["accuracy"]).evaluate(batches)
    assert {s.slice: s.n for s in plain.slices} == {(): 3, (("g", 0.0),): 3}  # one value, one slice
    capped = Evaluation(label_col="y", score_col="s", slices=["g;max_slices=1"], metrics=["accuracy"]).evaluate(batches)
    assert {s.slice: s.n for s in capped.slices} == {(): 3, (("g", 0.0),): 3}


# -- NEW-C and issue 11 items ------------------------------------------------------------------------
@pytest.mark.parametrize("entry", ["core", "evaluation"])
def test_list_mixing_numbers_and_bytes_names_the_bytes_value_and_its_row(entry: str) -> None:
    with pytest.raises(TypeError) as e:
        if entry == "core":
            BinaryMetrics().update([0, 1], [0.0, b"0"])
        else:
            Evaluation(label_col="y", score_col="s").evaluate([{"y": [0, 1], "s": [0.0, b"0"]}])
    assert "b'0'" in str(e.value) and "row 1" in str(e.value), str(e.value)


def test_list_mixing_numbers_and_text_names_the_first_non_number() -> None:
    """Control for NEW-C: with str (not bytes) the message is right today."""
    with pytest.raises(TypeError) as e:
        BinaryMetrics().update([0, 1, 1], [0.5, 0.25, "abc"])
    assert "'abc'" in str(e.value) and "row 2" in str(e.value), str(e.value)


def test_infinite_label_on_spark_native_path_names_the_column(spark) -> None:
    from mergeable_metrics.spark import collect_results, compute_metrics

    df = spark.createDataFrame([(0.0, 0.5), (math.inf, 0.2)], "y double, s double")
    ev = Evaluation(label_col="y", score_col="s", metrics=["accuracy"])
    with pytest.raises(Exception) as e:
        collect_results(compute_metrics(df, evaluation=ev), ev)
    assert "'y'" in str(e.value) and "inf" in str(e.value), str(e.value)[:500]


def test_negative_zero_slice_values_keep_every_row_on_spark(spark) -> None:
    from mergeable_metrics.spark import collect_results, compute_metrics

    rows = [(1, 0.9, -0.0)] * 3 + [(0, 0.2, 0.0)] * 5 + [(1, 0.7, 1.5)] * 2
    df = spark.createDataFrame(rows, "y long, s double, x double").repartition(3)
    ev = Evaluation(label_col="y", score_col="s", slices=["x"], metrics=["accuracy"])
    res = collect_results(compute_metrics(df, evaluation=ev, native=False), ev)
    sliced = {s.slice: s.n for s in res.slices if s.slice}
    assert sum(sliced.values()) == 10 and sliced[(("x", 0.0),)] == 8, sliced


def test_scalar_then_list_in_a_score_column_names_the_column() -> None:
    with pytest.raises((ValueError, TypeError)) as e:
        BinaryMetrics().update([0, 0], [0.0, [0.5]])
    assert "'y_score'" in str(e.value), str(e.value)


def test_filter_spec_on_a_batch_without_a_matching_row_counts_the_other_batches() -> None:
    ev = Evaluation(label_col="y", score_col="s", slices=["g=a"], metrics=["accuracy"])
    res = ev.evaluate([{"y": [1], "s": [0.9], "g": ["a"]}, {"y": [0], "s": [0.9], "g": ["b"]}])
    assert {s.slice: s.n for s in res.slices} == {(): 2, (("g", "a"),): 1}


def test_quantile_slices_of_an_all_null_column_are_the_null_slice() -> None:
    ev = Evaluation(label_col="y", score_col="s", slices=["g:quantiles=2"], metrics=["accuracy"])
    res = ev.evaluate([{"y": [1, 0], "s": [0.9, 0.1], "g": [None, None]}])
    assert {s.slice: s.n for s in res.slices} == {(): 2, (("g", None),): 2}


def test_filter_on_an_int_above_2_53_selects_only_that_value() -> None:
    ev = Evaluation(label_col="y", score_col="s", slices=["id=9007199254740993"], metrics=["accuracy"])
    res = ev.evaluate([{"y": [1, 0], "s": [0.9, 0.1], "id": [2**53, 2**53 + 1]}])
    assert {s.slice: s.n for s in res.slices} == {(): 2, (("id", 2**53 + 1),): 1}


def test_cli_writes_infinite_slice_values() -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from mergeable_metrics.pipelines.evaluate import main

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "in.parquet"
        pq.write_table(pa.table({"y": [1, 0], "s": [0.9, 0.1], "g": [math.inf, 1.0]}), path)
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = main(["--input", str(path), "--label", "y", "--score", "s", "--slice", "g", "--output", str(Path(tmp) / "out"), "--quiet", "--no-report"])
        assert code == 0, err.getvalue()
        slices = json.loads((Path(tmp) / "out" / "metrics.json").read_text())["slices"]
        assert len(slices) == 3


def test_infinite_slice_values_on_spark(spark) -> None:
    from mergeable_metrics.spark import collect_results, compute_metrics

    df = spark.createDataFrame([(1, 0.9, math.inf), (0, 0.1, 1.0)], "y long, s double, g double")
    ev = Evaluation(label_col="y", score_col="s", slices=["g"], metrics=["accuracy"])
    res = collect_results(compute_metrics(df, evaluation=ev, native=False), ev)
    # slice values are canonical (mergeable_metrics.slicing.assign.canonical_value): inf is the text "inf" everywhere
    expected = {s.slice: s.n for s in ev.evaluate([{"y": [1, 0], "s": [0.9, 0.1], "g": [math.inf, 1.0]}]).slices}
    assert expected == {(): 2, (("g", 1),): 1, (("g", "inf"),): 1}
    assert {s.slice: s.n for s in res.slices} == expected


def test_quantile_slices_of_an_all_infinite_column_do_not_crash() -> None:
    ev = Evaluation(label_col="y", score_col="s", slices=["g:quantiles=2"], metrics=["accuracy"])
    res = ev.evaluate([{"y": [1, 0], "s": [0.9, 0.1], "g": [math.inf, None]}])
    assert sum(s.n for s in res.slices if s.slice) == 2


@pytest.mark.parametrize("values", [[{"a": 1}, {"a": 1}], [1 + 2j, 3j], [{"a": 1}, "x"]])
def test_slice_column_of_dicts_or_complex_numbers_says_the_type_is_not_a_slice_value(values: list) -> None:
    ev = Evaluation(label_col="y", score_col="s", slices=["g"], metrics=["accuracy"])
    with pytest.raises(TypeError) as e:
        ev.evaluate([{"y": [1, 0], "s": [0.9, 0.1], "g": values}])
    msg = str(e.value)
    assert "'g'" in msg and "row 0" in msg and type(values[0]).__name__ in msg and "mixes" not in msg, msg


# -- NEW-F (fixed): max_slices ties between int and float values -----------------------------------
# The key encoding orders ints and floats as one numeric kind, so ties at the cut break numerically.
@pytest.mark.parametrize("values, kept", [([1, 0.5], 0.5), ([0, -1e300], -1e300)])
def test_max_slices_ties_between_int_and_float_values_break_numerically(values: list, kept: float) -> None:
    ev = Evaluation(label_col="y", score_col="s", slices=["g;max_slices=1"], metrics=["accuracy"])
    res = ev.evaluate([{"y": [0] * len(values), "s": [0.0] * len(values), "g": values}])
    assert {s.slice for s in res.slices} == {(), (("g", kept),), (("g", "__other__"),)}


# -- CI of stop 23 (fuzz oracle, not core): infinite values rank as text at the max_slices cut ------
# The core fuzz test's oracle compared an int with the canonical text "inf" while ranking tied
# values (a float16 container turns 2**31 into inf). Core ranks numbers first, then text values
# ("-inf" and "inf" are text in canonical form), each ascending; the oracle now does the same.
def test_max_slices_ties_rank_numbers_before_infinite_values() -> None:
    ev = Evaluation(label_col="y", score_col="s", slices=["g;max_slices=1"], metrics=["accuracy"])
    batches = [{"y": [0] * 4, "s": [0.0] * 4, "g": [9, 9, 5, 5]}, {"y": [0] * 4, "s": [0.0] * 4, "g": [-math.inf, -math.inf, math.inf, math.inf]}]
    res = ev.evaluate(batches)
    assert {s.slice: s.n for s in res.slices} == {(): 8, (("g", 5),): 2, (("g", "__other__"),): 6}


# -- CI of stop 23 (fuzz oracle, not core): a filter 0 / 1 on a boolean column --------------------
# An int column that a numpy bool container holds is a boolean column; the filter text ``0`` /
# ``1`` selects False / True there (as ``false`` / ``true`` do), never an int.
@pytest.mark.parametrize("text, value, n", [("0", False, 2), ("1", True, 1), ("false", False, 2), ("7", None, 0)])
def test_filter_zero_or_one_on_a_boolean_column_selects_false_or_true(text: str, value: bool | None, n: int) -> None:
    import numpy as np

    ev = Evaluation(label_col="y", score_col="s", slices=[f"g={text}"], metrics=["accuracy"])
    res = ev.evaluate([{"y": [0, 0, 0], "s": [0.0] * 3, "g": np.array([False, True, False])}])
    got = {s.slice: s.n for s in res.slices}
    assert got == ({(): 3} if value is None else {(): 3, (("g", value),): n})
