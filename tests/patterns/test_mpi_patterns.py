"""MPI patterns on hand-built traces; every expected value is worked out in the comments."""

from __future__ import annotations

import pytest

import tracefmt
from analyzer import analyze
from tracefmt.layout import SendFlag


def val(cube, metric, path=None, loc=None):
    """Value of a metric, summed over everything not named."""
    v = cube.values[metric]
    if path is not None:
        rows = cube.find_cnodes(path)
        assert rows, f"no call path {path}; have {cube.callpaths()}"
        v = v[rows].sum(axis=0)
    else:
        v = v.sum(axis=0)
    return float(v[loc] if loc is not None else v.sum())


def ranks(b, n):
    locs = [b.location(rank=r) for r in range(n)]
    for loc in locs:
        b.enter(loc, 0.0, "main")
    return locs


def finish(b, locs, t=100.0):
    for loc in locs:
        b.exit(loc, t, "main")
    return analyze(b.build(), plugins=False)


def p2p(b, loc, region, t_enter, t_exit, kind, peer, tag=0, nbytes=8, request=0, t_event=None, flags=0):
    b.enter(loc, t_enter, region)
    t = t_enter if t_event is None else t_event
    if kind == "send":
        b.send(loc, t, dest=peer, tag=tag, nbytes=nbytes, request=request, flags=flags)
    elif kind == "recv":
        b.recv(loc, t, source=peer, tag=tag, nbytes=nbytes, request=request)
    elif kind == "complete":
        b.send_complete(loc, t, request)
    elif kind == "post":
        b.recv_request(loc, t, request, source=peer, tag=tag)
    b.exit(loc, t_exit, region)


def test_late_sender_clamped_and_test_calls_skipped():
    b = tracefmt.TraceBuilder()
    r0, r1 = ranks(b, 2)
    p2p(b, r0, "MPI_Send", 5.0, 5.5, "send", 1, tag=1)
    p2p(b, r1, "MPI_Recv", 2.0, 5.3, "recv", 0, tag=1, t_event=5.2)  # LS = min(5, 5.3) - 2 = 3
    # clock condition violated: the send is entered (12) after the receive left (11): LS = 11 - 10 = 1
    p2p(b, r1, "MPI_Recv", 10.0, 11.0, "recv", 0, tag=2, t_event=10.9)
    p2p(b, r0, "MPI_Send", 12.0, 12.5, "send", 1, tag=2)
    # completed in MPI_Test: never a Late Sender
    p2p(b, r0, "MPI_Send", 14.0, 14.1, "send", 1, tag=3)
    p2p(b, r1, "MPI_Test", 13.0, 14.2, "recv", 0, tag=3, t_event=14.1)
    cube = finish(b, [r0, r1])
    assert val(cube, "mpi_latesender", "main/MPI_Recv", r1) == pytest.approx(4.0)
    assert val(cube, "mpi_latesender", "main/MPI_Test") == 0.0
    assert val(cube, "mpi_latesender") == pytest.approx(4.0)
    assert val(cube, "mpi_latesender_wo") == 0.0
    assert val(cube, "mpi_cls_count", loc=r1) == 2.0  # two instances, both with data


def test_waitall_counts_only_the_largest_wait():
    b = tracefmt.TraceBuilder()
    r0, r1 = ranks(b, 2)
    p2p(b, r1, "MPI_Irecv", 15.0, 15.1, "post", 0, tag=4, request=1)
    p2p(b, r1, "MPI_Irecv", 15.5, 15.6, "post", 0, tag=5, request=2)
    b.enter(r1, 16.0, "MPI_Waitall")
    b.recv(r1, 22.1, source=0, tag=4, nbytes=8, request=1)
    b.recv(r1, 22.1, source=0, tag=5, nbytes=8, request=2)
    b.exit(r1, 22.2)
    p2p(b, r0, "MPI_Isend", 20.0, 20.1, "send", 1, tag=4, request=7)
    p2p(b, r0, "MPI_Isend", 22.0, 22.05, "send", 1, tag=5, request=8)
    p2p(b, r0, "MPI_Waitall", 22.06, 22.3, "complete", None, request=7)
    # idles 20 - 16 = 4 and 22 - 16 = 6: only the 6 counts, once
    cube = finish(b, [r0, r1])
    assert val(cube, "mpi_latesender", "main/MPI_Waitall", r1) == pytest.approx(6.0)
    assert val(cube, "mpi_latesender") == pytest.approx(6.0)
    assert val(cube, "mpi_cls_count") == 1.0


