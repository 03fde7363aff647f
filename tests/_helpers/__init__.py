"""Shared test helpers for every test package (core, mergeable_metrics.beam, mergeable_metrics.spark, pipelines).

Modules:
    cases: the named case grid (balanced, imbalanced, one class only, ties at the threshold,
        weighted with zeros, all weights zero, single row, empty) as deterministic data generators
        for binary ``(y_true, y_score, sample_weight)`` and multiclass
        ``(y_true, y_pred, sample_weight, K)`` batches.
    compare: the project tolerance ``abs(a - b) <= 1e-9 * max(1, |a|, |b|)`` (NaN == NaN) and exact
        or relative equality of states, state tuples and sliced accumulators.
    sklearn_ref: scikit-learn reference adapters (``sk_binary``, ``sk_multiclass``) returning the
        values our metrics must reproduce, keyed by our canonical metric strings.
    strategies: hypothesis strategies for binary/multiclass batches and sliced row batches.
    sharding: split data into random shards (including empty ones), fold each shard into its own
        state and merge along a random binary tree, for ``Plan``, ``MetricCollection`` and
        ``Evaluation`` accumulators.

Import as ``from tests._helpers import ...`` (run pytest from the repository root, e.g.
``python -m pytest``, so that both ``core`` and ``tests`` are importable).
"""

from tests._helpers.cases import (
    BINARY_CASES,
    BINARY_GRID,
    MULTICLASS_CASES,
    MULTICLASS_GRID,
    BinaryCase,
    MulticlassCase,
    binary_case,
    multiclass_case,
)
from tests._helpers.compare import (
    assert_bounds_contain,
    assert_all_close,
    assert_states_equal,
    close,
    states_close,
)
from tests._helpers.sharding import (
    CollectionFolder,
    EvaluationFolder,
    PlanFolder,
    StateFolder,
    fold_all,
    fold_plan_sharded,
    fold_sharded,
    fold_state_shards,
    merge_tree,
    random_shards,
)
from tests._helpers.sklearn_ref import sk_binary, sk_multiclass, sk_zero_division

__all__ = [
    "BINARY_CASES",
    "BINARY_GRID",
    "MULTICLASS_CASES",
    "MULTICLASS_GRID",
    "BinaryCase",
    "CollectionFolder",
    "EvaluationFolder",
    "MulticlassCase",
    "PlanFolder",
    "StateFolder",
    "assert_all_close",
    "assert_bounds_contain",
    "assert_states_equal",
    "binary_case",
    "close",
    "fold_all",
    "fold_plan_sharded",
    "fold_sharded",
    "fold_state_shards",
    "merge_tree",
    "multiclass_case",
    "random_shards",
    "sk_binary",
    "sk_multiclass",
    "sk_zero_division",
    "states_close",
]
