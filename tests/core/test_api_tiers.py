"""The two API tiers (issue 27 item 3): the user tier is the documented ~16 names, each at its
public path; the engine tier resolves every name it lists and speaks one vocabulary; no removed
spelling of an operation survives; objects still pickle (Beam and Spark ship them to workers)."""

from __future__ import annotations

import ast
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

import mergeable_metrics
import mergeable_metrics.engine as engine
import mergeable_metrics.metrics as extension

REPO_ROOT = Path(__file__).resolve().parents[2]

#: the user tier as the package docstring and the docs name it
USER_TIER = {
    "MetricCollection", "BinaryMetrics", "SingleMetric", "merge",
    "Evaluation", "Results", "SliceResult", "SliceSpec", "aggregate",
    "TimeWindows", "WindowedEvaluation", "PrequentialEvaluation", "ContinualEvaluation",
    "Metric", "REGISTRY", "UndefinedMetricWarning",
}  # fmt: skip
#: the engine objects and the one vocabulary they speak
ENGINE_OBJECTS = ["Evaluation", "WindowedEvaluation", "PrequentialEvaluation", "SliceProfiler"]
ENGINE_VOCABULARY = ("zero", "fold", "merge", "merge_into", "finish")
#: spellings removed by issue 27 (one name per operation)
REMOVED = (
    "load",
    "encode_accumulator",
    "decode_accumulator",
    "read_accumulator",
    "decode_into",
    "encode_states",
    "decode_states",
    "encode_state",
    "decode_state",
)


def test_user_tier_is_the_documented_names_each_at_its_public_path():
    assert set(mergeable_metrics.__all__) == USER_TIER
    for name in USER_TIER:
        value = getattr(mergeable_metrics, name)
        if isinstance(value, type) or callable(value):
            assert value.__module__ == "mergeable_metrics", name
            assert getattr(sys.modules["mergeable_metrics"], value.__qualname__) is value, name
    assert repr(mergeable_metrics.Evaluation) == "<class 'mergeable_metrics.Evaluation'>"
    with pytest.raises(AttributeError, match="'mergeable_metrics' has no attribute 'Plan'"):
        mergeable_metrics.Plan  # noqa: B018  (an engine name: mergeable_metrics.engine.Plan)


def test_extension_tier_names_resolve_at_their_public_path():
    assert {"Metric", "REGISTRY", "Task", "Averaging", "resolve", "register_format"} <= set(extension.__all__)
    for name in extension.__all__:
        value = getattr(extension, name)
        module = getattr(value, "__module__", None)
        if module is not None and isinstance(value, type) or callable(value):
            assert getattr(sys.modules[module], value.__qualname__) is value, name
    assert extension.Task.__module__ == "mergeable_metrics.metrics"
    assert extension.Metric is mergeable_metrics.Metric


def test_engine_tier_names_resolve_and_objects_speak_one_vocabulary():
    assert engine.__all__ == sorted(engine._EXPORTS) and len(engine.__all__) == len(set(engine.__all__))
    for name in engine.__all__:
        assert getattr(engine, name) is not None, name
    with pytest.raises(AttributeError, match="has no attribute 'load'"):
        engine.load  # noqa: B018
    for name in ENGINE_OBJECTS:
        cls = getattr(engine, name)
        missing = [op for op in (*ENGINE_VOCABULARY,) if not callable(getattr(cls, op, None))]
        assert not missing, (name, missing)
    for name in ("Evaluation", "PrequentialEvaluation", "SliceProfiler", "Plan"):
        assert callable(getattr(engine, name).encode) and callable(getattr(engine, name).decode), name


@pytest.mark.parametrize("name", sorted(USER_TIER | set(engine.__all__) | set(extension.__all__)))
def test_no_removed_spelling_survives(name):
    tier = mergeable_metrics if name in USER_TIER else engine if name in engine.__all__ else extension
    value = getattr(tier, name)
    if isinstance(value, type):
        assert not [r for r in REMOVED if hasattr(value, r)], name
    if name in ("MetricCollection", "BinaryMetrics", "SingleMetric", "ContinualEvaluation"):  # update / compute / merge
        assert not hasattr(value, "merge_into"), name


def test_the_codec_frame_functions_are_private():
    """The bytes are reached through ``encode`` / ``decode`` only: the codec module keeps its frame
    functions private and the engine tier exports none of them."""
    from mergeable_metrics.states import codec

    assert not [name for name in REMOVED if hasattr(codec, name)]
    assert not set(REMOVED) & set(engine.__all__)
    # the JSON spellings only: slice keys (results) and a state's layout (the JVM states' configuration)
    assert sorted(n for n, m in engine._EXPORTS.items() if m == codec.__name__) == ["layout_to_json", "slice_key_from_json", "slice_key_to_json"]


