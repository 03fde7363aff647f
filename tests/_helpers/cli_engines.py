"""Run the ``mergeable_metrics.pipelines.evaluate`` CLI on every engine over one table split into Parquet files."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Sequence


def metrics_json_per_engine(
    tmp_path: Path, table, args: Sequence[str], batches: Sequence[tuple[str, int]], rows_per_file: int = 1000, row_group_size: int = 300
) -> dict[str, bytes]:
    """``{engine: metrics.json bytes}`` of ``main(args + input/engine/output options)`` for each
    ``(engine, batch size)`` of ``batches``, on ``table`` written as Parquet files of
    ``rows_per_file`` rows (several Beam bundles / Spark partitions) under ``tmp_path / "input"``."""
    import pyarrow.parquet as pq

    from mergeable_metrics.pipelines.evaluate import main

    src = tmp_path / "input"
    src.mkdir()
    for i, start in enumerate(range(0, table.num_rows, rows_per_file)):
        pq.write_table(table.slice(start, rows_per_file), src / f"part-{i}.parquet", row_group_size=row_group_size)
    docs = {}
    for engine, batch in batches:
        out = tmp_path / engine
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            code = main([*args, "--input", str(src), "--engine", engine, "--batch-size", str(batch), "--output", str(out), "--quiet", "--no-report"])
        assert code == 0, engine
        docs[engine] = (out / "metrics.json").read_bytes()
    return docs
