"""Sufficient-statistic states: the cell states (example counts, binary confusion at thresholds, the K x K matrix), score distributions and their canonical binning, and the versioned codec of state bytes.

Imports ``inputs`` and ``_util``; a state kind knows nothing of the metrics computed from it.
"""
