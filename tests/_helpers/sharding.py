"""Sharding / merge-order tester.

Splits a dataset into random shards (INCLUDING EMPTY ONES), splits each shard into ordered batches
(again possibly empty), folds each shard's batches in order into its own fresh state, and merges
the shard states along a random binary tree with random operand order. The result must equal the
state of one fold over all the data (exactly for integer-valued weights).

A *folder* adapts one accumulator API to ``zero() / fold(state, columns) / merge(a, b)``:
    * :class:`StateFolder`: one state kind (``zero(layout)``, ``fold(batch)``, ``merge``);
    * :class:`PlanFolder`: ``mergeable_metrics.engine.Plan`` over tuples of states (columns validated by ``make_batch``);
    * :class:`CollectionFolder`: ``mergeable_metrics.MetricCollection`` objects (``update`` / ``merge``, which
      merges in place: both are merged into a fresh collection);
    * :class:`EvaluationFolder`: ``mergeable_metrics.Evaluation`` accumulators ``{slice_key: states}``
      (``Evaluation.merge`` is pure).

Columns are a dict of equal-length lists/arrays; ``None`` values in the dict mean "no column".

Example:
    >>> import numpy as np
    >>> from mergeable_metrics.engine import Plan
    >>> from mergeable_metrics.metrics import Task
    >>> folder = PlanFolder(Plan(["f1", "accuracy"], Task()))
    >>> data = {"y_true": np.array([1, 0, 1]), "y_score": np.array([0.9, 0.2, 0.4]), "sample_weight": None}
    >>> rng = np.random.default_rng(0)
    >>> fold_sharded(folder, data, rng) == fold_all(folder, data)
    True
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from tests._helpers.strategies import take_columns


def random_shards(rng: np.random.Generator, n: int, max_shards: int = 6, max_batches: int = 3, p_empty: float = 0.3) -> list[list[np.ndarray]]:
    """Partition ``range(n)`` into shards of ordered batches of row indices.

    Every row lands in exactly one batch. Rows keep their relative order inside a shard (a shard
    takes an arbitrary, not necessarily contiguous, subset). Empty shards and empty batches occur
    with probability about ``p_empty``; at least one shard exists.

    Returns:
        ``shards[i][j]`` = (m,) int64 row indices of batch j of shard i.
    """
    k = int(rng.integers(1, max_shards + 1))
    assign = rng.integers(0, k, size=n)
    shards = []
    for i in range(k):
        rows = np.flatnonzero(assign == i)
        nb = int(rng.integers(1, max_batches + 1))
        cuts = np.sort(rng.integers(0, rows.size + 1, size=nb - 1))
        batches = list(np.split(rows, cuts))
        if rng.random() < p_empty:  # an explicit empty batch somewhere
            batches.insert(int(rng.integers(0, len(batches) + 1)), rows[:0])
        shards.append(batches)
    while rng.random() < p_empty:  # explicit empty shards: no batches at all
        shards.insert(int(rng.integers(0, len(shards) + 1)), [])
    return shards


def merge_tree(items: list[Any], merge: Callable[[Any, Any], Any], rng: np.random.Generator, zero: Callable[[], Any]) -> Any:
    """Merge ``items`` along a random binary tree: repeatedly pick two random items, merge them in
    random operand order, put the result back. An empty list gives ``zero()``."""
    items = list(items)
    if not items:
        return zero()
    while len(items) > 1:
        i, j = rng.choice(len(items), size=2, replace=False)
        a, b = items[int(i)], items[int(j)]
        for idx in sorted((int(i), int(j)), reverse=True):
            items.pop(idx)
        items.append(merge(a, b) if rng.random() < 0.5 else merge(b, a))
    return items[0]


def fold_state_shards(zero: Any, batch_of: Callable[[np.ndarray], Any], n: int, rng: np.random.Generator) -> Any:
    """Fold random shards of rows ``0 .. n-1`` (empty ones included) into states of their own,
    from ``zero`` (``batch_of(idx)`` gives the batch of the rows ``idx``), and merge them along a
    random tree (:func:`random_shards`, :func:`merge_tree`)."""
    states = []
    for shard in random_shards(rng, n):
        s = zero
        for idx in shard:
            s = s.fold(batch_of(idx))
        states.append(s)
    return merge_tree(states, lambda a, b: a.merge(b), rng, lambda: zero)


def fold_all(folder: Any, columns: dict) -> Any:
    """One fold of all rows into a fresh state."""
    return folder.fold(folder.zero(), columns)


def fold_sharded(folder: Any, columns: dict, rng: np.random.Generator, **shard_kw: Any) -> Any:
    """Fold random shards (incl. empty) into their own states, merge along a random tree."""
    n = _n_rows(columns)
    states = []
    for shard in random_shards(rng, n, **shard_kw):
        s = folder.zero()
        for idx in shard:
            s = folder.fold(s, take_columns(columns, idx))
        states.append(s)
    return merge_tree(states, folder.merge, rng, folder.zero)


def _n_rows(columns: dict) -> int:
    for v in columns.values():
        if v is not None and not np.isscalar(v):
            return len(v)
    return 0


class StateFolder:
    """A single state kind: ``cls.zero(layout)``, ``state.fold(batch)``, ``a.merge(b)``.

    ``skip_empty=True`` (default) does not pass empty batches to ``State.fold``: folding an empty
    *weighted* batch into a BinaryConfusionState/ConfusionMatrixState raises in core (``np.bincount``
    returns int64 for empty input; see tests/core/test_merge_laws.py::
    test_state_fold_empty_weighted_batch). ``Plan.fold`` skips empty batches itself. Set it to
    False once that is fixed.
    """

    def __init__(self, cls: Any, layout: Any, num_classes: int = 2, skip_empty: bool = False):
        self.cls, self.layout, self.num_classes = cls, layout, num_classes
        self.skip_empty = skip_empty

    def zero(self) -> Any:
        return self.cls.zero(self.layout)

    def fold(self, state: Any, columns: dict) -> Any:
        from mergeable_metrics.inputs.formats import make_batch

        batch, _ = make_batch(
            num_classes=self.num_classes,
            y_true=columns["y_true"],
            y_score=columns.get("y_score"),
            y_pred=columns.get("y_pred"),
            sample_weight=columns.get("sample_weight"),
        )
        if self.skip_empty and batch.n == 0:
            return state
        return state.fold(batch)

    def merge(self, a: Any, b: Any) -> Any:
        return a.merge(b)


class PlanFolder:
    """``mergeable_metrics.engine.Plan`` over tuples of states; columns ``y_true``, ``y_score``/``y_pred``,
    ``sample_weight`` are validated with ``mergeable_metrics.inputs.formats.make_batch``."""

    def __init__(self, plan: Any):
        self.plan = plan

    def zero(self) -> tuple:
        return self.plan.zero()

    def fold(self, states: tuple, columns: dict) -> tuple:
        from mergeable_metrics.inputs.formats import make_batch

        batch, _ = make_batch(
            num_classes=self.plan.task.num_classes,
            y_true=columns["y_true"],
            y_score=columns.get("y_score"),
            y_pred=columns.get("y_pred"),
            sample_weight=columns.get("sample_weight"),
        )
        return self.plan.fold(states, batch)

    def merge(self, a: tuple, b: tuple) -> tuple:
        return self.plan.merge(a, b)


class CollectionFolder:
    """``mergeable_metrics.MetricCollection`` objects made by ``factory()``; ``merge(a, b)`` merges both into a
    fresh collection (public API only; neither argument is changed)."""

    def __init__(self, factory: Callable[[], Any]):
        self.factory = factory

    def zero(self) -> Any:
        return self.factory()

    def fold(self, mc: Any, columns: dict) -> Any:
        mc.update(
            columns["y_true"],
            y_score=columns.get("y_score"),
            y_pred=columns.get("y_pred"),
            sample_weight=columns.get("sample_weight"),
        )
        return mc

    def merge(self, a: Any, b: Any) -> Any:
        return self.factory().merge(a).merge(b)


class EvaluationFolder:
    """``mergeable_metrics.Evaluation`` accumulators; ``fold`` and ``merge`` never mutate their inputs."""

    def __init__(self, evaluation: Any):
        self.ev = evaluation

    def zero(self) -> Any:
        return self.ev.zero()

    def fold(self, acc: Any, columns: dict) -> Any:
        return self.ev.fold(acc.copy(), columns)

    def merge(self, a: Any, b: Any) -> Any:
        return self.ev.merge(a, b)


def fold_plan_sharded(plan: Any, batch: Any, rng: np.random.Generator) -> Any:
    """A :class:`mergeable_metrics.collection.plan.Plan`'s states of ``batch`` (a :class:`mergeable_metrics.inputs.validation.Batch`) folded in
    random shards of ordered batches (incl. empty ones), each folded into the running state,
    merged along a random tree."""
    states = []
    for shard in random_shards(rng, batch.n):
        s = plan.zero()
        for idx in shard:
            s = plan.fold(s, batch.take(idx))
        states.append(s)
    return merge_tree(states, plan.merge, rng, plan.zero)
