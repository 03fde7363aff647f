"""Slices: the slice spec grammar (``spec``), canonical slice values and key bytes (``values``), slice codes per batch (``assign``) and the slice-vectorised fold of the state kinds (``grouped``).

Imports ``states``, ``inputs`` and ``_util``.
"""
