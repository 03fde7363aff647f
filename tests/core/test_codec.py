"""The versioned state/accumulator codec: round trips, header, and rejection of bad bytes.

Every corruption (a flipped byte anywhere, truncation at any length, wrong magic, wrong version,
trailing bytes, foreign states) must raise ``ValueError`` with a clear message, never return a
state and never raise anything else.
"""

from __future__ import annotations

import datetime
import json
import re
import struct
import zlib

import numpy as np
import pytest

from mergeable_metrics import Evaluation, MetricCollection
from mergeable_metrics.engine import Plan
from mergeable_metrics.metrics import Task
from mergeable_metrics.states import (
    BinaryConfusionLayout,
    BinaryConfusionState,
    ConfusionMatrixLayout,
    ConfusionMatrixState,
    ExampleCountLayout,
    ExampleCountState,
    State,
)
from mergeable_metrics.states import codec
from mergeable_metrics.inputs.validation import Batch
from mergeable_metrics.inputs.formats import make_batch

# NaN results (an undefined metric) are expected in these tests; their warnings are noise here.
pytestmark = pytest.mark.filterwarnings("ignore::mergeable_metrics.UndefinedMetricWarning")


CLEAR = re.compile(r"corrupt|truncat|magic|version|checksum|trailing|unknown|expected|belong|layout", re.I)


def binary_state() -> BinaryConfusionState:
    b, _ = make_batch(num_classes=2, y_true=[1, 0, 1, 0, 1], y_score=[0.9, 0.6, 0.3, 0.1, 0.5], sample_weight=[1, 2, 0.5, 0, 3])
    return BinaryConfusionState.from_batch(BinaryConfusionLayout((0.25, 0.5, 0.75), ">"), b)


def matrix_state() -> ConfusionMatrixState:
    b, _ = make_batch(num_classes=3, y_true=[0, 1, 2, 2], y_pred=[0, 2, 2, 1])
    return ConfusionMatrixState.from_batch(ConfusionMatrixLayout(3), b)


def count_state() -> ExampleCountState:
    b, _ = make_batch(num_classes=2, y_true=[0, 1], y_score=[0.1, 0.2], sample_weight=[0.25, 4.0])
    return ExampleCountState.from_batch(ExampleCountLayout(), b).merge(ExampleCountState.skipped_rows(3))


STATES = {
    "example_count": count_state,
    "binary_confusion": binary_state,
    "confusion_matrix": matrix_state,
    "binary_zero": lambda: BinaryConfusionState.zero(BinaryConfusionLayout()),
    "matrix_zero": lambda: ConfusionMatrixState.zero(ConfusionMatrixLayout(5)),
}


def sliced_accumulator() -> tuple[Evaluation, dict]:
    ev = Evaluation(label_col="y", score_col="s", weight_col="w", slices=["g", "g,h", "k"], metrics=["f1", "accuracy@threshold=0.25"])
    cols = {
        "y": [1, 0, 1, 1, 0, 0],
        "s": [0.9, 0.4, 0.2, 0.8, 0.6, 0.3],
        "w": [1.0, 0.5, 2.0, 0.0, 1.5, 1.0],
        "g": ["é", None, "a", "a", "日本", None],  # non-ASCII and missing values
        "h": [1, 2, 1, 2, 1, 1],
        "k": [True, False, True, True, False, None],
    }
    return ev, ev.fold(ev.zero(), cols)


# ---------------------------------------------------------------------------------------------
# round trips
@pytest.mark.parametrize("name", list(STATES))
def test_state_round_trip(name):
    s = STATES[name]()
    blob = s.encode()
    back = State.decode(blob)
    assert type(back) is type(s) and back.layout == s.layout and back == s
    assert back.encode() == blob
    assert codec._decode_state(codec._encode_state(s)) == s  # the frame functions State.encode / decode wrap
    for field, dtype in s.FIELDS:  # same dtypes and shapes, read-only arrays
        assert back[field].dtype == np.dtype(dtype) and back[field].shape == s[field].shape
        assert not back[field].flags.writeable


