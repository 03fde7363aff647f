"""Metric strings, canonical keys, the registry, state sharing in plans, and the collection repr."""

from __future__ import annotations

import re

import numpy as np
import pytest

from mergeable_metrics import REGISTRY, Metric, MetricCollection
from mergeable_metrics.engine import Plan
from mergeable_metrics.metrics import Task, resolve
from mergeable_metrics.metrics.base import parse_metric_string
from mergeable_metrics.states.base import BinaryConfusionState, ExampleCountState

# NaN results (an undefined metric) are expected in these tests; their warnings are noise here.
pytestmark = pytest.mark.filterwarnings("ignore::mergeable_metrics.UndefinedMetricWarning")

BINARY = Task()
MULTI = Task(num_classes=3)


# ---------------------------------------------------------------------------------------------
# parsing
@pytest.mark.parametrize(
    "text, parsed",
    [
        ("f1", ("f1", [], {})),
        ("f1@macro", ("f1", ["macro"], {})),
        ("recall@none", ("recall", [None], {})),
        ("precision@threshold=0.7", ("precision", [], {"threshold": 0.7})),
        ("fbeta@beta=2@weighted", ("fbeta", ["weighted"], {"beta": 2})),
        ("fbeta@weighted@beta=0.5", ("fbeta", ["weighted"], {"beta": 0.5})),
        ("  f1 @ macro ", ("f1", ["macro"], {})),
        ("precision@zero_division=warn", ("precision", [], {"zero_division": "warn"})),
    ],
)
def test_parse_metric_string(text, parsed):
    assert parse_metric_string(text) == parsed


@pytest.mark.parametrize("text", ["", "@macro", "f1@", "f1@@macro", "f1@macro@"])
def test_malformed_metric_strings(text):
    with pytest.raises(ValueError, match="malformed"):
        parse_metric_string(text)


@pytest.mark.parametrize("text", ["fbeta@beta=2@beta=3", "fbeta+beta=2+beta=3", "fbeta@beta=2+beta=0.5", "f1+beta=2 @ beta = 3"])
def test_a_parameter_given_twice_is_refused(text):
    """Two values of one parameter (easy to write with ``+`` beside ``@``) are a bad input, not
    "the last one wins": the string names the parameter."""
    with pytest.raises(ValueError, match=r"parameter 'beta' given twice in '"):
        parse_metric_string(text)


def test_resolve_f1_macro():
    m = resolve("f1@macro", MULTI)
    assert type(m).__name__ == "F1" and m.p["average"] == "macro" and m.key == "f1@macro"


def test_resolve_precision_threshold():
    m = resolve("precision@threshold=0.7", BINARY)
    assert m.p["threshold"] == 0.7 and m.p["average"] == "binary"
    assert m.key == "precision@threshold=0.7"
    assert m.requires() == [(BinaryConfusionState, 0.7)]


def test_resolve_fbeta_beta_and_average():
    m = resolve("fbeta@beta=2@weighted", MULTI)
    assert m.p["beta"] == 2.0 and m.p["average"] == "weighted"
    assert m.key == "fbeta@weighted@beta=2"


def test_resolve_recall_none_gives_per_class_array():
    m = resolve("recall@none", MULTI)
    assert m.p["average"] is None and m.key == "recall@none"
    mc = MetricCollection(m, num_classes=3)
    mc.update([0, 1, 2, 2], y_pred=[0, 2, 2, 2])
    v = mc.compute()["recall@none"]
    assert isinstance(v, np.ndarray) and v.shape == (3,)
    np.testing.assert_allclose(v, [1.0, 0.0, 1.0])


def test_resolve_passes_metric_objects_through():
    m = resolve("f1@macro", MULTI)
    assert resolve(m, MULTI) is m


