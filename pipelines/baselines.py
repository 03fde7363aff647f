"""Metric regression tests: run a model over batches, record a baseline, compare a later run.

The functions here work without pytest; :mod:`mergeable_metrics.pipelines.pytest_plugin` wraps them as the
``metric_baseline`` fixture (``--update-metric-baselines`` records, later runs compare).

- :func:`evaluate` runs a model over batches and returns ``{metric name: value}``.
- :func:`evaluate_detailed` also returns the per-sample values and the provenance a baseline
  records (:class:`Evaluated`).
- :func:`paired_difference` is the paired test alone: a seeded bootstrap interval of the mean
  difference of two per-sample arrays.
- :func:`compare` checks an :class:`Evaluated` run against a recorded baseline entry and returns
  the mismatches and regressions (:class:`Comparison`).

Metrics are a dict ``name -> metric``; a metric is one of:

- a function ``fn(output, batch)`` (``output``: the model's output for the batch, as the model
  gave it; ``batch``: the batch as the loader gave it, e.g. ``batch[1]`` the labels of a tuple)
  returning one value per sample (shape ``(n,)``): averaged over the samples, compared **paired**
  (kind ``"per_sample"``); a result of another length raises naming the metric and both lengths;
- such a function returning a scalar per batch: averaged over the batches weighted by batch size
  (kind ``"per_batch"``); its value depends on the batching, so the batch sizes are recorded and
  compared (a different batching is a mismatch, not a regression);
- ``from_sklearn(fn, **kwargs)``: a scikit-learn-style ``fn(y_true, y_pred)`` (e.g.
  ``sklearn.metrics.accuracy_score``) called with the batch's labels (``targets=``) and the model's
  output as numpy arrays; per sample or per batch by its result as above. A plain function whose
  first parameters are named ``y_true, y_pred`` is refused (``TypeError``), never guessed;
- an object with ``update(output, batch)`` and ``compute()`` (kind ``"stateful"``; its
  ``config`` attribute is recorded; it is deep-copied and reset first, never mutated);
- one of this library's metric strings (``"accuracy"``, ``"f1@threshold=0.3"``, ``"roc_auc"``)
  or a :class:`mergeable_metrics.MetricCollection` (kind ``"library"``; its task, thresholds, metrics and
  input settings are recorded automatically, ``higher_is_better`` comes from the registry). A
  collection of several metrics gives one value per metric, named ``"name.key"``.

Labels (for metric strings and ``from_sklearn``) are the batch's target (see :func:`evaluate_detailed`).
"""

from __future__ import annotations

import copy
import datetime
import hashlib
import itertools
import json
import math
import platform
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

import numpy as np

#: Keys of a dict batch read as the target, in this order, when ``targets`` is not given.
TARGET_KEYS = ("y", "y_true", "label", "labels", "target", "targets")
#: ``context`` keys that are recorded but never make a baseline mismatch.
RECORDED_ONLY_CONTEXT = ("checkpoint",)
#: Version of the baseline entry layout (``.metric-baselines.json``).
FORMAT_VERSION = 1


# --------------------------------------------------------------------------- paired test
@dataclass(frozen=True)
class PairedDifference:
    """The paired comparison of two per-sample arrays.

    Attributes:
        difference: mean of ``current - baseline`` over the samples (NaN for no samples).
        lower, upper: the percentile bootstrap interval of that mean at ``confidence``.
        n: number of paired samples.
        confidence: the interval's level, e.g. 0.95.
        resamples: bootstrap resamples drawn.
        method: ``"paired percentile bootstrap"``.
    """

    difference: float
    lower: float
    upper: float
    n: int
    confidence: float
    resamples: int
    method: str = "paired percentile bootstrap"

    @property
    def excludes_zero(self) -> bool:
        """True when the interval lies entirely above or below zero."""
        return bool(self.lower > 0.0 or self.upper < 0.0)


def paired_difference(current: Any, baseline: Any, *, confidence: float = 0.95, resamples: int = 2000, seed: int = 0) -> PairedDifference:
    """The mean paired difference ``current - baseline`` with a seeded bootstrap interval.

    Sample ``i`` of ``current`` and of ``baseline`` measure the same example. The interval is the
    percentile interval of the mean difference over ``resamples`` resamples of the samples with
    replacement (the same resampled indices for both arrays, so the pairing is kept), drawn with
    ``numpy.random.default_rng(seed)``: the same inputs and seed give the same interval. When the
    differences take few distinct values (at most 64, e.g. right/wrong per sample), a resample is
    drawn as multinomial counts of those values: the same distribution, at a cost independent of n.

    Args:
        current: (n,) per-sample values of the current run.
        baseline: (n,) per-sample values of the baseline, in the same sample order.
        confidence: level of the interval, in (0, 1).
        resamples: bootstrap resamples, >= 1 (at most 1,000,000).
        seed: the generator's seed.

    Returns:
        A :class:`PairedDifference`; for ``n == 0`` every number is NaN.

    Raises:
        ValueError: different lengths, arrays that are not 1-D, non-finite values (naming the
            side and the position), or a bad ``confidence`` / ``resamples``.

    Example:
        >>> d = paired_difference([1, 1, 0, 1], [1, 1, 1, 1], resamples=200)
        >>> d.difference, d.n
        (-0.25, 4)
    """
    if not (isinstance(confidence, (int, float)) and 0.0 < confidence < 1.0):
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    if isinstance(resamples, bool) or not isinstance(resamples, (int, np.integer)) or not 1 <= resamples <= 1_000_000:
        raise ValueError(f"resamples must be an integer in [1, 1000000], got {resamples!r}")
    cur = _per_sample_array(current, "current")
    base = _per_sample_array(baseline, "baseline")
    if cur.shape != base.shape:
        raise ValueError(f"paired samples need equal lengths: current has {cur.shape[0]}, baseline {base.shape[0]}")
    n = int(cur.shape[0])
    if n == 0:
        nan = float("nan")
        return PairedDifference(nan, nan, nan, 0, float(confidence), int(resamples))
    d = cur - base
    rng = np.random.default_rng(seed)
    means = np.empty(int(resamples), dtype=np.float64)
    values, counts = np.unique(d, return_counts=True)
    if values.size <= _FEW_VALUES:
        # few distinct differences (0/1 hits: -1, 0, +1): a resample of n samples is a multinomial
        # draw of how many times each value is picked, the same distribution in O(values) a resample
        for start in range(0, int(resamples), 65536):
            stop = min(int(resamples), start + 65536)
            means[start:stop] = rng.multinomial(n, counts / n, size=stop - start) @ values / n
    else:
        chunk = max(1, 4_000_000 // n)  # rows of indices per draw: bounded memory (~32 MB)
        for start in range(0, int(resamples), chunk):
            stop = min(int(resamples), start + chunk)
            idx = rng.integers(0, n, size=(stop - start, n))
            means[start:stop] = d[idx].mean(axis=1)
    alpha = (1.0 - confidence) / 2.0
    lower, upper = np.quantile(means, [alpha, 1.0 - alpha])
    return PairedDifference(float(d.mean()), float(lower), float(upper), n, float(confidence), int(resamples))


#: At most this many distinct paired differences are resampled as multinomial counts.
_FEW_VALUES = 64


def _per_sample_array(values: Any, side: str) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64) if not isinstance(values, np.ndarray) else values.astype(np.float64, copy=False)
    if arr.ndim != 1:
        raise ValueError(f"{side}: per-sample values must be 1-D, got shape {arr.shape}")
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        raise ValueError(f"{side}: per-sample value {float(arr[bad[0]])!r} at position {int(bad[0])} is not finite")
    return arr


