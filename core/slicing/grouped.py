"""Slice-vectorised folds: every slice of a spec folded in one pass, states with a leading slice axis.

:class:`Evaluation <mergeable_metrics.evaluation.evaluation.Evaluation>` gives each row of a batch an integer slice code
per spec (:func:`mergeable_metrics.slicing.assign.assign_slices`) and folds all slices of the spec at once into a
:class:`SliceBlock`: the spec's slice keys, each mapped to a *slot*, and one :class:`Stack` per
state of the plan holding that state for every slot.

Stacks:

* :class:`CellStack`, for the state kinds that are sums over per-row *cells* (see
  :meth:`mergeable_metrics.states.base.State.cells`: example counts, binary confusion counts, confusion matrices):
  an (slots, cells) table of row counts (int64) and, with a weight column, of exact weight sums
  (:class:`mergeable_metrics._util.exact.ExactSums`), filled by one ``np.bincount`` (or one exact sum) over
  ``slot * cells + cell`` per batch. The states are built from a slot's row of the table
  (:meth:`mergeable_metrics.states.base.State.from_cells`).
* :class:`DistributionStack`, for the score distribution (ROC AUC, average precision): the
  distinct ``(slot, score key)`` pairs with their positive and negative totals (row counts, or
  exact weight sums), from one sort of the pairs per batch; batches' runs are merged lazily
  (when the pending runs outgrow the merged ones); a slot whose distinct scores pass the
  layout's capacity becomes an ordinary compressed state, and a slot with many rows in a batch
  takes the state's own (histogram) fold.
* :class:`StateStack`, every other kind: one state per slot, folded slot by slot (the per-slice
  fold).

Every stack gives, per slot, exactly the state the per-slice fold gives (bit for bit: counts are
integers, weight sums exact), so the laws of the states (any batching, sharding and merge order
gives the same state) hold for blocks too.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from mergeable_metrics.inputs.validation import Batch
from mergeable_metrics._util.exact import ExactSums, exact_sum, raw_regroup
from mergeable_metrics.states.score_bins import LOOKUP_CELLS, LOOKUP_CELLS_PER_ROW, BinLookup, count_cells, fold_found, lookup_cells
from mergeable_metrics.states.score_distribution import ScoreDistributionState, canonical_bins, score_keys
from mergeable_metrics.slicing.assign import ValueKeys, _stable_order, split_by_code
from mergeable_metrics.states.base import ExampleCountState, State, checked_add


class Stack:
    """The states of one plan state (class and layout) for every slot of a block."""

    def __init__(self, cls: type[State], layout: Any):
        self.cls = cls
        self.layout = layout

    def fold(self, batch: Batch, pos: np.ndarray | None, slots: np.ndarray, size: int, cache: dict) -> None:
        """Fold the batch elements ``pos`` (None: every element, in order) into ``slots``;
        ``cache`` holds what the batch's other specs computed of it (e.g. its cells)."""
        raise NotImplementedError

    def merge(self, other: "Stack", slots: np.ndarray, size: int) -> None:
        """Add ``other``'s slot ``i`` into this stack's slot ``slots[i]`` (``size`` slots after)."""
        raise NotImplementedError

    def state(self, slot: int) -> State:
        """The state of one slot (the zero state for a slot that holds nothing)."""
        raise NotImplementedError

    def copy(self) -> "Stack":
        """An independent copy: folding or merging into either leaves the other unchanged."""
        raise NotImplementedError

    def empty(self) -> "Stack":
        """A stack of the same configuration with no slots."""
        raise NotImplementedError


class StateStack(Stack):
    """One state per slot, folded slot by slot (any kind)."""

    def __init__(self, cls: type[State], layout: Any):
        super().__init__(cls, layout)
        self.states: dict[int, State] = {}

    def fold(self, batch: Batch, pos: np.ndarray | None, slots: np.ndarray, size: int, cache: dict) -> None:
        for slot, idx in split_by_code(slots, size, pos):
            old = self.states.get(slot)
            self.states[slot] = (self.cls.zero(self.layout) if old is None else old).fold(batch.take(idx))

    def merge(self, other: "Stack", slots: np.ndarray, size: int) -> None:
        assert isinstance(other, StateStack)
        for i, s in other.states.items():
            to = int(slots[i])
            old = self.states.get(to)
            self.states[to] = s if old is None else old.merge(s)

    def state(self, slot: int) -> State:
        s = self.states.get(slot)
        return self.cls.zero(self.layout) if s is None else s

    def empty(self) -> "StateStack":
        return StateStack(self.cls, self.layout)

    def copy(self) -> "StateStack":
        out = StateStack(self.cls, self.layout)
        out.states = dict(self.states)
        return out


