"""Writes ``codec_v1_fixtures.json``: codec bytes produced by the release at commit 384f834
(accumulator codec version 1, before fingerprints).

Run once against that release's code, e.g.::

    git worktree add /tmp/v1 384f834 && cd /tmp/v1 && PYTHONPATH=$PWD python <this script> OUT.json

(the checked-in JSON was written this way, with HEAD at 384f834).

The inputs are stored next to the bytes so that the test (tests/core/test_codec_upgrade.py) can
fold them again with today's code and compare: old bytes must decode to the same states.
"""

from __future__ import annotations

import json
import sys

from mergeable_metrics import Evaluation, MetricCollection

ROWS = {
    "y": [1, 0, 1, 1, 0, 0, 1, 0],
    "s": [0.9, 0.2, 0.4, 0.75, 0.6, 0.1, 0.55, 0.35],
    "w": [1.0, 2.0, 0.5, 1.5, 1.0, 3.0, 0.25, 1.0],
    "g": ["a", "b", "a", "c", "b", "a", "c", "b"],
}
MC = {"y": [0, 1, 2, 2, 1, 0], "p": [0, 2, 2, 1, 1, 0]}

CASES = {
    # name: (Evaluation kwargs, columns)
    "binary_sliced_unweighted": (
        dict(label_col="y", score_col="s", slices=["g"], metrics=["f1", "precision@threshold=0.7", "roc_auc", "log_loss", "ece"]),
        ["y", "s", "g"],
    ),
    "binary_weighted": (dict(label_col="y", score_col="s", weight_col="w", slices=["g"], metrics=["accuracy", "brier_score"]), ["y", "s", "w", "g"]),
}


def main(out: str) -> None:
    doc = {"commit": "384f834", "rows": ROWS, "collection_rows": MC, "accumulators": {}, "states": {}, "collections": {}}
    for name, (kw, cols) in CASES.items():
        ev = Evaluation(**kw)
        acc = ev.fold(ev.zero(), {c: ROWS[c] for c in cols})
        doc["accumulators"][name] = {"kwargs": kw, "hex": ev.encode(acc).hex()}
        for s in acc[()]:
            doc["states"].setdefault(f"{name}/{s.kind}", s.encode().hex())
    mc = MetricCollection("accuracy", "f1@macro", num_classes=3)
    mc.update(MC["y"], y_pred=MC["p"])
    doc["collections"]["multiclass_3"] = {"metrics": ["accuracy", "f1@macro"], "num_classes": 3, "hex": mc.encode().hex()}
    with open(out, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])
