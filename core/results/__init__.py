"""Per-slice results (values, counts, intervals, comparisons) and fairness gaps between slices.

Imports ``collection``, ``slicing`` and below.
"""
