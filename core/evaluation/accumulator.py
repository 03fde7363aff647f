"""The accumulator of an :class:`mergeable_metrics.Evaluation`, and the operations every engine runs on it.

:class:`Accumulator` is an opaque, read-only value: every slice's states (the slices of a spec
folded together, with a leading slice axis) plus the evaluation's fingerprint; it always holds the
overall slice ``()``. Its read methods are :meth:`~Accumulator.slices`,
:meth:`~Accumulator.states` (``acc[key]``), :meth:`~Accumulator.items` and
:meth:`~Accumulator.stacked` (the arrays with the leading slice axis); only the operations below
change it. :class:`AccumulatorOps` (a base of ``Evaluation``) holds the engine-facing operations: ``zero``, ``fold`` (per batch, in place), ``merge`` (a new
accumulator) and ``merge_into`` (in place), ``merge_all``, ``encode`` /
``decode`` to ship partial accumulators (and, through :attr:`~AccumulatorOps.slice_codec`, one
slice's tuple of states: ``slice_codec.encode(states)`` / ``slice_codec.decode(data)``), and
the fingerprint checks that keep accumulators of differently configured evaluations apart.

The merge convention (the same for states, plans, evaluations, slice profiles and metric
collections): ``merge`` is pure, it returns a new object and leaves both inputs unchanged;
``merge_into`` mutates its first argument (or ``self``) and returns it, for engines that merge
many partial accumulators into one. ``fold`` of an accumulator mutates and returns it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Iterable

import numpy as np

from mergeable_metrics.states import codec
from mergeable_metrics.inputs.validation import Batch
from mergeable_metrics.uncertainty.bootstrap import element_buckets
from mergeable_metrics.slicing.grouped import CellStack, CountsOfCells, DistributionStack, SliceBlock, bucket_keys
from mergeable_metrics.slicing.assign import OVERALL, assign_slices, slice_name
from mergeable_metrics.collection.stacked import CELL_KINDS, LazyStates, stack_fields
from mergeable_metrics.states.base import BinaryConfusionState, ExampleCountState

if TYPE_CHECKING:
    from mergeable_metrics.evaluation.columns import ColumnMap
    from mergeable_metrics.collection.plan import Plan

__all__ = ["Accumulator", "AccumulatorOps", "SliceCodec"]


class Accumulator:
    """The partial result of an :class:`~mergeable_metrics.evaluation.evaluation.Evaluation`: every slice's states, plus
    ``fingerprint``, the settings of the evaluation that filled it (see
    :attr:`Evaluation.fingerprint <mergeable_metrics.evaluation.evaluation.Evaluation.fingerprint>`; None when unknown).

    An opaque, read-only value for its users: it is made by :meth:`Evaluation.zero`,
    :meth:`~mergeable_metrics.evaluation.evaluation.Evaluation.fold`, :meth:`~mergeable_metrics.evaluation.evaluation.Evaluation.merge` /
    :meth:`~mergeable_metrics.evaluation.evaluation.Evaluation.merge_into` and
    :meth:`~mergeable_metrics.evaluation.evaluation.Evaluation.decode`, which check the fingerprint, so
    accumulators of differently configured evaluations never mix; nothing writes to it through
    its read methods.

    Inside, :meth:`Evaluation.fold <mergeable_metrics.evaluation.evaluation.Evaluation.fold>` keeps each slice spec's
    slices in a :class:`mergeable_metrics.slicing.grouped.SliceBlock` (the spec's slice keys, and states with a leading
    slice axis: every slice of the spec folded in one vectorised pass); the overall slice, and
    slices decoded or built from a mapping, are tuples of states. The read methods give each
    slice's tuple of states (a block's slots become tuples of states the first time they are read,
    merged with a tuple already held for the slice).

    Read methods: :meth:`slices` (every slice key), :meth:`states` (one slice's tuple of states;
    also ``acc[key]``), :meth:`items`, :meth:`stacked` (every slice's cell states as arrays with a
    leading slice axis, read from the blocks), ``key in acc``, ``len(acc)``, equality (the same
    slices with equal states, also against a plain mapping), :meth:`copy`. It is not a mapping:
    ``iter(acc)`` raises ``TypeError`` (iterate :meth:`slices`), and it has no writing methods.

    Args:
        states: ``{slice_key: tuple_of_states}`` to start from (copied; e.g. a per-slice fold's
            result, or an engine's per-slice partial states).
        fingerprint: the evaluation's fingerprint.
    """

    __slots__ = ("fingerprint", "_states", "_blocks")

    def __init__(self, states: Mapping[tuple, tuple] | Iterable[tuple[tuple, tuple]] = (), fingerprint: dict[str, Any] | None = None):
        self.fingerprint = fingerprint
        self._states: dict[tuple, tuple] = dict(states.items() if isinstance(states, (Accumulator, Mapping)) else states)
        self._blocks: dict[tuple[str, ...], SliceBlock] = {}

    # -- read ------------------------------------------------------------------------------
    def slices(self) -> list[tuple]:
        """Every slice key held, in the order the slices were first held (the overall slice
        ``()`` first in what ``zero``, ``fold``, ``merge`` and ``decode`` give)."""
        return list(self._materialized())

    def states(self, key: tuple) -> tuple:
        """The tuple of states of slice ``key`` (the plan's kinds, in its order).

        Raises:
            KeyError: the accumulator holds no such slice.
        """
        try:
            return self._materialized()[key]
        except KeyError:
            raise KeyError(f"the accumulator holds no slice {slice_name(key)!r} ({key!r})") from None
        except TypeError:
            raise KeyError(f"a slice key is a tuple of (column, value) pairs, got {key!r}") from None

    __getitem__ = states

    def stacked(self) -> tuple[list[tuple], dict[str, dict[str, np.ndarray]]] | None:
        """Every slice's states as arrays with a leading slice axis, read from the blocks' tables
        without building per-slice state objects: ``(keys, {kind: {field: (R, ...) array}})``,
        row ``i`` holding slice ``keys[i]``'s fields, equal bit for bit to
        :func:`mergeable_metrics.collection.stacked.stack_fields` of :meth:`items`' states (the input of
        :func:`mergeable_metrics.collection.stacked.compute_fields`).

        Only the cell state kinds stack this way (example counts, binary confusion counts,
        confusion matrices): None when a slice holds another kind, weighted rows (exact weight
        sums), bootstrap buckets or a baseline model's states (read :meth:`items` then).
        A slice both held and in a block (the overall slice: held from :meth:`zero`, folded in a
        block) is the sum of both rows: whole numbers below 2**53, added exactly as the states' merge
        adds them (else None).
        """
        got = self._stacked(lazy=False)
        return None if got is None else (got[0], got[1])

    def _stacked(self, lazy: bool) -> tuple[list[tuple], dict[str, dict[str, np.ndarray]], LazyStates] | None:
        """:meth:`stacked`, and the slices' states as a :class:`~mergeable_metrics.collection.stacked.LazyStates`
        (row ``i``: slice ``keys[i]``'s tuple of states, built when read, as :meth:`items` builds
        it). ``lazy``: the other state kinds are allowed too (left out of the fields; their
        states and exact score-distribution bins are read through the ``LazyStates``)."""
        held = self._states
        parts: list[tuple[list[tuple], dict[str, dict[str, np.ndarray]], Any]] = []
        for block in self._blocks.values():
            if block.buckets is not None or block.roles is not None or block.weighted:
                return None
            fields = _block_fields(block, lazy)
            if fields is None:
                return None
            shared = [k for k in held if k in block.index]
            if shared:  # a slice both held and in a block: its tuple is their merge
                if not _add_held(fields, block.state_types, [block.index[k] for k in shared], [held[k] for k in shared]):
                    return None
                held = {k: v for k, v in held.items() if k not in block.index}
            parts.append((list(block.keys), fields, block))
        if held:
            first = next(iter(held.values()))
            types = tuple((type(s), s.layout) for s in first)
            if not lazy and any(cls.kind not in CELL_KINDS for cls, _ in types):
                return None
            parts.insert(0, (list(held), stack_fields(types, list(held.values())), list(held.values())))
        if not parts:
            return [], {}, LazyStates(0, lambda i: ())
        kinds = parts[0][1]
        if any(p[1].keys() != kinds.keys() for p in parts):
            return None
        keys = [k for p in parts for k in p[0]]
        lazy_states = _lazy_states([(len(p[0]), p[2]) for p in parts])
        if len(parts) == 1:
            return keys, parts[0][1], lazy_states
        return keys, {kind: {name: np.concatenate([p[1][kind][name] for p in parts]) for name in kinds[kind]} for kind in kinds}, lazy_states

    def items(self) -> list[tuple[tuple, tuple]]:
        """``[(slice_key, tuple_of_states)]`` of every slice (the order of :meth:`slices`)."""
        return list(self._materialized().items())

    def __contains__(self, key: object) -> bool:
        try:
            return key in self._materialized()
        except TypeError:  # an unhashable key is no slice key
            return False

    def __len__(self) -> int:
        return len(self._materialized())

    def __iter__(self) -> Any:
        raise TypeError("an Accumulator is not a mapping: iterate acc.slices() (the slice keys) or acc.items()")

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Accumulator):
            return self._materialized() == other._materialized()
        if isinstance(other, Mapping):
            return self._materialized() == dict(other.items())
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def copy(self) -> "Accumulator":
        """An independent copy (same fingerprint): folding or merging into either leaves the
        other unchanged."""
        out = Accumulator(self._states, self.fingerprint)
        out._blocks = {k: b.copy() for k, b in self._blocks.items()}
        return out

    def __reduce__(self) -> tuple:
        return (Accumulator, (self.items(), self.fingerprint))

    def __repr__(self) -> str:
        return f"Accumulator(slices={len(self)}, fingerprint={'set' if self.fingerprint else None})"

    # -- internals of AccumulatorOps (the fold and the merges) -----------------------------
    def _materialized(self) -> dict[tuple, tuple]:
        """The per-slice tuples of states, the blocks turned into them first."""
        if self._blocks:
            blocks, self._blocks = self._blocks, {}
            held = self._states
            for block in blocks.values():
                for key, states in block.items() if block.buckets is None else block.bucketed_items():
                    old = held.get(key)
                    held[key] = states if old is None else tuple(x.merge(y) for x, y in zip(old, states))
        return self._states

    def _block(self, spec: tuple[str, ...], state_types: tuple, weighted: bool, buckets: int | None = None, roles: tuple[str, ...] | None = None) -> SliceBlock:
        """The block of a spec's slices (created empty); ``buckets``: the bootstrap's (see
        :class:`mergeable_metrics.uncertainty.bootstrap.BucketedPlan`); ``roles``: see :attr:`mergeable_metrics.slicing.grouped.SliceBlock.roles`."""
        b = self._blocks.get(spec)
        if b is None:
            b = self._blocks[spec] = SliceBlock(state_types, weighted, buckets, roles)
        return b

    def _held(self, key: tuple) -> tuple | None:
        """The tuple of states held for ``key`` outside the blocks (None: none)."""
        return self._states.get(key)

    def _put(self, key: tuple, states: tuple) -> None:
        """Replace the tuple of states held for ``key`` outside the blocks (what the blocks hold
        of the slice is merged into it when read)."""
        self._states[key] = states


#: whole numbers up to this add exactly in float64 (and in int64)
_WHOLE = float(2**53)


def _add_held(fields: dict[str, dict[str, np.ndarray]], state_types: tuple, rows: list[int], states: list[tuple]) -> bool:
    """Add the held ``states`` of some slices into their ``rows`` of a block's ``fields`` (in
    place), as the merge of their states adds them; False (nothing changed) unless every value
    involved, and every sum, is a whole number below 2**53 (then float64 and the exact sums of a
    merge give the same number) and the held states are the block's kinds and layouts."""
    types = tuple((type(s), s.layout) for s in states[0])
    if types != tuple(state_types) or list(fields) != [cls.kind for cls, _ in types] or any(tuple((type(s), s.layout) for s in t) != types for t in states):
        return False
    theirs = stack_fields(types, states)
    at = np.asarray(rows, dtype=np.int64)
    sums = {}
    for kind, f in fields.items():
        for name, a in f.items():
            b = theirs[kind][name]
            total = a[at] + b
            for x in (a[at], b, total):
                if not (np.all(np.abs(x) < _WHOLE) and (x.dtype.kind != "f" or np.all(x == np.floor(x)))):
                    return False
            sums[kind, name] = total
    for (kind, name), total in sums.items():
        fields[kind][name][at] = total
    return True


