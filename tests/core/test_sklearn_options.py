"""scikit-learn's last options (issue 29, item 8), each against scikit-learn itself: hamming_loss
on 1-D labels bit for bit, roc_auc@max_fpr on multilabel tasks (refused on multiclass tasks, as
scikit-learn refuses it), ndcg / dcg with per-query sample_weight, multioutput as an array of
output weights, brier_score's scale_by_half."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn import metrics as skm

from mergeable_metrics import MetricCollection, UndefinedMetricWarning


# --- hamming_loss on 1-D labels: mismatch weight over total weight, bit for bit ---------------
def test_hamming_loss_1d_is_bit_identical_to_sklearn():
    mc = MetricCollection("hamming_loss")
    mc.update([0, 0, 1], y_pred=[0, 1, 1])
    got = mc.compute()["hamming_loss"]
    assert got == skm.hamming_loss([0, 0, 1], [0, 1, 1]) == 0.3333333333333333  # 1 - 2/3 would be 0.33333333333333337


@pytest.mark.parametrize("seed", range(20))
def test_hamming_loss_1d_random_bit_identical(seed):
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(1, 60)), int(rng.integers(2, 5))
    y, p = rng.integers(0, k, n), rng.integers(0, k, n)
    w = rng.integers(1, 5, n).astype(float) if seed % 2 else None
    kind = {"num_classes": k, "multiclass": True} if k > 2 else {}
    mc = MetricCollection("hamming_loss", **kind)
    if k == 2:
        mc.update(y, y_score=p.astype(float), sample_weight=w)
    else:
        mc.update(y, y_pred=p, sample_weight=w)
    assert mc.compute()["hamming_loss"] == skm.hamming_loss(y, p, sample_weight=w)


def test_hamming_loss_1d_fractional_weights_within_a_few_ulps():
    """With fractional weights the sums run in another order than numpy's pairwise ``np.average``:
    not bit for bit (docs/metrics.md says so), within a few ulps of scikit-learn's."""
    rng = np.random.default_rng(2)
    differ = 0
    for _ in range(100):
        n = int(rng.integers(1, 200))
        y, p, w = rng.integers(0, 3, n), rng.integers(0, 3, n), rng.random(n)
        mc = MetricCollection("hamming_loss", num_classes=3, multiclass=True)
        mc.update(y, y_pred=p, sample_weight=w)
        got, want = mc.compute()["hamming_loss"], skm.hamming_loss(y, p, sample_weight=w)
        assert abs(got - want) <= 8 * np.spacing(want), (n, got, want)
        differ += got != want
    assert differ > 0  # the docs' caveat is real


# --- roc_auc@max_fpr: partial AUC (McClish-standardised) per label of a multilabel task --------
def _multilabel(seed, n=40, L=3):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, (n, L))
    s = np.round(rng.random((n, L)) * 0.6 + 0.4 * y, 2)  # ties included
    return y, s, rng.integers(1, 4, n).astype(float)


@pytest.mark.parametrize("average", ["macro", "weighted", "micro", None])
@pytest.mark.parametrize("max_fpr", [0.1, 0.35, 1.0])
def test_roc_auc_max_fpr_multilabel_matches_sklearn(average, max_fpr):
    y, s, w = _multilabel(int(max_fpr * 100))
    key = f"roc_auc@{average or 'none'}@max_fpr={max_fpr}"
    for weights in (None, w):
        mc = MetricCollection(key, task="multilabel", num_classes=3)
        for part in (slice(0, 13), slice(13, 40)):  # two batches: the state is the one-pass state
            mc.update(y[part], y_score=s[part], sample_weight=None if weights is None else weights[part])
        want = skm.roc_auc_score(y, s, average=average, max_fpr=max_fpr, sample_weight=weights)
        np.testing.assert_allclose(mc.compute()[key], want, rtol=1e-12, atol=0)


def test_roc_auc_max_fpr_refused_on_multiclass_as_sklearn_refuses_it():
    y = np.array([0, 1, 2, 1, 0, 2])
    s = np.random.default_rng(0).dirichlet([1, 1, 1], 6)
    with pytest.raises(ValueError, match="Partial AUC computation not available in multiclass setting"):
        skm.roc_auc_score(y, s, multi_class="ovr", max_fpr=0.5)
    with pytest.raises(ValueError, match="max_fpr.*not available for multiclass tasks, as in scikit-learn"):
        MetricCollection("roc_auc@max_fpr=0.5", num_classes=3, multiclass=True)


