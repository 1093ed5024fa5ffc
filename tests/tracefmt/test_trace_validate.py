"""The validator: a correct hybrid trace is clean; each kind of defect is found and located."""

import tracefmt
from tracefmt.layout import NO_ID, EventType
from tracefmt.validate import validate


def clean_hybrid():
    """2 ranks x 2 threads: a message, a barrier, a parallel region with a lock and a barrier."""
    b = tracefmt.TraceBuilder()
    locs = {(r, t): b.location(rank=r, thread=t) for r in (0, 1) for t in (0, 1)}
    m0, m1 = locs[0, 0], locs[1, 0]
    for r in (0, 1):
        m, w = locs[r, 0], locs[r, 1]
        b.enter(m, 0.0, "main")
        b.fork(m, 0.1, team=1, size=2)
        b.enter(m, 0.1, "!$omp parallel")
        b.enter(w, 0.1, "!$omp parallel")
        b.enter(m, 0.2, "!$omp critical")
        b.acquire(m, 0.2, "crit")
        b.release(m, 0.3, "crit")
        b.exit(m, 0.3)
        b.enter(w, 0.2, "!$omp critical")
        b.acquire(w, 0.35, "crit")
        b.release(w, 0.4, "crit")
        b.exit(w, 0.4)
        b.barrier(m, 0.3, 0.45, implicit=True)
        b.barrier(w, 0.4, 0.45, implicit=True)
        b.omp_coll_exit(m, 0.5)
        b.omp_coll_exit(w, 0.5)
        b.join(m, 0.5, team=1, size=2)
    b.enter(m0, 1.0, "MPI_Isend")
    b.send(m0, 1.0, dest=1, tag=3, nbytes=8, request=1)
    b.exit(m0, 1.1)
    b.enter(m1, 0.9, "MPI_Irecv")
    b.recv_request(m1, 0.9, request=1, source=0, tag=3)
    b.exit(m1, 0.9)
    b.enter(m1, 1.0, "MPI_Wait")
    b.recv(m1, 1.2, source=0, tag=3, nbytes=8, request=1)
    b.exit(m1, 1.2)
    b.enter(m0, 1.1, "MPI_Wait")
    b.send_complete(m0, 1.3, request=1)
    b.exit(m0, 1.3)
    b.collective(m0, 1.4, 1.6, "MPI_Bcast", root=0, sent=16, recvd=8)
    b.collective(m1, 1.5, 1.6, "MPI_Bcast", root=0, recvd=8)
    b.exit(m0, 2.0, "main")
    b.exit(m1, 2.0, "main")
    return b, locs


def messages(problems):
    return [str(p) for p in problems]


def test_clean_hybrid_trace_has_no_problems():
    b, _ = clean_hybrid()
    assert validate(b.build()) == []


def test_exit_mismatch_and_unclosed_region_are_located():
    b = tracefmt.TraceBuilder()
    loc = b.location()
    b.enter(loc, 0.0, "main")  # event 0
    b.enter(loc, 1.0, "foo")  # event 1
    b.event(loc, 2.0, EventType.EXIT, a=b.region("main"))  # event 2: names main, foo is innermost
    b.event(loc, 3.0, EventType.EXIT, a=b.region("bar"))  # event 3: nothing open any more
    got = messages(validate(b.build()))
    assert got == [
        "location 0, event 2 at 2.000000000 s: EXIT names region 'main' but the innermost open region is 'foo' "
        "(entered at event 1)",
        "location 0, event 3 at 3.000000000 s: EXIT of region 'bar' but no region is open",
    ]


def test_unclosed_region_and_time_going_backwards():
    b = tracefmt.TraceBuilder()
    loc = b.location()
    b.enter(loc, 5.0, "main")
    b.enter(loc, 4.0, "foo")
    b.exit(loc, 4.5)
    got = validate(b.build())
    assert [(p.location, p.index, p.time) for p in got] == [(0, 1, 4.0), (0, 2, 4.5)]
    assert "time goes backwards" in got[0].message
    assert "'main' entered at event 0 is never left" in got[1].message


def test_unmatched_send_and_receive():
    b = tracefmt.TraceBuilder()
    r0, r1 = b.location(0), b.location(1)
    b.send(r0, 1.0, dest=1, tag=5)
    b.recv(r1, 2.0, source=0, tag=6)  # different tag: no match either way
    got = validate(b.build())
    assert [(p.location, p.index) for p in got] == [(0, 0), (1, 0)]
    assert "send to rank 1 (tag 5" in got[0].message and "no matching receive" in got[0].message
    assert "receive from rank 0 (tag 6" in got[1].message and "no matching send" in got[1].message


