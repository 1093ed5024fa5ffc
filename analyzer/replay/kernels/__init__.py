"""Numba kernels of the replay engine.

Each kernel takes plain typed numpy arrays, or the named bundles of them in
:mod:`.bundles` (no Python objects), returns named result tuples, is
compiled with ``cache=True`` and has a slow, obviously correct counterpart
in ``tests/analyzer/kernel_references.py`` that the tests compare it against.
Problems found while walking a location's region stack are the status codes
of :mod:`tracefmt.nesting`.
"""
