"""Generic patterns (time, execution, overhead, visits, imbalance) and the metric tree's inclusiveness."""

from __future__ import annotations

import numpy as np
import pytest

import tracefmt
from analyzer import analyze
from analyzer.replay import replay
from analyzer.analyze import compute_patterns, select_patterns


def val(cube, metric, path=None, loc=None):
    v = cube.values[metric]
    v = v[cube.find_cnodes(path)].sum(axis=0) if path is not None else v.sum(axis=0)
    return float(v[loc] if loc is not None else v.sum())


def test_overhead_and_execution():
    b = tracefmt.TraceBuilder()
    r0 = b.location(rank=0)
    b.enter(r0, 0.0, "main"); b.enter(r0, 2.0, "TRACING"); b.exit(r0, 3.0); b.exit(r0, 10.0)
    cube = analyze(b.build(), patterns=["time", "execution", "overhead", "visits"], plugins=False)
    assert val(cube, "time") == pytest.approx(10.0)
    assert val(cube, "overhead", "main/TRACING") == pytest.approx(1.0)
    assert val(cube, "execution") == pytest.approx(9.0)
    assert val(cube, "visits") == 2


def test_fork_and_join_spans_move_to_the_parallel_region():
    b = tracefmt.TraceBuilder()
    m, w = b.location(rank=0, thread=0), b.location(rank=0, thread=1)
    P = "!$omp parallel @p.c:3"
    b.enter(m, 0.0, "main"); b.enter(m, 1.0, "foo")
    b.fork(m, 2.0, 1, 2)
    b.enter(m, 2.5, P, team=1); b.enter(w, 3.0, P, team=1)
    b.exit(m, 6.0, P); b.exit(w, 6.5, P)
    b.join(m, 7.0, 1, 2)
    b.exit(m, 9.0, "foo"); b.exit(m, 10.0, "main")
    cube = analyze(b.build(), patterns=["time", "execution"], plugins=False)
    # master: fork span 0.5 + join span 1.0 leave foo (8 - 3.5 = 4.5 -> 3.0) for the parallel region (3.5 -> 5.0)
    assert val(cube, "time", "main/foo", m) == pytest.approx(3.0)
    assert val(cube, "time", f"main/foo/{P}", m) == pytest.approx(5.0)
    # worker: 3.5 in the region plus fork 1.0 and join 0.5
    assert val(cube, "time", f"main/foo/{P}", w) == pytest.approx(5.0)
    assert val(cube, "time", loc=m) == pytest.approx(10.0)
    assert val(cube, "execution") == pytest.approx(val(cube, "time"))


def test_imbalance():
    b = tracefmt.TraceBuilder()
    locs = [b.location(rank=r) for r in range(3)]
    for r, loc in enumerate(locs):
        b.enter(loc, 0.0, "main")
        b.enter(loc, 1.0, "work"); b.exit(loc, 2.0 + r, "work")
        if r == 0:
            b.enter(loc, 5.0, "serial"); b.exit(loc, 8.0, "serial")
        b.exit(loc, 10.0, "main")
    cube = analyze(b.build(), patterns=["imbalance_above_single", "imbalance_below_singularity"], plugins=False)
    # main: 6, 8, 7 (avg 7); work: 1, 2, 3 (avg 2); serial: 3, 0, 0 (avg 1, one participant)
    assert [val(cube, "imbalance_above", "main", l) for l in locs] == pytest.approx([0, 1, 0])
    assert [val(cube, "imbalance_below", "main", l) for l in locs] == pytest.approx([1, 0, 0])
    assert [val(cube, "imbalance_above", "main/work", l) for l in locs] == pytest.approx([0, 0, 1])
    assert [val(cube, "imbalance_above", "main/serial", l) for l in locs] == pytest.approx([2, 0, 0])
    assert [val(cube, "imbalance_below_bypass", "main/serial", l) for l in locs] == pytest.approx([0, 1, 1])
    assert val(cube, "imbalance_above_single") == pytest.approx(2.0)
    assert val(cube, "imbalance_below_singularity") == pytest.approx(2.0)
    assert val(cube, "imbalance_below_bypass") == pytest.approx(2.0)
    assert val(cube, "imbalance") == pytest.approx(8.0)


