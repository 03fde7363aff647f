"""mergeable_metrics.ContinualEvaluation / OCLMetrics: hand-computed values, CapyMOA's formulas, merge laws, codec."""

from __future__ import annotations

import pickle

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from mergeable_metrics import ContinualEvaluation, merge
from mergeable_metrics.time.continual import ContinualState, OCLMetrics

# A small event list, T=2 tasks, K=2 classes, H=1 anytime evaluation per task, computed by hand:
#   (trained_task, step, evaluated_task, labels, predictions)
EVENTS = [
    (0, None, 0, [0, 1, 1, 0], [0, 1, 0, 0]),  # 3/4
    (0, None, 1, [1, 1], [0, 1]),  # 1/2
    (1, None, 0, [0, 1], [1, 1]),  # 1/2
    (1, None, 1, [0, 1, 1], [0, 1, 1]),  # 3/3
    (0, 0, 0, [0, 1], [0, 0]),  # 1/2
    (0, 0, 1, [1], [1]),  # 1/1
    (1, 0, 0, [0], [0]),  # 1/1
    (1, 0, 1, [1, 0], [0, 0]),  # 1/2
]


def _fold(events, t=2, k=2, h=1):
    ev = ContinualEvaluation(num_tasks=t, num_classes=k, evaluations_per_task=h)
    for tr, step, e, y, p in events:
        ev.update(tr, e, y, p, step=step)
    return ev


def test_hand_computed_small_event_list():
    m = _fold(EVENTS).compute()
    assert isinstance(m, OCLMetrics)
    np.testing.assert_array_equal(m.accuracy_matrix, [[0.75, 0.5], [0.5, 1.0]])
    np.testing.assert_array_equal(m.anytime_accuracy_matrix, [[0.5, 1.0], [1.0, 0.5]])
    np.testing.assert_array_equal(m.accuracy_all, [0.625, 0.75])
    assert m.accuracy_all_avg == 0.6875
    np.testing.assert_array_equal(m.accuracy_seen, [0.75, 0.75])
    assert m.accuracy_seen_avg == 0.75
    assert m.accuracy_final == 0.75
    np.testing.assert_array_equal(m.anytime_accuracy_all, [0.75, 0.75])
    assert m.anytime_accuracy_all_avg == 0.75
    np.testing.assert_array_equal(m.anytime_accuracy_seen, [0.5, 0.75])
    assert m.anytime_accuracy_seen_avg == 0.625
    assert m.forward_transfer == 0.5  # 2 / (2 * 1) * R[0, 1]
    assert m.backward_transfer == -0.25  # R[1, 0] - R[0, 0]
    np.testing.assert_array_equal(m.class_cm, [[[2, 0], [2, 2]], [[1, 1], [0, 3]]])
    np.testing.assert_array_equal(m.task_index, [1, 2])
    np.testing.assert_array_equal(m.anytime_task_index, [1.0, 2.0])
    assert (m.n_tasks, m.n_classes, m.n_continual_evaluations) == (2, 2, 1)
    assert m.undefined == []


def _capymoa_reference(cm):
    """CapyMOA's ``_OCLEvaluator.build`` transcribed to numpy: ``cm`` is its
    (train task, step, test task, true, pred) count tensor; R is the last step's accuracy."""
    correct = np.diagonal(cm, axis1=3, axis2=4).sum(-1)
    total = cm.sum((3, 4))
    acc = correct / total
    r = acc[:, -1, :]
    t, h = acc.shape[0], acc.shape[1]
    seen = np.array([[acc[i, s, : i + 1].mean() for s in range(h)] for i in range(t)])
    n = t
    return {
        "accuracy_matrix": r,
        "anytime_accuracy_matrix": acc.reshape(t * h, t),
        "accuracy_all": r.mean(1),
        "accuracy_seen": np.array([r[i, : i + 1].mean() for i in range(t)]),
        "anytime_accuracy_all": acc.mean(2).reshape(-1),
        "anytime_accuracy_seen": seen.reshape(-1),
        "anytime_accuracy_seen_avg": seen.mean(),
        "forward_transfer": np.triu(r, 1).sum() / (n * (n - 1) / 2),
        "backward_transfer": np.tril(r - np.diag(r)).sum() / (n * (n - 1) / 2),
        "class_cm": cm[:, -1].sum(1),
    }


