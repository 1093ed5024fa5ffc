"""Every EPILOG 1.0-1.9 record type read as Scalasca 1.4's readers read it, and the numba decoder
compared column by column with the slow Python reference (tests/helpers/epilog_reference.py)."""

from __future__ import annotations

import os
import struct

import numpy as np
import pytest

import epilog_reference
from elgwrite import NO_ID, ElgWriter, Strings
from epilog_samples import epik_bgq, epik_hybrid, merged_mpi

from tracefmt import epilog
from tracefmt.errors import TraceFormatError
from tracefmt.layout import ANY, NO_ID as OUR_NO_ID, EventType as E, RecvFlag

MPI, USR = "MPI", "USR"


def kinds(ev):
    return [E(t).name for t in ev["type"]]


def single(w: ElgWriter, regions=("main", "MPI_Send", "MPI_Win_fence", "MPI_Allreduce", "omp_set_lock"),
           ranks=1):
    """Definitions of a one-location file (location 0 = rank 0) followed by the caller's events."""
    S = Strings(w)
    for r in range(ranks):
        w.process(r, S(f"rank {r}"))
        w.location(r, 0, 0, r, 0)
    w.file(0, S("MPI"))
    for rid, name in enumerate(regions):
        w.region(rid, S(name), 0 if name.startswith("MPI") else NO_ID, NO_ID, NO_ID,
                 S(MPI if name.startswith("MPI") else USR), 1)
    return S


def same_as_reference(path):
    a, b = epilog.read(path), epilog_reference.read(path)
    assert sorted(a.events) == sorted(b.events)
    for loc in a.events:
        np.testing.assert_array_equal(a.events[loc], b.events[loc], err_msg=f"location {loc}")
    assert (a.locks, a.comms, a.groups, a.regions) == (b.locks, b.comms, b.groups, b.regions)
    assert a.problems == b.problems
    return a


# ---------------------------------------------------------------------------- kernel vs reference
def _nonblocking_archive(d):
    os.makedirs(d / "ELG")
    w = ElgWriter(lids=False)
    S = Strings(w)
    for r in (0, 1):
        w.process(r, S(f"rank {r}"))
        w.location(r, 0, 0, r, 0)
    for rid, name in enumerate(["main", "MPI_Isend", "MPI_Irecv", "MPI_Waitall"]):
        w.region(rid, S(name), NO_ID, NO_ID, NO_ID, S("MPI" if rid else "USR"), 1)
    w.mpi_group(0, [1, 0])  # an explicit rank list (reversed)
    w.mpi_comm_ref(0, 0)
    w.save(d / "epik.esd")
    for r in (0, 1):
        e = ElgWriter(lids=False, big_endian=bool(r))
        e.enter(0, 0.0, 0)
        for i in range(3):
            e.enter(0, 1.0 + i, 1 if r == 0 else 2)
            if r == 0:
                e.attr_ui4(0, 2, 10 + i)
                e.send(0, 1.0 + i, 0, 0, i, 8 * (i + 1))  # local rank 0 of (1, 0) is rank 1
            else:
                e.recv_request(0, 1.0 + i, 10 + i)
            e.exit(0, 1.1 + i)
        e.enter(0, 5.0, 3)
        for i in range(3):
            if r == 0:
                e.send_complete(0, 5.5, 10 + i)
            else:
                e.attr_ui4(0, 2, 10 + i)
                e.recv(0, 5.5, 1, 0, i)  # local rank 1 is rank 0
        e.exit(0, 6.0)
        e.exit(0, 7.0)
        e.save(d / "ELG" / f"{r:05d}", compress=r == 1)
    return d


@pytest.mark.parametrize("make", [
    lambda p: merged_mpi(p / "m.elg"),
    lambda p: merged_mpi(p / "b.elg", big_endian=True, compress=True, version=(1, 2)),
    lambda p: epik_hybrid(str(p / "h")),
    lambda p: _nonblocking_archive(p / "nb"),
    lambda p: epik_bgq(str(p / "q"), 3, 4, big_endian=True, iterations=2),
    lambda p: epik_bgq(str(p / "q"), 4, 3, big_endian=False, compress=False),
], ids=["merged", "merged-be-1.2", "hybrid", "nonblocking", "bgq-be", "bgq-le"])
def test_numba_decoder_equals_the_python_reference(tmp_path, make):
    same_as_reference(make(tmp_path))


