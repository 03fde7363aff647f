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
from mergeable_metrics._util.public import DEFINED_IN

ENGINE_FREE = [
    m.name
    for m in pkgutil.walk_packages(mergeable_metrics.__path__, "mergeable_metrics.")
    if not m.name.startswith(("mergeable_metrics.beam", "mergeable_metrics.spark", "mergeable_metrics.pipelines"))
]


class _Finder(doctest.DocTestFinder):
    """A finder that runs a tier name's examples with the module that defines it: their
    ``__module__`` is the tier's (``mergeable_metrics.Evaluation``, see
    :func:`mergeable_metrics._util.public.public`), which the stock finder would take for an
    import from elsewhere and skip (and the lazy tier modules would show only when accessed)."""

    def _from_module(self, module, object):  # noqa: A002 (doctest's name)
        defined_in = DEFINED_IN.get(f"{getattr(object, '__module__', None)}.{getattr(object, '__qualname__', '')}")
        if defined_in is not None:
            return defined_in == module.__name__
        return super()._from_module(module, object)


@pytest.mark.parametrize("name", ["mergeable_metrics", *ENGINE_FREE])
def test_docstring_examples(name):
    module = importlib.import_module(name)
    finder = _Finder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(module, name):
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name} (output above)"


def test_the_examples_are_found():
    """The walk sees the subpackages (so an empty parametrisation cannot pass silently)."""
    assert {"mergeable_metrics.collection.plan", "mergeable_metrics.metrics.topk"} <= set(ENGINE_FREE)


def test_a_tier_names_examples_are_found_in_the_module_that_defines_it():
    """``MetricCollection.__module__`` is ``mergeable_metrics``: its examples are still found,
    once, in ``mergeable_metrics.collection.plan``, and not again in a module that imports it."""
    mergeable_metrics.MetricCollection  # noqa: B018  (accessed: now in the lazy module's namespace)

    def names(module):
        return {t.name for t in _Finder(exclude_empty=True).find(importlib.import_module(module), module)}

    assert "mergeable_metrics.collection.plan.MetricCollection" in names("mergeable_metrics.collection.plan")
    assert not any(n.endswith(".MetricCollection") for n in names("mergeable_metrics") | names("mergeable_metrics.aggregation"))
