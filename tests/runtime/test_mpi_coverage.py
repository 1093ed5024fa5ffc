"""MPI coverage of the runtime: Fortran bindings, non-blocking collectives and persistent requests,
under Open MPI (whose Fortran layer bypasses the C wrappers) and MPICH.

Expected values are counted by hand from samples/runtime/fcolls.f90, ring.f90 and nonblocking.c.
"""
from __future__ import annotations

from collections import Counter

import pytest

import tracefmt
from runtime_harness import EXPERT_RUN, MPI_ENV, SAMPLES, assert_valid, events, need, run, trace_mpi_sample
from tracefmt.layout import NO_ID, EventType, SendFlag

pytestmark = pytest.mark.runtime

E = EventType


def trace_program(tmp_path, mpi, compiler, source, nranks, extra=()):
    trace = tracefmt.open(str(trace_mpi_sample(tmp_path, mpi, source, nranks, compiler, extra)))
    assert_valid(trace)
    return trace


def master_events(trace, rank):
    loc = next(i for i, l in trace.defs.locations.items() if l.process == rank and l.thread == 0)
    return events(trace, loc), trace.events(loc)


def colls(ev):
    return {e[1]: e for e in ev if e[0] == E.MPI_COLLEXIT}


# ---------------------------------------------------------------- Fortran
@pytest.mark.parametrize("mpi", ["ompi", "mpich"])
def test_fortran_ring(runtime_built, tmp_path, mpi):
    trace = trace_program(tmp_path, mpi, "fc", "ring.f90", 2)
    assert sorted(l.process for l in trace.defs.locations.values()) == [0, 1]
    for rank in (0, 1):
        ev, _ = master_events(trace, rank)
        sends = [e for e in ev if e[0] == E.MPI_SEND]
        recvs = [e for e in ev if e[0] == E.MPI_RECV]
        assert [(s[2], s[4], s[5]) for s in sends] == [(1 - rank, 5, 40)]
        assert [(r[2], r[4], r[5]) for r in recvs] == [(1 - rank, 5, 40)]
        assert Counter(e[1] for e in ev if e[0] == E.MPI_COLLEXIT) == {"MPI_Allreduce": 1}
        # the program root region (named after the executable) first, then the MPI calls inside it
        assert [e[1] for e in ev if e[0] == E.ENTER] == ["ring", "MPI_Init", "MPI_Sendrecv", "MPI_Allreduce",
                                                         "MPI_Finalize"]
        assert ev[0][:2] == (E.ENTER, "ring") and ev[-1][:2] == (E.EXIT, "ring")


@pytest.mark.parametrize("mpi", ["ompi", "mpich"])
def test_fortran_collectives_nonblocking_and_persistent(runtime_built, tmp_path, mpi):
    n = 3
    extra = ["-fallow-argument-mismatch"] if mpi == "mpich" else []  # MPICH's `use mpi` checks buffer types
    trace = trace_program(tmp_path, mpi, "fc", "fcolls.f90", n, extra)
    comms = trace.defs.comms
    for rank in range(n):
        ev, _ = master_events(trace, rank)
        right, left = (rank + 1) % n, (rank - 1) % n
        sends = [e for e in ev if e[0] == E.MPI_SEND]
        recvs = [e for e in ev if e[0] == E.MPI_RECV]
        posted = [e for e in ev if e[0] == E.MPI_RECV_REQUEST]
        # Isend of 4 integers, then the persistent send of 2 integers started twice
        assert [(s[2], s[4], s[5]) for s in sends] == [(right, 7, 16), (right, 8, 8), (right, 8, 8)]
        assert [(r[2], r[4], r[5]) for r in recvs] == [(left, 7, 16), (left, 8, 8), (left, 8, 8)]
        assert [(p[2], p[4]) for p in posted] == [(left, 7), (left, 8), (left, 8)]
        send_ids = [s[6] for s in sends]
        assert len(set(send_ids)) == 3 and 0 not in send_ids  # every Start is a new request
        assert [r[6] for r in recvs] == [p[6] for p in posted]
        assert sorted(e[6] for e in ev if e[0] == E.MPI_SEND_COMPLETE) == sorted(send_ids)
        c = colls(ev)
        assert Counter(e[1] for e in ev if e[0] == E.MPI_COLLEXIT) == {
            "MPI_Bcast": 1, "MPI_Allreduce": 1, "MPI_Reduce": 1, "MPI_Ibcast": 1, "MPI_Barrier": 1}
        assert c["MPI_Bcast"][4:7] == (1, n * 16 if rank == 1 else 0, 16)
        assert c["MPI_Allreduce"][4:7] == (NO_ID, n * 8, n * 8)
        # Fortran MPI_IN_PLACE at the root: it sends nothing and receives from the n-1 others
        assert c["MPI_Reduce"][4:7] == ((0, 0, (n - 1) * 8) if rank == 0 else (0, 8, 0))
        assert c["MPI_Ibcast"][4:7] == (0, n * 16 if rank == 0 else 0, 16)
        assert comms[c["MPI_Barrier"][3]].ranks == tuple(r for r in range(n) if r % 2 == rank % 2)
        names = Counter(e[1] for e in ev if e[0] == E.ENTER)
        assert names["MPI_Send_init"] == names["MPI_Recv_init"] == 1
        assert names["MPI_Startall"] == 2 and names["MPI_Request_free"] == 2 and names["MPI_Waitall"] == 3
        # the Ibcast instance is recorded inside the MPI_Wait that completed it
        i = next(k for k, e in enumerate(ev) if e[0] == E.MPI_COLLEXIT and e[1] == "MPI_Ibcast")
        assert [(e[0], e[1]) for e in ev[i - 2:i + 2]] == [
            (E.ENTER, "MPI_Wait"), (E.ENTER, "MPI_Ibcast"), (E.MPI_COLLEXIT, "MPI_Ibcast"), (E.EXIT, "MPI_Wait")]
        assert ev[i - 1][7] == ev[i - 2][7]  # entered at the Wait's enter time


