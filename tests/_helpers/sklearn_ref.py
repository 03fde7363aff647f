"""scikit-learn reference adapters: the values our metrics must reproduce.

``sk_binary`` and ``sk_multiclass`` return a :class:`Reference` (a dict) keyed by our canonical
metric strings at the task's default settings (``"precision"``, ``"f1@macro"``,
``"fbeta@weighted@beta=2"``, ``"recall@none"``, ``"tp"``, ``"accuracy"``, ``"confusion_matrix"``),
plus ``.warned`` (the keys for which scikit-learn emitted its ``UndefinedMetricWarning``) and
``.source`` (``"sklearn"`` or ``"hand"``).

Policy differences are explicit: scikit-learn 1.9 refuses empty input and all-zero sample weights
(``ValueError``). For those, the adapter returns the hand-derived values of our policy instead
(``.source == "hand"``): every count 0, every precision/recall/F-beta equal to the
``zero_division`` value (0.0 for "warn", with a warning expected) and accuracy NaN (an average
over zero weight is undefined).

Example:
    >>> import numpy as np
    >>> r = sk_binary([1, 0, 1, 0], [0.8, 0.7, 0.2, 0.1], None, 0.5, ">=", "nan")
    >>> r["precision"], r["tp"], r["accuracy"], r.source
    (0.5, 1.0, 0.5, 'sklearn')
    >>> r = sk_binary([], [], None, 0.5, ">=", 1)
    >>> r["precision"], bool(np.isnan(r["accuracy"])), r.source
    (1.0, True, 'hand')
"""

from __future__ import annotations

import warnings
from typing import Any, Callable, Iterable, Sequence

import numpy as np

AVERAGES = ("micro", "macro", "weighted", None)


class Reference(dict):
    """Reference values keyed by our metric strings, with ``warned`` and ``source``."""

    def __init__(self, *args: Any, **kw: Any):
        super().__init__(*args, **kw)
        self.warned: set[str] = set()
        self.source = "sklearn"


def sk_zero_division(zero_division: Any) -> Any:
    """Our zero_division value as scikit-learn's (``"nan"`` -> ``np.nan``)."""
    return np.nan if zero_division == "nan" else zero_division


def zd_value(zero_division: Any) -> float:
    """The value an undefined ratio takes under our policy."""
    if zero_division == "nan":
        return float("nan")
    if zero_division == "warn":
        return 0.0
    return float(zero_division)


def fmt_beta(beta: float) -> str:
    """``2.0 -> "2"``, ``0.5 -> "0.5"`` (as in our canonical keys)."""
    return str(int(beta)) if float(beta).is_integer() else repr(float(beta))


def avg_name(average: str | None) -> str:
    return "none" if average is None else average


_WARN_PREFIX = {"precision": "Precision is", "recall": "Recall is", "f": "F-score is"}


def _prf_keys(binary: bool, betas: Sequence[float]) -> list[tuple[str, str, Any, float]]:
    """``(key, which, average, beta)`` for every precision/recall/f1/fbeta variant; ``which`` is
    "precision", "recall" or "f" (the F-score at ``beta``)."""
    out = []
    averages: list[Any] = (["binary"] if binary else []) + list(AVERAGES)
    for avg in averages:
        suffix = "" if avg == "binary" else f"@{avg_name(avg)}"
        out += [(f"precision{suffix}", "precision", avg, 1.0), (f"recall{suffix}", "recall", avg, 1.0)]
        out.append((f"f1{suffix}", "f", avg, 1.0))
        out += [(f"fbeta{suffix}@beta={fmt_beta(b)}", "f", avg, float(b)) for b in betas]
    return out


def _prfs(y: Any, p: Any, w: Any, avg: Any, beta: float, labels: Any, zd: Any) -> tuple[dict, set[str]]:
    """One ``precision_recall_fscore_support`` call: ``({which: value}, {which that warned})``."""
    from sklearn import metrics as skm
    from sklearn.exceptions import UndefinedMetricWarning

    kw: dict[str, Any] = dict(sample_weight=w, zero_division=sk_zero_division(zd), beta=beta)
    if avg == "binary":
        kw.update(average="binary", pos_label=1)
    else:
        kw.update(average=avg, labels=labels)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        prec, rec, f, _ = skm.precision_recall_fscore_support(y, p, **kw)
    warned = {
        which
        for which, prefix in _WARN_PREFIX.items()
        for wrn in caught
        if issubclass(wrn.category, UndefinedMetricWarning) and str(wrn.message).startswith(prefix)
    }
    values = {"precision": prec, "recall": rec, "f": f}
    return {k: np.asarray(v, dtype=np.float64) if np.ndim(v) else float(v) for k, v in values.items()}, warned


def _fill_prf(ref: "Reference", keys: list, y: Any, p: Any, w: Any, labels: Any, zd: Any, only: Any) -> None:
    calls: dict[tuple, tuple[dict, set[str]]] = {}
    for key, which, avg, beta in keys:
        if only is not None and key not in only:
            continue
        # precision and recall do not depend on beta: take them from the beta=1 call
        call = (avg, beta if which == "f" else 1.0)
        if call not in calls:
            calls[call] = _prfs(y, p, w, avg, call[1], labels, zd)
        values, warned = calls[call]
        ref[key] = values[which]
        if which in warned:
            ref.warned.add(key)


def _hand_undefined(ref: Reference, keys: list[tuple[str, str, Any, Any]], k: int, zero_division: Any) -> None:
    v = zd_value(zero_division)
    for key, _, avg, _ in keys:
        ref[key] = np.full(k, v) if avg is None else v
        if zero_division == "warn":
            ref.warned.add(key)
    ref["accuracy"] = float("nan")
    ref["confusion_matrix"] = np.zeros((k, k))
    ref.source = "hand"


