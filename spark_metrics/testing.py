"""Metrics in Spark tests: :func:`assert_metrics`, in the style of ``pyspark.testing.assertDataFrameEqual``.

It reads the output of :func:`mergeable_metrics.spark.compute_metrics` (wide or long layout) and
of ``df.groupBy(...).agg(*metric_columns(...))`` and raises ``AssertionError`` naming the slice,
the metric, the value and the bound of every failing check::

    from mergeable_metrics.spark import compute_metrics
    from mergeable_metrics.spark.testing import assert_metrics

    out = compute_metrics(df, label_col="y", score_col="p", slices=["country"], metrics=["accuracy", "recall"])
    assert_metrics(out, equal={"accuracy": 0.75}, minimum={"recall": {"country=US": 0.6}}, slices=["country=FR"])

A failure reads ``1 of 3 metric checks failed: country=US: recall 0.5 < minimum 0.6``. The checks
and messages are core's (:func:`mergeable_metrics.engine.check_expectations`, and with
``thresholds=`` :func:`mergeable_metrics.engine.compare`), the same as those of
``mergeable_metrics.beam.testing`` and ``python -m mergeable_metrics.pipelines.validate``.
"""

from __future__ import annotations

from typing import Any, Sequence

from mergeable_metrics.engine import as_thresholds, check_expectations, entries_from_rows, failure_message, validate_entries

__all__ = ["ATOL", "RTOL", "assert_metrics"]

#: default tolerance of ``equal`` (``|value - expected| <= atol + rtol * |expected|``): ``assertDataFrameEqual``'s
RTOL, ATOL = 1e-5, 1e-8


def _rows(results: Any) -> list[dict[str, Any]]:
    if hasattr(results, "collect") and hasattr(results, "schema"):  # a Spark DataFrame (classic or Connect)
        results = results.collect()
    elif hasattr(results, "to_dict") and hasattr(results, "columns"):  # pandas
        results = results.to_dict("records")
    out = []
    for r in results:
        if hasattr(r, "asDict"):
            r = r.asDict()
        if not isinstance(r, dict):
            raise TypeError(f"assert_metrics reads a DataFrame of results or a list of Rows / dicts, got an element {type(r).__name__} {r!r:.200}")
        out.append(r)
    return out


def _load_yaml(text: str) -> Any:
    import yaml

    return yaml.safe_load(text)


def assert_metrics(
    results: Any,
    *,
    equal: dict[str, Any] | None = None,
    minimum: dict[str, Any] | None = None,
    maximum: dict[str, Any] | None = None,
    slices: Sequence[Any] = (),
    slice: Any = None,
    by: Sequence[str] | None = None,
    thresholds: Any = None,
    rtol: float = RTOL,
    atol: float = ATOL,
) -> None:
    """Assert metric values of Spark results; ``AssertionError`` lists every failing check.

    Args:
        results: a DataFrame of :func:`~mergeable_metrics.spark.compute_metrics` (``layout="wide"``
            or ``"long"``) or of ``groupBy(...).agg(*metric_columns(...))``, its collected Rows,
            or dicts / a pandas DataFrame of the same columns.
        equal, minimum, maximum: ``{metric: value}`` for ``slice``, or ``{metric: {slice name:
            value}}`` (``{"recall": {"Overall": 0.7, "country=US": 0.6}}``). Undefined (NaN)
            values fail.
        slices: slices that must be present (``{"country": "US"}`` or ``"country=US"``).
        slice: the slice of plain values: None (the overall slice), ``{column: value}`` or a name.
        by: the group columns of ``metric_columns`` output (default: every column that is not a
            metric name; ``df.agg(...)`` without groups is the overall slice).
        thresholds: a thresholds file of ``python -m mergeable_metrics.pipelines.validate`` (YAML or
            JSON), its mapping or a :class:`mergeable_metrics.engine.Thresholds`: its value
            thresholds are checked too (change thresholds need a baseline: not checked here).
        rtol, atol: the tolerance of ``equal``.

    Raises:
        AssertionError: ``"N of M metric checks failed:"`` and one line per failing check,
            e.g. ``country=US: recall 0.5 < minimum 0.6``, ``country=FR: no such slice in the results``.
        ValueError: bad thresholds (the message names the key and the problem) or bounds.
    """
    entries = entries_from_rows(_rows(results), by=by)
    checks = check_expectations(entries, equal=equal, minimum=minimum, maximum=maximum, slices=slices, slice=slice, rtol=rtol, atol=atol)
    if thresholds is not None:
        checks += validate_entries(entries, as_thresholds(thresholds, _load_yaml))
    if not checks:
        raise ValueError("assert_metrics: nothing to check; give equal=, minimum=, maximum=, slices= or thresholds=")
    msg = failure_message(checks)
    if msg is not None:
        raise AssertionError(msg)
