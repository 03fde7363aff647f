"""Sliced fold against its one-pass floor, on the flights predictions (issue 12's three workloads).

Usage::

    python -m benchmarks.bench_slices                 # the three workloads, flights x 20 (3.3 M rows)
    python -m benchmarks.bench_slices --replicate 4   # smaller: 0.67 M rows

Data: the flights example's scored July-December 2013 flights (166,668 rows, built with
``mergeable_metrics.pipelines.examples.flights``; needs the ``examples`` extra) repeated ``--replicate`` times, read
as 65,536-row Arrow record batches (``carrier``, ``origin``, ``tailnum`` as Arrow strings,
``delayed`` int8, ``score`` float64). Every figure is CPU time of this process (median of
``--repeats`` interleaved rounds, see :mod:`benchmarks._harness`).

Workloads (the slices of the issue's table):

1. ``precision, recall, f1, accuracy`` over the specs ``carrier``, ``origin``, ``carrier,origin``
   (55 slices);
2. the same metrics over ``tailnum`` (~3,800 slices plus the missing value);
3. ``roc_auc`` over ``tailnum``.

"ours" is ``Evaluation.fold`` over every batch (validation, slice assignment, every slice's
states, the overall slice). The *floor* is a hand-written one-pass fold of the same slices in plain
pyarrow + numpy, with no validation: per batch, ``dictionary_encode`` each slice column and map
the batch's dictionary to running slice ids with ``pyarrow.compute.index_in`` (codes of a cross
combined arithmetically), then one ``np.bincount`` over ``(slice id, confusion cell)`` added into
the running table (workloads 1 and 2), or one ``np.lexsort`` by ``(slice id, score key)`` reduced
to per-run label counts, merged with the earlier runs when they outnumber them, and the overall
slice from the merged runs at the end (workload 3). The overall slice is folded too. ``finish`` (computing every
slice's metrics) is timed separately and reported in the notes.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import warnings

import numpy as np

from benchmarks._harness import machine_line, measure

BATCH = 65_536
METRICS = ["precision", "recall", "f1", "accuracy"]
WORKLOADS = (
    ("precision/recall/f1/accuracy, carrier + origin + carrier x origin", METRICS, ["carrier", "origin", "carrier,origin"]),
    ("precision/recall/f1/accuracy, tailnum", METRICS, ["tailnum"]),
    ("roc_auc, tailnum", ["roc_auc"], ["tailnum"]),
)


def flights_args(doc: str, argv: list[str] | None = None) -> tuple[argparse.Namespace, list]:
    """``(args, batches)`` of a flights benchmark's command line: ``--replicate`` (default 1),
    ``--repeats`` (default 5) and ``--parquet``; ``doc`` is the module docstring (its first
    paragraph is the description)."""
    p = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    p.add_argument("--replicate", type=int, default=1, help="copies of the 166,668 flights predictions")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--parquet", help="reuse a flights predictions Parquet file (built if absent)")
    args = p.parse_args(argv)
    return args, flights_batches(args.replicate, args.parquet)


def flights_batches(replicate: int, path: str | None = None) -> list:
    """The flights predictions repeated ``replicate`` times, as 65,536-row Arrow record batches."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from mergeable_metrics.pipelines.examples.flights import build_flights_predictions

    with tempfile.TemporaryDirectory() as tmp:
        p = path or os.path.join(tmp, "flights.parquet")
        if not (path and os.path.exists(path)):
            build_flights_predictions(p)
        t = pq.read_table(p, columns=["delayed", "score", "carrier", "origin", "tailnum"])
    t = pa.concat_tables([t] * replicate).combine_chunks()
    return t.to_batches(max_chunksize=BATCH)


class _Ids:
    """Running slice ids of one slice column: the values seen so far, in first-seen order."""

    def __init__(self) -> None:
        import pyarrow as pa

        self.values = pa.array([], pa.string())

    def of(self, column) -> np.ndarray:
        import pyarrow as pa
        import pyarrow.compute as pc

        enc = column.dictionary_encode(null_encoding="encode")
        d = enc.dictionary
        ids = pc.index_in(d, value_set=self.values, skip_nulls=False).to_numpy(zero_copy_only=False)
        new = np.isnan(ids) if ids.dtype.kind == "f" else ids < 0
        if new.any():
            start = len(self.values)
            self.values = pa.concat_arrays([self.values, d.filter(pa.array(new))])
            ids = np.where(new, 0, ids).astype(np.int64)
            ids[new] = start + np.arange(int(new.sum()))
        return ids.astype(np.int64)[enc.indices.to_numpy(zero_copy_only=False)]


def floor_counts(batches: list, specs: list[str], threshold: float = 0.5) -> dict:
    """Workloads 1-2: per spec a running (slices, 4) table of confusion cells."""
    columns = sorted({c for s in specs for c in s.split(",")})
    ids = {c: _Ids() for c in columns}
    tables = {s: np.zeros((0, 4), np.int64) for s in specs}
    cross_ids: dict[str, dict] = {s: {} for s in specs if "," in s}
    overall = np.zeros(4, np.int64)
    for b in batches:
        y = b.column("delayed").to_numpy()
        cell = y.astype(np.intp) * 2 + (b.column("score").to_numpy() >= threshold)
        overall += np.bincount(cell, minlength=4)
        codes = {c: ids[c].of(b.column(c)) for c in columns}
        for s in specs:
            parts = s.split(",")
            code = codes[parts[0]]
            if len(parts) > 1:  # a cross: combine arithmetically, then renumber its pairs
                pair = code * (1 << 20) + codes[parts[1]]
                u, code = np.unique(pair, return_inverse=True)
                known = cross_ids[s]
                code = np.array([known.setdefault(int(v), len(known)) for v in u], np.int64)[code]
            g = int(code.max()) + 1 if code.size else 0
            t = np.bincount(code * 4 + cell, minlength=4 * g).reshape(g, 4)
            if g > tables[s].shape[0]:
                tables[s] = np.concatenate([tables[s], np.zeros((g - tables[s].shape[0], 4), np.int64)])
            tables[s][:g] += t
    return {"overall": overall, **tables}