def test_nonblocking_receive_bytes_follow_their_sends(tmp_path):
    a = same_as_reference(_nonblocking_archive(tmp_path / "nb"))
    recv = a.events[1][a.events[1]["type"] == E.MPI_RECV]
    assert recv["a"].tolist() == [0, 0, 0] and recv["d"].tolist() == [8, 16, 24] and recv["e"].tolist() == [10, 11, 12]
    send = a.events[0][a.events[0]["type"] == E.MPI_SEND]
    assert send["a"].tolist() == [1, 1, 1] and send["e"].tolist() == [10, 11, 12]


# ---------------------------------------------------------------------------- definitions
def test_world_group_carries_its_size_and_no_rank_list(tmp_path):
    w = ElgWriter(lids=True)
    single(w, ranks=3)
    w.rec(27, "IBI", 4, 1, 3)  # MPI_GROUP 4, mode WORLD, 3 ranks, no list (as EPIK 1.4 writes it)
    w.mpi_comm_ref(0, 4)
    w.mpi_group(5, [0], mode=2)  # SELF: its one entry is listed (only WORLD leaves the list out)
    w.mpi_comm_ref(1, 5)
    w.last_def()
    w.enter(0, 0.0, 0)
    w.enter(0, 1.0, 3)
    w.mpi_collexit(0, 2.0, NO_ID, 0, 8, 8)
    w.enter(0, 2.0, 1)
    w.send(0, 2.0, 0, 1, 5, 4)  # to rank 0 of MPI_COMM_SELF: oneself
    w.exit(0, 2.5)
    w.exit(0, 3.0)
    asm = same_as_reference(w.save(tmp_path / "world.elg"))
    assert asm.groups[asm.comms[0][0]] == (0, 1, 2) and asm.comms[0][1] == "MPI_COMM_WORLD"
    self_comms = {cid: asm.groups[g] for cid, (g, name, _p) in asm.comms.items()
                  if name == "MPI_COMM_SELF" and cid != 1}
    assert sorted(self_comms.values()) == [(0,), (1,), (2,)]  # one per process, as elg_merge makes them
    send = asm.events[0][asm.events[0]["type"] == E.MPI_SEND][0]
    assert self_comms[int(send["b"])] == (0,) and send["a"] == 0


def test_a_world_group_larger_than_the_run_is_damage_not_an_allocation(tmp_path):
    w = ElgWriter(lids=True)
    single(w, ranks=2)
    w.rec(27, "IBI", 0, 1, 10_000_000)  # WORLD of 10^7 ranks in a 2-process trace
    w.mpi_comm_ref(0, 0)
    w.last_def()
    w.enter(0, 0.0, 0)
    w.exit(0, 1.0)
    asm = epilog.read(w.save(tmp_path / "w.elg"))
    assert asm.groups[asm.comms[0][0]] == (0, 1)
    assert asm.problems == ["MPI_GROUP 0 (WORLD) says 10000000 ranks, the definitions have 2 processes; "
                            "taken as those"]


def test_call_paths_topologies_windows_and_distributed_comms_are_read(tmp_path):
    w = ElgWriter(lids=False)
    S = single(w)
    w.rec(20, "IIIQ", 0, 0, NO_ID, struct.unpack("<Q", struct.pack("<d", 0.5))[0])
    w.rec(20, "IIIQ", 1, 1, 0, 7)
    w.rec(16, "IIB3I3BI3I", 2, NO_ID, 3, 2, 3, 4, 1, 1, 0, S("mesh"), S("a"), S("b"), S("c"))
    w.rec(17, "IIB3I", 2, 0, 3, 1, 2, 3)
    w.rec(18, "II", 6, 0)  # MPI_WIN 6 on comm 0
    w.rec(30, "IIIII", 9, 0, 1, 0, 4)  # MPI_COMM_DIST
    w.last_def()
    w.enter(0, 0.0, 0)
    w.exit(0, 1.0)
    path = w.save(tmp_path / "defs.elg")
    f = epilog.EpilogFile.open(path)
    d, _ = epilog.read_definitions(f)
    assert d.callpaths == {0: (0, NO_ID, struct.unpack("<Q", struct.pack("<d", 0.5))[0]), 1: (1, 0, 7)}
    assert d.topologies[2][:3] == (NO_ID, (2, 3, 4), (True, True, False))
    assert [d.string(x) for x in (d.topologies[2][3], *d.topologies[2][4])] == ["mesh", "a", "b", "c"]
    assert d.coords[(2, 0)] == (1, 2, 3)
    assert d.windows == {6: 0} and d.comm_dist == {9: (0, 1, 0, 4)}
    asm = epilog.read(path)
    assert asm.attributes["epilog.cart_topology.2"] == "mesh: 2x3x4, periodic 110, comm none, 1 coordinates"
    notes = " | ".join(asm.notes)
    for word in ("2 CALL_PATH", "1 Cartesian topology", "1 RMA window", "1 MPI_COMM_DIST"):
        assert word in notes
    assert not asm.problems


