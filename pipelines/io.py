"""Reading inputs and writing results with pyarrow.

Inputs are Parquet, CSV or JSON Lines files (or directories of them), read as a stream of Arrow
record batches so memory stays flat for inputs larger than RAM. Outputs are ``metrics.json``
(engine-independent), ``metrics.parquet`` (long format) and ``run.json`` (engine, timing).

**One schema per input, the same on every engine** (:func:`input_schema`). Every file must hold
every column the evaluation reads (a missing column is an error naming the file, on every
engine). Parquet files whose types differ are read as their common type (``int32`` and
``int64`` as ``int64``, ints and floats as ``float64``; incompatible types, such as ints in one
file and strings in another, are an error naming both files). CSV types are inferred from the
text of the *whole* input (not file by file, nor from a first block), with these rules:

* an empty cell (also a quoted empty ``""``) is null, as Spark reads it;
* a column whose every value is an integer (``-?[0-9]+``, within int64) is ``int64`` (so
  ``02139`` is the int 2139 everywhere, unless another value anywhere in the input makes the
  column text, and then it is the string ``'02139'`` everywhere);
* otherwise, if every value is a number (decimal or exponent notation, ``inf``, ``nan``), ``float64``;
* otherwise, if every value is ``true`` or ``false`` (any case), ``bool``;
* otherwise the text is kept as strings (dates and timestamps too, so slice values print the
  same on every engine);
* a column without any value (e.g. a header-only file) is ``float64`` when it is a value
  column (labels, scores, weights ...) and ``string`` when it is only sliced by.

A value column that holds text which is not a number is an error naming the first such value and
its row (rows counted from 0 over the input's files in order, as the local engine does); with
``--skip-invalid`` those rows are skipped and counted instead (the text is read as null).
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.dataset as ds
import pyarrow.parquet as pq

FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".jsonl": "json", ".json": "json", ".ndjson": "json"}

RESULT_SCHEMA = pa.schema(
    [
        ("slice", pa.string()),
        ("n", pa.int64()),
        ("weight", pa.float64()),
        ("skipped", pa.int64()),
        ("metric", pa.string()),
        ("index", pa.string()),
        ("value", pa.float64()),
        ("lower", pa.float64()),
        ("upper", pa.float64()),
        ("ci_lower", pa.float64()),
        ("ci_upper", pa.float64()),
    ]
)
#: the columns :data:`RESULT_SCHEMA` gets with a baseline model (``mergeable_metrics.results.results.COMPARISON_COLUMNS``)
COMPARISON_SCHEMA = pa.schema(
    [
        ("baseline_value", pa.float64()),
        ("delta", pa.float64()),
        ("delta_lower", pa.float64()),
        ("delta_upper", pa.float64()),
        ("verdict", pa.string()),
        ("comparison_reason", pa.string()),
    ]
)
#: :data:`RESULT_SCHEMA` of windowed results: ``window_start`` / ``window_end`` after ``slice``
WINDOWED_RESULT_SCHEMA = pa.schema(
    [*list(RESULT_SCHEMA)[:1], ("window_start", pa.timestamp("us", tz="UTC")), ("window_end", pa.timestamp("us", tz="UTC")), *list(RESULT_SCHEMA)[1:]]
)


class InputError(ValueError):
    """The input does not fit the job: a file or column that is missing, a format that cannot be
    told, a file that cannot be read, or files that give a column incompatible types.

    A usage error (the CLI exits with code 2), unlike an invalid value in a column (a plain
    ``ValueError`` / ``TypeError`` from ``core``: a data error, exit code 1).
    """


def detect_format(path: str | os.PathLike, fmt: str | None = None) -> str:
    """``parquet``, ``csv`` or ``json`` (JSON Lines) from ``fmt`` or the file extension.

    For a directory, the extension of its first data file decides.

    Raises:
        InputError: the format cannot be told or is not supported.
        FileNotFoundError: the path does not exist.
    """
    if fmt:
        fmt = {"jsonl": "json", "ndjson": "json"}.get(fmt, fmt)
        if fmt not in ("parquet", "csv", "json"):
            raise InputError(f"--format must be parquet, csv or jsonl, got {fmt!r}")
        return fmt
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"input {str(p)!r} does not exist")
    if p.is_dir():
        files = sorted(f for f in p.rglob("*") if f.is_file() and f.suffix.lower() in FORMATS)
        if not files:
            raise InputError(f"no .parquet, .csv or .jsonl files in directory {str(p)!r}")
        p = files[0]
    try:
        return FORMATS[p.suffix.lower()]
    except KeyError:
        raise InputError(f"cannot tell the format of {str(p)!r}; use --format parquet|csv|jsonl") from None


def dataset(path: str | os.PathLike, fmt: str | None = None) -> ds.Dataset:
    """A pyarrow dataset over a file or directory (Parquet, CSV with header, JSON Lines).

    A JSON Lines file without any record (empty, or only blank lines) has no rows and no
    columns: it is left out, and an input of only such files is a dataset of no files and no
    rows (``n=0``, like an empty Parquet or a header-only CSV file).

    Raises:
        InputError: a file cannot be read in the format (e.g. not a Parquet file).
    """
    fmt = detect_format(path, fmt)
    try:
        if fmt != "json":
            return ds.dataset(str(path), format=fmt)
        files = [f for f in ds.dataset(str(path), format="json", schema=pa.schema([])).files if _has_records(f)]
        return ds.dataset(files, format="json") if files else ds.dataset([], format="json", schema=pa.schema([]))
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as e:
        raise InputError(f"cannot read {str(path)!r} as {fmt}: {_first_line(e)}") from e


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


def _has_records(file: str) -> bool:
    """Whether a JSON Lines file holds anything but whitespace."""
    with open(file, "rb") as fh:
        while chunk := fh.read(1 << 16):
            if chunk.strip():
                return True
    return False


def has_no_records(data: ds.Dataset) -> bool:
    """A JSON Lines input of no records (see :func:`dataset`): every column is read as null."""
    return isinstance(data.format, ds.JsonFileFormat) and not data.files


def check_columns(data: ds.Dataset, columns: Sequence[str], path: Any) -> None:
    """Raise :class:`InputError` naming any missing column and listing the available ones (a JSON
    Lines input of no records holds every column, with no rows)."""
    if has_no_records(data):
        return
    missing = [c for c in columns if c not in data.schema.names]
    if missing:
        raise InputError(f"column(s) {missing} not found in {str(path)!r}; available columns: {data.schema.names}")


#: Text that is an int64 literal / a number / a boolean (case-insensitive), for CSV columns. The
#: same patterns decide the types on every engine (Spark's ``rlike`` reads them too).
INT_PATTERN = r"^-?[0-9]+$"
NUMBER_PATTERN = r"^[+-]?([0-9]+[.]?[0-9]*|[.][0-9]+)(e[+-]?[0-9]+)?$|^[+-]?(inf|infinity|nan)$"
BOOL_PATTERN = r"^(true|false)$"

_CSV_CONVERT = dict(strings_can_be_null=True, null_values=[""], quoted_strings_can_be_null=True)  # as Spark reads CSV


@dataclass(frozen=True)
class InputSchema:
    """The types every engine reads an input's columns as (:func:`input_schema`).

    Attributes:
        fmt: ``parquet``, ``csv`` or ``json``.
        files: the data files, in reading order.
        types: column -> Arrow type of the whole input (``None`` for JSON: as read).
        text_values: value columns holding text that is not a number -> ``(value, row)`` of the
            first such value (CSV only; read as null when invalid rows are skipped).
        file_types: for Parquet inputs whose files differ, file -> its own types.
    """

    fmt: str
    files: tuple[str, ...]
    types: dict[str, pa.DataType] | None
    text_values: dict[str, tuple[str, int]] = field(default_factory=dict)
    file_types: dict[str, dict[str, pa.DataType]] = field(default_factory=dict)
    text_seen: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def check_text_values(self, label_columns: Sequence[str] = ()) -> None:
        """Raise ``TypeError`` for the first value column holding text that is not a number
        (naming the column, the value and its row). In a column of class labels (``label_columns``)
        text is class names: the message names ``classes=`` / ``--classes`` with the values seen.
        """
        if self.text_values:
            col, (value, row) = min(self.text_values.items(), key=lambda kv: kv[1][1])
            if col in label_columns:
                from mergeable_metrics.engine import classes_hint  # noqa: PLC0415 - only for this message

                hint = classes_hint(list(self.text_seen.get(col, (value,))), "labels" if col == label_columns[0] else "predictions")
            else:
                hint = "fix the value, or skip such rows with --skip-invalid / on_invalid='skip'"
            raise TypeError(f"column {col!r}: value {value!r} at row {row} is not a number (the column is read as text because of it); {hint}")


def csv_header(file: str) -> list[str]:
    """The column names of a CSV file (its first line)."""
    with open(file, newline="", encoding="utf-8-sig") as fh:
        return next(csv.reader(fh), [])


def _csv_strings(file: str, columns: Sequence[str], batch_size: int = 65536) -> Iterator[pa.RecordBatch]:
    """The ``columns`` of one CSV file as strings (nulls for empty cells), batch by batch."""
    header = csv_header(file)
    missing = [c for c in columns if c not in header]
    if missing:
        raise InputError(f"column(s) {missing} not found in {file!r}; available columns: {header}")
    convert = pacsv.ConvertOptions(include_columns=list(columns), column_types={c: pa.string() for c in columns}, **_CSV_CONVERT)
    try:
        with pacsv.open_csv(file, convert_options=convert) as reader:  # streaming, block by block
            for batch in reader:
                for start in range(0, batch.num_rows, batch_size):
                    yield batch.slice(start, batch_size).select(list(columns))
    except pa.ArrowInvalid as e:  # a malformed row (e.g. too many fields)
        raise InputError(f"cannot read {file!r} as CSV: {_first_line(e)}") from e


def _text_kind(arr: pa.Array) -> str:
    """The narrowest of ``null``, ``int``, ``float``, ``bool``, ``string`` that holds every value."""
    values = arr.drop_null()
    if len(values) == 0:
        return "null"
    if pc.all(pc.match_substring_regex(values, INT_PATTERN)).as_py():
        try:
            pc.cast(values, pa.int64())
            return "int"
        except (pa.ArrowInvalid, OverflowError):
            return "float"  # beyond int64
    if pc.all(pc.match_substring_regex(values, NUMBER_PATTERN, ignore_case=True)).as_py():
        return "float"
    if pc.all(pc.match_substring_regex(values, BOOL_PATTERN, ignore_case=True)).as_py():
        return "bool"
    return "string"


def _join_kinds(a: str, b: str) -> str:
    if a == b or b == "null":
        return a
    if a == "null":
        return b
    return "float" if {a, b} == {"int", "float"} else "string"


_KIND_TYPES = {"int": pa.int64(), "float": pa.float64(), "bool": pa.bool_(), "string": pa.string()}


def input_schema(path: str | os.PathLike, fmt: str | None, columns: Sequence[str], value_columns: Sequence[str] = ()) -> InputSchema:
    """The types of ``columns`` over the whole input (see the module docstring for the rules).

    CSV inputs are read once, as text, to infer them. Parquet needs only the files' footers.

    Raises:
        InputError: a column is missing from a file (naming both), a file cannot be read, or
            Parquet files give a column incompatible types (naming both files).
    """
    fmt = detect_format(path, fmt)
    data = dataset(path, fmt)
    check_columns(data, columns, path)
    files = tuple(data.files)
    columns = list(dict.fromkeys(columns))
    values = set(value_columns)
    if fmt == "json":
        if not files:  # no records: the types of a header-only CSV file
            return InputSchema(fmt, files, {c: pa.float64() if c in values else pa.string() for c in columns})
        return InputSchema(fmt, files, None)
    if fmt == "parquet":
        per_file = {}
        for f in files:
            try:
                schema = pq.read_schema(f)
            except (pa.ArrowInvalid, OSError) as e:
                raise InputError(f"cannot read {f!r} as parquet: {_first_line(e)}") from e
            missing = [c for c in columns if c not in schema.names]
            if missing:
                raise InputError(f"column(s) {missing} not found in {f!r}; available columns: {schema.names}")
            per_file[f] = {c: _plain_type(schema.field(c).type) for c in columns}
        types: dict[str, pa.DataType] = {}
        for c in columns:
            t = per_file[files[0]][c] if files else pa.null()
            for f in files[1:]:
                t2 = per_file[f][c]
                if t2 == t:
                    continue
                try:
                    t = pa.unify_schemas([pa.schema([(c, t)]), pa.schema([(c, t2)])], promote_options="permissive").field(c).type
                except (pa.ArrowTypeError, pa.ArrowInvalid):
                    first = next(g for g in files if per_file[g][c] != t2)
                    raise InputError(f"column {c!r} has type {per_file[first][c]} in {first!r} but {t2} in {f!r}; give it one type in every file") from None
            types[c] = t
        differ = {f: t for f, t in per_file.items() if t != types}
        return InputSchema(fmt, files, types, file_types=differ)
    kinds = dict.fromkeys(columns, "null")
    text: dict[str, tuple[str, int]] = {}
    seen: dict[str, tuple[str, ...]] = {}
    row = 0
    for f in files:
        for batch in _csv_strings(f, columns):
            for c in columns:
                arr = batch.column(c)
                kinds[c] = _join_kinds(kinds[c], _text_kind(arr))
                if c in values and c not in text and kinds[c] in ("bool", "string"):
                    ok = pc.fill_null(pc.match_substring_regex(arr, NUMBER_PATTERN, ignore_case=True), True)
                    if not pc.all(ok).as_py():
                        i = int(pc.index(ok, False).as_py())
                        text[c] = (arr[i].as_py(), row + i)
                        seen[c] = tuple(pc.unique(arr.filter(pc.invert(ok))).to_pylist())  # this batch's: for the classes hint
            row += batch.num_rows
    types = {}
    for c in columns:
        kind = kinds[c]
        if kind == "null":
            kind = "float" if c in values else "string"
        elif c in values and kind == "bool":
            text.pop(c, None)  # true/false labels are numbers (booleans) for core
        types[c] = _KIND_TYPES[kind]
    return InputSchema(fmt, files, types, {c: v for c, v in text.items() if types[c] == pa.string()}, text_seen=seen)


def _plain_type(t: pa.DataType) -> pa.DataType:
    """A Parquet column's type without dictionary encoding."""
    return t.value_type if pa.types.is_dictionary(t) else t