# --------------------------------------------------------------------------- batches
def _as_array(value: Any, what: str) -> np.ndarray:
    """A numpy view of an input, output or target (numpy, pandas, Arrow, tensors via __array__)."""
    if hasattr(value, "detach") and hasattr(value, "cpu"):  # torch tensors: no grad, on the host
        value = value.detach().cpu()
    if hasattr(value, "to_numpy") and not isinstance(value, np.ndarray):
        try:
            return np.asarray(value.to_numpy(zero_copy_only=False))  # pyarrow arrays
        except TypeError:
            return np.asarray(value.to_numpy())  # pandas
    if _is_table(value):  # pyarrow tables / record batches
        return np.column_stack([_as_array(c, what) for c in value.columns]) if value.num_columns else np.empty((value.num_rows, 0))
    try:
        return np.asarray(value)
    except Exception as e:  # noqa: BLE001 - name what could not be read
        raise TypeError(f"{what}: cannot read a {type(value).__name__} as an array ({e})") from None


def _components(batch: Any) -> list[tuple[str, Any]]:
    """The batch's parts, named: ``("0", x), ("1", y)`` for tuples, the keys for dicts."""
    if isinstance(batch, Mapping):
        return [(str(k), v) for k, v in batch.items()]
    if isinstance(batch, (tuple, list)):
        return [(str(i), v) for i, v in enumerate(batch)]
    return [("0", batch)]


def _is_frame(batch: Any) -> bool:
    """A pandas DataFrame (columns, dtypes, to_numpy)."""
    return hasattr(batch, "columns") and hasattr(batch, "dtypes") and hasattr(batch, "to_numpy") and not isinstance(batch, np.ndarray)


def _is_table(batch: Any) -> bool:
    """An Arrow table or record batch (column_names, columns)."""
    return hasattr(batch, "column_names") and hasattr(batch, "columns")


def _names(batch: Any) -> list[Any] | None:
    """The keys of a dict batch, the columns of a DataFrame or Arrow batch; None for others."""
    if isinstance(batch, Mapping):
        return list(batch)
    if _is_frame(batch):
        return list(batch.columns)
    if _is_table(batch):
        return list(batch.column_names)
    return None


def _target_key(batch: Any, targets: Any, position: int) -> Any:
    """The label key (dict) or column (DataFrame, Arrow) of a batch: ``targets`` when it is a
    key, else the one of :data:`TARGET_KEYS` it holds (None for none; several raise)."""
    if targets is not None:
        return None if callable(targets) else targets
    names = _names(batch)
    if names is None:
        return None
    found = [k for k in TARGET_KEYS if k in names]
    if len(found) > 1:
        raise ValueError(
            f"batch {position} has several label {'keys' if isinstance(batch, Mapping) else 'columns'} {found}: pass targets= to say which one holds the labels"
        )
    return found[0] if found else None


def _target(batch: Any, targets: Any, position: int) -> Any:
    """The labels of a batch (None when it has none; see :func:`evaluate_detailed`)."""
    if targets is not None:
        if callable(targets):
            return targets(batch)
        try:
            return batch[targets]
        except (KeyError, IndexError, TypeError):
            raise ValueError(f"batch {position}: no target {targets!r} (targets=)") from None
    if _names(batch) is not None:
        key = _target_key(batch, None, position)
        return None if key is None else batch[key]
    if isinstance(batch, (tuple, list)):
        return batch[1] if len(batch) > 1 else None
    return None


def _no_labels(batch: Any, position: int) -> str:
    """Why batch ``position`` has no labels, and what to pass."""
    names = _names(batch)
    if names is not None:
        what = "dict with keys" if isinstance(batch, Mapping) else f"{type(batch).__name__} with columns"
        return (
            f"batch {position} (a {what} {[str(n) for n in names]}) has no label "
            f"{'key' if isinstance(batch, Mapping) else 'column'}: none of {list(TARGET_KEYS)}; "
            f"pass targets= (a key or column name, or a function of the batch)"
        )
    return f"batch {position} (a {type(batch).__name__}) has no labels; pass targets= (a position, key or a function of the batch)"


def _call_model(model: Callable, batch: Any, inputs: Any, targets: Any, position: int) -> Any:
    """``model(input)`` for one batch, the input picked by ``inputs`` (see :func:`evaluate`)."""
    if callable(inputs):
        return model(inputs(batch))
    if isinstance(inputs, (list, tuple)):
        return model(**{str(k): batch[k] for k in inputs})
    if inputs is not None:
        try:
            return model(batch[inputs])
        except (KeyError, IndexError) as e:
            raise ValueError(f"batch {position}: no input {inputs!r} (inputs=): {e}") from None
    if isinstance(batch, Mapping):
        skip = _target_key(batch, targets, position)
        return model(**{k: v for k, v in batch.items() if k != skip})
    if _is_frame(batch) or _is_table(batch):  # the frame without its label column
        skip = _target_key(batch, targets, position)
        if skip is None or skip not in _names(batch):
            return model(batch)
        return model(batch.drop(columns=[skip]) if _is_frame(batch) else batch.select([c for c in batch.column_names if c != skip]))
    if isinstance(batch, (tuple, list)):
        if not batch:
            raise ValueError(f"batch {position} is an empty tuple")
        return model(batch[0])
    return model(batch)


