"""Fixtures shared by the core tests."""

from __future__ import annotations

import pytest

from mergeable_metrics import REGISTRY


@pytest.fixture
def registry_snapshot():
    """Restore the registry after tests that define metric classes."""
    before = dict(REGISTRY)
    yield
    REGISTRY.clear()
    REGISTRY.update(before)