# ---------------------------------------------------------------------------------------------
# canonical keys
@pytest.mark.parametrize(
    "task, spellings, key",
    [
        (BINARY, ["f1", "F1", "f1_score", "f1@binary", "f1@average=binary"], "f1"),
        (BINARY, ["precision", "ppv", "positive_predictive_value"], "precision"),
        (BINARY, ["recall", "tpr", "sensitivity", "true_positive_rate"], "recall"),
        (BINARY, ["precision@threshold=0.7", "precision@threshold=0.70", "ppv@threshold=7e-1"], "precision@threshold=0.7"),
        (BINARY, ["tp@threshold=1", "tp@threshold=1.0", "true_positives@threshold=1"], "tp@threshold=1"),
        (BINARY, ["f1@macro", "f1@average=macro"], "f1@macro"),
        (MULTI, ["f1", "f1@macro", "f1_score@average=macro", "F1@macro"], "f1@macro"),
        (MULTI, ["fbeta@beta=2@weighted", "fbeta@weighted@beta=2", "fbeta@beta=2.0@average=weighted", "fbeta_score@weighted@beta=2"], "fbeta@weighted@beta=2"),
        (MULTI, ["recall@none", "recall@None", "recall@average=none"], "recall@none"),
        (MULTI, ["accuracy", "acc"], "accuracy"),
        (MULTI, ["confusion_matrix"], "confusion_matrix"),
    ],
)
def test_canonical_keys(task, spellings, key):
    for s in spellings:
        assert resolve(s, task).key == key, s
    # a plan computes equal keys once
    assert Plan(spellings, task).keys == (key,)


@pytest.mark.parametrize(
    "text, task",
    [
        ("f1", BINARY), ("f1@macro", BINARY), ("precision@threshold=0.25", BINARY), ("fbeta@beta=0.5", BINARY),
        ("fbeta@macro@beta=3@threshold=0.75", BINARY), ("recall@zero_division=1", BINARY), ("tp@threshold=0.3", BINARY),
        ("f1@macro", MULTI), ("fbeta@beta=2@weighted", MULTI), ("recall@none", MULTI), ("precision@micro@zero_division=warn", MULTI),
        ("accuracy", MULTI), ("confusion_matrix", BINARY), ("example_count", BINARY), ("weighted_example_count", MULTI),
    ],
)  # fmt: skip
def test_key_round_trips(text, task):
    m = resolve(text, task)
    again = resolve(m.key, task)
    assert again.key == m.key and type(again) is type(m) and again.p == m.p


def test_plan_keys_keep_request_order():
    plan = Plan(["recall", "f1@macro", "precision", "f1_score@macro", "accuracy"], BINARY)
    assert plan.keys == ("recall", "f1@macro", "precision", "accuracy")


# ---------------------------------------------------------------------------------------------
# errors
def test_unknown_metric_suggests_the_closest_known_name():
    with pytest.raises(ValueError, match=r"unknown metric 'f1_scor' \(did you mean 'f1_score'\?\); every name and alias is in the metrics table"):
        resolve("f1_scor", BINARY)
    with pytest.raises(ValueError) as err:
        resolve("zzzz", BINARY)
    assert "did you mean" not in str(err.value) and "confusion_matrix" not in str(err.value)  # no list of ~170 names


@pytest.mark.parametrize(
    "text, task, match",
    [
        ("f1@macro@micro", MULTI, "positional"),
        ("f1@macro@average=micro", MULTI, "twice"),
        ("accuracy@macro", MULTI, "positional"),
        ("f1@foo=1", BINARY, "foo"),
        ("f1@median", MULTI, "average"),
        ("f1@binary", MULTI, "binary"),
        ("precision@threshold=0.7", MULTI, "threshold"),
        ("accuracy@threshold=0.7", MULTI, "threshold"),
        ("tp", MULTI, "multiclass"),
        ("precision@zero_division=2", BINARY, "zero_division"),
        ("fbeta@beta=-1", BINARY, "beta"),
        ("precision@threshold=nan", BINARY, "threshold"),
    ],
)
def test_bad_metric_parameters(text, task, match):
    with pytest.raises(ValueError, match=match):
        resolve(text, task)


def test_non_string_metric_is_a_type_error():
    with pytest.raises(TypeError):
        resolve(3, BINARY)  # type: ignore[arg-type]


def test_unknown_parameter_lists_accepted_ones():
    with pytest.raises(ValueError) as err:
        resolve("precision@thresh=0.5", BINARY)
    assert "threshold" in str(err.value) and "zero_division" in str(err.value)


# ---------------------------------------------------------------------------------------------
# registry
def test_every_registered_name_resolves_to_its_class():
    for name, cls in REGISTRY.items():
        assert name == cls.name or name in cls.aliases, name


