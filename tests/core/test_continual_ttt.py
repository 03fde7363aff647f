"""Test-then-train inside the continual result (CapyMOA's ``OCLMetrics.ttt``, ``boundaries``,
``ttt_windowed_task_index``), against a numpy computation of CapyMOA's definitions on a small
stream: windowed accuracy over full windows of ``eval_window_size`` positions (MOA's windowed
evaluator leaves a last partial window out), cumulative accuracy and Cohen's kappa, the boundary
of each task (``[0, n_0, n_0 + n_1, ...]``) and CapyMOA's ``_get_ttt_windowed_task_index``."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from mergeable_metrics import ContinualEvaluation
from mergeable_metrics.time.continual import ContinualState

T, K, W = 3, 3, 4
SIZES = (7, 8, 7)  # rows of each task in the training stream: positions 0..6, 7..14, 15..21


def _stream(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    n = sum(SIZES)
    y = rng.integers(0, K, n)
    p = np.where(rng.random(n) < 0.6, y, rng.integers(0, K, n))
    return {"position": np.arange(n), "trained_task": np.repeat(np.arange(T), SIZES), "label": y, "prediction": p}


def _capymoa_windowed_task_index(boundaries: np.ndarray, window_size: int) -> np.ndarray:
    """capymoa.ocl.evaluation._metrics._get_ttt_windowed_task_index, verbatim."""
    tasks = np.zeros(int(boundaries[-1]) // window_size)
    for task_id, (start, end) in enumerate(zip(boundaries[:-1], boundaries[1:], strict=True)):
        win_start = int(start) // window_size
        win_end = int(end) // window_size
        tasks[win_start:win_end] = np.linspace(task_id, task_id + 1, win_end - win_start)
    return tasks


def _kappa(y: np.ndarray, p: np.ndarray) -> float:
    """Cohen's kappa by its definition: (p_o - p_e) / (1 - p_e)."""
    po = np.mean(y == p)
    pe = sum(np.mean(y == c) * np.mean(p == c) for c in range(K))
    return float((po - pe) / (1 - pe)) if pe < 1 else math.nan  # one class only: undefined


def _evaluation(max_instances: int = 24) -> ContinualEvaluation:
    return ContinualEvaluation(T, K, max_instances=max_instances, eval_window_size=W)


def test_ttt_boundaries_and_window_index_against_numpy():
    s = _stream()
    ev = _evaluation()
    ev.update(s["trained_task"], None, s["label"], s["prediction"], position=s["position"])
    m = ev.compute()
    y, p = s["label"], s["prediction"]
    assert m.boundaries.tolist() == [0, 7, 15, 22] and m.boundaries.dtype == np.int64
    full = len(y) // W  # 5 full windows; positions 20, 21 are a partial window, not reported
    want_acc = [float(np.mean(y[i * W : (i + 1) * W] == p[i * W : (i + 1) * W])) for i in range(full)]
    assert m.ttt.windowed.accuracy() == want_acc
    want_kappa = [_kappa(y[i * W : (i + 1) * W], p[i * W : (i + 1) * W]) for i in range(full)]
    np.testing.assert_allclose(m.ttt.windowed.kappa(), want_kappa, rtol=1e-12)
    assert m.ttt.accuracy() == m.ttt.cumulative.accuracy() == float(np.mean(y == p))
    assert m.ttt.kappa() == pytest.approx(_kappa(y, p), rel=1e-12)
    np.testing.assert_array_equal(m.ttt_windowed_task_index, _capymoa_windowed_task_index(np.array([0, 7, 15, 22]), W))
    assert m.ttt.window_size == W and m.ttt.cumulative.instances_seen == 22
    cm = np.zeros((K, K), np.int64)
    np.add.at(cm, (y, p), 1)
    np.testing.assert_array_equal(m.ttt.cumulative.confusion_matrix, cm)
    assert m.ttt.metrics_per_window()["instances"] == [4, 8, 12, 16, 20]
    sk = pytest.importorskip("sklearn.metrics")  # a second, independent kappa
    assert m.ttt.kappa() == pytest.approx(sk.cohen_kappa_score(y, p), rel=1e-12)
    d = m.to_dict()
    assert d["boundaries"] == [0, 7, 15, 22] and d["ttt"]["windowed"]["accuracy"] == want_acc and d["ttt"]["cumulative"]["instances"] == 22
    json.dumps(d, allow_nan=False)


