"""Every kind of slice spec over SORTED rows, with a reference computed without core's slicing.

Many batches, bundles and partitions of sorted input hold no row of some slice (a filter value,
a bucket, a list value): the engines must fold them without error and give the reference's
slices. :func:`reference` assigns rows to slices in plain Python (its own quantile edges from
``np.quantile``, its own top-N cut) and counts ``n`` and ``tp`` per slice key.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

import numpy as np
import pandas as pd

#: One spec of every kind: plain, crossed, filtered (the README's), edges, quantiles, list column,
#: max_slices (and a filter crossed with a list column).
SPECS = [
    "origin",
    "carrier,origin",
    "origin=JFK|LGA,carrier",
    "distance:edges=500|1000",
    "air_time:quantiles=3",
    "tags",
    "carrier;max_slices=2",
    "origin=LGA,tags",
]
METRICS = ["tp", "fp", "fn", "tn"]


def sorted_rows(n: int = 60, seed: int = 3) -> pd.DataFrame:
    """``n`` rows sorted by origin, then carrier, then distance (so every value sits in one run)."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(
        {
            "y": rng.integers(0, 2, n),
            "score": np.round(rng.random(n), 3),
            "origin": rng.choice(["EWR", "JFK", "LGA"], n, p=[0.5, 0.3, 0.2]),
            "carrier": rng.choice(["AA", "B6", "DL", "UA"], n, p=[0.4, 0.3, 0.2, 0.1]),
            "distance": rng.integers(100, 2000, n).astype(float),
            "air_time": np.round(rng.random(n) * 300, 1),
        }
    )
    df = df.sort_values(["origin", "carrier", "distance"], kind="stable").reset_index(drop=True)
    tag_sets = [[], ["a"], ["a", "b"], ["b"]]
    df["tags"] = [tag_sets[i * 4 // n] for i in range(n)]  # sorted too: each tag in one run of rows
    return df


def _interval(lo: float | None, hi: float | None) -> str:
    f = lambda x: str(int(x)) if float(x).is_integer() else repr(float(x))  # noqa: E731
    if lo is None:
        return f"(-inf, {f(hi)})"
    return f"[{f(lo)}, inf)" if hi is None else f"[{f(lo)}, {f(hi)})"


def _bucket(x: float, edges: list[float]) -> str:
    i = int(np.searchsorted(edges, x, side="right"))
    return _interval(edges[i - 1] if i else None, edges[i] if i < len(edges) else None)


def reference(df: pd.DataFrame, threshold: float = 0.5) -> dict[tuple, tuple[int, int]]:
    """``{slice key: (n, tp)}`` of :data:`SPECS` over ``df``, assigned row by row in Python."""
    q_edges = sorted(set(float(e) for e in np.quantile(df.air_time.to_numpy(), [1 / 3, 2 / 3])))
    counts = Counter(df.carrier)
    top = {c for c, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:2]}
    out: dict[tuple, list[int]] = defaultdict(lambda: [0, 0])

    def add(key: tuple, row: Any) -> None:
        out[key][0] += 1
        out[key][1] += int(row.y == 1 and row.score >= threshold)

    for row in df.itertuples():
        add((), row)
        add((("origin", row.origin),), row)
        add((("carrier", row.carrier), ("origin", row.origin)), row)
        if row.origin in ("JFK", "LGA"):
            add((("origin", row.origin), ("carrier", row.carrier)), row)
        add((("distance", _bucket(row.distance, [500.0, 1000.0])),), row)
        add((("air_time", _bucket(row.air_time, q_edges)),), row)
        for t in sorted(set(row.tags)) or [None]:
            add((("tags", t),), row)
            if row.origin == "LGA":
                add((("origin", "LGA"), ("tags", t)), row)
        add((("carrier", row.carrier if row.carrier in top else "__other__"),), row)
    return {k: (v[0], v[1]) for k, v in out.items()}


def observed(results: Any) -> dict[tuple, tuple[int, int]]:
    """``{slice key: (n, tp)}`` of a :class:`mergeable_metrics.Results`."""
    return {s.slice: (s.n, int(s.metrics["tp"])) for s in results.slices}
