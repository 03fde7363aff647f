"""The options of :class:`mergeable_metrics.Evaluation`: one table, from which everything else is derived.

Each :class:`Option` row holds the option's name, default, type, documentation, whether
:meth:`~mergeable_metrics.Evaluation.to_config` always lists it or only when it differs from the default, whether
it is part of the accumulator :attr:`~mergeable_metrics.Evaluation.fingerprint`, and the check of its value.
From :data:`OPTIONS` come ``Evaluation``'s keyword arguments (its ``__init__`` signature and the
``Args`` of its docstring), the validation of one option's value (:func:`read_options`),
``to_config()`` / ``describe()`` (:func:`config_of`), the fingerprint's column and format settings
(:func:`fingerprint_of`), the engines' ``**evaluation_kwargs`` (``ComputeMetrics``,
``compute_metrics``: they pass them to ``Evaluation``) and the CLI's mapping of flags to options
(:data:`CLI_DESTS` in ``mergeable_metrics.pipelines.evaluate``). Adding an option is one row here (plus the code that
uses it); settings that combine options (the task, the plan, the input roles) are checked by
``Evaluation`` itself.
"""

from __future__ import annotations

import difflib
import inspect
import math
import statistics
import textwrap
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, Mapping

import numpy as np

from mergeable_metrics.inputs.validation import ON_INVALID
from mergeable_metrics.inputs.formats import get_format
from mergeable_metrics.inputs.labels import check_classes
from mergeable_metrics._util.quantiles import t_cdf

__all__ = ["OPTIONS", "OPTION_NAMES", "Option", "ci_minimums", "config_of", "fingerprint_of", "options_doc", "read_options", "signature"]


@dataclass(frozen=True)
class Option:
    """One keyword argument of :class:`mergeable_metrics.Evaluation`.

    Attributes:
        name: the keyword.
        default: its value when not given.
        annotation: its type, as text (for the signature).
        doc: its documentation (the ``Args`` entry of ``Evaluation``).
        config: ``"always"``: :meth:`~mergeable_metrics.Evaluation.to_config` lists it; ``"if_set"``: only
            when its value differs from ``default`` (so configurations of the first release,
            which lacked these options, keep their exact ``to_config()``).
        fingerprint: part of :attr:`mergeable_metrics.Evaluation.fingerprint` (it changes what the states hold);
            ``"if_set"``: only when its value differs from ``default`` (so fingerprints of
            evaluations without it stay those of the releases that lacked the option).
        check: ``value -> value``: validates one given value (raising ``ValueError`` /
            ``TypeError`` that name the option) and returns its normal form; None: any value.
    """

    name: str
    default: Any
    annotation: str
    doc: str
    config: str = "always"
    fingerprint: bool | str = False
    check: Callable[[Any], Any] | None = None


def _on_invalid(v: Any) -> str:
    if v not in ON_INVALID:
        raise ValueError(f"on_invalid must be one of {ON_INVALID}, got {v!r}")
    return v


