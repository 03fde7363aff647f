"""The stacked finish (every slice's metrics, counts, suppression and results assembled as array
operations over the slices) against the per-slice finish, bit for bit, and against scikit-learn.

``Evaluation.finish`` takes the stacked path when every metric is computed from cell states
(confusion counts, example counts) and the accumulator stacks (no weights, intervals, baseline);
otherwise it builds per-slice state objects (``Evaluation._finish_states``). Both must give the
same slices in the same order, the same values (bits and Python types), counts, suppression and
undefined warnings.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, f1_score, precision_score, recall_score

from mergeable_metrics import Evaluation
from mergeable_metrics.collection.plan import undefined_warning
from mergeable_metrics.evaluation.suppression import is_suppressed, suppressed_mask
from mergeable_metrics.slicing.assign import OTHER, SUPPRESSED, SliceSpec, slice_name, sort_key, sort_order


def _data(seed: int, n: int = 3000, classes: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    group = rng.zipf(1.6, n) % 97  # a long tail: many slices of 1-3 rows
    y = rng.integers(0, 2, n)
    y[group % 11 == 3] = 0  # slices without positives (undefined recall)
    out = {"y": y, "s": np.clip(0.35 * y + 0.65 * rng.random(n), 0, 1), "g": np.array([f"g{v:02d}" for v in group], dtype=object)}
    out["h"] = np.where(rng.random(n) < 0.05, None, rng.choice(np.array(["a", "b", "[1, 2)", "(x"], dtype=object), n))
    out["w"] = rng.random(n) * 3
    if classes:
        out["y"] = rng.integers(0, classes, n)
        out["p"] = np.where(rng.random(n) < 0.6, out["y"], rng.integers(0, classes, n))
    return out


def _snapshot(results) -> list:
    return [
        (
            s.slice,
            s.n,
            type(s.n),
            s.weight,
            type(s.weight),
            s.skipped,
            s.suppressed,
            s.suppressed_slices,
            s.folded_values,
            [(k, type(v), np.asarray(v).dtype.str, np.asarray(v).tobytes()) for k, v in s.metrics.items()],
            dict(s.bounds),
            dict(s.ci),
            s.undefined,
        )
        for s in results.slices
    ]


def _both(ev: Evaluation, data: dict, monkeypatch) -> tuple:
    """(stacked, per-slice) finish of one accumulator: snapshots and warning texts."""
    acc = ev.fold(ev.zero(), data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        took_stacked = ev._finish_stacked(acc, True, [s.columns for s in ev.slices]) is not None
    assert took_stacked == (ev.weight_col is None)
    out = []
    for per_slice in (False, True):
        with monkeypatch.context() as m:
            if per_slice:
                m.setattr(Evaluation, "_finish_stacked", lambda self, *a: None)
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                r = ev.finish(acc)
        out.append((_snapshot(r), sorted(str(x.message) for x in w), r))
    _check_scalar_path(ev, acc, out[0][2], out[0][1])
    return out


def _check_scalar_path(ev: Evaluation, acc, results, warned: list) -> None:
    """Each published slice's values are ``Plan.compute_detailed`` of its own states (the
    scalar path, one slice at a time), and the warnings name its undefined entries."""
    held = dict(acc.items())
    where: dict = {}
    fills: dict = {}
    for s in results.slices:
        if s.suppressed or s.slice not in held:
            continue
        values, _, undefined = ev.plan.compute_detailed(held[s.slice])
        assert [(k, np.asarray(v).tobytes()) for k, v in values.items()] == [(k, np.asarray(v).tobytes()) for k, v in s.metrics.items()], s.slice
        for metric, (classes, fill) in undefined.items():
            if fill in ("nan", "warn"):
                named = classes if classes is None or ev.classes is None else tuple(ev.classes[c] for c in classes)
                where.setdefault(metric, []).append((slice_name(s.slice), named))
                fills[metric] = "nan" if fill == "nan" or fills.get(metric) == "nan" else fill
    if not any(s.suppressed for s in results.slices):
        assert sorted(undefined_warning(m, w, fills[m]) for m, w in where.items()) == warned


CASES = [
    dict(metrics=["precision", "recall", "f1", "accuracy"], slices=["g"]),
    dict(metrics=["precision@threshold=0.3", "recall", "f1", "tp", "fn", "example_count", "specificity"], slices=["g", "h", "g,h"]),
    dict(metrics=["precision", "recall", "f1", "accuracy"], slices=["g", "h"], min_slice_size=8),
    dict(metrics=["precision", "recall", "f1", "accuracy"], slices=["g", "g,h"], min_slice_size=5, show_suppressed_names=True),
    dict(metrics=["precision", "recall", "f1", "mcc"], slices=["g;min_slice_size=4", "h"], zero_division=0.0),
    dict(metrics=["precision", "recall", "f1", "accuracy"], slices=["g"], zero_division="warn"),
]


@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("seed", [0, 1])
def test_stacked_finish_is_the_per_slice_finish_bit_for_bit(case, seed, monkeypatch):
    ev = Evaluation(label_col="y", score_col="s", **CASES[case])
    (stacked, warn_a, r), (per_slice, warn_b, _) = _both(ev, _data(seed), monkeypatch)
    assert stacked == per_slice
    assert warn_a == warn_b
    if "zero_division" not in CASES[case]:
        assert any(not s.suppressed and s.undefined for s in r.slices)  # undefined (NaN) slices are covered
    if "min_slice_size" in CASES[case]:
        assert any(s.suppressed for s in r.slices)
    assert len(r.slices) > 20


def test_stacked_finish_multiclass_per_class_values_and_class_names(monkeypatch):
    d = _data(3, classes=4)
    ev = Evaluation(
        label_col="y",
        prediction_col="p",
        slices=["g"],
        metrics=["f1@none", "precision@macro", "recall@weighted", "accuracy", "confusion_matrix"],
        classes=["a", "b", "c", "d"],
    )
    d["y"] = np.array(["abcd"[i] for i in d["y"]], dtype=object)
    d["p"] = np.array(["abcd"[i] for i in d["p"]], dtype=object)
    (stacked, warn_a, r), (per_slice, warn_b, _) = _both(ev, d, monkeypatch)
    assert stacked == per_slice and warn_a == warn_b
    assert any("classes" in e for s in r.slices for e in s.undefined)


def test_weighted_finish_takes_the_per_slice_path_and_matches_scikit_learn(monkeypatch):
    d = _data(4)
    ev = Evaluation(label_col="y", score_col="s", weight_col="w", slices=["g"], metrics=["precision", "recall", "f1", "accuracy"])
    (a, warn_a, r), (b, warn_b, _) = _both(ev, d, monkeypatch)
    assert a == b and warn_a == warn_b
    for s in r.slices[1:6]:
        rows = d["g"] == s.slice[0][1]
        y, pred, w = d["y"][rows], (d["s"][rows] >= 0.5).astype(int), d["w"][rows]
        assert s.metrics["accuracy"] == pytest.approx(accuracy_score(y, pred, sample_weight=w), rel=1e-12)


def test_stacked_finish_values_match_scikit_learn():
    d = _data(5)
    ev = Evaluation(label_col="y", score_col="s", slices=["g"], metrics=["precision", "recall", "f1", "accuracy"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = ev.finish(ev.fold(ev.zero(), d))
        checked = 0
        for s in r.slices[1:]:
            rows = d["g"] == s.slice[0][1]
            y, pred = d["y"][rows], (d["s"][rows] >= 0.5).astype(int)
            assert s.n == rows.sum()
            for name, fn in (("precision", precision_score), ("recall", recall_score), ("f1", f1_score)):
                want = fn(y, pred, zero_division=np.nan)
                assert (np.isnan(want) and np.isnan(s.metrics[name])) or s.metrics[name] == pytest.approx(want, rel=1e-12), (s.slice, name)
            assert s.metrics["accuracy"] == pytest.approx(accuracy_score(y, pred), rel=1e-12)
            checked += 1
    assert checked > 20


def test_sort_order_is_sorted_by_sort_key():
    rng = np.random.default_rng(0)
    pool = ["b", "a", "", "[1, 2)", "[0, 1)", "(-inf, 0)", "[oops", "(x", OTHER, SUPPRESSED, None, 3, 1.5, -2, "10", "9"]
    specs = [("g",), ("h",), ("g", "h")]
    keys = [()]
    for _ in range(300):
        cols = specs[rng.integers(0, 3)]
        keys.append(tuple((c, pool[rng.integers(0, len(pool))]) for c in cols))
    keys.append((("zz", "unknown spec"),))
    want = sorted(range(len(keys)), key=lambda i: sort_key(keys[i], specs))
    assert sort_order(keys, specs) == want
    plain = [(("g", f"v{rng.integers(0, 50)}"),) for _ in range(200)] + [()]
    assert sort_order(plain, specs) == sorted(range(len(plain)), key=lambda i: sort_key(plain[i], specs))


def test_suppressed_mask_is_is_suppressed():
    rng = np.random.default_rng(1)
    slices = [SliceSpec.parse("g;min_slice_size=5"), SliceSpec.parse("h;min_slice_size=2.5;by=weight"), SliceSpec.parse("g,h")]
    keys = [()] + [(("g", str(i)),) for i in range(30)] + [(("h", str(i)),) for i in range(30)] + [(("g", "x"), ("h", str(i))) for i in range(30)]
    count = rng.integers(0, 12, len(keys))
    weight = rng.random(len(keys)) * 6
    for min_size in (None, 4, 7.5):
        want = [is_suppressed(k, {"count": c, "weight": w}, slices, min_size) for k, c, w in zip(keys, count, weight)]
        assert suppressed_mask(keys, count, weight, slices, min_size).tolist() == want
    assert not suppressed_mask(keys, count, weight, [SliceSpec.parse("g")], None).any()


def test_published_slice_result_is_the_constructed_one():
    from mergeable_metrics.results.results import SliceResult

    key, metrics, bounds = (("g", "a"),), {"f1": 0.5}, {"f1": (0.4, 0.6)}
    a = SliceResult.published(key, 3, 3.0, 0, metrics, bounds, 7)
    b = SliceResult(slice=key, n=3, weight=3.0, skipped=0, metrics=metrics, bounds=bounds, folded_values=7)
    assert a == b and vars(a) == vars(b) and repr(a) == repr(b)
    c = SliceResult.published(key, 3, 3.0, 0, metrics, {})
    assert c == SliceResult(slice=key, n=3, weight=3.0, skipped=0, metrics=metrics)
    assert c.ci is not a.ci and c.comparison is not a.comparison  # fresh dicts, as the default factories give


@pytest.mark.parametrize("metric", ["roc_auc", "roc_auc@pos_label=0"])
@pytest.mark.parametrize("weighted", [False, True])
def test_roc_auc_of_many_slices_at_once_is_each_slice_own(metric, weighted):
    """``roc_auc`` of many exact score distributions at once (:func:`mergeable_metrics.collection.stacked._roc_auc_many`)
    against each slice's own ``compute_detailed`` (bits) and scikit-learn: slices of 0-400 rows,
    ties (scores rounded to a few values), runs of one class (points ``drop_intermediate``
    removes), slices of one class only (NaN, undefined) and integer weights."""
    from sklearn.metrics import roc_auc_score

    from mergeable_metrics.collection.stacked import _roc_auc_many

    rng = np.random.default_rng(7)
    ev = Evaluation(label_col="y", score_col="s", slices=["g"], metrics=[metric, "accuracy"], weight_col="w" if weighted else None)
    n = 20000
    g = rng.integers(0, 150, n) ** 2 % 397  # uneven sizes
    y = (rng.random(n) < np.where(g % 13 == 0, 0.0, 0.3)).astype(int)  # some slices without positives
    digits = 10.0 ** rng.integers(1, 4, n)
    s = np.round(np.clip(0.3 * y + 0.7 * rng.random(n), 0, 1) * digits) / digits  # ties
    s[g % 7 == 0] = 0.5  # one score only
    w = rng.integers(1, 4, n).astype(float)
    d = {"y": y, "s": s, "g": np.array([f"g{v:03d}" for v in g], dtype=object), "w": w}
    acc = ev.fold(ev.zero(), d)
    items = acc.items()
    states_list = [states for _, states in items]
    m = next(x for x in ev.plan.metrics if x.key.startswith("roc_auc"))
    fast = _roc_auc_many(m, states_list)
    assert len(fast) > 100
    many = ev.plan.compute_many(states_list)
    pos_label = 0 if "pos_label=0" in metric else 1
    for i, (key, states) in enumerate(items):
        values, _, undefined = ev.plan.compute_detailed(states)
        mine = many.element(i)
        assert np.asarray(values[m.key]).tobytes() == np.asarray(mine[0][m.key]).tobytes(), key
        assert undefined == mine[2], key
        if i in fast:
            assert fast[i] == values[m.key]
            rows = d["g"] == key[0][1] if key else np.ones(n, bool)
            yy = d["y"][rows] if pos_label == 1 else 1 - d["y"][rows]
            want = roc_auc_score(yy, d["s"][rows], sample_weight=w[rows] if weighted else None)
            assert fast[i] == pytest.approx(want, abs=1e-12)
    assert any(np.isnan(many.element(i)[0][m.key]) for i in range(len(items)))


def test_roc_auc_of_many_leaves_fractional_weights_and_compressed_states_to_the_scalar_path():
    from mergeable_metrics.collection.stacked import _roc_auc_many

    rng = np.random.default_rng(8)
    d = {"y": rng.integers(0, 2, 3000), "s": rng.random(3000), "g": rng.integers(0, 10, 3000), "w": rng.random(3000)}
    ev = Evaluation(label_col="y", score_col="s", slices=["g"], metrics=["roc_auc"], weight_col="w")
    assert _roc_auc_many(ev.plan.metrics[0], [st for _, st in ev.fold(ev.zero(), d).items()]) == {}
    ev = Evaluation(label_col="y", score_col="s", slices=["g"], metrics=["roc_auc@capacity=64"])
    states = [st for _, st in ev.fold(ev.zero(), d).items()]
    fast = _roc_auc_many(ev.plan.metrics[0], states)
    exact_ones = [i for i, st in enumerate(states) if all(getattr(x, "is_exact", True) for x in st)]
    assert set(fast) <= set(exact_ones) and len(exact_ones) < len(states)
