"""A hand-built hybrid trace for the expert-profile tests (values worked out in test_profile.py)."""

from __future__ import annotations

import tracefmt


def hybrid_builder() -> tracefmt.TraceBuilder:
    b = tracefmt.TraceBuilder()
    r0, r0t1 = b.location(rank=0, thread=0), b.location(rank=0, thread=1)
    r1, r2 = b.location(rank=1, thread=0), b.location(rank=2, thread=0)
    for loc in (r0, r1, r2):
        b.enter(loc, 0.0, "main")
    # rank 0: a parallel region with a critical section that sends a message
    b.fork(r0, 1.0, team=1, size=2)
    b.enter(r0, 1.5, "!$omp parallel", team=1)
    b.enter(r0t1, 2.0, "!$omp parallel", team=1)
    lock = b.lock("crit", tracefmt.layout.LockKind.OMP_CRITICAL)
    b.enter(r0, 2.0, "!$omp critical")
    b.acquire(r0, 2.0, lock)
    b.enter(r0, 2.0, "!$omp critical sblock")
    b.enter(r0, 2.2, "MPI_Send")
    b.send(r0, 2.2, dest=1, nbytes=100)
    b.exit(r0, 2.5, "MPI_Send")
    b.exit(r0, 3.0, "!$omp critical sblock")
    b.release(r0, 3.0, lock)
    b.exit(r0, 3.1, "!$omp critical")
    b.enter(r0t1, 2.5, "!$omp critical")
    b.acquire(r0t1, 3.0, lock)
    b.enter(r0t1, 3.1, "!$omp critical sblock")
    b.exit(r0t1, 4.0, "!$omp critical sblock")
    b.release(r0t1, 4.0, lock)
    b.exit(r0t1, 4.0, "!$omp critical")
    b.barrier(r0, 3.1, 4.0, implicit=True)
    b.barrier(r0t1, 4.0, 4.0, implicit=True)
    b.exit(r0, 4.0, "!$omp parallel")
    b.exit(r0t1, 4.2, "!$omp parallel")
    b.join(r0, 4.5, team=1, size=2)
    # rank 1 receives the message
    b.enter(r1, 1.0, "MPI_Recv")
    b.recv(r1, 2.5, source=0, nbytes=100)
    b.exit(r1, 2.6, "MPI_Recv")
    # a broadcast of 64 bytes from rank 0 over 3 ranks (EPIK: root sent N*d, everyone recvd d)
    b.collective(r0, 5.0, 5.5, "MPI_Bcast", root=0, sent=192, recvd=64)
    b.collective(r1, 5.2, 5.5, "MPI_Bcast", root=0, sent=0, recvd=64)
    b.collective(r2, 5.1, 5.5, "MPI_Bcast", root=0, sent=0, recvd=64)
    for loc in (r0, r1, r2):
        b.exit(loc, 6.0, "main")
    return b
