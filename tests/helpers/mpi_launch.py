"""Starting a Python command line on K ranks of Open MPI or MPICH, with mpi4py bound to that MPI.

For the tests of ``--mpi`` and of the analysis carriers.  A missing Open MPI or MPICH skips the test
(optional tool chains); ``extra_path`` joins PYTHONPATH (the test's own folder, to import its module).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MPIEXEC = shutil.which("mpiexec.openmpi") or shutil.which("mpiexec")
MPICH_LIB = "/usr/lib/x86_64-linux-gnu/libmpich.so.12"


def launch(mpi: str, k: int, argv: list[str], tmp, extra_path=(), timeout: int = 180) -> subprocess.CompletedProcess:
    """``python argv...`` on ``k`` ranks of ``mpi`` ("openmpi" or "mpich"), run from the repository root."""
    if MPIEXEC is None:
        pytest.skip("no mpiexec (Open MPI) on this machine")
    path = [ROOT, *extra_path, os.path.join(ROOT, "tests", "helpers")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path), NUMBA_NUM_THREADS="1")
    if mpi == "openmpi":
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_btl="self,vader",
                   OMPI_MCA_rmaps_base_oversubscribe="1", MPI4PY_MPIABI="openmpi")
        cmd = [MPIEXEC, "--oversubscribe", "-n", str(k)]
    else:
        if shutil.which("mpiexec.mpich") is None or not os.path.exists(MPICH_LIB):
            pytest.skip("MPICH is not installed (optional tool chain)")
        # mpi4py's MPICH ABI loads libmpi.so.12, which Debian's MPICH names libmpich.so.12
        abi = tmp / "mpich-abi"
        abi.mkdir(exist_ok=True)
        if not (abi / "libmpi.so.12").exists():
            os.symlink(MPICH_LIB, abi / "libmpi.so.12")
        env.update(MPI4PY_MPIABI="mpich", LD_LIBRARY_PATH=f"{abi}:{env.get('LD_LIBRARY_PATH', '')}")
        cmd = [shutil.which("mpiexec.mpich"), "-n", str(k)]
    return subprocess.run(cmd + [sys.executable, *argv], capture_output=True, text=True, env=env, timeout=timeout,
                          cwd=ROOT)