class _Fingerprint:
    """A hash of every batch's parts, in order, independent of how the samples are batched.

    Each part (tuple position or dict key) has its own running hash of the C-order bytes of its
    rows; the rows of two batches concatenated are the bytes of the two batches one after the
    other, so any batching of the same samples in the same order gives the same digest."""

    def __init__(self) -> None:
        self.parts: dict[str, tuple[Any, str, tuple[int, ...]]] = {}
        self.order: list[str] = []

    def update(self, batch: Any, position: int) -> None:
        names = [name for name, _ in _components(batch)]
        if self.order and names != self.order:
            raise ValueError(f"batch {position} has parts {names}, the first batch had {self.order}")
        self.order = names
        for name, value in _components(batch):
            if _is_frame(value):
                for col in value.columns:
                    self._add(f"{name}[{col}]", _as_array(value[col], f"batch {position} part {name}"), position)
            elif _is_table(value):
                for col, arr in zip(value.column_names, value.columns):
                    self._add(f"{name}[{col}]", _as_array(arr, f"batch {position} part {name}"), position)
            else:
                self._add(name, _as_array(value, f"batch {position} part {name}"), position)

    def _add(self, name: str, arr: np.ndarray, position: int) -> None:
        arr = np.atleast_1d(arr)
        if arr.dtype == object or arr.dtype.kind in "USO":
            data = "".join(f"{v!r}\x1f" for v in arr.reshape(-1).tolist()).encode()  # one terminator per value
            dtype = "object"
        else:
            data = np.ascontiguousarray(arr).tobytes()
            dtype = arr.dtype.str
        shape = tuple(int(s) for s in arr.shape[1:])
        entry = self.parts.get(name)
        if entry is None:
            entry = (hashlib.sha256(), dtype, shape)
            self.parts[name] = entry
        elif (entry[1], entry[2]) != (dtype, shape):
            raise ValueError(f"batch {position} part {name}: dtype {dtype} and row shape {shape} differ from the first batch's {entry[1]} {entry[2]}")
        entry[0].update(data)

    def digest(self) -> str:
        h = hashlib.sha256()
        for name in sorted(self.parts):
            hasher, dtype, shape = self.parts[name]
            h.update(f"{name}|{dtype}|{shape}|{hasher.hexdigest()}\n".encode())
        return h.hexdigest()[:32]


# --------------------------------------------------------------------------- models
def _owner(model: Any) -> Any:
    """The object behind a model: the estimator of a bound ``predict_proba``, else the model."""
    return getattr(model, "__self__", model)


def _has_mode(obj: Any) -> bool:
    return callable(getattr(obj, "eval", None)) and callable(getattr(obj, "train", None)) and hasattr(obj, "training")


def weights_fingerprint(model: Any) -> str | None:
    """A hash of a model's weights when it exposes them (``state_dict()``, or a fitted
    scikit-learn estimator's arrays: attributes ending in ``_``, pipelines' steps included);
    None otherwise. Recorded only: a different value never fails a comparison."""
    obj = _owner(model)
    h = hashlib.sha256()
    found = False
    state_dict = getattr(obj, "state_dict", None)
    if callable(state_dict):
        for key, value in sorted(state_dict().items(), key=lambda kv: str(kv[0])):
            arr = _as_array(value, f"state_dict[{key!r}]")
            h.update(f"{key}|{arr.dtype.str}|{arr.shape}|".encode())
            h.update(np.ascontiguousarray(arr).tobytes() if arr.dtype != object else repr(arr.tolist()).encode())
            found = True
    else:
        for name, arr in _fitted_arrays(obj, ""):
            h.update(f"{name}|{arr.dtype.str}|{arr.shape}|".encode())
            h.update(np.ascontiguousarray(arr).tobytes() if arr.dtype != object else repr(arr.tolist()).encode())
            found = True
    return h.hexdigest()[:32] if found else None


def _fitted_arrays(obj: Any, prefix: str, depth: int = 0) -> list[tuple[str, np.ndarray]]:
    if depth > 4 or not hasattr(obj, "__dict__") or not hasattr(obj, "get_params"):
        return []
    out: list[tuple[str, np.ndarray]] = []
    for name, value in sorted(vars(obj).items()):
        if name.endswith("_") and not name.startswith("_"):
            if isinstance(value, np.ndarray):
                out.append((prefix + name, value))
            elif isinstance(value, (int, float, np.number)) and not isinstance(value, bool):
                out.append((prefix + name, np.asarray(value)))
    for step_name, step in getattr(obj, "steps", None) or []:
        out.extend(_fitted_arrays(step, f"{prefix}{step_name}.", depth + 1))
    return out


class _EvalMode:
    """Runs a model with ``eval()`` (and ``torch.no_grad()`` for torch modules) and restores its
    ``training`` flag afterwards, also when the model raises."""

    def __init__(self, model: Any):
        self.obj = _owner(model)
        self.active = _has_mode(self.obj)
        self.was_training = bool(getattr(self.obj, "training", False)) if self.active else None
        self.no_grad = None

    def __enter__(self) -> "_EvalMode":
        if self.active:
            self.obj.eval()
        torch = sys.modules.get("torch")  # never imported here: only used when the user has it
        if torch is not None and isinstance(self.obj, getattr(getattr(torch, "nn", None), "Module", ())):
            self.no_grad = torch.no_grad()
            self.no_grad.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.no_grad is not None:
            self.no_grad.__exit__(*exc)
        if self.active:
            self.obj.train(self.was_training)


# --------------------------------------------------------------------------- metrics
#: ``config["signature"]`` of a plain metric function and of a :func:`from_sklearn` one.
FUNCTION_SIGNATURE = "fn(output, batch)"
SKLEARN_SIGNATURE = "fn(y_true, y_pred)"
#: First two parameter names that mark a scikit-learn-style function passed without
#: :func:`from_sklearn`: refused, never guessed.
_SKLEARN_NAMES = ("y_true", "y_pred", "y_score", "y_prob", "y_proba", "labels_true", "labels_pred")


@dataclass(frozen=True)
class SklearnMetric:
    """A scikit-learn-style metric ``fn(y_true, y_pred, **kwargs)`` (see :func:`from_sklearn`)."""

    fn: Callable[..., Any]
    kwargs: Mapping[str, Any]

    @property
    def higher_is_better(self) -> bool | None:
        return getattr(self.fn, "higher_is_better", None)