def test_plan_and_collection_round_trip():
    mc = MetricCollection("f1", "precision@threshold=0.25", "tp@threshold=0.75", threshold_rule=">")
    mc.update([1, 0, 1, 0], y_score=[0.75, 0.25, 0.5, 0.9], sample_weight=[1, 2, 3, 4])
    blob = mc.encode()
    assert mc.plan.decode(blob) == mc.states
    other = MetricCollection("f1", "precision@threshold=0.25", "tp@threshold=0.75", threshold_rule=">")
    fresh_bytes = other.encode()
    other = other.decode(blob)
    assert MetricCollection("f1", "precision@threshold=0.25", "tp@threshold=0.75", threshold_rule=">").encode() == fresh_bytes != blob
    assert other.states == mc.states and other.compute() == mc.compute()
    assert other.encode() == blob


def test_accumulator_round_trip_with_slices():
    ev, acc = sliced_accumulator()
    blob = ev.encode(acc)
    back = ev.decode(blob)
    assert back == acc
    assert ev.encode(back) == blob
    assert {type(v).__name__ for k in back.slices() for _, v in k} >= {"str", "int", "bool", "NoneType"}
    assert ev.finish(back).to_json() == ev.finish(acc).to_json()


def test_accumulator_bytes_do_not_depend_on_insertion_order():
    ev, acc = sliced_accumulator()
    reordered = dict(reversed(list(acc.items())))
    assert ev.encode(reordered) == ev.encode(acc)


def test_empty_accumulator_round_trip():
    ev = Evaluation(label_col="y", score_col="s", slices="g")
    z = ev.zero()
    assert ev.decode(ev.encode(z)) == z


# ---------------------------------------------------------------------------------------------
# header
def test_versioned_header():
    blob = binary_state().encode()
    assert blob[:3] == b"MMS" and blob[3] == codec.VERSION == 3
    ev, acc = sliced_accumulator()
    ablob = ev.encode(acc)
    assert ablob[:3] == b"MMA" and ablob[3] == codec.ACC_VERSION == 2  # version 2: with a fingerprint
    # the layout is stored as readable JSON right after the kind and its version
    kind_len = struct.unpack("<H", blob[4:6])[0]
    assert blob[6 : 6 + kind_len] == b"binary_confusion" and blob[6 + kind_len] == 1
    (layout_len,) = struct.unpack("<I", blob[7 + kind_len : 11 + kind_len])
    layout = json.loads(blob[11 + kind_len : 11 + kind_len + layout_len])
    assert layout == {"thresholds": [0.25, 0.5, 0.75], "threshold_rule": ">"}
    # crc32 of everything before it
    assert struct.unpack("<I", blob[-4:])[0] == zlib.crc32(blob[:-4])


# ---------------------------------------------------------------------------------------------
# corrupted bytes
def _decoders():
    ev, acc = sliced_accumulator()
    return {
        "state": (binary_state().encode(), State.decode),
        "matrix_state": (matrix_state().encode(), State.decode),
        "accumulator": (ev.encode(acc), ev.decode),
    }


@pytest.mark.parametrize("what", ["state", "matrix_state", "accumulator"])
def test_every_single_byte_flip_is_rejected(what):
    blob, decode = _decoders()[what]
    for i in range(len(blob)):
        bad = bytearray(blob)
        bad[i] ^= 0x5A
        with pytest.raises(ValueError) as err:
            decode(bytes(bad))
        assert CLEAR.search(str(err.value)), (i, str(err.value))


@pytest.mark.parametrize("what", ["state", "matrix_state", "accumulator"])
def test_every_truncation_is_rejected(what):
    blob, decode = _decoders()[what]
    for n in range(len(blob)):
        with pytest.raises(ValueError) as err:
            decode(blob[:n])
        assert CLEAR.search(str(err.value)), (n, str(err.value))


