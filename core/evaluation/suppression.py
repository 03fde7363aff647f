"""Small-slice suppression that cannot be undone by subtraction, and withheld names.

A slice below its ``min_slice_size`` is *primarily* suppressed (:meth:`mergeable_metrics.Evaluation.finish`):
no metric values and no counts. That alone does not protect it: a spec's slices partition their
parent's rows (the overall slice, or the slice of a coarser spec: ``carrier`` is the parent of
``carrier,origin``), so when exactly one slice of a group is suppressed, the parent's counts minus
the published siblings' counts give the suppressed slice's counts (n, tp, fn, ...) exactly.

:func:`suppress_complements` closes that gap the way statistical agencies do (complementary cell
suppression): in every group of sibling slices under a published parent, if exactly one slice is
suppressed, the smallest published sibling is suppressed too (or, when there is no sibling, the
parent), and in every group under a suppressed parent whose members are all published (their sum
is the parent; a lone child is the parent itself), the smallest member is suppressed; repeated
until neither holds. :func:`withhold_names` then
replaces the suppressed slices of each spec by one entry, ``{column: "__suppressed__"}`` with
``suppressed_slices`` = how many it stands for, so the suppressed values (e.g. a rare diagnosis
code) are not published either (``Evaluation(show_suppressed_names=True)`` keeps them).

What this protects: no single suppressed slice's counts or values can be derived from the published
results of one evaluation by subtracting published slices of the same group. What it does not:
differences between two evaluations of overlapping data, differencing across specs that are not a
column subset of one another (e.g. ``origin`` and ``carrier``: each of their slices is a union of
``carrier,origin`` cells), or knowledge outside the results.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Sequence

import numpy as np

from mergeable_metrics.results.results import Results, SliceResult
from mergeable_metrics.slicing.assign import SUPPRESSED, SliceSpec, sort_key

__all__ = ["SUPPRESSED", "is_suppressed", "protect", "size_thresholds", "spec_of", "suppress_complements", "suppressed_mask", "withhold_names"]


def spec_of(slices: Sequence[SliceSpec], key: tuple) -> SliceSpec | None:
    """The spec among ``slices`` whose slice ``key`` is (None for the overall slice)."""
    cols = tuple(c for c, _ in key)
    return next((s for s in slices if s.columns == cols), None)


def size_thresholds(key: tuple, slices: Sequence[SliceSpec], min_slice_size: float | None) -> list[tuple[float, str]]:
    """``(k, "count" | "weight")`` sizes slice ``key`` must reach, else it is primarily
    suppressed: its spec's own ``min_slice_size``, else the evaluation's; the overall slice must
    meet the evaluation's and every spec's."""
    if key:
        spec = spec_of(slices, key)
        if spec is not None and spec.min_slice_size is not None:
            return [(spec.min_slice_size, spec.by)]
        return [(min_slice_size, "count")] if min_slice_size is not None else []
    out = [(min_slice_size, "count")] if min_slice_size is not None else []
    return out + [(s.min_slice_size, s.by) for s in slices if s.min_slice_size is not None]


def is_suppressed(key: tuple, counts: Any, slices: Sequence[SliceSpec], min_slice_size: float | None) -> bool:
    """True when slice ``key``, of example counts ``counts``, is below a size of :func:`size_thresholds`."""
    size = {"count": float(counts["count"]), "weight": float(counts["weight"])}
    return any(size[by] < k for k, by in size_thresholds(key, slices, min_slice_size))


def suppressed_mask(keys: Sequence[tuple], count: np.ndarray, weight: np.ndarray, slices: Sequence[SliceSpec], min_slice_size: float | None) -> np.ndarray:
    """(R,) bool: :func:`is_suppressed` of each slice ``keys[i]`` of example count ``count[i]``
    and weight ``weight[i]``, compared as arrays (one threshold lookup per spec)."""
    hidden = np.zeros(len(keys), dtype=bool)
    if min_slice_size is None and all(s.min_slice_size is None for s in slices):
        return hidden
    limits: dict[tuple, tuple[float, float]] = {}  # per spec's columns: the largest count and weight thresholds
    at_count = np.full(len(keys), -np.inf)
    at_weight = np.full(len(keys), -np.inf)
    for i, key in enumerate(keys):
        cols = tuple(c for c, _ in key) if key else None
        lim = limits.get(cols)  # type: ignore[arg-type]
        if lim is None:
            ks = size_thresholds(key, slices, min_slice_size)
            lim = limits[cols] = (  # type: ignore[index]
                max((float(k) for k, by in ks if by == "count"), default=-np.inf),
                max((float(k) for k, by in ks if by == "weight"), default=-np.inf),
            )
        at_count[i], at_weight[i] = lim
    return (np.asarray(count, dtype=np.float64) < at_count) | (np.asarray(weight, dtype=np.float64) < at_weight)


def protect(results: Results, show_suppressed_names: bool = False) -> Results:
    """Complementary suppression (:func:`suppress_complements`) and, unless
    ``show_suppressed_names``, withheld names (:func:`withhold_names`), over one evaluation's
    complete results."""
    if not any(s.suppressed for s in results.slices):
        return results
    slices = suppress_complements(results.slices)
    return Results(slices if show_suppressed_names else withhold_names(slices), results.config)


def _columns(key: tuple) -> tuple:
    return tuple(c for c, _ in key)


def _withheld(s: SliceResult) -> bool:
    return s.suppressed_slices is not None


def _suppress(s: SliceResult) -> SliceResult:
    return dataclasses.replace(s, n=None, weight=None, skipped=None, metrics={}, bounds={}, ci={}, suppressed=True, folded_values=None)


def suppress_complements(slices: Iterable[SliceResult]) -> list[SliceResult]:
    """Suppress further slices so that no primarily suppressed slice can be recovered by subtraction.

    Args:
        slices: every slice of one evaluation (overall included), e.g. ``Results.slices``.

    Returns:
        The same slices in the same order, with some published slices turned into suppressed
        ones (no values, no counts). Groups of sibling slices are formed under every published
        parent: the overall slice, and each slice whose columns are a strict subset of the
        child's columns (matched by value), finest parent first. Within a group with exactly one suppressed member,
        the published member with the fewest rows (then the smallest weight, then the first in
        order) is suppressed; a group with one member, suppressed, suppresses its parent. Within a
        group under a suppressed parent with no suppressed member (the members add up to the
        parent), the smallest member is suppressed.
        Already withheld entries (:func:`withhold_names`) are left alone: their groups are
        unknown, and they stand for at least two slices.
    """
    out = list(slices)
    index = {s.slice: i for i, s in enumerate(out)}
    specs = sorted({_columns(s.slice) for s in out if s.slice and not _withheld(s)}, key=len)
    changed = True
    while changed:
        changed = False
        for child in specs:
            members = [i for i, s in enumerate(out) if _columns(s.slice) == child and not _withheld(s)]
            # finest parents first: a hidden cell's closest complement is inside its own parent
            parents = [p for p in reversed(specs) if set(p) < set(child)] + [()]
            for parent in parents:
                groups: dict[tuple, list[int]] = {}
                for i in members:
                    values = dict(out[i].slice)
                    groups.setdefault(tuple((c, values[c]) for c in parent), []).append(i)
                for pkey, group in groups.items():
                    p = index.get(pkey)
                    if p is None:
                        continue  # an unknown parent gives nothing to subtract from
                    hidden = [i for i in group if out[i].suppressed]
                    if out[p].suppressed:
                        # the children partition the parent: all of them published add up to it
                        # (a lone child *is* it), so one of them goes
                        if not hidden:
                            victim = min(group, key=lambda i: (out[i].n, out[i].weight, i))
                            out[victim] = _suppress(out[victim])
                            changed = True
                        continue
                    if len(hidden) != 1:
                        continue
                    shown = [i for i in group if not out[i].suppressed]
                    victim = min(shown, key=lambda i: (out[i].n, out[i].weight, i)) if shown else p
                    out[victim] = _suppress(out[victim])
                    changed = True
    return out


def withhold_names(slices: Iterable[SliceResult]) -> list[SliceResult]:
    """Replace each spec's suppressed slices by one ``__suppressed__`` entry counting them.

    Args:
        slices: one evaluation's slices in their canonical order.

    Returns:
        The slices with every suppressed slice other than the overall one removed, and, after
        the spec's last published slice (the canonical order of :func:`mergeable_metrics.slicing.assign.sort_key`),
        ``SliceResult(slice=((c, "__suppressed__"), ...), suppressed=True, suppressed_slices=k)``;
        entries already withheld are merged into it.

    Raises:
        ValueError: a published slice has the value ``"__suppressed__"`` in every column: it
            would be confused with the withheld entry.
    """
    out: list[SliceResult] = []
    at: dict[tuple, int] = {}
    for s in slices:
        cols = _columns(s.slice)
        if not s.suppressed or not cols:
            if cols and all(v == SUPPRESSED for _, v in s.slice) and not s.suppressed:
                raise ValueError(f"slice {s.slice!r}: the value {SUPPRESSED!r} is reserved for withheld suppressed slice names")
            out.append(s)
            continue
        k = s.suppressed_slices if _withheld(s) else 1
        if cols in at:
            prev = out[at[cols]]
            out[at[cols]] = dataclasses.replace(prev, suppressed_slices=prev.suppressed_slices + k)
        else:
            at[cols] = len(out)
            out.append(_suppress(dataclasses.replace(s, slice=tuple((c, SUPPRESSED) for c in cols), suppressed_slices=k)))
    specs = list(dict.fromkeys(_columns(s.slice) for s in out if s.slice))
    return sorted(out, key=lambda s: sort_key(s.slice, specs))
