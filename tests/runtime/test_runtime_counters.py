"""Hardware counters on every enter and exit (runtime/src/papi.c), and METRIC definitions unified
across ranks (runtime/src/writer.c).

perf::TASK-CLOCK (the thread's CPU time in ns, a software counter of PAPI's perf_event component)
works on machines without a CPU PMU.  Every ENTER and EXIT-like record (EXIT, OMP_COLLEXIT,
MPI_COLLEXIT) must be followed by one COUNTER per metric with the same time, including the ends
the OpenMP layer holds back and flushes itself, the frames of EXPERT_UNWIND, and the regions closed
at the end of the run (also those of worker threads, closed by the master).
"""
from __future__ import annotations

import subprocess

import numpy as np
import pytest

import tracefmt
from runtime_harness import EXPERT_RUN, MPI_ENV, RUNTIME, SAMPLES, assert_valid, need, run
from tracefmt.layout import EventType

pytestmark = pytest.mark.runtime

TASK_CLOCK = "perf::TASK-CLOCK"
SWITCHES = "perf::CONTEXT-SWITCHES"
REGION_EVENTS = (EventType.ENTER, EventType.EXIT, EventType.OMP_COLLEXIT, EventType.MPI_COLLEXIT)


@pytest.fixture(scope="module")
def programs(runtime_built, tmp_path_factory):
    need("clang")
    need("mpicc.openmpi")
    lib = RUNTIME / "lib" / "libexpert.so"
    if "libpapi" not in subprocess.run(["ldd", str(lib)], capture_output=True, text=True).stdout:
        pytest.skip("the runtime was built without PAPI (Debian libpapi-dev is missing)")
    d = tmp_path_factory.mktemp("counters")
    run(["clang", "-fopenmp", "-g", "-O1", str(SAMPLES / "omp_constructs.c"), "-o", "omp"], cwd=d)
    run(["clang", "-fopenmp", "-g", "-O1", str(SAMPLES / "omp_nowait_end.c"), "-o", "nowait"], cwd=d)
    run(["mpicc.openmpi", "-fopenmp", "-g", "-O1", "-fno-optimize-sibling-calls", str(SAMPLES / "unwind_hybrid.c"),
         "-o", "hybrid"], cwd=d)
    p = run([str(EXPERT_RUN), "-o", "probe.elg", "./omp"], cwd=d,
            env={"EXPERT_METRICS": TASK_CLOCK, "OMP_NUM_THREADS": "2"})
    if "EXPERT_METRICS" in p.stderr:
        pytest.skip(f"PAPI cannot count {TASK_CLOCK} here: {p.stderr.strip()}")
    return d


def check_every_region_event_counted(trace, n_metrics):
    for loc in trace.location_ids:
        ev = trace.events(int(loc))
        types = np.asarray(ev.type)
        region_events = np.flatnonzero(np.isin(types, REGION_EVENTS))
        assert len(region_events) > 0
        for k in range(1, n_metrics + 1):
            follower = region_events + k
            assert (follower < len(types)).all(), f"location {loc}: last event has no counter"
            uncounted = region_events[(types[follower] != EventType.COUNTER) | (ev.time[follower] != ev.time[region_events])
                                      | (ev.a[follower] != k - 1)]
            assert len(uncounted) == 0, (f"location {loc}: {len(uncounted)} of {len(region_events)} enters/exits "
                                         f"lack counter {k - 1}, first at event {uncounted[0]}")
        counters = types == EventType.COUNTER
        assert counters.sum() == n_metrics * len(region_events)  # and no counter anywhere else
        for m in range(n_metrics):
            values = ev.d[counters & (ev.a == m)].astype(np.int64)
            assert (np.diff(values) >= 0).all()  # accumulated counts


@pytest.mark.parametrize("program,threads", [("omp", "3"), ("nowait", "3")])
def test_openmp_every_enter_and_exit_carries_counters(programs, program, threads):
    run([str(EXPERT_RUN), "-o", f"{program}.elg", f"./{program}"], cwd=programs,
        env={"EXPERT_METRICS": TASK_CLOCK, "OMP_NUM_THREADS": threads})
    trace = tracefmt.open(str(programs / f"{program}.elg"))
    assert_valid(trace)
    assert [m.name for m in trace.defs.metrics.values()] == [TASK_CLOCK]
    check_every_region_event_counted(trace, 1)


def test_hybrid_with_unwinding_and_two_metrics_every_enter_and_exit_carries_counters(programs):
    run(["mpirun.openmpi", "-np", "2", str(EXPERT_RUN), "--unwind", "-o", "hy.elg", "./hybrid"], cwd=programs,
        env=dict(MPI_ENV, EXPERT_METRICS=f"{TASK_CLOCK},{SWITCHES}"))
    trace = tracefmt.open(str(programs / "hy.elg"))
    assert_valid(trace)
    assert [m.name for m in trace.defs.metrics.values()] == [TASK_CLOCK, SWITCHES]
    check_every_region_event_counted(trace, 2)


def mpmd(programs, name, metrics0, metrics1):
    """rank 0 and rank 1 with different EXPERT_METRICS (empty: none)"""
    cmd = ["mpirun.openmpi"]
    for i, m in enumerate((metrics0, metrics1)):
        cmd += [":"] if i else []
        cmd += ["-np", "1", "-x", f"EXPERT_METRICS={m}", str(EXPERT_RUN), "-o", f"{name}.elg", "./hybrid"]
    run(cmd, cwd=programs, env=MPI_ENV)
    trace = tracefmt.open(str(programs / f"{name}.elg"))
    assert_valid(trace)
    return trace


def counters_of(trace, rank):
    out = []
    for loc, info in trace.defs.locations.items():
        if info.process == rank:
            ev = trace.events(int(loc))
            c = ev.type == EventType.COUNTER
            out.append({m: ev.d[c & (ev.a == m)].astype(np.int64) for m in trace.defs.metrics})
    return out


def test_metrics_of_a_rank_other_than_0_are_defined(programs):
    trace = mpmd(programs, "only1", "", TASK_CLOCK)
    assert [m.name for m in trace.defs.metrics.values()] == [TASK_CLOCK]
    assert all(len(c[0]) == 0 for c in counters_of(trace, 0))
    assert all(len(c[0]) > 0 for c in counters_of(trace, 1))


def test_metric_ids_are_unified_by_name_across_ranks(programs):
    # rank 1 lists the metrics the other way round: its COUNTER records must be renumbered
    trace = mpmd(programs, "swapped", TASK_CLOCK, f"{SWITCHES},{TASK_CLOCK}")
    names = {m.id: m.name for m in trace.defs.metrics.values()}
    assert names == {0: TASK_CLOCK, 1: SWITCHES}
    assert all(len(c[1]) == 0 for c in counters_of(trace, 0))
    for c in counters_of(trace, 1):
        assert len(c[0]) == len(c[1]) > 0
        # CPU nanoseconds of a thread that ran a parallel region vs. a handful of context switches
        assert c[0][-1] > 10_000 and c[1][-1] < 10_000
        assert (np.diff(c[0]) >= 0).all() and c[0][-1] > c[0][0]
