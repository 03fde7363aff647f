"""Metrics in Beam pipeline tests: matchers for ``assert_that`` and the ``ValidateMetrics`` transform.

The matchers follow :mod:`apache_beam.testing.util`'s (``equal_to``, ``is_not_empty``): each is a
function returning a callable over the actual list of elements, here the
:class:`mergeable_metrics.SliceResult` elements of :class:`~mergeable_metrics.beam.ComputeMetrics`,
and raises :class:`apache_beam.testing.util.BeamAssertException` naming the slice, the metric,
the value and the bound of every failing check::

    from apache_beam.testing.util import assert_that
    from mergeable_metrics.beam.testing import metric_at_least, metric_equal_to, has_slice

    results = rows | ComputeMetrics(label_col="y", score_col="p", slices=["country"])
    assert_that(results, metric_equal_to("accuracy", 0.75), label="overall accuracy")
    assert_that(results, metric_at_least("recall", 0.6, slice={"country": "US"}), label="US recall")
    assert_that(results, has_slice("country=FR"), label="FR present")

A failure reads ``1 of 1 metric checks failed: country=US: recall 0.5 < minimum 0.6``.
:class:`ValidateMetrics` applies a thresholds file of ``python -m mergeable_metrics.pipelines.validate``
to the same results and emits one check per (slice, metric, threshold); :func:`checks_pass` is its
matcher. The checks and their messages are core's (:func:`mergeable_metrics.engine.check_expectations`,
:func:`mergeable_metrics.engine.compare`), shared with ``mergeable_metrics.pipelines.validate`` and
:func:`mergeable_metrics.spark.testing.assert_metrics`.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import apache_beam as beam
from apache_beam.testing.util import BeamAssertException

from mergeable_metrics.engine import Evaluation, SliceResult, Thresholds, as_thresholds, check_expectations, failure_message, read_document, validate_entries

__all__ = ["RTOL", "ATOL", "ValidateMetrics", "checks_pass", "has_slice", "metric_at_least", "metric_at_most", "metric_equal_to", "metrics_match"]

#: default tolerance of :func:`metric_equal_to` (``|value - expected| <= atol + rtol * |expected|``), as ``pyspark.testing``'s
RTOL, ATOL = 1e-5, 1e-8


def _entries(actual: Sequence[Any]) -> list[dict[str, Any]]:
    out = []
    for x in actual:
        if isinstance(x, SliceResult):
            out.append(x.to_dict())
        elif isinstance(x, dict) and "slice" in x and "metrics" in x:  # metrics.json entries
            out.append(x)
        else:
            raise BeamAssertException(f"expected the SliceResult elements of ComputeMetrics, got {type(x).__name__} {x!r:.200}")
    return out


def metrics_match(
    *,
    equal: dict[str, Any] | None = None,
    minimum: dict[str, Any] | None = None,
    maximum: dict[str, Any] | None = None,
    slices: Sequence[Any] = (),
    slice: Any = None,
    rtol: float = RTOL,
    atol: float = ATOL,
) -> Callable[[Sequence[Any]], None]:
    """A matcher of every expectation at once (the others are its shorthands).

    Args:
        equal, minimum, maximum: ``{metric: value}`` for ``slice``, or ``{metric: {slice name: value}}``
            (``{"accuracy": {"Overall": 0.75, "country=US": 0.8}}``).
        slices: slices that must be present (``{"country": "US"}`` or ``"country=US"``).
        slice: the slice of plain values: None (the overall slice), ``{column: value}`` or a name.
        rtol, atol: the tolerance of ``equal``.
    """

    def _match(actual: Sequence[Any]) -> None:
        checks = check_expectations(_entries(actual), equal=equal, minimum=minimum, maximum=maximum, slices=slices, slice=slice, rtol=rtol, atol=atol)
        msg = failure_message(checks)
        if msg is not None:
            raise BeamAssertException(msg)

    return _match


def metric_equal_to(metric: str, expected: Any, *, slice: Any = None, rtol: float = RTOL, atol: float = ATOL) -> Callable[[Sequence[Any]], None]:
    """``metric`` of ``slice`` equals ``expected`` within ``atol + rtol * |expected|``; ``expected``
    may be ``{slice name: value}`` for several slices."""
    return metrics_match(equal={metric: expected}, slice=slice, rtol=rtol, atol=atol)


def metric_at_least(metric: str, minimum: Any, *, slice: Any = None) -> Callable[[Sequence[Any]], None]:
    """``metric`` of ``slice`` is ``>= minimum`` (undefined fails); ``minimum`` may be ``{slice name: value}``."""
    return metrics_match(minimum={metric: minimum}, slice=slice)


def metric_at_most(metric: str, maximum: Any, *, slice: Any = None) -> Callable[[Sequence[Any]], None]:
    """``metric`` of ``slice`` is ``<= maximum`` (undefined fails); ``maximum`` may be ``{slice name: value}``."""
    return metrics_match(maximum={metric: maximum}, slice=slice)


def has_slice(*slices: Any) -> Callable[[Sequence[Any]], None]:
    """Every slice given (``{"country": "US"}``, ``"country=US"``; ``{}`` or ``"Overall"``) is in the results."""
    return metrics_match(slices=slices)


def checks_pass() -> Callable[[Sequence[Any]], None]:
    """The matcher of :class:`ValidateMetrics`' output: every check passes (else the failing checks' messages)."""

    def _match(actual: Sequence[Any]) -> None:
        msg = failure_message(list(actual), "threshold checks")
        if msg is not None:
            raise BeamAssertException(msg)

    return _match


def _load_yaml(text: str) -> Any:
    import yaml

    return yaml.safe_load(text)


class ValidateMetrics(beam.PTransform):
    """The checks of a thresholds file over :class:`~mergeable_metrics.beam.ComputeMetrics`' output.

    The thresholds are those of ``python -m mergeable_metrics.pipelines.validate`` (docs/cli.md,
    "Validating pipeline outputs"): ``minimum`` / ``maximum`` per metric, per spec or per slice,
    ``change`` against a baseline, ``min_slice_size``; the checks are core's, the same as the
    command's. The results of a window (a pane) are gathered once (``ToList``) and checked.

    Output: one dict per check, ``validation.json``'s ``"checks"``: ``slice``, ``slice_name``,
    ``metric``, ``check`` (``minimum``, ``maximum``, ``absolute``, ``relative``), ``current``,
    ``baseline``, ``threshold``, ``status`` (``pass``, ``fail``, ``within_ci``, ``undefined``,
    ``no_baseline``) and ``message`` (``"country=US: accuracy 0.75 < minimum 0.8"``); with a
    baseline, each configuration mismatch is one more failing element (``check == "mismatch"``).
    ``assert_that(checks, checks_pass())`` fails with the failing checks' messages.

    Args:
        thresholds: a thresholds file (YAML or JSON), its parsed mapping, or a
            :class:`mergeable_metrics.engine.Thresholds`.
        baseline: optional: a baseline ``metrics.json`` (or its directory, or its parsed mapping)
            for the ``change`` thresholds; without one they give ``no_baseline`` checks.
        evaluation: the :class:`mergeable_metrics.Evaluation` of the results: their configuration,
            compared with the baseline's (needed with ``baseline``).

    Raises:
        ValueError: at construction, a bad thresholds file (the message names the file, the key
            and the problem); a baseline without ``evaluation``. At run time (Beam may wrap it),
            thresholds naming a metric, spec or slice the results do not hold.
    """

    def __init__(self, thresholds: Any, *, baseline: Any = None, evaluation: Evaluation | None = None, label: str | None = None):
        super().__init__(label)
        self.thresholds = as_thresholds(thresholds, _load_yaml)
        if baseline is not None and not isinstance(baseline, dict):
            baseline = read_document(baseline, "baseline")
        if baseline is not None and evaluation is None:
            raise ValueError("ValidateMetrics: a baseline needs evaluation= (the configuration of the results, compared with the baseline's)")
        self.baseline = baseline
        self.evaluation = evaluation

    def expand(self, pcoll: beam.PCollection) -> beam.PCollection:
        return pcoll | "Gather" >> beam.combiners.ToList() | "Check" >> beam.FlatMap(_validate, self.thresholds, self.baseline, self.evaluation)


def _validate(results: list[SliceResult], thresholds: Thresholds, baseline: dict[str, Any] | None, evaluation: Evaluation | None) -> list[dict[str, Any]]:
    current = evaluation.collect(slices=results).to_dict() if evaluation is not None else {"config": {}, "slices": [r.to_dict() for r in results]}
    return validate_entries(current["slices"], thresholds, baseline, current["config"])
