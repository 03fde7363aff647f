"""The accumulator of an :class:`core.Evaluation`, and the operations every engine runs on it.

:class:`Accumulator` is ``{slice_key: tuple_of_states}`` plus the evaluation's fingerprint; it
always holds the overall slice ``()``. :class:`AccumulatorOps` (a base of ``Evaluation``) holds
the engine-facing operations: ``zero``, ``fold`` (per batch, in place), ``merge`` (a new
accumulator) and ``merge_into`` (in place), ``merge_all``, ``encode_accumulator`` /
``decode_accumulator`` and ``encode_states`` / ``decode_states`` to ship partial states, and
the fingerprint checks that keep accumulators of differently configured evaluations apart.

The merge convention (the same for states, plans, evaluations, slice profiles and metric
collections): ``merge`` is pure, it returns a new object and leaves both inputs unchanged;
``merge_into`` mutates its first argument (or ``self``) and returns it, for engines that merge
many partial accumulators into one. ``fold`` of an accumulator mutates and returns it.
"""

from __future__ import annotations

import dataclasses

from typing import TYPE_CHECKING, Any, Iterable

import numpy as np

from core import codec
from core._inputs import Batch
from core.bootstrap import element_buckets
from core.grouped import SliceBlock, bucket_keys
from core.slicing import OVERALL, assign_slices, slice_name
from core.states import ExampleCountState

if TYPE_CHECKING:
    from core.columns import ColumnMap
    from core.plan import Plan

__all__ = ["Accumulator", "AccumulatorOps"]


class Accumulator(dict):
    """``{slice_key: tuple_of_states}`` plus ``fingerprint``: the settings of the evaluation that
    filled it (see :attr:`Evaluation.fingerprint`; None when unknown, e.g. a plain dict's copy).
    :meth:`Evaluation.merge`, :meth:`~Evaluation.fold`, :meth:`~Evaluation.finish` and the codec
    check it, so accumulators of differently configured evaluations never mix.

    :meth:`Evaluation.fold` keeps each slice spec's slices in a :class:`core.grouped.SliceBlock`
    (every slice of the spec folded in one vectorised pass, states with a leading slice axis);
    they become per-slice tuples of states (merged with any tuple already held for the slice)
    the first time the accumulator is read as a mapping.
    """

    def __init__(self, items: Any = (), fingerprint: dict[str, Any] | None = None):
        super().__init__(items)
        self.fingerprint = fingerprint
        self.blocks: dict[tuple[str, ...], SliceBlock] = {}

    def block(self, spec: tuple[str, ...], state_types: tuple, weighted: bool, buckets: int | None = None, roles: tuple[str, ...] | None = None) -> SliceBlock:
        """The block of a spec's slices (created empty); ``buckets``: the bootstrap's (see
        :class:`core.bootstrap.BucketedPlan`); ``roles``: see :attr:`core.grouped.SliceBlock.roles`."""
        b = self.blocks.get(spec)
        if b is None:
            b = self.blocks[spec] = SliceBlock(state_types, weighted, buckets, roles)
        return b

    def materialize(self) -> "Accumulator":
        """Turn the blocks into per-slice tuples of states (returns ``self``)."""
        if self.blocks:
            blocks, self.blocks = self.blocks, {}
            for block in blocks.values():
                for key, states in block.items() if block.buckets is None else block.bucketed_items():
                    old = dict.get(self, key)
                    dict.__setitem__(self, key, states if old is None else tuple(x.merge(y) for x, y in zip(old, states)))
        return self

    def copy(self) -> "Accumulator":
        out = Accumulator(dict.items(self), self.fingerprint)
        out.blocks = {k: b.copy() for k, b in self.blocks.items()}
        return out

    def __getitem__(self, key: Any) -> Any:
        return dict.__getitem__(self.materialize(), key)

    def get(self, key: Any, default: Any = None) -> Any:
        return dict.get(self.materialize(), key, default)

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self.materialize(), key)

    def __iter__(self) -> Any:
        return dict.__iter__(self.materialize())

    def __len__(self) -> int:
        return dict.__len__(self.materialize())

    def keys(self) -> Any:
        return dict.keys(self.materialize())

    def values(self) -> Any:
        return dict.values(self.materialize())

    def items(self) -> Any:
        return dict.items(self.materialize())

    def pop(self, key: Any, *default: Any) -> Any:
        return dict.pop(self.materialize(), key, *default)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Accumulator):
            other.materialize()
        return dict.__eq__(self.materialize(), other)

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    # mutators: the blocks first become per-slice states, so a write replaces what was folded
    def __setitem__(self, key: Any, value: Any) -> None:
        if any(b.holds(key) for b in self.blocks.values()):  # a slice a block holds (not e.g. the overall one)
            self.materialize()
        dict.__setitem__(self, key, value)

    def __delitem__(self, key: Any) -> None:
        dict.__delitem__(self.materialize(), key)

    def setdefault(self, key: Any, default: Any = None) -> Any:
        return dict.setdefault(self.materialize(), key, default)

    def update(self, *args: Any, **kwargs: Any) -> None:
        dict.update(self.materialize(), *args, **kwargs)

    def popitem(self) -> tuple:
        return dict.popitem(self.materialize())

    def clear(self) -> None:
        self.blocks = {}
        dict.clear(self)

    def __reversed__(self) -> Any:
        return dict.__reversed__(self.materialize())

    def __or__(self, other: Any) -> Any:
        return dict(self.items()) | other

    def __ror__(self, other: Any) -> Any:
        return other | dict(self.items())

    def __ior__(self, other: Any) -> "Accumulator":
        self.update(other)
        return self

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple:
        return (Accumulator, (dict(self.items()), self.fingerprint))

    def __repr__(self) -> str:
        return f"Accumulator({dict.__repr__(self.materialize())})"