@pytest.mark.parametrize("what", ["state", "accumulator"])
def test_wrong_magic(what):
    blob, decode = _decoders()[what]
    for magic in (b"XYZ", b"MMA" if what == "state" else b"MMS", b"\x00\x00\x00"):
        with pytest.raises(ValueError, match="magic"):
            decode(magic + blob[3:])


@pytest.mark.parametrize("what", ["state", "accumulator"])
@pytest.mark.parametrize("version", [0, 4, 255])
def test_wrong_version(what, version):
    # state frames read versions 1 to 3, accumulators 1 and 2
    blob, decode = _decoders()[what]
    bad = bytearray(blob)
    bad[3] = version
    body = bytes(bad[:-4])
    for candidate in (bytes(bad), body + struct.pack("<I", zlib.crc32(body))):  # with a stale and a fresh crc
        with pytest.raises(ValueError, match="version") as err:
            decode(candidate)
        assert str(version) in str(err.value)


@pytest.mark.parametrize("what", ["state", "accumulator"])
def test_trailing_bytes(what):
    blob, decode = _decoders()[what]
    with pytest.raises(ValueError, match="checksum|trailing"):
        decode(blob + b"\x00")
    # trailing bytes inside a correctly checksummed frame
    body = blob[:-4] + b"junk"
    with pytest.raises(ValueError, match="trailing"):
        decode(body + struct.pack("<I", zlib.crc32(body)))


def test_empty_and_non_bytes_input():
    with pytest.raises(ValueError):
        State.decode(b"")
    with pytest.raises(TypeError):
        State.decode("MMS")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        State.decode(None)  # type: ignore[arg-type]
    assert State.decode(bytearray(binary_state().encode())) == binary_state()
    assert State.decode(memoryview(binary_state().encode())) == binary_state()


def _frame(body_parts: list[bytes]) -> bytes:
    body = b"".join(body_parts)
    return body + struct.pack("<I", zlib.crc32(body))


def _s16(s: str) -> bytes:
    b = s.encode()
    return struct.pack("<H", len(b)) + b


def _s32(s: str) -> bytes:
    b = s.encode()
    return struct.pack("<I", len(b)) + b


def _field(name: str, code: int, shape: tuple[int, ...], data: bytes) -> bytes:
    return _s16(name) + struct.pack("<BB", code, len(shape)) + struct.pack(f"<{len(shape)}Q", *shape) + data


def _binary_fields(names=("tp", "fp", "tn", "fn"), n=1, code=1) -> list[bytes]:
    return [_field(nm, code, (n,), np.zeros(n, "<f8").tobytes()) for nm in names]


CRAFTED = {
    # well-formed frames (valid checksum) whose content is wrong
    "unknown_kind": [b"MMS\x01", _s16("auc_sketch"), _s32("{}"), struct.pack("<H", 0)],
    "bad_layout_json": [b"MMS\x01", _s16("binary_confusion"), _s32("{not json"), struct.pack("<H", 4), *_binary_fields()],
    "layout_not_object": [b"MMS\x01", _s16("binary_confusion"), _s32("[1, 2]"), struct.pack("<H", 4), *_binary_fields()],
    "layout_unknown_field": [b"MMS\x01", _s16("binary_confusion"), _s32('{"bins": 3}'), struct.pack("<H", 4), *_binary_fields()],
    "layout_unsorted_thresholds": [
        b"MMS\x01", _s16("binary_confusion"), _s32('{"thresholds": [0.7, 0.2], "threshold_rule": ">="}'),
        struct.pack("<H", 4), *_binary_fields(n=2),
    ],
    "layout_bad_num_classes": [b"MMS\x01", _s16("confusion_matrix"), _s32('{"num_classes": null}'), struct.pack("<H", 1), _field("matrix", 1, (2, 2), np.zeros(4).tobytes())],
    "shape_mismatch": [
        b"MMS\x01", _s16("binary_confusion"), _s32('{"thresholds": [0.5], "threshold_rule": ">="}'),
        struct.pack("<H", 4), *_binary_fields(n=2),
    ],
    "wrong_dtype_code": [
        b"MMS\x01", _s16("binary_confusion"), _s32('{"thresholds": [0.5], "threshold_rule": ">="}'),
        struct.pack("<H", 4), *_binary_fields(code=2),
    ],
    "unknown_field": [
        b"MMS\x01", _s16("binary_confusion"), _s32('{"thresholds": [0.5], "threshold_rule": ">="}'),
        struct.pack("<H", 4), *_binary_fields(names=("tp", "fp", "tn", "xx")),
    ],
    "too_few_fields": [
        b"MMS\x01", _s16("binary_confusion"), _s32('{"thresholds": [0.5], "threshold_rule": ">="}'),
        struct.pack("<H", 3), *_binary_fields(names=("tp", "fp", "tn")),
    ],
    "invalid_utf8": [b"MMS\x01", struct.pack("<H", 2) + b"\xff\xfe", _s32("{}"), struct.pack("<H", 0)],
}  # fmt: skip


