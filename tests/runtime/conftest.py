"""Fixtures of the runtime tests."""
import pytest

from runtime_harness import ROOT, RUNTIME, run


@pytest.fixture(scope="session")
def runtime_built():
    run(["make", "-s", "-C", str(RUNTIME)], cwd=ROOT)
    return RUNTIME / "lib"
