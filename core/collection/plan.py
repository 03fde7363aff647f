"""Plans: a set of metrics compiled to the deduplicated tuple of states they need.

:class:`Plan` is the object both engines run: ``zero / fold / merge / compute / encode / decode``
over a tuple of states. Precision, recall, F1 and accuracy at one threshold share one
:class:`~mergeable_metrics.states.base.BinaryConfusionState`; metrics at several thresholds share one state holding
all of them. :class:`MetricCollection` and :class:`BinaryMetrics` are the user-facing, stateful
wrappers (torchmetrics-style ``update`` / ``merge`` / ``compute``). ``Plan.merge`` of state tuples
is pure (a new tuple); ``MetricCollection.merge`` merges into the collection in place and returns it.
"""

from __future__ import annotations

import copy
import difflib
import functools
import threading
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

import warnings

from mergeable_metrics._util import exact_kernels as _kernels
from mergeable_metrics._util.exact import ExactSums, exact_quotient, remember_weight_sum, shared_weight_sums
from mergeable_metrics._util.public import public
from mergeable_metrics.states import codec
from mergeable_metrics.inputs.validation import Batch, BatchRowError, as_array
from mergeable_metrics.inputs.formats import REGRESSION_SUMS, get_format, make_batch
from mergeable_metrics.metrics.measure import MeanMeasure, MeanMeasureMetric, MeanMeasureState, measure_values
from mergeable_metrics.inputs.labels import columns_reversed, encode_labels, resolve_classes, swap_score_columns
from mergeable_metrics.metrics.base import (
    DEFAULT_METRICS,
    REGISTRY,
    Interval,
    Metric,
    Task,
    UndefinedMetricWarning,
    class_values,
    parse_metric_string,
    resolve,
    same_configuration,
)
from mergeable_metrics.metrics.retrieval import with_query_keys
from mergeable_metrics.collection.stacked import ManyValues, compute_cells, compute_many, compute_shared
from mergeable_metrics.states.base import BinaryConfusionState, ConfusionMatrixState, ExampleCountState, State
from mergeable_metrics.states import score_running
from mergeable_metrics.states.score_running import running_folds

#: Input needs (see :meth:`mergeable_metrics.metrics.base.Metric.needs`) and the roles that satisfy them.
_NEED_ROLES = {
    "target": ("target",),
    "prediction": ("prediction", "score"),
    "score": ("score", "prediction"),
    "score_matrix": ("score",),
    "probability": ("score", "prediction"),
    "measure": ("measure",),
    "query": ("query",),
    "id": ("id",),
}
_ROLE_WORDS = {"target": "labels/targets", "prediction": "predictions", "score": "scores", "measure": "a measure", "query": "query ids",
               "id": "example ids (set id_col: Evaluation(id_col=...), --id COL)"}  # fmt: skip


def make_task(
    task: "str | Task | None" = None,
    num_classes: int | None = None,
    threshold: float = 0.5,
    threshold_rule: str = ">=",
    zero_division: Any = "nan",
    multiclass: bool = False,
    ignore_index: int | None = None,
    num_outputs: int | None = None,
) -> Task:
    """The :class:`~mergeable_metrics.metrics.base.Task` of a collection or evaluation: ``task`` itself if it is a
    Task, else one of kind ``task`` (None: binary or multiclass from ``num_classes``; regression
    when only ``num_outputs`` is given)."""
    if isinstance(task, Task):
        if num_outputs is not None and num_outputs != task.num_outputs:
            raise ValueError(f"num_outputs={num_outputs!r} differs from the Task's num_outputs={task.num_outputs!r}; give one")
        return task
    if task is not None and not isinstance(task, str):
        raise TypeError(f"task must be a kind name or a Task, got {type(task).__name__}")
    if task is None and num_outputs is not None:
        task = "regression"
    return Task(num_classes or 2, threshold, threshold_rule, zero_division, multiclass, task, ignore_index, num_outputs)


def undefined_warning(key: str, where: list[tuple[str, tuple[int, ...] | None]], fill: Any) -> str:
    """Text of the one warning per metric: the metric, the classes and the slices."""
    parts = []
    for slice_name, classes in where[:5]:
        cls = "" if classes is None else f" [class{'es' if len(classes) > 1 else ''} {', '.join(map(str, classes))}]"
        parts.append(f"'{slice_name}'{cls}")
    more = f" and {len(where) - 5} more slices" if len(where) > 5 else ""
    if fill == "warn":
        value = "set to 0.0 (zero_division='warn')"
    else:
        value = "reported as NaN (null in JSON); undefined classes are left out of averages"
    return f"metric {key!r} is undefined (zero denominator or no data) in slice {', '.join(parts)}{more}: {value}"


def _ndim(values: Any) -> int | None:
    """Dimensions of a numeric input, or None where numpy cannot tell (ragged lists, Arrow list
    arrays, object arrays of rows: validated later)."""
    if hasattr(values, "type") and hasattr(values, "to_numpy"):  # pyarrow: list columns are (N, K)
        import pyarrow as pa  # noqa: PLC0415 - only reached with Arrow input

        return None if pa.types.is_list(values.type) or pa.types.is_fixed_size_list(values.type) or pa.types.is_large_list(values.type) else 1
    try:
        arr = np.asarray(values)
    except (ValueError, TypeError):
        return None
    return None if arr.dtype == object else arr.ndim


