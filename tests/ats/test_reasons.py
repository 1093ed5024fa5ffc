"""Every reason pattern (patterns/reasons.py) on hand-built traces, with exact values.

Each trace is written event by event with TraceBuilder, replayed, and the reasons computed
with their parents.  For every reason there is a trace where its value is worked out by hand
from the definition (docs/ats.md, "Reasons") and one where it must be zero although its
parent is not: the negative.  Times are multiples of 1/8 s (or of 1 us for the atomics), so
every expected value is exact up to the 1 ns tick of the builder.
"""

from __future__ import annotations

import numpy as np
import pytest

import tracefmt
from analyzer.analyze import compute_patterns
from analyzer.replay import replay
from patterns import reasons
from patterns.registry import load_patterns
from tracefmt.layout import LockKind

PAR = "!$omp parallel @a.c:1"
PAR_BARRIER = "!$omp ibarrier @a.c:1"  # the parallel region's closing barrier
TICK = 1e-9


# --------------------------------------------------------------------------
# building and analysing
# --------------------------------------------------------------------------
class Team:
    """One process with a team of ``n`` threads in one parallel region; thread 0 runs ``main``."""

    def __init__(self, n: int, start: float = 0.0, starts: list[float] | None = None):
        self.b = tracefmt.TraceBuilder()
        self.locs = [self.b.location(rank=0, thread=i) for i in range(n)]
        self.b.enter(self.locs[0], 0.0, "main")
        self.b.fork(self.locs[0], start, team=1, size=n)
        for i, loc in enumerate(self.locs):
            self.b.enter(loc, (starts or [start] * n)[i], PAR, team=1, thread_num=i)

    def region(self, loc: int, t0: float, t1: float, name: str = "do_work") -> None:
        self.b.enter(loc, t0, name)
        self.b.exit(loc, t1, name)

    def barrier(self, name: str, enters: list[float], leave: float) -> None:
        for loc, t in zip(self.locs, enters):
            self.b.enter(loc, t, name)
            self.b.omp_coll_exit(loc, leave, name)

    def finish(self, enters: list[float], leave: float) -> "Team":
        """Closing barrier of the parallel region, end of the region and of main."""
        self.barrier(PAR_BARRIER, enters, leave)
        for loc in self.locs:
            self.b.omp_coll_exit(loc, leave, PAR)
        self.b.join(self.locs[0], leave, team=1, size=len(self.locs))
        self.b.exit(self.locs[0], leave, "main")
        return self


def analyze(b: tracefmt.TraceBuilder):
    """Replay the trace, compute every reason with its parents; check each reason stays
    within its parent at every call path and location."""
    ctx = replay(b.build())
    compute_patterns(ctx, load_patterns([p.name for p in reasons.PATTERNS], plugins=False))
    for p in reasons.PATTERNS:
        if p.parent is None:
            continue
        assert (ctx.results[p.name] <= ctx.results[p.parent] + 10 * TICK).all(), f"{p.name} exceeds {p.parent}"
        assert (ctx.results[p.name] >= 0).all(), p.name
    return ctx


def at(ctx, pattern: str, *names: str) -> np.ndarray:
    """Per-location values of ``pattern`` at the one call path ending in ``names``."""
    hits = [c for c in range(ctx.n_cnodes)
            if ctx.calltree.path(c, ctx.region_name).split("/")[-len(names):] == list(names)]
    assert len(hits) == 1, f"call path .../{'/'.join(names)}: {len(hits)} matches"
    return ctx.results[pattern][hits[0]]


def total(ctx, pattern: str) -> float:
    return float(ctx.results[pattern].sum())


def close(got, want) -> None:
    np.testing.assert_allclose(got, want, rtol=0, atol=10 * TICK)


# --------------------------------------------------------------------------
# sections
# --------------------------------------------------------------------------
SEC, SEC_BARRIER = "!$omp sections @a.c:2", "!$omp ibarrier @a.c:2"


