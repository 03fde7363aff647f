"""Slice values: their one canonical form, the slice columns of a batch, and the keys' bytes.

* :func:`canonical_value`: the form of a slice value every engine gives and JSON writes exactly;
* :func:`read_slice_column`: a batch's slice column as a numpy array, a :class:`ListColumn`
  (list-valued rows) or a :class:`CodedColumn` (dictionary-coded strings);
* :func:`encode_key`: order-preserving, injective bytes of a slice key (the counting pass's
  kept sets, :mod:`mergeable_metrics.evaluation.profile`), with :data:`KEY_ENCODING` and the upgrade of older keys.

:mod:`mergeable_metrics.slicing.assign` assigns rows to slices with these and re-exports every name here.
"""

from __future__ import annotations

import datetime
import decimal
import math
import struct
from collections.abc import Sequence as _AbcSequence
from typing import Any, Sequence

import numpy as np

from mergeable_metrics.inputs.validation import as_array


# --------------------------------------------------------------------------------------------
# reading slice columns
_INT64_RANGE = float(1 << 63)


def _format_datetime64(v: np.datetime64) -> str:
    """ISO 8601 text of a numpy datetime64, as :meth:`datetime.datetime.isoformat` writes it:
    ``2020-01-01T12:30:00``, fractions only when not zero (6 digits, or 9 below a microsecond);
    date units (``D`` and coarser) as ``2020-01-01``."""
    unit = np.datetime_data(v.dtype)[0]
    if unit in ("Y", "M", "W", "D"):
        return str(np.datetime_as_string(v.astype("datetime64[D]"), unit="D"))
    whole = v.astype("datetime64[s]")
    if whole > v:  # astype truncates towards zero before 1970: floor instead
        whole = whole - np.timedelta64(1, "s")
    text = str(np.datetime_as_string(whole, unit="s"))
    ns = int((v - whole).astype("timedelta64[ns]").astype(np.int64))
    if ns == 0:
        return text
    return text + (f".{ns // 1000:06d}" if ns % 1000 == 0 else f".{ns:09d}")


def _format_datetime(v: datetime.datetime) -> str:
    """ISO 8601 text of a datetime (or pandas Timestamp); time-zone-aware values in UTC, without
    the offset (as Arrow and numpy read them)."""
    if v.tzinfo is not None and v.utcoffset() is not None:
        v = v.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return v.isoformat()


def canonical_value(v: Any) -> Any:
    """The one form of a slice value that every engine gives and JSON writes exactly.

    * missing (None, NaN of any float or Decimal type, NaT) -> None;
    * booleans -> bool; integers -> int;
    * floats: ``-0.0`` -> ``0``; whole floats of magnitude below 2**63 -> int (so ``5`` and
      ``5.0``, equal values, are one slice with one JSON text); ``+-inf`` -> the strings
      ``"inf"`` / ``"-inf"`` (JSON has no infinity); other floats unchanged;
    * str unchanged (NUL characters kept); bytes -> their UTF-8 text;
    * ``Decimal`` -> its plain text with its own scale (``Decimal("1.50")`` -> ``"1.50"``, as
      Spark casts decimals to text);
    * timestamps (``datetime``, pandas ``Timestamp``, ``np.datetime64``) -> ISO 8601 text
      ``2020-01-01T12:30:00`` (fractions only when not zero; time-zone-aware values in UTC);
      dates ``2020-01-01``; times ``12:30:00``; durations their ``str``.

    Raises:
        ValueError: bytes that are not UTF-8 text.
        TypeError: a value of another type (lists, dicts, arbitrary objects).
    """
    if v is None:
        return None
    if isinstance(v, np.datetime64):
        return None if np.isnat(v) else _format_datetime64(v)
    if isinstance(v, np.timedelta64):
        return None if np.isnat(v) else str(v)
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, bool):
        return v
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float):
        if v != v:
            return None
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        if v.is_integer() and abs(v) < _INT64_RANGE:
            return int(v)
        return float(v)
    if isinstance(v, str):
        return str(v)
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v).decode("utf-8")  # strict: distinct bytes stay distinct text
    if isinstance(v, decimal.Decimal):
        if v.is_nan():
            return None
        if v.is_infinite():
            return "inf" if v > 0 else "-inf"
        return format(v.copy_abs() if v.is_zero() else v, "f")
    if isinstance(v, datetime.datetime):  # incl. pandas Timestamp (NaT is not a datetime)
        return _format_datetime(v)
    if isinstance(v, (datetime.date, datetime.time)):
        return v.isoformat()
    if isinstance(v, datetime.timedelta):
        return str(v)
    if v.__class__.__name__ in ("NaTType", "NAType"):  # pandas missing values
        return None
    raise TypeError(f"unsupported slice value type {type(v).__name__}")


