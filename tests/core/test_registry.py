"""Registry and metric strings for every metric family (issue 3)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import mergeable_metrics
import mergeable_metrics.metrics
from mergeable_metrics import Metric, MetricCollection
from mergeable_metrics.engine import Plan
from mergeable_metrics.metrics import Task, resolve
from mergeable_metrics.metrics.base import REGISTRY
from mergeable_metrics.metrics.registry_table import markdown_table, metric_classes

ROOT = Path(__file__).resolve().parents[2]
TASKS = {"binary": Task(), "multiclass": Task(num_classes=3), "multilabel": Task(kind="multilabel", num_classes=3), "regression": Task(kind="regression")}


def _build(cls, task):
    """A metric with default parameters, or its positional parameter at 0.5 when it needs one."""
    try:
        return cls(task)
    except ValueError:
        return cls(task, **{cls.positional: 0.5})


@pytest.mark.parametrize("cls", metric_classes(), ids=lambda c: c.name)
def test_every_metric_declares_its_metadata_and_resolves_by_every_name(cls):
    info = cls.info()
    assert info["name"] == cls.name and isinstance(info["aliases"], list)
    assert set(info["tasks"]) <= set(TASKS) and info["tasks"]
    lo, hi = cls.bounds
    assert lo <= hi and cls.higher_is_better in (True, False, None) and isinstance(cls.exact, bool)
    assert cls.sklearn is None or cls.sklearn.startswith(("sklearn.", "1 - sklearn."))
    assert (cls.__doc__ or "").strip(), "docstring"
    assert "full_name" in cls.__dict__ and cls.full_name.strip() and info["full_name"] == cls.full_name, "an explicit full_name"
    for kind in info["tasks"]:
        assert "?" not in info["states"][kind]
        m = _build(cls, TASKS[kind])
        assert m.requires() and isinstance(m.needs(), frozenset)
        for name in (cls.name, *cls.aliases):
            assert REGISTRY[name] is cls
            text = m.key.replace(cls.name, name, 1)
            again = resolve(text, TASKS[kind])
            assert type(again) is cls and again.key == m.key


def test_aliases_are_unique_and_a_clash_raises_at_definition():
    names = [n for c in metric_classes() for n in (c.name, *c.aliases)]
    assert len(names) == len(set(names))
    with pytest.raises(ValueError, match=r"metric name or alias 'top_k' of \S*Clash is already used by \S*TopKAccuracy"):

        class Clash(Metric):  # noqa: F811
            name = "clash_metric"
            aliases = ("top_k",)


@pytest.mark.parametrize(
    "text,task,key",
    [
        ("f1@macro", TASKS["multiclass"], "f1@macro"),
        ("fbeta@beta=2", TASKS["binary"], "fbeta@beta=2"),
        ("precision@threshold=0.7", TASKS["binary"], "precision@threshold=0.7"),
        ("top_k_accuracy@k=5", Task(num_classes=10), "top_k_accuracy@k=5"),
        ("balanced_accuracy@adjusted=true", TASKS["binary"], "balanced_accuracy@adjusted=true"),
        ("kappa@quadratic", TASKS["multiclass"], "cohen_kappa@quadratic"),
        ("r2_score@force_finite=False", TASKS["regression"], "r2@force_finite=false"),
        ("jaccard@none", TASKS["multiclass"], "iou@none"),
        ("ECE@n_bins=15", TASKS["binary"], "ece@n_bins=15"),
        ("f1@samples", TASKS["multilabel"], "f1@samples"),
        ("mean_loss", TASKS["regression"], "mean_measure"),
    ],
)
def test_metric_strings(text, task, key):
    assert resolve(text, task).key == key


@pytest.mark.parametrize(
    "text,task,message",
    [
        ("top_k_accuracy@k=0", Task(num_classes=3), "k must be an integer >= 1"),
        ("cohen_kappa@cubic", Task(num_classes=3), "weights must be none, linear or quadratic"),
        ("ece@n_bins=0", Task(), "n_bins must be an integer >= 1"),
        ("log_loss@eps=0.7", Task(), r"eps must be in \(0, 0.5\)"),
        ("specificity", Task(num_classes=3), "not defined for multiclass tasks"),
        ("dice@samples", Task(kind="multilabel", num_classes=3), "average='samples' is not supported"),
        ("multilabel_confusion_matrix@samplewise=maybe", Task(kind="multilabel", num_classes=3), "samplewise must be true or false"),
        ("mse@foo=1", Task(kind="regression"), r"unknown parameter\(s\) \['foo'\]"),
    ],
)
def test_bad_metric_strings_raise_at_construction(text, task, message):
    with pytest.raises(ValueError, match=message):
        resolve(text, task)


def test_shared_states_are_computed_once_and_the_tree_shows_values_and_states():
    plan = Plan(["precision", "recall", "f1", "mcc", "cohen_kappa", "iou", "dice", "specificity", "balanced_accuracy", "npv"], Task())
    assert [cls.kind for cls, _ in plan.state_types] == ["example_count", "binary_confusion"]
    plan = Plan(["log_loss", "brier_score", "log_loss@eps=1e-07", "top_k_accuracy@k=1", "top_k_accuracy@k=3"], Task(num_classes=4))
    assert [cls.kind for cls, _ in plan.state_types] == ["example_count", "probability_sums", "top_k"]
    mc = MetricCollection("f1@macro", "miou", "top_k_accuracy@k=2", "log_loss", num_classes=3)
    mc.update([0, 1, 2, 2], y_score=np.array([[0.6, 0.3, 0.1], [0.2, 0.7, 0.1], [0.1, 0.2, 0.7], [0.5, 0.1, 0.4]]))
    tree = repr(mc)
    assert tree.splitlines()[0].startswith("MetricCollection(task=multiclass, num_classes=3")
    for line in ("├── states", "confusion_matrix ConfusionMatrixLayout(num_classes=3)", "top_k TopKLayout(num_classes=3, max_k=2)",
                 "probability_sums", "└── metrics", "f1@macro: value=0.777778 | tp=[1, 1, 1] | fp=[1, 0, 0] | fn=[0, 0, 1]  [confusion_matrix]",
                 "top_k_accuracy@k=2: value=1.0 | n=4  [top_k]"):  # fmt: skip
        assert line in tree, line


def test_the_docs_metrics_table_lists_every_registered_metric():
    """docs/metrics.md renders the registry's table at build time; the table lists every metric
    class of the package's metric modules (found here by walking the modules, not the registry)."""
    import importlib
    import inspect
    import pkgutil

    import mergeable_metrics.metrics as families

    assert "```{metrics-table}\n```" in (ROOT / "docs" / "metrics.md").read_text()
    defined = set()
    for mod in pkgutil.iter_modules(families.__path__):
        module = importlib.import_module(f"mergeable_metrics.metrics.{mod.name}")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, Metric) and cls.__module__ == module.__name__ and REGISTRY.get(getattr(cls, "name", None)) is cls:
                defined.add(cls.name)
    table = markdown_table()
    listed = set(re.findall(r"^\| `([a-z0-9_]+)`", table, flags=re.M))
    assert len(defined) > 50 and defined == listed == {c.name for c in metric_classes()}, sorted(defined ^ listed)
    assert table.splitlines()[0] == "| name (aliases) | full name | task | state | exact | scikit-learn equivalent |"
    assert "| `f1` (`f1_score`) | F1 score |" in table and "`roc_auc_score`" in table


