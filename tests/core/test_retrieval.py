"""Ranking and retrieval metrics grouped by query (mergeable_metrics.metrics.retrieval, Evaluation(query_col=)).

References: scikit-learn's ``ndcg_score`` / ``dcg_score`` / ``average_precision_score`` per query,
hand-computed cases, and a plain-Python per-query reference written from the definitions (rank by
decreasing score, less relevant first among equal scores).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import average_precision_score, dcg_score, ndcg_score

from mergeable_metrics import Evaluation
from mergeable_metrics.metrics.base import UndefinedMetricWarning
from mergeable_metrics.metrics.retrieval import RetrievalLayout, RetrievalState, per_query_values
from tests._helpers.retrieval import queries as _queries
from tests._helpers.retrieval import retrieval_data as _dataset
from tests._helpers.retrieval import sk_ndcg_mean
from tests._helpers.sharding import merge_tree, random_shards

BINARY = ["map", "map@k=3", "mrr", "retrieval_precision@k=3", "retrieval_recall@k=3", "hit_rate@k=2", "r_precision", "retrieval_precision"]
GRADED = ["ndcg", "ndcg@k=3", "dcg", "dcg@k=2"]


def _evaluation(metrics, **kw):
    return Evaluation(label_col="rel", score_col="s", query_col="q", metrics=metrics, **kw)


def _values(data, metrics, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return _evaluation(metrics, **kw).evaluate(data).slices[0].metrics


def _reference(metric: str, k, rel: np.ndarray, s: np.ndarray) -> float | None:
    """One query's value from the definitions, by a plain loop (None: undefined)."""
    order = sorted(range(len(s)), key=lambda i: (-s[i], rel[i]))  # pessimistic among ties
    b = [1 if rel[i] > 0 else 0 for i in order]
    R = sum(b)
    if R == 0:
        return None
    top = b if k is None else b[:k]
    if metric == "retrieval_precision":
        return sum(top) / (len(b) if k is None else k)
    if metric == "retrieval_recall":
        return sum(top) / R
    if metric == "hit_rate":
        return float(sum(top) > 0)
    if metric == "r_precision":
        return sum(b[:R]) / R
    if metric == "mrr":
        return 1.0 / (b.index(1) + 1)
    if metric == "map":
        seen, total = 0, 0.0
        for i, x in enumerate(top):
            if x:
                seen += 1
                total += seen / (i + 1)
        return total / (R if k is None else min(R, k))
    raise AssertionError(metric)


def _parse(key: str):
    name, _, rest = key.partition("@")
    return name, (int(rest.split("=")[-1]) if rest else None)


# -- parity ----------------------------------------------------------------------------------
@pytest.mark.parametrize("ties", [False, True], ids=["distinct", "ties"])
@pytest.mark.parametrize("key", GRADED)
def test_ndcg_dcg_equal_sklearn_per_query_mean(key, ties):
    data = _dataset(1, ties=ties)
    name, k = _parse(key)
    fn = ndcg_score if name == "ndcg" else dcg_score
    per_query = [fn([rel], [s], k=k) for rel, s in _queries(data) if name == "dcg" or rel.sum() > 0]
    got = _values(data, [key])[_evaluation([key]).plan.keys[0]]
    np.testing.assert_allclose(got, np.mean(per_query), rtol=1e-13)


def test_ndcg_equals_sklearn_on_a_query_matrix_with_ties():
    # sklearn's own 2-D call (equal-length queries): its tie-averaging and its discounts
    rng = np.random.default_rng(5)
    Y = rng.integers(1, 5, size=(7, 6)).astype(float)
    S = np.round(rng.random((7, 6)), 1)
    data = {"q": np.repeat(np.arange(7), 6), "rel": Y.ravel(), "s": S.ravel()}
    got = _values(data, ["ndcg", "ndcg@k=4", "dcg@k=4"])
    np.testing.assert_allclose(got["ndcg"], ndcg_score(Y, S), rtol=1e-13)
    np.testing.assert_allclose(got["ndcg@4"], ndcg_score(Y, S, k=4), rtol=1e-13)
    np.testing.assert_allclose(got["dcg@4"], dcg_score(Y, S, k=4), rtol=1e-13)


