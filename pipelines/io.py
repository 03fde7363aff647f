"""Reading inputs and writing results with pyarrow.

Inputs are Parquet, CSV or JSON Lines files (or directories of them), read as a stream of Arrow
record batches so memory stays flat for inputs larger than RAM. Outputs are ``metrics.json``
(engine-independent), ``metrics.parquet`` (long format) and ``run.json`` (engine, timing).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterator, Sequence

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".jsonl": "json", ".json": "json", ".ndjson": "json"}

RESULT_SCHEMA = pa.schema(
    [
        ("slice", pa.string()),
        ("slice_key", pa.string()),
        ("n", pa.int64()),
        ("weight", pa.float64()),
        ("skipped", pa.int64()),
        ("metric", pa.string()),
        ("index", pa.string()),
        ("value", pa.float64()),
        ("lower", pa.float64()),
        ("upper", pa.float64()),
    ]
)


def detect_format(path: str | os.PathLike, fmt: str | None = None) -> str:
    """``parquet``, ``csv`` or ``json`` (JSON Lines) from ``fmt`` or the file extension.

    For a directory, the extension of its first data file decides.

    Raises:
        ValueError: the format cannot be told or is not supported.
        FileNotFoundError: the path does not exist.
    """
    if fmt:
        fmt = {"jsonl": "json", "ndjson": "json"}.get(fmt, fmt)
        if fmt not in ("parquet", "csv", "json"):
            raise ValueError(f"--format must be parquet, csv or jsonl, got {fmt!r}")
        return fmt
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"input {str(p)!r} does not exist")
    if p.is_dir():
        files = sorted(f for f in p.rglob("*") if f.is_file() and f.suffix.lower() in FORMATS)
        if not files:
            raise ValueError(f"no .parquet, .csv or .jsonl files in directory {str(p)!r}")
        p = files[0]
    try:
        return FORMATS[p.suffix.lower()]
    except KeyError:
        raise ValueError(f"cannot tell the format of {str(p)!r}; use --format parquet|csv|jsonl") from None


def dataset(path: str | os.PathLike, fmt: str | None = None) -> ds.Dataset:
    """A pyarrow dataset over a file or directory (Parquet, CSV with header, JSON Lines)."""
    return ds.dataset(str(path), format=detect_format(path, fmt))


def check_columns(data: ds.Dataset, columns: Sequence[str], path: Any) -> None:
    """Raise ``ValueError`` naming any missing column and listing the available ones."""
    missing = [c for c in columns if c not in data.schema.names]
    if missing:
        raise ValueError(f"column(s) {missing} not found in {str(path)!r}; available columns: {data.schema.names}")


def iter_batches(path: str | os.PathLike, columns: Sequence[str], fmt: str | None = None, batch_size: int = 65536) -> Iterator[pa.RecordBatch]:
    """Stream record batches of only ``columns`` (in file order).

    Parquet is read without pre-buffering and with a read-ahead of one batch and one file, so
    peak memory stays flat however large the input (measured in BENCHMARKS.md).
    """
    fmt = detect_format(path, fmt)
    data = dataset(path, fmt)
    check_columns(data, columns, path)
    if fmt == "parquet":  # file by file, row group by row group: flat memory
        for file in data.files:
            with pq.ParquetFile(file, pre_buffer=False) as f:
                yield from f.iter_batches(batch_size=batch_size, columns=list(columns))
        return
    yield from data.to_batches(columns=list(columns), batch_size=batch_size, batch_readahead=1, fragment_readahead=1)


def list_files(path: str | os.PathLike, fmt: str | None = None) -> list[str]:
    """The data files behind ``path`` (one file, or every file of a directory dataset)."""
    return list(dataset(path, fmt).files)


def write_results(results: Any, out_dir: str | os.PathLike, extra: dict[str, Any] | None = None) -> dict[str, str]:
    """Write ``metrics.json`` (with ``extra`` keys merged in) and long-format ``metrics.parquet``.

    Returns:
        ``{"json": path, "parquet": path}``.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    doc = results.to_dict()
    if extra:
        doc.update(extra)
    json_path = out / "metrics.json"
    json_path.write_text(json.dumps(doc, indent=2, allow_nan=False) + "\n")
    rows = results.to_rows()
    table = pa.Table.from_pylist(rows, schema=RESULT_SCHEMA)
    pq_path = out / "metrics.parquet"
    pq.write_table(table, pq_path)
    return {"json": str(json_path), "parquet": str(pq_path)}