def test_messages_match_in_order_and_clock_condition():
    b = tracefmt.TraceBuilder()
    r0, r1 = b.location(0), b.location(1)
    b.send(r0, 1.0, dest=1, tag=1)
    b.send(r0, 3.0, dest=1, tag=1)
    b.recv(r1, 2.0, source=0, tag=1)  # matches the first send: fine
    b.recv(r1, 2.5, source=0, tag=1)  # matches the second (sent at 3.0): 0.5 s too early
    got = validate(b.build())
    assert len(got) == 1
    p = got[0]
    assert (p.location, p.index, p.time) == (1, 1, 2.5)
    assert "clock condition violated" in p.message and "0.500000000 s before its send started" in p.message


def test_clock_condition_uses_corrected_global_time():
    b = tracefmt.TraceBuilder()
    r0, r1 = b.location(0), b.location(1)
    b.send(r0, 1.0, dest=1)
    b.recv(r1, 0.9, source=0)  # early on rank 1's clock ...
    b.clock_offset(1, 0.0, 0.2)  # ... but that clock is 0.2 s behind: global 1.1 s
    assert validate(b.build()) == []


def test_incomplete_collective_and_mismatched_operation():
    b = tracefmt.TraceBuilder()
    r = [b.location(i) for i in range(3)]
    for i in range(3):
        b.collective(r[i], 1.0, 2.0, "MPI_Barrier")
    b.collective(r[0], 3.0, 4.0, "MPI_Bcast", root=0)
    b.collective(r[1], 3.0, 4.0, "MPI_Reduce", root=0)  # rank 2 never takes part in instance 1
    got = messages(validate(b.build()))
    assert got == [
        "location 2, event 1 at 2.000000000 s: rank 2 completes 1 collectives on 'MPI_COMM_WORLD', other members 2: "
        "instances 1..1 are incomplete",
        "location 1, event 3 at 4.000000000 s: collective instance 1 on 'MPI_COMM_WORLD' is 'MPI_Reduce' here "
        "but 'MPI_Bcast' on rank 0",
    ]


def test_collective_root_mismatch_and_non_member():
    b = tracefmt.TraceBuilder()
    r0, r1, r2 = b.location(0), b.location(1), b.location(2)
    pair = b.comm([0, 1], name="pair")
    b.collective(r0, 0, 1, "MPI_Bcast", comm=pair, root=0)
    b.collective(r1, 0, 1, "MPI_Bcast", comm=pair, root=1)
    b.collective(r2, 0, 1, "MPI_Bcast", comm=pair, root=0)
    got = messages(validate(b.build()))
    assert got == [
        "location 2, event 1 at 1.000000000 s: rank 2 takes part in a collective on 'pair', which it is not in",
        "location 1, event 1 at 1.000000000 s: collective instance 0 on 'pair' has root 1 here but 0 on rank 0",
    ]


def test_request_defects():
    b = tracefmt.TraceBuilder()
    r0, r1 = b.location(0), b.location(1)
    b.send(r0, 1.0, dest=1, request=4)  # never completed
    b.recv(r1, 2.0, source=0, request=9)  # completes a request that was never posted
    got = messages(validate(b.build()))
    assert "location 0, event 0 at 1.000000000 s: send request 4 posted at event 0 is never completed" in got
    assert "location 1, event 0 at 2.000000000 s: receive completes request 9, which was never posted" in got
    assert len(got) == 2


def test_lock_defects():
    b = tracefmt.TraceBuilder()
    t0, t1 = b.location(0, 0), b.location(0, 1)
    b.acquire(t0, 1.0, "L")  # order 1, held until 3.0
    b.acquire(t1, 2.0, "L")  # order 2 while t0 still holds it
    b.release(t1, 2.5, "L")
    b.release(t0, 3.0, "L")
    got = validate(b.build())
    assert len(got) == 1
    assert (got[0].location, got[0].index, got[0].time) == (t1, 0, 2.0)
    assert "acquired (order 2) before its previous holder, location 0, released it at 3.000000000 s" in got[0].message


def test_lock_order_gap_and_release_without_hold():
    b = tracefmt.TraceBuilder()
    t0 = b.location(0, 0)
    b.acquire(t0, 1.0, "L", order=1)
    b.release(t0, 1.5, "L")
    b.acquire(t0, 2.0, "L", order=3)
    b.release(t0, 2.5, "L")
    b.event(t0, 3.0, EventType.OMP_RELEASE_LOCK, a=b.lock("L"), d=3)
    got = messages(validate(b.build()))
    assert got == [
        "location 0, event 4 at 3.000000000 s: release of lock 0, which this location does not hold",
        "location 0, event 0 at 1.000000000 s: acquisition orders of lock 0 in process 0 are [1, 3], not 1..2",
    ]