def _grow(a: np.ndarray, size: int) -> np.ndarray:
    if a.shape[0] >= size:
        return a
    out = np.zeros((max(size, 2 * a.shape[0]),) + a.shape[1:], dtype=a.dtype)
    out[: a.shape[0]] = a
    return out


class CellStack(Stack):
    """(slots, cells) row counts and exact weight sums of a cell kind (see :meth:`State.cells`)."""

    def __init__(self, cls: type[State], layout: Any, weighted: bool):
        super().__init__(cls, layout)
        self.ncells = cls.num_cells(layout)
        self.counts = np.zeros((0, self.ncells), dtype=np.int64)
        self.weighted = weighted
        self.weights: ExactSums | None = None  # flat (slots * cells,) exact sums, when weighted

    def _add_weights(self, sums: ExactSums, size: int) -> None:
        total = size * self.ncells
        if self.weights is None:
            self.weights = ExactSums.zeros((total,))
        elif self.weights.shape[0] < total:
            self.weights = self.weights.regroup(np.arange(self.weights.shape[0]), total)
        if sums.shape[0] < total:
            sums = sums.regroup(np.arange(sums.shape[0]), total)
        self.weights = self.weights + sums

    def fold(self, batch: Batch, pos: np.ndarray | None, slots: np.ndarray | int, size: int, cache: dict) -> None:
        """(``slots`` may be one int: every element in that slot, see :meth:`SliceBlock.fold_one`.)"""
        cell = cache.get((self.cls, self.layout))
        if cell is None:
            cell = cache[(self.cls, self.layout)] = self.cls.cells(self.layout, batch)
        if pos is not None:
            cell = cell[pos]
        if isinstance(slots, int):
            index = cell + slots * self.ncells if slots else cell
        else:
            index = slots * self.ncells
            index += cell
        total = size * self.ncells
        self.counts = _grow(self.counts, size)
        flat = self.counts.reshape(-1)
        flat[:total] += np.bincount(index, minlength=total)
        if self.weighted:
            w = batch.sample_weight if pos is None else batch.sample_weight[pos]
            self._add_weights(exact_sum(w, index=index, size=total), size)

    def merge(self, other: "Stack", slots: np.ndarray, size: int) -> None:
        assert isinstance(other, CellStack)
        # other's tables may have fewer rows than keys: slots added by skipped rows only
        n = min(len(slots), other.counts.shape[0])
        self.counts = _grow(self.counts, size)
        to = slots[:n]
        self.counts[to] = checked_add(self.counts[to], other.counts[:n], f"{self.cls.kind} cell counts")
        if self.weighted and other.weights is not None:
            n = min(n, other.weights.shape[0] // self.ncells)
            index = (slots[:n, None] * self.ncells + np.arange(self.ncells)).reshape(-1)
            mine = other.weights.take(np.arange(n * self.ncells))
            self._add_weights(mine.regroup(index, size * self.ncells), size)

    def state(self, slot: int) -> State:
        counts = self.counts[slot] if slot < self.counts.shape[0] else np.zeros(self.ncells, np.int64)
        weights = None
        if self.weighted:
            c = self.ncells
            if self.weights is None or self.weights.shape[0] < (slot + 1) * c:
                weights = ExactSums.zeros((c,))
            else:
                weights = self.weights.take(np.arange(slot * c, (slot + 1) * c))
        return self.cls.from_cells(self.layout, counts, weights)

    def empty(self) -> "CellStack":
        return CellStack(self.cls, self.layout, self.weighted)

    def copy(self) -> "CellStack":
        out = CellStack(self.cls, self.layout, self.weighted)
        out.counts = self.counts.copy()
        out.weights = self.weights
        return out


def _pair_order(slot: np.ndarray, key: np.ndarray) -> np.ndarray:
    """``np.lexsort((key, slot))``, computed as a stable sort by key and then a radix sort by
    slot (slots narrowed to 8 or 16 bits): about twice as fast."""
    order = np.argsort(key, kind="stable")
    return order[_stable_order(slot[order], int(slot.max()) + 1 if slot.size else 0)]


class _Counts:
    """Per-pair label totals of an unweighted distribution: (m, 2) int64 (negatives, positives)."""

    @staticmethod
    def of_rows(y: np.ndarray, w: np.ndarray | None) -> np.ndarray:
        return np.stack((1 - y, y), axis=1)

    @staticmethod
    def concat(parts: list) -> np.ndarray:
        return np.concatenate(parts)

    @staticmethod
    def group(v: np.ndarray, order: np.ndarray, start: np.ndarray, run: np.ndarray) -> np.ndarray:
        return np.add.reduceat(v[order], start, axis=0)

    @staticmethod
    def take(v: np.ndarray, index: np.ndarray | slice) -> np.ndarray:
        return v[index]

    @staticmethod
    def labels(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(positives, negatives) as a state's fields."""
        return v[:, 1].astype(np.float64), v[:, 0].astype(np.float64)


class _Weights:
    """Per-pair label totals of a weighted distribution: exact sums (2 m,), entry ``2 pair + label``."""

    @staticmethod
    def of_rows(y: np.ndarray, w: np.ndarray | None) -> tuple:
        return (y, w)  # summed exactly per pair by group()

    @staticmethod
    def concat(parts: list) -> ExactSums:
        return ExactSums.stack(parts, (sum(p.shape[0] for p in parts),))

    @staticmethod
    def group(v: Any, order: np.ndarray, start: np.ndarray, run: np.ndarray) -> ExactSums:
        m = start.size
        if isinstance(v, tuple):
            y, w = v
            return exact_sum(w, index=2 * run + y, size=2 * m)
        index = np.repeat(2 * run, 2) + np.tile(np.array([0, 1]), run.size)
        return v.regroup(index, 2 * m)

    @staticmethod
    def take(v: ExactSums, index: np.ndarray | slice) -> ExactSums:
        if isinstance(index, slice):
            return v.take(slice(2 * (index.start or 0), 2 * index.stop))
        index = np.asarray(index)
        if index.dtype == bool:
            index = np.flatnonzero(index)
        return v.take((2 * index[:, None] + np.array([0, 1])).reshape(-1))

    @staticmethod
    def labels(v: ExactSums) -> tuple[ExactSums, ExactSums]:
        return v.take(slice(1, None, 2)), v.take(slice(0, None, 2))


def _runs(values: Any, slot: np.ndarray, key: np.ndarray, totals: Any) -> tuple:
    """Sort ``(slot, key)`` pairs and add up the label totals of equal pairs (``values``:
    :class:`_Counts` or :class:`_Weights`)."""
    order = _pair_order(slot, key)
    slot, key = slot[order], key[order]
    if slot.size:
        first = np.concatenate(([True], (slot[1:] != slot[:-1]) | (key[1:] != key[:-1])))
    else:
        first = np.zeros(0, dtype=bool)
    start = np.flatnonzero(first)
    run = np.empty(order.size, dtype=np.int64)
    run[order] = np.cumsum(first) - 1  # the run of each pair, in the pairs' own order
    return slot[start], key[start], values.group(totals, order, start, run)


class DistributionStack(Stack):
    """Score distributions of every slot (see the module docstring).

    ``merged`` holds the distinct ``(slot, score key)`` pairs (sorted) with their label totals
    (row counts, or exact weight sums with a weight column); each slot there has at most
    ``capacity`` keys, i.e. is exact. ``pending`` holds the runs of batches not merged yet;
    ``big`` the states of slots past the capacity, and of slots folded on their own (``HEAVY``).
    """

    #: pending pairs that trigger a merge, at least (else: once they outnumber the merged ones)
    PENDING = 1 << 20
    #: a slot with at least this many rows in a batch is folded into its own state (the state's
    #: histogram fold beats sorting its rows with the others')
    HEAVY = 1 << 12

    def __init__(self, cls: type[State], layout: Any, weighted: bool = False):
        super().__init__(cls, layout)
        self.weighted = weighted
        self.values = _Weights if weighted else _Counts
        z = np.zeros(0, dtype=np.int64)
        self.merged: tuple = (z, z, ExactSums.zeros((0,)) if weighted else np.zeros((0, 2), np.int64))
        self.pending: list[tuple] = []
        self.pending_size = 0
        self.big: dict[int, State] = {}
        self._bounds: np.ndarray | None = None

    def fold(self, batch: Batch, pos: np.ndarray | None, slots: np.ndarray, size: int, cache: dict) -> None:
        if slots.size >= self.HEAVY:
            counts = np.bincount(slots, minlength=size)
            heavy = counts >= self.HEAVY
            if heavy.any():
                every = bool(heavy[counts > 0].all())  # every row on a heavy slot: no selection to copy
                on_heavy = None if every else heavy[slots]
                known = self._known(heavy, counts)
                rest = heavy if known is None else heavy & ~known
                if known is not None:
                    self._fold_known(batch, pos, slots, known, cache, every and not rest.any())
                if rest is heavy and every:
                    parts = split_by_code(slots, size, pos)
                elif rest.any():
                    sel = np.flatnonzero(rest[slots])
                    parts = split_by_code(slots[sel], size, sel if pos is None else pos[sel])
                else:
                    parts = []
                for slot, idx in parts:
                    old = self.big.get(slot)
                    self.big[slot] = (self.cls.zero(self.layout) if old is None else old).fold(batch.take(idx))
                self._bounds = None
                if every:
                    return
                light = np.flatnonzero(~on_heavy)
                pos, slots = (light if pos is None else pos[light]), slots[light]
        key, y, w = self._keys(batch, cache)
        if pos is not None:
            key, y, w = key[pos], y[pos], (None if w is None else w[pos])
        if w is not None:  # zero-weight rows leave no trace (as in the state's own fold)
            nz = w != 0
            if not nz.all():
                key, y, w, slots = key[nz], y[nz], w[nz], slots[nz]
        if slots.size == 0:
            return
        self._add(_runs(self.values, slots, key, self.values.of_rows(y, w)))

    def _keys(self, batch: Batch, cache: dict) -> tuple:
        """``(score keys, int64 labels, weights or None)`` of every batch element (cached per
        batch, shared by the blocks of every spec)."""
        got = cache.get(self.cls)
        if got is None:
            score, y, w = self.cls._inputs(batch)
            got = cache[self.cls] = (score_keys(score), y.astype(np.int64, copy=False), w)
        return got

    def _known(self, heavy: np.ndarray, counts: np.ndarray) -> np.ndarray | None:
        """(size,) bool: the heavy slots of an unweighted stack whose state already has bins at
        a level where a :class:`~mergeable_metrics.states.score_bins.BinLookup` is small, with integer counts that
        stay below 2**52 with this batch's rows (the state's own fold keeps them as counts
        then); None when there is none, or when their tables would have more than
        :data:`~mergeable_metrics.states.score_bins.LOOKUP_CELLS_PER_ROW` cells per row of theirs."""
        if self.weighted:
            return None
        ids = np.flatnonzero(heavy).tolist()
        bins = sum(self.big[s_].arrays["keys"].size for s_ in ids if s_ in self.big)
        if bins > LOOKUP_CELLS_PER_ROW * int(counts[heavy].sum()):  # a table has a cell per bin at least
            return None
        known, cells_total, rows = None, 0, 0
        for slot in ids:
            st = self.big.get(slot)
            if st is None:
                continue
            a = st.arrays
            cells = lookup_cells(a["keys"], int(a["level"]))
            if cells is None or cells > LOOKUP_CELLS or not st._counts_only():
                continue
            if float(a["pos"].sum()) + float(a["neg"].sum()) + float(counts[slot]) >= 2.0**52:
                continue
            if known is None:
                known = np.zeros(heavy.shape[0], dtype=bool)
            known[slot] = True
            cells_total += cells
            rows += int(counts[slot])
        if known is not None and cells_total > LOOKUP_CELLS_PER_ROW * rows:
            return None  # building the table would cost more than sorting the rows slot by slot
        return known

    def _fold_known(self, batch: Batch, pos: np.ndarray | None, slots: np.ndarray, known: np.ndarray, cache: dict, every: bool) -> None:
        """Fold the rows of the ``known`` slots (see :meth:`_known`) into their states at once,
        without splitting the rows by slot: one :class:`~mergeable_metrics.states.score_bins.BinLookup` of every
        such state's bins gives each row its bin (in chunks), counted by one ``np.bincount``;
        only rows in no existing bin are sorted, slot by slot. Each state is the one its own
        :meth:`~mergeable_metrics.states.score_distribution.ScoreDistributionState.fold` of those rows gives
        (:func:`~mergeable_metrics.states.score_bins.fold_found`, bit for bit: counts are integers)."""
        key, y, _ = self._keys(batch, cache)
        if pos is not None:
            key, y = key[pos], y[pos]
        ids = np.flatnonzero(known)
        if every and ids.size == known.shape[0]:  # every slot is known: parts are slots
            part = slots
        else:
            part_of = np.full(known.shape[0], -1, dtype=np.int64)
            part_of[ids] = np.arange(ids.size, dtype=np.int64)
            part = part_of[slots]
            if not every:
                sel = part >= 0
                key, y, part = key[sel], y[sel], part[sel]
        states = [self.big[int(s_)] for s_ in ids]
        lookup = BinLookup([(st.arrays["keys"], int(st.arrays["level"])) for st in states])
        found, mk, my, mp = count_cells(lookup, key, y, part)
        new = {p: (mk[idx], my[idx]) for p, idx in split_by_code(mp, ids.size)} if mk.size else {}
        empty = key[:0], y[:0]
        cap = self.layout.capacity
        for p, (slot, st) in enumerate(zip(ids.tolist(), states)):
            a = st.arrays
            a0, a1 = int(lookup.starts[p]), int(lookup.starts[p + 1])
            nk, ny = new.get(p, empty)
            k, wts, level = fold_found(a["keys"], st._weights(), int(a["level"]), found[2 * a0 : 2 * a1].reshape(a1 - a0, 2), nk, ny, cap)
            self.big[slot] = self.cls._counts_state(self.layout, k, wts, level)  # counts: checked by _known

    def _add(self, runs: tuple) -> None:
        if runs[0].size == 0:
            return
        self.pending.append(runs)
        self.pending_size += runs[0].size
        self._bounds = None
        if self.pending_size > max(self.PENDING, self.merged[0].size):
            self._consolidate()

    def _consolidate(self) -> None:
        if not self.pending:
            return
        parts = [self.merged] + self.pending
        v = self.values
        slot, key, totals = _runs(v, np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]), v.concat([p[2] for p in parts]))
        self.pending, self.pending_size = [], 0
        counts = np.bincount(slot) if slot.size else np.zeros(0, np.int64)
        over = counts > self.layout.capacity
        if self.big:
            known = np.fromiter(self.big, dtype=np.int64)
            over[known[known < over.size]] = True
        if over.any():
            bounds = np.concatenate(([0], np.cumsum(counts)))
            for s_ in np.flatnonzero(over).tolist():
                a, b = int(bounds[s_]), int(bounds[s_ + 1])
                state = self._state_of(key[a:b], v.take(totals, slice(a, b)))
                old = self.big.get(s_)
                self.big[s_] = state if old is None else old.merge(state)
            keep = ~over[slot]
            slot, key, totals = slot[keep], key[keep], v.take(totals, keep)
        self.merged = (slot, key, totals)
        self._bounds = None

    def _state_of(self, keys: np.ndarray, totals: Any) -> State:
        """The canonical state of one slot's exact bins (any number of them)."""
        pos, neg = self.values.labels(totals)
        if keys.size <= self.layout.capacity:
            return self.cls._make(self.layout, keys, pos, neg, 0)
        if not self.weighted:
            k, w, level = canonical_bins(keys, np.stack((neg, pos)).T, 0, self.layout.capacity)
            return self.cls._from_weights(self.layout, k, w, level)
        k, _, level = canonical_bins(keys, np.zeros((keys.size, 1)), 0, self.layout.capacity)
        to = np.searchsorted(k, keys >> np.int64(level))
        return self.cls._exact_state(self.layout, k, level, raw_regroup([(neg, 2 * to), (pos, 2 * to + 1)], 2 * k.shape[0]))

    def merge(self, other: "Stack", slots: np.ndarray, size: int) -> None:
        assert isinstance(other, DistributionStack)
        for part in [other.merged] + other.pending:
            if part[0].size:
                self._add((slots[part[0]],) + part[1:])
        for s_, state in other.big.items():
            to = int(slots[s_])
            old = self.big.get(to)
            self.big[to] = state if old is None else old.merge(state)
        self._bounds = None

    def state(self, slot: int) -> State:
        self._consolidate()
        if slot in self.big:
            return self.big[slot]
        s_, key, totals = self.merged
        if self._bounds is None:
            self._bounds = np.searchsorted(s_, np.arange(int(s_[-1]) + 2 if s_.size else 1))
        if slot + 1 >= self._bounds.shape[0]:
            return self.cls.zero(self.layout)
        a, b = int(self._bounds[slot]), int(self._bounds[slot + 1])
        return self._state_of(key[a:b], self.values.take(totals, slice(a, b)))

    def exact_bins(self, slots: list[int]) -> list:
        """Per slot of ``slots``: the ``(pos, neg)`` float64 totals of its bins in ascending key
        order, the arrays :meth:`state` gives an exact slot's state (unweighted rows in the merged
        runs); None for a slot whose state is to be read (weighted, or held as its own state)."""
        if self.weighted:
            return [None] * len(slots)
        self._consolidate()
        s_, _, totals = self.merged
        if self._bounds is None:
            self._bounds = np.searchsorted(s_, np.arange(int(s_[-1]) + 2 if s_.size else 1))
        bounds, big, top = self._bounds.tolist(), self.big, self._bounds.shape[0] - 1
        pos, neg = totals[:, 1].astype(np.float64), totals[:, 0].astype(np.float64)
        empty = np.zeros(0)
        out: list = []
        for slot in slots:
            if slot in big:
                out.append(None)
            elif slot >= top:
                out.append((empty, empty))
            else:
                a, b = bounds[slot], bounds[slot + 1]
                out.append((pos[a:b], neg[a:b]))
        return out

    def empty(self) -> "DistributionStack":
        return DistributionStack(self.cls, self.layout, self.weighted)

    def copy(self) -> "DistributionStack":
        out = DistributionStack(self.cls, self.layout, self.weighted)
        out.merged, out.pending, out.pending_size, out.big = self.merged, list(self.pending), self.pending_size, dict(self.big)
        return out


