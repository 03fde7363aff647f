"""Bytes written by the previous release still decode (the codec's upgrade path).

``tests/core/data/codec_v1_fixtures.json`` holds codec bytes written by the release at commit
384f834 (accumulator codec version 1, no fingerprint), generated from that release's code by
``tests/core/data/make_codec_v1_fixtures.py`` with the inputs stored next to them. Today's code
must decode them to the states it folds from the same inputs: exactly for counts; for float sums
(log loss, Brier, weights) the version-1 bytes hold the old release's rounded float64 sum, which
is read as the exact sum it stands for, so it equals today's exact, correctly rounded sum to
within rounding (``REL``) and re-encodes as version 2.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mergeable_metrics import Evaluation, MetricCollection
from mergeable_metrics.states import State
from mergeable_metrics.states import codec
from tests._helpers.compare import assert_states_equal
from tests._helpers.frames import accumulator_frame

pytestmark = pytest.mark.filterwarnings("ignore::mergeable_metrics.UndefinedMetricWarning")

FIXTURES = json.loads((Path(__file__).parent / "data" / "codec_v1_fixtures.json").read_text())
ROWS = FIXTURES["rows"]
REL = 1e-14  # an old float64 sum vs today's correctly rounded exact sum


def _evaluation(name: str) -> tuple[Evaluation, dict]:
    kw = FIXTURES["accumulators"][name]["kwargs"]
    ev = Evaluation(**kw)
    return ev, ev.fold(ev.zero(), {c: ROWS[c] for c in ev.columns})


@pytest.mark.parametrize("name", sorted(FIXTURES["accumulators"]))
def test_version_1_accumulators_of_the_previous_release_still_decode(name):
    blob = bytes.fromhex(FIXTURES["accumulators"][name]["hex"])
    assert blob[:4] == b"MMA\x01"
    ev, want = _evaluation(name)
    back = ev.decode(blob)
    assert_states_equal(back, want, rel=REL)
    assert back.fingerprint == ev.fingerprint  # taken as the reader's: v1 bytes carry none
    assert ev.decode(ev.encode(back)) == back  # re-written as version 2
    assert ev.encode(back)[3] == codec.ACC_VERSION == 2


@pytest.mark.parametrize("key", sorted(FIXTURES["states"]))
def test_states_of_the_previous_release_still_decode(key):
    name, kind = key.split("/")
    _, want = _evaluation(name)
    state = State.decode(bytes.fromhex(FIXTURES["states"][key]))
    assert_states_equal(state, next(s for s in want[()] if s.kind == kind), rel=REL)
    assert state.encode()[3] == codec.VERSION == 3 and State.decode(state.encode()) == state  # re-written as version 3


def test_collection_bytes_of_the_previous_release_still_load():
    c = FIXTURES["collections"]["multiclass_3"]
    mc = MetricCollection(*c["metrics"], num_classes=c["num_classes"]).decode(bytes.fromhex(c["hex"]))
    want = MetricCollection(*c["metrics"], num_classes=c["num_classes"])
    want.update(FIXTURES["collection_rows"]["y"], y_pred=FIXTURES["collection_rows"]["p"])
    assert_states_equal(mc, want, rel=REL)


def test_version_1_bytes_are_refused_where_a_slice_profile_makes_them_ambiguous():
    ev = Evaluation(label_col="y", score_col="s", slices=["g;max_slices=1"])
    v1 = accumulator_frame([("[]", [s.encode() for s in ev.plan.zero()])], version=1)
    with pytest.raises(ValueError, match="version 1 .*profile"):
        ev.decode(v1)
    plain = Evaluation(label_col="y", score_col="s", slices=["g"])
    assert plain.decode(v1) == plain.zero()
