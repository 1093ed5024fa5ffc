"""Fill numba's on-disk cache (``cache=True``) so the first real analysis starts warm.

Run by ``./dev setup``: analyzes and profiles a small built hybrid trace
once and loads the trace decoder, which compiles every kernel for the
argument types real traces use.

    python -m analyzer.warmup
"""

from __future__ import annotations

import sys
import time


def warm() -> float:
    """Analyze a small hybrid trace in memory; returns the seconds it took."""
    from tracefmt.reader import load_decoder

    from .analyze import analyze
    from .profile import profile_trace

    t0 = time.perf_counter()
    load_decoder()  # the trace decoder kernel (small traces like this one do not reach it)
    hybrid = _hybrid_trace()
    analyze(hybrid, plugins=False)
    analyze(_counter_trace(), plugins=False)  # the hardware-counter kernel
    profile_trace(hybrid)  # expert-profile's kernel
    _read_as_otf2(hybrid)  # the native OTF2 reader's kernels
    from tracefmt.epilog import warm_up as warm_epilog

    warm_epilog()  # the EPILOG / EPIK decoder's kernels
    return time.perf_counter() - t0


def _read_as_otf2(trace) -> None:
    """Export ``trace`` to OTF2 and read it back (compiles the OTF2 decoder); skipped without the otf2 package,
    which only the export needs."""
    import tempfile

    from tracefmt.detect import open_any
    from tracefmt.otf2_in import Otf2FormatError
    from tracefmt.otf2_out import write_otf2

    with tempfile.TemporaryDirectory(prefix="expert-warmup-") as tmp:
        try:
            write_otf2(trace, tmp + "/otf2", force=True)
        except Otf2FormatError:  # the otf2 package is not installed
            return
        open_any(tmp + "/otf2/traces.otf2")


def _hybrid_trace():
    """2 ranks x 2 threads with every kind of compound event the replay matches:
    a message, collectives, an OpenMP team with both barrier kinds and a critical section, a file write, MPI
    one-sided fence, post/start and lock epochs."""
    import tracefmt
    from tracefmt.layout import FileIoFlag, LockKind, RmaSync, RmaSyncFlag

    b = tracefmt.TraceBuilder(creator="expert-analyze warmup")
    loc = {(r, t): b.location(rank=r, thread=t) for r in range(2) for t in range(2)}
    crit = b.lock("warmup_critical", LockKind.OMP_CRITICAL)
    win = b.window()
    for r in range(2):
        m, w = loc[(r, 0)], loc[(r, 1)]
        b.enter(m, 0.0, "main")
        if r == 0:
            b.enter(m, 0.1, "MPI_Send"); b.send(m, 0.1, dest=1, tag=0, nbytes=8); b.exit(m, 0.2, "MPI_Send")
        else:
            b.enter(m, 0.1, "MPI_Recv"); b.recv(m, 0.15, source=0, tag=0, nbytes=8); b.exit(m, 0.2, "MPI_Recv")
        b.fork(m, 0.3, 1, 2)
        for t, th in enumerate((m, w)):
            b.enter(th, 0.31, "!$omp parallel @warmup.c:1", team=1, thread_num=t)
            b.barrier(th, 0.32 + 0.01 * t, 0.35, region="!$omp barrier @warmup.c:2")
            b.enter(th, 0.36, "!$omp critical @warmup.c:3")
            b.acquire(th, 0.37 + 0.02 * t, crit, order=t + 1)
            b.release(th, 0.38 + 0.02 * t, crit, order=t + 1)
            b.exit(th, 0.4, "!$omp critical @warmup.c:3")
            b.barrier(th, 0.41, 0.42, implicit=True, region="!$omp implicit barrier @warmup.c:4")
            b.exit(th, 0.43, "!$omp parallel @warmup.c:1")
        b.join(m, 0.44, 1, 2)
        b.collective(m, 0.5 + 0.1 * r, 0.7, "MPI_Barrier")
        b.collective(m, 0.7, 0.8, "MPI_Bcast", root=0, sent=8 if r == 0 else 0, recvd=8)
        b.enter(m, 0.8, "MPI_File_write_all"); b.file_io(m, 0.85, 64, FileIoFlag.WRITE | FileIoFlag.COLLECTIVE)  # noqa: E702
        b.exit(m, 0.9, "MPI_File_write_all")
        b.rma_call(m, 0.90, 0.91, "MPI_Win_create", win, RmaSync.CREATE)
        b.rma_call(m, 0.91, 0.92, "MPI_Win_fence", win, RmaSync.FENCE)
        if r == 0:
            b.rma_call(m, 0.92, 0.93, "MPI_Win_post", win, RmaSync.POST, group=[1])
            b.rma_call(m, 0.93, 0.96, "MPI_Win_wait", win, RmaSync.WAIT, group=[1])
        else:
            b.rma_call(m, 0.92, 0.93, "MPI_Win_start", win, RmaSync.START, group=[0])
            b.enter(m, 0.93, "MPI_Put"); b.rma_put(m, 0.93, win, 0, 8); b.exit(m, 0.94, "MPI_Put")  # noqa: E702
            b.rma_call(m, 0.94, 0.95, "MPI_Win_complete", win, RmaSync.COMPLETE, group=[0])
            b.rma_call(m, 0.95, 0.96, "MPI_Win_lock", win, RmaSync.LOCK, target=0, flags=RmaSyncFlag.EXCLUSIVE)
            b.rma_call(m, 0.96, 0.97, "MPI_Win_unlock", win, RmaSync.UNLOCK, target=0)
        b.rma_call(m, 0.97, 0.98, "MPI_Win_free", win, RmaSync.FREE)
        b.exit(m, 1.0, "main")
    return b.build()


def _counter_trace():
    import tracefmt

    b = tracefmt.TraceBuilder()
    loc = b.location(rank=0)
    b.enter(loc, 0.0, "main"); b.counter(loc, 0.0, "PAPI_TOT_CYC", 0)  # noqa: E702
    b.exit(loc, 1.0, "main"); b.counter(loc, 1.0, "PAPI_TOT_CYC", 10)  # noqa: E702
    return b.build()


def main() -> int:
    t = warm()
    print(f"[warmup] analyzer kernels compiled and cached ({t:.1f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
