"""Shared fixtures for the Beam adapter tests (DirectRunner only, never Prism)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

pytest.importorskip("apache_beam")

CARRIERS = ["AA", "DL", "UA", None]
ORIGINS = ["JFK", "LGA", "EWR"]


def _make_rows(n: int, seed: int, score_shift: float = 0.0) -> list[dict[str, Any]]:
    """Seeded binary-classification rows with integer weights (float sums stay exact), a string
    slice column with missing values and a second slice column."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    score = np.clip(0.35 * y + 0.65 * rng.random(n) + score_shift, 0.0, 1.0)
    w = rng.integers(0, 4, n)
    carrier = rng.integers(0, len(CARRIERS), n)
    origin = rng.integers(0, len(ORIGINS), n)
    return [
        {
            "label": int(y[i]),
            "score": float(score[i]),
            "weight": int(w[i]),
            "carrier": CARRIERS[carrier[i]],
            "origin": ORIGINS[origin[i]],
            "unused": "x",
        }
        for i in range(n)
    ]


@pytest.fixture(scope="session")
def make_rows() -> Callable[..., list[dict[str, Any]]]:
    """``make_rows(n, seed, score_shift=0.0)``: seeded row dicts (see :func:`_make_rows`)."""
    return _make_rows