def test_topology_of_epilog_1_8_has_no_names(tmp_path):
    w = ElgWriter(lids=False, version=(1, 8))
    single(w)
    w.rec(16, "IIB2I2B", 0, 0, 2, 4, 4, 0, 0)
    w.last_def()
    w.enter(0, 0.0, 0)
    w.exit(0, 1.0)
    asm = epilog.read(w.save(tmp_path / "t18.elg"))
    assert asm.attributes["epilog.cart_topology.0"] == "topology 0: 4x4, periodic 00, comm 0, 0 coordinates"


def test_map_offsets_event_statistics_and_continued_id_maps(tmp_path):
    path = epik_bgq(str(tmp_path / "q"), 2, 70)  # 70 locations per rank: the id map needs a continuation
    d, _ = epilog.read_definitions(epilog.EpilogFile.open(os.path.join(path, "epik.esd")), stop_at_events=False)
    m, _ = epilog.read_definitions(epilog.EpilogFile.open(os.path.join(path, "epik.map")), stop_at_events=False)
    assert d.map_offsets == {0: 10, 1: m.sections[1].offset} and m.sections[1].offset > 10
    assert m.sections[1].idmaps[7].tolist() == list(range(70, 140))
    assert m.sections[1].event_types == (101, 102, 110) and m.sections[1].event_counts == (0, 0, 0)
    asm = epilog.read(path)
    assert len(asm.locations) == 140 and not asm.problems


def test_a_map_offset_that_misses_its_section_is_noted_and_the_map_read_in_order(tmp_path):
    path = epik_bgq(str(tmp_path / "q"), 2, 2)
    esd = os.path.join(path, "epik.esd")
    w = ElgWriter(big_endian=True, lids=False)
    w.map_offset(0, 10)
    w.map_offset(1, 12)  # not where rank 1's MAP_SECTION is
    with open(esd, "rb") as f:
        data = f.read()
    with open(esd, "wb") as f:  # the two real MAP_OFFSETs (2 x 10 bytes) replaced
        f.write(bytes(w.buf) + data[30:])
    asm = epilog.read(path)
    assert not asm.problems  # Scalasca would fail to seek; we lose nothing
    assert sum("MAP_OFFSET of rank 1 says byte 12 of epik.map" in n for n in asm.notes) == 1
    assert sum(len(ev) for ev in asm.events.values()) == sum(len(ev) for ev in epilog.read(
        epik_bgq(str(tmp_path / "r"), 2, 2)).events.values())


# ---------------------------------------------------------------------------- events
def test_metric_values_on_every_event_that_carries_them(tmp_path):
    w = ElgWriter(lids=False)
    S = single(w)
    w.metric(0, S("PAPI_TOT_CYC"), S("cycles"))
    w.metric(1, S("PAPI_L2_DCM"), S("misses"), dtype=0, mode=2)
    w.mpi_comm_bits(0, [0])
    w.last_def()
    w.enter(0, 0.0, 0, metv=(1, 2))
    w.enter(0, 1.0, 3, metv=(3, 4))
    w.mpi_collexit(0, 2.0, NO_ID, 0, 8, 8, metv=(5, 6))
    w.enter(0, 2.0, 2, metv=(7, 8))
    w._ev(118, 0, 2.5, "I", 6, metv=(9, 10), metv_first=True)  # MPI_WINCOLLEXIT: counters, then window
    w.enter(0, 2.6, 2, metv=(11, 12))
    w._ev(117, 0, 2.7, "IIB", 6, 0, 1, metv=(13, 14), metv_first=True)  # MPI_WINEXIT
    w.omp_fork(0, 2.8)
    w.omp_join(0, 2.9)
    w.exit(0, 3.0, metv=(15, 16))
    asm = same_as_reference(w.save(tmp_path / "m.elg"))
    ev = asm.events[0]
    cnt = ev[ev["type"] == E.COUNTER]
    assert cnt["d"].tolist() == list(range(1, 17)) and cnt["a"].tolist() == [0, 1] * 8
    assert kinds(ev[ev["type"] != E.COUNTER]) == ["ENTER", "ENTER", "MPI_COLLEXIT", "ENTER", "EXIT", "ENTER",
                                                  "EXIT", "OMP_FORK", "OMP_JOIN", "EXIT"]
    assert [m[:2] for m in asm.metrics.values()] == [("PAPI_TOT_CYC", "cycles"), ("PAPI_L2_DCM", "misses")]


