"""Slice specs (grammar), crosses, filters, buckets, list-valued columns, missing values, the
``max_slices`` cut (ties, ``__other__``, ``folded_values``) and ``min_slice_size`` suppression.

Every expected slice is rebuilt independently with boolean masks / pandas / numpy over the raw data,
and every expected metric value is scikit-learn's on those rows.
"""

from __future__ import annotations

import json
import struct
import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import accuracy_score, precision_score, recall_score

from mergeable_metrics import Evaluation, Results, SliceSpec
from mergeable_metrics.metrics.base import UndefinedMetricWarning
from mergeable_metrics.slicing.assign import (
    OTHER,
    Assignment,
    ListColumn,
    assign_slices,
    bucket_labels,
    encode_key,
    group_rows,
    parse_bucket_label,
    parse_slices,
    read_slice_column,
    sort_key,
    upgrade_key_v1,
)

METRICS = ["accuracy", "precision", "recall", "tp", "fp"]


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        yield


def _data(n: int = 3000, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    s = np.clip(0.3 * y + 0.7 * rng.random(n), 0, 1)
    carrier = rng.choice(np.array(["AA", "B6", "DL", "UA", "9E", None], dtype=object), n, p=[0.3, 0.25, 0.2, 0.1, 0.1, 0.05])
    origin = rng.choice(np.array(["JFK", "LGA", "EWR"], dtype=object), n)
    distance = np.round(rng.gamma(2.0, 500.0, n))
    distance[rng.random(n) < 0.03] = np.nan
    month = rng.integers(1, 13, n)
    w = rng.integers(0, 4, n).astype(float)
    return pd.DataFrame({"y": y, "s": s, "w": w, "carrier": carrier, "origin": origin, "distance": distance, "month": month})


def _ev(slices, weighted: bool = True, **kw) -> Evaluation:
    return Evaluation(label_col="y", score_col="s", weight_col="w" if weighted else None, slices=slices, metrics=METRICS, **kw)


def _check(result, df: pd.DataFrame, mask, weighted: bool = True) -> None:
    """n, weight and metric values of one slice equal scikit-learn's on the masked rows."""
    mask = np.asarray(mask, dtype=bool)
    sub = df[mask]
    y, p = sub.y.to_numpy(), (sub.s.to_numpy() >= 0.5).astype(int)
    w = sub.w.to_numpy() if weighted else None
    assert result.n == int(mask.sum()), result.name
    assert result.weight == pytest.approx(float(w.sum()) if weighted else float(mask.sum()))
    want = {
        "accuracy": accuracy_score(y, p, sample_weight=w) if len(y) and (w is None or w.sum() > 0) else np.nan,
        "precision": precision_score(y, p, sample_weight=w, zero_division=np.nan) if len(y) else np.nan,
        "recall": recall_score(y, p, sample_weight=w, zero_division=np.nan) if len(y) else np.nan,
        "tp": float(((y == 1) & (p == 1)) @ (w if w is not None else np.ones(len(y)))),
    }
    for k, v in want.items():
        got = result.metrics[k]
        if np.isnan(v):
            assert np.isnan(got), (result.name, k)
        else:
            assert got == pytest.approx(v, rel=1e-12, abs=1e-12), (result.name, k)


def _isna(values) -> np.ndarray:
    return pd.isna(pd.Series(values, dtype=object)).to_numpy()


# -- grammar ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, want",
    [
        ("carrier", dict(columns=("carrier",))),
        (" carrier , origin ", dict(columns=("carrier", "origin"))),
        ("origin=JFK", dict(columns=("origin",), filters=(("origin", ("JFK",)),))),
        ("origin=JFK|LGA,carrier", dict(columns=("origin", "carrier"), filters=(("origin", ("JFK", "LGA")),))),
        ("carrier=null|AA", dict(filters=(("carrier", (None, "AA")),))),
        ("distance:edges=0|500|1000", dict(edges=(("distance", (0.0, 500.0, 1000.0)),))),
        ("distance:quantiles=4,carrier", dict(columns=("distance", "carrier"), quantiles=(("distance", 4),))),
        ("tailnum:max_slices=50", dict(max_slices=50, by="count")),
        ("tailnum;max_slices=50", dict(max_slices=50)),
        ("tailnum:max_slices=50:by=weight", dict(max_slices=50, by="weight")),
        ("tailnum;min_slice_size=20;by=weight", dict(min_slice_size=20.0, by="weight")),
        ("a\\,b,c\\=d=x\\|y", dict(columns=("a,b", "c=d"), filters=(("c=d", ("x|y",)),))),
    ],
)
def test_parse_spec(text, want):
    spec = SliceSpec.parse(text)
    for k, v in want.items():
        assert getattr(spec, k) == v, k
    assert SliceSpec.parse(str(spec)) == spec  # the canonical text round-trips


