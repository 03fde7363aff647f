"""Continual-learning metrics on Beam: :class:`ContinualCombineFn` and :class:`ComputeContinualMetrics`.

Elements are events, as row dicts ``{"trained_task", "step", "evaluated_task", label,
prediction, "position"}`` (``step`` None or absent: the evaluation after the task; ``position`` set:
a test-then-train row of the training stream, with ``evaluated_task`` None) or batches of them
(``pyarrow.RecordBatch`` / ``Table``, dicts of column arrays). All math is core's
(:class:`mergeable_metrics.ContinualEvaluation`); the accumulator is its exact state, encoded with core's codec.
"""

from __future__ import annotations

from typing import Any

import apache_beam as beam

from mergeable_metrics.engine import EVENT_COLUMNS, ContinualEvaluation, OCLMetrics

__all__ = ["ComputeContinualMetrics", "ContinualCombineFn"]

_FLUSH = 4096  # row dicts buffered before one vectorised fold


class _Accumulator:
    __slots__ = ("evaluation", "rows")

    def __init__(self, evaluation: ContinualEvaluation):
        self.evaluation = evaluation
        self.rows: list[dict] = []


class ContinualCombineFn(beam.CombineFn):
    """Folds evaluation events into a :class:`mergeable_metrics.ContinualEvaluation` (usable in
    ``CombineGlobally`` and ``CombinePerKey``); ``extract_output`` returns the evaluation
    (``.compute()`` gives :class:`mergeable_metrics.time.continual.OCLMetrics`).

    Args:
        num_tasks, num_classes, evaluations_per_task: as :class:`mergeable_metrics.ContinualEvaluation`.
        label_col, prediction_col: the event columns holding the true and predicted classes.
        max_instances, eval_window_size: test-then-train, as :class:`mergeable_metrics.ContinualEvaluation`.
    """

    def __init__(self, num_tasks: int, num_classes: int, evaluations_per_task: int = 0, label_col: str = "label", prediction_col: str = "prediction",
                 max_instances: int = 0, eval_window_size: int = 1000):  # fmt: skip
        ContinualEvaluation(num_tasks, num_classes, evaluations_per_task, max_instances, eval_window_size)  # check the configuration now
        self.config = (num_tasks, num_classes, evaluations_per_task, max_instances, eval_window_size)
        self.label_col, self.prediction_col = label_col, prediction_col

    def _names(self) -> list[str]:
        """The event columns as the elements name them (errors name the user's columns)."""
        names = {"label": self.label_col, "prediction": self.prediction_col}
        return [names.get(c, c) for c in EVENT_COLUMNS]

    def _columns(self, element: Any) -> dict[str, Any]:
        if hasattr(element, "schema"):  # Arrow
            have = element.schema.names
            return {c: element.column(c) for c in self._names() if c in have}
        return {c: element[c] for c in self._names() if c in element}

    def _flush(self, acc: _Accumulator) -> None:
        if acc.rows:
            rows, acc.rows = acc.rows, []
            cols = {c: [r.get(c) for r in rows] for c in self._names()}
            acc.evaluation.fold_events(cols, self.label_col, self.prediction_col)

    def create_accumulator(self) -> _Accumulator:
        return _Accumulator(ContinualEvaluation(*self.config))

    def add_input(self, acc: _Accumulator, element: Any) -> _Accumulator:
        if isinstance(element, dict) and not any(hasattr(v, "__len__") and not isinstance(v, (str, bytes)) for v in element.values()):
            acc.rows.append({c: element.get(c) for c in self._names()})
            if len(acc.rows) >= _FLUSH:
                self._flush(acc)
        else:
            acc.evaluation.fold_events(self._columns(element), self.label_col, self.prediction_col)
        return acc

    def merge_accumulators(self, accs: Any) -> _Accumulator:
        accs = list(accs)
        out = self.create_accumulator()
        for a in accs:
            self._flush(a)
            out.evaluation.merge(a.evaluation)
        return out

    def compact(self, acc: _Accumulator) -> _Accumulator:
        self._flush(acc)
        return acc

    def extract_output(self, acc: _Accumulator) -> ContinualEvaluation:
        self._flush(acc)
        return acc.evaluation

    def __reduce__(self) -> tuple:
        t, k, h, n, w = self.config
        return (type(self), (t, k, h, self.label_col, self.prediction_col, n, w))


class ComputeContinualMetrics(beam.PTransform):
    """Events -> one :class:`mergeable_metrics.time.continual.OCLMetrics` (``CombineGlobally(ContinualCombineFn)`` then ``compute``)."""

    def __init__(self, num_tasks: int, num_classes: int, evaluations_per_task: int = 0, label_col: str = "label", prediction_col: str = "prediction",
                 max_instances: int = 0, eval_window_size: int = 1000):  # fmt: skip
        super().__init__()
        self.fn = ContinualCombineFn(num_tasks, num_classes, evaluations_per_task, label_col, prediction_col, max_instances, eval_window_size)

    def expand(self, pcoll: Any) -> Any:
        def compute(ev: ContinualEvaluation) -> OCLMetrics:
            return ev.compute()

        return pcoll | "FoldEvents" >> beam.CombineGlobally(self.fn) | "OCLMetrics" >> beam.Map(compute)