def test_map_without_ties_equals_sklearn_average_precision_per_query():
    data = _dataset(2, ties=False, graded=False)
    ref = [average_precision_score(rel > 0, s) for rel, s in _queries(data) if rel.sum() > 0]
    np.testing.assert_allclose(_values(data, ["map"])["map"], np.mean(ref), rtol=1e-13)


@pytest.mark.parametrize("seed", [3, 4])
def test_binary_metrics_equal_the_per_query_definitions(seed):
    data = _dataset(seed)  # graded relevance read as binary (> 0), many ties
    got = _values(data, BINARY)
    for key in BINARY:
        name, k = _parse(key)
        ref = [v for rel, s in _queries(data) if (v := _reference(name, k, rel, s)) is not None]
        canonical = _evaluation([key]).plan.keys[0]
        np.testing.assert_allclose(got[canonical], np.mean(ref), rtol=1e-13, err_msg=key)


def test_hand_computed_case():
    # query A ranks 1 0 1 0, query B ranks 0 0 1, query C has no relevant item
    data = {
        "q": ["A", "A", "A", "A", "B", "B", "B", "C", "C"],
        "s": [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1],
        "rel": [1, 0, 1, 0, 0, 0, 1, 0, 0],
    }
    metrics = ["retrieval_precision@2", "retrieval_recall@2", "hit_rate@2", "mrr", "map", "map@2", "r_precision", "num_queries", "queries_without_relevant"]
    got = _values(data, metrics)
    want = {
        "retrieval_precision@2": (1 / 2 + 0) / 2,
        "retrieval_recall@2": (1 / 2 + 0) / 2,
        "hit_rate@2": (1 + 0) / 2,
        "mrr": (1 + 1 / 3) / 2,
        "map": ((1 + 2 / 3) / 2 + 1 / 3) / 2,  # A: (P@1 + P@3) / 2; B: P@3 / 1
        "map@2": (1 / 2 + 0) / 2,  # A: P@1 / min(2, 2); B: none in the top 2
        "r_precision": (1 / 2 + 0) / 2,  # A: 1 of the top 2; B: 0 of the top 1
        "num_queries": 3,
        "queries_without_relevant": 1,
    }
    for key, v in want.items():
        assert got[key] == pytest.approx(v, rel=1e-15), key


def test_ties_rank_less_relevant_items_first():
    data = {"q": [7, 7, 7], "s": [0.5, 0.5, 0.1], "rel": [1, 0, 0]}
    got = _values(data, ["mrr", "retrieval_precision@1", "hit_rate@1", "ndcg@1"])
    assert got["mrr"] == 0.5 and got["retrieval_precision@1"] == 0.0 and got["hit_rate@1"] == 0.0
    assert got["ndcg@1"] == pytest.approx(ndcg_score([[1, 0, 0]], [[0.5, 0.5, 0.1]], k=1), rel=1e-15) == 0.5  # sklearn: tie-averaged


