"""OpenMP patterns end to end: TraceBuilder trace -> replay -> patterns.

One hybrid trace with two processes, written so that every OpenMP property
has a known value (times are multiples of 1/8 s; the expected numbers in
the comments and tables are worked out by hand from the event times):

process 0, threads a0 a1 a2, one team of three
    a0: main 0-8; init 0-1 (serial); FORK 1.0; JOIN 6.75; fin 6.75-7.75 (serial)
    parallel @x.c:1      enter a0 1.25  a1 1.5   a2 1.25   exit a0 6.5  a1 6.5  a2 6.625
      for @x.c:2         from the parallel's enter
        ibarrier @x.c:2  enter a0 3.0   a1 2.5   a2 4.0    exit 4.25 (all; then the for ends)
      critical (x)       enter a0 4.25  a1 4.5   a2 4.25   lock held a0 4.25-4.75, a1 4.75-5.0, a2 5.0-5.25
      barrier @x.c:5     enter a0 4.75  a1 5.0   a2 5.25   exit 5.5
      omp_set_lock(L)    a0 5.5-5.5 (free), a1 5.5-6.0 (waits for a0's unset at 6.0)
      omp_unset_lock(L)  a0 6.0, a1 6.25 (both zero length)
      ibarrier @x.c:1    enter a0 6.0   a1 6.25  a2 5.5    exit 6.5

process 1, threads b0 b1
    b0: main 0-5
    parallel @y.c:1      a team of one: b0 0.5-2.5 (FORK 0.5, JOIN 2.5); b1 absent
    parallel @y.c:9      FORK 3.0, both enter 3.0; ibarrier @y.c:9 enter b0 4.0, b1 3.5, exit 4.0; JOIN 4.0
"""

from __future__ import annotations

import numpy as np
import pytest

import tracefmt
from analyzer.replay import replay
from patterns import load_patterns, omp
from tracefmt.layout import LockKind

P1, F, IB1, C, CB, EB, IB2 = ("!$omp parallel @x.c:1", "!$omp for @x.c:2", "!$omp ibarrier @x.c:2",
                              "!$omp critical (x)", "!$omp critical sblock (x)", "!$omp barrier @x.c:5",
                              "!$omp ibarrier @x.c:1")
Q1, Q2, IBQ = "!$omp parallel @y.c:1", "!$omp parallel @y.c:9", "!$omp ibarrier @y.c:9"


def build_trace():
    b = tracefmt.TraceBuilder()
    a0, a1, a2 = (b.location(rank=0, thread=t) for t in range(3))
    b0, b1 = (b.location(rank=1, thread=t) for t in range(2))
    crit = b.lock("x", LockKind.OMP_CRITICAL)
    lk = b.lock("L", LockKind.OMP_LOCK)

    # ---- process 0
    b.enter(a0, 0.0, "main")
    b.enter(a0, 0.0, "init"); b.exit(a0, 1.0, "init")
    b.fork(a0, 1.0, team=1, size=3)
    for loc, t, num in ((a0, 1.25, 0), (a1, 1.5, 1), (a2, 1.25, 2)):
        b.enter(loc, t, P1, team=1, thread_num=num)
        b.enter(loc, t, F)
    for loc, t in ((a0, 3.0), (a1, 2.5), (a2, 4.0)):
        b.enter(loc, t, IB1)
        b.omp_coll_exit(loc, 4.25, IB1)
        b.omp_coll_exit(loc, 4.25, F)
    for loc, enter, got, done in ((a0, 4.25, 4.25, 4.75), (a1, 4.5, 4.75, 5.0), (a2, 4.25, 5.0, 5.25)):
        b.enter(loc, enter, C); b.acquire(loc, got, crit)
        b.enter(loc, got, CB); b.exit(loc, done, CB)
        b.release(loc, done, crit); b.exit(loc, done, C)
    for loc, t in ((a0, 4.75), (a1, 5.0), (a2, 5.25)):
        b.enter(loc, t, EB)
        b.omp_coll_exit(loc, 5.5, EB)
    b.enter(a0, 5.5, "omp_set_lock"); b.acquire(a0, 5.5, lk); b.exit(a0, 5.5, "omp_set_lock")
    b.enter(a1, 5.5, "omp_set_lock"); b.acquire(a1, 6.0, lk); b.exit(a1, 6.0, "omp_set_lock")
    b.enter(a0, 6.0, "omp_unset_lock"); b.release(a0, 6.0, lk); b.exit(a0, 6.0, "omp_unset_lock")
    b.enter(a1, 6.25, "omp_unset_lock"); b.release(a1, 6.25, lk); b.exit(a1, 6.25, "omp_unset_lock")
    for loc, t, leave in ((a0, 6.0, 6.5), (a1, 6.25, 6.5), (a2, 5.5, 6.625)):
        b.enter(loc, t, IB2)
        b.omp_coll_exit(loc, 6.5, IB2)
        b.omp_coll_exit(loc, leave, P1)
    b.join(a0, 6.75, team=1, size=3)
    b.enter(a0, 6.75, "fin"); b.exit(a0, 7.75, "fin")
    b.exit(a0, 8.0, "main")

    # ---- process 1
    b.enter(b0, 0.0, "main")
    b.fork(b0, 0.5, team=1, size=1)
    b.enter(b0, 0.5, Q1, team=1, thread_num=0)
    b.omp_coll_exit(b0, 2.5, Q1)
    b.join(b0, 2.5, team=1, size=1)
    b.fork(b0, 3.0, team=2, size=2)
    for loc, num, t in ((b0, 0, 4.0), (b1, 1, 3.5)):
        b.enter(loc, 3.0, Q2, team=2, thread_num=num)
        b.enter(loc, t, IBQ)
        b.omp_coll_exit(loc, 4.0, IBQ)
        b.omp_coll_exit(loc, 4.0, Q2)
    b.join(b0, 4.0, team=2, size=2)
    b.exit(b0, 5.0, "main")
    return b.build(), dict(a0=a0, a1=a1, a2=a2, b0=b0, b1=b1)


