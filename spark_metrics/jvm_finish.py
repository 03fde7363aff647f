"""The finish of the JVM path in the JVM: metric values computed in Java from the states' bytes
(``mergeablemetrics.Finish``), bit for bit core's values, so ``metric_columns`` runs no Python on the executors
for the count-based metrics, ``roc_auc``, ``average_precision``, ``log_loss``, ``brier_score`` and the regression
metrics of the moments state, and the documented SQL names (:func:`register_sql_functions`).

:func:`metric_finish` describes a metric of an evaluation for ``Finish.value`` (None where the finish is not
ported: those metrics keep core's finish in a Python UDF). Ported: ``example_count``; ``precision``, ``recall``,
``f1``, ``fbeta`` (binary, and ``micro`` / ``macro`` / ``weighted`` averages, without ``labels=`` or
``ignore_index``), ``accuracy``, ``balanced_accuracy``; ``specificity``, ``npv``, ``fpr``, ``fnr`` (binary);
``roc_auc`` and ``average_precision`` (binary, ``pos_label=1``, no ``max_fpr``; from the score distribution),
``log_loss`` and ``brier_score`` (binary, and multiclass from probability rows); single-output regression ``mse``, ``rmse``, ``mae``, ``mape``, ``r2``,
``explained_variance`` (``multioutput`` the default), ``mean_error``, ``max_error``, ``pearson``, ``mean_label``,
``mean_prediction`` (``mergeablemetrics.RegressionFinish``: core's exact rationals, rounded once). ``Finish.value`` returns null (None) where it cannot give core's value
bit for bit: ``average_precision`` of a compressed score distribution (more distinct scores than its capacity:
core's estimate calls numpy's ``log1p``), and ``roc_auc`` of one whose value lies within numpy's rounding error
of its certified bounds (see ``mergeablemetrics.RankingFinish``).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from mergeable_metrics.engine import Evaluation
from mergeable_metrics.spark import jvm

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column

#: the name of the JVM finish function, ``mm_metric(metric, states)``
FINISH_FUNCTION = "mm_metric"
_PRF = {"precision": "p", "recall": "r", "f1": "f", "fbeta": "f"}
_RATES = {"specificity": ("tn", "tn", "fp"), "npv": ("tn", "tn", "fn"), "fpr": ("fp", "fp", "tn"), "fnr": ("fn", "fn", "tp")}


def _fill(zero_division: Any) -> float:
    """The value ``_divide`` puts where a denominator is 0."""
    return math.nan if zero_division == "nan" else 0.0 if zero_division == "warn" else float(zero_division)


def metric_finish(ev: Evaluation, metric: Any) -> str | None:
    """The ``Finish.value`` description of ``metric`` (one of ``ev.plan.metrics``), or None (not ported)."""
    types = ev.plan.state_types
    kinds = [cls.kind for cls, _ in types]
    name, p, task = metric.name, metric.p, metric.task
    if name == "example_count":
        return f"count,{kinds.index('example_count')},-1,0" if kinds.count("example_count") == 1 else None
    if task.kind == "binary" and name in _FLOAT_FINISH:
        return _float_finish(types, kinds, metric)
    if task.kind == "multiclass" and name in ("log_loss", "brier_score"):  # probability rows (PROBABILITY_ROW_MODE)
        return _float_finish(types, kinds, metric)
    if task.kind == "regression":
        return _regression_finish(types, kinds, metric)
    if task.kind not in ("binary", "multiclass") or getattr(metric, "dependencies", None) or task.ignore_index is not None:
        return None
    if task.kind == "binary":
        if kinds.count("binary_confusion") != 1:
            return None
        i = kinds.index("binary_confusion")
        try:
            j = types[i][1].index(p["threshold"])
        except KeyError:
            return None
        k = 2
    else:
        if kinds.count("confusion_matrix") != 1:
            return None
        i, j, k = kinds.index("confusion_matrix"), -1, task.num_classes
    head = f"{i},{j},{k}"
    if name in _PRF:
        if p.get("labels") is not None or p["average"] not in ("binary", "micro", "macro", "weighted"):
            return None
        which = _PRF[name]
        b2 = 1.0
        if name == "fbeta":
            beta = float(p["beta"])
            if math.isinf(beta):
                which = "r"
            else:
                b2 = beta**2
        return f"prf,{head},{which},{p['average']},{_fill(p['zero_division'])!r},{b2!r}"
    if name == "accuracy":
        return f"acc,{head}"
    if name == "balanced_accuracy":
        return f"bacc,{head},{'1' if p['adjusted'] else '0'}"
    if name in _RATES and task.kind == "binary":
        num, d1, d2 = _RATES[name]
        return f"rate,{head},{num},{d1},{d2},{_fill(p['zero_division'])!r}"
    return None


#: the metrics of the float states finished in Java (mergeablemetrics.RankingFinish), binary tasks
_FLOAT_FINISH = {"roc_auc": "score_distribution", "average_precision": "score_distribution", "log_loss": "probability_sums", "brier_score": "probability_sums"}


def _float_finish(types: Any, kinds: list[str], metric: Any) -> str | None:
    """``roc,i`` / ``ap,i`` (score distribution, ``pos_label=1``, no ``max_fpr``), ``ll,i,e`` and ``brier,i,-1,0,scale``."""
    name, p = metric.name, metric.p
    kind = _FLOAT_FINISH[name]
    if kinds.count(kind) != 1 or getattr(metric, "dependencies", None):
        return None
    i = kinds.index(kind)
    if kind == "score_distribution":
        if p.get("pos_label", 1) != 1 or p.get("max_fpr") is not None:
            return None
        return f"{'roc' if name == 'roc_auc' else 'ap'},{i},-1,0"
    layout = types[i][1]
    if getattr(layout, "multilabel", False):
        return None  # binary and multiclass layouts: the sums over the weight (multiclass: the state's K-class sums)
    if name == "log_loss":
        return f"ll,{i},{layout.eps.index(p['eps'])},0"
    return f"brier,{i},-1,0,{float(metric.scale(layout))!r}"


#: the regression metrics finished in Java (mergeablemetrics.RegressionFinish): core's name -> Java's
_REGRESSION_FINISH = {
    "mse": "mse",
    "rmse": "rmse",
    "mae": "mae",
    "mape": "mape",
    "r2": "r2",
    "explained_variance": "ev",
    "mean_error": "me",
    "max_error": "max",
    "pearson": "pearson",
    "mean_label": "mean_y",
    "mean_prediction": "mean_p",
}


#: the regression-term metrics finished in Java (mergeablemetrics.TermsFinish): the mean of one term
_TERMS_FINISH = frozenset({"msle", "rmsle", "mean_pinball_loss", "mean_tweedie_deviance", "mean_poisson_deviance", "mean_gamma_deviance"})


def _terms_finish(types: Any, kinds: list[str], metric: Any) -> str | None:
    """``term,i,-1,0,j,sqrt,averaged``: the mean of term ``j`` of a single-output regression-terms state."""
    if kinds.count("regression_terms") != 1 or getattr(metric, "dependencies", None):
        return None
    i = kinds.index("regression_terms")
    layout = types[i][1]
    if layout.num_outputs is not None:
        return None
    averaged = "multioutput" in metric.params
    if averaged and not (isinstance(metric.p["multioutput"], str) and metric.p["multioutput"] == "uniform_average"):
        return None
    return f"term,{i},-1,0,{layout.terms.index(metric.term())},{1 if metric.name == 'rmsle' else 0},{1 if averaged else 0}"


def _regression_finish(types: Any, kinds: list[str], metric: Any) -> str | None:
    """``reg,i,-1,0,metric,force_finite,averaged`` of a single-output regression metric (``multioutput`` the
    default ``uniform_average``: a metric with that parameter goes through core's ``combine_outputs``)."""
    if metric.name in _TERMS_FINISH:
        return _terms_finish(types, kinds, metric)
    code = _REGRESSION_FINISH.get(metric.name)
    if code is None or kinds.count("regression_moments") != 1 or getattr(metric, "dependencies", None):
        return None
    i = kinds.index("regression_moments")
    if types[i][1].num_outputs is not None:
        return None
    averaged = "multioutput" in metric.params
    if averaged and not (isinstance(metric.p["multioutput"], str) and metric.p["multioutput"] == "uniform_average"):
        return None  # output weights: np.average(v, weights=w) is (v * w) / w, not v
    force_finite = metric.p.get("force_finite", True)
    return f"reg,{i},-1,0,{code},{1 if force_finite else 0},{1 if averaged else 0}"


def _invoke(spark: Any, method: str, *args: str) -> None:
    """Call ``Registrar.<method>(session, *args)`` (static, all String arguments) in a classic session."""
    cls = jvm._registrar(spark)
    if cls is None:
        raise RuntimeError(jvm.NO_JDK)
    gw = spark.sparkContext._gateway
    types = gw.new_array(gw.jvm.java.lang.Class, 1 + len(args))
    types[0] = gw.jvm.java.lang.Class.forName("org.apache.spark.sql.SparkSession")
    for n in range(len(args)):
        types[1 + n] = gw.jvm.java.lang.Class.forName("java.lang.String")
    values = gw.new_array(gw.jvm.java.lang.Object, 1 + len(args))
    values[0] = spark._jsparkSession
    for n, a in enumerate(args):
        values[1 + n] = a
    cls.getMethod(method, types).invoke(None, values)


_ready: set = set()


def finish_column(spark: Any, metric: str, states: "Column") -> "Column":
    """``mm_metric(metric, states)``: the value (double) of a :func:`metric_finish` description."""
    from pyspark.sql import functions as F

    key = (jvm._session_key(spark), FINISH_FUNCTION)
    if key not in _ready:
        if jvm.is_connect(spark):
            from pyspark.sql.types import DoubleType

            if not jvm._connect_ready(spark):
                raise RuntimeError(jvm.NO_JDK)
            spark.udf.registerJavaFunction(FINISH_FUNCTION, "mergeablemetrics.FinishUDF", DoubleType())
        else:
            _invoke(spark, "registerFinish", FINISH_FUNCTION)
        _ready.add(key)
    return F.call_function(FINISH_FUNCTION, F.lit(metric), states)


#: the SQL names :func:`register_sql_functions` registers: name -> metric string (binary task; the count metrics
#: predict positive where ``score >= 0.5``); each takes ``(label, score)`` or ``(label, score, weight)``
SQL_FUNCTIONS = {
    "mm_accuracy": "accuracy",
    "mm_precision": "precision",
    "mm_recall": "recall",
    "mm_f1": "f1",
    "mm_roc_auc": "roc_auc",
    "mm_average_precision": "average_precision",
    "mm_log_loss": "log_loss",
    "mm_brier_score": "brier_score",
}
#: the SQL names of regression metrics (task ``regression``): name -> metric string; each takes
#: ``(target, prediction)`` or ``(target, prediction, weight)``
SQL_REGRESSION_FUNCTIONS = {
    "mm_r2": "r2",
    "mm_mse": "mse",
    "mm_rmse": "rmse",
    "mm_mae": "mae",
    "mm_mape": "mape",
    "mm_explained_variance": "explained_variance",
    "mm_max_error": "max_error",
    "mm_pearson": "pearson",
    "mm_msle": "msle",
    "mm_rmsle": "rmsle",
    "mm_mean_poisson_deviance": "mean_poisson_deviance",
    "mm_mean_gamma_deviance": "mean_gamma_deviance",
}
#: the SQL names of multiclass metrics, registered by ``register_sql_functions(spark, num_classes=K)``: name ->
#: (metric string, what the second argument holds): ``"probabilities"`` an ``array<double>`` of the K class
#: probabilities of each row (checked as core checks them), ``"predictions"`` the predicted class ids in [0, K)
SQL_MULTICLASS_FUNCTIONS = {
    "mm_log_loss_multiclass": ("log_loss", "probabilities"),
    "mm_brier_score_multiclass": ("brier_score", "probabilities"),
    "mm_accuracy_multiclass": ("accuracy", "predictions"),
    "mm_balanced_accuracy": ("balanced_accuracy", "predictions"),
    "mm_f1_macro": ("f1@macro", "predictions"),
    "mm_f1_micro": ("f1@micro", "predictions"),
    "mm_f1_weighted": ("f1@weighted", "predictions"),
    "mm_precision_macro": ("precision@macro", "predictions"),
    "mm_recall_macro": ("recall@macro", "predictions"),
}
#: the SQL names returning a state (its finish stays in Python: :func:`finish_sql_state`)
SQL_STATE_FUNCTIONS = {"mm_roc_auc_state": "roc_auc", "mm_average_precision_state": "average_precision"}


def _sql_evaluation(metric: str, weighted: bool = False, task: str | None = None) -> Evaluation:
    return Evaluation(label_col="label", score_col="score", metrics=[metric], weight_col="weight" if weighted else None, task=task)


def _sql_multiclass_evaluation(metric: str, reads: str, num_classes: int, weighted: bool) -> Evaluation:
    column = {"score_col": "score"} if reads == "probabilities" else {"prediction_col": "score"}
    return Evaluation(label_col="label", metrics=[metric], weight_col="weight" if weighted else None, task="multiclass", num_classes=num_classes, **column)


def register_sql_functions(spark: Any, num_classes: int | None = None, tweedie_power: float | None = None) -> list[str]:
    """Register the SQL aggregate functions of the JVM path in a classic session; returns their names.

    * ``mm_accuracy(label, score[, weight])``, ``mm_precision``, ``mm_recall``, ``mm_f1`` (labels 0/1, a
      positive prediction where ``score >= 0.5``; a 0/1 prediction column works as the score),
      ``mm_roc_auc``, ``mm_average_precision`` (scores), ``mm_log_loss``, ``mm_brier_score``
      (probabilities of label 1): the binary metric's value, folded and finished in the JVM, bit for bit
      core's value (NaN where core's is undefined; null only for ``mm_average_precision``, and in rare
      cases ``mm_roc_auc``, of a group with more distinct scores than the state's capacity, 40,000:
      see :func:`metric_finish`);
    * ``mm_r2(target, prediction[, weight])``, ``mm_mse``, ``mm_rmse``, ``mm_mae``, ``mm_mape``,
      ``mm_explained_variance``, ``mm_max_error``, ``mm_pearson``: the regression metric (any finite targets and
      predictions), folded and finished in the JVM, bit for bit core's value; ``mm_msle``, ``mm_rmsle``,
      ``mm_mean_poisson_deviance``, ``mm_mean_gamma_deviance`` likewise (NaN for a group with a row outside the
      metric's domain, as core);
    * with ``tweedie_power=P``, ``mm_mean_tweedie_deviance(target, prediction[, weight])``: the Tweedie deviance of
      power ``P`` (any power scikit-learn accepts: ``P <= 0`` or ``P >= 1``), folded and finished in the JVM, bit for bit
      core's value (its powers are fdlibm's ``pow`` on both sides); a second call with another ``P`` replaces it;
    * ``mm_roc_auc_state(label, score)``, ``mm_average_precision_state``: the group's score distribution
      (state bytes): their finish is core's, in Python (:func:`finish_sql_state`), with bounds beyond the capacity;
    * with ``num_classes=K`` (labels in [0, K)), the multiclass names of :data:`SQL_MULTICLASS_FUNCTIONS`:
      ``mm_log_loss_multiclass(label, probabilities[, weight])`` and ``mm_brier_score_multiclass`` (an
      ``array<double>`` of the K class probabilities per row, checked as core checks them: each in [0, 1], the row
      summing to 1 within ``1e-6 * K``), ``mm_accuracy_multiclass(label, prediction[, weight])``,
      ``mm_balanced_accuracy``, ``mm_f1_macro``, ``mm_f1_micro``, ``mm_f1_weighted``, ``mm_precision_macro``,
      ``mm_recall_macro`` (predicted class ids): folded and finished in the JVM, bit for bit core's values. A
      second call with another K replaces them. (Multiclass ``roc_auc`` / ``average_precision`` finish in Python:
      use :func:`mergeable_metrics.spark.metric_columns`.)

    Invalid values (a null or NaN score, a label not 0/1, a probability outside [0, 1], a negative weight)
    raise naming the argument.

    Raises:
        RuntimeError: no JDK (the message says what to install), or a Spark Connect session (there,
            use :func:`mergeable_metrics.spark.metric_columns`).
        ValueError: ``num_classes`` not an integer >= 2, ``tweedie_power`` in (0, 1) or not a number.
    """
    if jvm.is_connect(spark):
        raise RuntimeError("register_sql_functions needs a classic session (Spark Connect: use metric_columns)")
    names = []
    functions = [(name, metric, None) for name, metric in SQL_FUNCTIONS.items()]
    functions += [(name, metric, "regression") for name, metric in SQL_REGRESSION_FUNCTIONS.items()]
    if tweedie_power is not None:
        if isinstance(tweedie_power, bool) or not isinstance(tweedie_power, (int, float)) or not (tweedie_power <= 0 or tweedie_power >= 1):
            raise ValueError(f"register_sql_functions: tweedie_power must be a number <= 0 or >= 1 (scikit-learn's), got {tweedie_power!r}")
        functions.append(("mm_mean_tweedie_deviance", f"mean_tweedie_deviance@power={float(tweedie_power)!r}", "regression"))
    for name, metric, task in functions:
        specs = []
        for weighted in (False, True):
            ev = _sql_evaluation(metric, weighted, task)
            spec, why = jvm.evaluation_spec(ev)
            assert spec is not None, why
            specs.append(spec)
        desc = metric_finish(ev, ev.plan.metrics[0])
        assert desc is not None
        _invoke(spark, "registerMetricWeights", name, specs[0], specs[1], desc)
        names.append(name)
    if num_classes is not None:
        if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 2:
            raise ValueError(f"register_sql_functions: num_classes must be an integer >= 2, got {num_classes!r}")
        for name, (metric, reads) in SQL_MULTICLASS_FUNCTIONS.items():
            specs = []
            for weighted in (False, True):
                ev = _sql_multiclass_evaluation(metric, reads, num_classes, weighted)
                spec, why = jvm.evaluation_spec(ev)
                assert spec is not None, why
                specs.append(spec)
            desc = metric_finish(ev, ev.plan.metrics[0])
            assert desc is not None, metric
            _invoke(spark, "registerMetricWeights", name, specs[0], specs[1], desc)
            names.append(name)
    for name, metric in SQL_STATE_FUNCTIONS.items():
        spec, why = jvm.evaluation_spec(_sql_evaluation(metric))
        if spec is None:  # pragma: no cover - the float kinds are always in the jar
            continue
        jvm.register(spark, name, spec)
        names.append(name)
    return names


def finish_sql_state(name: str, data: bytes | None) -> float:
    """The value of a ``mm_*_state`` SQL function's output (``finish_sql_state("mm_roc_auc_state", row[0])``)."""
    import warnings

    from mergeable_metrics.engine import UndefinedMetricWarning

    ev = _sql_evaluation(SQL_STATE_FUNCTIONS[name])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        values = ev.finish({(): jvm.decode_states(ev, data)}, add_overall=False)[()].metrics
    return float(values[ev.plan.metrics[0].key])
