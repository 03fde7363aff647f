"""Adversarial checks of issue 26 round 7's Java ports (helper brk6): the score distribution's lazy level raise,
the class score distribution (``WideBins``), the absolute error distribution and the regression terms, driven by
scripts that interleave row updates, merges, Java serialisation round trips and mid-stream ``toBytes`` (what Spark's
partial buffers and its sort-based aggregation fallback do to a state), against core's canonical fold of the same
rows; and through ``metric_columns`` on adversarial partitionings."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from mergeable_metrics.engine import State
from mergeable_metrics.inputs.validation import Batch

pytestmark = pytest.mark.filterwarnings("ignore::mergeable_metrics.metrics.base.UndefinedMetricWarning")

ROOT = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).resolve().parent / "java" / "InterleaveDriver.java"
BIG = 1.7976931348623157e308


@lru_cache(maxsize=1)
def _classes() -> str:
    if shutil.which("javac") is None or shutil.which("java") is None:
        pytest.skip("javac not found: the JVM state ports need a JDK 17+")
    out = tempfile.mkdtemp(prefix="mm-jvm-brk6-")
    own = [str(p) for p in sorted((ROOT / "spark_metrics" / "java" / "mergeablemetrics").glob("*.java")) if "org.apache.spark" not in p.read_text()]
    subprocess.run(["javac", "-d", out, *own, str(DRIVER)], check=True, capture_output=True, text=True)
    return out


def _h(x: float) -> str:
    return format(int(np.float64(x).view(np.uint64)), "016x")


class Script:
    """One case of the driver: ``n`` states of ``zero``'s kind, and the rows each of them holds (the model)."""

    def __init__(self, zero, n: int):
        from mergeable_metrics.spark.jvm_float_kinds import FLOAT_KINDS

        self.zero = zero
        kind, config = FLOAT_KINDS[type(zero)](zero)
        self.lines = [f"case {kind} {config.encode().hex()} {n}"]
        self.rows: list[list[tuple]] = [[] for _ in range(n)]
        self.expect: list[object] = []  # per output line: the rows of an observation, or "E"

    def update(self, i: int, label: float, score, weight: float, valid: bool = True) -> None:
        if isinstance(score, tuple):
            self.lines.append(f"v {i} {_h(label)} {_h(weight)} " + " ".join(_h(s) for s in score))
        else:
            self.lines.append(f"u {i} {_h(label)} {_h(score)} {_h(weight)}")
        if valid:
            self.rows[i].append((label, score, weight))
        else:
            self.expect.append("E")

    def merge(self, i: int, j: int) -> None:
        self.lines.append(f"m {i} {j}")
        self.rows[i] = self.rows[i] + self.rows[j]

    def round_trip(self, i: int) -> None:
        self.lines.append(f"r {i}")

    def observe(self, i: int) -> None:
        self.lines.append(f"b {i}")
        self.expect.append(list(self.rows[i]))


def _core_state(zero, rows):
    """Core's canonical fold of ``rows`` (one batch: the state of these rows, whatever their order)."""
    kind = zero.kind
    if not rows:
        return zero
    labels = [r[0] for r in rows]
    w = np.array([r[2] for r in rows], dtype=np.float64)
    if kind in ("absolute_error_distribution", "regression_terms"):
        batch = Batch(y_true=np.array(labels, dtype=np.float64), y_pred=np.array([r[1] for r in rows], dtype=np.float64), sample_weight=w)
    elif kind == "class_score_distribution":
        batch = Batch(y_true=np.array(labels, dtype=np.int64), y_score=np.array([r[1] for r in rows], dtype=np.float64), sample_weight=w)
    else:
        batch = Batch(y_true=np.array(labels, dtype=np.int64), y_score=np.array([r[1] for r in rows], dtype=np.float64), sample_weight=w)
    return type(zero).from_batch(zero.layout, batch)