def test_wrong_order_from_different_sources():
    b = tracefmt.TraceBuilder()
    r0, r1, r2 = ranks(b, 3)
    p2p(b, r0, "MPI_Send", 5.0, 5.1, "send", 2)  # sent late
    p2p(b, r1, "MPI_Send", 1.0, 1.1, "send", 2)  # sent early
    # rank 2 receives rank 0's message first: LS = 5 - 2 = 3 (its message was sent at 5);
    # the next receive's message was sent at 1 < 5: that Late Sender was wrong order, different source
    p2p(b, r2, "MPI_Recv", 2.0, 5.2, "recv", 0)
    p2p(b, r2, "MPI_Recv", 5.3, 5.4, "recv", 1)
    cube = finish(b, [r0, r1, r2])
    assert val(cube, "mpi_latesender", loc=r2) == pytest.approx(3.0)
    assert val(cube, "mpi_latesender_wo", "main/MPI_Recv", r2) == pytest.approx(3.0)
    assert val(cube, "mpi_lswo_different", loc=r2) == pytest.approx(3.0)
    assert val(cube, "mpi_lswo_same") == 0.0
    assert val(cube, "mpi_clswo_count", loc=r2) == 1.0


def test_wrong_order_from_the_same_source_and_wildcard_receives():
    b = tracefmt.TraceBuilder()
    r0, r1 = ranks(b, 2)
    p2p(b, r0, "MPI_Send", 1.0, 1.1, "send", 1, tag=1, nbytes=0)
    p2p(b, r0, "MPI_Send", 5.0, 5.1, "send", 1, tag=2, nbytes=0)
    # tag 2 first (LS 5 - 2 = 3), then tag 1 with MPI_ANY_SOURCE: sent at 1 < 5 -> wrong order, same source
    p2p(b, r1, "MPI_Recv", 2.0, 5.2, "recv", 0, tag=2, nbytes=0)
    b.enter(r1, 6.0, "MPI_Recv")
    b.recv(r1, 6.1, source=0, tag=1, nbytes=0, flags=tracefmt.layout.RecvFlag.ANY_SOURCE)
    b.exit(r1, 6.2)
    cube = finish(b, [r0, r1])
    assert val(cube, "mpi_lswo_same", "main/MPI_Recv", r1) == pytest.approx(3.0)
    assert val(cube, "mpi_lswo_different") == 0.0
    # zero-byte messages: synchronisations, and the instance counts go to the sync side
    assert val(cube, "mpi_sls_count") == 1.0 and val(cube, "mpi_slswo_count") == 1.0
    assert val(cube, "mpi_cls_count") == 0.0
    assert val(cube, "syncs_send", loc=r0) == 2.0 and val(cube, "syncs_recv", loc=r1) == 2.0
    assert val(cube, "comms") == 0.0 and val(cube, "bytes") == 0.0