def sections_trace(work: list[list[float]], leave: float) -> tracefmt.TraceBuilder:
    """work[i]: durations of the sections thread i executes, back to back from 0; each
    section body is a do_work call.  The sections' barrier ends at ``leave``."""
    t = Team(len(work))
    for loc, mine in zip(t.locs, work):
        t.b.enter(loc, 0.0, SEC)
        now = 0.0
        for d in mine:
            t.region(loc, now, now + d)
            now += d
        t.b.enter(loc, now, SEC_BARRIER)
        t.b.omp_coll_exit(loc, leave, SEC_BARRIER)
        t.b.exit(loc, leave, SEC)
    return t.finish([leave] * len(work), leave).b


def test_uneven_sections_three_equal_sections_on_two_threads():
    # thread 0 runs two 1 s sections, thread 1 one: thread 1 waits 1 s at the barrier,
    # (2 - 1) sections x 1 s mean section time = 1 s explained
    ctx = analyze(sections_trace([[1.0, 1.0], [1.0]], leave=2.0))
    close(at(ctx, "omp_ibarrier_wait", SEC, SEC_BARRIER), [0.0, 1.0])
    close(at(ctx, "omp_uneven_section_distribution", SEC, SEC_BARRIER), [0.0, 1.0])
    close(total(ctx, "omp_not_enough_sections"), 0.0)


def test_uneven_sections_wait_of_the_thread_with_more_sections_is_not_the_count():
    # three sections of 0.25, 0.25 and 1.5 s: thread 0 runs the two short ones and waits 1 s
    # for thread 1's long one.  Thread 0 has the most sections, so none of its wait comes
    # from the count: the reason is zero while the barrier wait is not (negative)
    ctx = analyze(sections_trace([[0.25, 0.25], [1.5]], leave=1.5))
    close(at(ctx, "omp_ibarrier_wait", SEC, SEC_BARRIER), [1.0, 0.0])
    close(total(ctx, "omp_uneven_section_distribution"), 0.0)
    close(total(ctx, "omp_not_enough_sections"), 0.0)


def test_sections_with_equal_counts_are_no_distribution_problem():
    # two sections on two threads, 1 s and 0.25 s: 0.75 s of imbalance, no count difference
    ctx = analyze(sections_trace([[1.0], [0.25]], leave=1.0))
    close(at(ctx, "omp_ibarrier_wait", SEC, SEC_BARRIER), [0.0, 0.75])
    close(total(ctx, "omp_uneven_section_distribution"), 0.0)
    close(total(ctx, "omp_not_enough_sections"), 0.0)


def test_not_enough_sections_one_section_two_threads():
    ctx = analyze(sections_trace([[1.0], []], leave=1.0))
    close(at(ctx, "omp_ibarrier_wait", SEC, SEC_BARRIER), [0.0, 1.0])
    close(at(ctx, "omp_not_enough_sections", SEC, SEC_BARRIER), [0.0, 1.0])
    close(total(ctx, "omp_uneven_section_distribution"), 0.0)


def test_not_enough_sections_explains_only_the_missing_section():
    # sections of 1 s and 0.5 s on three threads: thread 1 waits 0.5 s (section lengths, not
    # the count), thread 2 waits 1 s of which one mean section (0.75 s) is the missing one
    ctx = analyze(sections_trace([[1.0], [0.5], []], leave=1.0))
    close(at(ctx, "omp_ibarrier_wait", SEC, SEC_BARRIER), [0.0, 0.5, 1.0])
    close(at(ctx, "omp_not_enough_sections", SEC, SEC_BARRIER), [0.0, 0.0, 0.75])
    close(total(ctx, "omp_uneven_section_distribution"), 0.0)


# --------------------------------------------------------------------------
# single
# --------------------------------------------------------------------------
SINGLE, SINGLE_BODY, SINGLE_BARRIER = "!$omp single @a.c:3", "!$omp single sblock @a.c:3", "!$omp ibarrier @a.c:3"


def single_instance(t: Team, enters: list[float], executor: int, body: tuple[float, float], leave: float):
    for i, (loc, t_in) in enumerate(zip(t.locs, enters)):
        t.b.enter(loc, t_in, SINGLE)
        arrive = t_in
        if i == executor:
            t.region(loc, body[0], body[1], SINGLE_BODY)
            arrive = body[1]
        t.b.enter(loc, arrive, SINGLE_BARRIER)
        t.b.omp_coll_exit(loc, leave, SINGLE_BARRIER)
        t.b.exit(loc, leave, SINGLE)