def test_agrees_with_capymoas_formulas_on_random_evaluations():
    rng = np.random.default_rng(7)
    t, k, h = 4, 3, 3
    cm = np.zeros((t, h, t, k, k), np.int64)
    ev = ContinualEvaluation(t, k, h)
    for i in range(t):
        for s in range(h):
            for j in range(t):
                y = rng.integers(0, k, 30)
                p = np.where(rng.random(30) < 0.3 + 0.1 * s, y, rng.integers(0, k, 30))
                np.add.at(cm, (i, s, j, y, p), 1)
                ev.update(i, j, y, p, step=s)
                if s == h - 1:  # CapyMOA's R is its last anytime evaluation: feed it as R too
                    ev.update(i, j, y, p)
    m, ref = ev.compute(), _capymoa_reference(cm)
    for name, want in ref.items():
        np.testing.assert_allclose(getattr(m, name), want, rtol=1e-12, atol=0, err_msg=name)
    assert m.accuracy_final == pytest.approx(ref["accuracy_all"][-1], rel=1e-12)
    assert m.backward_transfer == pytest.approx(
        np.mean([ref["accuracy_matrix"][i, j] - ref["accuracy_matrix"][j, j] for i in range(t) for j in range(i)]), rel=1e-12
    )


def test_event_columns_and_null_steps():
    import pyarrow as pa

    rows = [(tr, step, e, y, p) for tr, step, e, ys, ps in EVENTS for y, p in zip(ys, ps)]
    cols = {c: [r[i] for r in rows] for i, c in enumerate(("trained_task", "step", "evaluated_task", "label", "prediction"))}
    for data in (cols, pa.table(cols)):
        ev = ContinualEvaluation(2, 2, 1)
        ev.fold_events(data)
        assert ev == _fold(EVENTS)
    with pytest.raises(ValueError, match=r"missing \['prediction'\]"):
        ContinualEvaluation(2, 2, 1).fold_events({k: v for k, v in cols.items() if k != "prediction"})


def test_a_task_never_evaluated_is_nan_and_listed():
    m = _fold([e for e in EVENTS if not (e[0] == 1 and e[1] is None and e[2] == 0)]).compute()
    assert np.isnan(m.accuracy_matrix[1, 0]) and m.accuracy_matrix[1, 1] == 1.0
    assert {"metric": "accuracy_matrix", "entries": [[1, 0]]} in m.undefined
    assert np.isnan(m.backward_transfer) and {"metric": "backward_transfer"} in m.undefined
    assert m.forward_transfer == 0.5  # does not use R[1, 0]
    assert np.isnan(m.accuracy_final)


@pytest.mark.parametrize(
    "args, match",
    [
        (
            dict(trained_task=2, evaluated_task=0, y_true=[0], y_pred=[0]),
            r"column 'trained_task': invalid value 2 at row 0: trained tasks must be integers in \[0, 2\)",
        ),
        (dict(trained_task=0, evaluated_task=[0, -1], y_true=[0, 1], y_pred=[0, 1]), r"column 'evaluated_task': invalid value -1 at row 1"),
        (dict(trained_task=0, evaluated_task=0, y_true=[0, 2], y_pred=[0, 1]), r"column 'label': invalid value 2 at row 1"),
        (dict(trained_task=0, evaluated_task=0, y_true=[0, 1], y_pred=[0, None]), r"column 'prediction': invalid value None at row 1"),
        (dict(trained_task=0, evaluated_task=0, y_true=[0, 1], y_pred=pa.array([0.0, None])), r"column 'prediction': invalid value null at row 1"),
        (dict(trained_task=0, evaluated_task=0, y_true=[0.5], y_pred=[0]), r"column 'label': invalid value 0.5 at row 0"),
        (
            dict(trained_task=0, evaluated_task=0, y_true=[0, 1], y_pred=[0, 1], step=[None, 1]),
            r"column 'step': invalid value 1 at row 1: steps must be integers in \[0, 1\)",
        ),
        (dict(trained_task=0, evaluated_task=0, y_true=[0], y_pred=[0, 1]), r"column 'prediction': 2 rows, but the labels have 1"),
    ],
)
def test_bad_events_name_column_value_and_row(args, match):
    ev = ContinualEvaluation(2, 2, 1)
    with pytest.raises(ValueError, match=match):
        ev.update(**args)
    assert ev == ContinualEvaluation(2, 2, 1)  # nothing folded