class Plan:
    """Metrics resolved for a task and compiled to their shared states.

    Args:
        metrics: metric strings (``"f1@macro"``) or :class:`~mergeable_metrics.metrics.base.Metric` objects; None
            for the task's defaults (binary: accuracy, precision, recall, f1; multiclass: accuracy,
            macro precision/recall/F1 and weighted F1). Duplicate keys are computed once.
        task: the :class:`~mergeable_metrics.metrics.base.Task`.
        classes: the class values in index order (``classes=``), or None: metric strings name
            ``labels=`` by these values (``"f1@macro@labels=cat|bird"``).

    Raises:
        ValueError: an unknown metric, bad metric parameters, or a metric not defined for the task.

    The first state is always the :class:`~mergeable_metrics.states.base.ExampleCountState` (``n``, weight, skipped).
    """

    def __init__(self, metrics: Sequence[str | Metric] | None, task: Task, classes: Sequence[Any] | None = None):
        self.task = task
        self.classes = None if classes is None else tuple(classes)
        if metrics is None:
            metrics = DEFAULT_METRICS[task.kind]
        resolved: dict[str, Metric] = {}
        requested: dict[str, str] = {}
        asked: dict[str, str] = {}  # result key -> the metric as first requested
        for name, m in metric_entries(metrics):
            with class_values(classes):
                r = resolve(m, task)
            if name is not None:
                r = r.named(name)
            elif isinstance(m, str) and m.strip() != r.key:
                requested.setdefault(m.strip(), r.key)
            if r.key in resolved and resolved[r.key].resolved_key != r.resolved_key:
                raise ValueError(f"metric name {r.key!r} is given to two metrics: {resolved[r.key].resolved_key!r} and {r.resolved_key!r}")
            other = resolved.setdefault(r.key, r)
            if type(other) is not type(r):  # e.g. a measure named like a metric
                raise ValueError(f"two metrics have the key {r.key!r} ({other.name!r} and {r.name!r}): rename one")
            if other is not r and not same_configuration(other, r):  # never one key for two metrics
                raise ValueError(
                    f"metrics {asked[r.key]!r} and {_asked(m, r)!r} would share the result key {r.key!r} but are "
                    'configured differently: give one a display name, e.g. ("name", metric)'
                )
            asked.setdefault(r.key, _asked(m, r))
        self.metrics: tuple[Metric, ...] = tuple(resolved.values())
        #: ``{name the user wrote: canonical metric string}`` where they differ: requested
        #: strings (``"f1"`` -> ``"f1@macro"`` for multiclass, aliases such as ``"auc"``) and
        #: display names (``"val_f1"`` -> ``"f1@macro"``); see :func:`metric_aliases`
        self.metric_names: dict[str, str] = {
            **{k: v for k, v in requested.items() if k not in resolved},
            **{m.key: m.resolved_key for m in self.metrics if m.key != m.resolved_key},
        }
        reqs: dict[type[State], list[Any]] = {ExampleCountState: []}
        for m in self.metrics:
            for d in (m, *_dependencies(m)):  # dependencies' states join the shared tuple
                for cls, req in d.requires():
                    reqs.setdefault(cls, []).append(req)
        self.state_types: tuple[tuple[type[State], Any], ...] = tuple((cls, cls.layout_for(r, task)) for cls, r in reqs.items())
        self.needs: frozenset[str] = frozenset().union(*(d.needs() for m in self.metrics for d in (m, *_dependencies(m))))
        self.data_formats: dict[str, str] = _declared_formats(self.metrics)

    def check_inputs(self, roles: Iterable[str], names: dict[str, str] | None = None) -> None:
        """Check that the given input roles satisfy every metric's needs.

        Args:
            roles: the roles present, from ``{"target", "prediction", "score", "measure"}``.
            names: role -> how the caller calls it (``"label_col"``), for the message.

        Raises:
            ValueError: naming the metric and the missing input.
        """
        roles = set(roles)
        names = names or {}
        for m in self.metrics:
            for need in sorted(m.needs()):
                ok = _NEED_ROLES.get(need, ())
                if ok and not roles & set(ok):
                    want = " or ".join(names.get(r, _ROLE_WORDS[r]) for r in ok)
                    raise ValueError(f"metric {m.key!r} needs {want}")

    def check_roles(self, target: bool, score: bool, prediction: bool, measure: bool, query: bool) -> None:
        """:meth:`check_inputs` of ``update``'s arguments (which are given), checked once per
        combination (the answer depends only on the plan)."""
        key = (target, score, prediction, measure, query)
        ok = self.__dict__.setdefault("_roles_ok", set())
        if key in ok:
            return
        given = {r for r, v in zip(("target", "score", "prediction", "measure", "query"), key) if v}
        self.check_inputs(given, {"target": "y_true", "prediction": "y_pred", "score": "y_score", "measure": "measure", "query": "query"})
        ok.add(key)

    @functools.cached_property
    def measure_names(self) -> tuple[str, ...]:
        """The named measures (sorted: the column order of a batch's (N, M) ``values``); ``()``
        without named measures (the unnamed ``mean_measure`` reads (N,) values)."""
        for cls, layout in self.state_types:
            if cls is MeanMeasureState:
                return layout.names
        return ()

    @functools.cached_property
    def mean_fold_at(self) -> tuple[int, int] | None:
        """``(i, j)``, the positions of the example count and the mean state, when this plan's
        states are just those two, the mean of one measure column (unnamed or one name) that
        nothing else is computed from: ``MetricCollection.update``'s fast path folds a plain
        float64 column into them with one compiled call. None otherwise."""
        if self.needs != {"measure"} or len(self.state_types) != 2 or getattr(self.task, "ignore_index", None) is not None:
            return None
        kinds = [cls for cls, _ in self.state_types]
        if set(kinds) != {ExampleCountState, MeanMeasureState} or len(self.measure_names) > 1:
            return None
        return kinds.index(ExampleCountState), kinds.index(MeanMeasureState)

    @functools.cached_property
    def count_cells(self) -> tuple | None:
        """The counts the validation of plain (N,) int64 labels can compute for a state of this
        plan in the same compiled pass (:func:`mergeable_metrics.inputs.formats.make_batch`'s
        ``count_cells``): ``("pairs", K)`` for a K x K confusion matrix, ``("threshold", t,
        strict)`` for binary counts at one threshold ``t`` (``strict``: ``score > t``); None."""
        for cls, layout in self.state_types:
            if cls is ConfusionMatrixState:
                return ("pairs", layout.num_classes)
            if cls is BinaryConfusionState and len(layout.thresholds) == 1:
                return ("threshold", layout.thresholds[0], layout.threshold_rule == ">")
        return None

    @functools.cached_property
    def regression_sums(self) -> bool:
        """Whether the plan folds a single-output regression moments state: its batches' plain
        float64 columns are then checked by the compiled pass of that state's exact sums
        (:func:`~mergeable_metrics.inputs.formats.make_batch`'s ``regression_sums``)."""
        return any(cls.kind == REGRESSION_SUMS and getattr(layout, "num_outputs", None) is None for cls, layout in self.state_types)

    @property
    def measure_fns(self) -> dict[str, Any]:
        """``{name: fn}`` of the named measures given as functions (:class:`mergeable_metrics.metrics.measure.MeanMeasure`)."""
        return {m.measure_name: m.fn for m in self.metrics if isinstance(m, MeanMeasureMetric) and m.fn is not None}

    @property
    def keys(self) -> tuple[str, ...]:
        """Canonical metric strings, in request order (the names used in results)."""
        return tuple(m.key for m in self.metrics)

    @property
    def fingerprint(self) -> dict[str, Any]:
        """The task settings that change what the states hold but are not part of every state's
        layout: the task kind, ``num_classes`` and ``ignore_index`` (rows it drops never reach a
        state). Merges and decodes of another fingerprint raise ``ValueError`` naming the
        setting. Settings read only when computing (the chosen metrics, ``zero_division``) are
        not part of it: they belong to whoever computes."""
        t = self.task
        fp = {"task": t.kind, "num_classes": t.num_classes, "ignore_index": t.ignore_index}
        if t.num_outputs is not None:  # only when set: fingerprints of single-output tasks stay as they were
            fp["num_outputs"] = t.num_outputs
        return fp

    def zero(self) -> tuple[State, ...]:
        """The identity tuple of states."""
        return tuple(cls.zero(layout) for cls, layout in self.state_types)

    def fold(self, states: tuple[State, ...], batch: Batch) -> tuple[State, ...]:
        """Fold one validated batch into ``states`` (returns new states): each state's
        :meth:`~mergeable_metrics.states.base.State.fold`, equal to merging the batch's own states."""
        if batch.n == 0:
            return states
        if score_running.folding_in_place():
            # states folded in place last: a state whose fold raises leaves them untouched
            last = [i for i, s in enumerate(states) if "_running" in getattr(s, "__dict__", {})]
            if last and len(last) < len(states):
                rest = [i for i in range(len(states)) if i not in last]
                done = dict(zip(rest, self.fold(tuple(states[i] for i in rest), batch)))
                done.update((i, states[i].fold(batch)) for i in last)
                return tuple(done[i] for i in range(len(states)))
        w = batch.sample_weight
        if w is None:  # no weight sum to share
            return tuple([s.fold(batch) for s in states])
        with shared_weight_sums():  # the weight's exact sum once for every state of the batch
            pre = batch.sums
            if pre is not None and pre[0] is not REGRESSION_SUMS and pre[1] is w and pre[3] is not None:  # computed by the validation's pass
                limbs, exp = pre[3]
                remember_weight_sum(w, ExactSums.lazy(limbs, exp, ()))
            # the example count after the others: a state whose kernel yields the weight's sum by
            # the way (regression, log loss, the confusion cells' total) records it for the count
            done = {i: s.fold(batch) for i, s in enumerate(states) if s.kind != "example_count"}
            return tuple(done[i] if i in done else s.fold(batch) for i, s in enumerate(states))

    def merge(self, a: tuple[State, ...], b: tuple[State, ...]) -> tuple[State, ...]:
        """Fieldwise merge; raises ``ValueError`` naming the setting if configurations differ."""
        if len(a) != len(b):
            raise ValueError(f"cannot merge state tuples of different plans ({len(a)} vs {len(b)} states)")
        for x in (*a, *b):
            if not isinstance(x, State):
                raise TypeError(f"cannot merge {type(x).__name__} as a state")
        return tuple(x.merge(y) for x, y in zip(a, b))

    def merge_all(self, many: Iterable[tuple[State, ...]]) -> tuple[State, ...]:
        out = self.zero()
        for s in many:
            out = self.merge(out, s)
        return out

    @functools.cached_property
    def aliases(self) -> dict[str, str]:
        """``{other name: result key}`` of :func:`metric_aliases` (requested strings, display
        names' canonical strings; :class:`MetricValues` copies it)."""
        return metric_aliases(self.metric_names, self.keys)

    def compute(self, states: tuple[State, ...]) -> dict[str, Any]:
        """Metric values from merged states: ``{metric key: float | np.ndarray}`` (a
        :class:`MetricValues`: the requested names find their values too)."""
        return MetricValues(self.compute_with_bounds(states)[0], self.aliases, MetricKeys(self.task, self.classes))

    def compute_with_bounds(
        self, states: tuple[State, ...], warn: bool = True, slice_name: str = "Overall"
    ) -> tuple[dict[str, Any], dict[str, tuple[float, float]]]:
        """``(values, bounds)``: values as :meth:`compute`; ``bounds[key] = (lower, upper)``
        (certified) for metrics that returned an :class:`~mergeable_metrics.metrics.base.Interval` (approximate
        states).

        With ``warn``, one :class:`~mergeable_metrics.metrics.base.UndefinedMetricWarning` per undefined metric names
        the metric, the classes and ``slice_name`` (see :meth:`compute_detailed`)."""
        values, bounds, undefined = self.compute_detailed(states)
        if warn:
            for key, (classes, fill) in undefined.items():
                if fill in ("nan", "warn"):
                    warnings.warn(undefined_warning(key, [(slice_name, classes)], fill), UndefinedMetricWarning, stacklevel=3)
        return values, bounds

    def compute_detailed(
        self, states: tuple[State, ...]
    ) -> tuple[dict[str, Any], dict[str, tuple[float, float]], dict[str, tuple[tuple[int, ...] | None, Any]]]:
        """``(values, bounds, undefined)`` without warnings.

        ``undefined[key] = (classes, fill)`` for every metric whose value (or some class of it) is
        undefined: ``classes`` is None for the value itself, else the class ids (per-class values,
        or classes left out of an average); ``fill`` is what was reported instead: ``"nan"``,
        ``"warn"`` (0.0 plus a warning), or 0 / 1 (an explicit ``zero_division``, no warning).
        NaN values that no metric recorded (e.g. an average over no examples) count as undefined
        with ``fill="nan"``.
        """
        by_kind = {s.kind: s for s in states}
        values: dict[str, Any] = {}
        bounds: dict[str, tuple[float, float]] = {}
        undefined: dict[str, tuple[tuple[int, ...] | None, Any]] = {}
        ignored = self.task.ignored_class
        done: dict[str, tuple] = {}  # each metric (a dependency too) computed once
        for m in self.metrics:
            v, bound, entry = compute_shared(m, by_kind, ignored, done)
            values[m.key] = v
            if bound is not None:
                bounds[m.key] = bound
            if entry is not None:
                undefined[m.key] = entry
        return values, bounds, undefined

    def compute_many(self, states_list: Sequence[tuple[State, ...]]) -> ManyValues:
        """The metrics of R state tuples of this plan at once, stacked on a leading axis.

        Args:
            states_list: R tuples of this plan's states (every slice of an accumulator,
                bootstrap replicates or posterior samples of one slice, ...).

        Returns:
            A :class:`~mergeable_metrics.collection.stacked.ManyValues` that unpacks as ``(values, bounds,
            undefined)``: ``values[key]`` is an (R, ...) array (element ``i`` is
            ``compute_detailed(states_list[i])``'s value; an object array (R,) when the shapes
            differ, e.g. curves); ``bounds`` and ``undefined`` are lists of R dicts, as
            :meth:`compute_detailed` returns them per element (no warnings are raised).
            ``.element(i)`` gives element ``i``'s ``compute_detailed`` triple.

        The metrics of the cell states (confusion-derived metrics, example counts) are computed
        by array arithmetic over the leading axis (from three elements on; one or two take the
        scalar path, which is faster there); the others element by element, so every value is
        bit-identical to :meth:`compute_detailed`'s (see :mod:`mergeable_metrics.collection.stacked`).
        """
        return compute_many(self, states_list)

    def compute_cells(self, cells: dict[str, np.ndarray]) -> ManyValues:
        """The metrics of R elements given as cells: ``{state kind: (R, num_cells) float64}``.

        The cell order of each kind is :meth:`~mergeable_metrics.states.base.State.cells`'
        (``example_count``: (R, 1); ``binary_confusion``: (R, 2 (T + 1)), ``label * (T + 1) +
        thresholds passed``, i.e. ``[tn, fp, fn, tp]`` at one threshold; ``confusion_matrix``: (R,
        K * K), ``true * K + predicted``). Cells may be any finite reals >= 0, e.g. Dirichlet
        samples of pseudo-counts for posterior intervals. Returns a
        :class:`~mergeable_metrics.collection.stacked.ManyValues` as :meth:`compute_many`.

        Raises:
            ValueError: a metric that is not computed from cell states (score distributions,
                moments, ...), cells of a kind the plan lacks or a metric needs, bad shapes,
                negative or non-finite cells.

        Example:
            >>> plan = Plan(["precision", "recall"], Task(2))
            >>> v = plan.compute_cells({"binary_confusion": np.array([[5.0, 1.0, 2.0, 3.0], [0.5, 0.5, 0.0, 1.5]])})
            >>> v.values["precision"].tolist(), v.values["recall"].tolist()
            ([0.75, 0.75], [0.6, 1.0])
        """
        return compute_cells(self, cells)

    def encode(self, states: tuple[State, ...], fingerprint: dict[str, Any] | None = None) -> bytes:
        """Versioned bytes of a tuple of states, with ``fingerprint`` (default: the plan's)."""
        return codec._encode_states(states, self.fingerprint if fingerprint is None else fingerprint)

    def decode(self, data: bytes, fingerprint: dict[str, Any] | None = None, integral: bool = False) -> tuple[State, ...]:
        """Decode and check the states belong to this plan.

        Args:
            data: bytes from :meth:`encode`.
            fingerprint: the reader's (default: the plan's); bytes written with another raise.
                Bytes of the first codec version carry none and are taken as the reader's.
            integral: the rows were unweighted: count fields must hold whole numbers.

        Raises:
            ValueError: corrupted bytes, another fingerprint (naming the settings), states of
                another plan, or values no data can produce.
        """
        states = codec._decode_states(data, self.fingerprint if fingerprint is None else fingerprint)
        self.check(states, integral)
        return states

    def check(self, states: tuple[State, ...], integral: bool = False) -> None:
        """Check ``states`` are this plan's kinds and layouts, with valid values.

        Raises:
            ValueError: other kinds or layouts, or values no data can produce (see
                :meth:`~mergeable_metrics.states.base.State.validate`; ``integral``: unweighted counts).
        """
        want = [(cls.kind, layout) for cls, layout in self.state_types]
        got = [(getattr(s, "kind", type(s).__name__), getattr(s, "layout", None)) for s in states]
        if want != got or any(type(s) is not cls for s, (cls, _) in zip(states, self.state_types)):
            raise ValueError(f"states do not belong to this plan: expected {want}, got {got}")
        for s in states:
            s.validate(integral)

    def describe(self) -> dict[str, Any]:
        """JSON-ready description of the task, metrics and states."""
        t = self.task
        return {
            "task": t.kind,
            "num_classes": t.num_classes,
            "threshold": t.threshold,
            "threshold_rule": t.threshold_rule,
            "zero_division": t.zero_division,
            "metrics": list(self.keys),
            **({"metric_names": dict(self.metric_names)} if self.metric_names else {}),
            "states": [f"{cls.kind} {layout}" for cls, layout in self.state_types],
            **({"ignore_index": t.ignore_index} if t.ignore_index is not None else {}),
            **({"num_outputs": t.num_outputs} if t.num_outputs is not None else {}),
        }