def test_single_serialization_with_changing_executors():
    # instance 1: thread 0 runs the 1 s block, thread 1 waits 1 s; instance 2: thread 1 runs a
    # 0.5 s block, thread 0 waits 0.5 s.  Others' block time: thread 0 0.5 s, thread 1 1 s
    t = Team(2)
    single_instance(t, [0.0, 0.0], 0, (0.0, 1.0), 1.0)
    single_instance(t, [1.0, 1.0], 1, (1.0, 1.5), 1.5)
    ctx = analyze(t.finish([1.5, 1.5], 1.5).b)
    close(at(ctx, "omp_ibarrier_wait", SINGLE, SINGLE_BARRIER), [0.5, 1.0])
    close(at(ctx, "omp_single_serialization", SINGLE, SINGLE_BARRIER), [0.5, 1.0])


def test_single_wait_caused_by_a_late_thread_is_not_serialization():
    # thread 0 works 2 s before the single; thread 1 executes the 0.25 s block and waits
    # 1.75 s for thread 0.  Nobody waited through a block someone else executed (negative)
    t = Team(2)
    t.region(t.locs[0], 0.0, 2.0)
    single_instance(t, [2.0, 0.0], 1, (0.0, 0.25), 2.0)
    ctx = analyze(t.finish([2.0, 2.0], 2.0).b)
    close(at(ctx, "omp_ibarrier_wait", SINGLE, SINGLE_BARRIER), [0.0, 1.75])
    close(total(ctx, "omp_single_serialization"), 0.0)


def test_single_serialization_is_capped_by_the_block_time():
    # thread 1 waits 2 s at the single's barrier, but the block thread 0 executed took 0.5 s
    # (thread 0 worked 1.5 s before the single): 0.5 s explained
    t = Team(2)
    t.region(t.locs[0], 0.0, 1.5)
    single_instance(t, [1.5, 0.0], 0, (1.5, 2.0), 2.0)
    ctx = analyze(t.finish([2.0, 2.0], 2.0).b)
    close(at(ctx, "omp_ibarrier_wait", SINGLE, SINGLE_BARRIER), [0.0, 2.0])
    close(at(ctx, "omp_single_serialization", SINGLE, SINGLE_BARRIER), [0.0, 0.5])


# --------------------------------------------------------------------------
# nowait loop
# --------------------------------------------------------------------------
LOOP, LOOP_BARRIER = "!$omp for @a.c:4", "!$omp ibarrier @a.c:4"
NESTED_BARRIERS = (PAR_BARRIER, "!$omp ibarrier")  # master / worker, as the runtime records them


def nowait_loop_trace(starts: list[float], work: list[float], nested: bool = True) -> tracefmt.TraceBuilder:
    """A nowait loop followed by the end of the parallel region.  nested: the runtime holds
    the loop's end back and records the closing barrier inside it, the worker's without a
    source line; otherwise the closing barrier follows the loop."""
    t = Team(2, starts=starts)
    ends = [s + w for s, w in zip(starts, work)]
    leave = max(ends)
    for i, (loc, s, e) in enumerate(zip(t.locs, starts, ends)):
        t.b.enter(loc, s, LOOP)
        t.region(loc, s, e)
        if nested:
            name = NESTED_BARRIERS[min(i, 1)]
            t.b.enter(loc, e, name)
            t.b.omp_coll_exit(loc, leave, name)
            t.b.exit(loc, leave, LOOP)
        else:
            t.b.exit(loc, e, LOOP)
    if nested:
        for loc in t.locs:
            t.b.omp_coll_exit(loc, leave, PAR)
        t.b.join(t.locs[0], leave, team=1, size=2)
        t.b.exit(t.locs[0], leave, "main")
        return t.b
    return t.finish(ends, leave).b


