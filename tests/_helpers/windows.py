"""A seeded timestamped dataset with slices, and the reference per-window answer: a core
``Evaluation`` on each window's rows, the rows chosen by a direct numpy test
``start <= t < start + size`` (not through ``mergeable_metrics.time.windows``)."""

from __future__ import annotations

import datetime as dt
import warnings

import numpy as np

from mergeable_metrics import Evaluation, Results

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
T0 = 1_356_998_400  # 2013-01-01T00:00:00Z, seconds
OPTIONS = dict(label_col="y", score_col="s", metrics=["accuracy", "precision", "recall", "roc_auc", "example_count"], slices=["g"])


def timed_rows(n: int = 300, hours: float = 5.0, seed: int = 0) -> dict[str, np.ndarray]:
    """Columns ``ts`` (int seconds since the epoch, over ``hours`` from 2013-01-01), ``y``, ``s``, ``g``."""
    rng = np.random.default_rng(seed)
    ts = T0 + np.sort(rng.integers(0, int(hours * 3600), n))
    y = rng.integers(0, 2, n)
    s = np.round(np.clip(0.35 * y + 0.65 * rng.random(n), 0, 1), 3)  # ties on purpose
    g = rng.choice(np.array(["a", "b", "c"], dtype=object), n)
    return {"ts": ts, "y": y, "s": s, "g": g}


def reference(cols: dict, size_s: int, slide_s: int | None = None, **options) -> Results:
    """Per-window results: every window start aligned to the epoch that holds a row, the rows
    with ``start <= ts < start + size`` evaluated by ``mergeable_metrics.Evaluation`` alone."""
    slide_s = slide_s or size_s
    opts = {**OPTIONS, **options}
    ts = np.asarray(cols["ts"], dtype=np.int64)
    starts = sorted({int(k * slide_s) for t in ts for k in range((t - size_s) // slide_s, t // slide_s + 1) if k * slide_s <= t < k * slide_s + size_s})
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for start in starts:
            keep = (ts >= start) & (ts < start + size_s)
            rows = {k: np.asarray(v)[keep] for k, v in cols.items()}
            r = Evaluation(**opts).evaluate(rows)
            w0, w1 = EPOCH + dt.timedelta(seconds=start), EPOCH + dt.timedelta(seconds=start + size_s)
            out += [s.with_window(w0, w1) for s in r]
    return Results(out)


def assert_same_windows(got: Results, want: Results, rel: float = 0.0) -> None:
    """Identical windows, slices, counts and metric values (exactly, or to ``rel``)."""
    assert [(s.window, s.slice) for s in got] == [(s.window, s.slice) for s in want]
    for a, b in zip(got, want):
        assert (a.n, a.weight, a.skipped, a.suppressed) == (b.n, b.weight, b.skipped, b.suppressed), (a.window, a.slice)
        assert a.metrics.keys() == b.metrics.keys()
        for k in a.metrics:
            np.testing.assert_allclose(
                np.asarray(a.metrics[k], dtype=float),
                np.asarray(b.metrics[k], dtype=float),
                rtol=rel,
                atol=0,
                equal_nan=True,
                err_msg=f"{a.window} {a.slice} {k}",
            )
