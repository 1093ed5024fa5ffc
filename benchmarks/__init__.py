"""Benchmarks: ``python -m benchmarks <name> [options]`` prints a table.

Each benchmark is a module here with a ``main(argv)`` function, registered
in ``benchmarks.__main__.BENCHMARKS``.
"""