def test_nowait_loop_imbalance_at_the_barrier_nested_in_the_loop():
    # loop work 1 s and 3 s: thread 0 waits 2 s at the closing barrier, all of it the loop's
    ctx = analyze(nowait_loop_trace([0.0, 0.0], [1.0, 3.0]))
    close(at(ctx, "omp_ibarrier_wait", LOOP, PAR_BARRIER), [2.0, 0.0])
    close(at(ctx, "omp_nowait_loop_imbalance", LOOP, PAR_BARRIER), [2.0, 0.0])


def test_nowait_loop_imbalance_at_the_closing_barrier_after_the_loop():
    ctx = analyze(nowait_loop_trace([0.0, 0.0], [1.0, 3.0], nested=False))
    close(at(ctx, "omp_ibarrier_wait", PAR, PAR_BARRIER), [2.0, 0.0])
    close(at(ctx, "omp_nowait_loop_imbalance", PAR, PAR_BARRIER), [2.0, 0.0])


@pytest.mark.parametrize("nested", [True, False])
def test_nowait_loop_with_equal_work_and_a_late_thread(nested):
    # both threads do 2 s of loop work; thread 1 starts 1 s late, so thread 0 waits 1 s
    # at the closing barrier, but not because of the loop (negative)
    ctx = analyze(nowait_loop_trace([0.0, 1.0], [2.0, 2.0], nested=nested))
    close(total(ctx, "omp_ibarrier_wait"), 1.0)
    close(total(ctx, "omp_nowait_loop_imbalance"), 0.0)


def test_loop_with_its_own_barrier_is_no_nowait_loop():
    t = Team(2)
    for loc, w in zip(t.locs, (1.0, 3.0)):
        t.b.enter(loc, 0.0, LOOP)
        t.region(loc, 0.0, w)
        t.b.enter(loc, w, LOOP_BARRIER)
        t.b.omp_coll_exit(loc, 3.0, LOOP_BARRIER)
        t.b.exit(loc, 3.0, LOOP)
    ctx = analyze(t.finish([3.0, 3.0], 3.0).b)
    close(at(ctx, "omp_ibarrier_wait", LOOP, LOOP_BARRIER), [2.0, 0.0])
    close(total(ctx, "omp_nowait_loop_imbalance"), 0.0)


# --------------------------------------------------------------------------
# master
# --------------------------------------------------------------------------
MASTER, BARRIER = "!$omp master @a.c:5", "!$omp barrier @a.c:6"


def test_master_serialization_before_an_explicit_barrier():
    # two rounds: master region of 1 s, then the barrier; thread 1 waits 1 s each round
    t = Team(2)
    for k in range(2):
        t.b.enter(t.locs[0], k, MASTER)
        t.region(t.locs[0], k, k + 1.0)
        t.b.exit(t.locs[0], k + 1.0, MASTER)
        t.barrier(BARRIER, [k + 1.0, float(k)], k + 1.0)
    ctx = analyze(t.finish([2.0, 2.0], 2.0).b)
    close(at(ctx, "omp_ebarrier_wait", PAR, BARRIER), [0.0, 2.0])
    close(at(ctx, "omp_master_serialization", PAR, BARRIER), [0.0, 2.0])


def test_master_region_after_the_barrier_does_not_explain_its_wait():
    # imbalanced work before the barrier (2 s vs 0.5 s: thread 1 waits 1.5 s), a 1 s master
    # region only after it: the barrier's wait is not the master's (negative)
    t = Team(2)
    t.region(t.locs[0], 0.0, 2.0)
    t.region(t.locs[1], 0.0, 0.5)
    t.barrier(BARRIER, [2.0, 0.5], 2.0)
    t.b.enter(t.locs[0], 2.0, MASTER)
    t.b.exit(t.locs[0], 3.0, MASTER)
    ctx = analyze(t.finish([3.0, 2.0], 3.0).b)
    close(at(ctx, "omp_ebarrier_wait", PAR, BARRIER), [0.0, 1.5])
    close(total(ctx, "omp_master_serialization"), 0.0)


# --------------------------------------------------------------------------
# ordered
# --------------------------------------------------------------------------
ORDERED, ORDERED_BODY = "!$omp ordered @a.c:7", "!$omp ordered sblock @a.c:7"


