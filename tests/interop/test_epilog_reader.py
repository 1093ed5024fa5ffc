"""EPILOG 1.x input: hand-built merged traces and EPIK archives with known content."""

from __future__ import annotations

import gzip
import os

import numpy as np
import pytest

from analyzer.analyze import analyze
from elgwrite import NO_ID, ElgWriter, Strings
from epilog_samples import (
    ALLRED,
    CRIT,
    CRIT_NAME,
    IBAR,
    MAIN,
    PAR,
    RECV,
    SBLOCK,
    SEND,
    epik_hybrid,
    merged_mpi,
)

from tracefmt import epilog
from tracefmt.errors import TraceFormatError
from tracefmt.layout import ANY, EventType as E, LockKind, Paradigm, Role

NS = 1_000_000_000


def ns(t_seconds_since_origin: float) -> int:
    return int(round(t_seconds_since_origin * NS))


def kinds(ev):
    return [E(t).name for t in ev["type"]]


@pytest.mark.parametrize("big_endian", [False, True])
@pytest.mark.parametrize("compress", [False, True])
def test_merged_trace_events_ranks_and_bytes(tmp_path, big_endian, compress):
    path = merged_mpi(tmp_path / "m.elg", big_endian=big_endian, compress=compress)
    asm = epilog.read(path)
    assert sorted(asm.locations) == [0, 1]
    assert (asm.locations[0].rank, asm.locations[1].rank) == (0, 1)
    r0, r1 = asm.events[0], asm.events[1]
    assert kinds(r0) == ["ENTER", "ENTER", "MPI_SEND", "EXIT", "ENTER", "MPI_COLLEXIT", "EXIT"]
    assert kinds(r1) == ["ENTER", "ENTER", "MPI_RECV", "EXIT", "ENTER", "MPI_COLLEXIT", "EXIT"]
    # EXIT carries no region in EPILOG: the reader's stack supplies it
    assert r0["a"][3] == 1 and r0["a"][6] == 0
    assert r1["a"][3] == 2
    # partner ids in merged traces are location ids: location 9 is rank 1, location 5 rank 0
    send, recv = r0[2], r1[2]
    assert (send["a"], send["b"], send["c"], send["d"]) == (1, 0, 7, 64)
    assert (recv["a"], recv["b"], recv["c"]) == (0, 0, 7)
    assert recv["d"] == 64  # EPILOG drops the received size; taken from the matching send
    coll = r0[5]
    assert (coll["a"], coll["b"], coll["c"], coll["d"], coll["e"]) == (3, 0, NO_ID, 0, 0)
    # times rebased to the earliest event (1.0 s)
    assert r0["time"].tolist() == [0, ns(1.0), ns(1.0), ns(1.5), ns(2.0), ns(3.0), ns(4.0)]
    assert r1["time"].tolist() == [0, ns(0.5), ns(1.25), ns(1.5), ns(2.5), ns(3.0), ns(4.0)]
    # classification by type code and by the MPI naming conventions
    regs = asm.regions
    assert (regs[0].paradigm, regs[0].role) == (Paradigm.USER, Role.FUNCTION)
    assert (regs[1].paradigm, regs[1].role) == (Paradigm.MPI, Role.MPI_POINT2POINT)
    assert regs[3].role == Role.MPI_COLL_BARRIER
    assert regs[1].file == "MPI" and regs[0].file == "ring.c" and regs[0].begin_line == 10
    assert asm.groups[asm.comms[0][0]] == (0, 1)


def test_merged_trace_opens_as_native_trace(tmp_path):
    trace = epilog.open_epilog(merged_mpi(tmp_path / "m.elg"))
    assert trace.location_ids.tolist() == [0, 1]
    ev = trace.events(1)
    assert ev.time.tolist() == [0.0, 0.5, 1.25, 1.5, 2.5, 3.0, 4.0]
    assert trace.defs.regions[2].name == "MPI_Recv"
    assert trace.defs.comms[0].ranks == (0, 1)


def test_old_version_without_comm_mode(tmp_path):
    # EPILOG 1.2: MPI_COMM has no mode byte, NODE still carries the clock rate
    asm = epilog.read(merged_mpi(tmp_path / "old.elg", version=(1, 2)))
    assert asm.groups[asm.comms[0][0]] == (0, 1)
    assert asm.events[1]["d"][2] == 64
    # EPILOG 1.0: NODE without clock rate
    asm = epilog.read(merged_mpi(tmp_path / "v10.elg", version=(1, 0)))
    assert kinds(asm.events[0])[2] == "MPI_SEND"


