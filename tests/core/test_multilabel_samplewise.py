"""``multilabel_confusion_matrix@samplewise=true`` keyed by ``id_col`` (issue 17): one (2, 2)
matrix per example, ordered by id, equal to scikit-learn's ``samplewise=True`` on the rows sorted
by id (weighted, per slice, at several thresholds, sorted and shuffled input, empty batches); the
merge laws (hypothesis: any sharding and merge tree gives the same bytes); duplicate and missing
ids; the error without ``id_col``; the codec."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import multilabel_confusion_matrix

from mergeable_metrics import Evaluation
from mergeable_metrics.states import State
from mergeable_metrics.inputs.validation import Batch
from mergeable_metrics.metrics.multilabel import MultilabelLayout, MultilabelSamplewiseState
from tests._helpers import fold_state_shards

L = 4


def _data(n, seed):
    rng = np.random.default_rng(seed)
    Y = rng.integers(0, 2, (n, L))
    S = np.round(rng.random((n, L)), 1)  # scores exactly at thresholds too
    return Y, S, rng.random(n) * rng.integers(0, 3, n), rng.permutation(10 * n + 1)[:n] - 5 * n, rng.choice(["a", "b", "c"], n)


def _evaluation(metrics, weighted, **kw):
    return Evaluation(label_col="y", score_col="s", task="multilabel", num_classes=L, id_col="id", weight_col="w" if weighted else None,
                      metrics=metrics, **kw)  # fmt: skip


@pytest.mark.parametrize("weighted", [False, True])
def test_equals_sklearn_on_rows_sorted_by_id_overall_and_per_slice(weighted):
    Y, S, w, ids, g = _data(300, 1)
    metrics = [
        "multilabel_confusion_matrix@samplewise=true",
        "multilabel_confusion_matrix@samplewise=true@threshold=0.3",
        "multilabel_confusion_matrix",
        "f1@samples",
    ]
    ev = _evaluation(metrics, weighted, slices=["g"])
    cols = {"y": list(Y), "s": list(S), "id": ids, "g": g} | ({"w": w} if weighted else {})
    parts = [{k: v[a:b] for k, v in cols.items()} for a, b in [(0, 17), (17, 17), (17, 200), (200, 300)]]
    r = ev.evaluate(parts)
    keys = [m.key for m in ev.plan.metrics]
    for key, mask in [((), np.ones(300, bool))] + [((("g", v),), g == v) for v in "abc"]:
        o = np.flatnonzero(mask)[np.argsort(ids[mask])]
        for k, t in ((keys[0], 0.5), (keys[1], 0.3)):
            want = multilabel_confusion_matrix(Y[o], (S[o] >= t).astype(int), samplewise=True, sample_weight=w[o] if weighted else None)
            got = r[key].metrics[k]
            assert got.shape == (mask.sum(), 2, 2) and np.array_equal(got, want), (key, k)  # bit for bit
        # the per-label matrices beside them (exact sums: to rounding of scikit-learn's float sums)
        want = multilabel_confusion_matrix(Y[mask], (S[mask] >= 0.5).astype(int), sample_weight=w[mask] if weighted else None)
        assert np.allclose(r[key].metrics[keys[2]], want, rtol=1e-13, atol=0)


def test_sorted_input_and_whole_float_ids_give_the_same_matrices():
    Y, S, w, ids, _ = _data(50, 2)
    ev = _evaluation(["multilabel_confusion_matrix@samplewise=true"], True)
    o = np.argsort(ids)
    a = ev.evaluate([{"y": list(Y[o]), "s": list(S[o]), "id": ids[o], "w": w[o]}])
    b = ev.evaluate([{"y": list(Y), "s": list(S), "id": ids.astype(float), "w": w}])
    assert a.to_json() == b.to_json()


def test_without_id_col_it_says_to_set_id_col():
    with pytest.raises(ValueError, match="multilabel_confusion_matrix@samplewise=true.*needs id_col"):
        Evaluation(label_col="y", score_col="s", task="multilabel", num_classes=L, metrics=["multilabel_confusion_matrix@samplewise=true"])
    from mergeable_metrics import MetricCollection

    mc = MetricCollection("multilabel_confusion_matrix@samplewise=true", task="multilabel", num_classes=2)
    with pytest.raises(ValueError, match="needs example ids \\(set id_col"):
        mc.update(np.array([[1, 0]]), y_pred=np.array([[1, 1]]))


def test_duplicate_ids_raise_naming_the_id():
    Y, S, w, ids, _ = _data(20, 3)
    ev = _evaluation(["multilabel_confusion_matrix@samplewise=true"], False)
    dup = ids.copy()
    dup[7] = dup[2]
    with pytest.raises(ValueError, match=rf"column 'id': invalid value {dup[2]} at row 7: ids must be unique"):
        ev.evaluate([{"y": list(Y), "s": list(S), "id": dup}])
    with pytest.raises(ValueError, match=rf"example id {ids[3]} appears in both merged states"):  # across batches
        ev.evaluate([{"y": list(Y[:10]), "s": list(S[:10]), "id": ids[:10]}, {"y": list(Y[:5]), "s": list(S[:5]), "id": ids[:5] * 0 + ids[3]}][:1]
                    + [{"y": list(Y[10:11]), "s": list(S[10:11]), "id": ids[3:4]}])  # fmt: skip


def test_bad_and_missing_ids_name_the_column_the_value_and_the_row():
    Y, S, _, ids, _ = _data(6, 4)
    ev = _evaluation(["multilabel_confusion_matrix@samplewise=true"], False)
    with pytest.raises(ValueError, match="column 'id': invalid value 'x' at row 2: ids must be integers"):
        ev.evaluate([{"y": list(Y), "s": list(S), "id": np.array([1, 2, "x", 4, 5, 6], dtype=object)}])
    with pytest.raises(ValueError, match="column 'id': invalid value 2.5 at row 1: ids must be integers"):
        ev.evaluate([{"y": list(Y), "s": list(S), "id": np.array([1, 2.5, 3, 4, 5, 6])}])
    with pytest.raises(ValueError, match="column 'id': invalid value None at row 4: ids must not be missing"):
        ev.evaluate([{"y": list(Y), "s": list(S), "id": np.array([1, 2, 3, 4, None, 6], dtype=object)}])
    skip = _evaluation(["multilabel_confusion_matrix@samplewise=true"], False, on_invalid="skip")
    r = skip.evaluate([{"y": list(Y), "s": list(S), "id": np.array([1, 2, 3, 4, None, 6], dtype=object)}])
    assert r.overall.skipped == 1 and r.overall.n == 5
    keep = [0, 1, 2, 3, 5]
    want = multilabel_confusion_matrix(Y[keep], (S[keep] >= 0.5).astype(int), samplewise=True)
    assert np.array_equal(r.overall.metrics["multilabel_confusion_matrix@samplewise=true"], want)


def test_an_empty_slice_has_no_matrices():
    ev = _evaluation(["multilabel_confusion_matrix@samplewise=true"], False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = ev.evaluate([])
    assert r.overall.metrics["multilabel_confusion_matrix@samplewise=true"].shape == (0, 2, 2)


LAYOUT = MultilabelLayout(3, (0.3, 0.5))
rows = st.lists(st.tuples(st.lists(st.integers(0, 1), min_size=3, max_size=3), st.lists(st.sampled_from([0.0, 0.3, 0.5, 0.9]), min_size=3, max_size=3),
                          st.sampled_from([0.0, 1.0, 0.5, 3.0])), max_size=25)  # fmt: skip


@settings(max_examples=40)
@given(data=rows, seed=st.integers(0, 2**32 - 1))
def test_sharded_merge_equals_one_fold(data, seed):
    n = len(data)
    Y = np.array([d[0] for d in data], dtype=np.int64).reshape(n, 3)
    S = np.array([d[1] for d in data], dtype=np.float64).reshape(n, 3)
    w = np.array([d[2] for d in data], dtype=np.float64)
    rng = np.random.default_rng(seed)
    ids = rng.permutation(1000)[:n].astype(np.int64)
    zero = MultilabelSamplewiseState.zero(LAYOUT)
    whole = zero.fold(Batch(Y, S, None, w, ids=ids))
    merged = fold_state_shards(zero, lambda idx: Batch(Y[idx], S[idx], None, w[idx], ids=ids[idx]), n, rng)
    assert merged.encode() == whole.encode()
    assert merged.merge(zero) == merged == zero.merge(merged)
    assert State.decode(merged.encode()) == merged
    o = np.argsort(ids)
    for t in LAYOUT.thresholds:
        if n:  # scikit-learn refuses weights that are all 0; its matrices would be 0 then
            want = multilabel_confusion_matrix(Y[o], (S[o] >= t).astype(int), samplewise=True, sample_weight=w[o]) if w.any() else np.zeros((n, 2, 2))
            assert np.array_equal(merged.matrices(t), want)
    if n:
        with pytest.raises(ValueError, match="appears in both merged states"):
            merged.merge(zero.fold(Batch(Y[:1], S[:1], None, w[:1], ids=ids[:1])))


def test_decoded_bytes_and_merges_are_checked():
    from tests._helpers.frames import state_with

    s = MultilabelSamplewiseState.zero(LAYOUT).fold(
        Batch(np.array([[1, 0, 1], [0, 1, 1]]), np.array([[0.9, 0.2, 0.4], [0.1, 0.8, 0.6]]), None, None, ids=np.array([5, 3]))
    )
    assert s["ids"].tolist() == [3, 5]
    with pytest.raises(ValueError, match="strictly increasing"):
        State.decode(state_with(s, ids=np.array([5, 3], dtype=np.int64)))
    with pytest.raises(ValueError, match="counts for 2 ids"):
        State.decode(state_with(s, counts=np.zeros(4)))
    with pytest.raises(ValueError, match="thresholds"):
        s.merge(MultilabelSamplewiseState.zero(MultilabelLayout(3, (0.5,))))
    with pytest.raises(ValueError, match="needs example ids"):
        s.fold(Batch(np.array([[1, 0, 1]]), np.array([[0.9, 0.2, 0.4]])))


def test_weighted_states_round_trip_through_the_codec():
    # fractional weights: scikit-learn's tn = w L - tp - fp - fn can be -4e-16; such states still decode
    Y, S, w, ids, g = _data(400, 5)
    ev = _evaluation(["multilabel_confusion_matrix@samplewise=true"], True, slices=["g"])
    acc = ev.fold(ev.zero(), {"y": list(Y), "s": list(S), "id": ids, "w": w, "g": g})
    states = [s for key in acc.slices() for s in acc[key] if s.kind == "multilabel_samplewise"]
    assert any((s["counts"] < 0).any() for s in states)  # the case this guards
    assert ev.decode(ev.encode(acc)) == acc


def test_the_bootstrap_is_refused_and_other_intervals_leave_it_alone():
    with pytest.raises(ValueError, match="ci='bootstrap' does not apply to 'multilabel_confusion_matrix@samplewise=true'"):
        _evaluation(["multilabel_confusion_matrix@samplewise=true", "f1@samples"], False, ci="bootstrap")
    Y, S, _, ids, _ = _data(30, 6)
    r = _evaluation(["multilabel_confusion_matrix@samplewise=true"], False, ci="posterior").evaluate([{"y": list(Y), "s": list(S), "id": ids}])
    assert r.overall.metrics["multilabel_confusion_matrix@samplewise=true"].shape == (30, 2, 2)
