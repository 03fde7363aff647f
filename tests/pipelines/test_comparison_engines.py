"""A paired comparison (baseline_score_col) gives identical results (baseline values, deltas,
intervals, verdicts) locally, on Beam (DirectRunner) and on Spark (local[2]), whatever the
partitioning, and through the CLI."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mergeable_metrics import Evaluation
from mergeable_metrics.pipelines.evaluate import main

pytestmark = pytest.mark.filterwarnings("ignore::mergeable_metrics.metrics.base.UndefinedMetricWarning")

METRICS = ["accuracy", "recall", "specificity", "f1", "roc_auc"]


def _table(n: int = 2500, seed: int = 11) -> pa.Table:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    new = np.round(np.clip(0.35 * y + 0.65 * rng.random(n), 0, 1), 3)
    old = np.round(np.clip(0.25 * y + 0.75 * rng.random(n), 0, 1), 3)
    region = rng.choice(["north", "south", "east"], n)
    w = rng.integers(0, 4, n).astype(float)
    return pa.table({"y": y, "p_new": new, "p_old": old, "region": region, "w": w})


#: ``ci="bootstrap"``: the paired bootstrap (both models' replicates from the same buckets of rows)
BOOTSTRAP = {"ci": "bootstrap", "ci_buckets": 16, "ci_replicates": 40, "ci_seed": 4}


def _evaluation(**kw) -> Evaluation:
    return Evaluation(label_col="y", score_col="p_new", baseline_score_col="p_old", weight_col="w", slices=["region"], metrics=METRICS, tolerance=0.005, **kw)


def _local(**kw):
    t = _table()
    return _evaluation(**kw).evaluate([t.slice(i, 600) for i in range(0, t.num_rows, 600)])


def _same(a, b) -> None:
    assert [s.slice for s in a.slices] == [s.slice for s in b.slices]
    for x, y in zip(a.slices, b.slices):
        assert x.comparison and x.comparison == y.comparison
        assert json.dumps(x.to_dict()) == json.dumps(y.to_dict())


@pytest.mark.parametrize("kw", [{}, BOOTSTRAP], ids=["analytic", "bootstrap"])
def test_local_partitionings_agree(kw):
    t = _table()
    a = _local(**kw)
    b = _evaluation(**kw).evaluate([t.slice(0, 7), t.slice(7, 0), t.slice(7, 2000), t.slice(2007)])
    _same(a, b)
    assert a.overall.comparison["accuracy"].verdict == "better"
    if kw:  # the paired bootstrap gives ROC AUC's delta an interval too
        assert a.overall.comparison["roc_auc"].ci is not None and a.overall.comparison["roc_auc"].reason is None


@pytest.mark.parametrize("kw", [{}, BOOTSTRAP], ids=["analytic", "bootstrap"])
def test_beam_matches_local(tmp_path, kw):
    beam = pytest.importorskip("apache_beam")
    from mergeable_metrics.beam import ComputeMetrics, slice_result_from_json, slice_result_to_json

    t = _table()
    pq.write_table(t, tmp_path / "part.parquet", row_group_size=400)
    ev = _evaluation(**kw)
    with beam.Pipeline(runner="DirectRunner") as p:
        (
            p
            | beam.io.ReadFromParquetBatched(str(tmp_path / "part.parquet"))
            | ComputeMetrics(ev)  # SliceResults cross the pipeline with SliceResultCoder
            | beam.Map(slice_result_to_json)
            | beam.io.WriteToText(str(tmp_path / "out"), file_name_suffix=".jsonl")
        )
    lines = [ln for f in sorted(tmp_path.glob("out*.jsonl")) for ln in f.read_text().splitlines() if ln.strip()]
    local = _local(**kw)
    _same(ev.collect(slices=[slice_result_from_json(ln) for ln in lines]), local)
    from mergeable_metrics.beam.results_io import SliceResultCoder

    coder = SliceResultCoder()
    for sr in local.slices:
        back = coder.decode(coder.encode(sr))
        assert back.comparison == sr.comparison and back.baseline_metrics == sr.baseline_metrics


@pytest.mark.spark
@pytest.mark.parametrize("kw", [{}, BOOTSTRAP], ids=["analytic", "bootstrap"])
def test_spark_matches_local(kw):
    pytest.importorskip("pyspark")
    from mergeable_metrics.spark import collect_results, compute_metrics, get_spark

    spark = get_spark()
    df = spark.createDataFrame(_table().to_pandas()).repartition(3)
    ev = _evaluation(**kw)
    _same(collect_results(compute_metrics(df, evaluation=ev), ev), _local(**kw))


def test_cli_baseline_score(tmp_path):
    pq.write_table(_table(), tmp_path / "preds.parquet")
    code = main(["--input", str(tmp_path / "preds.parquet"), "--label", "y", "--score", "p_new", "--baseline-score", "p_old",
                 "--weight", "w", "--slice", "region", "--metrics", ",".join(METRICS), "--tolerance", "0.005",
                 "--output", str(tmp_path / "out"), "--quiet"])  # fmt: skip
    assert code == 0
    doc = json.loads((tmp_path / "out" / "metrics.json").read_text())
    want = _local().to_dict()
    for got, exp in zip(doc["slices"], want["slices"]):
        assert got["comparison"] == json.loads(json.dumps(exp["comparison"]))
        assert got["baseline_metrics"] == json.loads(json.dumps(exp["baseline_metrics"]))
    assert doc["config"]["comparison"] == {"method": "analytic", "level": 0.95, "tolerance": 0.005}
    from mergeable_metrics import Results

    rows = pq.read_table(tmp_path / "out" / "metrics.parquet").to_pylist()
    back = Results.from_rows(rows, doc["config"], [("region",)], METRICS)
    for a, b in zip(back.slices, _local().slices):
        assert a.comparison == b.comparison and json.dumps(a.to_dict()) == json.dumps(b.to_dict())


def test_report_and_table_show_the_comparison():
    pytest.importorskip("jinja2")
    from mergeable_metrics.pipelines.report import render_report

    r = _local()
    html = render_report(r)
    assert 'id="comparison"' in html and "delta = candidate (p_new) - baseline (p_old)" in html and "tolerance 0.005" in html
    acc = r.overall.comparison["accuracy"]
    assert f'{acc.delta:+.4f} <span class="sub">[{acc.ci[0]:+.4f}, {acc.ci[1]:+.4f}]</span>' in html  # the interval below the delta
    table = r.format_table()
    assert "comparison: delta = candidate - baseline, analytic 95% paired interval" in table
    assert f"{acc.delta:+.4f} [{acc.ci[0]:+.4f}, {acc.ci[1]:+.4f}] +" in table
    assert 'id="comparison"' not in render_report(Evaluation(label_col="y", score_col="p_new", metrics=["accuracy"]).evaluate(_table()))


def test_cli_paired_bootstrap(tmp_path):
    pq.write_table(_table(), tmp_path / "preds.parquet")
    code = main(["--input", str(tmp_path / "preds.parquet"), "--label", "y", "--score", "p_new", "--baseline-score", "p_old",
                 "--weight", "w", "--slice", "region", "--metrics", ",".join(METRICS), "--tolerance", "0.005",
                 "--ci", "bootstrap", "--ci-buckets", "16", "--ci-replicates", "40", "--ci-seed", "4",
                 "--output", str(tmp_path / "out"), "--quiet"])  # fmt: skip
    assert code == 0
    doc = json.loads((tmp_path / "out" / "metrics.json").read_text())
    want = _local(**BOOTSTRAP).to_dict()
    assert doc["config"]["comparison"]["method"] == "bootstrap"
    for got, exp in zip(doc["slices"], want["slices"]):
        assert got["comparison"] == json.loads(json.dumps(exp["comparison"])) and got["comparison"]["roc_auc"]["ci"] is not None
