"""``./dev demo``: trace a hybrid MPI + OpenMP program with designed waits and analyze it.

With the tool chain of ``./dev setup`` (mpicc, Open MPI, the C runtime), the
demo compiles ``samples/waits/hybrid_waits.c``, runs it as
``mpirun -np 2 expert-run -o hybrid_waits.elg ./hybrid_waits`` with 2 OpenMP
threads per rank, and analyzes the trace.  :data:`PROGRAM_DESIGNED` lists
where each designed wait must show up.  Without that tool chain it falls back
to a trace built with ``tracefmt.TraceBuilder`` (:data:`DESIGNED`).  Besides the
cube and the JSON summary it writes ``demo-timeline.json``, the timeline with
every wait and its cause for Perfetto (``expert-analyze --timeline``).

    python -m samples.demo [OUTDIR]      (default: out/demo)
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

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


ROOT = Path(__file__).resolve().parents[1]
PROGRAM_SOURCE = ROOT / "samples" / "waits" / "hybrid_waits.c"
EXPERT_RUN = ROOT / "runtime" / "bin" / "expert-run"

#: (property, call-path suffix, rank, thread, seconds at SCALE 1) designed into
#: samples/waits/hybrid_waits.c; thread None means "summed over the rank's
#: threads" (which thread waits for the critical section is up to the runtime)
PROGRAM_DESIGNED = [
    ("omp_idle_threads", "main/serial_phase", 0, 1, 0.20),
    ("omp_idle_threads", "main/serial_phase", 1, 1, 0.20),
    ("mpi_latesender", "late_sender_phase/MPI_Recv", 1, 0, 0.30),
    ("mpi_barrier_wait", "barrier_phase/MPI_Barrier", 0, 0, 0.40),
    ("mpi_latebroadcast", "broadcast_phase/MPI_Bcast", 0, 0, 0.25),
    ("omp_ebarrier_wait", "omp_barrier_phase/!$omp parallel/!$omp barrier", 0, 1, 0.20),
    ("omp_ebarrier_wait", "omp_barrier_phase/!$omp parallel/!$omp barrier", 1, 1, 0.20),
    ("omp_lock_contention_critical", "critical_phase/!$omp parallel/!$omp critical", 0, None, 0.15),
    ("omp_lock_contention_critical", "critical_phase/!$omp parallel/!$omp critical", 1, None, 0.15),
]

#: environment for Open MPI as root on a machine with fewer cores than threads
MPI_ENV = {
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    "OMPI_MCA_rmaps_base_oversubscribe": "1",
    "OMPI_MCA_mpi_yield_when_idle": "1",
    "OMP_NUM_THREADS": "2",
    "OMP_WAIT_POLICY": "passive",
}


def toolchain_missing() -> str | None:
    """Why the designed program cannot be traced here, or None if it can."""
    for tool in ("mpicc", "mpirun"):
        if shutil.which(tool) is None:
            return f"{tool} not found (./dev setup installs Open MPI)"
    if not (ROOT / "runtime" / "lib" / "libexpert-ompi.so").exists():
        return "the C runtime is not built (./dev setup builds it)"
    return None


def trace_designed_program(outdir, scale: float = 1.0) -> Path:
    """Compile samples/waits/hybrid_waits.c, trace it on 2 ranks x 2 threads, return the trace path."""
    outdir = Path(outdir).resolve()  # the commands run inside it, so relative paths would point elsewhere
    outdir.mkdir(parents=True, exist_ok=True)
    exe, trace = outdir / "hybrid_waits", outdir / "hybrid_waits.elg"
    env = dict(os.environ, **MPI_ENV)
    steps = [
        ["mpicc", "-fopenmp", "-g", "-O1", "-finstrument-functions", str(PROGRAM_SOURCE), "-o", str(exe)],
        ["mpirun", "-np", "2", str(EXPERT_RUN), "-o", str(trace), str(exe), repr(scale)],
    ]
    for cmd in steps:
        p = subprocess.run(cmd, cwd=outdir, env=env, capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed with status {p.returncode}:\n{p.stdout}{p.stderr}")
    return trace


def matching_cnodes(cube, suffix: str) -> list[int]:
    """Call paths whose region names end with the '/'-separated parts of `suffix`.

    OpenMP region names carry '@file:line', so a part matches a region name
    that equals it or starts with it followed by ' @'.
    """
    want = suffix.split("/")
    hits = []
    for c in range(len(cube.cnode_parent)):
        names = cube.callpath(c).split("/")
        if len(names) < len(want):
            continue
        tail = names[len(names) - len(want):]
        if all(n == w or n.startswith(w + " @") for n, w in zip(tail, want)):
            hits.append(c)
    return hits


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    outdir = argv[0] if argv else os.path.join("out", "demo")
    os.makedirs(outdir, exist_ok=True)
    from analyzer.cli.analyze import main as analyze_main

    why_not = toolchain_missing()
    if why_not is None:
        print(f"tracing samples/waits/hybrid_waits.c on 2 MPI ranks x 2 OpenMP threads (outputs in {outdir}) ...")
        try:
            trace = trace_designed_program(outdir)
        except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
            print(f"demo: error: {e}", file=sys.stderr)
            return 2
        print("designed waits (property, seconds, where):")
        for prop, path, rank, thread, sec in PROGRAM_DESIGNED:
            who = f"rank {rank} " + (f"thread {thread}" if thread is not None else "(one of its threads)")
            print(f"  {prop:<30s} {sec:5.2f} s  {who:<26s} .../{path}")
    else:
        print(f"cannot trace a real program here: {why_not}; analyzing a built trace instead")
        trace = os.path.join(outdir, "demo.elg")
        build_demo_trace().write(trace)
        print(f"wrote {trace}: 2 MPI ranks x 2 OpenMP threads with these designed waits:")
        for prop, path, rank, thread, sec in DESIGNED:
            print(f"  {prop:<30s} {sec:5.2f} s  rank {rank} thread {thread}  {path}")
    print()
    timeline = os.path.join(outdir, "demo-timeline.json")
    rc = analyze_main([str(trace), "--json", os.path.join(outdir, "demo.json"), "--timeline", timeline])
    if rc == 0:
        print(f"open {timeline} in https://ui.perfetto.dev to see each wait, the arrow from its cause and the "
              f"critical path (docs/reports.md, 'Timeline')")
    return rc


if __name__ == "__main__":
    sys.exit(main())
