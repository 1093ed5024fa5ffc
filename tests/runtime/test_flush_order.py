"""A buffer flush never reorders records (runtime/src/buffer.c).

With the smallest buffer (EXPERT_BUFFER_SIZE=64k, 1638 records) every thread of
samples/runtime/flush_stress.c flushes several times, at whatever record happens to fill the buffer:
OpenMP constructs and locks on 3 threads, MPI calls under Open MPI and MPICH, the frames of
--unwind, hardware-counter records.  Every location's times must be non-decreasing, the trace must
pass `expert-trace check` (tracefmt.validate), every thread must have flushed (a TRACING region),
and no event may be lost: each thread records every iteration's critical and lock calls.
"""
from __future__ import annotations

import subprocess

import numpy as np
import pytest

import tracefmt
from runtime_harness import EXPERT_RUN, MPI_ENV, RUNTIME, SAMPLES, assert_valid, need, run
from tracefmt.layout import EventType

pytestmark = pytest.mark.runtime

ITER = 120
SMALL = {"EXPERT_BUFFER_SIZE": "64k"}


def check_flushed_in_order(path, n_locations, per_thread=ITER):
    trace = tracefmt.open(str(path))
    assert_valid(trace)
    assert len(trace.location_ids) == n_locations
    regions = trace.defs.regions
    tracing = [r.id for r in regions.values() if r.name == "TRACING"]
    assert len(tracing) == 1
    for loc in trace.location_ids:
        ev = trace.events(int(loc))
        time = np.asarray(ev.time)
        back = np.flatnonzero(np.diff(time) < 0)
        assert back.size == 0, f"location {loc}: time goes backwards at events {back[:5] + 1}"
        types, a = np.asarray(ev.type), np.asarray(ev.a)
        enters = types == EventType.ENTER
        flushes = np.flatnonzero(enters & (a == tracing[0]))
        assert flushes.size >= 1, f"location {loc} never flushed: the test does not test anything"
        # each TRACING enter is followed directly by its exit, later or at the same time
        assert all(types[i + 1] == EventType.EXIT and a[i + 1] == tracing[0] for i in flushes)
        names = [regions[int(r)].name.split(" @")[0] for r in a[enters]]
        assert names.count("!$omp critical") == per_thread
        assert names.count("omp_set_lock") == per_thread and names.count("omp_unset_lock") == per_thread
    return trace


@pytest.fixture(scope="module")
def omp_build(runtime_built, tmp_path_factory):
    need("clang")
    d = tmp_path_factory.mktemp("flush")
    run(["clang", "-fopenmp", "-g", "-O1", str(SAMPLES / "flush_stress.c"), "-o", "fs"], cwd=d)
    return d


@pytest.mark.parametrize("options", [[], ["--unwind"]], ids=["plain", "unwind"])
def test_openmp_flushes_keep_time_order(omp_build, options):
    out = omp_build / f"omp{len(options)}.elg"
    run([str(EXPERT_RUN), *options, "-o", str(out), "./fs", str(ITER)], cwd=omp_build, env=SMALL)
    check_flushed_in_order(out, 3)


def test_gcc_openmp_on_libomp_flushes_keep_time_order(runtime_built, tmp_path):
    need("gcc")
    run(["gcc", "-fopenmp", "-g", "-O1", str(SAMPLES / "flush_stress.c"), "-o", "fs"], cwd=tmp_path)
    run([str(EXPERT_RUN), "-o", "g.elg", "./fs", str(ITER)], cwd=tmp_path, env=SMALL)
    check_flushed_in_order(tmp_path / "g.elg", 3)


def test_flushes_between_an_event_and_its_counters_keep_time_order(omp_build):
    lib = RUNTIME / "lib" / "libexpert.so"
    if "libpapi" not in subprocess.run(["ldd", str(lib)], capture_output=True, text=True).stdout:
        pytest.skip("the runtime was built without PAPI (Debian libpapi-dev is missing)")
    env = dict(SMALL, EXPERT_METRICS="perf::TASK-CLOCK,perf::CONTEXT-SWITCHES")
    p = run([str(EXPERT_RUN), "-o", "m.elg", "./fs", str(ITER)], cwd=omp_build, env=env)
    if "EXPERT_METRICS" in p.stderr:
        pytest.skip(f"PAPI cannot count these here: {p.stderr.strip()}")
    trace = check_flushed_in_order(omp_build / "m.elg", 3)
    # 3 records per ENTER/EXIT: a flush lands between an event and its counters as often as not
    assert trace.defs.metrics


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_mpi_flushes_keep_time_order(runtime_built, tmp_path, mpi):
    need(f"mpicc.{mpi}")
    launcher = ["mpirun.openmpi", "-np", "2"] if mpi == "openmpi" else ["mpiexec.mpich", "-n", "2"]
    run([f"mpicc.{mpi}", "-DWITH_MPI", "-fopenmp", "-g", "-O1", str(SAMPLES / "flush_stress.c"), "-o", "fs"],
        cwd=tmp_path)
    env = dict(MPI_ENV, **SMALL)
    run(launcher + [str(EXPERT_RUN), "--unwind", "-o", "h.elg", "./fs", str(ITER)], cwd=tmp_path, env=env)
    trace = check_flushed_in_order(tmp_path / "h.elg", 6)
    ranks = {loc.process for loc in trace.defs.locations.values()}
    assert ranks == {0, 1}
