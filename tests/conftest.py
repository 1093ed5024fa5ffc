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


@pytest.fixture(scope="session")
def runtime_built():
    """The C runtime built once per session (``make -s -C runtime``): the folder of its libraries.

    Used by tests/runtime and tests/instrument; a test that uses it needs the ``runtime`` marker."""
    import subprocess

    from repo_paths import ROOT

    runtime = ROOT / "runtime"
    p = subprocess.run(["make", "-s", "-C", str(runtime)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise AssertionError(f"make -C {runtime} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return runtime / "lib"
