"""Delay costs on hand-built traces, against values worked out by hand (the critical paths of the same
traces: tests/patterns/test_critical_path.py).

Each trace is in tests/patterns/delay_traces.py with its story; the numbers below follow from the
definitions in patterns/critical_path.py and patterns/delay.py (Scalasca 2.6), step by step in the
comments.  Scalasca 2.6 itself gives the same numbers for the three traces it can read (they are
among the oracle traces of tests/patterns/test_scalasca_oracle.py).
"""

from __future__ import annotations

import numpy as np
import pytest

import delay_traces as T
from analyzer import analyze
from patterns import check_subset_rule
from patterns.delay import PATTERNS

DELAY = [p.name for p in PATTERNS]


def _cells(cube, metric):
    v = cube.values[metric]
    return {(cube.callpaths[c], int(l)): round(float(v[c, l]), 9) for c, l in zip(*np.nonzero(np.round(v, 12)))}


@pytest.fixture(scope="module")
def cubes():
    return {name: analyze(make().build(), plugins=False, patterns=DELAY) for name, make in T.TRACES.items()}


def test_chain_of_waits(cubes):
    c = cubes["chain_of_waits"]
    # rank 1 waits 3 s: rank 0 worked 4 s against its 1 s since MPI_Init -> 3 s at rank 0's work (scale 1).
    # rank 2 waits 3 s: rank 1's interval holds work 1, MPI_Recv 4 of which 3 are waiting; against rank 2's
    # work 2 the delay is MPI_Recv 1 s, so 3 / (1 + 3) = 0.75 of it is short-term cost and rank 1's own wait
    # carries 0.75 x 3 = 2.25 s onwards: long-term cost at rank 0's work (2.25 / 3 of its 3 s delay)
    assert _cells(c, "delay_latesender") == {("main/work", 0): 3.0, ("main/MPI_Recv", 1): 0.75}
    assert _cells(c, "delay_latesender_longterm") == {("main/work", 0): 2.25}
    assert c.total("delay") == pytest.approx(6.0)  # = all the waiting (3 + 3)
    assert c.total("delay_latesender_aggregate") == pytest.approx(6.0)


def test_wait_at_the_first_event(cubes):
    c = cubes["wait_at_first_event"]
    # no earlier synchronisation: both intervals start at the beginning; rank 1 had nothing before
    assert _cells(c, "delay_latesender") == {("<program>/work", 0): 2.0}
    assert c.total("delay_latesender_longterm") == 0.0


def test_equal_arrivals_and_several_communicators(cubes):
    c = cubes["ties_and_communicators"]
    # ranks 1 and 2 arrive last at the world barrier together: the lowest rank (1) counts as the latest
    # world barrier, caused by rank 1: rank 0 (last synchronised with rank 1 at the pair barrier) waited 1 s
    # for rank 1's extra 1 s of work; rank 3 waited 2 s: rank 1's interval since MPI_Init holds 1 s of its
    # own waiting and 1 s more MPI_Barrier than rank 3 -> 2 / (1 + 1) x 1 s short-term at MPI_Barrier, the
    # other second propagates to rank 1's wait at the pair barrier, caused by rank 0's extra second of work
    assert _cells(c, "delay_barrier") == {("main/work", 1): 1.0, ("main/MPI_Barrier", 1): 1.0,
                                         ("main/work", 0): 1.0}
    assert _cells(c, "delay_barrier_longterm") == {("main/work", 0): 1.0}
    assert c.total("delay") == pytest.approx(4.0)  # rank 0: 1, rank 3: 2, rank 1: 1 waited


def test_openmp_barrier_and_idle_threads(cubes):
    c = cubes["openmp_team"]
    # the master waited 1 s: the worker's 0.5 s later start (its fork latency) and 0.5 s longer compute
    assert _cells(c, "delay_ompbarrier") == {("main/!$omp parallel @t.c:10", 1): 0.5,
                                            ("main/!$omp parallel @t.c:10/compute", 1): 0.5}
    # the worker idles while the master works alone: 2 s before the fork, 3 s after the join (x 1 worker)
    assert _cells(c, "delay_ompidle") == {("main/work", 0): 2.0, ("main/serial", 0): 2.0, ("main", 0): 1.0}


def test_metric_tree_is_scalascas_and_inclusive(cubes):
    c = cubes["chain_of_waits"]
    parent = {m.name: m.parent for m in c.metrics}
    assert parent["delay_latesender"] == "delay_latesender_aggregate"
    assert parent["delay_latesender_aggregate"] == "delay_p2p"
    assert parent["delay_p2p"] == parent["delay_collective"] == "delay_mpi"
    assert parent["delay_ompidle_aggregate"] == "delay_omp"
    assert parent["delay_mpi"] == parent["delay_omp"] == "delay"
    assert parent["delay"] is None
    for cube in cubes.values():
        ctx = cube.context
        check_subset_rule(ctx, [m for m in _patterns() if m.name in ctx.results])


def _patterns():
    from patterns.registry import load_patterns

    return load_patterns(plugins=False)


@pytest.mark.parametrize("name", sorted(T.TRACES))
def test_parallel_replay_gives_identical_results(name):
    trace = T.TRACES[name]().build()
    a = analyze(trace, plugins=False, patterns=DELAY)
    b = analyze(trace, plugins=False, patterns=DELAY, jobs=2)
    for m in a.metric_names:
        assert np.array_equal(a.values[m], b.values[m]), m
