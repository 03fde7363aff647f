"""Sliced evaluation over columnar batches: the one object every engine runs.

An :class:`Evaluation` knows the columns (label, score or prediction, weight), the slice specs and
the :class:`~core.plan.Plan`. Its accumulator is a dict ``{slice_key: tuple_of_states}``
(:class:`Accumulator`, which also carries the evaluation's :attr:`~Evaluation.fingerprint`)
that always contains the overall slice ``()``. Engines call ``zero``, ``fold`` (per batch),
``merge`` (any order, any grouping), ``finish``, and ``encode_accumulator`` /
``decode_accumulator`` to ship partial states.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Iterable, Sequence

import warnings

import numpy as np

from core import codec
from core._inputs import ON_INVALID, Batch
from core.formats import build_batch, get_format, make_batch
from core.metrics import Metric, Task, UndefinedMetricWarning
from core.plan import Plan, make_task, undefined_warning
from core.results import Results, SliceResult
from core.slice_profile import ProfileSummary, SliceProfile, SliceProfiler
from core.batches import extract_columns, fold_all, is_single_batch, missing_row_column, num_rows, rows_to_columns  # noqa: F401  (re-exported)
from core.grouped import SliceBlock
from core.slicing import OTHER, OVERALL, SIZE_MEASURES, assign_slices, parse_slices, slice_name, sort_key
from core.states import ExampleCountState
from core.suppression import suppress_complements, withhold_names

class Accumulator(dict):
    """``{slice_key: tuple_of_states}`` plus ``fingerprint``: the settings of the evaluation that
    filled it (see :attr:`Evaluation.fingerprint`; None when unknown, e.g. a plain dict's copy).
    :meth:`Evaluation.merge`, :meth:`~Evaluation.fold`, :meth:`~Evaluation.finish` and the codec
    check it, so accumulators of differently configured evaluations never mix.

    :meth:`Evaluation.fold` keeps each slice spec's slices in a :class:`core.grouped.SliceBlock`
    (every slice of the spec folded in one vectorised pass, states with a leading slice axis);
    they become per-slice tuples of states (merged with any tuple already held for the slice)
    the first time the accumulator is read as a mapping.
    """

    def __init__(self, items: Any = (), fingerprint: dict[str, Any] | None = None):
        super().__init__(items)
        self.fingerprint = fingerprint
        self.blocks: dict[tuple[str, ...], SliceBlock] = {}

    def block(self, spec: tuple[str, ...], state_types: tuple, weighted: bool) -> SliceBlock:
        """The block of a spec's slices (created empty)."""
        b = self.blocks.get(spec)
        if b is None:
            b = self.blocks[spec] = SliceBlock(state_types, weighted)
        return b

    def materialize(self) -> "Accumulator":
        """Turn the blocks into per-slice tuples of states (returns ``self``)."""
        if self.blocks:
            blocks, self.blocks = self.blocks, {}
            for block in blocks.values():
                for key, states in block.items():
                    old = dict.get(self, key)
                    dict.__setitem__(self, key, states if old is None else tuple(x.merge(y) for x, y in zip(old, states)))
        return self

    def copy(self) -> "Accumulator":
        out = Accumulator(dict.items(self), self.fingerprint)
        out.blocks = {k: b.copy() for k, b in self.blocks.items()}
        return out

    def __getitem__(self, key: Any) -> Any:
        return dict.__getitem__(self.materialize(), key)

    def get(self, key: Any, default: Any = None) -> Any:
        return dict.get(self.materialize(), key, default)

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self.materialize(), key)

    def __iter__(self) -> Any:
        return dict.__iter__(self.materialize())

    def __len__(self) -> int:
        return dict.__len__(self.materialize())

    def keys(self) -> Any:
        return dict.keys(self.materialize())

    def values(self) -> Any:
        return dict.values(self.materialize())

    def items(self) -> Any:
        return dict.items(self.materialize())

    def pop(self, key: Any, *default: Any) -> Any:
        return dict.pop(self.materialize(), key, *default)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Accumulator):
            other.materialize()
        return dict.__eq__(self.materialize(), other)

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple:
        return (Accumulator, (dict(self.items()), self.fingerprint))

    def __repr__(self) -> str:
        return f"Accumulator({dict.__repr__(self.materialize())})"


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
        raise TypeError(f"evaluation must be a core.Evaluation, got {type(evaluation).__name__}")
    return evaluation


