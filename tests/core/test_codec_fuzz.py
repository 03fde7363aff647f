"""Codec fuzz: every state kind and Evaluation accumulators, under truncation, bit flips and
crafted frames with a *valid* checksum (tests/_helpers/frames.py rebuilds the CRC) that hold bad
values, kinds, shapes, dtypes, layouts, fingerprints and slice keys.

Every case ends in ``ValueError`` / ``TypeError`` with a clear message, or in a state (an
accumulator) that is valid: finite values, non-negative counts, this plan's kinds and layouts,
the overall slice, and the same object after another encode/decode. Never another exception.
Strength: ``HYPOTHESIS_PROFILE`` (the "ci" profile runs the default number of examples).
"""

from __future__ import annotations

import json
import re
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mergeable_metrics import ContinualEvaluation, Evaluation, MetricCollection
from mergeable_metrics.states import State
from mergeable_metrics.states.codec import layout_to_json, slice_key_to_json
from mergeable_metrics.evaluation.evaluation import OVERALL
from mergeable_metrics.states.base import STATE_KINDS
from tests._helpers.frames import accumulator_frame, field, fields_of, state_frame, with_crc

pytestmark = pytest.mark.filterwarnings("ignore::mergeable_metrics.UndefinedMetricWarning")

CLEAR = re.compile(
    r"corrupt|truncat|magic|version|checksum|trailing|unknown|expected|belong|layout|invalid|missing|twice"
    r"|not a slice|the bytes hold|not canonical|not supported|whole number|not finite|negative",
    re.I,
)
FUZZ = settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

#: fields that are sums of non-negative quantities, per kind (the test's own oracle; a kind may
#: have more)
NON_NEGATIVE = {
    "example_count": ("count", "weight", "skipped"),
    "binary_confusion": ("tp", "fp", "tn", "fn"),
    "confusion_matrix": ("matrix",),
    "top_k": ("hits", "weight"),
    "binary_top_k": ("hits", "weight", "outside"),
    "probability_sums": ("weight", "brier", "log_loss"),
    "calibration_bins": ("count",),
    "mean_measure": ("count", "weight"),
    "regression_moments": ("count", "weight", "m2_y", "m2_p", "m2_e", "sum_abs_e"),
    "regression_terms": ("count", "weight", "outside"),
    "multilabel": ("tp", "fp", "fn", "tn", "weight", "count"),
    "score_distribution": ("pos", "neg"),
    "score_distribution_class0": ("pos", "neg"),
    "absolute_error_distribution": ("pos", "neg"),
    "output_absolute_error_distribution": ("weights",),
    "class_score_distribution": ("weights",),
    "label_score_distribution": ("weights",),
    "label_ranking_samples": ("sum_w", "def_w", "sum_n", "def_n", "count"),
    "multilabel_jaccard_samples": ("j_sum_w", "j_def_w", "j_sum_n", "j_def_n", "weight", "count"),
    "continual": ("correct", "total", "anytime_correct", "anytime_total", "class_cm"),
    "retrieval": ("relevance",),
    "bucket_cells": ("counts", "weights"),
    "bucket_score_distribution": ("pos", "neg"),
    "bucket_probability_sums": ("weight", "brier", "log_loss"),
    "bucket_calibration_bins": ("count",),
}


