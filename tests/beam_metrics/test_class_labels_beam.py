"""Beam: class values (``classes=``), requested metric names and display names (issue 16).

References: scikit-learn on the original label values; core's direct fold."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("apache_beam")
sklearn_metrics = pytest.importorskip("sklearn.metrics")

import apache_beam as beam  # noqa: E402
from apache_beam.options.pipeline_options import PipelineOptions  # noqa: E402

import mergeable_metrics  # noqa: E402
from mergeable_metrics.beam import ComputeMetrics, slice_result_from_json, slice_result_to_json  # noqa: E402

ANIMALS = ["cat", "dog", "bird"]


def _run(rows, ev, tmp_path):
    prefix = str(tmp_path / "out")
    with beam.Pipeline(runner="DirectRunner", options=PipelineOptions()) as p:
        parts = [p | f"Create{i}" >> beam.Create(part) for i, part in enumerate([rows[:40], [], rows[40:]])]
        _ = parts | beam.Flatten() | ComputeMetrics(ev, batch_size=16) | beam.Map(slice_result_to_json) | beam.io.WriteToText(prefix)
    lines = [line for f in sorted(tmp_path.glob("out*")) for line in f.read_text().splitlines() if line]
    return ev.collect(slices=[slice_result_from_json(line) for line in lines])


def test_beam_maps_string_classes_and_answers_requested_names(tmp_path):
    rng = np.random.default_rng(5)
    y = rng.choice(ANIMALS, 100)
    p = np.where(rng.random(100) < 0.6, y, rng.choice(ANIMALS, 100))
    g = rng.choice(["a", "b"], 100)
    rows = [{"y": str(y[i]), "p": str(p[i]), "g": str(g[i])} for i in range(100)]
    ev = mergeable_metrics.Evaluation(label_col="y", prediction_col="p", classes=ANIMALS, slices=["g"], metrics=["f1", "f1@none", ("acc", "accuracy")])
    got = _run(rows, ev, tmp_path)
    want = ev.finish(ev.fold(ev.zero(), rows))
    assert [s.slice for s in got] == [s.slice for s in want]
    for s in got:
        m = np.ones(100, bool) if not s.slice else g == s.slice[0][1]
        assert s.metrics["f1"] == pytest.approx(sklearn_metrics.f1_score(y[m], p[m], labels=ANIMALS, average="macro"), abs=1e-12)
        assert s.metrics["acc"] == pytest.approx(sklearn_metrics.accuracy_score(y[m], p[m]), abs=1e-12)
        assert list(s.metrics) == ["f1@macro", "f1@none", "acc"]
    assert got.per_class("f1@none") == pytest.approx(dict(zip(ANIMALS, sklearn_metrics.f1_score(y, p, labels=ANIMALS, average=None))), abs=1e-12)
    assert got.resolved_names == {"f1": "f1@macro", "acc": "accuracy"}


def test_beam_binary_pos_label_and_an_outside_value(tmp_path):
    rng = np.random.default_rng(6)
    y = rng.choice([1, 2], 80)
    s = rng.random(80)
    rows = [{"y": int(y[i]), "s": float(s[i])} for i in range(80)]
    ev = mergeable_metrics.Evaluation(label_col="y", score_col="s", classes=[1, 2], pos_label=1, metrics=["precision", "recall"])
    got = _run(rows, ev, tmp_path)
    pred = np.where(s >= 0.5, 1, 2)
    assert got.overall.metrics["precision"] == pytest.approx(sklearn_metrics.precision_score(y, pred, pos_label=1), abs=1e-12)
    assert got.overall.metrics["recall"] == pytest.approx(sklearn_metrics.recall_score(y, pred, pos_label=1), abs=1e-12)
    bad = rows[:5] + [{"y": 3, "s": 0.5}]
    with pytest.raises(Exception, match=r"column 'y': invalid value 3 at row .*not one of classes=\[2, 1\]"):
        _run(bad, ev, tmp_path / "bad")
