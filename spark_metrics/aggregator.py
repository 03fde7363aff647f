"""Spark's Aggregator vocabulary (``zero``, ``reduce``, ``merge``, ``finish``) over core states.

PySpark has no Python ``Aggregator``/UDAF class, so :class:`MetricsAggregator` is not registered
with Spark directly: :func:`mergeable_metrics.spark.compute_metrics` calls it inside ``mapInArrow`` (one
``reduce`` per Arrow record batch of a partition) and inside the grouped ``applyInArrow`` (``merge``
of the partial states of one slice, then ``finish``). It is plain Python and needs neither pyspark
nor a JVM, so it can also be used (and tested) on pandas chunks.
"""

from __future__ import annotations

from typing import Any

from mergeable_metrics.engine import Accumulator, Evaluation
from mergeable_metrics.engine import Results


class MetricsAggregator:
    """Spark ``Aggregator`` semantics mapped one-to-one onto a :class:`mergeable_metrics.Evaluation`.

    The buffer (accumulator) is core's ``{slice_key: tuple_of_states}`` dict, which always holds
    the overall slice ``()``. There is no metric math here: every method delegates to ``core``.

    Args:
        evaluation: the :class:`mergeable_metrics.Evaluation` (columns, slices, metrics) to run.

    Raises:
        TypeError: ``evaluation`` is not a :class:`mergeable_metrics.Evaluation`.

    Example:
        >>> import mergeable_metrics
        >>> ev = mergeable_metrics.Evaluation(label_col="y", score_col="s", metrics=["precision", "recall"])
        >>> agg = MetricsAggregator(ev)
        >>> a = agg.reduce(agg.zero(), {"y": [1, 0], "s": [0.9, 0.8]})
        >>> b = agg.reduce(agg.zero(), {"y": [1, 1], "s": [0.1, 0.7]}, row_offset=2)
        >>> agg.finish(agg.merge(a, agg.decode(agg.encode(b)))).overall.metrics
        {'precision': 0.6666666666666666, 'recall': 0.6666666666666666}
    """

    def __init__(self, evaluation: Evaluation):
        if not isinstance(evaluation, Evaluation):
            raise TypeError(f"evaluation must be a mergeable_metrics.Evaluation, got {type(evaluation).__name__}")
        self.evaluation = evaluation

    def zero(self) -> Accumulator:
        """A fresh buffer: the overall slice's zero states (``evaluation.zero()``)."""
        return self.evaluation.zero()

    def reduce(self, acc: Accumulator, batch: Any, row_offset: int = 0) -> Accumulator:
        """Fold one batch of rows into ``acc`` (mutated and returned; ``evaluation.fold``).

        Args:
            acc: a buffer from :meth:`zero` (or :meth:`decode`).
            batch: a pyarrow ``RecordBatch``/``Table``, a pandas ``DataFrame`` or a dict of (N,)
                columns, holding at least ``evaluation.columns``: the label (0/1 or [0, K) ints,
                bools or integer-valued floats), the score (finite floats) or prediction (ints),
                the optional weight (finite floats >= 0) and the slice columns (any atomic type;
                None/NaN form the ``None`` slice value).
            row_offset: position of the batch's first row in its input (used in error messages).

        Returns:
            ``acc``.

        Raises:
            ValueError: a missing column (listing the available ones), or an invalid value
                (naming column, value and row) when ``on_invalid="raise"``.
            TypeError: non-numeric values in the label/score/prediction/weight columns.
        """
        return self.evaluation.fold(acc, batch, row_offset=row_offset)

    def merge(self, a: Accumulator, b: Accumulator) -> Accumulator:
        """Merge buffer ``b`` into ``a`` (``a`` is mutated and returned; ``evaluation.merge_into``).

        Raises:
            ValueError: the buffers come from evaluations of different configuration.
        """
        return self.evaluation.merge_into(a, b)

    def finish(self, acc: Accumulator) -> Results:
        """Per-slice metric values from a merged buffer (``evaluation.finish``): overall first.

        An empty buffer gives the overall slice with ``n == 0`` and NaN (undefined) metrics.
        """
        return self.evaluation.finish(acc)

    def encode(self, acc: Accumulator) -> bytes:
        """Versioned, checksummed bytes of a buffer (core codec; never pickle)."""
        return self.evaluation.encode(acc)

    def decode(self, data: bytes) -> Accumulator:
        """Inverse of :meth:`encode`.

        Raises:
            ValueError: corrupted or foreign bytes, or states of another configuration.
            TypeError: ``data`` is not bytes.
        """
        return self.evaluation.decode(data)

    def __repr__(self) -> str:
        return f"MetricsAggregator(metrics={list(self.evaluation.plan.keys)}, columns={self.evaluation.columns})"
