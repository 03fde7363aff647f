"""Slice values on Spark (Arrow and native paths): -0.0 and 0.0 are one slice, NUL-ending strings
stay distinct, int filters compare exactly, decimals/timestamps/dates/binary/inf give core's
canonical values, every spec kind on sorted partitions with empty ones, all-null quantiles, and
duplicate result rows raise (issue 11, items 1-3, 8, 11, 12)."""

from __future__ import annotations

import datetime
import decimal
import warnings

import pytest

pytest.importorskip("pyspark")

from mergeable_metrics import Evaluation  # noqa: E402
from mergeable_metrics.spark import collect_results, compute_metrics  # noqa: E402
from tests._helpers.slice_kinds import METRICS, SPECS, observed, reference, sorted_rows  # noqa: E402


def _run(df, ev, native=None):
    return collect_results(compute_metrics(df, evaluation=ev, native=native), ev)


def _counts(results):
    return {s.slice: s.n for s in results.slices}


def _local(rows, columns, ev):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ev.evaluate([{c: [r[i] for r in rows] for i, c in enumerate(columns)}])


def test_negative_zero_slice_values_merge_on_spark(spark):
    rows = [(1, 0.9, -0.0)] * 3 + [(0, 0.2, 0.0)] * 5 + [(1, 0.7, 1.5)] * 2
    df = spark.createDataFrame(rows, "y long, s double, x double").repartition(3)
    ev = Evaluation(label_col="y", score_col="s", slices=["x"], metrics=["tp", "fp", "tn"])
    got = _run(df, ev)
    assert _counts(got) == {(): 10, (("x", 0),): 8, (("x", 1.5),): 2}
    assert got[(("x", 0),)].metrics == {"tp": 3.0, "fp": 0.0, "tn": 5.0}
    assert got.to_json() == _local(rows, ["y", "s", "x"], ev).to_json()


@pytest.mark.parametrize("native", [None, False], ids=["native", "arrow"])
def test_strings_ending_in_nul_stay_distinct_slices_on_spark(spark, native):
    rows = [(1, 0.9, "a")] * 3 + [(0, 0.2, "a\x00")] * 5
    df = spark.createDataFrame(rows, "y long, s double, x string").repartition(3)
    ev = Evaluation(label_col="y", score_col="s", slices=["x"], metrics=["tp", "fp"])
    assert _counts(_run(df, ev, native)) == {(): 8, (("x", "a"),): 3, (("x", "a\x00"),): 5}


def test_int_filter_above_2_53_selects_only_its_own_row_on_spark(spark):
    rows = [(1, 0.9, 2**53), (1, 0.9, 2**53 + 1), (0, 0.9, 2**53 + 2)]
    df = spark.createDataFrame(rows, "y long, s double, id long").repartition(2)
    ev = Evaluation(label_col="y", score_col="s", slices=["id=9007199254740993"], metrics=["tp", "fp"])
    assert _counts(_run(df, ev)) == {(): 3, (("id", 2**53 + 1),): 1}


@pytest.mark.parametrize("native", [None, False], ids=["native", "arrow"])
def test_decimal_timestamp_date_slice_values_are_cores_text_on_spark(spark, native):
    rows = [
        (1, 0.9, decimal.Decimal("1.50"), datetime.date(2020, 1, 2), datetime.datetime(2020, 1, 1, 12, 30)),
        (0, 0.9, decimal.Decimal("-0.00"), datetime.date(2020, 1, 3), datetime.datetime(2020, 1, 1, 12, 30, 0, 500000)),
    ] * 2
    df = spark.createDataFrame(rows, "y long, s double, d decimal(10,2), dt date, t timestamp_ntz").repartition(3)
    ev = Evaluation(label_col="y", score_col="s", slices=["d", "dt", "t"], metrics=["tp", "fp"])
    got = _run(df, ev, native)
    assert [s.slice for s in got.slices][1:] == [
        (("d", "0.00"),), (("d", "1.50"),), (("dt", "2020-01-02"),), (("dt", "2020-01-03"),),
        (("t", "2020-01-01T12:30:00"),), (("t", "2020-01-01T12:30:00.500000"),),
    ]  # fmt: skip
    assert got.to_json() == _local(rows, ["y", "s", "d", "dt", "t"], ev).to_json()