def test_the_extension_tier_exports_the_new_names():
    for name in ("RegressionMomentsState", "TopKState", "ProbabilitySumsState", "CalibrationBinsState", "MultilabelState",
                 "MeanMeasureState", "register_format", "InputFormat", "FORMATS"):  # fmt: skip
        assert hasattr(mergeable_metrics.metrics, name), name  # the extension tier


# -- newcomer report: scikit-learn's function names, and suggestions that name the same metric ---
def test_every_scikit_learn_score_loss_and_error_function_name_is_an_alias_of_its_metric():
    """``f1_score`` was an alias but ``precision_score`` suggested 'average_precision_score'
    (another metric): every bare ``sklearn.metrics.*_score / *_loss / *_error`` (and
    ``matthews_corrcoef``) named as a metric's scikit-learn equivalent resolves to that metric."""
    by_function: dict[str, set[str]] = {}
    for cls in metric_classes():
        function = (cls.sklearn or "").removeprefix("sklearn.metrics.")
        if re.fullmatch(r"[a-z0-9_]+_(score|loss|error)|matthews_corrcoef", function):
            by_function.setdefault(function, set()).add(cls.name)
    assert {"precision_score", "recall_score", "accuracy_score", "f1_score", "roc_auc_score", "log_loss", "brier_score_loss"} <= set(by_function)
    for function, names in by_function.items():
        assert function in REGISTRY and REGISTRY[function].name in names, function
    assert REGISTRY["precision_score"].name == "precision" and REGISTRY["accuracy_score"].name == "accuracy"
    assert REGISTRY["recall_score"].name == "recall" and REGISTRY["mean_squared_error"].name == "mse"
    # the aliases compute what scikit-learn's functions compute
    from sklearn.metrics import accuracy_score, precision_score, recall_score

    y, p = [0, 1, 1, 0, 1, 1, 0], [0, 1, 0, 1, 1, 1, 1]
    m = MetricCollection("precision_score", "recall_score", "accuracy_score")
    m.update(y, y_pred=p)
    got = m.compute()
    assert got["precision_score"] == pytest.approx(precision_score(y, p))
    assert got["recall_score"] == pytest.approx(recall_score(y, p))
    assert got["accuracy_score"] == pytest.approx(accuracy_score(y, p))


