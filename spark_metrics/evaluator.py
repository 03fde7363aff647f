"""``MetricsEvaluator``: any registered metric as a ``pyspark.ml`` Evaluator (``CrossValidator``,
``TrainValidationSplit``, or ``evaluator.evaluate(predictions)``).

The value is computed exactly by :func:`mergeable_metrics.spark.compute_metrics` on the overall slice (partial
states per partition, merged after the shuffle; DataFrame API only), so it equals scikit-learn's on
the same predictions. ``isLargerBetter()`` comes from the metric's ``higher_is_better`` metadata.

Which column feeds the metric:

* metrics that read only predicted labels (``f1``, ``accuracy``, ``precision@macro``, ``mcc``, ...)
  use ``predictionCol``, the model's own decisions;
* metrics that need scores (``roc_auc``, ``average_precision``, ``log_loss``, ``brier_score``,
  ``ece``, ``top_k_accuracy``) or give a threshold (``f1@threshold=0.3``: positive when the
  positive-class score >= 0.3) use ``probabilityCol`` when the
  dataset has it, else ``rawPredictionCol``. A probability/raw-prediction *vector* (``VectorUDT``)
  is turned into an array with ``pyspark.ml.functions.vector_to_array``: binary tasks use element 1
  (the positive class; element 0 for ``pos_label=0`` metrics such as ``roc_auc@pos_label=0``),
  multiclass tasks the whole vector. Numeric columns are used as they are.
"""

from __future__ import annotations

import math
from typing import Any

from pyspark import keyword_only
from pyspark.ml.evaluation import Evaluator
from pyspark.ml.param import Param, Params, TypeConverters
from pyspark.ml.param.shared import HasLabelCol, HasPredictionCol, HasProbabilityCol, HasRawPredictionCol, HasWeightCol
from pyspark.ml.util import DefaultParamsReadable, DefaultParamsWritable

__all__ = ["MetricsEvaluator"]

_SCORE_NEEDS = {"score", "score_matrix", "probability"}


def _metric_class(metric: str) -> Any:
    from mergeable_metrics.engine import REGISTRY, parse_metric_string, unknown_metric_hint

    name, _, _ = parse_metric_string(metric)
    cls = REGISTRY.get(name) or REGISTRY.get(name.lower())
    if cls is None:  # Spark's names (areaUnderPR, weightedPrecision) suggest ours
        raise ValueError(f"unknown metricName {metric!r}{unknown_metric_hint(name)}; every name and alias is in the metrics table (docs/metrics.md)")
    return cls


def _check_metric_name(value: Any) -> str:
    value = TypeConverters.toString(value)
    _metric_class(value)
    return value


