"""The pytest plugin of issue 14 (``metric_baseline``, ``--update-metric-baselines``) and the
functions behind it (:mod:`mergeable_metrics.pipelines.baselines`), tested through pytest's ``pytester``."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import tomllib
from importlib import metadata
from pathlib import Path

import numpy as np
import pandas as pd  # noqa: F401 - imported before pytester's inline runs, which cannot re-import C extensions
import pyarrow as pa
import pytest
from _pytest import pytester as _pytester
import sklearn.linear_model  # noqa: F401
import sklearn.metrics  # noqa: F401

from hypothesis import given, strategies as st

from mergeable_metrics.pipelines import baselines
from mergeable_metrics.pipelines.baselines import from_sklearn

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = "mergeable_metrics.pipelines.pytest_plugin"


def _installed() -> bool:
    """The plugin's entry point is installed (then pytest loads it by itself)."""
    eps = metadata.entry_points(group="pytest11")
    return any(ep.value == PLUGIN for ep in eps)


ARGS = [] if _installed() else ["-p", PLUGIN]


def _keep_numba_loaded(restore):
    """pytester's in-process runs restore ``sys.modules`` afterwards, which unloads the numba modules
    the run imported lazily (typing registries such as ``numba.core.typing.cmathdecl``); the next
    compile imports them a second time and numba's typing context fails ("cannot augment
    Function(tan) with Function(tan)", in a later test of the session). numba's modules stay."""

    def restore_keeping_numba(self) -> None:
        keep = {k: m for k, m in sys.modules.items() if k.split(".")[0] in ("numba", "llvmlite")}
        restore(self)
        sys.modules.update(keep)

    return restore_keeping_numba


_pytester.SysModulesSnapshot.restore = _keep_numba_loaded(_pytester.SysModulesSnapshot.restore)


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest(*ARGS, "-p", "no:cacheprovider", "-rs", *args)


# A flip model: inputs are sample ids, the model returns the stored prediction of each id.
FLIPS = """
import os
import numpy as np

N = int(os.environ.get("N", "4000"))
FLIPS = int(os.environ.get("FLIPS", "0"))
y = (np.arange(N) * 7919 % 13 < 6).astype(np.int64)
pred = y.copy()
flip = np.random.default_rng(1).choice(N, size=FLIPS, replace=False)
pred[flip] = 1 - pred[flip]
ids = np.arange(N)
batches = [(ids[i:i + 500], y[i:i + 500]) for i in range(0, N, 500)]

def model(x):
    return np.eye(2)[pred[x]]  # one-hot "probabilities" of the stored predictions

def accuracy(output, batch):  # the plugin specification's example, as written
    return (output.argmax(-1) == batch[1])

MINIMUM = float(os.environ["MINIMUM"]) if "MINIMUM" in os.environ else None

def test_flips(metric_baseline):
    metric_baseline(model, batches, {"accuracy": accuracy}, minimum=MINIMUM)
"""


def test_recording_writes_the_entry_and_the_per_sample_values(pytester, monkeypatch):
    monkeypatch.setenv("FLIPS", "200")
    pytester.makepyfile(test_flips=FLIPS)
    result = run(pytester, "--update-metric-baselines")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["metric baselines: recorded 1 in *.metric-baselines.json"])
    assert sorted(p.name for p in pytester.path.iterdir()) == [".metric-baselines", ".metric-baselines.json", "test_flips.py"]
    data = json.loads((pytester.path / ".metric-baselines.json").read_text())
    entry = data["entries"]["test_flips.py::test_flips"]
    assert entry["values"]["accuracy"] == 1 - 200 / 4000
    assert entry["metrics"]["accuracy"]["kind"] == "per_sample"
    assert entry["data"]["n"] == 4000 and entry["data"]["batches"] == 8 and entry["data"]["max_batches"] is None
    with np.load(pytester.path / ".metric-baselines" / entry["per_sample"]) as z:
        values = z["accuracy"]
    assert values.shape == (4000,) and values.sum() == 3800
    # a plain rerun compares with the recording and passes
    run(pytester).assert_outcomes(passed=1)
    # without its per-sample values the baseline cannot be compared: it fails, never passes
    (pytester.path / ".metric-baselines" / entry["per_sample"]).unlink()
    result = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*metric 'accuracy': the baseline's per-sample values are missing*"])


def test_missing_baseline_skips_and_strict_fails(pytester):
    pytester.makepyfile(test_flips=FLIPS)
    result = run(pytester)
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*no metric baseline for test_flips.py::test_flips*--update-metric-baselines*"])
    result = run(pytester, "--metric-baselines-strict")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*no metric baseline*--metric-baselines-strict*"])
    assert not (pytester.path / ".metric-baselines.json").exists()


def test_five_percent_of_4000_paired_flips_fails_with_the_drop_and_its_interval(pytester, monkeypatch):
    pytester.makepyfile(test_flips=FLIPS)
    run(pytester, "--update-metric-baselines").assert_outcomes(passed=1)
    monkeypatch.setenv("FLIPS", "200")
    result = run(pytester)
    result.assert_outcomes(failed=1)
    # sd of the mean of 200 flips in 4000: sqrt(0.05 * 0.95 / 4000) = 0.00345; 95%: +-0.0068
    line = next(s for s in result.stdout.lines if "accuracy regressed" in s)
    m = re.search(r"from 1 to 0\.95: drop \+0\.05 \(95% CI \+([\d.]+) \.\. \+([\d.]+), n=4000, paired\); allowed drop 0\.01", line)
    assert m, line
    lo, hi = float(m.group(1)), float(m.group(2))
    half = 1.96 * np.sqrt(0.05 * 0.95 / 4000)
    assert abs(lo - (0.05 - half)) < 0.002 and abs(hi - (0.05 + half)) < 0.002
    result.stdout.fnmatch_lines(["baseline: checkpoint None*", "now: *", "*re-record it with: pytest --update-metric-baselines*"])


def test_two_flips_of_40_pass_because_the_interval_includes_zero(pytester, monkeypatch):
    monkeypatch.setenv("N", "40")
    pytester.makepyfile(test_flips=FLIPS)
    run(pytester, "--update-metric-baselines").assert_outcomes(passed=1)
    monkeypatch.setenv("FLIPS", "2")
    run(pytester).assert_outcomes(passed=1)
    # the same 5% drop, but P(a resample holds no flip) = (38/40)**40 = 0.13 > 2.5%
    d = baselines.paired_difference(np.r_[np.zeros(2), np.ones(38)], np.ones(40))
    assert d.difference == -0.05 and d.upper == 0.0 and not d.excludes_zero


def test_a_real_drop_inside_the_tolerance_passes(pytester, monkeypatch):
    pytester.makepyfile(test_flips=FLIPS)
    run(pytester, "--update-metric-baselines").assert_outcomes(passed=1)
    monkeypatch.setenv("FLIPS", "20")  # drop 0.005: real (its interval excludes zero), inside 0.01
    run(pytester).assert_outcomes(passed=1)
    d = baselines.paired_difference(np.r_[np.zeros(20), np.ones(3980)], np.ones(4000))
    assert d.upper < 0 and d.excludes_zero


