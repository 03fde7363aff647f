"""--window COL:DURATION[:SLIDE] on the local, Beam and Spark engines: metrics.json carries the
window bounds per slice, every window equals a core Evaluation on its rows, and the three engines
write the same metrics.json."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from mergeable_metrics import Results
from mergeable_metrics.pipelines.evaluate import main
from tests._helpers.windows import assert_same_windows, reference, timed_rows

ARGS = ["--label", "y", "--score", "s", "--slice", "g", "--metrics", "accuracy,precision,recall,roc_auc,example_count"]


def _write(tmp_path, cols, timestamps):
    pdf = pd.DataFrame({k: (list(v) if v.dtype == object else v) for k, v in cols.items()})
    if timestamps:
        pdf["ts"] = pd.to_datetime(pdf["ts"], unit="s", utc=True).astype("datetime64[us, UTC]")
    path = tmp_path / ("ts.parquet" if timestamps else "secs.parquet")
    pdf.to_parquet(path, index=False)
    return path


@pytest.mark.parametrize("engines", [("local", "beam"), ("spark",)])
def test_window_flag_on_every_engine(tmp_path, engines):
    if "spark" in engines:
        pytest.importorskip("pyspark")
    cols = timed_rows(n=250, hours=4, seed=21)
    want = reference(cols, 3600, 1800)
    docs = {}
    for engine in engines:
        for timestamps in (True, False):
            out = tmp_path / f"{engine}-{timestamps}"
            path = _write(tmp_path, cols, timestamps)
            assert main(["--input", str(path), *ARGS, "--window", "ts:1h:30m", "--engine", engine, "--output", str(out), "--quiet", "--batch-size", "64"]) == 0
            doc = json.loads((out / "metrics.json").read_text())
            assert doc["slices"][0]["window_start"] == want.windows[0][0].isoformat()
            assert doc["config"]["window"] == {"time_col": "ts", "size": "1h", "slide": "30m"}
            assert_same_windows(Results.from_dict(doc), want)
            docs[(engine, timestamps)] = doc
            run = json.loads((out / "run.json").read_text())
            assert run["windows"] == len(want.windows) and run["window"] == "ts:1h:30m"
            long = pd.read_parquet(out / "metrics.parquet")
            assert list(long.columns[1:3]) == ["window_start", "window_end"] and str(long["window_start"].dtype).startswith("datetime64")
    first = next(iter(docs.values()))
    assert all(d["slices"] == first["slices"] for d in docs.values())


def test_window_flag_report_and_errors(tmp_path, capsys):
    cols = timed_rows(n=120, hours=3, seed=2)
    path = _write(tmp_path, cols, True)
    out = tmp_path / "rep"
    assert main(["--input", str(path), *ARGS, "--window", "ts:1h", "--output", str(out), "--report", "--quiet"]) == 0
    html = (out / "report.html").read_text()
    assert "Metrics over windows" in html and "3 windows" in html
    assert main(["--input", str(path), *ARGS, "--window", "ts", "--output", str(out), "--quiet"]) == 2
    assert "COL:DURATION" in capsys.readouterr().err
    assert main(["--input", str(path), *ARGS, "--window", "nope:1h", "--output", str(out), "--quiet"]) != 0
    assert "nope" in capsys.readouterr().err
