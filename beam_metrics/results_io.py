"""Per-slice results as JSON lines, and a Beam coder for :class:`mergeable_metrics.SliceResult`.

``slice_result_to_json`` / ``slice_result_from_json`` let a pipeline ``WriteToText`` its results
and read them back. The format is core's :meth:`mergeable_metrics.SliceResult.to_dict` (NaN -> ``null``).
:class:`SliceResultCoder` is registered for ``SliceResult`` so a PCollection of results is encoded
without pickle; it keeps NaN and infinities exactly.
"""

from __future__ import annotations

import json
from typing import Any

import apache_beam as beam
import numpy as np

from mergeable_metrics.engine import Comparison, Results, SliceResult, window_bound

__all__ = ["SliceResultCoder", "slice_result_from_json", "slice_result_to_json"]


def slice_result_to_json(sr: SliceResult) -> str:
    """One line of JSON for one slice's results.

    Args:
        sr: a :class:`mergeable_metrics.SliceResult`.

    Returns:
        str: ``{"slice": {col: value, ...}, "n": int, "weight": float, "skipped": int,
        "metrics": {key: number | [..] | null}}`` on one line, from ``sr.to_dict()``; NaN and
        infinities become ``null``; array metrics become (nested) lists. The overall slice has
        ``"slice": {}``.

    Raises:
        TypeError: ``sr`` is not a SliceResult, or a slice value is not JSON-serialisable.
    """
    if not isinstance(sr, SliceResult):
        raise TypeError(f"expected a mergeable_metrics.SliceResult, got {type(sr).__name__}")
    return json.dumps(sr.to_dict(), separators=(",", ":"), allow_nan=False)


def slice_result_from_json(text: str | bytes) -> SliceResult:
    """Inverse of :func:`slice_result_to_json`.

    The slice key is rebuilt from the ``"slice"`` object's item order; ``null`` metric values
    become NaN; lists become float64 numpy arrays (``null`` cells NaN), scalars stay numbers.
    (Infinities, written as ``null``, come back as NaN.)

    Args:
        text: one JSON line (str or UTF-8 bytes).

    Raises:
        ValueError: the text is not JSON or lacks the ``slice`` / ``n`` / ``metrics`` fields.
    """
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"not a slice result JSON line: {e}: {text[:200]!r}") from None
    if not isinstance(data, dict) or not isinstance(data.get("slice"), dict) or "n" not in data or not isinstance(data.get("metrics"), dict):
        raise ValueError(f"a slice result needs 'slice' (object), 'n' and 'metrics' (object); got {text[:200]!r}")
    return Results.from_dict({"slices": [data]}).slices[0]


# ---------------------------------------------------------------------------------------------
_MAGIC = b"MMR\x01"  # mergeable-metrics result, version 1


def _exact(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return {"a": np.asarray(value, dtype=np.float64).tolist(), "shape": list(value.shape)}
    if isinstance(value, np.generic):
        return value.item()
    return value


def _inexact(value: Any) -> Any:
    """Inverse of :func:`_exact`."""
    if isinstance(value, dict):
        return np.array(value["a"], dtype=np.float64).reshape(value["shape"])
    return float("nan") if value is None else value


class SliceResultCoder(beam.coders.Coder):
    """Encodes a :class:`mergeable_metrics.SliceResult` as versioned UTF-8 JSON (no pickle), exactly.

    Unlike :func:`slice_result_to_json` it keeps NaN and +-inf (as JSON ``NaN`` / ``Infinity``
    tokens) and array shapes, so ``decode(encode(sr))`` has the same values. Registered for
    ``SliceResult`` in Beam's coder registry when :mod:`mergeable_metrics.beam` is imported.

    Raises:
        ValueError: ``decode`` of bytes that are not an encoded SliceResult.
        TypeError: ``encode`` of a slice value that is not JSON-serialisable.
    """

    def encode(self, value: SliceResult) -> bytes:
        body = {
            "slice": [[c, v] for c, v in value.slice],
            "n": None if value.suppressed else int(value.n),
            "weight": None if value.suppressed else float(value.weight),
            "skipped": None if value.suppressed else int(value.skipped),
            "metrics": [[k, _exact(v)] for k, v in value.metrics.items()],
        }
        if value.suppressed:
            body.update(n=None, weight=None, skipped=None, suppressed=True)
        if value.suppressed_slices is not None:
            body["suppressed_slices"] = int(value.suppressed_slices)
        if value.folded_values is not None:
            body["folded_values"] = int(value.folded_values)
        if value.bounds:
            body["bounds"] = [[k, [float(lo), float(hi)]] for k, (lo, hi) in value.bounds.items()]
        if value.ci:
            body["ci"] = [[k, [_exact(lo), _exact(hi)]] for k, (lo, hi) in value.ci.items()]
        if value.baseline_metrics:
            body["baseline_metrics"] = [[k, _exact(v)] for k, v in value.baseline_metrics.items()]
        if value.comparison:
            body["comparison"] = [
                [k, {"delta": _exact(c.delta), "ci": None if c.ci is None else [_exact(c.ci[0]), _exact(c.ci[1])], "verdict": c.verdict, "reason": c.reason}]
                for k, c in value.comparison.items()
            ]
        if value.window_start is not None:
            body["window"] = [value.window_start.isoformat(), None if value.window_end is None else value.window_end.isoformat()]
        return _MAGIC + json.dumps(body, separators=(",", ":"), allow_nan=True).encode("utf-8")

    def decode(self, encoded: bytes) -> SliceResult:
        encoded = bytes(encoded)
        if not encoded.startswith(_MAGIC):
            raise ValueError("not an encoded SliceResult (bad magic bytes or version)")
        try:
            d = json.loads(encoded[len(_MAGIC) :].decode("utf-8"))
            metrics = {k: _inexact(v) for k, v in d["metrics"]}
            start, end = d.get("window", (None, None))
            win = {"window_start": window_bound(start), "window_end": window_bound(end)}
            if d.get("suppressed"):
                return SliceResult(
                    tuple((c, v) for c, v in d["slice"]), None, None, None, {}, suppressed=True, suppressed_slices=d.get("suppressed_slices"), **win
                )
            return SliceResult(
                **win,
                slice=tuple((c, v) for c, v in d["slice"]),
                n=int(d["n"]),
                weight=float(d["weight"]),
                skipped=int(d["skipped"]),
                metrics=metrics,
                bounds={k: (float(lo), float(hi)) for k, (lo, hi) in d.get("bounds", [])},
                ci={k: (_inexact(lo), _inexact(hi)) for k, (lo, hi) in d.get("ci", [])},
                folded_values=d.get("folded_values"),
                baseline_metrics={k: _inexact(v) for k, v in d.get("baseline_metrics", [])},
                comparison={
                    k: Comparison(_inexact(c["delta"]), None if c["ci"] is None else (_inexact(c["ci"][0]), _inexact(c["ci"][1])), c["verdict"], c["reason"])
                    for k, c in d.get("comparison", [])
                },
            )
        except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError, ValueError) as e:
            raise ValueError(f"corrupted SliceResult bytes: {e}") from None

    def is_deterministic(self) -> bool:
        return False  # metric dict order is part of the bytes

    def to_type_hint(self) -> type:
        return SliceResult

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self))


beam.coders.registry.register_coder(SliceResult, SliceResultCoder)