def test_spec_text_is_canonical_and_python_api_matches():
    spec = SliceSpec(("origin", "distance"), filters={"origin": ["JFK"]}, edges={"distance": [0, 500]}, max_slices=3, min_slice_size=10)
    assert str(spec) == "origin=JFK,distance:edges=0|500;max_slices=3;min_slice_size=10"
    assert SliceSpec.parse("origin=JFK:max_slices=3,distance:edges=0|500:min_slice_size=10") == spec
    assert SliceSpec.parse(["carrier", "origin"]) == SliceSpec.parse("carrier,origin")


@pytest.mark.parametrize(
    "text, problem",
    [
        ("", "empty column name"),
        ("a,,b", "empty column name"),
        ("a,a", "appears twice"),
        ("a:foo=1", "unknown option 'foo'"),
        ("a:edges=", "edges must be numbers"),
        ("a:edges=1|x", "edges must be numbers"),
        ("a:edges=2|1", "strictly increasing"),
        ("a:edges=0|nan", "finite and strictly increasing"),
        ("a:quantiles=1", "quantiles must be >= 2"),
        ("a:quantiles=x", "quantiles must be an integer"),
        ("a:quantiles=4:edges=1", "more than one edges/quantiles"),
        ("a;max_slices=0", "max_slices must be >= 1"),
        ("a;max_slices=2;max_slices=3", "given twice"),
        ("a;by=rows", "by must be one of"),
        ("a;min_slice_size=-1", "min_slice_size must be a finite number > 0"),
        ("a;min_slice_size=x", "min_slice_size must be a number"),
        ("a;edges=1", "belongs to a column"),
        ("a;max_slices", "expected an option key=value"),
        ("a:quantiles=4;max_slices=3", "cannot be combined with quantiles"),
        ("a=1:edges=0", "both filtered and bucketed"),
        ("a=b=c", "more than one '='"),
    ],
)
def test_bad_spec_raises_naming_spec_and_problem(text, problem):
    with pytest.raises(ValueError) as e:
        SliceSpec.parse(text)
    assert repr(text) in str(e.value) and problem in str(e.value)


def test_specs_over_the_same_columns_collide():
    with pytest.raises(ValueError, match="slice the same columns"):
        parse_slices(["distance:edges=0|500", "distance:quantiles=4"])
    assert parse_slices(["a", "a", "a,b"]) == (SliceSpec(("a",)), SliceSpec(("a", "b")))


def test_bucket_labels_are_readable_and_sort_by_bound():
    labels = bucket_labels([0, 500, 1000.5])
    assert labels == ["(-inf, 0)", "[0, 500)", "[500, 1000.5)", "[1000.5, inf)"]
    assert [parse_bucket_label(x) for x in labels] == [(-np.inf, 0), (0, 500), (500, 1000.5), (1000.5, np.inf)]
    keys = [(("d", v),) for v in [None, OTHER] + labels[::-1]]
    ordered = sorted(keys, key=lambda k: sort_key(k, [("d",)]))
    assert [k[0][1] for k in ordered] == labels + [OTHER, None]


# -- crosses, filters, missing values ------------------------------------------------------------
def test_crossed_slices_equal_masks_and_sklearn():
    df = _data()
    res = _ev(["carrier", "carrier,origin"]).evaluate([df.iloc[:1000], df.iloc[1000:]])
    carriers = df.carrier.to_numpy(dtype=object)
    na = _isna(carriers)
    want = {(("carrier", None),): na} | {(("carrier", c),): carriers == c for c in set(carriers[~na])}
    for c in set(carriers[~na]) | {None}:
        for o in set(df.origin):
            m = (na if c is None else carriers == c) & (df.origin.to_numpy() == o)
            if m.any():
                want[(("carrier", c), ("origin", o))] = m
    assert {s.slice for s in res.slices} == set(want) | {()}
    for key, m in want.items():
        _check(res[key], df, m)
    _check(res.overall, df, np.ones(len(df), bool))
    assert sum(res[(("carrier", c),)].n for c in set(carriers[~na]) | {None}) == res.overall.n


