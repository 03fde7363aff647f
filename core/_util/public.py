"""``public(path)``: give a class or function the import path users see.

A name of a tier (``mergeable_metrics.Evaluation``, ``mergeable_metrics.metrics.Task``) is defined
in a layer's module; its ``__module__`` is set to the tier's path, so that reprs, tracebacks,
pickles and the API reference say ``mergeable_metrics.Evaluation``. Pickle finds a class by
``__module__`` + ``__qualname__``: the tier's module must export the name (and does, see
``tests/core/test_api_tiers.py``). :data:`DEFINED_IN` keeps where each one is defined (for the
docstring-example test, which runs a class's examples with the module that defines it).
"""

from __future__ import annotations

from typing import Callable, TypeVar

T = TypeVar("T")

#: ``{public dotted name: module that defines it}``
DEFINED_IN: dict[str, str] = {}


def public(path: str) -> Callable[[T], T]:
    """Decorator: set ``obj.__module__`` to ``path`` (a tier's import path) and record where
    ``obj`` is defined in :data:`DEFINED_IN`."""

    def mark(obj: T) -> T:
        DEFINED_IN[f"{path}.{obj.__qualname__}"] = obj.__module__  # type: ignore[attr-defined]
        obj.__module__ = path
        return obj

    return mark
