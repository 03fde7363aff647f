"""``MetricsEvaluator``: registered metrics as a pyspark.ml Evaluator, inside a CrossValidator,
equal to scikit-learn on the same predictions."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("pyspark")
from sklearn.metrics import accuracy_score, average_precision_score, f1_score, log_loss, roc_auc_score  # noqa: E402

from mergeable_metrics.spark.evaluator import MetricsEvaluator  # noqa: E402


def _data(n: int = 400, seed: int = 0, classes: int = 2):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3))
    if classes == 2:
        logit = 1.5 * x[:, 0] - 1.0 * x[:, 1] + 0.3 * rng.normal(size=n)
        y = (logit + rng.logistic(size=n) > 0).astype(float)
    else:
        y = (np.digitize(x[:, 0] + 0.5 * rng.normal(size=n), [-0.5, 0.5])).astype(float)
    w = rng.integers(1, 4, n).astype(float)
    return x, y, w


def _df(spark, x, y, w=None):
    from pyspark.ml.linalg import Vectors

    rows = [(Vectors.dense(xi.tolist()), float(yi), float(wi)) for xi, yi, wi in zip(x, y, w if w is not None else np.ones(len(y)))]
    return spark.createDataFrame(rows, ["features", "label", "w"]).repartition(3)


def test_params_and_direction():
    ev = MetricsEvaluator(metricName="roc_auc", labelCol="y")
    assert ev.getMetricName() == "roc_auc" and ev.getLabelCol() == "y"
    assert ev.isLargerBetter() is True
    assert MetricsEvaluator(metricName="log_loss").isLargerBetter() is False
    assert MetricsEvaluator(metricName="ece@n_bins=15").isLargerBetter() is False
    assert MetricsEvaluator().getMetricName() == "f1"
    assert ev.setMetricName("brier").isLargerBetter() is False  # aliases resolve
    with pytest.raises(ValueError, match="unknown metricName 'f2'"):
        MetricsEvaluator(metricName="f2")
    # Spark's own evaluators' names suggest ours, and the message is not a list of every metric
    for spark_name, ours in (("areaUnderPR", "average_precision"), ("areaUnderROC", "roc_auc"), ("weightedPrecision", "precision@weighted")):
        with pytest.raises(ValueError) as e:
            MetricsEvaluator(metricName=spark_name)
        assert f"unknown metricName {spark_name!r} (did you mean {ours!r}?" in str(e.value) and "confusion_matrix" not in str(e.value)
    with pytest.raises(ValueError, match="no better direction"):
        MetricsEvaluator(metricName="tp").isLargerBetter()
    copy = ev.copy({ev.metricName: "accuracy"})
    assert copy.getMetricName() == "accuracy" and ev.getMetricName() == "brier"


def test_cross_validator_picks_a_model_and_the_metric_matches_sklearn(spark):
    from pyspark.ml.classification import LogisticRegression
    from pyspark.ml.functions import vector_to_array
    from pyspark.ml.tuning import CrossValidator, ParamGridBuilder

    x, y, w = _data()
    train = _df(spark, x[:300], y[:300], w[:300])
    test = _df(spark, x[300:], y[300:], w[300:])
    lr = LogisticRegression(maxIter=30)
    grid = ParamGridBuilder().addGrid(lr.regParam, [0.0, 5.0]).build()
    evaluator = MetricsEvaluator(metricName="roc_auc")
    cv = CrossValidator(estimator=lr, estimatorParamMaps=grid, evaluator=evaluator, numFolds=2, seed=7, parallelism=1)
    model = cv.fit(train)
    assert len(model.avgMetrics) == 2 and all(0.5 < m <= 1 for m in model.avgMetrics)
    best = int(np.argmax(model.avgMetrics))
    assert model.bestModel.getRegParam() == [0.0, 5.0][best]

    pred = model.bestModel.transform(test)
    pdf = pred.select("label", "w", "prediction", vector_to_array("probability").getItem(1).alias("p")).toPandas()
    got = evaluator.evaluate(pred)
    assert got == pytest.approx(roc_auc_score(pdf.label, pdf.p), rel=1e-12, abs=1e-12)
    # other metrics on the same predictions, weighted and unweighted
    assert MetricsEvaluator(metricName="f1").evaluate(pred) == pytest.approx(f1_score(pdf.label, pdf.prediction), rel=1e-12)
    assert MetricsEvaluator(metricName="accuracy", weightCol="w").evaluate(pred) == pytest.approx(
        accuracy_score(pdf.label, pdf.prediction, sample_weight=pdf.w), rel=1e-12
    )
    assert MetricsEvaluator(metricName="log_loss").evaluate(pred) == pytest.approx(log_loss(pdf.label, pdf.p), rel=1e-9)
    # pos_label=0 ranks by element 0 of the probability vector (issue 4)
    pdf0 = pred.select("label", vector_to_array("probability").getItem(0).alias("p0")).toPandas()
    got0 = MetricsEvaluator(metricName="average_precision@pos_label=0").evaluate(pred)
    assert got0 == pytest.approx(average_precision_score(pdf0.label, pdf0.p0, pos_label=0), rel=1e-12, abs=1e-12)
    # the threshold parameter applies to score-thresholded metrics
    at = MetricsEvaluator(metricName="f1@threshold=0.3").evaluate(pred)
    assert at == pytest.approx(f1_score(pdf.label, (pdf.p >= 0.3).astype(int)), rel=1e-12)


def test_multiclass_probability_vectors(spark):
    from pyspark.ml.classification import LogisticRegression
    from pyspark.ml.functions import vector_to_array

    x, y, _ = _data(300, seed=2, classes=3)
    df = _df(spark, x, y)
    pred = LogisticRegression(maxIter=30).fit(df).transform(df)
    pdf = pred.select("label", "prediction", vector_to_array("probability").alias("p")).toPandas()
    probs = np.stack(pdf.p.to_numpy())
    got = MetricsEvaluator(metricName="log_loss", numClasses=3).evaluate(pred)
    assert got == pytest.approx(log_loss(pdf.label, probs, labels=[0, 1, 2]), rel=1e-9)
    f1m = MetricsEvaluator(metricName="f1@macro", numClasses=3).evaluate(pred)
    assert f1m == pytest.approx(f1_score(pdf.label, pdf.prediction, average="macro"), rel=1e-12)


def test_errors(spark):
    x, y, _ = _data(40)
    from pyspark.sql import functions as F

    df = _df(spark, x, y).withColumn("prediction", F.lit(1.0))
    with pytest.raises(ValueError, match="needs scores: neither probabilityCol 'probability'"):
        MetricsEvaluator(metricName="roc_auc").evaluate(df)
    with pytest.raises(ValueError, match="is an array"):
        MetricsEvaluator(metricName="confusion_matrix").evaluate(df)
    # undefined value: AUC with one class only is NaN
    one = df.selectExpr("features", "0.0 as label", "0.7 as probability")
    assert math.isnan(MetricsEvaluator(metricName="roc_auc").evaluate(one))