def test_alias_clash_at_class_definition_raises(registry_snapshot):
    with pytest.raises(ValueError, match="'precision'"):

        class Clashing(Metric):
            name = "clashing_metric_for_test"
            aliases = ("precision",)

    with pytest.raises(ValueError, match="'recall'"):

        class Recall2(Metric):
            name = "recall"

    assert REGISTRY["precision"].__name__ == "Precision"
    assert REGISTRY["recall"].__name__ == "Recall"


def test_failed_definition_leaves_no_trace(registry_snapshot):
    with pytest.raises(ValueError):

        class Clashing(Metric):
            name = "clashing_metric_for_test"
            aliases = ("precision",)

    assert "clashing_metric_for_test" not in REGISTRY


def test_same_class_name_from_another_module_is_a_clash(registry_snapshot):
    with pytest.raises(ValueError, match="recall"):
        type("Recall", (Metric,), {"name": "recall", "__module__": "some_plugin"})


def test_new_metric_registers_and_resolves(registry_snapshot):
    class PositiveRate(Metric):
        """Fraction of examples (by count) in the batch: a toy metric for this test."""

        name = "toy_example_fraction"
        aliases = ("toy_fraction",)
        tasks = ("binary",)

        def compute(self, states):
            return float(states["example_count"]["count"] > 0)

    assert REGISTRY["toy_fraction"] is PositiveRate
    mc = MetricCollection("toy_fraction", "f1")
    mc.update([1, 0], y_score=[0.9, 0.1])
    assert mc.compute()["toy_example_fraction"] == 1.0


# ---------------------------------------------------------------------------------------------
# state sharing
def _kinds(plan: Plan) -> list[str]:
    return [cls.kind for cls, _ in plan.state_types]


def test_precision_recall_f1_accuracy_share_one_binary_state():
    mc = MetricCollection("precision", "recall", "f1", "accuracy", "fbeta@beta=2", "tp", "confusion_matrix")
    assert _kinds(mc.plan) == ["example_count", "binary_confusion"]
    assert mc.plan.state_types[1][1].thresholds == (0.5,)
    assert len(mc.states) == 2


def test_two_thresholds_share_one_binary_state():
    mc = MetricCollection("precision@threshold=0.3", "recall@threshold=0.7", "f1@threshold=0.3", threshold_rule=">")
    assert _kinds(mc.plan) == ["example_count", "binary_confusion"]
    layout = mc.plan.state_types[1][1]
    assert layout.thresholds == (0.3, 0.7) and layout.threshold_rule == ">"
    mc.update([1, 0, 1, 0], y_score=[0.7, 0.7, 0.3, 0.31])
    v = mc.compute()
    assert v["precision@threshold=0.3"] == pytest.approx(1 / 3)  # > 0.3: 0.7, 0.7, 0.31
    assert v["recall@threshold=0.7"] == 0.0  # nothing is > 0.7


def test_multiclass_metrics_share_one_confusion_matrix():
    mc = MetricCollection("accuracy", "f1@macro", "precision@none", "recall@weighted", "confusion_matrix", num_classes=4)
    assert _kinds(mc.plan) == ["example_count", "confusion_matrix"]
    assert mc.plan.state_types[1][1].num_classes == 4


def test_example_count_state_is_always_first():
    for plan in (Plan(["f1"], BINARY), Plan(["example_count"], BINARY), Plan(None, MULTI)):
        assert plan.state_types[0][0] is ExampleCountState
    assert _kinds(Plan(["example_count", "weighted_example_count"], BINARY)) == ["example_count"]


def test_default_metrics():
    assert MetricCollection().plan.keys == ("accuracy", "precision", "recall", "f1")
    assert MetricCollection(num_classes=3).plan.keys == ("accuracy", "precision@macro", "recall@macro", "f1@macro", "f1@weighted")


# ---------------------------------------------------------------------------------------------
# repr
def test_repr_is_a_tree_with_every_metric_key():
    mc = MetricCollection("precision@threshold=0.3", "recall", "f1@macro", "fbeta@beta=2", "tp@threshold=0.7", "confusion_matrix")
    mc.update([1, 0, 1], y_score=[0.8, 0.4, 0.2])
    text = repr(mc)
    lines = text.splitlines()
    assert lines[0].startswith("MetricCollection(")
    assert any(line.startswith(("├──", "└──")) for line in lines[1:])
    assert all(line.startswith(("├", "│", "└", " ")) for line in lines[1:])
    for key in mc.plan.keys:
        assert any(key in line and ("├──" in line or "└──" in line) for line in lines), key
    for s in mc.states:
        assert s.kind in text


