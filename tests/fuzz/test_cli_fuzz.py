"""Fuzz: the CLI (``python -m mergeable_metrics.pipelines.evaluate``'s ``main()``, in-process) on CSV, Parquet and
JSON Lines files written with pyarrow, from the hostile tables of ``table_cases``: empty and
header-only files, one file or a directory of two (possibly of different schemas), odd column
names and slice values. Each run ends with exit code 0 and a ``metrics.json`` equal to the
oracle's (scikit-learn per slice; with ``--skip-invalid`` rows in == n + skipped), or exit code
1 or 2 and an ``error:`` line naming the column, the row and the value.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import re
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.dataset as ds
import pyarrow.parquet as pq
from hypothesis import assume, given
from hypothesis import strategies as st

from mergeable_metrics import Results
from mergeable_metrics.pipelines.evaluate import main
from tests._helpers.strategies import arrow_table, table_cases
from tests.fuzz.budget import budget
from tests.fuzz.oracle import BINARY_KEYS, MULTICLASS_KEYS, canon, escape_spec, expect, table_batches, table_problems, value_spellings

EXT = {"csv": ".csv", "parquet": ".parquet", "jsonl": ".jsonl"}


def write(table: pa.Table, path: Path, fmt: str) -> None:
    """One file; JSON Lines by hand (pyarrow has no JSON writer), nulls as null."""
    if fmt == "parquet":
        pq.write_table(table, path)
    elif fmt == "csv":
        pacsv.write_csv(table, path)
    else:
        path.write_text("".join(json.dumps(r, allow_nan=False) + "\n" for r in table.to_pylist()))


def json_safe(case: dict) -> dict:
    """JSON has no NaN or inf: they are written as null (the oracle then sees None)."""
    cols = {}
    for name, (role, cells, t) in case["columns"].items():
        cols[name] = (role, [None if isinstance(v, float) and not math.isfinite(v) else v for v in cells], t)
    return {**case, "columns": cols}


def cli_error_problem(code: int, err: str, bad: dict) -> str | None:
    """Why a failed run's stderr is not a clear error for ``bad`` (None if it is)."""
    if code not in (1, 2) or "error:" not in err or "Traceback" in err:
        return f"exit code {code}, stderr: {err[-2000:]}"
    for name, (_, row, value) in bad.items():
        if repr(name) in err and re.search(rf"\brow {row}\b", err) and any(s in err for s in value_spellings(value)):
            return None
    return f"stderr does not name any of {bad}: {err[-2000:]}"


def cli_args(case: dict, path: Path, out: Path, fmt: str) -> list[str]:
    args = ["--input", str(path), "--format", fmt, "--label", case["label"], "--output", str(out), "--quiet", "--no-report", "--progress", "off"]
    if case["multiclass"]:
        args += ["--prediction", case["target"], "--num-classes", str(case["k"]), "--metrics", ",".join(MULTICLASS_KEYS)]
    else:
        args += ["--score", case["target"], "--metrics", ",".join(BINARY_KEYS)]
    if case["weight"]:
        args += ["--weight", case["weight"]]
    args += ["--slice", escape_spec(case["slice"])]
    if case["on_invalid"] == "skip":
        args.append("--skip-invalid")
    return args


# the README's CSV type rules (pipelines/io.py), written out here independently
_CSV_INT = re.compile(r"-?[0-9]+")
_CSV_NUMBER = re.compile(r"[+-]?([0-9]+[.]?[0-9]*|[.][0-9]+)(e[+-]?[0-9]+)?|[+-]?(inf|infinity|nan)", re.IGNORECASE)
_CSV_BOOL = re.compile(r"true|false", re.IGNORECASE)


def csv_cells(files: list[Path], columns: list[str]) -> dict[str, list]:
    """The cells a CSV input holds by the README's rules: an empty cell (quoted or not) is null;
    each column has one type over the whole input: int64 if every value is an integer within
    int64, else float64 if every value is a number (``inf``, ``nan`` too), else bool if every
    value is true/false, else text."""
    text: dict[str, list[str]] = {c: [] for c in columns}
    for f in files:
        with open(f, newline="", encoding="utf-8") as fh:
            for row in csv.DictReader(fh):
                for c in columns:
                    text[c].append(row[c])
    out = {}
    for c in columns:
        present = [t for t in text[c] if t != ""]
        if present and all(_CSV_INT.fullmatch(t) and -(2**63) <= int(t) < 2**63 for t in present):
            convert: Any = int
        elif present and all(_CSV_NUMBER.fullmatch(t) for t in present):
            convert = float
        elif present and all(_CSV_BOOL.fullmatch(t) for t in present):
            convert = lambda t: t.lower() == "true"  # noqa: E731
        else:
            convert = str
        out[c] = [None if t == "" else convert(t) for t in text[c]]
    return out