def test_team_defects():
    b = tracefmt.TraceBuilder()
    m, w = b.location(0, 0), b.location(0, 1)
    b.fork(m, 0.0, team=7, size=2)
    b.enter(m, 0.0, "!$omp parallel")
    b.enter(w, 0.0, "!$omp parallel", thread_num=0)  # same thread number as the master
    b.barrier(m, 0.1, 0.2)  # only the master passes a barrier
    b.omp_coll_exit(m, 0.3)
    b.omp_coll_exit(w, 0.3)
    b.join(m, 0.3, team=7, size=2)
    b.fork(m, 0.4, team=8, size=1)  # never joined
    got = messages(validate(b.build()))
    assert "location 0, event 6 at 0.400000000 s: team 8 forked at event 6 is never joined" in got
    assert any("team 7 of process 0 has repeated thread numbers [0, 0]" in g for g in got)
    assert "location 1: members of team 7 of process 0 pass different numbers of barriers " \
        "(location 0: 2, location 1: 1)" in got
    assert len(got) == 3


def test_undefined_references():
    b = tracefmt.TraceBuilder()
    loc = b.location()
    b.event(loc, 0.0, EventType.ENTER, a=99, c=NO_ID, d=NO_ID)
    b.event(loc, 0.1, EventType.MPI_SEND, a=0, b=42)
    b.event(loc, 0.2, EventType.COUNTER, a=3)
    b.event(loc, 0.3, 99)
    b.event(loc, 0.4, EventType.EXIT, a=99)
    got = messages(validate(b.build()))
    assert got == [
        "location 0, event 0 at 0.000000000 s: ENTER of undefined region 99",
        "location 0, event 1 at 0.100000000 s: MPI_SEND on undefined communicator 42",
        "location 0, event 2 at 0.200000000 s: value of undefined metric 3",
        "location 0, event 3 at 0.300000000 s: unknown event type 99",
    ]


def test_max_problems_stops_early():
    b = tracefmt.TraceBuilder()
    loc = b.location()
    for i in range(50):
        b.event(loc, float(i), EventType.EXIT, a=0)
    assert len(validate(b.build(), max_problems=5)) == 5


# ---------------------------------------------------------------------- jitted nesting check
import numpy as np  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tracefmt.kernels import first_nesting_error  # noqa: E402

EXIT_CODES = np.array([EventType.EXIT, EventType.MPI_COLLEXIT, EventType.OMP_COLLEXIT], np.uint8)


def nesting_reference(types, regions):
    """Obviously correct: a list as the stack."""
    stack = []
    for i, (t, r) in enumerate(zip(types, regions)):
        if t == EventType.ENTER:
            stack.append(r)
        elif t in (EventType.EXIT, EventType.MPI_COLLEXIT, EventType.OMP_COLLEXIT):
            if not stack or stack[-1] != r:
                return i
            stack.pop()
    return len(types) if stack else -1


@st.composite
def event_streams(draw):
    """Mostly well-nested streams (so the interesting late errors occur), sometimes damaged."""
    types, regions, stack = [], [], []
    for _ in range(draw(st.integers(0, 60))):
        action = draw(st.sampled_from(["enter", "exit", "other"]))
        if action == "enter" or not stack and action == "exit":
            r = draw(st.integers(0, 3))
            types.append(EventType.ENTER)
            regions.append(r)
            stack.append(r)
        elif action == "exit":
            types.append(draw(st.sampled_from(list(EXIT_CODES))))
            regions.append(stack.pop())
        else:
            types.append(draw(st.sampled_from([EventType.MPI_SEND, EventType.COUNTER, EventType.OMP_FORK])))
            regions.append(draw(st.integers(0, 3)))
    if types and draw(st.booleans()):  # damage one event
        i = draw(st.integers(0, len(types) - 1))
        regions[i] = draw(st.integers(0, 4))
        if draw(st.booleans()):
            types[i] = draw(st.sampled_from([EventType.ENTER, EventType.EXIT, EventType.MPI_RECV]))
    return np.array(types, np.uint8), np.array(regions, np.uint32)


@settings(max_examples=300, deadline=None)
@given(event_streams())
def test_nesting_kernel_matches_reference(stream):
    types, regions = stream
    assert first_nesting_error(types, regions, np.uint8(EventType.ENTER), EXIT_CODES) == nesting_reference(
        types, regions
    )


def test_fast_and_full_walk_report_the_same_problems():
    traces = []
    b, _ = clean_hybrid()
    traces.append(b.build())
    b, locs = clean_hybrid()
    b.event(locs[0, 1], 3.0, EventType.EXIT, a=b.region("main"))  # exit with nothing open
    b.send(locs[1, 0], 3.0, dest=0, tag=99)  # unmatched
    traces.append(b.build())
    b, locs = clean_hybrid()
    b.enter(locs[0, 1], 3.0, "dangling")  # never left
    b.event(locs[1, 1], 3.0, EventType.ENTER, a=999, c=NO_ID, d=NO_ID)  # undefined region
    traces.append(b.build())
    for t in traces:
        full = validate(t, fast_path_events=10**12)
        fast = validate(t, fast_path_events=0)
        assert fast == full
    assert validate(traces[0], fast_path_events=0) == []
    assert len(validate(traces[1], fast_path_events=0)) == 2
    assert len(validate(traces[2], fast_path_events=0)) == 3
