"""The late-label join's hand-computed case: every outcome at once, with slices and windows."""

from __future__ import annotations

import pyarrow as pa

H = 3600.0


def every_outcome_case() -> tuple[pa.Table, pa.Table]:
    """Predictions (id, pt, s, c) and labels (id, lt, y), times in seconds; with a 1h delay:
    id 1 matched (a, w0), 2 matched (a, w0), 3 late (b, w0), 4 never + 1 duplicate prediction
    (b, w1), 5 matched + duplicate label (a, w1), 6 matched (b, w2), 8 label before prediction
    (a, w2), 9 orphan label (w3)."""
    preds = pa.table({
        "id": [1, 2, 3, 4, 4, 5, 6, 8],
        "pt": [0.0, 0.0, 10.0, H + 5, H + 1, H + 10, 2 * H, 2 * H],
        "s": [0.9, 0.2, 0.7, 0.6, 0.1, 0.8, 0.4, 0.3],
        "c": ["a", "a", "b", "b", "b", "a", "b", "a"],
    })  # fmt: skip
    labels = pa.table({
        "id": [1, 2, 3, 5, 5, 6, 9, 8],
        "lt": [60.0, 0.5 * H, 2 * H, H + 20, H + 30, 2 * H + 1, 3 * H, 2 * H - 1],
        "y": [1, 1, 1, 1, 0, 0, 1, 0],
    })  # fmt: skip
    return preds, labels
