"""Thresholds on metric values, and the checks ``python -m mergeable_metrics.pipelines.validate`` runs.

The engine-free logic behind the regression gate (``mergeable_metrics.pipelines.validate``: its
module docstring and docs/cli.md give the thresholds file and the rules), the Beam transform
``mergeable_metrics.beam.ValidateMetrics`` and the pipeline-test helpers
(``mergeable_metrics.beam.testing``, ``mergeable_metrics.spark.testing``): one check, one message.

* :func:`parse_thresholds`: a parsed thresholds mapping (YAML/JSON read by the caller) to :class:`Thresholds`;
* :func:`compare`: two ``metrics.json`` documents (``Results.to_dict()``; the baseline optional)
  checked slice by slice (the content of ``validation.json``);
* :func:`check_value`: one value against one bound (``minimum``, ``maximum``, ``equal`` within a
  tolerance), the row and message every check shares: ``"country=US: accuracy 0.75 < minimum 0.8"``.

Errors in the thresholds raise :class:`ThresholdsError` (a ``ValueError``) naming the key and the problem.
"""

from __future__ import annotations

import difflib
import json
import math
import numbers
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence


class ThresholdsError(ValueError):
    """Thresholds that are invalid or name a metric, spec or slice the results do not hold."""


def _tname(v: Any) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean", int: "an integer", float: "a number", type(None): "null"}.get(
        type(v), type(v).__name__
    )


def _closest(word: str, choices: Iterable[str]) -> str:
    m = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {m[0]!r}?)" if m else ""


def _string(key: str, v: Any) -> str:
    if not isinstance(v, str):
        raise ValueError(f"expected a string, got {_tname(v)} {v!r}")
    if not v.strip():
        raise ValueError("expected a non-empty string")
    return v


def _check_metric(text: str) -> None:
    from mergeable_metrics.metrics.base import REGISTRY, parse_metric_string

    name, _, _ = parse_metric_string(text)
    if name not in REGISTRY and name.lower() not in REGISTRY:
        raise ValueError(f"unknown metric {name!r}{_closest(name, REGISTRY)}; see the metrics table (docs/metrics.md)")


#: exit codes of the gate (``compare``'s ``exit_code``): every check passes, a regression, a mismatch or bad input
EXIT_OK, EXIT_REGRESSION, EXIT_MISMATCH = 0, 1, 2

TOP_KEYS = ("metrics", "slices", "min_slice_size", "allow_differences")
METRIC_KEYS = ("minimum", "maximum", "change", "higher_is_better")
CHANGE_KEYS = ("absolute", "relative")
ENTRY_KEYS = ("spec", "slice", "metrics")
#: the ``allow_differences`` entry for the data: overall ``n`` and slices on one side only
DATA = "data"
#: config keys of the intervals and the paired comparison (``Evaluation``'s ``ci*``, ``id_col``,
#: ``baseline_*``, ``tolerance``): they change no metric value, so they may differ between the runs
INTERVAL_KEYS = frozenset(
    {"ci", "ci_level", "ci_replicates", "ci_seed", "ci_prior", "id_col", "baseline_score_col", "baseline_prediction_col", "tolerance", "comparison"}
)
#: state kinds a baseline model adds (``baseline_score_col``): they hold the comparison, not the metric values
_BASELINE_STATES = ("paired_confusion ",)
#: interval settings that must agree when both runs have intervals (``ci.method``, ``ci.level``)
CI_COMPARED = ("method", "level")
#: statuses of a check that make the run a regression
FAILING = frozenset({"fail"})

# ----------------------------------------------------------------------------------------------
# the thresholds file
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MetricThreshold:
    """The thresholds of one metric (``None`` = not set).

    Attributes:
        minimum, maximum: value thresholds: the current value must be ``>= minimum`` / ``<= maximum``.
        absolute: allowed worsening against the baseline, in the metric's units.
        relative: allowed worsening as a fraction of ``|baseline|``.
        higher_is_better: overrides the registry's direction for the change thresholds.
    """

    minimum: float | None = None
    maximum: float | None = None
    absolute: float | None = None
    relative: float | None = None
    higher_is_better: bool | None = None

    @property
    def empty(self) -> bool:
        return self.minimum is None and self.maximum is None and self.absolute is None and self.relative is None


@dataclass(frozen=True)
class SliceThresholds:
    """One entry of ``slices:``: a spec (its columns) or one slice, and its metrics' thresholds."""

    where: str  # "slices[i]" for messages
    spec: frozenset[str] | None
    slice: dict[str, Any] | None
    metrics: dict[str, MetricThreshold]


@dataclass(frozen=True)
class Thresholds:
    """A parsed ``--thresholds`` file (see the module docstring for its shape)."""

    source: str
    metrics: dict[str, MetricThreshold] = field(default_factory=dict)
    slices: list[SliceThresholds] = field(default_factory=list)
    min_slice_size: float | None = None
    allow_differences: frozenset[str] = frozenset()


def _keys(where: str, data: Any, known: Sequence[str], what: str) -> dict[str, Any]:
    """``data`` as a mapping with only ``known`` keys (ValueError naming the unknown one)."""
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected a mapping of {what}, got {_tname(data)}" + (f" {data!r}" if not isinstance(data, (list, dict)) else ""))
    for k in data:
        if not isinstance(k, str) or k not in known:
            raise ValueError(f"{where}: unknown key {k!r}{_closest(str(k), known)}; known keys: {', '.join(known)}")
    return data


def _number(where: str, v: Any, nonnegative: bool = False) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        hint = " (write it without quotes)" if isinstance(v, str) else ""
        raise ValueError(f"{where}: expected a number, got {_tname(v)} {v!r}{hint}")
    if not math.isfinite(v):
        raise ValueError(f"{where}: expected a finite number, got {v!r}")
    if nonnegative and v < 0:
        raise ValueError(f"{where}: the allowed worsening must be >= 0, got {v!r} (the direction comes from higher_is_better)")
    return float(v)