@pytest.mark.parametrize("name", list(CRAFTED))
def test_well_formed_frames_with_bad_content_are_rejected(name):
    with pytest.raises(ValueError):
        State.decode(_frame(CRAFTED[name]))


def test_repeated_field_name_is_a_value_error():
    parts = [
        b"MMS\x01", _s16("binary_confusion"), _s32('{"thresholds": [0.5], "threshold_rule": ">="}'),
        struct.pack("<H", 4), *_binary_fields(names=("tp", "tp", "tn", "fn")),
    ]  # fmt: skip
    with pytest.raises(ValueError, match="fp|field"):
        State.decode(_frame(parts))


def test_accumulator_with_bad_slice_key_is_rejected():
    state_bytes = BinaryConfusionState.zero(BinaryConfusionLayout()).encode()
    for key in ("{not json", '{"a": 1}', "[[1, 2, 3]]", "[1]"):
        parts = [b"MMA\x01", struct.pack("<I", 1), _s32(key), struct.pack("<H", 1), struct.pack("<I", len(state_bytes)), state_bytes]
        with pytest.raises(ValueError):
            codec._read_accumulator(_frame(parts))


# ---------------------------------------------------------------------------------------------
# foreign states
def test_plan_decode_of_another_plans_states_raises():
    p05 = Plan(["f1"], Task(threshold=0.5))
    p07 = Plan(["f1"], Task(threshold=0.7))
    pgt = Plan(["f1"], Task(threshold_rule=">"))
    p3 = Plan(["f1@macro"], Task(num_classes=3))
    p4 = Plan(["f1@macro"], Task(num_classes=4))
    pacc = Plan(["accuracy", "example_count"], Task())
    for a, b in [(p05, p07), (p05, pgt), (p3, p4), (p05, p3), (p3, p05), (pacc, p3)]:
        with pytest.raises(ValueError, match="belong|expected"):
            a.decode(b.encode(b.zero()))
    # the same states under another metric set that shares them are fine
    assert Plan(["precision", "recall"], Task()).decode(p05.encode(p05.zero())) == p05.zero()


def test_collection_decode_of_foreign_bytes_raises():
    a = MetricCollection("f1", threshold=0.5)
    b = MetricCollection("f1", threshold=0.7)
    with pytest.raises(ValueError):
        a.decode(b.encode())
    with pytest.raises(ValueError, match="magic"):
        a.decode(binary_state().encode())  # a single state is not a state tuple
    assert a.states == a.plan.zero()


