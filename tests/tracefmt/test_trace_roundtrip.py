"""Writer -> bytes -> reader: everything written comes back, field by field."""

import io
import struct

import numpy as np
import pytest

import tracefmt
from tracefmt import layout
from tracefmt.layout import NO_ID, EventType, LockKind, Paradigm, Role


def two_rank_pingpong():
    b = tracefmt.TraceBuilder()
    r0 = b.location(rank=0, thread=0)
    r1 = b.location(rank=1, thread=0)
    b.enter(r0, 0.0, "main")
    b.enter(r1, 0.0, "main")
    b.enter(r0, 1.0, "MPI_Send")
    b.send(r0, 1.0, dest=1, tag=7, nbytes=64)
    b.exit(r0, 1.5, "MPI_Send")
    b.enter(r1, 0.2, "MPI_Recv")
    b.recv(r1, 1.4, source=0, tag=7, nbytes=64)
    b.exit(r1, 1.5, "MPI_Recv")
    b.exit(r0, 2.0, "main")
    b.exit(r1, 2.0, "main")
    return b


def test_architecture_example_round_trip():
    trace = two_rank_pingpong().build()
    assert trace.complete and trace.problems == []
    assert trace.header.version == (2, layout.VERSION_MINOR)
    assert trace.location_ids.tolist() == [0, 1]
    assert trace.n_events(0) == 5 and trace.n_events(1) == 5

    ev = trace.events(1)
    assert len(ev) == 5
    assert ev.type.tolist() == [EventType.ENTER, EventType.ENTER, EventType.MPI_RECV, EventType.EXIT, EventType.EXIT]
    assert ev.time.tolist() == [0.0, 0.2, 1.4, 1.5, 2.0]
    assert ev.ticks.tolist() == [0, 200_000_000, 1_400_000_000, 1_500_000_000, 2_000_000_000]
    recv = ev[2:3]
    world = trace.defs.comms[int(recv.b[0])]
    assert (recv.a[0], recv.c[0], recv.d[0], recv.e[0]) == (0, 7, 64, 0)
    assert world.name == "MPI_COMM_WORLD" and world.ranks == (0, 1)
    # exits name the region they leave
    names = {r.id: r.name for r in trace.defs.regions.values()}
    assert [names[int(a)] for a in ev.a[[0, 1, 3, 4]]] == ["main", "MPI_Recv", "MPI_Recv", "main"]
    assert trace.defs.regions[trace.defs.region_id("MPI_Recv")].role == Role.MPI_POINT2POINT
    for col in (ev.time, ev.ticks, ev.type, ev.flags, ev.a, ev.b, ev.c, ev.d, ev.e):
        assert col.flags.c_contiguous and col.dtype.isnative


def test_column_dtypes():
    ev = two_rank_pingpong().build().events(0)
    assert ev.time.dtype == np.float64 and ev.ticks.dtype == np.uint64
    assert ev.type.dtype == np.uint8 and ev.flags.dtype == np.uint8
    assert ev.a.dtype == ev.b.dtype == ev.c.dtype == np.uint32
    assert ev.d.dtype == ev.e.dtype == np.uint64


def test_file_round_trip_and_both_byte_orders(tmp_path):
    b = two_rank_pingpong()
    little = tmp_path / "l.elg"
    big = tmp_path / "b.elg"
    b.write(little)
    b.write(big, byte_order=layout.BYTE_ORDER_BIG)
    assert little.read_bytes()[8] == layout.BYTE_ORDER_LITTLE and big.read_bytes()[8] == layout.BYTE_ORDER_BIG
    with tracefmt.open(little) as tl, tracefmt.open(big) as tb:
        assert tb.header.byte_order == layout.BYTE_ORDER_BIG and tb.complete
        assert tl.defs == tb.defs
        for loc in (0, 1):
            el, eb = tl.events(loc), tb.events(loc)
            for f in ("time", "ticks", "type", "flags", "a", "b", "c", "d", "e"):
                assert np.array_equal(getattr(el, f), getattr(eb, f)), f


