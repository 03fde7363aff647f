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
from pathlib import Path
from typing import Any, Sequence

from mergeable_metrics.pipelines import errors

from mergeable_metrics.engine import (  # the checks themselves: one place, shared with Beam's ValidateMetrics and the test helpers
    CHANGE_KEYS,
    CI_COMPARED,
    DATA,
    ENTRY_KEYS,
    EXIT_MISMATCH,
    EXIT_OK,
    EXIT_REGRESSION,
    FAILING,
    INTERVAL_KEYS,
    METRIC_KEYS,
    TOP_KEYS,
    Thresholds,
    ThresholdsError,
    ci_settings,
    config_differences,
    match_metric,
    spec_columns,
)
from mergeable_metrics.engine import compare as _compare
from mergeable_metrics.engine import parse_thresholds as _parse_thresholds
from mergeable_metrics.engine import rule_text as _rule
from mergeable_metrics.engine import mismatch_line as _mismatch_line
from mergeable_metrics.engine import format_value as _fmt
from mergeable_metrics.evaluation.thresholds import MetricThreshold, SliceThresholds, _entry_id, _entry_name, _scalar
from mergeable_metrics.pipelines.config import ConfigError, _tname, read_config_file

__all__ = [
    "CHANGE_KEYS", "CI_COMPARED", "DATA", "ENTRY_KEYS", "EXIT_MISMATCH", "EXIT_OK", "EXIT_REGRESSION", "FAILING", "INTERVAL_KEYS", "METRIC_KEYS",
    "MetricThreshold", "SliceThresholds", "TOP_KEYS", "Thresholds", "ci_settings", "compare", "config_differences", "format_table", "load_thresholds",
    "main", "match_metric", "parse_thresholds", "read_results", "spec_columns",
]  # fmt: skip


def parse_thresholds(data: dict[str, Any], source: str = "thresholds") -> Thresholds:
    """Check a parsed thresholds mapping (:func:`mergeable_metrics.engine.parse_thresholds`); raises ConfigError."""
    try:
        return _parse_thresholds(data, source)
    except ThresholdsError as e:
        raise ConfigError(str(e)) from None


def compare(current: dict[str, Any], baseline: dict[str, Any] | None, thresholds: Thresholds) -> dict[str, Any]:
    """Compare two metrics.json documents (:func:`mergeable_metrics.engine.compare`); raises ConfigError."""
    try:
        return _compare(current, baseline, thresholds)
    except ThresholdsError as e:
        raise ConfigError(str(e)) from None


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


def build_parser() -> argparse.ArgumentParser:
    p = errors.CliParser(
        prog=errors.program_name("mergeable_metrics.pipelines.validate"),
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
