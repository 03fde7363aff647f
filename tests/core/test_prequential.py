"""mergeable_metrics.PrequentialEvaluation: windowed and cumulative test-then-train metrics against scikit-learn."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st
from sklearn.metrics import accuracy_score, f1_score, roc_auc_score

from mergeable_metrics import PrequentialEvaluation


def _stream(n=2600, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    drift = np.linspace(0.9, 0.6, n)  # the learner gets worse: windows differ from the cumulative
    p = np.where(rng.random(n) < drift, y, 1 - y)
    s = np.clip(0.5 * y + 0.5 * rng.random(n) * (1 + np.arange(n) / n), 0, 1)
    return y, p, s


def test_windowed_and_cumulative_equal_sklearn_on_each_window_and_prefix():
    y, p, _ = _stream()
    w = 1000
    pe = PrequentialEvaluation(w, label_col="y", prediction_col="p", metrics=["accuracy", "f1"])
    # batches that cut windows anywhere, an empty one, and three input kinds
    r = pe.evaluate([{"y": y[:700], "p": p[:700]}, {"y": y[:0], "p": p[:0]}, pa.table({"y": y[700:1800], "p": p[700:1800]}),
                     pd.DataFrame({"y": y[1800:], "p": p[1800:]})])  # fmt: skip
    assert r.windows == [0, 1, 2] and r.instances == [1000, 2000, 2600] and r.n == [1000, 1000, 600]
    for i, (lo, hi) in enumerate([(0, 1000), (1000, 2000), (2000, 2600)]):
        assert r.windowed["accuracy"][i] == pytest.approx(accuracy_score(y[lo:hi], p[lo:hi]), rel=1e-12)
        assert r.windowed["f1"][i] == pytest.approx(f1_score(y[lo:hi], p[lo:hi]), rel=1e-12)
        assert r.cumulative["accuracy"][i] == pytest.approx(accuracy_score(y[:hi], p[:hi]), rel=1e-12)
        assert r.cumulative["f1"][i] == pytest.approx(f1_score(y[:hi], p[:hi]), rel=1e-12)
    frame = r.windowed_frame()
    assert list(frame.columns) == ["instances", "window", "n", "skipped", "accuracy", "f1"]
    assert r.to_dict()["config"]["window_size"] == 1000 and "slices" not in r.config


def test_scores_and_ranking_metrics_per_window():
    y, _, s = _stream(n=1500)
    r = PrequentialEvaluation(500, label_col="y", score_col="s", metrics=["roc_auc", "accuracy"]).evaluate({"y": y, "s": s})
    for i in range(3):
        lo, hi = 500 * i, 500 * (i + 1)
        assert r.windowed["roc_auc"][i] == pytest.approx(roc_auc_score(y[lo:hi], s[lo:hi]), rel=1e-12)
        assert r.cumulative["roc_auc"][i] == pytest.approx(roc_auc_score(y[:hi], s[:hi]), rel=1e-12)


@settings(max_examples=30)
@given(st.data())
def test_position_col_any_sharding_and_order_equals_the_stream(data):
    y, p, _ = _stream(n=data.draw(st.integers(1, 400)), seed=data.draw(st.integers(0, 1000)))
    n = y.shape[0]
    w = data.draw(st.integers(5, 120))  # at most 80 windows: each window computes its metrics
    pos = np.arange(n)
    whole = PrequentialEvaluation(w, label_col="y", prediction_col="p").evaluate({"y": y, "p": p})
    pe = PrequentialEvaluation(w, position_col="pos", label_col="y", prediction_col="p")
    perm = np.random.default_rng(data.draw(st.integers(0, 1000))).permutation(n)  # shuffled rows
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=4)))
    accs = []
    for lo, hi in zip([0, *cuts], [*cuts, n]):  # shards, empty ones included
        idx = perm[lo:hi]
        accs.append(pe.fold(pe.zero(), {"y": y[idx], "p": p[idx], "pos": pos[idx]}))
    merged = pe.zero()
    for a in reversed(accs):
        merged = pe.merge(merged, a)
    got = pe.finish(merged)
    assert got.windows == whole.windows and got.instances == whole.instances and got.n == whole.n
    np.testing.assert_equal(got.windowed, whole.windowed)  # NaN (undefined) equal too
    np.testing.assert_equal(got.cumulative, whole.cumulative)


def test_bad_positions_and_configuration():
    pe = PrequentialEvaluation(10, position_col="pos", label_col="y", prediction_col="p")
    with pytest.raises(ValueError, match=r"column 'pos': invalid value -1 at row 1: positions must be integers in \[0, 2\*\*63\)"):
        pe.fold(pe.zero(), {"y": [0, 1], "p": [0, 1], "pos": [0, -1]})
    with pytest.raises(ValueError, match="missing column 'pos'"):
        pe.fold(pe.zero(), {"y": [0, 1], "p": [0, 1]})
    with pytest.raises(ValueError, match="window_size must be an int >= 1"):
        PrequentialEvaluation(0, label_col="y", prediction_col="p")
    with pytest.raises(ValueError, match="slices by window only"):
        PrequentialEvaluation(5, label_col="y", prediction_col="p", slices=["g"])
    with pytest.raises(ValueError, match=r"column 'y': invalid value 2(\.0)? at row 12"):
        PrequentialEvaluation(5, label_col="y", prediction_col="p").evaluate([{"y": [0] * 10, "p": [0] * 10}, {"y": [0, 0, 2], "p": [0, 0, 0]}])


def test_skipped_rows_are_counted_in_their_window():
    r = PrequentialEvaluation(3, label_col="y", prediction_col="p", on_invalid="skip").evaluate({"y": [0, 1, 9, 1, 1, 0], "p": [0, 1, 1, 0, 1, 0]})
    assert r.n == [2, 3] and r.skipped == [1, 0] and r.instances == [3, 6]
    assert r.windowed["accuracy"] == [1.0, pytest.approx(2 / 3)]
    assert r.cumulative["accuracy"][1] == pytest.approx(4 / 5)


def test_codec_round_trip():
    y, p, _ = _stream(n=300)
    pe = PrequentialEvaluation(100, label_col="y", prediction_col="p")
    acc = pe.fold(pe.zero(), {"y": y, "p": p})
    assert pe.finish(pe.decode(pe.encode(acc))).cumulative == pe.finish(acc).cumulative
    other = PrequentialEvaluation(100, label_col="y", prediction_col="q")
    with pytest.raises(ValueError, match="prediction_col"):
        other.decode(pe.encode(acc))


@pytest.mark.parametrize(
    "option", [{"ci": "analytic"}, {"ci": "posterior"}, {"min_slice_size": 2}, {"baseline_prediction_col": "b"}, {"baseline_score_col": "b"}]
)
def test_options_the_results_do_not_hold_are_refused_not_ignored(option):
    # before: accepted and silently dropped (no intervals, no comparison, windows below min_slice_size published)
    with pytest.raises(ValueError, match=f"prequential evaluation does not support {next(iter(option))}"):
        PrequentialEvaluation(2, label_col="y", prediction_col="p", **option)


@pytest.mark.parametrize("pos", [np.array([0, 2**64 - 1], dtype=np.uint64), [0, 2**70], np.array([0, 2**63], dtype=np.uint64)])
def test_positions_past_int64_raise_naming_column_value_and_row(pos):
    # before: uint64 2**64 - 1 wrapped to window -1 silently; a Python int 2**70 raised OverflowError
    pe = PrequentialEvaluation(2, position_col="pos", label_col="y", prediction_col="p", metrics=["accuracy"])
    with pytest.raises(ValueError, match=rf"column 'pos': invalid value {int(pos[1])} at row 1: positions must be integers in \[0, 2\*\*63\)"):
        pe.evaluate({"y": [1, 1], "p": [1, 0], "pos": pos})
    top = pe.evaluate({"y": [1, 1], "p": [1, 0], "pos": np.array([0, 2**63 - 1], dtype=np.uint64)})
    assert top.windows == [0, (2**63 - 1) // 2] and top.windowed["accuracy"] == [1.0, 0.0]


def test_undefined_window_values_warn_once_per_metric_naming_the_windows():
    # before: NaN in windows of one class (sorted labels) came with no UndefinedMetricWarning
    from mergeable_metrics.metrics.base import UndefinedMetricWarning

    y, s = np.r_[np.zeros(4, int), np.ones(4, int)], np.linspace(0, 1, 8)  # sorted: window 0 all negatives
    with pytest.warns(UndefinedMetricWarning) as record:
        r = PrequentialEvaluation(4, label_col="y", score_col="s", metrics=["roc_auc", "accuracy"]).evaluate({"y": y, "s": s})
    assert np.isnan(r.windowed["roc_auc"]).all() and np.isnan(r.cumulative["roc_auc"][0])
    assert r.cumulative["roc_auc"][1] == roc_auc_score(y, s) == 1.0 and r.windowed["accuracy"] == [1.0, 1.0]
    messages = [str(w.message) for w in record if issubclass(w.category, UndefinedMetricWarning)]
    assert len(messages) == 1 and "'roc_auc'" in messages[0]
    assert "'window 0', 'window 1', 'up to window 0'" in messages[0] and "up to window 1" not in messages[0]
