"""``./dev demo``: a small hybrid MPI + OpenMP trace with known waits, analyzed by expert-analyze.

Until the C runtime traces a real program, the trace is built with
``tracefmt.TraceBuilder`` (2 ranks x 2 threads).  Every wait is designed in;
:data:`DESIGNED` lists (property, call path, rank, thread, seconds) so the
tests can check that each lands in the right place with the right value.

    python -m analyzer.demo [OUTDIR]      (default: out/demo)
"""

from __future__ import annotations

import os
import sys

import tracefmt
from tracefmt.layout import LockKind

PAR = "!$omp parallel @demo.c:20"
BAR = "!$omp barrier @demo.c:24"
IBAR = "!$omp implicit barrier @demo.c:30"
CRIT = "!$omp critical @demo.c:26"
CRIT_BODY = "!$omp critical sblock @demo.c:26"

#: (property, call path, rank, thread, seconds) designed into the trace
DESIGNED = [
    ("mpi_latesender", "main/MPI_Recv", 1, 0, 0.5),
    ("omp_ebarrier_wait", f"main/{PAR}/{BAR}", 0, 1, 0.5),
    ("omp_ebarrier_wait", f"main/{PAR}/{BAR}", 1, 1, 0.5),
    ("omp_lock_contention_critical", f"main/{PAR}/{CRIT}", 0, 1, 0.31),
    ("omp_lock_contention_critical", f"main/{PAR}/{CRIT}", 1, 1, 0.31),
    ("omp_ibarrier_wait", f"main/{PAR}/{IBAR}", 0, 0, 0.3),
    ("omp_ibarrier_wait", f"main/{PAR}/{IBAR}", 1, 0, 0.3),
    ("mpi_barrier_wait", "main/MPI_Barrier", 1, 0, 1.0),
    ("mpi_latebroadcast", "main/MPI_Bcast", 0, 0, 0.8),
]


def build_demo_trace() -> tracefmt.TraceBuilder:
    b = tracefmt.TraceBuilder(creator="expert-analyze demo")
    b.region(PAR, file="demo.c", begin_line=20, end_line=31)
    loc = {(r, t): b.location(rank=r, thread=t) for r in range(2) for t in range(2)}
    crit = b.lock("demo_critical", LockKind.OMP_CRITICAL)
    for r in range(2):
        m = loc[(r, 0)]
        b.enter(m, 0.0, "main")
        b.enter(m, 0.0, "MPI_Init"); b.exit(m, 0.1, "MPI_Init")
        # serial phase: rank 0 needs 1 s, rank 1 only 0.5 s (the workers are idle meanwhile)
        b.enter(m, 0.1, "setup"); b.exit(m, 1.1 if r == 0 else 0.6, "setup")
    # late sender: rank 1 waits in MPI_Recv from 0.6 until rank 0 sends at 1.1
    m0, m1 = loc[(0, 0)], loc[(1, 0)]
    b.enter(m0, 1.1, "MPI_Send"); b.send(m0, 1.1, dest=1, tag=1, nbytes=4096); b.exit(m0, 1.2, "MPI_Send")
    b.enter(m1, 0.6, "MPI_Recv"); b.recv(m1, 1.24, source=0, tag=1, nbytes=4096); b.exit(m1, 1.25, "MPI_Recv")
    order = 0
    for r in range(2):
        m, w = loc[(r, 0)], loc[(r, 1)]
        b.fork(m, 1.3, 1, 2)
        for t, th in enumerate((m, w)):
            b.enter(th, 1.31, PAR, team=1, thread_num=t)
            # imbalanced work before an explicit barrier: thread 1 waits 0.5 s
            b.enter(th, 1.32, "compute_omp"); b.exit(th, 2.32 if t == 0 else 1.82, "compute_omp")
            b.barrier(th, 2.32 if t == 0 else 1.82, 2.33, region=BAR)
            # contended critical section: thread 0 holds it 2.35-2.65, thread 1 waits from 2.34 to 2.65
            b.enter(th, 2.34, CRIT)
        b.acquire(m, 2.35, crit, order=1)
        b.enter(m, 2.35, CRIT_BODY); b.exit(m, 2.65, CRIT_BODY)
        b.release(m, 2.65, crit, order=1)
        b.exit(m, 2.66, CRIT)
        b.acquire(w, 2.65, crit, order=2)
        b.enter(w, 2.65, CRIT_BODY); b.exit(w, 2.95, CRIT_BODY)
        b.release(w, 2.95, crit, order=2)
        b.exit(w, 2.96, CRIT)
        # implicit barrier at the end of the region: thread 0 waits 0.3 s
        b.barrier(m, 2.66, 2.97, implicit=True, region=IBAR)
        b.barrier(w, 2.96, 2.97, implicit=True, region=IBAR)
        b.exit(m, 2.98, PAR); b.exit(w, 2.98, PAR)
        b.join(m, 3.0, 1, 2)
    # imbalanced work before an MPI barrier: rank 1 waits 1 s
    for r, end in ((0, 5.0), (1, 4.0)):
        m = loc[(r, 0)]
        b.enter(m, 3.0, "compute"); b.exit(m, end, "compute")
        b.collective(m, end, 5.01, "MPI_Barrier")
    # late broadcast: the root (rank 1) prepares 0.8 s while rank 0 waits in MPI_Bcast
    b.enter(m1, 5.01, "prepare"); b.exit(m1, 5.81, "prepare")
    b.collective(m1, 5.81, 5.82, "MPI_Bcast", root=1, sent=1024, recvd=512)
    b.collective(m0, 5.01, 5.82, "MPI_Bcast", root=1, sent=0, recvd=512)
    for r in range(2):
        m = loc[(r, 0)]
        b.enter(m, 5.82, "MPI_Finalize"); b.exit(m, 5.9, "MPI_Finalize")
        b.exit(m, 6.0, "main")
    return b


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    outdir = argv[0] if argv else os.path.join("out", "demo")
    os.makedirs(outdir, exist_ok=True)
    trace = os.path.join(outdir, "demo.elg")
    build_demo_trace().write(trace)
    print(f"wrote {trace}: 2 MPI ranks x 2 OpenMP threads with these designed waits:")
    for prop, path, rank, thread, sec in DESIGNED:
        print(f"  {prop:<30s} {sec:5.2f} s  rank {rank} thread {thread}  {path}")
    print()
    from .cli import main as analyze_main

    return analyze_main([trace, "--json", os.path.join(outdir, "demo.json")])


if __name__ == "__main__":
    sys.exit(main())