@pytest.fixture
def hybrid(tmp_path):
    return epilog.read(epik_hybrid(str(tmp_path / "epik_jacobi")))


def test_archive_locations_and_local_ids(hybrid):
    a = hybrid
    assert [(a.locations[i].rank, a.locations[i].thread) for i in range(4)] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    # rank 1 uses local region ids: mapped back through epik.map
    assert a.events[2]["a"][0] == MAIN
    assert [int(x) for x in a.events[2]["a"][[2, 4]]] == [PAR, IBAR]


def test_archive_openmp_teams_and_locks(hybrid):
    ev0, ev1, ev2 = hybrid.events[0], hybrid.events[1], hybrid.events[2]
    assert kinds(ev0)[:3] == ["ENTER", "OMP_FORK", "ENTER"]
    fork, join = ev0[1], ev0[list(ev0["type"]).index(E.OMP_JOIN)]
    assert (fork["a"], fork["c"]) == (0, 2)  # first team of rank 0, two threads
    assert (join["a"], join["c"]) == (0, 2)
    par_enter = ev1[0]
    assert (par_enter["a"], par_enter["c"], par_enter["d"]) == (PAR, 0, 1)  # team 0, thread number 1
    assert (ev0[2]["c"], ev0[2]["d"]) == (0, 0)
    # rank 1 numbers its own teams from 0 as well
    assert (ev2[1]["type"], ev2[1]["a"], ev2[1]["c"]) == (E.OMP_FORK, 0, 2)
    # implicit barrier and parallel end: OMP_COLLEXIT naming region and team
    ce = ev1[ev1["type"] == E.OMP_COLLEXIT]
    assert ce["a"].tolist() == [IBAR, PAR] and ce["b"].tolist() == [0, 0]
    # critical: acquisition order counted from 1 over both threads of the process
    acq0 = ev0[ev0["type"] == E.OMP_ACQUIRE_LOCK]
    acq1 = ev1[ev1["type"] == E.OMP_ACQUIRE_LOCK]
    rel1 = ev1[ev1["type"] == E.OMP_RELEASE_LOCK]
    assert acq0["d"].tolist() == [1] and acq1["d"].tolist() == [2] and rel1["d"].tolist() == [2]
    assert acq0["a"][0] == acq1["a"][0]
    kind, name = hybrid.locks[int(acq0["a"][0])]
    assert kind == LockKind.OMP_CRITICAL and name == CRIT_NAME
    assert hybrid.regions[SBLOCK].role == Role.OMP_CRITICAL_BODY
    assert hybrid.regions[CRIT].role == Role.OMP_CRITICAL
    assert hybrid.regions[IBAR].role == Role.OMP_IMPLICIT_BARRIER


def test_archive_comm_local_ranks_and_clock_offsets(hybrid):
    ev0, ev2 = hybrid.events[0], hybrid.events[2]
    send = ev0[ev0["type"] == E.MPI_SEND][0]
    recv = ev2[ev2["type"] == E.MPI_RECV][0]
    assert (send["a"], send["b"], send["c"], send["d"]) == (1, 1, 3, 100)
    # local rank 1 of communicator (1, 0) is global rank 0; bytes from the send
    assert (recv["a"], recv["b"], recv["c"], recv["d"]) == (0, 1, 3, 100)
    # rank 1: global = 1.5 x local, rebased to rank 0's first event at 1.0
    assert recv["time"] == ns(5.1 - 1.0)
    assert ev2["time"][0] == ns(1.5 - 1.0)
    assert ev2["time"][-1] == ns(6.0 - 1.0)
    coll = ev2[ev2["type"] == E.MPI_COLLEXIT][0]
    assert (coll["a"], coll["b"], coll["d"], coll["e"]) == (ALLRED, 0, 8, 8)
    assert hybrid.regions[ALLRED].role == Role.MPI_COLL_ALL2ALL
    assert hybrid.regions[SEND].role == Role.MPI_POINT2POINT and hybrid.regions[RECV].file == "MPI"
    assert hybrid.groups[hybrid.comms[1][0]] == (1, 0)
    assert hybrid.groups[hybrid.comms[0][0]] == (0, 1)


def test_archive_uncompressed_little_endian_same_content(tmp_path):
    a = epilog.read(epik_hybrid(str(tmp_path / "a"), compress=True, rank1_big_endian=True))
    b = epilog.read(epik_hybrid(str(tmp_path / "b"), compress=False, rank1_big_endian=False))
    for loc in range(4):
        np.testing.assert_array_equal(a.events[loc], b.events[loc])


