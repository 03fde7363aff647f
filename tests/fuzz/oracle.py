"""The fuzz suite's oracle: what a generated input must end in, computed without the library.

A *case* is a list of batches; each batch maps a column name to ``(role, cells)`` where ``role``
is ``"label"``, ``"prediction"``, ``"score"`` or ``"weight"`` and ``cells`` are the Python values
the library sees (see :func:`tests._helpers.strategies.wrap`). Each cell is

* ``"ok"``: a number (bool, int, float) valid for its role: labels and predictions integers in
  [0, K), scores finite, weights finite and >= 0;
* ``"value"``: a number (or a missing value: None, NaN) outside that: a ``ValueError`` naming the
  column, the row position and the value;
* ``"type"``: not a number (a string, bytes, ...): a ``TypeError`` naming the column, the row
  and the value.

``Decimal`` cells are numbers on every engine (issue 11 item 12); an int beyond float range is a
``"big"`` cell: a ``ValueError`` (out of range), found with the non-numbers while converting. A dict is a ``"type"`` cell; a list among scalars is too, or it makes
the column a (ragged) matrix column: an error naming the column, in either mode.

With ``on_invalid="raise"`` the first batch holding a bad cell fails, naming one of its bad
columns, at that column's first bad row (its first ``"type"`` cell if it has one: non-numbers
are found while converting the column, before range checks). With ``on_invalid="skip"`` the bad
rows are skipped and counted per slice, non-numbers too (issue 11 item 9); only that
column-level error may still raise.

Any other exception type -- IndexError, KeyError, OverflowError, RecursionError, AttributeError,
numpy's, pyarrow's or py4j's -- is a failure.
"""

from __future__ import annotations

import decimal
import math
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import numpy as np

from tests._helpers.strategies import FLOAT_MAX_INT

Batch = dict  # {column: (role, cells)}


def is_huge(v: Any) -> bool:
    """An int beyond float range: ``float(v)`` raises OverflowError (NEW-A: out of range)."""
    return isinstance(v, int) and not isinstance(v, bool) and abs(v) > FLOAT_MAX_INT


def classify(v: Any, role: str, k: int) -> str:
    """``"ok"``, ``"value"``, ``"type"`` or ``"nested"`` for one cell of a column of ``role``."""
    if isinstance(v, decimal.Decimal):
        v = float(v)
    if v is None:
        return "value"
    if is_huge(v):
        return "big"
    if isinstance(v, (list, tuple, np.ndarray)):
        return "nested"
    if isinstance(v, dict):
        return "type"
    if isinstance(v, (np.generic,)):
        v = v.item()
    if not isinstance(v, (bool, int, float)):
        return "type"
    f = float(v)
    if not math.isfinite(f):
        return "value"
    if role in ("label", "prediction"):
        return "ok" if f.is_integer() and 0 <= f < k else "value"
    if role == "weight":
        return "ok" if f >= 0 else "value"
    return "ok"


def _number(v: Any) -> float:
    """A cell as a float; NaN for what is no number (those rows are invalid, never compared)."""
    try:
        return float(v)
    except (TypeError, ValueError, OverflowError):
        return math.nan


@dataclass
class Expected:
    """The outcome a case must have: ``error`` None (then ``valid`` masks each batch's rows) or the
    batch index and ``{column: (exception type, row, value)}`` of the columns that may be named."""

    error: dict | None = None
    batch: int | None = None
    valid: list = field(default_factory=list)
    kinds: list = field(default_factory=list)  # per batch, per row: worst class ("ok"/"value"/"type")
    type_error: dict | None = None  # the first batch's column-level errors (they raise in skip mode too)