def test_counter_count_inferred_without_metric_definitions(tmp_path):
    w = ElgWriter(lids=False)
    single(w)
    w.last_def()
    w.enter(0, 0.0, 0, metv=(100, 200, 300))
    w.exit(0, 1.0, metv=(400, 500, 600))
    asm = same_as_reference(w.save(tmp_path / "inf.elg"))
    assert asm.events[0]["d"][asm.events[0]["type"] == E.COUNTER].tolist() == [100, 200, 300, 400, 500, 600]


def test_call_sites_locks_attributes_measurement_and_generic_records(tmp_path):
    w = ElgWriter(lids=True)
    single(w, ranks=2)
    w.call_site(4, 0, 17, 4, 4)  # call site 4 enters region 4 (omp_set_lock)
    w.mpi_comm_bits(0, [0, 1])
    w.last_def()
    w.enter(0, 0.0, 0)
    w.enter_cs(0, 0.5, 4)
    w._ev(130, 0, 0.6, "I", 3)  # ALOCK (generic)
    w.exit(0, 0.7)
    w._ev(131, 0, 0.8, "I", 3)  # RLOCK
    w.raw(60, struct.pack("<IBB", 0, 1, 3))  # ATTR_UI1 ANYNESS of location 0: any source and any tag
    w.recv(0, 1.0, 1, 0, 5)
    w._ev(201, 0, 1.1)  # LOG_OFF: measurement paused
    w._ev(202, 0, 1.2)  # LOG_ON
    w._ev(203, 0, 1.3)  # ENTER_TRACING
    w._ev(204, 0, 1.4)  # EXIT_TRACING
    w._ev(134, 0, 1.5, "I", 7)  # MPI_REQUEST_TESTED: nothing to analyse
    w._ev(135, 0, 1.6, "I", 7)  # MPI_CANCELLED
    w.enter(0, 1.7, 3)
    w._ev(129, 0, 1.8, "IIII", NO_ID, 0, 4, 4, metv=(), metv_first=True)  # COLLEXIT (generic collective)
    w.exit(0, 2.0)
    asm = same_as_reference(w.save(tmp_path / "misc.elg"))
    ev = asm.events[0]
    assert kinds(ev) == ["ENTER", "ENTER", "OMP_ACQUIRE_LOCK", "EXIT", "OMP_RELEASE_LOCK", "MPI_RECV", "ENTER",
                         "EXIT", "ENTER", "EXIT", "MPI_REQUEST_CANCELLED", "ENTER", "MPI_COLLEXIT", "EXIT"]
    assert (ev[1]["a"], ev[1]["b"]) == (4, 4)  # region from the call site, call site id kept
    assert ev[5]["flags"] == RecvFlag.ANY_SOURCE | RecvFlag.ANY_TAG and ev[5]["a"] == 1
    names = {r.name: rid for rid, r in asm.regions.items()}
    assert ev[6]["a"] == names["PAUSING"] and ev[7]["a"] == names["PAUSING"]
    assert ev[8]["a"] == names["TRACING"] and ev[9]["a"] == names["TRACING"]
    assert ev[10]["e"] == 7 and (ev[12]["b"], ev[12]["c"], ev[12]["d"]) == (0, OUR_NO_ID, 4)
    assert asm.locks[int(ev[2]["a"])][1] == "lock 3 (rank 0)"