def test_all_definition_kinds_round_trip():
    b = tracefmt.TraceBuilder(creator="unit test ✓")
    m = b.location(rank=3, thread=0, node=1)
    w = b.location(rank=3, thread=1, node=1)
    b.region("solve", file="solver.f90", begin_line=10, end_line=99)
    b.region("halo", paradigm=Paradigm.USER, role=Role.USER_REGION)
    b.lock("!$omp critical [update]", LockKind.OMP_CRITICAL)
    b.metric("PAPI_TOT_CYC", unit="cycles")
    sub = b.comm([3], name="row comm", parent=b.world())
    b.clock_offset(3, 0.5, 1e-3)
    b.clock_offset(3, 10.5, 2e-3)
    b.attribute("command", "./a.out -n 4")
    b.enter(m, 0.0, "solve")
    b.exit(m, 1.0)
    b.enter(w, 0.0, "halo")
    b.exit(w, 1.0)
    t = b.build()
    d = t.defs
    assert t.header.creator == "unit test ✓"
    assert d.files == {0: "solver.f90"}
    solve = d.regions[d.region_id("solve")]
    assert (solve.file, solve.begin_line, solve.end_line) == (0, 10, 99)
    assert d.regions[d.region_id("halo")].role == Role.USER_REGION
    assert d.locks[0].kind == LockKind.OMP_CRITICAL and d.locks[0].name == "!$omp critical [update]"
    assert d.metrics[0].name == "PAPI_TOT_CYC" and d.metrics[0].unit == "cycles"
    assert d.comms[sub].ranks == (3,) and d.comms[sub].parent == b.world()
    assert d.comms[b.world()].ranks == (3,)
    assert [(o.local_time, o.offset) for o in d.offsets[3]] == [(0.5, 1e-3), (10.5, 2e-3)]
    assert d.attributes == {"command": "./a.out -n 4"}
    assert d.nodes[1].machine == 0 and d.processes[3].node == 1
    assert d.location_id(3, 1) == w and d.locations[w].thread == 1


def test_clock_offsets_are_interpolated_like_epik():
    b = tracefmt.TraceBuilder()
    loc = b.location(rank=0)
    b.clock_offset(0, 1.0, 0.010)
    b.clock_offset(0, 11.0, 0.030)
    for t in (0.0, 1.0, 6.0, 11.0, 21.0):
        b.enter(loc, t, "f")
        b.exit(loc, t)
    got = b.build().events(loc).time[::2]
    # global = t + o0 + (o1 - o0) * (t - l0) / (l1 - l0), also outside [l0, l1]
    expect = [0.0 + 0.008, 1.0 + 0.010, 6.0 + 0.020, 11.0 + 0.030, 21.0 + 0.050]
    assert np.allclose(got, expect, rtol=0, atol=1e-12)


def test_one_offset_is_a_constant_shift_and_clock_definition_is_honoured():
    defs = tracefmt.Definitions()
    defs.machines[0] = tracefmt.Machine(0, "m")
    defs.nodes[0] = tracefmt.Node(0, 0, "n")
    defs.processes[0] = tracefmt.Process(0, 0, "p")
    defs.locations[0] = tracefmt.Location(0, 0, 0, "t")
    defs.clocks[0] = tracefmt.Clock(0, ticks_per_second=2.5e9, origin=1000)
    defs.offsets[0] = [tracefmt.Offset(3.0, -0.5)]
    rec = np.zeros(3, layout.EVENT_DTYPE)
    rec["time"] = [0, 1000, 1000 + 5_000_000_000]
    rec["type"] = EventType.COUNTER
    buf = io.BytesIO()
    with tracefmt.TraceWriter(buf) as w:
        w.write_definitions(defs)
        w.write_events(0, rec)
    ev = tracefmt.open(buf.getvalue()).events(0)
    # a tick before the clock's origin is a negative local time, not a wrap-around
    assert np.allclose(ev.time, [-1000 / 2.5e9 - 0.5, -0.5, 2.0 - 0.5], rtol=0, atol=1e-15)


def test_events_split_over_blocks_and_definitions_split_over_blocks():
    defs1 = tracefmt.Definitions()
    defs1.machines[0] = tracefmt.Machine(0, "m")
    defs1.nodes[0] = tracefmt.Node(0, 0, "n")
    defs1.processes[0] = tracefmt.Process(0, 0, "p")
    defs1.locations[0] = tracefmt.Location(0, 0, 0, "shared name")
    defs2 = tracefmt.Definitions()
    defs2.regions[0] = tracefmt.Region(0, "shared name")  # reuses a string of the first block
    rec = np.zeros(10, layout.EVENT_DTYPE)
    rec["time"] = np.arange(10)
    rec["a"] = np.arange(10) * 3
    buf = io.BytesIO()
    with tracefmt.TraceWriter(buf) as w:
        w.write_definitions(defs1)
        w.write_events(0, rec[:4])
        w.write_definitions(defs2)
        w.write_events(0, rec[4:])
    t = tracefmt.open(buf.getvalue())
    assert [b.kind for b in t.blocks] == [1, 2, 1, 2]
    assert t.n_events(0) == 10
    ev = t.events(0)
    assert ev.ticks.tolist() == list(range(10)) and ev.a.tolist() == [3 * i for i in range(10)]
    assert t.defs.regions[0].name == "shared name" and t.defs.locations[0].name == "shared name"
    assert sorted(t.defs.strings.values()) == ["m", "n", "p", "shared name"]  # written once


