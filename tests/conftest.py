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

from hypothesis import HealthCheck as _HealthCheck
from hypothesis import settings as _hyp_settings

_hyp_settings.register_profile("ci", deadline=None, derandomize=False, print_blob=True)
_hyp_settings.register_profile(
    "fuzz", max_examples=1000, deadline=None, derandomize=False, print_blob=True, suppress_health_check=[_HealthCheck.too_slow, _HealthCheck.data_too_large]
)
_hyp_settings.load_profile(_os.environ.get("HYPOTHESIS_PROFILE", "ci"))