def ordered_trace(pre: tuple[float, float], body: float) -> tracefmt.TraceBuilder:
    """Four iterations, schedule(static,1) on two threads: thread k does ``pre[k]`` s of work,
    then its ordered block of ``body`` s, in iteration order."""
    t = Team(2)
    for loc in t.locs:
        t.b.enter(loc, 0.0, LOOP)
    cur = [0.0, 0.0]
    released = 0.0
    for i in range(4):
        k, loc = i % 2, t.locs[i % 2]
        if pre[k]:
            t.region(loc, cur[k], cur[k] + pre[k])
        ready = cur[k] + pre[k]
        start = max(ready, released)
        t.b.enter(loc, ready, ORDERED)
        t.region(loc, start, start + body, ORDERED_BODY)
        t.b.exit(loc, start + body, ORDERED)
        cur[k] = released = start + body
    end = max(cur)
    t.barrier(LOOP_BARRIER, cur, end)
    for loc in t.locs:
        t.b.exit(loc, end, LOOP)
    return t.finish([end, end], end).b


def test_ordered_serialization_fully_serialized_loop():
    # bodies of 1 s: thread 1 waits 1 s before iterations 1 and 3, thread 0 1 s before
    # iteration 2; the 4 s of bodies fill the 4 s loop, so all 3 s of ordered time is serialization
    ctx = analyze(ordered_trace(pre=(0.0, 0.0), body=1.0))
    close(at(ctx, "omp_ordered", LOOP, ORDERED), [1.0, 2.0])
    close(at(ctx, "omp_ordered_serialization", LOOP, ORDERED), [1.0, 2.0])


def test_ordered_wait_from_work_outside_the_block_is_not_serialization():
    # empty ordered blocks after 1 s (thread 0) and 0.25 s (thread 1) of work: thread 1 is
    # ready at 0.25 and 1.25 but iterations 0 and 2 pass at 1.0 and 2.0, so it waits 0.75 s
    # twice: imbalance, not serialization, since the blocks fill none of the loop (negative)
    ctx = analyze(ordered_trace(pre=(1.0, 0.25), body=0.0))
    close(at(ctx, "omp_ordered", LOOP, ORDERED), [0.0, 1.5])
    close(total(ctx, "omp_ordered_serialization"), 0.0)


def test_ordered_serialization_with_work_outside_the_block():
    # pre 0.5 s, body 1 s: thread 0 runs it0 0.5-1.5, it2 2.5-3.5 (ready 2.0, waits 0.5 s);
    # thread 1 runs it1 1.5-2.5 (ready 0.5, waits 1 s), it3 3.5-4.5 (ready 3.0, waits 0.5 s).
    # 4 s of blocks in a 4.5 s loop (>= 50 %): serialized; ordered time 0.5 s and 1.5 s
    ctx = analyze(ordered_trace(pre=(0.5, 0.5), body=1.0))
    close(at(ctx, "omp_ordered", LOOP, ORDERED), [0.5, 1.5])
    close(at(ctx, "omp_ordered_serialization", LOOP, ORDERED), [0.5, 1.5])


# --------------------------------------------------------------------------
# critical
# --------------------------------------------------------------------------
CRIT, CRIT_BODY = "!$omp critical (c)", "!$omp critical sblock (c)"


def critical_loop_trace(pre: float, body: float) -> tracefmt.TraceBuilder:
    """A loop of two iterations per thread on two threads: ``pre`` s of work, then a critical
    section with ``body`` s inside; thread 0 wins every tie."""
    t = Team(2)
    lock = t.b.lock("c", LockKind.OMP_CRITICAL)
    for loc in t.locs:
        t.b.enter(loc, 0.0, LOOP)
    cur = [0.0, 0.0]
    free = 0.0
    for rnd in range(2):
        for k, loc in enumerate(t.locs):
            if pre:
                t.region(loc, cur[k], cur[k] + pre)
            ready = cur[k] + pre
            got = max(ready, free)
            t.b.enter(loc, ready, CRIT)
            t.b.acquire(loc, got, lock)
            t.region(loc, got, got + body, CRIT_BODY)
            t.b.release(loc, got + body, lock)
            t.b.exit(loc, got + body, CRIT)
            cur[k] = free = got + body
    end = max(cur)
    t.barrier(LOOP_BARRIER, cur, end)
    for loc in t.locs:
        t.b.exit(loc, end, LOOP)
    return t.finish([end, end], end).b