def test_improvements_never_fail(pytester, monkeypatch):
    monkeypatch.setenv("FLIPS", "400")
    pytester.makepyfile(test_flips=FLIPS)
    run(pytester, "--update-metric-baselines").assert_outcomes(passed=1)
    monkeypatch.setenv("FLIPS", "0")  # +10% accuracy, interval far from zero
    run(pytester).assert_outcomes(passed=1)


LIBRARY = """
import os
import numpy as np

rng = np.random.default_rng(0)
y = rng.integers(0, 2, 3000)
score = 0.5 * y + rng.uniform(0, 0.5, 3000)
batches = [(score[i:i + 1000], y[i:i + 1000]) for i in range(0, 3000, 1000)]
SHRINK = float(os.environ.get("SHRINK", "0"))  # scores pulled towards 0.5: same F1, worse log loss

def test_library(metric_baseline):
    metric_baseline(lambda s: (1 - SHRINK) * s + SHRINK * 0.5, batches, {"loss": "log_loss", "f1": os.environ.get("F1", "f1")},
                    tolerance={"loss": 0.001, "f1": 0.01})
"""


def test_library_metrics_record_their_configuration_and_direction(pytester, monkeypatch):
    pytester.makepyfile(test_lib=LIBRARY)
    run(pytester, "--update-metric-baselines").assert_outcomes(passed=1)
    entry = json.loads((pytester.path / ".metric-baselines.json").read_text())["entries"]["test_lib.py::test_library"]
    from sklearn.metrics import f1_score, log_loss

    ns: dict = {}
    exec(LIBRARY.split("def test_library")[0], ns)
    assert entry["values"]["loss"] == pytest.approx(log_loss(ns["y"], ns["score"]), rel=1e-12)
    assert entry["values"]["f1"] == pytest.approx(f1_score(ns["y"], ns["score"] >= 0.5), rel=1e-12)
    assert entry["metrics"]["loss"]["kind"] == "library" and entry["metrics"]["loss"]["higher_is_better"] is False
    assert entry["metrics"]["f1"]["config"]["threshold"] == 0.5
    # a higher log loss fails (lower is better, from the registry), the same F1 passes
    monkeypatch.setenv("SHRINK", "0.2")
    result = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*loss regressed from*allowed drop 0.001*", "within tolerance:", "*f1 changed from*drop +0*"])
    # a lower log loss is an improvement: record the worse model, compare the better one
    run(pytester, "--update-metric-baselines").assert_outcomes(passed=1)
    monkeypatch.setenv("SHRINK", "0")
    run(pytester).assert_outcomes(passed=1)
    # another threshold is another configuration: a mismatch, not a comparison
    monkeypatch.setenv("F1", "f1@threshold=0.6")
    result = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*measured something else*", "*metric 'f1' config 'metrics': baseline*f1*now*f1@threshold=0.6*"])


VARIANTS = """
import os
import numpy as np

V = os.environ.get("VARIANT", "")
rng = np.random.default_rng(0)
X = rng.normal(size=(600, 2))
y = (X[:, 0] > 0).astype(np.int64)
if V == "data":
    X = X.copy(); X[5, 1] += 1e-9
n = 500 if V == "n" else 600
size = 50 if V == "batch_size" else 100
batches = [(X[i:min(i + size, n)], y[i:min(i + size, n)]) for i in range(0, n, size)]

class Mean:
    def __init__(self, threshold):
        self.config = {"threshold": threshold}
        self.hits = self.n = 0
    def update(self, output, batch):
        self.hits += int(((output > self.config["threshold"]) == batch[1]).sum()); self.n += len(batch[1])
    def compute(self):
        return self.hits / self.n

def test_variants(metric_baseline):
    correct = lambda out, batch: (out > 0) == batch[1]
    batch_acc = lambda out, batch: float(((out > 0) == batch[1]).mean())
    metrics = {"correct": batch_acc if V == "kind" else correct, "mean": Mean(0.1 if V == "config" else 0.0)}
    if V == "extra":
        metrics["more"] = correct
    if V == "fewer":
        del metrics["mean"]
    context = {"dataset": "blobs", "split": "test" if V == "context" else "validation",
               "checkpoint": "v2" if V == "checkpoint" else "v1"}
    metric_baseline(lambda x: x[:, 0], batches, metrics, context=context,
                    max_batches=3 if V == "max_batches" else None)
"""


@pytest.mark.parametrize(
    "variant, line",
    [
        ("context", "*context 'split': baseline 'validation', now 'test'*"),
        ("data", "*data fingerprint (inputs and labels, in order): baseline *, now *"),
        ("n", "*sample count: baseline 600, now 500*"),
        ("max_batches", "*max_batches: baseline None, now 3*"),
        ("kind", "*metric 'correct' kind: baseline 'per_sample', now 'per_batch'*"),
        ("config", "*metric 'mean' config 'threshold': baseline 0.0, now 0.1*"),
        ("extra", "*metric 'more': measured now, not in the baseline*"),
        ("fewer", "*metric 'mean': in the baseline, not measured now*"),
    ],
)
def test_each_mismatch_kind_fails_naming_the_difference(pytester, monkeypatch, variant, line):
    pytester.makepyfile(test_variants=VARIANTS)
    run(pytester, "--update-metric-baselines").assert_outcomes(passed=1)
    monkeypatch.setenv("VARIANT", variant)
    result = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*measured something else*", line, "baseline: checkpoint 'v1'*", "*re-record it with*"])


@pytest.mark.parametrize("variant", ["checkpoint", "batch_size"])
def test_recorded_only_provenance_and_the_batch_size_do_not_fail(pytester, monkeypatch, variant):
    pytester.makepyfile(test_variants=VARIANTS)
    run(pytester, "--update-metric-baselines").assert_outcomes(passed=1)
    monkeypatch.setenv("VARIANT", variant)
    run(pytester).assert_outcomes(passed=1)


def test_every_difference_is_listed(pytester, monkeypatch):
    pytester.makepyfile(test_variants=VARIANTS.replace('V == "n"', 'V in ("n", "both")').replace('V == "context"', 'V in ("context", "both")'))
    run(pytester, "--update-metric-baselines").assert_outcomes(passed=1)
    monkeypatch.setenv("VARIANT", "both")
    result = run(pytester)
    result.stdout.fnmatch_lines(["*measured something else (3 differences)*", "*context 'split'*", "*data fingerprint*", "*sample count*"])


MINMAX = """
import numpy as np
y = np.array([0, 1, 1, 0, 1, 1, 0, 0])
p = np.array([0, 1, 1, 1, 1, 0, 0, 0])  # 6 of 8 right

def test_limits(metric_baseline):
    metric_baseline(lambda x: p[x], [(np.arange(8), y)], {"acc": lambda q, batch: batch[1] == q}, {KW})
"""


