"""Run evaluations over one Parquet file in one DirectRunner pipeline and collect their results."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def beam_parquet_results(tmp_path: Path, table: Any, evaluations: dict[str, Any], row_group_size: int) -> dict[str, Any]:
    """``{name: Results}`` of each ``mergeable_metrics.Evaluation`` run by ``mergeable_metrics.beam.ComputeMetrics`` over
    ``table`` written as one Parquet file of ``row_group_size``-row groups (one read, one branch
    per evaluation), its slice results written as JSON lines and collected by the evaluation."""
    import apache_beam as beam
    import pyarrow.parquet as pq

    from mergeable_metrics.beam import ComputeMetrics, slice_result_from_json, slice_result_to_json

    pq.write_table(table, tmp_path / "part.parquet", row_group_size=row_group_size)
    with beam.Pipeline(runner="DirectRunner") as p:
        batches = p | beam.io.ReadFromParquetBatched(str(tmp_path / "part.parquet"))
        for name, ev in evaluations.items():
            (
                batches
                | f"Metrics {name}" >> ComputeMetrics(ev)
                | f"Json {name}" >> beam.Map(slice_result_to_json)
                | f"Write {name}" >> beam.io.WriteToText(str(tmp_path / name), file_name_suffix=".jsonl")
            )

    def collect(name: str, ev: Any) -> Any:
        lines = [ln for f in sorted(tmp_path.glob(f"{name}*.jsonl")) for ln in f.read_text().splitlines() if ln.strip()]
        return ev.collect(slices=[slice_result_from_json(ln) for ln in lines])

    return {name: collect(name, ev) for name, ev in evaluations.items()}
