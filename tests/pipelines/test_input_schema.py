"""One schema per input, the same on every engine (mergeable_metrics.pipelines.io.input_schema): CSV types inferred
over the whole input, text in value columns, header-only files, missing columns and Parquet files
of different types, through local, Beam (DirectRunner) and Spark (local).
"""

from __future__ import annotations


import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mergeable_metrics import Evaluation
from mergeable_metrics.pipelines import engines, io

pytest.importorskip("apache_beam")
pytest.importorskip("pyspark")

ENGINES = ["local", "beam", "spark"]
ALL = ENGINES


def _write(d, name: str, text: str):
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_text(text)
    return d


def _slices(results) -> dict:
    return {tuple(s.slice): (s.n, s.skipped, dict(s.metrics)) for s in results.slices}


def _ev(**kw) -> Evaluation:
    return Evaluation(**{"label_col": "y", "score_col": "s", "slices": ["zip"], "metrics": ["accuracy", "tp"], **kw})


# -- CSV types over the whole input ---------------------------------------------------------------
@pytest.mark.beam
@pytest.mark.spark
def test_csv_slice_keys_are_inferred_over_the_whole_input_the_same_on_every_engine(tmp_path):
    d = tmp_path / "zips"
    _write(d, "a.csv", "y,s,zip\n1,0.9,02139\n0,0.2,10001\n1,0.7,02139\n")  # alone: ints
    _write(d, "b.csv", "y,s,zip\n1,0.8,02139\n0,0.1,SW1A\n0,0.6,\n")  # text: the column is text
    got = {e: _slices(engines.run(e, _ev(), str(d))) for e in ALL}
    want = {  # by hand: 02139 -> rows (1,.9) (1,.7) (1,.8) all right; 10001 (0,.2); SW1A (0,.1); null (0,.6) wrong
        (): (6, 0, {"accuracy": 5 / 6, "tp": 3.0}),
        (("zip", "02139"),): (3, 0, {"accuracy": 1.0, "tp": 3.0}),
        (("zip", "10001"),): (1, 0, {"accuracy": 1.0, "tp": 0.0}),
        (("zip", "SW1A"),): (1, 0, {"accuracy": 1.0, "tp": 0.0}),
        (("zip", None),): (1, 0, {"accuracy": 0.0, "tp": 0.0}),
    }
    for engine, slices in got.items():
        assert slices == want, engine


@pytest.mark.beam
@pytest.mark.spark
def test_csv_integer_columns_stay_integers_on_every_engine(tmp_path):
    d = tmp_path / "ints"
    _write(d, "a.csv", "y,s,zip\n1,0.9,02139\n0,0.2,10001\n")
    _write(d, "b.csv", "y,s,zip\n1,0.8,02139\n")
    for engine in ALL:
        keys = set(_slices(engines.run(engine, _ev(), str(d))))
        assert keys == {(), (("zip", 2139),), (("zip", 10001),)}, engine


def test_input_schema_infers_each_column_over_all_files(tmp_path):
    d = tmp_path / "kinds"
    _write(d, "a.csv", "i,f,b,t,n,big,v\n1,1,true,x,,1,\n2,2,False,2020-01-01,,2,\n")
    _write(d, "b.csv", "i,f,b,t,n,big,v\n3,2.5e-1,TRUE,y,,99999999999999999999,\n")
    schema = io.input_schema(str(d), None, ["i", "f", "b", "t", "n", "big", "v"], value_columns=["v"])
    assert schema.types == {
        "i": pa.int64(), "f": pa.float64(), "b": pa.bool_(), "t": pa.string(), "n": pa.string(),
        "big": pa.float64(),  # beyond int64
        "v": pa.float64(),  # a value column without values
    }  # fmt: skip
    assert schema.text_values == {}


# -- text in value columns --------------------------------------------------------------------------
@pytest.fixture
def text_score(tmp_path):
    d = tmp_path / "text"
    _write(d, "a.csv", "y,s,zip\n1,0.9,a\n0,0.0403,b\n")
    _write(d, "b.csv", "y,s,zip\n1,0.8,a\n0,abc,b\n1,0.3,a\n")
    return d


@pytest.mark.parametrize("engine", ENGINES)
def test_text_in_a_score_column_names_the_first_non_number_and_its_row(text_score, engine):
    with pytest.raises(TypeError, match=r"column 's': value 'abc' at row 3 is not a number"):
        engines.run(engine, _ev(), str(text_score))


@pytest.mark.beam
@pytest.mark.spark
def test_skip_invalid_skips_text_in_a_score_column_and_counts_it_on_every_engine(text_score):
    # by hand: rows (1,.9,a) (0,.0403,b) (1,.8,a) right, (0,abc,b) skipped, (1,.3,a) wrong
    want = {
        (): (4, 1, {"accuracy": 0.75, "tp": 2.0}),
        (("zip", "a"),): (3, 0, {"accuracy": 2 / 3, "tp": 2.0}),
        (("zip", "b"),): (1, 1, {"accuracy": 1.0, "tp": 0.0}),
    }
    for engine in ALL:
        assert _slices(engines.run(engine, _ev(on_invalid="skip"), str(text_score))) == want, engine