def test_critical_serialization_when_the_critical_block_is_the_loop():
    # bodies of 1 s: t0 holds 0-1, t1 waits from 0 to 1 and holds 1-2, t0 waits 1-2 and holds
    # 2-3, t1 waits 2-3 and holds 3-4.  Contention: t0 1 s, t1 2 s; 4 s of bodies in a 4 s loop
    ctx = analyze(critical_loop_trace(pre=0.0, body=1.0))
    close(at(ctx, "omp_lock_contention_critical", LOOP, CRIT), [1.0, 2.0])
    close(at(ctx, "omp_critical_serialization", LOOP, CRIT), [1.0, 2.0])


def test_contention_in_a_loop_of_mostly_other_work_is_not_serialization():
    # 2 s of work, then a 0.5 s critical: t0 holds 2-2.5, t1 waits 2-2.5 (0.5 s) and holds
    # 2.5-3; second round t0 ready 4.5, t1 ready 5: no wait.  Bodies 2 s of a 5.5 s loop (< 50 %)
    ctx = analyze(critical_loop_trace(pre=2.0, body=0.5))
    close(at(ctx, "omp_lock_contention_critical", LOOP, CRIT), [0.0, 0.5])
    close(total(ctx, "omp_critical_serialization"), 0.0)


def test_critical_outside_a_loop_is_not_loop_serialization():
    t = Team(2)
    lock = t.b.lock("c", LockKind.OMP_CRITICAL)
    for loc, got in zip(t.locs, (0.0, 1.0)):
        t.b.enter(loc, 0.0, CRIT)
        t.b.acquire(loc, got, lock)
        t.region(loc, got, got + 1.0, CRIT_BODY)
        t.b.release(loc, got + 1.0, lock)
        t.b.exit(loc, got + 1.0, CRIT)
    ctx = analyze(t.finish([1.0, 2.0], 2.0).b)
    close(at(ctx, "omp_lock_contention_critical", PAR, CRIT), [0.0, 1.0])
    close(total(ctx, "omp_critical_serialization"), 0.0)


# --------------------------------------------------------------------------
# atomics
# --------------------------------------------------------------------------
ATOMIC = "!$omp atomic @a.c:8"
US = 1e-6


def atomics_trace(counts: list[int], span: float) -> tracefmt.TraceBuilder:
    """Thread i performs counts[i] atomics of 25 us, one every 50 us, inside the parallel
    region, which lasts ``span`` s on every thread (closing barrier included)."""
    t = Team(len(counts))
    for loc, n in zip(t.locs, counts):
        for k in range(n):
            t.region(loc, k * 50 * US, k * 50 * US + 25 * US, ATOMIC)
    return t.finish([max(n * 50 * US, 0.0) for n in counts], span).b


def test_frequent_atomics_per_thread_rate():
    # thread 0: 200 atomics in a 0.01 s region = 2e4/s (frequent): its 200 x 25 us = 5 ms of
    # atomic time; thread 1: 2 atomics in 0.01 s = 200/s: not frequent (negative on the same trace)
    ctx = analyze(atomics_trace([200, 2], span=0.01))
    close(at(ctx, "omp_critical", PAR, ATOMIC), [200 * 25 * US, 2 * 25 * US])
    close(at(ctx, "omp_frequent_atomics", PAR, ATOMIC), [200 * 25 * US, 0.0])


def test_rate_just_below_the_threshold_is_not_frequent():
    # 99 atomics in 0.01 s = 9.9e3/s, under FREQUENT_ATOMIC_RATE = 1e4/s
    assert reasons.FREQUENT_ATOMIC_RATE == 1e4
    ctx = analyze(atomics_trace([99, 99], span=0.01))
    assert total(ctx, "omp_critical") > 0
    close(total(ctx, "omp_frequent_atomics"), 0.0)