def test_repr_of_an_empty_collection_does_not_fail():
    for mc in (MetricCollection(), MetricCollection(num_classes=3), MetricCollection("recall@none", num_classes=3)):
        text = repr(mc)
        for key in mc.plan.keys:
            assert key in text


# ---------------------------------------------------------------------------------------------
# size parameters have documented maxima (mergeable_metrics._util.limits): nothing allocates or loops without bound
@pytest.mark.parametrize(
    "metric, task, parameter, maximum",
    [
        ("ece@n_bins=1000000000", BINARY, "n_bins", 100_000),
        ("reliability_diagram@n_bins=100001", BINARY, "n_bins", 100_000),
        ("top_k_accuracy@k=100000000", MULTI, "k", 10_000),
        ("top_k_accuracy@k=2@max_k=10001", MULTI, "max_k", 10_000),
        ("roc_auc@capacity=100000000", BINARY, "capacity", 1 << 26),
        ("fbeta@beta=1e308", BINARY, "beta", "1e+100"),
    ],
)
def test_size_parameters_above_their_maximum_raise_naming_parameter_and_maximum(metric, task, parameter, maximum):
    with pytest.raises(ValueError, match=rf"{parameter} must be at most {re.escape(str(maximum))}, got"):
        resolve(metric, task)


def test_size_parameters_at_their_maximum_are_accepted():
    from mergeable_metrics._util import limits

    assert resolve(f"ece@n_bins={limits.MAX_N_BINS}", BINARY).p["n_bins"] == limits.MAX_N_BINS
    assert resolve(f"top_k_accuracy@k={limits.MAX_TOP_K}", MULTI).p["k"] == limits.MAX_TOP_K
    assert resolve("fbeta@beta=1e100", BINARY).p["beta"] == 1e100
    assert resolve("fbeta@beta=inf", BINARY).p["beta"] == float("inf")


def test_fbeta_with_huge_beta_is_a_value_error_not_an_overflow():
    mc = MetricCollection("fbeta@beta=1e100")
    mc.update([1, 0, 1, 1], y_score=[0.9, 0.8, 0.2, 0.7])
    assert mc.compute()["fbeta@beta=1e+100"] == pytest.approx(2 / 3)  # the limit: recall (2 of 3 positives)
    with pytest.raises(ValueError, match="fbeta"):
        MetricCollection("fbeta@beta=1e308")


def test_num_classes_and_thresholds_above_their_maximum_raise():
    from mergeable_metrics.states.base import BinaryConfusionLayout

    with pytest.raises(ValueError, match=r"num_classes must be at most 10000, got 1000000"):
        Task(num_classes=10**6)
    with pytest.raises(ValueError, match=r"num_classes must be at most 10000"):
        Task(num_classes=10**6, kind="multilabel")
    with pytest.raises(ValueError, match=r"number of distinct thresholds must be at most 10000, got 10001"):
        BinaryConfusionLayout(tuple(np.linspace(0, 1, 10_001)))
    assert len(BinaryConfusionLayout(tuple(np.linspace(0, 1, 10_000))).thresholds) == 10_000


@pytest.mark.parametrize(
    "build, message",
    [
        ("ConfusionMatrixLayout(float('inf'))", "num_classes must be an integer >= 2, got inf"),
        ("ConfusionMatrixLayout(10**30)", "num_classes must be at most 10000"),
        ("BinaryConfusionLayout((10**400,))", "thresholds must be numbers within the float64 range"),
        ("TopKLayout(3, float('nan'))", "max_k must be an integer >= 1, got nan"),
        ("TopKLayout(3, 10**9)", "max_k must be at most 10000"),
        ("CalibrationBinsLayout((10**12,))", "n_bins must be at most 100000"),
        ("MultilabelLayout(float('inf'))", "num_labels must be an integer >= 1, got inf"),
        ("MultilabelLayout(3, betas=(10**400,))", "betas must be numbers within the float64 range"),
    ],
)
def test_crafted_layouts_raise_value_error_not_overflow_error(build, message):
    from mergeable_metrics.metrics.calibration import CalibrationBinsLayout  # noqa: F401
    from mergeable_metrics.metrics.multilabel import MultilabelLayout  # noqa: F401
    from mergeable_metrics.states.base import BinaryConfusionLayout, ConfusionMatrixLayout  # noqa: F401
    from mergeable_metrics.metrics.topk import TopKLayout  # noqa: F401

    with pytest.raises(ValueError, match=re.escape(message)):
        eval(build)


