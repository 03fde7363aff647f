"""Versioned, explicit binary codec for states and accumulators (no pickle).

State bytes (version 3; versions 1 and 2 are still read)::

    b"MMS" version:u8 | kind:str16 | kind_version:u8 | layout_json:str32 | n_fields:u16
    | per field: name:str16 dtype:u8 ndim:u8 shape:u64*ndim raw little-endian bytes
    | crc32 of everything before:u32

Accumulator bytes (per-slice tuples of states), version 2::

    b"MMA" version:u8 | fingerprint_json:str32 | n_slices:u32
    | per slice: slice_key_json:str32 n_states:u16 | per state: bytes32 | crc32:u32

``kind_version`` is the state kind's own version (:attr:`mergeable_metrics.states.base.State.VERSION`; frames of
versions 1 and 2 carry none: they are kind version 1). Bytes of an older kind version are read
through the kind's :meth:`~mergeable_metrics.states.base.State.upgrade`; bytes of a newer one raise ``ValueError``
(written by a newer release). A kind's fields can so change without changing every frame.

Version 1 accumulators (the releases before fingerprints) lack ``fingerprint_json``; they are
still read (see :meth:`mergeable_metrics.Evaluation.decode`). The fingerprint is the JSON object of every setting of
the writer that changes what its states hold (e.g. the weight column, ``ignore_index``, the slice
specs and their counting-pass profile; see :meth:`mergeable_metrics.Evaluation.fingerprint`): a reader whose
own fingerprint differs raises ``ValueError`` naming the settings.

``strN`` and ``bytesN`` are a little-endian length of N bits followed by the bytes (UTF-8 for str).
Decoding checks the magic, the version, the checksum, every length, the kind, the dtype and
shape of every field, the layout (it must be the one the bytes' own JSON describes), every value
(:meth:`mergeable_metrics.states.base.State.validate`: finite, non-negative counts, and each kind's own
invariants) and, for accumulators, distinct slice keys. Anything else raises ``ValueError``
(``TypeError`` for input that is not bytes, or a state of another kind than asked) with a clear
message: crafted bytes with a valid checksum never decode to a state no data could produce.

The library speaks one pair for bytes, ``encode`` / ``decode``, on the object that owns them:
a state (``state.encode()`` / ``State.decode(data)``), a :class:`~mergeable_metrics.collection.plan.Plan`
over one tuple of states (``plan.encode(states)`` / ``plan.decode(data)``), an evaluation over its
accumulator (``evaluation.encode(acc)`` / ``evaluation.decode(data)``) and over one slice's states
(``evaluation.slice_codec.encode(states)`` / ``.decode(data)``), and a metric collection. The
frame functions here are private to the library (not part of :mod:`mergeable_metrics.engine`).
"""

from __future__ import annotations

import json
import math
import struct
import zlib
from dataclasses import asdict
from typing import Any, Iterable, Mapping

import numpy as np

#: version of state frames written. Version 2: float sums of the states in
#: :attr:`mergeable_metrics.states.base.State.EXACT` carry their exact limbs (``<field>.exp``, ``<field>.limbs``).
#: Version 1 bytes (float sums only) are still read: each float becomes the exact sum it stands
#: for, except for kinds whose fields changed (``CODEC_V1 = False``, e.g. ``regression_moments``),
#: which raise.
#: Version 3: each state's kind version follows its kind.
VERSION = 3
STATE_VERSIONS = (1, 2, 3)
#: version of accumulator frames written; :data:`ACC_VERSIONS` are read
ACC_VERSION = 2
ACC_VERSIONS = (1, 2)
_STATE_MAGIC = b"MMS"
_ACC_MAGIC = b"MMA"
_DTYPES = {1: np.dtype("<f8"), 2: np.dtype("<i8")}
_DTYPE_CODES = {np.dtype("float64"): 1, np.dtype("int64"): 2}

