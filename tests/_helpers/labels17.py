"""Shared data of the ``labels=`` / binary ``top_k_accuracy`` engine tests (issue 17)."""

from __future__ import annotations

import numpy as np
import pandas as pd

CLASSES = ["cat", "dog", "bird", "fish"]  # fish: never a label, never predicted

#: the multiclass evaluation: labels by class value (a subset, a reordering, an absent class)
MULTICLASS = dict(
    label_col="y", prediction_col="p", weight_col="w", classes=CLASSES, slices=["g"],
    metrics=["f1@none@labels=fish|cat", "precision@micro@labels=bird|dog", "recall@weighted@labels=dog|bird|fish",
             "iou@macro@labels=cat|bird", "confusion_matrix@labels=bird|cat", "classification_report@labels=dog|fish"],
)  # fmt: skip

#: labels by class id, unweighted: Spark's native SQL path (cells of the confusion matrix)
NATIVE = dict(label_col="yi", prediction_col="pi", num_classes=4, slices=["g"],
              metrics=["f1@none@labels=3|0", "precision@micro@labels=2|1", "confusion_matrix@labels=2|0@normalize=true"])  # fmt: skip

#: binary top-k accuracy: slice "b" holds scores outside [0, 1] (threshold 0 there and overall)
BINARY = dict(label_col="yb", score_col="s", weight_col="w", slices=["g"], metrics=["top_k_accuracy@k=1", "top_k_accuracy@k=2", "accuracy"])


def frame(n: int = 120, seed: int = 17) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    p = np.where(rng.random(n) < 0.6, y, rng.integers(0, 3, n))
    g = rng.choice(["a", "b", "c"], n)
    s = np.round(rng.random(n), 3)
    s[g == "b"] = s[g == "b"] * 3 - 1  # some below 0 and above 1
    return pd.DataFrame({
        "y": np.array(CLASSES)[y], "p": np.array(CLASSES)[p], "w": rng.integers(0, 3, n).astype(float), "g": g,
        "yb": rng.integers(0, 2, n), "s": s, "yi": y, "pi": p,
    })  # fmt: skip


def assert_same_as_in_process(got, ev, pdf: pd.DataFrame, what: str = "") -> None:
    """``got`` (an engine's collected Results) equals ``ev.evaluate([pdf])``: the slices in order
    (the overall one and three groups), their counts, every metric value and the JSON entries
    (``undefined`` included)."""
    from tests._helpers.compare import assert_same_as_in_process as same

    want = same(got, ev, pdf, what, n_slices=4)
    assert got.to_dict()["slices"] == want.to_dict()["slices"]
