"""CLI tests on small generated files: every format, the local engine against scikit-learn, errors."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from sklearn.metrics import accuracy_score, f1_score, precision_score, recall_score

from mergeable_metrics.pipelines.evaluate import main


def _data(n: int = 3000, seed: int = 7) -> pa.Table:
    rng = np.random.default_rng(seed)
    label = rng.integers(0, 2, n)
    score = np.clip(label * 0.3 + rng.random(n) * 0.7, 0, 1)
    region = rng.choice(["north", "south", "east"], n)
    device = rng.choice(["mobile", "desktop"], n)
    weight = rng.integers(0, 4, n).astype(float)
    return pa.table({"y": label, "p": score, "region": region, "device": device, "w": weight})


def _write(table: pa.Table, path, fmt: str) -> None:
    if fmt == "parquet":
        pq.write_table(table, path)
    elif fmt == "csv":
        pacsv.write_csv(table, path)
    else:
        with open(path, "w") as fh:
            for row in table.to_pylist():
                fh.write(json.dumps(row) + "\n")


def _sk(table: pa.Table, mask=None) -> dict:
    y = table["y"].to_numpy()
    pred = (table["p"].to_numpy() >= 0.5).astype(int)
    w = table["w"].to_numpy()
    if mask is not None:
        y, pred, w = y[mask], pred[mask], w[mask]
    return {
        "accuracy": accuracy_score(y, pred, sample_weight=w),
        "precision": precision_score(y, pred, sample_weight=w),
        "recall": recall_score(y, pred, sample_weight=w),
        "f1": f1_score(y, pred, sample_weight=w),
    }


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


@pytest.mark.parametrize("fmt,ext", [("parquet", "parquet"), ("csv", "csv"), ("jsonl", "jsonl")])
def test_local_engine_matches_sklearn_per_slice(tmp_path, fmt, ext):
    table = _data()
    src = tmp_path / f"preds.{ext}"
    _write(table, src, fmt)
    out = tmp_path / "out"
    code = main(["--input", str(src), "--label", "y", "--score", "p", "--weight", "w", "--slice", "region",
                 "--slice", "region,device", "--engine", "local", "--output", str(out), "--quiet", "--batch-size", "500"])  # fmt: skip
    assert code == 0
    doc = json.loads((out / "metrics.json").read_text())
    slices = {tuple(sorted(s["slice"].items())): s for s in doc["slices"]}
    assert len(slices) == 1 + 3 + 6
    overall = slices[()]
    assert overall["n"] == table.num_rows
    for k, v in _sk(table).items():
        assert _close(overall["metrics"][k], v), k
    region = table["region"].to_numpy(zero_copy_only=False)
    device = table["device"].to_numpy(zero_copy_only=False)
    for r in ("north", "south", "east"):
        s = slices[(("region", r),)]
        assert s["n"] == int((region == r).sum())
        for k, v in _sk(table, region == r).items():
            assert _close(s["metrics"][k], v), (r, k)
        for d in ("mobile", "desktop"):
            s = slices[(("device", d), ("region", r))]
            m = (region == r) & (device == d)
            assert s["n"] == int(m.sum())
            assert _close(s["metrics"]["f1"], _sk(table, m)["f1"])
    # long-format parquet holds the same values
    long = pq.read_table(out / "metrics.parquet").to_pylist()
    row = next(r for r in long if r["slice"] == "{}" and r["metric"] == "precision")
    assert _close(row["value"], overall["metrics"]["precision"])
    assert json.loads((out / "run.json").read_text())["rows"] == table.num_rows


def test_multiclass_prediction_column(tmp_path):
    rng = np.random.default_rng(3)
    y = rng.integers(0, 4, 800)
    p = np.where(rng.random(800) < 0.6, y, rng.integers(0, 4, 800))
    pq.write_table(pa.table({"y": y, "p": p}), tmp_path / "mc.parquet")
    code = main(["--input", str(tmp_path / "mc.parquet"), "--label", "y", "--prediction", "p", "--num-classes", "4",
                 "--metrics", "accuracy,f1@macro,f1@weighted,f1@none,confusion_matrix", "--output", str(tmp_path / "o"), "--quiet"])  # fmt: skip
    assert code == 0
    m = json.loads((tmp_path / "o" / "metrics.json").read_text())["slices"][0]["metrics"]
    assert _close(m["f1@macro"], f1_score(y, p, average="macro"))
    assert _close(m["f1@weighted"], f1_score(y, p, average="weighted"))
    assert np.allclose(m["f1@none"], f1_score(y, p, average=None), rtol=1e-12)
    from sklearn.metrics import confusion_matrix

    assert np.array_equal(np.array(m["confusion_matrix"]), confusion_matrix(y, p))


def test_bad_value_reports_column_value_and_row(tmp_path, capsys):
    table = _data(100)
    scores = table["p"].to_numpy().copy()
    scores[42] = np.nan
    table = table.set_column(1, "p", pa.array(scores))
    pq.write_table(table, tmp_path / "bad.parquet")
    code = main(["--input", str(tmp_path / "bad.parquet"), "--label", "y", "--score", "p", "--output", str(tmp_path / "o")])
    assert code == 1
    err = capsys.readouterr().err
    assert "'p'" in err and "nan" in err and "row 42" in err


def test_skip_invalid_counts_rows_per_slice(tmp_path):
    table = _data(200)
    labels = table["y"].to_numpy().copy()
    labels[[3, 4, 5]] = 7  # out of range
    table = table.set_column(0, "y", pa.array(labels))
    pq.write_table(table, tmp_path / "bad.parquet")
    code = main(["--input", str(tmp_path / "bad.parquet"), "--label", "y", "--score", "p", "--slice", "region",
                 "--skip-invalid", "--output", str(tmp_path / "o"), "--quiet"])  # fmt: skip
    assert code == 0
    doc = json.loads((tmp_path / "o" / "metrics.json").read_text())
    assert doc["skipped"] == 3
    assert doc["slices"][0]["n"] == 197
    region = table["region"].to_numpy(zero_copy_only=False)
    for s in doc["slices"][1:]:
        assert s["skipped"] == int((region[[3, 4, 5]] == s["slice"]["region"]).sum())


def test_missing_column_is_a_clear_error(tmp_path, capsys):
    pq.write_table(_data(10), tmp_path / "d.parquet")
    code = main(["--input", str(tmp_path / "d.parquet"), "--label", "nope", "--score", "p", "--output", str(tmp_path / "o")])
    assert code == 2  # a usage error (mergeable_metrics.pipelines.errors), not a data error
    err = capsys.readouterr().err
    assert "nope" in err and "available columns" in err


def test_usage_errors(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["--output", str(tmp_path)])  # no input
    assert main(["--input", str(tmp_path / "missing.parquet"), "--label", "y", "--score", "p", "--output", str(tmp_path)]) == 2
    assert main(["--input", str(tmp_path / "missing.parquet"), "--label", "y", "--score", "p", "--metrics", "nonsense",
                 "--output", str(tmp_path)]) == 2  # fmt: skip
    assert "unknown metric" in capsys.readouterr().err


def test_suppressed_slice_names_are_withheld_unless_show_suppressed_names(tmp_path):
    # region "d" has 1 row: below --min-slice-size 3 it is suppressed, and region "c" (3 rows,
    # the smallest published one) with it, so overall minus "a" and "b" gives no single slice
    table = pa.table({"y": [1, 0, 1, 1, 0, 1, 0, 1, 1, 0, 1, 0], "p": [0.9, 0.2, 0.8, 0.7, 0.1, 0.6, 0.4, 0.9, 0.3, 0.2, 0.8, 0.7],
                      "region": ["a"] * 4 + ["b"] * 4 + ["c"] * 3 + ["d"] * 1})  # fmt: skip
    pq.write_table(table, tmp_path / "d.parquet")
    args = ["--input", str(tmp_path / "d.parquet"), "--label", "y", "--score", "p", "--slice", "region", "--min-slice-size", "3", "--metrics", "tp", "--quiet"]
    assert main(args + ["--output", str(tmp_path / "o")]) == 0
    text = (tmp_path / "o" / "metrics.json").read_text()
    doc = json.loads(text)
    assert [s["slice"] for s in doc["slices"]] == [{}, {"region": "a"}, {"region": "b"}, {"region": "__suppressed__"}]
    assert doc["slices"][-1]["suppressed_slices"] == 2 and '"c"' not in text and '"d"' not in text
    assert set(pq.read_table(tmp_path / "o" / "metrics.parquet").column("slice").to_pylist()) == {
        "{}",
        '{"region":"a"}',
        '{"region":"b"}',
        '{"region":"__suppressed__"}',
    }
    assert main(args + ["--show-suppressed-names", "--output", str(tmp_path / "o2")]) == 0
    doc = json.loads((tmp_path / "o2" / "metrics.json").read_text())
    assert [s["slice"] for s in doc["slices"] if s.get("suppressed")] == [{"region": "c"}, {"region": "d"}]


def test_metric_typo_suggests_the_closest_name_instead_of_listing_every_metric(tmp_path, capsys):
    _write(_data(50), tmp_path / "d.parquet", "parquet")
    code = main(["--input", str(tmp_path / "d.parquet"), "--label", "y", "--score", "p", "--metrics", "acuracy", "--output", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and "unknown metric 'acuracy' (did you mean 'accuracy'?)" in err
    assert "roc_auc" not in err and len(err) < 300  # no list of every registered name


def test_another_librarys_pr_auc_name_suggests_average_precision_not_auc(tmp_path, capsys):
    # newcomer report: `--metrics auc_pr` said "did you mean 'auc'?" ('auc' is the ROC area)
    _write(_data(50), tmp_path / "d.parquet", "parquet")
    code = main(["--input", str(tmp_path / "d.parquet"), "--label", "y", "--score", "p", "--metrics", "auc_pr", "--output", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and "unknown metric 'auc_pr' (did you mean 'average_precision'?" in err, err
    assert not (tmp_path / "o" / "metrics.json").exists()  # suggested, not run under another name


def test_bad_metric_parameter_names_the_metric_and_the_parameter(tmp_path, capsys):
    _write(_data(50), tmp_path / "d.parquet", "parquet")
    code = main(
        ["--input", str(tmp_path / "d.parquet"), "--label", "y", "--score", "p", "--metrics", "precision@threshold=abc", "--output", str(tmp_path / "o")]
    )
    err = capsys.readouterr().err
    assert code == 2 and "metric 'precision'" in err and "threshold" in err and "'abc'" in err


def test_threshold_outside_unit_interval_warns_and_is_refused_for_probabilities(tmp_path, capsys):
    _write(_data(50), tmp_path / "d.parquet", "parquet")
    base = ["--input", str(tmp_path / "d.parquet"), "--label", "y", "--score", "p", "--threshold", "1.5", "--metrics", "tp", "--no-report"]
    assert main(base + ["--output", str(tmp_path / "o")]) == 0
    err = capsys.readouterr().err
    assert "--threshold 1.5 is outside [0, 1]" in err and "predicted negative" in err
    assert json.loads((tmp_path / "o" / "metrics.json").read_text())["slices"][0]["metrics"]["tp"] == 0  # p < 1.5 everywhere
    assert main(base + ["--score-format", "probabilities", "--output", str(tmp_path / "o2")]) == 2
    assert "--score-format probabilities says the scores are probabilities" in capsys.readouterr().err
    assert main(base + ["--score-format", "scores", "--output", str(tmp_path / "o3")]) == 0
    assert "outside [0, 1]" not in capsys.readouterr().err


def test_undefined_metric_warning_is_one_plain_line_and_silent_under_quiet(tmp_path, capsys):
    # every score is below 0.5: no predicted positives, so precision is undefined (0/0)
    pq.write_table(pa.table({"y": [1, 0, 1, 0], "p": [0.1, 0.2, 0.3, 0.4]}), tmp_path / "d.parquet")
    base = ["--input", str(tmp_path / "d.parquet"), "--label", "y", "--score", "p", "--metrics", "precision", "--no-report"]
    assert main(base + ["--output", str(tmp_path / "o")]) == 0
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if "precision" in ln]
    assert lines == [
        "warning: metric 'precision' is undefined (zero denominator or no data) in slice 'Overall': reported as NaN (null in JSON); undefined classes are left out of averages"
    ]
    assert ".py:" not in err  # no Python source location
    assert main(base + ["--quiet", "--output", str(tmp_path / "o2")]) == 0
    assert capsys.readouterr().err == ""


def test_classes_of_text_values_read_a_csv_input(tmp_path):
    # CSV label and prediction columns of class names are text, not numbers that failed to parse
    rng = np.random.default_rng(12)
    animals = np.array(["cat", "dog", "bird"])
    y, p = animals[rng.integers(0, 3, 200)], animals[rng.integers(0, 3, 200)]
    pacsv.write_csv(pa.table({"y": y, "p": p}), tmp_path / "mc.csv")
    code = main(["--input", str(tmp_path / "mc.csv"), "--label", "y", "--prediction", "p", "--classes", "cat,dog,bird",
                 "--metrics", "f1", "--output", str(tmp_path / "o"), "--quiet"])  # fmt: skip
    assert code == 0
    m = json.loads((tmp_path / "o" / "metrics.json").read_text())["slices"][0]["metrics"]
    assert _close(m["f1@macro"], f1_score(y, p, labels=list(animals), average="macro"))
    # --skip-invalid skips the rows outside the classes (not every row as a text value)
    code = main(["--input", str(tmp_path / "mc.csv"), "--label", "y", "--prediction", "p", "--classes", "cat,dog",
                 "--metrics", "accuracy", "--skip-invalid", "--output", str(tmp_path / "s"), "--quiet"])  # fmt: skip
    assert code == 0
    doc = json.loads((tmp_path / "s" / "metrics.json").read_text())["slices"][0]
    keep = (y != "bird") & (p != "bird")
    assert doc["n"] == keep.sum() and doc["skipped"] == 200 - keep.sum()
    assert _close(doc["metrics"]["accuracy"], accuracy_score(y[keep], p[keep]))


def test_classes_and_pos_label_flags_map_label_values(tmp_path, capsys):
    from sklearn.metrics import confusion_matrix

    rng = np.random.default_rng(11)
    animals = np.array(["cat", "dog", "bird"])
    y = animals[rng.integers(0, 3, 300)]
    p = np.where(rng.random(300) < 0.6, y, animals[rng.integers(0, 3, 300)])
    pq.write_table(pa.table({"y": y, "p": p}), tmp_path / "mc.parquet")
    code = main(["--input", str(tmp_path / "mc.parquet"), "--label", "y", "--prediction", "p", "--classes", "cat,dog,bird",
                 "--metrics", "f1,f1@none,confusion_matrix", "--output", str(tmp_path / "o"), "--report", "--quiet"])  # fmt: skip
    assert code == 0
    doc = json.loads((tmp_path / "o" / "metrics.json").read_text())
    m = doc["slices"][0]["metrics"]
    assert _close(m["f1@macro"], f1_score(y, p, labels=list(animals), average="macro"))
    assert np.array_equal(np.array(m["confusion_matrix"]), confusion_matrix(y, p, labels=list(animals)))
    assert doc["config"]["classes"] == ["cat", "dog", "bird"] and doc["config"]["metric_names"] == {"f1": "f1@macro"}
    html = (tmp_path / "o" / "report.html").read_text()
    assert "cat: " in html and "bird: " in html  # per-class values by class name
    # binary {-1, 1} with --pos-label, and the same settings from a config file
    s = rng.random(200)
    yb = rng.choice([-1, 1], 200)
    pq.write_table(pa.table({"y": yb, "s": s}), tmp_path / "b.parquet")
    want = precision_score(yb, np.where(s >= 0.5, -1, 1), pos_label=-1)  # -1 is the positive class
    code = main(["--input", str(tmp_path / "b.parquet"), "--label", "y", "--score", "s", "--classes=1,-1", "--pos-label", "-1",
                 "--metrics", "precision@threshold=0.5", "--output", str(tmp_path / "b"), "--quiet"])  # fmt: skip
    assert code == 0
    got = json.loads((tmp_path / "b" / "metrics.json").read_text())["slices"][0]["metrics"]
    # scores are the positive class's: the score column is P(y = -1) here
    assert _close(got["precision@threshold=0.5"], want)
    (tmp_path / "c.json").write_text(json.dumps({"classes": [1, -1], "pos_label": -1}))
    code = main(["--config", str(tmp_path / "c.json"), "--input", str(tmp_path / "b.parquet"), "--label", "y", "--score", "s",
                 "--metrics", "precision@threshold=0.5", "--output", str(tmp_path / "c"), "--quiet"])  # fmt: skip
    assert code == 0
    assert json.loads((tmp_path / "c" / "metrics.json").read_text())["slices"][0]["metrics"] == got
    # a label outside the classes: a data error naming column, value and row
    pq.write_table(pa.table({"y": [1, -1, 2], "s": [0.1, 0.2, 0.3]}), tmp_path / "bad.parquet")
    code = main(["--input", str(tmp_path / "bad.parquet"), "--label", "y", "--score", "s", "--classes=1,-1", "--output", str(tmp_path / "d"), "--quiet"])
    assert code != 0 and "column 'y': invalid value 2 at row 2: not one of classes=[1, -1]" in capsys.readouterr().err
