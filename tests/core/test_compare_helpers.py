"""The comparison helpers themselves can fail: a helper that cannot fail tests nothing."""

from __future__ import annotations

import math

import pytest

from tests._helpers.compare import assert_all_close


def test_assert_all_close_fails_for_a_value_without_reference():
    with pytest.raises(AssertionError, match="f1: no reference value"):
        assert_all_close({"precision": 0.5, "f1": 0.25}, {"precision": 0.5})


def test_assert_all_close_fails_for_a_reference_we_do_not_compute():
    with pytest.raises(AssertionError, match="f1: missing"):
        assert_all_close({"precision": 0.5}, {"precision": 0.5, "f1": 0.25})


def test_assert_all_close_exclusions_are_explicit_and_checked():
    assert_all_close({"precision": 0.5, "f1": 0.25}, {"precision": 0.5}, without_reference=["f1"])
    with pytest.raises(AssertionError, match="recall: listed in without_reference but not computed"):
        assert_all_close({"precision": 0.5}, {"precision": 0.5}, without_reference=["recall"])
    with pytest.raises(AssertionError, match="precision: listed in without_reference but has a reference"):
        assert_all_close({"precision": 0.5}, {"precision": 0.5}, without_reference=["precision"])


def test_assert_all_close_compares_values():
    assert_all_close({"a": math.nan, "b": [1.0, 2.0]}, {"a": math.nan, "b": [1.0, 2.0 + 1e-12]})
    with pytest.raises(AssertionError, match="b: ours"):
        assert_all_close({"b": [1.0, 2.0]}, {"b": [1.0, 2.1]})
