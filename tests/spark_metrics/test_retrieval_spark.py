"""Ranking and retrieval metrics (``query_col``) through ``mergeable_metrics.spark.compute_metrics``: each
query's rows are spread over partitions (a random repartition), and the results equal
``mergeable_metrics.Evaluation`` in process, scikit-learn's ``ndcg_score`` per query and Spark MLlib's own
``RankingMetrics`` (precision@k, recall@k, MAP, MAP@k)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import mergeable_metrics
from tests._helpers.retrieval import retrieval_data, sk_ndcg_mean

pytestmark = pytest.mark.filterwarnings("ignore::mergeable_metrics.metrics.base.UndefinedMetricWarning")

METRICS = ["ndcg@k=10", "map@k=3", "map", "mrr", "retrieval_precision@k=3", "retrieval_recall@k=3", "hit_rate@k=2", "r_precision", "dcg@k=10"]


def _frame(spark, data):
    return spark.createDataFrame(pd.DataFrame(data)).repartition(4)


def test_queries_split_across_partitions_give_the_local_results(spark):
    from mergeable_metrics.spark import collect_results, compute_metrics

    data = retrieval_data(12, n_queries=25)
    ev = mergeable_metrics.Evaluation(label_col="rel", score_col="s", query_col="q", slices=["g"], metrics=METRICS)
    df = _frame(spark, data)
    parts = df.rdd.glom().map(lambda rows: sorted({r["q"] for r in rows})).collect()
    assert sum(len(p) for p in parts) > 25  # some query's rows are in several partitions
    got = collect_results(compute_metrics(df, evaluation=ev), ev)
    want = ev.evaluate(data)
    assert got.to_json() == want.to_json()
    np.testing.assert_allclose(got.overall.metrics["ndcg@10"], sk_ndcg_mean(data, 10), rtol=1e-13)


def test_binary_metrics_equal_spark_ranking_metrics(spark):
    from pyspark.mllib.evaluation import RankingMetrics

    from mergeable_metrics.spark import collect_results, compute_metrics

    data = retrieval_data(13, n_queries=30, ties=False, graded=False)
    ev = mergeable_metrics.Evaluation(label_col="rel", score_col="s", query_col="q", metrics=["retrieval_precision@3", "retrieval_recall@3", "map", "map@3"])
    got = collect_results(compute_metrics(_frame(spark, data), evaluation=ev), ev).overall.metrics
    # MLlib's input: per query, the items ranked by score and the set of relevant items (queries
    # without a relevant item are undefined here and left out; MLlib would count them as 0)
    pairs = []
    for key in dict.fromkeys(data["q"].tolist()):
        m = data["q"] == key
        items = np.flatnonzero(m)
        ranked = items[np.argsort(-data["s"][m])].tolist()
        relevant = items[data["rel"][m] > 0].tolist()
        if relevant:
            pairs.append((ranked, relevant))
    rm = RankingMetrics(spark.sparkContext.parallelize(pairs, 2))
    np.testing.assert_allclose(got["retrieval_precision@3"], rm.precisionAt(3), rtol=1e-12)
    np.testing.assert_allclose(got["retrieval_recall@3"], rm.recallAt(3), rtol=1e-12)
    np.testing.assert_allclose(got["map"], rm.meanAveragePrecision, rtol=1e-12)
    np.testing.assert_allclose(got["map@3"], rm.meanAveragePrecisionAt(3), rtol=1e-12)
