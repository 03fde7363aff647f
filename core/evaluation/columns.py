"""The column mapping of an evaluation, and the routing of one batch's columns to a validated Batch.

A :class:`ColumnMap` knows which input column plays which role (label, score or prediction,
weight, measure; the slice columns), which columns are read as vectors or maps (list columns),
which only for slicing, and whether the batch goes the plain ``(N,)`` path of the first release
(:func:`mergeable_metrics.inputs.formats.make_batch`) or the pluggable formats (:func:`mergeable_metrics.inputs.formats.build_batch`).
:class:`mergeable_metrics.Evaluation` reads every batch through it.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from mergeable_metrics.inputs.validation import Batch
from mergeable_metrics.evaluation.batches import extract_columns
from mergeable_metrics.inputs.formats import build_batch, make_batch, row_length
from mergeable_metrics._util.ids import integer_ids
from mergeable_metrics.metrics.retrieval import with_query_keys
from mergeable_metrics.inputs.labels import encode_labels, swap_score_columns

if TYPE_CHECKING:
    from mergeable_metrics.collection.plan import Plan

__all__ = ["ColumnMap"]

#: the option naming each input role's column (for messages)
ROLE_OPTIONS = {"target": "label_col", "score": "score_col", "prediction": "prediction_col", "measure": "measure_col", "query": "query_col", "id": "id_col"}


class ColumnMap:
    """The columns an evaluation reads, by role, and how a batch of them becomes a :class:`Batch`.

    Args:
        label_col, score_col, prediction_col, weight_col, measure_col: the columns (see
            :class:`mergeable_metrics.Evaluation`); ``score_col`` may be a list of per-class columns.
        formats: ``{"target" | "score" | "prediction": format name or None}``.
        slices: the parsed slice specs (their columns are read too).
        plan: the evaluation's plan (its task and the inputs its metrics need).
        baseline_score_col, baseline_prediction_col: a baseline model's scores (same shape as
            ``score_col``: one column or as many per-class columns) or predictions, read in the
            same format as the candidate's (see :meth:`batch`).

    Raises:
        ValueError: a column a metric needs is missing (naming the metric and the option), or a
            baseline column without the candidate's of the same role.
    """

    def __init__(
        self,
        *,
        label_col: str | None,
        score_col: str | list[str] | None,
        prediction_col: str | None,
        weight_col: str | None,
        measure_col: str | None,
        formats: dict[str, str | None],
        slices: Sequence[Any],
        plan: Plan,
        id_col: str | None = None,
        baseline_score_col: str | list[str] | None = None,
        baseline_prediction_col: str | None = None,
        measure_cols: dict[str, str] | None = None,
        query_col: str | None = None,
        classes: Sequence[Any] | None = None,
    ):
        if classes is not None:
            for role in ("target", "prediction"):
                if formats.get(role) not in (None, "labels", "label_map"):
                    raise ValueError(f"classes= maps label values; the {role} format {formats[role]!r} holds no label values (use the labels format)")
        #: the class values in index order (labels and predictions are mapped to their index), or None
        self.classes = None if classes is None else tuple(classes)
        #: swap two-column binary scores (set by Evaluation: mergeable_metrics.inputs.labels.columns_reversed)
        self.swap_scores = False
        if baseline_score_col is not None and baseline_prediction_col is not None:
            raise ValueError("give at most one of baseline_score_col or baseline_prediction_col")
        if baseline_score_col is not None and score_col is None:
            raise ValueError("baseline_score_col needs score_col (the candidate model's scores, in the same format)")
        if baseline_prediction_col is not None and prediction_col is None:
            raise ValueError("baseline_prediction_col needs prediction_col (the candidate model's predictions, in the same format)")
        if baseline_score_col is not None and isinstance(score_col, list) != isinstance(baseline_score_col, list):
            raise ValueError(f"baseline_score_col {baseline_score_col!r} must have the shape of score_col {score_col!r} (one column, or one per class)")
        if isinstance(score_col, list) and isinstance(baseline_score_col, list) and len(score_col) != len(baseline_score_col):
            raise ValueError(f"baseline_score_col has {len(baseline_score_col)} per-class columns but score_col has {len(score_col)}")
        self.baseline_score_col = baseline_score_col
        self.baseline_prediction_col = baseline_prediction_col
        self.label_col = label_col
        self.score_col = score_col
        self.prediction_col = prediction_col
        self.weight_col = weight_col
        self.measure_col = measure_col
        #: ``{name: column}`` of the named measures, in :attr:`mergeable_metrics.collection.plan.Plan.measure_names` order
        self.measure_cols = {n: (measure_cols or {})[n] for n in plan.measure_names if n in (measure_cols or {})}
        unfed = [n for n in plan.measure_names if n not in self.measure_cols]
        if measure_cols is not None and unfed:
            raise ValueError(f"named measure {unfed[0]!r} has no column: give it in measure_cols")
        self.formats = formats
        self.slices = tuple(slices)
        self.plan = plan
        self.id_col = id_col
        self.query_col = query_col
        task = plan.task
        roles = {
            r
            for r, c in (
                ("target", label_col),
                ("score", score_col),
                ("prediction", prediction_col),
                ("measure", measure_col or self.measure_cols),
                ("query", query_col),
                ("id", id_col),
            )
            if c
        }
        if "prediction" in plan.needs and not roles & {"score", "prediction"}:
            raise ValueError("give exactly one of score_col or prediction_col")
        plan.check_inputs(roles, ROLE_OPTIONS)
        # the plain (N,) path of the first release, or the pluggable formats of mergeable_metrics.inputs.formats
        self.plain = (
            task.kind in ("binary", "multiclass")
            and task.ignore_index is None
            and not any(formats.values())
            and measure_col is None
            and not self.measure_cols
            and query_col is None
            and label_col is not None
            and not isinstance(score_col, list)
            and not (task.kind == "multiclass" and score_col is not None)
            and not {"probability", "score_matrix", "measure"} & plan.needs
        )

    @property
    def paired(self) -> bool:
        """True when a baseline model is read too (its columns, then one paired batch)."""
        return self.baseline_score_col is not None or self.baseline_prediction_col is not None

    def _baseline_columns(self) -> list[Any]:
        b = self.baseline_score_col
        return list(b) if isinstance(b, list) else [b or self.baseline_prediction_col] if self.paired else []

    @property
    def columns(self) -> list[str]:
        """Every input column this evaluation reads (label, score/prediction, the baseline's,
        weight, measure, the bootstrap's ``id_col``, ``query_col``, slices), each once."""
        cols: list[Any] = [self.label_col]
        cols += self.score_col if isinstance(self.score_col, list) else [self.score_col or self.prediction_col]
        cols += self._baseline_columns()
        cols += [self.weight_col, self.measure_col, *self.measure_cols.values(), self.id_col, self.query_col]
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
        cols += self._baseline_columns()
        cols += [self.weight_col, self.measure_col, *self.measure_cols.values()]
        out: list[str] = []
        for c in cols:
            if c is not None and c not in out:
                out.append(c)
        return out

    @property
    def list_columns(self) -> list[str]:
        """Value columns whose rows may be lists (matrices or maps): multiclass/multilabel scores,
        multilabel labels and predictions, multioutput regression targets and predictions, one-hot
        and map formats, and a binary score column (one score, or two class probabilities per
        row). Engines pass them through as list / fixed-size-list columns."""
        out = self._list_columns()
        if not self.paired:
            return out
        twins = [(self.score_col, self.baseline_score_col), (self.prediction_col, self.baseline_prediction_col)]
        return out + [b for c, b in twins if isinstance(c, str) and c in out and isinstance(b, str) and b not in out]

    @property
    def keep_nulls(self) -> list[str]:
        """Value, id and query columns not also sliced: their missing values are kept as given,
        so that a message names an Arrow null ``null`` and a None ``None`` (not NaN)."""
        sliced = {c for s in self.slices for c in s.columns}
        return [c for c in (*self.value_columns, self.id_col, self.query_col) if isinstance(c, str) and c not in sliced]

    @property
    def row_lengths(self) -> dict[str, int]:
        """``{list column: its row length}``: the target, prediction and score columns of a
        multioutput regression task hold ``num_outputs`` values per row (see
        :func:`mergeable_metrics.inputs.formats.row_length`)."""
        out: dict[str, int] = {}
        twins = (("score", self.baseline_score_col), ("prediction", self.baseline_prediction_col)) if self.paired else ()
        for role, col in (("target", self.label_col), ("score", self.score_col), ("prediction", self.prediction_col), *twins):
            d = row_length(self.plan.task, role) if self.plan.task.kind == "regression" else None
            if d is not None and isinstance(col, str) and col in self.list_columns:
                out[col] = d
        return out

    def _list_columns(self) -> list[str]:
        binary_score = self.plan.task.kind == "binary" and isinstance(self.score_col, str)
        if self.plain:
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
            elif fmt in (None, "multioutput") and kind == "regression" and self.plan.task.num_outputs is not None:
                out.append(col)  # multioutput regression: a list of D floats per row
        return out

    @property
    def slice_columns(self) -> list[str]:
        """Columns read only for slicing (they may hold lists: see :class:`~mergeable_metrics.slicing.assign.SliceSpec`)."""
        values = set(self.value_columns)
        out: list[str] = []
        for s in self.slices:
            out += [c for c in s.columns if c not in values and c not in out]
        return out

    def read(self, data: Any, row_offset: int = 0) -> tuple[dict[str, np.ndarray], int]:
        """``({column: array}, n)``: every column of one batch (see :func:`mergeable_metrics.evaluation.batches.extract_columns`)."""
        return extract_columns(
            data,
            self.columns,
            nd=self.list_columns,
            slice_columns=self.slice_columns,
            row_offset=row_offset,
            row_lengths=self.row_lengths,
            keep_nulls=self.keep_nulls,
        )

    def batch(self, cols: dict[str, Any], row_offset: int, on_invalid: str) -> tuple[Batch, np.ndarray | None]:
        """The validated :class:`Batch` of one batch's columns and its invalid rows (a mask, or
        None when there are none).

        With a baseline model (:attr:`paired`), the batch's :attr:`~mergeable_metrics.inputs.validation.Batch.baseline`
        holds the same elements read with the baseline's column, so both models are folded over
        exactly the same rows: a row invalid for either model (its label, weight, or either
        model's score or prediction) is invalid for both (raised, or with ``on_invalid="skip"``
        skipped once and counted once in ``skipped``).

        Raises:
            ValueError / TypeError: invalid values (see :func:`mergeable_metrics.inputs.formats.make_batch`), unless
                ``on_invalid="skip"``.
        """
        if self.classes is not None:  # class values -> indices (outside the list: -1, invalid)
            cols = dict(cols)
            for c in dict.fromkeys(c for c in (self.label_col, self.prediction_col, self.baseline_prediction_col) if c):
                cols[c] = encode_labels(cols[c], self.classes, c, row_offset, skip=on_invalid == "skip")
            if self.swap_scores:  # pos_label put the first class last: two-column scores follow it
                for sc in (self.score_col, self.baseline_score_col):
                    if isinstance(sc, list) and len(sc) == 2:
                        cols[sc[0]], cols[sc[1]] = cols[sc[1]], cols[sc[0]]
                    elif isinstance(sc, str) and sc in cols and np.ndim(cols[sc]) == 2:
                        cols[sc] = swap_score_columns(cols[sc])
        batch, invalid = self._model_batch(cols, row_offset, on_invalid, self.score_col, self.prediction_col)
        if self.query_col is not None:
            return self._with_query(batch, invalid, cols, row_offset, on_invalid)
        if "id" in self.plan.needs:
            batch, invalid = self._with_ids(batch, invalid, cols, row_offset, on_invalid)
        if not self.paired:
            return batch, invalid
        base, base_invalid = self._model_batch(cols, row_offset, on_invalid, self.baseline_score_col, self.baseline_prediction_col)
        if invalid is not None and base_invalid is not None and not np.array_equal(invalid, base_invalid):
            # rows invalid for one model only: both models read the rows valid for both
            invalid = invalid | base_invalid
            keep = ~invalid
            sub = {c: cols[c][keep] for c in self.value_columns}
            batch, _ = self._model_batch(sub, row_offset, "raise", self.score_col, self.prediction_col)
            base, _ = self._model_batch(sub, row_offset, "raise", self.baseline_score_col, self.baseline_prediction_col)
        return dataclasses.replace(batch, baseline=base), invalid

    def _with_query(self, batch: Batch, invalid: np.ndarray | None, cols: dict[str, Any], row_offset: int, on_invalid: str) -> tuple[Batch, np.ndarray | None]:
        """``batch`` with its query keys (:attr:`mergeable_metrics.inputs.validation.Batch.query`: the 64-bit hashes of
        ``query_col``'s ids). A missing id or a negative relevance is an invalid row: raised
        (naming the column, the value and the row), or with ``on_invalid="skip"`` skipped."""
        q = np.asarray(cols[self.query_col])
        rows = np.arange(q.shape[0]) if invalid is None else np.flatnonzero(~invalid)
        batch, bad = with_query_keys(batch, q[rows], rows + row_offset, (self.query_col, self.label_col), skip=on_invalid == "skip")
        if bad is not None:
            invalid = np.zeros(q.shape[0], dtype=bool) if invalid is None else invalid.copy()
            invalid[rows[bad]] = True
        return batch, invalid

    def _with_ids(self, batch: Batch, invalid: np.ndarray | None, cols: dict[str, Any], row_offset: int, on_invalid: str) -> tuple[Batch, np.ndarray | None]:
        """``batch`` with its example ids (:attr:`mergeable_metrics.inputs.validation.Batch.ids`, integers of ``id_col``)
        for the metrics keyed by example. A missing id is an invalid row: raised (naming the
        column, the value and the row), or with ``on_invalid="skip"`` skipped."""
        v = np.asarray(cols[self.id_col])
        rows = np.arange(v.shape[0]) if invalid is None else np.flatnonzero(~invalid)
        ids, bad = integer_ids(v[rows], self.id_col, rows + row_offset, skip=on_invalid == "skip")
        at = rows if bad is None else rows[~bad]
        order = np.argsort(ids, kind="stable")
        dup = np.flatnonzero(ids[order][1:] == ids[order][:-1])
        if dup.size:  # a second row of an example in this batch (across batches: the state's merge raises)
            i = int(order[dup[0] + 1])
            raise ValueError(
                f"column {self.id_col!r}: invalid value {int(ids[i])} at row {int(at[i]) + row_offset}: "
                "ids must be unique (an example id appears twice; metrics keyed by example keep one value per id)"
            )
        if bad is not None:
            batch = batch.take(~bad)
            invalid = np.zeros(v.shape[0], dtype=bool) if invalid is None else invalid.copy()
            invalid[rows[bad]] = True
        return dataclasses.replace(batch, ids=ids), invalid

    def _model_batch(
        self, cols: dict[str, Any], row_offset: int, on_invalid: str, score_col: Any, prediction_col: str | None
    ) -> tuple[Batch, np.ndarray | None]:
        """:meth:`batch` of one model (its score or prediction column)."""
        if self.plain:
            return make_batch(
                num_classes=self.plan.task.num_classes,
                y_true=cols[self.label_col],
                y_score=cols[score_col] if score_col else None,
                y_pred=cols[prediction_col] if prediction_col else None,
                sample_weight=cols[self.weight_col] if self.weight_col else None,
                names=(self.label_col, score_col or "", prediction_col or "", self.weight_col or ""),
                row_offset=row_offset,
                on_invalid=on_invalid,
                task=self.plan.task,
            )
        sc = score_col
        return build_batch(
            task=self.plan.task,
            columns={
                "target": cols[self.label_col] if self.label_col else None,
                "score": ([cols[c] for c in sc] if isinstance(sc, list) else cols[sc]) if sc else None,
                "prediction": cols[prediction_col] if prediction_col else None,
                "measure": [cols[c] for c in self.measure_cols.values()] if self.measure_cols else cols[self.measure_col] if self.measure_col else None,
            },
            names={"target": self.label_col, "score": sc, "prediction": prediction_col, "measure": list(self.measure_cols.values()) or self.measure_col},
            sample_weight=cols[self.weight_col] if self.weight_col else None,
            weight_name=self.weight_col or "",
            formats=self.formats,
            needs=self.plan.needs,
            row_offset=row_offset,
            on_invalid=on_invalid,
        )
