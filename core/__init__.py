"""mergeable-metrics: exact, mergeable evaluation metrics (imports numpy and pyarrow, never
apache_beam or pyspark).

Two tiers, one vocabulary each:

* the user tier, this module (``import mergeable_metrics as mm``): objects you ``update``,
  ``compute`` and ``merge`` (:class:`MetricCollection`, :class:`BinaryMetrics`,
  :class:`SingleMetric`, :class:`ContinualEvaluation`; bytes: ``encode()`` / ``decode(data)``),
  :class:`Evaluation` ``(...).evaluate(table)`` -> :class:`Results`, the module-level
  :func:`merge`, and the registry and extension base class (:data:`REGISTRY`, :class:`Metric`;
  the rest of the extension tier is :mod:`mergeable_metrics.metrics`);
* the engine tier, :mod:`mergeable_metrics.engine` (the one module the Beam and Spark adapters
  import): accumulators that speak ``zero`` / ``fold`` / ``merge`` / ``merge_into`` / ``finish``
  and ``encode`` / ``decode``.

Merging, one convention: an object you ``update`` merges ``other`` into itself in place and
returns itself (``for w in workers: total.merge(w)``; ``c = a.merge(b)`` is ``a``); values passed
around are immutable to ``merge``, which returns a new value and leaves both inputs unchanged
(``state.merge(other)``, ``plan.merge(a, b)``, ``evaluation.merge(a, b)``,
``profiler.merge(a, b)``, ``profile.merge(other)``); ``merge_into`` merges into its first
argument (or ``self``) in place and returns it, where engines merge many partial results into one
(``evaluation.merge_into(a, b)``, ``profiler.merge_into(a, b)``, ``profile.merge_into(other)``;
states have none). The module-level :func:`merge` ``(a, b, ...)`` returns a new object of any of
these and leaves its inputs unchanged. ``fold`` of an accumulator (``evaluation.fold(acc, batch)``,
``profiler.fold``) mutates and returns it.

:class:`Evaluation`'s options are one table, :data:`mergeable_metrics.evaluation.options.OPTIONS`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mergeable_metrics._util.public import lazy_exports

#: the user tier: every public name and the module that defines it; imported on first use (PEP
#: 562), so that ``import mergeable_metrics.pipelines.pytest_plugin`` (loaded by pytest at
#: start-up) and the adapters' light modules import no numpy until a name is used. Extension
#: names (``Task``, ``Averaging``, ``resolve``, family bases, input formats) are
#: :mod:`mergeable_metrics.metrics`'s; state kinds :mod:`mergeable_metrics.states`'; what the
#: Beam and Spark adapters use, :mod:`mergeable_metrics.engine`'s.
_EXPORTS: dict[str, str] = {
    # in-process: update / compute / merge
    "MetricCollection": "mergeable_metrics.collection.plan",
    "BinaryMetrics": "mergeable_metrics.collection.plan",
    "SingleMetric": "mergeable_metrics.collection.tracker",
    "merge": "mergeable_metrics.collection.tracker",
    # a table, sliced: Evaluation(...).evaluate(table) -> Results
    "Evaluation": "mergeable_metrics.evaluation.evaluation",
    "Results": "mergeable_metrics.results.results",
    "SliceResult": "mergeable_metrics.results.results",
    "SliceSpec": "mergeable_metrics.slicing.spec",
    "aggregate": "mergeable_metrics.aggregation",
    # metrics in time
    "TimeWindows": "mergeable_metrics.time.windows",
    "WindowedEvaluation": "mergeable_metrics.time.windows",
    "PrequentialEvaluation": "mergeable_metrics.time.prequential",
    "ContinualEvaluation": "mergeable_metrics.time.continual",
    # the registry and the extension base class (more in mergeable_metrics.metrics)
    "Metric": "mergeable_metrics.metrics.base",
    "REGISTRY": "mergeable_metrics.metrics.base",
    "UndefinedMetricWarning": "mergeable_metrics.metrics.base",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())


if TYPE_CHECKING:  # static type checkers and IDEs see the eager imports
    from mergeable_metrics.aggregation import aggregate  # noqa: F401
    from mergeable_metrics.collection.plan import BinaryMetrics, MetricCollection  # noqa: F401
    from mergeable_metrics.collection.tracker import SingleMetric, merge  # noqa: F401
    from mergeable_metrics.evaluation.evaluation import Evaluation  # noqa: F401
    from mergeable_metrics.metrics.base import REGISTRY, Metric, UndefinedMetricWarning  # noqa: F401
    from mergeable_metrics.results.results import Results, SliceResult  # noqa: F401
    from mergeable_metrics.slicing.spec import SliceSpec  # noqa: F401
    from mergeable_metrics.time.continual import ContinualEvaluation  # noqa: F401
    from mergeable_metrics.time.prequential import PrequentialEvaluation  # noqa: F401
    from mergeable_metrics.time.windows import TimeWindows, WindowedEvaluation  # noqa: F401