#: every state kind the codec can read, ``{kind: class}``: filled by :class:`mergeable_metrics.states.base.State`
#: as each kind is defined (the codec sits below the states and never imports them)
STATE_KINDS: dict[str, type] = {}


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

    def _text(self, n: int) -> str:
        at = self.pos
        try:
            return bytes(self.take(n)).decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError(f"corrupted {self.what}: invalid UTF-8 text at byte {at}") from None

    def str16(self) -> str:
        (n,) = self.unpack("<H")
        return self._text(n)

    def str32(self) -> str:
        (n,) = self.unpack("<I")
        return self._text(n)


def _json(text: str, what: str) -> Any:
    """``json.loads`` whose every failure (bad syntax, nesting too deep) is a ``ValueError``."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        raise ValueError(f"corrupted {what}: not valid JSON: {text[:80]!r}") from None


def _check_frame(data: bytes, magic: bytes, what: str, versions: tuple[int, ...] = STATE_VERSIONS) -> bytes:
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"{what}: expected bytes, got {type(data).__name__}")
    data = bytes(data)
    if len(data) < len(magic) + 5 or data[: len(magic)] != magic:
        raise ValueError(f"not a mergeable-metrics {what} (bad magic bytes)")
    version = data[len(magic)]
    if version not in versions:
        raise ValueError(f"{what} codec version {version} is not supported (this library reads {', '.join(map(str, versions))})")
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
    """The layout a JSON text describes. Keys it lacks take their defaults (layouts of older
    releases); every value given must survive unchanged (no silent ``int(1.5)``).

    Raises:
        ValueError: not a JSON object, unknown or bad settings, or values the layout would change.
    """
    raw = _json(text, "state layout")
    if not isinstance(raw, dict):
        raise ValueError(f"corrupted state: layout {text!r} is not an object")
    kw = {k: tuple(v) if isinstance(v, list) else v for k, v in raw.items()}
    try:
        layout = layout_cls(**kw)
        again = json.loads(layout_to_json(layout))
        hash(layout)
    except (TypeError, ValueError, OverflowError, RecursionError) as e:
        raise ValueError(f"corrupted state: bad layout {text[:200]!r}: {e}") from None
    for k, v in raw.items():
        if not _same_json(again[k], v):
            raise ValueError(f"corrupted state: layout setting {k!r} = {v!r} is not canonical (it reads as {again[k]!r})")
    return layout


def _same_json(a: Any, b: Any) -> bool:
    """Equal JSON values of equal types (``1 != 1.5``, ``True != 1``; an int may stand for the
    same float)."""
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same_json(x, y) for x, y in zip(a, b))
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b and not (isinstance(a, int) and isinstance(b, float) and not b.is_integer())
    return type(a) is type(b) and a == b


def _encode_state(state: Any) -> bytes:
    """Encode one state to versioned bytes (see module docstring)."""
    parts = [_STATE_MAGIC, bytes([VERSION]), _str16(state.kind), bytes([state.VERSION]), _str32(layout_to_json(state.layout))]
    parts.append(struct.pack("<H", len(state.STORED_FIELDS)))
    for name, dtype in state.STORED_FIELDS:
        a = np.asarray(state.arrays[name], dtype=np.dtype(dtype).newbyteorder("<"), order="C")
        parts += [_str16(name), struct.pack("<BB", _DTYPE_CODES[np.dtype(dtype)], a.ndim)]
        parts.append(struct.pack(f"<{a.ndim}Q", *a.shape))
        parts.append(a.tobytes())
    body = b"".join(parts)
    return body + struct.pack("<I", zlib.crc32(body))


def _read_state(r: _Reader, version: int = VERSION, expect: type | None = None) -> Any:
    kind = r.str16()
    cls = STATE_KINDS.get(kind)
    if cls is None:
        raise ValueError(f"unknown state kind {kind!r} (known: {sorted(STATE_KINDS)})")
    if expect is not None and cls is not expect:
        raise TypeError(f"the bytes hold a {kind!r} state, not {expect.kind!r} ({expect.__name__}.decode)")
    if version == 1 and not cls.CODEC_V1:
        raise ValueError(f"state {kind} bytes of codec version 1 cannot be read: its fields changed in version 2 (re-run the fold)")
    (kind_version,) = r.unpack("<B") if version >= 3 else (1,)
    if kind_version == 0 or kind_version > cls.VERSION:
        raise ValueError(
            f"state {kind} bytes of kind version {kind_version} cannot be read: this library writes and reads version "
            f"{cls.VERSION} and older (bytes of a newer release: upgrade mergeable-metrics)"
        )
    layout = layout_from_json(cls.Layout, r.str32())
    (nf,) = r.unpack("<H")
    want = dict(cls.fields_of_version(kind_version, stored=version != 1))
    if nf != len(want):
        raise ValueError(f"corrupted state {kind}: {nf} fields, expected {len(want)}")
    arrays = {}
    for _ in range(nf):
        name = r.str16()
        code, ndim = r.unpack("<BB")
        if name in arrays:
            raise ValueError(f"corrupted state {kind}: field {name!r} appears twice")
        if name not in want or code not in _DTYPES or _DTYPES[code] != np.dtype(want[name]).newbyteorder("<"):
            raise ValueError(f"corrupted state {kind}: unexpected field {name!r} or dtype code {code}")
        shape = r.unpack(f"<{ndim}Q")
        count = math.prod(shape)
        raw = r.take(count * 8)
        arrays[name] = np.frombuffer(raw, dtype=_DTYPES[code]).reshape(shape).astype(want[name])
    try:
        if kind_version < cls.VERSION:
            arrays = cls.upgrade(kind_version, layout, arrays)
        state = cls(layout, arrays)
    except (TypeError, KeyError, IndexError, OverflowError) as e:  # arrays no layout check caught
        raise ValueError(f"corrupted state {kind}: {type(e).__name__}: {e}") from None
    return state.validate()


def _decode_state(data: bytes, expect: type | None = None) -> Any:
    """Decode bytes from :func:`_encode_state` into a validated state.

    Args:
        data: the bytes.
        expect: the state class asked for (None: any kind).

    Raises:
        ValueError: wrong magic, unsupported version, checksum mismatch, truncation, unknown kind,
            fields whose dtype/shape do not match the layout, or values no state can hold
            (see :meth:`mergeable_metrics.states.base.State.validate`).
        TypeError: ``data`` is not bytes, or the bytes hold another kind than ``expect``.
    """
    body = _check_frame(data, _STATE_MAGIC, "state")
    r = _Reader(body, "state")
    r.take(len(_STATE_MAGIC) + 1)
    state = _read_state(r, body[len(_STATE_MAGIC)], expect)
    if r.pos != len(body):
        raise ValueError("corrupted state: trailing bytes")
    return state


def slice_key_to_json(key: tuple) -> str:
    """JSON list of ``[column, value]`` pairs; the overall slice ``()`` is ``[]``."""
    return json.dumps([[c, v] for c, v in key], separators=(",", ":"), allow_nan=False)


def slice_key_from_json(text: str) -> tuple:
    """Inverse of :func:`slice_key_to_json`.

    Raises:
        ValueError: not a JSON list of ``[column name, scalar value]`` pairs.
    """
    pairs = _json(text, "slice key")
    if not isinstance(pairs, list) or any(not isinstance(p, list) or len(p) != 2 or not isinstance(p[0], str) or isinstance(p[1], (list, dict)) for p in pairs):
        raise ValueError(f"corrupted slice key {text[:200]!r}")
    return tuple((c, v) for c, v in pairs)


def fingerprint_to_json(fingerprint: Mapping[str, Any] | None) -> str:
    """Canonical JSON of a fingerprint (``null`` for none)."""
    return json.dumps(None if fingerprint is None else dict(fingerprint), sort_keys=True, separators=(",", ":"), allow_nan=False)


def fingerprint_diff(ours: Mapping[str, Any], theirs: Mapping[str, Any]) -> str:
    """``"weight_col None (here) != 'w'; ..."``: the settings two fingerprints disagree on."""
    keys = sorted(set(ours) | set(theirs))
    return "; ".join(f"{k} {ours.get(k)!r} (here) != {theirs.get(k)!r}" for k in keys if ours.get(k) != theirs.get(k))


def check_fingerprint(ours: Mapping[str, Any] | None, theirs: Mapping[str, Any] | None, what: str) -> None:
    """Raise ``ValueError`` naming the settings when both fingerprints are known and differ."""
    if ours is None or theirs is None or ours is theirs or dict(ours) == dict(theirs):
        return
    raise ValueError(f"{what} belong to a different configuration: {fingerprint_diff(ours, theirs)}")


def _encode_accumulator(acc: dict, fingerprint: Mapping[str, Any] | None = None) -> bytes:
    """Encode ``{slice_key: tuple_of_states}`` (slices in sorted JSON order, so equal
    accumulators give equal bytes) with the writer's ``fingerprint`` (JSON-ready settings)."""
    items = sorted((slice_key_to_json(k), v) for k, v in acc.items())
    parts = [_ACC_MAGIC, bytes([ACC_VERSION]), _str32(fingerprint_to_json(fingerprint)), struct.pack("<I", len(items))]
    for key_json, states in items:
        parts += [_str32(key_json), struct.pack("<H", len(states))]
        for s in states:
            b = _encode_state(s)
            parts += [struct.pack("<I", len(b)), b]
    body = b"".join(parts)
    return body + struct.pack("<I", zlib.crc32(body))