# --------------------------------------------------------------------------
# locks: all threads vs pairs
# --------------------------------------------------------------------------
SET, UNSET = "omp_set_lock", "omp_unset_lock"


def lock_round(t: Team, lock: str, users: list[int], start: float, hold: float) -> float:
    """Threads ``users`` (in this order) call omp_set_lock at ``start`` and hold the lock for
    ``hold`` s each, one after the other; returns the time the last one releases it."""
    free = start
    for k in users:
        loc = t.locs[k]
        t.b.enter(loc, start, SET)
        t.b.acquire(loc, free, lock)
        t.b.exit(loc, free, SET)
        t.region(loc, free, free + hold)
        t.b.enter(loc, free + hold, UNSET)
        t.b.release(loc, free + hold, lock)
        t.b.exit(loc, free + hold, UNSET)
        free += hold
    return free


def test_lock_contention_by_all_threads():
    # three threads on one lock, 1 s each: thread 1 waits 1 s, thread 2 waits 2 s
    t = Team(3)
    end = lock_round(t, "L", [0, 1, 2], 0.0, 1.0)
    ctx = analyze(t.finish([1.0, 2.0, 3.0], end).b)
    close(at(ctx, "omp_lock_contention_api", PAR, SET), [0.0, 1.0, 2.0])
    close(at(ctx, "omp_lock_contention_all_threads", PAR, SET), [0.0, 1.0, 2.0])
    close(total(ctx, "omp_lock_contention_pairs"), 0.0)


def test_lock_contention_by_pairs():
    # threads 0 and 1 share lock A (thread 1 waits 1 s), thread 2 works alone
    t = Team(3)
    end = lock_round(t, "A", [0, 1], 0.0, 1.0)
    t.region(t.locs[2], 0.0, 2.0)
    ctx = analyze(t.finish([1.0, 2.0, 2.0], end).b)
    close(at(ctx, "omp_lock_contention_api", PAR, SET), [0.0, 1.0, 0.0])
    close(at(ctx, "omp_lock_contention_pairs", PAR, SET), [0.0, 1.0, 0.0])
    close(total(ctx, "omp_lock_contention_all_threads"), 0.0)


def test_two_threads_are_neither_all_nor_a_pair():
    t = Team(2)
    end = lock_round(t, "L", [0, 1], 0.0, 1.0)
    ctx = analyze(t.finish([1.0, 2.0], end).b)
    close(total(ctx, "omp_lock_contention_api"), 1.0)
    close(total(ctx, "omp_lock_contention_all_threads"), 0.0)
    close(total(ctx, "omp_lock_contention_pairs"), 0.0)


# --------------------------------------------------------------------------
# false sharing (hardware counters)
# --------------------------------------------------------------------------
MISS, STORES = "PAPI_L1_DCM", "PAPI_SR_INS"


def counter_trace(serial: tuple[int, int] | None, parallel: list[tuple[int, int]]) -> tuple:
    """main runs ``kernel`` serially (misses, stores) if given, then a parallel region where
    thread i runs ``kernel`` with parallel[i] = (misses, stores).  Counters are read after
    every ENTER and EXIT, as the runtime does; returns the builder and the exclusive
    increments by hand: {(call path names, thread): (misses, stores)}."""
    t = tracefmt.TraceBuilder()
    n = len(parallel)
    locs = [t.location(rank=0, thread=i) for i in range(n)]
    totals = [[0, 0] for _ in locs]

    def ev(kind, i, when, name, add=(0, 0), **kw):
        getattr(t, kind)(locs[i], when, name, **kw)
        totals[i][0] += add[0]
        totals[i][1] += add[1]
        t.counter(locs[i], when, MISS, totals[i][0])
        t.counter(locs[i], when, STORES, totals[i][1])

    ev("enter", 0, 0.0, "main")
    if serial:
        ev("enter", 0, 0.0, "kernel")
        ev("exit", 0, 1.0, "kernel", serial)
    t.fork(locs[0], 1.0, team=1, size=n)
    for i in range(n):
        ev("enter", i, 1.0, PAR, team=1, thread_num=i)
        ev("enter", i, 1.0, "kernel")
        ev("exit", i, 2.0, "kernel", parallel[i])
        ev("enter", i, 2.0, PAR_BARRIER)
        t.omp_coll_exit(locs[i], 2.0, PAR_BARRIER)
        t.counter(locs[i], 2.0, MISS, totals[i][0])
        t.counter(locs[i], 2.0, STORES, totals[i][1])
        t.omp_coll_exit(locs[i], 2.0, PAR)
        t.counter(locs[i], 2.0, MISS, totals[i][0])
        t.counter(locs[i], 2.0, STORES, totals[i][1])
    t.join(locs[0], 2.0, team=1, size=n)
    ev("exit", 0, 2.0, "main")
    return t


