"""TFMA reference run for :mod:`benchmarks.bench_beam` (runs in TFMA's own virtualenv).

TFMA 0.52 needs TensorFlow and pins Beam, so it is never installed into the project's environment.
To measure it, make a throwaway virtualenv (about 8 minutes and 2.5 GB here)::

    python3 -m venv /tmp/tfma-venv && /tmp/tfma-venv/bin/pip install 'tensorflow-model-analysis==0.52.*'
    /tmp/tfma-venv/bin/python benchmarks/bench_tfma.py --rows 100000

``bench_beam`` finds ``/tmp/tfma-venv/bin/python`` (or ``--tfma-python`` / ``$MM_TFMA_PYTHON``)
and runs this script as a subprocess. It imports nothing from this repository: it builds the same
data as ``bench_beam.columns`` (labels 0/1, scores in [0, 1), 10 string slice values), runs
``analyze_raw_data`` (DirectRunner) with the overall slice plus ``slice`` and the metrics
``ExampleCount``, ``AUC``, ``Precision``, ``Recall``, and prints one JSON line:
``{"rows", "seconds", "import_seconds", "slices", "version"}``. ``seconds`` is the
``analyze_raw_data`` call only (pipeline build, run and result loading), not the TensorFlow import.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=100_000)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import logging

    import numpy as np
    import pandas as pd

    t0 = time.perf_counter()
    from google.protobuf import text_format
    from tensorflow_model_analysis.api.model_eval_lib import analyze_raw_data
    from tensorflow_model_analysis.proto import config_pb2
    from tensorflow_model_analysis.version import VERSION

    import_seconds = time.perf_counter() - t0
    logging.getLogger().setLevel(logging.ERROR)
    logging.getLogger("apache_beam").setLevel(logging.ERROR)

    rng = np.random.default_rng(a.seed)  # same recipe as benchmarks.bench_beam.columns
    y = rng.integers(0, 2, a.rows)
    s = np.clip(0.3 * y + 0.7 * rng.random(a.rows), 0.0, 1.0)
    g = rng.integers(0, 10, a.rows)
    names = np.array([f"s{i}" for i in range(10)], dtype=object)
    df = pd.DataFrame({"label": y.astype(np.float64), "prediction": s, "slice": names[g]})
    config = text_format.Parse(
        """
        model_specs { label_key: "label" prediction_key: "prediction" }
        metrics_specs {
          metrics { class_name: "ExampleCount" }
          metrics { class_name: "AUC" }
          metrics { class_name: "Precision" }
          metrics { class_name: "Recall" }
        }
        slicing_specs {}
        slicing_specs { feature_keys: ["slice"] }
        """,
        config_pb2.EvalConfig(),
    )
    with tempfile.TemporaryDirectory() as out:
        t0 = time.perf_counter()
        result = analyze_raw_data(df, config, output_path=out)
        seconds = time.perf_counter() - t0
    print(json.dumps({"rows": a.rows, "seconds": seconds, "import_seconds": import_seconds, "slices": len(result.slicing_metrics), "version": VERSION}))


if __name__ == "__main__":
    main()
