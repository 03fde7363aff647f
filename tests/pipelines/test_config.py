"""``--config FILE`` (YAML or JSON): same results as the flags, flags override, bad files get a
clear error (exit code 2 and a message naming the file, the key and the problem)."""

from __future__ import annotations

import json
import textwrap

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mergeable_metrics.pipelines.config import ConfigError, load_config, read_config_file
from mergeable_metrics.pipelines.evaluate import build_parser, main


@pytest.fixture()
def data(tmp_path):
    rng = np.random.default_rng(3)
    n = 800
    y = rng.integers(0, 2, n)
    p = np.clip(0.3 * y + 0.7 * rng.random(n), 0, 1)
    table = pa.table({"y": y, "p": p, "region": rng.choice(["a", "b"], n), "dev": rng.choice(["m", "d"], n), "w": rng.integers(1, 3, n).astype(float)})
    path = tmp_path / "preds.parquet"
    pq.write_table(table, path)
    return path


def _write(path, text):
    path.write_text(textwrap.dedent(text))
    return path


def _metrics(out):
    return json.loads((out / "metrics.json").read_text())


def test_yaml_config_gives_the_same_results_as_flags(tmp_path, data):
    cfg = _write(
        tmp_path / "eval.yaml",
        """
        input: preds.parquet        # relative to this file
        label: y
        score: p
        weight: w
        slices: [region, [region, dev]]
        metrics: [accuracy, f1, precision@threshold=0.7]
        threshold: 0.5
        threshold-rule: ">="
        zero_division: 0
        engine: local
        output: out-config
        quiet: true
    """,
    )
    assert main(["--config", str(cfg)]) == 0
    out_flags = tmp_path / "out-flags"
    assert main(["--input", str(data), "--label", "y", "--score", "p", "--weight", "w", "--slice", "region", "--slice", "region,dev",
                 "--metrics", "accuracy,f1,precision@threshold=0.7", "--zero-division", "0", "--output", str(out_flags), "--quiet"]) == 0  # fmt: skip
    a, b = _metrics(tmp_path / "out-config"), _metrics(out_flags)
    assert a["slices"] == b["slices"]
    assert len(a["slices"]) == 1 + 2 + 4
    assert list(a["slices"][0]["metrics"]) == ["accuracy", "f1", "precision@threshold=0.7"]
    assert not (tmp_path / "out-config" / "report.html").exists()  # no report unless asked


def test_json_config_and_flags_override_it(tmp_path, data):
    cfg = tmp_path / "eval.json"
    cfg.write_text(json.dumps({"input": str(data), "label": "y", "score": "p", "metrics": "accuracy,recall", "slices": ["region"],
                               "output": str(tmp_path / "from-config"), "report": True, "quiet": True, "threshold": 0.5}))  # fmt: skip
    out = tmp_path / "from-flags"
    assert main(["--config", str(cfg), "--metrics", "f1", "--threshold", "0.6", "--output", str(out), "--slice", "dev"]) == 0
    doc = _metrics(out)
    assert list(doc["slices"][0]["metrics"]) == ["f1"]
    assert doc["config"]["threshold"] == 0.6
    assert {tuple(s["slice"]) for s in doc["slices"]} == {(), ("dev",)}  # --slice replaces the config's slices
    assert (out / "report.html").exists()  # report: true from the config, at the overriding output
    assert not (tmp_path / "from-config").exists()


def test_config_values_are_converted_like_flags(tmp_path, data):
    cfg = _write(
        tmp_path / "c.yml",
        f"""
        input: {data}
        label: y
        score: [p]
        slice: "region,dev"
        skip_invalid: true
        num_classes: 2
        zero_division: nan
        report: my/report.html
        beam_args: ["--direct_num_workers=1"]
        intervals: false
        output: o
    """,
    )
    got = load_config(cfg, build_parser())
    assert got["input"] == str(data)
    assert got["score"] == "p"
    assert got["slice"] == ["region,dev"]
    assert got["skip_invalid"] is True and got["num_classes"] == 2 and got["zero_division"] == "nan"
    assert got["report"] == str((tmp_path / "my" / "report.html").resolve())
    assert got["output"] == str((tmp_path / "o").resolve())
    assert got["beam_arg"] == ["--direct_num_workers=1"] and got["bounds"] is False  # "intervals": the old name of "bounds"


