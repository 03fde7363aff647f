"""The table of every registered metric, from the registry.

Usage::

    python -m mergeable_metrics.metrics.registry_table                  # print the Markdown table
    python -m mergeable_metrics.metrics.registry_table --write FILE.md  # replace the table between the markers

The docs' metrics page (``docs/metrics.md``) renders :func:`markdown_table` when the docs are built
(the ``metrics-table`` directive of ``docs/_ext/registry_table.py``), so the table cannot go stale;
``--write`` puts it between ``<!-- metrics-table:start -->`` and ``<!-- metrics-table:end -->`` of
another Markdown file.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from mergeable_metrics._util.public import DEFINED_IN
from mergeable_metrics.metrics.base import REGISTRY

START = "<!-- metrics-table:start -->"
END = "<!-- metrics-table:end -->"
TASK_ORDER = ("binary", "multiclass", "multilabel", "regression")
#: the families' order in the table (a module not listed follows, by name); within a module,
#: registration order (the order of its class definitions), so the table does not depend on
#: the order in which modules happen to be imported
FAMILY_ORDER = (
    "mergeable_metrics.metrics.base",
    "mergeable_metrics.metrics.measure",
    "mergeable_metrics.metrics.retrieval",
    "mergeable_metrics.metrics.classification",
    "mergeable_metrics.metrics.ranking",
    "mergeable_metrics.metrics.regression",
    "mergeable_metrics.metrics.calibration",
    "mergeable_metrics.metrics.multilabel",
    "mergeable_metrics.metrics.regression_terms",
    "mergeable_metrics.metrics.thresholds",
    "mergeable_metrics.metrics.topk",
)


def _family(module: str) -> tuple[int, str]:
    return (FAMILY_ORDER.index(module), "") if module in FAMILY_ORDER else (len(FAMILY_ORDER), module)


def metric_classes() -> list[type]:
    """Registered metric classes defined in the package (not in user code or doctests), each once,
    by family (:data:`FAMILY_ORDER`), then in registration order."""
    seen: list[type] = []
    for cls in REGISTRY.values():
        if cls not in seen and _defined_in(cls).startswith("mergeable_metrics."):
            seen.append(cls)
    return sorted(seen, key=lambda c: (_family(_defined_in(c)), seen.index(c)))


def _defined_in(cls: type) -> str:
    """The module that defines ``cls`` (a tier's name has the tier's ``__module__``)."""
    return DEFINED_IN.get(f"{cls.__module__}.{cls.__qualname__}", cls.__module__)


def _states(info: dict[str, Any]) -> str:
    states = info["states"]
    distinct = {tuple(v) for v in states.values()}
    if len(distinct) == 1:
        return ", ".join(f"`{s}`" for s in next(iter(distinct)))
    return "; ".join(f"{task}: " + ", ".join(f"`{s}`" for s in v) for task, v in states.items())


def _tasks(info: dict[str, Any], multioutput: bool = False) -> str:
    """The task cell; ``multioutput``: the metric takes ``multioutput`` (multioutput regression)."""
    tasks = [t + (" (multioutput)" if multioutput and t == "regression" else "") for t in TASK_ORDER if t in info["tasks"]]
    return "any" if len(tasks) == len(TASK_ORDER) else ", ".join(tasks)


def _sklearn(info: dict[str, Any]) -> str:
    if info["sklearn"]:
        return "`" + info["sklearn"].replace("sklearn.metrics.", "").replace("sklearn.", "") + "`"
    if info["reference"]:
        return f"— (reference: `{info['reference']}`)"
    return "—"


def markdown_table() -> str:
    """The Markdown table: name (aliases), full name, task, state, exact or approximate, scikit-learn."""
    lines = [
        "| name (aliases) | full name | task | state | exact | scikit-learn equivalent |",
        "|---|---|---|---|---|---|",
    ]
    for cls in metric_classes():
        info = cls.info()
        aliases = f" ({', '.join(f'`{a}`' for a in info['aliases'])})" if info["aliases"] else ""
        exact = "exact" if info["exact"] else "approximate (certified bounds)"
        lines.append(
            f"| `{info['name']}`{aliases} | {info['full_name']} | {_tasks(info, 'multioutput' in cls.params)} | {_states(info)} | {exact} | {_sklearn(info)} |"
        )
    return "\n".join(lines)


def replace_table(text: str, table: str) -> str:
    """``text`` with the part between the markers replaced by ``table``.

    Raises:
        ValueError: the markers are missing.
    """
    if START not in text or END not in text:
        raise ValueError(f"markers {START} / {END} not found")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{START}\n{table}\n{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m mergeable_metrics.metrics.registry_table", description=__doc__.splitlines()[0])
    p.add_argument("--write", metavar="FILE", help="replace the table between the markers in this file")
    args = p.parse_args(argv)
    table = markdown_table()
    if args.write:
        path = Path(args.write)
        path.write_text(replace_table(path.read_text(), table))
        print(f"wrote {len(metric_classes())} metrics into {path}")
    else:
        print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