def from_sklearn(fn: Callable[..., Any], **kwargs: Any) -> SklearnMetric:
    """Use a scikit-learn-style function ``fn(y_true, y_pred, **kwargs)`` as a metric.

    A plain metric function is called ``fn(output, batch)``; this wrapper is the explicit form
    for functions of the labels and the model's output (``sklearn.metrics.accuracy_score``,
    ``roc_auc_score`` ...): ``y_true`` is the batch's labels (``targets=``, see
    :func:`evaluate_detailed`) and ``y_pred`` the model's output, both as numpy arrays. ``kwargs``
    are passed to ``fn`` and recorded in the metric's configuration. A scalar result is a
    per-batch metric, one value per sample a per-sample metric.

    Example:
        >>> import numpy as np
        >>> from sklearn.metrics import accuracy_score
        >>> evaluate(lambda x: x, [(np.array([0, 1, 1]), np.array([0, 1, 0]))], {"acc": from_sklearn(accuracy_score)})
        {'acc': 0.6666666666666666}
    """
    if not callable(fn):
        raise TypeError(f"from_sklearn: expected a function fn(y_true, y_pred), got {type(fn).__name__}")
    return SklearnMetric(fn, dict(kwargs))


def _sklearn_style(fn: Callable[..., Any]) -> str | None:
    """The first two parameter names of ``fn`` when they are those of a (y_true, y_pred) function."""
    import inspect  # noqa: PLC0415

    try:
        params = [p.name for p in inspect.signature(fn).parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):  # builtins without a signature
        return None
    if len(params) >= 2 and params[0] in _SKLEARN_NAMES and params[1] in _SKLEARN_NAMES:
        return f"({params[0]}, {params[1]})"
    return None


def _run_lengths(sizes: list[int]) -> list[list[int]]:
    """``[[size, count], ...]`` of consecutive equal batch sizes: ``[250, 250, 100]`` -> ``[[250, 2], [100, 1]]``."""
    out: list[list[int]] = []
    for size in sizes:
        if out and out[-1][0] == size:
            out[-1][1] += 1
        else:
            out.append([int(size), 1])
    return out


def _describe_sizes(runs: Any) -> str:
    """``[[250, 2], [100, 1]]`` as ``2 x 250 + 1 x 100`` (3 batches)."""
    if not isinstance(runs, list) or not all(isinstance(r, list) and len(r) == 2 for r in runs):
        return _show(runs)
    return " + ".join(f"{count} x {size}" for size, count in runs) + f" ({sum(c for _, c in runs)} batches)"


class _MetricRunner:
    """Folds one named metric over the batches; ``finish()`` gives its values."""

    def __init__(self, name: str, metric: Any):
        self.name = name
        self.metric = metric
        self.kind: str | None = None
        self.config: Any = None
        self.higher_is_better: dict[str, bool | None] = {}
        self.per_sample: list[np.ndarray] = []
        self.batch_values: list[tuple[float, int]] = []
        self.collection: Any = None
        self.obj: Any = None
        self.function: str | None = None
        self.sklearn = isinstance(metric, SklearnMetric)
        if isinstance(metric, str) or _is_collection(metric):
            self.kind = "library"
        elif self.sklearn:
            self.function = _qualname(metric.fn)
            self.config = {"signature": SKLEARN_SIGNATURE, "kwargs": _jsonable(dict(metric.kwargs))}
            self.higher_is_better[name] = metric.higher_is_better
        elif callable(getattr(metric, "update", None)) and callable(getattr(metric, "compute", None)):
            self.kind = "stateful"
            self.obj = copy.deepcopy(metric)
            if callable(getattr(self.obj, "reset", None)):
                self.obj.reset()
            self.config = _jsonable(getattr(metric, "config", None))
            self.higher_is_better[name] = getattr(metric, "higher_is_better", None)
        elif callable(metric):
            style = _sklearn_style(metric)
            if style is not None:
                raise TypeError(
                    f"metric {name!r}: {_qualname(metric)} takes {style}, but a metric function is called "
                    f"fn(output, batch) (the model's output and the batch as the loader gave it); wrap it: "
                    f"from_sklearn({metric.__name__ if getattr(metric, '__name__', '<lambda>') != '<lambda>' else 'fn'}) (from mergeable_metrics.pipelines.baselines)"
                )
            # a function has no configuration we can read: its name is recorded (provenance), not compared
            self.function = _qualname(metric)
            self.config = {"signature": FUNCTION_SIGNATURE}
            self.higher_is_better[name] = getattr(metric, "higher_is_better", None)
        else:
            raise TypeError(
                f"metric {name!r}: expected a function fn(output, batch), from_sklearn(fn), an object with "
                f"update(output, batch)/compute(), a metric string or a mergeable_metrics.MetricCollection, got {type(metric).__name__}"
            )

    @property
    def needs_labels(self) -> bool:
        return self.sklearn or self.kind == "library"

    def fold(self, y_true: np.ndarray | None, output: Any, out_arr: np.ndarray, batch: Any, n: int, position: int) -> None:
        """Fold one batch: ``output`` is the model's output as it gave it (``out_arr`` as an
        array), ``batch`` the batch as the loader gave it, ``y_true`` its labels as an array (None
        without labels)."""
        if self.kind == "stateful":
            self.obj.update(output, batch)
            return
        if self.needs_labels and y_true is None:
            raise ValueError(f"metric {self.name!r} needs labels: {_no_labels(batch, position)}")
        if self.kind == "library":
            self._fold_library(y_true, out_arr, position)
            return
        if self.sklearn:
            value = self.metric.fn(y_true, out_arr, **self.metric.kwargs)
        else:
            value = self.metric(output, batch)
        arr = _as_array(value, f"metric {self.name!r}")
        if arr.ndim == 0:
            kind = "per_batch"
        elif arr.ndim == 1 and arr.shape[0] == n:
            kind = "per_sample"
        elif arr.ndim == 1:
            raise ValueError(
                f"metric {self.name!r} returned {arr.shape[0]} values for batch {position} of {n} samples: "
                f"a per-sample metric returns one value per sample ({n}), a per-batch metric one scalar"
            )
        else:
            raise ValueError(
                f"metric {self.name!r} returned shape {arr.shape} for batch {position} of {n} samples: expected a scalar (per batch) or one value per sample"
            )
        if self.kind is not None and self.kind != kind:
            raise ValueError(f"metric {self.name!r} returned a {kind} value for batch {position}, {self.kind} before")
        self.kind = kind
        if kind == "per_sample":
            vals = arr.astype(np.float64)
            bad = np.flatnonzero(~np.isfinite(vals))
            if bad.size:
                raise ValueError(f"metric {self.name!r}: value {float(vals[bad[0]])!r} of sample {int(bad[0])} in batch {position} is not finite")
            self.per_sample.append(vals)
        else:
            self.batch_values.append((float(arr), n))

    def batch_sizes(self) -> list[list[int]] | None:
        """The sizes of the batches a per-batch metric averaged (run-length ``[[size, count], ...]``):
        its value depends on them, so a baseline records and compares them."""
        return _run_lengths([m for _, m in self.batch_values]) if self.kind in (None, "per_batch") else None

    def _fold_library(self, y_true: Any, out: np.ndarray, position: int) -> None:
        if self.collection is None:
            from mergeable_metrics import MetricCollection  # noqa: PLC0415 - core only when library metrics are asked

            if _is_collection(self.metric):
                mc = copy.deepcopy(self.metric)
                mc.reset()
            else:
                k = out.shape[1] if out.ndim == 2 and out.shape[1] > 2 else None
                mc = MetricCollection(self.metric, num_classes=k)
            self.collection = mc
            self.config = {**mc.plan.describe(), "fingerprint": _jsonable(mc.fingerprint)}
            keys = mc.plan.keys
            self.keys = {key: (self.name if len(keys) == 1 else f"{self.name}.{key}") for key in keys}
            self.higher_is_better = {self.keys[m.key]: m.higher_is_better for m in mc.plan.metrics}
        y = _as_array(y_true, f"target of batch {position}")
        if self.collection.task.kind == "regression" or out.dtype.kind in "iub":
            self.collection.update(y, y_pred=out)
        else:
            self.collection.update(y, y_score=out)

    def finish(self) -> tuple[dict[str, float], dict[str, np.ndarray]]:
        if self.kind == "library":
            if self.collection is None:
                return {self.name: float("nan")}, {}
            computed = self.collection.compute()
            return {self.keys[k]: _scalar(self.name, v) for k, v in computed.items()}, {}
        if self.kind == "stateful":
            return {self.name: _scalar(self.name, self.obj.compute())}, {}
        if self.kind == "per_sample":
            vals = np.concatenate(self.per_sample) if self.per_sample else np.empty(0)
            return {self.name: float(vals.mean()) if vals.size else float("nan")}, {self.name: vals}
        if not self.batch_values:
            return {self.name: float("nan")}, {}
        v = np.array([x for x, _ in self.batch_values])
        w = np.array([m for _, m in self.batch_values], dtype=np.float64)
        return {self.name: float((v * w).sum() / w.sum()) if w.sum() > 0 else float("nan")}, {}