def test_anytime_steps_need_evaluations_per_task():
    with pytest.raises(ValueError, match="column 'step': invalid value 0 at row 0: anytime steps need evaluations_per_task > 0"):
        ContinualEvaluation(2, 2).update(0, 0, [1], [1], step=0)


@pytest.mark.parametrize(
    "kw, name",
    [
        (dict(num_tasks=0, num_classes=2), "num_tasks"),
        (dict(num_tasks=True, num_classes=2), "num_tasks"),
        (dict(num_tasks=2, num_classes=1), "num_classes"),
        (dict(num_tasks=2, num_classes=2, evaluations_per_task=-1), "evaluations_per_task"),
    ],
)
def test_bad_configuration(kw, name):
    with pytest.raises(ValueError, match=f"{name} must be an int"):
        ContinualEvaluation(**kw)


def test_merge_codec_pickle_and_configuration_mismatch():
    a, b = _fold(EVENTS[:3]), _fold(EVENTS[3:])
    whole = _fold(EVENTS)
    assert merge(a, b) == whole and merge(b, a) == whole and a != whole  # mergeable_metrics.merge: a new one
    assert ContinualEvaluation(2, 2, 1).merge(whole) == whole  # zero is the identity
    assert a.merge(b) is a and a == whole and b == _fold(EVENTS[3:])  # .merge: in place
    assert ContinualEvaluation.decode(whole.encode()) == whole
    assert pickle.loads(pickle.dumps(whole)) == whole
    assert ContinualEvaluation(2, 2, 1).merge(ContinualEvaluation.decode(whole.encode())) == whole
    with pytest.raises(ValueError, match="evaluations_per_task 1 != 2"):
        whole.merge(ContinualEvaluation(2, 2, 2))
    with pytest.raises(ValueError, match="num_tasks 2 != 3"):
        whole.merge(ContinualEvaluation.decode(ContinualEvaluation(3, 2, 1).encode()))
    data = bytearray(whole.encode())
    data[-9] ^= 0xFF
    with pytest.raises(ValueError):
        ContinualEvaluation.decode(bytes(data))


def test_decoded_states_are_validated():
    s = _fold(EVENTS).state
    arrays = dict(s.arrays)
    arrays["correct"] = arrays["total"] + 1
    with pytest.raises(ValueError, match="correct.*exceeds total"):
        ContinualState.decode(ContinualState(s.layout, arrays).encode())


@settings(max_examples=50)
@given(st.data())
def test_merge_laws_any_sharding_and_order(data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    t, k, h = data.draw(st.integers(1, 4)), data.draw(st.integers(2, 4)), data.draw(st.integers(0, 3))
    n = data.draw(st.integers(0, 200))
    tr, e = rng.integers(0, t, n), rng.integers(0, t, n)
    y, p = rng.integers(0, k, n), rng.integers(0, k, n)
    step = np.where(rng.random(n) < 0.5, np.nan, rng.integers(0, max(h, 1), n)) if h else None
    whole = ContinualEvaluation(t, k, h)
    whole.update(tr, e, y, p, step=step)
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=5)))  # shards, empty ones included
    parts = []
    for lo, hi in zip([0, *cuts], [*cuts, n]):
        ev = ContinualEvaluation(t, k, h)
        ev.update(tr[lo:hi], e[lo:hi], y[lo:hi], p[lo:hi], step=None if step is None else step[lo:hi])
        parts.append(ev)
    order = data.draw(st.permutations(range(len(parts))))
    merged = ContinualEvaluation(t, k, h)
    for i in order:
        merged = merged.merge(parts[i])
    assert merged == whole
    m1, m2 = merged.compute(), whole.compute()
    np.testing.assert_array_equal(m1.accuracy_matrix, m2.accuracy_matrix)