def test_late_receiver_charged_to_the_sender():
    b = tracefmt.TraceBuilder()
    r0, r1 = ranks(b, 2)
    # Ssend entered at 1, receive entered at 4 while the Ssend is still running: LR = 3 on rank 0
    p2p(b, r0, "MPI_Ssend", 1.0, 5.0, "send", 1, tag=1, nbytes=0, flags=SendFlag.SYNCHRONOUS)
    p2p(b, r1, "MPI_Recv", 4.0, 5.0, "recv", 0, tag=1, nbytes=0)
    # no overlap (the send left at 10.1 before the receive was entered at 12): nothing
    p2p(b, r0, "MPI_Send", 10.0, 10.1, "send", 1, tag=2)
    p2p(b, r1, "MPI_Recv", 12.0, 12.1, "recv", 0, tag=2)
    # buffered sends never wait for the receiver
    p2p(b, r0, "MPI_Bsend", 20.0, 25.0, "send", 1, tag=3, flags=SendFlag.BUFFERED)
    p2p(b, r1, "MPI_Recv", 23.0, 25.0, "recv", 0, tag=3)
    # Isend completed by a single MPI_Wait: LR = 33 (posting of the receive) - 31 (enter of the Wait) = 2
    p2p(b, r0, "MPI_Isend", 30.0, 30.1, "send", 1, tag=4, request=5)
    p2p(b, r0, "MPI_Wait", 31.0, 35.0, "complete", None, request=5)
    p2p(b, r1, "MPI_Irecv", 33.0, 33.1, "post", 0, tag=4, request=9)
    p2p(b, r1, "MPI_Wait", 34.0, 35.0, "recv", 0, tag=4, request=9)
    # ... but not by MPI_Waitall
    p2p(b, r0, "MPI_Isend", 40.0, 40.1, "send", 1, tag=5, request=6)
    p2p(b, r0, "MPI_Waitall", 41.0, 45.0, "complete", None, request=6)
    p2p(b, r1, "MPI_Recv", 43.0, 45.0, "recv", 0, tag=5)
    cube = finish(b, [r0, r1])
    assert val(cube, "mpi_latereceiver", "main/MPI_Ssend", r0) == pytest.approx(3.0)
    assert val(cube, "mpi_latereceiver", "main/MPI_Wait", r0) == pytest.approx(2.0)
    assert val(cube, "mpi_latereceiver") == pytest.approx(5.0)
    assert val(cube, "mpi_latereceiver", loc=r1) == 0.0
    assert val(cube, "mpi_slr_count", "main/MPI_Ssend", r0) == 1.0
    assert val(cube, "mpi_clr_count", "main/MPI_Wait", r0) == 1.0


def coll(b, locs, region, enters, exits, comm=None, root=None, sent=8, recvd=8):
    for i, loc in enumerate(locs):
        s = sent[i] if isinstance(sent, (list, tuple)) else sent
        r = recvd[i] if isinstance(recvd, (list, tuple)) else recvd
        b.collective(loc, enters[i], exits[i], region, comm=comm, root=root, sent=s, recvd=r)


def test_barrier_wait_and_completion_with_clock_violation_and_subcommunicators():
    b = tracefmt.TraceBuilder()
    locs = ranks(b, 3)
    even, solo = b.comm([0, 2], name="even"), b.comm([1], name="solo")
    # wait: min(3, exit) - enter = 3, 2, 0; completion: exit - max(3.2, 3) = 0.3, 0, 0.2
    coll(b, locs, "MPI_Barrier", [0.0, 1.0, 3.0], [3.5, 3.2, 3.4], sent=0, recvd=0)
    # rank 0 leaves (14) before rank 2 enters (15): wait = 14 - 10 = 4 (clamped), 0;
    # completion: min exit 14 < max enter 15 -> 15: rank 0 nothing, rank 2: 16 - 15 = 1
    coll(b, [locs[0], locs[2]], "MPI_Barrier", [10.0, 15.0], [14.0, 16.0], comm=even, sent=0, recvd=0)
    coll(b, [locs[1]], "MPI_Barrier", [20.0], [25.0], comm=solo, sent=0, recvd=0)  # one rank: no wait
    cube = finish(b, locs)
    assert [val(cube, "mpi_barrier_wait", loc=l) for l in locs] == pytest.approx([7.0, 2.0, 0.0])
    assert [val(cube, "mpi_barrier_completion", loc=l) for l in locs] == pytest.approx([0.3, 0.0, 1.2])
    assert val(cube, "syncs_coll") == 6.0
    # the category holds the waits: barrier time = 3.5 + 2.2 + 0.4 + 4 + 1 + 5
    assert val(cube, "mpi_sync_collective") == pytest.approx(16.1)
    assert val(cube, "mpi_synchronization") == pytest.approx(16.1)