def _metric_threshold(where: str, data: Any) -> MetricThreshold:
    if data is None:
        data = {}
    d = _keys(where, data, METRIC_KEYS, "minimum / maximum / change / higher_is_better")
    out: dict[str, Any] = {}
    for k in ("minimum", "maximum"):
        if d.get(k) is not None:
            out[k] = _number(f"{where}.{k}", d[k])
    if d.get("change") is not None:
        c = _keys(f"{where}.change", d["change"], CHANGE_KEYS, "absolute / relative")
        for k in CHANGE_KEYS:
            if c.get(k) is not None:
                out[k] = _number(f"{where}.change.{k}", c[k], nonnegative=True)
    if d.get("higher_is_better") is not None:
        if not isinstance(d["higher_is_better"], bool):
            raise ValueError(f"{where}.higher_is_better: expected true or false, got {_tname(d['higher_is_better'])} {d['higher_is_better']!r}")
        out["higher_is_better"] = d["higher_is_better"]
    if "minimum" in out and "maximum" in out and out["minimum"] > out["maximum"]:
        raise ValueError(f"{where}: minimum {out['minimum']:g} is above maximum {out['maximum']:g}")
    return MetricThreshold(**out)


def _metrics(where: str, data: Any) -> dict[str, MetricThreshold]:
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected a mapping of metric: thresholds, got {_tname(data)}")
    out = {}
    for k, v in data.items():
        key = _string(where, k).strip() if isinstance(k, str) else None
        if key is None:
            raise ValueError(f"{where}: metric names are strings, got {_tname(k)} {k!r}")
        try:
            _check_metric(key)
        except ValueError as e:
            raise ValueError(f"{where}.{key}: {e}") from None
        out[key] = _metric_threshold(f"{where}.{key}", v)
    return out


def spec_columns(spec: Any) -> frozenset[str]:
    """The columns a slice spec names: ``"carrier"``, ``"carrier,origin"``, ``[carrier, origin]``,
    or a spec string of ``--slice`` (``"tailnum;max_slices=50"``, ``"dep_delay:edges=0|60"``,
    ``"origin=JFK|LGA"``: bounds, buckets and filters are dropped)."""
    parts = spec if isinstance(spec, list) else str(spec).split(";", 1)[0].split(",")
    cols = []
    for p in parts:
        if not isinstance(p, str):
            raise ValueError(f'a slice spec is a column name, "a,b" or a list of column names, got {_tname(p)} {p!r}')
        c = p.split(":", 1)[0].split("=", 1)[0].strip()
        if not c:
            raise ValueError(f"empty column name in slice spec {spec!r}")
        cols.append(c)
    return frozenset(cols)


def parse_thresholds(data: dict[str, Any], source: str = "thresholds") -> Thresholds:
    """Check a parsed thresholds mapping (see the module docstring).

    Raises:
        ThresholdsError: ``thresholds 'FILE': KEY: problem`` for an unknown key (with the closest known
            key), a value of the wrong type, a negative allowed change, minimum above maximum, an
            unknown metric name (with the closest registered name) or a bad slice entry.
    """
    where = f"thresholds {source!r}"
    try:
        _keys("top level", data, TOP_KEYS, "metrics / slices / min_slice_size / allow_differences")
        metrics = _metrics("metrics", data["metrics"]) if data.get("metrics") is not None else {}
        entries = []
        raw = data.get("slices") or []
        if not isinstance(raw, list):
            raise ValueError(f"slices: expected a list of {{spec: ..., metrics: ...}} or {{slice: {{...}}, metrics: ...}} entries, got {_tname(raw)}")
        for i, e in enumerate(raw):
            w = f"slices[{i}]"
            _keys(w, e, ENTRY_KEYS, "spec / slice / metrics")
            if ("spec" in e) == ("slice" in e):
                raise ValueError(f"{w}: give exactly one of spec (a slice spec's columns) or slice (one slice, e.g. {{carrier: UA}})")
            spec = one = None
            if "spec" in e:
                try:
                    spec = spec_columns(e["spec"])
                except ValueError as err:
                    raise ValueError(f"{w}.spec: {err}") from None
            else:
                if not isinstance(e["slice"], (dict, str)):
                    raise ValueError(
                        f'{w}.slice: expected a mapping of column: value ({{}} is the overall slice) or a slice name ("carrier=OO"), got {_tname(e["slice"])}'
                    )
                one = dict(e["slice"]) if isinstance(e["slice"], dict) else e["slice"]  # a name: found in the results
            if e.get("metrics") is None:
                raise ValueError(f"{w}: metrics is missing (a mapping of metric: thresholds)")
            entries.append(SliceThresholds(w, spec, one, _metrics(f"{w}.metrics", e["metrics"])))
        mss = None
        if data.get("min_slice_size") is not None:
            mss = _number("min_slice_size", data["min_slice_size"], nonnegative=True)
        allow = data.get("allow_differences") or []
        if isinstance(allow, str):
            allow = [a.strip() for a in allow.split(",") if a.strip()]
        if not isinstance(allow, list) or not all(isinstance(a, str) for a in allow):
            raise ValueError(f"allow_differences: expected a list of config keys (or {DATA!r}), got {_tname(allow)}")
    except ValueError as e:
        raise ThresholdsError(f"{where}: {e}") from None
    return Thresholds(source, metrics, entries, mss, frozenset(allow))


def _hashable(v: Any) -> Any:
    return tuple(_hashable(x) for x in v) if isinstance(v, list) else v


def _slice_id(s: dict[str, Any]) -> tuple:
    return tuple((c, _hashable(v)) for c, v in s.items())


def _slice_name(s: dict[str, Any]) -> str:
    from mergeable_metrics.slicing.assign import slice_name

    return slice_name(tuple(s.items()))


def _entry_id(entry: dict[str, Any]) -> tuple:
    """A metrics.json slice entry's identity: its window (None outside windows) and its key."""
    return (entry.get("window_start"), entry.get("window_end"), _slice_id(entry["slice"]))


def _entry_window(entry: dict[str, Any]) -> dict[str, Any]:
    """``{"window_start", "window_end"}`` of a windowed entry (``{}`` outside windows)."""
    return {} if entry.get("window_start") is None else {"window_start": entry["window_start"], "window_end": entry.get("window_end")}


def _entry_name(entry: dict[str, Any]) -> str:
    """``country=FR``, or with a window ``country=FR, window 2013-01-01T05:00:00+00:00/2013-01-01T06:00:00+00:00``."""
    name = _slice_name(entry["slice"])
    return name if entry.get("window_start") is None else f"{name}, window {entry['window_start']}/{entry.get('window_end')}"


