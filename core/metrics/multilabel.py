"""Multilabel classification: per-label counts and per-sample sums, at one or more thresholds.

:class:`MultilabelState` holds, at each threshold, the weighted ``tp, fp, fn, tn`` of every label
(label-wise ``micro``, ``macro``, ``weighted`` averages, per-label values and Hamming loss), the
weight of exactly-right rows (subset accuracy), and for the ``samples`` average the weighted and
unweighted sums of per-row precision, recall and F-beta over the rows where they are defined, with
those rows' weights and counts. Merging is fieldwise addition: the counts are exact for
integer-valued weights; the per-row value sums (fractions such as 1/3) are float sums, equal
across merge orders up to rounding (about 1e-16 relative).

Targets are (N, L) 0/1 indicators; predictions are (N, L) 0/1, or (N, L) scores thresholded at
``score >= t`` (``>`` with ``threshold_rule=">"``).

The ``samples`` average follows scikit-learn: per-row values with ``zero_division`` where a row's
value is undefined, averaged with the sample weights, NaN rows left out (the unweighted mean if
the remaining weights sum to 0).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from mergeable_metrics.inputs.validation import Batch
from mergeable_metrics._util.limits import MAX_BETA, MAX_NUM_CLASSES, MAX_THRESHOLDS, as_floats, check_at_most, check_count
from mergeable_metrics._util.exact import ExactSums, exact_column_sums, exact_sum
from mergeable_metrics.metrics.base import (
    Accuracy,
    Metric,
    TaskKindSupport,
    _Classification,
    _take_labels,
    check_zero_division,
    get_averaging,
    prf_values,
    record_undefined,
    register_task_kind,
    set_labels,
)
from mergeable_metrics.states.base import State, _layout_diff
from mergeable_metrics.inputs.task import THRESHOLD_RULES


def _indicator_inputs(batch: Batch) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``(Y, score, w)``: (N, L) float64 indicators, (N, L) float64 scores (or the 0/1
    predictions), the weights or None."""
    score = batch.y_score if batch.y_score is not None else batch.y_pred
    if score is None:
        raise ValueError("multilabel metrics need scores or predictions")
    return batch.y_true.astype(np.float64), np.asarray(score, dtype=np.float64), batch.sample_weight


@dataclass(frozen=True)
class MultilabelLayout:
    """Number of labels L, sorted distinct thresholds, the threshold rule, and the sorted
    distinct F-beta betas kept for the ``samples`` average."""

    num_labels: int
    thresholds: tuple[float, ...] = (0.5,)
    threshold_rule: str = ">="
    betas: tuple[float, ...] = (1.0,)

    def __post_init__(self) -> None:
        object.__setattr__(self, "num_labels", check_count(self.num_labels, "num_labels", 1, MAX_NUM_CLASSES))
        t = as_floats(self.thresholds, "thresholds")
        check_at_most(len(t), MAX_THRESHOLDS, "the number of distinct thresholds")
        if not t or any(not math.isfinite(x) for x in t) or list(t) != sorted(set(t)):
            raise ValueError(f"thresholds must be finite, sorted and distinct, got {self.thresholds!r}")
        b = as_floats(self.betas, "betas")
        if not b or any(not (0 <= x <= MAX_BETA) for x in b) or list(b) != sorted(set(b)):
            raise ValueError(f"betas must be finite, >= 0, sorted and distinct, got {self.betas!r}")
        if self.threshold_rule not in THRESHOLD_RULES:
            raise ValueError(f"threshold_rule must be one of {THRESHOLD_RULES}, got {self.threshold_rule!r}")
        object.__setattr__(self, "thresholds", t)
        object.__setattr__(self, "betas", b)

    def t_index(self, threshold: float) -> int:
        try:
            return self.thresholds.index(float(threshold))
        except ValueError:
            raise KeyError(f"threshold {threshold} is not in this state's thresholds {self.thresholds}") from None


