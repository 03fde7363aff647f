"""Reading input columns: the task, the one validation path (finite values, labels, weights, errors naming column, value and row), input formats and label maps.

Imports only ``mergeable_metrics._util``.
"""
