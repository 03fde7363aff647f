"""``--config FILE``: the CLI's options in a YAML or JSON file, validated with clear messages.

The keys are the CLI's long options with ``_`` for ``-`` (``threshold_rule`` for
``--threshold-rule``); ``slices`` and ``beam_args`` are accepted for the repeatable ``--slice`` and
``--beam-arg``. Flags given on the command line override the file. Example (``eval.yaml``)::

    input: preds.parquet          # relative paths are relative to this file's directory
    label: y
    score: p
    weight: w
    slices: [country, [country, device]]   # a list of specs; a spec is "a,b" or [a, b]
    metrics: [accuracy, f1, roc_auc, precision@threshold=0.7]
    threshold: 0.5
    zero_division: nan
    bounds: true                  # certified bounds of approximate metrics in the report
    ci: analytic                  # confidence intervals (also ci_level, ci_replicates, ci_seed, ...)
    engine: local
    output: out/eval
    report: true                  # or a path; false for none

Validation happens before any data is read. Every problem raises :class:`ConfigError` (a
``ValueError``) whose message starts with ``config FILE:`` and names the key and the problem:
unknown keys (with the closest known key), wrong types, values outside the allowed choices,
unknown metric names (resolved through ``core``'s registry, with the closest known name), and
files that are not valid YAML/JSON or not a mapping. The CLI prints it and exits with code 2.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, Sequence

from mergeable_metrics.evaluation.thresholds import _closest, _tname  # the messages' words, one copy

#: config keys accepted for CLI destinations of another name
ALIASES = {"slices": "slice", "beam_args": "beam_arg", "slice_by": "slice", "intervals": "bounds"}
#: CLI destinations that cannot come from a config file
NOT_CONFIGURABLE = {"config", "help"}
#: string options holding paths (relative paths are resolved against the config file's directory)
PATH_KEYS = {"input", "output", "report", "labels"}
EXTENSIONS = {".yaml": "yaml", ".yml": "yaml", ".json": "json"}


class ConfigError(ValueError):
    """A configuration file is unreadable or invalid; the message names the file, key and problem."""


def read_config_file(path: str | Path, what: str = "config") -> dict[str, Any]:
    """Parse a YAML (``.yaml``/``.yml``) or JSON (``.json``) file into a mapping (unvalidated).

    Args:
        path: the file.
        what: the word that starts every message (``config 'eval.yaml': ...``); ``mergeable_metrics.pipelines.validate``
            reads its ``--thresholds`` file with ``what="thresholds"``.

    Raises:
        ConfigError: the file is missing, of another type, not valid YAML/JSON, or not a mapping.
    """
    p = Path(path)
    where = f"{what} {str(p)!r}"
    kind = EXTENSIONS.get(p.suffix.lower())
    if kind is None:
        raise ConfigError(f"{where}: unsupported file type {p.suffix or '(none)'!r}; use .yaml, .yml or .json")
    if not p.is_file():
        raise ConfigError(f"{where}: file not found" if not p.exists() else f"{where}: not a file")
    text = p.read_text(encoding="utf-8")
    if kind == "json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ConfigError(f"{where}: not valid JSON: {e.msg} at line {e.lineno}, column {e.colno}") from None
    else:
        from mergeable_metrics.pipelines.errors import MissingExtraError, require

        try:
            yaml = require("yaml", "cli", f"{where}: reading YAML")
        except MissingExtraError as e:
            raise ConfigError(str(e)) from None
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
            problem = getattr(e, "problem", None) or str(e).splitlines()[0]
            raise ConfigError(f"{where}: not valid YAML: {problem}{at}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: the top level must be a mapping of {'option' if what == 'config' else 'key'}: value, got {_tname(data)}")
    return data


def config_keys(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """``{config key: argparse action}`` of every option a config file may set."""
    keys = {}
    for a in parser._actions:
        if a.dest in NOT_CONFIGURABLE or a.dest == argparse.SUPPRESS or not a.option_strings:
            continue
        keys[a.dest] = a
    return keys


def _string(key: str, v: Any) -> str:
    if not isinstance(v, str):
        hint = f' (quote it: {key}: "{v}")' if isinstance(v, (int, float)) and not isinstance(v, bool) else ""
        raise ValueError(f"expected a string, got {_tname(v)} {v!r}{hint}")
    if not v.strip():
        raise ValueError("expected a non-empty string")
    return v


def _string_list(key: str, v: Any, what: str = "string") -> list[str]:
    if isinstance(v, str):
        return [s.strip() for s in v.split(",") if s.strip()]
    if not isinstance(v, list):
        raise ValueError(f"expected a list of {what}s (or one comma-separated string), got {_tname(v)}")
    out = []
    for i, item in enumerate(v):
        try:
            out.append(_string(key, item).strip())
        except ValueError as e:
            raise ValueError(f"item {i}: {e}") from None
    return out


def _check_metric(text: str) -> None:
    from mergeable_metrics.metrics.base import REGISTRY, parse_metric_string, unknown_metric_hint

    name, _, _ = parse_metric_string(text)
    if name not in REGISTRY and name.lower() not in REGISTRY:
        raise ValueError(f"unknown metric {name!r}{unknown_metric_hint(name)}; see the metrics table (docs/metrics.md)")


def _convert(key: str, action: argparse.Action, v: Any, base: Path) -> tuple[str, Any]:
    """The value argparse would have stored for ``key`` (raises ValueError with the problem)."""
    if key == "metrics":
        metrics = _string_list(key, v, "metric string")
        if not metrics:
            raise ValueError("expected at least one metric")
        for i, m in enumerate(metrics):
            try:
                _check_metric(m)
            except ValueError as e:
                raise ValueError(f"item {i} ({m!r}): {e}") from None
        return key, ",".join(metrics)
    if key in ("classes", "pos_label"):  # class values keep their YAML/JSON type; a string is read as the flag's
        if isinstance(v, str):
            return key, action.type(v)
        values = v if key == "classes" else [v]
        if not isinstance(values, list) or any(isinstance(x, bool) or not isinstance(x, (str, int, float)) for x in values):
            raise ValueError(f"expected {'a list of class values' if key == 'classes' else 'a class value'} (strings or numbers), got {_tname(v)} {v!r}")
        return key, v
    if key == "score":
        return key, ",".join(_string_list(key, v, "column name")) if isinstance(v, list) else _string(key, v)
    if key == "slice":
        specs = v if isinstance(v, list) else [v]
        out = []
        for i, spec in enumerate(specs):
            cols = spec if isinstance(spec, list) else [spec]
            try:
                out.append(",".join(_string_list(key, cols, "column name")))
            except ValueError as e:
                raise ValueError(f'item {i}: a slice spec is a column name, "a,b" or a list of column names; {e}') from None
        return key, out
    if key == "measure" and isinstance(v, dict):  # named measures: {name: column}
        return key, [f"{_string(key, n).strip()}={_string(key, c).strip()}" for n, c in v.items()]
    if key == "report":
        if isinstance(v, bool):
            return ("report", "auto") if v else ("no_report", True)
        return key, str((base / _string(key, v)).resolve()) if not Path(_string(key, v)).is_absolute() else v
    if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction, argparse.BooleanOptionalAction)):
        if not isinstance(v, bool):
            raise ValueError(f"expected true or false, got {_tname(v)} {v!r}")
        return key, v
    if isinstance(action, argparse._AppendAction):
        return key, _string_list(key, v if isinstance(v, list) else [v])
    if action.type is int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise ValueError(f"expected an integer, got {_tname(v)} {v!r}")
    elif action.type is float:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ValueError(f"expected a number, got {_tname(v)} {v!r}")
        v = float(v)
    elif action.choices is not None:
        if isinstance(v, (int, float)) and not isinstance(v, bool) and str(v) in action.choices:
            v = str(v)  # zero_division: 0 / 1
        elif isinstance(v, float) and v != v and "nan" in action.choices:
            v = "nan"
    else:
        v = _string(key, v)
        if key in PATH_KEYS and not Path(v).is_absolute():
            v = str((base / v).resolve())
    if action.choices is not None and v not in action.choices:
        raise ValueError(f"must be one of {', '.join(map(str, action.choices))}; got {v!r}{_closest(str(v), map(str, action.choices))}")
    return key, v


def validate_config(data: dict[str, Any], parser: argparse.ArgumentParser, source: str = "config", base: str | Path = ".") -> dict[str, Any]:
    """Check a parsed config mapping against the CLI's options.

    Args:
        data: the mapping read from the file.
        parser: the CLI parser (its options define the keys, types and choices).
        source: the file name, for messages.
        base: directory that relative paths (``input``, ``output``, ``report``) are relative to.

    Returns:
        ``{argparse dest: value}`` in the form the CLI would produce (e.g. ``metrics`` a
        comma-separated string, ``slice`` a list of ``"a,b"`` specs). Null values are left out.

    Raises:
        ConfigError: naming the key and the problem.
    """
    keys = config_keys(parser)
    where = f"config {str(source)!r}"
    out: dict[str, Any] = {}
    for raw_key, value in data.items():
        if not isinstance(raw_key, str):
            raise ConfigError(f"{where}: keys must be option names, got {_tname(raw_key)} {raw_key!r}")
        key = raw_key.strip().replace("-", "_")
        key = ALIASES.get(key, key)
        if key not in keys:
            known = sorted(set(keys) | set(ALIASES))
            raise ConfigError(f"{where}: unknown key {raw_key!r}{_closest(key, known)}; known keys: {', '.join(known)}")
        if value is None:
            continue
        try:
            dest, v = _convert(key, keys[key], value, Path(base))
        except ValueError as e:
            raise ConfigError(f"{where}: {raw_key}: {e}") from None
        out[dest] = v
    return out


def load_config(path: str | Path, parser: argparse.ArgumentParser) -> dict[str, Any]:
    """Read and validate a config file (see :func:`validate_config`); raises :class:`ConfigError`."""
    data = read_config_file(path)
    return validate_config(data, parser, source=str(path), base=Path(path).resolve().parent)


def given_dests(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> set[str]:
    """The argparse destinations set explicitly on the command line ``argv``."""
    saved = [(a, a.default) for a in parser._actions]
    try:
        for a in parser._actions:
            a.default = argparse.SUPPRESS
        ns = parser.parse_args(argv)
    finally:
        for a, d in saved:
            a.default = d
    return set(vars(ns))


def apply_config(args: argparse.Namespace, config: dict[str, Any], given: set[str]) -> argparse.Namespace:
    """Set the config's values on ``args`` except where the command line gave the option."""
    for dest, value in config.items():
        if dest not in given:
            setattr(args, dest, value)
    return args
