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
#     slow     seconds of CPU each, engine-free              _SLOW below (node-id prefixes)
# The fast command (core and the local pipelines, README "Set up and run"):
#     python -m pytest -m "not (slow or beam or spark or cluster or connect or browser or fuzz)"
# The default run (no -m) still runs every test: a marker only lets -m leave a test out.
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

# Engine-free tests that take seconds of CPU each (measured with --durations): property tests
# with hundreds of examples, the flights example, big sharding tests, README/docs examples run in
# subprocesses, the docs build, packaging and lint: together about two thirds of the engine-free
# run's time. An entry is a file (all its tests) or a test function (all its parameters).
_SLOW = frozenset(
    {
        "tests/core/test_codec_fuzz.py",
        "tests/core/test_compute_many.py",
        "tests/core/test_finish_stacked.py",
        "tests/core/test_merge_laws.py",
        "tests/core/test_exact_kernels.py",
        "tests/core/test_adversarial_kernels.py::test_mean_update_is_the_numpy_path_and_the_exact_mean",
        "tests/core/test_adversarial_kernels.py::test_binary_cells_at_and_around_the_threshold",
        "tests/core/test_adversarial_kernels.py::test_a_batch_of_chunk_rows_near_the_float_maximum",
        "tests/core/test_portable_log.py::test_log_equals_java_strictmath_log_bit_for_bit",
        "tests/core/test_portable_log.py::test_log1p_equals_java_strictmath_log1p_bit_for_bit",
        "tests/core/test_sliced_finish_fast.py::test_overall_block_equals_the_per_slice_fold",
        "tests/core/test_sliced_finish_fast.py::test_lazy_finish_equals_the_per_slice_finish",
        "tests/core/test_sliced_finish_fast.py::test_lazy_finish_roc_auc_hand_computed_and_against_scikit_learn",
        "tests/pipelines/test_flights_example.py",
        "tests/pipelines/test_report.py",
        "tests/test_benchmarks_smoke.py",
        "tests/test_lint.py",
        "tests/test_packaging.py",
        "tests/test_readme_examples.py",
        "tests/test_docs.py::test_the_docs_build_with_warnings_as_errors",
        "tests/core/test_bootstrap.py::test_grouped_replicate_auc_is_close_to_the_row_weighted_reference",
        "tests/core/test_bootstrap.py::test_property_bucketed_fold_merges_to_the_per_slice_fold",
        "tests/core/test_bootstrap.py::test_property_stacked_states_weighted_and_compressed_obey_the_merge_laws",
        "tests/core/test_ci_methods.py::test_a_weightless_slice_or_empty_input_gets_nan_intervals_and_never_aborts",
        "tests/core/test_ci_methods.py::test_intervals_are_the_same_for_any_sharding_and_merge_tree",
        "tests/core/test_core_imports.py::test_ast_scan_finds_no_engine_imports",
        "tests/core/test_core_imports.py::test_importing_core_loads_no_engine",
        "tests/core/test_core_imports.py::test_module_level_imports_are_stdlib_numpy_or_core",
        "tests/core/test_dependencies.py::test_gmean_of_the_docs_gets_a_bootstrap_interval_equal_to_a_numpy_row_weighted_bootstrap",
        "tests/core/test_exact_sums.py::test_every_state_is_bit_identical_for_any_batching_sharding_and_merge_order",
        "tests/core/test_exact_sums.py::test_exact_sum_is_fsum_and_the_rational_sum",
        "tests/core/test_exact_sums.py::test_exact_sum_of_products_is_the_rational_sum_of_the_products",
        "tests/core/test_exact_sums.py::test_exact_sums_merge_bit_identically_in_any_order_and_grouping",
        "tests/core/test_exact_sums.py::test_weighted_count_past_2_53_is_the_same_for_1_and_1000_batches",
        "tests/core/test_grouped_fold.py::test_vectorised_fold_equals_the_per_slice_fold_for_every_state_kind",
        "tests/core/test_multilabel.py::test_jaccard_samples_state_merges_bit_for_bit",
        "tests/core/test_multilabel.py::test_multilabel_state_merge_laws",
        "tests/core/test_multilabel_probability.py::test_merge_order_and_split_never_change_the_state",
        "tests/core/test_multilabel_ranking.py::test_merge_order_and_split_never_change_the_state",
        "tests/core/test_multilabel_ranking.py::test_per_slice_parity",
        "tests/core/test_multilabel_ranking.py::test_sklearn_parity",
        "tests/core/test_multilabel_samplewise.py::test_sharded_merge_equals_one_fold",
        "tests/core/test_multioutput_regression.py::test_every_metric_and_multioutput_option_equals_sklearn_overall_and_per_slice",
        "tests/core/test_multioutput_regression.py::test_list_columns_of_arrow_and_pandas_give_the_numpy_values",
        "tests/core/test_multioutput_regression.py::test_multioutput_states_are_bit_identical_for_any_sharding_and_each_output_is_its_single_output_state",
        "tests/core/test_multioutput_regression.py::test_one_output_and_a_single_output_task_agree_with_sklearn",
        "tests/core/test_new_state_laws.py::test_sharded_merge_equals_one_fold",
        "tests/core/test_paired_bootstrap.py::test_replicates_of_both_models_equal_a_row_weighted_reference",
        "tests/core/test_prequential.py::test_position_col_any_sharding_and_order_equals_the_stream",
        "tests/core/test_ranking.py::test_bounds_contain_the_exact_value_over_many_random_datasets",
        "tests/core/test_ranking.py::test_compressed_auc_error_and_width_on_continuous_scores",
        "tests/core/test_ranking_multiclass.py::test_compressed_bounds_contain_the_exact_value",
        "tests/core/test_regression.py::test_regression_moments_are_bit_identical_for_any_sharding_and_equal_the_exact_sums",
        "tests/core/test_retrieval.py::test_queries_split_over_shards_give_the_one_pass_states",
        "tests/core/test_slicing.py::test_encode_key_orders_ints_and_floats_as_one_numeric_kind",
        "tests/core/test_slicing_profile.py::test_profile_is_independent_of_splits_and_merge_order",
        "tests/core/test_thresholds.py::test_bounds_contain_the_exact_values_over_many_random_datasets",
        "tests/core/test_thresholds.py::test_brute_force_parity_random_data",
        "tests/core/test_thresholds.py::test_merge_order_and_split_never_change_values",
        "tests/core/test_thresholds.py::test_metric_at_thresholds_matches_sklearn",
        "tests/core/test_thresholds_engines.py::test_cli_local_engine",
        "tests/core/test_windows.py::test_any_sharding_and_merge_order_gives_the_same_states",
        "tests/pipelines/test_cli.py::test_classes_and_pos_label_flags_map_label_values",
        "tests/pipelines/test_cli_errors.py::test_the_readme_shows_the_console_script_it_installs",
        "tests/pipelines/test_comparison_engines.py::test_report_and_table_show_the_comparison",
        "tests/pipelines/test_config.py::test_the_readme_config_example_runs",
        "tests/pipelines/test_continual_engines.py::test_example_writes_report_with_the_continual_figures",
        "tests/pipelines/test_metric_baseline.py::test_the_fingerprint_is_the_same_for_any_split_into_batches_empty_ones_included",
        "tests/pipelines/test_multioutput_engines.py::test_cli_num_outputs_reads_list_columns",
        "tests/pipelines/test_report_comparison.py::test_page_and_text_table_show_the_marks_and_counts",
        "tests/pipelines/test_slicing_engines.py::test_flights_cli_without_nulls_gives_50_slices_and_other",
        "tests/pipelines/test_validate.py::test_flights_worse_model_is_a_regression_with_sklearn_values",
        "tests/pipelines/test_validate.py::test_the_module_runs_as_a_command",
        "tests/pipelines/test_windows_cli.py::test_window_flag_report_and_errors",
    }
)


