"""Metrics in Beam pipeline tests (issue 29, item 9): the ``assert_that`` matchers of
``mergeable_metrics.beam.testing`` and ``ValidateMetrics`` on the DirectRunner, passing and failing,
with the expected values from scikit-learn."""

from __future__ import annotations

import json

import numpy as np
import pytest

beam = pytest.importorskip("apache_beam")
from apache_beam.testing.util import BeamAssertException, assert_that  # noqa: E402
from sklearn.metrics import accuracy_score, precision_score, recall_score  # noqa: E402

from mergeable_metrics.beam import ComputeMetrics  # noqa: E402
from mergeable_metrics.beam.testing import (  # noqa: E402
    ValidateMetrics,
    checks_pass,
    has_slice,
    metric_at_least,
    metric_at_most,
    metric_equal_to,
    metrics_match,
)

RNG = np.random.default_rng(29)
N = 240
Y = RNG.integers(0, 2, N)
S = np.clip(0.3 * Y + 0.7 * RNG.random(N), 0, 1)
G = np.array(["a", "b", "c"])[RNG.integers(0, 3, N)]
ROWS = [{"y": int(Y[i]), "s": float(S[i]), "g": str(G[i])} for i in range(N)]
METRICS = ["accuracy", "precision", "recall"]


def _sk(fn, mask=None):
    m = np.ones(N, bool) if mask is None else mask
    return float(fn(Y[m], (S[m] >= 0.5).astype(int)))


ACC = _sk(accuracy_score)
REC = {g: _sk(recall_score, G == g) for g in "abc"}
PREC_B = _sk(precision_score, G == "b")
ACC_MIN = min([ACC] + [_sk(accuracy_score, G == g) for g in "abc"])


def _results(p):
    return p | beam.Create(ROWS) | ComputeMetrics(label_col="y", score_col="s", slices=["g"], metrics=METRICS)


def _collect(matcher):
    """The matcher's message on the collected results (no pipeline): None when it passes."""
    from mergeable_metrics import Evaluation

    res = Evaluation(label_col="y", score_col="s", slices=["g"], metrics=METRICS).evaluate([{k: [r[k] for r in ROWS] for k in ("y", "s", "g")}])
    try:
        matcher(list(res.slices))
    except BeamAssertException as e:
        return str(e)
    return None


def test_matchers_pass_on_directrunner_with_sklearn_values():
    with beam.Pipeline(runner="DirectRunner") as p:
        results = _results(p)
        assert_that(results, metric_equal_to("accuracy", ACC), label="overall accuracy")
        assert_that(results, metric_equal_to("recall", {f"g={g}": v for g, v in REC.items()}), label="recall per slice")
        assert_that(results, metric_at_least("recall", min(REC.values()), slice={"g": "a"}), label="recall a")
        assert_that(results, metric_at_most("precision", PREC_B, slice="g=b"), label="precision b")
        assert_that(results, has_slice("Overall", {"g": "c"}), label="slices")


def test_a_failing_matcher_fails_the_pipeline_naming_slice_metric_value_and_bound():
    bound = REC["b"] + 0.01
    with pytest.raises(Exception, match=rf"g=b: recall {REC['b']:.6g} < minimum {bound:.6g}"):
        with beam.Pipeline(runner="DirectRunner") as p:
            assert_that(_results(p), metric_at_least("recall", bound, slice="g=b"))


def test_failure_messages_name_the_slice_metric_value_and_bound():
    msg = _collect(metric_equal_to("accuracy", ACC + 1e-3))
    assert msg.startswith("1 of 1 metric checks failed:")
    assert f"Overall: accuracy {ACC!r} != expected {ACC + 1e-3!r}" in msg
    assert _collect(metric_equal_to("accuracy", ACC + 1e-9)) is None  # within the default tolerance
    assert _collect(metric_equal_to("accuracy", ACC + 1e-9, rtol=0, atol=0)) is not None
    assert f"g=b: precision {PREC_B:.6g} > maximum {PREC_B - 0.05:.6g}" in _collect(metric_at_most("precision", PREC_B - 0.05, slice={"g": "b"}))
    assert "g=d: no such slice in the results" in _collect(has_slice("g=d"))
    assert "metric 'f1' is not in the results" in _collect(metric_at_least("f1", 0.5))
    msg = _collect(metrics_match(minimum={"recall": {"g=a": 1.01, "g=c": 0.0}}, maximum={"accuracy": 2.0}))
    assert msg.startswith("1 of 3 metric checks failed:") and "g=a: recall" in msg and "< minimum 1.01" in msg