@pytest.mark.parametrize(
    "kw, outcome, line",
    [
        ("minimum=0.7", "skipped", "*no metric baseline for test_limits.py::test_limits*(minimum/maximum held)*--update-metric-baselines*"),
        ("minimum={'acc': 0.8}", "failed", "*acc = 0.75 is below the minimum 0.8*"),
        ("maximum=0.7", "failed", "*acc = 0.75 is above the maximum 0.7*"),
        ("minimum=0.5, maximum=0.9", "skipped", "*no metric baseline*(minimum/maximum held)*"),
    ],
)
def test_minimum_and_maximum_apply_without_a_baseline(pytester, kw, outcome, line):
    """A violated limit fails; limits that hold still leave the test skipped (never a silent pass)
    with the reason naming the option that records the baseline."""
    pytester.makepyfile(test_limits=MINMAX.replace("{KW}", kw))
    result = run(pytester)
    result.assert_outcomes(**{outcome: 1})
    if line:
        result.stdout.fnmatch_lines([line])


def test_bad_options_fail_also_when_recording(pytester):
    pytester.makepyfile(test_limits=MINMAX.replace("{KW}", "tolerance={'accuracy': 0.1}"))
    result = run(pytester, "--update-metric-baselines")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*ValueError: tolerance: unknown metric(s) ?'accuracy'?; the metrics are ?'acc'?*"])
    assert not (pytester.path / ".metric-baselines.json").exists()


def test_minimum_applies_with_a_baseline_and_when_recording(pytester):
    pytester.makepyfile(test_limits=MINMAX.replace("{KW}", "minimum=0.8"))
    run(pytester, "--update-metric-baselines").assert_outcomes(failed=1)  # a failing run is not recorded
    assert not (pytester.path / ".metric-baselines.json").exists()
    pytester.makepyfile(test_limits=MINMAX.replace("{KW}", ""))
    run(pytester, "--update-metric-baselines").assert_outcomes(passed=1)
    pytester.makepyfile(test_limits=MINMAX.replace("{KW}", "minimum=0.8"))
    run(pytester).assert_outcomes(failed=1)  # equal to its baseline, still below the minimum


def test_baselines_file_option(pytester, monkeypatch):
    pytester.makepyfile(test_flips=FLIPS)
    monkeypatch.setenv("N", "100")
    run(pytester, "--update-metric-baselines", "--metric-baselines-file", "gate/mine.json").assert_outcomes(passed=1)
    assert (pytester.path / "gate" / "mine.json").exists() and (pytester.path / "gate" / "mine").is_dir()
    assert not (pytester.path / ".metric-baselines.json").exists()
    run(pytester, "--metric-baselines-file", "gate/mine.json").assert_outcomes(passed=1)
    run(pytester).assert_outcomes(skipped=1)


SKLEARN = """
import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression

rng = np.random.default_rng(3)
X = pd.DataFrame({"a": rng.normal(size=800), "b": rng.normal(size=800)})
y = pd.Series((X["a"] + 0.5 * rng.normal(size=800) > 0).astype(int))
clf = LogisticRegression(C=float(__import__("os").environ.get("C", "1.0"))).fit(X, y)
batches = [(X.iloc[i:i + 200], y.iloc[i:i + 200]) for i in range(0, 800, 200)]

def test_sklearn(metric_baseline):
    run = metric_baseline(clf.predict_proba, batches,
                          {"accuracy": "accuracy", "hit": lambda out, batch: out.argmax(1) == batch[1], "auc": "roc_auc"},
                          context={"checkpoint": "c" + str(clf.C)})
    print("VALUES", run.values, run.provenance["weights"])
"""


def test_a_scikit_learn_model_with_pandas_batches(pytester, monkeypatch):
    from sklearn.metrics import accuracy_score, roc_auc_score

    pytester.makepyfile(test_sk=SKLEARN)
    result = run(pytester, "--update-metric-baselines", "-s")
    result.assert_outcomes(passed=1)
    entry = json.loads((pytester.path / ".metric-baselines.json").read_text())["entries"]["test_sk.py::test_sklearn"]
    ns: dict = {}
    exec(SKLEARN.split("def test_sklearn")[0], ns)
    proba = ns["clf"].predict_proba(ns["X"])
    assert entry["values"]["accuracy"] == accuracy_score(ns["y"], proba[:, 1] >= 0.5)
    assert entry["values"]["hit"] == accuracy_score(ns["y"], proba.argmax(1))
    assert entry["values"]["auc"] == pytest.approx(roc_auc_score(ns["y"], proba[:, 1]), rel=1e-12)
    assert entry["provenance"]["weights"] and "scikit-learn" in entry["provenance"]["versions"]
    # a re-fitted model with other weights: its fingerprint and checkpoint are recorded only
    monkeypatch.setenv("C", "0.5")
    result = run(pytester, "-s")
    result.assert_outcomes(passed=1)
    assert entry["provenance"]["weights"] not in result.stdout.str()


def test_weights_fingerprint_follows_fitted_arrays():
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X = np.arange(20.0).reshape(10, 2)
    y = np.arange(10) % 2
    a = make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y)
    b = make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y)
    c = make_pipeline(StandardScaler(), LogisticRegression(C=0.01)).fit(X, y)
    assert baselines.weights_fingerprint(a.predict) == baselines.weights_fingerprint(b.predict_proba)
    assert baselines.weights_fingerprint(a) != baselines.weights_fingerprint(c)
    assert baselines.weights_fingerprint(lambda x: x) is None


class TorchLike:
    """Enough of a torch module: eval()/train()/training and state_dict()."""

    def __init__(self, w):
        self.training = True
        self.w = np.asarray(w, dtype=np.float32)
        self.modes: list[bool] = []

    def eval(self):
        return self.train(False)

    def train(self, mode=True):
        self.training = mode
        return self

    def state_dict(self):
        return {"linear.weight": self.w}

    def __call__(self, x):
        self.modes.append(self.training)
        if x.shape[0] == 0:
            raise RuntimeError("empty batch")
        return x @ self.w


def test_a_torch_like_model_runs_in_eval_mode_and_its_flag_is_restored():
    m = TorchLike([1.0, -1.0])
    X = np.array([[2.0, 1.0], [0.0, 1.0], [1.0, 0.0]], dtype=np.float32)
    y = np.array([1, 0, 1])
    batches = [{"x": X[:2], "y": y[:2]}, {"x": X[2:], "y": y[2:]}]  # dicts: the model gets x=
    run = baselines.evaluate_detailed(lambda x: m(x), batches, {"hit": lambda out, batch: (out > 0) == batch["y"]})
    assert run.values == {"hit": 1.0}
    m2 = TorchLike([1.0, -1.0])
    baselines.evaluate(m2, [(X, y)], {"hit": lambda out, batch: (out > 0) == batch[1]})
    assert m2.modes == [False] and m2.training is True
    m2.train(False)
    baselines.evaluate(m2, [(X, y)], {"hit": lambda out, batch: (out > 0) == batch[1]})
    assert m2.training is False  # restored to what it was, not forced to train
    m3 = TorchLike([1.0, -1.0])
    with pytest.raises(RuntimeError, match="empty batch"):
        baselines.evaluate(m3, [(X[:0], y[:1])], {"hit": lambda out, batch: (out > 0) == batch[1]})
    assert m3.training is True
    fp = baselines.weights_fingerprint(m2)
    assert fp == baselines.weights_fingerprint(TorchLike([1.0, -1.0])) != baselines.weights_fingerprint(TorchLike([1.0, 1.0]))


