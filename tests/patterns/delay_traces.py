"""Small hand-built traces whose critical paths and delay costs are worked out by hand in
tests/patterns/test_delay_edge_cases.py (each also checked against Scalasca 2.6: tests/data/scalasca_oracle)."""

from __future__ import annotations

import tracefmt

PAR = "!$omp parallel @t.c:10"
IBAR = "!$omp implicit barrier @t.c:20"


def _mpi(b, loc):
    b.enter(loc, 0.0, "main")
    b.enter(loc, 0.0, "MPI_Init")
    b.exit(loc, 1.0)


def chain_of_waits() -> tracefmt.TraceBuilder:
    """Three ranks; rank 0 works 4 s, rank 1 waits 3 s for its message and then sends to rank 2, which
    waits 3 s in turn (a chain of Late Senders); all enter MPI_Finalize, rank 2 last (at 8)."""
    b = tracefmt.TraceBuilder()
    r = [b.location(rank=k) for k in range(3)]
    for loc in r:
        _mpi(b, loc)
    b.enter(r[0], 1.0, "work"); b.exit(r[0], 5.0)
    b.enter(r[0], 5.0, "MPI_Send"); b.send(r[0], 5.0, dest=1, tag=1, nbytes=8); b.exit(r[0], 6.0)
    b.enter(r[0], 7.0, "MPI_Finalize"); b.exit(r[0], 10.0)
    b.enter(r[1], 1.0, "work"); b.exit(r[1], 2.0)
    b.enter(r[1], 2.0, "MPI_Recv"); b.recv(r[1], 6.0, source=0, tag=1, nbytes=8); b.exit(r[1], 6.0)
    b.enter(r[1], 6.0, "MPI_Send"); b.send(r[1], 6.0, dest=2, tag=1, nbytes=8); b.exit(r[1], 7.0)
    b.enter(r[1], 7.0, "MPI_Finalize"); b.exit(r[1], 10.0)
    b.enter(r[2], 1.0, "work"); b.exit(r[2], 3.0)
    b.enter(r[2], 3.0, "MPI_Recv"); b.recv(r[2], 8.0, source=1, tag=1, nbytes=8); b.exit(r[2], 8.0)
    b.enter(r[2], 8.0, "MPI_Finalize"); b.exit(r[2], 10.0)
    for loc in r:
        b.exit(loc, 10.0)
    return b


def wait_at_first_event() -> tracefmt.TraceBuilder:
    """No MPI_Init / MPI_Finalize; rank 1's very first event is a receive that waits 2 s for rank 0."""
    b = tracefmt.TraceBuilder()
    r0, r1 = b.location(rank=0), b.location(rank=1)
    b.enter(r0, 0.0, "work"); b.exit(r0, 2.0)
    b.enter(r0, 2.0, "MPI_Send"); b.send(r0, 2.0, dest=1, nbytes=8); b.exit(r0, 3.0)
    b.enter(r1, 0.0, "MPI_Recv"); b.recv(r1, 2.5, source=0, nbytes=8); b.exit(r1, 3.5)
    return b


def ties_and_communicators() -> tracefmt.TraceBuilder:
    """Four ranks: a barrier on a sub-communicator {0, 1}, then one on MPI_COMM_WORLD where ranks 1 and 2
    arrive last at the same time (6 s); all enter MPI_Finalize at 7."""
    b = tracefmt.TraceBuilder()
    r = [b.location(rank=k) for k in range(4)]
    for loc in r:
        _mpi(b, loc)
    sub = b.comm([0, 1], name="pair")
    world = b.world()
    b.enter(r[0], 1.0, "work"); b.exit(r[0], 3.0)
    b.collective(r[0], 3.0, 4.0, "MPI_Barrier", comm=sub)
    b.enter(r[0], 4.0, "work"); b.exit(r[0], 5.0)
    b.collective(r[0], 5.0, 7.0, "MPI_Barrier", comm=world)
    b.enter(r[1], 1.0, "work"); b.exit(r[1], 2.0)
    b.collective(r[1], 2.0, 4.0, "MPI_Barrier", comm=sub)
    b.enter(r[1], 4.0, "work"); b.exit(r[1], 6.0)
    b.collective(r[1], 6.0, 7.0, "MPI_Barrier", comm=world)
    b.enter(r[2], 1.0, "work"); b.exit(r[2], 6.0)
    b.collective(r[2], 6.0, 7.0, "MPI_Barrier", comm=world)
    b.enter(r[3], 1.0, "work"); b.exit(r[3], 4.0)
    b.collective(r[3], 4.0, 7.0, "MPI_Barrier", comm=world)
    for loc in r:
        b.enter(loc, 7.0, "MPI_Finalize"); b.exit(loc, 8.0)
        b.exit(loc, 8.0)
    return b


def openmp_team() -> tracefmt.TraceBuilder:
    """One process, two threads: the master works 2 s alone, forks, computes 3 s (the worker 3.5 s after
    joining 0.5 s late), both meet at the implicit barrier, then the master works 3 s alone again."""
    b = tracefmt.TraceBuilder()
    m, w = b.location(rank=0, thread=0), b.location(rank=0, thread=1)
    b.enter(m, 0.0, "main")
    b.enter(m, 0.0, "work"); b.exit(m, 2.0)
    b.fork(m, 2.0, team=1, size=2)
    b.enter(m, 2.0, PAR, team=1, thread_num=0)
    b.enter(w, 2.5, PAR, team=1, thread_num=1)
    b.enter(m, 2.0, "compute"); b.exit(m, 5.0)
    b.enter(w, 2.5, "compute"); b.exit(w, 6.0)
    b.barrier(m, 5.0, 6.5, implicit=True, team=1, region=IBAR)
    b.barrier(w, 6.0, 6.5, implicit=True, team=1, region=IBAR)
    b.exit(m, 6.5)
    b.exit(w, 6.5)
    b.join(m, 7.0, team=1, size=2)
    b.enter(m, 7.0, "serial"); b.exit(m, 9.0)
    b.exit(m, 10.0)
    return b


TRACES = {"chain_of_waits": chain_of_waits, "wait_at_first_event": wait_at_first_event,
          "ties_and_communicators": ties_and_communicators, "openmp_team": openmp_team}