def test_filters_keep_only_the_listed_values_and_match_by_type():
    df = _data()
    res = _ev(["origin=JFK|LGA,carrier", "month=7|12", "carrier=null|AA,origin"]).evaluate([df])
    got = {s.slice for s in res.slices}
    carriers = df.carrier.to_numpy(dtype=object)
    na = _isna(carriers)
    for o in ("JFK", "LGA"):
        for c in set(carriers[~na]):
            _check(res[(("origin", o), ("carrier", c))], df, (df.origin == o).to_numpy() & (carriers == c))
    assert not any(k and k[0] == ("origin", "EWR") for k in got)
    assert {k for k in got if k and k[0][0] == "month"} == {(("month", 7),), (("month", 12),)}
    _check(res[(("month", 7),)], df, (df.month == 7).to_numpy())
    for o in ("JFK", "LGA", "EWR"):
        _check(res[(("carrier", None), ("origin", o))], df, na & (df.origin == o).to_numpy())
        _check(res[(("carrier", "AA"), ("origin", o))], df, (carriers == "AA") & (df.origin == o).to_numpy())
    assert not any(k and k[0] == ("carrier", "DL") for k in got)
    _check(res.overall, df, np.ones(len(df), bool))  # filters never touch the overall slice


@pytest.mark.parametrize("kind", ["none", "nan", "pd.NA", "arrow"])
def test_missing_values_form_their_own_slice(kind):
    vals = ["a", None, "b", "a", None, "b", "a"]
    y = [1, 0, 1, 1, 0, 0, 1]
    s = [0.9, 0.1, 0.8, 0.3, 0.7, 0.2, 0.6]
    if kind == "none":
        data = {"y": y, "s": s, "g": vals}
    elif kind == "nan":
        data = pd.DataFrame({"y": y, "s": s, "g": [np.nan if v is None else v for v in vals]})
    elif kind == "pd.NA":
        data = pd.DataFrame({"y": y, "s": s, "g": pd.array(vals, dtype="string")})
    else:
        data = pa.table({"y": y, "s": s, "g": pa.array(vals, pa.string())})
    res = Evaluation(label_col="y", score_col="s", slices=["g"], metrics=["accuracy"]).evaluate([data])
    assert [(s.slice, s.n) for s in res.slices] == [((), 7), ((("g", "a"),), 3), ((("g", "b"),), 2), ((("g", None),), 2)]
    assert json.loads(res.to_json())["slices"][-1]["slice"] == {"g": None}


def test_numeric_missing_values_and_int_columns():
    x = np.array([1.0, np.nan, 2.0, 1.0])
    res = Evaluation(label_col="y", score_col="s", slices=["x", "k"], metrics=["tp"]).evaluate(
        [pa.table({"y": [1, 1, 0, 1], "s": [0.9] * 4, "x": x, "k": pa.array([3, None, 3, 5], pa.int64())})]
    )
    got = {s.slice: s.n for s in res.slices}
    assert got[(("x", 1.0),)] == 2 and got[(("x", None),)] == 1 and got[(("k", 3),)] == 2 and got[(("k", None),)] == 1
    assert isinstance(res[(("k", 3),)].slice[0][1], int)


# -- buckets ----------------------------------------------------------------------------------------
def test_edge_buckets_equal_numpy_searchsorted():
    df = _data()
    edges = [0.0, 500.0, 1000.0, 2500.0]
    res = _ev(["distance:edges=0|500|1000|2500"]).evaluate([df.iloc[:777], df.iloc[777:]])
    x = df.distance.to_numpy()
    idx = np.searchsorted(edges, x, side="right")
    labels = bucket_labels(edges)
    for i, lab in enumerate(labels):
        m = (idx == i) & ~np.isnan(x)
        if m.any():
            _check(res[(("distance", lab),)], df, m)
    _check(res[(("distance", None),)], df, np.isnan(x))
    names = [s.slice[0][1] for s in res.slices[1:]]
    assert names == [lab for i, lab in enumerate(labels) if ((idx == i) & ~np.isnan(x)).any()] + [None]