@pytest.mark.parametrize("kw", [dict(num_tasks=100_000, num_classes=2), dict(num_tasks=100, num_classes=2, evaluations_per_task=100_000),
                                dict(num_tasks=10, num_classes=10_000)])  # fmt: skip
def test_configurations_past_the_state_size_limit_raise_before_allocating(kw):
    # before: MAX_TASKS (100,000) tasks were accepted and zero() asked numpy for 74.5 GiB (MemoryError)
    with pytest.raises(ValueError, match=r"a continual state holds at most 67108864"):
        ContinualEvaluation(**kw)
    assert ContinualEvaluation(1000, 100, 10).state.arrays["anytime_total"].shape == (1000, 10, 1000)


def _crafted(layout_json: str, arrays: dict) -> bytes:
    """Continual-state bytes with any layout text and arrays (a valid checksum: a hostile writer)."""
    import struct
    import zlib

    from mergeable_metrics.states import codec

    parts = [codec._STATE_MAGIC, bytes([codec.VERSION]), codec._str16("continual"), bytes([ContinualState.VERSION]), codec._str32(layout_json)]
    parts.append(struct.pack("<H", len(ContinualState.STORED_FIELDS)))
    for name, dtype in ContinualState.STORED_FIELDS:
        a = np.ascontiguousarray(arrays[name], dtype="<i8")
        parts += [codec._str16(name), struct.pack("<BB", codec._DTYPE_CODES[np.dtype(dtype)], a.ndim), struct.pack(f"<{a.ndim}Q", *a.shape), a.tobytes()]
    body = b"".join(parts)
    return body + struct.pack("<I", zlib.crc32(body))


def _zeros(t, k, h):
    return {"correct": np.zeros((t, t)), "total": np.zeros((t, t)), "anytime_correct": np.zeros((t, h, t)),
            "anytime_total": np.zeros((t, h, t)), "class_cm": np.zeros((t, k, k)),
            "ttt_cm": np.zeros((0, k, k)), "ttt_tasks": np.zeros((0, t)), "ttt_end": np.zeros(1)}  # fmt: skip


@pytest.mark.parametrize(
    "layout, shape, name",
    [('{"num_tasks":1,"num_classes":1,"evaluations_per_task":0}', (1, 1, 0), "num_classes"),
     ('{"num_tasks":1,"num_classes":0,"evaluations_per_task":0}', (1, 0, 0), "num_classes"),
     ('{"num_tasks":true,"num_classes":2,"evaluations_per_task":0}', (1, 2, 0), "num_tasks")],
)  # fmt: skip
def test_decoded_layouts_no_configuration_could_make_are_refused(layout, shape, name):
    # before: ContinualState.decode returned states of 1 or 0 classes, or num_tasks=True
    assert ContinualState.decode(_crafted('{"num_tasks":1,"num_classes":2,"evaluations_per_task":0}', _zeros(1, 2, 0))).layout.num_classes == 2
    with pytest.raises(ValueError, match=f"bad layout.*{name} must be an integer"):
        ContinualState.decode(_crafted(layout, _zeros(*shape)))


def test_decoded_class_cm_must_agree_with_the_correct_counts():
    # before: 3 events of task 0, all correct by class_cm (diagonal) but 2 correct by `correct`, decoded fine
    a = _zeros(2, 2, 0)
    a["total"][0, 0], a["correct"][0, 0], a["class_cm"][0, 0, 0], a["class_cm"][0, 1, 1] = 3, 2, 1, 2
    with pytest.raises(ValueError, match=r"class_cm\[0\] has 3 correct predictions, correct\[0\] sums to 2"):
        ContinualState.decode(_crafted('{"num_tasks":2,"num_classes":2,"evaluations_per_task":0}', a))