def conform(batch: Any, schema: InputSchema | None) -> Any:
    """A record batch (or table) of one file with the input's types (``schema.types``): CSV text
    converted (value columns' non-number text as null), Parquet columns cast to the common type."""
    if schema is None or schema.types is None:
        return batch
    arrays, changed = [], False
    for name, arr in zip(batch.schema.names, batch.columns):
        want = schema.types.get(name)
        if schema.fmt == "csv" and name in schema.text_values:  # skip mode: non-numbers become null
            ok = pc.match_substring_regex(arr, NUMBER_PATTERN, ignore_case=True)
            arr, want = pc.if_else(ok, arr, pa.scalar(None, pa.string())), pa.float64()
        elif want is None or arr.type == want:
            arrays.append(arr)
            continue
        arrays.append(pc.cast(arr, want))
        changed = True
    return type(batch).from_arrays(arrays, names=batch.schema.names) if changed else batch


def iter_batches(
    path: str | os.PathLike, columns: Sequence[str], fmt: str | None = None, batch_size: int = 65536, schema: InputSchema | None = None
) -> Iterator[pa.RecordBatch]:
    """Stream record batches of only ``columns`` (in file order), with the input's types when
    ``schema`` (:func:`input_schema`) is given.

    Parquet is read without pre-buffering and with a read-ahead of one batch and one file, so
    peak memory stays flat however large the input (measured in BENCHMARKS.md).
    """
    fmt = detect_format(path, fmt)
    data = dataset(path, fmt)
    check_columns(data, columns, path)
    if fmt == "parquet":  # file by file, row group by row group: flat memory
        for file in data.files:
            with pq.ParquetFile(file, pre_buffer=False) as f:
                for batch in f.iter_batches(batch_size=batch_size, columns=list(columns)):
                    yield conform(batch, schema)
        return
    if fmt == "csv" and schema is not None:
        for file in data.files:
            for batch in _csv_strings(file, columns, batch_size):
                yield conform(batch, schema)
        return
    yield from data.to_batches(columns=list(columns), batch_size=batch_size, batch_readahead=1, fragment_readahead=1)


