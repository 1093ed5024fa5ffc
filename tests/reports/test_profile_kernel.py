"""The numba pass of expert-profile against the former pure-Python loop (profile_reference.py).

Equality is exact: the kernel takes its sums in the same order, so the JSON
and the text report must match character for character, on the hand-built
hybrid trace, on a trace with single/ordered bodies, nested parallel regions
and recursion, and on random hybrid traces.
"""

from __future__ import annotations

import json

import pytest

import tracefmt
from analyzer.profile.ompp import ProfileError
from analyzer.profile import format_profile, profile_trace
from tracefmt.layout import NO_ID, EventType, Paradigm, Role

from profile_reference import profile_trace_reference
from profile_trace import hybrid_builder
from random_hybrid_traces import random_trace  # tests/helpers (pytest's pythonpath)


def assert_same(trace, volume):
    fast = profile_trace(trace, volume=volume)
    slow = profile_trace_reference(trace, volume=volume)
    assert json.dumps(fast.to_dict()) == json.dumps(slow.to_dict())
    assert format_profile(fast) == format_profile(slow)
    assert list(fast.regions) == list(slow.regions)
    assert list(fast.overheads) == list(slow.overheads)


def constructs_builder() -> tracefmt.TraceBuilder:
    """single with an implicit barrier, ordered with its body, recursion, a nested team, locks, barriers."""
    b = tracefmt.TraceBuilder()
    m, w = b.location(rank=0, thread=0), b.location(rank=0, thread=1)

    def omp(name, role):
        return b.region(name, Paradigm.OPENMP, Role[role])

    par, inner = omp("!$omp parallel", "OMP_PARALLEL"), omp("inner parallel", "OMP_PARALLEL")
    single, single_body = omp("!$omp single", "OMP_SINGLE"), omp("!$omp single sblock", "OMP_SINGLE_BODY")
    ordered, ordered_body = omp("!$omp ordered", "OMP_ORDERED"), omp("!$omp ordered sblock", "OMP_ORDERED_BODY")
    ibarrier, barrier = omp("!$omp ibarrier", "OMP_IMPLICIT_BARRIER"), omp("!$omp barrier", "OMP_BARRIER")
    set_lock, unset_lock = omp("omp_set_lock", "OMP_LOCK_API"), omp("omp_unset_lock", "OMP_LOCK_API")
    rec = b.region("rec", Paradigm.USER, Role.FUNCTION)
    b.enter(m, 0.0, "main")
    b.enter(w, 0.5, "main")
    b.fork(m, 1.0, team=1, size=2)
    b.enter(m, 1.5, par, team=1)
    b.enter(w, 2.0, par, team=1)
    b.enter(m, 2.0, single)
    b.enter(m, 2.2, single_body)
    b.enter(m, 2.3, rec)
    b.enter(m, 2.4, rec)
    b.exit(m, 2.6)
    b.exit(m, 2.8)
    b.exit(m, 3.0)
    b.exit(m, 3.1)
    b.enter(w, 2.05, single)  # another thread runs the single: this one waits in its implicit barrier
    b.enter(w, 2.1, ibarrier)
    b.exit(w, 3.2)
    b.exit(w, 3.25)
    b.enter(w, 3.3, ordered)
    b.enter(w, 3.5, ordered_body)
    b.exit(w, 3.6)
    b.exit(w, 3.9)
    b.fork(m, 3.15, team=2, size=1)
    b.enter(m, 3.2, inner, team=2)
    b.enter(m, 3.3, set_lock)
    b.exit(m, 3.4)
    b.enter(m, 3.4, unset_lock)
    b.exit(m, 3.45)
    b.exit(m, 3.5)
    b.join(m, 3.55, team=2, size=1)
    b.enter(w, 4.0, barrier)
    b.exit(w, 4.1)
    b.enter(m, 3.6, barrier)
    b.exit(m, 4.1)
    b.exit(m, 4.2)
    b.exit(w, 4.3)
    b.join(m, 4.5, team=1, size=2)
    b.exit(m, 5.0)
    b.exit(w, 5.0)
    return b


@pytest.mark.parametrize("volume", ["naive", "minimal"])
def test_hand_built_traces(volume):
    assert_same(hybrid_builder().build(), volume)
    assert_same(constructs_builder().build(), volume)


@pytest.mark.parametrize("seed", range(6))
def test_random_hybrid_traces(seed):
    trace = random_trace(seed, n_ranks=3, n_threads=3, steps=30)
    assert_same(trace, "naive" if seed % 2 else "minimal")


def test_unknown_region_is_a_clear_error():
    b = tracefmt.TraceBuilder()
    loc = b.location(rank=0, thread=0)
    b.enter(loc, 0.0, "main")
    b.exit(loc, 1.0, "main")
    trace = b.build()
    ev = trace.events(loc)
    ev.a[0] = 999  # an ENTER naming a region the definitions lack
    trace.events = lambda _l: ev
    with pytest.raises(ProfileError, match=r"location .*event 0\) names region 999"):
        profile_trace(trace)


def raw_trace(events):
    """A one-location trace from raw (time, type, a, b, c, d, e) records, unchecked by the builder."""
    b = tracefmt.TraceBuilder()
    loc = b.location(rank=0, thread=0)
    b.region("main")
    b.region("MPI_Bcast")
    b.world()
    for t, ty, a, bb, c, d, e in events:
        b.event(loc, t, ty, a=a, b=bb, c=c, d=d, e=e)
    return b.build()


@pytest.mark.parametrize("events, message", [
    ([(1.0, EventType.EXIT, 0, 0, 0, 0, 0)], r"location 0 \(rank 0 thread 0\): exit at 1\.000000000 s \(event 0\) "
                                             r"without an open region"),
    ([(1.0, EventType.ENTER, 0, NO_ID, 0, 0, 0)], r"region 'main' entered at 1\.000000000 s is never left"),
])
def test_broken_nesting_same_message_as_reference(events, message):
    trace = raw_trace(events)
    for profile in (profile_trace, profile_trace_reference):
        with pytest.raises(ProfileError, match=message):
            profile(trace)


def test_collective_exit_of_another_region_is_a_clear_error():
    events = [(1.0, EventType.ENTER, 0, NO_ID, 0, 0, 0), (2.0, EventType.MPI_COLLEXIT, 1, 0, NO_ID, 8, 8)]
    trace = raw_trace(events)
    with pytest.raises(ProfileError, match=r"collective exit at 2\.000000000 s \(event 1\) names region 1 "
                                          r"but region 'main' is open"):
        profile_trace(trace)