@pytest.mark.parametrize("k", [2, 4, 10])
def test_quantile_buckets_equal_numpy_quantile(k):
    df = _data()
    x = df.distance.to_numpy()
    res = _ev([f"distance:quantiles={k}"]).evaluate([df.iloc[:500], df.iloc[500:2000], df.iloc[2000:]])
    finite = x[np.isfinite(x)]
    edges = np.unique(np.quantile(finite, np.arange(1, k) / k))  # numpy's default "linear" method
    idx = np.searchsorted(edges, x, side="right")
    labels = bucket_labels(edges)
    for i, lab in enumerate(labels):
        _check(res[(("distance", lab),)], df, (idx == i) & ~np.isnan(x))
    _check(res[(("distance", None),)], df, np.isnan(x))
    assert len(res.slices) == 1 + len(labels) + 1


def test_quantiles_of_discrete_values_collapse_equal_edges():
    x = np.array([1.0] * 90 + [2.0] * 10)
    res = Evaluation(label_col="y", score_col="s", slices=["x:quantiles=4"], metrics=["tp"]).evaluate([{"y": np.ones(100, int), "s": np.ones(100), "x": x}])
    assert [s.slice for s in res.slices[1:]] == [(("x", "[1, inf)"),)]  # all quartiles are 1.0


def test_bucketed_column_with_text_raises_type_error():
    ev = Evaluation(label_col="y", score_col="s", slices=["x:edges=0"], metrics=["tp"])
    with pytest.raises(TypeError, match=r"slice column 'x' is bucketed .* value 'abc' at row 11"):
        ev.fold(ev.zero(), {"y": [1, 1], "s": [0.5, 0.5], "x": [1.0, "abc"]}, row_offset=10)
    with pytest.raises(TypeError, match=r"value '1.5' at row 0 is not a number"):  # text is never parsed
        ev.fold(ev.zero(), {"y": [1, 1], "s": [0.5, 0.5], "x": np.array(["1.5", None], dtype=object)})


# -- list-valued columns -------------------------------------------------------------------------
def _tags(n: int, seed: int = 5) -> list:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        r = rng.random()
        if r < 0.05:
            out.append(None)
        elif r < 0.1:
            out.append([])
        else:
            out.append(list(rng.choice(["x", "y", "z", "w"], rng.integers(1, 4))))  # duplicates possible
    return out


@pytest.mark.parametrize("container", ["rows", "dict", "pandas", "arrow"])
def test_list_valued_column_puts_a_row_in_each_of_its_slices(container):
    df = _data(1500)
    tags = _tags(len(df))
    cols = {**{c: df[c].to_numpy() for c in ("y", "s", "w", "origin")}, "tags": tags}
    if container == "rows":
        data = [dict(zip(cols, vals)) for vals in zip(*cols.values())]
        data = [{k: (v.item() if isinstance(v, np.generic) else v) for k, v in r.items()} for r in data]
    elif container == "dict":
        data = cols
    elif container == "pandas":
        data = pd.DataFrame(cols)
    else:
        data = pa.table({**{c: cols[c] for c in ("y", "s", "w", "origin")}, "tags": pa.array(tags, pa.list_(pa.string()))})
    res = _ev(["tags", "tags,origin"]).evaluate([data])
    sets = [set(t) if t else {None} for t in tags]
    values = {"x", "y", "z", "w", None}
    for v in values:
        _check(res[(("tags", v),)], df, [v in s for s in sets])
        for o in ("JFK", "LGA", "EWR"):
            _check(res[(("tags", v), ("origin", o))], df, [v in s for s in sets] & (df.origin == o).to_numpy())
    assert sum(res[(("tags", v),)].n for v in values) >= res.overall.n
    _check(res.overall, df, np.ones(len(df), bool))


def test_read_slice_column_explodes_arrow_and_python_lists():
    arr = pa.chunked_array([pa.array([["a", "b"], None, [], ["c", None]]), pa.array([["d"]])])
    col = read_slice_column(arr, "t")
    assert isinstance(col, ListColumn) and col.n == 5
    assert col.rows.tolist() == [0, 0, 1, 2, 3, 3, 4] and col.values.tolist() == ["a", "b", None, None, "c", None, "d"]
    col = read_slice_column([[1, 2], 3, (), None], "t")
    assert col.rows.tolist() == [0, 0, 1, 2, 3] and col.values.tolist() == [1, 2, 3, None, None]
    plain = read_slice_column(["a", "b"], "t")  # scalars: one value per row (an array, or dictionary-coded)
    assert not isinstance(plain, ListColumn) and np.asarray(plain).tolist() == ["a", "b"]


