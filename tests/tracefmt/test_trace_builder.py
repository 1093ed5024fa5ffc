"""TraceBuilder conventions: tick conversion, world communicator, stacks, lock order."""

import pytest

import tracefmt
from tracefmt.layout import ANY, NO_ID, EventType, Role


def test_seconds_become_nanosecond_ticks_rounded_to_nearest():
    b = tracefmt.TraceBuilder()
    loc = b.location()
    b.enter(loc, 1.0000000004, "f")  # 1_000_000_000.4 ticks -> down
    b.exit(loc, 1.0000000006)  # 1_000_000_000.6 ticks -> up
    assert b.build().events(loc).ticks.tolist() == [1_000_000_000, 1_000_000_001]


def test_world_contains_every_rank_with_a_location_even_ones_added_later():
    b = tracefmt.TraceBuilder()
    r0 = b.location(rank=0)
    b.enter(r0, 0, "MPI_Barrier")
    b.coll_exit(r0, 1)  # world made here, when only rank 0 exists
    b.location(rank=2, thread=0)
    b.location(rank=2, thread=1)
    b.location(rank=1)
    t = b.build()
    world = t.defs.comms[b.world()]
    assert world.name == "MPI_COMM_WORLD" and world.ranks == (0, 1, 2)
    assert t.events(r0).b[-1] == b.world()


def test_location_ids_are_dense_and_reused():
    b = tracefmt.TraceBuilder()
    assert [b.location(0, 0), b.location(0, 1), b.location(1, 0), b.location(0, 1)] == [0, 1, 2, 1]


def test_exit_closes_innermost_and_checks_a_given_name():
    b = tracefmt.TraceBuilder()
    loc = b.location()
    b.enter(loc, 0, "main")
    b.enter(loc, 1, "foo")
    with pytest.raises(tracefmt.BuilderError, match="innermost open region is 'foo'"):
        b.exit(loc, 2, "main")
    b.exit(loc, 2)
    b.exit(loc, 3, "main")
    with pytest.raises(tracefmt.BuilderError, match="no region is open"):
        b.exit(loc, 4)
    ev = b.build().events(loc)
    foo, main = b.region("foo"), b.region("main")
    assert ev.a.tolist() == [main, foo, foo, main]


def test_coll_exit_and_omp_coll_exit_close_the_innermost_region():
    b = tracefmt.TraceBuilder()
    m = b.location(0, 0)
    b.enter(m, 0, "main")
    b.collective(m, 1, 2, "MPI_Bcast", root=0, sent=8, recvd=8)
    b.fork(m, 3, team=1, size=1)
    b.enter(m, 3, "!$omp parallel")
    b.enter(m, 4, "!$omp for")
    b.omp_coll_exit(m, 5)
    b.omp_coll_exit(m, 6)
    b.join(m, 6, team=1, size=1)
    b.exit(m, 7, "main")
    ev = b.build().events(m)
    t = list(ev.type)
    assert t == [
        EventType.ENTER,
        EventType.ENTER,
        EventType.MPI_COLLEXIT,
        EventType.OMP_FORK,
        EventType.ENTER,
        EventType.ENTER,
        EventType.OMP_COLLEXIT,
        EventType.OMP_COLLEXIT,
        EventType.OMP_JOIN,
        EventType.EXIT,
    ]
    cx = ev[2]
    assert (cx.a, cx.b, cx.c, cx.d, cx.e) == (b.region("MPI_Bcast"), b.world(), 0, 8, 8)
    assert ev.a[6] == b.region("!$omp for") and ev.a[7] == b.region("!$omp parallel")
    # team and thread number default from the fork and the location
    assert (ev.c[4], ev.d[4]) == (1, 0)


def test_collective_without_root_stores_no_id():
    b = tracefmt.TraceBuilder()
    loc = b.location()
    b.collective(loc, 0, 1, "MPI_Allreduce", sent=4, recvd=4)
    assert b.build().events(loc).c[-1] == NO_ID


def test_recv_request_any_source_and_tag():
    b = tracefmt.TraceBuilder()
    loc = b.location()
    b.recv_request(loc, 0, request=9)
    b.recv_request(loc, 0, request=10, source=3, tag=4)
    ev = b.build().events(loc)
    assert ev.a.tolist() == [ANY, 3] and ev.c.tolist() == [ANY, 4] and ev.e.tolist() == [9, 10]


def test_lock_order_counts_per_process_and_lock():
    b = tracefmt.TraceBuilder()
    p0t0, p0t1, p1t0 = b.location(0, 0), b.location(0, 1), b.location(1, 0)
    b.acquire(p0t0, 0, "A")
    b.release(p0t0, 1, "A")
    b.acquire(p0t1, 1, "A")
    b.acquire(p0t1, 1.5, "B")
    b.release(p0t1, 2, "B")
    b.release(p0t1, 2, "A")
    b.acquire(p1t0, 0, "A")  # another process: its own count
    b.release(p1t0, 1, "A")
    t = b.build()
    order = {loc: t.events(loc).d.tolist() for loc in (p0t0, p0t1, p1t0)}
    assert order == {p0t0: [1, 1], p0t1: [2, 1, 1, 2], p1t0: [1, 1]}
    with pytest.raises(tracefmt.BuilderError, match="not held"):
        b.release(p1t0, 3, "A")


def test_explicit_region_attributes_and_conflicts():
    b = tracefmt.TraceBuilder()
    rid = b.region("my barrier", role=Role.OMP_BARRIER)
    assert b.region("my barrier") == rid
    with pytest.raises(tracefmt.BuilderError):
        b.region("my barrier", role=Role.FUNCTION)


def test_bad_arguments_are_builder_errors():
    b = tracefmt.TraceBuilder()
    loc = b.location()
    with pytest.raises(tracefmt.BuilderError, match="unknown location"):
        b.enter(7, 0, "f")
    with pytest.raises(tracefmt.BuilderError, match="time"):
        b.enter(loc, -1.0, "f")
    with pytest.raises(tracefmt.BuilderError, match="time"):
        b.enter(loc, float("nan"), "f")
    with pytest.raises(tracefmt.BuilderError, match="team"):
        b.enter(loc, 0, "!$omp parallel")  # nothing forked
    with pytest.raises(tracefmt.BuilderError, match="communicator"):
        b.send(loc, 0, dest=1, comm=42)
    with pytest.raises(tracefmt.BuilderError):
        b.comm([0, 0])


def test_raw_event_is_unchecked():
    b = tracefmt.TraceBuilder()
    loc = b.location()
    b.event(loc, 1.0, EventType.EXIT, a=12345)  # exit without enter, undefined region
    ev = b.build().events(loc)
    assert ev.type.tolist() == [EventType.EXIT] and ev.a.tolist() == [12345]


def test_explicit_world_communicator_is_used_as_is():
    b = tracefmt.TraceBuilder()
    r0 = b.location(rank=0)
    b.location(rank=1)
    w = b.comm([1, 0], name="MPI_COMM_WORLD")  # explicit: its rank order is kept
    b.collective(r0, 0, 1, "MPI_Barrier")  # comm=None: the world made above
    t = b.build()
    assert b.world() == w and len(t.defs.comms) == 1
    assert t.defs.comms[w].ranks == (1, 0)
