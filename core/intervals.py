"""Confidence intervals of sampling uncertainty (``Evaluation(ci=...)``), per slice and metric.

Not to be confused with *bounds* (certified limits of an approximate state's value: compression
error only). A ``ci`` is always reported with its method and level (``Results.config["ci"]``).

Methods (``ci=``):

* ``"analytic"``: closed forms from the merged states (Wilson for proportions, DeLong for ROC AUC,
  normal intervals for means); metrics without one get no interval and are listed.
* ``"posterior"``: the Beta/Dirichlet posterior of the confusion counts (prior ``ci_prior``),
  ``ci_replicates`` seeded samples.
* ``"bootstrap"``: a one-pass, mergeable Poisson bootstrap, ``ci_replicates`` replicates drawn
  reproducibly from ``id_col`` (or the row's content).

:func:`slice_ci` is the one entry point :meth:`core.Evaluation.finish` calls per slice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["CISettings", "slice_ci"]


@dataclass(frozen=True)
class CISettings:
    """The ``ci`` options of an evaluation (see :data:`core.options.OPTIONS`)."""

    method: str | None
    level: float = 0.95
    replicates: int = 200
    seed: int = 0
    prior: float = 0.5

    @classmethod
    def from_options(cls, o: dict[str, Any]) -> "CISettings":
        return cls(o["ci"], o["ci_level"], o["ci_replicates"], o["ci_seed"], o["ci_prior"])

    def to_config(self) -> dict[str, Any]:
        """``Results.config["ci"]``: ``{"method", "level", "replicates", "seed"}`` (+ ``prior``)."""
        out: dict[str, Any] = {"method": self.method, "level": self.level, "replicates": self.replicates, "seed": self.seed}
        if self.method == "posterior":
            out["prior"] = self.prior
        return out


def slice_ci(settings: CISettings, plan: Any, key: tuple, states: tuple, values: dict[str, Any]) -> dict[str, Any]:
    """``{metric key: (lower, upper)}`` of one slice (empty when ``settings.method`` is None).

    Args:
        settings: the evaluation's ``ci`` options.
        plan: the evaluation's :class:`~core.plan.Plan`.
        key: the slice key.
        states: the slice's merged states.
        values: the slice's metric values (``plan.compute``).
    """
    if settings.method is None:
        return {}
    raise NotImplementedError(f"ci={settings.method!r} is not implemented yet")
