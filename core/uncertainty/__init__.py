"""Sampling uncertainty: confidence intervals (``intervals``), the one-pass Poisson bootstrap (``bootstrap``), the paired comparison of a baseline model (``comparison``, ``paired_state``).

Imports ``results`` and below.
"""
