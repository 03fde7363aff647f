"""The markers of tests/conftest.py: the slow list names real tests, -m prunes only what it deselects,
and the README documents the fast command the conftest describes."""

import re
from pathlib import Path

import pytest

from tests import conftest

ROOT = Path(__file__).resolve().parent.parent
FAST = "not (slow or beam or spark or cluster or connect or browser or fuzz)"


@pytest.mark.parametrize("entry", sorted(conftest._SLOW))
def test_every_slow_entry_names_an_existing_test(entry):
    path, _, function = entry.partition("::")
    source = (ROOT / path).read_text(encoding="utf-8")
    assert path.endswith(".py") and re.search(r"^def test_", source, flags=re.M)
    assert not function or re.search(rf"^def {re.escape(function)}\(", source, flags=re.M), entry


@pytest.mark.parametrize(
    ("markexpr", "marks", "pruned"),
    [
        (FAST, {"beam"}, True),
        (FAST, {"slow"}, True),
        (FAST, {"cluster", "spark"}, True),
        (FAST, set(), False),
        ("beam", {"beam"}, False),
        ("not beam or spark", {"beam"}, False),  # a beam test that is also marked spark is selected
        ("beam and not cluster", {"cluster"}, True),
        ("beam and not cluster", {"beam"}, False),
        ("slow", {"beam"}, False),
        ("not slow(reason=1)", {"slow"}, False),  # keyword arguments: collect as usual
    ],
)
def test_collection_skips_a_path_only_when_the_expression_deselects_every_test_in_it(markexpr, marks, pruned):
    assert conftest._never_selected(markexpr, frozenset(marks)) is pruned


def test_path_marks_come_from_the_directory_the_file_and_the_slow_list():
    tests = conftest._TESTS
    assert conftest._path_marks(tests / "beam_metrics") == {"beam"}
    assert conftest._path_marks(tests / "beam_metrics" / "test_multiprocess.py") == {"beam", "cluster"}
    assert conftest._path_marks(tests / "pipelines" / "test_report.py") == {"slow"}
    assert conftest._path_marks(tests / "core" / "test_codec.py") == set()


def test_the_readme_and_the_conftest_give_the_same_fast_command():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f'.venv/bin/python -m pytest -m "{FAST}"' in readme
    assert f'python -m pytest -m "{FAST}"' in (ROOT / "tests" / "conftest.py").read_text(encoding="utf-8")
    assert FAST in (ROOT / "pyproject.toml").read_text(encoding="utf-8")
