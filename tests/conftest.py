"""Fixtures and checks shared by every test folder.

Plain helper functions shared by several folders (random traces, EPILOG sample writers, repository
paths, the launch guard) live in tests/helpers/, which pytest puts on sys.path (``pythonpath`` in
pyproject.toml); fixtures shared by several folders live here.
"""

from __future__ import annotations

import pytest

from launch_guard import LaunchGuard


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """A test without the ``runtime`` marker fails if it (or a fixture it sets up or tears down)
    starts an MPI launcher, a compiler, the C runtime or a browser: the fast subset stays fast."""
    if item.get_closest_marker("runtime") is not None:
        yield
        return
    with LaunchGuard(item.nodeid):
        yield
