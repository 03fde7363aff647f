"""Mean of a measure: the weighted running mean of per-sample or per-batch values (issue 3)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mergeable_metrics import Evaluation, MetricCollection
from mergeable_metrics.inputs.validation import Batch
from mergeable_metrics.metrics.measure import MeanMeasureLayout, MeanMeasureState
from tests._helpers import close, merge_tree, random_shards


def test_per_sample_and_per_batch_values_give_the_overall_mean():
    rng = np.random.default_rng(0)
    losses = rng.random(1000)
    per_sample = MetricCollection("mean_measure")
    per_batch = MetricCollection("mean_loss")  # an alias
    for idx in np.array_split(np.arange(1000), [3, 50, 51, 400, 999]):
        per_sample.update(measure=losses[idx])
        if idx.size:
            per_batch.update(measure=[losses[idx].mean()], sample_weight=[idx.size])
    assert close(per_sample.compute()["mean_measure"], losses.mean())
    assert close(per_batch.compute()["mean_measure"], losses.mean())  # not the mean of batch means


def test_weighted_with_zeros_empty_and_invalid():
    mc = MetricCollection("mean_measure", "example_count")
    mc.update(measure=[1.0, 5.0, 3.0], sample_weight=[1.0, 0.0, 3.0])
    assert close(mc.compute()["mean_measure"], (1 + 9) / 4) and mc.compute()["example_count"] == 3
    empty = MetricCollection("mean_measure")
    empty.update(measure=[])
    with pytest.warns(Warning, match="mean_measure"):
        assert math.isnan(empty.compute()["mean_measure"])
    with pytest.raises(ValueError, match=r"column 'measure': invalid value nan at row 4: values must be finite"):  # rows count on from earlier updates
        mc.update(measure=[1.0, float("nan")])
    with pytest.raises(ValueError, match="metric 'mean_measure' needs measure"):
        MetricCollection("mean_measure", "f1").update([1, 0], y_score=[0.5, 0.2])


def test_mean_measure_with_classification_metrics_and_slices():
    ev = Evaluation(label_col="y", score_col="s", measure_col="loss", slices=["g"], metrics=["f1", "mean_measure"])
    data = {"y": [1, 0, 1, 1], "s": [0.9, 0.2, 0.4, 0.7], "loss": [0.1, 0.2, 0.9, 0.3], "g": ["a", "b", "a", "a"]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = ev.evaluate([data])
    assert close(res.overall.metrics["mean_measure"], 0.375)
    assert close(res[(("g", "a"),)].metrics["mean_measure"], 1.3 / 3)
    only = Evaluation(measure_col="loss", metrics=["mean_measure"])  # no labels needed
    assert close(only.evaluate([data]).overall.metrics["mean_measure"], 0.375)
    assert Evaluation(**only.to_config()).to_config() == only.to_config()


@settings(max_examples=40)
@given(
    values=st.lists(st.tuples(st.integers(-1000, 1000), st.sampled_from([0.0, 1.0, 2.0, 4.0])), max_size=40),
    seed=st.integers(0, 2**32 - 1),
)
def test_mean_measure_state_merge_laws(values, seed):
    """Exact for integer values and weights: any sharding and merge tree equals one fold."""
    v = np.array([x for x, _ in values], dtype=float)
    w = np.array([y for _, y in values])
    lay = MeanMeasureLayout()
    zero = MeanMeasureState.zero(lay)
    whole = zero.fold(Batch(None, None, None, w, v)) if values else zero
    rng = np.random.default_rng(seed)
    states = []
    for shard in random_shards(rng, len(values)):
        s = zero
        for idx in shard:
            s = s.fold(Batch(None, None, None, w[idx], v[idx]))
        states.append(s)
    merged = merge_tree(states, lambda a, b: a.merge(b), rng, lambda: zero)
    assert merged == whole and merged.merge(zero) == merged
    assert MeanMeasureState.decode(merged.encode()) == merged