def test_roc_auc_max_fpr_with_samples_average_is_refused_by_name():
    with pytest.raises(ValueError, match="max_fpr.*average='samples'"):
        MetricCollection("roc_auc@samples@max_fpr=0.5", task="multilabel", num_classes=3)


# --- brier_score@scale_by_half (scikit-learn's brier_score_loss(scale_by_half=...)) -------------
@pytest.mark.parametrize("sbh", ["auto", True, False])
@pytest.mark.parametrize("k", [2, 3, 4])
def test_brier_scale_by_half_matches_sklearn(sbh, k):
    rng = np.random.default_rng(k)
    n = 30
    y = rng.integers(0, k, n)
    w = rng.integers(1, 4, n).astype(float)
    key = "brier_score" if sbh == "auto" else f"brier_score@scale_by_half={str(sbh).lower()}"
    P = rng.dirichlet(np.ones(k), n)
    if k == 2:  # binary task: one positive-class column
        mc = MetricCollection(key)
        mc.update(y, y_score=P[:, 1], sample_weight=w)
        want = skm.brier_score_loss(y, P[:, 1], sample_weight=w, scale_by_half=sbh)
    else:
        mc = MetricCollection(key, num_classes=k, multiclass=True)
        mc.update(y, y_score=P, sample_weight=w)
        want = skm.brier_score_loss(y, P, sample_weight=w, labels=list(range(k)), scale_by_half=sbh)
    np.testing.assert_allclose(mc.compute()[key], want, rtol=1e-14, atol=0)
    if k == 2:
        two = MetricCollection(key, num_classes=2, multiclass=True)  # the same rows as a 2-column multiclass task
        two.update(y, y_score=P, sample_weight=w)
        np.testing.assert_allclose(two.compute()[key], skm.brier_score_loss(y, P, sample_weight=w, scale_by_half=sbh), rtol=1e-14, atol=0)


def test_brier_scale_by_half_bad_value_and_key():
    with pytest.raises(ValueError, match="scale_by_half must be auto, true or false"):
        MetricCollection("brier_score@scale_by_half=2")
    with pytest.warns(UndefinedMetricWarning):  # no rows: NaN; the default is the plain key
        assert list(MetricCollection("brier_score@scale_by_half=auto").compute()) == ["brier_score"]


# --- multioutput= as an array of output weights (regression, as scikit-learn) ------------------
_MULTIOUTPUT = {
    "mse": skm.mean_squared_error,
    "rmse": skm.root_mean_squared_error,
    "mae": skm.mean_absolute_error,
    "mape": skm.mean_absolute_percentage_error,
    "r2": skm.r2_score,
    "explained_variance": skm.explained_variance_score,
    "median_absolute_error": skm.median_absolute_error,
    "msle": skm.mean_squared_log_error,
    "mean_pinball_loss": skm.mean_pinball_loss,
}


@pytest.mark.parametrize("name", sorted(_MULTIOUTPUT))
def test_multioutput_array_of_weights_matches_sklearn(name):
    rng = np.random.default_rng(len(name))
    y = rng.random((25, 3)) * 4
    p = y + rng.normal(0, 0.5, (25, 3)) ** 2
    w = rng.integers(1, 4, 25).astype(float)
    weights = [0.2, 0.0, 1.3]
    key = f"{name}@multioutput=0.2|0|1.3"
    mc = MetricCollection(key, task="regression", num_outputs=3)
    mc.update(y[:10], y_pred=p[:10], sample_weight=w[:10])
    mc.update(y[10:], y_pred=p[10:], sample_weight=w[10:])
    want = _MULTIOUTPUT[name](y, p, sample_weight=w, multioutput=weights)
    np.testing.assert_allclose(mc.compute()[key], want, rtol=1e-13, atol=0)
    # the same weights as a Python sequence give the same key and value
    from mergeable_metrics.metrics import REGISTRY, Task

    m = REGISTRY[name](Task(kind="regression", num_outputs=3), multioutput=np.array(weights))
    assert m.resolved_key == key


def test_multioutput_weights_checked_as_sklearn():
    with pytest.raises(ValueError, match="equally many custom weights"):
        skm.mean_squared_error(np.zeros((2, 3)), np.zeros((2, 3)), multioutput=[1, 2])
    with pytest.raises(ValueError, match=r"as many multioutput weights \(2\) as outputs \(3\)"):
        MetricCollection("mse@multioutput=1|2", task="regression", num_outputs=3)
    with pytest.raises(ValueError, match="finite numbers >= 0 with a positive sum"):
        MetricCollection("mse@multioutput=0|0", task="regression", num_outputs=2)
    with pytest.raises(ValueError, match=r"multioutput must be one of .*; got 'uniform' \(or an array of output weights"):
        MetricCollection("mse@multioutput=uniform", task="regression", num_outputs=2)