def _qualname(fn: Any) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', type(fn).__name__)}"


def _is_collection(metric: Any) -> bool:
    mod = type(metric).__module__ or ""
    return (mod == "mergeable_metrics" or mod.startswith("mergeable_metrics.")) and hasattr(metric, "plan") and callable(getattr(metric, "compute", None))


def _scalar(name: str, value: Any) -> float:
    arr = np.asarray(value)
    if arr.ndim != 0:
        raise TypeError(f"metric {name!r}: compute() returned shape {arr.shape}; a baseline compares scalars")
    return float(arr)


def _jsonable(value: Any) -> Any:
    """``value`` as JSON-ready data (tuples as lists, numpy scalars as numbers, the rest repr)."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(float(value)) else repr(float(value))
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    return repr(value)


# --------------------------------------------------------------------------- evaluation
@dataclass
class Evaluated:
    """One run of a model over batches (:func:`evaluate_detailed`).

    Attributes:
        values: ``{metric name: float}``.
        per_sample: ``{metric name: (n,) float64}`` for per-sample metrics.
        metrics: ``{metric name: {"kind", "config", "higher_is_better"}}``.
        data: ``{"fingerprint", "n", "batches", "max_batches"}``: what was measured.
        context: the caller's ``context`` (dataset, split, preprocessing version, ...).
        provenance: recorded only: ``checkpoint``, ``weights`` (fingerprint), ``versions``, ``date``.
    """

    values: dict[str, float]
    per_sample: dict[str, np.ndarray]
    metrics: dict[str, dict[str, Any]]
    data: dict[str, Any]
    context: dict[str, Any]
    provenance: dict[str, Any] = field(default_factory=dict)

    def entry(self) -> dict[str, Any]:
        """The JSON-ready baseline entry (without the per-sample arrays)."""
        return {
            "version": FORMAT_VERSION,
            "values": {k: (v if math.isfinite(v) else None) for k, v in self.values.items()},
            "metrics": self.metrics,
            "data": self.data,
            "context": self.context,
            "provenance": self.provenance,
        }


def evaluate(model: Callable, batches: Iterable[Any], metrics: Mapping[str, Any], **kwargs: Any) -> dict[str, float]:
    """Run ``model`` over ``batches`` and return ``{metric name: value}``.

    Takes the arguments of :func:`evaluate_detailed`.

    Example:
        >>> import numpy as np
        >>> X = np.array([[0.0], [1.0], [2.0], [3.0]]); y = np.array([0, 0, 1, 1])
        >>> model = lambda x: (x[:, 0] > 0.5).astype(int)
        >>> evaluate(model, [(X[:2], y[:2]), (X[2:], y[2:])], {"correct": lambda output, batch: output == batch[1]})
        {'correct': 0.75}
    """
    return evaluate_detailed(model, batches, metrics, **kwargs).values


def evaluate_detailed(
    model: Callable,
    batches: Iterable[Any],
    metrics: Mapping[str, Any],
    *,
    context: Mapping[str, Any] | None = None,
    max_batches: int | None = None,
    inputs: Any = None,
    targets: Any = None,
) -> Evaluated:
    """Run ``model`` over ``batches``: values, per-sample values and provenance.

    Args:
        model: any callable: a scikit-learn estimator's ``predict_proba`` / ``predict``, a numpy
            function, a torch module (run in eval mode under ``torch.no_grad()``; its
            ``training`` flag is restored afterwards; any model with ``eval()``, ``train()`` and
            ``training`` is run the same way).
        batches: an iterable of tuples ``(inputs, targets, ...)`` or dicts of numpy arrays,
            pandas or Arrow data (tensors through ``__array__``). A batch whose target has no
            rows is counted but neither predicted nor measured.
        metrics: ``{name: metric}`` (see :mod:`mergeable_metrics.pipelines.baselines`).
        context: what the data is (dataset, split, preprocessing version, ...): JSON-ready
            values. ``context["checkpoint"]`` is recorded only.
        max_batches: stop after this many batches (None: all); recorded.
        inputs: the model input of a batch: None (the first element of a tuple, or the dict as
            keyword arguments, without its target key), a position or key (``model(batch[k])``),
            a list of keys (``model(**{k: batch[k]})``) or a function of the batch.
        targets: the labels (``y_true``) of a batch, for metric strings and :func:`from_sklearn`
            metrics: None (the second element of a tuple; the one key of :data:`TARGET_KEYS` a
            dict holds, or the one such column of a pandas DataFrame or Arrow batch, which is then
            left out of the model's input), a position, key or column, or a function of the batch.
            A metric that needs labels raises ``ValueError`` naming ``targets=`` when a batch has
            none (or several of those names).

    Returns:
        An :class:`Evaluated`.

    Raises:
        ValueError: a metric's value of the wrong shape (a per-sample value's length differs
            from the batch's: naming the metric and both lengths), non-finite per-sample values,
            batches of changing parts, dtypes or row shapes (naming the metric or part and the
            batch), no labels for a metric that needs them, an empty ``metrics``, a bad
            ``max_batches``.
        TypeError: a metric of an unknown kind, a function whose first parameters are
            ``y_true, y_pred`` (wrap it with :func:`from_sklearn`), a value that is not an array.
    """
    if not metrics:
        raise ValueError("metrics: give at least one metric ({name: metric})")
    if max_batches is not None and (isinstance(max_batches, bool) or not isinstance(max_batches, int) or max_batches < 1):
        raise ValueError(f"max_batches must be a positive integer or None, got {max_batches!r}")
    runners = [_MetricRunner(str(name), m) for name, m in metrics.items()]
    fingerprint = _Fingerprint()
    n_total = 0
    n_batches = 0
    with _EvalMode(model):
        for position, batch in enumerate(batches if max_batches is None else itertools.islice(batches, max_batches)):
            fingerprint.update(batch, position)
            y_true = _target(batch, targets, position)
            if y_true is not None and _rows(y_true, position) == 0:
                n_batches += 1  # an empty batch: nothing to predict or measure (many models refuse 0 rows)
                continue
            output = _call_model(model, batch, inputs, targets, position)
            n = _rows(y_true if y_true is not None else output, position)
            y_arr = None if y_true is None else _as_array(y_true, f"target of batch {position}")
            out_arr = _as_array(output, f"model output of batch {position}")
            for r in runners:
                r.fold(y_arr, output, out_arr, batch, n, position)
            n_total += n
            n_batches += 1
    values: dict[str, float] = {}
    per_sample: dict[str, np.ndarray] = {}
    described: dict[str, dict[str, Any]] = {}
    for r in runners:
        v, ps = r.finish()
        values.update(v)
        per_sample.update(ps)
        for key in v:
            described[key] = {
                "kind": r.kind or "per_batch",
                "config": r.config,
                "higher_is_better": r.higher_is_better.get(key),
                **({"function": r.function} if r.function else {}),
                **({"batch_sizes": r.batch_sizes()} if (r.kind or "per_batch") == "per_batch" else {}),
                **({"group": r.name} if key != r.name else {}),
            }
    ctx = _jsonable(dict(context or {}))
    provenance = {
        "checkpoint": ctx.get("checkpoint"),
        "weights": weights_fingerprint(model),
        "versions": _versions(model),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    data = {"fingerprint": fingerprint.digest(), "n": n_total, "batches": n_batches, "max_batches": max_batches}
    return Evaluated(values, per_sample, described, data, ctx, provenance)


def _rows(value: Any, position: int) -> int:
    if hasattr(value, "num_rows"):
        return int(value.num_rows)
    try:
        return int(len(value))
    except TypeError:
        arr = np.asarray(value)
        if arr.ndim == 0:
            raise ValueError(f"batch {position}: cannot count the samples of a scalar target/output") from None
        return int(arr.shape[0])


def _versions(model: Any) -> dict[str, str]:
    from importlib import metadata  # noqa: PLC0415

    out = {"python": platform.python_version(), "numpy": np.__version__}
    names = ["mergeable-metrics", "scikit-learn"] if type(_owner(model)).__module__.startswith("sklearn") else ["mergeable-metrics"]
    if "torch" in sys.modules:
        names.append("torch")
    for dist in names:
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    return out


# --------------------------------------------------------------------------- comparison
@dataclass
class Comparison:
    """The outcome of :func:`compare`.

    Attributes:
        mismatches: the differences in what was measured (context, data, metrics): each one
            line, e.g. ``context 'split': baseline 'validation', now 'test'``. Any mismatch means
            the values were not compared.
        regressions: one line per metric that got worse by more than its tolerance (and, for
            per-sample metrics, with an interval that excludes zero).
        checked: one line per compared metric (passes included).
        paired: ``{metric name: PairedDifference}`` of the per-sample metrics.
    """

    mismatches: list[str] = field(default_factory=list)
    regressions: list[str] = field(default_factory=list)
    checked: list[str] = field(default_factory=list)
    paired: dict[str, PairedDifference] = field(default_factory=dict)


def _per_metric(option: Any, name: str, default: Any, group: str | None = None) -> Any:
    """``option`` for metric ``name``: the option itself, or its entry for ``name`` (or for the
    metric's ``group``: the name of a collection of several metrics), else ``default``."""
    if isinstance(option, Mapping):
        return option.get(name, option.get(group, default) if group is not None else default)
    return default if option is None else option


def _check_names(option: Any, what: str, metrics: Mapping[str, Mapping[str, Any]]) -> None:
    """A dict option may only name metrics that were measured (or their groups)."""
    if isinstance(option, Mapping):
        known = set(metrics) | {m["group"] for m in metrics.values() if "group" in m}
        unknown = sorted(map(str, set(option) - known))
        if unknown:
            raise ValueError(f"{what}: unknown metric(s) {unknown}; the metrics are {sorted(known)}")


def check_options(run: Evaluated, *, tolerance: Any = 0.01, higher_is_better: Any = None, confidence: float = 0.95, resamples: int = 2000) -> None:
    """Check the comparison options of :func:`compare` for ``run``'s metrics, before any
    comparison (also when a baseline is only recorded).

    Raises:
        ValueError: a dict naming a metric that was not measured, a negative or non-finite
            tolerance, a ``confidence`` outside (0, 1), ``resamples`` outside [1, 1000000].
        TypeError: a tolerance that is not a number, a ``higher_is_better`` that is not a bool.
    """
    _check_names(tolerance, "tolerance", run.metrics)
    _check_names(higher_is_better, "higher_is_better", run.metrics)
    for name, value in tolerance.items() if isinstance(tolerance, Mapping) else [("tolerance", tolerance)]:
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise TypeError(f"tolerance of {name!r} must be a number, got {type(value).__name__}")
        if not (math.isfinite(value) and value >= 0):
            raise ValueError(f"tolerance of {name!r} must be a finite number >= 0, got {value!r}")
    for name, value in higher_is_better.items() if isinstance(higher_is_better, Mapping) else [("higher_is_better", higher_is_better)]:
        if value is not None and not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"higher_is_better of {name!r} must be True, False or None, got {value!r}")
    if not (isinstance(confidence, (int, float)) and not isinstance(confidence, bool) and 0.0 < confidence < 1.0):
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    if isinstance(resamples, bool) or not isinstance(resamples, (int, np.integer)) or not 1 <= resamples <= 1_000_000:
        raise ValueError(f"resamples must be an integer in [1, 1000000], got {resamples!r}")


def check_limits(run: Evaluated, minimum: Any = None, maximum: Any = None) -> list[str]:
    """Failures of the value limits of a run: ``minimum`` / ``maximum`` are a number for every
    metric or a dict per metric name (unknown names raise ``ValueError``)."""
    out = []
    for option, word in ((minimum, "minimum"), (maximum, "maximum")):
        _check_names(option, word, run.metrics)
        for name, value in run.values.items():
            limit = _per_metric(option, name, None, run.metrics[name].get("group"))
            if limit is None:
                continue
            if not math.isfinite(value):
                out.append(f"{name} is undefined (NaN); {word} {limit:g}")
            elif (word == "minimum" and value < limit) or (word == "maximum" and value > limit):
                out.append(f"{name} = {value:.6g} is {'below the minimum' if word == 'minimum' else 'above the maximum'} {limit:g}")
    return out


def compare(
    current: Evaluated,
    baseline: Mapping[str, Any],
    baseline_per_sample: Mapping[str, np.ndarray] | None = None,
    *,
    tolerance: Any = 0.01,
    higher_is_better: Any = None,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> Comparison:
    """Compare a run with a recorded baseline entry (:meth:`Evaluated.entry`).

    First what was measured: ``context`` (all keys but ``checkpoint``), the data fingerprint,
    the sample count, ``max_batches``, the metric names and each metric's kind and
    configuration; every difference is one line of ``mismatches`` and nothing is compared then.
    Otherwise each metric: its drop is ``baseline - current`` (``current - baseline`` when lower
    is better). A per-sample metric regresses when the drop exceeds its tolerance **and** the
    paired bootstrap interval of the drop excludes zero; any other metric when the drop exceeds
    its tolerance. Improvements never fail.

    Args:
        current: this run.
        baseline: the recorded entry.
        baseline_per_sample: the baseline's per-sample arrays (required for per-sample metrics).
        tolerance: the allowed absolute drop: a number, or ``{metric name: number}`` (missing
            names: 0.01; the name of a collection of several metrics applies to each of them;
            a name that was not measured raises ``ValueError``).
        higher_is_better: a bool for every metric or ``{metric name: bool}``; default: the
            registry's for library metrics, else a ``higher_is_better`` attribute of the metric,
            else True.
        confidence, resamples, seed: of :func:`paired_difference`.

    Returns:
        A :class:`Comparison`.
    """
    out = Comparison()
    check_options(current, tolerance=tolerance, higher_is_better=higher_is_better, confidence=confidence, resamples=resamples)
    out.mismatches = _mismatches(current, baseline)
    if out.mismatches:
        return out
    base_values = baseline.get("values") or {}
    for name, value in current.values.items():
        meta = current.metrics[name]
        hib = _per_metric(higher_is_better, name, None, meta.get("group"))
        if hib is None:
            hib = meta.get("higher_is_better")
        if hib is None:
            hib = True
        tol = float(_per_metric(tolerance, name, 0.01, meta.get("group")))
        if name not in base_values:  # an undefined value is recorded as null, never left out
            out.mismatches.append(f"metric {name!r}: no recorded value in the baseline (edited by hand? re-record it)")
            continue
        base = base_values.get(name)
        base = float("nan") if base is None else float(base)
        sign = 1.0 if hib else -1.0
        if math.isnan(value) or math.isnan(base):
            if math.isnan(value) != math.isnan(base):
                out.regressions.append(
                    f"{name} is {'undefined (NaN)' if math.isnan(value) else f'{value:.6g}'} now, baseline {'undefined (NaN)' if math.isnan(base) else f'{base:.6g}'}"
                )
            else:
                out.checked.append(f"{name}: undefined (NaN) in both runs")
            continue
        drop = sign * (base - value)
        if meta["kind"] == "per_sample":
            if baseline_per_sample is None or name not in baseline_per_sample:
                out.mismatches.append(f"metric {name!r}: the baseline's per-sample values are missing")
                continue
            problem = _per_sample_problem(name, base, baseline_per_sample[name], baseline)
            if problem:
                out.mismatches.append(problem)
                continue
            pd = paired_difference(current.per_sample[name], baseline_per_sample[name], confidence=confidence, resamples=resamples, seed=seed)
            out.paired[name] = pd
            lo, hi = sorted((-sign * pd.upper, -sign * pd.lower))  # the interval of the drop
            text = (
                f"{name} {'regressed' if drop > 0 else 'changed'} from {base:.6g} to {value:.6g}: drop {drop:+.3g} "
                f"({confidence:.0%} CI {lo:+.3g} .. {hi:+.3g}, n={pd.n}, paired); allowed drop {tol:g}"
            )
            if drop > tol and lo > 0:
                out.regressions.append(text)
            else:
                out.checked.append(text)
        else:
            text = f"{name} {'regressed' if drop > 0 else 'changed'} from {base:.6g} to {value:.6g}: drop {drop:+.3g}; allowed drop {tol:g}"
            (out.regressions if drop > tol else out.checked).append(text)
    return out


def _per_sample_problem(name: str, value: float, samples: Any, baseline: Mapping[str, Any]) -> str | None:
    """Why a per-sample file does not belong to its entry's value (None when it does): its length
    must be the entry's sample count and its mean the recorded value (a value edited, or a JSON
    merged from another branch with an older ``.npz``, is a mismatch, never compared)."""
    where = f"its per-sample file {baseline.get('per_sample')!r}" if baseline.get("per_sample") else "its per-sample values"
    arr = np.asarray(samples)
    if arr.ndim != 1 or arr.dtype.kind not in "fiub":
        return f"metric {name!r}: {where} holds a {arr.dtype} array of shape {arr.shape}, expected one number per sample (re-record it)"
    n = (baseline.get("data") or {}).get("n")
    if arr.shape[0] != n:
        return f"metric {name!r}: {where} has {arr.shape[0]} samples, the entry {n!r} (the .json and the per-sample file are from different recordings; re-record it)"
    arr = arr.astype(np.float64)
    mean = float(arr.mean()) if arr.size else float("nan")
    if not (math.isclose(mean, value, rel_tol=1e-9, abs_tol=1e-12) or (math.isnan(mean) and math.isnan(value))):
        return (
            f"metric {name!r}: the recorded value {value:.6g} is not the mean of {where} ({mean:.6g} over {arr.shape[0]} "
            f"samples): the .json and the per-sample file are from different recordings (edited, or merged from another "
            f"branch?); re-record it"
        )
    return None


def _entry_problems(baseline: Any) -> list[str]:
    """What makes a (hand-edited) baseline entry unreadable: one line per problem."""
    if not isinstance(baseline, Mapping):
        return [f"the baseline entry is a {type(baseline).__name__}, not a mapping (edited by hand? re-record it)"]
    out = []
    for key in ("context", "data", "metrics", "values"):
        v = baseline.get(key)
        if v is not None and not isinstance(v, Mapping):
            out.append(f"baseline {key!r} is a {type(v).__name__} {_show(v)}, expected a mapping")
    if isinstance(baseline.get("metrics"), Mapping):
        for name, m in baseline["metrics"].items():
            if not isinstance(m, Mapping):
                out.append(f"baseline metric {name!r} is a {type(m).__name__} {_show(m)}, expected a mapping of its kind and config")
    if isinstance(baseline.get("values"), Mapping):
        for name, v in baseline["values"].items():
            if not (v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))):
                out.append(f"baseline value of {name!r} is a {type(v).__name__} {_show(v)}, expected a number or null")
    return out