def _memo_key(*parts: Any) -> tuple:
    return tuple(
        (p.dtype.str, p.shape, p.tobytes()) if isinstance(p, np.ndarray) else (tuple(p) if isinstance(p, (list, set, frozenset)) else p) for p in parts
    )


_MEMO: dict[tuple, Reference] = {}


def _memoised(key: tuple, build: Callable[[], Reference]) -> Reference:
    """References are pure functions of their inputs: cache them (a copy is returned)."""
    if key not in _MEMO:
        _MEMO[key] = build()
    src = _MEMO[key]
    out = Reference({k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in src.items()})
    out.warned, out.source = set(src.warned), src.source
    return out


def sk_binary(
    y_true: Any,
    y_score: Any,
    sample_weight: Any,
    threshold: float = 0.5,
    rule: str = ">=",
    zero_division: Any = "nan",
    betas: Sequence[float] = (0.5, 2.0),
    y_pred: Any = None,
    only: Iterable[str] | None = None,
) -> Reference:
    """Binary reference values at one threshold.

    Args:
        y_true: (N,) labels in {0, 1}.
        y_score: (N,) scores, thresholded with ``rule`` (ignored when ``y_pred`` is given).
        sample_weight: (N,) weights or None.
        threshold, rule: ``score >= threshold`` (``">="``) or ``score > threshold`` (``">"``).
        zero_division: 0, 1, "nan" or "warn" (ours; mapped to scikit-learn's).
        betas: F-beta values to include as ``fbeta@beta=<b>`` (and ``fbeta@<avg>@beta=<b>``).
        y_pred: (N,) hard predictions in {0, 1}, used instead of thresholding scores.
        only: compute just these precision/recall/F keys (speed); counts, accuracy and the
            confusion matrix are always included.

    Returns:
        A :class:`Reference` with ``tp, fp, tn, fn, accuracy, confusion_matrix`` (2 x 2,
        ``[[tn, fp], [fn, tp]]``), ``precision, recall, f1, fbeta@beta=<b>`` (average="binary",
        pos_label=1) and the ``@micro/@macro/@weighted/@none`` variants over ``labels=[0, 1]``.
    """
    y = np.asarray(y_true, dtype=np.int64)
    if y_pred is None:
        s = np.asarray(y_score, dtype=np.float64)
        p = (s >= threshold if rule == ">=" else s > threshold).astype(np.int64)
    else:
        p = np.asarray(y_pred, dtype=np.int64)
    w = None if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    only = None if only is None else frozenset(only)
    key = _memo_key("binary", y, p, w, zero_division, tuple(betas), None if only is None else sorted(only))
    return _memoised(key, lambda: _sk_binary(y, p, w, zero_division, betas, only))


def _sk_binary(y: np.ndarray, p: np.ndarray, w: Any, zero_division: Any, betas: Sequence[float], only: Any) -> Reference:
    from sklearn import metrics as skm

    keys = _prf_keys(True, betas)
    ref = Reference()
    if y.size == 0 or (w is not None and w.sum() == 0):
        _hand_undefined(ref, keys, 2, zero_division)
        for c in ("tp", "fp", "tn", "fn"):
            ref[c] = 0.0
        return ref
    _fill_prf(ref, keys, y, p, w, [0, 1], zero_division, only)
    cm = skm.confusion_matrix(y, p, labels=[0, 1], sample_weight=w).astype(np.float64)
    ref["confusion_matrix"] = cm
    tn, fp, fn, tp = cm.ravel().tolist()
    ref.update(tp=tp, fp=fp, tn=tn, fn=fn)
    ref["accuracy"] = float(skm.accuracy_score(y, p, sample_weight=w))
    return ref


def sk_multiclass(
    y_true: Any,
    y_pred: Any,
    sample_weight: Any,
    num_classes: int,
    zero_division: Any = "nan",
    betas: Sequence[float] = (0.5, 2.0),
    only: Iterable[str] | None = None,
) -> Reference:
    """Multiclass reference values with ``labels=range(K)``.

    Returns:
        A :class:`Reference` with ``accuracy``, ``confusion_matrix`` (K x K, rows true),
        and ``precision|recall|f1@<avg>`` and ``fbeta@<avg>@beta=<b>`` for avg in micro, macro,
        weighted, none (per-class (K,) arrays).
    """
    y = np.asarray(y_true, dtype=np.int64)
    p = np.asarray(y_pred, dtype=np.int64)
    w = None if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    only = None if only is None else frozenset(only)
    key = _memo_key("multiclass", y, p, w, num_classes, zero_division, tuple(betas), None if only is None else sorted(only))
    return _memoised(key, lambda: _sk_multiclass(y, p, w, num_classes, zero_division, betas, only))


def _sk_multiclass(y: np.ndarray, p: np.ndarray, w: Any, k: int, zero_division: Any, betas: Sequence[float], only: Any) -> Reference:
    from sklearn import metrics as skm

    labels = list(range(k))
    keys = _prf_keys(False, betas)
    ref = Reference()
    if y.size == 0 or (w is not None and w.sum() == 0):
        _hand_undefined(ref, keys, k, zero_division)
        return ref
    _fill_prf(ref, keys, y, p, w, labels, zero_division, only)
    ref["confusion_matrix"] = skm.confusion_matrix(y, p, labels=labels, sample_weight=w).astype(np.float64)
    ref["accuracy"] = float(skm.accuracy_score(y, p, sample_weight=w))
    return ref
