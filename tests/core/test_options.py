"""``Evaluation``'s options have one source, :data:`mergeable_metrics.evaluation.options.OPTIONS`: the signature, the
docstring, ``to_config()`` / ``describe()``, the fingerprint, the engines' keyword arguments and
the CLI all follow the table."""

from __future__ import annotations

import inspect
import math

import pytest

from mergeable_metrics import Evaluation
from mergeable_metrics.evaluation.evaluation import resolve_evaluation
from mergeable_metrics.evaluation.options import OPTION_NAMES, OPTIONS

#: three configurations that together give every option a value other than its default
MULTICLASS = dict(
    label_col="y", prediction_col="p", weight_col="w", slices=["g"], metrics=["accuracy", "mean_measure"], num_classes=3,
    threshold=0.3, threshold_rule=">", zero_division=0, on_invalid="skip", multiclass=True, task="multiclass",
    measure_col="m", ignore_index=1, label_format="labels", prediction_format="labels", min_slice_size=2,
    show_suppressed_names=True, baseline_prediction_col="p0", classes=[10, 20, 30],
)  # fmt: skip
SCORES = dict(
    label_col="y", score_col="s", score_format="probabilities", metrics=["roc_auc"], ci="posterior", ci_level=0.9,
    ci_replicates=50, ci_seed=3, ci_prior=1, ci_prevalence_prior=0, ci_interval="hdi", ci_buckets=64, id_col="id", baseline_score_col="s0", tolerance=0.01, measure_cols={"loss": "l"},
    classes=["no", "yes"], pos_label="no",
)  # fmt: skip
RETRIEVAL = dict(label_col="rel", score_col="s", query_col="q", metrics=["ndcg@k=5", "mrr"])
MULTIOUTPUT = dict(label_col="y", prediction_col="p", num_outputs=2, metrics=["r2@multioutput=raw_values"])


def test_the_signature_is_the_option_table():
    params = list(inspect.signature(Evaluation).parameters.values())
    assert [p.name for p in params] == list(OPTION_NAMES)
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params)
    assert [p.default for p in params] == [o.default for o in OPTIONS]
    for o in OPTIONS:  # each documented in the class docstring's Args
        assert f"        {o.name}: " in Evaluation.__doc__, o.name


def test_every_option_appears_in_to_config_and_round_trips():
    configs = [Evaluation(**c).to_config() for c in (MULTICLASS, SCORES, RETRIEVAL, MULTIOUTPUT)]
    assert set().union(*configs) == set(OPTION_NAMES)
    assert configs[0]["min_slice_size"] == 2.0 and configs[0]["zero_division"] == 0 and configs[1]["score_format"] == "probabilities"
    for cfg in configs:
        ev = Evaluation(**cfg)
        assert ev.to_config() == cfg
        assert list(ev.to_config()) == [n for n in OPTION_NAMES if n in cfg]  # table order
        assert ev.describe()["task"] == ev.plan.task.kind
        assert Evaluation(**cfg).fingerprint == ev.fingerprint


def test_fingerprint_holds_the_column_format_and_slice_options():
    fp = Evaluation(**MULTICLASS).fingerprint
    assert {o.name for o in OPTIONS if o.fingerprint is True} <= set(fp)
    # options added later are in it only when set: older fingerprints stay what they were
    assert fp["classes"] == [10, 20, 30] and "pos_label" not in fp
    assert {"classes", "pos_label"} <= set(Evaluation(**SCORES).fingerprint)
    assert not {"classes", "pos_label"} & set(Evaluation(label_col="y", score_col="s").fingerprint)
    assert fp["measure_col"] == "m" and fp["label_format"] == "labels" and fp["slices"] == ["g"]
    assert "min_slice_size" not in fp and "on_invalid" not in fp  # used only when computing