def test_inf_and_binary_slice_values_on_spark(spark):
    rows = [(1, 0.9, float("inf"), b"caf\xc3\xa9"), (0, 0.2, float("-inf"), b"ab"), (1, 0.8, float("nan"), None)]
    df = spark.createDataFrame(rows, "y long, s double, f double, b binary").repartition(2)
    ev = Evaluation(label_col="y", score_col="s", slices=["f", "b"], metrics=["tp", "fp"])
    got = _run(df, ev)
    assert _counts(got) == {
        (): 3, (("f", "-inf"),): 1, (("f", "inf"),): 1, (("f", None),): 1, (("b", "ab"),): 1, (("b", "café"),): 1, (("b", None),): 1,
    }  # fmt: skip
    assert got.to_json() == _local(rows, ["y", "s", "f", "b"], ev).to_json()


def _sorted_df(spark, partitions: int):
    """The sorted rows, split into contiguous partitions (parallelize keeps the order), many of
    them empty when ``partitions`` exceeds the number of rows."""
    from pyspark.sql import types as T

    pdf = sorted_rows()
    schema = T.StructType(
        [T.StructField("y", T.LongType()), T.StructField("score", T.DoubleType()), T.StructField("origin", T.StringType()),
         T.StructField("carrier", T.StringType()), T.StructField("distance", T.DoubleType()), T.StructField("air_time", T.DoubleType()),
         T.StructField("tags", T.ArrayType(T.StringType()))]
    )  # fmt: skip
    rows = [(int(r.y), float(r.score), r.origin, r.carrier, float(r.distance), float(r.air_time), list(r.tags)) for r in pdf.itertuples()]
    return pdf, spark.createDataFrame(spark.sparkContext.parallelize(rows, partitions), schema)


@pytest.mark.parametrize("partitions", [7, 90])
def test_every_spec_kind_on_sorted_partitions_with_empty_ones_on_spark(spark, partitions):
    pdf, df = _sorted_df(spark, partitions)
    ev = Evaluation(label_col="y", score_col="score", slices=SPECS, metrics=METRICS)
    assert observed(_run(df, ev)) == reference(pdf)


def test_plain_specs_on_sorted_partitions_with_empty_ones_on_spark_native(spark):
    pdf, df = _sorted_df(spark, 90)
    ev = Evaluation(label_col="y", score_col="score", slices=["origin", "carrier,origin"], metrics=METRICS)
    want = {k: v for k, v in reference(pdf).items() if not k or [c for c, _ in k] in (["origin"], ["carrier", "origin"])}
    assert observed(_run(df, ev, native=True)) == want


def test_readme_filter_spec_on_partitions_without_a_matching_row_on_spark(spark):
    rows = [(1, 0.9, "EWR", "AA")] * 4 + [(0, 0.2, "JFK", "B6")] * 2
    df = spark.createDataFrame(spark.sparkContext.parallelize(rows, 4), "y long, score double, origin string, carrier string")
    ev = Evaluation(label_col="y", score_col="score", slices=["origin=JFK|LGA,carrier"], metrics=METRICS)
    assert _counts(_run(df, ev)) == {(): 6, (("origin", "JFK"), ("carrier", "B6")): 2}


def test_quantiles_of_an_all_null_column_on_spark(spark):
    rows = [(1, 0.9, None)] * 3 + [(0, 0.2, None)] * 2
    df = spark.createDataFrame(rows, "y long, s double, x double").repartition(3)
    ev = Evaluation(label_col="y", score_col="s", slices=["x:quantiles=4"], metrics=["tp", "fp"])
    assert _counts(_run(df, ev)) == {(): 5, (("x", None),): 5}


def test_collect_results_raises_on_two_rows_of_one_slice_key(spark):
    from mergeable_metrics.spark import result_schema

    ev = Evaluation(label_col="y", score_col="s", slices=["x"], metrics=["tp"])
    row = {"n": 3, "weight": 3.0, "skipped": 0, "metric": "tp", "index": None, "value": 3.0, "lower": None, "upper": None}
    rows = [{**row, "slice": "{}", "n": 9, "weight": 9.0}, {**row, "slice": '{"x":-0.0}'}, {**row, "slice": '{"x":0.0}'}]
    df = spark.createDataFrame([tuple(r.get(c) for c in result_schema().names) for r in rows], result_schema())  # ci, comparison: null
    with pytest.raises(ValueError, match="two result rows for slice"):
        collect_results(df, ev)
