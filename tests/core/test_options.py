"""``Evaluation``'s options have one source, :data:`core.options.OPTIONS`: the signature, the
docstring, ``to_config()`` / ``describe()``, the fingerprint, the engines' keyword arguments and
the CLI all follow the table."""

from __future__ import annotations

import inspect

import pytest

from core import Evaluation
from core.evaluation import resolve_evaluation
from core.options import OPTION_NAMES, OPTIONS

#: three configurations that together give every option a value other than its default
MULTICLASS = dict(
    label_col="y", prediction_col="p", weight_col="w", slices=["g"], metrics=["accuracy", "mean_measure"], num_classes=3,
    threshold=0.3, threshold_rule=">", zero_division=0, on_invalid="skip", multiclass=True, task="multiclass",
    measure_col="m", ignore_index=1, label_format="labels", prediction_format="labels", min_slice_size=2,
    show_suppressed_names=True, baseline_prediction_col="p0", classes=[10, 20, 30],
)  # fmt: skip
SCORES = dict(
    label_col="y", score_col="s", score_format="probabilities", metrics=["roc_auc"], ci="posterior", ci_level=0.9,
    ci_replicates=50, ci_seed=3, ci_prior=1, ci_interval="hdi", ci_buckets=64, id_col="id", baseline_score_col="s0", tolerance=0.01, measure_cols={"loss": "l"},
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
    beam_transforms = pytest.importorskip("beam_metrics.transforms")
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
    from pipelines.evaluate import CLI_DESTS, build_parser, evaluation_from_args

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
        "--ci-prior", "1", "--ci-interval", "hdi", "--ci-buckets", "64", "--id", "id", "--baseline-score", "s0", "--tolerance", "0.01",
        "--measure", "loss=l",
        "--classes", "no,yes", "--pos-label", "no",
    ]  # fmt: skip
    assert evaluation_from_args(build_parser().parse_args(argv)).to_config() == Evaluation(**SCORES).to_config()