class MetricsEvaluator(
    Evaluator, HasLabelCol, HasPredictionCol, HasRawPredictionCol, HasProbabilityCol, HasWeightCol, DefaultParamsReadable, DefaultParamsWritable
):
    """Evaluate predictions with any metric of the registry, by its metric string.

    Args (Spark ``Params``, also settable with ``setX``):
        metricName: a metric string, e.g. ``"f1"``, ``"roc_auc"``, ``"f1@macro"``,
            ``"log_loss"``, ``"precision@threshold=0.7"`` (default ``"f1"``). Unknown names raise
            ``ValueError`` when set.
        labelCol: true labels (default ``"label"``): 0/1, or class ids in [0, K).
        predictionCol: predicted labels (default ``"prediction"``).
        probabilityCol: class probabilities, a vector or a number (default ``"probability"``).
        rawPredictionCol: raw scores, used when ``probabilityCol`` is not in the dataset
            (default ``"rawPrediction"``).
        weightCol: optional sample weights (finite, >= 0).
        numClasses: K; 2 (default) is a binary task, K > 2 multiclass.

    Example::

        cv = CrossValidator(estimator=LogisticRegression(), estimatorParamMaps=grid,
                            evaluator=MetricsEvaluator(metricName="roc_auc"), numFolds=3)

    ``evaluate`` returns a float (NaN where the metric is undefined, e.g. AUC with one class).
    Metrics whose value is an array (``roc_curve``, ``confusion_matrix``, ``f1@none``) cannot be
    used: ``evaluate`` raises ``ValueError``. ``isLargerBetter()`` raises ``ValueError`` for metrics
    without a direction (``higher_is_better`` None, e.g. counts), which cannot rank models.
    """

    metricName: Param[str] = Param(
        Params._dummy(), "metricName", "metric string of the mergeable-metrics registry, e.g. f1, roc_auc, f1@macro", typeConverter=TypeConverters.toString
    )
    numClasses: Param[int] = Param(Params._dummy(), "numClasses", "number of classes K (2 = binary)", typeConverter=TypeConverters.toInt)

    @keyword_only
    def __init__(
        self,
        *,
        metricName: str = "f1",
        labelCol: str = "label",
        predictionCol: str = "prediction",
        probabilityCol: str = "probability",
        rawPredictionCol: str = "rawPrediction",
        weightCol: str | None = None,
        numClasses: int = 2,
    ):
        super().__init__()
        self._setDefault(metricName="f1", labelCol="label", predictionCol="prediction", probabilityCol="probability",
                         rawPredictionCol="rawPrediction", numClasses=2)  # fmt: skip
        kwargs = {k: v for k, v in self._input_kwargs.items() if v is not None}
        self.setParams(**kwargs)

    @keyword_only
    def setParams(self, **kwargs: Any) -> "MetricsEvaluator":
        """Set any of the constructor's params (keyword arguments)."""
        if "metricName" in kwargs:
            _check_metric_name(kwargs["metricName"])
        if "numClasses" in kwargs and int(kwargs["numClasses"]) < 2:
            raise ValueError(f"numClasses must be >= 2, got {kwargs['numClasses']!r}")
        return self._set(**kwargs)

    def setMetricName(self, value: str) -> "MetricsEvaluator":
        return self.setParams(metricName=value)

    def getMetricName(self) -> str:
        return self.getOrDefault(self.metricName)

    def setNumClasses(self, value: int) -> "MetricsEvaluator":
        return self.setParams(numClasses=value)

    def getNumClasses(self) -> int:
        return self.getOrDefault(self.numClasses)

    def setLabelCol(self, value: str) -> "MetricsEvaluator":
        return self._set(labelCol=value)

    def setPredictionCol(self, value: str) -> "MetricsEvaluator":
        return self._set(predictionCol=value)

    def setProbabilityCol(self, value: str) -> "MetricsEvaluator":
        return self._set(probabilityCol=value)

    def setRawPredictionCol(self, value: str) -> "MetricsEvaluator":
        return self._set(rawPredictionCol=value)

    def setWeightCol(self, value: str) -> "MetricsEvaluator":
        return self._set(weightCol=value)

    # -- evaluation --------------------------------------------------------------------------
    def isLargerBetter(self) -> bool:
        """The metric's ``higher_is_better`` (True for f1, AUC ...; False for log loss, ECE ...).

        Raises:
            ValueError: the metric has no direction (``higher_is_better`` is None).
        """
        cls = _metric_class(self.getMetricName())
        hib = getattr(cls, "higher_is_better", None)
        if hib is None:
            raise ValueError(f"metric {self.getMetricName()!r} has no better direction (higher_is_better is None); it cannot rank models")
        return bool(hib)

    def _task_kwargs(self) -> dict[str, Any]:
        k = self.getNumClasses()
        return {"num_classes": k if k > 2 else None}

    def evaluation(self, dataset: Any) -> tuple[Any, Any]:
        """The :class:`mergeable_metrics.Evaluation` and the prepared DataFrame (label, score or prediction,
        weight) for ``dataset`` (exposed for tests and debugging)."""
        from pyspark.ml.functions import vector_to_array
        from pyspark.ml.linalg import VectorUDT
        from pyspark.sql import functions as F

        from mergeable_metrics.engine import Evaluation
        from mergeable_metrics.engine import resolve
        from mergeable_metrics.engine import make_task

        metric = self.getMetricName()
        kw = self._task_kwargs()
        resolved = resolve(metric, make_task(None, kw["num_classes"]))
        needs = resolved.needs()
        label = self.getLabelCol()
        weight = self.getOrDefault(self.weightCol) if self.isDefined(self.weightCol) else None
        columns = list(dataset.columns)
        cols = [F.col(label).alias("label")]
        if needs & _SCORE_NEEDS or "threshold" in resolved.given:  # f1@threshold=0.3 thresholds the scores
            source = self.getProbabilityCol() if self.getProbabilityCol() in columns else self.getRawPredictionCol()
            if source not in columns:
                raise ValueError(
                    f"metric {metric!r} needs scores: neither probabilityCol {self.getProbabilityCol()!r} nor rawPredictionCol "
                    f"{source!r} is in the dataset (columns: {columns})"
                )
            score = F.col(source)
            if isinstance(dataset.schema[source].dataType, VectorUDT):
                score = vector_to_array(score)
                if kw["num_classes"] is None:  # the positive class's element: 1, or 0 with pos_label=0
                    score = score.getItem(0 if resolved.p.get("pos_label") == 0 else 1)
            cols.append(score.alias("score"))
            role = {"score_col": "score"}
        else:
            pred = self.getPredictionCol()
            if pred not in columns:
                raise ValueError(f"predictionCol {pred!r} is not in the dataset (columns: {columns})")
            cols.append(F.col(pred).alias("prediction"))
            role = {"prediction_col": "prediction"}
        if weight:
            cols.append(F.col(weight).alias("weight"))
        ev = Evaluation(label_col="label", weight_col="weight" if weight else None, metrics=[metric], **role, **kw)
        return ev, dataset.select(*cols)

    def _evaluate(self, dataset: Any) -> float:
        import warnings

        import numpy as np

        from mergeable_metrics.engine import UndefinedMetricWarning
        from mergeable_metrics.spark.compute import evaluate

        ev, df = self.evaluation(dataset)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            results = evaluate(df, evaluation=ev)
        key = ev.plan.keys[0]
        value = results.overall.metrics[key]
        if np.ndim(value) != 0:
            raise ValueError(f"metric {key!r} is an array of shape {np.shape(value)}; an Evaluator needs a scalar metric")
        value = float(value)
        return value if not math.isnan(value) else float("nan")