@pytest.fixture(scope="module")
def analysed():
    trace, locs = build_trace()
    ctx = replay(trace)
    for p in load_patterns(plugins=False):
        res = p.compute(ctx)
        ctx.results[p.name] = res if isinstance(res, np.ndarray) else res.to_dense(ctx.n_cnodes, ctx.n_locations)
    paths = {ctx.calltree.path(c, ctx.region_name): c for c in range(ctx.n_cnodes)}
    return ctx, paths, locs


def cells(analysed, name):
    """The non-zero cells of a result as {(call path, location name): value}."""
    ctx, paths, locs = analysed
    by_cnode = {c: p for p, c in paths.items()}
    by_loc = {v: k for k, v in locs.items()}
    r = ctx.results[name]
    return {(by_cnode[c], by_loc[loc]): float(r[c, loc]) for c, loc in zip(*np.nonzero(np.abs(r) > 1e-12))}


def check(analysed, name, want):
    got = cells(analysed, name)
    assert got.keys() == want.keys(), name
    for k, v in want.items():
        assert got[k] == pytest.approx(v, abs=1e-9), (name, k)


M = "main"
MP = f"main/{P1}"


def test_fork_and_management(analysed):
    check(analysed, "omp_fork", {(MP, "a0"): 0.25, (MP, "a1"): 0.5, (MP, "a2"): 0.25})
    # plus the join spans: 6.75 - 6.5, 6.75 - 6.5, 6.75 - 6.625
    check(analysed, "omp_management", {(MP, "a0"): 0.5, (MP, "a1"): 0.75, (MP, "a2"): 0.375})


def test_barrier_times_and_waits(analysed):
    ib1, ib2, ibq, eb = f"{MP}/{F}/{IB1}", f"{MP}/{IB2}", f"main/{Q2}/{IBQ}", f"{MP}/{EB}"
    check(analysed, "omp_ibarrier_wait", {
        (ib1, "a0"): 1.0, (ib1, "a1"): 1.5,  # latest enter 4.0 (a2)
        (ib2, "a0"): 0.25, (ib2, "a2"): 0.75,  # latest enter 6.25 (a1)
        (ibq, "b1"): 0.5,
    })
    check(analysed, "omp_ibarrier", {
        (ib1, "a0"): 1.25, (ib1, "a1"): 1.75, (ib1, "a2"): 0.25,
        (ib2, "a0"): 0.5, (ib2, "a1"): 0.25, (ib2, "a2"): 1.0,
        (ibq, "b1"): 0.5,
    })
    check(analysed, "omp_ebarrier_wait", {(eb, "a0"): 0.5, (eb, "a1"): 0.25})
    check(analysed, "omp_ebarrier", {(eb, "a0"): 0.75, (eb, "a1"): 0.5, (eb, "a2"): 0.25})


def test_critical_and_lock_contention(analysed):
    c, setl = f"{MP}/{C}", f"{MP}/omp_set_lock"
    # critical time is the construct without its body: all of it waiting here
    check(analysed, "omp_critical", {(c, "a1"): 0.25, (c, "a2"): 0.75})
    check(analysed, "omp_lock_contention_critical", {(c, "a1"): 0.25, (c, "a2"): 0.75})
    check(analysed, "omp_lock_api", {(setl, "a1"): 0.5})
    check(analysed, "omp_lock_contention_api", {(setl, "a1"): 0.5})


def test_idle_threads_and_limited_parallelism(analysed):
    # process 0: the master's serial time at main is 0.75 minus its 0.5 of fork/join spans
    want = {(M, w): 0.25 for w in ("a1", "a2")}
    want.update({(f"main/{r}", w): 1.0 for r in ("init", "fin") for w in ("a1", "a2")})
    # process 1: main 0-0.5, 2.5-3.0, 4.0-5.0 on the master; Q1 ran with the master alone
    want[(M, "b1")] = 2.0
    want[(f"main/{Q1}", "b1")] = 2.0
    check(analysed, "omp_idle_threads", want)
    check(analysed, "omp_limited_parallelism", {(f"main/{Q1}", "b1"): 2.0})


def test_values_are_inclusive_along_the_metric_tree(analysed):
    ctx, _, _ = analysed
    parents = {cls.name: cls.parent for cls in omp.PATTERNS}
    for child, parent in parents.items():
        assert np.all(ctx.results[child] <= ctx.results[parent] + 1e-9), (child, parent)
    # omp_time: synchronization + management here (no flush)
    np.testing.assert_allclose(
        ctx.results["omp_time"], ctx.results["omp_synchronization"] + ctx.results["omp_management"], atol=1e-9
    )
    # the idle time is part of the total time
    assert ctx.results["time"].sum() == pytest.approx(
        ctx.results["execution"].sum() + ctx.results["overhead"].sum() + ctx.results["omp_idle_threads"].sum()
    )