def test_per_rank_trace_without_location_ids_and_nonblocking(tmp_path):
    """Pure MPI archive: one thread per rank, records without location ids, Isend/Irecv via attributes."""
    d = tmp_path / "epik_nb"
    os.makedirs(d / "ELG")
    w = ElgWriter(lids=False)
    S = Strings(w)
    w.machine(0, 1, S("m"))
    w.node(0, 0, 2, S("n"))
    for r in (0, 1):
        w.process(r, S(f"rank {r}"))
        w.location(r, 0, 0, r, 0)
    w.file(0, S("MPI"))
    for rid, name in enumerate(["main", "MPI_Isend", "MPI_Irecv", "MPI_Wait"]):
        w.region(rid, S(name), 0 if rid else NO_ID, NO_ID, NO_ID, S("MPI" if rid else "USR"), 1)
    w.mpi_group(0, [], mode=1)
    w.mpi_comm_ref(0, 0)
    w.save(d / "epik.esd")
    # no epik.map: identity maps, no clock offsets
    r0 = ElgWriter(lids=False)
    r0.enter(0, 0.0, 0)
    r0.enter(0, 1.0, 1)
    r0.attr_ui4(0, 2, 17)  # REQUEST 17 applies to the following send
    r0.send(0, 1.0, 1, 0, 5, 32)
    r0.exit(0, 1.1)
    r0.enter(0, 2.0, 3)
    r0.send_complete(0, 2.5, 17)
    r0.exit(0, 2.5)
    r0.exit(0, 3.0)
    r0.save(d / "ELG" / "00000", compress=True)
    r1 = ElgWriter(lids=False)
    r1.enter(0, 0.0, 0)
    r1.enter(0, 0.5, 2)
    r1.recv_request(0, 0.5, 4)
    r1.exit(0, 0.6)
    r1.enter(0, 2.0, 3)
    r1.attr_ui4(0, 2, 4)
    r1.recv(0, 2.2, 0, 0, 5)
    r1.exit(0, 2.2)
    r1.exit(0, 3.0)
    r1.save(d / "ELG" / "00001")
    asm = epilog.read(d)
    e0, e1 = asm.events[0], asm.events[1]
    assert kinds(e0) == ["ENTER", "ENTER", "MPI_SEND", "EXIT", "ENTER", "MPI_SEND_COMPLETE", "EXIT", "EXIT"]
    assert (e0[2]["a"], e0[2]["d"], e0[2]["e"]) == (1, 32, 17)
    assert e0[5]["e"] == 17
    assert kinds(e1) == ["ENTER", "ENTER", "MPI_RECV_REQUEST", "EXIT", "ENTER", "MPI_RECV", "EXIT", "EXIT"]
    assert (e1[2]["a"], e1[2]["c"], e1[2]["e"]) == (ANY, ANY, 4)
    assert (e1[5]["a"], e1[5]["d"], e1[5]["e"]) == (0, 32, 4)
    assert any("epik.map" in p for p in asm.problems)


def test_counters_become_counter_records(tmp_path):
    w = ElgWriter(lids=False)
    S = Strings(w)
    w.location(0, 0, 0, 0, 0)
    w.metric(0, S("PAPI_TOT_CYC"), S("cycles"))
    w.region(0, S("work"), NO_ID, NO_ID, NO_ID, S("USR"), 1)
    w.last_def()
    w.enter(0, 1.0, 0, metv=(100,))
    w.exit(0, 2.0, metv=(350,))
    asm = epilog.read(w.save(tmp_path / "c.elg"))
    ev = asm.events[0]
    assert kinds(ev) == ["ENTER", "COUNTER", "EXIT", "COUNTER"]
    assert ev["d"].tolist()[1::2] == [100, 350] and ev["time"].tolist() == [0, 0, NS, NS]
    assert asm.metrics[0][0] == "PAPI_TOT_CYC"