def test_engine_entry_points_accept_every_option():
    for cfg in (MULTICLASS, SCORES, RETRIEVAL):
        want = Evaluation(**cfg).to_config()
        assert resolve_evaluation(None, dict(cfg)).to_config() == want  # ComputeMetrics(**kw), compute_metrics(df, **kw)
    with pytest.raises(TypeError, match="'threshhold'.*did you mean 'threshold'"):
        resolve_evaluation(None, {"label_col": "y", "score_col": "s", "threshhold": 0.3})


def test_beam_compute_metrics_accepts_every_option():
    beam_transforms = pytest.importorskip("mergeable_metrics.beam.transforms")
    for cfg in (MULTICLASS, SCORES):
        assert beam_transforms.ComputeMetrics(**cfg).evaluation.to_config() == Evaluation(**cfg).to_config()


def test_unknown_option_names_the_closest_one():
    with pytest.raises(TypeError, match="unexpected keyword argument 'slice'.*did you mean 'slices'"):
        Evaluation(label_col="y", score_col="s", slice=["g"])


@pytest.mark.parametrize(
    "kw, err, match",
    [
        (dict(on_invalid="drop"), ValueError, "on_invalid must be one of"),
        (dict(min_slice_size=0), ValueError, "min_slice_size must be a finite number > 0"),
        (dict(min_slice_size=True), ValueError, "min_slice_size"),
        (dict(show_suppressed_names="yes"), TypeError, "show_suppressed_names must be a bool"),
        (dict(score_format="nope"), ValueError, "nope"),
        (dict(score_col=["a", ""]), ValueError, "score_col: a list of per-class score columns"),
        (dict(prediction_col="p"), ValueError, "give exactly one of score_col or prediction_col"),
    ],
)
def test_option_checks_name_the_option(kw, err, match):
    with pytest.raises(err, match=match):
        Evaluation(**{"label_col": "y", "score_col": "s", **kw})


def test_the_cli_sets_every_option_that_has_a_flag():
    from mergeable_metrics.pipelines.evaluate import CLI_DESTS, build_parser, evaluation_from_args

    dests = {a.dest for a in build_parser()._actions}
    assert {n for n in OPTION_NAMES if CLI_DESTS.get(n, n) not in dests} == {"multiclass"}  # no flag (yet)
    argv = [
        "--input", "x.parquet", "--output", "out", "--label", "y", "--prediction", "p", "--weight", "w", "--slice", "g",
        "--metrics", "accuracy,mean_measure", "--num-classes", "3", "--threshold", "0.3", "--threshold-rule", ">",
        "--zero-division", "0", "--skip-invalid", "--task", "multiclass", "--measure", "m", "--ignore-index", "1",
        "--label-format", "labels", "--prediction-format", "labels", "--min-slice-size", "2", "--show-suppressed-names",
        "--baseline-prediction", "p0", "--classes", "10,20,30",
    ]  # fmt: skip
    got = evaluation_from_args(build_parser().parse_args(argv)).to_config()
    assert got == Evaluation(**{**MULTICLASS, "multiclass": False}).to_config()
    argv = [
        "--input", "x.parquet", "--output", "out", "--label", "y", "--score", "s", "--score-format", "probabilities",
        "--metrics", "roc_auc", "--ci", "posterior", "--ci-level", "0.9", "--ci-replicates", "50", "--ci-seed", "3",
        "--ci-prior", "1", "--ci-prevalence-prior", "0", "--ci-interval", "hdi", "--ci-buckets", "64", "--id", "id", "--baseline-score", "s0", "--tolerance", "0.01",
        "--measure", "loss=l",
        "--classes", "no,yes", "--pos-label", "no",
    ]  # fmt: skip
    assert evaluation_from_args(build_parser().parse_args(argv)).to_config() == Evaluation(**SCORES).to_config()


# -- ci settings that cannot give the stated coverage (issue 28, item 18) -----------------------
def _replicates_reference(level: float) -> int:
    """Each tail of the percentile interval expects (1 - level) / 2 * R replicates: at least one."""
    return math.ceil(round(2 / (1 - level), 9))