class CountsOfCells(Stack):
    """Example counts read from another :class:`CellStack` of the same block: each row is in
    exactly one of its cells, so a slot's row count and weight sum are its cells' sums (one
    ``np.bincount`` per batch fewer)."""

    def __init__(self, cls: type[State], layout: Any, source: CellStack):
        super().__init__(cls, layout)
        self.source = source

    def fold(self, batch: Batch, pos: np.ndarray | None, slots: np.ndarray, size: int, cache: dict) -> None:
        pass  # the source folds the rows

    def merge(self, other: "Stack", slots: np.ndarray, size: int) -> None:
        pass  # the source merges them

    def state(self, slot: int) -> State:
        src = self.source
        counts = src.counts[slot] if slot < src.counts.shape[0] else np.zeros(src.ncells, np.int64)
        weights = None
        if src.weighted:
            c = src.ncells
            ok = src.weights is not None and src.weights.shape[0] >= (slot + 1) * c
            weights = src.weights.take(np.arange(slot * c, (slot + 1) * c)) if ok else ExactSums.zeros((c,))
        return self.cls.from_cells(self.layout, np.array([counts.sum()]), None if weights is None else weights.regroup(np.zeros(weights.shape[0], np.int64), 1))

    def empty(self) -> "CountsOfCells":
        return CountsOfCells(self.cls, self.layout, self.source)

    def copy(self) -> "CountsOfCells":
        return CountsOfCells(self.cls, self.layout, self.source)