def _mismatches(current: Evaluated, baseline: Mapping[str, Any]) -> list[str]:
    out = _entry_problems(baseline)
    if out:
        return out
    if baseline.get("version") != FORMAT_VERSION:
        out.append(f"baseline format version {baseline.get('version')!r}, this plugin writes {FORMAT_VERSION}")
        return out
    bctx = {k: v for k, v in (baseline.get("context") or {}).items() if k not in RECORDED_ONLY_CONTEXT}
    cctx = {k: v for k, v in current.context.items() if k not in RECORDED_ONLY_CONTEXT}
    for key in sorted(set(bctx) | set(cctx)):
        if bctx.get(key, _MISSING) != cctx.get(key, _MISSING):
            out.append(f"context {key!r}: baseline {_show(bctx.get(key, _MISSING))}, now {_show(cctx.get(key, _MISSING))}")
    bdata = baseline.get("data") or {}
    labels = {"fingerprint": "data fingerprint (inputs and labels, in order)", "n": "sample count", "max_batches": "max_batches"}
    for key, label in labels.items():
        if bdata.get(key) != current.data.get(key):
            out.append(f"{label}: baseline {_show(bdata.get(key))}, now {_show(current.data.get(key))}")
    bmetrics = baseline.get("metrics") or {}
    for name in sorted(set(bmetrics) - set(current.metrics)):
        out.append(f"metric {name!r}: in the baseline, not measured now")
    for name in sorted(set(current.metrics) - set(bmetrics)):
        out.append(f"metric {name!r}: measured now, not in the baseline")
    for name in sorted(set(bmetrics) & set(current.metrics)):
        b, c = bmetrics[name], current.metrics[name]
        if b.get("kind") != c.get("kind"):
            out.append(f"metric {name!r} kind: baseline {_show(b.get('kind'))}, now {_show(c.get('kind'))}")
        elif c.get("kind") == "per_batch" and _normal(b.get("batch_sizes", _MISSING)) != _normal(c.get("batch_sizes")):
            out.append(
                f"metric {name!r} is per batch (one value per batch, averaged), so its value depends on the batching: "
                f"batch sizes baseline {_describe_sizes(b.get('batch_sizes', _MISSING))}, now {_describe_sizes(c.get('batch_sizes'))} "
                f"(batch as recorded, or use a per-sample or library metric, which do not depend on it)"
            )
        if b.get("kind") == c.get("kind") and _normal(b.get("config")) != _normal(c.get("config")):
            bc, cc = b.get("config"), c.get("config")
            if isinstance(bc, Mapping) and isinstance(cc, Mapping):
                for key in sorted(set(bc) | set(cc)):
                    if _normal(bc.get(key, _MISSING)) != _normal(cc.get(key, _MISSING)):
                        out.append(f"metric {name!r} config {key!r}: baseline {_show(bc.get(key, _MISSING))}, now {_show(cc.get(key, _MISSING))}")
            else:
                out.append(f"metric {name!r} config: baseline {_show(bc)}, now {_show(cc)}")
    return out


class _Missing:
    def __repr__(self) -> str:
        return "(absent)"


_MISSING = _Missing()


def _show(value: Any) -> str:
    return "(absent)" if value is _MISSING else repr(value) if not isinstance(value, (dict, list)) else json.dumps(value, sort_keys=True)


def _normal(value: Any) -> Any:
    """A config as it reads back from JSON (tuples -> lists), for comparisons."""
    if value is _MISSING:
        return value
    return json.loads(json.dumps(value, sort_keys=True, default=repr))


def describe_provenance(entry: Mapping[str, Any]) -> str:
    """One line: the checkpoint, weights fingerprint, versions and date of an entry."""
    p = (entry.get("provenance") if isinstance(entry, Mapping) else None) or {}
    p = p if isinstance(p, Mapping) else {}  # a hand-edited entry: compare() lists its problems
    v = p.get("versions") or {}
    versions = ", ".join(f"{k} {x}" for k, x in sorted(v.items())) if isinstance(v, Mapping) else repr(v)
    return f"checkpoint {p.get('checkpoint')!r}, weights {p.get('weights')}, {versions}, recorded {p.get('date')}"