def _declared_formats(metrics: Sequence[Metric]) -> dict[str, str]:
    """``{role: format}`` the metrics declare (:attr:`~mergeable_metrics.metrics.base.Metric.data_format`).

    Raises:
        ValueError: two metrics declare different formats for one role, or an unknown format.
    """
    out: dict[str, str] = {}
    by: dict[str, str] = {}
    for m in metrics:
        for role, name in m.data_format.items():
            get_format(name)
            if out.get(role, name) != name:
                raise ValueError(f"metrics {by[role]!r} and {m.key!r} declare different {role} formats ({out[role]!r} vs {name!r}): give formats= explicitly")
            out[role], by[role] = name, m.key
    return out


def _asked(m: "str | Metric", r: Metric) -> str:
    """A requested metric as the user wrote it (a string), else its canonical string."""
    return m.strip() if isinstance(m, str) else r.resolved_key


def metric_entries(metrics: Any) -> list[tuple[str | None, "str | Metric"]]:
    """``[(display name or None, metric string or Metric), ...]`` of a ``metrics`` argument.

    Accepts one metric string or :class:`~mergeable_metrics.metrics.base.Metric`, a sequence of them and of
    ``(display name, metric)`` pairs (``("val_f1", "f1@macro")``; JSON lists of two strings
    too) and mappings ``{display name: metric}``, or one such mapping.

    Raises:
        TypeError: an entry of another type.
    """

    def one(m: Any) -> bool:  # a metric string, a Metric, or a spec resolved per task (mergeable_metrics.metrics.measure.MeanMeasure)
        return isinstance(m, (str, Metric)) or (hasattr(m, "for_task") and not isinstance(m, (tuple, list, Mapping)))

    if one(metrics):
        metrics = [metrics]
    if isinstance(metrics, Mapping):
        return [(str(k), v) for k, v in metrics.items()]
    out: list[tuple[str | None, Any]] = []
    for m in metrics:
        if one(m):
            out.append((None, m))
        elif isinstance(m, (tuple, list)) and len(m) == 2 and isinstance(m[0], str) and one(m[1]):
            out.append((m[0], m[1]))
        elif isinstance(m, Mapping):  # {display name: metric} among the entries
            out += [(str(k), v) for k, v in m.items()]
        else:
            raise TypeError(f"a metric is a metric string, a Metric or a (display name, metric) pair, got {type(m).__name__} {m!r}")
    return out


def metric_aliases(metric_names: Mapping[str, str], keys: Iterable[str]) -> dict[str, str]:
    """``{other name: result key}``: the names that also find a result.

    Args:
        metric_names: ``{name the user wrote: canonical string}`` (:attr:`Plan.metric_names`,
            ``Results.config["metric_names"]``).
        keys: the result keys.

    A requested string finds its canonical key (``"f1"`` -> ``"f1@macro"``); a display name's
    canonical string finds the display name (``"f1@macro"`` -> ``"val_f1"``), unless it is
    itself a result key or two display names share it.
    """
    keys = set(keys)
    out: dict[str, str] = {}
    shared: set[str] = set()
    for name, canonical in metric_names.items():
        if name not in keys and canonical in keys:
            out.setdefault(name, canonical)
        elif name in keys and canonical not in keys:
            if canonical in out and out[canonical] != name:
                shared.add(canonical)
            out.setdefault(canonical, name)
    return {k: v for k, v in out.items() if k not in shared}


