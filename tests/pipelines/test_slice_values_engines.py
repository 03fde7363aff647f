"""Slice values of every supported type through the CLI on every engine: the same metrics.json
and metrics.parquet bytes on local, Beam and Spark (issue 11, items 1, 2, 8, 11, 12)."""

from __future__ import annotations

import datetime
import decimal
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mergeable_metrics.pipelines.evaluate import main
from tests._helpers.slice_kinds import reference, sorted_rows

pytest.importorskip("apache_beam")
pytest.importorskip("pyspark")

ENGINES = ("local", "beam", "spark")


def _typed_table() -> pa.Table:
    n = 12
    return pa.table(
        {
            "y": pa.array([i % 2 for i in range(n)], pa.int64()),
            "s": pa.array([(i * 7 % 10) / 10 for i in range(n)], pa.float64()),
            "f": pa.array([-0.0, 0.0, float("inf"), float("-inf"), float("nan"), None, 1.5, 2.0, -0.0, 0.25, 1e300, 0.0], pa.float64()),
            "d": pa.array([decimal.Decimal(v) if v else None for v in ["1.50", "-0.00", "0.00", None, "12.25", "1.50"] * 2], pa.decimal128(10, 2)),
            "t": pa.array([datetime.datetime(2020, 1, 1, 12, 30, 0, 500000 * (i % 2)) for i in range(n)], pa.timestamp("us")),
            "dt": pa.array([datetime.date(2020, 1, 1 + i % 3) for i in range(n)], pa.date32()),
            "b": pa.array([b"caf\xc3\xa9", b"ab", None] * 4, pa.binary()),
            "txt": pa.array(["a", "a\x00", "a\x00\x00", None] * 3, pa.string()),
            "id": pa.array([2**53, 2**53 + 1, 2**63 - 1, None] * 3, pa.int64()),
            "flag": pa.array([True, False, None] * 4, pa.bool_()),
            "key": pa.array([2**53, 2**53 + 1, 2**53 + 2, 2**53 + 3] * 3, pa.int64()),
        }
    )


def _cli(path, out, engine, *args):
    base = ["--input", str(path), "--label", "y", "--metrics", "tp,fp,tn,fn", "--engine", engine, "--output", str(out), "--quiet"]
    assert main([*base, *args]) == 0
    doc = json.loads((out / "metrics.json").read_text())
    doc.pop("engine", None)
    keys = pq.read_table(out / "metrics.parquet").column("slice").to_pylist()
    # the parquet's slice column is metrics.json's "slice" as JSON text, slice by slice
    assert [json.loads(k) for k in dict.fromkeys(keys)] == [s["slice"] for s in doc["slices"]]
    return doc, keys


@pytest.mark.spark
def test_slice_values_of_every_type_write_the_same_json_and_parquet_on_every_engine(tmp_path):
    path = tmp_path / "typed.parquet"
    pq.write_table(_typed_table(), path, row_group_size=5)
    slices = ["f", "d", "t", "dt", "b", "txt", "id", "flag", "key=9007199254740993"]
    got = {}
    for engine in ENGINES:
        args = ["--score", "s", "--batch-size", "4"] + [a for s in slices for a in ("--slice", s)]
        got[engine] = _cli(path, tmp_path / engine, engine, *args)
    assert got["local"] == got["beam"] == got["spark"]
    doc, _ = got["local"]
    by_spec = {}
    for s in doc["slices"][1:]:
        ((col, value),) = s["slice"].items() if len(s["slice"]) == 1 else [(None, None)]
        by_spec.setdefault(col, {})[json.dumps(value)] = s["n"]
    assert by_spec["f"] == {"0": 4, "0.25": 1, "1.5": 1, "2": 1, "1e+300": 1, '"-inf"': 1, '"inf"': 1, "null": 2}
    assert by_spec["d"] == {'"0.00"': 4, '"1.50"': 4, '"12.25"': 2, "null": 2}
    assert by_spec["t"] == {'"2020-01-01T12:30:00"': 6, '"2020-01-01T12:30:00.500000"': 6}
    assert by_spec["dt"] == {'"2020-01-01"': 4, '"2020-01-02"': 4, '"2020-01-03"': 4}
    assert by_spec["b"] == {'"ab"': 4, '"caf\\u00e9"': 4, "null": 4}
    assert by_spec["txt"] == {'"a"': 3, '"a\\u0000"': 3, '"a\\u0000\\u0000"': 3, "null": 3}
    assert by_spec["flag"] == {"true": 4, "false": 4, "null": 4}
    assert by_spec["key"] == {"9007199254740993": 3}
    assert by_spec["id"] == {"9007199254740992": 3, "9007199254740993": 3, "9223372036854775807": 3, "null": 3}


@pytest.mark.spark
def test_every_spec_kind_on_a_sorted_file_with_small_batches_on_every_engine(tmp_path):
    df = sorted_rows()
    path = tmp_path / "sorted.parquet"
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), path, row_group_size=8)
    specs = ["origin=JFK|LGA,carrier", "distance:edges=500|1000", "air_time:quantiles=3", "tags", "carrier;max_slices=2", "origin=LGA,tags"]
    want = {k: v for k, v in reference(df).items() if not k or str([c for c, _ in k]) not in ("['origin']", "['carrier', 'origin']")}
    docs = {}
    for engine in ENGINES:
        args = ["--score", "score", "--batch-size", "3"] + [a for s in specs for a in ("--slice", s)]
        docs[engine], _ = _cli(path, tmp_path / engine, engine, *args)
        got = {tuple(s["slice"].items()): (s["n"], int(s["metrics"]["tp"])) for s in docs[engine]["slices"]}
        assert got == want, engine
    assert docs["local"] == docs["beam"] == docs["spark"]
