"""Versioned, explicit binary codec for states and accumulators (no pickle).

State bytes::

    b"MMS" version:u8 | kind:str16 | layout_json:str32 | n_fields:u16
    | per field: name:str16 dtype:u8 ndim:u8 shape:u64*ndim raw little-endian bytes
    | crc32 of everything before:u32

Accumulator bytes (per-slice tuples of states)::

    b"MMA" version:u8 | n_slices:u32 | per slice: slice_key_json:str32 n_states:u16
    | per state: bytes32 | crc32:u32

``strN`` and ``bytesN`` are a little-endian length of N bits followed by the bytes (UTF-8 for str).
Decoding checks the magic, the version, the checksum, every length, the kind, the dtype and
shape of every field, and raises ``ValueError`` with a clear message on any mismatch.
"""

from __future__ import annotations

import json
import struct
import zlib
from dataclasses import asdict
from typing import Any, Iterable

import numpy as np

#: Version 2: float sums of the states in :attr:`core.states.State.EXACT` carry their exact limbs
#: (``<field>.exp``, ``<field>.limbs``). Version 1 bytes (float sums only) are still read: each
#: float becomes the exact sum it stands for, except for kinds whose fields changed
#: (``CODEC_V1 = False``, e.g. ``regression_moments``), which raise.
VERSION = 2
_READS = (1, 2)
_STATE_MAGIC = b"MMS"
_ACC_MAGIC = b"MMA"
_DTYPES = {1: np.dtype("<f8"), 2: np.dtype("<i8")}
_DTYPE_CODES = {np.dtype("float64"): 1, np.dtype("int64"): 2}


class _Reader:
    def __init__(self, data: bytes, what: str):
        self.data = memoryview(data)
        self.pos = 0
        self.what = what

    def take(self, n: int) -> memoryview:
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError(f"corrupted {self.what}: truncated at byte {self.pos}")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt: str) -> tuple:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))

    def str16(self) -> str:
        (n,) = self.unpack("<H")
        return bytes(self.take(n)).decode("utf-8")

    def str32(self) -> str:
        (n,) = self.unpack("<I")
        return bytes(self.take(n)).decode("utf-8")


def _check_frame(data: bytes, magic: bytes, what: str) -> bytes:
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"{what}: expected bytes, got {type(data).__name__}")
    data = bytes(data)
    if len(data) < len(magic) + 5 or data[: len(magic)] != magic:
        raise ValueError(f"not a mergeable-metrics {what} (bad magic bytes)")
    version = data[len(magic)]
    if version not in _READS:
        raise ValueError(f"{what} codec version {version} is not supported (this library reads {list(_READS)})")
    body, (crc,) = data[:-4], struct.unpack("<I", data[-4:])
    if zlib.crc32(body) != crc:
        raise ValueError(f"corrupted {what}: checksum mismatch")
    return body


def _str16(s: str) -> bytes:
    b = s.encode("utf-8")
    return struct.pack("<H", len(b)) + b


def _str32(s: str) -> bytes:
    b = s.encode("utf-8")
    return struct.pack("<I", len(b)) + b


def layout_to_json(layout: Any) -> str:
    """Canonical JSON of a layout dataclass (tuples become lists, keys sorted)."""
    return json.dumps(asdict(layout), sort_keys=True, separators=(",", ":"))


def layout_from_json(layout_cls: type, text: str) -> Any:
    raw = json.loads(text)
    if not isinstance(raw, dict):
        raise ValueError(f"corrupted state: layout {text!r} is not an object")
    kw = {k: tuple(v) if isinstance(v, list) else v for k, v in raw.items()}
    try:
        return layout_cls(**kw)
    except TypeError as e:
        raise ValueError(f"corrupted state: bad layout {text!r}: {e}") from None


def encode_state(state: Any) -> bytes:
    """Encode one state to versioned bytes (see module docstring)."""
    parts = [_STATE_MAGIC, bytes([VERSION]), _str16(state.kind), _str32(layout_to_json(state.layout))]
    parts.append(struct.pack("<H", len(state.STORED_FIELDS)))
    for name, dtype in state.STORED_FIELDS:
        a = np.asarray(state.arrays[name], dtype=np.dtype(dtype).newbyteorder("<"), order="C")
        parts += [_str16(name), struct.pack("<BB", _DTYPE_CODES[np.dtype(dtype)], a.ndim)]
        parts.append(struct.pack(f"<{a.ndim}Q", *a.shape))
        parts.append(a.tobytes())
    body = b"".join(parts)
    return body + struct.pack("<I", zlib.crc32(body))