class MetricKeys:
    """The canonical key of any metric string the parser accepts, for one task (and classes).

    ``MetricKeys(task)("quantile_absolute_error@q=0.90")`` is ``"quantile_absolute_error@0.9"``,
    the key results use (:attr:`~mergeable_metrics.metrics.base.Metric.resolved_key`); None for a string that is
    not a metric of the task. Picklable (results cross process boundaries); resolved strings are
    remembered.
    """

    def __init__(self, task: Task, classes: Sequence[Any] | None = None):
        self.task = task
        self.classes = None if classes is None else tuple(classes)
        self._seen: dict[str, str | None] = {}

    def __call__(self, text: str) -> str | None:
        if text not in self._seen:
            try:
                with class_values(self.classes), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    self._seen[text] = resolve(text, self.task).resolved_key
            except (ValueError, TypeError):
                self._seen[text] = None
        return self._seen[text]

    def __reduce__(self) -> Any:
        return (MetricKeys, (self.task, self.classes))


class MetricValues(dict):
    """``{metric key: value}`` that also answers the names a user asked for, in any spelling.

    A plain ``dict`` of the result keys (iteration, ``len``, ``==`` and JSON are a dict's), whose
    ``[...]``, ``get`` and ``in`` also take the requested strings and display names' canonical
    strings of :func:`metric_aliases` (``values["f1"]`` for ``"f1@macro"``), and, given
    ``canonical`` (a :class:`MetricKeys`), every spelling of a key the metric-name parser accepts
    (``"quantile_absolute_error@q=0.90"`` finds ``"quantile_absolute_error@0.9"``; aliases of
    metric names and parameters in another order too). Iteration shows each key once.

    Example:
        >>> v = MetricValues({"f1@macro": 0.5}, {"f1": "f1@macro"})
        >>> v["f1"], "f1" in v, v.get("f1"), list(v), v == {"f1@macro": 0.5}
        (0.5, True, 0.5, ['f1@macro'], True)
    """

    def __init__(self, values: Any = (), aliases: Mapping[str, str] | None = None, canonical: "MetricKeys | None" = None):
        super().__init__(values)
        self.aliases = dict(aliases or {})
        self.canonical = canonical

    def _key(self, key: Any) -> Any:
        """The result key ``key`` names, or None."""
        if not isinstance(key, str):
            return None
        target = self.aliases.get(key)
        if target is not None and dict.__contains__(self, target):
            return target
        c = self.canonical(key) if self.canonical is not None else None
        if c is None:
            return None
        if dict.__contains__(self, c):
            return c
        target = self.aliases.get(c)  # a display name's canonical string
        return target if target is not None and dict.__contains__(self, target) else None

    def __missing__(self, key: Any) -> Any:
        target = self._key(key)
        if target is None:
            raise KeyError(key)
        return dict.__getitem__(self, target)

    def __contains__(self, key: Any) -> bool:
        return dict.__contains__(self, key) or self._key(key) is not None

    def get(self, key: Any, default: Any = None) -> Any:
        return self[key] if key in self else default

    def __reduce__(self) -> Any:
        return (MetricValues, (dict(self), self.aliases, self.canonical))


def _dependencies(m: Metric) -> list[Metric]:
    """Every metric ``m`` depends on, transitively (depth first, each key once).

    Raises:
        ValueError: a dependency cycle (naming the metrics).
    """
    out: dict[str, Metric] = {}

    def visit(x: Metric, path: tuple[str, ...]) -> None:
        for d in x.dependency_metrics().values():
            if d.key in path:
                raise ValueError(f"metric dependency cycle: {' -> '.join((*path, d.key))}")
            if d.key not in out:
                out[d.key] = d
                visit(d, (*path, d.key))

    if m.dependencies:
        visit(m, (m.key,))
    return list(out.values())


def show_value(v: Any) -> str:
    """A value or count as OnlineMetrics prints it: 6 decimals, arrays as lists."""
    if isinstance(v, np.ndarray):
        return "[" + ", ".join(show_value(x) for x in v.tolist()) + "]"
    if isinstance(v, (float, np.floating)):
        return repr(round(float(v), 6))
    return str(v)


def show_count(v: Any) -> str:
    """A count as OnlineMetrics prints it: whole numbers as integers."""
    if isinstance(v, np.ndarray):
        return "[" + ", ".join(show_count(x) for x in v.tolist()) + "]"
    if isinstance(v, (float, np.floating)) and float(v).is_integer():
        return str(int(v))
    return show_value(v)


def show_metric(name: str, value: Any, counts: dict[str, Any]) -> str:
    """One metric as OnlineMetrics prints it: ``accuracy: value=0.75 | correct=3 | n=4``."""
    shown = _fmt_value(value) if isinstance(value, Interval) else show_value(value)
    return " | ".join([f"{name}: value={shown}"] + [f"{k}={show_count(v)}" for k, v in counts.items()])


def _fmt_value(v: Any) -> str:
    if isinstance(v, np.ndarray):
        text = np.array2string(v, precision=4, separator=", ", max_line_width=10**6, threshold=24, edgeitems=3)
        return " ".join(text.split())
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def _check_parameter_keyword(key: str, value: str, metrics: Sequence[Any]) -> None:
    """A keyword of MetricCollection is a display name (``acc="accuracy"``); ``average="macro"``
    means a metric parameter. Raises ValueError saying so when ``key`` is a metric parameter's
    name and ``value`` names no metric, with the metric strings that set it."""
    try:
        if parse_metric_string(value)[0].lower() in REGISTRY or value in REGISTRY:
            return
    except ValueError:
        pass
    takes = [cls for cls in dict.fromkeys(REGISTRY.values()) if key in (cls.params or {})]
    if not takes:
        return
    ways = []
    for m in metrics:
        cls = REGISTRY.get(parse_metric_string(m)[0].lower()) if isinstance(m, str) else None
        if cls is not None and key in (cls.params or {}):
            ways += ([f"'{m}@{value}'"] if cls.positional == key else []) + [f"'{m}@{key}={value}'"]
    raise ValueError(
        f"MetricCollection: {key}={value!r} is read as a metric named {key!r} (keywords other than its options are display "
        f'names of metrics, acc="accuracy"), and {value!r} is no metric; {key} is a metric parameter: write '
        + (" or ".join(ways) if ways else f"'<metric>@{key}={value}'")
        + " in the metric string"
    )


_COLLECTION_OPTIONS = (
    "num_classes", "threshold", "threshold_rule", "zero_division", "multiclass", "task", "ignore_index",
    "formats", "measures", "classes", "pos_label", "num_outputs",
)  # fmt: skip


def _swapped_hint(message: str, kind: str, y_true: Any, y_score: Any) -> str:
    """The hint for a binary ``update`` whose labels are invalid while its scores are all 0 or 1:
    the arguments were likely given in torchmetrics' order, ``update(preds, target)``; "" else."""
    if kind != "binary" or y_score is None or not message.startswith("column 'y_true': invalid value"):
        return ""
    try:
        s = np.asarray(y_score, dtype=np.float64)
    except (TypeError, ValueError):
        return ""
    if s.ndim != 1 or not s.size or not np.isin(s, (0.0, 1.0)).all():
        return ""
    return (
        "; the scores are all 0 or 1: were the arguments swapped? update's positional order is scikit-learn's, "
        "update(y_true, y_score) (torchmetrics' is update(preds, target)); keywords avoid it: update(y_true=..., y_score=...)"
    )