def sample_states() -> dict[str, State]:
    """One non-trivial state of every registered kind, folded from real rows."""
    got: dict[str, State] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mc = MetricCollection("f1", "roc_auc", "roc_auc@pos_label=0", "log_loss", "ece", "mean_measure", "top_k_accuracy@k=1")
        mc.update([1, 0, 1, 0, 1], y_score=[0.9, 0.3, 0.6, 0.6, 0.2], sample_weight=[1, 2, 0.5, 1, 1], measure=[0.1, 0.2, 0.3, 0.4, -0.5])
        scores = np.array([[0.7, 0.2, 0.1], [0.1, 0.6, 0.3], [0.2, 0.2, 0.6], [0.5, 0.4, 0.1]])
        mcs = [mc, MetricCollection("accuracy", "top_k_accuracy", "roc_auc@macro", num_classes=3)]
        mcs[1].update([0, 1, 2, 1], y_score=scores)
        mcs.append(MetricCollection("f1@macro", "roc_auc", "average_precision@samples", "iou@samples", task="multilabel", num_classes=3))
        mcs[2].update(np.array([[1, 0, 1], [0, 1, 0]]), y_score=np.array([[0.9, 0.2, 0.6], [0.3, 0.8, 0.1]]), sample_weight=[1.5, 0.25])
        mcs.append(MetricCollection("r2", "mae", "msle", "mean_pinball_loss@alpha=0.9", "median_absolute_error", task="regression"))
        mcs[3].update([1.0, 2.0, -3.0], y_pred=[1.5, 1.0, -2.0])
        mcs.append(MetricCollection("ndcg", "mrr", task="regression"))
        mcs[4].update([2.0, 0.0, 1.0, 0.0], y_score=[0.3, 0.9, 0.3, 0.1], query=["a", "a", "b", "b"])
        mcs.append(MetricCollection("median_absolute_error", num_outputs=2))  # + output_absolute_error_distribution
        mcs[5].update(
            np.array([[1.0, 0.0], [2.0, 5.0], [-3.0, 1e308]]), y_pred=np.array([[1.5, 0.0], [1.0, 4.0], [-2.0, -1e308]]), sample_weight=[1.0, 0.5, 2.0]
        )
        paired = Evaluation(label_col="y", score_col="s", baseline_score_col="b", weight_col="w", metrics=["f1"])  # + paired_confusion
        acc = paired.fold(paired.zero(), {"y": [1, 0, 1, 0], "s": [0.9, 0.3, 0.6, 0.2], "b": [0.4, 0.7, 0.6, 0.1], "w": [1, 2, 0.5, 1]})
        boot = Evaluation(label_col="y", score_col="s", weight_col="w", metrics=["f1", "roc_auc", "log_loss", "ece"], ci="bootstrap", ci_buckets=10)
        bacc = boot.fold(boot.zero(), {"y": [1, 0, 1, 0, 1], "s": [0.9, 0.3, 0.6, 0.6, 0.2], "w": [1, 2, 0.5, 1, 0.25]})  # + the bucket-stacked kinds
    for states in [m.states for m in mcs] + [acc[()], bacc[()]]:
        for s in states:
            got.setdefault(s.kind, s)
    ev = ContinualEvaluation(num_tasks=2, num_classes=3, evaluations_per_task=1)
    ev.update([0, 0, 1, 1], [0, 1, 0, 1], [0, 2, 1, 1], [0, 1, 1, 1], step=[None, 0, None, 0])
    got["continual"] = ev.state
    from mergeable_metrics.inputs.validation import Batch
    from mergeable_metrics.metrics.multilabel import MultilabelLayout, MultilabelSamplewiseState

    got["multilabel_samplewise"] = MultilabelSamplewiseState.zero(MultilabelLayout(3, (0.5,))).fold(
        Batch(np.array([[1, 0, 1], [0, 1, 0]]), np.array([[0.9, 0.2, 0.6], [0.3, 0.8, 0.1]]), None, np.array([1.5, 0.25]), ids=np.array([7, -2]))
    )
    return got


SAMPLES = sample_states()
KINDS = sorted(STATE_KINDS)


def test_every_state_kind_has_a_fuzz_sample():
    assert sorted(SAMPLES) == KINDS, "add a sample of the new kind to sample_states()"


def decoded_or_clear_error(decode, blob: bytes):
    """``decode(blob)``, or None after a ValueError/TypeError with a clear message (any other
    exception fails the test)."""
    try:
        return decode(blob)
    except (ValueError, TypeError) as e:
        assert CLEAR.search(str(e)), f"unclear message: {type(e).__name__}: {e}"
        return None