def test_no_query_with_a_relevant_item_is_undefined_and_warns():
    ev = _evaluation(["mrr", "ndcg", "dcg", "queries_without_relevant"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = ev.evaluate({"q": [1, 1, 2], "s": [0.2, 0.1, 0.3], "rel": [0, 0, 0]}).slices[0].metrics
    undefined = sorted(str(w.message).split("'")[1] for w in caught if issubclass(w.category, UndefinedMetricWarning))
    assert undefined == ["mrr", "ndcg"]
    assert np.isnan(m["mrr"]) and np.isnan(m["ndcg"]) and m["dcg"] == 0.0 and m["queries_without_relevant"] == 2


def test_empty_input_and_defaults():
    ev = Evaluation(label_col="rel", score_col="s", query_col="q")
    assert ev.plan.keys == ("ndcg", "map", "mrr")
    assert Evaluation(**ev.to_config()).fingerprint == ev.fingerprint
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        m = ev.evaluate({"q": np.zeros(0, dtype=np.int64), "s": np.zeros(0), "rel": np.zeros(0)}).slices[0].metrics
    assert all(np.isnan(v) for v in m.values())


# -- slices, sharding, merge laws -----------------------------------------------------------
def test_slices_apply_per_query_rows():
    data = _dataset(6)
    keys = ["ndcg@k=3", "mrr", "map"]
    res = _evaluation(keys, slices=["g"]).evaluate(data)
    for r in res.slices[1:]:
        ((_, dev),) = r.slice
        m = data["g"] == dev
        sub = {c: np.asarray(v)[m] for c, v in data.items()}
        assert r.metrics == _values(sub, keys)
        np.testing.assert_allclose(r.metrics["ndcg@3"], sk_ndcg_mean(sub, 3), rtol=1e-13)


def _fold_sharded(ev, data, rng):
    n = len(data["q"])
    accs = []
    for shard in random_shards(rng, n, max_shards=5, max_batches=3):
        acc = ev.zero()
        for idx in shard:
            acc = ev.fold(acc, {c: np.asarray(v)[idx] for c, v in data.items()})
        accs.append(acc)
    return merge_tree(accs, ev.merge, rng, ev.zero)


@settings(max_examples=25)
@given(seed=st.integers(0, 2**32 - 1), sort=st.booleans())
def test_queries_split_over_shards_give_the_one_pass_states(seed, sort):
    data = _dataset(seed % 1000, n_queries=6)
    if sort:  # sorted inputs: each query's rows together, in score order
        order = np.lexsort((data["s"], data["q"].astype(str)))
        data = {c: v[order] for c, v in data.items()}
    rng = np.random.default_rng(seed)
    ev = _evaluation(GRADED + BINARY, slices=["g"])
    one = ev.fold(ev.zero(), data)
    sharded = _fold_sharded(ev, data, rng)
    assert set(one.slices()) == set(sharded.slices())
    for key in one.slices():
        assert one[key] == sharded[key]
    assert ev.finish(one).to_json() == ev.finish(sharded).to_json()


def _state(q, s, r):
    from mergeable_metrics.inputs.validation import Batch

    batch = Batch(np.asarray(r, dtype=float), np.asarray(s, dtype=float), query=np.asarray(q, dtype=np.int64))
    return RetrievalState.from_batch(RetrievalLayout(), batch)


rows = st.lists(st.tuples(st.integers(0, 3), st.sampled_from([0.0, 0.5, 1.0, -0.0]), st.sampled_from([0.0, 1.0, 2.5])), max_size=12)


@settings(max_examples=60)
@given(a=rows, b=rows, c=rows)
def test_retrieval_state_is_a_commutative_monoid(a, b, c):
    sa, sb, sc = (_state(*zip(*x)) if x else RetrievalState.zero(RetrievalLayout()) for x in (a, b, c))
    zero = RetrievalState.zero(RetrievalLayout())
    assert sa.merge(sb) == sb.merge(sa)
    assert sa.merge(sb).merge(sc) == sa.merge(sb.merge(sc))
    assert sa.merge(zero) == sa == zero.merge(sa)
    if a or b:
        assert sa.merge(sb) == _state(*zip(*(a + b)))
    assert RetrievalState.decode(sa.merge(sb).encode()) == sa.merge(sb)


def test_per_query_values_are_in_query_key_order():
    st_ = _state([5, 5, 2, 2], [0.1, 0.9, 0.4, 0.3], [1, 0, 0, 1])
    np.testing.assert_array_equal(per_query_values(st_, "mrr"), [0.5, 0.5])
    np.testing.assert_array_equal(per_query_values(st_, "precision", 1), [0.0, 0.0])


def test_accumulator_bytes_round_trip():
    data = _dataset(8, n_queries=5)
    ev = _evaluation(["ndcg", "mrr"])
    acc = ev.fold(ev.zero(), data)
    back = ev.decode(ev.encode(acc))
    assert back[()] == acc[()]
    assert ev.finish(back).to_json() == ev.finish(acc).to_json()


# -- errors ------------------------------------------------------------------------------------
def test_bad_rows_name_column_value_and_row():
    ev = _evaluation(["mrr"])
    with pytest.raises(ValueError, match=r"column 'q': invalid value None at row 12"):
        ev.fold(ev.zero(), {"q": ["a", "a", None], "s": [0.1, 0.2, 0.3], "rel": [1, 0, 1]}, row_offset=10)
    with pytest.raises(ValueError, match=r"column 'rel': invalid value -1.0 at row 1: relevance must be >= 0"):
        ev.fold(ev.zero(), {"q": ["a", "a", "b"], "s": [0.1, 0.2, 0.3], "rel": [1, -1, 1]})
    skip = _evaluation(["mrr"], on_invalid="skip")
    res = skip.evaluate({"q": ["a", "a", None, "b"], "s": [0.1, 0.2, 0.3, 0.4], "rel": [1, -1, 1, 1]})
    assert res.slices[0].skipped == 2 and res.slices[0].n == 2
    assert res.slices[0].metrics["mrr"] == 1.0


def test_configuration_errors():
    with pytest.raises(ValueError, match="ci"):
        _evaluation(["mrr"], ci="bootstrap")
    with pytest.raises(ValueError, match="needs query ids|query_col"):
        Evaluation(label_col="rel", score_col="s", task="regression", metrics=["ndcg"])
    with pytest.raises(ValueError, match="k must be an integer"):
        _evaluation(["ndcg@k=0"])
    with pytest.raises(ValueError, match="takes no k"):
        _evaluation(["mrr@k=3"])
    a = _evaluation(["mrr"]).zero()
    with pytest.raises(ValueError, match="query_col"):
        Evaluation(label_col="rel", score_col="s", query_col="other", metrics=["mrr"]).merge(a, a)
    with pytest.raises(ValueError, match="cannot merge state"):
        _state([1], [0.1], [1]).merge(_other_state())


def _other_state():
    from mergeable_metrics.states.base import ExampleCountLayout, ExampleCountState

    return ExampleCountState.zero(ExampleCountLayout())


def test_binary_task_reads_01_relevance():
    data = _dataset(9, graded=False)
    data["rel"] = data["rel"].astype(np.int64)
    assert _values(data, BINARY, task="binary") == _values(data, BINARY)


def test_metric_collection_takes_query_ids_and_merges_split_queries():
    from mergeable_metrics import MetricCollection

    data = _dataset(14, n_queries=8)
    half = len(data["q"]) // 2
    parts = []
    for rows in (slice(0, half), slice(half, None)):  # most queries have rows in both halves
        mc = MetricCollection("ndcg@k=3", "mrr", task="regression")
        mc.update(data["rel"][rows], y_score=data["s"][rows], query=data["q"][rows])
        parts.append(mc)
    got = parts[0].merge(parts[1]).compute()
    np.testing.assert_allclose(got["ndcg@3"], sk_ndcg_mean(data, 3), rtol=1e-13)
    assert got == _values(data, ["ndcg@k=3", "mrr"])
    with pytest.raises(ValueError, match="needs query"):
        MetricCollection("mrr").update([1, 0], y_score=[0.2, 0.1])
    with pytest.raises(ValueError, match=r"column 'y_true': invalid value -2.0 at row 1"):
        MetricCollection("mrr", task="regression").update([1, -2], y_score=[0.2, 0.1], query=[1, 1])