def list_files(path: str | os.PathLike, fmt: str | None = None) -> list[str]:
    """The data files behind ``path`` (one file, or every file of a directory dataset)."""
    return list(dataset(path, fmt).files)


def write_results(results: Any, out_dir: str | os.PathLike, extra: dict[str, Any] | None = None, hook: Any = None) -> dict[str, str]:
    """Write ``metrics.json`` (with ``extra`` keys merged in, then ``hook(doc)`` if given, e.g.
    the late-label join's counts) and long-format ``metrics.parquet``.

    Returns:
        ``{"json": path, "parquet": path}``.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    doc = results.to_dict()
    if extra:
        doc.update(extra)
    if hook is not None:
        doc = hook(doc)
    json_path = out / "metrics.json"
    json_path.write_text(json.dumps(doc, indent=2, allow_nan=False) + "\n")
    rows = results.to_rows()
    compared = any(s.comparison or s.baseline_metrics for s in results.slices)
    schema = WINDOWED_RESULT_SCHEMA if getattr(results, "windows", None) else RESULT_SCHEMA
    table = pa.Table.from_pylist(rows, schema=pa.unify_schemas([schema, COMPARISON_SCHEMA]) if compared else schema)
    pq_path = out / "metrics.parquet"
    pq.write_table(table, pq_path)
    return {"json": str(json_path), "parquet": str(pq_path)}