BAD = [
    ("unknown.yaml", "label: y\ntreshold: 0.5\n", "unknown key 'treshold' (did you mean 'threshold'?)"),
    ("type.yaml", "label: y\nthreshold: high\n", "threshold: expected a number, got a string 'high'"),
    ("bool.yaml", "label: y\nskip_invalid: 'yes'\n", "skip_invalid: expected true or false"),
    ("int.yaml", "label: y\nnum_classes: 2.5\n", "num_classes: expected an integer, got a number 2.5"),
    ("choice.yaml", "label: y\nengine: flink\n", "engine: must be one of local, beam, spark; got 'flink'"),
    (
        "metric.yaml",
        "label: y\nmetrics: [accuracy, precison@macro]\n",
        "metrics: item 1 ('precison@macro'): unknown metric 'precison' (did you mean 'precision'?)",
    ),
    (
        "pr.yaml",
        "label: y\nmetrics: [auc_pr]\n",  # another library's name: ours is suggested (was 'auc', the ROC area)
        "metrics: item 0 ('auc_pr'): unknown metric 'auc_pr' (did you mean 'average_precision'?",
    ),
    ("metricstr.yaml", "label: y\nmetrics: ['f1@']\n", "malformed metric string 'f1@'"),
    ("column.yaml", "label: 2013\n", "label: expected a string, got an integer 2013 (quote it"),
    ("slices.yaml", "label: y\nslices: [[a, 1]]\n", "slices: item 0: a slice spec is a column name"),
    ("list.yaml", "- label\n- y\n", "the top level must be a mapping of option: value, got a list"),
    ("syntax.yaml", "label: y\nmetrics: [accuracy, f1\n", "not valid YAML"),
    ("syntax.json", '{"label": "y",}', "not valid JSON: Expecting property name enclosed in double quotes at line 1, column 15"),
    ("eval.toml", "label = 'y'", "unsupported file type '.toml'; use .yaml, .yml or .json"),
]


@pytest.mark.parametrize("name,text,message", BAD, ids=[b[0] for b in BAD])
def test_bad_config_file_exits_2_with_a_clear_message(tmp_path, capsys, name, text, message):
    cfg = tmp_path / name
    cfg.write_text(text)
    assert main(["--config", str(cfg), "--output", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: config {str(cfg)!r}: "), err
    assert message in err, err
    assert not (tmp_path / "out").exists()  # nothing ran


def test_missing_config_file(tmp_path, capsys):
    assert main(["--config", str(tmp_path / "nope.yaml"), "--output", str(tmp_path / "o")]) == 2
    assert "nope.yaml': file not found" in capsys.readouterr().err


def test_config_errors_are_value_errors(tmp_path):
    cfg = _write(tmp_path / "bad.yaml", "metrics: 3\n")
    with pytest.raises(ConfigError, match=r"metrics: expected a list of metric strings \(or one comma-separated string\), got an integer"):
        load_config(cfg, build_parser())
    assert issubclass(ConfigError, ValueError)
    assert read_config_file(_write(tmp_path / "empty.yaml", "# nothing\n")) == {}


def test_output_may_come_from_the_config_only(tmp_path, data, capsys):
    cfg = _write(tmp_path / "noout.yaml", f"input: {data}\nlabel: y\nscore: p\n")
    with pytest.raises(SystemExit) as e:
        main(["--config", str(cfg)])
    assert e.value.code == 2
    assert "give --output DIR (or output: in the --config file)" in capsys.readouterr().err


def test_evaluation_errors_from_config_values_exit_2(tmp_path, data, capsys):
    # a known metric that the task does not support: found when the evaluation is built
    cfg = _write(tmp_path / "task.yaml", f"input: {data}\nlabel: y\nprediction: p\ntask: regression\nmetrics: [f1]\noutput: o\n")
    assert main(["--config", str(cfg)]) == 2
    assert "f1" in capsys.readouterr().err


def test_the_readme_config_example_runs(tmp_path):
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text()
    block = re.search(r"```yaml\n(.*?)```", page, re.S).group(1)
    cfg = tmp_path / "eval.yaml"
    cfg.write_text(block)
    rng = np.random.default_rng(0)
    n = 600
    y = rng.integers(0, 2, n)
    pq.write_table(pa.table({"y": y, "p": np.clip(0.3 * y + 0.7 * rng.random(n), 0, 1), "w": np.ones(n),
                             "country": rng.choice(["DE", "FR"], n), "device": rng.choice(["m", "d"], n)}), tmp_path / "preds.parquet")  # fmt: skip
    assert main(["--config", str(cfg), "--quiet"]) == 0
    doc = _metrics(tmp_path / "out" / "eval")
    assert len(doc["slices"]) == 1 + 2 + 4 and "roc_auc" in doc["slices"][0]["metrics"]
    assert (tmp_path / "out" / "eval" / "report.html").exists()


def test_bounds_flag_and_its_hidden_old_name_intervals():
    p = build_parser()
    base = ["--input", "x.parquet", "--label", "y", "--score", "p", "--output", "o"]
    assert p.parse_args(base).bounds is True
    assert p.parse_args(base + ["--no-bounds"]).bounds is False
    assert p.parse_args(base + ["--no-intervals"]).bounds is False
    assert "--intervals" not in p.format_help() and "--bounds" in p.format_help()


def test_config_named_measures_as_a_mapping(tmp_path, data):
    """``measure: {name: column}`` in a config file is ``--measure name=column`` (issue 18)."""
    cfg = _write(
        tmp_path / "m.yaml",
        """
        input: preds.parquet
        label: y
        score: p
        metrics: [accuracy]
        measure: {score_mean: p, weight_mean: w}
        output: out-m
        quiet: true
    """,
    )
    assert main(["--config", str(cfg)]) == 0
    t = pq.read_table(data).to_pandas()
    m = _metrics(tmp_path / "out-m")["slices"][0]["metrics"]
    assert m["score_mean"] == pytest.approx(t["p"].mean()) and m["weight_mean"] == pytest.approx(t["w"].mean())
