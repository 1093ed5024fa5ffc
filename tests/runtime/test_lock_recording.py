"""OpenMP lock hand-over, lock-API regions and nowait constructs on the OMPT path, end to end.

* lock_stress.c: 4 threads hand three locks (unnamed critical, named critical, omp_lock_t) to each other
  thousands of times.  OMPT reports a release only after the lock is free, so without the hand-over
  repair (src/locks.c, xt_lock_acquire/xt_lock_release) releases carried the next holder's order and
  acquisitions were stamped a few ns before the previous release; tracefmt.validate caught that in
  10 of 12 runs of 1000 iterations.
* omp_test_locks.c: omp_test_lock / omp_test_nest_lock are their own regions; a failed test records
  no acquisition; a nest lock re-set by its owner is no acquisition.
* omp_nowait_end.c: a nowait construct at the end of a parallel region closes before the region's
  closing barrier, which is a child of the parallel region.

Expected counts come from the samples' source (see their header comments).
"""
from __future__ import annotations

from collections import Counter

import pytest

import tracefmt
from runtime_harness import EXPERT_RUN, SAMPLES, assert_valid, events, need, run
from tracefmt.layout import EventType, LockKind, Role

pytestmark = pytest.mark.runtime

STRESS_ITER = 2000  # per thread and lock: 3 locks x 4 threads x 2000 = 24000 hand-overs per run
STRESS_RUNS = 3

COMPILERS = ["clang", "gcc"]  # gcc: libgomp program run on LLVM libomp by expert-run


def build(compiler, sample, d):
    need(compiler)
    exe = d / f"{sample}_{compiler}"
    run([compiler, "-fopenmp", "-g", "-O1", str(SAMPLES / f"{sample}.c"), "-o", str(exe)], cwd=d)
    return exe


def trace_of(exe, d, name, *args):
    p = run([str(EXPERT_RUN), "-o", name, str(exe), *map(str, args)], cwd=d)
    return tracefmt.open(str(d / name)), p.stdout


def enters_with_parent(trace, loc):
    """(ENTER event, name of the enclosing region or None) for every ENTER of one location."""
    out, stack = [], []
    for e in events(trace, loc):
        if e[0] == EventType.ENTER:
            out.append((e, stack[-1] if stack else None))
            stack.append(e[1])
        elif e[0] in (EventType.EXIT, EventType.OMP_COLLEXIT, EventType.MPI_COLLEXIT):
            stack.pop()
    return out


# ---------------------------------------------------------------- hand-over under contention
@pytest.mark.parametrize("compiler", COMPILERS)
def test_lock_hand_over_is_consistent_under_contention(runtime_built, tmp_path, compiler):
    exe = build(compiler, "lock_stress", tmp_path)
    for k in range(STRESS_RUNS):
        trace, out = trace_of(exe, tmp_path, f"s{k}.elg", STRESS_ITER)
        assert out.split() == [str(4 * STRESS_ITER)] * 3
        # orders 1..n per lock, releases with the holder's order, no acquisition before the
        # previous release: all checked by the validator
        assert_valid(trace)
        acquisitions = Counter()
        releases = Counter()
        for loc in trace.location_ids:
            ev = trace.events(int(loc))
            acq = ev.type == int(EventType.OMP_ACQUIRE_LOCK)
            rel = ev.type == int(EventType.OMP_RELEASE_LOCK)
            acquisitions.update(int(a) for a in ev.a[acq])
            releases.update(int(a) for a in ev.a[rel])
        kinds = Counter(trace.defs.locks[lock].kind for lock in acquisitions)
        assert kinds == {LockKind.OMP_CRITICAL: 2, LockKind.OMP_LOCK: 1}
        assert set(acquisitions.values()) == {4 * STRESS_ITER}
        assert releases == acquisitions


# ---------------------------------------------------------------- omp_test_lock, nest locks
@pytest.mark.parametrize("compiler", COMPILERS)
def test_test_lock_calls_are_their_own_regions(runtime_built, tmp_path, compiler):
    exe = build(compiler, "omp_test_locks", tmp_path)
    trace, out = trace_of(exe, tmp_path, "t.elg")
    assert out.split() == ["0", "1", "0", "2", "1"]
    assert_valid(trace)
    regions = {r.name: r for r in trace.defs.regions.values()}
    for name in ("omp_test_lock", "omp_test_nest_lock"):
        assert regions[name].role == Role.OMP_LOCK_API
    api = ("omp_set_lock", "omp_unset_lock", "omp_test_lock",
           "omp_set_nest_lock", "omp_unset_nest_lock", "omp_test_nest_lock")
    expected = {
        0: {"omp_set_lock": 1, "omp_unset_lock": 1, "omp_set_nest_lock": 2, "omp_test_nest_lock": 1,
            "omp_unset_nest_lock": 3},
        1: {"omp_test_lock": 2, "omp_unset_lock": 1, "omp_test_nest_lock": 2, "omp_unset_nest_lock": 1},
    }
    by_thread = {trace.defs.locations[int(loc)].thread: int(loc) for loc in trace.location_ids}
    simple = next(k for k, lock in trace.defs.locks.items() if lock.kind == LockKind.OMP_LOCK)
    nest = next(k for k, lock in trace.defs.locks.items() if lock.kind == LockKind.OMP_NEST_LOCK)
    for thread, counts in expected.items():
        ev = events(trace, by_thread[thread])
        assert Counter(e[1] for e in ev if e[0] == EventType.ENTER and e[1] in api) == counts
        acq = [(e[2], e[5]) for e in ev if e[0] == EventType.OMP_ACQUIRE_LOCK]
        rel = [(e[2], e[5]) for e in ev if e[0] == EventType.OMP_RELEASE_LOCK]
        order = 1 if thread == 0 else 2  # thread 0 takes both locks first
        assert acq == [(simple, order), (nest, order)]
        assert rel == acq
    # the successful tests: the acquisition lies inside the test region
    for e, parent in enters_with_parent(trace, by_thread[1]):
        assert parent != "omp_set_lock"
    ev = events(trace, by_thread[1])
    for i, e in enumerate(ev):
        if e[0] == EventType.OMP_ACQUIRE_LOCK:
            assert ev[i - 1][0] == EventType.ENTER and ev[i - 1][1] in ("omp_test_lock", "omp_test_nest_lock")
            assert ev[i + 1][0] == EventType.EXIT and ev[i + 1][1] == ev[i - 1][1]