def test_dict_batches_with_the_inputs_and_targets_options():
    X = np.array([[0.0, 3.0], [1.0, 2.0], [2.0, 1.0], [3.0, 0.0]])
    batch = {"features": X, "other": X[:, 1], "label": np.array([0, 0, 1, 1])}
    seen = {}

    def kw_model(features, other):
        seen["keys"] = True
        return (features[:, 0] > other).astype(int)

    assert baselines.evaluate(kw_model, [batch], {"hit": lambda out, b: b["label"] == out}) == {"hit": 1.0}  # label not passed
    assert baselines.evaluate(lambda f: (f[:, 0] > 0.5).astype(int), [batch], {"hit": lambda out, b: b["label"] == out}, inputs="features") == {"hit": 0.75}
    assert baselines.evaluate(lambda f: f, [batch], {"hit": from_sklearn(lambda t, p: t == (p > 1.5))}, inputs="other", targets="label") == {"hit": 0.0}
    assert baselines.evaluate(kw_model, [batch], {"hit": lambda out, b: b["label"] == out}, inputs=["features", "other"]) == {"hit": 1.0}


def test_the_fingerprint_does_not_depend_on_the_batch_size_but_on_the_samples_and_their_order():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(103, 4)).astype(np.float32)
    y = rng.integers(0, 3, 103)
    words = np.array([f"w{i}" for i in range(103)], dtype=object)

    def fp(size, X=X, y=y):
        batches = [(X[i : i + size], y[i : i + size], words[i : i + size]) for i in range(0, 103, size)]
        return baselines.evaluate_detailed(lambda x: x[:, 0], batches, {"m": lambda out, batch: out}).data["fingerprint"]

    assert fp(1) == fp(7) == fp(103)
    order = rng.permutation(103)
    assert fp(10, X=X[order], y=y[order]) != fp(10)
    assert fp(10, y=np.where(np.arange(103) == 50, (y + 1) % 3, y)) != fp(10)  # one label changed


def test_per_batch_metrics_are_weighted_by_batch_size_and_stateful_ones_are_not_mutated():
    from sklearn.metrics import accuracy_score

    rng = np.random.default_rng(2)
    y = rng.integers(0, 2, 97)
    p = np.where(rng.uniform(size=97) < 0.3, 1 - y, y)
    cuts = [0, 3, 50, 51, 97]
    batches = [(np.arange(a, b), y[a:b]) for a, b in zip(cuts, cuts[1:])]

    class Hits:
        config = {"note": "counts"}

        def __init__(self):
            self.hits = self.n = 0

        def update(self, output, batch):
            self.hits += int((output == batch[1]).sum())
            self.n += len(batch[1])

        def compute(self):
            return self.hits / self.n

    user = Hits()
    run = baselines.evaluate_detailed(lambda i: p[i], batches, {"sk": from_sklearn(accuracy_score), "obj": user})
    assert run.values["sk"] == pytest.approx(accuracy_score(y, p), abs=1e-15)
    assert run.values["obj"] == accuracy_score(y, p)
    assert run.metrics["sk"]["kind"] == "per_batch" and run.metrics["obj"] == {"kind": "stateful", "config": {"note": "counts"}, "higher_is_better": None}
    assert user.n == 0


