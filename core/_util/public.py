"""``public(path)``: give a class or function the import path users see; ``lazy_exports``: a
tier module's names imported on first use.

A name of a tier (``mergeable_metrics.Evaluation``, ``mergeable_metrics.metrics.Task``) is defined
in a layer's module; its ``__module__`` is set to the tier's path, so that reprs, tracebacks,
pickles and the API reference say ``mergeable_metrics.Evaluation``. Pickle finds a class by
``__module__`` + ``__qualname__``: the tier's module must export the name (and does, see
``tests/core/test_api_tiers.py``). :data:`DEFINED_IN` keeps where each one is defined (for the
docstring-example test, which runs a class's examples with the module that defines it).
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, TypeVar

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


def lazy_exports(module: str, exports: dict[str, str], namespace: dict[str, Any]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` of a tier module (PEP 562) whose names ``exports`` maps to the
    modules defining them: each is imported on first use and then kept in ``namespace`` (the
    module's globals)."""

    def __getattr__(name: str) -> Any:
        source = exports.get(name)
        if source is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(source), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