# -- header-only files, missing columns -------------------------------------------------------------
@pytest.mark.beam
@pytest.mark.spark
def test_header_only_csv_gives_n_0_on_every_engine(tmp_path):
    d = _write(tmp_path / "empty", "a.csv", "y,s,zip\n")
    for engine in ALL:
        res = engines.run(engine, _ev(metrics=["tp", "example_count"]), str(d))
        assert _slices(res) == {(): (0, 0, {"tp": 0.0, "example_count": 0})}, engine


@pytest.mark.parametrize("engine", ENGINES)
def test_slice_column_missing_from_one_file_is_an_error_naming_the_file(tmp_path, engine):
    d = tmp_path / "missing"
    _write(d, "a.csv", "y,s,zip\n1,0.9,a\n")
    _write(d, "b.csv", "y,s\n0,0.2\n")
    with pytest.raises(ValueError, match=r"column\(s\) \['zip'\] not found in '.*b\.csv'"):
        engines.run(engine, _ev(), str(d))


@pytest.mark.parametrize("engine", ENGINES)
def test_parquet_slice_column_missing_from_one_file_is_an_error_naming_the_file(tmp_path, engine):
    d = tmp_path / "pq_missing"
    d.mkdir()
    pq.write_table(pa.table({"y": [1, 0], "s": [0.9, 0.2], "zip": ["a", "b"]}), d / "a.parquet")
    pq.write_table(pa.table({"y": [1], "s": [0.4]}), d / "b.parquet")
    with pytest.raises(ValueError, match=r"column\(s\) \['zip'\] not found in '.*b\.parquet'"):
        engines.run(engine, _ev(), str(d))


# -- Parquet files of different types ---------------------------------------------------------------
@pytest.mark.beam
@pytest.mark.spark
def test_parquet_files_of_different_types_are_read_as_their_common_type_on_every_engine(tmp_path):
    d = tmp_path / "pq_mixed"
    d.mkdir()
    pq.write_table(pa.table({"y": pa.array([1, 0, 1], pa.int32()), "s": [0.9, 0.2, 0.4], "zip": ["a", "b", "a"]}), d / "a.parquet")
    pq.write_table(
        pa.table({"y": pa.array([0.0, 1.0]), "s": pa.array([0.75, 0.5], pa.float32()), "zip": pa.array(["b", "a"]).dictionary_encode()}),
        d / "b.parquet",
    )
    # by hand: a -> (1,.9) right, (1,.4) wrong, (1,.5) right; b -> (0,.2) right, (0,.75) wrong
    want = {
        (): (5, 0, {"accuracy": 0.6, "tp": 2.0}),
        (("zip", "a"),): (3, 0, {"accuracy": 2 / 3, "tp": 2.0}),
        (("zip", "b"),): (2, 0, {"accuracy": 0.5, "tp": 0.0}),
    }
    for engine in ALL:
        assert _slices(engines.run(engine, _ev(), str(d))) == want, engine


def test_parquet_files_with_incompatible_types_are_an_error_naming_both_files(tmp_path):
    d = tmp_path / "pq_clash"
    d.mkdir()
    pq.write_table(pa.table({"y": [1], "s": [0.9], "zip": [2139]}), d / "a.parquet")
    pq.write_table(pa.table({"y": [0], "s": [0.2], "zip": ["02139"]}), d / "b.parquet")
    with pytest.raises(ValueError, match=r"column 'zip' has type int64 in '.*a\.parquet' but string in '.*b\.parquet'"):
        io.input_schema(str(d), None, ["y", "s", "zip"], ["y", "s"])


@pytest.mark.beam
@pytest.mark.spark
def test_csv_quoted_values_are_the_same_slice_keys_on_every_engine(tmp_path):
    d = _write(tmp_path / "quoted", "a.csv", 'y,s,zip\n1,0.9,"a ""quoted"" b"\n0,0.2,"x,y"\n1,0.8,""\n')
    want = {
        (): (3, 0, {"accuracy": 1.0, "tp": 2.0}),
        (("zip", 'a "quoted" b'),): (1, 0, {"accuracy": 1.0, "tp": 1.0}),
        (("zip", "x,y"),): (1, 0, {"accuracy": 1.0, "tp": 0.0}),
        (("zip", None),): (1, 0, {"accuracy": 1.0, "tp": 1.0}),  # an empty quoted value is null, as Spark reads it
    }
    for engine in ALL:
        assert _slices(engines.run(engine, _ev(), str(d))) == want, engine