def test_paired_difference_against_the_normal_interval_and_its_edge_cases():
    rng = np.random.default_rng(11)
    base = rng.normal(size=5000)
    cur = base + rng.normal(0.1, 1.0, size=5000)
    d = baselines.paired_difference(cur, base, confidence=0.9, resamples=4000, seed=3)
    diff = cur - base
    se = diff.std(ddof=1) / np.sqrt(5000)
    assert d.difference == pytest.approx(diff.mean(), rel=1e-12)
    assert d.lower == pytest.approx(diff.mean() - 1.6449 * se, abs=0.2 * se)
    assert d.upper == pytest.approx(diff.mean() + 1.6449 * se, abs=0.2 * se)
    assert d == baselines.paired_difference(cur, base, confidence=0.9, resamples=4000, seed=3)  # seeded
    assert d != baselines.paired_difference(cur, base, confidence=0.9, resamples=4000, seed=4)
    same = baselines.paired_difference(base, base)
    assert (same.difference, same.lower, same.upper, same.excludes_zero) == (0.0, 0.0, 0.0, False)
    empty = baselines.paired_difference([], [])
    assert empty.n == 0 and np.isnan(empty.difference)
    with pytest.raises(ValueError, match="equal lengths: current has 2, baseline 3"):
        baselines.paired_difference([1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match=r"current: per-sample value nan at position 1"):
        baselines.paired_difference([1, np.nan], [1, 2])
    with pytest.raises(ValueError, match="confidence"):
        baselines.paired_difference([1], [1], confidence=95)


def test_bad_metrics_name_the_metric_and_the_batch():
    batches = [(np.arange(4), np.arange(4))]
    with pytest.raises(ValueError, match=r"metric 'bad' returned 3 values for batch 0 of 4 samples: a per-sample metric returns one value per sample \(4\)"):
        baselines.evaluate(lambda x: x, batches, {"bad": lambda out, batch: out[:3]})
    with pytest.raises(ValueError, match=r"metric 'inf': value inf of sample 2 in batch 0"):
        baselines.evaluate(lambda x: x, batches, {"inf": lambda out, batch: np.where(out == 2, np.inf, out)})
    with pytest.raises(TypeError, match=r"metric 'x': expected a function"):
        baselines.evaluate(lambda x: x, batches, {"x": 3})


def test_a_test_without_the_fixture_is_not_affected(pytester):
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    result = run(pytester, "-W", "error")
    result.assert_outcomes(passed=1, warnings=0)
    assert sorted(p.name for p in pytester.path.iterdir()) == ["test_plain.py"]
    assert "metric baselines" not in result.stdout.str()


def test_the_entry_point_is_declared_and_the_help_lists_the_options(pytester):
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["entry-points"]["pytest11"] == {"mergeable_metrics": PLUGIN}
    for ep in metadata.entry_points(group="pytest11"):
        if ep.name == "mergeable_metrics":  # installed from this tree: the same module
            assert ep.value == PLUGIN
    result = run(pytester, "--help")
    result.stdout.fnmatch_lines(["*--update-metric-baselines*", "*--metric-baselines-file=PATH*", "*--metric-baselines-strict*"])


#: the engine-free layer is the package itself: only its lazy __init__ and the plugin may load
HEAVY = (
    "matplotlib",
    "jinja2",
    "pyarrow",
    "apache_beam",
    "pyspark",
    "numpy",
    "pandas",
    "mergeable_metrics.pipelines.baselines",
    "mergeable_metrics.metrics",
    "mergeable_metrics.collection",
    "mergeable_metrics.evaluation",
)


def test_loading_the_plugin_imports_nothing_heavy(pytester):
    code = f"import sys, {PLUGIN}; print(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}) | {{m for m in sys.modules if m in {HEAVY!r}}}))"
    out = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"
    imported = {line.split("|")[-1].strip().split(".")[0] for line in out.stderr.splitlines() if "|" in line}
    assert not imported & set(HEAVY)
    # a whole pytest session with the plugin loaded and a test that does not use it
    pytester.makeconftest(
        "import sys\n"
        "def pytest_sessionfinish(session):\n"
        f"    open('modules.txt', 'w').write(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r})))\n"
    )
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    pytester.runpytest_subprocess(*ARGS, "-p", "no:cacheprovider").assert_outcomes(passed=1)
    assert (pytester.path / "modules.txt").read_text() == ""


def _readme_example() -> str:
    """The first Python block of the plugin's docs page (the example it says to save as a test file)."""
    text = (ROOT / "docs" / "pytest-plugin.md").read_text()
    return textwrap.dedent(re.search(r"```python\n(.*?)```", text, re.S).group(1))


def test_the_readme_example_records_then_passes(pytester):
    pytester.makepyfile(test_model=_readme_example())
    result = run(pytester)  # no baseline yet: its minimum still applies, and holds; the test is skipped
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*no metric baseline for test_model.py::test_model_did_not_get_worse*record it with: pytest --update-metric-baselines*"])
    run(pytester, "--metric-baselines-strict").assert_outcomes(failed=1)
    run(pytester, "--update-metric-baselines").assert_outcomes(passed=1)
    run(pytester, "--metric-baselines-strict").assert_outcomes(passed=1)
    entry = json.loads((pytester.path / ".metric-baselines.json").read_text())["entries"]
    assert list(entry) == ["test_model.py::test_model_did_not_get_worse"]


def test_the_docstring_examples():
    import doctest

    assert doctest.testmod(baselines).failed == 0


@given(st.lists(st.integers(0, 60), max_size=6))
def test_the_fingerprint_is_the_same_for_any_split_into_batches_empty_ones_included(cuts):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    y = rng.integers(0, 2, 60)
    edges = [0, *sorted(cuts), 60]
    split = [(X[a:b], y[a:b]) for a, b in zip(edges, edges[1:])]
    run = baselines.evaluate_detailed(lambda x: x[:, 0] > 0, split, {"hit": lambda out, b: b[1] == out, "sk": from_sklearn(sklearn.metrics.accuracy_score)})
    whole = baselines.evaluate_detailed(
        lambda x: x[:, 0] > 0, [(X, y)], {"hit": lambda out, b: b[1] == out, "sk": from_sklearn(sklearn.metrics.accuracy_score)}
    )
    assert run.data["fingerprint"] == whole.data["fingerprint"] and run.data["n"] == 60
    assert run.values["hit"] == whole.values["hit"] == float(np.mean((X[:, 0] > 0) == y))
    assert run.values["sk"] == pytest.approx(whole.values["sk"], abs=1e-15)
    assert np.array_equal(run.per_sample["hit"], (X[:, 0] > 0) == y)


def test_pandas_and_arrow_batches_give_the_numpy_values_and_fingerprint_per_column():
    rng = np.random.default_rng(4)
    a, b = rng.normal(size=50), rng.normal(size=50)
    y = (a > 0).astype(np.int64)
    model = lambda t: (np.asarray(t["a"]) > 0).astype(np.int64)  # noqa: E731 - reads a column of either
    metrics = {"hit": lambda out, batch: np.asarray(batch[1]) == out}
    frame = [(pd.DataFrame({"a": a[i : i + 20], "b": b[i : i + 20]}), pd.Series(y[i : i + 20])) for i in range(0, 50, 20)]
    table = [(pa.table({"a": a[i : i + 25], "b": b[i : i + 25]}), pa.array(y[i : i + 25])) for i in range(0, 50, 25)]
    runs = [baselines.evaluate_detailed(model, batches, metrics) for batches in (frame, table)]
    assert runs[0].values == runs[1].values == {"hit": 1.0}
    assert runs[0].data["fingerprint"] == runs[1].data["fingerprint"]  # the same columns, however batched
    swapped = [(pd.DataFrame({"a": a[i : i + 20], "b": -b[i : i + 20]}), pd.Series(y[i : i + 20])) for i in range(0, 50, 20)]
    assert baselines.evaluate_detailed(model, swapped, metrics).data["fingerprint"] != runs[0].data["fingerprint"]


def test_a_collection_of_several_metrics_and_options_per_metric():
    from mergeable_metrics import MetricCollection
    from sklearn.metrics import accuracy_score, f1_score

    y = np.array([0, 1, 1, 0, 1, 1, 0, 0, 1, 0])
    s_base = np.array([0.1, 0.9, 0.8, 0.3, 0.7, 0.6, 0.2, 0.4, 0.9, 0.1])  # all right
    s_now = np.where(np.arange(10) < 3, 1 - s_base, s_base)  # 3 of 10 wrong
    mc = MetricCollection("accuracy", "f1", threshold=0.5)
    base = baselines.evaluate_detailed(lambda s: s, [(s_base, y)], {"bin": mc}, context={"split": "val"})
    now = baselines.evaluate_detailed(lambda s: s, [(s_now, y)], {"bin": mc}, context={"split": "val"})
    assert now.values == {"bin.accuracy": accuracy_score(y, s_now >= 0.5), "bin.f1": f1_score(y, s_now >= 0.5)}
    assert now.metrics["bin.f1"]["group"] == "bin" and mc.encode() == MetricCollection("accuracy", "f1").encode()  # untouched
    now.data = base.data  # the same samples for this check: only the scores differ
    entry = json.loads(json.dumps(base.entry()))
    regressed = baselines.compare(now, entry)
    assert [r.split(" ")[0] for r in regressed.regressions] == ["bin.accuracy", "bin.f1"]
    assert baselines.compare(now, entry, tolerance={"bin": 0.5}).regressions == []
    assert [r.split(" ")[0] for r in baselines.compare(now, entry, tolerance={"bin": 0.5, "bin.f1": 0.0}).regressions] == ["bin.f1"]
    assert baselines.compare(now, entry, higher_is_better={"bin": False}).regressions == []  # then it improved
    with pytest.raises(ValueError, match=r"tolerance: unknown metric\(s\) \['acc'\]"):
        baselines.compare(now, entry, tolerance={"acc": 0.1})
    for bad, err, match in [
        ({"tolerance": -0.1}, ValueError, r"tolerance of 'tolerance' must be a finite number >= 0, got -0.1"),
        ({"tolerance": {"bin": "1%"}}, TypeError, r"tolerance of 'bin' must be a number, got str"),
        ({"higher_is_better": {"bin.f1": "yes"}}, TypeError, r"higher_is_better of 'bin.f1' must be True, False or None"),
        ({"resamples": 0}, ValueError, r"resamples must be an integer"),
    ]:
        with pytest.raises(err, match=match):
            baselines.compare(now, entry, **bad)
    with pytest.raises(ValueError, match=r"minimum: unknown metric\(s\) \['f1'\]"):
        baselines.check_limits(now, minimum={"f1": 0.1})
    assert baselines.check_limits(now, minimum={"bin": 0.8}) == [
        f"bin.accuracy = {accuracy_score(y, s_now >= 0.5):.6g} is below the minimum 0.8",
        f"bin.f1 = {f1_score(y, s_now >= 0.5):.6g} is below the minimum 0.8",
    ]


@pytest.mark.parametrize("n, flips, fixed", [(4000, 200, 0), (4000, 150, 50), (40, 2, 0), (300, 0, 0)])
def test_paired_difference_of_hits_equals_a_direct_index_bootstrap(n, flips, fixed):
    """Few distinct differences are resampled as multinomial counts: compared with resampling
    the indices directly (numpy, 5,000 resamples)."""
    base = np.ones(n)
    base[:fixed] = 0  # wrong before, right now: +1 differences
    cur = base.copy()
    cur[fixed : fixed + flips] = 0
    cur[:fixed] = 1
    d = baselines.paired_difference(cur, base, resamples=5000, seed=1)
    diff = cur - base
    rng = np.random.default_rng(7)
    means = np.concatenate([diff[rng.integers(0, n, size=(500, n))].mean(axis=1) for _ in range(10)])
    lo, hi = np.quantile(means, [0.025, 0.975])
    assert d.difference == diff.mean()
    assert abs(d.lower - lo) <= 2.5 / n + 1e-12 and abs(d.upper - hi) <= 2.5 / n + 1e-12


def test_sessions_that_write_keep_each_others_entries_and_wait_for_the_lock(tmp_path):
    """Sessions that record at once (pytest-xdist workers, two CI jobs) re-read the file under an
    exclusive lock of its directory before adding their entries."""
    import threading

    from mergeable_metrics.pipelines.pytest_plugin import _BaselineStore, _locked

    path = tmp_path / ".metric-baselines.json"
    first, second = _BaselineStore(path, True, False), _BaselineStore(path, True, False)
    first.entries()
    second.entries()  # both read the file before either wrote
    first.record("t.py::a", {"version": 1, "values": {"m": 1.0}}, {"m": np.ones(3)})
    second.record("t.py::b", {"version": 1, "values": {"m": 0.5}}, {})
    first.write()
    with _locked(tmp_path):
        writer = threading.Thread(target=second.write)
        writer.start()
        writer.join(0.3)
        assert writer.is_alive() and "t.py::b" not in json.loads(path.read_text())["entries"]  # waits for the lock
    writer.join(10)
    entries = json.loads(path.read_text())["entries"]
    assert sorted(entries) == ["t.py::a", "t.py::b"] and entries["t.py::b"]["values"] == {"m": 0.5}
    assert "per_sample" not in entries["t.py::b"] and (tmp_path / ".metric-baselines" / entries["t.py::a"]["per_sample"]).exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [".metric-baselines", ".metric-baselines.json"]  # no lock or temporary files


def test_max_batches_stops_reading_the_batches():
    taken = []

    def batches():
        for i in range(10):
            taken.append(i)
            yield np.array([i, i]), np.array([i % 2, i % 2])

    run = baselines.evaluate_detailed(lambda x: x % 2, batches(), {"hit": lambda out, b: b[1] == out, "v": lambda out, b: out.astype(float)}, max_batches=3)
    assert taken == [0, 1, 2]  # the 4th batch is never asked for
    assert run.data == {"fingerprint": run.data["fingerprint"], "n": 6, "batches": 3, "max_batches": 3}
    assert run.values == {"hit": 1.0, "v": 1 / 3} and run.per_sample["v"].tolist() == [0, 0, 1, 1, 0, 0]
    with pytest.raises(ValueError, match="max_batches must be a positive integer or None, got 0"):
        baselines.evaluate(lambda x: x, [], {"v": lambda out, b: out}, max_batches=0)


@pytest.mark.parametrize(
    "edit, line",
    [
        (lambda e: ["not", "an", "entry"], "the baseline entry is a list, not a mapping"),
        (lambda e: {**e, "values": {**e["values"], "sk": "abc"}}, "baseline value of 'sk' is a str 'abc', expected a number or null"),
        (lambda e: {**e, "values": {**e["values"], "sk": "0.1"}}, "baseline value of 'sk' is a str '0.1', expected a number or null"),
        (lambda e: {**e, "values": {**e["values"], "sk": True}}, "baseline value of 'sk' is a bool True, expected a number or null"),
        (lambda e: {**e, "values": {**e["values"], "sk": [1]}}, "baseline value of 'sk' is a list [1], expected a number or null"),
        (lambda e: {**e, "values": {"hit": e["values"]["hit"]}}, "metric 'sk': no recorded value in the baseline"),
        (lambda e: {**e, "values": None}, "metric 'hit': no recorded value in the baseline"),
        (lambda e: {**e, "values": [1]}, "baseline 'values' is a list [1], expected a mapping"),
        (lambda e: {**e, "context": [1]}, "baseline 'context' is a list [1], expected a mapping"),
        (lambda e: {**e, "data": "x"}, "baseline 'data' is a str 'x', expected a mapping"),
        (lambda e: {**e, "metrics": {**e["metrics"], "sk": "x"}}, "baseline metric 'sk' is a str 'x', expected a mapping of its kind and config"),
    ],
)
def test_a_hand_edited_baseline_entry_is_a_mismatch_naming_the_key_and_value(edit, line):
    # before: AttributeError / ValueError from inside compare, or a string "0.1" silently read as 0.1,
    # True as 1.0, and a deleted value reported as a regression from NaN
    y = np.array([0, 1, 1, 0, 1])
    run = baselines.evaluate_detailed(
        lambda x: x, [(y, y)], {"hit": lambda out, b: (b[1] == out).astype(float), "sk": lambda out, b: float(np.mean(b[1] == out))}
    )
    entry = json.loads(json.dumps(run.entry()))
    assert baselines.compare(run, entry, {"hit": run.per_sample["hit"]}).mismatches == []
    result = baselines.compare(run, edit(entry), {"hit": run.per_sample["hit"]})
    assert any(line in m for m in result.mismatches) and result.regressions == [], result.mismatches


@pytest.mark.parametrize(
    "edit, line",
    [
        (lambda e: 5, "*the baseline entry is a int, not a mapping*"),
        (lambda e: {**e, "per_sample": "../../elsewhere.npz"}, "*entry 'test_flips.py::test_flips': per_sample '../../elsewhere.npz' is not a file name in*"),
    ],
)
def test_a_hand_edited_baselines_file_fails_naming_the_entry(pytester, monkeypatch, edit, line):
    # before: AttributeError ('int' object has no attribute 'get'); a per_sample path outside the directory was read
    monkeypatch.setenv("FLIPS", "0")
    pytester.makepyfile(test_flips=FLIPS)
    run(pytester, "--update-metric-baselines").assert_outcomes(passed=1)
    path = pytester.path / ".metric-baselines.json"
    data = json.loads(path.read_text())
    data["entries"]["test_flips.py::test_flips"] = edit(data["entries"]["test_flips.py::test_flips"])
    path.write_text(json.dumps(data))
    result = run(pytester)
    assert result.ret != 0 and "AttributeError" not in result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines([line])


# ---------------------------------------------------------------- issue 28, items 2-5
def test_metric_functions_get_the_output_as_the_model_gave_it_and_the_batch_as_the_loader_gave_it():
    """Issue 28 item 2: ``fn(output, batch)``, as the plugin specification says (before:
    ``fn(y_true, y_pred)``, so the specification's ``output.argmax(-1) == batch[1]`` compared the
    labels' argmax with one row of the output)."""
    seen = []
    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    y = np.array([0, 0, 1, 1])
    frame = lambda x: pd.DataFrame({"p0": 1 - x[:, 0] / 3, "p1": x[:, 0] / 3})  # noqa: E731 - a model giving a DataFrame

    def accuracy(output, batch):
        seen.append((type(output), type(batch), sorted(batch) if isinstance(batch, dict) else len(batch)))
        return np.asarray(output).argmax(-1) == batch[1] if not isinstance(batch, dict) else np.asarray(output).argmax(-1) == batch["y"]

    tuples = [(X[:3], y[:3], "extra"), (X[3:], y[3:], "extra")]
    assert baselines.evaluate(frame, tuples, {"accuracy": accuracy}) == {"accuracy": 1.0}
    assert seen == [(pd.DataFrame, tuple, 3)] * 2  # the extra part too: the batch as given
    seen.clear()
    run = baselines.evaluate_detailed(lambda x: frame(x), [{"x": X, "y": y}], {"accuracy": accuracy})
    assert seen == [(pd.DataFrame, dict, ["x", "y"])] and run.values == {"accuracy": 1.0}
    assert run.metrics["accuracy"]["config"] == {"signature": "fn(output, batch)"}


def test_a_scikit_learn_style_function_needs_from_sklearn_and_is_never_guessed():
    from sklearn.metrics import accuracy_score, fbeta_score, roc_auc_score

    y = np.array([0, 1, 1, 0, 1, 0, 1, 1])
    s = np.array([0.2, 0.9, 0.4, 0.1, 0.8, 0.7, 0.6, 0.3])
    batches = [(s[:4], y[:4]), (s[4:], y[4:])]
    for fn in (accuracy_score, roc_auc_score, lambda y_true, y_pred: y_true == y_pred):
        with pytest.raises(
            TypeError, match=r"metric 'm': .* takes \(y_true, y_(pred|score)\), but a metric function is called fn\(output, batch\).*from_sklearn\("
        ):
            baselines.evaluate(lambda x: x, batches, {"m": fn})
    run = baselines.evaluate_detailed(
        lambda x: (x > 0.5).astype(int),
        batches,
        {"acc": from_sklearn(accuracy_score), "f2": from_sklearn(fbeta_score, beta=2.0), "hit": from_sklearn(lambda t, p: t == p)},
    )
    per_batch = [accuracy_score(y[:4], s[:4] > 0.5), accuracy_score(y[4:], s[4:] > 0.5)]
    assert run.values["acc"] == pytest.approx(np.mean(per_batch), abs=1e-15)
    f2 = [fbeta_score(y[:4], s[:4] > 0.5, beta=2.0), fbeta_score(y[4:], s[4:] > 0.5, beta=2.0)]
    assert run.values["f2"] == pytest.approx(np.mean(f2), abs=1e-15)
    assert run.values["hit"] == accuracy_score(y, s > 0.5) and run.metrics["hit"]["kind"] == "per_sample"
    assert run.metrics["f2"]["config"] == {"signature": "fn(y_true, y_pred)", "kwargs": {"beta": 2.0}}
    assert run.metrics["acc"]["kind"] == "per_batch" and run.metrics["acc"]["batch_sizes"] == [[4, 2]]
    with pytest.raises(TypeError, match="from_sklearn: expected a function"):
        from_sklearn("accuracy")


def test_a_per_sample_result_of_another_length_names_the_metric_and_both_lengths():
    y = np.array([0, 1, 1, 0, 1])
    proba = np.eye(2)[y]
    # a typical slip: comparing with the first label only broadcasts (5 values: fine), but
    # comparing a batch's outputs with the labels of a sub-batch is not
    with pytest.raises(
        ValueError, match=r"metric 'accuracy' returned 2 values for batch 0 of 5 samples: a per-sample metric returns one value per sample \(5\)"
    ):
        baselines.evaluate(lambda x: x, [(proba, y)], {"accuracy": lambda out, b: out.argmax(-1)[:2] == b[1][:2]})


def test_dataframe_and_arrow_batches_find_the_label_column_or_raise_naming_targets():
    """Issue 28 item 3: before, a DataFrame or Arrow batch had no labels (None) without targets=:
    a label-needing metric raised without naming the columns, and ``y == p`` read None and gave
    accuracy 0.0; its label column was also passed to the model."""
    from sklearn.metrics import accuracy_score

    rng = np.random.default_rng(9)
    a = rng.uniform(size=60)
    y = (a + rng.normal(scale=0.2, size=60) > 0.5).astype(np.int64)
    seen = []

    def model(t):
        seen.append(list(t.columns) if hasattr(t, "dtypes") else list(t.column_names))
        return np.asarray(t["a"])

    want = accuracy_score(y, a >= 0.5)
    metrics = {"acc": "accuracy", "sk": from_sklearn(lambda t, p: t == (p >= 0.5))}
    for label in ("label", "y", "target"):
        frames = [pd.DataFrame({"a": a[i : i + 25], label: y[i : i + 25]}) for i in range(0, 60, 25)]
        tables = [pa.table({"a": a[i : i + 30], label: y[i : i + 30]}) for i in range(0, 60, 30)]
        batches = [tables[0].to_batches()[0], tables[1]]  # a record batch and a table
        for bs in (frames, batches):
            seen.clear()
            assert baselines.evaluate(model, bs, metrics) == {"acc": want, "sk": want}
            assert all(cols == ["a"] for cols in seen)  # the model never sees the labels
    nolabel = [pd.DataFrame({"a": a, "truth": y})]
    with pytest.raises(
        ValueError,
        match=r"metric 'acc' needs labels: batch 0 \(a DataFrame with columns \['a', 'truth'\]\) has no label column: none of \['y', 'y_true', 'label', 'labels', 'target', 'targets'\]; pass targets=",
    ):
        baselines.evaluate(model, nolabel, {"acc": "accuracy"})
    with pytest.raises(ValueError, match=r"metric 'acc' needs labels: batch 0 \(a Table with columns \['a', 'truth'\]\).*pass targets="):
        baselines.evaluate(model, [pa.table({"a": a, "truth": y})], {"acc": "accuracy"})
    assert baselines.evaluate(lambda t: np.asarray(t["a"]), nolabel, {"acc": "accuracy"}, targets="truth") == {"acc": want}
    with pytest.raises(ValueError, match=r"batch 0 has several label columns \['y', 'label'\]: pass targets="):
        baselines.evaluate(model, [pd.DataFrame({"a": a, "y": y, "label": y})], {"acc": "accuracy"})
    with pytest.raises(ValueError, match=r"batch 0 has several label keys \['y', 'label'\]: pass targets="):
        baselines.evaluate(lambda a: a, [{"a": a, "y": y, "label": y}], {"acc": "accuracy"})
    with pytest.raises(ValueError, match=r"metric 'acc' needs labels: batch 0 \(a ndarray\) has no labels; pass targets="):
        baselines.evaluate(lambda a: a, [a], {"acc": "accuracy"})


REBATCH = """
import os
import numpy as np
from sklearn.metrics import roc_auc_score
from mergeable_metrics.pipelines.baselines import from_sklearn

rng = np.random.default_rng(11)
N = 2000
y = rng.integers(0, 2, N)
score = np.clip(0.35 * y + rng.normal(0.3, 0.25, N), 0, 1)
SIZE = int(os.environ.get("SIZE", "500"))
batches = [(score[i:i + SIZE], y[i:i + SIZE]) for i in range(0, N, SIZE)]
METRICS = os.environ.get("METRICS", "all")

def test_rebatch(metric_baseline):
    metrics = {"hit": lambda out, b: (out >= 0.5) == b[1], "auc": "roc_auc"}
    if METRICS == "all":
        metrics["batch_auc"] = from_sklearn(roc_auc_score)
    metric_baseline(lambda s: s, batches, metrics, tolerance=0.001)
"""


def test_a_per_batch_metric_compares_its_batch_sizes_and_a_rebatching_is_a_mismatch_not_a_regression(pytester, monkeypatch):
    """Issue 28 item 4: a per-batch value depends on the batching: before, re-batching the same
    samples failed as a regression (or hid one)."""
    from sklearn.metrics import roc_auc_score

    pytester.makepyfile(test_rebatch=REBATCH)
    run(pytester, "--update-metric-baselines").assert_outcomes(passed=1)
    entry = json.loads((pytester.path / ".metric-baselines.json").read_text())["entries"]["test_rebatch.py::test_rebatch"]
    assert entry["metrics"]["batch_auc"]["batch_sizes"] == [[500, 4]]
    assert "batch_sizes" not in entry["metrics"]["hit"] and "batch_sizes" not in entry["metrics"]["auc"]
    ns: dict = {}
    exec(REBATCH.split("def test_rebatch")[0], ns)
    y, score = ns["y"], ns["score"]
    by = lambda size: np.mean([roc_auc_score(y[i : i + size], score[i : i + size]) for i in range(0, 2000, size)])  # noqa: E731
    assert entry["values"]["batch_auc"] == pytest.approx(by(500), abs=1e-12)
    assert abs(by(500) - by(125)) > 0.001  # the same samples and model, another per-batch value
    monkeypatch.setenv("SIZE", "125")
    result = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*measured something else (1 difference)*",
            "*metric 'batch_auc' is per batch (one value per batch, averaged), so its value depends on the batching: "
            "batch sizes baseline 4 x 500 (4 batches), now 16 x 125 (16 batches)*",
        ]
    )
    assert "regressed" not in result.stdout.str()
    # per-sample and library metrics do not depend on the batching: the same samples re-batched pass
    monkeypatch.setenv("METRICS", "batch-free")
    monkeypatch.setenv("SIZE", "500")
    run(pytester, "--update-metric-baselines").assert_outcomes(passed=1)
    for size in ("125", "2000", "300"):
        monkeypatch.setenv("SIZE", size)
        run(pytester).assert_outcomes(passed=1)


