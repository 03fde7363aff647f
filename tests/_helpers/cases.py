"""The named case grid: deterministic data generators for binary and multiclass batches.

Every case is generated from a fixed seed derived from its name, so a case name always means the
same data. Binary cases carry scores in [0, 1]; "ties" puts many scores exactly on the thresholds
``TIE_THRESHOLDS`` (0.25, 0.5, 0.75: exactly representable in binary floating point), so the
``>=`` / ``>`` rule matters there.

Binary cases (``BINARY_CASES``):
    balanced, imbalanced, one_class_pos, one_class_neg, ties, weighted_zeros (some weights 0),
    all_weights_zero (every weight 0: sklearn refuses, we return the zero_division values and NaN
    accuracy), single_row, empty.

Multiclass cases (``MULTICLASS_CASES``), each with its number of classes K:
    balanced (K=4), imbalanced (K=3), one_class (every true label 1, K=3), absent_class (class 3
    never occurs, K=4), ties (predictions from an argmax over scores with exact ties, first index
    wins, K=3), weighted_zeros (K=3), all_weights_zero (K=3), single_row (K=3), empty (K=3),
    binary_as_multiclass (K=2, for ``multiclass=True``).

``weighted=True`` adds float sample weights (multiples of 1/8 in [0, 4], a few of them 0, so sums
are exact in float64) to cases that are unweighted by default; weighted_zeros and all_weights_zero
are always weighted, empty never has rows.

Example:
    >>> c = binary_case("ties")
    >>> c.n, sorted(set(c.y_true.tolist()))
    (32, [0, 1])
    >>> m = multiclass_case("absent_class")
    >>> m.num_classes, int(m.y_true.max()), int(m.y_pred.max())
    (4, 2, 2)
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

TIE_THRESHOLDS = (0.25, 0.5, 0.75)

BINARY_CASES = (
    "balanced",
    "imbalanced",
    "one_class_pos",
    "one_class_neg",
    "ties",
    "weighted_zeros",
    "all_weights_zero",
    "single_row",
    "empty",
)

MULTICLASS_CASES = (
    "balanced",
    "imbalanced",
    "one_class",
    "absent_class",
    "ties",
    "weighted_zeros",
    "all_weights_zero",
    "single_row",
    "empty",
    "binary_as_multiclass",
)

_ALWAYS_WEIGHTED = ("weighted_zeros", "all_weights_zero")


def _grid(names: tuple[str, ...]) -> list[tuple[str, bool]]:
    out = []
    for name in names:
        if name in _ALWAYS_WEIGHTED:
            out.append((name, True))
        elif name == "empty":
            out.append((name, False))
        else:
            out += [(name, False), (name, True)]
    return out


BINARY_GRID: list[tuple[str, bool]] = _grid(BINARY_CASES)
"""``(case name, weighted)`` pairs covering every case with and without weights."""

MULTICLASS_GRID: list[tuple[str, bool]] = _grid(MULTICLASS_CASES)


def grid_id(param: tuple[str, bool]) -> str:
    """pytest id for a grid entry: ``"balanced"`` / ``"balanced-weighted"``."""
    name, weighted = param
    return f"{name}-weighted" if weighted and name not in _ALWAYS_WEIGHTED else name


def _rng(*parts: object) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(parts).encode()))


def _weights(rng: np.random.Generator, n: int) -> np.ndarray:
    w = rng.integers(0, 33, size=n) / 8.0  # multiples of 1/8 in [0, 4]: exact sums
    w[rng.random(n) < 0.15] = 0.0
    return w


@dataclass(frozen=True)
class BinaryCase:
    """A named binary batch.

    Attributes:
        name: the case name.
        y_true: (n,) int64 labels in {0, 1}.
        y_score: (n,) float64 scores in [0, 1].
        sample_weight: (n,) float64 weights >= 0, or None.
    """

    name: str
    y_true: np.ndarray
    y_score: np.ndarray
    sample_weight: np.ndarray | None

    @property
    def n(self) -> int:
        return int(self.y_true.shape[0])

    def y_pred(self, threshold: float = 0.5, rule: str = ">=") -> np.ndarray:
        """Hard predictions at ``threshold`` under ``rule`` (int64 0/1)."""
        pos = self.y_score >= threshold if rule == ">=" else self.y_score > threshold
        return pos.astype(np.int64)

    def columns(self) -> dict[str, np.ndarray]:
        """``{"y_true", "y_score"[, "sample_weight"]}`` for Evaluation-style column input."""
        d = {"y_true": self.y_true, "y_score": self.y_score}
        if self.sample_weight is not None:
            d["sample_weight"] = self.sample_weight
        return d


@dataclass(frozen=True)
class MulticlassCase:
    """A named multiclass batch.

    Attributes:
        name: the case name.
        y_true: (n,) int64 labels in [0, K).
        y_pred: (n,) int64 predictions in [0, K).
        sample_weight: (n,) float64 weights >= 0, or None.
        num_classes: K.
    """

    name: str
    y_true: np.ndarray
    y_pred: np.ndarray
    sample_weight: np.ndarray | None
    num_classes: int

    @property
    def n(self) -> int:
        return int(self.y_true.shape[0])


def binary_case(name: str, weighted: bool = False) -> BinaryCase:
    """Generate the named binary case (see the module docstring).

    Raises:
        KeyError: unknown case name.
    """
    if name not in BINARY_CASES:
        raise KeyError(f"unknown binary case {name!r}; known: {BINARY_CASES}")
    rng = _rng("binary", name)
    if name == "balanced":
        y = rng.permutation(np.repeat([0, 1], 32))
        s = np.round(np.clip(0.3 * y + rng.uniform(0.0, 0.7, y.size), 0, 1), 3)
    elif name == "imbalanced":
        y = np.zeros(80, dtype=np.int64)
        y[rng.choice(80, 7, replace=False)] = 1
        s = np.round(np.clip(0.25 * y + rng.uniform(0.0, 0.75, y.size), 0, 1), 3)
    elif name == "one_class_pos":
        y = np.ones(12, dtype=np.int64)
        s = np.round(rng.uniform(0, 1, 12), 3)
    elif name == "one_class_neg":
        y = np.zeros(12, dtype=np.int64)
        s = np.round(rng.uniform(0, 1, 12), 3)
    elif name == "ties":
        y = rng.integers(0, 2, 32)
        s = rng.choice(np.array([0.0, 0.25, 0.5, 0.75, 1.0, 0.6]), 32)
        s[:6] = [0.25, 0.5, 0.75, 0.5, 0.5, 0.75]
        y[:6] = [1, 0, 1, 1, 0, 0]
    elif name == "weighted_zeros":
        y = rng.integers(0, 2, 40)
        s = np.round(rng.uniform(0, 1, 40), 3)
        w = _weights(rng, 40)
        w[:5] = 0.0  # at least five zero-weight rows
        return BinaryCase(name, y.astype(np.int64), s.astype(np.float64), w)
    elif name == "all_weights_zero":
        y = rng.integers(0, 2, 10)
        s = np.round(rng.uniform(0, 1, 10), 3)
        return BinaryCase(name, y.astype(np.int64), s.astype(np.float64), np.zeros(10))
    elif name == "single_row":
        y = np.array([1])
        s = np.array([0.5])  # exactly at the default threshold
    else:  # empty
        return BinaryCase(name, np.zeros(0, np.int64), np.zeros(0), None)
    w = _weights(rng, y.size) if weighted else None
    if w is not None and name == "single_row":
        w = np.array([2.5])
    return BinaryCase(name, np.asarray(y, np.int64), np.asarray(s, np.float64), w)


def multiclass_case(name: str, weighted: bool = False) -> MulticlassCase:
    """Generate the named multiclass case (see the module docstring).

    Raises:
        KeyError: unknown case name.
    """
    if name not in MULTICLASS_CASES:
        raise KeyError(f"unknown multiclass case {name!r}; known: {MULTICLASS_CASES}")
    rng = _rng("multiclass", name)

    def noisy(y: np.ndarray, k: int, p_right: float) -> np.ndarray:
        return np.where(rng.random(y.size) < p_right, y, rng.integers(0, k, y.size))

    if name == "balanced":
        k = 4
        y = rng.permutation(np.repeat(np.arange(k), 20))
        p = noisy(y, k, 0.6)
    elif name == "imbalanced":
        k = 3
        y = rng.choice(k, 90, p=[0.8, 0.15, 0.05])
        p = noisy(y, k, 0.5)
    elif name == "one_class":
        k = 3
        y = np.ones(15, dtype=np.int64)
        p = rng.integers(0, k, 15)
    elif name == "absent_class":
        k = 4
        y = rng.integers(0, 3, 30)
        p = noisy(y, 3, 0.5)
    elif name == "ties":
        k = 3
        y = rng.integers(0, k, 30)
        scores = rng.choice(np.array([0.0, 0.5, 1.0]), size=(30, k))
        p = np.argmax(scores, axis=1)  # exact ties -> first index wins
    elif name == "weighted_zeros":
        k = 3
        y = rng.integers(0, k, 40)
        p = noisy(y, k, 0.5)
        w = _weights(rng, 40)
        w[:5] = 0.0
        w[y == 2] = 0.0  # class 2 has zero support by weight but is present by count
        return MulticlassCase(name, y.astype(np.int64), p.astype(np.int64), w, k)
    elif name == "all_weights_zero":
        k = 3
        y = rng.integers(0, k, 10)
        p = rng.integers(0, k, 10)
        return MulticlassCase(name, y.astype(np.int64), p.astype(np.int64), np.zeros(10), k)
    elif name == "single_row":
        k = 3
        y, p = np.array([2]), np.array([1])
    elif name == "empty":
        return MulticlassCase(name, np.zeros(0, np.int64), np.zeros(0, np.int64), None, 3)
    else:  # binary_as_multiclass
        k = 2
        y = rng.integers(0, 2, 30)
        p = noisy(y, 2, 0.7)
    w = _weights(rng, y.size) if weighted else None
    if w is not None and name == "single_row":
        w = np.array([2.5])
    return MulticlassCase(name, np.asarray(y, np.int64), np.asarray(p, np.int64), w, k)
