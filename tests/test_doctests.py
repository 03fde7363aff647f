"""The docstring examples of the engine-free layer run as tests, imported under their installed
names (``mergeable_metrics....``), one test per module.

(pytest's ``--doctest-modules`` would import ``core/*.py`` under the folder's name, ``core.…``, a
second copy of every module beside ``mergeable_metrics.…``.)
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import mergeable_metrics

ENGINE_FREE = [
    m.name
    for m in pkgutil.walk_packages(mergeable_metrics.__path__, "mergeable_metrics.")
    if not m.name.startswith(("mergeable_metrics.beam", "mergeable_metrics.spark", "mergeable_metrics.pipelines"))
]


@pytest.mark.parametrize("name", ["mergeable_metrics", *ENGINE_FREE])
def test_docstring_examples(name):
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(module, name):
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name} (output above)"


def test_the_examples_are_found():
    """The walk sees the subpackages (so an empty parametrisation cannot pass silently)."""
    assert {"mergeable_metrics.collection.plan", "mergeable_metrics.metrics.topk"} <= set(ENGINE_FREE)
