"""Progress: the local engine's bar (rows, files, rate) on stderr, off with --quiet; stage log
lines for Beam runs."""

from __future__ import annotations

import io as _io
import logging

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mergeable_metrics.pipelines.evaluate import main
from mergeable_metrics.pipelines.progress import Progress, progress_enabled


class _Tty(_io.StringIO):
    def isatty(self):
        return True


def test_progress_enabled_rules():
    assert progress_enabled("auto", stream=_Tty()) is True
    assert progress_enabled("auto", stream=_io.StringIO()) is False  # not a terminal: no bar
    assert progress_enabled("on", stream=_io.StringIO()) is True
    assert progress_enabled("on", quiet=True) is False
    assert progress_enabled("off", stream=_Tty()) is False
    with pytest.raises(ValueError, match="progress must be one of"):
        progress_enabled("sometimes")


def test_progress_bar_shows_rows_files_and_rate():
    out = _io.StringIO()
    with Progress(3000, 2, desc="local", file=out) as bar:
        bar.update(1000)
        bar.file_done()
        bar.update(2000)
        bar.file_done()
    text = out.getvalue()
    assert "3.00k/3.00k" in text and "files 2/2" in text and "rows/s" in text
    off = Progress(10, 1, enabled=False)
    off.update(10)
    off.file_done()
    off.close()
    assert (off.rows, off.files) == (10, 1)


def _dir_input(tmp_path, files=3, n=500):
    d = tmp_path / "in"
    d.mkdir()
    rng = np.random.default_rng(0)
    for i in range(files):
        y = rng.integers(0, 2, n)
        pq.write_table(pa.table({"y": y, "p": rng.random(n)}), d / f"part-{i}.parquet")
    return d


def test_cli_progress_on_and_quiet(tmp_path, capsys):
    src = _dir_input(tmp_path)
    args = ["--input", str(src), "--label", "y", "--score", "p", "--batch-size", "200"]
    assert main([*args, "--output", str(tmp_path / "a"), "--progress", "on"]) == 0
    err = capsys.readouterr().err
    assert "local: 100%" in err and "1.50k/1.50k" in err and "files 3/3" in err and "rows/s" in err
    assert main([*args, "--output", str(tmp_path / "b"), "--progress", "on", "--quiet"]) == 0
    assert capsys.readouterr().err == ""
    assert main([*args, "--output", str(tmp_path / "c")]) == 0  # auto: stderr is not a terminal here
    assert "rows/s" not in capsys.readouterr().err


def test_beam_run_logs_its_stages(tmp_path, caplog):
    pytest.importorskip("apache_beam")
    src = _dir_input(tmp_path, files=2, n=100)
    with caplog.at_level(logging.INFO, logger="pipelines"):
        assert main(["--input", str(src), "--label", "y", "--score", "p", "--engine", "beam", "--output", str(tmp_path / "o")]) == 0
    lines = [r.getMessage() for r in caplog.records if r.name == "pipelines"]
    assert any(m.startswith("beam: reading 2 parquet file(s)") for m in lines), lines
    assert any(m.startswith("beam: running ComputeMetrics (--runner=DirectRunner") for m in lines), lines
    assert "beam: collected 1 slices" in lines


def test_beam_log_counts_slices_as_the_summary_does(tmp_path, caplog, capsys):
    # newcomer report: the log said "collected 46 slices" (entries, the '__suppressed__' ones included)
    # where the summary said "44 slices (+11 suppressed)"
    pytest.importorskip("apache_beam")
    rng = np.random.default_rng(5)
    n = 120
    c = np.array(["a"] * 100 + ["b"] * 8 + ["c"] * 7 + ["d"] * 5)  # b, c, d: below --min-slice-size 10
    pq.write_table(pa.table({"y": rng.integers(0, 2, n), "p": rng.random(n), "c": c}), tmp_path / "in.parquet")
    argv = ["--input", str(tmp_path / "in.parquet"), "--label", "y", "--score", "p", "--slice", "c", "--min-slice-size", "10"]
    with caplog.at_level(logging.INFO, logger="pipelines"):
        assert main([*argv, "--engine", "beam", "--output", str(tmp_path / "o"), "--no-report"]) == 0
    lines = [r.getMessage() for r in caplog.records if r.name == "pipelines"]
    assert "beam: collected 2 slices (+3 suppressed)" in lines, lines  # overall and c=a; b, c, d withheld
    assert "2 slices (+3 suppressed)" in capsys.readouterr().out
