"""Stable 64-bit hashes of id values, the same on every engine and process (no Python ``hash()``).

Integers (and whole floats) hash by splitmix64 of their int64 value, strings by BLAKE2b of their
UTF-8 bytes. The bootstrap's row buckets (:mod:`mergeable_metrics.uncertainty.bootstrap`) and the query keys of the
retrieval metrics (:mod:`mergeable_metrics.metrics.retrieval`) read them.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

import numpy as np

from mergeable_metrics._util.nulls import is_null

__all__ = ["hash_column", "integer_ids", "mix64"]

_U = np.uint64
_M1, _M2, _GOLD = _U(0xBF58476D1CE4E5B9), _U(0x94D049BB133111EB), _U(0x9E3779B97F4A7C15)


def mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64 of each entry of a uint64 array (wrapping arithmetic): a stable 64-bit mix."""
    x = np.asarray(x, dtype=np.uint64)
    with np.errstate(over="ignore"):
        x = x + _GOLD
        x = (x ^ (x >> _U(30))) * _M1
        x = (x ^ (x >> _U(27))) * _M2
    return x ^ (x >> _U(31))


def _combine(h: np.ndarray, x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return mix64(h * _U(31) ^ x)


def _digest(b: bytes) -> int:
    return int.from_bytes(hashlib.blake2b(b, digest_size=8).digest(), "little")


def _hash_scalar(v: Any) -> int | None:
    """The 64-bit hash of one id value (ints and whole floats alike); None for a missing value."""
    if is_null(v) or isinstance(v, bool):
        return None if is_null(v) else int(mix64(np.array([int(v)], dtype=np.int64).view(np.uint64))[0])
    if isinstance(v, (int, np.integer)):
        return int(mix64(np.array([int(v)], dtype=np.int64).view(np.uint64))[0])
    if isinstance(v, (float, np.floating)):
        return None if math.isnan(v) else int(_hash_numeric(np.array([v], dtype=np.float64))[0])
    if isinstance(v, str):
        return _digest(b"s" + v.encode("utf-8"))
    if isinstance(v, (bytes, bytearray)):
        return _digest(b"b" + bytes(v))
    return _digest(b"r" + repr(v).encode("utf-8"))


def _hash_numeric(a: np.ndarray) -> np.ndarray:
    """(n,) uint64 hashes of numbers: whole numbers hash as their int64 value, other floats by
    their float64 bits (``-0.0`` as ``0.0``)."""
    if a.dtype.kind in "biu":
        return mix64(a.astype(np.int64).view(np.uint64))
    f = a.astype(np.float64) + 0.0
    whole = np.isfinite(f) & (f == np.floor(f)) & (np.abs(f) < 2.0**63)
    out = mix64(np.ascontiguousarray(f).view(np.uint64))
    if whole.any():
        out[whole] = mix64(f[whole].astype(np.int64).view(np.uint64))
    return out


def hash_column(values: Any, column: str, rows: np.ndarray | None = None) -> np.ndarray:
    """(n,) uint64 stable hashes of an id column (ints, whole floats, strings or bytes).

    The same value hashes the same on every engine and process (no Python ``hash()``): integers
    by splitmix64 of their int64 value, strings by BLAKE2b of their UTF-8 bytes.

    Args:
        values: (n,) ids.
        column: the column's name (messages).
        rows: (n,) input row position of each value (messages; default ``0 .. n-1``).

    Raises:
        ValueError: a missing (None / NaN) id, naming the column, the value and the row.
    """
    a = np.asarray(values)
    if a.ndim != 1:
        raise ValueError(f"column {column!r}: ids must be one value per row, got shape {a.shape}")
    if a.dtype.kind in "biuf":
        if a.dtype.kind == "f" and np.isnan(a).any():
            i = int(np.flatnonzero(np.isnan(a))[0])
            raise ValueError(f"column {column!r}: invalid value nan at row {i if rows is None else int(rows[i])}: ids must not be missing")
        return _hash_numeric(a)
    if a.dtype.kind in "US":
        uniq, inv = np.unique(a, return_inverse=True)
        h = np.array([_hash_scalar(v.item() if hasattr(v, "item") else v) for v in uniq], dtype=np.uint64)
        return h[inv.reshape(-1)]
    seen: dict[Any, int] = {}
    out = np.empty(a.shape[0], dtype=np.uint64)
    for i, v in enumerate(a.tolist()):
        h = seen.get(v) if isinstance(v, (str, int)) and not isinstance(v, bool) else None
        if h is None:
            h = _hash_scalar(v)
            if h is None:
                raise ValueError(f"column {column!r}: invalid value {v!r} at row {i if rows is None else int(rows[i])}: ids must not be missing")
            if isinstance(v, (str, int)):
                seen[v] = h
        out[i] = h
    return out


def integer_ids(values: Any, column: str, rows: np.ndarray, skip: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
    """(n,) int64 example ids of an id column holding integers (or whole floats), for states keyed
    by example and ordered by id (e.g. ``multilabel_confusion_matrix@samplewise=true``).

    Args:
        values: (n,) ids.
        column: the column's name (messages).
        rows: (n,) input row position of each value (messages).
        skip: drop missing ids (None, NaN) instead of raising.

    Returns:
        ``(ids, missing)``: the int64 ids of the values kept, and the (n,) mask of the missing
        ones dropped (``skip``), or None.

    Raises:
        ValueError: a missing id (unless ``skip``) or a value that is not an integer in the int64
            range (text, a fraction, a bool), naming the column, the value and the row.
    """
    a = np.asarray(values)
    n = a.shape[0] if a.ndim else 0

    def fail(i: int, what: str) -> ValueError:
        v = a[i].item() if hasattr(a[i], "item") else a[i]
        return ValueError(f"column {column!r}: invalid value {v!r} at row {int(rows[i])}: {what}")

    if a.ndim != 1:
        raise ValueError(f"column {column!r}: ids must be one value per row, got shape {a.shape}")
    if a.dtype.kind in "iu":
        if a.dtype.kind == "u" and n and int(a.max()) >= 1 << 63:
            raise fail(int(np.argmax(a)), "ids must be integers in the int64 range")
        return a.astype(np.int64), None
    if a.dtype.kind == "f" or a.dtype.kind == "O":
        f = np.empty(n, dtype=np.float64)
        exact = np.zeros(n, dtype=np.int64)
        missing = np.zeros(n, dtype=bool)
        is_int = np.zeros(n, dtype=bool)
        if a.dtype.kind == "f":
            f[:] = a
            missing = np.isnan(f)
        else:
            for i, v in enumerate(a.tolist()):
                if is_null(v) or (isinstance(v, float) and v != v):
                    missing[i], f[i] = True, 0.0
                elif isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
                    raise fail(i, "ids must be integers")
                elif isinstance(v, (int, np.integer)):
                    if not -(1 << 63) <= int(v) < 1 << 63:
                        raise fail(i, "ids must be integers in the int64 range")
                    exact[i], is_int[i], f[i] = int(v), True, 0.0
                else:
                    f[i] = float(v)
        with np.errstate(invalid="ignore"):
            bad = ~missing & ~is_int & ~(np.isfinite(f) & (f == np.floor(f)) & (np.abs(f) < 2.0**63))
        if bad.any():
            raise fail(int(np.flatnonzero(bad)[0]), "ids must be integers")
        fl = ~missing & ~is_int
        exact[fl] = f[fl].astype(np.int64)
        if missing.any():
            if not skip:
                raise fail(int(np.flatnonzero(missing)[0]), "ids must not be missing")
            return exact[~missing], missing
        return exact, None
    if n:
        raise fail(0, "ids must be integers")
    return np.zeros(0, dtype=np.int64), None