#: The earlier name of :func:`canonical_value`.
native = canonical_value


class ListColumn:
    """A list-valued slice column of one batch, exploded into (row, value) pairs.

    Attributes:
        rows: (m,) int64 row of each pair, ascending.
        values: (m,) array of the values (one pair per list element; empty and null lists give
            one pair with a missing value).
        n: number of rows of the batch.
    """

    __slots__ = ("rows", "values", "n")

    def __init__(self, rows: np.ndarray, values: np.ndarray, n: int):
        self.rows = rows
        self.values = values
        self.n = n

    @property
    def shape(self) -> tuple[int]:
        return (self.n,)

    def __len__(self) -> int:
        return self.n

    def __repr__(self) -> str:
        return f"ListColumn(rows={self.n}, values={self.values.shape[0]})"


class CodedColumn:
    """A string slice column of one batch, already dictionary-encoded (from an Arrow string
    column: Arrow's hash encoding in C++ instead of one Python string object per row).

    Attributes:
        codes: (n,) int64 index of each row's value in ``uniques``.
        uniques: the distinct values (in no particular order), with None last when some row is
            missing: the values :func:`_encode_column` gives for the same values.
        dictionary: the Arrow array of the distinct values other than None (Arrow columns only;
            ``uniques`` is then built from it on first use), else None.

    ``np.asarray(column)`` gives the (n,) object array of the values.
    """

    __slots__ = ("codes", "_uniques", "dictionary", "_has_null")

    def __init__(self, codes: np.ndarray, uniques: list[Any] | None, dictionary: Any = None, has_null: bool = False):
        self.codes = codes
        self._uniques = uniques
        self.dictionary = dictionary
        self._has_null = has_null if uniques is None else (bool(uniques) and uniques[-1] is None)

    @property
    def has_null(self) -> bool:
        return self._has_null

    @property
    def uniques(self) -> list[Any]:
        if self._uniques is None:
            self._uniques = self.dictionary.to_pylist() + ([None] if self._has_null else [])
        return self._uniques

    @property
    def shape(self) -> tuple[int]:
        return self.codes.shape

    def __len__(self) -> int:
        return self.codes.shape[0]

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = np.array(self.uniques + [None], dtype=object)[self.codes]
        return out if dtype is None else out.astype(dtype)

    def __repr__(self) -> str:
        return f"CodedColumn(rows={len(self)}, values={len(self.uniques)})"


class ValueKeys(_AbcSequence):
    """The slice keys ``((column, value),)`` of the distinct values of one Arrow-coded column
    (:class:`CodedColumn` with a ``dictionary``), in code order, built only when read: a
    :class:`mergeable_metrics.slicing.grouped.SliceBlock` maps the Arrow dictionary to its slots directly."""

    __slots__ = ("column", "coded", "_keys")

    def __init__(self, column: str, coded: CodedColumn):
        self.column = column
        self.coded = coded
        self._keys: list[tuple] | None = None

    def _list(self) -> list[tuple]:
        if self._keys is None:
            self._keys = [((self.column, v),) for v in self.coded.uniques]
        return self._keys

    def __len__(self) -> int:
        return len(self.coded.dictionary) + self.coded.has_null

    def __getitem__(self, i: Any) -> Any:
        return self._list()[i]

    def __iter__(self) -> Any:
        return iter(self._list())


def _arrow_coded(values: Any) -> CodedColumn | None:
    """A plain Arrow string column as a :class:`CodedColumn` (None for any other type)."""
    if str(values.type) not in ("string", "large_string"):
        return None
    arr = values.combine_chunks() if hasattr(values, "combine_chunks") else values
    enc = arr.dictionary_encode()
    idx = enc.indices
    has_null = bool(idx.null_count)
    if has_null:
        idx = idx.fill_null(len(enc.dictionary))
    return CodedColumn(idx.to_numpy(zero_copy_only=False).astype(np.int64), None, enc.dictionary, has_null)


def _coded_strings(values: list | tuple) -> CodedColumn | None:
    """A non-empty Python list of strings (and None for missing values), as from row dicts, as a
    :class:`CodedColumn`: one dict of the distinct values instead of numpy unicode arrays and a
    sort. None for anything else (numbers, lists, unhashable values)."""
    if not values:
        return None
    try:
        distinct = dict.fromkeys(values)
    except TypeError:  # unhashable: list-valued rows
        return None
    strings = [v for v in distinct if type(v) is str]
    if len(strings) + (None in distinct) != len(distinct):
        return None
    uniques: list[Any] = sorted(strings)
    if None in distinct:
        uniques.append(None)
    pos = {v: i for i, v in enumerate(uniques)}
    return CodedColumn(np.fromiter(map(pos.__getitem__, values), dtype=np.int64, count=len(values)), uniques)


_LISTLIKE = (list, tuple, np.ndarray, set, frozenset)