def _read_state(r: _Reader, version: int = VERSION) -> Any:
    from core.states import STATE_KINDS

    kind = r.str16()
    cls = STATE_KINDS.get(kind)
    if cls is None:
        raise ValueError(f"unknown state kind {kind!r} (known: {sorted(STATE_KINDS)})")
    if version == 1 and not cls.CODEC_V1:
        raise ValueError(f"state {kind} bytes of codec version 1 cannot be read: its fields changed in version 2 (re-run the fold)")
    layout = layout_from_json(cls.Layout, r.str32())
    (nf,) = r.unpack("<H")
    want = dict(cls.FIELDS if version == 1 else cls.STORED_FIELDS)
    if nf != len(want):
        raise ValueError(f"corrupted state {kind}: {nf} fields, expected {len(want)}")
    arrays = {}
    for _ in range(nf):
        name = r.str16()
        code, ndim = r.unpack("<BB")
        if name in arrays:
            raise ValueError(f"corrupted state {kind}: field {name!r} appears twice")
        if name not in want or _DTYPES.get(code) != np.dtype(want[name]).newbyteorder("<"):
            raise ValueError(f"corrupted state {kind}: unexpected field {name!r} or dtype code {code}")
        shape = r.unpack(f"<{ndim}Q")
        count = int(np.prod(shape)) if shape else 1
        raw = r.take(count * 8)
        arrays[name] = np.frombuffer(raw, dtype=_DTYPES[code]).reshape(shape).astype(want[name])
    return cls(layout, arrays)


def decode_state(data: bytes) -> Any:
    """Decode bytes from :func:`encode_state`.

    Raises:
        ValueError: wrong magic, unsupported version, checksum mismatch, truncation, unknown kind,
            or fields whose dtype/shape do not match the layout.
    """
    body = _check_frame(data, _STATE_MAGIC, "state")
    r = _Reader(body, "state")
    r.take(len(_STATE_MAGIC) + 1)
    state = _read_state(r, body[len(_STATE_MAGIC)])
    if r.pos != len(body):
        raise ValueError("corrupted state: trailing bytes")
    return state


def slice_key_to_json(key: tuple) -> str:
    """JSON list of ``[column, value]`` pairs; the overall slice ``()`` is ``[]``."""
    return json.dumps([[c, v] for c, v in key], separators=(",", ":"), allow_nan=False)


def slice_key_from_json(text: str) -> tuple:
    pairs = json.loads(text)
    if not isinstance(pairs, list) or any(not isinstance(p, list) or len(p) != 2 for p in pairs):
        raise ValueError(f"corrupted slice key {text!r}")
    return tuple((str(c), v) for c, v in pairs)


def encode_accumulator(acc: dict) -> bytes:
    """Encode ``{slice_key: tuple_of_states}`` (slices in sorted JSON order, so equal
    accumulators give equal bytes)."""
    items = sorted((slice_key_to_json(k), v) for k, v in acc.items())
    parts = [_ACC_MAGIC, bytes([VERSION]), struct.pack("<I", len(items))]
    for key_json, states in items:
        parts += [_str32(key_json), struct.pack("<H", len(states))]
        for s in states:
            b = encode_state(s)
            parts += [struct.pack("<I", len(b)), b]
    body = b"".join(parts)
    return body + struct.pack("<I", zlib.crc32(body))


def decode_accumulator(data: bytes) -> dict:
    """Inverse of :func:`encode_accumulator`. Raises ``ValueError`` on corrupted bytes."""
    body = _check_frame(data, _ACC_MAGIC, "accumulator")
    r = _Reader(body, "accumulator")
    r.take(len(_ACC_MAGIC) + 1)
    (n,) = r.unpack("<I")
    out = {}
    for _ in range(n):
        key = slice_key_from_json(r.str32())
        (ns,) = r.unpack("<H")
        states = []
        for _ in range(ns):
            (ln,) = r.unpack("<I")
            states.append(decode_state(bytes(r.take(ln))))
        out[key] = tuple(states)
    if r.pos != len(body):
        raise ValueError("corrupted accumulator: trailing bytes")
    return out


def encode_states(states: Iterable[Any]) -> bytes:
    """Encode one slice's tuple of states (an accumulator with the single key ``()``)."""
    return encode_accumulator({(): tuple(states)})


def decode_states(data: bytes) -> tuple:
    acc = decode_accumulator(data)
    if list(acc) != [()]:
        raise ValueError("corrupted state tuple: expected a single slice")
    return acc[()]
