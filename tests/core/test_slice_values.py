"""Slice values: one canonical form, distinct values stay distinct, every spec kind on sorted
input with empty batches (issue 11, items 1-3, 8, 11, 12, 14)."""

from __future__ import annotations

import datetime
import decimal
import json
import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from mergeable_metrics import Evaluation, Results
from mergeable_metrics.slicing.assign import canonical_value
from tests._helpers.slice_kinds import METRICS, SPECS, observed, reference, sorted_rows


def _slices(slices, batches, **kw):
    ev = Evaluation(label_col="y", score_col="s", slices=slices, metrics=["tp", "fp"], **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ev.evaluate(batches)


def _batch(values, y=None):
    n = len(values)
    return {"y": [1] * n if y is None else y, "s": [0.9] * n, "x": values}


def _counts(results):
    return {s.slice: s.n for s in results.slices}


# -- item 1: -0.0 and 0.0, NaNs ------------------------------------------------------------------
def test_negative_zero_and_zero_are_one_slice_with_one_json_key_whatever_the_batch_order():
    neg, pos, other = np.array([-0.0] * 3), np.array([0.0] * 5), np.array([1.5] * 2)
    a = _slices(["x"], [_batch(neg), _batch(pos), _batch(other)])
    b = _slices(["x"], [_batch(pos), _batch(other), _batch(neg)])
    assert _counts(a) == {(): 10, (("x", 0),): 8, (("x", 1.5),): 2}
    assert a.to_json() == b.to_json()
    assert json.dumps(json.loads(a.to_json())["slices"][1]["slice"]) == '{"x": 0}'


def test_every_kind_of_nan_is_the_one_missing_slice():
    values = np.array([float("nan"), None, decimal.Decimal("NaN"), np.float32("nan"), pd.NaT, 2.5], dtype=object)
    got = _counts(_slices(["x"], [_batch(values)]))
    assert got == {(): 6, (("x", 2.5),): 1, (("x", None),): 5}


# -- item 2: distinct values stay distinct ---------------------------------------------------------
def test_bytes_that_are_not_utf8_raise_instead_of_merging_into_one_slice():
    with pytest.raises(ValueError, match=r"slice column 'x': value b'\\x(fe|ff)' at row [01] is not UTF-8"):
        _slices(["x"], [_batch([b"\xff", b"\xfe"])])
    with pytest.raises(ValueError, match=r"slice column 'x': value b'\\xff' at row 12 is not UTF-8"):
        _slices(["x"], [_batch(np.array([b"a"] * 10)), _batch(np.array([b"ok", b"ok", b"\xff"]))])
    got = _counts(_slices(["x"], [_batch([b"caf\xc3\xa9", b"abc"])]))
    assert got == {(): 2, (("x", "abc"),): 1, (("x", "café"),): 1}


@pytest.mark.parametrize("kind", ["list", "object_array", "arrow"])
def test_strings_ending_in_nul_stay_distinct_slices(kind):
    values = ["a", "a\x00", "a", "a\x00\x00"]
    data = {"list": values, "object_array": np.array(values, dtype=object), "arrow": pa.array(values)}[kind]
    got = _counts(_slices(["x"], [_batch(data)]))
    assert got == {(): 4, (("x", "a"),): 2, (("x", "a\x00"),): 1, (("x", "a\x00\x00"),): 1}


def test_every_value_type_is_checked_not_only_the_first_1000():
    values = np.array(["s"] * 1000 + [5, "5"], dtype=object)
    with pytest.raises(TypeError, match=r"slice column 'x' mixes value types \['int', 'str'\]: 's' at row 0 and 5 at row 1000"):
        _slices(["x"], [_batch(values)])
    with pytest.raises(TypeError, match=r"'s' at row 7 and 5 at row 1007"):  # rows counted across batches
        _slices(["x"], [_batch(["t"] * 7), _batch(values)])


def test_booleans_and_numbers_in_one_column_raise_instead_of_merging_true_with_1():
    with pytest.raises(TypeError, match=r"slice column 'x' mixes value types \['bool', 'int'\]: True at row 0 and 1 at row 1"):
        _slices(["x"], [_batch([True, 1])])


def test_ints_beyond_2_53_stay_distinct_slices_next_to_floats():
    got = _counts(_slices(["x"], [_batch([2**53, 2**53 + 1, 0.5])]))
    assert got == {(): 3, (("x", 0.5),): 1, (("x", 2**53),): 1, (("x", 2**53 + 1),): 1}


def test_whole_floats_and_ints_are_one_slice_with_one_json_text_in_any_batch_order():
    ints = [5, None]  # an object column (None): exact ints
    floats = np.array([5.0, 7.5])
    a = _slices(["x"], [_batch(ints), _batch(floats)])
    b = _slices(["x"], [_batch(floats), _batch(ints)])
    assert _counts(a) == {(): 4, (("x", 5),): 2, (("x", 7.5),): 1, (("x", None),): 1}
    assert a.to_json() == b.to_json()
    assert json.dumps(json.loads(a.to_json())["slices"][1]["slice"]) == '{"x": 5}'
    assert [s.slice for s in _slices(["x"], [_batch(np.array([2.0, 0.5, 1.5]))]).slices[1:]] == [
        (("x", 0.5),),
        (("x", 1.5),),
        (("x", 2),),
    ]  # ints and floats in one numeric order


# -- item 3: int filters -------------------------------------------------------------------------------
def test_int_filter_above_2_53_selects_only_its_own_row():
    data = {"y": [1, 1, 1], "s": [0.9, 0.9, 0.9], "id": np.array([2**53, 2**53 + 1, 2**53 + 2], dtype=np.int64)}
    got = _counts(_slices(["id=9007199254740993"], [data]))
    assert got == {(): 3, (("id", 9007199254740993),): 1}
    got = _counts(_slices(["id=9007199254740992.0|9007199254740994"], [data]))  # float text: compared as a number
    assert got == {(): 3, (("id", 2**53),): 1, (("id", 2**53 + 2),): 1}


# -- item 8: every spec kind on sorted input with empty batches ----------------------------------------
@pytest.mark.parametrize("batch_size", [1, 7, 25])
def test_every_spec_kind_on_sorted_input_with_empty_batches_matches_the_reference(batch_size):
    df = sorted_rows()
    empty = df.iloc[:0]
    batches = [empty]
    for i in range(0, len(df), batch_size):
        batches += [df.iloc[i : i + batch_size], empty]
    ev = Evaluation(label_col="y", score_col="score", slices=SPECS, metrics=METRICS)
    assert observed(ev.evaluate(batches)) == reference(df)
    assert observed(ev.evaluate([pa.Table.from_pandas(b, preserve_index=False) for b in batches])) == reference(df)


def test_readme_filter_spec_on_a_batch_without_a_matching_row():
    batch = {"y": [1, 0], "score": [0.9, 0.1], "origin": ["EWR", "EWR"], "carrier": ["AA", "B6"]}
    ev = Evaluation(label_col="y", score_col="score", slices=["origin=JFK|LGA,carrier"], metrics=METRICS)
    assert _counts(ev.evaluate([batch])) == {(): 2}


# -- item 11: quantiles of an all-null column ----------------------------------------------------------
def test_quantiles_of_an_all_null_column_put_every_row_in_the_null_slice():
    got = _counts(_slices(["x:quantiles=4"], [_batch(np.array([np.nan, np.nan])), _batch([None])]))
    assert got == {(): 3, (("x", None),): 3}
    got = _counts(_slices(["x:quantiles=4"], [_batch(np.array([np.inf, np.nan, -np.inf]))]))  # no finite value
    assert got == {(): 3, (("x", "(-inf, inf)"),): 2, (("x", None),): 1}


# -- item 12: inf, Decimal, timestamps ---------------------------------------------------------------
def test_inf_and_decimal_slice_values_are_written_to_json():
    res = _slices(["f", "d"], [{"y": [1, 1, 1], "s": [0.9] * 3, "f": [np.inf, -np.inf, 2.5], "d": [decimal.Decimal("1.50"), decimal.Decimal("-0.00"), None]}])
    doc = json.loads(res.to_json())
    assert [s["slice"] for s in doc["slices"]] == [{}, {"f": 2.5}, {"f": "-inf"}, {"f": "inf"}, {"d": "0.00"}, {"d": "1.50"}, {"d": None}]
    assert Results.from_dict(doc).to_json() == res.to_json()


@pytest.mark.parametrize(
    "value",
    [
        datetime.datetime(2020, 1, 1, 12, 30),
        pd.Timestamp("2020-01-01 12:30:00"),
        np.datetime64("2020-01-01T12:30:00.000000"),
        pd.Timestamp("2020-01-01 13:30:00+01:00"),
        pa.array([datetime.datetime(2020, 1, 1, 12, 30)], pa.timestamp("us")),
        pa.array([datetime.datetime(2020, 1, 1, 12, 30)], pa.timestamp("ns", tz="UTC")),
    ],
    ids=["datetime", "pandas", "numpy", "pandas_tz", "arrow_us", "arrow_ns_utc"],
)
def test_timestamp_slice_values_print_as_iso_8601_from_every_source(value):
    data = value if isinstance(value, pa.Array) else [value]
    assert _counts(_slices(["x"], [_batch(data)])) == {(): 1, (("x", "2020-01-01T12:30:00"),): 1}


def test_canonical_value_of_times_dates_and_fractions():
    assert canonical_value(np.datetime64("2020-01-01T12:30:00.5")) == "2020-01-01T12:30:00.500000"
    assert canonical_value(np.datetime64("1969-12-31T23:59:59.250", "ms")) == "1969-12-31T23:59:59.250000"
    assert canonical_value(np.datetime64("2020-01-01T00:00:00.000000001", "ns")) == "2020-01-01T00:00:00.000000001"
    assert canonical_value(pd.Timestamp("2020-01-01T00:00:00.000000001")) == "2020-01-01T00:00:00.000000001"
    assert canonical_value(np.datetime64("2020-01-02", "D")) == canonical_value(datetime.date(2020, 1, 2)) == "2020-01-02"
    assert canonical_value(-0.0) == 0 and canonical_value(np.float32(1.5)) == 1.5 and canonical_value(float("nan")) is None
    assert canonical_value(decimal.Decimal("1E-10")) == "0.0000000001"


# -- item 14: nested lists -----------------------------------------------------------------------------
def test_nested_list_slice_value_raises_naming_column_value_and_row():
    with pytest.raises(TypeError, match=r"slice column 'x': value \[2\] at row 3 has type list"):
        _slices(["x"], [_batch([[1], [2]]), _batch([[3], [1, [2]]])])
    with pytest.raises(TypeError, match=r"slice column 'x': row 1 holds the nested value \[\[2\]\]"):
        _slices(["x"], [_batch(pa.array([None, [[2]]]))])


# -- item 1 (collection): duplicate rows never silently keep one ------------------------------------
def test_from_rows_raises_on_two_rows_of_one_slice_key():
    res = _slices(["x"], [_batch([1.5, 2.5])])
    rows = res.to_rows()
    assert {r["slice"] for r in rows} == {"{}", '{"x":1.5}', '{"x":2.5}'}
    dup = [dict(r, slice='{"x":1.5}') if r["slice"] == '{"x":2.5}' else r for r in rows]
    with pytest.raises(ValueError, match=r"two result rows for slice 'x=1.5'"):
        Results.from_rows(dup)
    zeros = [dict(r, slice='{"x":-0.0}') for r in rows if r["slice"] == '{"x":1.5}']
    zeros += [dict(r, slice='{"x":0.0}') for r in rows if r["slice"] == '{"x":2.5}']
    with pytest.raises(ValueError, match=r"two result rows for slice 'x=-0.0'|two result rows for slice 'x=0.0'"):
        Results.from_rows(zeros)
    assert Results.from_rows(rows, res.config, [("x",)]).to_json() == res.to_json()
