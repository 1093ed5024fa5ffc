"""The test suite's own rules: the launch guard of tests/conftest.py works, and no test skips on our own packages."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from launch_guard import runtime_program

TESTS = Path(__file__).resolve().parent


@pytest.mark.parametrize("args", [
    ["mpiexec", "-n", "2", "x"], ["/usr/bin/mpirun.openmpi", "x"], ["mpiexec.hydra"], ["gcc-12", "-c", "a.c"],
    ["mpicc"], ["make", "-C", "runtime"], ["/work/runtime/bin/expert-run", "./a.out"], ["chromium", "--headless"],
    "mpirun -np 2 ./a.out", ["bash", "-eo", "pipefail", "-c", "cd x && mpirun -np 2 ./a | tee log"],
    ["sh", "-c", "CC=1 gcc a.c"],
])
def test_runtime_programs_are_recognised(args):
    assert runtime_program(args) is not None


@pytest.mark.parametrize("args", [
    [sys.executable, "-m", "benchmarks"], ["otf2-print", "x"], ["bash", "/repo/runtime/bin/expert-run", "--help"],
    ["ldd", "lib.so"], ["expert-trace", "check", "make.elg"], ["bash", "-c", "echo compiled"], [],
])
def test_other_programs_pass(args):
    assert runtime_program(args) is None


def test_guard_fails_a_test_without_the_runtime_marker_that_starts_mpiexec():
    # the guard refuses before anything is started: this works without Open MPI installed
    with pytest.raises(pytest.fail.Exception, match=r"starts 'mpiexec' but is not marked @pytest.mark.runtime"):
        subprocess.run(["mpiexec", "-n", "2", "true"])
    with pytest.raises(pytest.fail.Exception, match=r"starts 'chromium'"):
        subprocess.Popen("chromium --headless", shell=True)


def test_no_test_skips_when_a_package_of_ours_fails_to_import():
    ours = re.compile(r"importorskip\(\s*['\"](tracefmt|patterns|analyzer|samples)\b")
    found = [f"{p.relative_to(TESTS)}:{i}" for p in sorted(TESTS.rglob("*.py"))
             for i, line in enumerate(p.read_text().splitlines(), 1) if ours.search(line)]
    assert found == [], "import our own packages plainly (a broken package must fail, not skip): " + ", ".join(found)


def test_no_test_skips_when_an_installed_dependency_is_missing():
    # the package's dependencies and the `test` extra are installed by ./dev setup: a missing one is a broken
    # set-up that must fail loudly, not thin the suite out
    deps = re.compile(r"importorskip\(\s*['\"](numpy|numba|h5py|networkx|isal|otf2|pycubexr|matplotlib|pandas|"
                      r"mpi4py|hypothesis)\b")
    found = [f"{p.relative_to(TESTS)}:{i}" for p in sorted(TESTS.rglob("*.py"))
             for i, line in enumerate(p.read_text().splitlines(), 1) if deps.search(line)]
    assert found == [], "import installed dependencies plainly: " + ", ".join(found)


def test_test_modules_have_unique_names():
    # the test folders are not packages, so pytest imports every module by its basename: a second
    # test_x.py in another folder stops the whole collection ("import file mismatch")
    seen: dict[str, Path] = {}
    for path in sorted(TESTS.rglob("test_*.py")):
        other = seen.setdefault(path.name, path)
        assert other == path, f"two test modules named {path.name}: {other.relative_to(TESTS)}, {path.relative_to(TESTS)}"