def _read_accumulator(data: bytes) -> tuple[dict, dict | None, int]:
    """``(accumulator, writer's fingerprint, version)`` of :func:`_encode_accumulator` bytes; the
    fingerprint is None for version 1 bytes (written before fingerprints) or a writer without one.

    Raises:
        ValueError: corrupted bytes (see the module docstring), or a slice key that appears twice.
        TypeError: ``data`` is not bytes.
    """
    body = _check_frame(data, _ACC_MAGIC, "accumulator", ACC_VERSIONS)
    r = _Reader(body, "accumulator")
    r.take(len(_ACC_MAGIC))
    (version,) = r.unpack("<B")
    fingerprint = None
    if version >= 2:
        fingerprint = _json(r.str32(), "accumulator fingerprint")
        if fingerprint is not None and not isinstance(fingerprint, dict):
            raise ValueError("corrupted accumulator: the fingerprint is not a JSON object")
    (n,) = r.unpack("<I")
    out: dict = {}
    for _ in range(n):
        key_json = r.str32()
        key = slice_key_from_json(key_json)
        if key in out:
            raise ValueError(f"corrupted accumulator: slice {key_json[:200]} appears twice")
        (ns,) = r.unpack("<H")
        states = []
        for _ in range(ns):
            (ln,) = r.unpack("<I")
            states.append(_decode_state(bytes(r.take(ln))))
        out[key] = tuple(states)
    if r.pos != len(body):
        raise ValueError("corrupted accumulator: trailing bytes")
    return out, fingerprint, version


def _encode_states(states: Iterable[Any], fingerprint: Mapping[str, Any] | None = None) -> bytes:
    """Encode one slice's tuple of states (an accumulator with the single key ``()``)."""
    return _encode_accumulator({(): tuple(states)}, fingerprint)


def _decode_states(data: bytes, fingerprint: Mapping[str, Any] | None = None) -> tuple:
    """Inverse of :func:`_encode_states` (checks the fingerprint as :func:`check_fingerprint`)."""
    acc, theirs, _ = _read_accumulator(data)
    if list(acc) != [()]:
        raise ValueError("corrupted state tuple: expected a single slice")
    check_fingerprint(fingerprint, theirs, "state bytes")
    return acc[()]
