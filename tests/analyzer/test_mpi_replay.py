"""Distributed analysis: ``mpiexec -n K expert-analyze --mpi`` gives the serial JSON summary byte for byte.

K = 2 and 3 under Open MPI, on a trace of 5 processes (so shares are uneven).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import mpi4py  # noqa: F401  (a test dependency: the ranks below import it; missing, it fails here loudly)
import pytest

from analyzer.cli.analyze import main
from random_hybrid_traces import random_builder

MPIEXEC = shutil.which("mpiexec.openmpi") or shutil.which("mpiexec")
pytestmark = [pytest.mark.runtime,
              pytest.mark.skipif(MPIEXEC is None, reason="no mpiexec (Open MPI) on this machine")]

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def _mpiexec(k: int, args: list[str]) -> subprocess.CompletedProcess:
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1", MPI4PY_MPIABI="openmpi", PYTHONPATH=ROOT,
               OMPI_MCA_btl="self,vader", NUMBA_NUM_THREADS="1")
    cmd = [MPIEXEC, "--oversubscribe", "-n", str(k), sys.executable, "-m", "analyzer.cli", "--mpi", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120, cwd=ROOT)


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    d = tmp_path_factory.mktemp("mpi")
    trace = d / "hybrid.elg"
    random_builder(21, n_ranks=5, n_threads=2, steps=30).write(trace)
    js = d / "serial.json"
    assert main([str(trace), "-j", "1", "-q", "--json", str(js), "-o", str(d / "serial.cubex")]) == 0
    return d, trace, js.read_bytes()


@pytest.mark.parametrize("k", [2, 3])
def test_mpi_ranks_give_the_serial_json(serial, k):
    d, trace, want = serial
    js = d / f"mpi{k}.json"
    r = _mpiexec(k, [str(trace), "--json", str(js), "-o", str(d / f"mpi{k}.cubex")])
    assert r.returncode == 0, r.stderr
    assert js.read_bytes() == want
    # rank 0 alone prints the report
    assert r.stdout.count("Performance properties") == 1


def test_mpi_bad_trace_is_one_error_line_and_status_2(tmp_path):
    bad = tmp_path / "bad.elg"
    bad.write_bytes(b"\x89ELG\r\n\x1a\n" + b"\0" * 10)
    r = _mpiexec(2, [str(bad), "-q"])
    assert r.returncode == 2
    lines = [l for l in r.stderr.splitlines() if "expert-analyze" in l]
    assert len(lines) == 1 and "bad.elg" in lines[0] and "Traceback" not in r.stderr