def _objects(values: Sequence[Any]) -> np.ndarray:
    """A 1-D object array of exactly these Python values (no numpy type inference, which would
    turn ``[True, 2]`` into ints, ``[2**53 + 1, 0.5]`` into floats, or nested lists into a 2-D
    array)."""
    arr = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):
        arr[i] = v
    return arr


def _explode(seq: Sequence[Any], name: str) -> ListColumn:
    rows: list[int] = []
    vals: list[Any] = []
    for i, v in enumerate(seq):
        if isinstance(v, _LISTLIKE):
            items = v.tolist() if isinstance(v, np.ndarray) else list(v)
            if isinstance(v, (set, frozenset)):
                items = sorted(items, key=repr)
            if items:
                rows.extend([i] * len(items))
                vals.extend(items)
                continue
            v = None
        rows.append(i)
        vals.append(v)
    return ListColumn(np.asarray(rows, dtype=np.int64), _objects(vals), len(seq))


def read_slice_column(values: Any, name: str, row_offset: int = 0) -> "np.ndarray | ListColumn | CodedColumn":
    """One slice column of a batch as a 1-D numpy array, or a :class:`ListColumn` when its rows
    hold lists (Arrow list columns; Python lists, tuples, sets or arrays; 2-D numpy arrays), or a
    :class:`CodedColumn` for an Arrow string column or a Python list of strings (and None).

    Raises:
        TypeError: the column is not array-like, or its lists hold lists (the message names the
            column, the value and its row, counted from ``row_offset``).
    """
    t = getattr(values, "type", None)
    if t is not None and hasattr(values, "null_count"):  # pyarrow Array / ChunkedArray
        if str(t).startswith("dictionary<"):  # the values themselves (an all-null chunk has no dictionary to take from)
            values = values.cast(t.value_type)
            t = values.type
        if str(t).startswith(("list<", "large_list<", "fixed_size_list<")):
            arr = values.combine_chunks() if hasattr(values, "combine_chunks") else values
            n = len(arr)
            parents = np.asarray(arr.value_parent_indices().to_numpy(zero_copy_only=False), dtype=np.int64)
            if str(arr.type.value_type).startswith(("list<", "large_list<", "fixed_size_list<", "struct<", "map<")):
                i = int(parents[0]) if parents.size else 0
                raise TypeError(
                    f"slice column {name!r}: row {row_offset + i} holds the nested value {arr[i].as_py()!r}; a list-valued "
                    "slice column must hold lists of scalars"
                )
            flat = as_array(arr.flatten(), name)
            lengths = np.bincount(parents, minlength=n)
            empty = np.flatnonzero(lengths == 0)
            if empty.size:  # null and empty lists: the missing value
                fill = np.full(empty.size, np.nan) if flat.dtype.kind == "f" else np.full(empty.size, None, dtype=object)
                if flat.dtype.kind not in "fO":
                    flat = flat.astype(object)
                parents = np.concatenate([parents, empty])
                flat = np.concatenate([flat, fill])
                order = np.argsort(parents, kind="stable")
                parents, flat = parents[order], flat[order]
            return ListColumn(parents, flat, n)
        coded = _arrow_coded(values)
        return coded if coded is not None else as_array(values, name)
    if isinstance(values, (list, tuple)):
        coded = _coded_strings(values)
        if coded is not None:
            return coded
        types = set(map(type, values))
        if any(issubclass(t, _LISTLIKE) for t in types):
            return _explode(values, name)
        exact = {frozenset([int]): np.int64, frozenset([float]): np.float64, frozenset([bool]): np.bool_}.get(frozenset(types))
        if exact is not None:  # one plain type: a typed array at once
            try:
                return np.array(values, dtype=exact)
            except OverflowError:  # ints beyond int64: exact Python ints
                pass
        return np.array(values, dtype=object)  # typed by _encode_column, after checking every value's type
    if isinstance(values, np.ndarray) and values.ndim == 2:
        return _explode(list(values), name)
    arr = as_array(values, name)
    if arr.dtype == object and any(isinstance(v, _LISTLIKE) for v in arr):
        return _explode(arr, name)
    return arr


# --------------------------------------------------------------------------------------------
# order-preserving key encoding (profiles and the top-N cut)
_MASK64 = (1 << 64) - 1
#: version of the key encoding of :func:`encode_key`; version 1 (before numbers were one kind:
#: ints tagged 3 in 9 bytes before floats tagged 4 in 8 bytes) is read by :func:`upgrade_key_v1`
KEY_ENCODING = 2
_INT_RANGE = 1 << 71  # ints in [-2**71, 2**71) are numbers; larger ones are encoded as text
_REST_OFFSET = 1 << 31  # int minus its nearest float: |rest| <= 2**17 in that range