def _lazy_states(parts: list[tuple[int, Any]]) -> LazyStates:
    """The :class:`~mergeable_metrics.collection.stacked.LazyStates` of :meth:`Accumulator._stacked`'s rows:
    ``parts`` in row order, each ``(rows, source)``: a list of held state tuples, or a
    :class:`~mergeable_metrics.slicing.grouped.SliceBlock` (its slots in order)."""
    starts = np.cumsum([0] + [n for n, _ in parts]).tolist()
    r = starts[-1]

    def locate(i: int) -> tuple[Any, int]:
        j = int(np.searchsorted(starts, i, side="right")) - 1
        return parts[j][1], i - starts[j]

    def states(i: int) -> tuple:
        source, at = locate(i)
        return source[at] if isinstance(source, list) else source.slot_states(at)

    def exact_bins(kind: str) -> list:
        out: list = []
        for n, source in parts:
            if isinstance(source, list) or source.stacks is None:
                out += [None] * n
                continue
            stack = next((s for s in source.stacks if s.cls.kind == kind), None)
            out += stack.exact_bins(list(range(n))) if isinstance(stack, DistributionStack) else [None] * n
        return out

    return LazyStates(r, states, exact_bins)


def _block_fields(block: SliceBlock, lazy: bool = False) -> dict[str, dict[str, np.ndarray]] | None:
    """``{kind: {field: (slots, ...) array}}`` of an unweighted block of cell states, from its
    (slots, cells) row counts as :meth:`mergeable_metrics.states.base.State.from_cells` builds one slot's state
    (the skipped rows in the example counts, as :meth:`mergeable_metrics.slicing.grouped.SliceBlock.items` adds
    them); None when a stack is not a table of cells (``lazy``: such kinds are left out)."""
    n = len(block.keys)
    out: dict[str, dict[str, np.ndarray]] = {}
    for i, (cls, layout) in enumerate(block.state_types):
        stack = None if block.stacks is None else block.stacks[i]
        if cls.kind not in CELL_KINDS or not (stack is None or isinstance(stack, (CellStack, CountsOfCells))):
            if lazy and cls.kind not in CELL_KINDS:
                continue
            return None
        source = stack.source if isinstance(stack, CountsOfCells) else stack
        width = cls.num_cells(layout) if source is None else source.ncells
        counts = np.zeros((n, width), dtype=np.int64)
        if source is not None:
            m = min(n, source.counts.shape[0])
            counts[:m] = source.counts[:m]
        if cls is ExampleCountState:
            skipped = np.zeros(n, dtype=np.int64)
            m = min(n, block.skipped.shape[0])
            skipped[:m] = block.skipped[:m]
            count = counts.sum(axis=1)
            out[cls.kind] = {"count": count, "weight": count.astype(np.float64), "skipped": skipped}
        elif cls is BinaryConfusionState:
            t1 = len(layout.thresholds) + 1
            neg, pos = counts[:, :t1], counts[:, t1:]
            out[cls.kind] = {
                "tp": np.ascontiguousarray(np.cumsum(pos[:, ::-1], axis=1)[:, ::-1][:, 1:], dtype=np.float64),
                "fp": np.ascontiguousarray(np.cumsum(neg[:, ::-1], axis=1)[:, ::-1][:, 1:], dtype=np.float64),
                "tn": np.ascontiguousarray(np.cumsum(neg, axis=1)[:, :-1], dtype=np.float64),
                "fn": np.ascontiguousarray(np.cumsum(pos, axis=1)[:, :-1], dtype=np.float64),
            }
        else:  # the confusion matrix
            k = layout.num_classes
            out[cls.kind] = {"matrix": counts.astype(np.float64).reshape(n, k, k)}
    if block.skipped.any() and ExampleCountState.kind not in out:
        return None
    return out