def _buckets_reference(level: float) -> int:
    """The smallest B at which the percentile interval of a normal mean over B equal groups,
    ``mean +- z sqrt((B - 1) / B) s / sqrt(B)``, covers at least 1 - 2 (1 - level) (it misses at
    most twice as often as stated): P(|t_{B-1}| <= z sqrt((B - 1) / B)), scipy's t."""
    stats = pytest.importorskip("scipy.stats")
    z = stats.norm.ppf((1 + level) / 2)
    return next(b for b in range(2, 2000) if 2 * stats.t.cdf(z * math.sqrt((b - 1) / b), b - 1) - 1 >= 1 - 2 * (1 - level))


@pytest.mark.parametrize("level, replicates, buckets", [(0.8, 10, 4), (0.9, 20, 6), (0.95, 40, 10), (0.99, 200, 23)])
def test_ci_minimums_follow_from_the_level(level, replicates, buckets):
    from mergeable_metrics.evaluation.options import ci_minimums

    assert (_replicates_reference(level), _buckets_reference(level)) == (replicates, buckets)  # the hand table agrees
    assert ci_minimums(level) == (replicates, buckets)


@pytest.mark.parametrize("ci", ["posterior", "bootstrap"])
@pytest.mark.parametrize("level", [0.9, 0.95])
def test_too_few_replicates_or_buckets_are_refused_naming_the_option_and_the_minimum(ci, level):
    kw = {"label_col": "y", "score_col": "s", "ci": ci, "ci_level": level}
    need_r, need_b = _replicates_reference(level), _buckets_reference(level)
    for r in (1, need_r - 1):
        with pytest.raises(ValueError, match=rf"ci_replicates={r} .*at least {need_r}\b"):
            Evaluation(**kw, ci_replicates=r)
    Evaluation(**kw, ci_replicates=need_r)  # the minimum itself is fine
    if ci == "bootstrap":
        for b in (1, need_b - 1):
            with pytest.raises(ValueError, match=rf"ci_buckets={b} .*at least {need_b}\b"):
                Evaluation(**kw, ci_buckets=b)
        Evaluation(**kw, ci_buckets=need_b)
    else:
        Evaluation(**kw, ci_buckets=1)  # buckets are the bootstrap's only


def test_replicates_and_buckets_are_free_without_resampling():
    Evaluation(label_col="y", score_col="s", ci="analytic", ci_replicates=1, ci_buckets=1)
    Evaluation(label_col="y", score_col="s", ci_replicates=1, ci_buckets=1)


def test_every_entry_point_goes_through_the_one_check(tmp_path):
    """Engines (resolve_evaluation: ComputeMetrics, compute_metrics), Beam's ComputeMetrics,
    the CLI flags and a config file: the same refusal, before any data is read."""
    from mergeable_metrics.pipelines.evaluate import main

    bad = {"label_col": "y", "score_col": "s", "ci": "bootstrap", "ci_replicates": 1}
    with pytest.raises(ValueError, match=r"ci_replicates=1 .*at least 40\b"):
        resolve_evaluation(None, dict(bad))
    beam_transforms = pytest.importorskip("mergeable_metrics.beam.transforms")
    with pytest.raises(ValueError, match=r"ci_buckets=1 .*at least 10\b"):
        beam_transforms.ComputeMetrics(**{**bad, "ci_replicates": 200, "ci_buckets": 1})
    import pandas as pd

    data = tmp_path / "x.csv"
    pd.DataFrame({"y": [0, 1, 1, 0], "s": [0.2, 0.7, 0.4, 0.1]}).to_csv(data, index=False)
    base = ["--input", str(data), "--output", str(tmp_path / "out"), "--label", "y", "--score", "s", "--ci", "bootstrap", "--quiet"]
    assert main(base + ["--ci-replicates", "1"]) == 2
    assert main(base + ["--ci-buckets", "1"]) == 2
    cfg = tmp_path / "c.yaml"
    cfg.write_text("ci: posterior\nci_level: 0.9\nci_replicates: 19\n")
    assert main(["--config", str(cfg)] + base[:8] + ["--quiet"]) == 2
    assert main(base + ["--ci-replicates", "40", "--ci-buckets", "10"]) == 0