def link_counts(stacks: list[Stack]) -> list[Stack]:
    """``stacks`` with the example-count stack reading its counts from another cell stack of the
    same list, when there is one (see :class:`CountsOfCells`)."""
    source = next((s for s in stacks if isinstance(s, CellStack) and s.cls is not ExampleCountState), None)
    if source is None:
        return stacks
    return [CountsOfCells(s.cls, s.layout, source) if s.cls is ExampleCountState and isinstance(s, (CellStack, CountsOfCells)) else s for s in stacks]


def link_buckets(stacks: list[Stack]) -> list[Stack]:
    """``stacks`` with each plan state of the first half read from its bucket-stacked sums in
    the second half (the stacked form of ``ci="bootstrap"``, :class:`mergeable_metrics.uncertainty.bootstrap.BucketedPlan`:
    state ``i`` and its per-bucket form ``S + i``), where that stack can give it
    (``point_stack``); other lists unchanged."""
    n = len(stacks) // 2
    out = list(stacks)
    for i in range(n):
        src = stacks[n + i]
        if getattr(src, "sums_of", None) == (stacks[i].cls, stacks[i].layout):
            out[i] = src.point_stack()  # type: ignore[attr-defined]
    return out


def make_stack(cls: type[State], layout: Any, weighted: bool, elements_are_rows: bool) -> Stack:
    """The stack of one plan state: vectorised where the kind supports it (a kind may name its
    own :class:`Stack` class as ``STACK``)."""
    own = getattr(cls, "STACK", None)
    if own is not None:
        return own(cls, layout)
    if cls.num_cells(layout) is not None and (elements_are_rows or cls is not ExampleCountState):
        return CellStack(cls, layout, weighted)
    if issubclass(cls, ScoreDistributionState):
        return DistributionStack(cls, layout, weighted)
    return StateStack(cls, layout)


