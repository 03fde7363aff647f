"""Suppression that subtraction cannot undo (issue 11, item 6), and withheld slice names.

Every expectation is hand-computed from the few rows of each case.
"""

from __future__ import annotations

import json

import pytest

from mergeable_metrics import Evaluation, Results
from mergeable_metrics.results.results import SliceResult
from mergeable_metrics.evaluation.suppression import SUPPRESSED, suppress_complements, withhold_names

# 3 rows in g=c (tp=2, fn=1), 6 in g=a, 5 in g=b: min_slice_size=5 suppresses only g=c
ROWS = {
    "y": [1, 1, 1] + [1, 0, 1, 0, 0, 1] + [0, 0, 1, 1, 0],
    "s": [0.9, 0.8, 0.2] + [0.9, 0.1, 0.7, 0.6, 0.2, 0.3] + [0.1, 0.2, 0.9, 0.8, 0.7],
    "g": ["c"] * 3 + ["a"] * 6 + ["b"] * 5,
}


def _evaluate(**kw):
    return Evaluation(label_col="y", score_col="s", slices=["g"], metrics=["tp", "fn", "recall"], min_slice_size=5, **kw).evaluate([ROWS])


def test_single_suppressed_slice_cannot_be_recovered_by_subtraction():
    res = _evaluate(show_suppressed_names=True)
    by = {s.slice: s for s in res.slices}
    assert by[()].n == 14 and by[()].metrics["tp"] == 6
    assert by[(("g", "c"),)].suppressed  # 3 rows < 5
    # before the fix overall minus g=a minus g=b gave g=c's n=3, tp=2, fn=1 exactly: now the
    # smallest published sibling (g=b, 5 rows) is suppressed with it
    assert by[(("g", "b"),)].suppressed and by[(("g", "b"),)].n is None
    assert not by[(("g", "a"),)].suppressed and by[(("g", "a"),)].n == 6 and by[(("g", "a"),)].metrics["tp"] == 2
    published = [s for s in res.slices if s.slice and not s.suppressed]
    assert sum(s.n for s in published) < by[()].n - 3  # the rest holds at least two slices


def test_suppressed_slice_names_are_withheld_from_json_and_parquet_unless_asked():
    res = _evaluate()
    doc = json.loads(res.to_json())
    assert '"c"' not in res.to_json() and '"b"' not in res.to_json()
    entries = [s for s in doc["slices"] if s.get("suppressed")]
    assert entries == [{"slice": {"g": SUPPRESSED}, "n": None, "weight": None, "skipped": None, "metrics": {}, "suppressed": True, "suppressed_slices": 2}]
    rows = res.to_rows()
    assert {r["slice"] for r in rows} == {"{}", '{"g":"a"}', '{"g":"%s"}' % SUPPRESSED}
    assert Results.from_dict(doc).to_json() == res.to_json()
    assert Results.from_rows(rows, res.config, [("g",)], ["tp", "fn", "recall"]).to_json() == res.to_json()
    assert "2 suppressed" in res.format_table()
    shown = _evaluate(show_suppressed_names=True)
    assert {s.slice for s in shown.slices if s.suppressed} == {(("g", "b"),), (("g", "c"),)}


def test_suppression_of_a_cross_also_holds_inside_its_coarser_parent_slice():
    # carrier=AA has 10 rows (published), split 7 JFK / 3 LGA; the cross needs 5: AA x LGA is
    # suppressed and AA minus AA x JFK would give it, so AA x JFK goes too (UA's cells are fine)
    data = {
        "y": [1] * 10 + [0] * 12,
        "s": [0.9] * 22,
        "carrier": ["AA"] * 10 + ["UA"] * 12,
        "origin": ["JFK"] * 7 + ["LGA"] * 3 + ["JFK"] * 6 + ["LGA"] * 6,
    }
    ev = Evaluation(label_col="y", score_col="s", slices=["carrier", "carrier,origin;min_slice_size=5"], metrics=["tp"], show_suppressed_names=True)
    by = {s.slice: s for s in ev.evaluate([data]).slices}
    assert not by[(("carrier", "AA"),)].suppressed and by[(("carrier", "AA"),)].n == 10
    assert by[(("carrier", "AA"), ("origin", "LGA"))].suppressed and by[(("carrier", "AA"), ("origin", "JFK"))].suppressed
    assert by[(("carrier", "UA"), ("origin", "JFK"))].n == 6 and by[(("carrier", "UA"), ("origin", "LGA"))].n == 6


