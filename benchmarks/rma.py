"""What the MPI one-sided properties (patterns/mpi_rma.py, patterns/rma_epochs.py) cost against the replay, on
synthetic format 2.3 traces.

    python -m benchmarks rma [--ranks 16] [--epochs 1000,5000] [--kinds fence,gats,lock] [--repeat 3]

Builds one trace per kind and epoch count with TraceBuilder: ``fence``: every rank puts to its two next ranks in
each fence epoch; ``gats``: rank r exposes its window to rank r-1 and accesses rank r+1's (post, start, two puts,
complete, wait) per epoch; ``lock``: every rank takes an exclusive lock on rank 0, puts, unlocks, per epoch.
Replays it with every table, then computes the RMA instances (every wait state and pair-wise count of the
module) --repeat times, after a warm-up on a small trace; prints the minimum CPU time (user + system, of this
process) of each.  docs/performance.md ("MPI one-sided communication") quotes the numbers.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def rma_trace(kind: str, n_ranks: int, epochs: int):
    import tracefmt
    from tracefmt.layout import RmaSync, RmaSyncFlag

    b = tracefmt.TraceBuilder(creator="benchmarks.rma")
    locs = [b.location(rank=r) for r in range(n_ranks)]
    w = b.window()
    rng = np.random.default_rng(1)
    t = np.ones(n_ranks)
    for loc in locs:
        b.enter(loc, 0.0, "main")
        b.rma_call(loc, 0.0, 1.0, "MPI_Win_create", w, RmaSync.CREATE)

    def put(r, target):
        b.enter(locs[r], t[r], "MPI_Put")
        b.rma_put(locs[r], t[r], w, target, 64)
        b.exit(locs[r], t[r] + 5e-7)
        t[r] += 1e-6

    def call(r, region, kind, dur=1e-6, **kw):
        b.rma_call(locs[r], t[r], t[r] + dur, region, w, kind, **kw)
        t[r] += dur + 1e-7

    for _ in range(epochs):
        t += rng.random(n_ranks) * 1e-4
        if kind == "fence":
            end = t.max() + 1e-5
            for r in range(n_ranks):
                b.rma_call(locs[r], t[r], end, "MPI_Win_fence", w, RmaSync.FENCE)
            t[:] = end + 1e-7
            for r in range(n_ranks):
                put(r, (r + 1) % n_ranks)
                put(r, (r + 2) % n_ranks)
        elif kind == "gats":
            for r in range(n_ranks):
                call(r, "MPI_Win_post", RmaSync.POST, group=[(r - 1) % n_ranks])
                call(r, "MPI_Win_start", RmaSync.START, group=[(r + 1) % n_ranks])
                put(r, (r + 1) % n_ranks)
                put(r, (r + 1) % n_ranks)
                call(r, "MPI_Win_complete", RmaSync.COMPLETE, group=[(r + 1) % n_ranks])
            t[:] = t.max() + 1e-6
            for r in range(n_ranks):
                call(r, "MPI_Win_wait", RmaSync.WAIT, group=[(r - 1) % n_ranks])
        else:
            for r in range(n_ranks):
                call(r, "MPI_Win_lock", RmaSync.LOCK, target=0, flags=RmaSyncFlag.EXCLUSIVE)
                put(r, 0)
                call(r, "MPI_Win_unlock", RmaSync.UNLOCK, target=0)
    end = t.max() + 1.0
    for loc in locs:
        b.rma_call(loc, end, end + 1.0, "MPI_Win_free", w, RmaSync.FREE)
        b.exit(loc, end + 2.0)
    return b.build()


def measure(trace, repeat: int) -> dict[str, float]:
    from analyzer.analyze import required_tables, select_patterns
    from analyzer.replay import replay
    from patterns.rma_epochs import rma_instances

    tables = required_tables(select_patterns(None, plugins=False))
    out = {}
    for _ in range(repeat):
        t0 = time.process_time()
        ctx = replay(trace, tables=tables)
        out["replay"] = min(out.get("replay", float("inf")), time.process_time() - t0)
        ctx.derived.clear()
        t0 = time.process_time()
        rma_instances(ctx)
        out["rma"] = min(out.get("rma", float("inf")), time.process_time() - t0)
        out["rows"] = len(ctx.tables["mpi_rma_ops"])
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks rma", description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", type=int, default=16, help="processes (default 16)")
    ap.add_argument("--epochs", default="1000,5000", help="comma-separated epoch counts (default 1000,5000)")
    ap.add_argument("--kinds", default="fence,gats,lock", help="which workloads (default fence,gats,lock)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per trace; the minimum is shown (default 3)")
    a = ap.parse_args(argv)
    sizes = [int(x) for x in a.epochs.split(",") if x.strip()]
    kinds = [k for k in a.kinds.split(",") if k.strip()]
    bad = [k for k in kinds if k not in ("fence", "gats", "lock")]
    if bad:
        print(f"unknown workload {bad[0]!r}; workloads: fence, gats, lock")
        return 2
    for k in kinds:  # warm-up: the kernels' compiled code loaded
        measure(rma_trace(k, 2, 2), 1)
    print(f"{'kind':>6} {'ranks':>6} {'epochs':>7} {'events':>9} {'RMA rows':>9} {'replay s':>9} {'RMA s':>8}"
          "  (CPU seconds)")
    for k in kinds:
        for n in sizes:
            trace = rma_trace(k, a.ranks, n)
            events = sum(trace.n_events(int(loc)) for loc in trace.location_ids)
            r = measure(trace, a.repeat)
            print(f"{k:>6} {a.ranks:>6} {n:>7} {events:>9} {r['rows']:>9} {r['replay']:>9.3f} {r['rma']:>8.3f}")
    return 0