def test_fold_events_reads_and_names_the_users_label_and_prediction_columns():
    # before: callers renamed the columns to 'label'/'prediction', and errors named those, not the user's
    ev = ContinualEvaluation(2, 2)
    ev.fold_events({"trained_task": [0, 0], "evaluated_task": [0, 1], "y": [0, 1], "yhat": [0, 0]}, "y", "yhat")
    assert ev.compute().accuracy_matrix[0].tolist() == [1.0, 0.0]
    with pytest.raises(ValueError, match=r"column 'yhat': invalid value 7 at row 2: predictions must be integers in \[0, 2\)"):
        ev.fold_events({"trained_task": [0], "evaluated_task": [0], "y": [0], "yhat": [7]}, "y", "yhat")
    with pytest.raises(ValueError, match=r"missing \['yhat'\]"):
        ev.fold_events({"trained_task": [0], "evaluated_task": [0], "y": [0], "prediction": [0]}, "y", "yhat")


def test_nan_steps_in_object_containers_mean_after_the_task():
    # None, NaN and an Arrow null all mark the evaluation after the task (R), in a list, an object
    # array and row dicts (Beam's elements); the hand-computed EVENTS fold is the reference
    from mergeable_metrics.beam.continual import ContinualCombineFn

    rows = [(tr, step, e, y, p) for tr, step, e, ys, ps in EVENTS for y, p in zip(ys, ps)]
    for null in (float("nan"), np.float64("nan"), None):
        steps = [null if s is None else s for _, s, _, _, _ in rows]
        cols = {c: [r[i] for r in rows] for i, c in enumerate(("trained_task", "step", "evaluated_task", "label", "prediction"))}
        for container in (list, lambda v: np.asarray(v, dtype=object)):
            ev = ContinualEvaluation(2, 2, 1)
            ev.fold_events({**cols, "step": container(steps)})
            assert ev == _fold(EVENTS), (null, container)
        fn = ContinualCombineFn(2, 2, 1)
        acc = fn.create_accumulator()
        for r, s in zip(rows, steps):
            acc = fn.add_input(acc, {"trained_task": r[0], "step": s, "evaluated_task": r[2], "label": r[3], "prediction": r[4]})
        assert fn.extract_output(acc) == _fold(EVENTS)
    with pytest.raises(ValueError, match=r"column 'step': invalid value 'x' at row 0"):
        ContinualEvaluation(2, 2, 1).update(0, 0, [1], [1], step=np.array(["x"], dtype=object))


@pytest.mark.parametrize(
    ("keyword", "ours"),
    [("preds", "y_pred="), ("target", "y_true="), ("y_hat", "y_pred="), ("labels", "y_true=")],
)
def test_update_refuses_other_libraries_keywords_naming_ours(keyword, ours):
    """``update(..., preds=...)`` (torchmetrics' names) is refused naming our keyword, and nothing is folded."""
    ev = ContinualEvaluation(num_tasks=2, num_classes=2, evaluations_per_task=1)
    kw = {"y_true": [0, 1], "y_pred": [0, 1]}
    kw.pop(ours[:-1])
    kw[keyword] = [0, 1]
    with pytest.raises(TypeError, match=rf"ContinualEvaluation.update\(\) got an unexpected keyword argument '{keyword}'.*{ours}"):
        ev.update(0, 0, **kw)
    assert ev.state == ContinualEvaluation(num_tasks=2, num_classes=2, evaluations_per_task=1).state


def test_update_without_labels_or_predictions_says_which_is_missing():
    ev = ContinualEvaluation(num_tasks=2, num_classes=2, evaluations_per_task=1)
    with pytest.raises(TypeError, match=r"missing required argument 'y_pred'"):
        ev.update(0, 0, [0, 1])
