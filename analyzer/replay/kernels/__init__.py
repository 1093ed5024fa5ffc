"""Numba kernels of the replay engine.

Each kernel takes plain typed numpy arrays (no Python objects), is compiled
with ``cache=True`` and has a slow, obviously correct counterpart in
``tests/analyzer/reference.py`` that the tests compare it against.
"""
