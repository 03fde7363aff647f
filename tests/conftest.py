# --- hypothesis settings profile "ci" (registered and loaded for every test package) ---------
# No deadlines (CI machines and Spark/Beam start-up are slow), fresh randomness each run
# (derandomize=False), and print_blob=True: a failing property test prints the falsifying example
# plus an `@reproduce_failure(...)` blob that replays it exactly. To pin the random seed of a
# whole run, pass `--hypothesis-seed=<int>` to pytest; hypothesis itself prints
# `--hypothesis-seed=<seed>` for failures it cannot replay (flaky / slow-shrinking ones).
# Select another profile with HYPOTHESIS_PROFILE=<name>.
import os as _os

from hypothesis import settings as _hyp_settings

_hyp_settings.register_profile("ci", deadline=None, derandomize=False, print_blob=True)
_hyp_settings.load_profile(_os.environ.get("HYPOTHESIS_PROFILE", "ci"))