def _entry_ref(entry: dict[str, Any]) -> dict[str, Any]:
    """How a report lists a slice entry: its key; with a window ``{"slice", "window_start", "window_end"}``."""
    return entry["slice"] if entry.get("window_start") is None else {"slice": entry["slice"], **_entry_window(entry)}


# ----------------------------------------------------------------------------------------------
# comparing
# ----------------------------------------------------------------------------------------------


def _direction(key: str) -> bool | None:
    from mergeable_metrics.metrics.base import REGISTRY, parse_metric_string

    name = parse_metric_string(key)[0]
    cls = REGISTRY.get(name) or REGISTRY.get(name.lower())
    return None if cls is None else cls.higher_is_better


def _canonical(key: str, config: dict[str, Any]) -> str | None:
    """The results key ``core`` gives metric string ``key`` under the results' task, else None."""
    from mergeable_metrics.metrics.base import resolve
    from mergeable_metrics.inputs.task import Task

    try:
        kind = config.get("task")
        task = Task(num_classes=config.get("num_classes") or 2, kind=kind, multiclass=bool(config.get("multiclass")))
        return resolve(key, task).key
    except (ValueError, TypeError):
        return None


def match_metric(key: str, available: Sequence[str], config: dict[str, Any]) -> str:
    """The results key a thresholds file's metric name stands for.

    An exact key, the canonical key of the metric string (aliases, parameter order), or -- for a
    bare name such as ``roc_auc`` -- the one results key of that metric (``roc_auc@capacity=1000``).

    Raises:
        ValueError: not in the results, or a bare name matching several keys (``f1@macro``, ``f1@micro``).
    """
    from mergeable_metrics.metrics.base import REGISTRY, parse_metric_string

    if key in available:
        return key
    canon = _canonical(key, config)
    if canon in available:
        return canon
    name, pos, kw = parse_metric_string(key)
    cls = REGISTRY.get(name) or REGISTRY.get(name.lower())
    if not pos and not kw and cls is not None:
        same = [a for a in available if (REGISTRY.get(parse_metric_string(a)[0]) is cls)]
        if len(same) == 1:
            return same[0]
        if same:
            raise ValueError(f"{key!r} matches several metrics of the results: {', '.join(same)}; name one")
    raise ValueError(f"metric {key!r} is not in the results{_closest(key, available)}; the results hold: {', '.join(available)}")


def _interval(v: Any) -> tuple[float, float] | None:
    if isinstance(v, (list, tuple)) and len(v) == 2 and all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in v):
        return float(v[0]), float(v[1])
    return None


def _scalar(v: Any) -> bool:
    return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))


def _default_ci_level() -> float:
    try:
        from mergeable_metrics.evaluation.options import OPTIONS

        return next(o.default for o in OPTIONS if o.name == "ci_level")
    except (ImportError, StopIteration):  # before mergeable_metrics.evaluation.options has ci_level
        return 0.95


def ci_settings(config: dict[str, Any]) -> dict[str, Any] | None:
    """``{"method", "level"}`` of a results config's confidence intervals; None without intervals.

    Reads both shapes: ``Evaluation``'s options (``"ci": "bootstrap"``, ``"ci_level": 0.9``; an
    absent ``ci_level`` is its default) and a nested ``"ci": {"method", "level", ...}``.
    """
    ci = config.get("ci")
    if isinstance(ci, dict):
        return {"method": ci.get("method"), "level": ci.get("level", _default_ci_level())}
    if isinstance(ci, str):
        return {"method": ci, "level": config.get("ci_level", _default_ci_level())}
    return None