# ---------------------------------------------------------------- C: non-blocking collectives, persistent
@pytest.mark.parametrize("mpi,n", [("ompi", 2), ("mpich", 3)])
def test_nonblocking_collectives_and_persistent_requests(runtime_built, tmp_path, mpi, n):
    trace = trace_program(tmp_path, mpi, "cc", "nonblocking.c", n)
    for rank in range(n):
        ev, raw = master_events(trace, rank)
        right, left = (rank + 1) % n, (rank - 1) % n
        # one Waitall completes Ibarrier, Iallreduce (in posting order) and the ring receive
        w = next(k for k, e in enumerate(ev) if e[0] == E.ENTER and e[1] == "MPI_Waitall")
        seq = [(e[0], e[1]) for e in ev[w:w + 7]]
        assert seq == [(E.ENTER, "MPI_Waitall"), (E.ENTER, "MPI_Ibarrier"), (E.MPI_COLLEXIT, "MPI_Ibarrier"),
                       (E.ENTER, "MPI_Iallreduce"), (E.MPI_COLLEXIT, "MPI_Iallreduce"), (E.MPI_RECV, None),
                       (E.EXIT, "MPI_Waitall")]
        assert ev[w + 2][4:7] == (NO_ID, 0, 0)
        assert ev[w + 4][4:7] == (NO_ID, n * 4, n * 4)
        assert ev[w + 5][2] == left and ev[w + 5][4] == 3
        # the Igather instance is inside the one MPI_Test that saw it complete
        g = next(k for k, e in enumerate(ev) if e[0] == E.MPI_COLLEXIT and e[1] == "MPI_Igather")
        assert ev[g - 1][:2] == (E.ENTER, "MPI_Igather") and ev[g - 2][:2] == (E.ENTER, "MPI_Test")
        assert ev[g][4:7] == (1 % n, 4, n * 4 if rank == 1 % n else 0)
        # the posting calls are plain regions: each collective region is entered twice, closed once by COLLEXIT
        names = Counter(e[1] for e in ev if e[0] == E.ENTER)
        assert names["MPI_Ibarrier"] == names["MPI_Iallreduce"] == names["MPI_Igather"] == 2
        # persistent Ssend_init/Recv_init started 3 times
        sends = [(e[2], e[4], e[5]) for e in ev if e[0] == E.MPI_SEND]
        recvs = [(e[2], e[4], e[5]) for e in ev if e[0] == E.MPI_RECV]
        assert sends == [(right, 3, 4)] + [(right, 4, 32)] * 3
        assert recvs == [(left, 3, 4)] + [(left, 4, 32)] * 3
        send_idx = [k for k in range(len(raw)) if raw.type[k] == E.MPI_SEND]
        assert [int(raw.flags[k]) for k in send_idx] == [0] + [int(SendFlag.SYNCHRONOUS)] * 3
        pers = [e[6] for e in ev if e[0] == E.MPI_SEND][1:]
        assert len(set(pers)) == 3 and 0 not in pers
        assert [e[6] for e in ev if e[0] == E.MPI_SEND_COMPLETE] == pers
        posted = [e for e in ev if e[0] == E.MPI_RECV_REQUEST]
        assert len(posted) == 1 + 3 and [e[6] for e in ev if e[0] == E.MPI_RECV][1:] == [p[6] for p in posted[1:]]
        assert names["MPI_Start"] == 6 and names["MPI_Request_free"] == 2


# abnormal ends (a rank that dies, under both MPIs): tests/runtime/test_crash.py


# ---------------------------------------------------------------- clock synchronisation
@pytest.mark.parametrize("node_size", [None, 2])
def test_clock_offsets_hierarchical(runtime_built, tmp_path, node_size):
    """On one host every clock is the same, so a rank's offset to rank 0 is just the difference of their
    start times, which the CLOCK definitions give exactly with EXPERT_CLOCK=monotonic (origin = start in ns):
    up to the rounding of seconds since boot in a double, not by the time between two clock reads (a
    preemption there once broke the clock condition in CI). With pseudo-nodes of 2 ranks, rank 2 is a node
    master that measures its clock by ping-pong: its offset may then be off by the shortest round trip's
    asymmetry, never more than a few milliseconds here."""
    need("mpicc.openmpi")
    env = dict(MPI_ENV, EXPERT_CLOCK="monotonic")
    if node_size:
        env["EXPERT_SYNC_NODE_SIZE"] = str(node_size)
    run(["mpicc.openmpi", "-g", str(SAMPLES / "nonblocking.c"), "-o", "nb"], cwd=tmp_path)
    run(["mpirun.openmpi", "-np", "3", str(EXPERT_RUN), "-o", "nb.elg", "./nb"], cwd=tmp_path, env=env)
    trace = tracefmt.open(str(tmp_path / "nb.elg"))
    assert_valid(trace)
    clocks, offsets = trace.defs.clocks, trace.defs.offsets
    assert all(clocks[r].ticks_per_second == 1e9 for r in range(3))
    for rank in range(3):
        start_difference = (clocks[rank].origin - clocks[0].origin) / 1e9
        assert len(offsets[rank]) == 2  # at MPI_Init and MPI_Finalize
        measured_by_ping_pong = node_size == 2 and rank == 2
        for off in offsets[rank]:
            assert off.local_time > 0
            assert abs(off.offset - start_difference) < (5e-3 if measured_by_ping_pong else 1e-8)
