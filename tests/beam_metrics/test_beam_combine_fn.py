"""Unit tests of MetricsCombineFn, its accumulator coder and the result helpers (no pipeline).

References are core's direct fold over all rows (``evaluation.finish(evaluation.fold(zero, rows))``)
or hand-built values, never numbers copied from the adapter's output.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
pd = pytest.importorskip("pandas")

import mergeable_metrics  # noqa: E402
from mergeable_metrics.beam import (  # noqa: E402
    ComputeMetrics,
    MetricsAccumulatorCoder,
    MetricsCombineFn,
    SliceResultCoder,
    is_column_batch,
    slice_result_from_json,
    slice_result_to_json,
)

SLICES = ["carrier", "origin", "carrier,origin"]


def evaluation(**kw):
    args = dict(label_col="label", score_col="score", weight_col="weight", slices=SLICES)
    args.update(kw)
    return mergeable_metrics.Evaluation(**args)


def direct(ev, rows):
    return ev.finish(ev.fold(ev.zero(), rows))


def assert_results_equal(got: mergeable_metrics.Results, want: mergeable_metrics.Results) -> None:
    assert [s.slice for s in got.slices] == [s.slice for s in want.slices]
    for g, w in zip(got.slices, want.slices):
        assert (g.n, g.weight, g.skipped) == (w.n, w.weight, w.skipped)
        assert list(g.metrics) == list(w.metrics)
        for k in w.metrics:
            np.testing.assert_array_equal(np.asarray(g.metrics[k]), np.asarray(w.metrics[k]), err_msg=f"{g.slice} {k}")


# -- construction -------------------------------------------------------------------------------
def test_construction_errors():
    ev = evaluation()
    with pytest.raises(TypeError, match="mergeable_metrics.Evaluation"):
        MetricsCombineFn({"label_col": "label"})
    with pytest.raises(ValueError, match="batch_size"):
        MetricsCombineFn(ev, batch_size=0)
    with pytest.raises(TypeError, match="batch_size"):
        MetricsCombineFn(ev, batch_size=2.5)
    with pytest.raises(TypeError, match="not both"):  # the same check as Spark's compute_metrics
        ComputeMetrics(ev, label_col="label")
    with pytest.raises(ValueError, match="score_col or prediction_col"):
        ComputeMetrics(label_col="label")
    assert ComputeMetrics(label_col="label", score_col="score").evaluation.score_col == "score"


def test_is_column_batch_rule():
    assert is_column_batch({"a": [1, 2], "b": np.array([0.1, 0.2]), "c": pa.array(["x", "y"])})
    assert is_column_batch({"a": pd.Series([1, 2])})
    assert not is_column_batch({"a": 1, "b": [1, 2]})  # a row with a list-valued feature
    assert not is_column_batch({"a": np.float64(1.0)})
    assert not is_column_batch({"a": np.array(1.0)})  # 0-d array is a scalar
    assert not is_column_batch({})


# -- folding --------------------------------------------------------------------------------------
def test_all_element_kinds_fold_like_core(make_rows):
    rows = make_rows(700, seed=1)
    ev = evaluation()
    fn = MetricsCombineFn(ev, batch_size=64)
    acc = fn.create_accumulator()
    part = [rows[:150], rows[150:300], rows[300:400], rows[400:500], rows[500:600], rows[600:]]
    for r in part[0]:
        acc = fn.add_input(acc, r)  # rows, buffered in 64s
    acc = fn.add_input(acc, pa.RecordBatch.from_pylist(part[1]))
    acc = fn.add_input(acc, pa.Table.from_pylist(part[2]))
    acc = fn.add_input(acc, pd.DataFrame(part[3]))
    acc = fn.add_input(acc, {k: np.array([r[k] for r in part[4]], dtype=object if k in ("carrier", "origin", "unused") else None) for k in part[4][0]})
    acc = fn.add_inputs(acc, part[5])
    assert 0 < len(acc.buffer) < 64
    assert_results_equal(fn.extract_output(acc), direct(ev, rows))
    assert acc.buffer == []


def test_add_input_rejects_unknown_element_types():
    fn = MetricsCombineFn(evaluation())
    with pytest.raises(TypeError, match="cannot read an element of type int"):
        fn.add_input(fn.create_accumulator(), 3)
    with pytest.raises(TypeError, match="str"):
        fn.add_input(fn.create_accumulator(), "label,score")


def test_merge_folds_buffers_and_leaves_others_unchanged(make_rows):
    rows = make_rows(500, seed=2)
    ev = evaluation()
    fn = MetricsCombineFn(ev, batch_size=100)
    accs = []
    for part in (rows[:130], rows[130:131], [], rows[131:400], rows[400:]):
        accs.append(fn.add_inputs(fn.create_accumulator(), part))
    others_before = [(dict(a.acc.items()), list(a.buffer)) for a in accs[1:]]
    merged = fn.merge_accumulators(accs)
    assert merged is accs[0] and merged.buffer == [] and merged.rows == 500
    for a, (acc_before, buf_before) in zip(accs[1:], others_before):
        assert a.acc == acc_before and a.buffer == buf_before
    assert_results_equal(fn.extract_output(merged), direct(ev, rows))
    assert_results_equal(fn.extract_output(fn.merge_accumulators([])), direct(ev, []))


def test_compact_flushes(make_rows):
    rows = make_rows(50, seed=3)
    ev = evaluation()
    fn = MetricsCombineFn(ev)
    acc = fn.compact(fn.add_inputs(fn.create_accumulator(), rows))
    assert acc.buffer == []
    assert acc.acc == ev.fold(ev.zero(), rows)


def test_empty_accumulator_gives_overall_nan():
    ev = evaluation()
    fn = MetricsCombineFn(ev)
    res = fn.extract_output(fn.create_accumulator())
    assert [s.slice for s in res.slices] == [()]
    o = res.overall
    assert (o.n, o.weight, o.skipped) == (0, 0.0, 0)
    assert set(o.metrics) == {"accuracy", "precision", "recall", "f1"}
    assert all(math.isnan(v) for v in o.metrics.values())


def test_error_names_column_value_and_row(make_rows):
    rows = make_rows(30, seed=4)
    rows[17] = dict(rows[17], score=float("nan"))
    fn = MetricsCombineFn(evaluation(), batch_size=8)
    acc = fn.create_accumulator()
    with pytest.raises(ValueError) as exc:
        fn.add_inputs(acc, rows)
    msg = str(exc.value)
    assert "'score'" in msg and "nan" in msg and "row 17" in msg


# -- accumulator coder ---------------------------------------------------------------------------
def test_accumulator_coder_round_trip_keeps_buffered_rows(make_rows):
    rows = make_rows(250, seed=5)
    ev = evaluation()
    fn = MetricsCombineFn(ev, batch_size=100)
    acc = fn.add_inputs(fn.create_accumulator(), rows)
    assert len(acc.buffer) == 50  # 200 folded, 50 buffered
    coder = fn.get_accumulator_coder()
    assert isinstance(coder, MetricsAccumulatorCoder) and coder.is_deterministic()
    before = (dict(acc.acc.items()), list(acc.buffer))
    data = coder.encode(acc)
    assert (dict(acc.acc.items()), list(acc.buffer)) == before  # encoding does not flush in place
    # Same bytes as core's encoding of one direct fold over all rows (integer weights: exact).
    assert data == ev.encode(ev.fold(ev.zero(), rows))
    decoded = coder.decode(data)
    assert decoded.buffer == []
    assert_results_equal(fn.extract_output(decoded), direct(ev, rows))
    # An accumulator decoded from bytes merges with live ones.
    more = make_rows(40, seed=6)
    merged = fn.merge_accumulators([decoded, fn.add_inputs(fn.create_accumulator(), more)])
    assert_results_equal(fn.extract_output(merged), direct(ev, rows + more))


def test_accumulator_coder_rejects_bad_bytes(make_rows):
    ev = evaluation()
    fn = MetricsCombineFn(ev, batch_size=10)
    coder = fn.get_accumulator_coder()
    data = coder.encode(fn.add_inputs(fn.create_accumulator(), make_rows(25, seed=7)))
    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 0xFF
    for bad in (bytes(flipped), data[:-7], data[:3], b"", b"not an accumulator at all", b"MMA\x09" + data[4:]):
        with pytest.raises(ValueError):
            coder.decode(bad)
    other = MetricsAccumulatorCoder(evaluation(threshold=0.7))
    with pytest.raises(ValueError, match="do not belong"):
        other.decode(data)


def test_accumulator_coder_equality():
    assert MetricsAccumulatorCoder(evaluation()) == MetricsAccumulatorCoder(evaluation())
    assert hash(MetricsAccumulatorCoder(evaluation())) == hash(MetricsAccumulatorCoder(evaluation()))
    assert MetricsAccumulatorCoder(evaluation()) != MetricsAccumulatorCoder(evaluation(threshold=0.3))


# -- result helpers ------------------------------------------------------------------------------
def _multiclass_result():
    ev = mergeable_metrics.Evaluation(label_col="y", prediction_col="p", num_classes=3, slices=["g"], metrics=["f1@macro", "f1@none", "confusion_matrix"])
    data = {"y": [0, 1, 2, 0, 1], "p": [0, 2, 2, 0, 1], "g": ["a", "a", None, "b", "b"]}
    return ev.finish(ev.fold(ev.zero(), data))


def test_slice_result_json_round_trip():
    res = _multiclass_result()
    for sr in res.slices:
        line = slice_result_to_json(sr)
        assert "\n" not in line and "NaN" not in line
        back = slice_result_from_json(line)
        assert back.slice == sr.slice  # key order and None values preserved
        assert (back.n, back.weight, back.skipped) == (sr.n, sr.weight, sr.skipped)
        for k, v in sr.metrics.items():
            np.testing.assert_array_equal(np.asarray(back.metrics[k]), np.asarray(v))
            assert isinstance(back.metrics[k], np.ndarray) == isinstance(v, np.ndarray)
    assert any(np.isnan(np.asarray(s.metrics["f1@none"])).any() for s in res.slices)  # NaN exercised
    with pytest.raises(ValueError):
        slice_result_from_json("{not json")
    with pytest.raises(ValueError, match="'slice'"):
        slice_result_from_json('{"n": 3}')
    with pytest.raises(TypeError):
        slice_result_to_json({"slice": {}})


def test_slice_result_coder_exact():
    coder = SliceResultCoder()
    sr = mergeable_metrics.SliceResult(
        slice=(("carrier", None), ("origin", "JFK"), ("hour", 7)),
        n=5,
        weight=7.0,
        skipped=1,
        metrics={"a": float("nan"), "b": float("inf"), "c": 0.1 + 0.2, "m": np.array([[1.0, np.nan], [-np.inf, 3.0]])},
    )
    back = coder.decode(coder.encode(sr))
    assert back.slice == sr.slice and (back.n, back.weight, back.skipped) == (5, 7.0, 1)
    assert list(back.metrics) == list(sr.metrics)
    for k in sr.metrics:
        np.testing.assert_array_equal(np.asarray(back.metrics[k]), np.asarray(sr.metrics[k]))
    assert back.metrics["m"].shape == (2, 2)
    for bad in (b"", b"MMR\x02{}", coder.encode(sr)[:-3], b"MMR\x01" + b"[]"):
        with pytest.raises(ValueError):
            coder.decode(bad)


def test_slice_result_coder_is_registered():
    import apache_beam as beam

    assert isinstance(beam.coders.registry.get_coder(mergeable_metrics.SliceResult), SliceResultCoder)


def test_multilabel_rows_whose_values_are_all_lists_are_rows():
    """A multilabel row holds only list values; it is one row, not a column batch."""
    from sklearn.metrics import f1_score, hamming_loss

    ev = mergeable_metrics.Evaluation(label_col="y", prediction_col="p", task="multilabel", num_classes=3, metrics=["f1@micro", "hamming_loss"])
    fn = MetricsCombineFn(ev)
    y = [[1, 0, 1], [0, 0, 1], [1, 1, 0]]
    p = [[1, 1, 0], [0, 0, 1], [1, 0, 0]]
    acc = fn.create_accumulator()
    acc = fn.add_input(acc, {"y": y[0], "p": p[0]})  # one row
    acc = fn.add_input(acc, {"y": y[1:], "p": p[1:]})  # a column batch of two rows
    out = fn.extract_output(acc).overall
    assert out.n == 3
    assert out.metrics["f1@micro"] == pytest.approx(f1_score(y, p, average="micro"), rel=1e-12)
    assert out.metrics["hamming_loss"] == pytest.approx(hamming_loss(y, p), rel=1e-12)


def test_slice_result_coder_keeps_bounds_and_ci():
    from mergeable_metrics.beam.results_io import SliceResultCoder

    sr = mergeable_metrics.SliceResult((("a", 1),), 5, 5.0, 0, {"roc_auc": 0.7}, {"roc_auc": (0.69, 0.71)})
    coder = SliceResultCoder()
    assert coder.decode(coder.encode(sr)).bounds == {"roc_auc": (0.69, 0.71)}
    ci = {"accuracy": (0.25, 0.75), "recall@none": (np.array([0.1, np.nan]), np.array([0.3, np.nan]))}
    sr = mergeable_metrics.SliceResult((("a", 1),), 5, 5.0, 0, {"accuracy": 0.5, "recall@none": np.array([0.2, np.nan])}, ci=ci)
    back = coder.decode(coder.encode(sr)).ci
    assert back["accuracy"] == (0.25, 0.75)
    np.testing.assert_array_equal(back["recall@none"][0], ci["recall@none"][0])
    np.testing.assert_array_equal(back["recall@none"][1], ci["recall@none"][1])


# -- row or column batch: one rule (is_column_batch with the evaluation's row-list columns) ------
def _combine_once(ev, element):
    fn = MetricsCombineFn(ev)
    return fn.extract_output(fn.add_input(fn.create_accumulator(), element))


def test_column_dict_batch_with_ignore_index_is_folded_as_columns():
    ev = mergeable_metrics.Evaluation(label_col="y", prediction_col="p", num_classes=3, ignore_index=2, metrics=["accuracy"])
    y, p = [0, 1, 2, 1, 0], [0, 1, 1, 0, 2]
    got = _combine_once(ev, {"y": y, "p": p})
    keep = [i for i in range(5) if y[i] != 2]  # hand: rows 0, 1, 3, 4; right on rows 0 and 1
    assert got.overall.n == len(keep) == 4
    assert got.overall.metrics["accuracy"] == 2 / 4
    assert MetricsCombineFn(ev)._is_batch({"y": y, "p": p}) == is_column_batch({"y": y, "p": p})


def test_column_dict_batch_with_score_matrix_is_folded_as_columns():
    ev = mergeable_metrics.Evaluation(label_col="y", score_col="s", num_classes=3, metrics=["accuracy"])
    batch = {"y": [0, 1, 2], "s": [[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.5, 0.3, 0.2]]}
    got = _combine_once(ev, batch)
    assert (got.overall.n, got.overall.metrics["accuracy"]) == (3, 2 / 3)  # argmax 0, 1, 0
    row = _combine_once(ev, {"y": 2, "s": [0.1, 0.2, 0.7]})  # one row: a scalar label and a score list
    assert (row.overall.n, row.overall.metrics["accuracy"]) == (1, 1.0)


def test_is_column_batch_with_list_columns_needs_columns_of_lists():
    lists = ["labels", "scores"]
    assert not is_column_batch({"labels": [0, 1, 1], "scores": [0.2, 0.9, 0.7]}, list_columns=lists)  # one multilabel row
    assert is_column_batch({"labels": [[0, 1, 1]], "scores": np.array([[0.2, 0.9, 0.7]])}, list_columns=lists)
    assert is_column_batch({"labels": pa.array([[0, 1]]), "scores": pd.Series([[0.1, 0.2]])}, list_columns=lists)
    assert is_column_batch({"labels": [], "scores": []}, list_columns=lists)
    ev = mergeable_metrics.Evaluation(label_col="labels", score_col="scores", task="multilabel", num_classes=3, metrics=["f1@micro"])
    one_row = _combine_once(ev, {"labels": [0, 1, 1], "scores": [0.2, 0.9, 0.7]})
    assert (one_row.overall.n, one_row.overall.metrics["f1@micro"]) == (1, 1.0)


# -- rows waiting as columns (batch_size > ROW_CHUNK) ---------------------------------------------
def _staged_fn(ev, chunks=3):
    from mergeable_metrics.beam.combine import ROW_CHUNK

    return MetricsCombineFn(ev, batch_size=chunks * ROW_CHUNK), ROW_CHUNK


def test_staged_columns_fold_like_core_with_batches_in_between(make_rows):
    ev = evaluation()
    fn, chunk = _staged_fn(ev)
    rows = make_rows(4 * chunk + 321, seed=81)
    acc = fn.create_accumulator()
    fn.add_inputs(acc, rows[: chunk + 5])
    assert acc.staged is not None and acc.staged.n == chunk and len(acc.buffer) == 5  # waiting as columns
    fn.add_input(acc, pa.RecordBatch.from_pylist(rows[chunk + 5 : chunk + 105]))  # folds what waits first
    assert acc.staged is None and acc.buffer == []
    fn.add_inputs(acc, rows[chunk + 105 :])
    assert acc.staged is None and len(acc.buffer) == 216  # three chunks staged, then folded
    fn.add_inputs(acc, rows[:0])
    data = fn.get_accumulator_coder().encode(acc)  # folds a copy of what waits
    assert len(acc.buffer) == 216
    assert data == ev.encode(ev.fold(ev.zero(), rows))
    other = fn.add_inputs(fn.create_accumulator(), rows[:50])
    staged = fn.add_inputs(fn.create_accumulator(), rows[: chunk + 7])
    assert staged.staged is not None and staged.staged.n == chunk
    assert fn.get_accumulator_coder().encode(staged) == ev.encode(ev.fold(ev.zero(), rows[: chunk + 7]))
    merged = fn.merge_accumulators([fn.create_accumulator(), staged, fn.add_inputs(fn.create_accumulator(), rows[chunk + 7 :])])
    assert staged.staged is not None and staged.staged.n == chunk  # merge leaves the others unchanged
    assert_results_equal(fn.extract_output(merged), direct(ev, rows))
    assert_results_equal(fn.extract_output(fn.merge_accumulators([other, fn.add_inputs(fn.create_accumulator(), rows[50:])])), direct(ev, rows))


def test_staged_rows_keep_row_positions_in_errors(make_rows):
    ev = evaluation()
    fn, chunk = _staged_fn(ev)
    rows = make_rows(2 * chunk + 500, seed=82)
    bad = chunk + 250 + 17  # after a batch element, inside staged rows
    rows[bad] = dict(rows[bad], score=float("nan"))
    acc = fn.add_inputs(fn.create_accumulator(), rows[:chunk])
    fn.add_input(acc, rows[chunk : chunk + 250])  # a list of rows: a batch
    with pytest.raises(ValueError, match=f"'score': invalid value nan at row {bad}:"):
        fn.extract_output(fn.add_inputs(acc, rows[chunk + 250 :]))


def test_column_absent_from_a_whole_row_chunk_is_a_missing_value_like_core(make_rows):
    """A key missing from every row of one chunk but present in later rows of the same fold is a
    missing value (core's rows path), not a missing column."""
    fn, chunk = _staged_fn(evaluation(on_invalid="skip"))
    rows = make_rows(2 * chunk + 100, seed=83)
    for i in range(chunk + 10):
        rows[i] = {k: v for k, v in rows[i].items() if k != "weight"}
    got = fn.extract_output(fn.add_inputs(fn.create_accumulator(), rows))
    ev = evaluation(on_invalid="skip")
    assert_results_equal(got, direct(ev, rows))
    assert got.overall.skipped == chunk + 10
    fn_raise, _ = _staged_fn(evaluation())
    with pytest.raises(ValueError) as exc:
        fn_raise.extract_output(fn_raise.add_inputs(fn_raise.create_accumulator(), rows))
    with pytest.raises(ValueError) as want:
        direct(evaluation(), rows)
    assert str(exc.value) == str(want.value)


def test_column_absent_from_every_row_raises_cores_missing_column_error(make_rows):
    rows = [{k: v for k, v in r.items() if k != "weight"} for r in make_rows(5000, seed=84)]
    fn, _ = _staged_fn(evaluation())
    with pytest.raises(ValueError, match=r"column 'weight' not found in the rows; available: \['carrier', 'label', 'origin', 'score', 'unused'\]"):
        fn.extract_output(fn.add_inputs(fn.create_accumulator(), rows))


@pytest.mark.parametrize("on_invalid", ["skip", "raise"])
def test_multioutput_dict_rows_of_another_length_or_null_are_invalid_per_row_like_core(on_invalid):
    from sklearn.metrics import mean_squared_error

    y = [[1.0, 2.0], [3.0, 4.0], [5.0, 7.0], [0.0, 1.0], [2.0, 2.0], [4.0, 0.5]]
    p = [[1.5, 2.0], [3.0, 4.5], [5.0], [0.5, 1.0], None, [4.0, 0.0]]
    rows = [{"y": a, "p": b, "g": "ab"[i % 2]} for i, (a, b) in enumerate(zip(y, p))]
    ev = mergeable_metrics.Evaluation(
        label_col="y", prediction_col="p", num_outputs=2, slices=["g"], on_invalid=on_invalid, metrics=["mse@multioutput=raw_values"]
    )
    fn = MetricsCombineFn(ev, batch_size=4)
    acc = fn.create_accumulator()
    if on_invalid == "raise":
        with pytest.raises(
            ValueError, match=r"^column 'p': row 2 holds 1 entries \[5.0\]: multioutput prediction rows are lists of 2 values \(num_outputs=2\)$"
        ):
            for r in rows:
                acc = fn.add_input(acc, r)
            fn.extract_output(acc)
        return
    for r in rows:
        acc = fn.add_input(acc, r)
    got = fn.extract_output(acc)
    assert (got.overall.n, got.overall.skipped) == (4, 2) and got[{"g": "a"}].skipped == 2 and got[{"g": "b"}].skipped == 0
    keep = [0, 1, 3, 5]
    want = mean_squared_error(np.array(y)[keep], np.array([p[i] for i in keep]), multioutput="raw_values")
    np.testing.assert_allclose(got.overall.metrics["mse@multioutput=raw_values"], want, rtol=1e-12)
    assert_results_equal(got, direct(ev, rows))


@pytest.mark.parametrize("element", ["rows", "arrow"])
def test_a_missing_value_is_named_as_given_like_core(element):
    rows = [{"label": 1, "score": 0.9, "weight": 1.0}, {"label": 0, "score": None, "weight": 1.0}, {"label": 1, "score": float("nan"), "weight": 1.0}]
    ev = mergeable_metrics.Evaluation(label_col="label", score_col="score", weight_col="weight", metrics=["roc_auc"])
    fn = MetricsCombineFn(ev)
    data = rows if element == "rows" else pa.Table.from_pylist(rows)
    shown = "None" if element == "rows" else "null"  # a Python None, an Arrow null; the NaN at row 2 is nan
    with pytest.raises(ValueError, match=rf"^column 'score': invalid value {shown} at row 1: scores must be finite \(no NaN or inf\) \(2 invalid rows"):
        acc = fn.create_accumulator()
        acc = fn.add_inputs(acc, rows) if element == "rows" else fn.add_input(acc, data)
        fn.extract_output(acc)
    with pytest.raises(ValueError) as want:
        direct(ev, data)
    assert str(want.value).startswith(f"column 'score': invalid value {shown} at row 1")
    with pytest.raises(ValueError, match=r"^column 'score': invalid value nan at row 1: scores must be finite"):
        fn.extract_output(fn.add_inputs(fn.create_accumulator(), [rows[0], rows[2]]))


def test_setup_warms_the_exact_sum_kernels_off_the_bundle_path():
    from mergeable_metrics._util import exact_kernels

    fn = MetricsCombineFn(mergeable_metrics.Evaluation(label_col="y", score_col="s", weight_col="w", metrics=["log_loss"]))
    fn.setup()  # Beam calls it once per worker and CombineFn instance, before any bundle
    assert exact_kernels._warm == exact_kernels.ready()  # compiled (or loaded from the cache) when numba is there
    assert exact_kernels.warm() == 0.0  # a bundle's first exact sum pays nothing more