def test_list_column_with_skipped_rows_and_row_of():
    ev = Evaluation(label_col="y", score_col="s", slices=["t"], metrics=["tp"], on_invalid="skip")
    res = ev.evaluate([{"y": [1, 1, 1, 1], "s": [0.9, np.nan, 0.8, 0.7], "t": [["a", "b"], ["a"], ["b"], []]}])
    got = {s.slice: (s.n, s.skipped) for s in res.slices}
    assert got == {(): (3, 1), (("t", "a"),): (1, 1), (("t", "b"),): (2, 0), (("t", None),): (1, 0)}
    # row_of maps batch elements (e.g. pixels) to valid rows: pairs expand to every element
    a = Assignment(np.array([0, 0, 2]), np.array([0, 1, 1]), [(("t", "a"),), (("t", "b"),)])
    groups, skipped = a.groups(3, invalid=np.array([False, True, False]), row_of=np.array([0, 0, 1, 1, 1]))
    assert [g.tolist() for g in groups] == [[0, 1], [0, 1, 2, 3, 4]] and skipped.tolist() == [0, 0]


# -- max_slices ---------------------------------------------------------------------------------------
def _top(values: pd.Series, n: int, weights: pd.Series | None = None) -> list:
    """Reference cut: size descending, then value ascending (missing values ranked apart)."""
    present = values.notna()
    size = (weights if weights is not None else pd.Series(1.0, index=values.index))[present].groupby(values[present]).sum()
    ranked = sorted(size.items(), key=lambda kv: (-kv[1], kv[0]))
    return [v for v, _ in ranked[:n]]


@pytest.mark.parametrize("by", ["count", "weight"])
def test_max_slices_keeps_the_largest_and_sums_the_rest_exactly(by):
    rng = np.random.default_rng(9)
    n = 6000
    df = _data(n)
    df["tail"] = pd.Series([f"N{v:03d}" for v in rng.zipf(1.5, n) % 300], dtype=object)
    df.loc[rng.random(n) < 0.02, "tail"] = None
    k = 10
    spec = f"tail;max_slices={k}" + (";by=weight" if by == "weight" else "")
    res = _ev([spec]).evaluate([df.iloc[:2500], df.iloc[2500:]])
    top = _top(df["tail"], k, df.w if by == "weight" else None)
    tails = df["tail"].to_numpy(dtype=object)
    na = _isna(tails)
    assert [s.slice for s in res.slices[1:]] == [(("tail", v),) for v in sorted(top)] + [(("tail", OTHER),), (("tail", None),)]
    for v in top:
        _check(res[(("tail", v),)], df, tails == v)
    other = ~na & ~np.isin(tails, top)
    _check(res[(("tail", OTHER),)], df, other)
    _check(res[(("tail", None),)], df, na)
    assert sum(s.n for s in res.slices[1:]) == res.overall.n == n
    assert res[(("tail", OTHER),)].folded_values == df["tail"].nunique() - k
    assert json.loads(res.to_json())["slices"][k + 1]["folded_values"] == df["tail"].nunique() - k


def test_ties_at_the_cut_are_broken_by_value_ascending_in_any_order():
    counts = {"e": 5, "b": 4, "f": 3, "a": 3, "d": 3, "c": 1, 7: 0}
    vals = [v for v, c in counts.items() for _ in range(c)]
    rng = np.random.default_rng(0)
    for _ in range(5):
        perm = rng.permutation(len(vals))
        g = np.array(vals, dtype=object)[perm]
        data = {"y": np.ones(len(g), int), "s": np.ones(len(g)), "g": g}
        cuts = sorted(rng.choice(np.arange(1, len(g)), 3, replace=False))
        batches = [{k: v[a:b] for k, v in data.items()} for a, b in zip([0, *cuts], [*cuts, len(g)])]
        res = Evaluation(label_col="y", score_col="s", slices=["g;max_slices=3"], metrics=["tp"]).evaluate(batches)
        assert [(s.slice, s.n) for s in res.slices[1:]] == [((("g", "a"),), 3), ((("g", "b"),), 4), ((("g", "e"),), 5), ((("g", OTHER),), 7)]
        assert res[(("g", OTHER),)].folded_values == 3
    nums = {"y": np.ones(6, int), "s": np.ones(6), "g": np.array([10, 9, 10, 9, 2, 3])}
    res = Evaluation(label_col="y", score_col="s", slices=["g;max_slices=2"], metrics=["tp"]).evaluate([nums])
    assert [s.slice[0][1] for s in res.slices[1:]] == [9, 10, OTHER]  # numbers compare numerically


