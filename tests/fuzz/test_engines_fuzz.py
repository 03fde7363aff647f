"""Fuzz: Beam ``ComputeMetrics`` (DirectRunner) and Spark ``compute_metrics`` on hostile tables.

Each generated table (``tests._helpers.strategies.table_cases``: NaN/inf/null/out-of-range labels
and scores, negative/NaN/inf weights, odd slice values and column names) runs on the engine,
split into parts and partitions (some empty). The result equals the oracle's (scikit-learn per
slice, rows in == n + skipped with ``on_invalid="skip"``), or the engine's error carries core's
message naming the column and the value. Few examples under the "ci" profile (each is a
pipeline or a Spark job), 100 under ``HYPOTHESIS_PROFILE=fuzz``.
"""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests._helpers.strategies import arrow_table, table_cases
from tests.fuzz.budget import budget
from tests.fuzz.oracle import engine_error_problem, evaluation_of, expect, run, table_batches, table_problems


def check_engine(case: dict, result: Any, exc: BaseException | None) -> None:
    ex = expect(table_batches(case), case["k"])
    if case["on_invalid"] == "raise" and ex.error is not None:
        assert exc is not None, f"no error, expected one naming {ex.error}"
        # bundles and partitions run in any order: any bad cell of a named column may be the one reported
        cells = {name: cells for name, (_, cells) in table_batches(case)[0].items()}
        bad = {
            name: [(etype, None, v) for v, c in zip(cells[name], ex.kinds[0]) if c != "ok"] or [(etype, None, value)]
            for name, (etype, _, value) in ex.error.items()
        }
        why = engine_error_problem(exc, bad)
        assert why is None, why
        return
    assert exc is None, f"unexpected {type(exc).__name__}: {exc}"
    why = table_problems(case, result)
    assert why is None, why


# -- Beam ------------------------------------------------------------------------------------------
@given(case=table_cases(), cuts=st.lists(st.integers(0, 30), max_size=3), as_batches=st.booleans())
@budget("beam")
def test_beam_compute_metrics_on_hostile_tables_equals_sklearn_or_names_the_bad_value(case: dict, cuts: list, as_batches: bool) -> None:
    beam = pytest.importorskip("apache_beam")
    from apache_beam.options.pipeline_options import PipelineOptions

    from mergeable_metrics.beam import ComputeMetrics, slice_result_from_json, slice_result_to_json

    table = arrow_table(case)
    bounds = [0, *sorted(min(c, case["n"]) for c in cuts), case["n"]]
    parts = [table.slice(a, b - a) for a, b in zip(bounds, bounds[1:])]
    elements = [[p.to_batches()[0]] if p.num_rows and p.to_batches() else [] for p in parts] if as_batches else [p.to_pylist() for p in parts]
    ev = evaluation_of(case)

    def go() -> Any:
        with tempfile.TemporaryDirectory() as tmp:
            prefix = str(Path(tmp) / "slices")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with beam.Pipeline(runner="DirectRunner", options=PipelineOptions()) as p:
                    pcolls = [p | f"Create{i}" >> beam.Create(part) for i, part in enumerate(elements)]
                    _ = (
                        pcolls | beam.Flatten() | ComputeMetrics(ev, batch_size=7)
                        | beam.Map(slice_result_to_json) | beam.io.WriteToText(prefix)
                    )  # fmt: skip
            lines = [ln for f in sorted(Path(tmp).glob("slices*")) for ln in f.read_text().splitlines() if ln]
        return ev.collect(slices=[slice_result_from_json(ln) for ln in lines])

    result, exc = run(go)
    check_engine(case, result, exc)


# -- Spark -----------------------------------------------------------------------------------------
@given(case=table_cases(), partitions=st.integers(1, 5), native=st.sampled_from([None, False]))
@budget("spark")
def test_spark_compute_metrics_on_hostile_tables_equals_sklearn_or_names_the_bad_value(spark: Any, case: dict, partitions: int, native: Any) -> None:
    from mergeable_metrics.spark import collect_results, compute_metrics

    table = arrow_table(case)
    df = spark.createDataFrame(table.to_pylist(), schema=_spark_schema(case)).repartition(partitions)
    ev = evaluation_of(case)

    def go() -> Any:
        return collect_results(compute_metrics(df, evaluation=ev, native=native), ev)

    result, exc = run(go)
    check_engine(case, result, exc)


def _spark_schema(case: dict) -> Any:
    from pyspark.sql import types as T

    kinds = {"int64": T.LongType(), "double": T.DoubleType(), "string": T.StringType(), "bool": T.BooleanType()}
    return T.StructType([T.StructField(name, kinds[t], True) for name, (_, _, t) in case["columns"].items()])