def _runs(code: np.ndarray, key: np.ndarray, neg: np.ndarray, pos: np.ndarray) -> tuple:
    order = np.lexsort((key, code))
    c, k, n, p = code[order], key[order], neg[order], pos[order]
    start = np.flatnonzero(np.concatenate(([True], (c[1:] != c[:-1]) | (k[1:] != k[:-1]))))
    return c[start], k[start], np.add.reduceat(n, start), np.add.reduceat(p, start)


def floor_distribution(batches: list, spec: str = "tailnum") -> tuple:
    """Workload 3: per batch one lexsort by (slice id, score key) reduced to runs, merged with the
    earlier runs once they outnumber them (or pass 2**20); the overall slice at the end, from the
    slices' runs (every row is in exactly one ``tailnum`` slice, the missing value included)."""
    from mergeable_metrics.states.score_distribution import score_keys

    ids = _Ids()
    merged = None
    pending: list = []
    size = 0
    for b in batches:
        y = b.column("delayed").to_numpy().astype(np.int64)
        pending.append(_runs(ids.of(b.column(spec)), score_keys(b.column("score").to_numpy()), 1 - y, y))
        size += pending[-1][0].size
        if size > max(1 << 20, 0 if merged is None else merged[0].size):
            merged = _runs(*(np.concatenate(x) for x in zip(*([merged] if merged else []) + pending)))
            pending, size = [], 0
    merged = _runs(*(np.concatenate(x) for x in zip(*([merged] if merged else []) + pending)))
    c, k, n, p = merged
    overall = _runs(np.zeros(k.size, np.int64), k, n, p)
    return merged, overall


def floor_sorts_only(batches: list, spec: str = "tailnum") -> list:
    """Workload 3's per-batch part alone: one lexsort per batch reduced to runs, never merged
    (not a fold of the whole data: a lower bound of the floor)."""
    from mergeable_metrics.states.score_distribution import score_keys

    ids = _Ids()
    out = []
    for b in batches:
        y = b.column("delayed").to_numpy().astype(np.int64)
        out.append(_runs(ids.of(b.column(spec)), score_keys(b.column("score").to_numpy()), 1 - y, y))
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--replicate", type=int, default=20, help="copies of the 166,668 flights predictions (default 20: 3.3 M rows)")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--parquet", help="reuse a flights predictions Parquet file (built if absent)")
    p.add_argument("--per-slice", action="store_true", help="also time the per-slice fold (a plain dict accumulator: the first release's fold), once")
    args = p.parse_args(argv)

    from mergeable_metrics import Evaluation

    batches = flights_batches(args.replicate, args.parquet)
    rows = sum(b.num_rows for b in batches)
    print(f"flights predictions x {args.replicate}: {rows:,} rows in {len(batches)} Arrow batches of {BATCH:,}; CPU time, median of {args.repeats}")
    print(machine_line())
    head = f"{'workload':<66} {'slices':>6} {'ours M rows/s':>13} {'floor M rows/s':>14} {'ratio':>6} {'finish s':>8}" + (
        f" {'per-slice M rows/s':>18}" if args.per_slice else ""
    )
    print(head)
    print("-" * len(head))
    for i, (name, metrics, specs) in enumerate(WORKLOADS, 1):
        ev = Evaluation(label_col="delayed", score_col="score", slices=specs, metrics=metrics)

        def ours(acc=None):
            acc = ev.zero() if acc is None else acc
            offset = 0
            for b in batches:
                ev.fold(acc, b, row_offset=offset)
                offset += b.num_rows
            return acc

        floor = (lambda: floor_distribution(batches)) if metrics == ["roc_auc"] else (lambda: floor_counts(batches, specs))
        t = measure({"ours": ours, "floor": floor}, args.repeats)
        acc = ours()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # undefined metrics of small slices
            fin = measure({"finish": lambda: ev.finish(acc)}, 1, warmup=False)["finish"]
            slices = len(ev.finish(acc).slices) - 1
        r_ours, r_floor = rows / t["ours"] / 1e6, rows / t["floor"] / 1e6
        extra = ""
        if args.per_slice:
            old = measure({"per-slice": lambda: ours(dict(ev.zero()))}, 1, warmup=False)["per-slice"]
            extra = f" {rows / old / 1e6:>18.2f}"
        print(f"{i}. {name:<63} {slices:>6,} {r_ours:>13.2f} {r_floor:>14.2f} {r_ours / r_floor:>6.2f} {fin:>8.2f}{extra}", flush=True)
        if metrics == ["roc_auc"]:
            t2 = measure({"ours": ours, "sorts": lambda: floor_sorts_only(batches)}, args.repeats)
            r2, rs = rows / t2["ours"] / 1e6, rows / t2["sorts"] / 1e6
            print(
                f"   {'same, against the per-batch lexsorts alone (no merge across batches)':<63} {slices:>6,} {r2:>13.2f} {rs:>14.2f} {r2 / rs:>6.2f}",
                flush=True,
            )
    print("ratio = our rate / the floor's rate (target >= 0.5); finish = one Evaluation.finish of the folded accumulator (CPU s)")


if __name__ == "__main__":
    sys.exit(main())