def _score_col(v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        v = list(v)
        if not v or not all(isinstance(c, str) and c for c in v):
            raise ValueError(f"score_col: a list of per-class score columns needs column names, got {v!r}")
    return v


def _measure_cols(v: Any) -> Any:
    """``measure_cols``: a list of columns (each measure named as its column) or ``{name: column}``."""
    if v is None:
        return None
    if isinstance(v, str):
        v = [v]
    pairs = list(v.items()) if isinstance(v, Mapping) else [(c, c) for c in v] if isinstance(v, (list, tuple)) else None
    if not pairs or not all(isinstance(n, str) and n and isinstance(c, str) and c for n, c in pairs):
        raise ValueError(f"measure_cols must be a non-empty list of column names or a {{name: column}} dict, got {v!r}")
    bad = [n for n, _ in pairs if any(ch in n for ch in "@=,")]
    if bad:
        raise ValueError(f"measure_cols: measure name {bad[0]!r} may not contain '@', '=' or ','")
    if len({n for n, _ in pairs}) != len(pairs):
        raise ValueError(f"measure_cols: a measure name is given twice in {v!r}")
    return [c for _, c in pairs] if all(n == c for n, c in pairs) else dict(pairs)


def _min_slice_size(v: Any) -> float | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0 or v == float("inf"):
        raise ValueError(f"min_slice_size must be a finite number > 0, got {v!r}")
    return float(v)


def _show_suppressed_names(v: Any) -> bool:
    if not isinstance(v, bool):
        raise TypeError(f"show_suppressed_names must be a bool, got {v!r}")
    return v


def _input_format(v: Any) -> Any:
    if v is not None:
        get_format(v)
    return v


CI_METHODS = (None, "analytic", "posterior", "bootstrap")


def _ci(v: Any) -> str | None:
    if v not in CI_METHODS:
        raise ValueError(f"ci must be one of {CI_METHODS}, got {v!r}")
    return v


def _ci_level(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 < v < 1.0:
        raise ValueError(f"ci_level must be a number strictly between 0 and 1, got {v!r}")
    return float(v)


def _positive_int(name: str) -> Callable[[Any], int]:
    def check(v: Any) -> int:
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be an int >= 1, got {v!r}")
        return int(v)

    return check


def _ci_seed(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise ValueError(f"ci_seed must be an int >= 0, got {v!r}")
    return int(v)


#: largest ``ci_buckets`` (:data:`mergeable_metrics.uncertainty.bootstrap.MAX_BUCKETS`)
_MAX_BUCKETS = 1024


def _ci_buckets(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= _MAX_BUCKETS:
        raise ValueError(f"ci_buckets must be an int in [1, {_MAX_BUCKETS}], got {v!r}")
    return int(v)


def _prior(name: str, what: str) -> Callable[[Any], Any]:
    def check(v: Any) -> Any:
        """A non-negative finite number (0 Haldane, 0.5 Jeffreys, 1 Bayes-Laplace) as a float, or
        an array of them as nested tuples (hashable; JSON lists)."""
        if v is None and name == "ci_prevalence_prior":
            return None
        try:
            a = np.asarray(v, dtype=np.float64)
        except (TypeError, ValueError):
            a = None
        if isinstance(v, (bool, str)) or a is None or a.size == 0 or not np.all(np.isfinite(a)) or np.any(a < 0):
            raise ValueError(f"{name} must be a non-negative number (0 Haldane, 0.5 Jeffreys, 1 Bayes-Laplace) or an array of them {what}, got {v!r}")
        return float(a) if a.ndim == 0 else _tuples(a.tolist())

    return check


def _tuples(x: Any) -> Any:
    return tuple(_tuples(i) for i in x) if isinstance(x, list) else x


_ci_prior = _prior("ci_prior", "(one per confusion cell: K x K, rows true labels)")
_ci_prevalence_prior = _prior("ci_prevalence_prior", "(one per class)")


@lru_cache(maxsize=64)
def ci_minimums(level: float) -> tuple[int, int | None]:
    """``(replicates, buckets)``: the fewest ``ci_replicates`` and ``ci_buckets`` that can give a
    ``level`` interval (None: no ``ci_buckets`` up to 1024 can).

    * replicates (``ci="bootstrap"`` and ``"posterior"``, whose intervals are quantiles of the
      replicates / samples): each tail of the interval expects ``(1 - level) / 2 * R`` of them,
      at least one: ``R >= ceil(2 / (1 - level))`` (40 at 95%, 200 at 99%). With fewer, one
      replicate makes the "95%" interval, and it can exclude the value.
    * buckets (``ci="bootstrap"``: rows are resampled by hash bucket, so ``B`` buckets are ``B``
      resampled groups): the smallest ``B`` at which the percentile interval of a normal mean over
      ``B`` equal groups, ``mean +- z sqrt((B - 1) / B) s / sqrt(B)`` (the bootstrap variance of
      ``B`` groups), still covers ``1 - 2 (1 - level)``, i.e. misses at most twice as often as
      stated even on ideal data: ``P(|t_{B-1}| <= z sqrt((B - 1) / B)) >= 1 - 2 (1 - level)``
      (10 at 95%, 23 at 99%; ``B = 1`` is a zero-width interval). A slice whose rows fill fewer
      buckets than that is the caveat of :mod:`mergeable_metrics.uncertainty.bootstrap`.
    """
    replicates = math.ceil(round(2.0 / (1.0 - level), 9))
    z = statistics.NormalDist().inv_cdf((1.0 + level) / 2.0)
    goal = 1.0 - 2.0 * (1.0 - level)
    buckets = next((b for b in range(2, _MAX_BUCKETS + 1) if 2.0 * t_cdf(z * math.sqrt((b - 1) / b), b - 1) - 1.0 >= goal), None)
    return replicates, buckets


def _check_ci_sizes(o: Mapping[str, Any]) -> None:
    """Refuse ``ci_replicates`` / ``ci_buckets`` below :func:`ci_minimums` of ``ci_level`` for the
    methods that use them (the one check of every entry point: ``Evaluation``, the engines' keyword
    arguments, the CLI flags and config files)."""
    method, level = o["ci"], o["ci_level"]
    if method not in ("posterior", "bootstrap"):
        return
    replicates, buckets = ci_minimums(level)
    what = "samples" if method == "posterior" else "replicates"
    if o["ci_replicates"] < replicates:
        raise ValueError(
            f"ci_replicates={o['ci_replicates']} is too few for a {level:g} interval (ci={method!r}): give at least {replicates} "
            f"(ceil(2 / (1 - ci_level)), so that each tail of the interval holds one of the {what}; default 200)"
        )
    if method != "bootstrap":
        return
    if buckets is None:
        raise ValueError(f"ci_level={level:g} needs more than {_MAX_BUCKETS} ci_buckets (ci='bootstrap'); lower ci_level")
    if o["ci_buckets"] < buckets:
        raise ValueError(
            f"ci_buckets={o['ci_buckets']} is too few for a {level:g} interval (ci='bootstrap'): give at least {buckets} "
            f"(rows are resampled by bucket; with fewer, even ideal data miss more than twice as often as stated; default 128)"
        )


CI_INTERVALS = ("equal_tailed", "hdi")


def _ci_interval(v: Any) -> str:
    if v not in CI_INTERVALS:
        raise ValueError(f"ci_interval must be one of {CI_INTERVALS}, got {v!r}")
    return v


def _classes(v: Any) -> list[Any] | None:
    checked = check_classes(v)
    return None if checked is None else list(checked)


def _tolerance(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not v >= 0 or v == float("inf"):
        raise ValueError(f"tolerance must be a finite number >= 0, got {v!r}")
    return float(v)


#: every option of :class:`mergeable_metrics.Evaluation`, in signature and ``to_config()`` order
OPTIONS: tuple[Option, ...] = (
    Option("label_col", None, "str | None",
           "column of true labels: 0/1 (binary), [0, K) (multiclass), (L,) 0/1 lists (multilabel), float targets "
           "(regression), or label maps (segmentation). May be None only when the metrics need no labels (e.g. "
           "``mean_measure`` alone).", fingerprint=True),
    Option("score_col", None, "str | Sequence[str] | None",
           "column of scores: finite floats (binary; thresholded at ``threshold``), or for binary the two class "
           "probabilities per row (``predict_proba`` output) as a list column or two column names ``[p0, p1]`` "
           "(column 1 is thresholded; ``pos_label=0`` ranking metrics rank by column 0); for multiclass a "
           "list-valued (fixed-size-list Arrow) column of K class scores per row, or a list of K column names (one "
           "per class); multilabel (L,) lists; score maps.", fingerprint=True, check=_score_col),
    Option("prediction_col", None, "str | None",
           "column of predicted labels (binary 0/1, multiclass [0, K), multilabel (L,) 0/1 lists, label maps) or, "
           "for regression, predicted values. At most one of ``score_col`` / ``prediction_col``; one is required "
           "when a metric needs predictions.", fingerprint=True),
    Option("weight_col", None, "str | None", "optional column of finite non-negative sample weights.", fingerprint=True),
    Option("slices", None, "Iterable[Any] | str | None",
           "slice specs (``\"carrier\"``, ``\"carrier,origin\"``, ``\"origin=JFK,carrier\"``, "
           "``\"distance:quantiles=4\"``, ``\"tailnum;max_slices=50\"``, :class:`~mergeable_metrics.slicing.assign.SliceSpec` objects; "
           "grammar in :class:`~mergeable_metrics.slicing.assign.SliceSpec`); the overall slice is always computed, exactly, from every "
           "row. Specs with ``max_slices`` or ``quantiles`` need a counting pass first (:attr:`needs_profile`, "
           ":meth:`with_profile`; every engine and :meth:`evaluate` run it automatically).", fingerprint=True),
    Option("metrics", None, "Sequence[str | Metric] | Mapping[str, str | Metric] | None",
           "metric strings (see :mod:`mergeable_metrics.metrics.base`); None for the task's defaults. ``(display name, metric)`` pairs "
           "(``(\"val_f1\", \"f1@macro\")``) or a mapping ``{display name: metric}`` key the results by the names; "
           "otherwise results are keyed by the canonical string and also answer the requested one "
           "(``results.overall.metrics[\"f1\"]`` for ``\"f1@macro\"``; ``Results.resolved_names``)."),
    Option("num_classes", None, "int | None", "None/2 for binary, K > 2 for multiclass (needs ``prediction_col`` or class scores)."),
    Option("num_outputs", None, "int | None",
           "multioutput regression: D >= 1 outputs, each row's label and prediction a list of D floats (Arrow list "
           "or fixed-size list, pandas lists, (N, D) numpy arrays); implies ``task=\"regression\"``; regression metrics "
           "take scikit-learn's ``multioutput`` (``\"r2@multioutput=raw_values\"``). None: one float per row.",
           config="if_set"),
    Option("classes", None, "Sequence[str | int | float] | None",
           "the class values when labels are not ``0..K-1`` (``[\"cat\", \"dog\", \"bird\"]``, ``[-1, 1]``, ``[1, 2]``): "
           "labels and predictions are mapped to their index in the list, a value outside it is an invalid row "
           "(column, value, row), per-class results follow its order (``Results.per_class``); ``num_classes`` "
           "defaults to its length. See :mod:`mergeable_metrics.inputs.labels`.", config="if_set", fingerprint="if_set", check=_classes),
    Option("pos_label", None, "str | int | float | None",
           "with two ``classes``, the positive class's value (it becomes class 1; default: the second class).",
           config="if_set", fingerprint="if_set"),
    Option("threshold", 0.5, "float", "binary scores ``>= threshold`` are predicted positive (see :class:`~mergeable_metrics.collection.plan.MetricCollection`)."),
    Option("threshold_rule", ">=", "str", "``\">=\"`` or ``\">\"``: how scores compare with ``threshold``."),
    Option("zero_division", "nan", "Any",
           "value of undefined ratios: ``\"nan\"`` (default), ``\"warn\"``, 0 or 1 (see :class:`~mergeable_metrics.collection.plan.MetricCollection`)."),
    Option("on_invalid", "raise", "str",
           "``\"raise\"`` (default): invalid rows raise ``ValueError`` naming column, value and row; ``\"skip\"``: "
           "they are skipped and counted per slice (``skipped`` in results).", check=_on_invalid),
    Option("multiclass", False, "bool", "True: a two-class task is multiclass (per-class and averaged metrics)."),
    Option("task", None, "str | Task | None",
           "``\"binary\"``, ``\"multiclass\"``, ``\"multilabel\"``, ``\"regression\"`` or a :class:`~mergeable_metrics.metrics.base.Task`; "
           "None infers binary/multiclass from ``num_classes``.", config="if_set"),
    Option("measure_col", None, "str | None", "column of finite per-row values for ``mean_measure`` (e.g. a loss).",
           config="if_set", fingerprint=True),
    Option("measure_cols", None, "Sequence[str] | dict[str, str] | None",
           "named measures (see :mod:`mergeable_metrics.metrics.measure`): a list of columns of finite per-row values (each measure named as "
           "its column) or ``{name: column}``; each gives a metric keyed by its name, the weighted mean of its column "
           "(per-batch values: one row per batch weighted by the batch size).", config="if_set", check=_measure_cols),
    Option("ignore_index", None, "int | None", "drop rows (pixels) whose label equals it; a class id also leaves averages.",
           config="if_set"),
    Option("label_format", None, "str | None",
           "input format of the label column (see :mod:`mergeable_metrics.inputs.formats`: ``labels``, ``onehot``, ``indicator``, "
           "``label_map``, ...); None picks the default for the task and the column's shape.",
           config="if_set", fingerprint=True, check=_input_format),
    Option("score_format", None, "str | None",
           "input format of the score column (``scores``, ``probabilities``, ``logits``, ``score_map``, ...).",
           config="if_set", fingerprint=True, check=_input_format),
    Option("prediction_format", None, "str | None",
           "input format of the prediction column (``labels``, ``onehot``, ``label_map``, ``values``, ...).",
           config="if_set", fingerprint=True, check=_input_format),
    Option("min_slice_size", None, "float | None",
           "suppress every slice (and the overall slice) whose valid row count is below this; a spec's own "
           "``min_slice_size`` (count or weight) overrides it for its slices, and the overall slice must also meet "
           "every spec's threshold. Suppressed slices are reported without metric values or counts (see "
           ":class:`SliceResult`), and so many more slices are suppressed with them that none can be recovered by "
           "subtracting published slices from their parent (:mod:`mergeable_metrics.evaluation.suppression`).",
           config="if_set", check=_min_slice_size),
    Option("show_suppressed_names", False, "bool",
           "False (default): the suppressed slices of each spec are reported as one ``{column: \"__suppressed__\"}`` "
           "entry counting them (``suppressed_slices``), so their values are not published either; True: each is "
           "listed by name (no values).", config="if_set", check=_show_suppressed_names),
    Option("ci", None, "str | None",
           "confidence intervals of sampling uncertainty per slice and metric (``SliceResult.ci``): None (default), "
           "``\"analytic\"`` (Wilson, DeLong, normal), ``\"posterior\"`` (Beta/Dirichlet posterior of the confusion "
           "counts) or ``\"bootstrap\"`` (one-pass Poisson bootstrap). See :mod:`mergeable_metrics.uncertainty.intervals`.",
           config="if_set", check=_ci),
    Option("ci_level", 0.95, "float", "confidence level of ``ci`` intervals, in (0, 1).", config="if_set", check=_ci_level),
    Option("ci_replicates", 200, "int", "bootstrap replicates / posterior samples of ``ci``.", config="if_set",
           check=_positive_int("ci_replicates")),
    Option("ci_seed", 0, "int", "seed of the bootstrap draws / posterior samples (results are reproducible for a seed).",
           config="if_set", check=_ci_seed),
    Option("ci_prior", 0.5, "float",
           "confusion prior of ``ci=\"posterior\"``: the Dirichlet prior count per confusion cell, any number >= 0 "
           "(0 Haldane, 0.5 Jeffreys: the default, 1 Bayes-Laplace) or a K x K array (rows true labels; a binary "
           "state at T thresholds: 2 x (T + 1)).",
           config="if_set", check=_ci_prior),
    Option("ci_prevalence_prior", None, "float | None",
           "prevalence prior of ``ci=\"posterior\"``: the Dirichlet prior count per class of the class prevalence, any "
           "number >= 0 or one per class. Given, the posterior is prob_conf_mat's: prevalence ~ Dirichlet(class "
           "counts + prevalence prior), each true class's predictions ~ Dirichlet(its row + ``ci_prior``). None "
           "(default): one Dirichlet over the cells (``counts + ci_prior``), the same as a prevalence prior of the "
           "row sums of ``ci_prior``.",
           config="if_set", check=_ci_prevalence_prior),
    Option("ci_interval", "equal_tailed", "str",
           "interval of the samples of ``ci=\"posterior\"``: ``\"equal_tailed\"`` (default: the (1 - level) / 2 and "
           "(1 + level) / 2 quantiles) or ``\"hdi\"`` (the shortest interval holding ``level`` of the samples).",
           config="if_set", check=_ci_interval),
    Option("ci_buckets", 128, "int",
           "hash buckets of ``ci=\"bootstrap\"`` (1 to 1024): rows are resampled by bucket, each slice keeps the "
           "states of each bucket (memory and merge cost grow with it). 128 (default) behaves as the row bootstrap.",
           config="if_set", check=_ci_buckets),
    Option("id_col", None, "str | None",
           "column identifying each example; the bootstrap derives its draws from it (from the row's content when "
           "None), so replicates are the same on any runner and partitioning.", config="if_set", fingerprint=True),
    Option("query_col", None, "str | None",
           "column of query ids (ints or strings) for the ranking and retrieval metrics (``ndcg``, ``map``, ``mrr``, "
           "``retrieval_precision`` ...; :mod:`mergeable_metrics.metrics.retrieval`): ``label_col`` holds each item's relevance (finite, "
           ">= 0) and ``score_col`` its score; rows of one query may arrive in any batch or partition. Without "
           "``task``, relevance is graded (a regression task); ``metrics`` default to ``ndcg``, ``map`` and ``mrr``.",
           config="if_set", fingerprint=True),
    Option("baseline_score_col", None, "str | Sequence[str] | None",
           "scores of a baseline model on the same rows: every metric is also computed for it, and each slice "
           "reports ``comparison`` (``delta = candidate - baseline``, its paired interval and a verdict).",
           config="if_set", fingerprint=True, check=_score_col),
    Option("baseline_prediction_col", None, "str | None", "predictions of a baseline model (as ``baseline_score_col``).",
           config="if_set", fingerprint=True),
    Option("tolerance", 0.0, "float",
           "a ``delta`` within +-tolerance of 0 is ``indistinguishable`` in the comparison verdict.",
           config="if_set", check=_tolerance),
)  # fmt: skip

OPTION_NAMES: tuple[str, ...] = tuple(o.name for o in OPTIONS)
_BY_NAME = {o.name: o for o in OPTIONS}


def read_options(given: Mapping[str, Any], owner: str = "Evaluation") -> dict[str, Any]:
    """Every option's value (``given`` ones checked and normalised, the others their defaults),
    in :data:`OPTIONS` order.

    Raises:
        TypeError: an unknown keyword (naming the closest option), or a value of a wrong type.
        ValueError: a bad value, naming the option; both ``score_col`` and ``prediction_col``;
            ``ci_replicates`` or ``ci_buckets`` below :func:`ci_minimums` (naming the minimum).
    """
    unknown = [k for k in given if k not in _BY_NAME]
    if unknown:
        k = unknown[0]
        close = difflib.get_close_matches(k, OPTION_NAMES, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise TypeError(f"{owner} got an unexpected keyword argument {k!r}{hint}; its options are {', '.join(OPTION_NAMES)}")
    if given.get("score_col") is not None and given.get("prediction_col") is not None:
        raise ValueError("give exactly one of score_col or prediction_col")
    out = {}
    for o in OPTIONS:
        v = given.get(o.name, o.default)
        out[o.name] = v if o.check is None else o.check(v)
    _check_ci_sizes(out)
    return out


def config_of(resolved: Mapping[str, Any]) -> dict[str, Any]:
    """``to_config()`` from every option's resolved (JSON-ready) value: the ``"always"`` options,
    and the ``"if_set"`` ones whose value is not their default."""
    return {o.name: resolved[o.name] for o in OPTIONS if o.config == "always" or resolved[o.name] != o.default}


def fingerprint_of(resolved: Mapping[str, Any]) -> dict[str, Any]:
    """The options of the fingerprint (columns, formats, slices) from their resolved values."""
    return {o.name: resolved[o.name] for o in OPTIONS if o.fingerprint and (o.fingerprint != "if_set" or resolved[o.name] != o.default)}


def signature() -> inspect.Signature:
    """``(self, *, label_col=None, ...)``: the signature of ``Evaluation.__init__``."""
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    params += [inspect.Parameter(o.name, inspect.Parameter.KEYWORD_ONLY, default=o.default, annotation=o.annotation) for o in OPTIONS]
    return inspect.Signature(params)


def options_doc(indent: int = 8) -> str:
    """The ``Args`` entries of every option (Google style), indented by ``indent`` spaces."""
    pad = " " * indent
    lines = []
    for o in OPTIONS:
        lines += textwrap.wrap(f"{o.name}: {o.doc}", width=100, initial_indent=pad, subsequent_indent=pad + "    ", break_on_hyphens=False)
    return "\n".join(lines)