def _same_cells(a: list, b: list) -> bool:
    return len(a) == len(b) and all(canon(x) == canon(y) and type(canon(x)) is type(canon(y)) for x, y in zip(a, b))


def other_types(table: pa.Table, case: dict) -> pa.Table:
    """``table`` with each value column in the other numeric type (int64 <-> double, where the
    values allow it): the second file of a directory of mixed schemas."""
    for name, (role, cells, t) in case["columns"].items():
        if role == "slice":
            continue
        if t == "int64" and all(v is None or abs(v) < 2**53 for v in cells):
            table = table.set_column(table.column_names.index(name), name, table.column(name).cast(pa.float64()))
        elif t == "double" and all(v is None or (math.isfinite(v) and v.is_integer() and abs(v) < 2**53) for v in cells):
            table = table.set_column(table.column_names.index(name), name, table.column(name).cast(pa.int64()))
    return table


@given(
    case=table_cases(max_rows=20), fmt=st.sampled_from(sorted(EXT)), split=st.booleans(), mixed=st.booleans(),
    batch_size=st.sampled_from([3, 65536]),
)  # fmt: skip
@budget("cli")
def test_cli_on_hostile_files_writes_sklearn_values_or_a_clear_error(case: dict, fmt: str, split: bool, mixed: bool, batch_size: int) -> None:
    # the CLI's --score/--prediction take comma-separated column lists: no comma in those names
    assume("," not in case["target"])
    if fmt == "jsonl":
        case = json_safe(case)
    table = arrow_table(case)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        if split and case["n"] >= 2:
            path = tmp / "input"
            path.mkdir()
            half = case["n"] // 2
            write(table.slice(0, half), path / f"part-0{EXT[fmt]}", fmt)
            second = table.slice(half)
            write(other_types(second, case) if mixed else second, path / f"part-1{EXT[fmt]}", fmt)
        else:
            path = tmp / f"input{EXT[fmt]}"
            write(table, path, fmt)
        files = sorted(path.iterdir()) if path.is_dir() else [path]
        if fmt == "csv":  # what the CLI must read: the README's CSV rules, applied to the files' text
            read = csv_cells(files, list(case["columns"]))
            case = {**case, "columns": {name: (role, read[name], t) for name, (role, _, t) in case["columns"].items()}}
        elif fmt == "jsonl" and case["n"]:
            # JSON Lines is read as pyarrow infers it, file by file (a mixed directory may read
            # 1 and 1.0 differently): keep to the cases whose columns read back as written
            readback: dict = {}
            for f in files:
                t = ds.dataset(str(f), format="json").to_table()
                for name in t.column_names:
                    readback.setdefault(name, []).extend(t.column(name).to_pylist())
            for name, (_, cells, _) in case["columns"].items():
                assume(_same_cells(readback.get(name, []), cells))
        out = tmp / "out"
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                code = main(cli_args(case, path, out, fmt) + ["--batch-size", str(batch_size)])
            except SystemExit as e:  # argparse usage errors
                code = e.code
        err = err.getvalue()
        ex = expect(table_batches(case), case["k"])
        if case["on_invalid"] == "raise" and ex.error is not None:
            why = cli_error_problem(code, err, ex.error)
            assert why is None, why
            return
        valid = np.concatenate(ex.valid) if ex.valid else np.zeros(0, bool)
        if case["on_invalid"] == "skip" and valid.size and not valid.any():
            # every row skipped: a data error saying how many and why (issue 28 item 20), not a run of nulls
            assert code == 1 and f"all {valid.size} rows were skipped as invalid" in err, f"exit code {code}: {err[-3000:]}"
            return
        assert code == 0, f"exit code {code}: {err[-3000:]}"
        results = Results.from_dict(json.loads((out / "metrics.json").read_text()))
        why = table_problems(case, results)
        assert why is None, why