def test_location_without_events_and_unknown_location():
    b = tracefmt.TraceBuilder()
    b.location(rank=0)
    t = b.build()
    assert t.n_events(0) == 0 and len(t.events(0)) == 0
    with pytest.raises(KeyError):
        t.events(5)


def test_counter_and_lock_and_omp_fields():
    b = tracefmt.TraceBuilder()
    m = b.location(rank=0, thread=0)
    w = b.location(rank=0, thread=1)
    b.enter(m, 0.0, "main")
    b.fork(m, 0.1, team=5, size=2)
    b.enter(m, 0.1, "!$omp parallel @a.c:1")
    b.enter(w, 0.1, "!$omp parallel @a.c:1")
    b.enter(m, 0.2, "omp_set_lock")
    b.acquire(m, 0.3, "L")
    b.exit(m, 0.3)
    b.enter(w, 0.2, "omp_set_lock")
    b.acquire(w, 0.5, "L")
    b.exit(w, 0.5)
    b.release(w, 0.6, "L")
    b.release(m, 0.4, "L")
    b.barrier(m, 0.7, 0.8)
    b.barrier(w, 0.6, 0.8)
    b.omp_coll_exit(m, 0.9)
    b.omp_coll_exit(w, 0.9)
    b.join(m, 0.95, team=5, size=2)
    b.counter(m, 0.95, "PAPI_FP_OPS", 12345)
    b.exit(m, 1.0)
    t = b.build()
    em, ew = t.events(m), t.events(w)
    par = em[em.type == EventType.ENTER][1]
    assert (par.c, par.d) == (5, 0)
    parw = ew[ew.type == EventType.ENTER][0]
    assert (parw.c, parw.d) == (5, 1)
    acq_m = em[em.type == EventType.OMP_ACQUIRE_LOCK]
    acq_w = ew[ew.type == EventType.OMP_ACQUIRE_LOCK]
    rel_w = ew[ew.type == EventType.OMP_RELEASE_LOCK]
    assert acq_m.d.tolist() == [1] and acq_w.d.tolist() == [2] and rel_w.d.tolist() == [2]
    fork = em[em.type == EventType.OMP_FORK]
    assert (fork.a[0], fork.c[0]) == (5, 2)
    cx = em[em.type == EventType.OMP_COLLEXIT]
    assert cx.b.tolist() == [5, 5]
    names = [t.defs.regions[int(r)].name for r in cx.a]
    assert names == ["!$omp barrier", "!$omp parallel @a.c:1"]
    cnt = em[em.type == EventType.COUNTER]
    assert cnt.d.tolist() == [12345] and t.defs.metrics[int(cnt.a[0])].name == "PAPI_FP_OPS"


def test_double_metric_is_stored_as_ieee_bits():
    b = tracefmt.TraceBuilder()
    loc = b.location()
    b.metric("power", unit="W", dtype=layout.MetricDtype.DOUBLE, mode=layout.MetricMode.ABSOLUTE)
    b.counter(loc, 1.0, "power", 97.25)
    ev = b.build().events(loc)
    assert struct.unpack("<d", struct.pack("<Q", int(ev.d[0])))[0] == 97.25


def test_index_lists_every_block_with_time_range():
    t = two_rank_pingpong().build()
    kinds = [b.kind for b in t.blocks]
    assert kinds == [layout.BlockKind.DEFINITIONS, layout.BlockKind.EVENTS, layout.BlockKind.EVENTS]
    assert t.time_range(1) == (0.0, 2.0)
    ev_blocks = [b for b in t.blocks if b.kind == layout.BlockKind.EVENTS]
    assert [(b.location, b.count, b.first_time, b.last_time) for b in ev_blocks] == [
        (0, 5, 0, 2_000_000_000),
        (1, 5, 0, 2_000_000_000),
    ]


def test_writer_rejects_wrong_records(tmp_path):
    with tracefmt.TraceWriter(tmp_path / "x.elg") as w:
        with pytest.raises(ValueError):
            w.write_events(0, np.zeros(3, dtype=[("time", "u8")]))
        with pytest.raises(ValueError):
            w.write_events(NO_ID, np.zeros(3, layout.EVENT_DTYPE))