def test_continuation_records_long_string_and_big_group(tmp_path):
    w = ElgWriter(lids=False)
    long_name = "f_" + "x" * 600  # needs a head STRING and three STRING_CNT records
    w.string(0, long_name)
    w.string(1, "MPI")
    w.location(0, 0, 0, 0, 0)
    w.region(0, 0, NO_ID, NO_ID, NO_ID, NO_ID, 1)
    ranks = list(range(150, 0, -1))  # 150 ranks: group continuation records
    w.mpi_group(3, ranks)
    w.mpi_comm_ref(2, 3)
    w.mpi_comm_bits(7, list(range(0, 4000, 3)))  # 500 bit-vector bytes: continuations
    w.last_def()
    w.enter(0, 0.0, 0)
    w.exit(0, 1.0)
    asm = epilog.read(w.save(tmp_path / "long.elg"))
    assert asm.regions[0].name == long_name
    assert asm.groups[asm.comms[2][0]] == tuple(ranks)
    assert asm.groups[asm.comms[7][0]] == tuple(range(0, 4000, 3))


# ---------------------------------------------------------------------------- errors
def test_not_epilog(tmp_path):
    p = tmp_path / "x.elg"
    p.write_bytes(b"hello world, not a trace")
    with pytest.raises(TraceFormatError, match=r"x\.elg: not an EPILOG file"):
        epilog.read(p)


def test_truncated_file_names_offset(tmp_path):
    path = merged_mpi(tmp_path / "m.elg")
    with open(path, "rb") as f:
        data = f.read()
    with open(path, "wb") as f:
        f.write(data[:-5])
    with pytest.raises(TraceFormatError, match=r"m\.elg: record of type 102 at byte offset \d+ .*truncated"):
        epilog.read(path)


def test_damaged_gzip(tmp_path):
    path = tmp_path / "g.elg"
    with open(merged_mpi(tmp_path / "m.elg"), "rb") as f:
        data = gzip.compress(f.read())
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(TraceFormatError, match=r"g\.elg: damaged gzip stream"):
        epilog.read(path)


def test_bad_record_length_and_unbalanced_exit(tmp_path):
    w = ElgWriter(lids=False)
    w.location(0, 0, 0, 0, 0)
    w.string(0, "f")
    w.region(0, 0, NO_ID, NO_ID, NO_ID, NO_ID, 1)
    w.last_def()
    w.raw(101, b"\0" * 7)  # an ENTER of 7 bytes
    with pytest.raises(TraceFormatError, match=r"record type 101 at byte offset \d+: body of 7 bytes; expected 12"):
        epilog.read(w.save(tmp_path / "bad.elg"))
    w = ElgWriter(lids=False)
    w.location(0, 0, 0, 0, 0)
    w.last_def()
    w.exit(0, 1.0)  # at byte 34 = 10 (header) + 22 (LOCATION) + 2 (LAST_DEF)
    with pytest.raises(TraceFormatError, match=r"record type 102 at byte offset 34: exit .* no open region"):
        epilog.read(w.save(tmp_path / "exit.elg"))


def test_rma_records_skipped_with_note(tmp_path):
    w = ElgWriter(lids=False)
    w.location(0, 0, 0, 0, 0)
    w.string(0, "f")
    w.region(0, 0, NO_ID, NO_ID, NO_ID, NO_ID, 1)
    w.last_def()
    w.enter(0, 0.0, 0)
    w.put_1ts(0, 0.5, 1, 0, 0, 8)
    w.exit(0, 1.0)
    asm = epilog.read(w.save(tmp_path / "rma.elg"))
    assert kinds(asm.events[0]) == ["ENTER", "EXIT"]
    # skipped, not damage: a note naming the record type and where it first occurs
    assert any("1 record(s) of type 112 (MPI_PUT_1TS) skipped, first at byte offset 84" in n and "RMA" in n
               for n in asm.notes)
    assert not asm.problems


def test_archive_without_traces(tmp_path):
    d = tmp_path / "epik_empty"
    d.mkdir()
    ElgWriter().save(d / "epik.esd")
    with pytest.raises(TraceFormatError, match=r"epik_empty: no ELG/ directory"):
        epilog.read(d)


def test_analysis_of_merged_epilog_trace(tmp_path):
    """Wait states of the merged sample, by hand from the definitions:
    Late Sender: rank 1 enters MPI_Recv at 1.5, rank 0 enters MPI_Send at 2.0 -> 0.5 s;
    Wait at Barrier: rank 0 enters at 3.0, the last rank at 3.5 -> 0.5 s."""
    from tracefmt.detect import open_any

    cube = analyze(open_any(merged_mpi(tmp_path / "m.elg", big_endian=True)))
    assert cube.total("mpi_latesender") == pytest.approx(0.5, abs=1e-9)
    assert cube.total("mpi_barrier_wait") == pytest.approx(0.5, abs=1e-9)