def config_differences(current: dict[str, Any], baseline: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The differences of two results configs: ``(differences, interval_differences)``, each a list
    of ``{"key", "current", "baseline"}``.

    ``differences`` are those that change what the metric values mean: every key but
    :data:`INTERVAL_KEYS` (``metrics``, ``states`` and ``slices`` compared as sets: their order
    changes nothing), plus ``ci.method`` and ``ci.level`` when both runs have intervals.
    ``interval_differences`` are the :data:`INTERVAL_KEYS` that differ (seed, replicates, a
    baseline column, ...): they change no metric value and are only reported.
    """
    out, interval = [], []
    for k in sorted(set(current) | set(baseline)):
        c, b = current.get(k), baseline.get(k)
        if c == b:
            continue
        if k in INTERVAL_KEYS:
            interval.append({"key": k, "current": c, "baseline": b})
        elif k in ("metrics", "states", "slices") and isinstance(c, list) and isinstance(b, list):
            if k == "states":  # a baseline model's states (the comparison) change no metric value
                c, b = ([x for x in v if not (isinstance(x, str) and x.startswith(_BASELINE_STATES))] for v in (c, b))
            cs, bs = {json.dumps(x) for x in c}, {json.dumps(x) for x in b}
            if cs != bs:
                out.append({"key": k, "current": c, "baseline": b,
                            "only_current": [json.loads(x) for x in sorted(cs - bs)], "only_baseline": [json.loads(x) for x in sorted(bs - cs)]})  # fmt: skip
        else:
            out.append({"key": k, "current": c, "baseline": b})
    ci_c, ci_b = ci_settings(current), ci_settings(baseline)
    if ci_c is not None and ci_b is not None:
        for f in CI_COMPARED:
            if ci_c[f] != ci_b[f]:
                out.append({"key": f"ci.{f}", "current": ci_c[f], "baseline": ci_b[f]})
    return out, interval


class _Resolver:
    """Which thresholds apply to (slice, metric): the slice's entry, else its spec's, else global."""

    def __init__(
        self,
        thresholds: Thresholds,
        available: list[str],
        config: dict[str, Any],
        slices: list[dict[str, Any]],
        every: list[dict[str, Any]],
        suppressed: dict[frozenset, int] | None = None,
    ):
        """``slices``: the compared slices' metrics.json entries (both sides); ``every``: every slice key of either side;
        ``suppressed``: spec (its columns) -> how many of its slices a side suppressed (min_slice_size)."""
        where = f"thresholds {thresholds.source!r}"

        def maybe_suppressed(columns: Iterable[str]) -> str:
            spec = frozenset(columns)
            k = (suppressed or {}).get(spec)
            if not k:
                return ""
            size = config.get("min_slice_size")
            return (
                f"; {k} slice{'s' if k != 1 else ''} of spec {','.join(sorted(spec))!r} {'were' if k != 1 else 'was'} suppressed "
                f"(fewer than min_slice_size={f'{size:g}' if isinstance(size, (int, float)) else size} rows), it may be one of them: name a slice the results report"
            )

        specs = {frozenset(s) for s in every}
        ids = {_slice_id(s): s for s in every}

        def resolve(section: str, metrics: dict[str, MetricThreshold]) -> dict[str, MetricThreshold]:
            out = {}
            for k, t in metrics.items():
                try:
                    key = match_metric(k, available, config)
                except ValueError as e:
                    raise ThresholdsError(f"{where}: {section}.{k}: {e}") from None
                if key in out:
                    raise ThresholdsError(f"{where}: {section}: {k!r} and another name both stand for {key!r}")
                if not t.empty and not _scalar_metric(key, slices):
                    raise ThresholdsError(f"{where}: {section}.{k}: {key!r} is not a scalar metric (its values are arrays); thresholds apply to scalar metrics")
                hib = t.higher_is_better if t.higher_is_better is not None else _direction(key)
                if (t.absolute is not None or t.relative is not None) and hib is None:
                    raise ThresholdsError(
                        f"{where}: {section}.{k}: {key!r} has no direction (higher_is_better is null in the registry); add higher_is_better: true or false for its change threshold"
                    )
                out[key] = t
            return out

        self.global_ = resolve("metrics", thresholds.metrics)
        self.by_spec: dict[frozenset, dict[str, MetricThreshold]] = {}
        self.by_slice: dict[frozenset, dict[str, MetricThreshold]] = {}
        for e in thresholds.slices:
            if e.spec is not None:
                if e.spec not in specs:
                    known = sorted(",".join(sorted(s)) for s in specs if s)
                    raise ThresholdsError(
                        f"{where}: {e.where}.spec: no slices of spec {','.join(sorted(e.spec))!r} in the results{_closest(','.join(sorted(e.spec)), known)}; specs: {', '.join(known) or '(none)'}"
                    )
                target, key = self.by_spec, e.spec
            else:
                one = e.slice
                if isinstance(one, str):  # a slice name, as Results["carrier=OO"] takes it
                    one = next((x for x in every if _slice_name(x) == one), None)
                    if one is None:
                        columns = [p.split("=", 1)[0] for p in e.slice.split(", ")]
                        raise ThresholdsError(
                            f"{where}: {e.where}.slice: no slice {e.slice!r} in the results{_closest(e.slice, [_slice_name(x) for x in every])}"
                            + maybe_suppressed(columns)
                        )
                key = frozenset((c, _hashable(v)) for c, v in one.items())
                if not any(frozenset(i) == key for i in ids):
                    names = [_slice_name(s) for s in every]
                    raise ThresholdsError(
                        f"{where}: {e.where}.slice: no slice {_slice_name(one)!r} in the results{_closest(_slice_name(one), names)}" + maybe_suppressed(one)
                    )
                target = self.by_slice
            if key in target:
                raise ThresholdsError(f"{where}: {e.where}: a second entry for the same {'spec' if e.spec is not None else 'slice'}")
            target[key] = resolve(f"{e.where}.metrics", e.metrics)
        self.mentioned = set(self.global_) | {k for d in (*self.by_spec.values(), *self.by_slice.values()) for k, t in d.items() if not t.empty}

    def get(self, s: dict[str, Any], key: str) -> MetricThreshold | None:
        one = self.by_slice.get(frozenset((c, _hashable(v)) for c, v in s.items()), {})
        if key in one:
            return one[key]
        spec = self.by_spec.get(frozenset(s), {})
        if key in spec:
            return spec[key]
        return self.global_.get(key)


def _scalar_metric(key: str, slices: list[dict[str, Any]]) -> bool:
    return all(_scalar(s.get("metrics", {}).get(key)) for s in slices)


def format_value(v: Any, exact: bool = False) -> str:
    """A value in a check's message: ``null`` for undefined, floats to 6 significant digits (all of them with ``exact``)."""
    if v is None:
        return "null"
    if isinstance(v, float):
        return repr(v) if exact else f"{v:.6g}"
    return str(v)


_fmt = format_value

#: the checks of one value against one bound (:func:`check_value`)
VALUE_CHECKS = ("minimum", "maximum", "equal")
_NO_BASELINE = object()


def _defined(v: Any) -> Any:
    """``v`` as a check reads it: None for undefined (None or NaN), a Python float or int otherwise."""
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        try:
            v = float(v)  # numpy scalars
        except (TypeError, ValueError):
            raise TypeError(f"a metric value is a number, got {type(v).__name__} {v!r} (thresholds apply to scalar metrics)") from None
    return None if isinstance(v, float) and math.isnan(v) else v


def check_value(metric: str, kind: str, value: Any, bound: float, *, rtol: float = 0.0, atol: float = 0.0, baseline: Any = _NO_BASELINE) -> dict[str, Any]:
    """One value of one metric against one bound: the check row every gate and test helper shares.

    Args:
        metric: the metric's key (``"accuracy"``, ``"f1@macro"``), named in the message.
        kind: ``"minimum"`` (``value >= bound`` passes), ``"maximum"`` (``value <= bound``) or
            ``"equal"`` (``|value - bound| <= atol + rtol * |bound|``, numpy's ``isclose``).
        value: the metric's value; None or NaN is undefined, which fails (without a baseline;
            :func:`compare` passes ``baseline``: undefined on both sides is ``"undefined"`` and passes).
        bound: the threshold, or the expected value of ``"equal"``.
        rtol, atol: the tolerance of ``"equal"``.

    Returns:
        ``{"metric", "check", "current", "baseline", "threshold", "status", "message"}`` (plus
        ``rtol``, ``atol`` and ``allowed`` for ``"equal"``); ``status`` is ``"pass"``, ``"fail"``
        or ``"undefined"``; the message names the metric, the value and the bound, e.g.
        ``accuracy 0.75 < minimum 0.8`` or ``accuracy 0.7 != expected 0.75 (differs by 0.05, allowed 7.5e-06)``.
        The caller prefixes the slice (``"country=US: ..."``).

    >>> check_value("accuracy", "minimum", 0.75, 0.8)["message"]
    'accuracy 0.75 < minimum 0.8'
    """
    if kind not in VALUE_CHECKS:
        raise ValueError(f"check must be one of {', '.join(VALUE_CHECKS)}, got {kind!r}")
    has_base = baseline is not _NO_BASELINE
    base = _defined(baseline) if has_base else None
    cur = _defined(value)
    row: dict[str, Any] = {"metric": metric, "check": kind, "current": cur, "baseline": base, "threshold": bound}
    if kind == "equal":
        allowed = atol + rtol * abs(bound)
        row.update(rtol=rtol, atol=atol, allowed=allowed)
    if cur is None:
        row["status"] = "undefined" if has_base and base is None else "fail"
        what = "expected" if kind == "equal" else kind
        if not has_base:
            row["message"] = f"{metric} is undefined; {what} {_fmt(bound, kind == 'equal')}"
        else:
            row["message"] = f"{metric} is undefined" + (" (also in the baseline)" if base is None else f" (baseline {_fmt(base)}); {kind} {_fmt(bound)}")
        return row
    if kind == "equal":
        diff = 0.0 if cur == bound else abs(cur - bound)
        # numpy's isclose: an infinity equals only itself (rtol * inf would admit any value)
        bad = cur != bound if math.isinf(cur) or math.isinf(bound) else not diff <= allowed
        row["status"] = "fail" if bad else "pass"
        op = "!=" if bad else "=="
        row["message"] = f"{metric} {_fmt(cur, True)} {op} expected {_fmt(bound, True)} (differs by {_fmt(float(diff))}, allowed {_fmt(float(allowed))})"
        return row
    bad = cur < bound if kind == "minimum" else cur > bound
    row["status"] = "fail" if bad else "pass"
    row["message"] = f"{metric} {_fmt(cur)} {('<' if bad else '>=') if kind == 'minimum' else ('>' if bad else '<=')} {kind} {_fmt(bound)}"
    return row


def rule_text(c: dict[str, Any]) -> str:
    """A check's rule in words: ``>= 0.8``, ``<= 0.4``, ``== 0.75 ± 1e-08``, ``worse by <= 0.01``, ``worse by <= 5% = 0.0137``."""
    if c["check"] == "minimum":
        return f">= {_fmt(c['threshold'])}"
    if c["check"] == "maximum":
        return f"<= {_fmt(c['threshold'])}"
    if c["check"] == "equal":
        return f"== {_fmt(c['threshold'], True)} ± {_fmt(c['allowed'])}"
    if c["check"] == "absolute":
        return f"worse by <= {_fmt(c['threshold'])}"
    pct = f"{100 * c['threshold']:.4g}%"
    return f"worse by <= {pct}" + (f" = {_fmt(c['allowed'])}" if c.get("allowed") is not None else "")


def _check(metric: str, kind: str, t: MetricThreshold, hib: bool | None, cur: Any, base: Any, cs: dict, bs: dict) -> dict[str, Any]:
    """One check of one metric of one slice (see the module docstring for the rules)."""
    if kind in ("minimum", "maximum"):
        return check_value(metric, kind, cur, t.minimum if kind == "minimum" else t.maximum, baseline=base)
    row: dict[str, Any] = {"metric": metric, "check": kind, "current": cur, "baseline": base}
    # change thresholds
    row.update(higher_is_better=hib, threshold=t.absolute if kind == "absolute" else t.relative)
    if cur is None or base is None:
        row["status"] = "undefined" if cur is None and base is None else ("fail" if cur is None else "no_baseline")
        row["message"] = {
            "undefined": f"{metric} is undefined in both runs",
            "fail": f"{metric} became undefined (baseline {_fmt(base)})",
            "no_baseline": f"{metric} is undefined in the baseline: no change to check",
        }[row["status"]]
        return row
    change = cur - base
    worse = -change if hib else change
    allowed = t.absolute if kind == "absolute" else t.relative * abs(base)
    row.update(change=change, worse_by=worse, allowed=allowed)
    what = f"allowed {_fmt(allowed)}" + (f" ({_fmt(t.relative)} of |baseline|)" if kind == "relative" else "")
    desc = f"{metric} {_fmt(base)} -> {_fmt(cur)}"
    if worse <= allowed:
        row["status"] = "pass"
        row["message"] = f"{desc}: " + (f"worse by {_fmt(worse)}, {what}" if worse > 0 else "not worse")
        return row
    row["message"] = f"{desc}: worse by {_fmt(worse)}, {what}"
    paired = (cs.get("comparison") or {}).get(metric) if isinstance(cs.get("comparison"), dict) else None
    pci = _interval(paired.get("ci")) if isinstance(paired, dict) else None
    if pci is not None:
        delta = paired.get("delta")
        if isinstance(delta, (int, float)) and math.isclose(delta, change, rel_tol=1e-9, abs_tol=1e-12):
            lo, hi = (-pci[1], -pci[0]) if hib else pci
            row.update(rule="paired", interval=list(pci), verdict=paired.get("verdict"))
            if lo <= 0:
                row["status"] = "within_ci"
                row["message"] += f"; within noise: the paired interval of the change [{_fmt(pci[0])}, {_fmt(pci[1])}] includes zero"
            else:
                row["status"] = "fail"
                row["message"] += f"; the paired interval of the change [{_fmt(pci[0])}, {_fmt(pci[1])}] excludes zero"
            return row
        row["note"] = (
            f"the paired comparison in the current results has delta {_fmt(delta)}, not this change {_fmt(change)}: it compares another baseline; not used"
        )
    ci_c, ci_b = _interval((cs.get("ci") or {}).get(metric)), _interval((bs.get("ci") or {}).get(metric))
    if ci_c is not None or ci_b is not None:
        a, b = ci_c or (cur, cur), ci_b or (base, base)
        row.update(rule="overlap", current_ci=list(ci_c) if ci_c else None, baseline_ci=list(ci_b) if ci_b else None)
        overlap = max(a[0], b[0]) <= min(a[1], b[1])
        shown = f"current [{_fmt(a[0])}, {_fmt(a[1])}], baseline [{_fmt(b[0])}, {_fmt(b[1])}]"
        row["status"] = "within_ci" if overlap else "fail"
        row["message"] += f"; within noise: the intervals overlap ({shown})" if overlap else f"; the intervals do not overlap ({shown})"
        return row
    row.update(rule="none", status="fail")
    return row


def compare(current: dict[str, Any], baseline: dict[str, Any] | None, thresholds: Thresholds) -> dict[str, Any]:
    """Compare two metrics.json documents slice by slice (the content of ``validation.json``).

    Without a baseline (``None``) only the value thresholds (``minimum``, ``maximum``) are
    checked; each change threshold gives a ``no_baseline`` check (it passes) and there are no
    mismatches.

    Returns:
        A mapping with ``status`` (``ok``, ``regression``, ``mismatch``), ``exit_code`` (0, 1,
        2), ``mismatches``, ``allowed_differences``, ``slices_only_in_current``,
        ``slices_only_in_baseline``, ``checks``, ``failures``, ``metrics_without_thresholds``,
        ``unchecked_slices`` and ``summary``; each check has ``slice``, ``slice_name``, ``metric``, ``check``
        (``minimum``, ``maximum``, ``absolute``, ``relative``), ``current``, ``baseline``, ``status``
        (``pass``, ``fail``, ``within_ci``, ``undefined``, ``no_baseline``) and ``message``.

    Raises:
        ThresholdsError: the thresholds name a metric, spec or slice the results do not hold.
    """
    no_base = baseline is None
    if baseline is None:  # value thresholds only: the current results stand on both sides
        baseline = current
    allow = thresholds.allow_differences
    cconf, bconf = current.get("config") or {}, baseline.get("config") or {}
    known = sorted(set(cconf) | set(bconf) | INTERVAL_KEYS | {f"ci.{f}" for f in CI_COMPARED} | {DATA})
    for a in sorted(allow):
        if a not in known:
            raise ThresholdsError(f"thresholds {thresholds.source!r}: allow_differences: unknown key {a!r}{_closest(a, known)}; known: {', '.join(known)}")
    mismatches, allowed_differences = [], []
    differences, interval_differences = config_differences(cconf, bconf)
    for d in differences:
        d = {"kind": "config", **d}
        (allowed_differences if d["key"] in allow else mismatches).append(d)
    allowed_differences += [{"kind": "interval", **d} for d in interval_differences]

    cur_slices = {_entry_id(s): s for s in current["slices"]}
    base_slices = {_entry_id(s): s for s in baseline["slices"]}
    for k, co in cur_slices.items():  # the overall slice (of each window)
        bo = base_slices.get(k)
        if k[2] == () and bo is not None and co.get("n") != bo.get("n"):
            d = {"kind": "data", "key": "n", "current": co.get("n"), "baseline": bo.get("n"), **_entry_window(co)}
            (allowed_differences if DATA in allow else mismatches).append(d)
            break
    only_c = [cur_slices[k] for k in cur_slices if k not in base_slices]
    only_b = [base_slices[k] for k in base_slices if k not in cur_slices]
    one_sided_suppressed = [
        {"slice": s["slice"], **_entry_window(s), "slice_name": _entry_name(s), "suppressed_in": "current" if s.get("suppressed") else "baseline"}
        for k, s in cur_slices.items()
        if k in base_slices and bool(s.get("suppressed")) != bool(base_slices[k].get("suppressed"))
    ]  # fmt: skip
    if (only_c or only_b or one_sided_suppressed) and DATA not in allow:
        mismatches.append({"kind": "slices", "key": "slices", "only_current": [_entry_name(s) for s in only_c], "only_baseline": [_entry_name(s) for s in only_b],
                           "suppressed_on_one_side": [x["slice_name"] for x in one_sided_suppressed]})  # fmt: skip

    both = [k for k in cur_slices if k in base_slices]
    computed = [cur_slices[k] for k in both if not cur_slices[k].get("suppressed") and not base_slices[k].get("suppressed")]
    available, either = [], []  # metric keys of both sides (checked), of either side (may be named)
    for s in computed:
        b = base_slices[_entry_id(s)]["metrics"]
        for m in [*s["metrics"], *b]:
            if m in s["metrics"] and m in b and m not in available:
                available.append(m)
            if m not in either:
                either.append(m)
    for m in [*(cconf.get("metrics") or []), *(bconf.get("metrics") or [])]:
        if isinstance(m, str) and m not in either:
            either.append(m)
    every = [s["slice"] for s in current["slices"]] + [s["slice"] for k, s in base_slices.items() if k not in cur_slices]  # slice keys (of any window)
    # a metric of one side only is a mismatch (reported above); thresholds may name it
    sides = computed + [base_slices[_entry_id(s)] for s in computed]
    suppressed: dict[frozenset, int] = {}  # spec -> its suppressed slices (the most of either side)
    for s in [*current["slices"], *baseline["slices"]]:
        if s.get("suppressed"):
            spec = frozenset(s["slice"])
            suppressed[spec] = max(suppressed.get(spec, 0), int(s.get("suppressed_slices") or 1))
    resolver = _Resolver(thresholds, either, cconf, sides, every, suppressed)

    checks, unchecked = [], []
    for s in computed:
        b = base_slices[_entry_id(s)]
        name = _entry_name(s)
        mss = thresholds.min_slice_size
        if mss is not None and min(s.get("n") or 0, b.get("n") or 0) < mss:
            unchecked.append(
                {
                    "slice": s["slice"],
                    **_entry_window(s),
                    "slice_name": name,
                    "reason": f"fewer than min_slice_size={_fmt(mss)} rows (current n={s.get('n')}, baseline n={b.get('n')})",
                }
            )
            continue
        for m in available:
            if m not in s["metrics"] or m not in b["metrics"]:
                continue
            t = resolver.get(s["slice"], m)
            if t is None or t.empty:
                continue
            cur, base = s["metrics"][m], b["metrics"][m]
            hib = t.higher_is_better if t.higher_is_better is not None else _direction(m)
            for kind, value in (("minimum", t.minimum), ("maximum", t.maximum), ("absolute", t.absolute), ("relative", t.relative)):
                if value is None:
                    continue
                if not no_base:
                    row = _check(m, kind, t, hib, cur, base, s, b)
                elif kind in ("minimum", "maximum"):
                    row = check_value(m, kind, cur, value)
                else:
                    row = {"metric": m, "check": kind, "current": cur, "baseline": None, "threshold": value, "higher_is_better": hib,
                           "status": "no_baseline", "message": f"{m}: no baseline given: change threshold not checked"}  # fmt: skip
                row["message"] = f"{name}: {row['message']}"
                checks.append(
                    {"slice": s["slice"], **_entry_window(s), "slice_name": name, "n": s.get("n"), "baseline_n": None if no_base else b.get("n"), **row}
                )
    failures = [c for c in checks if c["status"] in FAILING]
    without = [m for m in available if m not in resolver.mentioned]
    if mismatches:
        status, code = "mismatch", EXIT_MISMATCH
    elif failures:
        status, code = "regression", EXIT_REGRESSION
    else:
        status, code = "ok", EXIT_OK
    counts: dict[str, int] = {}
    for c in checks:
        counts[c["status"]] = counts.get(c["status"], 0) + 1
    return {
        "status": status,
        "exit_code": code,
        "mismatches": mismatches,
        "allowed_differences": allowed_differences,
        "slices_only_in_current": [_entry_ref(s) for s in only_c],
        "slices_only_in_baseline": [_entry_ref(s) for s in only_b],
        "slices_suppressed_on_one_side": one_sided_suppressed,
        "failures": failures,
        "metrics_without_thresholds": without,
        "unchecked_slices": unchecked,
        "summary": {
            "slices_compared": len(computed),
            "checks": len(checks),
            **{k: counts.get(k, 0) for k in ("pass", "fail", "within_ci", "undefined", "no_baseline")},
        },
        "checks": checks,
    }


def mismatch_line(d: dict[str, Any]) -> str:
    """One of :func:`compare`'s ``mismatches`` (or ``allowed_differences``) in words."""
    if d["kind"] == "slices":
        parts = [f"{what}: {', '.join(d[k][:10])}{' ...' if len(d[k]) > 10 else ''}" for k, what in
                 (("only_current", "only in current"), ("only_baseline", "only in baseline"), ("suppressed_on_one_side", "suppressed on one side"))
                 if d[k]]  # fmt: skip
        return "slices differ: " + "; ".join(parts)
    if d["kind"] == "interval":
        return f"interval setting {d['key']!r} differs (changes no metric value): current {json.dumps(d['current'])}, baseline {json.dumps(d['baseline'])}"
    if d["kind"] == "data":
        where = f" (window {d['window_start']}/{d['window_end']})" if d.get("window_start") is not None else ""
        return f"data differ: overall n{where} is {d['current']} in current, {d['baseline']} in baseline"
    extra = ""
    if "only_current" in d:
        extra = f" (only in current: {d['only_current']}; only in baseline: {d['only_baseline']})"
    return f"config {d['key']!r} differs: current {json.dumps(d['current'])}, baseline {json.dumps(d['baseline'])}{extra}"


# ----------------------------------------------------------------------------------------------
# expectations on results: the pipeline-test helpers of Beam and Spark
# ----------------------------------------------------------------------------------------------

#: the long layout's and the wide layout's columns that are not metric values (Spark's results, ``Results.to_rows``)
_META_COLUMNS = frozenset({"slice", "window_start", "window_end", "n", "weight", "skipped", "suppressed_slices", "folded_values"})


def _jsonable_bound(v: Any) -> Any:
    return v.isoformat() if hasattr(v, "isoformat") else v


def _is_metric_key(name: str) -> bool:
    try:
        _check_metric(name)
    except ValueError:
        return False
    return True


def entries_from_rows(rows: Iterable[dict[str, Any]], by: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Result rows of any layout as ``metrics.json`` slice entries (``{"slice", "n", "metrics", ...}``).

    Reads the long layout (``slice``, ``metric``, ``index``, ``value``: ``Results.to_rows`` and
    Spark's ``compute_metrics(layout="long")``; array cells are left out), the wide layout (a
    ``slice`` column of JSON text or a mapping and a column per metric: Spark's default) and
    grouped aggregates without a ``slice`` column (``df.groupBy(...).agg(*metric_columns(...))``):
    their slice is the ``by`` columns, by default every column that is not a metric name
    (``df.agg(...)`` without groups: the overall slice). Interval and comparison columns
    (``"accuracy:ci_lower"``) are not metrics.
    """
    from mergeable_metrics.results.results import slice_from_json

    def key_of(v: Any) -> dict[str, Any]:
        return dict(slice_from_json(v)) if isinstance(v, str) else dict(v or {})

    entries: dict[tuple, dict[str, Any]] = {}
    for r in rows:
        window = {k: _jsonable_bound(r[k]) for k in ("window_start", "window_end") if r.get(k) is not None}
        if "metric" in r and "value" in r and "slice" in r:  # long
            key = key_of(r["slice"])
            e = entries.setdefault((_entry_id({"slice": key, **window})), {"slice": key, **window, "n": r.get("n"), "metrics": {}})
            if r.get("index") is None:
                e["metrics"][r["metric"]] = r["value"]
            continue
        if "slice" in r:  # wide
            key = key_of(r["slice"])
            metrics = {k: v for k, v in r.items() if k not in _META_COLUMNS and ":" not in k}
        else:  # grouped aggregates (metric_columns)
            cols = list(by) if by is not None else [k for k in r if k not in _META_COLUMNS and not _is_metric_key(k)]
            missing = [c for c in cols if c not in r]
            if missing:
                raise ValueError(f"by: no column {missing[0]!r} in the results; columns: {', '.join(r)}")
            key = {c: r[c] for c in cols}
            metrics = {k: v for k, v in r.items() if k not in cols and k not in _META_COLUMNS and ":" not in k}
        entries[_entry_id({"slice": key, **window})] = {"slice": key, **window, "n": r.get("n"), "metrics": metrics}
    return list(entries.values())


def _select(entries: list[dict[str, Any]], where: Any) -> tuple[list[dict[str, Any]], str]:
    """The entries of one slice (every window of it) and its display name; ``where``: None (the
    overall slice), a mapping ``{column: value}`` or a name (``"carrier=UA"``, ``"Overall"``)."""
    if where is None or isinstance(where, dict):
        key = _slice_id(dict(where or {}))
        want = frozenset(key)
        return [e for e in entries if frozenset(_slice_id(e["slice"])) == want], _slice_name(dict(where or {}))
    if isinstance(where, str):
        return [e for e in entries if _slice_name(e["slice"]) == where], where
    raise TypeError(f"a slice is None (the overall slice), a mapping of column: value or a slice name such as 'carrier=UA', got {_tname(where)} {where!r}")


def _missing_slice(entries: list[dict[str, Any]], name: str, check: str, metric: str | None) -> dict[str, Any]:
    names = list(dict.fromkeys(_slice_name(e["slice"]) for e in entries))
    return {"slice_name": name, "metric": metric, "check": check, "status": "fail",
            "message": f"{name}: no such slice in the results{_closest(name, names)}; slices: {', '.join(names) or '(none)'}"}  # fmt: skip


def check_expectations(
    entries: list[dict[str, Any]],
    *,
    equal: dict[str, Any] | None = None,
    minimum: dict[str, Any] | None = None,
    maximum: dict[str, Any] | None = None,
    slices: Sequence[Any] = (),
    slice: Any = None,
    rtol: float = 1e-7,
    atol: float = 0.0,
) -> list[dict[str, Any]]:
    """Check expected values and bounds on result entries (:func:`entries_from_rows`, ``Results.to_dict()["slices"]``).

    Args:
        equal, minimum, maximum: ``{metric: value}`` for the slice ``slice``, or ``{metric:
            {slice name: value}}`` per slice (``"Overall"``, ``"carrier=UA"``). A metric is
            named by its key or any string that resolves to it (:func:`match_metric`).
        slices: slices that must be present (mappings or names).
        slice: the slice of the plain ``{metric: value}`` entries (None: the overall slice).
        rtol, atol: the tolerance of ``equal`` (``|value - expected| <= atol + rtol * |expected|``).

    Returns:
        One check row per slice (and window), metric and bound, :func:`check_value`'s row with
        ``slice``, ``slice_name`` and the message prefixed by the slice, e.g.
        ``"carrier=UA: accuracy 0.75 < minimum 0.8"``; a missing slice or metric is a failing row.
    """
    checks: list[dict[str, Any]] = []
    for where in slices:
        found, name = _select(entries, where)
        checks.append(_missing_slice(entries, name, "present", None) if not found else
                      {"slice": found[0]["slice"], "slice_name": name, "metric": None, "check": "present", "status": "pass", "message": f"{name}: present"})  # fmt: skip
    for kind, spec in (("equal", equal), ("minimum", minimum), ("maximum", maximum)):
        for metric, target in (spec or {}).items():
            per_slice = target.items() if isinstance(target, dict) else [(slice, target)]
            for where, bound in per_slice:
                if isinstance(bound, bool) or not isinstance(bound, numbers.Real) or math.isnan(bound):  # numpy numbers too (not numpy bools)
                    raise ValueError(f"{kind}: the bound of {metric!r} must be a number, got {_tname(bound)} {bound!r}")
                found, name = _select(entries, where)
                if not found:
                    checks.append(_missing_slice(entries, name, kind, metric))
                    continue
                for e in found:
                    ename = _entry_name(e)
                    base = {"slice": e["slice"], **_entry_window(e), "slice_name": ename}
                    if e.get("suppressed"):
                        checks.append(
                            {
                                **base,
                                "metric": metric,
                                "check": kind,
                                "status": "fail",
                                "message": f"{ename}: suppressed (below min_slice_size): no {metric} to check",
                            }
                        )
                        continue
                    try:
                        key = match_metric(metric, list(e["metrics"]), {})
                    except ValueError as err:
                        checks.append({**base, "metric": metric, "check": kind, "status": "fail", "message": f"{ename}: {err}"})
                        continue
                    row = check_value(key, kind, e["metrics"][key], float(bound), rtol=rtol, atol=atol)
                    row["message"] = f"{ename}: {row['message']}"
                    checks.append({**base, "n": e.get("n"), **row})
    return checks


def failure_message(checks: list[dict[str, Any]], what: str = "metric checks") -> str | None:
    """None when every check passes, else ``"N of M metric checks failed:"`` and one failing check's message a line."""
    failed = [c for c in checks if c["status"] in FAILING]
    if not failed:
        return None
    return f"{len(failed)} of {len(checks)} {what} failed:\n" + "\n".join(f"  {c['message']}" for c in failed)


def read_document(path: Any, what: str, load_yaml: Any = None) -> dict[str, Any]:
    """A JSON or YAML mapping read from ``path`` (a ``metrics.json`` directory is read as its file).

    ``load_yaml``: the YAML parser (``yaml.safe_load``) for ``.yaml`` / ``.yml`` files, given by
    the caller (the engine-free layer imports no YAML library). Raises ValueError naming ``what``,
    the file and the problem.
    """
    from pathlib import Path

    p = Path(path)
    if p.is_dir():
        p = p / "metrics.json"
    where = f"{what} {str(p)!r}"
    if not p.is_file():
        raise ValueError(f"{where}: file not found")
    text = p.read_text(encoding="utf-8")
    if p.suffix.lower() in (".yaml", ".yml"):
        if load_yaml is None:
            raise ValueError(f"{where}: a YAML file needs a YAML parser; give the thresholds as JSON or a mapping")
        data = load_yaml(text)
    else:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"{where}: not valid JSON: {e.msg} at line {e.lineno}, column {e.colno}") from None
    data = {} if data is None else data
    if not isinstance(data, dict):
        raise ValueError(f"{where}: the top level must be a mapping, got {_tname(data)}")
    return data


def as_thresholds(thresholds: Any, load_yaml: Any = None) -> Thresholds:
    """:class:`Thresholds` from a :class:`Thresholds`, a parsed mapping or a YAML/JSON file (:func:`read_document`)."""
    if isinstance(thresholds, Thresholds):
        return thresholds
    if isinstance(thresholds, dict):
        return parse_thresholds(thresholds)
    return parse_thresholds(read_document(thresholds, "thresholds", load_yaml), str(thresholds))


def validate_entries(
    entries: list[dict[str, Any]], thresholds: Thresholds, baseline: dict[str, Any] | None = None, config: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """The checks of ``thresholds`` over result entries (:func:`compare` of ``{"config": config,
    "slices": entries}`` against ``baseline``), each configuration mismatch a failing check
    (``check == "mismatch"``) first."""
    report = compare({"config": config or {}, "slices": entries}, baseline, thresholds)
    mismatches = [{"metric": None, "check": "mismatch", "status": "fail", "message": f"mismatch: {mismatch_line(d)}", **d} for d in report["mismatches"]]
    return mismatches + report["checks"]