def test_wait_at_nxn_and_completion():
    b = tracefmt.TraceBuilder()
    locs = ranks(b, 3)
    # wait: 2, 1, 0; completion: exit - max(2.5, 2) = 0, 0.1, 0.2
    coll(b, locs, "MPI_Allreduce", [0.0, 1.0, 2.0], [2.5, 2.6, 2.7])
    # rank 2 sends nothing: latest ENTER among senders is 11: waits 1, 0, 0 (rank 2 entered after 11);
    # completion only for ranks that send and receive: earliest exit 16 -> none
    coll(b, locs, "MPI_Allgather", [10.0, 11.0, 15.0], [16.0, 16.0, 16.0], sent=[8, 8, 0])
    # Alltoallv is not an NxN wait state
    coll(b, locs, "MPI_Alltoallv", [20.0, 21.0, 22.0], [23.0, 23.0, 23.0])
    cube = finish(b, locs)
    assert val(cube, "mpi_wait_nxn") == pytest.approx(4.0)
    assert [val(cube, "mpi_wait_nxn", loc=l) for l in locs] == pytest.approx([3.0, 1.0, 0.0])
    assert val(cube, "mpi_nxn_completion") == pytest.approx(0.3)
    assert val(cube, "mpi_wait_nxn", "main/MPI_Alltoallv") == 0.0


def test_early_reduce_early_scan_and_late_broadcast():
    b = tracefmt.TraceBuilder()
    locs = ranks(b, 3)
    # Reduce to root 0: root idle = min(earliest non-root sender 1, exit 2.5) - 0 = 1
    coll(b, locs, "MPI_Reduce", [0.0, 1.0, 2.0], [2.5] * 3, root=0, recvd=[24, 0, 0])
    # rank 1 sends nothing: earliest sender enters at 12 -> 12 - 10 = 2
    coll(b, locs, "MPI_Reduce", [10.0, 11.0, 12.0], [13.0] * 3, root=0, sent=[8, 0, 8], recvd=[16, 0, 0])
    # Bcast from root 2: non-roots wait 2 - 0 and 2 - 1
    coll(b, locs, "MPI_Bcast", [20.0, 21.0, 22.0], [22.5] * 3, root=2, sent=[0, 0, 16], recvd=8)
    # root 0 enters at 30; rank 1 left at 29 (clock violation): 29 - 28 = 1; rank 2 receives nothing
    coll(b, locs, "MPI_Bcast", [30.0, 28.0, 29.5], [31.0, 29.0, 31.0], root=0, sent=[16, 0, 0], recvd=[8, 8, 0])
    # Scan: prefix max of ENTER over ranks 0..me: 42, 42, 42 -> waits 0, 2, 1
    coll(b, locs, "MPI_Scan", [42.0, 40.0, 41.0], [43.0] * 3)
    # a scan that moves no data is skipped
    coll(b, locs, "MPI_Scan", [52.0, 50.0, 51.0], [53.0] * 3, sent=0, recvd=0)
    cube = finish(b, locs)
    assert val(cube, "mpi_earlyreduce", "main/MPI_Reduce", locs[0]) == pytest.approx(3.0)
    assert val(cube, "mpi_earlyreduce") == pytest.approx(3.0)
    assert [val(cube, "mpi_latebroadcast", loc=l) for l in locs] == pytest.approx([2.0, 2.0, 0.0])
    assert [val(cube, "mpi_earlyscan", loc=l) for l in locs] == pytest.approx([0.0, 2.0, 1.0])


