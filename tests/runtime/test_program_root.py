"""The program root region (runtime/src/core.c, defs.c, shutdown.c).

Thread 0 of every process records ENTER of a region named after the executable (as Score-P names its
program region) as its first event, at the start of the measurement, and its EXIT as its last, at the
end; worker threads' events lie inside it in time, and the analyzer grafts them below it.  Checked for
every way of tracing: the preload alone, -finstrument-functions, expert-cc (POMP) and --unwind.  With
the designed hybrid program (samples/waits/hybrid_waits.c, 2 ranks x 2 threads, uninstrumented), the
analyzer's `time` is the summed wall time of the locations within 5 %, and the computation between
the MPI and OpenMP calls is visible at the root.
"""
from __future__ import annotations

import numpy as np
import pytest

import analyzer
import tracefmt
from runtime_harness import EXPERT_RUN, MPI_ENV, RUNTIME, ROOT, assert_valid, need, run
from tracefmt.layout import EventType, Paradigm, Role

pytestmark = pytest.mark.runtime

PROGRAM = ROOT / "samples" / "waits" / "hybrid_waits.c"
WAITS_ENV = dict(MPI_ENV, OMP_WAIT_POLICY="passive", OMPI_MCA_mpi_yield_when_idle="1")
WAYS = {
    "preload": (["mpicc.openmpi", "-fopenmp", "-g", "-O1"], []),
    "finstrument": (["mpicc.openmpi", "-fopenmp", "-g", "-O1", "-finstrument-functions"], []),
    "expert-cc": ([str(RUNTIME / "bin" / "expert-cc"), "mpicc.openmpi", "-fopenmp", "-g", "-O1"], []),
    "unwind": (["mpicc.openmpi", "-fopenmp", "-g", "-O1", "-fno-optimize-sibling-calls"], ["--unwind"]),
}


def root_spans(trace, name):
    """{process: (enter, exit)} of the program root region, checking that it encloses thread 0"""
    roots = [r for r in trace.defs.regions.values() if r.name == name]
    assert len(roots) == 1, [r.name for r in trace.defs.regions.values()]
    root = roots[0]
    assert (root.paradigm, root.role) == (Paradigm.USER, Role.FUNCTION)
    spans = {}
    for loc in trace.location_ids:
        info = trace.defs.locations[int(loc)]
        ev = trace.events(int(loc))
        types, a = np.asarray(ev.type), np.asarray(ev.a)
        is_root = np.isin(types, (EventType.ENTER, EventType.EXIT)) & (a == root.id)
        if info.thread == 0:
            assert np.flatnonzero(is_root).tolist() == [0, len(ev) - 1], f"location {loc}"
            assert types[0] == EventType.ENTER and types[-1] == EventType.EXIT
            spans[info.process] = (float(ev.time[0]), float(ev.time[-1]))
        else:
            assert not is_root.any(), f"worker location {loc} records the root region"
    for loc in trace.location_ids:  # workers' events lie inside their master's root region
        info = trace.defs.locations[int(loc)]
        t = np.asarray(trace.events(int(loc)).time)
        begin, end = spans[info.process]
        assert begin <= t.min() and t.max() <= end, f"location {loc}"
    return spans


@pytest.mark.parametrize("way", list(WAYS))
def test_root_region_encloses_every_location(runtime_built, tmp_path, way):
    need("mpicc.openmpi")
    compiler, options = WAYS[way]
    run([*compiler, str(PROGRAM), "-o", "hw"], cwd=tmp_path)
    run(["mpirun.openmpi", "-np", "2", str(EXPERT_RUN), *options, "-o", "hw.elg", "./hw", "0.1"], cwd=tmp_path,
        env=WAITS_ENV)
    trace = tracefmt.open(str(tmp_path / "hw.elg"))
    assert_valid(trace)
    assert len(root_spans(trace, "hw")) == 2
    cube = analyzer.analyze(str(tmp_path / "hw.elg"))
    roots = [c for c in range(len(cube.cnode_parent)) if cube.cnode_parent[c] < 0]
    assert [cube.callpath(c) for c in roots] == ["hw"]  # one root: the program, workers grafted below it


def test_time_is_wall_time_and_computation_is_visible(runtime_built, tmp_path):
    need("mpicc.openmpi")
    run(["mpicc.openmpi", "-fopenmp", "-g", "-O1", str(PROGRAM), "-o", "hw"], cwd=tmp_path)
    run(["mpirun.openmpi", "-np", "2", str(EXPERT_RUN), "-o", "hw.elg", "./hw"], cwd=tmp_path, env=WAITS_ENV)
    trace = tracefmt.open(str(tmp_path / "hw.elg"))
    spans = root_spans(trace, "hw")
    wall = sum(spans[trace.defs.locations[int(loc)].process][1] - spans[trace.defs.locations[int(loc)].process][0]
               for loc in trace.location_ids)
    cube = analyzer.analyze(str(tmp_path / "hw.elg"))
    time = cube.total("time")
    assert abs(time - wall) <= 0.05 * wall, (time, wall)
    # computation = execution - MPI - OpenMP: the designed work outside MPI and OpenMP calls (serial
    # phase 0.2 s, late sender 0.3 s, barrier 0.4 s, broadcast 0.25 s, spread over the ranks) is there
    computation = cube.total("execution") - cube.total("mpi") - cube.total("omp_time")
    assert computation > 0.2 * 2 + 0.3 + 0.4 + 0.25 - 0.1, computation