class AccumulatorOps:
    """The accumulator operations of :class:`core.Evaluation` (its base class).

    They read the evaluation's ``plan``, ``inputs`` (a :class:`~core.columns.ColumnMap`),
    ``slices``, ``on_invalid``, ``needs_profile``, the counting pass's ``_bounds`` and the
    ``_fingerprint`` (see :attr:`core.Evaluation.fingerprint`).
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
                :func:`core.formats.make_batch`), unless ``on_invalid="skip"``; ``acc`` belongs
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
        self._fold_into(acc, OVERALL, batch, n_skipped)
        weighted = self.weight_col is not None
        types, roles = self._block_types()
        cache: dict = {}  # per-row cells and score keys, shared by the specs' blocks
        for spec, assigned in specs:
            # (batch element, slice) pairs: pixels of maps, or rows left after ignore_index, via row_of
            pos, codes, skipped = assigned.pairs(n, invalid if n_skipped else None, batch.row_of)
            if isinstance(acc, Accumulator):  # every slice of the spec in one vectorised pass
                acc.block(spec.columns, types, weighted, roles=roles).fold(batch if batch.n else None, pos, codes, assigned.keys, skipped, cache)
                continue
            for g, idx in enumerate(assigned.groups(n, invalid if n_skipped else None, batch.row_of)[0]):  # a plain dict
                if idx.size or skipped[g]:
                    self._fold_into(acc, assigned.keys[g], batch.take(idx) if idx.size else None, int(skipped[g]))
        return acc

    def _fold_bucketed(
        self, acc: Accumulator, cols: dict, n: int, batch: Batch, invalid: Any, n_skipped: int, row_offset: int
    ) -> Accumulator:
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
        acc.block((), types, weighted, B, roles).fold(data, None, eb, bucket_keys([OVERALL], B), skipped, cache)
        for spec, a in assigned:
            pos, codes, sk = a.pairs(n, invalid, batch.row_of)
            bucketed_sk = np.zeros(len(a.keys) * B, dtype=np.int64)
            bucketed_sk[::B] = sk
            codes = codes * B + (eb if pos is None else eb[pos])
            acc.block(spec.columns, types, weighted, B, roles).fold(data, pos, codes, bucket_keys(a.keys, B), bucketed_sk, cache)
        return acc

    def _block_types(self) -> tuple[tuple, tuple[str, ...] | None]:
        """``(state types, roles)`` of the slice blocks: the bucketed plan's in the stacked
        form of ``ci="bootstrap"`` (:class:`core.bootstrap.BucketedPlan`), else the plan's."""
        if self._buckets is not None and self.plan.stacked:
            return self.plan.state_types, self.plan.roles
        return self._base_plan.state_types, getattr(self._base_plan, "roles", None)

    def _element_buckets(self, cols: dict, n: int, batch: Batch, invalid: Any, assigned: list, row_offset: int) -> np.ndarray:
        """(batch.n,) bootstrap bucket of each element (:func:`core.bootstrap.element_buckets`):
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
        states = dict.get(acc, key)  # not Accumulator.get: its blocks stay as they are
        if states is None:
            states = self.plan.zero()
        if batch is not None:
            states = self.plan.fold(states, batch)
        if skipped:
            states = (states[0].merge(ExampleCountState.skipped_rows(skipped)),) + states[1:]
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
        if isinstance(a, Accumulator) and isinstance(b, Accumulator):
            for spec, block in b.blocks.items():  # slice by slice, vectorised; b is left unchanged
                types, roles = self._block_types()
                a.block(spec, types, self.weight_col is not None, None if self._buckets is None or self.plan.stacked else self._buckets, roles).merge(block)
            for key, states in dict.items(b):
                old = dict.get(a, key)
                dict.__setitem__(a, key, states if old is None else self.plan.merge(old, states))
            return a
        for key, states in b.items():
            old = a.get(key)
            a[key] = states if old is None else self.plan.merge(old, states)
        return a

    def merge_all(self, accs: Iterable[Accumulator]) -> Accumulator:
        """The merge of every accumulator of ``accs`` (a new accumulator; they are left unchanged)."""
        out = self.zero()
        for a in accs:
            self.merge_into(out, a)
        return out

    def encode_accumulator(self, acc: Accumulator) -> bytes:
        """Versioned bytes with the :attr:`fingerprint` (see :mod:`core.codec`); equal
        accumulators give equal bytes.

        Raises:
            ValueError: ``acc`` belongs to an evaluation of another fingerprint.
        """
        return codec.encode_accumulator(acc, self._joint_fingerprint(getattr(acc, "fingerprint", None)))

    def decode_accumulator(self, data: bytes) -> Accumulator:
        """Inverse of :meth:`encode_accumulator`: a checked accumulator of this evaluation.

        Checks the writer's fingerprint (bytes of the first codec version carry none: they are
        taken as this evaluation's unless its slices depend on a counting-pass profile, which
        such bytes cannot be checked against), that the overall slice is present and every other
        slice key belongs to one of the slice specs, that every slice's states are this plan's
        kinds and layouts, and their values (finite, non-negative counts, whole numbers without
        a weight column; see :meth:`core.states.State.validate`).

        Raises:
            ValueError: corrupted or foreign bytes, or states of another configuration (naming
                the setting).
            TypeError: ``data`` is not bytes.
        """
        acc, theirs, version = codec.read_accumulator(data)
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
        return Accumulator(acc, fp)

    def encode_states(self, states: tuple) -> bytes:
        """Versioned bytes of one slice's tuple of states with the :attr:`fingerprint` (the
        engines' per-slice partial states, e.g. Spark's)."""
        return self.plan.encode(states, self._fingerprint)

    def decode_states(self, data: bytes) -> tuple:
        """Inverse of :meth:`encode_states`, checked as :meth:`decode_accumulator` checks a slice.

        Raises:
            ValueError: corrupted bytes, another fingerprint (naming the settings), states of
                another plan, or values no data can produce.
        """
        acc, theirs, _ = codec.read_accumulator(data)
        if list(acc) != [OVERALL]:
            raise ValueError("corrupted state tuple: expected a single slice")
        self._joint_fingerprint(theirs)
        return self._checked(acc, self._fingerprint, "state bytes")[OVERALL]