def test_a_recorded_value_that_is_not_the_mean_of_its_per_sample_file_is_a_mismatch(pytester, monkeypatch):
    """Issue 28 item 5: before, a value edited or merged from another branch (0.95) with an
    older .npz let a drop to 0.815 pass (the paired test compared with the .npz only)."""
    monkeypatch.setenv("FLIPS", "740")  # 1 - 740/4000 = 0.815
    pytester.makepyfile(test_flips=FLIPS)
    run(pytester, "--update-metric-baselines").assert_outcomes(passed=1)
    path = pytester.path / ".metric-baselines.json"
    data = json.loads(path.read_text())
    entry = data["entries"]["test_flips.py::test_flips"]
    assert entry["values"]["accuracy"] == 0.815
    entry["values"]["accuracy"] = 0.95
    path.write_text(json.dumps(data))
    result = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*measured something else*",
            f"*metric 'accuracy': the recorded value 0.95 is not the mean of its per-sample file '{entry['per_sample']}' "
            "(0.815 over 4000 samples): the .json and the per-sample file are from different recordings*",
        ]
    )
    # a per-sample file of another length than the entry's sample count
    y = np.ones(4000)
    run_now = baselines.evaluate_detailed(lambda x: x, [(y, y)], {"hit": lambda out, b: out == b[1]})
    e = json.loads(json.dumps(run_now.entry()))
    assert baselines.compare(run_now, e, {"hit": np.ones(4000)}).mismatches == []
    assert baselines.compare(run_now, e, {"hit": np.ones(3999)}).mismatches == [
        "metric 'hit': its per-sample values has 3999 samples, the entry 4000 (the .json and the per-sample file are from different recordings; re-record it)"
    ]
    assert "holds a <U1 array of shape (4000,)" in baselines.compare(run_now, e, {"hit": np.full(4000, "x")}).mismatches[0]


