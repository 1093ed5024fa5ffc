"""POSIX threads recorded by the preloaded runtime (format 2.1; runtime/src/pthreads.c; issue 16 item 2).

samples/runtime/pthreads.c: 4 threads contending for a mutex with a designed 6 units of waiting per round,
a producer/consumer pair on a condition variable, a recursive mutex and trylocks, and hundreds of
short-lived threads created and joined two at a time.  The trace must be consistent (thread lifetimes,
joins, lock hand-over orders), a thread's location reused by later threads, the designed contention found
on its call path within 20 %, and threads created by the OpenMP runtime must not be recorded as pthreads.
"""
from __future__ import annotations

import time

import pytest

import analyzer
import tracefmt
from runtime_harness import EXPERT_RUN, SAMPLES, assert_valid, need, run
from tracefmt.layout import EventType, LockKind, Paradigm

pytestmark = pytest.mark.runtime

UNIT = 0.020
# critical sections entered: contention 4 x 3 rounds, cond 5 + 5, recursive 2, churn 400
ENTERED = 12 + 10 + 2 + 400
THREADS = 4 + 2 + 400


@pytest.fixture(scope="module", params=["gcc", "clang"])
def built(request, runtime_built, tmp_path_factory):
    cc = request.param
    need(cc)
    d = tmp_path_factory.mktemp(f"pthreads_{cc}")
    run([cc, "-g", "-O1", "-pthread", str(SAMPLES / "pthreads.c"), "-o", "pt"], cwd=d)
    return cc, d


@pytest.fixture(scope="module")
def traced(built):
    cc, d = built
    p = run([str(EXPERT_RUN), "-o", "pt.elg", "./pt"], cwd=d)
    assert p.stdout.strip() == str(ENTERED)
    return cc, tracefmt.open(str(d / "pt.elg"))


def counts(trace):
    c = {t: 0 for t in (EventType.THREAD_CREATE, EventType.THREAD_BEGIN, EventType.THREAD_END,
                        EventType.THREAD_JOIN)}
    for loc in trace.location_ids.tolist():
        ev = trace.events(loc)
        for t in c:
            c[t] += int((ev.type == t).sum())
    return c


def test_threads_and_locks_are_consistent(traced):
    """validator clean: every created thread begins after its creation and ends, is joined once after its
    end; lifetimes on a location follow each other; mutex orders 1..n, no acquisition before the previous
    release, a recursive relock is no acquisition"""
    cc, trace = traced
    assert_valid(trace)
    assert set(counts(trace).values()) == {THREADS}
    # 406 threads, at most 4 at a time: the locations of ended threads are reused
    assert len(trace.location_ids) <= 1 + 4
    kinds = {lk.kind for lk in trace.defs.locks.values()}
    assert kinds == {LockKind.PTHREAD_MUTEX}
    regions = {r.name: r for r in trace.defs.regions.values()}
    for name in ("pthread_create", "pthread_join", "pthread_mutex_lock", "pthread_mutex_unlock",
                 "pthread_mutex_trylock", "pthread_cond_wait", "pthread_cond_signal"):
        assert regions[name].paradigm == Paradigm.PTHREAD, name


def test_designed_mutex_contention_on_its_call_path(traced):
    cc, trace = traced
    cube = analyzer.analyze(trace)
    got = {p.split("/", 1)[1]: v for p, v in cube.per_callpath("pthread_lock_contention_mutex_lock").items() if v}
    want = 3 * 6 * UNIT
    assert 0.8 * want <= got.get("pthread_create/contention_worker/pthread_mutex_lock", 0.0) <= 1.2 * want, (cc, got)
    # every call path of a created thread continues its creator's pthread_create
    paths = [p.split("/", 1)[1] for p in cube.callpaths if "/" in p]
    for fn in ("contention_worker", "consumer", "producer", "short_lived"):
        assert f"pthread_create/{fn}" in paths, (cc, fn)
    assert not [p for p in cube.callpaths if p.split("/")[0] in ("contention_worker", "short_lived")]
    # the consumer waits for the producer's items (5 units) in pthread_cond_wait
    cond = cube.per_callpath("pthread_conditional")
    assert sum(v for p, v in cond.items() if p.endswith("consumer/pthread_cond_wait")) >= 0.8 * 5 * UNIT, cond
    assert cube.total("pthread_join_wait") > 0


def test_threads_of_the_openmp_runtime_are_not_pthreads(runtime_built, tmp_path):
    """libomp creates its workers with pthread_create: those calls come from the OpenMP runtime and pass
    through unrecorded (the workers are OpenMP locations as before)"""
    need("clang")
    run(["clang", "-fopenmp", "-g", "-O1", str(SAMPLES / "omp_constructs.c"), "-o", "omp"], cwd=tmp_path)
    run([str(EXPERT_RUN), "-o", "omp.elg", "./omp"], cwd=tmp_path, env={"OMP_NUM_THREADS": "3"})
    trace = tracefmt.open(str(tmp_path / "omp.elg"))
    assert_valid(trace)
    assert set(counts(trace).values()) == {0}
    assert not [r for r in trace.defs.regions.values() if r.paradigm == Paradigm.PTHREAD]
    assert not [lk for lk in trace.defs.locks.values() if lk.kind == LockKind.PTHREAD_MUTEX]


def test_many_short_lived_threads_cost_little(built):
    """2000 threads created and joined two at a time: the trace holds 3 locations (reused), tracing adds a few
    microseconds per thread, the analysis takes as long as for a small trace"""
    cc, d = built

    def best(cmd, env=None):
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            run(cmd, cwd=d, env=env)
            times.append(time.perf_counter() - t0)
        return min(times)

    plain = best(["./pt", "churn", "2000"])
    traced = best([str(EXPERT_RUN), "-o", "churn.elg", "./pt", "churn", "2000"])
    trace = tracefmt.open(str(d / "churn.elg"))
    assert len(trace.location_ids) <= 3 and counts(trace)[EventType.THREAD_BEGIN] == 2000
    # expert-run itself starts a shell script and writes the trace: allow 0.5 s of it on a loaded machine
    assert traced <= 2 * plain + 0.5, (plain, traced)
    t0 = time.perf_counter()
    cube = analyzer.analyze(trace, jobs=2)
    assert time.perf_counter() - t0 < 10
    assert cube.total("visits") > 0


def test_instrumented_start_routine_is_one_call(runtime_built, tmp_path):
    """with -finstrument-functions the start routine's own enter is the thread's root region, not a second call"""
    need("gcc")
    run(["gcc", "-g", "-O1", "-pthread", "-finstrument-functions", str(SAMPLES / "pthreads.c"), "-o", "pti"],
        cwd=tmp_path)
    run([str(EXPERT_RUN), "-o", "i.elg", "./pti", "contention", "1"], cwd=tmp_path)
    trace = tracefmt.open(str(tmp_path / "i.elg"))
    assert_valid(trace)
    cube = analyzer.analyze(trace)
    got = {p.split("/", 1)[1]: v for p, v in cube.per_callpath("pthread_lock_contention_mutex_lock").items() if v}
    assert list(got) == ["main/contention/pthread_create/contention_worker/pthread_mutex_lock"], got
    assert 0.8 * 6 * UNIT <= sum(got.values()) <= 1.2 * 6 * UNIT
