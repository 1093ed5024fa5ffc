import pytest

from pomp_harness import ROOT, RUNTIME, run


@pytest.fixture(scope="session")
def runtime_built():
    run(["make", "-s", "-C", RUNTIME], cwd=ROOT)
    return RUNTIME / "lib"