def assert_good_state(s: State) -> None:
    """The oracle for a state that decoded: finite, non-negative sums, and stable."""
    assert type(s) is STATE_KINDS[s.kind]
    for name, dtype in s.FIELDS:
        a = np.asarray(s[name])
        assert a.dtype == np.dtype(dtype)
        if a.dtype.kind == "f":
            assert np.isfinite(a).all(), (s.kind, name, a)
        if name in NON_NEGATIVE.get(s.kind, ()):
            assert (a >= 0).all(), (s.kind, name, a)
    assert State.decode(s.encode()) == s
    assert s.merge(type(s).zero(s.layout)) == s


# -- truncation and bit flips -----------------------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
def test_every_truncation_of_every_state_kind_is_rejected(kind):
    blob = SAMPLES[kind].encode()
    for n in range(len(blob)):
        assert decoded_or_clear_error(State.decode, blob[:n]) is None, n


@pytest.mark.parametrize("kind", KINDS)
@FUZZ
@given(data=st.data())
def test_bit_flips_in_every_state_kind_are_rejected(kind, data):
    blob = bytearray(SAMPLES[kind].encode())
    for bit in data.draw(st.sets(st.integers(0, len(blob) * 8 - 1), min_size=1, max_size=3), label="bits"):
        blob[bit // 8] ^= 1 << (bit % 8)
    assert decoded_or_clear_error(State.decode, bytes(blob)) is None


# -- crafted frames with a valid checksum ---------------------------------------------------------------
def _values(dtype: str) -> st.SearchStrategy:
    if dtype == "int64":
        return st.integers(-(2**63), 2**63 - 1)
    return st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([-1.0, -0.0, 0.5, 1e308, -1e-300]))


@pytest.mark.parametrize("kind", KINDS)
@FUZZ
@given(data=st.data())
def test_crafted_values_of_every_state_kind_never_decode_to_a_bad_state(kind, data):
    s = SAMPLES[kind]
    name, dtype = data.draw(st.sampled_from(s.FIELDS), label="field")
    a = np.array(s[name], copy=True)
    flat = a.reshape(-1)
    if flat.size:
        at = data.draw(st.lists(st.integers(0, flat.size - 1), min_size=1, max_size=3), label="at")
        for i in at:
            flat[i] = data.draw(_values(dtype), label="value")
    out = decoded_or_clear_error(State.decode, state_frame(kind, layout_to_json(s.layout), fields_of(s, **{name: a})))
    if out is not None:
        assert_good_state(out)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


def _layout_text(draw, s: State) -> str:
    """The sample's layout JSON with a setting replaced, dropped or added, another kind's layout,
    random JSON, or broken text."""
    raw = json.loads(layout_to_json(s.layout))
    how = draw(st.sampled_from(["replace", "drop", "add", "other", "random", "broken"]))
    if how == "replace" and raw:
        raw[draw(st.sampled_from(sorted(raw)))] = draw(JSON)
    elif how == "drop" and raw:
        raw.pop(draw(st.sampled_from(sorted(raw))))
    elif how == "add":
        raw[draw(st.text(max_size=8))] = draw(JSON)
    elif how == "other":
        return layout_to_json(SAMPLES[draw(st.sampled_from(KINDS))].layout)
    elif how == "random":
        return json.dumps(draw(JSON))
    elif how == "broken":
        return draw(st.sampled_from(["", "{", "[" * 5000, '{"a":NaN}', '{"capacity":Infinity}', "\x00"]))
    return json.dumps(raw)