# ---------------------------------------------------------------- nowait at the end of a parallel region
def parallel_instances(trace, loc):
    """Per parallel-region instance on one location: its ENTERs with their enclosing region names."""
    out = []
    for e, parent in enters_with_parent(trace, loc):
        if e[1].startswith("!$omp parallel"):
            out.append([])
        elif out:
            out[-1].append((e, parent))
    return out


def check_nowait_closes_before_parallel_barrier(trace, instance, construct):
    """instance: the ENTERs of one parallel region on one location."""
    names = [e[1] for e, _ in instance]
    i = next(k for k, n in enumerate(names) if n.startswith(construct))
    barrier, parent = instance[-1]
    assert barrier[1].startswith("!$omp ibarrier")
    assert parent.startswith("!$omp parallel")  # a child of the parallel region, not of the construct
    # the parallel region's own barrier: named after the parallel construct's source line
    assert barrier[1].split(" @")[-1] == parent.split(" @")[-1]
    assert not [n for n in names[i + 1:-1] if n.startswith("!$omp ibarrier")]


@pytest.fixture(scope="module")
def nowait_clang(runtime_built, tmp_path_factory):
    d = tmp_path_factory.mktemp("nowait")
    exe = build("clang", "omp_nowait_end", d)
    trace, out = trace_of(exe, d, "n.elg")
    assert out.strip() == "1503"
    return trace


def test_nowait_constructs_close_before_the_parallel_barrier(nowait_clang):
    trace = nowait_clang
    assert_valid(trace)
    for loc in trace.location_ids:
        inst = parallel_instances(trace, int(loc))
        assert len(inst) == 4
        check_nowait_closes_before_parallel_barrier(trace, inst[0], "!$omp for")
        check_nowait_closes_before_parallel_barrier(trace, inst[1], "!$omp sections")
        check_nowait_closes_before_parallel_barrier(trace, inst[2], "!$omp single")
        # control: a loop with its own barrier keeps it inside, then the parallel region's barrier follows
        (loop, _), (own, own_parent), (last, last_parent) = inst[3][0], inst[3][1], inst[3][-1]
        assert loop[1].startswith("!$omp for") and own[1].startswith("!$omp ibarrier") and own_parent == loop[1]
        assert last[1].startswith("!$omp ibarrier") and last_parent.startswith("!$omp parallel")


def test_nowait_region_end_barrier_of_workers_is_clamped(nowait_clang):
    """The closing barrier after a nowait loop is the region's: a worker's end is clamped to the
    master's (libomp reports it only when the worker is reused, here after a 20 ms pause)."""
    trace = nowait_clang
    by_thread = {trace.defs.locations[int(loc)].thread: int(loc) for loc in trace.location_ids}
    join = next(e[7] for e in events(trace, by_thread[0]) if e[0] == EventType.OMP_JOIN)
    for thread in (1, 2):
        ev = events(trace, by_thread[thread])
        first_exit = next(e for e in ev if e[0] == EventType.EXIT and e[1].startswith("!$omp parallel"))
        assert first_exit[7] <= join + 1e-6


def test_nowait_constructs_of_gcc_code_close_before_the_parallel_barrier(runtime_built, tmp_path):
    """GCC code on libomp: libomp reports sections as a loop (the runtime's GOMP_parallel_sections wrapper
    makes them sections again) and a single without its end; a loop followed by the end of the region
    gets no barrier of its own from GCC (it relies on the region's)."""
    exe = build("gcc", "omp_nowait_end", tmp_path)
    trace, out = trace_of(exe, tmp_path, "g.elg")
    assert out.strip() == "1503"
    assert_valid(trace)
    for loc in trace.location_ids:
        inst = parallel_instances(trace, int(loc))
        assert len(inst) == 4
        for k, construct in enumerate(["!$omp for", "!$omp sections", "!$omp single", "!$omp for"]):
            check_nowait_closes_before_parallel_barrier(trace, inst[k], construct)