def expect(batches: Sequence[Batch], k: int) -> Expected:
    """The raise-mode outcome (``error``) and the per-row validity (``valid``, for skip mode)."""
    out = Expected()
    offset = 0
    for bi, batch in enumerate(batches):
        n = len(next(iter(batch.values()))[1]) if batch else 0
        worst = ["ok"] * n
        bad = {}
        for name, (role, cells) in batch.items():
            classes = [classify(v, role, k) for v in cells]
            if "nested" in classes:
                # lists among scalars (or a matrix column that does not fit): an error naming the
                # column, which may raise in skip mode too; or the cells are read one by one, and
                # a list is not a number (the skip mask below)
                bad[name] = ((ValueError, TypeError), None, cells[classes.index("nested")])
            classes = ["type" if c == "nested" else c for c in classes]  # a list among scalars: not a number
            for i, c in enumerate(classes):
                if c == "type" or (c in ("value", "big") and worst[i] == "ok"):
                    worst[i] = "type" if c == "type" else "value"
            conversion = [i for i, c in enumerate(classes) if c in ("type", "big")]  # found while converting
            if name in bad:
                pass
            elif conversion:
                i = conversion[0]
                bad[name] = (TypeError if classes[i] == "type" else ValueError, offset + i, cells[i])
            elif "value" in classes:
                i = classes.index("value")
                bad[name] = (ValueError, offset + i, cells[i])
        if bad and out.error is None:
            out.error, out.batch = bad, bi
        types = {name: v for name, v in bad.items() if v[1] is None}
        if types:  # skip mode may still stop at a column-level error, of any batch (an earlier one may read row by row)
            out.type_error = {**types, **(out.type_error or {})}
        out.valid.append(np.array([w == "ok" for w in worst], dtype=bool))
        out.kinds.append(worst)
        offset += n
    return out


def expectations(batches: Sequence[Batch], k: int) -> list[Expected]:
    """The outcomes to accept (one: Decimal cells are numbers everywhere, issue 11 item 12)."""
    return [expect(batches, k)]


def value_spellings(v: Any) -> set[str]:
    """How a message may spell a bad value: its repr, or its float's (a missing value as None,
    null or nan: messages name an Arrow / JSON / SQL null ``null``, a Python None ``None``, and
    a NaN the file format turned into a null, e.g. in JSON Lines, ``null`` too)."""
    out = {repr(v), str(v)}
    if v is None or (isinstance(v, (float, decimal.Decimal)) and v != v):  # a missing value: any spelling
        out |= {"nan", "None", "null"}
    try:
        out.add(repr(float(v)))
    except (TypeError, ValueError, OverflowError):
        pass
    if isinstance(v, bool):
        out |= {repr(int(v))}
    if is_huge(v):  # a long int is shortened in messages
        out.add(repr(v)[:40])
    return out


def error_mismatch(exc: BaseException, bad: dict) -> str | None:
    """Why ``exc`` is not an acceptable error for the bad columns ``bad`` (None if it is)."""
    if type(exc) not in (ValueError, TypeError):
        return f"{type(exc).__module__}.{type(exc).__name__} is not a plain ValueError/TypeError: {exc}"
    msg = str(exc)
    reasons = []
    for name, (etype, row, value) in bad.items():
        if repr(name) not in msg and f"`{name}`" not in msg:
            reasons.append(f"{name!r} not named")
            continue
        if not isinstance(exc, etype):
            reasons.append(f"{name!r}: expected {etype}")
            continue
        if row is None:  # a column-level error
            return None
        if not re.search(rf"\brow {row}\b", msg):
            reasons.append(f"{name!r}: row {row} not named")
            continue
        if not any(s in msg for s in value_spellings(value)):
            reasons.append(f"{name!r}: value {value!r} not named")
            continue
        return None
    return f"{type(exc).__name__}({msg!r}) does not match any of {bad}: {reasons}"


def run(fn: Any) -> tuple[Any, BaseException | None]:
    """``(fn(), None)`` or ``(None, exception)``; only Exceptions are caught."""
    try:
        return fn(), None
    except Exception as e:  # noqa: BLE001 -- classified by the caller
        return None, e


def concat(batches: Sequence[Batch], column: str, masks: Iterable[np.ndarray] | None = None) -> list:
    """The cells of ``column`` over all batches (only the rows where ``masks`` is True)."""
    out: list = []
    masks = list(masks) if masks is not None else [None] * len(batches)
    for b, m in zip(batches, masks):
        cells = b[column][1]
        out += [c for i, c in enumerate(cells) if m is None or m[i]]
    return out


