"""Fuzz suite: every public entry point fed hostile inputs, checked against an independent oracle.

See ``tests/fuzz/oracle.py`` for what each case must end in, ``tests/fuzz/budget.py`` for the
example counts of the "ci" and "fuzz" hypothesis profiles, and ``test_regressions.py`` for the
narrow regression tests of the defects the suite found.
"""
