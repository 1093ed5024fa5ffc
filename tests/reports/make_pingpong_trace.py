"""Write a small 2-rank MPI trace with a chosen Late Sender, for the CI example in docs/ci.md.

    python tests/reports/make_pingpong_trace.py --late-sender 0.5 -o run.elg

Rank 1 posts MPI_Recv at t = 1 s inside ``solve``; rank 0 computes in ``work`` and
enters MPI_Send ``late-sender`` seconds later, so the receive waits that long
(Scalasca's Late Sender).  Both ranks then meet in an MPI_Barrier.  Stands in
for ``mpirun -np 2 expert-run -o run.elg ./app`` until a real program is traced.
"""

from __future__ import annotations

import argparse

import tracefmt


def build(late_sender: float, iterations: int = 3) -> tracefmt.TraceBuilder:
    b = tracefmt.TraceBuilder(creator="make_pingpong_trace")
    r0, r1 = b.location(rank=0), b.location(rank=1)
    b.enter(r0, 0.0, "main")
    b.enter(r1, 0.0, "main")
    t = 0.0
    for it in range(iterations):
        b.enter(r0, t, "solve")
        b.enter(r1, t, "solve")
        send_at = t + 1.0 + late_sender
        b.enter(r0, t, "work")
        b.exit(r0, send_at, "work")
        b.enter(r0, send_at, "MPI_Send")
        b.send(r0, send_at, dest=1, tag=it, nbytes=4096)
        b.exit(r0, send_at + 0.01, "MPI_Send")
        b.enter(r1, t + 1.0, "MPI_Recv")
        b.recv(r1, send_at + 0.01, source=0, tag=it, nbytes=4096)
        b.exit(r1, send_at + 0.02, "MPI_Recv")
        end = send_at + 0.1
        b.exit(r0, send_at + 0.01, "solve")
        b.exit(r1, send_at + 0.02, "solve")
        b.collective(r0, send_at + 0.01, end, "MPI_Barrier")
        b.collective(r1, send_at + 0.02, end, "MPI_Barrier")
        t = end
    b.exit(r0, t + 0.5, "main")
    b.exit(r1, t + 0.5, "main")
    return b


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--late-sender", type=float, default=0.5, help="seconds each send is late (default 0.5)")
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("-o", "--output", default="run.elg")
    a = ap.parse_args(argv)
    build(a.late_sender, a.iterations).write(a.output)
    print(f"wrote {a.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