def test_max_slices_on_crosses_filters_and_buckets():
    df = _data()
    res = _ev(["origin=JFK|EWR,carrier;max_slices=3", "distance:edges=500|1500,origin;max_slices=2"]).evaluate([df])
    carriers = df.carrier.to_numpy(dtype=object)
    na = _isna(carriers)
    orig = df.origin.to_numpy(dtype=object)
    keep = np.isin(orig, ["JFK", "EWR"])
    pairs = pd.Series([(o, c) for o, c in zip(orig[keep & ~na], carriers[keep & ~na])]).value_counts()
    top = sorted(pairs.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
    missing = pd.Series(orig[keep & na]).value_counts()
    top_missing = sorted(missing.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
    got = [s for s in res.slices if s.slice and s.slice[0][0] == "origin"]
    want_keys = [(("origin", o), ("carrier", c)) for (o, c), _ in top] + [(("origin", OTHER), ("carrier", OTHER))]
    want_keys += [(("origin", o), ("carrier", None)) for o, _ in top_missing]
    assert [s.slice for s in got] == sorted(want_keys, key=lambda k: sort_key(k, []))  # value order, column by column
    kept = np.zeros(len(df), bool)
    for (o, c), _ in top:
        m = (orig == o) & (carriers == c)
        kept |= m
        _check(res[(("origin", o), ("carrier", c))], df, m)
    for o, _ in top_missing:
        kept |= (orig == o) & na
    _check(res[(("origin", OTHER), ("carrier", OTHER))], df, keep & ~kept)
    assert res[(("origin", OTHER), ("carrier", OTHER))].folded_values == len(pairs) - 3
    assert sum(s.n for s in got) == int(keep.sum())
    buckets = [s for s in res.slices if s.slice and s.slice[0][0] == "distance"]
    assert len(buckets) <= 2 + 1 + 2 and sum(s.n for s in buckets) == res.overall.n


def test_max_slices_with_list_column_counts_a_row_once_in_other():
    data = {"y": [1, 1, 1], "s": [0.9, 0.9, 0.9], "t": [["a", "b", "c"], ["a"], ["a", "b"]]}
    res = Evaluation(label_col="y", score_col="s", slices=["t;max_slices=1"], metrics=["tp"]).evaluate([data])
    assert [(s.slice, s.n, s.folded_values) for s in res.slices[1:]] == [((("t", "a"),), 3, None), ((("t", OTHER),), 2, 2)]


def test_fold_without_profile_raises_and_with_profile_accepts_every_form():
    ev = Evaluation(label_col="y", score_col="s", slices=["g;max_slices=1"], metrics=["tp"])
    data = {"y": [1, 1, 0], "s": [0.9, 0.9, 0.9], "g": ["a", "b", "b"]}
    assert ev.needs_profile
    with pytest.raises(ValueError, match=r"slice spec 'g;max_slices=1' needs a counting pass"):
        ev.fold(ev.zero(), data)
    profiler = ev.profiler()
    acc = profiler.fold(profiler.zero(), data)
    for profile in (acc, profiler.finish(acc), profiler.finish(acc).to_json()):
        pev = ev.with_profile(profile)
        assert not pev.needs_profile and pev.to_config() == ev.to_config()
        res = pev.finish(pev.fold(pev.zero(), data))
        assert [(s.slice, s.n) for s in res.slices] == [((), 3), ((("g", "b"),), 2), ((("g", OTHER),), 1)]
    res = ev.evaluate(iter([data]))  # a one-shot iterator is read twice
    assert res[(("g", OTHER),)].folded_values == 1


# -- min_slice_size ------------------------------------------------------------------------------------
def test_suppressed_slices_have_no_values_no_counts_and_are_not_computed(monkeypatch):
    df = _data()
    ev = _ev(["carrier;min_slice_size=300", "origin,carrier;min_slice_size=60;by=weight"], show_suppressed_names=True)
    calls = []
    orig = ev.plan.compute_many  # finish computes the slices' metrics in one call: count its elements
    monkeypatch.setattr(ev.plan, "compute_many", lambda states_list: calls.extend([1] * len(states_list)) or orig(states_list))
    res = ev.evaluate([df])
    carriers = df.carrier.to_numpy(dtype=object)
    na = _isna(carriers)
    n_computed = 1
    for c in set(carriers[~na]) | {None}:
        m = na if c is None else carriers == c
        s = res[(("carrier", c),)]
        if m.sum() < 300:
            assert s.suppressed and s.n is None and s.weight is None and s.metrics == {}
        else:
            n_computed += 1  # computed; published unless suppressed as a complement (test_suppression.py)
            if not s.suppressed:
                _check(s, df, m)
        for o in set(df.origin):
            mm = m & (df.origin == o).to_numpy()
            if not mm.any():
                continue
            s = res[(("origin", o), ("carrier", c))]
            if df.w[mm].sum() < 60:
                assert s.suppressed
            else:
                n_computed += 1
                if not s.suppressed:
                    _check(s, df, mm)
    assert any(s.suppressed for s in res.slices) and len(calls) == n_computed
    d = json.loads(res.to_json())
    sup = [s for s in d["slices"] if s.get("suppressed")]
    assert sup and all(s["n"] is None and s["weight"] is None and s["skipped"] is None and s["metrics"] == {} for s in sup)
    assert Results.from_dict(d).to_json() == res.to_json()
    again = Results.from_rows(res.to_rows(), res.config, [s.columns for s in ev.slices], ev.plan.keys)
    assert again.to_json() == res.to_json()
    assert "suppressed" in res.format_table(max_rows=100)


def test_size_equal_to_k_is_kept_and_overall_needs_k_too():
    data = {"y": [1, 1, 0, 1], "s": [0.9] * 4, "g": ["a", "a", "b", "a"]}
    res = Evaluation(label_col="y", score_col="s", slices=["g;min_slice_size=3"], metrics=["tp"]).evaluate([data])
    # g=b (1 row) is suppressed, and g=a with it: overall minus g=a would give g=b (mergeable_metrics.evaluation.suppression)
    assert [(s.slice, s.n, s.suppressed) for s in res.slices] == [((), 4, False), ((("g", "__suppressed__"),), None, True)]
    assert res.slices[1].suppressed_slices == 2
    res = Evaluation(label_col="y", score_col="s", slices=["g;min_slice_size=5"], metrics=["tp"]).evaluate([data])
    assert res.overall.suppressed and json.loads(res.to_json())["skipped"] is None
    res = Evaluation(label_col="y", score_col="s", slices=["g"], metrics=["tp"], min_slice_size=2, show_suppressed_names=True).evaluate([data])
    assert [s.suppressed for s in res.slices] == [False, True, True]
    assert Evaluation(**Evaluation(label_col="y", score_col="s", min_slice_size=2).to_config()).min_slice_size == 2
    with pytest.raises(ValueError, match="min_slice_size must be a finite number > 0"):
        Evaluation(label_col="y", score_col="s", min_slice_size=0)


# -- key encoding -------------------------------------------------------------------------------------
_SCALAR = st.one_of(st.integers(-(2**70), 2**70), st.floats(allow_nan=False, allow_infinity=True), st.text(max_size=6), st.booleans())


@settings(max_examples=200)
@given(st.lists(st.tuples(_SCALAR, st.sampled_from(["x", "", "\x00"])), min_size=1, max_size=20), st.data())
def test_encode_key_is_injective_and_order_preserving(pairs, data):
    kind = data.draw(st.sampled_from(["int", "float", "str", "bool"]))
    keep = [p for p in pairs if type(p[0]).__name__ == kind]
    if kind == "float":
        keep = [(v + 0.0, s) for v, s in keep]  # -0.0 and 0.0 are one slice value
    encs = {k: encode_key(k) for k in keep}
    assert len(set(encs.values())) == len(set(encs))
    assert sorted(set(keep)) == sorted(set(keep), key=lambda k: encs[k])


def test_assign_slices_pairs_rows_only_when_needed():
    cols = {"a": np.array(["x", "y", "x"], dtype=object), "b": np.array([1, 2, 2])}
    plain = assign_slices(SliceSpec.parse("a,b"), cols, 3)
    assert plain.rows is None and [plain.keys[c] for c in plain.codes] == [(("a", "x"), ("b", 1)), (("a", "y"), ("b", 2)), (("a", "x"), ("b", 2))]
    filtered = assign_slices(SliceSpec.parse("a=x,b"), cols, 3)
    assert filtered.rows.tolist() == [0, 2] and filtered.keys == [(("a", "x"), ("b", 1)), (("a", "x"), ("b", 2))]
    assert group_rows(SliceSpec.parse("a"), cols)[1] == [(("a", "x"),), (("a", "y"),)]
    with pytest.raises(ValueError, match="exactly one slice"):
        group_rows(SliceSpec.parse("a=x"), cols)


def test_quantiles_and_max_slices_above_their_maximum_raise_naming_them():
    from mergeable_metrics import SliceSpec

    with pytest.raises(ValueError, match=r"quantiles of column 'x' must be at most 10000, got 100000000"):
        SliceSpec.parse("x:quantiles=100000000")
    with pytest.raises(ValueError, match=r"max_slices must be at most 1000000, got 100000000"):
        SliceSpec.parse("x;max_slices=100000000")
    assert SliceSpec.parse("x:quantiles=10000").quantiles == (("x", 10000),)


_NUMBER = st.one_of(
    st.integers(-(2**71), 2**71 - 1),
    st.integers(-(2**60), 2**60),
    st.floats(allow_nan=False, allow_infinity=True).map(lambda v: v + 0.0),
    st.integers(-(2**62), 2**62).map(float),
    st.sampled_from([2**53, 2**53 + 1, float(2**53), 2**63, float(2**63), -(2**71), float(-(2**71)), 0.5, 1, 0]),
)


@settings(max_examples=300)
@given(st.lists(st.tuples(_NUMBER, st.sampled_from(["x", ""])), min_size=1, max_size=20))
def test_encode_key_orders_ints_and_floats_as_one_numeric_kind(pairs):
    """Numbers are one kind: bytewise order is numeric order across ints and floats (an int
    before an equal float, which stays a distinct key), also beyond 2**53 and at the int range's
    ends, so max_slices ties between int and float values break numerically."""

    def order(k):  # numeric, then int before float; then the second column
        return (k[0], isinstance(k[0], float), k[1])

    keys = {(v, type(v), s) for v, s in pairs}  # 1 and 1.0 are distinct keys here
    keys = [(v, s) for v, _, s in keys]
    encs = {(v, type(v), s): encode_key((v, s)) for v, s in keys}
    assert len(set(encs.values())) == len(encs)
    assert sorted(keys, key=order) == sorted(keys, key=lambda k: encs[(k[0], type(k[0]), k[1])])


def test_encode_key_orders_numbers_across_kinds_at_known_points():
    assert encode_key([0.5]) < encode_key([1]) and encode_key([-1e300]) < encode_key([0])
    assert encode_key([2**53]) < encode_key([2**53 + 1]) and encode_key([float(2**53)]) < encode_key([2**53 + 1])


def _encode_key_v1(values) -> bytes:
    """Key encoding 1 (earlier releases), written out here as the format's reference: ints
    (tag 3, 9 bytes) before floats (tag 4, 8 bytes), text tag 5, other values' text tag 6."""
    out = []
    for v in values:
        if type(v) is str:
            out.append(b"\x05" + v.encode("utf-8", "surrogatepass").replace(b"\x00", b"\x00\xff") + b"\x00\x00")
        elif v is None:
            out.append(b"\x01")
        elif isinstance(v, bool):
            out.append(b"\x02\x01" if v else b"\x02\x00")
        elif isinstance(v, int) and -(1 << 71) <= v < (1 << 71):
            out.append(b"\x03" + (v + (1 << 71)).to_bytes(9, "big"))
        elif isinstance(v, float):
            u = int.from_bytes(struct.pack(">d", v + 0.0), "big")
            out.append(b"\x04" + ((u ^ ((1 << 64) - 1)) if u >> 63 else (u | (1 << 63))).to_bytes(8, "big"))
        else:
            out.append(b"\x06" + str(v).encode("utf-8").replace(b"\x00", b"\x00\xff") + b"\x00\x00")
    return b"".join(out).rstrip(b"\x00")


def test_upgrade_key_v1_gives_the_current_encoding_of_the_same_values():
    import itertools

    pool = [None, True, False, 0, 1, -1, 2**70, -(2**71), 2**80, 0.5, -0.0, 1e300, -5e-324, float("inf"), "", "a", "a\x00", "\x00", "é"]
    for n in (1, 2, 3):
        for key in itertools.islice(itertools.product(pool, repeat=n), 4000):
            assert upgrade_key_v1(_encode_key_v1(key)) == encode_key(key), key
    with pytest.raises(ValueError, match="unknown tag 9"):
        upgrade_key_v1(b"\x09")
    with pytest.raises(ValueError, match="bad text escape"):
        upgrade_key_v1(b"\x05a\x00\x07")
