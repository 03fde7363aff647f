"""Shared helpers of the benchmarks: clocks, interleaved medians, result rows and the table.

Every comparison is measured in one process (or one run) with the reference, and the functions of
one comparison are timed *interleaved* (ours, reference, ours, reference, ...), so a change of
machine load hits both alike; the medians of the repeats are compared.

Two clocks:

* ``cpu``: ``time.process_time`` of this process (all its threads). For in-process numpy and
  scikit-learn work this is the "one core" rate: on a shared, loaded machine it does not count the
  time the process waited for a core. The core part uses it by default.
* ``wall``: ``time.perf_counter``. Engines (Beam, Spark, subprocesses) always use wall time: their
  work runs in other processes or a JVM.
"""

from __future__ import annotations

import os
import platform
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

CLOCKS: dict[str, Callable[[], float]] = {"cpu": time.process_time, "wall": time.perf_counter}


def measure(fns: dict[str, Callable[[], Any]], repeats: int, clock: str = "cpu", warmup: bool = True) -> dict[str, float]:
    """Median seconds of each function over ``repeats`` rounds.

    In each round every function runs once, in turn (interleaved). ``warmup`` runs each once first
    (imports, caches, allocator) without timing it.
    """
    tick = CLOCKS[clock]
    if warmup:
        for fn in fns.values():
            fn()
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(max(1, repeats)):
        for name, fn in fns.items():
            t0 = tick()
            fn()
            times[name].append(tick() - t0)
    return {name: float(np.median(ts)) for name, ts in times.items()}


def load_average() -> str:
    try:
        return "/".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:  # pragma: no cover - not on Unix
        return "n/a"


def machine_line() -> str:
    import numpy

    return (
        f"python {platform.python_version()}, numpy {numpy.__version__}, {platform.machine()}, "
        f"{os.cpu_count()} cores, load average {load_average()} (1/5/15 min)"
    )


@dataclass
class Result:
    """One row of the table: our figure, the reference figure and their ratio.

    ``value`` / ``ref_value`` are in ``unit`` (``rows/s`` values are printed as M rows/s or
    rows/s). ``ratio`` is ours / reference for rates, or as described in ``ratio_note``.
    ``met`` is None when the row has no target.
    """

    part: str
    workload: str
    value: float | None
    unit: str = "rows/s"
    reference: str = ""
    ref_value: float | None = None
    ref_source: str = "measured"
    ratio: float | None = None
    target: str = ""
    met: bool | None = None
    note: str = ""
    extra: dict = field(default_factory=dict)


def fmt_value(v: float | None, unit: str) -> str:
    if v is None or (isinstance(v, float) and not np.isfinite(v)):
        return "-"
    if unit == "rows/s":
        if v >= 1e6:
            return f"{v / 1e6:,.1f} M rows/s" if v < 1e8 else f"{v / 1e6:,.0f} M rows/s"
        return f"{v:,.0f} rows/s"
    if unit == "s":
        return f"{v:,.2f} s"
    if unit == "MiB":
        return f"{v:,.1f} MiB"
    if unit == "B":
        return f"{v:,.0f} B"
    if unit == "%":
        return f"{v:+.1f}%"
    return f"{v:,.3g} {unit}".strip()


def fmt_ratio(r: float | None) -> str:
    if r is None or not np.isfinite(r):
        return "-"
    if r >= 100:
        return f"{r:,.0f}x"
    if r >= 10:
        return f"{r:.1f}x"
    return f"{r:.2f}x"


def _met(m: bool | None) -> str:
    return "" if m is None else ("met" if m else "NOT met")


HEADER = ("part", "workload", "ours", "reference", "reference figure", "ratio", "target", "met")


def cells(r: Result) -> list[str]:
    ref = r.reference + ("" if r.ref_source == "measured" or not r.reference else f" [{r.ref_source}]")
    return [r.part, r.workload, fmt_value(r.value, r.unit), ref, fmt_value(r.ref_value, r.unit), fmt_ratio(r.ratio), r.target, _met(r.met)]


def format_table(results: list[Result], markdown: bool = False) -> str:
    """A fixed-width text table (or a Markdown table) of the results, one row each; notes are
    listed after the table."""
    rows = [list(HEADER)] + [cells(r) for r in results]
    if markdown:
        esc = lambda s: s.replace("|", "\\|")  # noqa: E731
        out = ["| " + " | ".join(rows[0]) + " |", "|" + "|".join("---" for _ in HEADER) + "|"]
        out += ["| " + " | ".join(esc(c) for c in row) + " |" for row in rows[1:]]
    else:
        widths = [max(len(row[i]) for row in rows) for i in range(len(HEADER))]
        line = lambda row: "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip()  # noqa: E731
        out = [line(rows[0]), "  ".join("-" * w for w in widths)] + [line(row) for row in rows[1:]]
    notes = [(i, r.note) for i, r in enumerate(results, 1) if r.note]
    if notes:
        out.append("")
        out += [f"{'* ' if markdown else ''}[{r.part}] {r.workload}: {note}" for (_, note), r in zip(notes, [x for x in results if x.note])]
    return "\n".join(out)


def rate(rows: int, seconds: float) -> float:
    return rows / seconds if seconds > 0 else float("inf")