def test_one_slice_of_states_has_the_same_pair_and_the_same_bytes():
    """``plan.encode`` / ``plan.decode`` for a tuple of states; ``evaluation.slice_codec`` for one
    slice of an evaluation: its bytes are those of a one-slice accumulator of that evaluation."""
    ev = engine.Evaluation(label_col="y", score_col="s", metrics=["precision", "recall"])
    acc = ev.fold(ev.zero(), {"y": [1, 0, 1, 1], "s": [0.9, 0.8, 0.1, 0.6]})
    states = acc[()]
    blob = ev.slice_codec.encode(states)
    assert blob == ev.encode(acc)  # only the overall slice: the same frame, byte for byte
    assert ev.plan.decode(ev.plan.encode(states)) == states == ev.slice_codec.decode(blob)
    assert ev.plan.compute(ev.slice_codec.decode(blob))["precision"] == pytest.approx(2 / 3)  # 0.9, 0.8, 0.6 above 0.5; two positives
    assert ev.plan.compute(states)["recall"] == pytest.approx(2 / 3)
    weighted = engine.Evaluation(label_col="y", score_col="s", weight_col="w", metrics=["precision", "recall"])
    with pytest.raises(ValueError, match="weight_col"):
        weighted.slice_codec.decode(blob)


def test_objects_round_trip_through_bytes_with_one_pair():
    mc = mergeable_metrics.MetricCollection("f1", "precision")
    mc.update([1, 0, 1, 1], y_score=[0.9, 0.2, 0.4, 0.7])
    fresh = mergeable_metrics.MetricCollection("f1", "precision")
    back = fresh.decode(mc.encode())
    assert back is not fresh and back.compute() == mc.compute() and fresh.encode() != mc.encode()  # fresh unchanged
    assert back.compute()["precision"] == pytest.approx(1.0) and back.compute()["f1"] == pytest.approx(0.8)
    ev = engine.Evaluation(label_col="y", score_col="s", slices=["g"], metrics=["precision"])
    acc = ev.fold(ev.zero(), {"y": [1, 0, 1], "s": [0.9, 0.8, 0.1], "g": ["a", "a", "b"]})
    assert ev.finish(ev.decode(ev.encode(acc))).to_dict() == ev.finish(acc).to_dict()
    assert ev.finish(acc)["g=a"].metrics["precision"] == pytest.approx(0.5)  # both scored above 0.5, one positive


def _objects() -> dict:
    mc = mergeable_metrics.MetricCollection("accuracy", num_classes=3)
    mc.update([0, 1, 2, 2], y_pred=[0, 1, 1, 2])
    ev = mergeable_metrics.Evaluation(label_col="y", score_col="s", slices=["g"], metrics=["precision"])
    return {
        "collection": mc,
        "tracker": mergeable_metrics.SingleMetric("accuracy", num_classes=3),
        "evaluation": ev,
        "results": ev.evaluate({"y": [1, 0, 1], "s": [0.9, 0.8, 0.1], "g": ["a", "a", "b"]}),
        "spec": mergeable_metrics.SliceSpec.parse("g"),
        "task": extension.Task(3),
    }


@pytest.mark.parametrize("kind", ["collection", "tracker", "evaluation", "results", "spec", "task"])
def test_tier_objects_pickle_by_their_public_path(kind):
    obj = _objects()[kind]
    data = pickle.dumps(obj)
    back = pickle.loads(data)
    assert type(back) is type(obj)
    assert type(obj).__module__.encode() in data  # found again through the public path
    if kind == "collection":
        assert back.compute()["accuracy"] == pytest.approx(0.75)
    elif kind == "results":
        assert back.to_dict() == obj.to_dict()
    elif kind in ("spec", "task"):
        assert back == obj


def test_a_fresh_worker_unpickles_by_the_public_path():
    """A worker process that never imported the package finds ``mergeable_metrics.MetricCollection``
    through the lazy ``__init__`` (what a Beam or Spark worker does)."""
    data = pickle.dumps(_objects()["collection"])
    code = "import pickle, sys; mc = pickle.loads(sys.stdin.buffer.read()); print(type(mc).__module__, mc.compute()['accuracy'])"
    proc = subprocess.run([sys.executable, "-c", code], input=data, capture_output=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout.decode().split() == ["mergeable_metrics", "0.75"]


def _imports_from_engine_free_layer(folder: str) -> dict[str, set[str]]:
    """``{module: names}`` a folder imports from the engine-free layer (anything of
    ``mergeable_metrics`` but the adapters, the CLI and the engine tier), at any depth."""
    out: dict[str, set[str]] = {}
    for path in sorted((REPO_ROOT / folder).glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("mergeable_metrics"):
                if node.module.startswith(("mergeable_metrics.beam", "mergeable_metrics.spark", "mergeable_metrics.pipelines", "mergeable_metrics.engine")):
                    continue
                out.setdefault(node.module, set()).update(a.name for a in node.names)
    return out


@pytest.mark.parametrize("folder", ["beam_metrics", "spark_metrics"])
def test_the_adapters_import_only_the_engine_tier(folder):
    """(The import-linter contract ``adapters-through-engine`` says the same; this reads the source.)"""
    assert _imports_from_engine_free_layer(folder) == {}
