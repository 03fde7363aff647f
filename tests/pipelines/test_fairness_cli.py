"""``--fairness CRITERION[:REFERENCE]``: the "fairness" key of metrics.json, the printed table and
the report section, the same in every engine (selection_rate, recall and fpr per slice through
Beam and Spark)."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mergeable_metrics import Evaluation
from mergeable_metrics.pipelines.evaluate import main

pytestmark = pytest.mark.filterwarnings("ignore::mergeable_metrics.metrics.base.UndefinedMetricWarning")

FLAGS = ["--fairness", "demographic_parity", "--fairness", "equalized_odds:region=north", "--fairness", "f1"]


def _table(n: int = 1500, seed: int = 8) -> pa.Table:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    region = rng.choice(["north", "south", "east"], n)
    p = np.clip(0.35 * y + 0.65 * rng.random(n) + 0.1 * (region == "east"), 0, 1)
    return pa.table({"y": y, "p": p, "region": region, "device": rng.choice(["ios", "web"], n)})


def _run(tmp_path, engine: str, *extra: str) -> tuple[int, dict]:
    pq.write_table(_table(), tmp_path / "in.parquet", row_group_size=400)
    out = tmp_path / f"out_{engine}"
    code = main(["--input", str(tmp_path / "in.parquet"), "--label", "y", "--score", "p", "--slice", "region", "--slice", "device",
                 "--metrics", "accuracy,f1", *FLAGS, "--engine", engine, "--output", str(out), "--quiet", "--batch-size", "300", *extra])  # fmt: skip
    doc = json.loads((out / "metrics.json").read_text()) if code == 0 else {}
    return code, doc


def _expected() -> list[dict]:
    t = _table()
    ev = Evaluation(label_col="y", score_col="p", slices=["region", "device"], metrics=["accuracy", "f1", "selection_rate", "recall", "fpr"])
    r = ev.evaluate([t])
    return [
        r.fairness("demographic_parity", spec="region").to_dict(),
        r.fairness("demographic_parity", spec="device").to_dict(),
        r.fairness("equalized_odds", reference="region=north").to_dict(),
        r.fairness("f1", spec="region").to_dict(),
        r.fairness("f1", spec="device").to_dict(),
    ]


def test_cli_local_json_table_and_report(tmp_path, capsys):
    code, doc = _run(tmp_path, "local", "--report")
    assert code == 0
    # the compared metrics were added to --metrics
    assert list(doc["slices"][0]["metrics"]) == ["accuracy", "f1", "selection_rate", "recall", "fpr"]
    assert doc["fairness"] == _expected()
    eo = doc["fairness"][2]
    assert (
        eo["criterion"] == "equalized_odds"
        and eo["reference"] == {"region": "north"}
        and [s["slice"] for s in eo["slices"]] == [{"region": "east"}, {"region": "south"}]
    )
    east = next(s for s in doc["slices"] if s["slice"] == {"region": "east"})
    north = next(s for s in doc["slices"] if s["slice"] == {"region": "north"})
    assert eo["slices"][0]["differences"]["recall"] == east["metrics"]["recall"] - north["metrics"]["recall"]
    html = (tmp_path / "out_local" / "report.html").read_text()
    assert 'id="fairness"' in html and "equalized_odds across region, against region=north" in html
    code = main(["--input", str(tmp_path / "in.parquet"), "--label", "y", "--score", "p", "--slice", "region", "--fairness", "f1:region=west",
                 "--output", str(tmp_path / "bad"), "--quiet"])  # fmt: skip
    assert code == 1 and "no reference slice" in capsys.readouterr().err
    code = main(
        ["--input", str(tmp_path / "in.parquet"), "--label", "y", "--score", "p", "--fairness", "nosuch_metric", "--output", str(tmp_path / "bad2"), "--quiet"]
    )
    assert code == 2 and "unknown metric" in capsys.readouterr().err


def test_cli_fairness_method(tmp_path, capsys):
    """--fairness-method: what the table and "difference" report, named in metrics.json; without it
    fairlearn's default (between_groups) when no reference is named."""
    code, doc = _run(tmp_path, "local")
    assert code == 0 and [f["method"] for f in doc["fairness"]] == ["between_groups", "between_groups", "to_overall", "between_groups", "between_groups"]
    code, doc = _run(tmp_path, "local", "--fairness-method", "to_overall")
    assert code == 0 and {f["method"] for f in doc["fairness"]} == {"to_overall"}
    r = Evaluation(label_col="y", score_col="p", slices=["region", "device"], metrics=["accuracy", "f1", "selection_rate", "recall", "fpr"]).evaluate(
        [_table()]
    )
    assert doc["fairness"][0] == r.fairness("demographic_parity", spec="region", method="to_overall").to_dict()
    assert doc["fairness"][0]["difference"] == doc["fairness"][0]["differences"]["to_overall"]["selection_rate"]


def test_cli_with_ci_carries_the_slices_intervals(tmp_path):
    code, doc = _run(tmp_path, "local", "--ci", "posterior")
    assert code == 0
    dp = doc["fairness"][0]
    overall = doc["slices"][0]
    assert dp["reference_ci"]["selection_rate"] == overall["ci"]["selection_rate"]
    for s in dp["slices"]:
        src = next(x for x in doc["slices"] if x["slice"] == s["slice"])
        assert s["ci"]["selection_rate"] == src["ci"]["selection_rate"]


def test_beam_engine(tmp_path):
    pytest.importorskip("apache_beam")
    code, doc = _run(tmp_path, "beam")
    assert code == 0 and doc["fairness"] == _expected()


@pytest.mark.spark
def test_spark_engine(tmp_path):
    pytest.importorskip("pyspark")
    code, doc = _run(tmp_path, "spark")
    assert code == 0 and doc["fairness"] == _expected()
