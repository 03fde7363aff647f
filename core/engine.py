"""The engine tier: what the Beam and Spark adapters (and any other engine) build on.

``mergeable_metrics.beam`` and ``mergeable_metrics.spark`` import the engine-free layer through
this module only (an import-linter contract in ``pyproject.toml``); users of an engine import the
adapters, users in process import :mod:`mergeable_metrics`.

One vocabulary. An engine object (:class:`Evaluation`, :class:`WindowedEvaluation`,
:class:`PrequentialEvaluation`, :class:`SliceProfiler`, :class:`Plan` over a tuple of states)
is stateless; its accumulators are values it folds and merges:

* ``zero()``: a fresh accumulator;
* ``fold(acc, batch, row_offset=0)``: fold one batch of rows into ``acc`` (mutated and returned);
* ``merge(a, b)``: a new accumulator, both inputs unchanged;
* ``merge_into(a, b)``: merge ``b`` into ``a`` in place and return ``a`` (the engines' combine);
* ``finish(acc)``: the result (:class:`Results`, :class:`PrequentialResults`, :class:`ProfileSummary`);
* ``encode(acc)`` / ``decode(data)``: versioned, checksummed bytes (no pickle); ``decode`` checks
  the bytes belong to this configuration (the fingerprint) and raises ``ValueError`` naming the
  setting otherwise. A state's own pair is ``state.encode()`` / ``State.decode(data)``.

One tuple of states has the same pair on its plan: ``plan.encode(states)`` / ``plan.decode(data)``.
An engine that ships one slice's partial states of an evaluation (Beam's per-slice path, Spark's)
uses ``evaluation.slice_codec.encode(states)`` / ``evaluation.slice_codec.decode(data)`` (the
evaluation's fingerprint and checks, which the plan alone does not know) and names the slice with
:func:`slice_key_to_json` / :func:`slice_key_from_json` (internal: JSON pairs). The codec's frame
functions (:mod:`mergeable_metrics.states.codec`) are private to the library. What users see of a
slice is one shape, ``{column: value}``: :attr:`SliceResult.key`, ``metrics.json``'s ``"slice"``
and, as JSON text (:func:`slice_to_json` / :func:`slice_from_json`), the ``slice`` column of long
rows and of Spark's results.

Names are imported on first use (PEP 562), as in :mod:`mergeable_metrics`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mergeable_metrics._util.public import lazy_exports

#: every name of the engine tier and the module that defines it
_EXPORTS: dict[str, str] = {
    # the engine objects and their values
    "Evaluation": "mergeable_metrics.evaluation.evaluation",
    "Accumulator": "mergeable_metrics.evaluation.accumulator",
    "Plan": "mergeable_metrics.collection.plan",
    "SliceProfiler": "mergeable_metrics.evaluation.profile",
    "SliceProfile": "mergeable_metrics.evaluation.profile",
    "ProfileSummary": "mergeable_metrics.evaluation.profile",
    "KeyCounts": "mergeable_metrics.evaluation.profile",
    "summarize_part": "mergeable_metrics.evaluation.profile",
    "WindowedEvaluation": "mergeable_metrics.time.windows",
    "TimeWindows": "mergeable_metrics.time.windows",
    "PrequentialEvaluation": "mergeable_metrics.time.prequential",
    "PrequentialResults": "mergeable_metrics.time.prequential",
    "WINDOW_COLUMN": "mergeable_metrics.time.prequential",
    "ContinualEvaluation": "mergeable_metrics.time.continual",
    "OCLMetrics": "mergeable_metrics.time.continual",
    "EVENT_COLUMNS": "mergeable_metrics.time.continual",
    "State": "mergeable_metrics.states.base",
    "BinaryConfusionState": "mergeable_metrics.states.base",
    "ConfusionMatrixState": "mergeable_metrics.states.base",
    "ExampleCountState": "mergeable_metrics.states.base",
    "layout_to_json": "mergeable_metrics.states.codec",
    "CELL_STATES": "mergeable_metrics.states.base",
    "states_from_cells": "mergeable_metrics.states.base",
    # thresholds and checks: the regression gate, ValidateMetrics and the pipeline-test helpers
    "CHANGE_KEYS": "mergeable_metrics.evaluation.thresholds",
    "CI_COMPARED": "mergeable_metrics.evaluation.thresholds",
    "DATA": "mergeable_metrics.evaluation.thresholds",
    "ENTRY_KEYS": "mergeable_metrics.evaluation.thresholds",
    "EXIT_MISMATCH": "mergeable_metrics.evaluation.thresholds",
    "EXIT_OK": "mergeable_metrics.evaluation.thresholds",
    "EXIT_REGRESSION": "mergeable_metrics.evaluation.thresholds",
    "FAILING": "mergeable_metrics.evaluation.thresholds",
    "INTERVAL_KEYS": "mergeable_metrics.evaluation.thresholds",
    "METRIC_KEYS": "mergeable_metrics.evaluation.thresholds",
    "TOP_KEYS": "mergeable_metrics.evaluation.thresholds",
    "VALUE_CHECKS": "mergeable_metrics.evaluation.thresholds",
    "Thresholds": "mergeable_metrics.evaluation.thresholds",
    "ThresholdsError": "mergeable_metrics.evaluation.thresholds",
    "check_value": "mergeable_metrics.evaluation.thresholds",
    "validate_entries": "mergeable_metrics.evaluation.thresholds",
    "as_thresholds": "mergeable_metrics.evaluation.thresholds",
    "read_document": "mergeable_metrics.evaluation.thresholds",
    "mismatch_line": "mergeable_metrics.evaluation.thresholds",
    "failure_message": "mergeable_metrics.evaluation.thresholds",
    "entries_from_rows": "mergeable_metrics.evaluation.thresholds",
    "check_expectations": "mergeable_metrics.evaluation.thresholds",
    "ci_settings": "mergeable_metrics.evaluation.thresholds",
    "compare": "mergeable_metrics.evaluation.thresholds",
    "config_differences": "mergeable_metrics.evaluation.thresholds",
    "format_value": "mergeable_metrics.evaluation.thresholds",
    "match_metric": "mergeable_metrics.evaluation.thresholds",
    "parse_thresholds": "mergeable_metrics.evaluation.thresholds",
    "rule_text": "mergeable_metrics.evaluation.thresholds",
    "spec_columns": "mergeable_metrics.evaluation.thresholds",
    # results
    "Results": "mergeable_metrics.results.results",
    "SliceResult": "mergeable_metrics.results.results",
    "Comparison": "mergeable_metrics.results.results",
    "ROW_COLUMNS": "mergeable_metrics.results.results",
    "WINDOW_COLUMNS": "mergeable_metrics.results.results",
    "INTEGER_METRICS": "mergeable_metrics.results.results",
    "SUPPRESSED_SLICES": "mergeable_metrics.results.results",
    "window_bound": "mergeable_metrics.results.results",
    "slice_to_json": "mergeable_metrics.results.results",
    "slice_from_json": "mergeable_metrics.results.results",
    # metrics, options and warnings
    "REGISTRY": "mergeable_metrics.metrics.base",
    "UndefinedMetricWarning": "mergeable_metrics.metrics.base",
    "parse_metric_string": "mergeable_metrics.metrics.base",
    "resolve": "mergeable_metrics.metrics.base",
    "unknown_metric_hint": "mergeable_metrics.metrics.base",
    "make_task": "mergeable_metrics.collection.plan",
    "resolve_evaluation": "mergeable_metrics.evaluation.evaluation",
    # input columns and their validation
    "extract_columns": "mergeable_metrics.evaluation.evaluation",
    "missing_row_column": "mergeable_metrics.evaluation.evaluation",
    "num_rows": "mergeable_metrics.evaluation.evaluation",
    "rows_to_columns": "mergeable_metrics.evaluation.evaluation",
    "invalid_value_message": "mergeable_metrics.inputs.validation",
    "label_rule": "mergeable_metrics.inputs.validation",
    "classes_hint": "mergeable_metrics.inputs.validation",
    "two_class_hint": "mergeable_metrics.inputs.validation",
    "SCORES_FINITE": "mergeable_metrics.inputs.validation",
    "WEIGHTS_RULE": "mergeable_metrics.inputs.validation",
    "NULL": "mergeable_metrics._util.nulls",
    "MAX_NUM_CLASSES": "mergeable_metrics._util.limits",
    # the compiled exact-sum kernels: compile (or load from the cache) in a worker's setup
    "warm_kernels": "mergeable_metrics._util.exact_kernels",
    # slices: keys and their one text form
    "OVERALL": "mergeable_metrics.slicing.assign",
    "assign_slices": "mergeable_metrics.slicing.assign",
    "canonical_value": "mergeable_metrics.slicing.values",
    "slice_key_to_json": "mergeable_metrics.states.codec",
    "slice_key_from_json": "mergeable_metrics.states.codec",
    # time: windows and late labels
    "MAX_US": "mergeable_metrics.time.windows",
    "MIN_US": "mergeable_metrics.time.windows",
    "TIME_RANGE_RULE": "mergeable_metrics.time.windows",
    "parse_duration": "mergeable_metrics.time.windows",
    "take_rows": "mergeable_metrics.time.windows",
    "to_micros": "mergeable_metrics.time.windows",
    "window_from_micros": "mergeable_metrics.time.windows",
    "COUNT_NAMES": "mergeable_metrics.time.latelabels",
    "INVALID_LABEL": "mergeable_metrics.time.latelabels",
    "INVALID_PRED": "mergeable_metrics.time.latelabels",
    "JoinCounts": "mergeable_metrics.time.latelabels",
    "LabelJoin": "mergeable_metrics.time.latelabels",
    "join_batches": "mergeable_metrics.time.latelabels",
    # the float state kinds the JVM aggregates fold too (spark_metrics/jvm_float_kinds.py)
    "ProbabilitySumsState": "mergeable_metrics.metrics.calibration",
    "CalibrationBinsState": "mergeable_metrics.metrics.calibration",
    "RegressionMomentsState": "mergeable_metrics.metrics.regression",
    "ScoreDistributionState": "mergeable_metrics.states.score_distribution",
    "Class0ScoreDistributionState": "mergeable_metrics.states.score_distribution",
    "ClassScoreDistributionState": "mergeable_metrics.states.score_distribution",
    "AbsoluteErrorDistributionState": "mergeable_metrics.metrics.regression_quantiles",
    "RegressionTermsState": "mergeable_metrics.metrics.regression_terms",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())


if TYPE_CHECKING:  # static type checkers and IDEs see the eager imports
    from mergeable_metrics._util.limits import MAX_NUM_CLASSES  # noqa: F401
    from mergeable_metrics._util.nulls import NULL  # noqa: F401
    from mergeable_metrics.collection.plan import Plan, make_task  # noqa: F401
    from mergeable_metrics.evaluation.accumulator import Accumulator  # noqa: F401
    from mergeable_metrics.evaluation.evaluation import Evaluation, extract_columns, missing_row_column, num_rows, resolve_evaluation, rows_to_columns  # noqa: F401
    from mergeable_metrics.evaluation.profile import KeyCounts, ProfileSummary, SliceProfile, SliceProfiler, summarize_part  # noqa: F401
    from mergeable_metrics.evaluation.thresholds import (  # noqa: F401
        CHANGE_KEYS,
        CI_COMPARED,
        DATA,
        ENTRY_KEYS,
        EXIT_MISMATCH,
        EXIT_OK,
        EXIT_REGRESSION,
        FAILING,
        INTERVAL_KEYS,
        METRIC_KEYS,
        TOP_KEYS,
        VALUE_CHECKS,
        Thresholds,
        ThresholdsError,
        check_value,
        validate_entries,
        as_thresholds,
        read_document,
        mismatch_line,
        failure_message,
        entries_from_rows,
        check_expectations,
        ci_settings,
        compare,
        config_differences,
        format_value,
        match_metric,
        parse_thresholds,
        rule_text,
        spec_columns,
    )
    from mergeable_metrics.inputs.validation import SCORES_FINITE, WEIGHTS_RULE, classes_hint, invalid_value_message, label_rule, two_class_hint  # noqa: F401
    from mergeable_metrics.metrics.base import REGISTRY, UndefinedMetricWarning, parse_metric_string, resolve, unknown_metric_hint  # noqa: F401
    from mergeable_metrics.metrics.calibration import CalibrationBinsState, ProbabilitySumsState  # noqa: F401
    from mergeable_metrics.metrics.regression import RegressionMomentsState  # noqa: F401
    from mergeable_metrics.results.results import (
        Comparison,
        INTEGER_METRICS,
        ROW_COLUMNS,
        SUPPRESSED_SLICES,
        Results,
        SliceResult,
        WINDOW_COLUMNS,
        slice_from_json,
        slice_to_json,
        window_bound,
    )  # noqa: F401
    from mergeable_metrics.slicing.assign import OVERALL, assign_slices  # noqa: F401
    from mergeable_metrics.slicing.values import canonical_value  # noqa: F401
    from mergeable_metrics.states.base import BinaryConfusionState, CELL_STATES, ConfusionMatrixState, ExampleCountState, State, states_from_cells  # noqa: F401
    from mergeable_metrics.states.codec import layout_to_json  # noqa: F401
    from mergeable_metrics.states.score_distribution import Class0ScoreDistributionState, ClassScoreDistributionState, ScoreDistributionState  # noqa: F401
    from mergeable_metrics.metrics.regression_quantiles import AbsoluteErrorDistributionState  # noqa: F401
    from mergeable_metrics.metrics.regression_terms import RegressionTermsState  # noqa: F401
    from mergeable_metrics.states.codec import slice_key_from_json, slice_key_to_json  # noqa: F401
    from mergeable_metrics.time.continual import ContinualEvaluation, EVENT_COLUMNS, OCLMetrics  # noqa: F401
    from mergeable_metrics.time.latelabels import COUNT_NAMES, INVALID_LABEL, INVALID_PRED, JoinCounts, LabelJoin, join_batches  # noqa: F401
    from mergeable_metrics.time.prequential import PrequentialEvaluation, PrequentialResults, WINDOW_COLUMN  # noqa: F401
    from mergeable_metrics.time.windows import (
        MAX_US,
        MIN_US,
        TIME_RANGE_RULE,
        TimeWindows,
        WindowedEvaluation,
        parse_duration,
        take_rows,
        to_micros,
        window_from_micros,
    )  # noqa: F401