def test_rma_and_unknown_records_are_notes_not_damage(tmp_path):
    w = ElgWriter(lids=False)
    single(w)
    w.rec(18, "II", 0, 0)
    w.last_def()
    w.enter(0, 0.0, 2)
    for code, fmt, vals in [(112, "IIII", (1, 0, 0, 8)), (113, "III", (1, 0, 0)), (114, "IIII", (1, 0, 1, 8)),
                            (115, "III", (1, 0, 1)), (116, "I", (1,)), (119, "IIB", (1, 0, 1)),
                            (120, "II", (1, 0)), (121, "III", (1, 0, 2)), (122, "IIII", (1, 0, 2, 4)),
                            (123, "III", (1, 3, 4)), (124, "II", (1, 3)), (125, "III", (1, 4, 4)),
                            (126, "II", (1, 4)), (127, "II", (1, 5)), (128, "III", (1, 5, 4))]:
        w._ev(code, 0, 0.5, fmt, *vals)
    w._ev(150, 0, 0.6, "I", 1)  # not an EPILOG 1.9 type
    w.raw(45, b"\0\0")
    w.exit(0, 1.0)
    asm = same_as_reference(w.save(tmp_path / "rma.elg"))
    assert kinds(asm.events[0]) == ["ENTER", "EXIT"]
    notes = "\n".join(asm.notes)
    for code in (112, 113, 114, 115, 116, 119, 120, 121, 122, 123, 124, 125, 126, 127, 128):
        assert f"of type {code} (" in notes and "RMA" in notes
    assert "of type 150 (unknown) skipped" in notes and "of type 45 (unknown)" in notes
    assert not asm.problems


@pytest.mark.parametrize("body, words", [
    (lambda w: w.enter(0, 0.0, 99), "region 99 is not defined"),
    (lambda w: w.enter_cs(0, 0.0, 42), "call site 42 is not defined"),
    (lambda w: w.enter(0, float("nan"), 0), "time is not a finite time"),
    (lambda w: w.raw(61, b"\0" * 7), "attribute record of 7 bytes"),
])
def test_bad_ids_in_events_name_file_record_and_offset(tmp_path, body, words):
    w = ElgWriter(lids=True, version=(1, 9))
    single(w, ranks=2)
    w.mpi_group(0, [0, 1])
    w.mpi_comm_ref(0, 0)
    w.last_def()
    body(w)
    with pytest.raises(TraceFormatError, match=r"bad\.elg: record type \d+ at byte offset \d+: " + words):
        epilog.read(w.save(tmp_path / "bad.elg"))


def test_partner_outside_its_communicator_in_a_rank_trace(tmp_path):
    d = tmp_path / "epik_bad"
    os.makedirs(d / "ELG")
    w = ElgWriter(lids=False)
    single(w, ranks=2)
    w.mpi_group(0, [0, 1])
    w.mpi_comm_ref(0, 0)
    w.save(d / "epik.esd")
    r0 = ElgWriter(lids=False)
    r0.enter(0, 0.0, 1)
    r0.send(0, 0.0, 5, 0, 1, 4)  # local rank 5 of a 2-rank communicator
    r0.save(d / "ELG" / "00000")
    with pytest.raises(TraceFormatError, match=r"00000: record type 103 at byte offset 24: rank 5 is outside "
                                               r"communicator 0"):
        epilog.read(d)


def test_recv_request_keeps_any_source_and_tag(tmp_path):
    w = ElgWriter(lids=False)
    single(w)
    w.last_def()
    w.recv_request(0, 0.0, 3)
    ev = same_as_reference(w.save(tmp_path / "rr.elg")).events[0]
    assert (ev[0]["a"], ev[0]["b"], ev[0]["c"], ev[0]["e"]) == (ANY, OUR_NO_ID, ANY, 3)


def test_warm_up_reads_its_tiny_trace_through_every_kernel():
    asm = epilog.warm_up()
    master, worker = asm.events[0], asm.events[1]
    fork = master[master["type"] == E.OMP_FORK][0]
    assert (fork["a"], fork["c"]) == (0, 2)  # number_forks + thread_teams: one team of two threads
    assert kinds(worker) == ["ENTER", "OMP_ACQUIRE_LOCK", "OMP_RELEASE_LOCK", "OMP_COLLEXIT"]
    assert worker["d"][1] == worker["d"][2] == 1  # release_orders: the release gets its acquisition's order
    assert worker["b"][3] == 0 and (worker["c"][0], worker["d"][0]) == (0, 1)
    assert master[master["type"] == E.MPI_RECV]["d"].tolist() == [8]  # messages: bytes from the send


