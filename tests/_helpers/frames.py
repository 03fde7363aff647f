"""Hand-built codec frames with a valid checksum (see :mod:`mergeable_metrics.states.codec` for the layout), for tests
that must reach the decoder's value checks past the CRC: crafted kinds, layouts, fields, values,
fingerprints and slice keys. State frames are built in codec version 1 (the fields of
``FIELDS``, no exact-sum limbs), which the decoder still reads and upgrades.

Example:
    >>> from mergeable_metrics.states import ExampleCountLayout, ExampleCountState, State
    >>> s = ExampleCountState.zero(ExampleCountLayout())
    >>> State.decode(state_frame(s.kind, "{}", fields_of(s))) == s
    True
"""

from __future__ import annotations

import json
import struct
import zlib
from typing import Any, Iterable

import numpy as np

_CODES = {"float64": 1, "int64": 2}


def _s16(s: str | bytes) -> bytes:
    b = s.encode("utf-8") if isinstance(s, str) else s
    return struct.pack("<H", len(b)) + b


def _s32(s: str | bytes) -> bytes:
    b = s.encode("utf-8") if isinstance(s, str) else s
    return struct.pack("<I", len(b)) + b


def with_crc(body: bytes) -> bytes:
    """``body`` followed by its valid crc32."""
    return body + struct.pack("<I", zlib.crc32(body))


def field(name: str, values: Any, dtype: str = "float64", shape: tuple | None = None, code: int | None = None) -> bytes:
    """One field record: name, dtype code, ndim, shape, raw little-endian values."""
    a = np.asarray(values, dtype=dtype)
    shape = a.shape if shape is None else tuple(shape)
    c = _CODES[dtype] if code is None else code
    return _s16(name) + struct.pack("<BB", c, len(shape)) + struct.pack(f"<{len(shape)}Q", *shape) + a.astype(np.dtype(dtype).newbyteorder("<")).tobytes()


def fields_of(state: Any, **replace: Any) -> list[bytes]:
    """The field records of a real state, with some fields' values replaced (same dtype)."""
    out = []
    for name, dtype in state.FIELDS:
        values = replace.get(name, state.arrays[name])
        out.append(field(name, values, dtype, None if name not in replace else np.shape(values)))
    return out


def state_frame(kind: str, layout_json: str, fields: list[bytes], version: int = 1, n_fields: int | None = None) -> bytes:
    """A state frame with a valid checksum."""
    body = b"MMS" + bytes([version]) + _s16(kind) + _s32(layout_json) + struct.pack("<H", len(fields) if n_fields is None else n_fields)
    return with_crc(body + b"".join(fields))


def state_with(state: Any, **replace: Any) -> bytes:
    """The frame of ``state`` with some fields' values replaced (valid checksum)."""
    from mergeable_metrics.states.codec import layout_to_json

    return state_frame(state.kind, layout_to_json(state.layout), fields_of(state, **replace))


def accumulator_frame(slices: Iterable[tuple[str, list[bytes]]], fingerprint: Any = None, version: int = 2, fingerprint_json: str | None = None) -> bytes:
    """An accumulator frame with a valid checksum: ``slices`` are ``(slice key JSON, [state
    frames])``; version 1 frames have no fingerprint."""
    slices = list(slices)
    body = b"MMA" + bytes([version])
    if version >= 2:
        fp = json.dumps(fingerprint, sort_keys=True, separators=(",", ":")) if fingerprint_json is None else fingerprint_json
        body += _s32(fp)
    body += struct.pack("<I", len(slices))
    for key_json, states in slices:
        body += _s32(key_json) + struct.pack("<H", len(states))
        for b in states:
            body += struct.pack("<I", len(b)) + b
    return with_crc(body)