def canon(v: Any) -> Any:
    """A slice value as a group key: None and NaN are the missing value, -0.0 is 0.0, +-inf are
    the texts ``"inf"`` / ``"-inf"`` (JSON has no infinity; the README's slice-value rules)."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    if isinstance(v, float) and v == 0.0:
        return 0.0
    if isinstance(v, float) and math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


EXCLUDED = object()  # a row in no slice of the spec (filtered out)


def _bucket(v: float, edges: Sequence[float]) -> str:
    from mergeable_metrics.slicing.assign import bucket_labels  # the labels' spelling only; the bucketing is ours

    import bisect

    return bucket_labels(edges)[bisect.bisect_right(list(edges), v)]


def slice_values(values: list, spec: tuple) -> list:
    """Each row's slice value under ``spec`` (computed here, independently of core):

    * ``("plain",)``: the value (None for missing);
    * ``("filter", allowed)``: the value if allowed (None allowed for ``null``; the ints 1 / 0,
      written ``1`` / ``0``, allow the booleans True / False too), else EXCLUDED;
    * ``("max_slices", N)``: the N most frequent present values stay,
      every other present value becomes ``"__other__"``; missing stays None (ties: numbers, then
      the text values, canonical ``"inf"`` / ``"-inf"`` among them, each ascending);
    * ``("edges", edges)`` / ``("quantiles", q)``: the interval label of the value's bucket
      (quantile edges: numpy's linear interior quantiles of the finite present values, equal
      edges collapsed; none without a finite value); missing stays None.
    """
    kind = spec[0]
    if kind == "plain":
        return list(values)
    if kind == "filter":  # numbers match numerically (7 and 7.0), booleans booleans and the text 1 / 0
        allowed = [(isinstance(a, bool), a) for a in spec[1]]
        allowed += [(True, bool(a)) for a in spec[1] if not isinstance(a, bool) and isinstance(a, int) and a in (0, 1)]
        return [v if (isinstance(v, bool), v) in allowed else EXCLUDED for v in values]
    if kind == "max_slices":
        counts: dict = {}
        for v in values:
            if v is not None:
                counts[v] = counts.get(v, 0) + 1
        # ties: numbers before text (canonical "inf" / "-inf" are text), each ascending
        kept = {v for v, _ in sorted(counts.items(), key=lambda kv: (-kv[1], isinstance(kv[0], str), kv[0]))[: spec[1]]}
        return [v if v is None or v in kept else "__other__" for v in values]
    if kind == "edges":
        edges = spec[1]
    else:
        present = np.asarray([float(v) for v in values if v is not None and math.isfinite(float(v))], dtype=np.float64)
        edges = sorted(set(np.quantile(present, [i / spec[1] for i in range(1, spec[1])]).tolist())) if present.size else []
    return [None if v is None else _bucket(float(v), edges) for v in values]


def sliced_problems(
    res: Any,
    batches: Sequence[Batch],
    ex: Expected,
    gcells: Sequence[list],
    *,
    label: str,
    target: str,
    weight: str | None,
    k: int,
    multiclass: bool,
    keys: Sequence[str],
    slice_col: str = "g",
    threshold: float = 0.5,
    spec: tuple = ("plain",),
) -> str | None:
    """Why ``res`` (a :class:`mergeable_metrics.Results` of slices ``[slice_col]``) is not the oracle's (None if it is):
    one slice per distinct value (None/NaN one missing slice, -0.0 == 0.0) and nothing else; per
    slice ``n`` = its valid rows, ``skipped`` = its invalid rows (so rows in == n + skipped); every
    metric equal to scikit-learn's on the slice's valid rows (tolerance 1e-9 relative)."""
    from tests._helpers.compare import close
    from tests._helpers.sklearn_ref import sk_binary, sk_multiclass

    valid = np.concatenate(ex.valid) if ex.valid else np.zeros(0, bool)
    gall = slice_values([canon(v) for part in gcells for v in part], spec)
    groups: dict = {}
    for i, v in enumerate(gall):
        if v is not EXCLUDED:
            groups.setdefault(v, []).append(i)
    got: dict = {}
    for s in res.slices:
        if s.slice == ():
            got[()] = s
        else:
            ((_, v),) = s.slice
            if (slice_col, canon(v)) in got:
                return f"two slices for value {v!r}"
            got[(slice_col, canon(v))] = s
    expected_keys = {()} | {(slice_col, v) for v in groups}
    if set(got) != expected_keys:
        return f"slices {sorted(map(repr, got))} != expected {sorted(map(repr, expected_keys))}"
    ycol = [_number(v) for v in concat(batches, label)]
    tcol = [_number(v) for v in concat(batches, target)]
    wcol = [_number(v) for v in concat(batches, weight)] if weight else None
    problems = []
    for key, s in got.items():
        rows = list(range(len(gall))) if key == () else groups[key[1]]
        ok = [i for i in rows if valid[i]]
        skipped = len(rows) - len(ok)
        if s.n != len(ok) or s.skipped != skipped:
            problems.append(f"{key}: n={s.n} skipped={s.skipped}, expected n={len(ok)} skipped={skipped} of {len(rows)} rows in")
            continue
        y = np.asarray([ycol[i] for i in ok], dtype=np.float64).astype(np.int64)
        t = np.asarray([tcol[i] for i in ok], dtype=np.float64)
        w = None if wcol is None else np.asarray([wcol[i] for i in ok], dtype=np.float64)
        ref = sk_multiclass(y, t.astype(np.int64), w, k, only=keys) if multiclass else sk_binary(y, t, w, threshold, only=keys)
        problems += [f"{key} {m}: ours={s.metrics[m]!r} sklearn={ref[m]!r}" for m in keys if not close(s.metrics[m], ref[m])]
    return "; ".join(problems) or None


def table_batches(case: dict) -> list[Batch]:
    """A table case (``tests._helpers.strategies.table_cases``) as one oracle batch."""
    return [{name: (role, cells) for name, (role, cells, _) in case["columns"].items() if role != "slice"}]


def evaluation_of(case: dict, **extra: Any) -> Any:
    """The :class:`mergeable_metrics.Evaluation` of a table case (slices ``[<slice column, escaped>]``)."""
    from mergeable_metrics import Evaluation
    from mergeable_metrics.slicing.assign import SliceSpec

    spec = SliceSpec((case["slice"],)) if extra.pop("spec_object", True) else escape_spec(case["slice"])
    mc = case["multiclass"]
    return Evaluation(
        label_col=case["label"], **({"prediction_col": case["target"]} if mc else {"score_col": case["target"]}),
        weight_col=case["weight"], slices=[spec], num_classes=case["k"] if mc else None,
        metrics=list(MULTICLASS_KEYS if mc else BINARY_KEYS), on_invalid=case["on_invalid"], **extra,
    )  # fmt: skip


def escape_spec(column: str) -> str:
    """A column name as a slice spec (``, ; : = | \\`` escaped with a backslash)."""
    return "".join("\\" + c if c in ",;:=|\\" else c for c in column)


BINARY_KEYS = ("tp", "fp", "tn", "fn", "precision", "recall", "f1", "accuracy")
MULTICLASS_KEYS = ("accuracy", "f1@macro", "precision@micro", "recall@none", "confusion_matrix")


def engine_error_problem(exc: BaseException, bad: dict) -> str | None:
    """Why an engine's exception does not carry a clear error for ``bad`` (None if it does):
    its text (Beam and Spark wrap executor errors) must hold core's message, naming one of the
    bad columns and its value (rows are partition/bundle positions on engines)."""
    text = str(exc)
    cause = exc
    while cause is not None:
        text += "\n" + str(cause)
        cause = cause.__cause__ or cause.__context__
    for name, options in bad.items():
        for etype, _, value in options if isinstance(options, list) else [options]:
            if (
                repr(name) in text
                and any(s in text for s in value_spellings(value))
                and any(t.__name__ in text or type(exc) is t for t in (etype if isinstance(etype, tuple) else (etype,)))
            ):
                return None
    return f"{type(exc).__module__}.{type(exc).__name__} does not name any of {bad}: {text[:1500]}"


def table_problems(case: dict, results: Any) -> str | None:
    """Why ``results`` of a table case with no error expected are not the oracle's."""
    batches = table_batches(case)
    ex = expect(batches, case["k"])
    return sliced_problems(
        results, batches, ex, [case["columns"][case["slice"]][1]], label=case["label"], target=case["target"],
        weight=case["weight"], k=case["k"], multiclass=case["multiclass"],
        keys=MULTICLASS_KEYS if case["multiclass"] else BINARY_KEYS, slice_col=case["slice"],
    )  # fmt: skip
