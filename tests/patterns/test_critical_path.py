"""The critical path: the numba backward replay against its slow reference on random traces, and on
hand-built traces against values worked out by hand (tests/patterns/delay_traces.py tells each story;
Scalasca 2.6 gives the same numbers for the three it can read, see tests/patterns/test_scalasca_oracle.py)."""

from __future__ import annotations

import numpy as np
import pytest
from random_hybrid_traces import random_trace

import backward_reference as ref
import delay_traces as T
from analyzer import analyze
from patterns.kernels.backward import critical_path

CP = "critical_path,performance_impact,critical_path_activities,critical_imbalance_impact,inter_partition_imbalance," \
     "intra_partition_imbalance,non_critical_path_activities"


@pytest.mark.parametrize("seed", range(10))
def test_critical_path_kernel_matches_reference(seed):
    ctx, inp = ref.random_inputs(seed)
    sev = np.zeros((ctx.n_cnodes, ctx.n_locations))
    length = critical_path(inp, sev)
    mine = {(c, l): sev[c, l] for c, l in zip(*np.nonzero(sev))}
    ref.assert_close(mine, ref.critical_path(inp))
    assert length == pytest.approx(sev.sum())
    assert length > 0


def _cells(cube, metric):
    v = cube.values[metric]
    return {(cube.callpaths[c], int(l)): round(float(v[c, l]), 9) for c, l in zip(*np.nonzero(np.round(v, 12)))}


@pytest.fixture(scope="module")
def cubes():
    return {name: analyze(make().build(), plugins=False, patterns=CP) for name, make in T.TRACES.items()}


def test_chain_of_waits(cubes):
    c = cubes["chain_of_waits"]
    # path: from rank 2 entering MPI_Finalize (8 s) back through its receive (5 s, 3 waited) to rank 1's send,
    # through rank 1's receive (4 s, 3 waited) to rank 0's send, then rank 0's work and MPI_Init
    assert _cells(c, "critical_path") == {("main/MPI_Recv", 2): 2.0, ("main/MPI_Recv", 1): 1.0,
                                         ("main/work", 0): 4.0, ("main/MPI_Init", 0): 1.0}
    assert c.total("critical_path") == pytest.approx(8.0)
    # activities: the path's time per call path, at most each location's own (wait-free) time there
    assert _cells(c, "critical_path_activities")[("main/work", 1)] == 1.0
    assert _cells(c, "critical_path_activities")[("main/work", 0)] == 4.0
    # the 6 s of waiting (Σ path - Σ own time per location) go to the path's call paths
    assert c.total("critical_imbalance_impact") == pytest.approx(2.0)


def test_wait_at_the_first_event(cubes):
    c = cubes["wait_at_first_event"]
    # no MPI_Finalize: the path starts where the last location ends (rank 1 at 3.5 s); no MPI_Init: it runs
    # to the start; rank 1's receive (3.5 s, 2 waited) then rank 0's work
    assert _cells(c, "critical_path") == {("<program>/MPI_Recv", 1): 1.5, ("<program>/work", 0): 2.0}


def test_equal_arrivals_and_several_communicators(cubes):
    c = cubes["ties_and_communicators"]
    # MPI_Finalize: all enter at 7, the lowest rank counts as the last one (MPI_MAXLOC); rank 0 waited 1 s at
    # the world barrier, where ranks 1 and 2 arrived last together: the path goes to rank 1 (lowest rank),
    # which waited 1 s at the pair barrier for rank 0
    assert _cells(c, "critical_path") == {("main/MPI_Barrier", 0): 1.0, ("main/work", 1): 2.0,
                                         ("main/MPI_Barrier", 1): 1.0, ("main/work", 0): 2.0,
                                         ("main/MPI_Init", 0): 1.0}


def test_openmp_barrier_and_fork(cubes):
    c = cubes["openmp_team"]
    # from the master's end back to the barrier where it waited 1 s; the worker arrived last: its compute
    # (3.5 s) and fork latency (0.5 s) back to the fork, then the master from the fork to the start
    assert _cells(c, "critical_path") == {
        ("main", 0): 1.0, ("main/work", 0): 2.0, ("main/serial", 0): 2.0,
        ("main/!$omp parallel @t.c:10", 0): 0.5, ("main/!$omp parallel @t.c:10/!$omp implicit barrier @t.c:20", 0): 0.5,
        ("main/!$omp parallel @t.c:10", 1): 0.5, ("main/!$omp parallel @t.c:10/compute", 1): 3.5}
    assert c.total("critical_path") == pytest.approx(10.0)
    # master and worker are different partitions: the master's serial work is headroom for the worker
    assert c.total("inter_partition_imbalance") > 0


def test_metric_tree_is_scalascas_and_inclusive(cubes):
    c = cubes["chain_of_waits"]
    parent = {m.name: m.parent for m in c.metrics}
    assert parent["critical_path"] is None and parent["performance_impact"] is None
    assert parent["critical_path_activities"] == parent["critical_imbalance_impact"] == "performance_impact_criticalpath"
    assert parent["inter_partition_imbalance"] == parent["intra_partition_imbalance"] == "critical_imbalance_impact"
    assert parent["non_critical_path_activities"] == "performance_impact"
    for cube in cubes.values():
        imp = cube.values["performance_impact"]
        parts = cube.values["critical_path_activities"] + cube.values["critical_imbalance_impact"] + \
            cube.values["non_critical_path_activities"]
        assert np.allclose(imp, parts)


@pytest.mark.parametrize("name", sorted(T.TRACES))
def test_parallel_replay_gives_identical_results(name):
    trace = T.TRACES[name]().build()
    a = analyze(trace, plugins=False, patterns=CP)
    b = analyze(trace, plugins=False, patterns=CP, jobs=2)
    for m in a.metric_names:
        assert np.array_equal(a.values[m], b.values[m]), m


@pytest.mark.parametrize("seed", range(3))
def test_parallel_replay_identical_on_random_traces(seed):
    trace = random_trace(seed, n_ranks=4, n_threads=2, steps=30)
    a = analyze(trace, plugins=False, patterns=CP)
    b = analyze(trace, plugins=False, patterns=CP, jobs=2)
    for m in a.metric_names:
        assert np.array_equal(a.values[m], b.values[m]), m
