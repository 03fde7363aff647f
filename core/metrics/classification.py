"""More classification metrics from the shared confusion states (no new state kinds).

Binary (from :class:`~mergeable_metrics.states.base.BinaryConfusionState` at the threshold): specificity, NPV, FPR,
FNR, prevalence. Binary and multiclass (from the 2 x 2 or K x K confusion matrix): balanced
accuracy, Matthews correlation, Cohen's kappa, a per-class report, IoU (Jaccard), mIoU and Dice.
Segmentation uses the multiclass ones over pixels (see :mod:`mergeable_metrics.inputs.formats`, ``label_map``), so
IoU is pooled over all pixels of all images, never averaged per image or per batch.

Undefined values (zero denominators) follow ``zero_division`` (default NaN plus an
:class:`~mergeable_metrics.metrics.base.UndefinedMetricWarning` naming the metric, class and slice). A class absent
from both prediction and target has an undefined IoU / Dice: NaN, left out of the mean.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from mergeable_metrics.metrics.base import (
    _PRF,
    _Classification,
    _divide,
    _take_labels,
    check_zero_division,
    configure_labels,
    set_labels,
    prf_values,
    record_undefined,
)
from mergeable_metrics.states.base import State


class _FromMatrix(_Classification):
    """A scalar metric of the whole confusion matrix: ``threshold`` (binary) and ``zero_division``."""

    params = {"threshold": None, "zero_division": None}
    positional = None
    tasks = ("binary", "multiclass")

    def configure(self) -> None:
        p = self.p
        if p["threshold"] is not None and self.task.kind != "binary":
            raise ValueError(f"metric {self.name!r}: threshold applies to binary tasks only")
        p["threshold"] = self.task.threshold if p["threshold"] is None else float(p["threshold"])
        if not math.isfinite(p["threshold"]):
            raise ValueError(f"metric {self.name!r}: threshold must be finite, got {p['threshold']}")
        p["average"] = "binary" if self.task.kind == "binary" else "micro"
        if "zero_division" in p:
            zd = p["zero_division"]
            p["zero_division"] = self.task.zero_division if zd is None else check_zero_division(zd)

    def _show_positional(self) -> bool:
        return False


class _BinaryRate(_FromMatrix):
    """``num / sum(den)`` of the binary counts at the threshold."""

    tasks = ("binary",)
    num: ClassVar[str] = "tn"
    den: ClassVar[tuple[str, ...]] = ("tn", "fp")

    def compute(self, states: dict[str, State]) -> float:
        tp, fp, tn, fn = states["binary_confusion"].counts(self.p["threshold"])
        c = {"tp": tp, "fp": fp, "tn": tn, "fn": fn}
        return float(_divide(c[self.num], sum(c[d] for d in self.den), self.p["zero_division"], self.key))


class Specificity(_BinaryRate):
    """Specificity (true negative rate) ``tn / (tn + fp)``: recall of the negative class.

    Undefined (no negatives) -> ``zero_division``. Source: ``sklearn.metrics.recall_score`` with
    ``pos_label=0``.
    """

    name = "specificity"
    full_name = "Specificity"
    aliases = ("tnr", "true_negative_rate", "selectivity")
    num, den = "tn", ("tn", "fp")
    sklearn = "sklearn.metrics.recall_score(pos_label=0)"
    undefined = "no negatives"


class NegativePredictiveValue(_BinaryRate):
    """Negative predictive value ``tn / (tn + fn)``: precision of the negative class.

    Undefined (nothing predicted negative) -> ``zero_division``. Source:
    ``sklearn.metrics.precision_score`` with ``pos_label=0``.
    """

    name = "npv"
    full_name = "Negative predictive value"
    aliases = ("negative_predictive_value",)
    num, den = "tn", ("tn", "fn")
    sklearn = "sklearn.metrics.precision_score(pos_label=0)"
    undefined = "no predicted negatives"


class FalsePositiveRate(_BinaryRate):
    """False positive rate (fall-out) ``fp / (fp + tn)`` = 1 - specificity.

    Undefined (no negatives) -> ``zero_division``. Source: ``sklearn.metrics.confusion_matrix``
    (``fp / (fp + tn)``), the x axis of ``roc_curve``.
    """

    name = "fpr"
    full_name = "False positive rate"
    aliases = ("false_positive_rate", "fall_out")
    num, den = "fp", ("fp", "tn")
    higher_is_better = False
    sklearn = "1 - sklearn.metrics.recall_score(pos_label=0)"
    undefined = "no negatives"


class FalseNegativeRate(_BinaryRate):
    """False negative rate (miss rate) ``fn / (fn + tp)`` = 1 - recall.

    Undefined (no positives) -> ``zero_division``. Source: ``1 - sklearn.metrics.recall_score``.
    """

    name = "fnr"
    full_name = "False negative rate"
    aliases = ("false_negative_rate", "miss_rate")
    num, den = "fn", ("fn", "tp")
    higher_is_better = False
    sklearn = "1 - sklearn.metrics.recall_score"
    undefined = "no positives"


class FowlkesMallows(_FromMatrix):
    """Fowlkes-Mallows index ``sqrt(precision * recall)``, the geometric mean of precision and
    recall, computed from those two metrics (``dependencies``: a plan computes them once from the
    shared confusion state). Binary, at ``threshold``; NaN when either is undefined (unless
    ``zero_division`` says otherwise). Reference: ``sqrt(precision_score * recall_score)``; on
    the pairs of a clustering it is ``sklearn.metrics.fowlkes_mallows_score``.
    """

    name = "fowlkes_mallows"
    full_name = "Fowlkes-Mallows index"
    aliases = ("fowlkes_mallows_index", "fmi")
    tasks = ("binary",)
    dependencies = ("precision", "recall")
    reference = "sqrt(precision_score * recall_score); sklearn.metrics.fowlkes_mallows_score over pairs"
    undefined = "no predicted positives or no positives (precision or recall undefined)"

    def compute_from(self, values: dict[str, Any]) -> float:
        p, r = float(values["precision"]), float(values["recall"])
        return math.sqrt(p * r) if not (math.isnan(p) or math.isnan(r)) else float("nan")


class _ShareOfTotal(_FromMatrix):
    """``(count a + count b) / (tp + fp + tn + fn)`` of the binary counts at the threshold; NaN
    with no examples (total weight 0)."""

    params = {"threshold": None}
    tasks = ("binary",)
    higher_is_better = None
    undefined = "no examples (total weight 0)"
    share: ClassVar[tuple[int, int]] = (0, 3)  # indices into (tp, fp, tn, fn)

    def compute(self, states: dict[str, State]) -> float:
        counts = states["binary_confusion"].counts(self.p["threshold"])
        total = sum(counts)
        if total == 0:
            record_undefined()
            return float("nan")
        a, b = self.share
        return float((counts[a] + counts[b]) / total)


class Prevalence(_ShareOfTotal):
    """Weighted fraction of positive labels ``(tp + fn) / (tp + fp + tn + fn)``.

    NaN with no examples (an average over nothing). Equals ``mean_label`` of a binary task.
    Source: ``numpy.average(y_true, weights=sample_weight)``.
    """

    name = "prevalence"
    full_name = "Prevalence"
    reference = "numpy.average(y_true, weights=sample_weight)"
    share = (0, 3)  # tp + fn


class SelectionRate(_ShareOfTotal):
    """Weighted fraction of positive predictions ``(tp + fp) / (tp + fp + tn + fn)`` at the
    threshold: the positive-prediction rate that demographic parity compares across slices
    (fairlearn's ``selection_rate``).

    NaN with no examples (total weight 0). Source: ``numpy.average(y_pred, weights=sample_weight)``.
    """

    name = "selection_rate"
    full_name = "Selection rate"
    aliases = ("positive_prediction_rate", "positive_rate")
    reference = "numpy.average(y_pred, weights=sample_weight)"
    share = (0, 1)  # tp + fp


class BalancedAccuracy(_FromMatrix):
    """Mean recall over the classes present in the labels: ``mean(diag(C) / C.sum(axis=1))``.

    Classes with no (weighted) true examples are left out, as scikit-learn does; NaN when there is
    none. ``adjusted=true`` rescales so chance is 0 and perfect is 1:
    ``(score - 1/n) / (1 - 1/n)`` with ``n`` the classes counted. Source:
    ``sklearn.metrics.balanced_accuracy_score``.
    """

    name = "balanced_accuracy"
    full_name = "Balanced accuracy"
    aliases = ("balanced_accuracy_score",)
    params = {"threshold": None, "adjusted": False}
    sklearn = "sklearn.metrics.balanced_accuracy_score"
    undefined = "no examples"

    def configure(self) -> None:
        super().configure()
        a = self.p["adjusted"]
        if a not in (True, False, 0, 1):
            raise ValueError(f"metric {self.name!r}: adjusted must be true or false, got {a!r}")
        self.p["adjusted"] = bool(a)
        if "adjusted" in self.given:
            self.given["adjusted"] = bool(a)

    def compute(self, states: dict[str, State]) -> float:
        m = self.matrix(states)
        true = m.sum(axis=1)
        present = true > 0
        if not present.any():
            record_undefined()
            return float("nan")
        per_class = np.diag(m)[present] / true[present]
        score = float(per_class.mean())
        if self.p["adjusted"]:
            n = per_class.shape[0]
            if n == 1:
                record_undefined()
                return float("nan")
            chance = 1.0 / n
            score = (score - chance) / (1.0 - chance)
        return score


class MatthewsCorrCoef(_FromMatrix):
    """Matthews correlation coefficient (multiclass: Gorodkin's R_K), from the confusion matrix:
    ``(c s - t.p) / sqrt((s^2 - p.p) (s^2 - t.t))`` with ``t``/``p`` true/predicted class totals,
    ``c`` the trace and ``s`` the total.

    Undefined (a constant prediction or a single label class, or no examples) ->
    ``zero_division``: NaN by default; scikit-learn returns 0.0 there (``zero_division=0``).
    Source: ``sklearn.metrics.matthews_corrcoef``.
    """

    name = "mcc"
    full_name = "Matthews correlation coefficient"
    aliases = ("matthews_corrcoef", "matthews_correlation")
    bounds = (-1.0, 1.0)
    sklearn = "sklearn.metrics.matthews_corrcoef"
    undefined = "a constant prediction, a single label class or no examples (sklearn: 0.0)"

    def compute(self, states: dict[str, State]) -> float:
        m = self.matrix(states)
        t, p = m.sum(axis=1), m.sum(axis=0)
        c, s = np.trace(m), p.sum()
        cov_ytyp = c * s - np.dot(t, p)
        # s^2 - p.p as sum_i p_i (s - p_i): nonnegative terms, so a constant prediction (or a single
        # label class) gives exactly 0 whatever the summation order (the stacked path agrees)
        cov_ypyp = float((p * (s - p)).sum())
        cov_ytyt = float((t * (s - t)).sum())
        prod = cov_ypyp * cov_ytyt
        return float(_divide(cov_ytyp, np.sqrt(prod) if prod > 0 else 0.0, self.p["zero_division"], self.key))


class CohenKappa(_FromMatrix):
    """Cohen's kappa between labels and predictions: ``1 - sum(W * C) / sum(W * E)`` with ``E`` the
    outer product of the marginals over the total, and weights ``W``: ``none`` (0 on the
    diagonal, 1 elsewhere), ``linear`` (``|i - j|``) or ``quadratic`` (``(i - j)^2``) of the class
    ids 0..K-1.

    Undefined (no examples, or expected disagreement 0) -> ``zero_division`` (scikit-learn's
    ``replace_undefined_by``, NaN by default). Source: ``sklearn.metrics.cohen_kappa_score`` with
    ``labels=range(K)`` (with absent classes sklearn's default labels renumber the classes, which
    changes linear and quadratic weights).
    """

    name = "cohen_kappa"
    full_name = "Cohen's kappa"
    aliases = ("kappa", "cohen_kappa_score")
    params = {"threshold": None, "weights": None, "zero_division": None}
    positional = "weights"
    bounds = (-1.0, 1.0)
    sklearn = "sklearn.metrics.cohen_kappa_score"
    undefined = "no examples, or no expected disagreement"

    def configure(self) -> None:
        super().configure()
        w = self.p["weights"]
        if w not in (None, "linear", "quadratic"):
            raise ValueError(f"metric {self.name!r}: weights must be none, linear or quadratic, got {w!r}")

    def _show_positional(self) -> bool:
        return self.p["weights"] is not None

    def compute(self, states: dict[str, State]) -> float:
        m = self.matrix(states)
        k = m.shape[0]
        sum0, sum1 = m.sum(axis=0), m.sum(axis=1)
        total = sum0.sum()
        zd = self.p["zero_division"]
        if total == 0:
            return self._undefined(zd)
        expected = np.outer(sum0, sum1) / total
        if self.p["weights"] is None:
            w = np.ones((k, k)) - np.eye(k)
        else:
            d = np.arange(k)[None, :] - np.arange(k)[:, None]
            w = np.abs(d).astype(np.float64) if self.p["weights"] == "linear" else (d**2).astype(np.float64)
        den = float(np.sum(w * expected))
        if den == 0:
            return self._undefined(zd)
        return float(1 - np.sum(w * m) / den)

    def _undefined(self, zd: Any) -> float:
        return float(_divide(0.0, 0.0, zd, self.key))


class ClassificationReport(_FromMatrix):
    """Per-class precision, recall, F1 and support: a (K, 4) array, one row per class id
    (binary: rows for classes 0 and 1), columns ``precision, recall, f1, support``; support is the
    weighted count of true labels.

    Undefined entries -> ``zero_division``. An ignored class (``ignore_index``) has NaN
    precision/recall/F1. ``labels=a|b|...``: one row per label given, in that order. Source: ``sklearn.metrics.classification_report(output_dict=True,
    labels=range(K))`` (its per-class entries; averages are ``precision@macro`` etc.).
    """

    name = "classification_report"
    full_name = "Classification report"
    aliases = ("per_class_report",)
    params = {**_FromMatrix.params, "labels": None}
    higher_is_better = None
    bounds = (0.0, math.inf)
    sklearn = "sklearn.metrics.classification_report"
    undefined = "per class, as precision, recall and F1"

    def configure(self) -> None:
        super().configure()
        set_labels(self)

    def compute(self, states: dict[str, State]) -> np.ndarray:
        m = self.matrix(states)
        tp, pred, true = np.diag(m).copy(), m.sum(axis=0), m.sum(axis=1)
        classes = np.arange(tp.shape[0])
        if self.p["labels"] is not None:  # the rows of the labels given, in their order
            tp, pred, true, classes = (_take_labels(self, a) for a in (tp, pred, true, classes))
            zd = self.p["zero_division"]
            return np.column_stack([prf_values(w, tp, pred, true, 1.0, zd, self.key, classes) for w in ("precision", "recall", "f1")] + [true])
        zd = self.p["zero_division"]
        rows = np.column_stack([prf_values(w, tp, pred, true, 1.0, zd, self.key, classes) for w in ("precision", "recall", "f1")] + [true])
        keep = self.kept_classes()
        if keep is not None:
            rows[~keep, :3] = np.nan
        return rows


class IoU(_PRF):
    """Intersection over union (Jaccard index) ``tp / (tp + fp + fn)`` per class, then ``average``.

    Binary: of the positive class. Multiclass / segmentation: per class (``@none``: the (K,)
    array) pooled over every pixel of every image; ``macro`` (the default) is mIoU. A class absent
    from both prediction and target is undefined: NaN by default, and left out of the mean.
    Multilabel: per label, or ``samples``: each row's ``|y & pred| / |y | pred|`` (a row with
    neither true nor predicted labels takes ``zero_division``; with the default NaN it is left out),
    averaged with the sample weights. Source: ``sklearn.metrics.jaccard_score`` (with
    ``zero_division=np.nan`` for the NaN policy).
    """

    name = "iou"
    full_name = "IoU (Jaccard index)"
    aliases = ("jaccard", "jaccard_score", "jaccard_index", "intersection_over_union")
    which = "jaccard"
    sklearn = "sklearn.metrics.jaccard_score"
    undefined = "a class absent from both prediction and target (NaN, left out of the mean)"


class MeanIoU(IoU):
    """Mean IoU (mIoU): the unweighted mean of per-class IoU over the classes whose IoU is
    defined (``iou@macro``; binary tasks average both classes). Pooled over all pixels of all
    images. Source: ``numpy.nanmean(sklearn.metrics.jaccard_score(average=None,
    zero_division=np.nan))``.
    """

    name = "miou"
    full_name = "Mean IoU"
    aliases = ("mean_iou", "mean_jaccard")
    params = {"threshold": None, "zero_division": None, "labels": None}
    positional = None
    tasks = ("binary", "multiclass")
    sklearn = "sklearn.metrics.jaccard_score(average='macro')"

    def configure(self) -> None:
        _Classification.configure(self)
        self.p["average"] = "macro"
        configure_labels(self)

    def _show_positional(self) -> bool:
        return False


class Dice(_PRF):
    """Dice coefficient (Sørensen-Dice) ``2 tp / (2 tp + fp + fn)`` per class, then ``average``
    (binary: the positive class; multiclass default ``macro``). Per class it equals F1. A class
    absent from both prediction and target is NaN and left out of the mean. Pooled over all pixels.
    Source: ``sklearn.metrics.f1_score``.
    """

    name = "dice"
    full_name = "Dice coefficient"
    aliases = ("dice_score", "dice_coefficient")
    which = "f1"
    sklearn = "sklearn.metrics.f1_score"
    undefined = "a class absent from both prediction and target (NaN, left out of the mean)"

    def configure(self) -> None:
        super().configure()
        if self.p["average"] == "samples":
            raise ValueError(f"metric {self.name!r}: average='samples' is not supported")


__all__ = [
    "BalancedAccuracy",
    "ClassificationReport",
    "CohenKappa",
    "Dice",
    "FalseNegativeRate",
    "FalsePositiveRate",
    "FowlkesMallows",
    "IoU",
    "MatthewsCorrCoef",
    "MeanIoU",
    "NegativePredictiveValue",
    "Prevalence",
    "Specificity",
]
