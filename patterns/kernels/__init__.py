"""Numba kernels the built-in patterns use; each takes plain typed arrays and has a slow reference in tests/."""