def run(scripts: list[Script]) -> None:
    """Runs every script in one JVM; every observation must be core's bytes of the state's rows (decodable by
    core), every refused row an error."""
    text = "\n".join(line for s in scripts for line in (*s.lines, "end")) + "\n"
    done = subprocess.run(["java", "-cp", _classes(), "InterleaveDriver"], input=text, capture_output=True, text=True, check=True)
    out = done.stdout.splitlines()
    at = 0
    for s in scripts:
        for want in s.expect:
            line = out[at]
            at += 1
            if want == "E":
                assert line.startswith("E "), line
                continue
            assert line.startswith("B "), line
            ref = _core_state(s.zero, want)
            got = bytes.fromhex(line[2:])
            if got != ref.encode():
                g = State.decode(got)
                differ = [n for n, _ in type(ref).STORED_FIELDS if not np.array_equal(g[n], ref[n], equal_nan=True)]
                raise AssertionError(f"{s.zero.kind} {s.zero.layout}: JVM bytes differ from core's in {differ} ({len(want)} rows)")
            assert State.decode(got) == ref  # core reads the JVM's bytes
        assert out[at] == ".", out[at]
        at += 1
    assert at == len(out)


# -- random interleavings -------------------------------------------------------------------------------
SCORES = [0.0, -0.0, 5e-324, -5e-324, 1e-300, 0.1, 0.5, 0.5000000000000001, 1.0, -1.0, 3.0, 1e300, -1e300, BIG, -BIG, 2.0**-1022]
WEIGHTS = [1.0] * 6 + [0.0, -0.0, 5e-324, 1e-300, 0.5, 3.0, 1e300, BIG]


def _pick(rng, pool, p_random: float, random):
    return random(rng) if rng.random() < p_random else pool[int(rng.integers(len(pool)))]


def _weight(rng):
    return _pick(rng, WEIGHTS, 0.2, lambda r: float(r.random() * 5))


def _random_script(zero, rng, row, nstates: int = 4, steps: int = 400) -> Script:
    s = Script(zero, nstates)
    for _ in range(steps):
        u = rng.random()
        i = int(rng.integers(nstates))
        if u < 0.8:
            s.update(i, *row(rng))
        elif u < 0.86:
            j = int(rng.integers(nstates - 1))
            s.merge(i, j + (j >= i))
        elif u < 0.92:
            s.round_trip(i)
        else:
            s.observe(i)
    for i in range(nstates):
        s.observe(i)
    return s


def _score_row(distinct: int):
    def row(rng):
        score = _pick(rng, SCORES, 0.6, lambda r: float(r.integers(distinct)) / distinct * (1 if r.random() < 0.8 else -1e-3))
        return float(rng.integers(2)), score, _weight(rng)

    return row


@pytest.mark.parametrize("seed", range(2))
def test_score_distribution_interleaved_updates_merges_and_round_trips_equal_core(seed):
    """The lazy level raise (bins up to twice the capacity while folding and merging, raised on toBytes and on
    serialisation) observed mid-stream, merged after round trips, updated again: core's canonical bytes."""
    from mergeable_metrics.engine import Class0ScoreDistributionState, ScoreDistributionState
    from mergeable_metrics.states.score_distribution import ScoreDistributionLayout

    rng = np.random.default_rng(seed)
    scripts = []
    for cls in (ScoreDistributionState, Class0ScoreDistributionState):
        for cap, distinct in ((2, 5), (3, 40), (5, 12), (16, 40), (100, 150), (40_000, 1000)):
            scripts.append(_random_script(cls.zero(ScoreDistributionLayout(cap)), rng, _score_row(distinct)))
    run(scripts)


def test_class_score_distribution_interleaved_equal_core():
    """``WideBins`` per class column, levels raised per column while folding and merging, round trips in between."""
    from mergeable_metrics.states.score_distribution import ClassScoreDistributionLayout, ClassScoreDistributionState

    rng = np.random.default_rng(7)
    scripts = []
    for k, cap, distinct in ((2, 2, 6), (3, 3, 30), (4, 7, 20), (3, None, 50)):

        def row(r, k=k, distinct=distinct):
            scores = tuple(_pick(r, SCORES, 0.7, lambda q: float(q.integers(distinct)) / distinct) for _ in range(k))
            return float(r.integers(k)), scores, _weight(r)

        scripts.append(_random_script(ClassScoreDistributionState.zero(ClassScoreDistributionLayout(k, cap)), rng, row, steps=250))
    run(scripts)


