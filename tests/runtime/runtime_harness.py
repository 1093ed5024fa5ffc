"""Shared helpers of the runtime tests: paths, running tools, reading traces back through tracefmt."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tracefmt.layout import EventType
from tracefmt.validate import validate

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = ROOT / "runtime"
SAMPLES = ROOT / "samples" / "runtime"
EXPERT_RUN = RUNTIME / "bin" / "expert-run"
MPI_ENV = {
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    "OMPI_MCA_rmaps_base_oversubscribe": "1",
    "OMP_NUM_THREADS": "2",
}


#: the two MPIs the runtime supports: their compilers, and their launcher (the number of ranks follows)
MPI_TOOLS = {
    "ompi": {"cc": "mpicc.openmpi", "fc": "mpif90.openmpi", "run": ["mpirun.openmpi", "-np"]},
    "mpich": {"cc": "mpicc.mpich", "fc": "mpif90.mpich", "run": ["mpiexec.mpich", "-n"]},
}


def trace_mpi_sample(directory, mpi: str, source: str, nranks: int, compiler: str = "cc", flags=()) -> Path:
    """Build ``samples/runtime/<source>`` with ``mpi``'s compiler (``-g`` and ``flags``), run it on ``nranks``
    ranks under expert-run in ``directory``, and return the trace's path (``<source stem>.elg``)."""
    tools = MPI_TOOLS[mpi]
    need(tools[compiler])
    exe = Path(source).stem
    run([tools[compiler], "-g", *flags, str(SAMPLES / source), "-o", exe], cwd=directory)
    run(tools["run"] + [str(nranks), str(EXPERT_RUN), "-o", f"{exe}.elg", f"./{exe}"], cwd=directory, env=MPI_ENV)
    return Path(directory) / f"{exe}.elg"


def need(tool):
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed (optional tool chain)")


def run(cmd, cwd, env=None, check=True):
    full_env = dict(os.environ, **(env or {}))
    p = subprocess.run(cmd, cwd=cwd, env=full_env, capture_output=True, text=True, timeout=120)
    if check and p.returncode != 0:
        raise AssertionError(f"{cmd} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p


def events(trace, loc):
    """(type, name-or-None, a, b, c, d, e, time) tuples of one location."""
    ev = trace.events(loc)
    regions = trace.defs.regions
    out = []
    for i in range(len(ev)):
        t = EventType(int(ev.type[i]))
        name = None
        if t in (EventType.ENTER, EventType.EXIT, EventType.OMP_COLLEXIT, EventType.MPI_COLLEXIT):
            name = regions[int(ev.a[i])].name
        out.append((t, name, int(ev.a[i]), int(ev.b[i]), int(ev.c[i]), int(ev.d[i]), int(ev.e[i]), float(ev.time[i])))
    return out


def assert_valid(trace):
    problems = [str(p) for p in validate(trace)]
    assert problems == [], problems
    assert trace.header.finished