# -- issue 28 item 7: a key carries every non-default parameter, also ones __init__ takes -------
Y = [1, 0, 1, 1, 0, 0, 1, 0]
S = [0.9, 0.8, 0.3, 0.7, 0.6, 0.1, 0.55, 0.4]
# at threshold 0.5: predicted 1 for .9 .8 .7 .6 .55 -> tp 3 (.9 .7 .55), fp 2 (.8 .6), fn 1 (.3)


def _cost_metric(style):
    """A user metric ``cost_<style>``: ``fp_cost * fp + fn`` (binary, at the task's threshold),
    its ``fp_cost`` taken in ``__init__`` (a keyword, or out of ``**kw``) and not in ``params``."""

    class Cost(Metric):
        name = f"cost_{style}_for_test"
        tasks = ("binary",)
        bounds = (0.0, float("inf"))
        higher_is_better = False

        if style == "keyword":

            def __init__(self, task, fp_cost=1, **params):
                super().__init__(task, **params)
                self.fp_cost = float(fp_cost)

        else:

            def __init__(self, task, **params):
                self.fp_cost = float(params.pop("fp_cost", 1))
                super().__init__(task, **params)

        def requires(self):
            return [(BinaryConfusionState, self.task.threshold)]

        def compute(self, states):
            c = states["binary_confusion"].confusion_matrix(self.task.threshold)
            return self.fp_cost * float(c[0, 1]) + float(c[1, 0])

    return Cost


@pytest.mark.parametrize("style", ["keyword", "kwargs"])
def test_parameters_a_metric_takes_in_init_are_in_its_key(registry_snapshot, style):
    cls = _cost_metric(style)
    name = cls.name
    mc = MetricCollection(f"{name}@fp_cost=2", f"{name}@fp_cost=3", name)
    mc.update(Y, y_score=S)
    got = mc.compute()
    # hand counts: fp 2, fn 1 -> 2*2+1, 3*2+1, 1*2+1; three keys, none collapsed
    assert dict(got) == {f"{name}@fp_cost=2": 5.0, f"{name}@fp_cost=3": 7.0, name: 3.0}
    assert [m.key for m in mc.plan.metrics] == [f"{name}@fp_cost=2", f"{name}@fp_cost=3", name]
    # the key resolves back to the same metric (results, codec and comparisons re-read keys)
    again = resolve(f"{name}@fp_cost=3", Task())
    assert again.resolved_key == f"{name}@fp_cost=3" and again.fp_cost == 3.0
    # the default is no parameter: `@fp_cost=1` with the keyword default is the bare key
    if style == "keyword":
        assert resolve(f"{name}@fp_cost=1", Task()).resolved_key == name


def test_two_requested_metrics_never_share_a_key_silently(registry_snapshot):
    class Quiet(_cost_metric("keyword")):
        """A metric whose own key leaves its parameter out (test only)."""

        name = "quiet_cost_for_test"

        @property
        def resolved_key(self):
            return self.name

    with pytest.raises(ValueError, match=r"'quiet_cost_for_test@fp_cost=2'.*'quiet_cost_for_test@fp_cost=3'.*share the result key 'quiet_cost_for_test'"):
        MetricCollection("quiet_cost_for_test@fp_cost=2", "quiet_cost_for_test@fp_cost=3")
    # the same metric twice is one metric, as before
    mc = MetricCollection("quiet_cost_for_test@fp_cost=2", "quiet_cost_for_test@fp_cost=2", "accuracy", "accuracy")
    assert [m.key for m in mc.plan.metrics] == ["quiet_cost_for_test", "accuracy"]
