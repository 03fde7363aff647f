"""Benchmarks (run as modules, e.g. ``python -m benchmarks.bench_auc --quick``); results are recorded
in BENCHMARKS.md."""