def test_imbalance_is_over_computation_not_over_mpi_and_openmp_waits():
    """Scalasca 2 (the Cube remapper over ``comp``): the waits an imbalance causes are not counted again.

    rank 0: work [0, 2], MPI_Barrier [2, 6.2], a parallel region [6.5, 9] whose master waits at a barrier
    [7, 8.5] while the worker (thread 1) waits [8.4, 8.5]; rank 1: work [0, 6], MPI_Barrier [6, 6.2].
    Computation: main 1.3 / 3.8 (rank 0 / rank 1), work 2 / 6, parallel region 1.0 / 2.4 / 0 (rank 0's threads,
    rank 1), nothing in the MPI_Barrier or the OpenMP barrier.
    """
    b = tracefmt.TraceBuilder()
    m, w, r1 = b.location(rank=0, thread=0), b.location(rank=0, thread=1), b.location(rank=1)
    P, B = "!$omp parallel @p.c:3", "!$omp barrier @p.c:5"
    for loc, t_work in ((m, 2.0), (r1, 6.0)):
        b.enter(loc, 0.0, "main"); b.enter(loc, 0.0, "work"); b.exit(loc, t_work, "work")
        b.collective(loc, t_work, 6.2, "MPI_Barrier")
    b.fork(m, 6.5, 1, 2)
    b.enter(m, 6.5, P, team=1); b.enter(w, 6.5, P, team=1)
    b.barrier(m, 7.0, 8.5); b.barrier(w, 8.4, 8.5)
    b.exit(m, 9.0, P); b.exit(w, 9.0, P)
    b.join(m, 9.0, 1, 2)
    b.exit(m, 10.0, "main"); b.exit(r1, 10.0, "main")
    cube = analyze(b.build(), patterns=["imbalance_above_single", "imbalance_below_singularity"], plugins=False)
    locs = [m, w, r1]
    avg_p = (1.0 + 2.4 + 0.0) / 3
    assert [val(cube, "imbalance_above", "main", l) for l in locs] == pytest.approx([0, 0, 1.25])
    assert [val(cube, "imbalance_below", "main", l) for l in locs] == pytest.approx([1.25, 0, 0])
    assert [val(cube, "imbalance_above", "main/work", l) for l in locs] == pytest.approx([0, 0, 2])
    assert [val(cube, "imbalance_below", "main/work", l) for l in locs] == pytest.approx([2, 0, 0])
    assert [val(cube, "imbalance_above", f"main/{P}", l) for l in locs] == pytest.approx([0, 2.4 - avg_p, 0])
    assert [val(cube, "imbalance_below", f"main/{P}", l) for l in locs] == pytest.approx([avg_p - 1.0, 0, avg_p])
    assert [val(cube, "imbalance_below_bypass", f"main/{P}", l) for l in locs] == pytest.approx([0, 0, avg_p])
    for waits in ("main/MPI_Barrier", f"main/{P}/{B}"):
        assert val(cube, "imbalance", waits) == 0.0
    assert val(cube, "imbalance_above") == pytest.approx(1.25 + 2 + 2.4 - avg_p)
    assert val(cube, "imbalance") == pytest.approx(2 * (1.25 + 2 + 2.4 - avg_p))
    assert val(cube, "imbalance_above_single") == val(cube, "imbalance_below_singularity") == 0.0


def test_metric_tree_is_inclusive_on_random_hybrid_traces():
    from random_hybrid_traces import random_trace  # tests/helpers (pytest's pythonpath)

    pats = select_patterns(None, plugins=False)
    by_name = {p.name: p for p in pats}
    for seed in range(4):
        ctx = replay(random_trace(100 + seed, n_ranks=3, n_threads=3, steps=30))
        compute_patterns(ctx, pats)
        for p in pats:
            if p.parent is None:
                continue
            child, parent = ctx.results[p.name], ctx.results[p.parent]
            assert (child >= -1e-12).all(), p.name
            if p.unit == "sec" and by_name[p.parent].unit == "sec":
                # time values: a child never exceeds its parent at any (call path, location)
                assert (child <= parent + 1e-9).all(), (p.name, p.parent)
            else:
                assert child.sum() <= parent.sum() + 1e-9, (p.name, p.parent)


def test_a_master_that_forked_outside_every_call_gives_no_span_back():
    """One management_shift for time and idle threads: the fork/join spans go to the parallel region and
    are taken back only from a call path that counted them (here there is none: the FORK is outside every
    call, so the replay adds a synthetic root that must not go negative)."""
    from patterns.generic import management_shift

    b = tracefmt.TraceBuilder()
    m, w = b.location(rank=0, thread=0), b.location(rank=0, thread=1)
    P = "!$omp parallel @p.c:3"
    b.fork(m, 1.0, 1, 2)
    b.enter(m, 1.5, P, team=1); b.enter(w, 2.0, P, team=1)
    b.exit(m, 5.0, P); b.exit(w, 5.5, P)
    b.join(m, 6.0, 1, 2)
    b.enter(m, 7.0, "main"); b.exit(m, 8.0, "main")
    ctx = replay(b.build())
    assert ctx.synthetic_root
    shift = management_shift(ctx)
    par = ctx.calltree.region.tolist().index(ctx.region_name.index(P))
    # master: fork 0.5 + join 1.0; worker: fork 1.0 + join 0.5; nothing negative anywhere
    assert shift[par].tolist() == pytest.approx([1.5, 1.5])
    assert (shift >= 0).all() and shift.sum() == pytest.approx(3.0)
    cube = analyze(b.build(), patterns=["time", "omp_idle_threads"], plugins=False)
    assert val(cube, "time", f"<program>/{P}", m) == pytest.approx(3.5 + 1.5)
    assert val(cube, "time", f"<program>/{P}", w) == pytest.approx(3.5 + 1.5)
    assert val(cube, "time", "<program>", m) == 0.0
    assert val(cube, "omp_idle_threads", "<program>/main", w) == pytest.approx(1.0)  # the master's serial time