def _fields(draw, s: State) -> list[bytes]:
    """The sample's fields, or another kind's, with shapes, dtype codes and names disturbed."""
    src = s if draw(st.booleans()) else SAMPLES[draw(st.sampled_from(KINDS))]
    out = []
    for name, dtype in src.FIELDS:
        a = np.asarray(src[name])
        how = draw(st.sampled_from(["keep", "keep", "shape", "code", "name", "drop", "twice"]))
        if how == "shape":
            shape = tuple(draw(st.lists(st.integers(0, 4), max_size=3)))
            out.append(field(name, np.resize(a.astype(dtype), shape), dtype, shape))
        elif how == "code":
            out.append(field(name, a, dtype, code=draw(st.integers(0, 255))))
        elif how == "name":
            out.append(field(draw(st.text(max_size=6)), a, dtype))
        elif how == "twice":
            out += [field(name, a, dtype)] * 2
        elif how == "keep":
            out.append(field(name, a, dtype))
    return out


@pytest.mark.parametrize("kind", KINDS)
@FUZZ
@given(data=st.data())
def test_crafted_kinds_layouts_and_fields_never_decode_to_a_bad_state(kind, data):
    s = SAMPLES[kind]
    frame_kind = data.draw(st.sampled_from([kind, kind, *KINDS, "", "nope", kind + "\x00"]), label="kind")
    fields = _fields(data.draw, s)
    n = data.draw(st.sampled_from([None, None, 0, len(fields) + 1, 65535]), label="n_fields")
    blob = state_frame(frame_kind, _layout_text(data.draw, s), fields, n_fields=n)
    out = decoded_or_clear_error(State.decode, blob)
    if out is not None:
        assert out.kind == frame_kind
        assert_good_state(out)
    asked = STATE_KINDS[kind]
    out = decoded_or_clear_error(asked.decode, blob)
    if out is not None:
        assert type(out) is asked  # the asked kind, or an error
        assert_good_state(out)


# -- accumulators -----------------------------------------------------------------------------------
def _evaluations() -> dict[str, tuple[Evaluation, dict]]:
    rows = {
        "y": [1, 0, 1, 1, 0, 0, 1, 0],
        "s": [0.9, 0.2, 0.4, 0.75, 0.6, 0.1, 0.55, 0.35],
        "w": [1.0, 2.0, 0.5, 1.5, 1.0, 3.0, 0.25, 1.0],
        "g": ["a", "b", "a", "c", "b", "a", "c", "b"],
        "h": [1, 2, 1, 2, 1, 2, None, 1],
    }
    out = {}
    for name, kw in {
        "binary": dict(label_col="y", score_col="s", slices=["g", "g,h"], metrics=["f1", "roc_auc", "log_loss"]),
        "weighted": dict(label_col="y", score_col="s", weight_col="w", slices=["h"], metrics=["accuracy", "ece"]),
        "profiled": dict(label_col="y", score_col="s", slices=["g;max_slices=1"], metrics=["f1"]),
    }.items():
        ev = Evaluation(**kw)
        data = {c: rows[c] for c in ev.columns}
        if ev.needs_profile:
            ev = ev.with_profile(ev.profiler().profile([data]))
        out[name] = (ev, ev.fold(ev.zero(), data))
    return out


EVALUATIONS = _evaluations()


def assert_good_accumulator(ev: Evaluation, acc: dict) -> None:
    assert OVERALL in acc
    specs = {s.columns for s in ev.slices}
    for key, states in acc.items():
        assert not key or tuple(c for c, _ in key) in specs
        assert [(type(s), s.layout) for s in states] == list(ev.plan.state_types)
        for s in states:
            assert_good_state(s)
    assert ev.decode(ev.encode(acc)) == acc


@pytest.mark.parametrize("name", sorted(EVALUATIONS))
def test_every_truncation_of_an_accumulator_is_rejected(name):
    ev, acc = EVALUATIONS[name]
    blob = ev.encode(acc)
    for n in range(0, len(blob), 3):
        assert decoded_or_clear_error(ev.decode, blob[:n]) is None, n