class AccumulatorOps:
    """The accumulator operations of :class:`mergeable_metrics.Evaluation` (its base class).

    They read the evaluation's ``plan``, ``inputs`` (a :class:`~mergeable_metrics.evaluation.columns.ColumnMap`),
    ``slices``, ``on_invalid``, ``needs_profile``, the counting pass's ``_bounds`` and the
    ``_fingerprint`` (see :attr:`mergeable_metrics.Evaluation.fingerprint`).
    """

    plan: "Plan"
    inputs: "ColumnMap"
    slices: tuple
    on_invalid: str
    weight_col: str | None
    _bounds: dict
    _fingerprint: dict[str, Any]
    _profile: Any
    #: the bootstrap's buckets (``ci="bootstrap"``; None otherwise), its id column, and the plan
    #: whose states each bucket holds (``plan`` itself without buckets)
    _buckets: int | None = None
    _id_col: str | None = None
    _base_plan: "Plan"

    def _joint_fingerprint(self, *others: Any) -> dict[str, Any]:
        """The fingerprint of accumulators merged by this evaluation (see :attr:`fingerprint`).

        Raises:
            ValueError: naming the settings that differ.
        """
        out = self._fingerprint
        for fp in others:
            if fp is None or fp is out or fp == out:
                continue
            codec.check_fingerprint(
                {k: v for k, v in out.items() if k != "profile"},
                {k: v for k, v in fp.items() if k != "profile"},
                "the accumulators",
            )
            mine, theirs = out.get("profile"), fp.get("profile")
            if mine is None and self._profile is None:
                out = fp  # an unprofiled evaluation adopts the one profile of what it merges
            elif theirs is not None and theirs != mine:
                raise ValueError(
                    f"the accumulators belong to a different configuration: profile {mine!r} (here) != {theirs!r} "
                    "(the counting pass of max_slices / quantiles specs differs: fold every part with one profile)"
                )
        return out

    def zero(self) -> Accumulator:
        """A fresh accumulator: just the overall slice's zero states."""
        return Accumulator({OVERALL: self.plan.zero()}, self._fingerprint)

    def fold(self, acc: Accumulator, data: Any, row_offset: int = 0) -> Accumulator:
        """Fold one batch of rows into ``acc`` (mutated and returned).

        Args:
            acc: an accumulator from :meth:`zero`.
            data: dict of columns, pandas DataFrame, pyarrow RecordBatch/Table, or list of row dicts.
            row_offset: position of the batch's first row in the whole input (for messages).

        Raises:
            ValueError / TypeError: missing columns or invalid values (see
                :func:`mergeable_metrics.inputs.formats.make_batch`), unless ``on_invalid="skip"``; ``acc`` belongs
                to an evaluation of another :attr:`fingerprint`.
        """
        if isinstance(acc, Accumulator):
            acc.fingerprint = self._joint_fingerprint(acc.fingerprint)
        if self.needs_profile:
            spec = next(s for s in self.slices if s.needs_profile)
            raise ValueError(
                f"slice spec {str(spec)!r} needs a counting pass over all the data first (max_slices / quantiles): "
                "evaluation.with_profile(evaluation.profiler().profile(batches)), or use evaluate() or an engine"
            )
        cols, n = self.inputs.read(data, row_offset)
        if n == 0:
            return acc
        batch, invalid = self.inputs.batch(cols, row_offset, self.on_invalid)
        n_skipped = int(invalid.sum()) if invalid is not None else 0
        if self._buckets is not None and not self.plan.stacked:
            return self._fold_bucketed(acc, cols, n, batch, invalid if n_skipped else None, n_skipped, row_offset)
        specs = [(spec, assign_slices(spec, cols, n, self._bounds.get(spec), row_offset)) for spec in self.slices]
        if self._buckets is not None:  # the stacked bootstrap: every element carries its bucket
            eb = self._element_buckets(cols, n, batch, invalid if n_skipped else None, [a for _, a in specs], row_offset)
            baseline = None if batch.baseline is None else dataclasses.replace(batch.baseline, bucket=eb)
            batch = dataclasses.replace(batch, bucket=eb, baseline=baseline)
        weighted = self.weight_col is not None
        types, roles = self._block_types()
        cache: dict = {}  # per-row cells and score keys, shared by the specs' blocks
        if isinstance(acc, Accumulator) and self._overall_in_block(types, roles, batch):
            # the overall slice as a block of one slot: its cells counted by one bincount (the
            # same state, bit for bit: State.from_cells), no per-batch state objects
            acc._block(OVERALL, types, weighted).fold_one(batch if batch.n else None, OVERALL, n_skipped, cache)
        else:
            self._fold_into(acc, OVERALL, batch, n_skipped)
        for spec, assigned in specs:
            # (batch element, slice) pairs: pixels of maps, or rows left after ignore_index, via row_of
            pos, codes, skipped = assigned.pairs(n, invalid if n_skipped else None, batch.row_of)
            if isinstance(acc, Accumulator):  # every slice of the spec in one vectorised pass
                acc._block(spec.columns, types, weighted, roles=roles).fold(batch if batch.n else None, pos, codes, assigned.keys, skipped, cache)
                continue
            for g, idx in enumerate(assigned.groups(n, invalid if n_skipped else None, batch.row_of)[0]):  # a plain dict
                if idx.size or skipped[g]:
                    self._fold_into(acc, assigned.keys[g], batch.take(idx) if idx.size else None, int(skipped[g]))
        return acc

    def _fold_bucketed(self, acc: Accumulator, cols: dict, n: int, batch: Batch, invalid: Any, n_skipped: int, row_offset: int) -> Accumulator:
        """:meth:`fold` of ``ci="bootstrap"``: every slice (the overall one included) is folded per
        bootstrap bucket, the bucket as one more slice dimension of the spec's block (slot index
        ``slice index * B + bucket``); skipped rows are counted in bucket 0."""
        if not isinstance(acc, Accumulator):  # a plain dict: fold into a fresh accumulator, then merge
            part = self._fold_bucketed(self.zero(), cols, n, batch, invalid, n_skipped, row_offset)
            for key, states in part.items():
                old = acc.get(key)
                acc[key] = states if old is None else self.plan.merge(old, states)
            return acc
        B = self._buckets
        assert B is not None
        types, weighted, roles = self._base_plan.state_types, self.weight_col is not None, getattr(self._base_plan, "roles", None)
        assigned = [(spec, assign_slices(spec, cols, n, self._bounds.get(spec), row_offset)) for spec in self.slices]
        eb = self._element_buckets(cols, n, batch, invalid, [a for _, a in assigned], row_offset)
        data = batch if batch.n else None
        cache: dict = {}
        skipped = np.zeros(B, dtype=np.int64)
        skipped[0] = n_skipped
        acc._block((), types, weighted, B, roles).fold(data, None, eb, bucket_keys([OVERALL], B), skipped, cache)
        for spec, a in assigned:
            pos, codes, sk = a.pairs(n, invalid, batch.row_of)
            bucketed_sk = np.zeros(len(a.keys) * B, dtype=np.int64)
            bucketed_sk[::B] = sk
            codes = codes * B + (eb if pos is None else eb[pos])
            acc._block(spec.columns, types, weighted, B, roles).fold(data, pos, codes, bucket_keys(a.keys, B), bucketed_sk, cache)
        return acc

    def _overall_in_block(self, types: tuple, roles: tuple[str, ...] | None, batch: Batch) -> bool:
        """Whether :meth:`fold` folds the overall slice into a one-slot block (key ``()``): every
        state a cell kind (counted per row cell, see :class:`mergeable_metrics.slicing.grouped.CellStack`),
        elements that are rows, one model and no bootstrap buckets."""
        return self._buckets is None and roles is None and batch.row_of is None and all(cls.kind in CELL_KINDS for cls, _ in types)

    def _block_types(self) -> tuple[tuple, tuple[str, ...] | None]:
        """``(state types, roles)`` of the slice blocks: the bucketed plan's in the stacked
        form of ``ci="bootstrap"`` (:class:`mergeable_metrics.uncertainty.bootstrap.BucketedPlan`), else the plan's."""
        if self._buckets is not None and self.plan.stacked:
            return self.plan.state_types, self.plan.roles
        return self._base_plan.state_types, getattr(self._base_plan, "roles", None)

    def _element_buckets(self, cols: dict, n: int, batch: Batch, invalid: Any, assigned: list, row_offset: int) -> np.ndarray:
        """(batch.n,) bootstrap bucket of each element (:func:`mergeable_metrics.uncertainty.bootstrap.element_buckets`):
        from ``id_col``, else from the row's content and its slice keys. A second model folded
        over the same rows must use these buckets too, so that its replicates are paired."""
        if not batch.n:
            return np.zeros(0, dtype=np.int64)
        return element_buckets(
            self._buckets, batch, n, invalid, ids=cols[self._id_col] if self._id_col else None, id_col=self._id_col,
            slice_codes=[(a.codes, a.keys) for a in assigned if a.rows is None], row_offset=row_offset,
        )  # fmt: skip

    def _fold_into(self, acc: Accumulator, key: tuple, batch: Batch | None, skipped: int) -> None:
        """Fold ``batch`` (None: no elements) and ``skipped`` invalid rows into slice ``key``."""
        states = acc._held(key) if isinstance(acc, Accumulator) else acc.get(key)  # the blocks stay as they are
        if states is None:
            states = self.plan.zero()
        if batch is not None:
            states = self.plan.fold(states, batch)
        if skipped:
            states = (states[0].merge(ExampleCountState.skipped_rows(skipped)),) + states[1:]
        if isinstance(acc, Accumulator):
            acc._put(key, states)
        else:  # a plain dict (the per-slice reference fold)
            acc[key] = states

    def merge(self, a: Accumulator, b: Accumulator) -> Accumulator:
        """The merge of ``a`` and ``b``: a new accumulator (both are left unchanged).

        Raises:
            ValueError: the accumulators come from evaluations of different configuration (a
                state layout or a :attr:`fingerprint` setting, named in the message).
        """
        return self.merge_into(a.copy(), b)

    def merge_into(self, a: Accumulator, b: Accumulator) -> Accumulator:
        """Merge ``b`` into ``a`` in place (``a`` is mutated and returned; ``b`` is left
        unchanged): the engines' form, e.g. a ``CombineFn``'s ``merge_accumulators``.

        Raises:
            ValueError: as :meth:`merge`.
        """
        fp = self._joint_fingerprint(getattr(a, "fingerprint", None), getattr(b, "fingerprint", None))
        if isinstance(a, Accumulator):
            a.fingerprint = fp
        if isinstance(a, Accumulator):
            if isinstance(b, Accumulator):
                for spec, block in b._blocks.items():  # slice by slice, vectorised; b is left unchanged
                    types, roles = self._block_types()
                    a._block(spec, types, self.weight_col is not None, None if self._buckets is None or self.plan.stacked else self._buckets, roles).merge(
                        block
                    )
            for key, states in b._states.items() if isinstance(b, Accumulator) else b.items():
                old = a._held(key)
                a._put(key, states if old is None else self.plan.merge(old, states))
            return a
        for key, states in b.items():  # a plain dict (the per-slice reference fold)
            old = a.get(key)
            a[key] = states if old is None else self.plan.merge(old, states)
        return a

    def merge_all(self, accs: Iterable[Accumulator]) -> Accumulator:
        """The merge of every accumulator of ``accs`` (a new accumulator; they are left unchanged)."""
        out = self.zero()
        for a in accs:
            self.merge_into(out, a)
        return out

    def encode(self, acc: Accumulator) -> bytes:
        """Versioned bytes with the :attr:`fingerprint` (see :mod:`mergeable_metrics.states.codec`); equal
        accumulators give equal bytes.

        Raises:
            ValueError: ``acc`` belongs to an evaluation of another fingerprint.
        """
        return codec._encode_accumulator(acc, self._joint_fingerprint(getattr(acc, "fingerprint", None)))

    def decode(self, data: bytes) -> Accumulator:
        """Inverse of :meth:`encode`: a checked accumulator of this evaluation.

        Checks the writer's fingerprint (bytes of the first codec version carry none: they are
        taken as this evaluation's unless its slices depend on a counting-pass profile, which
        such bytes cannot be checked against), that the overall slice is present and every other
        slice key belongs to one of the slice specs, that every slice's states are this plan's
        kinds and layouts, and their values (finite, non-negative counts, whole numbers without
        a weight column; see :meth:`mergeable_metrics.states.base.State.validate`).

        Raises:
            ValueError: corrupted or foreign bytes, or states of another configuration (naming
                the setting).
            TypeError: ``data`` is not bytes.
        """
        acc, theirs, version = codec._read_accumulator(data)
        if version == 1 and any(s.needs_profile for s in self.slices):
            raise ValueError(
                "accumulator bytes of codec version 1 carry no fingerprint, and this evaluation's slices "
                f"({', '.join(str(s) for s in self.slices if s.needs_profile)}) depend on a counting-pass profile they "
                "cannot be checked against: re-run the evaluation"
            )
        fp = self._joint_fingerprint(theirs)
        return self._checked(acc, fp, "accumulator bytes")

    def _checked(self, acc: dict, fp: dict[str, Any], what: str) -> Accumulator:
        if OVERALL not in acc:
            raise ValueError(f"{what}: the overall slice is missing (every accumulator has it)")
        specs = {s.columns for s in self.slices}
        integral = self.weight_col is None
        for key, states in acc.items():
            if key and tuple(c for c, _ in key) not in specs:
                raise ValueError(f"{what}: slice {slice_name(key)!r} is not a slice of this evaluation's specs {[str(s) for s in self.slices]}")
            try:
                self.plan.check(states, integral)
            except ValueError as e:
                raise ValueError(f"{what}: slice {slice_name(key)!r}: {e}") from None
        return Accumulator({OVERALL: acc[OVERALL], **{k: v for k, v in acc.items() if k != OVERALL}}, fp)

    @property
    def slice_codec(self) -> "SliceCodec":
        """The bytes of one slice's tuple of states, for engines that ship them per slice (Beam's
        per-slice path, Spark): ``ev.slice_codec.encode(states)`` / ``ev.slice_codec.decode(data)``.

        Unlike ``ev.plan.encode`` / ``ev.plan.decode`` (the plan's own fingerprint), the bytes
        carry this evaluation's :attr:`fingerprint` and are checked as :meth:`decode` checks a
        slice: the fingerprint rules of merging (an evaluation without a profile accepts the one
        profile of what it reads), the plan's kinds and layouts, and whole counts without a
        weight column.
        """
        return SliceCodec(self)


class SliceCodec:
    """One slice's tuple of states as bytes, for an evaluation (see
    :attr:`AccumulatorOps.slice_codec`); the bytes are a one-slice accumulator frame."""

    __slots__ = ("_ev",)

    def __init__(self, evaluation: AccumulatorOps) -> None:
        self._ev = evaluation

    def encode(self, states: tuple) -> bytes:
        """Versioned bytes of one slice's tuple of states with the evaluation's fingerprint."""
        return self._ev.plan.encode(states, self._ev._fingerprint)

    def decode(self, data: bytes) -> tuple:
        """Inverse of :meth:`encode`, checked as the evaluation's ``decode`` checks a slice.

        Raises:
            ValueError: corrupted bytes, another fingerprint (naming the settings), states of
                another plan, or values no data can produce.
        """
        ev = self._ev
        acc, theirs, _ = codec._read_accumulator(data)
        if list(acc) != [OVERALL]:
            raise ValueError("corrupted state tuple: expected a single slice")
        ev._joint_fingerprint(theirs)
        return ev._checked(acc, ev._fingerprint, "state bytes")[OVERALL]