def _path_marks(path: _Path) -> set[str]:
    """The markers every test under ``path`` (a directory or a file) gets from where it lives."""
    rel = path.relative_to(_TESTS).parts if path.is_relative_to(_TESTS) else ()
    marks = {_DIR_MARKS[rel[0]]} if rel and rel[0] in _DIR_MARKS else set()
    marks |= {_FILE_MARKS[path.name]} if path.name in _FILE_MARKS else set()
    if rel and "/".join(("tests",) + rel) in _SLOW:
        marks.add("slow")
    return marks


def _never_selected(markexpr: str, marks: frozenset[str]) -> bool:
    """Whether ``-m markexpr`` deselects every test that carries ``marks``, whatever other markers
    it has (every combination of the expression's other names is tried). False when unsure."""
    try:
        from _pytest.mark.expression import Expression

        expression = Expression.compile(markexpr)
    except Exception:
        return False
    if _re.search(r"[^\w.\s()]", markexpr):  # keyword arguments, odd names: collect as usual
        return False
    names = sorted(set(_re.findall(r"[\w.]+", markexpr)) - {"and", "or", "not"} - marks)
    if len(names) > 12:
        return False
    for bits in range(1 << len(names)):
        present = marks | {n for k, n in enumerate(names) if bits >> k & 1}
        try:
            if expression.evaluate(lambda name, /, **kwargs: name in present):
                return False
        except Exception:
            return False
    return True


def pytest_ignore_collect(collection_path, config):
    """Under ``-m``, do not import the test modules (Beam, pyspark, the fuzz oracle) whose every
    test the expression leaves out: about 10 s of the fast command's collection."""
    markexpr = config.getoption("markexpr", "")
    marks = frozenset(_path_marks(_Path(str(collection_path)).resolve())) if markexpr else frozenset()
    if marks and _never_selected(markexpr, marks):
        return True
    return None


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
        marks = _path_marks(_Path(str(item.path)).resolve())
        marks |= {"slow"} if item.nodeid.split("[")[0] in _SLOW else set()
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