def _encode_number(v: int | float) -> bytes:
    """One numeric kind: ints and floats in numeric order (an int before an equal float).

    The nearest float64 in order-preserving bytes, then the exact rest ``v - int(that float)``
    of an int (0 for a float: a float never lies strictly between an int and its nearest float),
    then the type (0 int, 1 float), so equal ints and floats stay distinct keys.
    """
    f = float(v) + 0.0  # -0.0 and 0.0 are one value
    u = int.from_bytes(struct.pack(">d", f), "big")
    u = (u ^ _MASK64) if u >> 63 else (u | (1 << 63))
    if isinstance(v, float):
        return b"\x03" + u.to_bytes(8, "big") + _REST_OFFSET.to_bytes(4, "big") + b"\x01"
    return b"\x03" + u.to_bytes(8, "big") + (v - int(f) + _REST_OFFSET).to_bytes(4, "big") + b"\x00"


def _encode_value(v: Any) -> bytes:
    if type(v) is str:  # the common case first
        return b"\x05" + v.encode("utf-8", "surrogatepass").replace(b"\x00", b"\x00\xff") + b"\x00\x00"
    if v is None:
        return b"\x01"
    if isinstance(v, bool):
        return b"\x02\x01" if v else b"\x02\x00"
    if isinstance(v, float) or (isinstance(v, int) and -_INT_RANGE <= v < _INT_RANGE):
        return _encode_number(v)
    tag = b"\x05" if isinstance(v, str) else b"\x06"
    return tag + str(v).encode("utf-8", "surrogatepass").replace(b"\x00", b"\x00\xff") + b"\x00\x00"


def encode_key(values: Sequence[Any]) -> bytes:
    """Order-preserving, injective bytes of a slice key's values.

    Components are self-delimiting (type tag, then 13 bytes for a number, see
    :func:`_encode_number`, or escaped UTF-8 text with a terminator), so bytewise order is the
    order of the values (missing first, then booleans, numbers (ints and floats in one numeric
    order, an int before an equal float), strings; crossed keys column by column).
    Trailing zero bytes are stripped (numpy ``S`` arrays drop them) without losing injectivity.
    """
    if len(values) == 1:  # the common one-column key, without the join
        return _encode_value(values[0]).rstrip(b"\x00")
    return b"".join(_encode_value(v) for v in values).rstrip(b"\x00")


def upgrade_key_v1(old: bytes) -> bytes:
    """The :func:`encode_key` bytes of a key written in key encoding 1 (the slice profiles of
    earlier releases): its ints and floats re-encoded as one numeric kind, other values as they
    were.

    Raises:
        ValueError: bytes that no key of encoding 1 has.
    """
    data = bytes(old)
    n, i = len(data), 0
    out = []

    def take(k: int) -> bytes:  # the next k bytes, the stripped trailing zeros restored
        nonlocal i
        chunk, i = data[i : i + k], i + k
        return chunk + b"\x00" * (k - len(chunk))

    while i < n:
        tag, i = data[i], i + 1
        if tag == 1:
            out.append(b"\x01")
        elif tag == 2:
            out.append(b"\x02" + take(1))
        elif tag == 3:
            out.append(_encode_number(int.from_bytes(take(9), "big") - _INT_RANGE))
        elif tag == 4:
            u = int.from_bytes(take(8), "big")
            u = (u ^ (1 << 63)) if u >> 63 else (u ^ _MASK64)
            out.append(_encode_number(struct.unpack(">d", u.to_bytes(8, "big"))[0]))
        elif tag in (5, 6):  # escaped text (NUL as 00 ff) ended by 00 00, which may be stripped
            start, j = i - 1, i
            while True:
                k = data.find(b"\x00", j)
                if k < 0:
                    out.append(data[start:] + b"\x00\x00")
                    i = n
                    break
                if k + 1 < n and data[k + 1] == 0xFF:
                    j = k + 2
                elif k + 1 < n and data[k + 1] == 0:
                    out.append(data[start : k + 2])
                    i = k + 2
                    break
                else:
                    raise ValueError(f"not a slice key of encoding 1: {data.hex()} (bad text escape at byte {k})")
        else:
            raise ValueError(f"not a slice key of encoding 1: {data.hex()} (unknown tag {tag} at byte {i - 1})")
    return b"".join(out).rstrip(b"\x00")


def encode_keys(keys: Sequence[tuple]) -> tuple[list[bytes], list[bool]]:
    """:func:`encode_key` of many slice keys, and whether each holds a missing value."""
    if keys and len(keys[0]) == 1:
        vals = [k[0][1] for k in keys]
        return [_encode_value(v).rstrip(b"\x00") for v in vals], [v is None for v in vals]
    vals = [tuple(v for _, v in k) for k in keys]
    return [encode_key(v) for v in vals], [None in v for v in vals]