def _sr(key, n):
    return SliceResult(key, None, None, None, {}, suppressed=True) if n is None else SliceResult(key, n, float(n), 0, {"tp": 0.0})


def test_a_lone_suppressed_child_suppresses_its_parent():
    # the parent's only child has the parent's rows: publishing the parent publishes the child
    out = suppress_complements(
        [
            _sr((), 20),
            _sr((("a", 1),), 8),
            _sr((("a", 2),), 12),
            _sr((("a", 1), ("b", "x")), None),
            _sr((("a", 2), ("b", "x")), 6),
            _sr((("a", 2), ("b", "y")), 6),
        ]
    )
    # under a=1 the hidden cell is alone: a=1 goes; under the overall slice the cross has one
    # hidden cell: (a=2, b=x) goes (ties: first in order); then a=1 is the one hidden slice of
    # spec "a": a=2 goes too. (a=2, b=y) stays: its parent a=2 is no longer published, and the
    # overall slice minus it leaves two unknown cells.
    assert [s.suppressed for s in out] == [False, True, True, True, True, False]


def test_a_suppressed_parent_is_not_published_through_its_children():
    # carrier=HA (161 rows) is suppressed by a sibling rule, and HA flies only from JFK: its one
    # child carrier=HA x origin=JFK holds exactly its rows, so publishing the child publishes it
    out = suppress_complements([_sr((), 40), _sr((("a", 1),), None), _sr((("a", 2),), 20), _sr((("a", 3),), None),
                                _sr((("a", 1), ("b", "x")), 10), _sr((("a", 2), ("b", "x")), 20), _sr((("a", 3), ("b", "x")), 4), _sr((("a", 3), ("b", "y")), 6)])  # fmt: skip
    # a=1's lone child goes; a=3's two published children add up to a=3: the smaller (4) goes. Then
    # under the overall slice the cross has two hidden cells, (a=2, b=x) stays
    assert [s.suppressed for s in out] == [False, True, False, True, True, False, True, False]
    # the flights case: OO (3 rows) is primarily suppressed, HA (6) goes with it as its smallest
    # sibling, and HA's only cell HA x JFK (6) must go too
    data = {"y": [1] * 19, "s": [0.9] * 19, "carrier": ["OO"] * 3 + ["HA"] * 6 + ["AA"] * 10, "origin": ["EWR"] * 3 + ["JFK"] * 6 + ["JFK"] * 5 + ["LGA"] * 5}
    ev = Evaluation(label_col="y", score_col="s", slices=["carrier", "carrier,origin"], metrics=["tp"], min_slice_size=5, show_suppressed_names=True)
    by = {s.slice: s for s in ev.evaluate([data]).slices}
    assert by[(("carrier", "OO"),)].suppressed and by[(("carrier", "HA"),)].suppressed and not by[(("carrier", "AA"),)].suppressed
    assert by[(("carrier", "HA"), ("origin", "JFK"))].suppressed  # was published with HA's n = 6 and tp = 6
    published = [s for s in by.values() if s.slice and not s.suppressed]
    assert {s.slice for s in published} >= {(("carrier", "AA"),)}


def test_complementary_suppression_and_withholding_are_idempotent():
    once = withhold_names(suppress_complements(_evaluate(show_suppressed_names=True).slices))
    assert withhold_names(suppress_complements(once)) == once


def test_a_published_slice_named_like_the_withheld_entry_raises():
    with pytest.raises(ValueError, match="reserved"):
        withhold_names([_sr((), 5), _sr((("g", SUPPRESSED),), 5), _sr((("g", "x"),), None)])
