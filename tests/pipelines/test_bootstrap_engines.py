"""``ci="bootstrap"`` gives the same intervals (same floats) locally, on Beam (single and multi
process) and on Spark, for any partitioning (random shards, empty ones, sorted input)."""

from __future__ import annotations

import glob
import json
import os
import sys
import warnings

import numpy as np
import pandas as pd
import pytest

from mergeable_metrics import Evaluation
from mergeable_metrics.results.results import Results

beam = pytest.importorskip("apache_beam")
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _df(sort: bool) -> pd.DataFrame:
    rng = np.random.default_rng(21)
    n = 700
    y = rng.integers(0, 2, n)
    s = 1.0 / (1.0 + np.exp(-rng.normal(-0.7 + 1.4 * y, 1.0)))
    df = pd.DataFrame({"y": y, "s": s, "g": rng.choice(["a", "b", "c"], n), "id": rng.permutation(n) * 7 + 3})
    return df.sort_values("s", kind="stable").reset_index(drop=True) if sort else df


def _ev(**kw) -> Evaluation:
    return Evaluation(
        label_col="y", score_col="s", slices=["g"], metrics=["accuracy", "f1", "roc_auc", "ece"], ci="bootstrap",
        ci_buckets=16, ci_replicates=40, ci_seed=5, **kw,
    )  # fmt: skip


def _local(df: pd.DataFrame, ev: Evaluation) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return json.loads(json.dumps(ev.finish(ev.fold(ev.zero(), df)).to_dict()))


def _carried(doc: dict) -> bool:
    """Whether ``Results.from_dict`` / ``from_rows`` keep ``ci`` (engines return results through them)."""
    return bool(Results.from_dict(doc).slices[0].ci)


def _shards(df: pd.DataFrame, seed: int) -> list[list[dict]]:
    rng = np.random.default_rng(seed)
    cuts = np.sort(rng.integers(0, len(df), 5))
    rows = df.to_dict("records")
    return [rows[a:b] for a, b in zip([0, *cuts], [*cuts, len(df)])] + [[]]  # empty shards too


def _beam_combine(df: pd.DataFrame, ev: Evaluation, tmp_path) -> dict:
    from mergeable_metrics.beam import MetricsCombineFn

    with beam.Pipeline(runner="DirectRunner") as p:
        parts = [p | f"C{i}" >> beam.Create(s, reshuffle=True) for i, s in enumerate(_shards(df, 1))]
        (
            parts
            | beam.Flatten()
            | beam.CombineGlobally(MetricsCombineFn(ev, batch_size=64))
            | beam.Map(lambda r: json.dumps(r.to_dict()))
            | beam.io.WriteToText(str(tmp_path / "combine"))
        )
    return json.loads(open(glob.glob(str(tmp_path / "combine*"))[0]).read())


def _beam_per_slice(df: pd.DataFrame, ev: Evaluation, tmp_path, name: str, **options) -> dict:
    from apache_beam.options.pipeline_options import PipelineOptions

    from mergeable_metrics.beam import ComputeMetrics, slice_result_from_json, slice_result_to_json

    with beam.Pipeline(runner="DirectRunner", options=PipelineOptions(**options)) as p:
        parts = [p | f"C{i}" >> beam.Create(s, reshuffle=True) for i, s in enumerate(_shards(df, 2))]
        parts | beam.Flatten() | ComputeMetrics(ev, batch_size=50) | beam.Map(slice_result_to_json) | beam.io.WriteToText(str(tmp_path / name))
    lines = [ln for f in sorted(glob.glob(str(tmp_path / f"{name}*"))) for ln in open(f) if ln.strip()]
    return json.loads(json.dumps(ev.collect(slices=[slice_result_from_json(ln) for ln in lines]).to_dict()))


def _metrics_only(doc: dict) -> list:
    return [{k: v for k, v in s.items() if k != "ci"} for s in doc["slices"]]


@pytest.mark.parametrize("sort", [False, True])
def test_beam_combine_fn_gives_the_local_intervals(sort, tmp_path):
    df = _df(sort)
    for ev in (_ev(), _ev(id_col="id")):
        want = _local(df, ev)
        assert want["slices"][0]["ci"]["roc_auc"][0] < want["slices"][0]["metrics"]["roc_auc"] < want["slices"][0]["ci"]["roc_auc"][1]
        assert _beam_combine(df, ev, tmp_path / str(ev.fingerprint["bootstrap"]["id_col"])) == want


@pytest.mark.parametrize("multi", [False, True])
def test_beam_compute_metrics_gives_the_local_intervals(multi, tmp_path, monkeypatch):
    df, ev = _df(False), _ev(id_col="id")
    want = _local(df, ev)
    options = {}
    if multi:
        monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [REPO_ROOT, os.environ.get("PYTHONPATH")])))
        options = dict(direct_num_workers=2, direct_running_mode="multi_processing")
    got = _beam_per_slice(df, ev, tmp_path, "multi" if multi else "single", **options)
    assert _metrics_only(got) == _metrics_only(want)
    if not _carried(want):
        pytest.skip("Results.from_dict does not carry ci yet (the ci helper's round trip)")
    assert got == want


@pytest.mark.spark
@pytest.mark.parametrize("sort", [False, True])
def test_spark_gives_the_local_intervals(sort):
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from mergeable_metrics.spark import collect_results, compute_metrics, get_spark

    df, ev = _df(sort), _ev()
    want = _local(df, ev)
    spark = get_spark()
    sdf = spark.createDataFrame(df).repartition(5)
    got = json.loads(json.dumps(collect_results(compute_metrics(sdf, evaluation=ev), ev).to_dict()))
    assert _metrics_only(got) == _metrics_only(want)
    if not _carried(want):
        pytest.skip("Results.from_rows does not carry ci yet (the ci helper's round trip)")
    assert got == want


@pytest.mark.spark
def test_spark_native_lowering_falls_back_for_the_bootstrap():
    from mergeable_metrics.spark import get_spark
    from mergeable_metrics.spark.sql_path import lowering_blocker

    ev = Evaluation(label_col="y", score_col="s", slices=["g"], metrics=["accuracy"], ci="bootstrap")
    sdf = get_spark().createDataFrame(_df(False).head(5))
    assert "bootstrap" in lowering_blocker(sdf, ev)
    assert lowering_blocker(sdf, Evaluation(label_col="y", score_col="s", slices=["g"], metrics=["accuracy"])) is None