# --- ndcg / dcg with sample_weight: one weight per query, as scikit-learn's ndcg_score ----------
def _queries(seed, q=12, m=6):
    rng = np.random.default_rng(seed)
    rel = rng.integers(0, 4, (q, m)).astype(float)
    rel[:, 0] = np.maximum(rel[:, 0], 1)  # every query has a relevant item (scikit-learn scores one without as 0; here it is left out)
    score = np.round(rng.random((q, m)), 1)  # ties included
    return rel, score, rng.integers(0, 5, q).astype(float) * 0.5  # weights, some 0


@pytest.mark.parametrize("k", [None, 1, 3])
@pytest.mark.parametrize("seed", range(3))
def test_ndcg_dcg_sample_weight_per_query_matches_sklearn(k, seed):
    rel, score, w = _queries(seed)
    q, m = rel.shape
    keys = [f"ndcg@k={k}" if k else "ndcg", f"dcg@k={k}" if k else "dcg"]
    mc = MetricCollection(*keys, task="regression")
    qid = np.repeat(np.arange(q), m)
    perm = np.random.default_rng(seed).permutation(q * m)  # rows of a query in any order and batch
    for part in np.array_split(perm, 3):
        mc.update(rel.ravel()[part], y_score=score.ravel()[part], query=qid[part], sample_weight=np.repeat(w, m)[part])
    got = mc.compute()
    np.testing.assert_allclose(got[keys[0]], skm.ndcg_score(rel, score, k=k, sample_weight=w), rtol=1e-13, atol=0)
    np.testing.assert_allclose(got[keys[1]], skm.dcg_score(rel, score, k=k, sample_weight=w), rtol=1e-13, atol=0)


def test_ndcg_sample_weight_through_evaluation_weight_col():
    from mergeable_metrics import Evaluation

    rel, score, w = _queries(7)
    q, m = rel.shape
    data = {"q": np.repeat(np.arange(q), m), "s": score.ravel(), "rel": rel.ravel(), "w": np.repeat(w, m)}
    ev = Evaluation(label_col="rel", score_col="s", query_col="q", weight_col="w", metrics=["ndcg@k=3", "dcg"])
    got = ev.evaluate(data).overall.metrics
    np.testing.assert_allclose(got["ndcg@3"], skm.ndcg_score(rel, score, k=3, sample_weight=w), rtol=1e-13, atol=0)
    np.testing.assert_allclose(got["dcg"], skm.dcg_score(rel, score, sample_weight=w), rtol=1e-13, atol=0)


def test_a_query_weight_differing_between_rows_is_refused_naming_the_query():
    mc = MetricCollection("ndcg", task="regression")
    with pytest.raises(ValueError, match=r"column 'query': query 'b' has rows of different sample weights \(1.0 at row 1, 2.0 at row 2\)"):
        mc.update([1, 0, 2], y_score=[0.1, 0.2, 0.3], query=["a", "b", "b"], sample_weight=[3, 1, 2])
    mc.update([1, 0], y_score=[0.1, 0.2], query=["a", "b"], sample_weight=[3, 1])
    mc.update([2], y_score=[0.3], query=["b"], sample_weight=[2])  # the same query, another batch, another weight
    with pytest.raises(ValueError, match="rows of different sample weights"):
        mc.compute()


def test_retrieval_state_bytes_of_kind_version_1_read_with_weight_1():
    from mergeable_metrics.states.base import State

    # a RetrievalState of kind version 1 (fields query, score, relevance): queries 1 (scores 0.1, 0.5;
    # relevance 1, 0) and 2 (score 0.2, relevance 2)
    blob = bytes.fromhex(
        "4d4d5303090072657472696576616c01020000007b7d03000500717565727902010300000000000000010000000000000001000000000000000200000000000000050073636f7265010103000000000000009a9999999999b93f000000000000e03f9a9999999999c93f090072656c6576616e636501010300000000000000000000000000f03f00000000000000000000000000000040b756a732"
    )
    got = State.decode(blob)
    assert got["query"].tolist() == [1, 1, 2] and got["score"].tolist() == [0.1, 0.5, 0.2]
    assert got["relevance"].tolist() == [1.0, 0.0, 2.0] and got["weight"].tolist() == [1.0, 1.0, 1.0]
