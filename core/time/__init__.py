"""Metrics in time: event-time windows, prequential (test-then-train) evaluation, continual-learning metrics and the engine-free join of late labels.

Imports ``evaluation`` and below.
"""
