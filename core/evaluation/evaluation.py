"""Sliced evaluation over columnar batches: the one object every engine runs.

An :class:`Evaluation` knows the columns (label, score or prediction, weight), the slice specs and
the :class:`~mergeable_metrics.collection.plan.Plan`. The pieces it is built from, bottom-up:

* :mod:`mergeable_metrics.evaluation.options`: its options (one table: defaults, docs, checks, ``to_config``, fingerprint);
* :mod:`mergeable_metrics.evaluation.batches`: reading one batch's columns (:func:`extract_columns`);
* :mod:`mergeable_metrics.evaluation.columns`: the column mapping and the routing of a batch to a validated ``Batch``;
* :mod:`mergeable_metrics.evaluation.accumulator`: the accumulator (:class:`Accumulator`, an opaque read-only value:
  every slice's states, read by ``slices()`` / ``states(key)`` / ``items()``, carrying the
  :attr:`~Evaluation.fingerprint`, always with the overall slice ``()``) and the engine-facing operations ``zero``, ``fold`` (per batch), ``merge`` (pure) /
  ``merge_into`` (in place), ``encode`` / ``decode``;
* :mod:`mergeable_metrics.evaluation.suppression`: small-slice suppression of the results.

This module adds the counting pass (``max_slices`` / ``quantiles``: :meth:`Evaluation.with_profile`)
and the assembly of results (:meth:`~Evaluation.finish`, :meth:`~Evaluation.collect`,
:meth:`~Evaluation.evaluate`).
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import warnings
from typing import Any, Iterable

import numpy as np

from mergeable_metrics._util.public import public
from mergeable_metrics.evaluation.accumulator import Accumulator, AccumulatorOps
from mergeable_metrics.evaluation.batches import extract_columns, fold_all, is_single_batch, missing_row_column, num_rows, rows_to_columns  # noqa: F401  (re-exported)
from mergeable_metrics.evaluation.columns import ColumnMap
from mergeable_metrics.uncertainty.bootstrap import BucketedPlan
from mergeable_metrics.uncertainty.comparison import PairedPlan, comparison_method, paired_bootstrap, slice_comparison
from mergeable_metrics.uncertainty.intervals import CI_OPTIONS, CISettings, slice_ci
from mergeable_metrics.uncertainty.posterior import PosteriorSummary, slice_posteriors
from mergeable_metrics.inputs.labels import columns_reversed, resolve_classes
from mergeable_metrics.metrics.measure import MeanMeasure
from mergeable_metrics.metrics.base import DEFAULT_METRICS, Task, UndefinedMetricWarning
from mergeable_metrics.evaluation.options import config_of, fingerprint_of, options_doc, read_options, signature
from mergeable_metrics.collection.plan import Plan, make_task, undefined_warning
from mergeable_metrics.results.results import Results, SliceResult
from mergeable_metrics.evaluation.profile import ProfileSummary, SliceProfile, SliceProfiler
from mergeable_metrics.slicing.assign import OTHER, OVERALL, parse_slices, slice_name, sort_key, sort_order
from mergeable_metrics.collection.stacked import VECTORISE_FROM, LazyStates, compute_fields, is_cell_metric
from mergeable_metrics.states.base import ExampleCountState, _layout_diff
from mergeable_metrics.evaluation.suppression import is_suppressed, protect, spec_of, suppress_complements, suppressed_mask

__all__ = ["Accumulator", "Evaluation", "extract_columns", "fold_all", "is_single_batch", "num_rows", "resolve_evaluation"]


def resolve_evaluation(evaluation: "Evaluation | None", evaluation_kwargs: dict[str, Any]) -> "Evaluation":
    """The evaluation an engine entry point runs: ``evaluation`` itself, or
    ``Evaluation(**evaluation_kwargs)`` (e.g. ``ComputeMetrics(label_col=..., slices=[...])``).

    Raises:
        TypeError: both are given, or ``evaluation`` is not an :class:`Evaluation`.
        ValueError / TypeError: from :class:`Evaluation` for bad keyword arguments.
    """
    if evaluation is None:
        return Evaluation(**evaluation_kwargs)
    if evaluation_kwargs:
        raise TypeError(f"give evaluation= or Evaluation keyword arguments, not both (got {sorted(evaluation_kwargs)})")
    if not isinstance(evaluation, Evaluation):
        raise TypeError(f"evaluation must be a mergeable_metrics.Evaluation, got {type(evaluation).__name__}")
    return evaluation


def _measure_map(measure_cols: Any) -> dict[str, str]:
    """``{measure name: column}`` of the (checked) ``measure_cols`` option."""
    if not measure_cols:
        return {}
    return dict(measure_cols) if isinstance(measure_cols, dict) else {c: c for c in measure_cols}


#: the metrics of an evaluation with ``query_col`` and no ``metrics``
RETRIEVAL_DEFAULT_METRICS = ("ndcg", "map", "mrr")


def _retrieval_options(o: dict[str, Any]) -> dict[str, Any]:
    """The options of an evaluation with ``query_col`` (ranking and retrieval metrics, see
    :mod:`mergeable_metrics.metrics.retrieval`): the default metrics, and the options it cannot take yet refused."""
    for name in ("ci", "baseline_score_col", "baseline_prediction_col"):
        if o[name] is not None:
            raise ValueError(f"query_col: {name} is not supported with query_col (got {name}={o[name]!r})")
    if o["num_classes"] not in (None, 2):
        raise ValueError(f"query_col: relevance is binary or graded, not {o['num_classes']} classes (num_classes={o['num_classes']!r})")
    return {**o, "metrics": list(RETRIEVAL_DEFAULT_METRICS) if o["metrics"] is None else o["metrics"]}


def _column(name: str, doc: str) -> property:
    return property(lambda self: getattr(self.inputs, name), doc=doc)


def _warn_undefined(results: Results) -> None:
    """One :class:`~mergeable_metrics.metrics.base.UndefinedMetricWarning` per metric undefined (NaN) in some
    published slice of engine results, as :meth:`Evaluation.finish` warns locally (engines
    finish slices on workers, where warnings do not reach the user)."""
    where: dict[str, list[tuple[str, Any]]] = {}
    for r in results.slices:
        if r.suppressed:
            continue
        for e in r.undefined:
            where.setdefault(e["metric"], []).append((slice_name(r.slice), tuple(e["classes"]) if "classes" in e else None))
    for metric, places in where.items():
        warnings.warn(undefined_warning(metric, places, "nan"), UndefinedMetricWarning, stacklevel=3)


@public("mergeable_metrics")
class Evaluation(AccumulatorOps):
    """Column mapping + slices + metrics, with accumulator operations for any engine.

    Args:
        {options}

    Every option is keyword-only (the table :data:`mergeable_metrics.evaluation.options.OPTIONS`); ``to_config()`` gives
    them back, ``Evaluation(**e.to_config())`` is equivalent to ``e``, and the engines
    (``ComputeMetrics``, ``compute_metrics``) accept them as keyword arguments.

    Undefined values: NaN (``null`` in JSON) unless ``zero_division`` says otherwise, listed per
    slice in ``SliceResult.undefined``; :meth:`finish` emits one
    :class:`~mergeable_metrics.metrics.base.UndefinedMetricWarning` per metric naming its classes and slices.

    Merging: :meth:`merge` returns a new accumulator and leaves both inputs unchanged;
    :meth:`merge_into` merges into its first argument in place (see :mod:`mergeable_metrics.evaluation.accumulator`).

    Raises:
        ValueError: bad configuration (both score and prediction columns, a column a metric needs
            is missing, unknown metric, bad ``on_invalid`` ...).
        TypeError: an unknown option (naming the closest one) or a value of a wrong type.
    """

    label_col = _column("label_col", "The label column (None when no metric needs labels).")
    score_col = _column("score_col", "The score column, a list of per-class score columns, or None.")
    prediction_col = _column("prediction_col", "The prediction column, or None.")
    weight_col = _column("weight_col", "The sample weight column, or None.")
    measure_col = _column("measure_col", "The column of per-row measures (``mean_measure``), or None.")
    query_col = _column("query_col", "The column of query ids (ranking and retrieval metrics), or None.")
    formats = _column("formats", "``{role: input format or None}`` of the target, score and prediction columns.")
    columns = _column("columns", "Every input column this evaluation reads, each once (see :class:`~mergeable_metrics.evaluation.columns.ColumnMap`).")
    value_columns = _column("value_columns", "The label, score/prediction, weight and measure columns (not slices).")
    list_columns = _column("list_columns", "Value columns whose rows may be lists (see :attr:`mergeable_metrics.evaluation.columns.ColumnMap.list_columns`).")
    slice_columns = _column("slice_columns", "Columns read only for slicing (they may hold lists).")
    keep_nulls = _column(
        "keep_nulls", "Value, id and query columns whose nulls messages name as given (see :attr:`mergeable_metrics.evaluation.columns.ColumnMap.keep_nulls`)."
    )
    _plain = _column("plain", "True: batches take the plain (N,) path of the first release.")

    def __init__(self, **options: Any):
        o = read_options(options)
        if o["query_col"] is not None:
            o = _retrieval_options(o)
        classes, num_classes = resolve_classes(o["classes"], o["pos_label"], o["num_classes"], o["multiclass"], o["task"])
        #: the class values in index order (``classes=``; see :mod:`mergeable_metrics.inputs.labels`), or None
        self.classes = classes
        task_obj = make_task(
            o["task"] if o["task"] is not None or o["query_col"] is None else "regression",
            num_classes,
            o["threshold"],
            o["threshold_rule"],
            o["zero_division"],
            o["multiclass"],
            o["ignore_index"],
            o["num_outputs"],
        )
        self.slices = parse_slices(o["slices"])
        self.min_slice_size = o["min_slice_size"]
        self.show_suppressed_names = o["show_suppressed_names"]
        self._profile = None  # ProfileSummary once with_profile() resolved the counting pass
        self._bounds: dict = {}
        self.on_invalid = o["on_invalid"]
        self.ci = CISettings.from_options(o)
        self.tolerance = o["tolerance"]
        measures = _measure_map(o["measure_cols"])
        metrics = o["metrics"]
        if measures:  # one MeanMeasure per named measure column; measures alone without labels
            if metrics is None and o["label_col"] is None and o["score_col"] is None and o["prediction_col"] is None:
                metrics = []
            elif metrics is None:
                metrics = list(DEFAULT_METRICS[task_obj.kind])
            metrics = ([metrics] if isinstance(metrics, str) else list(metrics)) + [MeanMeasure(None, name=n) for n in measures]
        self.plan = self._base_plan = Plan(metrics, task_obj, classes)
        task_obj = self.plan.task
        bootstrap = o["ci"] == "bootstrap"
        keyed = [m.key for m in self.plan.metrics if "id" in m.needs()]
        if bootstrap and keyed:  # a per-example output has no resampled value (its states hold each id once)
            raise ValueError(
                f"ci='bootstrap' does not apply to {keyed[0]!r}: it is one value per example (id_col), not a statistic to resample; evaluate it without ci"
            )
        self._buckets, self._id_col = (o["ci_buckets"], o["id_col"]) if bootstrap else (None, None)
        self.inputs = ColumnMap(
            label_col=o["label_col"], score_col=o["score_col"], prediction_col=o["prediction_col"], weight_col=o["weight_col"],
            measure_col=o["measure_col"], measure_cols=measures, slices=self.slices, plan=self.plan,
            id_col=o["id_col"] if bootstrap or "id" in self.plan.needs else None,
            formats={role: o[opt] or self.plan.data_formats.get(role) for role, opt in (("target", "label_format"), ("score", "score_format"), ("prediction", "prediction_format"))},
            baseline_score_col=o["baseline_score_col"], baseline_prediction_col=o["baseline_prediction_col"],
            query_col=o["query_col"],
            classes=classes,
        )  # fmt: skip
        self.inputs.swap_scores = columns_reversed(o["classes"], classes)
        if self.inputs.paired:  # both models folded over the same rows (mergeable_metrics.uncertainty.comparison)
            self.plan = self._base_plan = PairedPlan(self.plan)
            self.inputs.plan = self.plan
        if bootstrap:  # every slice's states per hash bucket (mergeable_metrics.uncertainty.bootstrap)
            self.plan = BucketedPlan(self._base_plan, o["ci_buckets"])
        # every option's JSON-ready value, as the plan resolved it (to_config, describe, fingerprint)
        resolved = {
            **o,
            "slices": [str(s) for s in self.slices],
            "metrics": [
                f"mean_measure@name={m.measure_name}" if getattr(m, "measure_name", None) else (m.key if m.key == m.resolved_key else [m.key, m.resolved_key])
                for m in self.plan.metrics
            ],
            "classes": None if classes is None else list(classes),
            "zero_division": task_obj.zero_division,
            "task": task_obj.kind if o["task"] is not None else None,
            "ignore_index": task_obj.ignore_index,
        }
        if isinstance(o["task"], Task):  # keep to_config() JSON-ready and equivalent
            t = o["task"]
            resolved.update(
                num_classes=t.num_classes, threshold=t.threshold, threshold_rule=t.threshold_rule, multiclass=t.multiclass, num_outputs=t.num_outputs
            )
        self._resolved = resolved
        self._init_args = config_of(resolved)
        self._fingerprint = self._make_fingerprint()

    def _make_fingerprint(self) -> dict[str, Any]:
        profile = None
        if self._profile is not None:
            profile = hashlib.sha256(self._profile.to_json().encode("utf-8")).hexdigest()[:16]
        fp = {**self.plan.fingerprint, **fingerprint_of(self._resolved), "profile": profile}
        if self._resolved.get("measure_cols"):  # which column feeds which named measure
            fp["measure_cols"] = self._resolved["measure_cols"]
        if self._buckets is not None:  # bucketed states: only with the same buckets and hash source
            fp["bootstrap"] = {"buckets": self._buckets, "id_col": self._id_col, "stacked": self.plan.stacked}
        return json.loads(json.dumps(fp))  # JSON-canonical: equal to a decoded one

    @property
    def fingerprint(self) -> dict[str, Any]:
        """Every setting that changes what the accumulator's states hold beyond their layouts:
        the task settings of :attr:`mergeable_metrics.collection.plan.Plan.fingerprint` (kind, ``num_classes``,
        ``ignore_index``), the label/score/prediction/weight/measure columns and their formats
        (weighted and unweighted sums never mix), the slice specs, and a digest of the attached
        counting-pass profile (``max_slices`` cuts and quantile edges; None without one).

        Accumulators and codec bytes carry it; merging, folding into, finishing or decoding an
        accumulator of another fingerprint raises ``ValueError`` naming the settings. An
        evaluation that needs a profile but has none attached (``needs_profile``) accepts any one
        profile, as engines merge the profiled folds with the unprofiled evaluation. Settings
        used only when computing (the metrics chosen from the same states, ``zero_division``,
        ``min_slice_size``, ``on_invalid``) are not part of it."""
        return self._fingerprint

    # -- configuration ---------------------------------------------------------------------
    def to_config(self) -> dict[str, Any]:
        """JSON-ready constructor arguments; ``Evaluation(**e.to_config())`` is equivalent."""
        return dict(self._init_args)

    @property
    def paired(self) -> bool:
        """True with a baseline model (``baseline_score_col`` / ``baseline_prediction_col``)."""
        return isinstance(self._base_plan, PairedPlan)

    def describe(self) -> dict[str, Any]:
        """``Results.config``: the plan's description and every option set, the ``ci_*`` ones
        gathered under ``"ci"`` (:meth:`mergeable_metrics.uncertainty.intervals.CISettings.to_config`) when ``ci`` is set;
        with a baseline model, ``"comparison"``: ``{"method", "level", "tolerance"}``."""
        out = {**self.plan.describe(), **{k: v for k, v in self._init_args.items() if k != "metrics" and k not in CI_OPTIONS}}
        if self.ci.method is not None:
            out["ci"] = self.ci.to_config(self._base_plan.candidate if self.paired else self.plan)
        if self.paired:  # how the comparison's paired intervals were made
            out["comparison"] = {"method": comparison_method(self.ci.method), "level": self.ci.level, "tolerance": self.tolerance}
        return out

    # -- the counting pass -----------------------------------------------------------------
    @property
    def needs_profile(self) -> bool:
        """True when a spec uses ``max_slices`` or ``quantiles`` and no profile is attached yet:
        run :meth:`profiler` over all the data, then fold with :meth:`with_profile`."""
        return self._profile is None and any(s.needs_profile for s in self.slices)

    @property
    def profile(self) -> Any:
        """The attached :class:`~mergeable_metrics.evaluation.profile.ProfileSummary`, or None."""
        return self._profile

    def profiler(self) -> Any:
        """The counting pass of this evaluation: a :class:`~mergeable_metrics.evaluation.profile.SliceProfiler`
        (``zero`` / ``fold`` / ``merge`` / ``finish`` -> ProfileSummary, ``encode``)."""
        return SliceProfiler(self.slices, self.weight_col)

    def with_profile(self, profile: Any) -> "Evaluation":
        """This evaluation with a resolved counting pass attached (``self`` is unchanged).

        Its ``fold`` maps values outside each spec's top ``max_slices`` to ``__other__`` and
        numbers to their quantile buckets; ``finish`` and ``collect`` report ``folded_values``.
        Accumulators, codec bytes and ``to_config()`` are those of ``self``.

        Args:
            profile: a :class:`~mergeable_metrics.evaluation.profile.ProfileSummary`, a merged
                :class:`~mergeable_metrics.evaluation.profile.SliceProfile`, or the summary's JSON text.

        Raises:
            ValueError: the profile lacks a part a spec needs.
            TypeError: ``profile`` is none of those kinds.
        """
        if isinstance(profile, SliceProfile):
            profile = self.profiler().finish(profile)
        elif isinstance(profile, str):
            profile = ProfileSummary.from_json(profile)
        if not isinstance(profile, ProfileSummary):
            raise TypeError(f"with_profile needs a ProfileSummary or SliceProfile, got {type(profile).__name__}")
        out = copy.copy(self)
        out._profile = profile
        out._bounds = {s: profile.bounds(s) for s in self.slices if s.needs_profile}
        out._fingerprint = out._make_fingerprint()
        return out

    def folded_values(self, key: tuple) -> int | None:
        """How many distinct slice values the ``__other__`` slice ``key`` sums (None for other
        slices, or without a profile)."""
        if not key or any(v != OTHER for _, v in key):
            return None
        spec = spec_of(self.slices, key)
        b = self._bounds.get(spec) if spec is not None else None
        return None if b is None or b.kept is None else b.folded_values

    def _annotate(self, results: Results) -> Results:
        """Add ``folded_values`` to the ``__other__`` slices (from the attached profile)."""
        if self._profile is None:
            return results
        out = []
        for s in results.slices:
            f = self.folded_values(s.slice)
            out.append(dataclasses.replace(s, folded_values=f) if f is not None and s.folded_values != f else s)
        return Results(out, results.config)

    # -- results ---------------------------------------------------------------------------
    def posterior(self, acc: Any, *, samples: bool = False) -> dict[tuple, dict[str, PosteriorSummary]]:
        """Posterior summaries of every confusion-derived metric per slice (prob_conf_mat's
        ``summarize_posterior``): ``{slice key: {metric key: PosteriorSummary}}`` with the median,
        mean, mode, HDI and equal-tailed interval at ``ci_level``, and with ``samples=True`` the
        (``ci_replicates``, ...) samples. The draws are those of ``ci="posterior"`` for the same
        ``ci_seed``, ``ci_prior`` and ``ci_prevalence_prior`` (any ``ci`` setting may be used);
        suppressed slices are left out.

        Raises:
            ValueError: a paired (baseline) or ``ci="bootstrap"`` evaluation (their states are
                not one model's confusion counts).
        """
        if self.paired or self._buckets is not None:
            raise ValueError("Evaluation.posterior: not available with a baseline model or ci='bootstrap'; evaluate one model with ci=None or 'posterior'")
        held = dict(acc.items())
        if OVERALL not in held:
            held[OVERALL] = self.plan.zero()
        keys = sorted(held, key=lambda k: sort_key(k, [s.columns for s in self.slices]))
        # the slices finish() publishes: primary and complementary suppression (a published slice
        # must not give a suppressed one back by subtraction)
        sizes = [
            SliceResult(slice=k, n=int(c["count"]), weight=float(c["weight"]), skipped=int(c["skipped"]), metrics={}, suppressed=self._suppressed(k, c))
            for k, c in ((k, held[k][0]) for k in keys)
        ]
        published = {r.slice for r in suppress_complements(sizes) if not r.suppressed}
        return {key: slice_posteriors(self.ci, self.plan, key, held[key], samples) for key in keys if key in published}

    def _suppressed(self, key: tuple, counts: Any) -> bool:
        return is_suppressed(key, counts, self.slices, self.min_slice_size)

    def _protect(self, results: Results) -> Results:
        """Complementary suppression and, unless ``show_suppressed_names``, withheld names, over
        one evaluation's complete results (:func:`mergeable_metrics.evaluation.suppression.protect`)."""
        return protect(results, self.show_suppressed_names)

    def _check_layouts(self, acc: Any) -> None:
        """Each slice's states of a plain ``{slice_key: tuple_of_states}`` mapping are this
        plan's kinds with its layouts (a mapping has no fingerprint; values are not re-checked).

        Raises:
            ValueError: naming the slice and the differing setting.
        """
        want = self.plan.state_types
        for key, states in acc.items():
            states = tuple(states)
            if len(states) != len(want) or any(type(st) is not cls for st, (cls, _) in zip(states, want)):
                got = [getattr(st, "kind", type(st).__name__) for st in states]
                raise ValueError(
                    f"finish: slice {slice_name(key)!r}: states of kinds {got} do not belong to this evaluation's plan {[c.kind for c, _ in want]}"
                )
            for st, (cls, layout) in zip(states, want):
                if st.layout != layout:
                    raise ValueError(f"finish: slice {slice_name(key)!r}: {cls.kind} states of another configuration: {_layout_diff(layout, st.layout)}")

    def finish(self, acc: Accumulator, *, add_overall: bool = True) -> Results:
        """Compute every slice's metrics; overall first, then slices in spec and value order.

        The metrics of all slices are computed at once (:meth:`mergeable_metrics.collection.plan.Plan.compute_many`,
        vectorised over the slices for the confusion-derived metrics), with the values of a
        per-slice :meth:`~mergeable_metrics.collection.plan.Plan.compute_detailed`.

        Args:
            acc: a merged :class:`~mergeable_metrics.evaluation.accumulator.Accumulator`, or a mapping ``{slice_key:
                tuple_of_states}`` (an engine's merged states of some slices).
            add_overall: add the overall slice (zero states) when ``acc`` lacks it; engines that
                finish one slice at a time pass False.
        """
        self._joint_fingerprint(getattr(acc, "fingerprint", None))
        if not isinstance(acc, Accumulator):  # a plain mapping carries no fingerprint: check its states' layouts
            self._check_layouts(acc)
        spec_order = [s.columns for s in self.slices]
        fast = self._finish_stacked(acc, add_overall, spec_order)
        # the metrics read the stacked arrays: no per-slice state objects
        out, undefined, fills = fast if fast is not None else self._finish_states(acc, add_overall, spec_order)
        for metric, where in undefined.items():  # one warning per metric per finish
            warnings.warn(undefined_warning(metric, where, fills[metric]), UndefinedMetricWarning, stacklevel=2)
        return self._protect(Results(out, self.describe())) if add_overall else Results(out, self.describe())

    def _finish_states(self, acc: Any, add_overall: bool, spec_order: list) -> tuple[list, dict, dict]:
        """:meth:`finish`'s slices from per-slice state objects: ``(slice results, {metric:
        [(slice name, classes)]}, {metric: fill})`` of the undefined values."""
        held = dict(acc.items())  # bucketed with ci="bootstrap": the point states are their merge
        if add_overall and OVERALL not in held:
            held[OVERALL] = self.plan.zero()
        keys = sorted(held, key=lambda k: sort_key(k, spec_order))
        held = {key: held[key] for key in keys}
        states_of = {key: self.plan.point(s) for key, s in held.items()} if self._buckets is not None else held
        counts_of = {key: states_of[key][0] for key in keys}
        computed = [key for key in keys if not self._suppressed(key, counts_of[key])]
        # every computed slice's metrics at once, stacked on a leading slice axis
        many = self._base_plan.compute_many([states_of[key] for key in computed])
        position = {key: i for i, key in enumerate(computed)}
        if self.paired:  # the baseline's metrics of every slice at once too
            base_many = self._base_plan.candidate.compute_many([self._base_plan.split(states_of[key])[1] for key in position])
        out = []
        undefined: dict[str, list[tuple[str, Any]]] = {}
        fills: dict[str, Any] = {}
        for key in keys:
            counts = counts_of[key]
            if key not in position:  # suppressed (pruned): no metrics computed, no counts reported
                out.append(SliceResult(slice=key, n=None, weight=None, skipped=None, metrics={}, suppressed=True))
                continue
            states = states_of.get(key)
            values, bounds, undef = many.element(position[key])
            ci_plan, ci_states, paired, ci = self.plan, held.get(key), {}, None
            if self.paired:  # the candidate's own intervals; the comparison of both models
                ci_plan, ci_states = self._base_plan.candidate, self._base_plan.split(states)[0]
                replicates = None
                if self._buckets is not None:  # the paired bootstrap: both models' replicates of the same weights
                    ci, replicates = paired_bootstrap(self.plan, held[key], self.ci.level, self.ci.replicates, self.ci.seed, values)
                paired = self._compare(key, states, values, base_many.element(position[key])[0], replicates)
            for metric, (classes, fill) in undef.items():
                if fill in ("nan", "warn"):
                    named = classes if classes is None or self.classes is None else tuple(self.classes[c] if 0 <= c < len(self.classes) else c for c in classes)
                    undefined.setdefault(metric, []).append((slice_name(key), named))
                    fills[metric] = "nan" if fill == "nan" or fills.get(metric) == "nan" else fill
            out.append(
                SliceResult(
                    slice=key,
                    n=int(counts["count"]),
                    weight=float(counts["weight"]),
                    skipped=int(counts["skipped"]),
                    metrics=values,
                    bounds=bounds,
                    folded_values=self.folded_values(key),
                    ci=slice_ci(self.ci, ci_plan, key, ci_states, values) if ci is None else ci,
                    **paired,
                )
            )
        return out, undefined, fills

    def _finish_stacked(self, acc: Any, add_overall: bool, spec_order: list) -> tuple[list, dict, dict] | None:
        """:meth:`finish`'s slices (as :meth:`_finish_states` returns them) computed from
        :meth:`Accumulator.stacked <mergeable_metrics.evaluation.accumulator.Accumulator.stacked>`'s
        arrays (one :func:`mergeable_metrics.collection.stacked.compute_fields` over the leading slice axis,
        suppression and the counts as array operations; the metrics of other state kinds from each
        slice's states built when read, and ``roc_auc`` from the exact score distributions' bins
        read straight from the blocks' tables); None where that does not apply: intervals, a
        baseline, bootstrap buckets, weights, a missing overall slice, or fewer slices than the
        vectorised path starts at (the result is then
        :meth:`mergeable_metrics.collection.plan.Plan.compute_many`'s, bit for bit)."""
        if not isinstance(acc, Accumulator) or self._buckets is not None or self.paired or self.ci.method is not None or self.weight_col is not None:
            return None
        cells_only = all(is_cell_metric(m) for m in self.plan.metrics)
        got = acc._stacked(lazy=not cells_only)  # other metrics: from each slice's states, built when read
        if got is None:
            return None
        keys, fields, lazy = got
        counts = fields.get(ExampleCountState.kind)
        if counts is None or (add_overall and OVERALL not in keys):
            return None
        order = np.asarray(sort_order(keys, spec_order), dtype=np.int64)
        keys = [keys[i] for i in order]
        hidden = suppressed_mask(keys, counts["count"][order], counts["weight"][order], self.slices, self.min_slice_size)
        computed = np.flatnonzero(~hidden)
        if computed.size < VECTORISE_FROM:
            return None
        rows = order[computed]
        sub = {kind: {name: a[rows] for name, a in f.items()} for kind, f in fields.items()}
        if cells_only:
            many = compute_fields(self.plan, sub, int(rows.size))
        else:
            at = rows.tolist()
            sub_states = LazyStates(len(at), lambda j: lazy[at[j]], lambda kind: (lambda bins: [bins[i] for i in at])(lazy.exact_bins(kind)))
            many = compute_fields(self.plan, sub, len(at), sub_states)
        n, w, sk = counts["count"][rows].tolist(), counts["weight"][rows].tolist(), counts["skipped"][rows].tolist()
        # each metric's values as one list (scalars as Python numbers) or array, read by row
        objects = many.objects
        columns = [(key, objects[key], False) if key in objects else (key, v.tolist() if v.ndim == 1 else v, v.ndim != 1) for key, v in many.values.items()]
        folded = self.folded_values if self._profile is not None else None
        out: list = []
        undefined: dict[str, list[tuple[Any, Any]]] = {}
        fills: dict[str, Any] = {}
        j = 0
        for i, key in enumerate(keys):
            if hidden[i]:  # suppressed (pruned): no metrics computed, no counts reported
                out.append(SliceResult(slice=key, n=None, weight=None, skipped=None, metrics={}, suppressed=True))
                continue
            undef = many.undefined[j]
            for metric, (classes, fill) in undef.items():
                if fill in ("nan", "warn"):
                    named = classes if classes is None or self.classes is None else tuple(self.classes[c] if 0 <= c < len(self.classes) else c for c in classes)
                    undefined.setdefault(metric, []).append((key, named))
                    fills[metric] = "nan" if fill == "nan" or fills.get(metric) == "nan" else fill
            values = {name: col[j].copy() if arr else col[j] for name, col, arr in columns}
            out.append(SliceResult.published(key, n[j], w[j], sk[j], values, dict(many.bounds[j]), None if folded is None else folded(key)))
            j += 1
        # the warning names the first slices only (:func:`undefined_warning`): name those
        named_where = {metric: [(slice_name(k), c) for k, c in where[:5]] + where[5:] for metric, where in undefined.items()}
        return out, named_where, fills

    def _compare(
        self, key: tuple, states: tuple, values: dict[str, Any], base_values: dict[str, Any], replicates: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """``{"baseline_metrics", "comparison"}`` of one slice (see :mod:`mergeable_metrics.uncertainty.comparison`);
        ``replicates``: ``ci="bootstrap"``'s paired replicate values (:func:`mergeable_metrics.uncertainty.comparison.paired_bootstrap`).

        ``baseline_metrics`` holds the baseline's value of every metric whose value has the
        shape of the candidate's in the slice (the long rows pair them cell by cell); curves of
        another length are left out."""
        base_values = {k: v for k, v in base_values.items() if np.shape(v) == np.shape(values[k])}
        s = self.ci
        comparison = slice_comparison(
            self._base_plan, key, states, values, base_values, method=comparison_method(s.method), level=s.level,
            replicates=s.replicates, seed=s.seed, prior=s.prior, tolerance=self.tolerance, interval=s.interval,
            replicate_values=replicates,
        )  # fmt: skip
        return {"baseline_metrics": base_values, "comparison": comparison}

    def collect(self, slices: Iterable[SliceResult] | None = None, rows: Iterable[dict] | None = None) -> Results:
        """Assemble engine output into :class:`~mergeable_metrics.results.results.Results` in the canonical order:
        per-slice results (Beam) or long-format rows (Spark)."""
        spec_order = [s.columns for s in self.slices]
        if rows is not None:
            out = self._protect(self._annotate(Results.from_rows(list(rows), self.describe(), spec_order, self.plan.keys)))
        else:
            out = self._protect(self._annotate(Results.from_slices(list(slices or []), self.describe(), spec_order)))
        _warn_undefined(out)
        return out

    def evaluate(self, batches: Any) -> Results:
        """Fold an iterable of batches in order and finish (the local engine).

        Args:
            batches: an iterable of batches, or one batch: a ``pandas.DataFrame``, a
                ``pyarrow.Table`` / ``RecordBatch`` or a dict of columns.

        When :attr:`needs_profile`, the batches are read twice (a counting pass, then the metric
        pass); a one-shot iterator is first materialised into a list.
        """
        if is_single_batch(batches):
            batches = [batches]
        if self.needs_profile:
            batches = batches if isinstance(batches, (list, tuple)) else list(batches)
            return self.with_profile(self.profiler().profile(batches)).evaluate(batches)
        return self.finish(fold_all(self, batches))


Evaluation.__init__.__signature__ = signature()  # type: ignore[attr-defined]  # help(), IDEs: every option
Evaluation.__doc__ = (Evaluation.__doc__ or "").replace("        {options}", options_doc(8))