@pytest.mark.parametrize(
    "text, suggestion",
    [("specificity_score", "specificity"), ("npv_score", "npv"), ("mcc_score", "mcc"), ("ece_loss", "ece"), ("precision_scor", "precision_score")],
)
def test_a_suggestion_prefers_the_name_without_a_score_loss_or_error_suffix(text, suggestion):
    with pytest.raises(ValueError, match=rf"unknown metric '{text}' \(did you mean '{suggestion}'\?\)"):
        resolve(text, Task())


# Other libraries' names for the same quantity (newcomer report, issue 28 follow-up): the area under
# the precision-recall curve is scikit-learn's average_precision_score, Spark's "areaUnderPR",
# XGBoost's / H2O's "aucpr", MLflow's "precision_recall_auc", TFMA's "auc_precision_recall"; the
# ROC area is Spark's "areaUnderROC". Before, "auc_pr" suggested 'auc' (the ROC area), "areaUnderROC"
# suggested 'mean_error' and Spark's "weightedPrecision" suggested 'average_precision'.
@pytest.mark.parametrize(
    "text, suggestion, task",
    [
        ("auc_pr", "average_precision", "binary"),
        ("pr_auc", "average_precision", "binary"),
        ("aucpr", "average_precision", "binary"),
        ("AUPRC", "average_precision", "binary"),
        ("areaUnderPR", "average_precision", "binary"),
        ("precision_recall_auc", "average_precision", "binary"),
        ("auc_precision_recall", "average_precision", "binary"),
        ("pr_auc_score", "average_precision", "binary"),
        ("areaUnderROC", "roc_auc", "binary"),
        ("auc_roc", "roc_auc", "binary"),
        ("BinaryAUROC", "auroc", "binary"),
        ("BinaryAveragePrecision", "average_precision", "binary"),
        ("MulticlassMatthewsCorrCoef", "matthews_corrcoef", "multiclass"),
        ("weightedPrecision", "precision@weighted", "multiclass"),
        ("weightedRecall", "recall@weighted", "multiclass"),
        ("weightedFMeasure", "f1@weighted", "multiclass"),
        ("f1_macro", "f1@macro", "multiclass"),
        ("precision_weighted", "precision@weighted", "multiclass"),
        ("roc_auc_ovr", "roc_auc@multi_class=ovr", "multiclass"),
        ("roc_auc_ovo_weighted", "roc_auc@weighted@multi_class=ovo", "multiclass"),
        ("neg_log_loss", "log_loss", "binary"),
        ("neg_root_mean_squared_error", "root_mean_squared_error", "regression"),
        ("binary_logloss", "log_loss", "binary"),
        ("mlogloss", "log_loss", "multiclass"),
        ("meanAbsoluteError", "mean_absolute_error", "regression"),
        ("var", "explained_variance", "regression"),
        ("binary_accuracy", "accuracy", "binary"),
    ],
)
def test_another_librarys_name_suggests_ours_without_being_accepted(text, suggestion, task):
    with pytest.raises(ValueError, match=rf"unknown metric '{re.escape(text)}' \(did you mean '{re.escape(suggestion)}'\?"):
        resolve(text, TASKS[task])
    # the suggestion itself is a metric string that resolves for the task
    assert resolve(suggestion, TASKS[task]) is not None


def test_the_pr_area_suggestion_names_the_trapezoid_variant_too():
    with pytest.raises(ValueError) as e:
        resolve("auc_pr", Task())
    msg = str(e.value)
    assert "'average_precision'" in msg and "'pr_auc_trapezoid'" in msg and "'auc'" not in msg


@pytest.mark.parametrize(
    "metrics, kw, message",
    [
        (("f1",), dict(average="macro"), r"^MetricCollection: average='macro' is read as a metric named 'average'.*'f1@macro' or 'f1@average=macro'"),
        (("f1",), dict(threshold_="0.3"), None),  # not a parameter name: the display-name reading stands (unknown metric '0.3')
        (("f1", "roc_auc"), dict(max_fpr="0.5"), r"max_fpr='0.5' is read as a metric named 'max_fpr'.*write 'roc_auc@max_fpr=0.5'"),
        (("f1",), dict(k="3"), r"k='3' is read as a metric named 'k'"),
    ],
)
def test_a_metric_parameter_given_as_a_keyword_says_it_is_read_as_a_display_name(metrics, kw, message):
    with pytest.raises(ValueError) as e:
        MetricCollection(*metrics, num_classes=3, **kw)
    if message is None:
        assert "is read as a metric named" not in str(e.value)
    else:
        assert re.search(message, str(e.value)), str(e.value)
        assert "f1@max_fpr" not in str(e.value)  # only metrics that take the parameter are suggested


@pytest.mark.filterwarnings("ignore::mergeable_metrics.UndefinedMetricWarning")
def test_a_display_name_that_is_a_parameter_name_still_works_when_its_value_is_a_metric():
    assert list(MetricCollection("f1", average="accuracy", num_classes=3).compute()) == ["f1@macro", "average"]
