"""The float state kinds the JVM aggregates fold (Java sources in ``spark_metrics/java``): which
Python state each JVM kind stands for, and the configuration string its Java constructor reads.

``FLOAT_KINDS[type(zero)](zero)`` gives ``(kind, config)`` for ``FloatStates.create(kind, config)``
(Java; the score distributions read the score the row is ranked by: for
``score_distribution_class0`` the class-0 score, as core's ``Batch.y_score_class0``): the JVM state then folds rows to exactly ``zero``'s kind of bytes (``State.encode``) for
the same rows, bit for bit, in any partitioning. The config's first line is the state's layout
JSON (written verbatim into the bytes), then ``key=value`` lines (floats as ``float.hex()``).

A layout the JVM does not fold (multilabel probability sums) raises
``NotImplementedError`` naming it: keep the Arrow path for it. Importable without pyspark.
"""

from __future__ import annotations

import struct
from typing import Any, Callable

from mergeable_metrics.engine import (
    AbsoluteErrorDistributionState,
    CalibrationBinsState,
    Class0ScoreDistributionState,
    ClassScoreDistributionState,
    ProbabilitySumsState,
    RegressionMomentsState,
    RegressionTermsState,
    ScoreDistributionState,
)

__all__ = ["FLOAT_KINDS", "layout_json"]


def layout_json(zero: Any) -> str:
    """The layout JSON a state's bytes carry (read from its own frame: ``MMS`` version:u8
    kind:str16 kind_version:u8 layout:str32)."""
    data = zero.encode()
    at = 4
    (n,) = struct.unpack_from("<H", data, at)
    at += 2 + n + 1
    (n,) = struct.unpack_from("<I", data, at)
    return data[at + 4 : at + 4 + n].decode("utf-8")


def _config(zero: Any, **settings: Any) -> tuple[str, str]:
    lines = [layout_json(zero)]
    for key, value in settings.items():
        if isinstance(value, (list, tuple)):
            value = ",".join(float(v).hex() if isinstance(v, float) else str(int(v)) for v in value)
        elif isinstance(value, bool):
            value = "1" if value else "0"
        elif value is None:
            value = ""
        lines.append(f"{key}={value}")
    return zero.kind, "\n".join(lines)


def _probability_sums(zero: Any) -> tuple[str, str]:
    lay = zero.layout
    if lay.multilabel:
        raise NotImplementedError(f"probability_sums of a multilabel layout ({lay}) is not folded in the JVM")
    return _config(zero, binary=lay.binary, num_classes=lay.num_classes, eps=list(lay.eps), multilabel=False)


def _regression_moments(zero: Any) -> tuple[str, str]:
    # a multioutput layout (num_outputs=D) reads output rows (jvm.OUTPUT_ROWS_MODE): (D,) sums per field
    return _config(zero, num_outputs=zero.layout.num_outputs)


def _calibration_bins(zero: Any) -> tuple[str, str]:
    lay = zero.layout
    return _config(zero, bins=list(lay.bins), num_classes=lay.num_classes)


def _score_distribution(zero: Any) -> tuple[str, str]:
    return _config(zero, capacity=zero.layout.capacity)


def _class_score_distribution(zero: Any) -> tuple[str, str]:
    return _config(zero, num_classes=zero.layout.num_classes, capacity=zero.layout.capacity)


#: the regression terms whose per-row values Java computes bit for bit as core (arithmetic and fdlibm's logs and
#: powers: ``StrictMath.log`` / ``log1p`` / ``pow`` in Java, ``portable_log`` / ``portable_pow`` in core): all of
#: them, every Tweedie power included (a prefix ends with ``:``)
PORTED_TERMS = ("sle", "pinball:", "tweedie:", "null:")


def _regression_terms(zero: Any) -> tuple[str, str]:
    lay = zero.layout
    for t in lay.terms:
        if not any(t == p or (p.endswith(":") and t.startswith(p)) for p in PORTED_TERMS):
            raise NotImplementedError(f"regression term {t!r} is not folded in the JVM")
    return _config(zero, terms=";".join(lay.terms), num_outputs=lay.num_outputs)  # multioutput: (D, T) cells


#: Python state class -> ``(JVM kind, config)`` of its zero state
FLOAT_KINDS: dict[type, Callable[[Any], tuple[str, str]]] = {
    ProbabilitySumsState: _probability_sums,
    RegressionMomentsState: _regression_moments,
    CalibrationBinsState: _calibration_bins,
    ScoreDistributionState: _score_distribution,
    Class0ScoreDistributionState: _score_distribution,
    ClassScoreDistributionState: _class_score_distribution,
    AbsoluteErrorDistributionState: _score_distribution,
    RegressionTermsState: _regression_terms,
}
