"""Beam DirectRunner benchmark: ``ComputeMetrics`` against Beam's own floor, and TFMA.

Usage::

    python -m benchmarks.bench_beam            # 2M dict rows, 20M Arrow rows in memory and from Parquet, TFMA and ours on the same 200K rows
    python -m benchmarks.bench_beam --quick    # 100K dict rows, 2M Parquet rows, no TFMA

Workloads (labels 0/1, scores in [0, 1), a string slice column with 10 values):

* **dict rows**: ``Create(seeds) | FlatMap(generate rows)`` (one Python dict per element, made
  inside the pipeline so ``Create`` pickles nothing big), then either the floor
  ``Map(lambda r: (r["slice"], r)) | Count.PerKey()`` or ``ComputeMetrics`` with
  ``slices=["slice"]`` and ``metrics=[example_count, roc_auc, precision, recall]`` (11 slices with
  the overall one). Target: metrics add at most 25% to the floor's wall time.
* **Arrow batches in memory**: ``Create(table numbers) | FlatMap(table)``, where each number
  gives one of four pre-built 1M-row ``pyarrow.Table`` s (built once per process, before timing;
  the DirectRunner's worker runs in this process, so nothing is pickled or read), then
  ``ComputeMetrics`` with the same 11 slices x 4 metrics, against the same source with
  ``Map(num_rows) | CombineGlobally(sum)`` as the floor: what the metrics transform costs.
* **Arrow batches from Parquet**: a Parquet file in ``--data-dir`` (1M-row row groups) read with
  ``ReadFromParquetBatched`` (one ``pyarrow.Table`` per row group), then ``ComputeMetrics``,
  against the read-only pipeline (``ReadFromParquetBatched | Map(num_rows)``) as the floor.
* **TFMA**: TFMA 0.52 (``analyze_raw_data``, DirectRunner) and ``Create([df]) | ComputeMetrics`` on
  the same ``--tfma-rows`` rows (one in-memory pandas DataFrame for both, same slices and metrics),
  in one run; TFMA is measured in its own virtualenv when one is found (``--tfma-python`` or
  ``$MM_TFMA_PYTHON``, default ``/tmp/tfma-venv/bin/python``), else the row says it was not
  measured (a rate measured at another size or quoted is never divided by ours).

All times are seconds of the whole ``Pipeline.run()`` (construction, DirectRunner start,
reading, folding, merging, results), medians of interleaved repeats: wall clock, and the CPU time
of this process (the DirectRunner's in-process worker runs in its threads), which on a shared,
loaded machine does not count the waits for a core.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import time
from typing import Any

import numpy as np

from benchmarks._harness import Result, format_table, machine_line, rate

METRICS = ["example_count", "roc_auc", "precision", "recall"]
SLICE_VALUES = [f"s{i}" for i in range(10)]
DEFAULT_TFMA_PYTHON = "/tmp/tfma-venv/bin/python"


def columns(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(label int64, score float64, slice index) of ``n`` rows."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    s = np.clip(0.3 * y + 0.7 * rng.random(n), 0.0, 1.0)
    return y, s, rng.integers(0, len(SLICE_VALUES), n)


def generate_rows(seed: int, n: int):
    """``n`` row dicts ``{"label": int, "score": float, "slice": str}`` (one Beam element each)."""
    y, s, g = columns(n, seed)
    names = SLICE_VALUES
    for label, score, k in zip(y.tolist(), s.tolist(), g.tolist()):
        yield {"label": label, "score": score, "slice": names[k]}


def write_parquet(path: str, n: int, row_group: int = 1_000_000, seed: int = 0) -> str:
    """Write (once; reused when present with the same row count) a Parquet file of ``n`` rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if os.path.exists(path):
        try:
            if pq.ParquetFile(path).metadata.num_rows == n:
                return path
        except Exception:  # a partial file from an interrupted run
            pass
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    schema = pa.schema([("label", pa.int64()), ("score", pa.float64()), ("slice", pa.string())])
    names = np.array(SLICE_VALUES, dtype=object)
    tmp = path + ".tmp"
    with pq.ParquetWriter(tmp, schema) as w:
        for i, start in enumerate(range(0, n, row_group)):
            y, s, g = columns(min(row_group, n - start), seed * 1_000_003 + i)
            w.write_table(pa.table({"label": y, "score": s, "slice": pa.array(names[g], pa.string())}, schema=schema), row_group_size=row_group)
    os.replace(tmp, path)
    return path


def evaluation(score_col: str = "score"):
    from mergeable_metrics import Evaluation

    return Evaluation(label_col="label", score_col=score_col, slices=["slice"], metrics=METRICS)


def _options():
    from apache_beam.options.pipeline_options import PipelineOptions

    return PipelineOptions(["--runner=DirectRunner"])