@pytest.mark.parametrize("name", sorted(EVALUATIONS))
@FUZZ
@given(data=st.data())
def test_bit_flips_in_accumulators_are_rejected(name, data):
    ev, acc = EVALUATIONS[name]
    blob = bytearray(ev.encode(acc))
    for bit in data.draw(st.sets(st.integers(0, len(blob) * 8 - 1), min_size=1, max_size=3), label="bits"):
        blob[bit // 8] ^= 1 << (bit % 8)
    assert decoded_or_clear_error(ev.decode, bytes(blob)) is None


@pytest.mark.parametrize("name", sorted(EVALUATIONS))
@FUZZ
@given(data=st.data())
def test_crafted_accumulators_never_decode_to_a_bad_accumulator(name, data):
    ev, acc = EVALUATIONS[name]
    draw = data.draw
    others = [a for n, (_, a) in EVALUATIONS.items() if n != name]
    slices = []
    for key, states in acc.items():
        how = draw(st.sampled_from(["keep", "keep", "keep", "drop", "twice", "key", "states"]), label=f"slice {key}")
        key_json = slice_key_to_json(key)
        blobs = [s.encode() for s in states]
        if how == "drop":
            continue
        if how == "twice":
            slices.append((key_json, blobs))
        elif how == "key":
            key_json = draw(st.one_of(JSON.map(json.dumps), st.sampled_from(['[["g","zz"]]', '[["nope",1]]', "[[1,2]]", "[", "[" * 5000])))
        elif how == "states":
            pool = [s.encode() for a in others for s in a[()]] + [s.encode() for s in SAMPLES.values()]
            blobs = draw(st.lists(st.sampled_from(pool + blobs), max_size=len(blobs) + 1))
            if draw(st.booleans()) and blobs:
                blobs[0] = blobs[0][: draw(st.integers(0, len(blobs[0])))]  # a truncated inner state
        slices.append((key_json, blobs))
    version = draw(st.sampled_from([1, 2, 2]), label="version")
    fp_how = draw(st.sampled_from(["own", "own", "other", "edited", "random", "text"]), label="fingerprint")
    fp, fp_json = ev.fingerprint, None
    if fp_how == "other":
        fp = EVALUATIONS[draw(st.sampled_from(sorted(EVALUATIONS)))][0].fingerprint
    elif fp_how == "edited":
        fp = {**fp, draw(st.sampled_from(sorted(fp))): draw(JSON)}
    elif fp_how == "random":
        fp = draw(JSON)
    elif fp_how == "text":
        fp_json = draw(st.sampled_from(["", "{", "[" * 5000, "NaN", '"x"']))
    blob = accumulator_frame(slices, fp, version=version, fingerprint_json=fp_json)
    out = decoded_or_clear_error(ev.decode, blob)
    if out is not None:
        assert_good_accumulator(ev, out)
    if len(slices) == 1:
        states = decoded_or_clear_error(ev.slice_codec.decode, blob)
        if states is not None:
            assert [(type(s), s.layout) for s in states] == list(ev.plan.state_types)


def test_deeply_nested_json_in_frames_is_a_value_error():
    ev, acc = EVALUATIONS["binary"]
    s = SAMPLES["binary_confusion"]
    deep = "[" * 100_000
    with pytest.raises(ValueError, match="not valid JSON"):
        State.decode(state_frame(s.kind, deep, fields_of(s)))
    with pytest.raises(ValueError, match="not valid JSON"):
        ev.decode(accumulator_frame([(deep, [])], ev.fingerprint))
    with pytest.raises(ValueError, match="not valid JSON"):
        ev.decode(accumulator_frame([], fingerprint_json=deep))


def test_invalid_utf8_in_frames_is_a_value_error():
    s = SAMPLES["example_count"]
    body = bytearray(s.encode()[:-4])
    body[6] = 0xFF  # inside the kind name
    with pytest.raises(ValueError, match="UTF-8"):
        State.decode(with_crc(bytes(body)))


# -- the counting-pass profile (max_slices / quantiles) ----------------------------------------------
def _profile():
    from mergeable_metrics.evaluation.profile import SliceProfiler

    p = SliceProfiler(["g;max_slices=1", "g,h;max_slices=2;by=weight", "x:quantiles=3"], weight_col="w")
    rows = {"g": ["a", "b", "a", None, "c"], "h": [1, 1, 2, 2, 1], "x": [0.5, 1.5, -2.0, 3.0, 0.5], "w": [1.0, 2.0, 0.5, 1.0, 1.0]}
    return p, p.fold(p.zero(), rows)


def test_every_truncation_and_bit_flip_of_a_slice_profile_is_rejected():
    profiler, prof = _profile()
    blob = profiler.encode(prof)
    assert profiler.decode(blob) == prof
    for n in range(len(blob)):
        assert decoded_or_clear_error(profiler.decode, blob[:n]) is None, n
    for i in range(0, len(blob) * 8, 7):
        bad = bytearray(blob)
        bad[i // 8] ^= 1 << (i % 8)
        assert decoded_or_clear_error(profiler.decode, bytes(bad)) is None, i


@FUZZ
@given(data=st.data())
def test_crafted_slice_profiles_never_decode_to_a_bad_profile(data):
    """Profiles with a valid checksum (``SliceProfile.encode`` does not check what it writes)
    holding bad counts, weights, key orders, flags, sketch levels or duplicate parts."""
    from mergeable_metrics.evaluation.profile import KeyCounts, SliceProfile, ValueSketch

    profiler, prof = _profile()
    draw = data.draw
    parts = dict(prof.parts)
    name = draw(st.sampled_from(sorted(parts)), label="part")
    part = parts[name]
    if isinstance(part, KeyCounts):
        counts, weights, keys = part.counts.copy(), None if part.weights is None else part.weights.copy(), part.keys.copy()
        how = draw(st.sampled_from(["count", "weight", "order", "flag"]))
        if how == "count":
            counts[draw(st.integers(0, counts.size - 1))] = draw(st.integers(-(2**63), 2**63 - 1))
        elif how == "weight" and weights is not None:
            weights[draw(st.integers(0, weights.size - 1))] = draw(_values("float64"))
        elif how == "order":
            keys = keys[::-1].copy()
        missing = part.missing.copy()
        new = KeyCounts(keys, counts, weights, missing)
        if how == "flag":
            new.missing = np.full(missing.shape, draw(st.integers(0, 255)), dtype=np.uint8)
        parts[name] = new
    else:
        keys, counts = part.keys.copy(), part.counts.copy()
        how = draw(st.sampled_from(["count", "order", "level"]))
        level = part.level
        if how == "count":
            counts[draw(st.integers(0, counts.size - 1))] = draw(st.integers(-(2**63), 2**63 - 1))
        elif how == "order":
            keys = keys[::-1].copy()
        else:
            level = draw(st.integers(0, 255))
        sketch = ValueSketch(part.capacity, 0, keys, counts)
        sketch.level = level
        parts[name] = sketch
    blob = SliceProfile(parts).encode()
    if draw(st.booleans()):  # a part written twice
        from mergeable_metrics.evaluation.profile import _encode_part

        body = blob[:-4]
        n = int.from_bytes(body[4:6], "little")
        body = body[:4] + (n + 1).to_bytes(2, "little") + body[6:] + _encode_part(name, parts[name])
        blob = with_crc(body)
    out = decoded_or_clear_error(profiler.decode, blob)
    if out is not None:
        for p in out.parts.values():
            assert (p.counts > 0).all() and (p.keys[1:] > p.keys[:-1]).all()
            if isinstance(p, KeyCounts) and p.weights is not None:
                assert np.isfinite(p.weights).all() and (p.weights >= 0).all()
        profiler.finish(out)