def test_a_damaged_per_sample_file_is_a_usage_error_naming_the_file_and_the_re_record_command(pytester, monkeypatch):
    monkeypatch.setenv("FLIPS", "0")
    pytester.makepyfile(test_flips=FLIPS)
    run(pytester, "--update-metric-baselines").assert_outcomes(passed=1)
    (npz,) = (pytester.path / ".metric-baselines").iterdir()
    good = npz.read_bytes()
    npz.write_bytes(b"not a zip file")
    result = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            f"*metric baselines: the per-sample file '{npz}' of entry 'test_flips.py::test_flips' cannot be read (BadZipFile: *); "
            "re-record it with: pytest --update-metric-baselines 'test_flips.py::test_flips'*"
        ]
    )
    for damaged in (good[: len(good) // 2], good[:40] + bytes(len(good) - 40)):  # truncated; zeroed after its header
        npz.write_bytes(damaged)
        result = run(pytester)
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(["*metric baselines: the per-sample file*cannot be read (*re-record it with: pytest --update-metric-baselines*"])


def test_a_violated_minimum_does_not_hide_the_baseline_regression(pytester, monkeypatch):
    monkeypatch.setenv("FLIPS", "0")
    pytester.makepyfile(test_flips=FLIPS)
    run(pytester, "--update-metric-baselines").assert_outcomes(passed=1)
    monkeypatch.setenv("FLIPS", "200")
    monkeypatch.setenv("MINIMUM", "0.97")
    result = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*metric limits of test_flips.py::test_flips:",
            "*accuracy = 0.95 is below the minimum 0.97",
            "*metric regression in test_flips.py::test_flips:",
            "*accuracy regressed from 1 to 0.95: drop +0.05 (95% CI*n=4000, paired); allowed drop 0.01",
            "baseline: checkpoint None*",
        ]
    )


def test_a_function_metric_recorded_before_fn_output_batch_is_a_mismatch_not_compared():
    """A baseline recorded when functions were called ``fn(y_true, y_pred)`` (config None) measured
    something else: a mismatch naming the signature, never a comparison of the two."""
    y = np.array([0, 1, 1, 0])
    run = baselines.evaluate_detailed(lambda x: x, [(y, y)], {"hit": lambda out, b: out == b[1]})
    old = json.loads(json.dumps(run.entry()))
    old["metrics"]["hit"]["config"] = None
    result = baselines.compare(run, old, {"hit": run.per_sample["hit"]})
    assert result.mismatches == ['metric \'hit\' config: baseline None, now {"signature": "fn(output, batch)"}']
    assert result.regressions == [] and result.checked == []