@public("mergeable_metrics")
class MetricCollection:
    """A set of metrics updated together, sharing their states.

    Args:
        *metrics: metric strings or :class:`~mergeable_metrics.metrics.base.Metric` objects (none: task defaults).
        num_classes: None or 2 for binary tasks (labels in {0, 1}); K > 2 for multiclass
            (labels and predictions in [0, K)).
        threshold: default decision threshold for binary scores (``score >= threshold`` is
            positive with the default ``threshold_rule=">="``).
        threshold_rule: ``">="`` or ``">"``.
        zero_division: 0, 1, "nan" (our default) or "warn" (0.0 plus a warning), as scikit-learn.
        multiclass: treat ``num_classes=2`` as a multiclass task (both classes averaged).
        task: ``"binary"``, ``"multiclass"``, ``"multilabel"`` or ``"regression"`` (or a
            :class:`~mergeable_metrics.metrics.base.Task`, which then replaces the other task arguments); None infers
            binary or multiclass from ``num_classes``. For multilabel, ``num_classes`` is the
            number of labels.
        ignore_index: drop rows (pixels) whose label equals it (binary/multiclass); a class id in
            [0, K) also leaves the macro averages.
        formats: input format per argument, e.g. ``{"y_score": "logits", "y_true": "onehot"}``
            (see :mod:`mergeable_metrics.inputs.formats`); by default the format a metric declares
            (:attr:`~mergeable_metrics.metrics.base.Metric.data_format`), else the one the task and the shapes imply.
        measures: named measures (see :mod:`mergeable_metrics.metrics.measure`): ``{"loss": fn, "mae": fn2}``
            (``fn(y_true, y_pred) -> per-sample values or one per-batch value``; None: the values
            are given to ``update(measure={name: values})``), or a list of names whose values are
            given. Each is computed as ``MeanMeasure(fn, name)``: its key is its name.
        classes: the class values when labels are not ``0..K-1`` (``["cat", "dog"]``,
            ``[-1, 1]``): ``y_true`` and ``y_pred`` values are mapped to their index in the list
            (a value outside it raises, naming it and its row); ``num_classes`` defaults to its
            length; per-class values are in its order. See :mod:`mergeable_metrics.inputs.labels`.
        pos_label: with two ``classes``, the positive class's value (default: the second).
        num_outputs: multioutput regression: D >= 1 outputs, (N, D) targets and predictions
            (implies ``task="regression"``); regression metrics take scikit-learn's
            ``multioutput`` (``"r2@multioutput=raw_values"``). None: (N,) targets.

        **named: metrics under display names, ``acc="accuracy"``: the result key is the
            name (as are ``("val_f1", "f1@macro")`` pairs among ``metrics``).

    Result keys: a metric's display name when it has one, else its canonical string
    (``"f1"`` of a multiclass task is ``"f1@macro"``). :meth:`compute` returns a
    :class:`MetricValues`, so the name a user wrote finds its value either way
    (``compute()["f1"]``); :attr:`resolved_names` maps the names to the canonical strings.

    Undefined values are NaN with one :class:`~mergeable_metrics.metrics.base.UndefinedMetricWarning` per metric
    naming it and its classes (none with ``zero_division`` 0 or 1).

    Merging: ``a.merge(b)`` merges ``b`` into ``a`` in place and returns ``a`` (``b`` unchanged);
    :func:`mergeable_metrics.merge` ``(a, b, ...)`` returns a new collection and
    leaves its inputs unchanged.

    Thread safety: ``update``, ``merge``, ``reset``, ``decode`` and ``compute`` may be called from
    several threads at once: a batch is validated and folded outside a lock, and only the swap of
    the states is locked, so no update is lost (a running score distribution that nobody else
    holds is folded in place under the lock instead: no copy of its table per batch). The
    ``states`` are immutable values: a tuple read from ``states`` keeps its value and bytes
    whatever is folded afterwards (reading them, ``compute``, ``encode``, ``merge``, copies and
    pickles mark them shared, and the next update copies what it folds into once). The mean of one
    measure keeps its running sums in the collection between fast updates and builds its states
    when they are first read (under the lock; ``compute`` divides the running sums as they are).
    Collections copy, deep-copy and pickle (the lock is not part of the state).

    Example:
        >>> mc = MetricCollection("precision", "recall", "f1")
        >>> mc.update([1, 0, 1, 1], y_score=[0.9, 0.6, 0.4, 0.5])
        >>> {k: round(v, 4) for k, v in mc.compute().items()}
        {'precision': 0.6667, 'recall': 0.6667, 'f1': 0.6667}
    """

    def __init__(
        self,
        *metrics: str | Metric,
        num_classes: int | None = None,
        threshold: float = 0.5,
        threshold_rule: str = ">=",
        zero_division: Any = "nan",
        multiclass: bool = False,
        task: "str | Task | None" = None,
        ignore_index: int | None = None,
        formats: dict[str, str] | None = None,
        measures: "dict[str, Any] | Sequence[str] | None" = None,
        classes: Sequence[Any] | None = None,
        pos_label: Any = None,
        num_outputs: int | None = None,
        **named: str | Metric,
    ):
        for k, v in named.items():  # a keyword whose value is no metric: a misspelt option, not a display name
            if not isinstance(v, (str, Metric)) and not hasattr(v, "for_task"):  # (mergeable_metrics.metrics.base.resolve)
                close = difflib.get_close_matches(k, _COLLECTION_OPTIONS, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise TypeError(
                    f"MetricCollection got an unexpected keyword argument {k}={v!r}{hint}; other keywords are display "
                    f'names of metrics (acc="accuracy"); its options are {", ".join(_COLLECTION_OPTIONS)}'
                )
            if isinstance(v, str):
                _check_parameter_keyword(k, v, metrics)
        key = None
        if not named and classes is None and pos_label is None and not formats:
            key = _plan_key(metrics, measures, (num_classes, threshold, threshold_rule, zero_division, multiclass, task, ignore_index, num_outputs))
        built = _PLANS.get(key) if key is not None else None
        if built is not None:  # the same simple arguments as an earlier collection: a copy of its plan
            self.classes, self._swap_scores = None, False
            self.plan = copy.copy(built)
            self.formats = dict(built.data_formats)
        else:
            self.classes, num_classes = resolve_classes(classes, pos_label, num_classes, multiclass, task)
            self._swap_scores = columns_reversed(classes, self.classes)
            task = make_task(task, num_classes, threshold, threshold_rule, zero_division, multiclass, ignore_index, num_outputs)
            self.plan = Plan([*metrics, *named.items(), *_measure_specs(measures)] or None, task, self.classes)
            self.formats = {**self.plan.data_formats, **_collection_formats(formats)}  # the caller's win
            if key is not None and self.classes is None and not self._swap_scores:
                template = copy.copy(self.plan)
                template.mean_fold_at, template.aliases  # noqa: B018 - computed once, for every copy
                if len(_PLANS) >= 256:
                    _PLANS.clear()
                _PLANS[key] = template
        if self.classes is not None and any(self.formats.get(r) not in (None, "labels", "label_map") for r in ("target", "prediction")):
            raise ValueError(f"classes= maps label values; formats {self.formats} hold no label values for y_true / y_pred")
        self._lock = threading.RLock()
        self._states = self.plan.zero()
        self._rows = 0

    @property
    def states(self) -> tuple[State, ...]:
        """The running states (immutable values: a tuple kept by the caller keeps its value and
        bytes whatever is folded afterwards)."""
        with self._lock:
            if self._pend is not None:
                self._settle()
            states = self._states
            score_running.share(states)  # observed: the next update copies what it folds into
        return states

    @states.setter
    def states(self, states: tuple[State, ...]) -> None:
        with self._lock:
            if self._defer(lambda: setattr(self, "states", states)):
                return
            score_running.share(states)  # the caller holds them
            self._states, self._pend = states, None

    def _defer(self, op: Any) -> bool:
        """Within this thread's in-place fold (:meth:`update` holds the lock, so only this
        thread can get here, from within the fold): run ``op`` after it (True)."""
        pending = self.__dict__.get("_deferred")
        if pending is None:
            return False
        pending.append(op)
        return True

    def __getstate__(self) -> dict[str, Any]:
        with self._lock:
            if self._pend is not None:
                self._settle()
            state = dict(self.__dict__)
            score_running.share(self._states)  # a copy shares them
        del state["_lock"]
        state.pop("_pend", None)  # (None once settled: the class's default; pickles as before)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        if "states" in state:  # pickled before the states became a property
            state["_states"] = state.pop("states")
        self.__dict__.update(state)
        self._lock = threading.RLock()

    @property
    def task(self) -> Task:
        return self.plan.task

    @property
    def resolved_names(self) -> dict[str, str]:
        """``{result key or requested name: canonical metric string}`` of every metric, e.g.
        ``{"f1": "f1@macro", "val_f1": "f1@macro", "accuracy": "accuracy"}``."""
        return {**{m.key: m.resolved_key for m in self.plan.metrics}, **self.plan.metric_names}

    def describe(self) -> dict[str, Any]:
        """JSON-ready description of the task, metrics (``"metric_names"``: requested and display
        names -> canonical strings) and states (:meth:`Plan.describe`)."""
        return self.plan.describe()

    @property
    def fingerprint(self) -> dict[str, Any]:
        """The settings that change what the states hold (see :attr:`Plan.fingerprint`), with
        the input ``formats`` when any are given; :meth:`merge` and :meth:`decode` check it."""
        fp = self.plan.fingerprint
        if self.classes is not None:
            fp = {**fp, "classes": list(self.classes)}
        return {**fp, "formats": dict(sorted(self.formats.items()))} if self.formats else fp

    def update(
        self,
        y_true: Any = None,
        y_score: Any = None,
        y_pred: Any = None,
        sample_weight: Any = None,
        measure: Any = None,
        query: Any = None,
        **unknown: Any,
    ) -> None:
        """Fold one batch.

        Args:
            y_true: labels: (N,) 0/1 (binary) or [0, K) ints, (N, K) one-hot, (N, H, W) label maps
                (segmentation), (N, L) 0/1 (multilabel), (N,) float targets (regression) or (N, D)
                (``num_outputs=D``); lists, numpy, pandas or Arrow.
            y_score: scores: (N,) binary scores (thresholded), (N, K) class scores or probabilities
                (argmax predicts; top-k and log loss read them), (N, K, H, W) score maps, (N, L)
                multilabel scores (thresholded).
            y_pred: predictions: (N,) labels, (N, K) one-hot, (N, H, W) label maps, (N, L) 0/1
                (multilabel), (N,) floats (regression) or (N, D) (``num_outputs=D``).
            sample_weight: (N,) finite non-negative weights per row; None for 1.
            measure: (N,) finite per-example (or per-batch) values for mean-of-measure metrics;
                with named measures ``{name: (N,) values}`` (a measure given as a function is
                computed from ``y_true`` and ``y_pred`` / ``y_score`` when its values are not
                given; with one named measure, plain values are its values).
            query: (N,) query ids (ints or strings) for the ranking and retrieval metrics
                (:mod:`mergeable_metrics.metrics.retrieval`; ``y_true`` is the relevance, >= 0).

        Other libraries' keywords are refused, not guessed: ``preds=`` / ``target=`` (torchmetrics),
        ``y_prob=``, ``weights=`` raise ``TypeError`` naming the keyword to write.

        Raises:
            ValueError: length or shape mismatch, out-of-range or NaN labels/predictions, NaN/inf
                scores, negative or NaN weights (naming column, value, row and entry); inputs a
                metric needs are missing (naming the metric).
            TypeError: non-numeric values.
        """
        if measure is not None and y_true is None and y_score is None and y_pred is None and query is None and not unknown:
            at = self.plan.mean_fold_at
            if at is not None and self._fold_mean(measure, sample_weight, at):
                return
        if unknown:
            _refuse_update_keywords(type(self).__name__, unknown)
        plan = self.plan
        task = plan.task
        kind = task.kind
        if kind == "binary" and y_score is None and y_pred is None and "prediction" in plan.needs:
            raise ValueError("binary metrics need y_score or y_pred")
        if kind == "multiclass" and y_pred is None and y_score is None and "prediction" in plan.needs:
            raise ValueError("multiclass metrics need y_pred (predicted labels) or y_score (class scores)")
        if kind == "multiclass" and y_pred is None and y_score is not None and _ndim(y_score) == 1:
            raise ValueError(
                f"a multiclass task reads y_score as (N, K) class scores, got shape {np.shape(y_score)}: "
                "for predicted labels pass y_pred= (update(y_true, y_pred=labels))"
            )
        if self.classes is not None:  # class values -> indices (see mergeable_metrics.inputs.labels)
            y_true = None if y_true is None else encode_labels(y_true, self.classes, "y_true", self._rows)
            y_pred = None if y_pred is None else encode_labels(y_pred, self.classes, "y_pred", self._rows)
            if self._swap_scores and y_score is not None and np.ndim(y_score) == 2:  # see mergeable_metrics.inputs.labels.columns_reversed
                y_score = swap_score_columns(y_score)
        measure_name: Any = "measure"
        names = plan.measure_names
        if names:
            measure, measure_name = self._measures(measure, y_true, y_pred, y_score), list(names)
            if not plan.needs - {"measure"}:  # only measures: their functions read the inputs, the states do not
                y_true = y_score = y_pred = None
        elif isinstance(measure, dict):
            raise ValueError(f"measure={{...}} names measures, but this collection has none (measures=... names them); got {sorted(measure)}")
        plan.check_roles(y_true is not None, y_score is not None, y_pred is not None, measure is not None, query is not None)
        try:
            batch, _ = make_batch(
                num_classes=task.num_classes,
                y_true=y_true,
                y_score=y_score,
                y_pred=y_pred,
                sample_weight=sample_weight,
                row_offset=self._rows,
                task=task,
                formats=self.formats,
                values=measure,
                measure_name=measure_name,
                needs=plan.needs,
                count_cells=plan.count_cells,
                regression_sums=plan.regression_sums,
            )
        except ValueError as e:
            hint = _swapped_hint(str(e), kind, y_true, y_score)
            if hint:
                raise ValueError(f"{e}{hint}") from None
            raise
        if query is not None:
            ids = as_array(query, "query")
            batch, _ = with_query_keys(batch, ids, np.arange(ids.shape[0]) + self._rows, ("query", "y_true"))
        rows = _rows_in(batch, y_true, y_pred, y_score, measure[0] if isinstance(measure_name, list) and measure else measure)
        # running score distributions nobody else holds (not handed out by ``states``, encoded,
        # merged or computed since the last fold) are folded in place, under the lock (no copy of
        # their tables; a reader waits for the fold, then shares them: the next fold copies)
        with self._lock:
            if self._pend is not None:
                self._settle()
            before = self._states
            if score_running.owned(before):
                self._deferred: list[Any] | None = []  # a merge, reset or set from within the fold waits for it
                try:
                    with running_folds(in_place=True):
                        self._states = plan.fold(before, batch)
                    self._rows += rows
                except BatchRowError as e:  # see below
                    raise e.at(self._rows) from None
                finally:
                    pending, self._deferred = self._deferred, None
                for op in pending:
                    op()
                return
            score_running.share(before)  # folded outside the lock below, maybe by several threads
        # the heavy work outside the lock: fold the batch into the states as they are (a state's
        # own fold is cheaper than binning the batch alone and merging, e.g. a score distribution
        # looks rows up in its bins), and keep it if no other thread updated meanwhile; else
        # merge the batch's own states (the same result: a fold equals that merge, bit for bit)
        try:
            with running_folds():  # score distributions fold into raw running bins (canonical where observed)
                folded = plan.fold(before, batch)
        except BatchRowError as e:  # a state's own check (e.g. |p - y| past float64): name the input row
            raise e.at(self._rows) from None
        with self._lock:
            if self._states is before and self._pend is None:
                self._states = folded
                self._rows += rows
                return
        part = plan.fold(plan.zero(), batch)
        with self._lock:
            if self._pend is not None:
                self._settle()
            self._states = plan.merge(self._states, part)
            self._rows += rows

    def _fold_mean(self, v: Any, w: Any, at: tuple[int, int]) -> bool:
        """``update``'s fast path for a collection of one measure's mean (:attr:`Plan.mean_fold_at`):
        a plain (N,) float64 numpy column (with one named measure, also ``{name: column}``) and
        plain float64 weights or None are checked and added to the running sums by one compiled
        call (:func:`~mergeable_metrics._util.exact_kernels.mean_fold`: the exact sums of
        :meth:`~mergeable_metrics.metrics.measure.MeanMeasureState.fold`, bit for bit). The sums
        run as raw kernel limbs held by the collection (``_pend``, on top of ``_states``); the two
        states are built from them only when the states are read (:meth:`_settle`). Returns
        False, having folded nothing, for any other input, an invalid value (the general path then
        names it: column, value, row), a count that would pass 2**63 - 1 or a concurrent update
        (the general path merges)."""
        if type(v) is dict and len(v) == 1:
            names = self.plan.measure_names
            v = v.get(names[0]) if names else None
        if not (type(v) is np.ndarray and v.dtype == _F64 and v.ndim == 1):
            return False
        flags = v.flags
        n = v.shape[0]
        if not (flags.c_contiguous and 0 < n <= _kernels.CHUNK) or (self.formats and any(self.formats.values())) or not _kernels.ready():
            return False
        if not flags.writeable:
            v = v.copy()  # (the kernels take writeable arrays: one compiled variant)
        has_w = w is not None
        if has_w:
            if not (type(w) is np.ndarray and w.dtype == _F64 and w.shape == v.shape and w.flags.c_contiguous):
                return False
            if not w.flags.writeable:
                w = w.copy()
        else:
            w = _kernels._EMPTYF
        p = self._pend
        if p is None or p[5] is not has_w:
            with self._lock:
                p = self._mean_pending(at, has_w)
            if p is None:
                return False
        T, eT, W, eW, m, _, room, _ = p
        if m + n > room:  # a count past 2**63 - 1: the general path raises
            return False
        got = _kernels.mean_fold(v, w, has_w, T, eT, W, eW)
        if got[4] >= 0:
            return False
        q = (got[0], got[1], got[2], got[3], m + n, has_w, room, at)
        with self._lock:
            if self._pend is p:
                self._pend = q
                self._rows += n
                return True
        return False

    #: the mean's running sums not yet in ``_states`` (:meth:`_fold_mean`): None, or ``(T, eT,
    #: W, eW, rows, weighted, room, at)``, the raw limbs of the running ``sum v [w]`` and (weighted)
    #: ``sum w`` from ``_states`` on, the rows folded since, and the rows the counts have room for
    _pend: tuple | None = None

    def _mean_pending(self, at: tuple[int, int], has_w: bool) -> tuple | None:
        """(Under the lock.) The running sums the fast path adds a batch to, weighted or not,
        started from the states (after settling sums of the other kind); None when the general
        path must fold (the two weight sums differ: states built elsewhere)."""
        p = self._pend
        if p is not None:
            if p[5] is has_w:
                return p
            self._settle()
        if self.__dict__.get("_deferred") is not None:
            return None
        states = self._states
        cs, ms = states[at[0]], states[at[1]]
        total, weight = ms.exact["total"], ms.exact["weight"]
        T, eT = total.kernel_raw()
        if has_w:
            if not weight.same_sum(cs.exact["weight"]):
                return None
            W, eW = weight.kernel_raw()
        else:
            W, eW = T, 0  # (not read unweighted)
        room = (1 << 63) - 1 - max(cs.arrays["count"].item(), ms.arrays["count"].item())
        p = self._pend = (T, eT, W, eW, 0, has_w, room, at)
        return p

    def _settle(self) -> None:
        """(Under the lock.) The two states of the running sums the fast path keeps (``_pend``),
        built from them once (:meth:`State._of_fields`): what reading the states sees."""
        p, self._pend = self._pend, None
        if p is None or not p[4]:
            return
        T, eT, W, eW, n, has_w, _, (ic, im) = p
        cs, ms = self._states[ic], self._states[im]
        total, weight, cweight = ms.exact["total"], ms.exact["weight"], cs.exact["weight"]
        if has_w:
            new_weight = ExactSums.lazy(W, eW, weight.shape)
            new_cweight = new_weight if cweight.shape == weight.shape else ExactSums.lazy(W, eW, cweight.shape)
        else:
            new_weight = weight.plus_rows(n)
            new_cweight = new_weight if cweight is weight else cweight.plus_rows(n)
        ca, ma = cs.arrays, ms.arrays
        folded = [cs, ms]
        folded[ic] = type(cs)._of_fields(cs.layout, {"count": _plus_count(ca["count"], n), "skipped": ca["skipped"]}, {"weight": new_cweight})
        folded[im] = type(ms)._of_fields(ms.layout, {"count": _plus_count(ma["count"], n)}, {"weight": new_weight, "total": ExactSums.lazy(T, eT, total.shape)})
        self._states = tuple(folded)

    def _measures(self, measure: Any, y_true: Any, y_pred: Any, y_score: Any) -> list[Any] | None:
        """The named measures' values of one batch, in :attr:`Plan.measure_names` order (None
        when no measure is given and none is a function).

        Raises:
            ValueError: an unknown measure name, or a measure with neither values nor function.
        """
        names = self.plan.measure_names
        if len(names) == 1 and measure is not None and not isinstance(measure, dict):
            return [measure]  # one named measure: plain values are its values
        fns = self.plan.measure_fns
        if measure is None:
            given: dict[str, Any] = {}
        elif isinstance(measure, dict):
            given = dict(measure)
            unknown = sorted(set(given) - set(names))
            if unknown:
                raise ValueError(f"measure: unknown measure name(s) {unknown}; this collection's measures are {list(names)}")
        elif len(names) == 1:
            given = {names[0]: measure}
        else:
            raise ValueError(f"this collection has named measures {list(names)}: give measure={{name: values, ...}}")
        missing = [m for m in names if m not in given and m not in fns]
        if not given and len(missing) == len(names):
            return None  # no measure at all: check_inputs names the metric that needs one
        if missing:
            raise ValueError(f"measure {missing[0]!r} has no function: give its values, update(..., measure={{{missing[0]!r}: values}})")
        out = []
        for m in names:
            if m in given:
                out.append(given[m])
                continue
            if y_true is None:
                raise ValueError(f"measure {m!r} is a function of y_true and y_pred: give y_true")
            t = np.asarray(y_true)
            p = np.asarray(y_pred if y_pred is not None else y_score) if (y_pred is not None or y_score is not None) else None
            out.append(measure_values(fns[m], m, t, p, len(t)) if len(t) else np.zeros(0))
        return out

    #: ``merge`` merges ``other`` into this object in place (an object you ``update``); the
    #: module-level :func:`mergeable_metrics.merge` copies it first (see :func:`mergeable_metrics.collection.tracker.merge`)
    MERGES_IN_PLACE = True

    def merge(self, other: "MetricCollection") -> "MetricCollection":
        """Merge another collection's states into this one in place and return this one
        (``other`` is left unchanged; thread-safe): ``for w in workers: total.merge(w)`` then
        ``total.compute()``, or ``c = a.merge(b)`` (``c`` is ``a``). :func:`mergeable_metrics.merge`
        returns a new collection and leaves its inputs unchanged.

        Raises:
            TypeError: ``other`` is not a :class:`MetricCollection`.
            ValueError: the other collection has a different configuration (names the setting:
                a state layout such as the thresholds, or a :attr:`fingerprint` setting such as
                ``ignore_index`` or the input formats), or other metrics (``accuracy`` merged
                with ``iou@none``, ``ndcg@k=3`` with ``ndcg@k=5``); this one is left unchanged.
        """
        if not isinstance(other, MetricCollection):
            raise TypeError(f"cannot merge {type(other).__name__} into a {type(self).__name__}")
        codec.check_fingerprint(self.fingerprint, other.fingerprint, f"cannot merge: the {type(other).__name__}'s states")
        with other._lock:  # a consistent snapshot of the other; never both locks at once
            states, rows = other.states, other._rows
        with self._lock:
            if self._defer(lambda: self.merge(other)):
                return self
            if self._pend is not None:
                self._settle()
            merged = self.plan.merge(self._states, states)  # a state's setting is named first
            mine, theirs = sorted(self.resolved_names.values()), sorted(other.resolved_names.values())
            if mine != theirs:  # the same states, other metrics: the merged object would report only this one's
                raise ValueError(f"cannot merge: the metrics differ ({', '.join(mine)} vs {', '.join(theirs)}); merge collections of the same metrics")
            score_running.share(merged)  # merge may hand back the other's states as they are
            self._states = merged
            self._rows += rows
        return self

    def reset(self) -> None:
        with self._lock:
            if self._defer(self.reset):
                return
            self._states, self._pend = self.plan.zero(), None
            self._rows = 0

    def compute(self) -> dict[str, Any]:
        """``{metric key: value}`` (a :class:`MetricValues`: requested names find their values
        too); scalars as float, per-class and matrices as numpy arrays."""
        at = self.plan.mean_fold_at
        if at is not None:  # the mean of one measure: its quotient without the general machinery
            with self._lock:
                p, ms = self._pend, self._states[at[1]]
            weight, total = ms.exact["weight"], ms.exact["total"]
            if p is not None and p[4]:  # the running sums of the fast path, read as they are (no states built)
                total = ExactSums.lazy(p[0], p[1], total.shape)
                weight = ExactSums.lazy(p[2], p[3], weight.shape) if p[5] else weight.plus_rows(p[4])
            got = self._compute_mean(ms.layout.names, weight, total)
            if got is not None:
                return got
        return self.plan.compute(self.states)

    def _compute_mean(self, names: tuple[str, ...], weight: ExactSums, total: ExactSums) -> MetricValues | None:
        """:meth:`compute` of a collection of one measure's mean (:attr:`Plan.mean_fold_at`) whose
        weight is not zero: each metric's value is the correctly rounded quotient of the exact
        sums (:meth:`MeanMeasureMetric.compute`), nothing is undefined, so no warning is due.
        None otherwise (the general path then computes and warns)."""
        plan = self.plan
        values = {}
        for m in plan.metrics:
            if type(m) is not MeanMeasureMetric or (names and m.measure_name not in names):
                return None
            i = names.index(m.measure_name) if names else 0
            if not weight.integer(i)[0]:  # no weight: undefined (NaN and a warning)
                return None
            values[m.key] = exact_quotient(total, weight, i)
        return MetricValues(values, plan.aliases, MetricKeys(plan.task, plan.classes))

    def encode(self) -> bytes:
        """Versioned bytes of the states and the :attr:`fingerprint` (see :mod:`mergeable_metrics.states.codec`)."""
        return self.plan.encode(self.states, self.fingerprint)

    def decode(self, data: bytes) -> "MetricCollection":
        """A new collection of this configuration holding the states of ``data`` (bytes from
        :meth:`encode` of an equal collection); this one is left unchanged:
        ``total.merge(total.decode(blob))`` merges a worker's bytes in.

        Raises:
            ValueError: corrupted bytes, bytes of a collection of another configuration (naming
                the setting), or values no data can produce.
        """
        states = self.plan.decode(data, self.fingerprint)
        out = copy.copy(self)  # its own lock (``__getstate__``); the states are immutable
        out.states, out._rows = states, 0
        return out

    def __repr__(self) -> str:
        t = self.task
        head = f"{type(self).__name__}(task={t.kind}, num_classes={t.num_classes}, threshold={t.threshold:g} ({t.threshold_rule}), zero_division={t.zero_division})"
        values = self.plan.compute_with_bounds(self.states, warn=False)[0]
        by_kind = {s.kind: s for s in self.states}
        lines = [head, "├── states"]
        for i, s in enumerate(self.states):
            lines.append(f"│   {'└' if i == len(self.states) - 1 else '├'}── {s.summary()}")
        lines.append("└── metrics")
        for i, m in enumerate(self.plan.metrics):
            kinds = ", ".join(cls.kind for cls, _ in m.requires() if cls is not ExampleCountState) or "example_count"
            shown = m.key if m.key == m.resolved_key else f"{m.key} ({m.resolved_key})"
            text = show_metric(shown, values[m.key], m.counts(by_kind))  # the value and its counts, as OnlineMetrics prints them
            lines.append(f"    {'└' if i == len(self.plan.metrics) - 1 else '├'}── {text}  [{kinds}]")
        return "\n".join(lines)


_UPDATE_KEYWORDS = ("y_true", "y_score", "y_pred", "sample_weight", "measure", "query")
_SCORES_OR_LABELS = "scores or probabilities are y_score=, predicted labels y_pred="
# other libraries' update() keywords -> (whose, what to write here); never read as ours
_FOREIGN_UPDATE_KEYWORDS = {
    "preds": ("torchmetrics' name", _SCORES_OR_LABELS),
    "pred": ("", _SCORES_OR_LABELS),
    "predictions": ("", _SCORES_OR_LABELS),
    "prediction": ("", _SCORES_OR_LABELS),
    "y_hat": ("", _SCORES_OR_LABELS),
    "output": ("", _SCORES_OR_LABELS),
    "input": ("torcheval's name", _SCORES_OR_LABELS),
    "y_prob": ("", "scores or probabilities are y_score="),
    "y_proba": ("", "scores or probabilities are y_score="),
    "probs": ("", "scores or probabilities are y_score="),
    "probabilities": ("", "scores or probabilities are y_score="),
    "scores": ("", "scores or probabilities are y_score="),
    "score": ("", "scores or probabilities are y_score="),
    "y_scores": ("", "scores or probabilities are y_score="),
    "logits": ("", "scores or probabilities are y_score="),
    "target": ("torchmetrics' name", "the labels are y_true="),
    "targets": ("", "the labels are y_true="),
    "labels": ("", "the labels are y_true="),
    "label": ("", "the labels are y_true="),
    "y": ("", "the labels are y_true="),
    "y_test": ("", "the labels are y_true="),
    "weight": ("", "the weights are sample_weight="),
    "weights": ("", "the weights are sample_weight="),
    "sample_weights": ("", "the weights are sample_weight="),
}


def _refuse_update_keywords(owner: str, unknown: Mapping[str, Any], accepted: Sequence[str] = _UPDATE_KEYWORDS) -> None:
    """Raise ``TypeError`` for keywords ``update`` does not take, naming the one to write
    (``preds=`` -> ``y_score=`` / ``y_pred=``, ``target=`` -> ``y_true=``) instead of reading a
    guessed one. Nothing is folded."""
    if not unknown:
        return
    k = sorted(unknown)[0]
    whose, right = _FOREIGN_UPDATE_KEYWORDS.get(k, ("", ""))
    if not right:
        close = difflib.get_close_matches(k, list(accepted), n=1, cutoff=0.6)
        right = f"did you mean {close[0]}=?" if close else ""
    takes = ", ".join(f"{a}=" for a in accepted)
    raise TypeError(
        f"{owner}.update() got an unexpected keyword argument {k!r}{f' ({whose})' if whose else ''}: {right + '; ' if right else ''}it takes {takes}"
    )


_F64 = np.dtype(np.float64)


def _plus_count(a: np.ndarray, n: int) -> np.ndarray | None:
    """A read-only int64 count of shape () or (1,), ``a + n`` (None past 2**63 - 1)."""
    r = a.item() + n
    if r >= 1 << 63:
        return None
    out = np.array([r] if a.ndim else r, dtype=np.int64)
    out.setflags(write=False)
    return out


def _rows_in(batch: Batch, *columns: Any) -> int:
    """Input rows of a batch (images for maps; rows dropped by ignore_index included)."""
    if batch.row_of is None:
        return batch.n
    for c in columns:
        if c is not None:
            return len(c)
    return batch.n


#: plans of collections built from simple arguments (:func:`_plan_key`), copied by the next
#: collection of the same arguments (building a plan resolves every metric: ~25 us hot, 100-200
#: us when the caches are cold); each collection has its own copy (its attributes its own)
_PLANS: dict[tuple, "Plan"] = {}
_SCALARS = (type(None), bool, int, float, str)


def _plan_key(metrics: tuple, measures: Any, options: tuple) -> tuple | None:
    """The key of a collection's plan in :data:`_PLANS` when its metrics are strings, its
    measures names and its options plain scalars (each with its type: ``0`` and ``False`` differ),
    else None (not cached)."""
    if not all(type(m) is str for m in metrics):
        return None
    if measures is not None:
        if type(measures) is str:
            measures = (measures,)
        elif type(measures) not in (list, tuple) or not all(type(m) is str for m in measures):
            return None
        measures = tuple(measures)
    if not all(type(o) in _SCALARS for o in options):
        return None
    return (metrics, measures, tuple((type(o), o) for o in options))


def _measure_specs(measures: Any) -> list[MeanMeasure]:
    """``measures=`` of a collection as :class:`~mergeable_metrics.metrics.measure.MeanMeasure` specs."""
    if measures is None:
        return []
    if isinstance(measures, str):
        measures = [measures]
    if isinstance(measures, dict):
        return [MeanMeasure(fn, name=name) for name, fn in measures.items()]
    return [MeanMeasure(None, name=name) for name in measures]


def _collection_formats(formats: dict[str, str] | None) -> dict[str, str]:
    """``{"y_true": f, "y_pred": f, "y_score": f, "measure": f}`` (or role names) -> role -> format."""
    alias = {"y_true": "target", "y_pred": "prediction", "y_score": "score", "measure": "measure"}
    out = {}
    for k, v in (formats or {}).items():
        role = alias.get(k, k)
        if role not in ("target", "prediction", "score", "measure"):
            raise ValueError(f"formats: unknown argument {k!r}; use y_true, y_pred, y_score or measure")
        out[role] = v
    if out:
        for v in out.values():
            get_format(v)
    return out


@public("mergeable_metrics")
class BinaryMetrics(MetricCollection):
    """Binary confusion metrics at one threshold: ``tp, fp, tn, fn, precision, recall, f1, accuracy``.

    Args:
        threshold: ``score >= threshold`` is predicted positive (``>`` with ``threshold_rule=">"``).
        zero_division: value for undefined ratios; default NaN (see :class:`MetricCollection`).
        threshold_rule: ``">="`` or ``">"``.

    Undefined values: precision with no predicted positives, recall with no positives, F1 with
    neither, and accuracy with no examples are NaN unless ``zero_division`` says otherwise
    (accuracy over no examples is always NaN). ``merge(other)`` merges ``other`` into this one
    in place and returns it; merging collections of different thresholds raises ``ValueError``.
    Source: ``sklearn.metrics.precision_recall_fscore_support(average="binary")``.

    Example:
        >>> bm = BinaryMetrics(threshold=0.5)
        >>> bm.update([1, 0, 1, 0], [0.8, 0.7, 0.2, 0.1])
        >>> r = bm.compute()
        >>> r["tp"], r["fp"], r["tn"], r["fn"], r["precision"], r["accuracy"]
        (1.0, 1.0, 1.0, 1.0, 0.5, 0.5)
    """

    METRICS = ("tp", "fp", "tn", "fn", "precision", "recall", "f1", "accuracy")

    def __init__(self, threshold: float = 0.5, zero_division: Any = "nan", threshold_rule: str = ">="):
        super().__init__(*self.METRICS, threshold=threshold, threshold_rule=threshold_rule, zero_division=zero_division)

    def update(self, y_true: Any = None, y_score: Any = None, sample_weight: Any = None, *, y_pred: Any = None, **unknown: Any) -> None:  # type: ignore[override]
        """Fold a batch of (N,) labels in {0, 1} and either (N,) finite scores ``y_score``
        (``score >= threshold`` predicts positive) or (N,) 0/1 predicted labels ``y_pred=``
        (the threshold is not applied), optional (N,) weights.

        Raises:
            TypeError: both ``y_score`` and ``y_pred``, or another library's keyword
                (``preds=`` / ``target=``, ``y_prob=``, ``weights=``; the message names ours).
        """
        _refuse_update_keywords(type(self).__name__, unknown, ("y_true", "y_score", "y_pred", "sample_weight"))
        if y_score is not None and y_pred is not None:
            raise TypeError(f"{type(self).__name__}.update(): give y_score= (scores, thresholded) or y_pred= (0/1 predicted labels), not both")
        super().update(y_true, y_score=y_score, y_pred=y_pred, sample_weight=sample_weight)

    def compute(self) -> dict[str, float]:
        return {k: float(v) for k, v in super().compute().items()}