_TL = ("tp", "fp", "fn", "tn")
_SAMPLES = ("p_sum_w", "p_def_w", "p_sum_n", "p_def_n", "r_sum_w", "r_def_w", "r_sum_n", "r_def_n")
_FBETA = ("f_sum_w", "f_def_w", "f_sum_n", "f_def_n")


class MultilabelState(State):
    """Per threshold (T) and label (L): ``tp, fp, fn, tn`` (T, L); ``subset`` (T,) weight of
    exactly-right rows; per-row sums for the ``samples`` average: ``p_*``/``r_*`` (T,) and
    ``f_*`` (T, B) (``*_sum_w`` weighted sum of defined values, ``*_def_w`` their rows' weight,
    ``*_sum_n`` / ``*_def_n`` the same unweighted); ``weight`` () and ``count`` () (int64)."""

    kind = "multilabel"
    Layout = MultilabelLayout
    FIELDS = (
        tuple((n, "float64") for n in _TL)
        + (("subset", "float64"),)
        + tuple((n, "float64") for n in _SAMPLES)
        + tuple((n, "float64") for n in _FBETA)
        + (("weight", "float64"), ("count", "int64"))
    )
    COUNTS = _TL + ("subset", "p_def_w", "p_def_n", "r_def_w", "r_def_n", "f_def_w", "f_def_n", "weight", "count")
    NONNEGATIVE = ("p_sum_w", "p_sum_n", "r_sum_w", "r_sum_n", "f_sum_w", "f_sum_n")
    EXACT = _TL + ("subset",) + _SAMPLES + _FBETA + ("weight",)

    @classmethod
    def shape(cls, layout: MultilabelLayout, field: str) -> tuple[int, ...]:
        t = len(layout.thresholds)
        if field in _TL:
            return (t, layout.num_labels)
        if field in _FBETA:
            return (t, len(layout.betas))
        if field in ("weight", "count"):
            return ()
        return (t,)

    @classmethod
    def layout_for(cls, requirements: list[Any], task: Any) -> MultilabelLayout:
        thresholds = sorted({float(t) for t, _ in requirements})
        betas = sorted({float(b) for _, b in requirements} | {1.0})
        return MultilabelLayout(task.num_classes, tuple(thresholds), task.threshold_rule, tuple(betas))

    @classmethod
    def from_batch(cls, layout: MultilabelLayout, batch: Batch) -> "MultilabelState":
        Y, score, w = _indicator_inputs(batch)
        n = Y.shape[0]
        wv = np.ones(n) if w is None else w

        def total(mask: np.ndarray) -> Any:  # weight of the rows in mask: a count or an exact sum
            return np.float64(np.count_nonzero(mask)) if w is None else exact_sum(w[mask])

        def columns(x: np.ndarray, indicator: bool = False) -> Any:  # per-column sums of w x
            if w is None and indicator:
                return x.sum(axis=0)  # integer counts, exact in float64
            if indicator:  # w * x is exact for x in {0, 1}
                return exact_column_sums(wv[:, None] * x)
            return exact_column_sums(x, w)

        out: dict[str, list] = {name: [] for name, _ in cls.FIELDS if name not in ("weight", "count")}
        betas = np.asarray(layout.betas)
        true_i = Y.sum(axis=1)
        for t in layout.thresholds:
            P = (score >= t if layout.threshold_rule == ">=" else score > t).astype(np.float64)
            out["tp"].append(columns(Y * P, True))
            out["fp"].append(columns((1 - Y) * P, True))
            out["fn"].append(columns(Y * (1 - P), True))
            out["tn"].append(columns((1 - Y) * (1 - P), True))
            out["subset"].append(total((Y == P).all(axis=1)))
            tp_i = (Y * P).sum(axis=1)
            pred_i = P.sum(axis=1)
            for prefix, den in (("p", pred_i), ("r", true_i)):
                d = den > 0
                v = np.where(d, tp_i / np.where(d, den, 1.0), 0.0)
                out[f"{prefix}_sum_w"].append(exact_sum(v, w))
                out[f"{prefix}_def_w"].append(total(d))
                out[f"{prefix}_sum_n"].append(exact_sum(v))
                out[f"{prefix}_def_n"].append(np.float64(d.sum()))
            b2 = betas[None, :] ** 2
            fden = b2 * true_i[:, None] + pred_i[:, None]  # (N, B)
            fd = fden > 0
            fv = np.where(fd, (1 + b2) * tp_i[:, None] / np.where(fd, fden, 1.0), 0.0)
            out["f_sum_w"].append(columns(fv))
            out["f_def_w"].append(columns(fd.astype(np.float64), True))
            out["f_sum_n"].append(exact_column_sums(fv))
            out["f_def_n"].append(fd.sum(axis=0).astype(np.float64))
        arrays: dict[str, Any] = {k: ExactSums.stack(v, cls.shape(layout, k)) for k, v in out.items()}
        arrays["weight"] = np.float64(n) if w is None else exact_sum(w)
        arrays["count"] = np.int64(n)
        return cls(layout, arrays)

    def label_counts(self, threshold: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(tp, fp, tn, fn)``, each (L,), at one of the state's thresholds."""
        j = self.layout.t_index(threshold)
        a = self.arrays
        return a["tp"][j].copy(), a["fp"][j].copy(), a["tn"][j].copy(), a["fn"][j].copy()


class MultilabelJaccardSamplesState(State):
    """Per threshold (T): sums of per-row Jaccard indices ``|y & pred| / |y | pred|`` for the
    ``samples`` average of ``iou`` (``jaccard_score(average="samples")``): ``j_sum_w`` weighted
    sum of the defined values (rows with a true or predicted label), ``j_def_w`` their weight,
    ``j_sum_n`` / ``j_def_n`` the same unweighted; ``weight`` () and ``count`` () (int64). A row
    carries its whole label vector, so its value is known at fold time; the sums are exact
    (:mod:`mergeable_metrics._util.exact`), equal bit for bit for any split and merge order. Layout: a
    :class:`MultilabelLayout` (its ``betas`` are not used)."""

    kind = "multilabel_jaccard_samples"
    Layout = MultilabelLayout
    FIELDS = (("j_sum_w", "float64"), ("j_def_w", "float64"), ("j_sum_n", "float64"), ("j_def_n", "float64"),
              ("weight", "float64"), ("count", "int64"))  # fmt: skip
    COUNTS = ("j_def_w", "j_def_n", "weight", "count")
    NONNEGATIVE = ("j_sum_w", "j_sum_n")
    EXACT = ("j_sum_w", "j_def_w", "j_sum_n", "j_def_n", "weight")

    @classmethod
    def shape(cls, layout: MultilabelLayout, field: str) -> tuple[int, ...]:
        return () if field in ("weight", "count") else (len(layout.thresholds),)

    @classmethod
    def layout_for(cls, requirements: list[Any], task: Any) -> MultilabelLayout:
        return MultilabelLayout(task.num_classes, tuple(sorted({float(t) for t in requirements})), task.threshold_rule)

    @classmethod
    def from_batch(cls, layout: MultilabelLayout, batch: Batch) -> "MultilabelJaccardSamplesState":
        Y, score, w = _indicator_inputs(batch)
        out: dict[str, list] = {f: [] for f in ("j_sum_w", "j_def_w", "j_sum_n", "j_def_n")}
        for t in layout.thresholds:
            P = (score >= t if layout.threshold_rule == ">=" else score > t).astype(np.float64)
            inter = (Y * P).sum(axis=1)
            union = np.maximum(Y, P).sum(axis=1)
            d = union > 0
            v = np.where(d, inter / np.where(d, union, 1.0), 0.0)
            out["j_sum_w"].append(exact_sum(v, w))
            out["j_def_w"].append(np.float64(d.sum()) if w is None else exact_sum(w[d]))
            out["j_sum_n"].append(exact_sum(v))
            out["j_def_n"].append(np.float64(d.sum()))
        arrays: dict[str, Any] = {k: ExactSums.stack(v, (len(layout.thresholds),)) for k, v in out.items()}
        arrays["weight"] = np.float64(Y.shape[0]) if w is None else exact_sum(w)
        arrays["count"] = np.int64(Y.shape[0])
        return cls(layout, arrays)


class MultilabelSamplewiseState(State):
    """Per example id, at each threshold (T): the weighted ``tn, fp, fn, tp`` of its labels, as
    ``multilabel_confusion_matrix(samplewise=True)`` gives them for its row: ``ids`` (n,) int64
    strictly increasing, ``counts`` (n * T * 4,) float64, row-major (n, T, 4). A row's counts are
    ``w`` times its label counts, computed as scikit-learn computes them (the weight summed over
    the counted labels; ``tn = w L - tp - fp - fn``, which can round to a tiny negative number
    with fractional weights, as scikit-learn's does), so they equal its values bit for bit.

    Merge: the union of the ids, kept sorted; an id in both states (or twice in one batch) raises
    ``ValueError`` naming it: a samplewise matrix belongs to one example. So any batching,
    partitioning and merge order gives the same state. Size: 8 (1 + 4 T) bytes per example of the
    slice (the state is exact, never compressed). Layout: a :class:`MultilabelLayout` (its
    ``betas`` are not used).

    Raises:
        ValueError: a batch without example ids (:attr:`mergeable_metrics.inputs.validation.Batch.ids`, from
            ``Evaluation(id_col=...)``), a duplicate id, bytes that break the invariants, or
            merging another layout.
    """

    kind = "multilabel_samplewise"
    Layout = MultilabelLayout
    FIELDS = (("ids", "int64"), ("counts", "float64"))
    # not COUNTS: scikit-learn's weighted ``tn = w L - tp - fp - fn`` can round to -4e-16

    def __init__(self, layout: MultilabelLayout, arrays: dict[str, Any], _trusted: bool = False):
        super().__init__(layout, arrays)
        if _trusted:
            return
        ids, counts = self.arrays["ids"], self.arrays["counts"]
        if counts.shape[0] != ids.shape[0] * 4 * len(layout.thresholds):
            raise ValueError(
                f"invalid {self.kind} state: {counts.shape[0]} counts for {ids.shape[0]} ids and {len(layout.thresholds)} thresholds (4 per id and threshold)"
            )
        if ids.shape[0] > 1 and not bool(np.all(ids[1:] > ids[:-1])):
            raise ValueError(f"invalid {self.kind} state: ids are not strictly increasing")

    @classmethod
    def shape(cls, layout: MultilabelLayout, field: str) -> None:
        return None  # 1-D fields of any length

    @classmethod
    def layout_for(cls, requirements: list[Any], task: Any) -> MultilabelLayout:
        return MultilabelLayout(task.num_classes, tuple(sorted({float(t) for t in requirements})), task.threshold_rule)

    @classmethod
    def zero(cls, layout: MultilabelLayout) -> "MultilabelSamplewiseState":
        return cls(layout, {"ids": np.zeros(0, dtype=np.int64), "counts": np.zeros(0)}, _trusted=True)

    @classmethod
    def from_batch(cls, layout: MultilabelLayout, batch: Batch) -> "MultilabelSamplewiseState":
        if batch.ids is None:
            raise ValueError("multilabel_confusion_matrix@samplewise=true needs example ids: set id_col (Evaluation(id_col=...), --id COL)")
        Y, score, w = _indicator_inputs(batch)
        n, L = Y.shape
        ones = np.ones((n, L)) if w is None else np.ones((n, L)) * w[:, None]  # scikit-learn's _count_nonzero weights

        def count(x: np.ndarray) -> np.ndarray:
            return np.where(x != 0, ones, 0.0).sum(axis=1)

        per_t = []
        for t in layout.thresholds:
            P = (score >= t if layout.threshold_rule == ">=" else score > t).astype(np.float64)
            tp, pred, true = count(Y * P), count(P), count(Y)
            fp, fn = pred - tp, true - tp
            tn = (L if w is None else w * L) - tp - fp - fn
            per_t.append(np.stack([tn, fp, fn, tp], axis=1))
        counts = np.stack(per_t, axis=1) if per_t else np.zeros((n, 0, 4))  # (n, T, 4)
        order = np.argsort(batch.ids, kind="stable")
        ids = np.ascontiguousarray(batch.ids[order], dtype=np.int64)
        dup = np.flatnonzero(ids[1:] == ids[:-1])
        if dup.size:
            raise ValueError(
                f"example id {int(ids[dup[0]])} appears twice: multilabel_confusion_matrix@samplewise=true keeps one matrix per example (id_col must be unique)"
            )
        return cls(layout, {"ids": ids, "counts": np.ascontiguousarray(counts[order]).reshape(-1) + 0.0}, _trusted=True)

    def merge(self, other: "State") -> "MultilabelSamplewiseState":
        """The union of both states' examples, sorted by id.

        Raises:
            ValueError: another kind or layout (naming the setting), or an id in both states.
        """
        if type(other) is not type(self):
            raise ValueError(f"cannot merge state {getattr(other, 'kind', type(other).__name__)!r} into {self.kind!r}")
        if other.layout != self.layout:
            raise ValueError(f"cannot merge {self.kind} states: {_layout_diff(self.layout, other.layout)}")
        a, b = self.arrays, other.arrays
        if b["ids"].size == 0:
            return self
        if a["ids"].size == 0:
            return other  # type: ignore[return-value]
        ids = np.concatenate([a["ids"], b["ids"]])
        order = np.argsort(ids, kind="stable")
        ids = ids[order]
        dup = np.flatnonzero(ids[1:] == ids[:-1])
        if dup.size:
            raise ValueError(
                f"example id {int(ids[dup[0]])} appears in both merged states: multilabel_confusion_matrix@samplewise=true keeps one matrix per example (id_col must be unique)"
            )
        w = 4 * len(self.layout.thresholds)
        counts = np.concatenate([a["counts"].reshape(-1, w), b["counts"].reshape(-1, w)])[order].reshape(-1)
        return type(self)(self.layout, {"ids": ids, "counts": counts}, _trusted=True)

    __add__ = merge

    def matrices(self, threshold: float) -> np.ndarray:
        """(n, 2, 2) ``[[tn, fp], [fn, tp]]`` per example, ordered by id, at one threshold."""
        j = self.layout.t_index(threshold)
        c = self.arrays["counts"].reshape(self.arrays["ids"].shape[0], len(self.layout.thresholds), 4)[:, j, :]
        return c.reshape(-1, 2, 2).copy()


def _samples_average(st: State, j: int, prefix: str, zd: Any, beta_i: int | None = None) -> float:
    a = st.arrays
    pick = (lambda f: a[f][j]) if beta_i is None else (lambda f: a[f][j, beta_i])  # noqa: E731
    s_w, d_w, s_n, d_n = (float(pick(f"{prefix}_{x}")) for x in ("sum_w", "def_w", "sum_n", "def_n"))
    total_w, total_n = float(a["weight"]), float(a["count"])
    if d_n < total_n and zd == "warn":
        record_undefined(None, "warn")
    if zd == "nan":
        if d_w > 0:
            return s_w / d_w
        return s_n / d_n if d_n > 0 else float("nan")
    fill = 0.0 if zd == "warn" else float(zd)
    if total_w > 0:
        return (s_w + fill * (total_w - d_w)) / total_w
    return (s_n + fill * (total_n - d_n)) / total_n if total_n > 0 else float("nan")


def prf_multilabel(metric: _Classification, states: dict[str, State]) -> Any:
    """Precision, recall, F-beta or IoU of a multilabel task (called by those metrics)."""
    t = metric.p["threshold"]
    avg, zd = metric.p["average"], metric.p["zero_division"]
    which = metric.which
    if avg == "samples" and which == "jaccard":
        js = states["multilabel_jaccard_samples"]
        return _samples_average(js, js.layout.t_index(t), "j", zd)  # type: ignore[arg-type]
    st = states["multilabel"]
    tp, fp, tn, fn = st.label_counts(t)
    pred, true = tp + fp, tp + fn
    if avg == "samples":
        j = st.layout.t_index(t)
        if which == "precision":
            return _samples_average(st, j, "p", zd)
        if which == "recall":
            return _samples_average(st, j, "r", zd)
        beta = metric.beta()
        return _samples_average(st, j, "f", zd, st.layout.betas.index(float(beta)))
    classes: np.ndarray | None = np.arange(tp.shape[0])
    if metric.p.get("labels") is not None:  # the label columns given, in their order
        tp, pred, true, classes = (_take_labels(metric, a) for a in (tp, pred, true, classes))
    if avg == "micro":
        tp, pred, true = tp.sum(keepdims=True), pred.sum(keepdims=True), true.sum(keepdims=True)
        classes = None
    v = prf_values(which, tp, pred, true, metric.beta(), zd, metric.key, classes)
    if avg is None:
        return v
    if avg == "micro":
        return float(v[0])
    return get_averaging(avg).reduce(v, true)


def subset_accuracy(metric: Metric, states: dict[str, State]) -> float:
    """Weighted fraction of rows with every label right (``accuracy`` of a multilabel task)."""
    st = states["multilabel"]
    w = float(st["weight"])
    if w == 0:
        record_undefined()
        return float("nan")
    return float(st["subset"][st.layout.t_index(metric.p["threshold"])] / w)


def _requires_multilabel(metric: _Classification) -> list[tuple[type[State], Any]]:
    if getattr(metric, "which", None) == "jaccard" and metric.p.get("average") == "samples":
        return [(MultilabelJaccardSamplesState, metric.p["threshold"])]
    return [(MultilabelState, (metric.p["threshold"], metric.p.get("beta", 1.0)))]


register_task_kind("multilabel", TaskKindSupport(requires=_requires_multilabel, prf=prf_multilabel, accuracy=subset_accuracy))


class _MultilabelMetric(_Classification):
    """Multilabel-only metrics with a ``threshold``."""

    params = {"threshold": None}
    positional = None
    tasks = ("multilabel",)

    def configure(self) -> None:
        p = self.p
        p["threshold"] = self.task.threshold if p["threshold"] is None else float(p["threshold"])
        if not math.isfinite(p["threshold"]):
            raise ValueError(f"metric {self.name!r}: threshold must be finite, got {p['threshold']}")
        p.update(average="micro", zero_division=check_zero_division(self.task.zero_division))

    def _show_positional(self) -> bool:
        return False


class SubsetAccuracy(_MultilabelMetric):
    """Subset accuracy (exact match): the weighted fraction of rows whose every label is right.
    NaN with no examples. Source: ``sklearn.metrics.accuracy_score`` on indicator matrices."""

    name = "subset_accuracy"
    full_name = "Subset accuracy"
    aliases = ("exact_match", "exact_match_ratio")
    sklearn = "sklearn.metrics.accuracy_score"
    undefined = "no examples (total weight 0)"

    def compute(self, states: dict[str, State]) -> float:
        return subset_accuracy(self, states)


class HammingLoss(_MultilabelMetric):
    """Hamming loss: the weighted fraction of wrong labels, ``sum (fp + fn) / (L * sum w)``;
    on binary and multiclass (1-D) labels the weighted fraction of wrong predictions, the
    off-diagonal weight over the total (bit for bit scikit-learn's; ``1 - accuracy`` can be an ulp
    off). NaN with no examples. Source: ``sklearn.metrics.hamming_loss``."""

    name = "hamming_loss"
    full_name = "Hamming loss"
    aliases = ("hamming",)
    tasks = ("binary", "multiclass", "multilabel")
    higher_is_better = False
    sklearn = "sklearn.metrics.hamming_loss"
    undefined = "no examples (total weight 0)"

    def configure(self) -> None:
        if self.task.kind == "multilabel":
            return super().configure()
        Accuracy.configure(self)  # type: ignore[arg-type]

    def compute(self, states: dict[str, State]) -> float:
        if self.task.kind != "multilabel":
            m = self.matrix(states)
            total = m.sum()
            if total == 0:
                record_undefined()
                return float("nan")
            wrong = m[~np.eye(m.shape[0], dtype=bool)].sum()
            return float(wrong / total)  # mismatch weight over total, as scikit-learn (1 - accuracy is an ulp off)
        st = states["multilabel"]
        tp, fp, tn, fn = st.label_counts(self.p["threshold"])
        w = float(st["weight"])
        if w == 0:
            record_undefined()
            return float("nan")
        return float((fp.sum() + fn.sum()) / (tp.shape[0] * w))


class MultilabelConfusionMatrix(_MultilabelMetric):
    """Per-label 2 x 2 confusion matrices, an (L, 2, 2) array ``[[tn, fp], [fn, tp]]`` (weighted).
    ``samplewise=true``: one matrix per example, an (n, 2, 2) array ordered by example id, from
    rows keyed by ``id_col`` (integer ids, each once; :class:`MultilabelSamplewiseState`): what
    scikit-learn's ``samplewise=True`` gives for the rows sorted by id. Without ``id_col`` it
    raises ValueError saying to set it. ``labels=a|b|...``: the matrices of those label columns,
    in that order (not with ``samplewise``). Source: ``sklearn.metrics.multilabel_confusion_matrix``."""

    name = "multilabel_confusion_matrix"
    full_name = "Multilabel confusion matrix"
    aliases = ("label_confusion_matrix",)
    higher_is_better = None
    bounds = (0.0, math.inf)
    sklearn = "sklearn.metrics.multilabel_confusion_matrix"
    params = {"threshold": None, "samplewise": False, "labels": None}

    def configure(self) -> None:
        sw = self.p["samplewise"]
        if isinstance(sw, str):
            sw = {"true": True, "false": False, "1": True, "0": False}.get(sw.lower(), sw)
        if sw not in (True, False, 0, 1) or isinstance(sw, float):
            raise ValueError(f"metric {self.name!r}: samplewise must be true or false, got {self.p['samplewise']!r}")
        super().configure()
        self.p["samplewise"] = bool(sw)
        set_labels(self)
        if self.p["samplewise"] and self.p.get("labels") is not None:
            raise ValueError(f"metric {self.name!r}: labels= is not supported with samplewise=true (each row's matrix counts every label)")

    def requires(self) -> list[tuple[type[State], Any]]:
        if self.p["samplewise"]:
            return [(MultilabelSamplewiseState, self.p["threshold"])]
        return super().requires()

    def needs(self) -> frozenset[str]:
        """Labels and predictions; with ``samplewise`` also example ids (``id_col``)."""
        return super().needs() | ({"id"} if self.p["samplewise"] else set())

    def compute(self, states: dict[str, State]) -> np.ndarray:
        if self.p["samplewise"]:
            return states["multilabel_samplewise"].matrices(self.p["threshold"])  # type: ignore[attr-defined]
        tp, fp, tn, fn = (_take_labels(self, a) for a in states["multilabel"].label_counts(self.p["threshold"]))
        return np.stack([np.stack([tn, fp], axis=1), np.stack([fn, tp], axis=1)], axis=1)


__all__ = [
    "HammingLoss",
    "MultilabelConfusionMatrix",
    "MultilabelJaccardSamplesState",
    "MultilabelLayout",
    "MultilabelSamplewiseState",
    "MultilabelState",
    "SubsetAccuracy",
    "prf_multilabel",
    "subset_accuracy",
]