def test_counts_and_bytes():
    b = tracefmt.TraceBuilder()
    r0, r1 = ranks(b, 2)
    p2p(b, r0, "MPI_Send", 5.0, 5.1, "send", 1, tag=1, nbytes=0)
    p2p(b, r1, "MPI_Recv", 4.0, 5.2, "recv", 0, tag=1, nbytes=0)  # Late Sender on a zero-byte message
    p2p(b, r0, "MPI_Send", 7.0, 7.1, "send", 1, tag=2, nbytes=64)
    p2p(b, r1, "MPI_Recv", 6.0, 7.2, "recv", 0, tag=2, nbytes=64)  # Late Sender with data
    coll(b, [r0, r1], "MPI_Barrier", [8.0, 8.0], [9.0, 9.0], sent=0, recvd=0)
    coll(b, [r0, r1], "MPI_Bcast", [10.0, 10.0], [11.0, 11.0], root=0, sent=[16, 0], recvd=[8, 8])
    cube = finish(b, [r0, r1])
    expected = {
        "syncs_send": 1, "syncs_recv": 1, "syncs_p2p": 2, "syncs_coll": 2, "syncs": 4,
        "comms_send": 1, "comms_recv": 1, "comms_p2p": 2, "comms_cxch": 1, "comms_csrc": 0, "comms_cdst": 1,
        "comms_coll": 2, "comms": 4,
        "bytes_sent": 64, "bytes_rcvd": 64, "bytes_p2p": 128, "bytes_cout": 16, "bytes_cin": 16, "bytes_coll": 32,
        "bytes": 160, "mpi_sls_count": 1, "mpi_cls_count": 1, "mpi_slr_count": 0, "mpi_clr_count": 0,
    }
    assert {k: val(cube, k) for k in expected} == expected
    assert val(cube, "syncs_send", "main/MPI_Send", r0) == 1
    assert val(cube, "bytes_rcvd", "main/MPI_Recv", r1) == 64
    assert cube.metric("bytes").unit == "bytes" and cube.metric("syncs").dtype == "INTEGER"


def test_mpi_time_categories():
    b = tracefmt.TraceBuilder()
    r0, r1 = ranks(b, 2)
    b.enter(r0, 0.5, "MPI_Init"); b.exit(r0, 1.0)
    p2p(b, r0, "MPI_Send", 2.0, 3.0, "send", 1)
    p2p(b, r1, "MPI_Recv", 2.0, 4.0, "recv", 0)
    coll(b, [r0, r1], "MPI_Allreduce", [5.0, 5.0], [7.0, 6.0])
    coll(b, [r0, r1], "MPI_Barrier", [8.0, 8.0], [8.5, 8.5], sent=0, recvd=0)
    b.enter(r1, 10.0, "MPI_File_write"); b.exit(r1, 13.0)
    b.enter(r1, 14.0, "MPI_Comm_split"); b.exit(r1, 14.25)
    cube = finish(b, [r0, r1], t=20.0)
    assert val(cube, "mpi_init_exit") == pytest.approx(0.5)
    assert val(cube, "mpi_point2point") == pytest.approx(3.0)
    assert val(cube, "mpi_collective") == pytest.approx(3.0)
    assert val(cube, "mpi_communication") == pytest.approx(6.0)
    assert val(cube, "mpi_sync_collective") == pytest.approx(1.0)
    assert val(cube, "mpi_io") == pytest.approx(3.0)
    assert val(cube, "mpi") == pytest.approx(0.5 + 6.0 + 1.0 + 3.0 + 0.25)
    assert val(cube, "time") == pytest.approx(40.0) and val(cube, "execution") == pytest.approx(40.0)
    assert val(cube, "visits", "main/MPI_Allreduce") == 2


