"""Small numpy-only helpers under everything: the null marker, size limits, exact sums, stable ids and hashes, Student-t quantiles.

Imports nothing else of the package.
"""
