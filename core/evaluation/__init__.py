"""The sliced evaluation: options, column mapping and batch routing, the accumulator and its operations, the counting pass (``profile``) and small-slice suppression.

Imports ``uncertainty`` and below.
"""