def false_sharing(b, serial, parallel):
    """Replay, make sure ctx.counters holds the exclusive increments worked out by hand (the
    replay fills it where it reads COUNTER events), compute the pattern."""
    ctx = replay(b.build())
    want = {}
    for name, idx in ((MISS, 0), (STORES, 1)):
        arr = np.zeros((ctx.n_cnodes, ctx.n_locations))
        if serial:
            arr[_cnode(ctx, "main", "kernel"), 0] = serial[idx]
        for i, v in enumerate(parallel):
            arr[_cnode(ctx, PAR, "kernel"), i] = v[idx]
        want[name] = arr
    if ctx.counters:
        for name in want:
            np.testing.assert_array_equal(ctx.counters[name], want[name])
    else:
        ctx.counters = want
    return ctx, reasons.OmpFalseSharing().compute(ctx)


def _cnode(ctx, *names):
    hits = [c for c in range(ctx.n_cnodes)
            if ctx.calltree.path(c, ctx.region_name).split("/")[-len(names):] == list(names)]
    assert len(hits) == 1
    return hits[0]


def test_false_sharing_excess_misses_over_the_serial_baseline():
    # serially the kernel misses 10 times in 10000 stores (0.1 %); in the parallel region the
    # two threads miss 2000 and 500 times in 10000 stores each (20 %, 5 %: both >= 1 % and
    # >= 4 x 0.1 %): excess 2000 - 0.001 * 10000 = 1990 and 500 - 10 = 490
    b = counter_trace((10, 10000), [(2000, 10000), (500, 10000)])
    ctx, got = false_sharing(b, (10, 10000), [(2000, 10000), (500, 10000)])
    close(got[_cnode(ctx, PAR, "kernel")], [1990.0, 490.0])
    close(got.sum(), 2480.0)
    assert reasons.OmpFalseSharing.name == "omp_false_sharing" and reasons.OmpFalseSharing.unit == "occ"


def test_false_sharing_without_a_serial_baseline_counts_every_miss_above_the_rate():
    # no serial run: base 0; thread 1's 50 misses in 10000 stores (0.5 %) are under 1 %
    ctx, got = false_sharing(counter_trace(None, [(300, 10000), (50, 10000)]), None, [(300, 10000), (50, 10000)])
    close(got[_cnode(ctx, PAR, "kernel")], [300.0, 0.0])


def test_padded_data_misses_like_the_serial_code():
    # negative: 2 % misses in parallel, but the same kernel misses 1 % serially (< 4 x)
    b = counter_trace((100, 10000), [(200, 10000), (200, 10000)])
    ctx, got = false_sharing(b, (100, 10000), [(200, 10000), (200, 10000)])
    close(got.sum(), 0.0)  # "omp_false_sharing" silent


def test_false_sharing_needs_both_counters():
    ctx = replay(counter_trace(None, [(300, 10000), (300, 10000)]).build())
    ctx.counters = {MISS: np.ones((ctx.n_cnodes, ctx.n_locations))}
    close(reasons.OmpFalseSharing().compute(ctx).sum(), 0.0)


def test_every_reason_is_tested_here():
    import inspect

    source = inspect.getsource(inspect.getmodule(test_every_reason_is_tested_here))
    untested = [p.name for p in reasons.PATTERNS if source.count(f'"{p.name}"') < 2]
    assert not untested, f"reasons without a positive and a negative test here: {untested}"