def test_sparse_location_and_region_ids_go_through_the_sorted_lookup(tmp_path):
    """Ids that are not 0..n-1 miss the kernels' direct lookup and take the sorted one."""
    w = ElgWriter(lids=True)
    S = Strings(w)
    for lid, rank in ((70_000, 0), (4_000_000_000, 1)):
        w.process(rank, S(f"rank {rank}"))
        w.location(lid, 0, 0, rank, 0)
    for rid, name in ((7, "main"), (100_000, "solve")):
        w.region(rid, S(name), NO_ID, NO_ID, NO_ID, S(USR), 1)
    w.metric(0, S("PAPI_TOT_CYC"), S("cycles"))
    w.last_def()
    for lid in (70_000, 4_000_000_000):
        w.enter(lid, 0.0, 7, metv=(1,))
        w.enter(lid, 1.0, 100_000, metv=(2,))
        w.exit(lid, 2.0, metv=(3,))
        w.exit(lid, 3.0, metv=(4,))
    asm = same_as_reference(w.save(tmp_path / "sparse.elg"))
    for ev in asm.events.values():
        assert ev["a"][ev["type"] == E.ENTER].tolist() == [7, 100_000]
        assert ev["d"][ev["type"] == E.COUNTER].tolist() == [1, 2, 3, 4]
    w = ElgWriter(lids=True)
    S = Strings(w)
    w.process(0, S("rank 0"))
    w.location(70_000, 0, 0, 0, 0)
    w.region(7, S("main"), NO_ID, NO_ID, NO_ID, S(USR), 1)
    w.last_def()
    w.enter(70_000, 0.0, 8)
    with pytest.raises(TraceFormatError, match="region 8 is not defined"):
        epilog.read(w.save(tmp_path / "bad.elg"))


def test_times_going_backwards_are_kept_and_said_once(tmp_path):
    w = ElgWriter(lids=False)
    single(w)
    w.last_def()
    w.enter(0, 10.0, 0)
    w.enter(0, 12.0000000015, 1)
    w.exit(0, 11.5)  # earlier than the ENTER before it
    w.enter(0, 9.75, 1)  # before the first event: its ticks are 0
    w.exit(0, 13.0)
    w.exit(0, 14.0)
    asm = same_as_reference(w.save(tmp_path / "back.elg"))
    assert [p for p in asm.problems if "earlier" in p] == [
        "rank 0 thread 0: event 2 is earlier than event 1; times kept as recorded"]
    assert asm.events[0]["time"].tolist() == [0, 2_000_000_002, 1_500_000_000, 0, 3_000_000_000, 4_000_000_000]


def test_an_exit_without_open_region_names_our_location_not_the_files_slot(tmp_path):
    d = epik_hybrid(str(tmp_path / "h"), compress=False)
    # rank 1's file numbers its two locations 0 and 1; local location 1 is global 3, our location 3
    with open(os.path.join(d, "ELG", "00001"), "ab") as f:
        f.write(bytes([12, 102]) + struct.pack(">Id", 1, 4.5))  # big-endian EXIT of local location 1
    with pytest.raises(TraceFormatError, match="exit with no open region on our location 3$"):
        epilog.read(d)


def test_a_parallel_region_entered_before_any_fork_has_no_team(tmp_path):
    w = ElgWriter(lids=True)
    S = Strings(w)
    w.process(0, S("rank 0"))
    for tid in (0, 1):
        w.location(tid, 0, 0, 0, tid)
    w.region(0, S("main"), NO_ID, NO_ID, NO_ID, S(USR), 1)
    w.region(1, S("!$omp parallel @a.c:3"), NO_ID, NO_ID, NO_ID, S("OMP"), 11)
    w.last_def()
    w.enter(0, 0.0, 0)
    for tid in (0, 1):
        w.enter(tid, 1.0, 1)  # no OMP_FORK before it
    for tid in (0, 1):
        w.omp_collexit(tid, 2.0)
    w.exit(0, 3.0)
    asm = same_as_reference(w.save(tmp_path / "nofork.elg"))
    assert any("parallel region entered at 1.0 before any FORK" in p for p in asm.problems)
    for tid in (0, 1):
        ev = asm.events[tid]
        enter = ev[(ev["type"] == E.ENTER) & (ev["a"] == 1)][0]
        assert (enter["c"], enter["d"]) == (OUR_NO_ID, tid)