def test_validate_metrics_applies_a_thresholds_file(tmp_path):
    f = tmp_path / "thresholds.yaml"
    f.write_text(
        f"metrics:\n  accuracy: {{minimum: {ACC_MIN - 0.01}}}\nslices:\n  - slice: {{g: b}}\n    metrics:\n      recall: {{minimum: {REC['b'] + 0.02}}}\n",
        encoding="utf-8",
    )
    out = str(tmp_path / "checks.json")

    def check(checks):  # the matcher runs on a pickled copy: its findings go through a file
        with open(out, "w", encoding="utf-8") as fh:
            json.dump(checks, fh)

    with beam.Pipeline(runner="DirectRunner") as p:
        checks = _results(p) | ValidateMetrics(str(f))
        assert_that(checks, check)
    with open(out, encoding="utf-8") as fh:
        seen = json.load(fh)
    by = {(c["slice_name"], c["metric"]): c for c in seen}
    assert len(seen) == 5  # accuracy on 4 slices, recall on g=b
    assert by[("Overall", "accuracy")]["status"] == "pass" and by[("Overall", "accuracy")]["current"] == pytest.approx(ACC, abs=1e-12)
    fail = by[("g=b", "recall")]
    assert fail["status"] == "fail"
    assert fail["message"] == f"g=b: recall {REC['b']:.6g} < minimum {REC['b'] + 0.02:.6g}"
    with pytest.raises(Exception, match=r"1 of 5 threshold checks failed:\n  g=b: recall"):
        with beam.Pipeline(runner="DirectRunner") as p:
            assert_that(_results(p) | ValidateMetrics(str(f)), checks_pass())


def test_validate_metrics_passes_and_reports_bad_thresholds():
    with beam.Pipeline(runner="DirectRunner") as p:
        assert_that(_results(p) | ValidateMetrics({"metrics": {"recall": {"minimum": min(REC.values()) - 0.01, "maximum": 1}}}), checks_pass())
    with pytest.raises(ValueError, match="unknown key 'minimun'"):
        ValidateMetrics({"metrics": {"recall": {"minimun": 0.5}}})


def test_validate_metrics_checks_changes_against_a_baseline():
    from mergeable_metrics import Evaluation

    ev = Evaluation(label_col="y", score_col="s", slices=["g"], metrics=METRICS)
    base = ev.evaluate([{k: [r[k] for r in ROWS] for k in ("y", "s", "g")}]).to_dict()
    for s in base["slices"]:  # a baseline whose recall of g=b was 0.05 higher (sklearn's value + 0.05)
        if s["slice"] == {"g": "b"}:
            s["metrics"]["recall"] = REC["b"] + 0.05
    thresholds = {"slices": [{"slice": {"g": "b"}, "metrics": {"recall": {"change": {"absolute": 0.01}}}}]}
    with pytest.raises(ValueError, match="a baseline needs evaluation="):
        ValidateMetrics(thresholds, baseline=base)
    want = f"1 of 1 threshold checks failed:\n  g=b: recall {REC['b'] + 0.05:.6g} -> {REC['b']:.6g}: worse by 0.05, allowed 0.01"
    with pytest.raises(Exception, match=want.replace(".", r"\.").replace("+", r"\+")):
        with beam.Pipeline(runner="DirectRunner") as p:
            assert_that(_results(p) | ValidateMetrics(thresholds, baseline=base, evaluation=ev), checks_pass())