def check_same_states(mine: tuple, theirs: tuple) -> None:
    """Raise ``ValueError`` unless two plans' ``(state class, layout)`` pairs are equal, with the
    message a state merge gives (the kinds, or the differing layout setting)."""
    if len(mine) != len(theirs):
        raise ValueError(
            f"cannot merge state tuples of different plans ({len(mine)} vs {len(theirs)} states: {[c.kind for c, _ in mine]} vs {[c.kind for c, _ in theirs]})"
        )
    for (a, la), (b, lb) in zip(mine, theirs):
        if a is not b or la != lb:
            a.zero(la).merge(b.zero(lb))  # raises ValueError naming the kind or the setting
            raise ValueError(f"cannot merge state {b.kind!r} into {a.kind!r}")  # pragma: no cover


#: the column name of the bootstrap bucket in the keys of a bucketed :class:`SliceBlock`
BUCKET = "__bootstrap_bucket__"


def bucket_keys(keys: Sequence[tuple], buckets: int) -> list[tuple]:
    """``[key + ((BUCKET, b),)]`` for every key and bucket, key-major (index ``k * B + b``)."""
    tags = [((BUCKET, b),) for b in range(buckets)]
    return [k + t for k in keys for t in tags]


class SliceBlock:
    """The slices of one spec folded so far: keys, their slots, skipped rows and one stack per
    plan state."""

    def __init__(self, state_types: tuple, weighted: bool, buckets: int | None = None, roles: tuple[str, ...] | None = None):
        self.state_types = state_types
        self.weighted = weighted
        #: B when the keys are ``slice key + ((BUCKET, b),)``: the bootstrap's buckets of each slice
        self.buckets = buckets
        #: per state, the model it folds (see :class:`mergeable_metrics.uncertainty.comparison.PairedPlan`): ``"baseline"``
        #: states read the batch's :attr:`~mergeable_metrics.inputs.validation.Batch.baseline`; None: one model
        self.roles = roles
        self.keys: list[tuple] = []
        self.index: dict[tuple, int] = {}
        self.skipped = np.zeros(0, dtype=np.int64)
        self.stacks: list[Stack] | None = None
        #: (Arrow array of the text values of single-column slots, their slots, len(keys) then)
        self._values: tuple | None = None

    def _stacks(self, elements_are_rows: bool) -> list[Stack]:
        if self.stacks is None:
            self.stacks = link_buckets(link_counts([make_stack(cls, layout, self.weighted, elements_are_rows) for cls, layout in self.state_types]))
        elif not elements_are_rows and isinstance(self.stacks[0], (CellStack, CountsOfCells)):
            raise AssertionError("a block's rows are either images or rows")  # one evaluation: never both
        return self.stacks

    def slots(self, keys: Sequence[tuple], present: np.ndarray) -> np.ndarray:
        """Slot of each key (new keys get new slots; -1 where not ``present``)."""
        if isinstance(keys, ValueKeys):
            return self._value_slots(keys, present)
        index = self.index
        got = list(map(index.get, keys))
        if None in got:
            for i in np.flatnonzero(present).tolist():
                if got[i] is None:
                    k = keys[i]
                    got[i] = index[k] = len(self.keys)
                    self.keys.append(k)
        out = np.array([-1 if s is None else s for s in got] if None in got else got, dtype=np.int64)
        out[~present] = -1
        return out

    def _value_slots(self, keys: ValueKeys, present: np.ndarray) -> np.ndarray:
        """:meth:`slots` of the keys of an Arrow dictionary: one hash lookup of the dictionary in
        the values of this block's slots (``pyarrow.compute.index_in``); only new values become
        Python keys."""
        import pyarrow as pa
        import pyarrow.compute as pc

        d = keys.coded.dictionary
        if self._values is None or self._values[2] != len(self.keys) or self._values[0].type != d.type:
            text = [(k[0][1], s) for s, k in enumerate(self.keys) if type(k[0][1]) is str]
            self._values = (pa.array([v for v, _ in text], type=d.type), np.array([s for _, s in text], dtype=np.int64), len(self.keys))
        values, value_slots, _ = self._values
        got = pc.index_in(d, value_set=values)
        ids = got.to_numpy(zero_copy_only=False)  # float64 with NaN where not found (when any is not)
        found = ~np.isnan(ids) if ids.dtype.kind == "f" else np.ones(ids.size, dtype=bool)
        ids = np.where(found, ids, -1).astype(np.int64) if ids.dtype.kind == "f" else ids.astype(np.int64)
        out = np.full(len(keys), -1, dtype=np.int64)
        out[: ids.size][found] = value_slots[ids[found]]
        new = ~found & present[: ids.size]
        if new.any():
            fresh = d.filter(pa.array(new))
            start = len(self.keys)
            for v in fresh.to_pylist():
                k = ((keys.column, v),)
                self.index[k] = len(self.keys)
                self.keys.append(k)
            slots_new = np.arange(start, len(self.keys), dtype=np.int64)
            out[: ids.size][new] = slots_new
            self._values = (pa.concat_arrays([values, fresh]), np.concatenate([value_slots, slots_new]), len(self.keys))
        if keys.coded.has_null and present[-1]:
            k = ((keys.column, None),)
            s = self.index.get(k)
            if s is None:
                s = self.index[k] = len(self.keys)
                self.keys.append(k)
                if self._values is not None:
                    self._values = self._values[:2] + (len(self.keys),)
            out[-1] = s
        out[~present] = -1
        return out

    def fold(
        self, batch: Batch | None, pos: np.ndarray | None, codes: np.ndarray, keys: Sequence[tuple], skipped: np.ndarray, cache: dict | None = None
    ) -> None:
        """Fold the pairs ``(pos[i], codes[i])`` (batch element, slice index into ``keys``) and
        ``skipped[k]`` invalid rows of each key. ``cache``: shared by the blocks folding the
        same batch (per-row cells and score keys are computed once)."""
        if pos is None and isinstance(keys, ValueKeys) and codes is keys.coded.codes:
            present = np.ones(len(keys), dtype=bool)  # every row's code of the batch's own dictionary: each value occurs
        else:
            present = skipped > 0
            if codes.size:
                present |= np.bincount(codes, minlength=len(keys)) > 0
        slot_of = self.slots(keys, present)
        size = len(self.keys)
        if skipped.any():
            self.skipped = _grow(self.skipped, size)
            np.add.at(self.skipped, slot_of[skipped > 0], skipped[skipped > 0])
        if batch is None or codes.size == 0:
            return
        slots = slot_of[codes]
        cache = {} if cache is None else cache
        stacks = self._stacks(batch.row_of is None)
        if self.roles is None:
            for stack in stacks:
                stack.fold(batch, pos, slots, size, cache)
            return
        for stack, role in zip(stacks, self.roles):  # the baseline's stacks: its own batch and cache
            if role == "baseline":
                stack.fold(batch.baseline, pos, slots, size, cache.setdefault("baseline", {}))
            else:
                stack.fold(batch, pos, slots, size, cache)

    def fold_one(self, batch: Batch | None, key: tuple, skipped: int, cache: dict | None = None) -> None:
        """Fold every element of ``batch`` (None: no elements) and ``skipped`` invalid rows into
        the one slice ``key``: :meth:`fold` with every element's code 0 and ``keys=[key]``, without
        the per-element codes (a block of cell stacks counts the cells by one ``np.bincount``; the
        overall slice's fold)."""
        present = np.array([skipped > 0 or (batch is not None and batch.n > 0)])
        slot = int(self.slots([key], present)[0])
        if slot < 0:
            return
        size = len(self.keys)
        if skipped:
            self.skipped = _grow(self.skipped, size)
            self.skipped[slot] += skipped
        if batch is None or batch.n == 0:
            return
        cache = {} if cache is None else cache
        stacks = self._stacks(batch.row_of is None)
        every: np.ndarray | None = None
        for stack, role in zip(stacks, self.roles or (None,) * len(stacks)):
            b, c = (batch.baseline, cache.setdefault("baseline", {})) if role == "baseline" else (batch, cache)
            if isinstance(stack, (CellStack, CountsOfCells)):
                stack.fold(b, None, slot, size, c)  # type: ignore[arg-type]  # a scalar slot: one bincount of the cells
                continue
            if every is None:
                every = np.full(batch.n, slot, dtype=np.int64)
            stack.fold(b, None, every, size, c)

    def merge(self, other: "SliceBlock") -> None:
        """Add every slice of ``other`` (left unchanged) into this block.

        Raises:
            ValueError: the blocks hold other states (kinds or layouts: the evaluations' metrics
                or settings differ), named as :meth:`mergeable_metrics.states.base.State.merge` names them.
        """
        check_same_states(self.state_types, other.state_types)
        if self.buckets != other.buckets:
            raise ValueError(f"cannot merge slice blocks of {self.buckets} and {other.buckets} bootstrap buckets (ci_buckets)")
        slot_of = self.slots(other.keys, np.ones(len(other.keys), dtype=bool))
        size = len(self.keys)
        if other.skipped.any():
            self.skipped = _grow(self.skipped, size)
            n = min(other.skipped.shape[0], len(other.keys))
            np.add.at(self.skipped, slot_of[:n], other.skipped[:n])
        if other.stacks is None:
            return
        if self.stacks is None:
            self.stacks = link_buckets(link_counts([s.empty() for s in other.stacks]))
        for mine, theirs in zip(self.stacks, other.stacks):
            mine.merge(theirs, slot_of, size)

    def holds(self, key: tuple) -> bool:
        """Whether the block holds slice ``key`` (of any bucket, for a bucketed block)."""
        if self.buckets is None:
            return key in self.index
        return any(key + ((BUCKET, b),) in self.index for b in range(self.buckets))

    def bucketed_items(self) -> list[tuple[tuple, tuple[State, ...]]]:
        """``[(slice key, bucketed states)]``: per slice, the states of its B buckets, bucket-major
        (zero states for buckets no row reached; see :class:`mergeable_metrics.uncertainty.bootstrap.BucketedPlan`)."""
        assert self.buckets is not None
        zero = tuple(cls.zero(layout) for cls, layout in self.state_types)
        groups: dict[tuple, list] = {}
        for key, states in self.items():
            g = groups.setdefault(key[:-1], [zero] * self.buckets)
            g[key[-1][1]] = states
        return [(k, tuple(s for t in g for s in t)) for k, g in groups.items()]

    def slot_states(self, slot: int) -> tuple[State, ...]:
        """The tuple of states of one slot (as :meth:`items` gives it)."""
        if self.stacks is None:
            states = tuple(cls.zero(layout) for cls, layout in self.state_types)
        else:
            states = tuple(s.state(slot) for s in self.stacks)
        k = int(self.skipped[slot]) if slot < self.skipped.shape[0] else 0
        if k:
            states = (states[0].merge(ExampleCountState.skipped_rows(k)),) + states[1:]
        return states

    def items(self) -> list[tuple[tuple, tuple[State, ...]]]:
        """``[(slice key, tuple of states)]`` of every slot."""
        return [(key, self.slot_states(slot)) for slot, key in enumerate(self.keys)]

    def copy(self) -> "SliceBlock":
        out = SliceBlock(self.state_types, self.weighted, self.buckets, self.roles)
        out.keys = list(self.keys)
        out.index = dict(self.index)
        out.skipped = self.skipped.copy()
        out.stacks = None if self.stacks is None else link_buckets(link_counts([s.copy() for s in self.stacks]))
        out._values = self._values
        return out