def test_any_batching_and_order_and_mixed_with_evaluation_events():
    s = _stream(1)
    whole = _evaluation()
    whole.update(s["trained_task"], None, s["label"], s["prediction"], position=s["position"])
    rng = np.random.default_rng(2)
    order = rng.permutation(len(s["label"]))
    parts = []
    for idx in np.array_split(order, 4):
        part = _evaluation()
        # the same columns as a table of events, evaluation rows mixed in (position null)
        cols = {
            "trained_task": np.concatenate([s["trained_task"][idx], [0, 1]]),
            "evaluated_task": np.array([None] * len(idx) + [0, 1], dtype=object),
            "label": np.concatenate([s["label"][idx], [1, 2]]),
            "prediction": np.concatenate([s["prediction"][idx], [1, 0]]),
            "position": np.array(list(s["position"][idx]) + [None, None], dtype=object),
        }
        part.fold_events(cols)
        parts.append(part)
    merged = _evaluation()
    for part in reversed(parts):
        merged.merge(part)
    a, b = whole.compute(), merged.compute()
    assert a.ttt == b.ttt and a.boundaries.tolist() == b.boundaries.tolist()
    assert (merged.state.arrays["ttt_cm"] == whole.state.arrays["ttt_cm"]).all()
    assert b.accuracy_matrix[0, 0] == 1.0 and b.accuracy_matrix[1, 1] == 0.0  # the 4 x 2 evaluation rows, apart
    assert ContinualEvaluation.decode(merged.encode()) == merged


def test_without_max_instances_there_is_no_ttt_and_old_bytes_still_read():
    ev = ContinualEvaluation(2, 2)
    ev.update([0, 1], [0, 1], [0, 1], [0, 1])
    m = ev.compute()
    assert m.ttt is None and m.boundaries is None and m.ttt_windowed_task_index is None
    with pytest.raises(ValueError, match=r"column 'position': invalid value 0 at row 2.*max_instances > 0"):
        ev.update([0], None, [0], [0], position=[0])
    # version-1 bytes (before the test-then-train fields) decode with them empty
    from tests.core.test_continual import _crafted, _zeros

    old = {k: v for k, v in _zeros(2, 2, 0).items() if not k.startswith("ttt")}
    old["total"][0, 0] = old["correct"][0, 0] = old["class_cm"][0, 1, 1] = 1
    fields = ContinualState.STORED_FIELDS, ContinualState.VERSION
    try:
        ContinualState.STORED_FIELDS, ContinualState.VERSION = ContinualState.OLD_FIELDS[1], 1
        blob = _crafted('{"num_tasks":2,"num_classes":2,"evaluations_per_task":0}', old)
    finally:
        ContinualState.STORED_FIELDS, ContinualState.VERSION = fields
    st = ContinualState.decode(blob)
    assert st.layout.max_instances == 0 and st.arrays["ttt_cm"].shape == (0, 2, 2) and int(st.arrays["total"].sum()) == 1


def test_bad_rows_and_inconsistent_positions():
    ev = _evaluation()
    with pytest.raises(ValueError, match=r"column 'evaluated_task': invalid value 1 at row 1.*test-then-train row"):
        ev.fold_events({"trained_task": [0, 0], "evaluated_task": [None, 1], "label": [0, 1], "prediction": [0, 1], "position": [0, 1]})
    with pytest.raises(ValueError, match=r"column 'position': invalid value 24 at row 2.*\[0, 24\)"):
        ev.update([0, 0, 0], None, [0, 1, 1], [0, 1, 1], position=[0, 1, 24])
    with pytest.raises(ValueError, match=r"column 'step': invalid value 0 at row 0.*test-then-train row"):
        ContinualEvaluation(T, K, 1, 24, W).update([0], None, [0], [0], step=[0], position=[0])
    # a missing position (the stream's end says 7 rows, 6 came)
    ev = _evaluation()
    ev.update([0] * 6, None, [0] * 6, [0] * 6, position=[0, 1, 2, 3, 4, 6])
    with pytest.raises(ValueError, match=r"6 rows but positions up to 6.*missing or repeated"):
        ev.compute()
    # a repeated position with the end right: window 0 has 5 rows
    ev = _evaluation()
    ev.update([0] * 6, None, [0] * 6, [0] * 6, position=[0, 1, 2, 3, 3, 5])
    with pytest.raises(ValueError, match=r"window 0 \(positions 0..3\) has 5 rows, 4 expected"):
        ev.compute()
    # tasks out of training order: task 1's rows first
    ev = _evaluation()
    ev.update([1, 1, 1, 1, 0, 0, 0, 0], None, [0] * 8, [0] * 8, position=np.arange(8))
    with pytest.raises(ValueError, match=r"task 0 has 0 rows in window 0, 4 expected.*consecutive positions, tasks in training order"):
        ev.compute()
    with pytest.raises(ValueError, match="cannot merge continual evaluations of different configuration: eval_window_size 4 != 5"):
        _evaluation().merge(ContinualEvaluation(T, K, max_instances=24, eval_window_size=5))


def test_no_full_window_and_empty_stream():
    ev = _evaluation()
    ev.update([0, 0, 1], None, [0, 1, 1], [0, 0, 1], position=[0, 1, 2])
    m = ev.compute()
    assert m.ttt.windowed.accuracy() == [] and m.ttt_windowed_task_index.size == 0
    assert m.ttt.accuracy() == pytest.approx(2 / 3) and m.boundaries.tolist() == [0, 2, 3, 3]
    empty = _evaluation().compute()
    assert math.isnan(empty.ttt.accuracy()) and empty.boundaries.tolist() == [0, 0, 0, 0]