def test_evaluation_decode_of_foreign_accumulator_raises():
    ev_a = Evaluation(label_col="y", score_col="s", slices="g")
    ev_b = Evaluation(label_col="y", prediction_col="p", num_classes=3, slices="g")
    acc_b = ev_b.fold(ev_b.zero(), {"y": [0, 1], "p": [2, 1], "g": ["a", "b"]})
    with pytest.raises(ValueError, match="belong|expected"):
        ev_a.decode(ev_b.encode(acc_b))
    with pytest.raises(ValueError, match="magic"):
        ev_a.decode(binary_state().encode())
    with pytest.raises(ValueError, match="single slice"):
        Plan(["f1"], Task()).decode(ev_a.encode({(): Plan(["f1"], Task()).zero(), (("g", "a"),): Plan(["f1"], Task()).zero()}))


@pytest.mark.parametrize(
    "column",
    [
        [datetime.date(2024, 1, 1), datetime.date(2024, 1, 2), datetime.date(2024, 1, 1)],
        np.array(["2024-01-01", "2024-01-02", "2024-01-01"], dtype="datetime64[D]"),
    ],
    ids=["list_of_dates", "numpy_datetime64"],
)
def test_date_slice_columns_survive_the_codec(column):
    ev = Evaluation(label_col="y", score_col="s", slices="day")
    acc = ev.fold(ev.zero(), {"y": [0, 1, 1], "s": [0.2, 0.7, 0.4], "day": column})
    back = ev.decode(ev.encode(acc))
    assert back == acc
    assert len(back) == 3


def _state_frame_v2(blob: bytes) -> bytes:
    """A version-3 state frame rewritten as version 2 (no kind version byte after the kind)."""
    (n,) = struct.unpack("<H", blob[4:6])
    at = 6 + n  # the kind version byte
    body = b"MMS" + bytes([2]) + blob[4:at] + blob[at + 1 : -4]
    return body + struct.pack("<I", zlib.crc32(body))


def test_state_frames_carry_their_kinds_version_and_version_2_frames_still_decode():
    state = BinaryConfusionState.from_batch(BinaryConfusionLayout((0.25, 0.5)), Batch(y_true=np.array([1, 0, 1]), y_score=np.array([0.9, 0.3, 0.4])))
    blob = state.encode()
    (n,) = struct.unpack("<H", blob[4:6])
    assert blob[6 : 6 + n] == b"binary_confusion" and blob[6 + n] == BinaryConfusionState.VERSION == 1
    assert State.decode(_state_frame_v2(blob)) == state


def test_a_newer_kind_version_raises_naming_the_kind_and_versions():
    blob = bytearray(ExampleCountState.zero(ExampleCountLayout()).encode())
    (n,) = struct.unpack("<H", blob[4:6])
    blob[6 + n] = 2
    body = bytes(blob[:-4])
    with pytest.raises(ValueError, match=r"example_count bytes of kind version 2 cannot be read.*version 1 and older"):
        State.decode(body + struct.pack("<I", zlib.crc32(body)))


def test_older_kind_versions_are_read_through_the_kinds_upgrade(monkeypatch):
    old = ExampleCountState.from_batch(ExampleCountLayout(), Batch(y_true=np.array([1, 0, 1])))
    blob = old.encode()  # kind version 1
    seen = []

    def upgrade(cls, version, layout, arrays):
        seen.append(version)
        return {**arrays, "skipped": arrays["skipped"] + 5}  # what a version 2 might have changed

    monkeypatch.setattr(ExampleCountState, "VERSION", 2)
    monkeypatch.setattr(ExampleCountState, "upgrade", classmethod(upgrade))
    got = State.decode(blob)
    assert seen == [1] and int(got["count"]) == 3 and int(got["skipped"]) == 5
    assert State.decode(got.encode()) == got  # written as version 2: no upgrade
    assert seen == [1]


def test_a_kind_without_an_upgrade_refuses_older_bytes(monkeypatch):
    blob = ExampleCountState.zero(ExampleCountLayout()).encode()
    monkeypatch.setattr(ExampleCountState, "VERSION", 2)
    with pytest.raises(ValueError, match="kind version 1 cannot be upgraded to version 2"):
        State.decode(blob)
