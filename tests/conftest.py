# --- hypothesis settings profile "ci" (registered and loaded for every test package) ---------
# No deadlines (CI machines and Spark/Beam start-up are slow), fresh randomness each run
# (derandomize=False), and print_blob=True: a failing property test prints the falsifying example
# plus an `@reproduce_failure(...)` blob that replays it exactly. To pin the random seed of a
# whole run, pass `--hypothesis-seed=<int>` to pytest; hypothesis itself prints
# `--hypothesis-seed=<seed>` for failures it cannot replay (flaky / slow-shrinking ones).
# Select another profile with HYPOTHESIS_PROFILE=<name>.
#
# Profile "fuzz" is the full-strength run of the fuzz and fault suites: the settings of "ci" with
# 1,000 examples per property test that sets no max_examples of its own (the codec fuzz,
# tests/core/test_codec_fuzz.py, runs 100 under "ci"; a test's own @settings(max_examples=N)
# wins over any profile, so most core and pipelines property tests run their N under both), and
# tests/fuzz/budget.py raises each fuzz test's example count to its full budget
# (thousands of core cases, ~100 engine and CLI cases). Under "ci" the fuzz tests run a few
# examples each, so they add about a minute to CI. The one command (README, "Tests and the fuzz
# suite"):
#     HYPOTHESIS_PROFILE=fuzz .venv/bin/python -m pytest tests/fuzz tests/core/test_codec_fuzz.py \
#         tests/spark_metrics/test_cluster.py tests/beam_metrics/test_multiprocess.py
import os as _os
import re as _re
from pathlib import Path as _Path

from hypothesis import HealthCheck as _HealthCheck
from hypothesis import settings as _hyp_settings
import pytest as _pytest

_hyp_settings.register_profile("ci", deadline=None, derandomize=False, print_blob=True)
_hyp_settings.register_profile(
    "fuzz", max_examples=1000, deadline=None, derandomize=False, print_blob=True, suppress_health_check=[_HealthCheck.too_slow, _HealthCheck.data_too_large]
)
_hyp_settings.load_profile(_os.environ.get("HYPOTHESIS_PROFILE", "ci"))


# --- markers: what a test needs, so a developer can leave the slow parts out ------------------
# Registered in pyproject.toml (``--strict-markers``); applied here by directory, file, fixture,
# engine parameter and test name, so a new test in the right place is marked without asking:
#     beam     Apache Beam pipelines (DirectRunner)         tests/beam_metrics, engine "beam"
#     spark    a local SparkSession (a JVM)                  tests/spark_metrics, engine "spark"
#     cluster  multi-process engines the test starts         test_cluster.py, test_multiprocess.py
#     connect  a Spark Connect server the test starts        the spark_connect fixture
#     browser  a headless Chromium                           test_report_browser.py
#     fuzz     the fuzz suite against its oracle             tests/fuzz
# The fast command (core and the local pipelines, README "Tests"):
#     python -m pytest -m "not (beam or spark or cluster or connect or browser or fuzz)"
# Every ``spark`` or ``connect`` test is skipped, saying what to install, when Java is missing:
# the one Java check of the suite.
_TESTS = _Path(__file__).resolve().parent
_DIR_MARKS = {"beam_metrics": "beam", "spark_metrics": "spark", "fuzz": "fuzz"}
_FILE_MARKS = {
    "test_cluster.py": "cluster",
    "test_multiprocess.py": "cluster",
    "test_connect.py": "connect",
    "test_report_browser.py": "browser",
}
_FIXTURE_MARKS = {"spark": "spark", "spark_connect": "connect"}
_ENGINES = ("beam", "spark")
_JAVA_MISSING = "java not found: the Spark tests need a JDK/JRE 17+ (e.g. `apt-get install openjdk-17-jre-headless`)"


def _engine_params(item) -> set[str]:
    """The engines named by the test's parameters ("spark", ("local", "beam"), ...) and its name."""
    found = set()
    for value in getattr(getattr(item, "callspec", None), "params", {}).values():
        values = value if isinstance(value, (tuple, list)) else (value,)
        found.update(v for v in values if isinstance(v, str) and v in _ENGINES)
    words = set(_re.split(r"[_\W]+", getattr(item, "originalname", item.name)))
    return found | (words & set(_ENGINES))


def pytest_collection_modifyitems(config, items):
    java = None
    for item in items:
        path = _Path(str(item.path)).resolve()
        rel = path.relative_to(_TESTS).parts if path.is_relative_to(_TESTS) else ()
        marks = {_DIR_MARKS[rel[0]]} if rel and rel[0] in _DIR_MARKS else set()
        marks |= {_FILE_MARKS[path.name]} if path.name in _FILE_MARKS else set()
        marks |= {_FIXTURE_MARKS[f] for f in getattr(item, "fixturenames", ()) if f in _FIXTURE_MARKS}
        marks |= _engine_params(item)
        for name in sorted(marks - {m.name for m in item.iter_markers()}):
            item.add_marker(name)
        if item.get_closest_marker("spark") or item.get_closest_marker("connect"):
            if java is None:
                from mergeable_metrics.spark.session import find_java

                java = find_java() is not None
            if not java:
                item.add_marker(_pytest.mark.skip(reason=_JAVA_MISSING))