VALUES = [0.0, -0.0, 5e-324, -5e-324, 1e-300, 0.5, 1.0, -1.0, -0.5, -1.0 + 2**-53, 2.0, 1e150, -1e150, 1e308, -1e308, BIG, -BIG]


def _value(rng):
    return _pick(rng, VALUES, 0.5, lambda r: float(r.normal() * 10.0 ** r.integers(-3, 4)))


def test_absolute_error_distribution_interleaved_equal_core():
    """Errors past float64 (held at the largest float, label 1), ties, zero / subnormal / huge weights."""
    from mergeable_metrics.metrics.regression_quantiles import AbsoluteErrorDistributionState
    from mergeable_metrics.states.score_distribution import ScoreDistributionLayout

    rng = np.random.default_rng(8)
    scripts = [
        _random_script(AbsoluteErrorDistributionState.zero(ScoreDistributionLayout(cap)), rng, lambda r: (_value(r), _value(r), _weight(r)), steps=300)
        for cap in (2, 3, 16, 40_000)
    ]
    run(scripts)


def test_regression_terms_interleaved_equal_core():
    """Every ported term (sle, pinball, Tweedie powers 0 / 1 / 2, the null model's terms) on targets and predictions
    at and around their domains' edges (-1, 0), subnormal, huge (terms overflowing to +-inf, NaN)."""
    from mergeable_metrics.metrics.regression_terms import RegressionTermsLayout, RegressionTermsState

    terms = ("null:1.0", "null:2.0", "pinball:0.1", "pinball:0.5", "pinball:1.0", "sle", "tweedie:0.0", "tweedie:1.0", "tweedie:2.0")
    rng = np.random.default_rng(9)
    scripts = [
        _random_script(RegressionTermsState.zero(RegressionTermsLayout(tuple(sorted(t)))), rng, lambda r: (_value(r), _value(r), _weight(r)), steps=300)
        for t in (terms, ("sle",), ("pinball:0.9", "tweedie:1.0"))
    ]
    run(scripts)


def test_refused_rows_leave_no_trace():
    """A row the JVM refuses (NaN / inf score or weight, negative weight, a label out of range) raises and folds
    nothing: the state's bytes are those of the other rows."""
    from mergeable_metrics.engine import ScoreDistributionState
    from mergeable_metrics.metrics.regression_terms import RegressionTermsLayout, RegressionTermsState
    from mergeable_metrics.states.score_distribution import ClassScoreDistributionLayout, ClassScoreDistributionState, ScoreDistributionLayout

    nan, inf = float("nan"), float("inf")
    s = Script(ScoreDistributionState.zero(ScoreDistributionLayout(3)), 1)
    for i in range(6):
        s.update(0, float(i % 2), 0.1 * i, 1.0)
    for label, score, w in ((0.0, nan, 1.0), (1.0, inf, 1.0), (1.0, 0.3, nan), (1.0, 0.3, -1.0), (1.0, 0.3, inf), (2.0, 0.3, 1.0), (0.5, 0.3, 1.0)):
        s.update(0, label, score, w, valid=False)
    s.observe(0)
    c = Script(ClassScoreDistributionState.zero(ClassScoreDistributionLayout(3, 2)), 1)
    c.update(0, 1.0, (0.1, 0.2, 0.7), 1.0)
    for label, scores, w in (
        (3.0, (0.1, 0.2, 0.7), 1.0),
        (1.5, (0.1, 0.2, 0.7), 1.0),
        (-1.0, (0.1, 0.2, 0.7), 1.0),
        (0.0, (0.1, nan, 0.7), 1.0),
        (0.0, (0.1, 0.2, 0.7), -0.5),
    ):
        c.update(0, label, scores, w, valid=False)
    c.observe(0)
    t = Script(RegressionTermsState.zero(RegressionTermsLayout(("pinball:0.5", "sle"))), 1)
    t.update(0, 1.0, 2.0, 1.0)
    for y, p, w in ((nan, 1.0, 1.0), (1.0, inf, 1.0), (1.0, 1.0, -1.0)):
        t.update(0, y, p, w, valid=False)
    t.observe(0)
    run([s, c, t])


