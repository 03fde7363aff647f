"""Command line: compare two evaluation outputs against thresholds (a regression gate for CI).

Usage::

    python -m mergeable_metrics.pipelines.validate --current out/candidate --baseline out/production \\
        --thresholds thresholds.yaml [--output DIR] [--show-all] [--quiet]

``--current`` and ``--baseline`` are directories written by ``python -m mergeable_metrics.pipelines.evaluate``
(or their ``metrics.json`` files). Slices are matched by their key (``{"carrier": "UA"}``; the
overall slice is ``{}``) and every scalar metric of a slice is checked against the thresholds
that apply to it. The thresholds file (YAML or JSON)::

    metrics:                       # every slice, unless a more specific entry below names the metric
      accuracy:
        minimum: 0.85              # value threshold: fail if accuracy < 0.85
        change: {absolute: 0.01}   # change threshold: fail if it got worse than the baseline by > 0.01
      log_loss:
        maximum: 0.35
        change: {relative: 0.05}   # worse by more than 5% of the baseline value
    slices:                        # per slice spec or per slice; the most specific entry wins
      - spec: carrier              # every slice of the spec "carrier" ([carrier, origin] for a cross)
        metrics:
          accuracy: {change: {absolute: 0.03}}
      - slice: {carrier: OO}       # one slice ({} is the overall slice; or its name: "carrier=OO")
        metrics:
          accuracy: {}             # no thresholds here
    min_slice_size: 100            # slices with fewer rows (on either side) are not checked
    allow_differences: []          # config keys (or "data") that may differ between the two runs

Rules (also in the docs, docs/cli.md, "Validating pipeline outputs"):

* The direction of a change comes from the metric's ``higher_is_better`` in
  ``mergeable_metrics.metrics.base.REGISTRY`` (``higher_is_better:`` in the file overrides it; metrics without a
  direction, e.g. counts, need it for a change threshold). "Worse by" is ``baseline - current``
  when higher is better, else ``current - baseline``; ``relative`` allows ``relative *
  |baseline|``. Improvements never fail. A change exactly at the allowed amount passes.
* Confidence intervals (``"ci"`` per slice, ``"comparison"`` for paired runs): a change worse than
  allowed is a regression only when it is outside the noise. With a paired comparison in the
  current results whose ``delta`` equals ``current - baseline``, the change is noise when the
  paired interval of the delta includes zero (or lies on the better side). Otherwise, when either
  side has a ``ci`` for the metric, the change is noise when the two intervals overlap (a side
  without one counts as the single point of its value). Noise is reported as ``within_ci`` and
  passes. Value thresholds (``minimum``/``maximum``) apply to the values, not the intervals.
* An undefined value (``null``) fails a check when it was defined in the baseline; undefined on
  both sides is reported as ``undefined`` and passes; a change threshold whose baseline value is
  undefined reports ``no_baseline`` and passes.
* Configuration mismatches (exit 2): any difference in the two ``config`` objects (task,
  metrics, columns, decision threshold, slice specs, ...), a different overall ``n``, and slices
  present (or computed) on one side only. The interval and comparison settings
  (:data:`INTERVAL_KEYS`: ``ci``, ``ci_seed``, ``ci_replicates``, ``id_col``,
  ``baseline_score_col``, ``tolerance``, ...) change no metric value and are only reported, except
  that when both runs have intervals their method and level must agree (``ci.method``,
  ``ci.level``). ``allow_differences`` lists the config keys (``score_col``, ``ci.level``, ...) and
  ``data`` (overall ``n`` and one-sided slices) that may differ; they are still reported.

Writes ``validation.json`` into ``--output DIR`` (default: the ``--current`` directory), prints a
table of the failing (and, with ``--show-all``, every) check, and exits 0 when every check
passes, 1 on a regression, 2 on a mismatch or bad input (an unreadable or malformed
``metrics.json``, a thresholds file with an unknown key or a bad value: the message names the
file, the key and the problem, like ``--config`` of ``mergeable_metrics.pipelines.evaluate``).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from mergeable_metrics.pipelines.config import ConfigError, _check_metric, _closest, _string, _tname, read_config_file

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
        ConfigError: ``thresholds 'FILE': KEY: problem`` for an unknown key (with the closest known
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
        raise ConfigError(f"{where}: {e}") from None
    return Thresholds(source, metrics, entries, mss, frozenset(allow))


def load_thresholds(path: str | Path) -> Thresholds:
    """Read and check a YAML/JSON thresholds file (:func:`parse_thresholds`); raises ConfigError."""
    return parse_thresholds(read_config_file(path, what="thresholds"), str(path))


# ----------------------------------------------------------------------------------------------
# reading metrics.json
# ----------------------------------------------------------------------------------------------


def read_results(path: str | Path, side: str) -> tuple[Path, dict[str, Any]]:
    """The ``metrics.json`` of an evaluation output directory (or the file itself), checked for shape.

    Raises:
        ValueError: missing, not JSON, or not shaped like ``mergeable_metrics.pipelines.evaluate``'s metrics.json;
            the message names the side (``--current``/``--baseline``) and the file.
    """
    p = Path(path)
    f = p / "metrics.json" if p.is_dir() else p
    where = f"--{side} {str(f)!r}"
    if not f.is_file():
        raise ValueError(f"{where}: not found (give the --output directory of python -m mergeable_metrics.pipelines.evaluate, or its metrics.json)")
    try:
        doc = json.loads(f.read_text(encoding="utf-8"), parse_constant=_not_json_number, parse_float=_finite_float)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{where}: not valid JSON: {e}") from None
    except ValueError as e:  # NaN / Infinity / 1e999: not JSON numbers (undefined values are null)
        raise ValueError(f"{where}: {e}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("slices"), list):
        raise ValueError(f'{where}: not an evaluation output: expected {{"slices": [...], "config": {{...}}}}')
    if not isinstance(doc.get("config", {}), dict):
        raise ValueError(f'{where}: "config" must be a mapping, got {_tname(doc["config"])}')
    seen: dict[tuple, int] = {}
    for i, s in enumerate(doc["slices"]):
        if not isinstance(s, dict) or not isinstance(s.get("slice"), dict):
            raise ValueError(f'{where}: slices[{i}]: expected {{"slice": {{column: value}}, "n": ..., "metrics": {{...}}}}')
        bad = [c for c, v in s["slice"].items() if isinstance(v, dict)]
        if bad:
            raise ValueError(f"{where}: slices[{i}]: slice value of column {bad[0]!r} is a mapping {s['slice'][bad[0]]!r}; slice values are scalars")
        bad = [k for k in ("window_start", "window_end") if not isinstance(s.get(k), (str, type(None)))]
        if bad:
            raise ValueError(f"{where}: slices[{i}]: {bad[0]} is {s[bad[0]]!r}; a window bound is an ISO 8601 text or null")
        sid = _entry_id(s)  # a slice is its window and its key (--window writes every key once per window)
        if sid in seen:
            raise ValueError(f"{where}: slices[{i}] ({_entry_name(s)}) appears twice (also slices[{seen[sid]}])")
        seen[sid] = i
        if not s.get("suppressed") and not isinstance(s.get("metrics"), dict):
            raise ValueError(f'{where}: slices[{i}] ({_entry_name(s)}): "metrics" must be a mapping')
        for k, v in (s.get("metrics") or {}).items():
            if not _numeric(v):
                raise ValueError(f"{where}: slices[{i}] ({_entry_name(s)}): metric {k!r} = {v!r}: expected a number, null or a list of them")
    from mergeable_metrics.results.results import _requested_names

    names = _requested_names(doc.get("config"))
    for s in doc["slices"]:  # a metric asked for under another string is also under it (Results.to_dict): once
        m = s.get("metrics") or {}
        for k in [k for k, key in names.items() if k in m and key in m]:
            del m[k]
    return f, doc


def _numeric(v: Any) -> bool:
    """A metric value of metrics.json: a number, null, or (nested) lists of them (no text, no booleans)."""
    if isinstance(v, list):
        return all(_numeric(x) for x in v)
    return _scalar(v)


def _not_json_number(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number (metrics.json writes undefined values as null)")


def _finite_float(text: str) -> float:
    v = float(text)
    if not math.isfinite(v):
        raise ValueError(f"{text} is out of the float64 range (metrics.json writes undefined values as null)")
    return v


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

    def __init__(self, thresholds: Thresholds, available: list[str], config: dict[str, Any], slices: list[dict[str, Any]], every: list[dict[str, Any]]):
        """``slices``: the compared slices' metrics.json entries (both sides); ``every``: every slice key of either side."""
        where = f"thresholds {thresholds.source!r}"
        specs = {frozenset(s) for s in every}
        ids = {_slice_id(s): s for s in every}

        def resolve(section: str, metrics: dict[str, MetricThreshold]) -> dict[str, MetricThreshold]:
            out = {}
            for k, t in metrics.items():
                try:
                    key = match_metric(k, available, config)
                except ValueError as e:
                    raise ConfigError(f"{where}: {section}.{k}: {e}") from None
                if key in out:
                    raise ConfigError(f"{where}: {section}: {k!r} and another name both stand for {key!r}")
                if not t.empty and not _scalar_metric(key, slices):
                    raise ConfigError(f"{where}: {section}.{k}: {key!r} is not a scalar metric (its values are arrays); thresholds apply to scalar metrics")
                hib = t.higher_is_better if t.higher_is_better is not None else _direction(key)
                if (t.absolute is not None or t.relative is not None) and hib is None:
                    raise ConfigError(
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
                    raise ConfigError(
                        f"{where}: {e.where}.spec: no slices of spec {','.join(sorted(e.spec))!r} in the results{_closest(','.join(sorted(e.spec)), known)}; specs: {', '.join(known) or '(none)'}"
                    )
                target, key = self.by_spec, e.spec
            else:
                one = e.slice
                if isinstance(one, str):  # a slice name, as Results["carrier=OO"] takes it
                    one = next((x for x in every if _slice_name(x) == one), None)
                    if one is None:
                        raise ConfigError(f"{where}: {e.where}.slice: no slice {e.slice!r} in the results{_closest(e.slice, [_slice_name(x) for x in every])}")
                key = frozenset((c, _hashable(v)) for c, v in one.items())
                if not any(frozenset(i) == key for i in ids):
                    names = [_slice_name(s) for s in every]
                    raise ConfigError(f"{where}: {e.where}.slice: no slice {_slice_name(one)!r} in the results{_closest(_slice_name(one), names)}")
                target = self.by_slice
            if key in target:
                raise ConfigError(f"{where}: {e.where}: a second entry for the same {'spec' if e.spec is not None else 'slice'}")
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


def _fmt(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def _check(metric: str, kind: str, t: MetricThreshold, hib: bool | None, cur: Any, base: Any, cs: dict, bs: dict) -> dict[str, Any]:
    """One check of one metric of one slice (see the module docstring for the rules)."""
    row: dict[str, Any] = {"metric": metric, "check": kind, "current": cur, "baseline": base}
    if kind in ("minimum", "maximum"):
        limit = t.minimum if kind == "minimum" else t.maximum
        row["threshold"] = limit
        if cur is None:
            row["status"] = "undefined" if base is None else "fail"
            row["message"] = f"{metric} is undefined" + (" (also in the baseline)" if base is None else f" (baseline {_fmt(base)}); {kind} {_fmt(limit)}")
        else:
            bad = cur < limit if kind == "minimum" else cur > limit
            row["status"] = "fail" if bad else "pass"
            row["message"] = f"{metric} {_fmt(cur)} {('<' if bad else '>=') if kind == 'minimum' else ('>' if bad else '<=')} {kind} {_fmt(limit)}"
        return row
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


def compare(current: dict[str, Any], baseline: dict[str, Any], thresholds: Thresholds) -> dict[str, Any]:
    """Compare two metrics.json documents slice by slice (the content of ``validation.json``).

    Returns:
        ``{"status": "ok"|"regression"|"mismatch", "exit_code": 0|1|2, "mismatches": [...],
        "slices_only_in_current": [...], "slices_only_in_baseline": [...], "checks": [...],
        "failures": [...], "metrics_without_thresholds": [...], "unchecked_slices": [...],
        "summary": {...}}``; each check has ``slice``, ``slice_name``, ``metric``, ``check``
        (``minimum``, ``maximum``, ``absolute``, ``relative``), ``current``, ``baseline``, ``status``
        (``pass``, ``fail``, ``within_ci``, ``undefined``, ``no_baseline``) and ``message``.

    Raises:
        ConfigError: the thresholds name a metric, spec or slice the results do not hold.
    """
    allow = thresholds.allow_differences
    cconf, bconf = current.get("config") or {}, baseline.get("config") or {}
    known = sorted(set(cconf) | set(bconf) | INTERVAL_KEYS | {f"ci.{f}" for f in CI_COMPARED} | {DATA})
    for a in sorted(allow):
        if a not in known:
            raise ConfigError(f"thresholds {thresholds.source!r}: allow_differences: unknown key {a!r}{_closest(a, known)}; known: {', '.join(known)}")
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
    resolver = _Resolver(thresholds, either, cconf, sides, every)

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
                row = _check(m, kind, t, hib, cur, base, s, b)
                row["message"] = f"{name}: {row['message']}"
                checks.append({"slice": s["slice"], **_entry_window(s), "slice_name": name, "n": s.get("n"), "baseline_n": b.get("n"), **row})
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


# ----------------------------------------------------------------------------------------------
# output
# ----------------------------------------------------------------------------------------------


def format_table(checks: list[dict[str, Any]], max_rows: int = 200) -> str:
    """A fixed-width table of checks: slice, metric, check, baseline, current, change, allowed, status."""
    header = ["slice", "metric", "check", "baseline", "current", "change", "rule", "status"]
    rows = []
    for c in checks[:max_rows]:
        rows.append([c["slice_name"], c["metric"], c["check"], _fmt(c["baseline"]), _fmt(c["current"]),
                     "" if c.get("change") is None else f"{c['change']:+.4g}", _rule(c), c["status"]])  # fmt: skip
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    fmt = lambda r: "  ".join(x.ljust(w) if i < 3 or i >= 6 else x.rjust(w) for i, (x, w) in enumerate(zip(r, widths))).rstrip()  # noqa: E731
    lines = [fmt(header), "  ".join("-" * w for w in widths)] + [fmt(r) for r in rows]
    if len(checks) > max_rows:
        lines.append(f"... {len(checks) - max_rows} more checks (all in validation.json)")
    return "\n".join(lines)


def _rule(c: dict[str, Any]) -> str:
    """The check's rule in words: ``>= 0.8``, ``<= 0.4``, ``worse by <= 0.01``, ``worse by <= 5% = 0.0137``."""
    if c["check"] == "minimum":
        return f">= {_fmt(c['threshold'])}"
    if c["check"] == "maximum":
        return f"<= {_fmt(c['threshold'])}"
    if c["check"] == "absolute":
        return f"worse by <= {_fmt(c['threshold'])}"
    pct = f"{100 * c['threshold']:.4g}%"
    return f"worse by <= {pct}" + (f" = {_fmt(c['allowed'])}" if c.get("allowed") is not None else "")


def _mismatch_line(d: dict[str, Any]) -> str:
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


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m mergeable_metrics.pipelines.validate",
        description="Compare two evaluation outputs (metrics.json) slice by slice against value and change thresholds.",
        epilog="exit codes: 0 every check passes, 1 a regression, 2 a configuration mismatch or bad input",
    )
    p.add_argument(
        "--current", required=True, metavar="DIR", help="output directory of python -m mergeable_metrics.pipelines.evaluate (or its metrics.json) to check"
    )
    p.add_argument("--baseline", required=True, metavar="DIR", help="the output to compare against (or its metrics.json)")
    p.add_argument("--thresholds", required=True, metavar="FILE", help="YAML or JSON thresholds file (see docs/cli.md, 'Validating pipeline outputs')")
    p.add_argument("--output", metavar="DIR", help="where validation.json goes (default: the --current directory)")
    p.add_argument("--show-all", action="store_true", help="print every check, not only the failing and within-interval ones")
    p.add_argument("--quiet", action="store_true", help="print only errors and the one-line verdict")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; returns the exit code (0 ok, 1 regression, 2 mismatch or bad input)."""
    args = build_parser().parse_args(argv)
    try:
        cur_file, current = read_results(args.current, "current")
        _, baseline = read_results(args.baseline, "baseline")
        thresholds = load_thresholds(args.thresholds)
        report = compare(current, baseline, thresholds)
    except ValueError as e:  # ConfigError included
        print(f"error: {e}", file=sys.stderr)
        return EXIT_MISMATCH
    report = {"current": str(args.current), "baseline": str(args.baseline), "thresholds": str(args.thresholds), **report}
    out = Path(args.output) if args.output else cur_file.parent
    out.mkdir(parents=True, exist_ok=True)
    path = out / "validation.json"
    path.write_text(json.dumps(report, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    say = (lambda *a: None) if args.quiet else (lambda *a: print(*a, flush=True))  # noqa: E731
    for d in report["mismatches"]:
        print(f"mismatch: {_mismatch_line(d)}", file=sys.stderr)
    for d in report["allowed_differences"]:
        say(f"allowed difference: {_mismatch_line(d)}")
    shown = report["checks"] if args.show_all else [c for c in report["checks"] if c["status"] in ("fail", "within_ci")]
    if shown:
        say(format_table(shown))
    for u in report["unchecked_slices"]:
        say(f"not checked: {u['slice_name']}: {u['reason']}")
    if report["metrics_without_thresholds"]:
        say(f"metrics without thresholds (not checked): {', '.join(report['metrics_without_thresholds'])}")
    s = report["summary"]
    verdict = {"ok": "OK", "regression": "REGRESSION", "mismatch": "MISMATCH"}[report["status"]]
    print(
        f"{verdict}: {s['checks']} checks over {s['slices_compared']} slices: {s['pass']} passed, {s['fail']} failed, "
        f"{s['within_ci']} within the intervals, {s['undefined'] + s['no_baseline']} not comparable (undefined)"
        + (f"; {len(report['mismatches'])} mismatch(es)" if report["mismatches"] else "")
        + f"; wrote {path}"
    )
    return report["exit_code"]


if __name__ == "__main__":
    sys.exit(main())
