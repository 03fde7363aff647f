"""Example budgets of the fuzz tests under the hypothesis profiles of ``tests/conftest.py``.

Under the default "ci" profile every fuzz test runs a few examples (the package adds about a
minute to CI on a 2-core machine); under ``HYPOTHESIS_PROFILE=fuzz`` it runs its full budget::

    HYPOTHESIS_PROFILE=fuzz .venv/bin/python -m pytest tests/fuzz

``FUZZ_MAX_EXAMPLES=N`` caps every fuzz test at N examples (under either profile), e.g. for a
time-boxed run at full strength. Use as a decorator, under ``@given``: ``@budget("core")``.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
FULL = PROFILE == "fuzz"

# (ci, fuzz) examples per kind of entry point
EXAMPLES = {
    "core": (60, 2000),  # MetricCollection / BinaryMetrics update, Evaluation.evaluate
    "cli": (6, 100),  # python -m mergeable_metrics.pipelines.evaluate's main() on files
    "beam": (3, 100),  # ComputeMetrics on the DirectRunner (a pipeline per example)
    "spark": (3, 100),  # compute_metrics on the session's local[2] SparkSession
}


def budget(kind: str) -> settings:
    """The settings of a fuzz test of ``kind`` (a key of :data:`EXAMPLES`) under the current profile."""
    ci, full = EXAMPLES[kind]
    n = full if FULL else ci
    cap = os.environ.get("FUZZ_MAX_EXAMPLES")
    return settings(
        max_examples=min(n, int(cap)) if cap else n,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much, HealthCheck.function_scoped_fixture],
    )