def timed_pipeline(build) -> tuple[float, float]:
    """(wall, CPU) seconds of one pipeline: ``build(p)`` adds the transforms."""
    import apache_beam as beam

    t0, c0 = time.perf_counter(), time.process_time()
    with beam.Pipeline(options=_options()) as p:
        build(p)
    return time.perf_counter() - t0, time.process_time() - c0


def run_pipeline(build) -> float:
    """Wall seconds of one pipeline: ``build(p)`` adds the transforms."""
    return timed_pipeline(build)[0]


def _medians(times: dict[str, list[tuple[float, float]]]) -> dict[str, float]:
    """``{name: median wall, name + "_cpu": median CPU}``."""
    out: dict[str, float] = {}
    for k, v in times.items():
        out[k] = float(np.median([w for w, _ in v]))
        out[k + "_cpu"] = float(np.median([c for _, c in v]))
    return out


def _key_by_slice(r: dict):
    return r["slice"], r


def _num_rows(t) -> int:
    return t.num_rows


def dict_rows(n: int, repeats: int, shards: int = 4, batch_size: int | None = None, big_batch: int | None = None) -> dict[str, float]:
    """Median wall seconds of the Count.PerKey floor, of ComputeMetrics (default ``batch_size``,
    or ``batch_size``) and, with ``big_batch``, of ComputeMetrics(batch_size=big_batch), over ``n``
    dict rows."""
    import apache_beam as beam

    from mergeable_metrics.beam import ComputeMetrics

    ev = evaluation()
    per = -(-n // shards)
    kw = {} if batch_size is None else {"batch_size": batch_size}

    def source(p):
        return p | "Seeds" >> beam.Create(list(range(shards))) | "Rows" >> beam.FlatMap(generate_rows, per)

    def floor(p):
        source(p) | "Key" >> beam.Map(_key_by_slice) | "Count" >> beam.combiners.Count.PerKey()

    def ours(p):
        source(p) | "Metrics" >> ComputeMetrics(ev, **kw)

    def ours_big(p):
        source(p) | "Metrics" >> ComputeMetrics(ev, batch_size=big_batch)

    def gen_only(p):
        source(p) | "Drop" >> beam.Filter(lambda r: False)

    times: dict[str, list[tuple[float, float]]] = {"floor": [], "ours": [], "source": []} | ({"ours_big": []} if big_batch else {})
    for _ in range(repeats):
        times["floor"].append(timed_pipeline(floor))
        times["ours"].append(timed_pipeline(ours))
        times["source"].append(timed_pipeline(gen_only))
        if big_batch:
            times["ours_big"].append(timed_pipeline(ours_big))
    return _medians(times) | {"rows": per * shards}


def dataframe_rows(n: int, repeats: int) -> float:
    """Median wall seconds of ``Create([df]) | ComputeMetrics`` on the ``n``-row pandas DataFrame
    :mod:`benchmarks.bench_tfma` gives TFMA (same recipe and seed: the same rows, entering the
    pipeline the same way, as one in-memory DataFrame)."""
    import apache_beam as beam
    import pandas as pd

    from mergeable_metrics.beam import ComputeMetrics

    y, s, g = columns(n, 0)
    df = pd.DataFrame({"label": y.astype(np.float64), "prediction": s, "slice": np.array(SLICE_VALUES, dtype=object)[g]})
    ev = evaluation(score_col="prediction")

    def ours(p):
        p | "Frame" >> beam.Create([df]) | "Metrics" >> ComputeMetrics(ev)

    return float(np.median([run_pipeline(ours) for _ in range(max(1, repeats))]))


#: pre-built in-memory tables of :func:`memory_table` (per process)
_TABLES: dict[int, Any] = {}
MEMORY_TABLE_ROWS = 1_000_000


def memory_table(i: int):
    """The ``i % 4``-th pre-built 1M-row table (label, score, slice string), one per call."""
    import pyarrow as pa

    k = i % 4
    if k not in _TABLES:
        y, s, g = columns(MEMORY_TABLE_ROWS, 1000 + k)
        _TABLES[k] = pa.table({"label": y, "score": s, "slice": pa.array(np.array(SLICE_VALUES, dtype=object)[g], pa.string())})
    return [_TABLES[k]]


def _batches_against_floor(source, repeats: int, floor_name: str) -> dict[str, float]:
    """Median (wall, CPU) seconds of ``source | ComputeMetrics`` (``ours``) and of ``source |
    Map(num_rows) | CombineGlobally(sum)`` (``floor_name``), interleaved."""
    import apache_beam as beam

    from mergeable_metrics.beam import ComputeMetrics

    ev = evaluation()

    def floor(p):
        source(p) | "Rows" >> beam.Map(_num_rows) | "Sum" >> beam.CombineGlobally(sum)

    def ours(p):
        source(p) | "Metrics" >> ComputeMetrics(ev)

    times: dict[str, list[tuple[float, float]]] = {floor_name: [], "ours": []}
    for _ in range(repeats):
        times[floor_name].append(timed_pipeline(floor))
        times["ours"].append(timed_pipeline(ours))
    return _medians(times)


def arrow_memory(n: int, repeats: int) -> dict[str, float]:
    """Median (wall, CPU) seconds of ComputeMetrics and of the floor over ``n`` rows (rounded up
    to whole 1M-row tables) of in-memory Arrow tables."""
    import apache_beam as beam

    # the module by its name, also under ``python -m``: its function is then pickled by reference,
    # not by value with the tables it caches
    from benchmarks.bench_beam import memory_table as table

    count = max(1, -(-n // MEMORY_TABLE_ROWS))
    for i in range(4):
        table(i)  # built before timing

    def source(p):
        return p | "Tables" >> beam.Create(list(range(count))) | "Table" >> beam.FlatMap(table)

    return _batches_against_floor(source, repeats, "floor") | {"rows": count * MEMORY_TABLE_ROWS}


def arrow_batches(path: str, repeats: int) -> dict[str, float]:
    """Median (wall, CPU) seconds of ComputeMetrics and of the read alone over a Parquet file."""
    import apache_beam as beam

    def read(p):
        return p | "Read" >> beam.io.ReadFromParquetBatched(path, columns=["label", "score", "slice"])

    return _batches_against_floor(read, repeats, "read")


def _arrow_results(part: str, what: str, n: int, t: dict[str, float], floor: str, floor_row: str, reference: str) -> list[Result]:
    """The floor's row and ours (target >= 10 M rows/s) of one Arrow workload's medians ``t``."""
    ours = rate(n, t["ours"])
    metrics_alone = rate(n, max(t["ours_cpu"] - t[floor + "_cpu"], 1e-9)) / 1e6
    return [
        Result(
            part,
            f"{what} ({n:,} rows): {floor_row}",
            rate(n, t[floor]),
            note=f"the floor: the engine alone, no metric; wall {t[floor]:.2f} s, CPU {t[floor + '_cpu']:.2f} s",
        ),
        Result(
            part,
            f"{what} ({n:,} rows): ComputeMetrics, 11 slices x (count, AUC, precision, recall)",
            ours,
            reference=reference,
            ref_value=rate(n, t[floor]),
            ratio=t[floor] / t["ours"],
            target=">= 10 M rows/s",
            met=ours >= 10e6,
            note=(
                f"wall {t['ours']:.2f} s vs floor {t[floor]:.2f} s; CPU {t['ours_cpu']:.2f} s vs {t[floor + '_cpu']:.2f} s "
                f"({rate(n, t['ours_cpu']) / 1e6:.1f} M rows per CPU-s; the metrics alone, CPU minus the floor's: {metrics_alone:.1f} M rows/s; DirectRunner, one worker)"
            ),
        ),
    ]


def tfma_python(explicit: str | None = None) -> str | None:
    cand = explicit or os.environ.get("MM_TFMA_PYTHON") or DEFAULT_TFMA_PYTHON
    return cand if cand and os.path.exists(cand) else None


def run_tfma(python: str, rows: int, timeout: float) -> dict:
    """Run :mod:`benchmarks.bench_tfma` in the TFMA virtualenv; its last stdout line is JSON."""
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench_tfma.py")
    res = subprocess.run([python, script, "--rows", str(rows)], capture_output=True, text=True, timeout=timeout)
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith("{")]
    if res.returncode != 0 or not lines:
        raise RuntimeError(f"TFMA run failed (exit {res.returncode}): {res.stderr.strip().splitlines()[-1:] or res.stdout[-300:]}")
    return json.loads(lines[-1])


def run(
    dict_n: int = 2_000_000,
    arrow_n: int = 20_000_000,
    repeats: int = 3,
    data_dir: str = "/tmp/mm-bench",
    tfma: str | None = "auto",
    tfma_rows: int = 200_000,
    tfma_timeout: float = 1800.0,
    parquet_n: int | None = None,
) -> list[Result]:
    logging.getLogger("apache_beam").setLevel(logging.ERROR)
    out: list[Result] = []
    part = "beam"

    d = dict_rows(dict_n, repeats)
    n = int(d["rows"])
    overhead = d["ours"] / d["floor"] - 1
    cpu_overhead = d["ours_cpu"] / d["floor_cpu"] - 1
    out.append(
        Result(
            part,
            f"dict rows ({n:,}), 10 slices: source only (FlatMap of dicts)",
            rate(n, d["source"]),
            note=f"the row generator alone; both pipelines below include it (CPU {d['source_cpu']:.2f} s)",
        )
    )
    out.append(
        Result(
            part,
            f"dict rows ({n:,}): ComputeMetrics, 11 slices x (count, AUC, precision, recall)",
            rate(n, d["ours"]),
            reference="Count.PerKey on the same rows",
            ref_value=rate(n, d["floor"]),
            ratio=d["floor"] / d["ours"],
            target="metrics add <= 25% to the floor",
            met=overhead <= 0.25,
            note=(
                f"metrics add {100 * overhead:+.0f}% wall time to the Count.PerKey floor ({d['ours']:.2f} s vs {d['floor']:.2f} s; ratio = floor time / our time), "
                f"{100 * cpu_overhead:+.0f}% CPU time ({d['ours_cpu']:.2f} s vs {d['floor_cpu']:.2f} s)"
            ),
        )
    )

    m = arrow_memory(arrow_n, repeats)
    out += _arrow_results(
        part,
        "Arrow tables in memory",
        int(m["rows"]),
        m,
        "floor",
        "the source only (Create | FlatMap(table) | Map(num_rows))",
        "the same source without metrics",
    )
    pn = arrow_n if parquet_n is None else parquet_n
    a = arrow_batches(write_parquet(os.path.join(data_dir, f"beam_{pn}.parquet"), pn), repeats)
    out += _arrow_results(
        part, "Arrow batches from Parquet", pn, a, "read", "ReadFromParquetBatched only (1M-row groups)", "ReadFromParquetBatched only, same file"
    )

    # TFMA: the same rows, the same size, entering the same way (one in-memory DataFrame), one run
    py = tfma_python(None if tfma == "auto" else tfma) if tfma else None
    if py:
        try:
            r = run_tfma(py, tfma_rows, tfma_timeout)
        except Exception as e:  # noqa: BLE001 - report it in the table
            out.append(Result(part, f"DataFrame ({tfma_rows:,} rows) vs TFMA", None, note=f"TFMA not measured: {e}"[:200]))
            return out
        mine = dataframe_rows(tfma_rows, repeats)
        out.append(
            Result(
                part,
                f"DataFrame ({tfma_rows:,} rows, Create([df])): ComputeMetrics, 11 slices x (count, AUC, precision, recall)",
                rate(tfma_rows, mine),
                reference=f"TFMA {r.get('version', '0.52')} analyze_raw_data, the same DataFrame, slices and metrics",
                ref_value=r["rows"] / r["seconds"],
                ref_source="measured",
                ratio=r["seconds"] / mine,
                target=">= 1,000x TFMA",
                met=r["seconds"] / mine >= 1000,
                note=f"wall time of the whole run, pipeline start-up included: ours {mine:.2f} s, TFMA {r['seconds']:.1f} s (its import, {r.get('import_seconds', 0):.0f} s, excluded)",
            )
        )
    else:
        why = "TFMA skipped (--no-tfma/--quick)" if tfma is None else "no TFMA virtualenv found (see --tfma-python)"
        out.append(Result(part, f"DataFrame ({tfma_rows:,} rows) vs TFMA", None, note=f"not measured: {why}; no quoted figure is compared"))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.bench_beam", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="100K dict rows, 2M Parquet rows, TFMA quoted")
    p.add_argument("--dict-rows", type=int)
    p.add_argument("--arrow-rows", type=int, help="rows of the in-memory Arrow workload (and of the Parquet one, unless --parquet-rows)")
    p.add_argument("--parquet-rows", type=int)
    p.add_argument("--repeats", type=int)
    p.add_argument("--data-dir", default="/tmp/mm-bench")
    p.add_argument("--tfma-python", help="python of a virtualenv with tensorflow-model-analysis 0.52")
    p.add_argument("--tfma-rows", type=int, default=200_000)
    p.add_argument("--no-tfma", action="store_true")
    p.add_argument("--markdown", action="store_true")
    a = p.parse_args(argv)
    tfma = None if (a.no_tfma or a.quick) else (a.tfma_python or "auto")
    dict_n = a.dict_rows or (100_000 if a.quick else 2_000_000)
    arrow_n = a.arrow_rows or (2_000_000 if a.quick else 20_000_000)
    repeats = a.repeats or (1 if a.quick else 3)
    print(
        f"# bench_beam: {dict_n:,} dict rows, {arrow_n:,} Arrow rows in memory, {a.parquet_rows or arrow_n:,} Parquet rows, {repeats} repeats, wall and CPU; {machine_line()}"
    )
    print(format_table(run(dict_n, arrow_n, repeats, a.data_dir, tfma, a.tfma_rows, parquet_n=a.parquet_rows), markdown=a.markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