class Evaluation:
    """Column mapping + slices + metrics, with accumulator operations for any engine.

    Args:
        label_col: column of true labels: 0/1 (binary), [0, K) (multiclass), (L,) 0/1 lists
            (multilabel), float targets (regression), or label maps (segmentation). May be None
            only when the metrics need no labels (e.g. ``mean_measure`` alone).
        score_col: column of scores: finite floats (binary; thresholded at ``threshold``), or for
            binary the two class probabilities per row (``predict_proba`` output) as a list column
            or two column names ``[p0, p1]`` (column 1 is thresholded; ``pos_label=0`` ranking
            metrics rank by column 0); for multiclass a list-valued (fixed-size-list Arrow) column
            of K class scores per row, or a list of K column names (one per class); multilabel
            (L,) lists; score maps.
        prediction_col: column of predicted labels (binary 0/1, multiclass [0, K), multilabel
            (L,) 0/1 lists, label maps) or, for regression, predicted values. At most one of
            ``score_col`` / ``prediction_col``; one is required when a metric needs predictions.
        weight_col: optional column of finite non-negative sample weights.
        measure_col: column of finite per-row values for ``mean_measure`` (e.g. a loss).
        slices: slice specs (``"carrier"``, ``"carrier,origin"``, ``"origin=JFK,carrier"``,
            ``"distance:quantiles=4"``, ``"tailnum;max_slices=50"``, :class:`~core.slicing.SliceSpec`
            objects; grammar in :class:`~core.slicing.SliceSpec`); the overall slice is always
            computed, exactly, from every row. Specs with ``max_slices`` or ``quantiles`` need a
            counting pass first (:attr:`needs_profile`, :meth:`with_profile`; every engine and
            :meth:`evaluate` run it automatically).
        min_slice_size: suppress every slice (and the overall slice) whose valid row count is
            below this; a spec's own ``min_slice_size`` (count or weight) overrides it for its
            slices, and the overall slice must also meet every spec's threshold. Suppressed
            slices are reported without metric values or counts (see :class:`SliceResult`), and
            so many more slices are suppressed with them that none can be recovered by
            subtracting published slices from their parent (:mod:`core.suppression`).
        show_suppressed_names: False (default): the suppressed slices of each spec are reported
            as one ``{column: "__suppressed__"}`` entry counting them (``suppressed_slices``), so
            their values are not published either; True: each is listed by name (no values).
        metrics: metric strings (see :mod:`core.metrics`); None for the task's defaults.
        num_classes: None/2 for binary, K > 2 for multiclass (needs ``prediction_col``).
        threshold, threshold_rule, zero_division, multiclass: see :class:`~core.plan.MetricCollection`.
        on_invalid: ``"raise"`` (default): invalid rows raise ``ValueError`` naming column, value
            and row; ``"skip"``: they are skipped and counted per slice (``skipped`` in results).
        task: ``"binary"``, ``"multiclass"``, ``"multilabel"``, ``"regression"`` or a
            :class:`~core.metrics.Task`; None infers binary/multiclass from ``num_classes``.
        ignore_index: drop rows (pixels) whose label equals it; a class id also leaves averages.
        label_format, score_format, prediction_format: input formats of those columns (see
            :mod:`core.formats`: ``labels``, ``onehot``, ``indicator``, ``scores``,
            ``probabilities``, ``logits``, ``label_map``, ``score_map``, ``values``); None picks
            the default for the task and the column's shape.

    Undefined values: NaN (``null`` in JSON) unless ``zero_division`` says otherwise, listed per
    slice in ``SliceResult.undefined``; :meth:`finish` emits one
    :class:`~core.metrics.UndefinedMetricWarning` per metric naming its classes and slices.

    Raises:
        ValueError: bad configuration (both score and prediction columns, a column a metric needs
            is missing, unknown metric, bad ``on_invalid`` ...).
    """

    def __init__(
        self,
        *,
        label_col: str | None = None,
        score_col: str | Sequence[str] | None = None,
        prediction_col: str | None = None,
        weight_col: str | None = None,
        slices: Iterable[Any] | str | None = None,
        metrics: Sequence[str | Metric] | None = None,
        num_classes: int | None = None,
        threshold: float = 0.5,
        threshold_rule: str = ">=",
        zero_division: Any = "nan",
        on_invalid: str = "raise",
        multiclass: bool = False,
        task: str | Task | None = None,
        measure_col: str | None = None,
        ignore_index: int | None = None,
        label_format: str | None = None,
        score_format: str | None = None,
        prediction_format: str | None = None,
        min_slice_size: float | None = None,
        show_suppressed_names: bool = False,
    ):
        if score_col is not None and prediction_col is not None:
            raise ValueError("give exactly one of score_col or prediction_col")
        if on_invalid not in ON_INVALID:
            raise ValueError(f"on_invalid must be one of {ON_INVALID}, got {on_invalid!r}")
        if isinstance(score_col, (list, tuple)):
            score_col = list(score_col)
            if not score_col or not all(isinstance(c, str) and c for c in score_col):
                raise ValueError(f"score_col: a list of per-class score columns needs column names, got {score_col!r}")
        task_obj = make_task(task, num_classes, threshold, threshold_rule, zero_division, multiclass, ignore_index)
        self.label_col = label_col
        self.score_col = score_col
        self.prediction_col = prediction_col
        self.weight_col = weight_col
        self.measure_col = measure_col
        self.slices = parse_slices(slices)
        if min_slice_size is not None and (isinstance(min_slice_size, bool) or not isinstance(min_slice_size, (int, float)) or not min_slice_size > 0 or min_slice_size == float("inf")):
            raise ValueError(f"min_slice_size must be a finite number > 0, got {min_slice_size!r}")
        self.min_slice_size = None if min_slice_size is None else float(min_slice_size)
        if not isinstance(show_suppressed_names, bool):
            raise TypeError(f"show_suppressed_names must be a bool, got {show_suppressed_names!r}")
        self.show_suppressed_names = show_suppressed_names
        self._profile = None  # ProfileSummary once with_profile() resolved the counting pass
        self._bounds: dict = {}
        self.on_invalid = on_invalid
        self.plan = Plan(metrics, task_obj)
        task_obj = self.plan.task
        self.formats = {"target": label_format, "score": score_format, "prediction": prediction_format}
        for f in self.formats.values():
            if f is not None:
                get_format(f)
        roles = {r for r, c in (("target", label_col), ("score", score_col), ("prediction", prediction_col), ("measure", measure_col)) if c}
        if "prediction" in self.plan.needs and not roles & {"score", "prediction"}:
            raise ValueError("give exactly one of score_col or prediction_col")
        self.plan.check_inputs(roles, {"target": "label_col", "score": "score_col", "prediction": "prediction_col", "measure": "measure_col"})
        # the plain (N,) path of the first release, or the pluggable formats of core.formats
        self._plain = (
            task_obj.kind in ("binary", "multiclass")
            and task_obj.ignore_index is None
            and not any(self.formats.values())
            and measure_col is None
            and label_col is not None
            and not isinstance(score_col, list)
            and not (task_obj.kind == "multiclass" and score_col is not None)
            and not {"probability", "score_matrix", "measure"} & self.plan.needs
        )
        self._init_args = dict(
            label_col=label_col, score_col=score_col, prediction_col=prediction_col, weight_col=weight_col,
            slices=[str(s) for s in self.slices], metrics=list(self.plan.keys), num_classes=num_classes,
            threshold=threshold, threshold_rule=threshold_rule, zero_division=task_obj.zero_division,
            on_invalid=on_invalid, multiclass=multiclass,
        )  # fmt: skip
        extra = dict(
            task=task_obj.kind if task is not None else None, measure_col=measure_col, ignore_index=task_obj.ignore_index,
            label_format=label_format, score_format=score_format, prediction_format=prediction_format,
        )  # fmt: skip
        if isinstance(task, Task):  # keep to_config() JSON-ready and equivalent
            self._init_args.update(num_classes=task.num_classes, threshold=task.threshold, threshold_rule=task.threshold_rule, multiclass=task.multiclass)
        self._init_args.update({k: v for k, v in extra.items() if v is not None})
        if self.min_slice_size is not None:
            self._init_args["min_slice_size"] = self.min_slice_size
        if show_suppressed_names:
            self._init_args["show_suppressed_names"] = True
        self._fingerprint = self._make_fingerprint()

    def _make_fingerprint(self) -> dict[str, Any]:
        profile = None
        if self._profile is not None:
            profile = hashlib.sha256(self._profile.to_json().encode("utf-8")).hexdigest()[:16]
        fp = {
            **self.plan.fingerprint,
            "label_col": self.label_col,
            "score_col": self.score_col,
            "prediction_col": self.prediction_col,
            "weight_col": self.weight_col,
            "measure_col": self.measure_col,
            "label_format": self.formats["target"],
            "score_format": self.formats["score"],
            "prediction_format": self.formats["prediction"],
            "slices": [str(s) for s in self.slices],
            "profile": profile,
        }
        return json.loads(json.dumps(fp))  # JSON-canonical: equal to a decoded one

    @property
    def fingerprint(self) -> dict[str, Any]:
        """Every setting that changes what the accumulator's states hold beyond their layouts:
        the task settings of :attr:`core.plan.Plan.fingerprint` (kind, ``num_classes``,
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

    def _joint_fingerprint(self, *others: Any) -> dict[str, Any]:
        """The fingerprint of accumulators merged by this evaluation (see :attr:`fingerprint`).

        Raises:
            ValueError: naming the settings that differ.
        """
        out = self._fingerprint
        for fp in others:
            if fp is None or fp is out or fp == out:
                continue
            codec.check_fingerprint(
                {k: v for k, v in out.items() if k != "profile"},
                {k: v for k, v in fp.items() if k != "profile"},
                "the accumulators",
            )
            mine, theirs = out.get("profile"), fp.get("profile")
            if mine is None and self._profile is None:
                out = fp  # an unprofiled evaluation adopts the one profile of what it merges
            elif theirs is not None and theirs != mine:
                raise ValueError(
                    f"the accumulators belong to a different configuration: profile {mine!r} (here) != {theirs!r} "
                    "(the counting pass of max_slices / quantiles specs differs: fold every part with one profile)"
                )
        return out

    # -- configuration ---------------------------------------------------------------------
    def to_config(self) -> dict[str, Any]:
        """JSON-ready constructor arguments; ``Evaluation(**e.to_config())`` is equivalent."""
        return dict(self._init_args)

    @property
    def columns(self) -> list[str]:
        """Every input column this evaluation reads (label, score/prediction, weight, measure,
        slices), each once."""
        cols: list[Any] = [self.label_col]
        cols += self.score_col if isinstance(self.score_col, list) else [self.score_col or self.prediction_col]
        cols += [self.weight_col, self.measure_col]
        for s in self.slices:
            cols += list(s.columns)
        out: list[str] = []
        for c in cols:
            if c is not None and c not in out:
                out.append(c)
        return out

    @property
    def value_columns(self) -> list[str]:
        """The label, score/prediction, weight and measure columns (numeric data; not slices)."""
        cols: list[Any] = [self.label_col]
        cols += self.score_col if isinstance(self.score_col, list) else [self.score_col, self.prediction_col]
        cols += [self.weight_col, self.measure_col]
        return [c for c in cols if c is not None]

    @property
    def list_columns(self) -> list[str]:
        """Value columns whose rows may be lists (matrices or maps): multiclass/multilabel scores,
        multilabel labels and predictions, one-hot and map formats, and a binary score column (one
        score, or two class probabilities per row). Engines pass them through as list /
        fixed-size-list columns."""
        binary_score = self.plan.task.kind == "binary" and isinstance(self.score_col, str)
        if self._plain:
            return [self.score_col] if binary_score else []
        out = [self.score_col] if binary_score else []
        for role, col in (("target", self.label_col), ("score", self.score_col), ("prediction", self.prediction_col)):
            if col is None or isinstance(col, list) or col in out:
                continue
            fmt = self.formats.get(role)
            kind = self.plan.task.kind
            if fmt in ("onehot", "indicator", "label_map", "score_map") or (fmt in ("scores", "probabilities", "logits") and kind != "binary"):
                out.append(col)
            elif fmt is None and (kind == "multilabel" or (kind == "multiclass" and role in ("target", "prediction", "score"))):
                out.append(col)
        return out

    def describe(self) -> dict[str, Any]:
        return {**self.plan.describe(), **{k: v for k, v in self._init_args.items() if k != "metrics"}}

    # -- slicing: counting pass, bounds, suppression ----------------------------------------
    @property
    def slice_columns(self) -> list[str]:
        """Columns read only for slicing (they may hold lists: see :class:`~core.slicing.SliceSpec`)."""
        values = set(self.value_columns)
        out: list[str] = []
        for s in self.slices:
            out += [c for c in s.columns if c not in values and c not in out]
        return out

    @property
    def needs_profile(self) -> bool:
        """True when a spec uses ``max_slices`` or ``quantiles`` and no profile is attached yet:
        run :meth:`profiler` over all the data, then fold with :meth:`with_profile`."""
        return self._profile is None and any(s.needs_profile for s in self.slices)

    @property
    def profile(self) -> Any:
        """The attached :class:`~core.slice_profile.ProfileSummary`, or None."""
        return self._profile

    def profiler(self) -> Any:
        """The counting pass of this evaluation: a :class:`~core.slice_profile.SliceProfiler`
        (``zero`` / ``fold`` / ``merge`` / ``finish`` -> ProfileSummary, ``encode_accumulator``)."""
        return SliceProfiler(self.slices, self.weight_col)

    def with_profile(self, profile: Any) -> "Evaluation":
        """This evaluation with a resolved counting pass attached (``self`` is unchanged).

        Its ``fold`` maps values outside each spec's top ``max_slices`` to ``__other__`` and
        numbers to their quantile buckets; ``finish`` and ``collect`` report ``folded_values``.
        Accumulators, codec bytes and ``to_config()`` are those of ``self``.

        Args:
            profile: a :class:`~core.slice_profile.ProfileSummary`, a merged
                :class:`~core.slice_profile.SliceProfile`, or the summary's JSON text.

        Raises:
            ValueError: the profile lacks a part a spec needs.
            TypeError: ``profile`` is none of those kinds.
        """
        import copy

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

    def _spec_of(self, key: tuple) -> Any:
        cols = tuple(c for c, _ in key)
        return next((s for s in self.slices if s.columns == cols), None)

    def _thresholds(self, key: tuple) -> list[tuple[float, str]]:
        """``(k, "count" | "weight")`` sizes a slice must reach (else it is suppressed)."""
        if key:
            spec = self._spec_of(key)
            if spec is not None and spec.min_slice_size is not None:
                return [(spec.min_slice_size, spec.by)]
            return [(self.min_slice_size, "count")] if self.min_slice_size is not None else []
        out = [(self.min_slice_size, "count")] if self.min_slice_size is not None else []
        return out + [(s.min_slice_size, s.by) for s in self.slices if s.min_slice_size is not None]

    def _suppressed(self, key: tuple, counts: Any) -> bool:
        size = {"count": float(counts["count"]), "weight": float(counts["weight"])}
        return any(size[by] < k for k, by in self._thresholds(key))

    def folded_values(self, key: tuple) -> int | None:
        """How many distinct slice values the ``__other__`` slice ``key`` sums (None for other
        slices, or without a profile)."""
        if not key or any(v != OTHER for _, v in key):
            return None
        spec = self._spec_of(key)
        b = self._bounds.get(spec) if spec is not None else None
        return None if b is None or b.kept is None else b.folded_values

    def _annotate(self, results: Results) -> Results:
        """Add ``folded_values`` to the ``__other__`` slices (from the attached profile)."""
        if self._profile is None:
            return results
        import dataclasses

        out = []
        for s in results.slices:
            f = self.folded_values(s.slice)
            out.append(dataclasses.replace(s, folded_values=f) if f is not None and s.folded_values != f else s)
        return Results(out, results.config)

    # -- accumulator -------------------------------------------------------------------------
    def zero(self) -> Accumulator:
        """A fresh accumulator: just the overall slice's zero states."""
        return Accumulator({OVERALL: self.plan.zero()}, self._fingerprint)

    def fold(self, acc: Accumulator, data: Any, row_offset: int = 0) -> Accumulator:
        """Fold one batch of rows into ``acc`` (mutated and returned).

        Args:
            acc: an accumulator from :meth:`zero`.
            data: dict of columns, pandas DataFrame, pyarrow RecordBatch/Table, or list of row dicts.
            row_offset: position of the batch's first row in the whole input (for messages).

        Raises:
            ValueError / TypeError: missing columns or invalid values (see
                :func:`core.formats.make_batch`), unless ``on_invalid="skip"``; ``acc`` belongs
                to an evaluation of another :attr:`fingerprint`.
        """
        if isinstance(acc, Accumulator):
            acc.fingerprint = self._joint_fingerprint(acc.fingerprint)
        if self.needs_profile:
            spec = next(s for s in self.slices if s.needs_profile)
            raise ValueError(
                f"slice spec {str(spec)!r} needs a counting pass over all the data first (max_slices / quantiles): "
                "evaluation.with_profile(evaluation.profiler().profile(batches)), or use evaluate() or an engine"
            )
        cols, n = extract_columns(data, self.columns, nd=self.list_columns, slice_columns=self.slice_columns, row_offset=row_offset)
        if n == 0:
            return acc
        if self._plain:
            batch, invalid = make_batch(
                num_classes=self.plan.task.num_classes,
                y_true=cols[self.label_col],
                y_score=cols[self.score_col] if self.score_col else None,
                y_pred=cols[self.prediction_col] if self.prediction_col else None,
                sample_weight=cols[self.weight_col] if self.weight_col else None,
                names=(self.label_col, self.score_col or "", self.prediction_col or "", self.weight_col or ""),
                row_offset=row_offset,
                on_invalid=self.on_invalid,
                task=self.plan.task,
            )
        else:
            sc = self.score_col
            batch, invalid = build_batch(
                task=self.plan.task,
                columns={
                    "target": cols[self.label_col] if self.label_col else None,
                    "score": ([cols[c] for c in sc] if isinstance(sc, list) else cols[sc]) if sc else None,
                    "prediction": cols[self.prediction_col] if self.prediction_col else None,
                    "measure": cols[self.measure_col] if self.measure_col else None,
                },
                names={"target": self.label_col, "score": sc, "prediction": self.prediction_col, "measure": self.measure_col},
                sample_weight=cols[self.weight_col] if self.weight_col else None,
                weight_name=self.weight_col or "",
                formats=self.formats,
                needs=self.plan.needs,
                row_offset=row_offset,
                on_invalid=self.on_invalid,
            )
        n_skipped = int(invalid.sum()) if invalid is not None else 0
        self._fold_into(acc, OVERALL, batch, n_skipped)
        weighted = self.weight_col is not None
        cache: dict = {}  # per-row cells and score keys, shared by the specs' blocks
        for spec in self.slices:
            assigned = assign_slices(spec, cols, n, self._bounds.get(spec), row_offset)
            # (batch element, slice) pairs: pixels of maps, or rows left after ignore_index, via row_of
            pos, codes, skipped = assigned.pairs(n, invalid if n_skipped else None, batch.row_of)
            if isinstance(acc, Accumulator):  # every slice of the spec in one vectorised pass
                acc.block(spec.columns, self.plan.state_types, weighted).fold(batch if batch.n else None, pos, codes, assigned.keys, skipped, cache)
                continue
            for g, idx in enumerate(assigned.groups(n, invalid if n_skipped else None, batch.row_of)[0]):  # a plain dict
                if idx.size or skipped[g]:
                    self._fold_into(acc, assigned.keys[g], batch.take(idx) if idx.size else None, int(skipped[g]))
        return acc

    def _fold_into(self, acc: Accumulator, key: tuple, batch: Batch | None, skipped: int) -> None:
        """Fold ``batch`` (None: no elements) and ``skipped`` invalid rows into slice ``key``."""
        states = dict.get(acc, key)  # not Accumulator.get: its blocks stay as they are
        if states is None:
            states = self.plan.zero()
        if batch is not None:
            states = self.plan.fold(states, batch)
        if skipped:
            states = (states[0].merge(ExampleCountState.skipped_rows(skipped)),) + states[1:]
        acc[key] = states

    def merge(self, a: Accumulator, b: Accumulator) -> Accumulator:
        """Merge ``b`` into ``a`` (``a`` is mutated and returned; ``b`` is left unchanged).

        Raises:
            ValueError: the accumulators come from evaluations of different configuration (a
                state layout or a :attr:`fingerprint` setting, named in the message).
        """
        fp = self._joint_fingerprint(getattr(a, "fingerprint", None), getattr(b, "fingerprint", None))
        if isinstance(a, Accumulator):
            a.fingerprint = fp
        if isinstance(a, Accumulator) and isinstance(b, Accumulator):
            for spec, block in b.blocks.items():  # slice by slice, vectorised; b is left unchanged
                a.block(spec, self.plan.state_types, self.weight_col is not None).merge(block)
            for key, states in dict.items(b):
                old = dict.get(a, key)
                dict.__setitem__(a, key, states if old is None else self.plan.merge(old, states))
            return a
        for key, states in b.items():
            old = a.get(key)
            a[key] = states if old is None else self.plan.merge(old, states)
        return a

    def merge_all(self, accs: Iterable[Accumulator]) -> Accumulator:
        out = self.zero()
        for a in accs:
            self.merge(out, a)
        return out

    def encode_accumulator(self, acc: Accumulator) -> bytes:
        """Versioned bytes with the :attr:`fingerprint` (see :mod:`core.codec`); equal
        accumulators give equal bytes.

        Raises:
            ValueError: ``acc`` belongs to an evaluation of another fingerprint.
        """
        return codec.encode_accumulator(acc, self._joint_fingerprint(getattr(acc, "fingerprint", None)))

    def decode_accumulator(self, data: bytes) -> Accumulator:
        """Inverse of :meth:`encode_accumulator`: a checked accumulator of this evaluation.

        Checks the writer's fingerprint (bytes of the first codec version carry none: they are
        taken as this evaluation's unless its slices depend on a counting-pass profile, which
        such bytes cannot be checked against), that the overall slice is present and every other
        slice key belongs to one of the slice specs, that every slice's states are this plan's
        kinds and layouts, and their values (finite, non-negative counts, whole numbers without
        a weight column; see :meth:`core.states.State.validate`).

        Raises:
            ValueError: corrupted or foreign bytes, or states of another configuration (naming
                the setting).
            TypeError: ``data`` is not bytes.
        """
        acc, theirs, version = codec.read_accumulator(data)
        if version == 1 and any(s.needs_profile for s in self.slices):
            raise ValueError(
                "accumulator bytes of codec version 1 carry no fingerprint, and this evaluation's slices "
                f"({', '.join(str(s) for s in self.slices if s.needs_profile)}) depend on a counting-pass profile they "
                "cannot be checked against: re-run the evaluation"
            )
        fp = self._joint_fingerprint(theirs)
        return self._checked(acc, fp, "accumulator bytes")

    def _checked(self, acc: dict, fp: dict[str, Any], what: str) -> Accumulator:
        if OVERALL not in acc:
            raise ValueError(f"{what}: the overall slice is missing (every accumulator has it)")
        specs = {s.columns for s in self.slices}
        integral = self.weight_col is None
        for key, states in acc.items():
            if key and tuple(c for c, _ in key) not in specs:
                raise ValueError(f"{what}: slice {slice_name(key)!r} is not a slice of this evaluation's specs {[str(s) for s in self.slices]}")
            try:
                self.plan.check(states, integral)
            except ValueError as e:
                raise ValueError(f"{what}: slice {slice_name(key)!r}: {e}") from None
        return Accumulator(acc, fp)

    def encode_states(self, states: tuple) -> bytes:
        """Versioned bytes of one slice's tuple of states with the :attr:`fingerprint` (the
        engines' per-slice partial states, e.g. Spark's)."""
        return self.plan.encode(states, self._fingerprint)

    def decode_states(self, data: bytes) -> tuple:
        """Inverse of :meth:`encode_states`, checked as :meth:`decode_accumulator` checks a slice.

        Raises:
            ValueError: corrupted bytes, another fingerprint (naming the settings), states of
                another plan, or values no data can produce.
        """
        acc, theirs, _ = codec.read_accumulator(data)
        if list(acc) != [OVERALL]:
            raise ValueError("corrupted state tuple: expected a single slice")
        self._joint_fingerprint(theirs)
        return self._checked(acc, self._fingerprint, "state bytes")[OVERALL]

    def finish(self, acc: Accumulator, *, add_overall: bool = True) -> Results:
        """Compute every slice's metrics; overall first, then slices in spec and value order.

        Args:
            acc: a merged accumulator.
            add_overall: add the overall slice (zero states) when ``acc`` lacks it; engines that
                finish one slice at a time pass False.
        """
        self._joint_fingerprint(getattr(acc, "fingerprint", None))
        spec_order = [s.columns for s in self.slices]
        if add_overall and OVERALL not in acc:
            acc = {OVERALL: self.plan.zero(), **acc}
        out = []
        undefined: dict[str, list[tuple[str, Any]]] = {}
        fills: dict[str, Any] = {}
        for key in sorted(acc, key=lambda k: sort_key(k, spec_order)):
            states = acc[key]
            counts = states[0]
            if self._suppressed(key, counts):  # pruned: no metrics computed, no counts reported
                out.append(SliceResult(slice=key, n=None, weight=None, skipped=None, metrics={}, suppressed=True))
                continue
            values, intervals, undef = self.plan.compute_detailed(states)
            for metric, (classes, fill) in undef.items():
                if fill in ("nan", "warn"):
                    undefined.setdefault(metric, []).append((slice_name(key), classes))
                    fills[metric] = "nan" if fill == "nan" or fills.get(metric) == "nan" else fill
            out.append(
                SliceResult(
                    slice=key,
                    n=int(counts["count"]),
                    weight=float(counts["weight"]),
                    skipped=int(counts["skipped"]),
                    metrics=values,
                    intervals=intervals,
                    folded_values=self.folded_values(key),
                )
            )
        for metric, where in undefined.items():  # one warning per metric per finish
            warnings.warn(undefined_warning(metric, where, fills[metric]), UndefinedMetricWarning, stacklevel=2)
        return self._protect(Results(out, self.describe())) if add_overall else Results(out, self.describe())

    def _protect(self, results: Results) -> Results:
        """Complementary suppression and, unless ``show_suppressed_names``, withheld names, over
        one evaluation's complete results (:mod:`core.suppression`)."""
        if not any(s.suppressed for s in results.slices):
            return results
        slices = suppress_complements(results.slices)
        return Results(slices if self.show_suppressed_names else withhold_names(slices), results.config)

    def collect(self, slices: Iterable[SliceResult] | None = None, rows: Iterable[dict] | None = None) -> Results:
        """Assemble engine output into :class:`~core.results.Results` in the canonical order:
        per-slice results (Beam) or long-format rows (Spark)."""
        spec_order = [s.columns for s in self.slices]
        if rows is not None:
            return self._protect(self._annotate(Results.from_rows(list(rows), self.describe(), spec_order, self.plan.keys)))
        return self._protect(self._annotate(Results.from_slices(list(slices or []), self.describe(), spec_order)))

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