# --------------------------------------------------------------------------
# the public instance tables behind the wait states
# --------------------------------------------------------------------------
def test_late_sender_instances_name_each_waiting_receive():
    from analyzer.replay import replay
    from patterns import late_receiver_instances, late_sender_instances

    b = tracefmt.TraceBuilder()
    r0, r1 = ranks(b, 2)
    p2p(b, r0, "MPI_Send", 1.0, 1.1, "send", 1, tag=1, nbytes=64)
    p2p(b, r0, "MPI_Send", 5.0, 5.1, "send", 1, tag=2, nbytes=0)
    # tag 2 first: waits 5 - 2 = 3 for a message sent after the one received next (wrong order, same source)
    p2p(b, r1, "MPI_Recv", 2.0, 5.2, "recv", 0, tag=2, nbytes=0)
    p2p(b, r1, "MPI_Recv", 6.0, 6.2, "recv", 0, tag=1, nbytes=64)  # sent long ago: no wait
    for loc in (r0, r1):
        b.exit(loc, 100.0, "main")
    ctx = replay(b.build())
    ls = late_sender_instances(ctx)
    assert len(ls) == 1
    assert ls["wait"][0] == pytest.approx(3.0) and ls["enter"][0] == 2.0 and ls["loc"][0] == r1
    assert ctx.calltree.path(int(ls["cnode"][0]), ctx.region_name) == "main/MPI_Recv"
    assert ctx.tables["messages"]["tag"][ls["message"][0]] == 2
    assert (ls["bytes"][0], ls["source"][0], ls["wrong_order"][0], ls["same_source"][0]) == (0, 0, True, True)
    assert len(late_receiver_instances(ctx)) == 0


def test_collective_instances_point_at_their_rows():
    from analyzer.replay import replay
    from patterns import mpi_barrier_wait_instances, mpi_late_broadcast_instances

    b = tracefmt.TraceBuilder()
    locs = ranks(b, 3)
    coll(b, locs, "MPI_Barrier", [0.0, 1.0, 3.0], [3.5, 3.2, 3.4], sent=0, recvd=0)  # waits 3, 2
    coll(b, locs, "MPI_Bcast", [20.0, 21.0, 22.0], [22.5] * 3, root=2, sent=[0, 0, 16], recvd=8)  # waits 2, 1
    for loc in locs:
        b.exit(loc, 100.0, "main")
    ctx = replay(b.build())
    T = ctx.tables["collectives"]
    bw = mpi_barrier_wait_instances(ctx)
    assert dict(zip(bw["loc"].tolist(), bw["wait"].tolist())) == pytest.approx({0: 3.0, 1: 2.0})
    assert T["enter"][bw["row"]].tolist() == bw["enter"].tolist() and len(set(bw["instance"].tolist())) == 1
    lb = mpi_late_broadcast_instances(ctx)
    assert dict(zip(lb["loc"].tolist(), lb["wait"].tolist())) == pytest.approx({0: 2.0, 1: 1.0})
    assert {ctx.region_name[r] for r in T["region"][lb["row"]]} == {"MPI_Bcast"}


def test_late_sender_in_a_waitall_is_bounded_by_its_own_time():
    # rank 1's MPI_Waitall (1.0-2.0) waits for rank 0's send at 1.8, but 0.6 s of the call is spent in a region
    # nested in it (a non-blocking collective completing there): the Waitall holds 0.4 s itself, so of the 0.8 s
    # wait only 0.4 s is its Late Sender; the metric tree stays inclusive and the analysis completes
    b = tracefmt.TraceBuilder()
    r0, r1 = b.location(rank=0), b.location(rank=1)
    for loc in (r0, r1):
        b.enter(loc, 0.0, "main")
    b.enter(r1, 0.5, "MPI_Irecv"); b.recv_request(r1, 0.5, 7, source=0, tag=1); b.exit(r1, 0.6, "MPI_Irecv")
    b.enter(r1, 1.0, "MPI_Waitall")
    b.enter(r1, 1.0, "MPI_Ibarrier"); b.exit(r1, 1.6, "MPI_Ibarrier")
    b.recv(r1, 1.9, source=0, tag=1, nbytes=8, request=7)
    b.exit(r1, 2.0, "MPI_Waitall")
    b.enter(r0, 1.8, "MPI_Send"); b.send(r0, 1.8, dest=1, tag=1, nbytes=8); b.exit(r0, 1.9, "MPI_Send")
    for loc in (r0, r1):
        b.exit(loc, 3.0, "main")
    cube = analyze(b.build(), patterns="mpi_latesender", plugins=False)
    per = cube.per_callpath("mpi_latesender")
    assert per["main/MPI_Waitall"] == pytest.approx(0.4, abs=1e-12)
    assert cube.per_callpath("mpi_point2point")["main/MPI_Waitall"] == pytest.approx(0.4, abs=1e-12)