# -- through Spark: metric_columns and evaluate's driver finish ----------------------------------------
def _bits(x) -> int:
    return int(np.float64(np.nan if x is None else x).view(np.uint64))


def _binary_frame():
    """Group ``big``: two positives of weight 1.7e308 at one score (the bin's exact weight rounds to inf) next to
    a negative; ``one``: a single row; ``skew``: 3,000 rows of 40 distinct scores (ties), zero / subnormal weights;
    ``tie``: every score -0.0 or 0.0."""
    import pandas as pd

    rng = np.random.default_rng(3)
    n = 3000
    skew = pd.DataFrame({"g": "skew", "y": rng.integers(0, 2, n), "s": rng.integers(0, 40, n) / 40.0, "w": np.where(rng.random(n) < 0.1, 0.0, rng.random(n))})
    skew.loc[::97, "w"] = 5e-324
    big = pd.DataFrame({"g": "big", "y": [1, 1, 0], "s": [0.5, 0.5, 0.2], "w": [BIG, BIG, 1.0]})
    one = pd.DataFrame({"g": "one", "y": [1], "s": [0.25], "w": [2.0]})
    tie = pd.DataFrame({"g": "tie", "y": [0, 1, 1, 0], "s": [-0.0, 0.0, -0.0, 0.0], "w": [1.0, 3.0, 0.5, 2.0]})
    return pd.concat([skew, big, one, tie], ignore_index=True)


BINARY = ["roc_auc", "average_precision", "roc_auc@capacity=7", "example_count"]


@pytest.mark.parametrize("partitions", [64])
def test_metric_columns_and_evaluate_on_skewed_groups_and_an_overflowing_bin_equal_the_local_engine(jvm_spark, partitions, monkeypatch):
    """64 partitions of 3,008 rows (groups of one row spread over empty partitions, a skewed group): the JVM fold
    equals the local engine bit for bit; the group whose bin weight rounds past float64 is NaN (undefined) in both,
    and evaluate's driver merge decodes its JVM state (it raised "weights must be finite" before)."""
    from mergeable_metrics import Evaluation
    from mergeable_metrics.spark import evaluate, jvm_path, metric_columns

    taken = []
    real = jvm_path.evaluate_jvm
    monkeypatch.setattr(jvm_path, "evaluate_jvm", lambda *a: taken.append("evaluate") or real(*a))
    pdf = _binary_frame()
    df = jvm_spark.createDataFrame(pdf).repartition(partitions)
    ev = Evaluation(label_col="y", score_col="s", weight_col="w", metrics=BINARY, slices=["g"])
    want = ev.evaluate([pdf])
    keys = [m.key for m in ev.plan.metrics]
    q = df.groupBy("g").agg(*metric_columns(BINARY, label_col="y", score_col="s", weight_col="w", engine="jvm"))
    rows = {r["g"]: r.asDict() for r in q.collect()}
    got = evaluate(df, evaluation=ev)
    assert taken == ["evaluate"]  # the JVM path: the groups' states decoded on the driver
    assert sorted(rows) == ["big", "one", "skew", "tie"]
    for g, row in rows.items():
        ref = want[(("g", g),)].metrics
        for key in keys:
            if key == "average_precision" and row[key] is None:
                continue  # null where the group has more distinct scores than the capacity (documented)
            assert _bits(row[key]) == _bits(ref[key]), (g, key, row[key], ref[key])
            assert _bits(got[(("g", g),)].metrics[key]) == _bits(ref[key]), (g, key)
    assert np.isnan(rows["big"]["roc_auc"]) and np.isnan(want[(("g", "big"),)].metrics["average_precision"])
    from sklearn.metrics import roc_auc_score

    part = pdf[pdf.g == "skew"]
    assert rows["skew"]["roc_auc"] == pytest.approx(roc_auc_score(part.y, part.s, sample_weight=part.w), abs=1e-12)
